/* The tool's bundle code in this process: `zecache import` reads a stream the
 * test controls, which changes its bytes once the tool has read up to a
 * chosen point, as a file someone else can write may change under the tool
 * between (or during) its reads; `prewarm --from` collects a bundle's
 * recorded inputs, counting the SPIR-V it decodes. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk_test_support.h"
#include "prewarm_collect.h"
#include "prewarm_job.h"
#include "test_support.h"
#include "tool.h"
#include "tool_inputs.h"
#include "zecache/bundle.h"
#include "zecache/disk_tier.h"
#include "zecache/remote_tag.h"

/* tool_cli.c's help names the whole tool's (zecache_main.c, not linked). */
void tool_print_main_help(void) {}

static char scratch[128];
static char cache_dir[192];

static void scratch_create(void)
{
    t_make_scratch(scratch, sizeof scratch, "/tmp/zc_tool_bundle.XXXXXX", cache_dir,
                   sizeof cache_dir);
}

static void scratch_remove(void)
{
    unsetenv("NEO_CACHE_REMOTE_SECRET_FILE");
    unsetenv("NEO_CACHE_DIR");
    t_remove_tree(scratch);
}

TestSuite(tool_bundle, .init = scratch_create, .fini = scratch_remove, .timeout = 120);

/* ---- a file that changes under its reader ---- */

/* Reads give the genuine bytes until the reader has reached swap_at, the
 * forged ones (of the same length) from then on, after any seek too. */
typedef struct rewritten_file {
    const uint8_t *genuine, *forged;
    size_t size, swap_at, at;
    bool swapped;
} rewritten_file;

static ssize_t rewritten_read(void *cookie, char *buffer, size_t size)
{
    rewritten_file *file = cookie;
    if (!file->swapped && file->at >= file->swap_at)
        file->swapped = true;
    size_t end = file->swapped ? file->size : file->swap_at;
    size_t count = file->at < end ? end - file->at : 0;
    if (count > size)
        count = size;
    memcpy(buffer, (file->swapped ? file->forged : file->genuine) + file->at, count);
    file->at += count;
    return (ssize_t)count;
}

static int rewritten_seek(void *cookie, off64_t *offset, int whence)
{
    rewritten_file *file = cookie;
    off64_t base = whence == SEEK_SET   ? 0
                   : whence == SEEK_CUR ? (off64_t)file->at
                                        : (off64_t)file->size;
    if (base + *offset < 0)
        return -1;
    file->at = (size_t)(base + *offset);
    *offset = (off64_t)file->at;
    return 0;
}

/* ---- bundles ---- */

enum { ENTRY_COUNT = 3, BINARY_SIZE = 6000, FORGED_INDEX = 1 };

static zc_key entry_key(int i)
{
    return t_key(4200 + (uint64_t)i);
}

/* A bundle of ENTRY_COUNT entries (artifact seeds seed + i), the one at
 * FORGED_INDEX from forged_seed instead when forged_seed is not 0. */
static uint8_t *bundle_of(uint64_t seed, uint64_t forged_seed, const zc_bundle_signer *signer,
                          size_t *size)
{
    char *bytes = NULL;
    FILE *out = open_memstream(&bytes, size);
    cr_assert_not_null(out);
    zc_bundle_writer writer;
    cr_assert_eq(zc_bundle_write_start_signed(&writer, out, signer), ZC_OK);
    for (int i = 0; i < ENTRY_COUNT; i++) {
        zc_key key = entry_key(i);
        uint64_t artifact_seed =
            i == FORGED_INDEX && forged_seed != 0 ? forged_seed : seed + (uint64_t)i;
        zc_artifact *artifact = t_artifact(BINARY_SIZE, artifact_seed);
        uint8_t *entry;
        size_t entry_size;
        cr_assert_eq(zc_entry_encode(&key, artifact, 3, &entry, &entry_size), ZC_OK);
        cr_assert_eq(zc_bundle_write_entry(&writer, &key, entry, entry_size), ZC_OK);
        free(entry);
        zc_artifact_unref(artifact);
    }
    cr_assert_eq(zc_bundle_write_end(&writer), ZC_OK);
    zc_bundle_writer_close(&writer);
    cr_assert_eq(fclose(out), 0);
    return (uint8_t *)bytes;
}

/* The signer of the secret the tool is given (NEO_CACHE_REMOTE_SECRET_FILE). */
static zc_bundle_signer secret_signer(zc_remote_secret *secret)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/secret", scratch);
    t_write_secret(path, "a secret of sixteen bytes or more");
    cr_assert_eq(setenv("NEO_CACHE_REMOTE_SECRET_FILE", path, 1), 0);
    zc_config config;
    zc_config_from_env(&config);
    zc_bundle_signer signer;
    bool failed;
    char reason[256];
    cr_assert_not_null(
        tool_bundle_signer(&config, secret, &signer, &failed, reason, sizeof reason));
    cr_assert(!failed, "%s", reason);
    return signer;
}

/* ---- running import ---- */

/* `zecache COMMAND --dir DIR OPERAND`, its standard input in (NULL: as is);
 * its standard error in *err (the caller frees it). The exit status. */
static int run_tool(const tool_command *command, const char *dir, const char *operand, FILE *in,
                    char **err)
{
    char err_path[PATH_MAX];
    snprintf(err_path, sizeof err_path, "%s/stderr", scratch);
    int err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(err_fd, 0);
    fflush(stderr);
    int saved_err = dup(2);
    cr_assert_geq(dup2(err_fd, 2), 0);
    close(err_fd);
    FILE *saved_in = stdin;
    stdin = in != NULL ? in : stdin;
    char *argv[] = {(char *)command->name, "--dir", (char *)dir, (char *)operand, NULL};
    optind = 0;
    tool_context tool = {.command = command};
    int status = command->run(&tool, 4, argv);
    stdin = saved_in;
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    size_t size;
    *err = (char *)t_read_bytes(err_path, &size);
    cr_assert_not_null(*err);
    *err = realloc(*err, size + 1);
    (*err)[size] = '\0';
    return status;
}

/* `zecache import --dir DIR -` with standard input reading file. */
static int import_from(rewritten_file *file, const char *dir, char **err)
{
    cookie_io_functions_t functions = {.read = rewritten_read, .seek = rewritten_seek};
    FILE *stream = fopencookie(file, "rb", functions);
    cr_assert_not_null(stream);
    int status = run_tool(&tool_cmd_import, dir, "-", stream, err);
    fclose(stream);
    return status;
}

/* The entries dir holds of the bundle's keys: each must be the genuine one
 * (seed + i); returns how many there are. */
static int genuine_entries_in(const char *dir, uint64_t seed)
{
    zc_config config = t_disk_config(dir, 0, 3);
    zc_disk_tier *tier;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    int found = 0;
    for (int i = 0; i < ENTRY_COUNT; i++) {
        zc_key key = entry_key(i);
        zc_artifact *loaded = NULL;
        if (zc_disk_tier_load(tier, &key, &loaded) != ZC_OK)
            continue;
        zc_artifact *genuine = t_artifact(BINARY_SIZE, seed + (uint64_t)i);
        cr_assert(t_same_artifact(loaded, genuine), "entry %d is not the one signed", i);
        zc_artifact_unref(genuine);
        zc_artifact_unref(loaded);
        found++;
    }
    zc_disk_tier_close(tier);
    return found;
}

/* A signed bundle whose file is rewritten at any point of the import, by
 * someone without the secret, with another module's native code in place of
 * one entry. Whenever it happens, what is stored is what the signature
 * covers: rewritten before the tool has read it all, the import fails on the
 * signature and stores nothing; rewritten after (between a check and a
 * second read, the defect), the signed bundle is imported and the forged
 * bytes never are. */
Test(tool_bundle, a_signed_bundle_rewritten_during_its_import_stores_only_signed_bytes)
{
    zc_remote_secret secret;
    zc_bundle_signer signer = secret_signer(&secret);
    static const char attacker_key[] = "not the secret, but as long";
    zc_bundle_signer attacker = {zc_hmac_sha256, attacker_key, sizeof attacker_key - 1};
    size_t size, forged_size;
    uint8_t *genuine = bundle_of(100, 0, &signer, &size);
    uint8_t *forged = bundle_of(100, 999, &attacker, &forged_size);
    cr_assert_eq(forged_size, size, "incompressible binaries of one size: entries of one size");
    cr_assert_neq(memcmp(genuine, forged, size), 0);
    /* From the header's end to the end of the file, in steps that land
     * inside the header, every record and the tag. */
    size_t points[] = {
        ZC_BUNDLE_HEADER_SIZE, 100, size / 3, size / 2, size - 80, size - 40, size - 1, size};
    for (size_t p = 0; p < sizeof points / sizeof points[0]; p++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/cache%zu", scratch, p);
        rewritten_file file = {genuine, forged, size, points[p], 0, false};
        char *err;
        int status = import_from(&file, dir, &err);
        int kept = genuine_entries_in(dir, 100);
        if (points[p] == size) {
            cr_assert_eq(status, 0, "rewritten after the end: %s", err);
            cr_assert_eq(kept, ENTRY_COUNT, "%s", err);
            cr_assert_not_null(strstr(err, "imported 3 entries, 0 bad"), "%s", err);
        } else {
            cr_assert_eq(status, 1, "rewritten at %zu: %s", points[p], err);
            cr_assert_eq(kept, 0, "rewritten at %zu: %s", points[p], err);
            cr_assert_not_null(strstr(err, "signature does not match"), "at %zu: %s", points[p],
                               err);
            cr_assert_not_null(strstr(err, "nothing imported"), "at %zu: %s", points[p], err);
        }
        cr_assert_eq(t_count_entries(dir), (size_t)kept, "at %zu", points[p]);
        free(err);
    }
    free(genuine);
    free(forged);
}

/* ---- prewarm --from ---- */

enum { SHARING_RECIPES = 20 };

/* A recipe of key naming one SPIR-V of the size given. */
static uint8_t *recipe_naming(const zc_key *key, const uint8_t sha256[32], uint64_t spirv_size,
                              size_t *size)
{
    zc_recipe_input input = {.spirv_size = spirv_size};
    memcpy(input.spirv_sha256, sha256, 32);
    zc_recipe recipe = {.key = *key,
                        .device_name = "Intel(R) Graphics [0xff20]",
                        .driver_version = "1.3.29735",
                        .input_count = 1,
                        .inputs = &input};
    uint8_t *bytes;
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, size), ZC_OK);
    return bytes;
}

static void write_item(zc_bundle_writer *writer, const uint8_t id[32], uint8_t *bytes, size_t size)
{
    zc_key key = {0};
    memcpy(key.bytes, id, 32);
    cr_assert_eq(zc_bundle_write_entry(writer, &key, bytes, size), ZC_OK);
    free(bytes);
}

static void write_recipe(zc_bundle_writer *writer, const zc_key *key, const uint8_t sha256[32],
                         uint64_t spirv_size)
{
    size_t size;
    uint8_t *bytes = recipe_naming(key, sha256, spirv_size, &size);
    write_item(writer, key->bytes, bytes, size);
}

/* A SPIR-V of size bytes (seeded), sealed; its SHA-256 in sha256. */
static uint8_t *sealed_spirv(size_t size, uint8_t seed, uint8_t sha256[32], size_t *sealed_size)
{
    uint8_t *spirv = calloc(size, 1);
    cr_assert_not_null(spirv);
    for (size_t i = 0; i < size; i += 4096)
        spirv[i] = (uint8_t)(seed + i / 4096);
    uint8_t *sealed;
    cr_assert_eq(zc_spirv_blob_encode(spirv, size, 3, sha256, &sealed, sealed_size), ZC_OK);
    free(spirv);
    return sealed;
}

/* One large SPIR-V named by twenty recipes is decoded once, for the first;
 * the others share it. A planted recipe naming another SPIR-V with a smaller
 * size than its container holds is refused before anything of it is
 * decompressed, and does not keep an honest recipe of that SPIR-V out. */
Test(tool_bundle, prewarm_from_a_bundle_decodes_each_spirv_once)
{
    enum { SHARED_SIZE = 32 << 20, OTHER_SIZE = 1 << 20, PLANTED_SIZE = 4096 };
    uint8_t shared_sha[32], other_sha[32];
    size_t shared_size, other_size;
    uint8_t *shared = sealed_spirv(SHARED_SIZE, 1, shared_sha, &shared_size);
    uint8_t *other = sealed_spirv(OTHER_SIZE, 2, other_sha, &other_size);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/inputs.zcb", scratch);
    FILE *out = fopen(path, "wb");
    cr_assert_not_null(out);
    zc_bundle_writer writer;
    cr_assert_eq(zc_bundle_write_start(&writer, out), ZC_OK);
    write_item(&writer, shared_sha, shared, shared_size);
    write_item(&writer, other_sha, other, other_size);
    zc_key planted_key = t_key(700), honest_key = t_key(701);
    write_recipe(&writer, &planted_key, other_sha, PLANTED_SIZE);
    for (int i = 0; i < SHARING_RECIPES; i++) {
        zc_key key = t_key(800 + (uint64_t)i);
        write_recipe(&writer, &key, shared_sha, SHARED_SIZE);
    }
    write_recipe(&writer, &honest_key, other_sha, OTHER_SIZE);
    cr_assert_eq(zc_bundle_write_end(&writer), ZC_OK);
    zc_bundle_writer_close(&writer);
    cr_assert_eq(fclose(out), 0);

    zc_config config;
    zc_config_from_env(&config);
    prewarm_filter filter = {0};
    prewarm_list list = {0};
    char reason[512];
    cr_assert(prewarm_collect_bundle(path, &config, &filter, &list, reason, sizeof reason), "%s",
              reason);
    cr_assert_eq(list.count, SHARING_RECIPES + 1);
    cr_assert_eq(list.spirv_decodes, 2, "each SPIR-V once, the planted recipe's never");
    cr_assert_eq(list.problem_count, 1);
    char planted_hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&planted_key, planted_hex);
    cr_assert_not_null(strstr(list.problems[0], planted_hex), "%s", list.problems[0]);
    cr_assert_not_null(strstr(list.problems[0], "holds 1048576 bytes, not the 4096 its recipe "
                                                "declares"),
                       "%s", list.problems[0]);
    /* Every item names the pool's one copy of its SPIR-V. */
    long shared_at = tool_blob_pool_find(&list.blobs, shared_sha);
    cr_assert_geq(shared_at, 0);
    for (size_t i = 0; i < list.count; i++) {
        cr_assert_eq(list.items[i].blob_count, 1);
        bool names_shared = memcmp(list.items[i].recorded_key.bytes, honest_key.bytes, 32) != 0;
        if (names_shared)
            cr_assert_eq(list.items[i].blobs[0], list.blobs.bytes[shared_at]);
    }
    prewarm_list_free(&list);
}

/* The build helper's side: jobs of one SPIR-V, handed out one after another,
 * decode it once; a job whose container holds another size than its recipe
 * declares is refused before it is decoded. */
Test(tool_bundle, build_jobs_sharing_a_spirv_decode_it_once)
{
    enum { SPIRV_SIZE = 8 << 20 };
    uint8_t sha[32], other_sha[32];
    size_t sealed_size, other_size, recipe_size;
    uint8_t *sealed = sealed_spirv(SPIRV_SIZE, 3, sha, &sealed_size);
    uint8_t *other = sealed_spirv(4096, 4, other_sha, &other_size);
    char *stream = NULL;
    size_t stream_size = 0;
    FILE *out = open_memstream(&stream, &stream_size);
    cr_assert_not_null(out);
    for (uint32_t id = 0; id < SHARING_RECIPES; id++) {
        zc_key key = t_key(900 + id);
        uint8_t *recipe = recipe_naming(&key, sha, SPIRV_SIZE, &recipe_size);
        cr_assert(prewarm_job_write(out, id, recipe, recipe_size, &sealed, &sealed_size, 1));
        free(recipe);
    }
    zc_key key = t_key(999);
    uint8_t *lying = recipe_naming(&key, other_sha, 1024, &recipe_size);
    cr_assert(prewarm_job_write(out, SHARING_RECIPES, lying, recipe_size, &other, &other_size, 1));
    free(lying);
    cr_assert_eq(fclose(out), 0);

    FILE *in = fmemopen(stream, stream_size, "rb");
    cr_assert_not_null(in);
    prewarm_job previous = {0}, job;
    char reason[256] = "";
    uint32_t decoded = 0;
    uint8_t *expected = calloc(SPIRV_SIZE, 1);
    cr_assert_not_null(expected);
    for (size_t i = 0; i < SPIRV_SIZE; i += 4096)
        expected[i] = (uint8_t)(3 + i / 4096);
    for (uint32_t id = 0; id < SHARING_RECIPES; id++) {
        cr_assert_eq(prewarm_job_read_next(in, &previous, &job, reason, sizeof reason),
                     PREWARM_JOB_READY, "%s", reason);
        prewarm_job_free(&previous);
        cr_assert_eq(job.id, id);
        cr_assert_eq(memcmp(job.spirv[0], expected, SPIRV_SIZE), 0);
        decoded += job.decoded;
        previous = job;
    }
    cr_assert_eq(decoded, 1);
    cr_assert_eq(prewarm_job_read_next(in, &previous, &job, reason, sizeof reason),
                 PREWARM_JOB_UNREADY);
    cr_assert_str_eq(reason, "SPIR-V input 0 is not of the size its recipe declares");
    prewarm_job_free(&previous);
    prewarm_job_free(&job);
    cr_assert_eq(prewarm_job_read_next(in, NULL, &job, reason, sizeof reason), PREWARM_JOB_END);
    fclose(in);
    free(expected);
    free(stream);
    free(sealed);
    free(other);
}

/* The entry of seed's module (key t_key(seed)), encoded. */
static uint8_t *entry_of(uint64_t seed, size_t *size)
{
    zc_key key = t_key(seed);
    zc_artifact *artifact = t_artifact(BINARY_SIZE, seed);
    uint8_t *entry;
    cr_assert_eq(zc_entry_encode(&key, artifact, 3, &entry, size), ZC_OK);
    zc_artifact_unref(artifact);
    return entry;
}

/* A bundle written to memory (*bytes, *size once closed). */
static FILE *start_memory_bundle(zc_bundle_writer *writer, char **bytes, size_t *size)
{
    FILE *out = open_memstream(bytes, size);
    cr_assert_not_null(out);
    cr_assert_eq(zc_bundle_write_start(writer, out), ZC_OK);
    return out;
}

static void end_memory_bundle(zc_bundle_writer *writer, FILE *out)
{
    cr_assert_eq(zc_bundle_write_end(writer), ZC_OK);
    zc_bundle_writer_close(writer);
    cr_assert_eq(fclose(out), 0);
}

/* An imported recipe is recorded only when every SPIR-V it names is in the
 * bundle with the size it declares: one declaring another size is reported
 * and left out (prewarm would refuse it for good), its entry imported. */
Test(tool_bundle, import_leaves_out_a_recipe_declaring_another_spirv_size)
{
    uint8_t sha[32];
    size_t sealed_size, entry_size, recipe_size, size;
    uint8_t *sealed = sealed_spirv(4096, 5, sha, &sealed_size);
    zc_key key = t_key(4300);
    uint8_t *entry = entry_of(4300, &entry_size);
    uint8_t *recipe = recipe_naming(&key, sha, 5000, &recipe_size);
    char *bundle = NULL;
    zc_bundle_writer writer;
    FILE *out = start_memory_bundle(&writer, &bundle, &size);
    write_item(&writer, key.bytes, entry, entry_size);
    write_item(&writer, sha, sealed, sealed_size);
    write_item(&writer, key.bytes, recipe, recipe_size);
    end_memory_bundle(&writer, out);

    rewritten_file file = {(uint8_t *)bundle, (uint8_t *)bundle, size, size, 0, false};
    char *err;
    cr_assert_eq(import_from(&file, cache_dir, &err), 1, "%s", err);
    char hex[ZC_KEY_HEX_SIZE], says[256];
    zc_key_to_hex(&key, hex);
    snprintf(says, sizeof says,
             "bad      the recorded inputs of %s: SPIR-V input 0 holds 4096 bytes, not the 5000 "
             "it declares",
             hex);
    cr_assert_not_null(strstr(err, says), "%s", err);
    cr_assert_not_null(strstr(err, "imported 1 entries, 0 bad"), "%s", err);
    cr_assert_eq(t_count_files_ending(cache_dir, ".l0_cache"), 1);
    cr_assert_eq(t_count_files_ending(cache_dir, ".recipe"), 0);
    cr_assert_eq(t_count_files_ending(cache_dir, ".spirv"), 0);
    free(err);
    free(bundle);
}

/* Import decompresses a SPIR-V only when a recipe names it with the size
 * its container declares, and once: one named by no recipe (here one that
 * would not verify, under another's SHA-256) is never decoded, so a bundle
 * of a few KB of containers declaring 256 MiB each costs nothing. */
Test(tool_bundle, import_decodes_no_spirv_that_no_recipe_names)
{
    uint8_t sha[32], unnamed_sha[32], ignored[32];
    size_t sealed_size, unnamed_size, entry_size, size;
    uint8_t *sealed = sealed_spirv(4096, 5, sha, &sealed_size);
    uint8_t *unnamed = sealed_spirv(8192, 6, ignored, &unnamed_size);
    memset(unnamed_sha, 0xab, sizeof unnamed_sha);
    zc_key key = t_key(4400);
    uint8_t *entry = entry_of(4400, &entry_size);
    char *bundle = NULL;
    zc_bundle_writer writer;
    FILE *out = start_memory_bundle(&writer, &bundle, &size);
    write_item(&writer, key.bytes, entry, entry_size);
    write_item(&writer, unnamed_sha, unnamed, unnamed_size);
    write_item(&writer, sha, sealed, sealed_size);
    write_recipe(&writer, &key, sha, 4096);
    end_memory_bundle(&writer, out);

    rewritten_file file = {(uint8_t *)bundle, (uint8_t *)bundle, size, size, 0, false};
    char *err;
    cr_assert_eq(import_from(&file, cache_dir, &err), 0, "%s", err);
    cr_assert_null(strstr(err, "SPIR-V"), "decoded a SPIR-V no recipe names: %s", err);
    cr_assert_not_null(strstr(err, "imported 1 entries, 0 bad"), "%s", err);
    cr_assert_not_null(strstr(err, "recorded inputs of 1, 0 bad"), "%s", err);
    cr_assert_eq(t_count_files_ending(cache_dir, ".recipe"), 1);
    cr_assert_eq(t_count_files_ending(cache_dir, ".spirv"), 1);
    free(err);
    free(bundle);
}

/* An entry of seed whose recipe names blob (under sha, declaring
 * declared_size), recorded as is: a planted one need not verify. */
static void plant_module(zc_disk_tier *tier, uint64_t seed, const uint8_t sha[32],
                         const uint8_t *blob, size_t blob_size, uint64_t declared_size)
{
    zc_key key = t_key(seed);
    zc_artifact *artifact = t_artifact(BINARY_SIZE, seed);
    cr_assert_eq(zc_disk_tier_store(tier, &key, artifact, NULL), ZC_OK);
    zc_artifact_unref(artifact);
    size_t recipe_size;
    uint8_t *recipe = recipe_naming(&key, sha, declared_size, &recipe_size);
    zc_input_blob input = {.bytes = blob, .size = blob_size};
    memcpy(input.sha256, sha, 32);
    cr_assert_eq(zc_disk_tier_record(tier, &key, recipe, recipe_size, &input, 1), ZC_OK);
    free(recipe);
}

static size_t occurrences(const char *text, const char *what)
{
    size_t count = 0;
    for (const char *at = strstr(text, what); at != NULL; at = strstr(at + 1, what))
        count++;
    return count;
}

/* Export decodes a SPIR-V only when a recipe declares the size its container
 * does, and once: one that does not verify, named by two recipes, is decoded
 * for the first only; one declared with another size than it holds is left
 * out (import would refuse it) without being decoded. */
Test(tool_bundle, export_decodes_each_spirv_once_and_only_at_its_declared_size)
{
    uint8_t sha[32], forged_sha[32], ignored[32];
    size_t sealed_size, forged_size;
    uint8_t *sealed = sealed_spirv(4096, 7, sha, &sealed_size);
    uint8_t *forged = sealed_spirv(4096, 8, ignored, &forged_size);
    memset(forged_sha, 0xcd, sizeof forged_sha);
    zc_config config = t_disk_config(cache_dir, 0, 3);
    zc_disk_tier *tier;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    plant_module(tier, 4500, forged_sha, forged, forged_size, 4096);
    plant_module(tier, 4501, forged_sha, forged, forged_size, 4096);
    plant_module(tier, 4502, sha, sealed, sealed_size, 5000);
    zc_disk_tier_close(tier);
    free(sealed);
    free(forged);

    char path[PATH_MAX], *err;
    snprintf(path, sizeof path, "%s/out.zcb", scratch);
    cr_assert_eq(run_tool(&tool_cmd_export, cache_dir, path, NULL, &err), 1, "%s", err);
    cr_assert_eq(occurrences(err, "holds another key or digest"), 1, "%s", err);
    cr_assert_eq(occurrences(err, "SPIR-V input 0 does not verify"), 1, "%s", err);
    cr_assert_eq(occurrences(err, "SPIR-V input 0: holds 4096 bytes, not the 5000 its recipe "
                                  "declares"),
                 1, "%s", err);
    cr_assert_not_null(strstr(err, "exported 3 entries, skipped 0 bad; recorded inputs of 0, 3 "
                                   "left out as damaged"),
                       "%s", err);
    free(err);
}
