/* The disk tier against a real directory under /tmp. Accounting is checked
 * against an independent walk (nftw), never against the tier's own scan.
 * Labelled "threaded": the concurrent-store tests run under TSan. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../source/local/disk_internal.h"
#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/disk_tier.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_usage_list.h"

static char test_root[256];
static char cache_dir[512]; /* short, so paths built from it fit PATH_MAX */

static void make_test_root(void)
{
    t_make_scratch(test_root, sizeof test_root, "/tmp/zc_disk_test_XXXXXX", cache_dir,
                   sizeof cache_dir);
}

static void remove_test_root(void)
{
    t_remove_tree(test_root);
}

TestSuite(disk, .init = make_test_root, .fini = remove_test_root);

/* ---- helpers ---- */

static zc_config config_for(const char *dir, uint64_t max_size)
{
    return t_disk_config(dir, max_size, 3);
}

static zc_disk_tier *open_tier(uint64_t max_size, const zc_fs_ops *ops)
{
    zc_config config = config_for(cache_dir, max_size);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open_with_ops(&config, ops, &tier), ZC_OK);
    cr_assert_not_null(tier);
    return tier;
}

static void path_in_cache(char *out, const char *rel)
{
    snprintf(out, PATH_MAX, "%s/%s", cache_dir, rel);
}

static void entry_path(char *out, const zc_key *key)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(out, PATH_MAX, "%s/%c/%c/%s.l0_cache", cache_dir, hex[0], hex[1], hex);
}

static void trace_path(char *out, const zc_key *key)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(out, PATH_MAX, "%s/%c/%c/%s.trace", cache_dir, hex[0], hex[1], hex);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s", path);
    return (uint64_t)st.st_size;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s", path);
    return st.st_mode & 07777;
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    cr_assert_not_null(file, "%s", path);
    fseek(file, 0, SEEK_END);
    *size = (size_t)ftell(file);
    fseek(file, 0, SEEK_SET);
    uint8_t *data = malloc(*size + 1);
    cr_assert_eq(fread(data, 1, *size, file), *size);
    fclose(file);
    return data;
}

static void set_mtime(const char *path, time_t seconds)
{
    struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW), 0, "%s", path);
}

static time_t mtime_of(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    return st.st_mtim.tv_sec;
}

static uint64_t walked_total;
static uint64_t walked_entries;

/* Entries, and the traces beside them: a trace counts with its entry. */
static int add_if_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    size_t length = strlen(path);
    if (type == FTW_F && S_ISREG(st->st_mode) && length > 9 &&
        strcmp(path + length - 9, ".l0_cache") == 0) {
        walked_total += (uint64_t)st->st_size;
        walked_entries++;
    }
    if (type == FTW_F && S_ISREG(st->st_mode) && length > 6 &&
        strcmp(path + length - 6, ".trace") == 0) {
        char entry[PATH_MAX];
        snprintf(entry, sizeof entry, "%.*s.l0_cache", (int)(length - 6), path);
        struct stat entry_st;
        if (lstat(entry, &entry_st) == 0 && S_ISREG(entry_st.st_mode))
            walked_total += (uint64_t)st->st_size;
    }
    return 0;
}

/* The real total, by an independent walk of the directory. */
static uint64_t disk_total(void)
{
    walked_total = walked_entries = 0;
    cr_assert_eq(nftw(cache_dir, add_if_entry, 16, FTW_PHYS), 0);
    return walked_total;
}

/* config.file's value, or false when it is not exactly 8 bytes. */
static bool config_file_value(uint64_t *value)
{
    char path[PATH_MAX];
    path_in_cache(path, ZC_CONFIG_FILE_NAME);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    uint8_t bytes[16];
    ssize_t got = read(fd, bytes, sizeof bytes);
    close(fd);
    if (got != 8)
        return false;
    memcpy(value, bytes, 8);
    return true;
}

static void write_config_file(const void *bytes, size_t size)
{
    char path[PATH_MAX];
    path_in_cache(path, ZC_CONFIG_FILE_NAME);
    t_write_file(path, bytes, size);
}

static void assert_accounting_exact(void)
{
    uint64_t recorded = 0;
    cr_assert(config_file_value(&recorded), "config.file must hold 8 bytes");
    cr_assert_eq(recorded, disk_total(), "config.file %llu, real total %llu",
                 (unsigned long long)recorded, (unsigned long long)walked_total);
}

static size_t count_temp_files(void)
{
    DIR *dir = opendir(cache_dir);
    cr_assert_not_null(dir);
    size_t count = 0;
    for (struct dirent *dirent; (dirent = readdir(dir)) != NULL;)
        count += strncmp(dirent->d_name, ZC_TEMP_PREFIX, strlen(ZC_TEMP_PREFIX)) == 0;
    closedir(dir);
    return count;
}

static void store_ok(zc_disk_tier *tier, uint64_t seed, size_t binary_size, const char *trace)
{
    zc_key key = t_key(seed);
    zc_artifact *artifact = t_artifact(binary_size, seed);
    zc_status status = zc_disk_tier_store(tier, &key, artifact, trace);
    cr_assert_eq(status, ZC_OK, "store %llu: %s", (unsigned long long)seed, zc_status_name(status));
    zc_artifact_unref(artifact);
}

static void assert_loads(zc_disk_tier *tier, uint64_t seed, size_t binary_size)
{
    zc_key key = t_key(seed);
    zc_artifact *expected = t_artifact(binary_size, seed);
    zc_artifact *loaded = NULL;
    zc_status status = zc_disk_tier_load(tier, &key, &loaded);
    cr_assert_eq(status, ZC_OK, "load %llu: %s", (unsigned long long)seed, zc_status_name(status));
    t_assert_same_artifact(loaded, expected);
    zc_artifact_unref(loaded);
    zc_artifact_unref(expected);
}

static void assert_misses(zc_disk_tier *tier, uint64_t seed)
{
    zc_key key = t_key(seed);
    zc_artifact *loaded = (zc_artifact *)1;
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_MISS);
    cr_assert_null(loaded);
}

/* ---- store and load ---- */

Test(disk, store_then_load_returns_the_same_bytes)
{
    snprintf(cache_dir, sizeof cache_dir, "%s/a/b/cache", test_root);
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 1, 2048, NULL);
    assert_loads(tier, 1, 2048);
    zc_disk_tier_close(tier);

    tier = open_tier(1 << 20, NULL); /* and from a new instance */
    assert_loads(tier, 1, 2048);
    zc_disk_tier_close(tier);
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 1);
}

Test(disk, directories_are_0700_and_files_0600)
{
    snprintf(cache_dir, sizeof cache_dir, "%s/new/cache", test_root);
    mode_t old_umask = umask(0); /* the modes must not rely on the umask */
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 2, 100, "trace text\n");
    umask(old_umask);
    zc_key key = t_key(2);
    char hex[ZC_KEY_HEX_SIZE], path[PATH_MAX];
    zc_key_to_hex(&key, hex);
    snprintf(path, sizeof path, "%s/new", test_root);
    cr_assert_eq(mode_of(path), 0700);
    cr_assert_eq(mode_of(cache_dir), 0700);
    snprintf(path, sizeof path, "%s/%c", cache_dir, hex[0]);
    cr_assert_eq(mode_of(path), 0700);
    snprintf(path, sizeof path, "%s/%c/%c", cache_dir, hex[0], hex[1]);
    cr_assert_eq(mode_of(path), 0700);
    entry_path(path, &key);
    cr_assert_eq(mode_of(path), 0600);
    trace_path(path, &key);
    cr_assert_eq(mode_of(path), 0600);
    path_in_cache(path, ZC_CONFIG_FILE_NAME);
    cr_assert_eq(mode_of(path), 0600);
    zc_disk_tier_close(tier);
}

Test(disk, trace_is_written_beside_the_entry)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    const char *trace = "---- spirv ----\n03022307\n---- flags ----\n-O2\n";
    store_ok(tier, 3, 100, trace);
    zc_key key = t_key(3);
    char path[PATH_MAX];
    trace_path(path, &key);
    size_t size;
    uint8_t *data = read_file(path, &size);
    cr_assert_eq(size, strlen(trace));
    cr_assert_arr_eq(data, trace, size);
    free(data);
    assert_accounting_exact(); /* traces are not counted */
    zc_disk_tier_close(tier);
}

Test(disk, load_of_an_absent_key_is_a_miss)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    assert_misses(tier, 4);
    zc_key key = t_key(4);
    char path[PATH_MAX];
    entry_path(path, &key);
    cr_assert(!t_exists(path));
    zc_disk_tier_close(tier);
}

Test(disk, store_is_skipped_when_the_entry_exists)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 5, 500, NULL);
    zc_key key = t_key(5);
    char path[PATH_MAX];
    entry_path(path, &key);
    size_t before_size, after_size;
    uint8_t *before = read_file(path, &before_size);
    uint64_t recorded_before, recorded_after;
    cr_assert(config_file_value(&recorded_before));

    zc_artifact *other = t_artifact(900, 6); /* same key, other content */
    cr_assert_eq(zc_disk_tier_store(tier, &key, other, NULL), ZC_EXISTS);
    zc_artifact_unref(other);

    uint8_t *after = read_file(path, &after_size);
    cr_assert_eq(after_size, before_size);
    cr_assert_arr_eq(after, before, before_size);
    cr_assert(config_file_value(&recorded_after));
    cr_assert_eq(recorded_after, recorded_before);
    assert_loads(tier, 5, 500);
    free(before);
    free(after);
    zc_disk_tier_close(tier);
}

Test(disk, entry_larger_than_the_limit_is_not_stored)
{
    zc_disk_tier *tier = open_tier(4096, NULL);
    zc_key key = t_key(7);
    zc_artifact *artifact = t_artifact(8000, 7);
    cr_assert_eq(zc_disk_tier_store(tier, &key, artifact, NULL), ZC_ERR_TOO_LARGE);
    zc_artifact_unref(artifact);
    char path[PATH_MAX];
    entry_path(path, &key);
    cr_assert(!t_exists(path));
    cr_assert_eq(count_temp_files(), 0);
    zc_disk_tier_close(tier);
}

/* It would compress to far less, but a load refuses payloads above the limit. */
Test(disk, payload_larger_than_the_limit_is_not_stored)
{
    zc_disk_tier *tier = open_tier(4096, NULL);
    zc_key key = t_key(8);
    uint8_t *zeros = calloc(1, 8000);
    zc_artifact *artifact = zc_artifact_create(zeros, 8000, NULL, 0, NULL);
    cr_assert_eq(zc_disk_tier_store(tier, &key, artifact, NULL), ZC_ERR_TOO_LARGE);
    zc_artifact *small = zc_artifact_create(zeros, 4096, NULL, 0, NULL);
    cr_assert_eq(zc_disk_tier_store(tier, &key, small, NULL), ZC_OK);
    zc_artifact *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_OK);
    t_assert_same_artifact(loaded, small);
    zc_artifact_unref(loaded);
    zc_artifact_unref(small);
    zc_artifact_unref(artifact);
    free(zeros);
    zc_disk_tier_close(tier);
}

/* ---- bad entries on disk ---- */

static void make_entry_dirs(const zc_key *key)
{
    char path[PATH_MAX];
    entry_path(path, key);
    *strrchr(path, '/') = '\0';
    char *second = strrchr(path, '/');
    *second = '\0';
    mkdir(path, 0700);
    *second = '/';
    mkdir(path, 0700);
}

typedef void (*damage_fn)(const char *path);

static void flip_a_payload_byte(const char *path)
{
    size_t size;
    uint8_t *data = read_file(path, &size);
    data[size - 20] ^= 0x10;
    t_write_file(path, data, size);
    free(data);
}

static void flip_a_header_byte(const char *path)
{
    size_t size;
    uint8_t *data = read_file(path, &size);
    data[T_OFFSET_DEVICE_NAME] ^= 0x01;
    t_write_file(path, data, size);
    free(data);
}

static void truncate_to_half(const char *path)
{
    cr_assert_eq(truncate(path, (off_t)(file_size(path) / 2)), 0);
}

static void set_version_2(const char *path)
{
    size_t size;
    uint8_t *data = read_file(path, &size);
    zc_put_le32(data + T_OFFSET_VERSION, 2);
    t_resign_header(data);
    t_write_file(path, data, size);
    free(data);
}

static void claim_huge_sizes(const char *path)
{
    size_t size;
    uint8_t *data = read_file(path, &size);
    zc_put_le64(data + T_OFFSET_BINARY_SIZE, UINT64_C(1) << 40);
    t_resign_header(data);
    t_write_file(path, data, size);
    free(data);
}

/* A valid entry, but for another key, under this key's name. */
static void hold_another_key(const char *path)
{
    zc_key other = t_key(999);
    zc_artifact *artifact = t_artifact(64, 999);
    uint8_t *bytes;
    size_t size;
    cr_assert_eq(zc_entry_encode(&other, artifact, 3, &bytes, &size), ZC_OK);
    t_write_file(path, bytes, size);
    free(bytes);
    zc_artifact_unref(artifact);
}

static void assert_bad_entry_removed(damage_fn damage)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 10, 300, NULL); /* stays */
    store_ok(tier, 11, 300, "trace");
    zc_key key = t_key(11);
    char path[PATH_MAX], trace[PATH_MAX];
    entry_path(path, &key);
    trace_path(trace, &key);
    damage(path);
    /* Damage that changed the size left config.file behind the truth;
     * start from exact accounting so the removal's own arithmetic shows. */
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    assert_accounting_exact();

    assert_misses(tier, 11);
    cr_assert(!t_exists(path), "the bad entry is removed");
    cr_assert(!t_exists(trace), "with its trace");
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 1);
    assert_loads(tier, 10, 300);
    assert_misses(tier, 11); /* and it stays a plain miss */
    zc_disk_tier_close(tier);
}

Test(disk, corrupt_payload_is_a_miss_and_removed)
{
    assert_bad_entry_removed(flip_a_payload_byte);
}

Test(disk, corrupt_header_is_a_miss_and_removed)
{
    assert_bad_entry_removed(flip_a_header_byte);
}

Test(disk, truncated_entry_is_a_miss_and_removed)
{
    assert_bad_entry_removed(truncate_to_half);
}

Test(disk, wrong_version_entry_is_a_miss_and_removed)
{
    assert_bad_entry_removed(set_version_2);
}

Test(disk, wrong_key_entry_is_a_miss_and_removed)
{
    assert_bad_entry_removed(hold_another_key);
}

Test(disk, entry_claiming_huge_sizes_is_a_miss_and_removed)
{
    assert_bad_entry_removed(claim_huge_sizes);
}

/* A bad file dropped in by hand and never counted, larger than the whole
 * recorded total: the removal finds the total too small to subtract from
 * and rescans. */
Test(disk, bad_uncounted_entry_is_removed_and_accounting_rescanned)
{
    zc_disk_tier *tier = open_tier(32 << 10, NULL);
    store_ok(tier, 12, 300, NULL);
    zc_key key = t_key(13);
    uint8_t garbage[4096];
    t_fill_random(garbage, sizeof garbage, 13);
    char path[PATH_MAX];
    make_entry_dirs(&key);
    entry_path(path, &key);
    t_write_file(path, garbage, sizeof garbage);

    assert_misses(tier, 13);
    cr_assert(!t_exists(path));
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 1);
    zc_disk_tier_close(tier);
}

/* Processes with different NEO_CACHE_MAX_SIZE share a directory: an entry
 * above this process's limit (its file, or only its payload when it
 * compresses well) is a plain miss here, neither removed nor called bad, and
 * still a hit for the process that stored it. */
static void assert_other_limit_entry_is_left_alone(zc_artifact *artifact, uint64_t seed)
{
    zc_disk_tier *large = open_tier(1 << 20, NULL);
    zc_disk_tier *small = open_tier(16 << 10, NULL);
    zc_key key = t_key(seed);
    cr_assert_eq(zc_disk_tier_store(large, &key, artifact, NULL), ZC_OK);
    char path[PATH_MAX];
    entry_path(path, &key);
    uint64_t size_before = file_size(path);
    zc_artifact *loaded = (zc_artifact *)1;
    cr_assert_eq(zc_disk_tier_load(small, &key, &loaded), ZC_MISS);
    cr_assert_null(loaded);
    cr_assert(t_exists(path), "an entry above this process's limit is not removed");
    cr_assert_eq(file_size(path), size_before);
    char reason[256];
    cr_assert_eq(
        zc_disk_tier_verify_entry(small, path + strlen(cache_dir) + 1, NULL, reason, sizeof reason),
        ZC_OK, "%s", reason);
    cr_assert_eq(zc_disk_tier_load(large, &key, &loaded), ZC_OK);
    t_assert_same_artifact(loaded, artifact);
    zc_artifact_unref(loaded);
    assert_accounting_exact();
    zc_disk_tier_close(small);
    zc_disk_tier_close(large);
}

Test(disk, entry_above_this_process_limit_is_a_plain_miss)
{
    zc_artifact *incompressible = t_artifact(64 << 10, 14);
    assert_other_limit_entry_is_left_alone(incompressible, 14);
    zc_artifact_unref(incompressible);
}

Test(disk, payload_above_this_process_limit_is_a_plain_miss)
{
    uint8_t *zeros = calloc(1, 64 << 10);
    zc_artifact *compressible = zc_artifact_create(zeros, 64 << 10, "log", 3, NULL);
    free(zeros);
    assert_other_limit_entry_is_left_alone(compressible, 15);
    zc_artifact_unref(compressible);
}

/* ---- config.file ---- */

static void assert_rebuilt_after(const void *bytes, size_t size, bool remove_it)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 20, 700, NULL);
    /* The driver's own entries, flat and in subdirectories, count too. */
    char path[PATH_MAX];
    uint8_t raw[1000] = {0};
    path_in_cache(path, "0123456789abcdef.l0_cache");
    t_write_file(path, raw, sizeof raw);
    path_in_cache(path, "f");
    mkdir(path, 0700);
    path_in_cache(path, "f/e");
    mkdir(path, 0700);
    path_in_cache(path, "f/e/fedcba9876543210.l0_cache");
    t_write_file(path, raw, 333);

    path_in_cache(path, ZC_CONFIG_FILE_NAME);
    if (remove_it)
        cr_assert_eq(unlink(path), 0);
    else
        write_config_file(bytes, size);
    uint64_t recorded;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_MISS);

    store_ok(tier, 21, 700, NULL);
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 4);
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(recorded, walked_total);
    zc_disk_tier_close(tier);
}

Test(disk, missing_config_file_is_rebuilt_exactly)
{
    assert_rebuilt_after(NULL, 0, true);
}

Test(disk, empty_config_file_is_rebuilt_exactly)
{
    assert_rebuilt_after("", 0, false);
}

Test(disk, short_config_file_is_rebuilt_exactly)
{
    assert_rebuilt_after("\x10\x00\x00\x00", 4, false);
}

Test(disk, long_config_file_is_rebuilt_exactly)
{
    assert_rebuilt_after("\x10\x00\x00\x00\x00\x00\x00\x00\x00", 9, false);
}

Test(disk, wrapped_config_file_value_is_rebuilt_exactly)
{
    uint64_t wrapped = UINT64_MAX - 4000; /* the driver's unsigned underflow */
    assert_rebuilt_after(&wrapped, 8, false);
}

Test(disk, config_file_value_far_above_the_limit_is_rebuilt_exactly)
{
    uint64_t garbage = (UINT64_C(1) << 20) * 2 + 1;
    assert_rebuilt_after(&garbage, 8, false);
}

/* ---- eviction ---- */

Test(disk, accounting_stays_exact_over_many_stores_and_evictions)
{
    const uint64_t limit = 16 << 10;
    zc_disk_tier *tier = open_tier(limit, NULL);
    uint64_t state = 42;
    for (uint64_t seed = 100; seed < 300; seed++) {
        size_t size = 200 + (size_t)(t_next_random(&state) % 1300);
        store_ok(tier, seed, size, seed % 3 == 0 ? "trace" : NULL);
        assert_accounting_exact();
        cr_assert_leq(walked_total, limit);
    }
    cr_assert_lt(walked_entries, 200, "the limit forced evictions");
    cr_assert_gt(walked_entries, 5);
    zc_disk_tier_close(tier);
}

/* Five entries of one size S under a limit of 5.5 S: a sixth needs room.
 * One eviction would make it fit, but a third of the limit (1.83 S) must be
 * freed, so the two least recently used go. */
/* Stores seed's entry (at path) without a size limit; its size on disk. */
static uint64_t stored_entry_size(uint64_t seed, size_t binary_size, const char *path)
{
    zc_disk_tier *probe = open_tier(0, NULL);
    store_ok(probe, seed, binary_size, NULL);
    zc_disk_tier_close(probe);
    return file_size(path);
}

/* A hit marks an entry's use only when the mark is an hour old or more:
 * changing a file's times costs a journal write. */
Test(disk, a_hit_marks_use_only_when_the_mark_is_an_hour_old)
{
    zc_key key = t_key(29);
    char path[PATH_MAX];
    entry_path(path, &key);
    zc_disk_tier *tier = open_tier(0, NULL);
    store_ok(tier, 29, 500, NULL);
    time_t recent = time(NULL) - 3000;
    set_mtime(path, recent);
    assert_loads(tier, 29, 500);
    cr_assert_eq(mtime_of(path), recent);
    time_t old = time(NULL) - 3700;
    set_mtime(path, old);
    assert_loads(tier, 29, 500);
    cr_assert_geq(mtime_of(path), time(NULL) - 5);
    zc_disk_tier_close(tier);
}

Test(disk, eviction_removes_least_recently_used_until_a_third_is_freed)
{
    const size_t binary_size = 1000;
    char paths[7][PATH_MAX];
    for (uint64_t i = 1; i <= 6; i++) {
        zc_key key = t_key(30 + i);
        entry_path(paths[i], &key);
    }
    uint64_t entry_size = stored_entry_size(31, binary_size, paths[1]);

    zc_disk_tier *tier = open_tier(5 * entry_size + entry_size / 2, NULL);
    cr_assert_eq(zc_disk_tier_evictions(tier), 0);
    for (uint64_t i = 2; i <= 5; i++)
        store_ok(tier, 30 + i, binary_size, i == 2 ? "trace of 32" : NULL);
    for (uint64_t i = 1; i <= 5; i++) {
        cr_assert_eq(file_size(paths[i]), entry_size);
        set_mtime(paths[i], (time_t)(1000 * i)); /* 1 oldest ... 5 newest */
    }
    assert_loads(tier, 31, binary_size); /* a hit makes 1 the newest */
    cr_assert_gt(mtime_of(paths[1]), 5000);

    store_ok(tier, 36, binary_size, NULL);
    cr_assert(t_exists(paths[1]));
    cr_assert(!t_exists(paths[2]));
    cr_assert(!t_exists(paths[3]));
    cr_assert(t_exists(paths[4]));
    cr_assert(t_exists(paths[5]));
    cr_assert(t_exists(paths[6]));
    char trace[PATH_MAX];
    zc_key key2 = t_key(32);
    trace_path(trace, &key2);
    cr_assert(!t_exists(trace), "an evicted entry's trace goes with it");
    assert_accounting_exact();
    cr_assert_eq(walked_total, 4 * entry_size);
    cr_assert_eq(zc_disk_tier_evictions(tier), 2);
    zc_disk_tier_close(tier);
}

/* A directory shared with Intel's driver cache: its entries, flat (before
 * 26.05) and nested (since), are counted and evicted with ours, oldest
 * first, and a newer one of its entries outlives an older one of ours. */
Test(disk, eviction_takes_the_drivers_entries_in_the_same_order)
{
    const size_t binary_size = 1000;
    char ours[3][PATH_MAX], flat[PATH_MAX], nested[PATH_MAX], newest[PATH_MAX];
    for (uint64_t i = 0; i < 3; i++) {
        zc_key key = t_key(40 + i);
        entry_path(ours[i], &key);
    }
    uint64_t entry_size = stored_entry_size(40, binary_size, ours[0]);

    uint8_t *raw = calloc(1, entry_size);
    path_in_cache(flat, "0123456789abcdef.l0_cache");
    t_write_file(flat, raw, entry_size);
    path_in_cache(nested, "f");
    mkdir(nested, 0700);
    path_in_cache(nested, "f/e");
    mkdir(nested, 0700);
    path_in_cache(nested, "f/e/fedcba9876543210.l0_cache");
    t_write_file(nested, raw, entry_size);
    path_in_cache(newest, "00112233445566ff.l0_cache");
    t_write_file(newest, raw, entry_size);
    free(raw);
    uint64_t total = 4 * entry_size; /* as the driver adds its entries to config.file */
    write_config_file(&total, sizeof total);

    /* Room for five entries, six with the next: the two oldest go. */
    zc_disk_tier *tier = open_tier(5 * entry_size + entry_size / 2, NULL);
    store_ok(tier, 41, binary_size, NULL);
    set_mtime(flat, 1000);
    set_mtime(ours[0], 2000);
    set_mtime(nested, 3000);
    set_mtime(ours[1], 4000);
    set_mtime(newest, 5000);
    store_ok(tier, 42, binary_size, NULL);
    cr_assert(!t_exists(flat));
    cr_assert(!t_exists(ours[0]));
    cr_assert(t_exists(nested));
    cr_assert(t_exists(ours[1]));
    cr_assert(t_exists(newest));
    cr_assert(t_exists(ours[2]));
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 4);
    cr_assert_eq(walked_total, 4 * entry_size);
    zc_disk_tier_close(tier);
}

Test(disk, eviction_removes_old_orphaned_temp_files_only)
{
    zc_disk_tier *tier = open_tier(4096, NULL);
    char old_temp[PATH_MAX], young_temp[PATH_MAX];
    path_in_cache(old_temp, ZC_TEMP_PREFIX "0123456789abcdef");
    path_in_cache(young_temp, ZC_TEMP_PREFIX "fedcba9876543210");
    t_write_file(old_temp, "partial", 7);
    t_write_file(young_temp, "partial", 7);
    set_mtime(old_temp, time(NULL) - ZC_TEMP_MAX_AGE_SEC - 60);
    for (uint64_t seed = 40; seed < 50; seed++) /* forces evictions */
        store_ok(tier, seed, 1000, NULL);
    cr_assert(!t_exists(old_temp));
    cr_assert(t_exists(young_temp));
    assert_accounting_exact();
    zc_disk_tier_close(tier);
}

/* ---- symlinks ---- */

static void write_valid_entry(const char *path, const zc_key *key, uint64_t seed)
{
    zc_artifact *artifact = t_artifact(256, seed);
    uint8_t *bytes;
    size_t size;
    cr_assert_eq(zc_entry_encode(key, artifact, 3, &bytes, &size), ZC_OK);
    t_write_file(path, bytes, size);
    free(bytes);
    zc_artifact_unref(artifact);
}

static void assert_file_equals(const char *path, const uint8_t *expected, size_t expected_size)
{
    size_t size;
    uint8_t *data = read_file(path, &size);
    cr_assert_eq(size, expected_size);
    cr_assert_arr_eq(data, expected, size);
    free(data);
}

Test(disk, symlinked_entry_is_not_followed)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    zc_key key = t_key(50);
    char outside[PATH_MAX], path[PATH_MAX];
    snprintf(outside, sizeof outside, "%s/outside.l0_cache", test_root);
    write_valid_entry(outside, &key, 50);
    size_t outside_size;
    uint8_t *outside_bytes = read_file(outside, &outside_size);
    make_entry_dirs(&key);
    entry_path(path, &key);
    cr_assert_eq(symlink(outside, path), 0);

    assert_misses(tier, 50);
    assert_file_equals(outside, outside_bytes, outside_size);
    uint64_t total, entries;
    cr_assert_eq(zc_disk_tier_scanned_size(tier, &total, &entries), ZC_OK);
    cr_assert_eq(entries, 0, "a symlink is not an entry");
    free(outside_bytes);
    zc_disk_tier_close(tier);
}

Test(disk, symlinked_subdirectory_is_not_followed)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    zc_key key = t_key(51);
    char hex[ZC_KEY_HEX_SIZE], outside_dir[512], outside[PATH_MAX], link[PATH_MAX];
    zc_key_to_hex(&key, hex);
    snprintf(outside_dir, sizeof outside_dir, "%s/elsewhere", test_root);
    cr_assert_eq(mkdir(outside_dir, 0700), 0);
    snprintf(outside, sizeof outside, "%s/%c", outside_dir, hex[1]);
    cr_assert_eq(mkdir(outside, 0700), 0);
    snprintf(outside, sizeof outside, "%s/%c/%s.l0_cache", outside_dir, hex[1], hex);
    write_valid_entry(outside, &key, 51);
    size_t outside_size;
    uint8_t *outside_bytes = read_file(outside, &outside_size);
    snprintf(link, sizeof link, "%s/%c", cache_dir, hex[0]);
    cr_assert_eq(symlink(outside_dir, link), 0);

    assert_misses(tier, 51);
    assert_file_equals(outside, outside_bytes, outside_size);
    /* A store through it fails cleanly and creates nothing out there. */
    zc_key other = t_key(51);
    other.bytes[31] ^= 1; /* same first two hex digits */
    zc_artifact *artifact = t_artifact(100, 52);
    cr_assert_eq(zc_disk_tier_store(tier, &other, artifact, NULL), ZC_ERR_IO);
    zc_artifact_unref(artifact);
    snprintf(outside, sizeof outside, "%s/%c", outside_dir, hex[1]);
    DIR *dir = opendir(outside);
    size_t files = 0;
    for (struct dirent *dirent; (dirent = readdir(dir)) != NULL;)
        files += dirent->d_name[0] != '.';
    closedir(dir);
    cr_assert_eq(files, 1);
    cr_assert_eq(count_temp_files(), 0);
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 0);
    free(outside_bytes);
    zc_disk_tier_close(tier);
}

/* The fallback for kernels without openat2 must refuse what openat2 does. */
Test(disk, openat_fallback_refuses_symlinks_and_escapes)
{
    cr_assert_eq(mkdir(cache_dir, 0700), 0);
    char path[PATH_MAX], target[PATH_MAX];
    snprintf(target, sizeof target, "%s/target", test_root);
    t_write_file(target, "x", 1);
    path_in_cache(path, "real");
    cr_assert_eq(mkdir(path, 0700), 0);
    path_in_cache(path, "real/file");
    t_write_file(path, "y", 1);
    path_in_cache(path, "link");
    cr_assert_eq(symlink(target, path), 0);
    path_in_cache(path, "dirlink");
    cr_assert_eq(symlink(test_root, path), 0);
    int root = open(cache_dir, O_RDONLY | O_DIRECTORY);
    const zc_fs_ops *ops = zc_fs_ops_default();
    int (*const opens[2])(int, const char *, int, mode_t) = {ops->openat,
                                                             zc_fs_openat_by_components};
    for (int i = 0; i < 2; i++) {
        int fd = opens[i](root, "real/file", O_RDONLY, 0);
        cr_assert_geq(fd, 0);
        close(fd);
        cr_assert_eq(opens[i](root, "link", O_RDONLY, 0), -1);
        cr_assert_eq(errno, ELOOP);
        cr_assert_eq(opens[i](root, "dirlink/target", O_RDONLY, 0), -1);
        cr_assert_eq(errno, ELOOP);
        cr_assert_eq(opens[i](root, "../target", O_RDONLY, 0), -1);
        cr_assert_eq(errno, EXDEV);
        cr_assert_eq(opens[i](root, target, O_RDONLY, 0), -1);
        cr_assert_eq(errno, EXDEV);
        cr_assert_eq(opens[i](root, "link", O_WRONLY | O_CREAT, 0600), -1);
    }
    close(root);
    assert_file_equals(target, (const uint8_t *)"x", 1);
}

/* ---- the directory itself ---- */

static zc_status open_status(const zc_config *config)
{
    zc_disk_tier *tier = (zc_disk_tier *)1;
    zc_status status = zc_disk_tier_open(config, &tier);
    if (status == ZC_OK)
        zc_disk_tier_close(tier);
    else
        cr_assert_null(tier);
    return status;
}

Test(disk, directory_writable_by_others_is_refused_unless_shared)
{
    cr_assert_eq(mkdir(cache_dir, 0700), 0);
    zc_config config = config_for(cache_dir, 1 << 20);
    cr_assert_eq(chmod(cache_dir, 0777), 0);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED);
    cr_assert_eq(chmod(cache_dir, 0770), 0);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED);
    config.allow_shared = true;
    cr_assert_eq(open_status(&config), ZC_OK);
    cr_assert_eq(chmod(cache_dir, 0755), 0);
    config.allow_shared = false;
    cr_assert_eq(open_status(&config), ZC_OK);
}

Test(disk, directory_of_another_user_is_refused_unless_shared)
{
    if (geteuid() != 0) {
        remove_test_root(); /* a skipped test does not run .fini */
        cr_skip_test("chown to another user needs root");
    }
    cr_assert_eq(mkdir(cache_dir, 0700), 0);
    cr_assert_eq(chown(cache_dir, 12345, 12345), 0);
    zc_config config = config_for(cache_dir, 1 << 20);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED);
    config.allow_shared = true;
    cr_assert_eq(open_status(&config), ZC_OK);
}

Test(disk, unusable_directories_are_refused)
{
    zc_config config = config_for(cache_dir, 1 << 20);
    config.persistent = false;
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED);
    cr_assert(!t_exists(cache_dir), "nothing is created when off");
    config = config_for("", 1 << 20);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED);
    t_write_file(cache_dir, "not a directory", 15);
    config = config_for(cache_dir, 1 << 20);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED);
    char below_file[PATH_MAX];
    snprintf(below_file, sizeof below_file, "%s/sub", cache_dir);
    config = config_for(below_file, 1 << 20);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED);
}

Test(disk, read_only_directory_is_refused)
{
    if (geteuid() == 0) {
        remove_test_root(); /* a skipped test does not run .fini */
        cr_skip_test("root writes to read-only directories");
    }
    cr_assert_eq(mkdir(cache_dir, 0500), 0);
    zc_config config = config_for(cache_dir, 1 << 20);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED);
}

/* ---- failing system calls ---- */

typedef struct fault_plan {
    long calls;
    long fail_at; /* this call (1-based) fails with error; 0: none */
    int error;
    bool fail_every_write;
    size_t max_transfer; /* short reads and writes */
    bool interrupt;      /* EINTR on every other read/write before it proceeds */
    long transfers;
    bool unlink_config_on_lock; /* once: as if a user deleted it meanwhile */
} fault_plan;

static fault_plan plan;

static bool injected(void)
{
    plan.calls++;
    if (plan.fail_at != 0 && plan.calls == plan.fail_at) {
        errno = plan.error;
        return true;
    }
    return false;
}

static bool interrupted(void)
{
    if (plan.interrupt && plan.transfers++ % 2 == 0) {
        errno = EINTR;
        return true;
    }
    return false;
}

static size_t clamp(size_t count)
{
    return plan.max_transfer != 0 && count > plan.max_transfer ? plan.max_transfer : count;
}

#define REAL (zc_fs_ops_default())

static int f_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    return injected() ? -1 : REAL->openat(dirfd, path, flags, mode);
}

static int f_close(int fd)
{
    if (!injected())
        return REAL->close(fd);
    REAL->close(fd); /* Linux closes the descriptor even when close fails */
    errno = plan.error;
    return -1;
}

static ssize_t f_read(int fd, void *buf, size_t count)
{
    return injected() || interrupted() ? -1 : REAL->read(fd, buf, clamp(count));
}

static ssize_t f_pread(int fd, void *buf, size_t count, off_t offset)
{
    return injected() || interrupted() ? -1 : REAL->pread(fd, buf, clamp(count), offset);
}

static ssize_t f_write(int fd, const void *buf, size_t count)
{
    if (injected())
        return -1;
    if (plan.fail_every_write) {
        errno = plan.error;
        return -1;
    }
    return interrupted() ? -1 : REAL->write(fd, buf, clamp(count));
}

static ssize_t f_pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    return injected() || interrupted() ? -1 : REAL->pwrite(fd, buf, clamp(count), offset);
}

static int f_fstat(int fd, struct stat *st)
{
    return injected() ? -1 : REAL->fstat(fd, st);
}

static int f_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    return injected() ? -1 : REAL->fstatat(dirfd, path, st, flags);
}

static int f_mkdirat(int dirfd, const char *path, mode_t mode)
{
    return injected() ? -1 : REAL->mkdirat(dirfd, path, mode);
}

static int f_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    return injected() ? -1 : REAL->renameat(olddirfd, oldpath, newdirfd, newpath);
}

static int f_unlinkat(int dirfd, const char *path, int flags)
{
    return injected() ? -1 : REAL->unlinkat(dirfd, path, flags);
}

static int f_flock(int fd, int operation)
{
    if (plan.unlink_config_on_lock) {
        plan.unlink_config_on_lock = false;
        char path[PATH_MAX];
        path_in_cache(path, ZC_CONFIG_FILE_NAME);
        cr_assert_eq(unlink(path), 0);
    }
    return injected() ? -1 : REAL->flock(fd, operation);
}

static int f_futimens(int fd, const struct timespec times[2])
{
    return injected() ? -1 : REAL->futimens(fd, times);
}

static int f_ftruncate(int fd, off_t length)
{
    return injected() ? -1 : REAL->ftruncate(fd, length);
}

static const zc_fs_ops faulty_ops = {
    f_openat,  f_close,   f_read,     f_pread,    f_write, f_pwrite,   f_fstat,
    f_fstatat, f_mkdirat, f_renameat, f_unlinkat, f_flock, f_futimens, f_ftruncate,
};

static void start_plan(fault_plan next)
{
    plan = next;
}

Test(disk, store_failing_with_enospc_leaves_nothing_behind)
{
    zc_disk_tier *tier = open_tier(1 << 20, &faulty_ops);
    store_ok(tier, 60, 500, NULL);
    start_plan((fault_plan){.fail_every_write = true, .error = ENOSPC});
    zc_key key = t_key(61);
    zc_artifact *artifact = t_artifact(500, 61);
    cr_assert_eq(zc_disk_tier_store(tier, &key, artifact, NULL), ZC_ERR_IO);
    zc_artifact_unref(artifact);
    start_plan((fault_plan){0});
    cr_assert_eq(count_temp_files(), 0);
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 1);
    assert_misses(tier, 61);
    assert_loads(tier, 60, 500);
    zc_disk_tier_close(tier);
}

Test(disk, short_and_interrupted_transfers_are_completed)
{
    zc_disk_tier *tier = open_tier(1 << 20, &faulty_ops);
    start_plan((fault_plan){.max_transfer = 7, .interrupt = true});
    store_ok(tier, 62, 3000, "trace");
    assert_loads(tier, 62, 3000);
    cr_assert_gt(plan.transfers, 2 * (3000 / 7), "transfers really were cut short");
    start_plan((fault_plan){0});
    assert_accounting_exact();
    cr_assert_eq(count_temp_files(), 0);
    zc_disk_tier_close(tier);
}

/* Without a check, the store would lock and update the deleted file. */
Test(disk, config_file_deleted_while_locking_is_locked_anew)
{
    zc_disk_tier *tier = open_tier(1 << 20, &faulty_ops);
    store_ok(tier, 64, 500, NULL);
    start_plan((fault_plan){.unlink_config_on_lock = true});
    store_ok(tier, 65, 500, NULL);
    cr_assert(!plan.unlink_config_on_lock);
    start_plan((fault_plan){0});
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 2);
    zc_disk_tier_close(tier);
}

/* After any single failure: no temp file, the entry either stored and
 * loadable or absent, and config.file either exact or invalid (then rebuilt
 * exactly by the next locked operation). */
static void assert_consistent_after_failure(zc_disk_tier *tier, zc_status status, uint64_t seed,
                                            size_t binary_size, long fail_at)
{
    cr_assert_eq(count_temp_files(), 0, "fail_at %ld", fail_at);
    zc_key key = t_key(seed);
    char path[PATH_MAX];
    entry_path(path, &key);
    if (status == ZC_OK)
        assert_loads(tier, seed, binary_size);
    else
        cr_assert(!t_exists(path), "fail_at %ld: %s", fail_at, zc_status_name(status));
    uint64_t recorded;
    if (config_file_value(&recorded))
        cr_assert_eq(recorded, disk_total(), "fail_at %ld", fail_at);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    assert_accounting_exact();
}

static void store_with_each_call_failing(uint64_t max_size)
{
    zc_disk_tier *tier = open_tier(max_size, &faulty_ops);
    for (uint64_t seed = 70; seed < 76; seed++)
        store_ok(tier, seed, 900, NULL);
    long failures = 0;
    for (long fail_at = 1;; fail_at++) {
        uint64_t seed = 100 + (uint64_t)fail_at;
        zc_key key = t_key(seed);
        zc_artifact *artifact = t_artifact(900, seed);
        start_plan((fault_plan){.fail_at = fail_at, .error = EIO});
        zc_status status = zc_disk_tier_store(tier, &key, artifact, "trace");
        bool exhausted = plan.calls < fail_at;
        zc_artifact_unref(artifact);
        start_plan((fault_plan){0});
        assert_consistent_after_failure(tier, status, seed, 900, fail_at);
        failures += status != ZC_OK;
        if (exhausted)
            break;
    }
    cr_assert_gt(failures, 5);
    zc_disk_tier_close(tier);
}

Test(disk, store_survives_each_call_failing_in_turn)
{
    store_with_each_call_failing(1 << 20);
}

Test(disk, store_with_eviction_survives_each_call_failing_in_turn)
{
    store_with_each_call_failing(5000); /* every store evicts */
}

Test(disk, load_survives_each_call_failing_in_turn)
{
    zc_disk_tier *tier = open_tier(1 << 20, &faulty_ops);
    store_ok(tier, 80, 900, NULL);
    zc_key key = t_key(80);
    char path[PATH_MAX];
    entry_path(path, &key);
    for (long fail_at = 1;; fail_at++) {
        start_plan((fault_plan){.fail_at = fail_at, .error = EIO});
        zc_artifact *loaded = NULL;
        zc_status status = zc_disk_tier_load(tier, &key, &loaded);
        bool exhausted = plan.calls < fail_at;
        start_plan((fault_plan){0});
        cr_assert(status == ZC_OK || status == ZC_MISS);
        cr_assert_eq(status == ZC_OK, loaded != NULL);
        zc_artifact_unref(loaded);
        cr_assert(t_exists(path), "an I/O error is not a reason to remove a good entry");
        if (exhausted)
            break;
    }
    assert_loads(tier, 80, 900);
    assert_accounting_exact();
    zc_disk_tier_close(tier);
}

/* ---- concurrency (run under TSan) ---- */

typedef struct store_thread {
    zc_disk_tier *tier;
    uint64_t first_seed;
    int count;
    zc_status failed;
} store_thread;

static void *store_many(void *argument)
{
    store_thread *thread = argument;
    for (int i = 0; i < thread->count; i++) {
        zc_key key = t_key(thread->first_seed + (uint64_t)i);
        zc_artifact *artifact = t_artifact(600, thread->first_seed + (uint64_t)i);
        zc_status status = zc_disk_tier_store(thread->tier, &key, artifact, NULL);
        if (status != ZC_OK)
            thread->failed = status;
        zc_artifact_unref(artifact);
        zc_artifact *loaded = NULL;
        zc_disk_tier_load(thread->tier, &key, &loaded); /* loads race with stores */
        zc_artifact_unref(loaded);
    }
    return NULL;
}

/* Threads 0 and 1 share one tier (the mutex); 2 and 3 have their own, as
 * other processes would (flock on separate open files). */
static void store_from_four_threads(uint64_t max_size)
{
    zc_disk_tier *shared = open_tier(max_size, NULL);
    zc_disk_tier *own[2] = {open_tier(max_size, NULL), open_tier(max_size, NULL)};
    store_thread threads[4];
    pthread_t ids[4];
    for (int i = 0; i < 4; i++) {
        threads[i] =
            (store_thread){i < 2 ? shared : own[i - 2], 1000 + 100 * (uint64_t)i, 25, ZC_OK};
        cr_assert_eq(pthread_create(&ids[i], NULL, store_many, &threads[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(ids[i], NULL);
        cr_assert_eq(threads[i].failed, ZC_OK, "thread %d: %s", i,
                     zc_status_name(threads[i].failed));
    }
    assert_accounting_exact();
    if (max_size == 0) {
        cr_assert_eq(walked_entries, 100);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 25; j++)
                assert_loads(shared, threads[i].first_seed + (uint64_t)j, 600);
    } else {
        cr_assert_leq(walked_total, max_size);
    }
    cr_assert_eq(count_temp_files(), 0);
    zc_disk_tier_close(shared);
    zc_disk_tier_close(own[0]);
    zc_disk_tier_close(own[1]);
}

Test(disk, concurrent_stores_are_all_loadable_and_counted)
{
    store_from_four_threads(0);
}

Test(disk, concurrent_stores_with_evictions_keep_accounting_exact)
{
    store_from_four_threads(8 << 10);
}

/* ---- the tool's operations ---- */

typedef struct listing {
    int visits;
    int zecache;
    int stop_after;
    uint64_t bytes;
} listing;

static int list_entry(void *context, const zc_disk_entry_info *info)
{
    listing *list = context;
    list->visits++;
    list->bytes += info->file_size + info->trace_size;
    if (info->is_zecache) {
        list->zecache++;
        char rel[ZC_ENTRY_REL_SIZE];
        zc_disk_entry_rel_path(&info->key, rel);
        cr_assert_str_eq(info->path, rel);
    }
    return list->stop_after != 0 && list->visits >= list->stop_after;
}

Test(disk, foreach_lists_ours_and_the_drivers_entries)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    for (uint64_t seed = 90; seed < 93; seed++)
        store_ok(tier, seed, 300, "trace");
    char path[PATH_MAX];
    path_in_cache(path, "00112233445566ff.l0_cache");
    t_write_file(path, "driver entry", 12);
    path_in_cache(path, "link.l0_cache");
    cr_assert_eq(symlink("/etc/passwd", path), 0);
    listing list = {0};
    cr_assert_eq(zc_disk_tier_foreach(tier, list_entry, &list), ZC_OK);
    cr_assert_eq(list.visits, 4);
    cr_assert_eq(list.zecache, 3);
    cr_assert_eq(list.bytes, disk_total());
    listing first = {.stop_after = 1};
    cr_assert_eq(zc_disk_tier_foreach(tier, list_entry, &first), ZC_OK);
    cr_assert_eq(first.visits, 1);
    zc_disk_tier_close(tier);
}

Test(disk, verify_entry_reports_without_changing_anything)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 94, 300, NULL);
    zc_key key = t_key(94);
    char rel[ZC_ENTRY_REL_SIZE], path[PATH_MAX], reason[256];
    zc_disk_entry_rel_path(&key, rel);
    entry_path(path, &key);
    zc_entry_header header;
    cr_assert_eq(zc_disk_tier_verify_entry(tier, rel, &header, reason, sizeof reason), ZC_OK);
    cr_assert(zc_key_equal(&header.key, &key));
    cr_assert_eq(header.binary_size, 300);
    set_mtime(path, 1234);
    flip_a_payload_byte(path);
    set_mtime(path, 1234);
    cr_assert_eq(zc_disk_tier_verify_entry(tier, rel, NULL, reason, sizeof reason), ZC_MISS);
    cr_assert_neq(reason[0], '\0');
    cr_assert(t_exists(path));
    cr_assert_eq(mtime_of(path), 1234);
    cr_assert_eq(
        zc_disk_tier_verify_entry(tier, "00112233445566ff.l0_cache", NULL, reason, sizeof reason),
        ZC_MISS);
    zc_disk_tier_close(tier);
}

Test(disk, remove_entry_keeps_accounting_exact)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 95, 300, "trace");
    store_ok(tier, 96, 300, NULL);
    zc_key key = t_key(95);
    char rel[ZC_ENTRY_REL_SIZE], path[PATH_MAX], trace[PATH_MAX];
    zc_disk_entry_rel_path(&key, rel);
    entry_path(path, &key);
    trace_path(trace, &key);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, rel), ZC_OK);
    cr_assert(!t_exists(path));
    cr_assert(!t_exists(trace));
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 1);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, rel), ZC_MISS);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, "config.file"), ZC_ERR_INVALID_ARG);
    char outside[PATH_MAX];
    snprintf(outside, sizeof outside, "%s/victim.l0_cache", test_root);
    t_write_file(outside, "keep", 4);
    cr_assert_neq(zc_disk_tier_remove_entry(tier, "../victim.l0_cache"), ZC_OK);
    cr_assert(t_exists(outside));
    assert_accounting_exact();
    zc_disk_tier_close(tier);
}

Test(disk, trim_by_age_then_by_size)
{
    zc_disk_tier *tier = open_tier(0, NULL);
    char paths[5][PATH_MAX];
    for (uint64_t i = 0; i < 5; i++) {
        store_ok(tier, 200 + i, 500, NULL);
        zc_key key = t_key(200 + i);
        entry_path(paths[i], &key);
        set_mtime(paths[i], (time_t)(1000 * (i + 1)));
    }
    uint64_t entries = 0, bytes = 0;
    uint64_t two = file_size(paths[0]) + file_size(paths[1]);
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 2500, &entries, &bytes), ZC_OK);
    cr_assert_eq(entries, 2);
    cr_assert_eq(bytes, two);
    cr_assert(!t_exists(paths[0]) && !t_exists(paths[1]) && t_exists(paths[2]));
    assert_accounting_exact();

    uint64_t newest = file_size(paths[4]);
    cr_assert_eq(zc_disk_tier_trim(tier, newest, 0, &entries, &bytes), ZC_OK);
    cr_assert_eq(entries, 2);
    cr_assert(!t_exists(paths[2]) && !t_exists(paths[3]) && t_exists(paths[4]));
    assert_accounting_exact();
    cr_assert_eq(walked_total, newest);
    zc_disk_tier_close(tier);
}

Test(disk, clear_removes_everything_and_zeroes_the_total)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    for (uint64_t seed = 210; seed < 215; seed++)
        store_ok(tier, seed, 300, "trace");
    char path[PATH_MAX];
    path_in_cache(path, "00112233445566ff.l0_cache");
    t_write_file(path, "driver entry", 12);
    path_in_cache(path, ZC_TEMP_PREFIX "0011223344556677");
    t_write_file(path, "young temp", 10);
    uint8_t program[32] = {7};
    zc_key listed = t_key(210);
    cr_assert_eq(zc_disk_tier_write_usage(tier, program, &listed, 1), ZC_OK);
    uint64_t entries, bytes;
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, &entries, &bytes), ZC_OK);
    zc_key read[ZC_USAGE_LIST_MAX];
    size_t count = 0;
    cr_assert_eq(zc_disk_tier_read_usage(tier, program, read, &count), ZC_OK,
                 "trim kept the usage list");
    cr_assert_eq(count, 1);
    cr_assert_eq(zc_disk_tier_clear(tier), ZC_OK);
    cr_assert_eq(zc_disk_tier_read_usage(tier, program, read, &count), ZC_MISS,
                 "clear left the usage list");
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 0);
    cr_assert_eq(count_temp_files(), 0);
    zc_key key = t_key(210);
    trace_path(path, &key);
    cr_assert(!t_exists(path));
    assert_misses(tier, 210);
    zc_disk_tier_close(tier);
}

Test(disk, recorded_scanned_and_repair)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 220, 300, NULL);
    store_ok(tier, 221, 400, NULL);
    uint64_t recorded = 0, scanned = 0, entries = 0, repaired = 0;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(zc_disk_tier_scanned_size(tier, &scanned, &entries), ZC_OK);
    cr_assert_eq(recorded, disk_total());
    cr_assert_eq(scanned, walked_total);
    cr_assert_eq(entries, 2);
    uint64_t wrong = 5;
    write_config_file(&wrong, sizeof wrong);
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(recorded, 5);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, &repaired), ZC_OK);
    cr_assert_eq(repaired, walked_total);
    assert_accounting_exact();
    zc_disk_tier_close(tier);
}

/* ---- removing an entry found bad, as `zecache verify --fix` does ---- */

/* Puts bytes at path as a new file (a new inode), as a store's rename does. */
static void replace_file(const char *path, const void *bytes, size_t size)
{
    char temp[PATH_MAX];
    snprintf(temp, sizeof temp, "%s.new", path);
    t_write_file(temp, bytes, size);
    cr_assert_eq(rename(temp, path), 0);
}

static const char *rel_of(const char *path)
{
    return path + strlen(cache_dir) + 1;
}

Test(disk, remove_if_bad_keeps_a_good_entry_stored_since_the_check)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 30, 500, "trace\n");
    zc_key key = t_key(30);
    char path[PATH_MAX], trace[PATH_MAX], reason[256];
    entry_path(path, &key);
    trace_path(trace, &key);
    size_t size;
    uint8_t *good = read_file(path, &size);
    uint8_t *bad = malloc(size);
    t_fill_random(bad, size, 31); /* the same size: config.file stays exact */

    /* Found bad, then a good entry replaces it before the removal. */
    replace_file(path, bad, size);
    cr_assert_eq(zc_disk_tier_verify_entry(tier, rel_of(path), NULL, reason, sizeof reason),
                 ZC_MISS);
    replace_file(path, good, size);
    bool removed = true;
    cr_assert_eq(zc_disk_tier_remove_if_bad(tier, rel_of(path), &removed), ZC_OK);
    cr_assert_not(removed);
    assert_loads(tier, 30, 500);
    cr_assert(t_exists(trace));
    assert_accounting_exact();

    /* Found bad, replaced by another bad file: that one goes. */
    replace_file(path, bad, size);
    cr_assert_eq(zc_disk_tier_verify_entry(tier, rel_of(path), NULL, reason, sizeof reason),
                 ZC_MISS);
    bad[0] ^= 1;
    replace_file(path, bad, size);
    cr_assert_eq(zc_disk_tier_remove_if_bad(tier, rel_of(path), &removed), ZC_OK);
    cr_assert(removed);
    cr_assert_not(t_exists(path));
    cr_assert_not(t_exists(trace));
    assert_accounting_exact();
    cr_assert_eq(walked_entries, 0);

    cr_assert_eq(zc_disk_tier_remove_if_bad(tier, rel_of(path), &removed), ZC_MISS);
    cr_assert_not(removed);
    cr_assert_eq(zc_disk_tier_remove_if_bad(tier, "../x.l0_cache", &removed), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_disk_tier_remove_if_bad(tier, "/etc/x.l0_cache", &removed), ZC_ERR_INVALID_ARG);
    free(good);
    free(bad);
    zc_disk_tier_close(tier);
}

/* ---- traces count against the limit, with their entry ---- */

Test(disk, traces_count_against_the_limit_with_their_entry)
{
    enum { LIMIT = 48 << 10, TRACE_SIZE = 3000 };
    zc_disk_tier *tier = open_tier(LIMIT, NULL);
    char trace[TRACE_SIZE + 1];
    memset(trace, 't', TRACE_SIZE);
    trace[TRACE_SIZE] = '\0';
    for (uint64_t seed = 200; seed < 240; seed++) {
        store_ok(tier, seed, 600, trace);
        assert_accounting_exact(); /* disk_total() counts the traces beside entries */
        cr_assert_leq(walked_total, LIMIT, "after store %llu", (unsigned long long)seed);
    }
    cr_assert_lt(walked_entries, 40, "stores evicted, traces included");
    /* Removals subtract the trace with the entry. */
    zc_key key = t_key(239);
    char path[PATH_MAX], trace_file[PATH_MAX];
    entry_path(path, &key);
    trace_path(trace_file, &key);
    cr_assert(t_exists(trace_file));
    cr_assert_eq(zc_disk_tier_remove_entry(tier, rel_of(path)), ZC_OK);
    cr_assert_not(t_exists(trace_file));
    assert_accounting_exact();
    zc_disk_tier_close(tier);
}

/* A trace without its entry counts nowhere: a sweep removes one of ours at
 * once (our stores write the entry first, under the lock the sweep holds),
 * another writer's (the driver's names) once it is old. */
Test(disk, sweeps_remove_orphaned_traces)
{
    zc_disk_tier *tier = open_tier(1 << 20, NULL);
    store_ok(tier, 250, 600, "kept\n");
    zc_key orphan_old = t_key(251), orphan_new = t_key(252), kept = t_key(250);
    char old_path[PATH_MAX], new_path[PATH_MAX], kept_path[PATH_MAX];
    char foreign_old[PATH_MAX], foreign_new[PATH_MAX];
    trace_path(old_path, &orphan_old);
    trace_path(new_path, &orphan_new);
    trace_path(kept_path, &kept);
    make_entry_dirs(&orphan_old);
    make_entry_dirs(&orphan_new);
    t_write_file(old_path, "old\n", 4);
    t_write_file(new_path, "new\n", 4);
    path_in_cache(foreign_old, "0123456789abcdef.trace");
    path_in_cache(foreign_new, "fedcba9876543210.trace");
    t_write_file(foreign_old, "old\n", 4);
    t_write_file(foreign_new, "new\n", 4);
    set_mtime(old_path, time(NULL) - 10 * ZC_TEMP_MAX_AGE_SEC);
    set_mtime(foreign_old, time(NULL) - 10 * ZC_TEMP_MAX_AGE_SEC);
    set_mtime(kept_path, time(NULL) - 10 * ZC_TEMP_MAX_AGE_SEC);
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    cr_assert_not(t_exists(old_path));
    cr_assert_not(t_exists(new_path), "ours is never a store in progress");
    cr_assert_not(t_exists(foreign_old));
    cr_assert(t_exists(foreign_new), "the driver's may be a store in progress");
    cr_assert(t_exists(kept_path), "a trace with its entry stays");
    assert_accounting_exact();
    zc_disk_tier_close(tier);
}
