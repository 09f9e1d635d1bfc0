/* zecache pack --from BUNDLE, and ls, show and verify reading a pack
 * (--pack FILE), run as the installed tool runs: every good entry of the
 * bundle packed and each bad one left out and named, a cut bundle or one
 * signed with no secret (or another) no pack at all, and the listing and
 * check of a pack the same through pack --list/--verify as through
 * ls/verify --pack. No driver: the entries are made here. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/bundle.h"
#include "zecache/pack.h"
#include "zecache/remote_tag.h"

static char scratch[128], unused[192], bundle_path[256], pack_path[256];

static void setup(void)
{
    t_make_scratch(scratch, sizeof scratch, "/tmp/zc_tool_pack.XXXXXX", unused, sizeof unused);
    snprintf(bundle_path, sizeof bundle_path, "%s/entries.zcb", scratch);
    snprintf(pack_path, sizeof pack_path, "%s/entries.zcp", scratch);
    unsetenv("NEO_CACHE_REMOTE_SECRET_FILE");
}

static void teardown(void)
{
    unsetenv("NEO_CACHE_REMOTE_SECRET_FILE");
    t_remove_tree(scratch);
}

TestSuite(tool_pack, .init = setup, .fini = teardown, .timeout = 120);

enum { ENTRIES = 3 };

static char out[1 << 16];

/* zecache ARGS (with the pack and bundle paths as %s where asked), standard
 * error with standard output, in out: the exit status. */
static int tool(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int tool(const char *format, ...)
{
    char args[1024], line[2048];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(line, sizeof line, "NEO_CACHE_DIR='%s/cache' '%s' %s 2>&1", scratch, ZC_TOOL_PATH,
             args);
    return t_run_capturing(line, out, sizeof out);
}

static size_t count_of(const char *text, const char *needle)
{
    size_t count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

static zc_key key_of(uint64_t i)
{
    zc_key key = t_key(100 + i);
    key.kind = i == 2 ? ZC_ENTRY_OPENCL : ZC_ENTRY_LEVEL_ZERO;
    return key;
}

static uint8_t *entry_of(uint64_t i, size_t *size)
{
    zc_key key = key_of(i);
    zc_artifact *artifact = t_artifact(3000 + 100 * (size_t)i, 100 + i);
    uint8_t *entry;
    cr_assert_eq(zc_entry_encode(&key, artifact, 3, &entry, size), ZC_OK);
    zc_artifact_unref(artifact);
    return entry;
}

/* A bundle of ENTRIES good entries (one OpenCL), then one with a payload
 * byte changed; cut after cut bytes unless 0. */
static void write_bundle(const zc_bundle_signer *signer, size_t cut)
{
    char *bytes = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&bytes, &size);
    zc_bundle_writer writer;
    cr_assert_eq(zc_bundle_write_start_signed(&writer, stream, signer), ZC_OK);
    for (uint64_t i = 0; i < ENTRIES + 1; i++) {
        zc_key key = key_of(i);
        size_t entry_size;
        uint8_t *entry = entry_of(i, &entry_size);
        if (i == ENTRIES)
            entry[entry_size - 5] ^= 1; /* the bad one */
        cr_assert_eq(zc_bundle_write_entry(&writer, &key, entry, entry_size), ZC_OK);
        free(entry);
    }
    cr_assert_eq(zc_bundle_write_end(&writer), ZC_OK);
    zc_bundle_writer_close(&writer);
    cr_assert_eq(fclose(stream), 0);
    t_write_file(bundle_path, bytes, cut != 0 ? cut : size);
    free(bytes);
}

/* zecache show --pack of the i'th entry, by the first 10 digits of its key
 * (in hex). */
static int show(uint64_t i, char hex[ZC_KEY_HEX_SIZE])
{
    zc_key key = key_of(i);
    zc_key_to_hex(&key, hex);
    return tool("show --pack '%s' %.10s", pack_path, hex);
}

static void assert_pack_serves_the_good_entries(const zc_bundle_signer *verifier)
{
    zc_pack *pack = NULL;
    char reason[256] = "";
    cr_assert_eq(zc_pack_open(pack_path, verifier, &pack, reason, sizeof reason), ZC_OK, "%s",
                 reason);
    cr_assert_eq(zc_pack_entry_count(pack), ENTRIES);
    for (uint64_t i = 0; i < ENTRIES; i++) {
        zc_key key = key_of(i);
        uint8_t *entry = NULL;
        size_t size;
        cr_assert_eq(zc_pack_find(pack, &key, &entry, &size, NULL, 0), ZC_OK);
        zc_artifact *artifact = NULL, *expected = t_artifact(3000 + 100 * (size_t)i, 100 + i);
        cr_assert_eq(zc_entry_decode(entry, size, &key, 0, &artifact, NULL, 0), ZC_OK);
        cr_assert(t_same_artifact(artifact, expected));
        zc_artifact_unref(artifact);
        zc_artifact_unref(expected);
        free(entry);
    }
    zc_pack_close(pack);
}

Test(tool_pack, a_pack_from_a_bundle_holds_its_good_entries_and_reads_like_a_directory)
{
    write_bundle(NULL, 0);
    cr_assert_eq(tool("pack --from '%s' '%s'", bundle_path, pack_path), 1, "%s", out);
    cr_assert_not_null(strstr(out, "packed 3 entries, skipped 1 bad"), "%s", out);
    assert_pack_serves_the_good_entries(NULL);

    cr_assert_eq(tool("ls --pack '%s'", pack_path), 0, "%s", out);
    cr_assert_eq(count_of(out, "\n"), 1 + ENTRIES, "%s", out);
    cr_assert_eq(count_of(out, "  CL\n"), 1, "%s", out);
    char listed[sizeof out];
    memcpy(listed, out, sizeof out);
    cr_assert_eq(tool("pack --list '%s'", pack_path), 0, "%s", out);
    cr_assert_str_eq(out, listed);
    cr_assert_eq(tool("ls --json --pack '%s'", pack_path), 0, "%s", out);
    cr_assert_eq(count_of(out, "\"header_ok\": true"), ENTRIES, "%s", out);
    cr_assert_not_null(strstr(out, "\"pack\": "), "%s", out);

    char hex[ZC_KEY_HEX_SIZE];
    cr_assert_eq(show(1, hex), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verification     ok"), "%s", out);
    cr_assert_not_null(strstr(out, hex), "%s", out);

    cr_assert_eq(tool("verify --pack '%s'", pack_path), 0, "%s", out);
    cr_assert_str_eq(out, "checked 3 entries: 0 bad\n");
    cr_assert_eq(tool("pack --verify '%s'", pack_path), 0, "%s", out);
    cr_assert_str_eq(out, "checked 3 entries: 0 bad\n");
    cr_assert_eq(tool("verify --fix --pack '%s'", pack_path), 2, "%s", out);
}

/* An entry changed inside an unsigned pack: verify names it, show says why,
 * ls still lists it (its header holds). */
Test(tool_pack, verify_and_show_name_a_damaged_entry_of_a_pack)
{
    write_bundle(NULL, 0);
    cr_assert_eq(tool("pack --from '%s' '%s'", bundle_path, pack_path), 1, "%s", out);
    size_t size, first_size;
    free(entry_of(0, &first_size));
    uint8_t *bytes = t_read_bytes(pack_path, &size);
    bytes[ZC_PACK_HEADER_SIZE + first_size - 5] ^= 1; /* the first entry's payload */
    t_write_file(pack_path, bytes, size);
    free(bytes);
    cr_assert_eq(tool("verify --pack '%s'", pack_path), 1, "%s", out);
    cr_assert_eq(count_of(out, "bad      "), 1, "%s", out);
    cr_assert_not_null(strstr(out, "checked 3 entries: 1 bad\n"), "%s", out);
    char hex[ZC_KEY_HEX_SIZE];
    cr_assert_eq(show(0, hex), 0, "%s", out);
    cr_assert_not_null(strstr(out, "verification     FAILED: "), "%s", out);
    cr_assert_eq(tool("ls --pack '%s'", pack_path), 0, "%s", out);
    cr_assert_eq(count_of(out, "\n"), 1 + ENTRIES, "%s", out);
}

/* A bundle cut anywhere makes no pack, and an existing pack stays. */
Test(tool_pack, a_cut_bundle_makes_no_pack)
{
    write_bundle(NULL, 0);
    cr_assert_eq(tool("pack --from '%s' '%s'", bundle_path, pack_path), 1, "%s", out);
    size_t size, pack_size;
    uint8_t *bundle = t_read_bytes(bundle_path, &size);
    uint8_t *pack = t_read_bytes(pack_path, &pack_size);
    for (size_t cut = 1; cut < size; cut += 997) {
        t_write_file(bundle_path, bundle, cut);
        cr_assert_eq(tool("pack --from '%s' '%s'", bundle_path, pack_path), 1, "%s", out);
        cr_assert_not_null(strstr(out, bundle_path), "cut at %zu: %s", cut, out);
        size_t now_size;
        uint8_t *now = t_read_bytes(pack_path, &now_size);
        cr_assert(now_size == pack_size && memcmp(now, pack, pack_size) == 0, "cut at %zu", cut);
        free(now);
    }
    free(bundle);
    free(pack);
    cr_assert_eq(tool("ls --pack '%s/absent.zcp'", scratch), 1, "%s", out);
}

/* With a secret, only a bundle signed with it is packed, into a signed
 * pack; without one, a signed bundle is refused. */
Test(tool_pack, a_pack_from_a_bundle_takes_the_secrets_signature)
{
    char secret_path[PATH_MAX];
    snprintf(secret_path, sizeof secret_path, "%s/secret", scratch);
    static const char secret[] = "a secret of sixteen bytes or more";
    t_write_secret(secret_path, secret);
    zc_bundle_signer signer = {zc_hmac_sha256, secret, strlen(secret)};
    write_bundle(NULL, 0);
    setenv("NEO_CACHE_REMOTE_SECRET_FILE", secret_path, 1);
    cr_assert_eq(tool("pack --from '%s' '%s'", bundle_path, pack_path), 1, "%s", out);
    cr_assert(!t_exists(pack_path), "%s", out);
    write_bundle(&signer, 0);
    cr_assert_eq(tool("pack --from '%s' '%s'", bundle_path, pack_path), 1, "%s", out);
    cr_assert_not_null(strstr(out, "packed 3 entries (signed), skipped 1 bad"), "%s", out);
    assert_pack_serves_the_good_entries(&signer);
    cr_assert_eq(tool("verify --pack '%s'", pack_path), 0, "%s", out);
    unsetenv("NEO_CACHE_REMOTE_SECRET_FILE");
    cr_assert_eq(tool("verify --pack '%s'", pack_path), 1, "%s", out);
    cr_assert_not_null(strstr(out, "signed pack"), "%s", out);
    cr_assert_eq(unlink(pack_path), 0);
    cr_assert_eq(tool("pack --from '%s' '%s'", bundle_path, pack_path), 1, "%s", out);
    cr_assert(!t_exists(pack_path), "%s", out);
}
