/* Read-only packs (pack.h) and the cache's pack tier (NEO_CACHE_PACKS):
 * every entry served exactly, and every damaged, cut, foreign or otherwise
 * signed pack a refusal or a counted miss whose compile gives the right
 * artifact, never a wrong binary or a crash. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_test_support.h"
#include "zecache/entry.h"
#include "zecache/pack.h"
#include "zecache/remote_tag.h"

static char scratch[128], unused[192], pack_path[256];

static void setup(void)
{
    t_make_scratch(scratch, sizeof scratch, "/tmp/zc_pack.XXXXXX", unused, sizeof unused);
    snprintf(pack_path, sizeof pack_path, "%s/test.zcp", scratch);
}

static void teardown(void)
{
    t_remove_tree(scratch);
}

TestSuite(pack, .init = setup, .fini = teardown);

enum { ENTRIES = 5 };

static const uint8_t secret_a[] = "the first secret, of sixteen bytes or more";
static const uint8_t secret_b[] = "another secret, of sixteen bytes or more!!";

static const zc_bundle_signer *signer_of(const uint8_t *secret, zc_bundle_signer *signer)
{
    *signer = (zc_bundle_signer){zc_hmac_sha256, secret, strlen((const char *)secret)};
    return signer;
}

static uint8_t *encoded(uint64_t seed, size_t *size)
{
    zc_key key = t_key(seed);
    zc_artifact *artifact = t_artifact(1000 + 700 * (size_t)seed, seed);
    uint8_t *entry = NULL;
    cr_assert_eq(zc_entry_encode(&key, artifact, 3, &entry, size), ZC_OK);
    zc_artifact_unref(artifact);
    return entry;
}

/* A pack of the entries of seeds 1..ENTRIES, written in reverse order and
 * the third twice. */
static void write_pack(const zc_bundle_signer *signer)
{
    FILE *out = fopen(pack_path, "wb");
    cr_assert_not_null(out);
    zc_pack_writer *writer = NULL;
    cr_assert_eq(zc_pack_write_start(out, signer, &writer), ZC_OK);
    for (uint64_t seed = ENTRIES; seed >= 1; seed--) {
        size_t size;
        uint8_t *entry = encoded(seed, &size);
        zc_key key = t_key(seed);
        cr_assert_eq(zc_pack_write_entry(writer, &key, entry, size), ZC_OK);
        if (seed == 3)
            cr_assert_eq(zc_pack_write_entry(writer, &key, entry, size), ZC_OK);
        free(entry);
    }
    uint64_t duplicates = 0;
    cr_assert_eq(zc_pack_write_end(writer, &duplicates), ZC_OK);
    cr_assert_eq(duplicates, 1);
    zc_pack_writer_free(writer);
    cr_assert_eq(fclose(out), 0);
}

static void assert_serves_every_entry(const zc_pack *pack)
{
    cr_assert_eq(zc_pack_entry_count(pack), ENTRIES);
    for (uint64_t seed = 1; seed <= ENTRIES; seed++) {
        zc_key key = t_key(seed);
        uint8_t *entry = NULL;
        size_t size, expected_size;
        cr_assert_eq(zc_pack_find(pack, &key, &entry, &size, NULL, 0), ZC_OK);
        uint8_t *expected = encoded(seed, &expected_size);
        cr_assert_eq(size, expected_size);
        cr_assert_eq(memcmp(entry, expected, size), 0);
        free(expected);
        free(entry);
    }
    zc_key absent = t_key(ENTRIES + 1);
    uint8_t *entry;
    size_t size;
    cr_assert_eq(zc_pack_find(pack, &absent, &entry, &size, NULL, 0), ZC_MISS);
    /* The same bytes as another kind's key: not the same key. */
    zc_key other_kind = t_key(1);
    other_kind.kind = ZC_ENTRY_OPENCL;
    cr_assert_eq(zc_pack_find(pack, &other_kind, &entry, &size, NULL, 0), ZC_MISS);
}

Test(pack, serves_every_entry_once_indexed)
{
    write_pack(NULL);
    zc_pack *pack = NULL;
    char reason[256] = "";
    cr_assert_eq(zc_pack_open(pack_path, NULL, &pack, reason, sizeof reason), ZC_OK, "%s", reason);
    assert_serves_every_entry(pack);
    zc_pack_close(pack);
}

static uint8_t *read_pack(size_t *size)
{
    uint8_t *bytes = t_read_bytes(pack_path, size);
    cr_assert_not_null(bytes);
    return bytes;
}

static void write_bytes(const uint8_t *bytes, size_t size)
{
    t_write_file(pack_path, bytes, size);
}

static zc_status open_status(const zc_bundle_signer *verifier)
{
    zc_pack *pack = NULL;
    char reason[256] = "";
    zc_status status = zc_pack_open(pack_path, verifier, &pack, reason, sizeof reason);
    cr_assert(status == ZC_OK || reason[0] != '\0', "a refusal says why");
    zc_pack_close(pack);
    return status;
}

/* Every byte of the header, the index and the tag is checked at open: any
 * one of them changed, the pack is refused. */
Test(pack, a_changed_header_index_or_tag_byte_is_refused)
{
    write_pack(NULL);
    size_t size;
    uint8_t *bytes = read_pack(&size);
    uint64_t index_offset = size - ZC_PACK_TAG_SIZE - ENTRIES * ZC_PACK_RECORD_SIZE;
    for (size_t at = 0; at < size; at++) {
        if (at == ZC_PACK_HEADER_SIZE)
            at = (size_t)index_offset; /* entries: checked when served */
        bytes[at] ^= 0x20;
        write_bytes(bytes, size);
        cr_assert_eq(open_status(NULL), ZC_MISS, "byte %zu changed", at);
        bytes[at] ^= 0x20;
    }
    free(bytes);
}

Test(pack, a_cut_or_grown_pack_is_refused)
{
    write_pack(NULL);
    size_t size;
    uint8_t *bytes = read_pack(&size);
    for (size_t length = 0; length < size; length++) {
        write_bytes(bytes, length);
        cr_assert_eq(open_status(NULL), ZC_MISS, "cut at %zu", length);
    }
    uint8_t *grown = calloc(1, size + 1);
    memcpy(grown, bytes, size);
    write_bytes(grown, size + 1);
    cr_assert_eq(open_status(NULL), ZC_MISS);
    free(grown);
    free(bytes);
}

Test(pack, foreign_files_are_refused)
{
    uint8_t noise[4096];
    t_fill_random(noise, sizeof noise, 7);
    write_bytes(noise, sizeof noise);
    cr_assert_eq(open_status(NULL), ZC_MISS);
    write_bytes(noise, 0);
    cr_assert_eq(open_status(NULL), ZC_MISS);
    size_t size;
    uint8_t *entry = encoded(1, &size); /* an entry is not a pack */
    write_bytes(entry, size);
    free(entry);
    cr_assert_eq(open_status(NULL), ZC_MISS);
    cr_assert_eq(unlink(pack_path), 0);
    cr_assert_eq(mkdir(pack_path, 0700), 0);
    cr_assert_eq(open_status(NULL), ZC_ERR_IO);
    cr_assert_eq(rmdir(pack_path), 0);
    cr_assert_eq(open_status(NULL), ZC_ERR_IO); /* absent */
}

/* A signed pack opens only with its secret, an unsigned one only without;
 * an entry's bytes changed in a signed pack are not served. */
Test(pack, signed_packs_need_their_secret)
{
    zc_bundle_signer a, b;
    write_pack(signer_of(secret_a, &a));
    cr_assert_eq(open_status(NULL), ZC_MISS);
    cr_assert_eq(open_status(signer_of(secret_b, &b)), ZC_MISS);
    zc_pack *pack = NULL;
    cr_assert_eq(zc_pack_open(pack_path, &a, &pack, NULL, 0), ZC_OK);
    assert_serves_every_entry(pack);
    zc_pack_close(pack);

    size_t size;
    uint8_t *bytes = read_pack(&size);
    bytes[ZC_PACK_HEADER_SIZE + 100] ^= 1; /* inside the first entry written: seed ENTRIES */
    write_bytes(bytes, size);
    free(bytes);
    cr_assert_eq(zc_pack_open(pack_path, &a, &pack, NULL, 0), ZC_OK);
    zc_key key = t_key(ENTRIES);
    uint8_t *entry;
    char reason[256] = "";
    cr_assert_eq(zc_pack_find(pack, &key, &entry, &size, reason, sizeof reason), ZC_MISS);
    cr_assert_not_null(strstr(reason, "do not match"), "%s", reason);
    zc_pack_close(pack);

    write_pack(NULL);
    cr_assert_eq(open_status(&a), ZC_MISS);
}

/* ---- the cache's pack tier ---- */

/* A cache on an empty directory of its own, with NEO_CACHE_PACKS, NEO_CACHE_REMOTE
 * and the secret (NULL: none). */
static zc_cache *open_cache_with(const char *packs, const char *remote, const uint8_t *secret)
{
    static int caches;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/cache%d", scratch, caches++);
    zc_config config = t_disk_config(dir, ZC_DEFAULT_MAX_SIZE, 3);
    config.memory_size = 4 << 20;
    snprintf(config.packs, sizeof config.packs, "%s", packs);
    snprintf(config.remote, sizeof config.remote, "%s", remote);
    if (secret != NULL) {
        snprintf(config.remote_secret_file, sizeof config.remote_secret_file, "%s/secret%d",
                 scratch, caches);
        t_write_secret(config.remote_secret_file, (const char *)secret);
    }
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    return cache;
}

static zc_cache *open_cache(const char *packs)
{
    return open_cache_with(packs, "", NULL);
}

static zc_lookup_outcome look_up(zc_cache *cache, uint64_t seed, t_counted_compile *compile)
{
    zc_key key = t_key(seed);
    compile->seed = seed;
    compile->size = 1000 + 700 * (size_t)seed;
    zc_artifact *expected = t_artifact(compile->size, seed);
    zc_lookup_outcome outcome =
        t_lookup_expecting(cache, &key, t_compile_counted, compile, expected);
    zc_artifact_unref(expected);
    return outcome;
}

/* Every entry of the pack served as outcome says, then a module the pack
 * lacks compiled, once: the counters. */
static zc_cache_stats serve_all_and_compile_one(zc_cache *cache, zc_lookup_outcome outcome)
{
    t_counted_compile compile = {0};
    for (uint64_t seed = 1; seed <= ENTRIES; seed++)
        cr_assert_eq(look_up(cache, seed, &compile), outcome);
    cr_assert_eq(look_up(cache, ENTRIES + 1, &compile), ZC_LOOKUP_COMPILED);
    cr_assert_eq(compile.calls, 1);
    return t_cache_stats(cache);
}

Test(pack, the_cache_serves_packed_entries_without_compiling)
{
    write_pack(NULL);
    char packs[512];
    snprintf(packs, sizeof packs, "%s/absent.zcp:%s", scratch, pack_path);
    zc_cache *cache = open_cache(packs);
    zc_cache_stats stats = serve_all_and_compile_one(cache, ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(stats.pack_hits, ENTRIES);
    cr_assert_eq(stats.disk_hits, ENTRIES);
    cr_assert_eq(stats.pack_rejected, 1, "the absent pack");
    zc_cache_close(cache);
}

/* An entry whose bytes were changed in an unsigned pack (the index still
 * checks) fails its own checks when served: counted, passed over, compiled. */
Test(pack, a_damaged_entry_is_a_counted_miss_with_the_right_artifact)
{
    write_pack(NULL);
    size_t size;
    uint8_t *bytes = read_pack(&size);
    bytes[ZC_PACK_HEADER_SIZE + 100] ^= 1; /* inside the entry of seed ENTRIES */
    write_bytes(bytes, size);
    free(bytes);
    zc_cache *cache = open_cache(pack_path);
    t_counted_compile compile = {0};
    cr_assert_eq(look_up(cache, ENTRIES, &compile), ZC_LOOKUP_COMPILED);
    cr_assert_eq(compile.calls, 1);
    cr_assert_eq(look_up(cache, 1, &compile), ZC_LOOKUP_DISK_HIT);
    zc_cache_stats stats = t_cache_stats(cache);
    cr_assert_eq(stats.pack_rejected, 1);
    cr_assert_eq(stats.pack_hits, 1);
    zc_cache_close(cache);
}

/* A pack cut in place while a process has it open (`cp` over it truncates
 * the file it names first): every entry past the new end is a counted miss,
 * compiled, never a SIGBUS; rewritten in place with other bytes, a counted
 * miss again. */
Test(pack, a_pack_cut_or_rewritten_while_open_is_a_counted_miss)
{
    write_pack(NULL);
    zc_cache *cache = open_cache(pack_path);
    cr_assert_eq(truncate(pack_path, ZC_PACK_HEADER_SIZE), 0);
    t_counted_compile compile = {0};
    for (uint64_t seed = 1; seed <= 3; seed++)
        cr_assert_eq(look_up(cache, seed, &compile), ZC_LOOKUP_COMPILED);
    cr_assert_eq(compile.calls, 3);
    uint8_t noise[1 << 16];
    t_fill_random(noise, sizeof noise, 11);
    t_write_file(pack_path, noise, sizeof noise);
    for (uint64_t seed = 4; seed <= ENTRIES; seed++)
        cr_assert_eq(look_up(cache, seed, &compile), ZC_LOOKUP_COMPILED);
    cr_assert_eq(compile.calls, ENTRIES);
    zc_cache_stats stats = t_cache_stats(cache);
    cr_assert_eq(stats.pack_hits, 0);
    cr_assert_eq(stats.pack_rejected, ENTRIES);
    zc_cache_close(cache);
}

/* ---- a pack as a storage: NEO_CACHE_REMOTE=file:///PATH.zcp ---- */

/* Every entry a remote hit, never a store into the pack (whose bytes stay
 * as they were), a module the pack lacks compiled. */
Test(pack, a_pack_storage_serves_hits_and_is_never_written)
{
    write_pack(NULL);
    size_t size;
    uint8_t *before = read_pack(&size);
    char remote[512];
    snprintf(remote, sizeof remote, "file://%s", pack_path);
    zc_cache *cache = open_cache_with("", remote, NULL);
    zc_cache_stats stats = serve_all_and_compile_one(cache, ZC_LOOKUP_REMOTE_HIT);
    cr_assert_eq(stats.remote_hits, ENTRIES);
    cr_assert_eq(stats.remote_stores, 0);
    cr_assert_eq(stats.remote_errors, 0);
    zc_cache_close(cache);
    size_t after_size;
    uint8_t *after = read_pack(&after_size);
    cr_assert(after_size == size && memcmp(before, after, size) == 0, "the pack is unchanged");
    free(before);
    free(after);
}

/* With a secret, a pack signed with it serves (its entries carry no tag of
 * their own: the pack's signature vouches for them); one signed with
 * another secret, or unsigned, is not used. */
Test(pack, a_pack_storage_takes_the_secrets_signature)
{
    zc_bundle_signer a;
    write_pack(signer_of(secret_a, &a));
    char remote[512];
    snprintf(remote, sizeof remote, "file://%s", pack_path);
    t_counted_compile compile = {0};
    zc_cache *cache = open_cache_with("", remote, secret_a);
    cr_assert_eq(look_up(cache, 1, &compile), ZC_LOOKUP_REMOTE_HIT);
    zc_cache_close(cache);
    cache = open_cache_with("", remote, secret_b);
    cr_assert_eq(look_up(cache, 1, &compile), ZC_LOOKUP_COMPILED);
    zc_cache_close(cache);
    write_pack(NULL);
    cache = open_cache_with("", remote, secret_a);
    cr_assert_eq(look_up(cache, 1, &compile), ZC_LOOKUP_COMPILED);
    zc_cache_close(cache);
    cr_assert_eq(compile.calls, 2);
}

/* Cut in place while the storage has it open: a counted error and a
 * compile, never a SIGBUS; after three the storage is left alone. */
Test(pack, a_pack_storage_cut_while_open_fails_like_a_lost_server)
{
    write_pack(NULL);
    char remote[512];
    snprintf(remote, sizeof remote, "file://%s", pack_path);
    zc_cache *cache = open_cache_with("", remote, NULL);
    cr_assert_eq(truncate(pack_path, ZC_PACK_HEADER_SIZE), 0);
    t_counted_compile compile = {0};
    for (uint64_t seed = 1; seed <= ENTRIES; seed++)
        cr_assert_eq(look_up(cache, seed, &compile), ZC_LOOKUP_COMPILED);
    cr_assert_eq(compile.calls, ENTRIES);
    zc_cache_stats stats = t_cache_stats(cache);
    cr_assert_eq(stats.remote_hits, 0);
    cr_assert_eq(stats.remote_errors, 3, "then the storage is left alone");
    zc_cache_close(cache);
}

/* An index read in parts (1024 records each) and grown as it is read:
 * every record of a pack of some thousands found, each entry exact. */
Test(pack, a_pack_of_thousands_serves_each_entry)
{
    enum { MANY = 2100 };
    FILE *out = fopen(pack_path, "wb");
    zc_pack_writer *writer = NULL;
    cr_assert_eq(zc_pack_write_start(out, NULL, &writer), ZC_OK);
    zc_artifact *artifact = t_artifact(64, 1);
    for (uint64_t seed = 1; seed <= MANY; seed++) {
        zc_key key = t_key(seed);
        uint8_t *entry = NULL;
        size_t size;
        cr_assert_eq(zc_entry_encode(&key, artifact, 1, &entry, &size), ZC_OK);
        cr_assert_eq(zc_pack_write_entry(writer, &key, entry, size), ZC_OK);
        free(entry);
    }
    cr_assert_eq(zc_pack_write_end(writer, NULL), ZC_OK);
    zc_pack_writer_free(writer);
    cr_assert_eq(fclose(out), 0);
    zc_pack *pack = NULL;
    cr_assert_eq(zc_pack_open(pack_path, NULL, &pack, NULL, 0), ZC_OK);
    cr_assert_eq(zc_pack_entry_count(pack), MANY);
    for (uint64_t seed = 1; seed <= MANY; seed++) {
        zc_key key = t_key(seed);
        uint8_t *entry = NULL;
        size_t size;
        zc_artifact *found = NULL;
        cr_assert_eq(zc_pack_find(pack, &key, &entry, &size, NULL, 0), ZC_OK, "%llu",
                     (unsigned long long)seed);
        cr_assert_eq(zc_entry_decode(entry, size, &key, 0, &found, NULL, 0), ZC_OK);
        t_assert_same_artifact(found, artifact);
        zc_artifact_unref(found);
        free(entry);
    }
    zc_pack_close(pack);
    zc_artifact_unref(artifact);
}

/* The pack written, and a cache on scratch/name with it and the prefetch. */
static zc_config prefetching_with_the_pack(const char *name)
{
    write_pack(NULL);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", scratch, name);
    zc_config config = t_disk_config(dir, ZC_DEFAULT_MAX_SIZE, 3);
    config.memory_size = 4 << 20;
    snprintf(config.packs, sizeof config.packs, "%s", pack_path);
    config.prefetch = true;
    return config;
}

/* The prefetch loads a program's entries from the packs as a lookup would
 * (before the directory): once it has, they are pack hits even with the
 * pack cut in place since. */
Test(pack, the_prefetch_loads_from_the_packs)
{
    zc_config config = prefetching_with_the_pack("prefetched");
    t_counted_compile compile = {0};
    for (int run = 0; run < 2; run++) {
        zc_cache *cache = NULL;
        cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
        cr_assert_eq(zc_cache_prefetch_start(cache, "the program"), ZC_OK);
        zc_cache_prefetch_wait(cache);
        if (run == 1)
            cr_assert_eq(truncate(pack_path, ZC_PACK_HEADER_SIZE), 0);
        for (uint64_t seed = 1; seed <= ENTRIES; seed++)
            cr_assert_eq(look_up(cache, seed, &compile), ZC_LOOKUP_DISK_HIT, "run %d", run);
        zc_cache_stats stats = t_cache_stats(cache);
        cr_assert_eq(stats.pack_hits, ENTRIES);
        cr_assert_eq(stats.pack_rejected, 0);
        zc_cache_prefetch_save(cache);
        zc_cache_close(cache);
    }
    cr_assert_eq(compile.calls, 0);
}

/* The directory's entry for the key of seed 1: another artifact than the
 * pack's, stored by a cache on dir without packs, which lists it as used by
 * "the program". Entries are the same for one key in real use; here the
 * bytes tell which tier served. */
static zc_artifact *store_other_in_directory(const zc_config *config)
{
    zc_config without_packs = *config;
    without_packs.packs[0] = '\0';
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&without_packs, &cache), ZC_OK);
    cr_assert_eq(zc_cache_prefetch_start(cache, "the program"), ZC_OK);
    t_counted_compile compile = {.seed = 101, .size = 900};
    zc_artifact *other = t_artifact(compile.size, compile.seed);
    zc_key key = t_key(1);
    cr_assert_eq(t_lookup_expecting(cache, &key, t_compile_counted, &compile, other),
                 ZC_LOOKUP_COMPILED);
    zc_cache_prefetch_save(cache);
    zc_cache_close(cache);
    return other;
}

/* A key the pack holds is served from the pack, by a lookup and by the
 * prefetch, with the directory holding it too: the pack's index is in
 * memory, where the directory costs an open, a stat and a read per entry
 * (bench_packs.sh). */
Test(pack, a_key_the_pack_holds_is_served_from_it_before_the_directory)
{
    zc_config config = prefetching_with_the_pack("both");
    zc_artifact *other = store_other_in_directory(&config);
    for (int prefetched = 0; prefetched < 2; prefetched++) {
        zc_cache *cache = NULL;
        cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
        if (prefetched) {
            cr_assert_eq(zc_cache_prefetch_start(cache, "the program"), ZC_OK);
            zc_cache_prefetch_wait(cache);
        }
        t_counted_compile compile = {0};
        cr_assert_eq(look_up(cache, 1, &compile), ZC_LOOKUP_DISK_HIT, "prefetched %d", prefetched);
        cr_assert_eq(t_cache_stats(cache).pack_hits, 1, "prefetched %d", prefetched);
        cr_assert_eq(compile.calls, 0);
        zc_cache_close(cache);
    }
    zc_artifact_unref(other);
}
