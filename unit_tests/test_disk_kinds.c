/* Level Zero and OpenCL entries in one directory: <64 hex>.l0_cache and
 * <64 hex>.cl_cache as Intel's driver names them, the kind travelling with
 * the key through the disk tier, its maintenance, usage lists, bundles and
 * file:// storages. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/bundle.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_tier.h"
#include "zecache/disk_usage_list.h"
#include "zecache/entry.h"
#include "zecache/remote_spec.h"
#include "zecache/sealed.h"
#include "zecache/storage.h"

static char test_root[256];
static char cache_dir[512];

static void make_root(void)
{
    t_make_scratch(test_root, sizeof test_root, "/tmp/zc_kinds_XXXXXX", cache_dir,
                   sizeof cache_dir);
}

static void remove_root(void)
{
    t_remove_tree(test_root);
}

TestSuite(kinds, .init = make_root, .fini = remove_root);

static zc_disk_tier *open_tier(const char *dir, uint64_t max_size)
{
    zc_config config = t_disk_config(dir, max_size, 3);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    return tier;
}

static zc_key kind_key(uint64_t seed, zc_entry_kind kind)
{
    zc_key key = t_key(seed);
    key.kind = (uint8_t)kind;
    return key;
}

/* dir/<k0>/<k1>/<hex><suffix>. */
static void entry_file(const char *dir, const zc_key *key, const char *suffix, char *out)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(out, PATH_MAX, "%.1000s/%c/%c/%s%s", dir, hex[0], hex[1], hex, suffix);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s is missing", path);
    return (uint64_t)st.st_size;
}

static void store(zc_disk_tier *tier, const zc_key *key, uint64_t seed, const char *trace)
{
    zc_artifact *artifact = t_artifact(300 + seed * 7, seed);
    cr_assert_eq(zc_disk_tier_store(tier, key, artifact, trace), ZC_OK);
    zc_artifact_unref(artifact);
}

static void assert_loads(zc_disk_tier *tier, const zc_key *key, uint64_t seed)
{
    zc_artifact *expected = t_artifact(300 + seed * 7, seed), *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, key, &loaded), ZC_OK);
    t_assert_same_artifact(loaded, expected);
    zc_artifact_unref(loaded);
    zc_artifact_unref(expected);
}

typedef struct seen {
    size_t l0, cl;
} seen;

static int count_kinds(void *context, const zc_disk_entry_info *info)
{
    seen *s = context;
    cr_assert(info->is_zecache, "%s", info->path);
    if (info->key.kind == ZC_ENTRY_OPENCL) {
        cr_assert(strstr(info->path, ".cl_cache") != NULL, "%s", info->path);
        s->cl++;
    } else {
        cr_assert(strstr(info->path, ".l0_cache") != NULL, "%s", info->path);
        s->l0++;
    }
    return 0;
}

/* The same key bytes under both kinds: two files, each loads its own
 * artifact, and config.file counts both. */
Test(kinds, both_kinds_side_by_side)
{
    zc_disk_tier *tier = open_tier(cache_dir, 0);
    zc_key l0 = kind_key(1, ZC_ENTRY_LEVEL_ZERO), cl = kind_key(1, ZC_ENTRY_OPENCL);
    store(tier, &cl, 2, NULL);
    char l0_path[PATH_MAX], cl_path[PATH_MAX];
    entry_file(cache_dir, &l0, ".l0_cache", l0_path);
    entry_file(cache_dir, &cl, ".cl_cache", cl_path);
    cr_assert(!t_exists(l0_path));
    zc_artifact *none = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, &l0, &none), ZC_MISS);
    cr_assert(t_exists(cl_path), "the OpenCL entry went when a Level Zero key missed");
    store(tier, &l0, 3, NULL);
    assert_loads(tier, &l0, 3);
    assert_loads(tier, &cl, 2);
    uint64_t recorded = 0, scanned = 0, entries = 0;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(zc_disk_tier_scanned_size(tier, &scanned, &entries), ZC_OK);
    cr_assert_eq(recorded, file_size(l0_path) + file_size(cl_path));
    cr_assert_eq(scanned, recorded);
    cr_assert_eq(entries, 2);
    seen s = {0};
    cr_assert_eq(zc_disk_tier_foreach(tier, count_kinds, &s), ZC_OK);
    cr_assert_eq(s.l0, 1);
    cr_assert_eq(s.cl, 1);
    char rel[ZC_DISK_ENTRY_PATH_SIZE];
    zc_disk_tier_entry_path(&cl, rel);
    cr_assert_str_eq(rel, cl_path + strlen(cache_dir) + 1);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, rel), ZC_OK);
    cr_assert(!t_exists(cl_path));
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(recorded, file_size(l0_path));
    zc_disk_tier_close(tier);
}

/* A trace beside an OpenCL entry is its entry's, not an orphan: repairing
 * steps keep it, and remove it once its entry is gone. */
Test(kinds, sidecars_of_opencl_entries_are_not_orphans)
{
    zc_disk_tier *tier = open_tier(cache_dir, 0);
    zc_key cl = kind_key(4, ZC_ENTRY_OPENCL);
    store(tier, &cl, 4, "---- opencl c ----\n");
    char cl_path[PATH_MAX], trace_path[PATH_MAX];
    entry_file(cache_dir, &cl, ".cl_cache", cl_path);
    entry_file(cache_dir, &cl, ".trace", trace_path);
    cr_assert(t_exists(trace_path));
    uint64_t size = 0;
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, &size), ZC_OK);
    cr_assert(t_exists(trace_path), "repair took an OpenCL entry's trace for an orphan");
    cr_assert_eq(size, file_size(cl_path) + file_size(trace_path));
    cr_assert_eq(unlink(cl_path), 0);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, &size), ZC_OK);
    cr_assert(!t_exists(trace_path));
    cr_assert_eq(size, 0);
    zc_disk_tier_close(tier);
}

/* Trim and clear take entries of both kinds; eviction counts them all. */
Test(kinds, trim_and_clear_take_both_kinds)
{
    zc_disk_tier *tier = open_tier(cache_dir, 0);
    for (uint64_t i = 0; i < 4; i++) {
        zc_key key = kind_key(10 + i, i % 2 ? ZC_ENTRY_OPENCL : ZC_ENTRY_LEVEL_ZERO);
        store(tier, &key, 10 + i, NULL);
    }
    uint64_t removed = 0, removed_bytes = 0;
    cr_assert_eq(zc_disk_tier_trim(tier, 0, 0, &removed, &removed_bytes), ZC_OK);
    cr_assert_eq(removed, 4);
    cr_assert_eq(t_count_files_ending(cache_dir, ".cl_cache"), 0);
    cr_assert_eq(t_count_files_ending(cache_dir, ".l0_cache"), 0);
    for (uint64_t i = 0; i < 4; i++) {
        zc_key key = kind_key(20 + i, i % 2 ? ZC_ENTRY_OPENCL : ZC_ENTRY_LEVEL_ZERO);
        store(tier, &key, 20 + i, NULL);
    }
    cr_assert_eq(t_count_files_ending(cache_dir, ".cl_cache"), 2);
    cr_assert_eq(zc_disk_tier_clear(tier), ZC_OK);
    cr_assert_eq(t_count_files_ending(cache_dir, ".cl_cache"), 0);
    cr_assert_eq(t_count_files_ending(cache_dir, ".l0_cache"), 0);
    zc_disk_tier_close(tier);
}

/* An entry of one kind is not imported under a key of the other. */
Test(kinds, store_entry_checks_the_kind)
{
    zc_disk_tier *tier = open_tier(cache_dir, 0);
    zc_key cl = kind_key(30, ZC_ENTRY_OPENCL), l0 = kind_key(30, ZC_ENTRY_LEVEL_ZERO);
    zc_artifact *artifact = t_artifact(400, 30);
    uint8_t *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(zc_entry_encode(&cl, artifact, 3, &bytes, &size), ZC_OK);
    char reason[256] = "";
    cr_assert_eq(zc_disk_tier_store_entry(tier, &l0, bytes, size, reason, sizeof reason), ZC_MISS);
    cr_assert_eq(t_count_files_ending(cache_dir, "_cache"), 0, "stored under the wrong kind");
    cr_assert_eq(zc_disk_tier_store_entry(tier, &cl, bytes, size, reason, sizeof reason), ZC_OK,
                 "%s", reason);
    cr_assert_eq(t_count_files_ending(cache_dir, ".cl_cache"), 1);
    free(bytes);
    zc_artifact_unref(artifact);
    zc_disk_tier_close(tier);
}

/* A usage list keeps each key's kind; a list of the format before kinds
 * (magic ZCUSAGE, 32 bytes a key) is ignored. */
Test(kinds, usage_lists_keep_the_kind)
{
    zc_disk_tier *tier = open_tier(cache_dir, 0);
    uint8_t program[32] = {7};
    zc_key keys[3] = {kind_key(40, ZC_ENTRY_OPENCL), kind_key(41, ZC_ENTRY_LEVEL_ZERO),
                      kind_key(42, ZC_ENTRY_OPENCL)};
    cr_assert_eq(zc_disk_tier_write_usage(tier, program, keys, 3), ZC_OK);
    zc_key *read = calloc(ZC_USAGE_LIST_MAX, sizeof *read);
    size_t count = 0;
    cr_assert_eq(zc_disk_tier_read_usage(tier, program, read, &count), ZC_OK);
    cr_assert_eq(count, 3);
    for (size_t i = 0; i < 3; i++)
        cr_assert(zc_key_equal(&read[i], &keys[i]), "key %zu came back otherwise", i);
    /* The old format, by hand. */
    uint8_t old_keys[2 * ZC_KEY_SIZE];
    memcpy(old_keys, keys[0].bytes, ZC_KEY_SIZE);
    memcpy(old_keys + ZC_KEY_SIZE, keys[1].bytes, ZC_KEY_SIZE);
    uint8_t *sealed = NULL;
    size_t sealed_size = 0;
    cr_assert_eq(
        zc_sealed_encode("ZCUSAGE", program, old_keys, sizeof old_keys, 1, &sealed, &sealed_size),
        ZC_OK);
    char hex[ZC_KEY_HEX_SIZE], path[PATH_MAX];
    zc_key program_key = {0};
    memcpy(program_key.bytes, program, 32);
    zc_key_to_hex(&program_key, hex);
    snprintf(path, sizeof path, "%s/%s%s", cache_dir, hex, ZC_USAGE_SUFFIX);
    t_write_file(path, sealed, sealed_size);
    cr_assert_eq(zc_disk_tier_read_usage(tier, program, read, &count), ZC_MISS);
    cr_assert_eq(count, 0);
    free(sealed);
    free(read);
    zc_disk_tier_close(tier);
}

/* A bundle carries an OpenCL entry's kind in the entry's own header. */
Test(kinds, bundles_carry_the_kind)
{
    zc_key cl = kind_key(50, ZC_ENTRY_OPENCL);
    zc_artifact *artifact = t_artifact(500, 50);
    uint8_t *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(zc_entry_encode(&cl, artifact, 3, &bytes, &size), ZC_OK);
    char *buffer = NULL;
    size_t buffer_size = 0;
    FILE *out = open_memstream(&buffer, &buffer_size);
    zc_bundle_writer writer = {0};
    cr_assert_eq(zc_bundle_write_start(&writer, out), ZC_OK);
    cr_assert_eq(zc_bundle_write_entry(&writer, &cl, bytes, size), ZC_OK);
    cr_assert_eq(zc_bundle_write_end(&writer), ZC_OK);
    zc_bundle_writer_close(&writer);
    fclose(out);
    zc_key read_key = {0};
    uint8_t *read = NULL;
    size_t read_size = 0;
    char reason[256] = "";
    zc_bundle_reader reader = {0};
    FILE *in = fmemopen(buffer, buffer_size, "rb");
    cr_assert_eq(zc_bundle_read_start(&reader, in, reason, sizeof reason), ZC_OK, "%s", reason);
    cr_assert_eq(zc_bundle_read_next(&reader, &read_key, &read, &read_size, reason, sizeof reason),
                 ZC_BUNDLE_ENTRY, "%s", reason);
    cr_assert(zc_key_equal(&read_key, &cl), "the kind was lost (%d)", read_key.kind);
    zc_disk_tier *tier = open_tier(cache_dir, 0);
    cr_assert_eq(zc_disk_tier_store_entry(tier, &read_key, read, read_size, reason, sizeof reason),
                 ZC_OK, "%s", reason);
    char path[PATH_MAX];
    entry_file(cache_dir, &cl, ".cl_cache", path);
    cr_assert(t_exists(path));
    zc_disk_tier_close(tier);
    free(read);
    zc_bundle_reader_close(&reader);
    fclose(in);
    free(buffer);
    free(bytes);
    zc_artifact_unref(artifact);
}

/* A file:// storage is the disk tier's layout: OpenCL values are .cl_cache
 * files, and a Level Zero key of the same bytes finds nothing. */
Test(kinds, file_storages_name_opencl_entries_cl_cache)
{
    char url[PATH_MAX + 16], shared[PATH_MAX];
    snprintf(shared, sizeof shared, "%s/shared", test_root);
    snprintf(url, sizeof url, "file://%s", shared);
    zc_remote_spec spec;
    char reason[256] = "";
    cr_assert_eq(zc_remote_spec_parse(url, &spec, reason, sizeof reason), ZC_OK, "%s", reason);
    zc_config config = t_disk_config(cache_dir, 0, 3);
    zc_storage *storage = NULL;
    cr_assert_eq(zc_storage_open(&spec, &config, &storage), ZC_OK);
    zc_key cl = kind_key(60, ZC_ENTRY_OPENCL), l0 = kind_key(60, ZC_ENTRY_LEVEL_ZERO);
    zc_artifact *artifact = t_artifact(600, 60);
    uint8_t *bytes = NULL, *got = NULL;
    size_t size = 0, got_size = 0;
    cr_assert_eq(zc_entry_encode(&cl, artifact, 3, &bytes, &size), ZC_OK);
    cr_assert_eq(storage->ops->put(storage, &cl, bytes, size, false), ZC_OK);
    char path[PATH_MAX];
    entry_file(shared, &cl, ".cl_cache", path);
    cr_assert(t_exists(path));
    cr_assert_eq(storage->ops->get(storage, &l0, &got, &got_size), ZC_MISS);
    cr_assert_eq(storage->ops->get(storage, &cl, &got, &got_size), ZC_OK);
    cr_assert_eq(got_size, size);
    cr_assert_arr_eq(got, bytes, size);
    free(got);
    free(bytes);
    zc_artifact_unref(artifact);
    zc_storage_close(storage);
    zc_remote_spec_free(&spec);
}
