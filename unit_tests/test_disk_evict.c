/* The disk tier at its size limit, with recorded inputs (recipes and the
 * SPIR-V blobs they share): eviction frees about a third of the limit
 * whatever the mix and keeps two thirds; config.file equals every counted
 * file after any repairing step; usage lists stay bounded. Every total is
 * checked against an independent walk of the directory (nftw). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../source/local/disk_blob_refs.h"
#include "../source/local/fs_ops.h"
#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_usage_list.h"
#include "zecache/sealed.h"

static char test_root[256];
static char cache_dir[512];

static void make_test_root(void)
{
    t_make_scratch(test_root, sizeof test_root, "/tmp/zc_evict_test_XXXXXX", cache_dir,
                   sizeof cache_dir);
}

static void remove_test_root(void)
{
    t_remove_tree(test_root);
}

TestSuite(evict, .init = make_test_root, .fini = remove_test_root, .timeout = 300);

static const zc_fs_ops *tier_ops; /* NULL: the real calls */

static zc_disk_tier *open_tier(uint64_t max_size)
{
    zc_config config = t_disk_config(cache_dir, max_size, 3);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open_with_ops(&config, tier_ops, &tier), ZC_OK);
    return tier;
}

/* ---- the independent walk ---- */

typedef struct walk_census {
    uint64_t total; /* every .l0_cache, .trace, .recipe and .spirv */
    uint64_t entries, recipes, blobs, usage_lists;
} walk_census;

static walk_census walked;

static bool ends_with(const char *path, const char *suffix)
{
    size_t length = strlen(path), suffix_length = strlen(suffix);
    return length > suffix_length && strcmp(path + length - suffix_length, suffix) == 0;
}

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    bool entry = ends_with(path, ".l0_cache"), recipe = ends_with(path, ".recipe");
    bool blob = ends_with(path, ".spirv");
    if (entry || recipe || blob || ends_with(path, ".trace"))
        walked.total += (uint64_t)st->st_size;
    walked.entries += entry;
    walked.recipes += recipe;
    walked.blobs += blob;
    walked.usage_lists += ends_with(path, ".l0_usage");
    return 0;
}

static walk_census walk(void)
{
    memset(&walked, 0, sizeof walked);
    cr_assert_eq(nftw(cache_dir, walk_one, 16, FTW_PHYS), 0);
    return walked;
}

static uint64_t config_file_value(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", cache_dir, ZC_CONFIG_FILE_NAME);
    size_t size = 0;
    uint8_t *bytes = t_read_bytes(path, &size);
    cr_assert_eq(size, 8, "config.file must hold 8 bytes, not %zu", size);
    uint64_t value;
    memcpy(&value, bytes, sizeof value);
    free(bytes);
    return value;
}

/* config.file equals the sum of every file the tier counts. */
static walk_census assert_accounting_exact(const char *when)
{
    uint64_t recorded = config_file_value();
    walk_census census = walk();
    cr_assert_eq(recorded, census.total, "%s: config.file %llu, counted files %llu", when,
                 (unsigned long long)recorded, (unsigned long long)census.total);
    return census;
}

/* ---- modules: an entry, its recipe and its SPIR-V ---- */

static void store_entry(zc_disk_tier *tier, uint64_t seed, size_t binary_size)
{
    zc_key key = t_key(seed);
    zc_artifact *artifact = t_artifact(binary_size, seed);
    zc_status status = zc_disk_tier_store(tier, &key, artifact, NULL);
    cr_assert_eq(status, ZC_OK, "store %llu: %s", (unsigned long long)seed, zc_status_name(status));
    zc_artifact_unref(artifact);
}

static zc_status record(zc_disk_tier *tier, uint64_t seed, uint64_t spirv_seed, size_t spirv_size)
{
    zc_key key = t_key(seed);
    return t_record_inputs(tier, &key, spirv_seed, spirv_size);
}

static bool loads(zc_disk_tier *tier, uint64_t seed, size_t binary_size)
{
    zc_key key = t_key(seed);
    zc_artifact *loaded = NULL;
    if (zc_disk_tier_load(tier, &key, &loaded) != ZC_OK)
        return false;
    zc_artifact *expected = t_artifact(binary_size, seed);
    bool same = t_same_artifact(loaded, expected);
    zc_artifact_unref(loaded);
    zc_artifact_unref(expected);
    return same;
}

/* A mix: binaries of binary_size bytes, each module with a recipe naming
 * SPIR-V of spirv_size bytes (0: no recipe) shared by `sharing` modules in
 * a row. */
typedef struct module_mix {
    size_t binary_size, spirv_size;
    uint64_t sharing;
    uint64_t modules;
} module_mix;

/* One module's cost on disk, measured alone in a cache of its own. */
static uint64_t module_cost(const module_mix *mix)
{
    char saved[sizeof cache_dir];
    snprintf(saved, sizeof saved, "%s", cache_dir);
    snprintf(cache_dir, sizeof cache_dir, "%s/probe", test_root);
    zc_disk_tier *tier = open_tier(0);
    store_entry(tier, 1, mix->binary_size);
    if (mix->spirv_size > 0)
        cr_assert_eq(record(tier, 1, 1, mix->spirv_size), ZC_OK);
    zc_disk_tier_close(tier);
    uint64_t cost = walk().total;
    t_remove_tree(cache_dir);
    snprintf(cache_dir, sizeof cache_dir, "%s", saved);
    return cost;
}

/* Stores the mix's modules one by one at limit, checking after every step:
 * config.file exact, the limit held, never empty, the newest modules hits,
 * and once the limit was reached, at least two thirds of it kept (less one
 * module: the last one evicted may have taken more than was needed). */
static void run_mix(const module_mix *mix, uint64_t limit)
{
    uint64_t cost = module_cost(mix);
    zc_disk_tier *tier = open_tier(limit);
    uint64_t evictions_seen = 0, least_kept = UINT64_MAX;
    for (uint64_t i = 1; i <= mix->modules; i++) {
        store_entry(tier, 1000 + i, mix->binary_size);
        if (mix->spirv_size > 0) {
            zc_status status = record(tier, 1000 + i, 1000 + i / mix->sharing, mix->spirv_size);
            cr_assert_eq(status, ZC_OK, "module %llu: %s", (unsigned long long)i,
                         zc_status_name(status));
        }
        walk_census census = assert_accounting_exact("after a store");
        cr_assert_leq(census.total, limit, "module %llu: %llu bytes over the limit",
                      (unsigned long long)i, (unsigned long long)(census.total - limit));
        cr_assert_gt(census.entries, 0, "module %llu: the cache emptied itself",
                     (unsigned long long)i);
        cr_assert(loads(tier, 1000 + i, mix->binary_size), "module %llu: no hit", i);
        if (i > 1 && census.entries > 1)
            cr_assert(loads(tier, 1000 + i - 1, mix->binary_size), "module %llu: no hit", i - 1);
        evictions_seen = zc_disk_tier_evictions(tier);
        if (evictions_seen > 0) {
            least_kept = census.total < least_kept ? census.total : least_kept;
            cr_assert_geq(census.total + cost, 2 * limit / 3,
                          "module %llu: %llu bytes kept of a %llu-byte limit (modules of %llu)",
                          (unsigned long long)i, (unsigned long long)census.total,
                          (unsigned long long)limit, (unsigned long long)cost);
        }
    }
    cr_assert_gt(evictions_seen, 0, "the limit was never reached");
    cr_log_info("mix %zu+%zu/%llu: %llu evictions, least kept %llu of %llu (module %llu)",
                mix->binary_size, mix->spirv_size, (unsigned long long)mix->sharing,
                (unsigned long long)evictions_seen, (unsigned long long)least_kept,
                (unsigned long long)limit, (unsigned long long)cost);
    zc_disk_tier_close(tier);
}

/* The case: 4 KiB binaries beside 16 KiB of SPIR-V each. Counting
 * only entry bytes as freed, every eviction emptied the cache. */
Test(evict, small_binaries_beside_large_spirv_keep_two_thirds)
{
    module_mix mix = {.binary_size = 4096, .spirv_size = 16384, .sharing = 1, .modules = 60};
    run_mix(&mix, 200 << 10);
}

Test(evict, every_mix_keeps_two_thirds_and_serves_hits)
{
    static const module_mix mixes[] = {
        {.binary_size = 4096, .spirv_size = 0, .sharing = 1, .modules = 60}, /* no recipes */
        {.binary_size = 16384, .spirv_size = 4096, .sharing = 1, .modules = 40},
        {.binary_size = 2048, .spirv_size = 16384, .sharing = 4, .modules = 80}, /* shared */
        {.binary_size = 1024, .spirv_size = 30000, .sharing = 1, .modules = 40},
    };
    for (size_t i = 0; i < sizeof mixes / sizeof *mixes; i++) {
        t_remove_tree(cache_dir);
        cr_assert_eq(mkdir(cache_dir, 0700), 0);
        run_mix(&mixes[i], 200 << 10);
    }
}

/* A blob named by several recipes goes with the last of them, and its size
 * is counted as freed then, not before. */
Test(evict, a_shared_blob_goes_with_the_last_recipe_naming_it)
{
    zc_disk_tier *tier = open_tier(0);
    for (uint64_t i = 1; i <= 3; i++) {
        store_entry(tier, i, 1000);
        cr_assert_eq(record(tier, i, 77, 8000), ZC_OK);
    }
    uint64_t removed_entries = 0, removed_bytes = 0;
    walk_census before = walk();
    cr_assert_eq(before.blobs, 1);
    char path[PATH_MAX], hex[ZC_KEY_HEX_SIZE];
    for (uint64_t i = 1; i <= 3; i++) {
        zc_key key = t_key(i);
        zc_key_to_hex(&key, hex);
        snprintf(path, sizeof path, "%s/%c/%c/%s.l0_cache", cache_dir, hex[0], hex[1], hex);
        struct timespec times[2] = {{(time_t)(1000 * i), 0}, {(time_t)(1000 * i), 0}};
        cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0);
    }
    /* The two oldest go: the blob stays, named by the third. */
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 2500, &removed_entries, &removed_bytes),
                 ZC_OK);
    walk_census after = assert_accounting_exact("after the trim");
    cr_assert_eq(removed_entries, 2);
    cr_assert_eq(after.blobs, 1);
    cr_assert_eq(removed_bytes, before.total - after.total);
    cr_assert_eq(zc_disk_tier_trim(tier, 0, 0, &removed_entries, &removed_bytes), ZC_OK);
    walk_census empty = assert_accounting_exact("after trimming to 0");
    cr_assert_eq(removed_entries, 1);
    cr_assert_eq(removed_bytes, after.total, "the blob counted as freed with its last user");
    cr_assert_eq(empty.total, 0);
    cr_assert_eq(empty.blobs, 0);
    zc_disk_tier_close(tier);
}

/* ---- accounting after a hand-removed entry ---- */

static void entry_file(uint64_t seed, const char *suffix, char *path)
{
    zc_key key = t_key(seed);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&key, hex);
    snprintf(path, PATH_MAX, "%s/%c/%c/%s%s", cache_dir, hex[0], hex[1], hex, suffix);
}

typedef enum repair_step { STORE, REPAIR, TRIM, CLEAR, REPAIR_STEPS } repair_step;

/* Three modules with recipes, the second's entry removed by hand (its
 * recipe, and its SPIR-V, stay), config.file broken; then step. */
static void assert_exact_after(repair_step step)
{
    t_remove_tree(cache_dir);
    cr_assert_eq(mkdir(cache_dir, 0700), 0);
    zc_disk_tier *tier = open_tier(1 << 20);
    for (uint64_t i = 1; i <= 3; i++) {
        store_entry(tier, i, 1000);
        cr_assert_eq(record(tier, i, i, 2000), ZC_OK);
    }
    char path[PATH_MAX];
    entry_file(2, ".l0_cache", path);
    cr_assert_eq(unlink(path), 0);
    char config[PATH_MAX];
    snprintf(config, sizeof config, "%s/%s", cache_dir, ZC_CONFIG_FILE_NAME);
    t_write_file(config, "bad", 3);
    if (step == STORE)
        store_entry(tier, 4, 1000); /* rescans at the lock */
    else if (step == REPAIR)
        cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    else if (step == TRIM)
        cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    else
        cr_assert_eq(zc_disk_tier_clear(tier), ZC_OK);
    walk_census census = assert_accounting_exact("after the repairing step");
    entry_file(2, ".recipe", path);
    cr_assert_not(t_exists(path), "step %d: the orphaned recipe stayed", step);
    cr_assert_eq(census.recipes, step == CLEAR ? 0 : 2);
    uint64_t scanned = 0;
    cr_assert_eq(zc_disk_tier_scanned_size(tier, &scanned, NULL), ZC_OK);
    cr_assert_eq(scanned, census.total);
    zc_disk_tier_close(tier);
}

Test(evict, a_hand_removed_entry_leaves_config_file_exact_after_every_repairing_step)
{
    for (repair_step step = STORE; step < REPAIR_STEPS; step++)
        assert_exact_after(step);
}

/* ---- usage lists ---- */

static void write_list(zc_disk_tier *tier, uint64_t program_seed)
{
    zc_key program = t_key(program_seed), keys[3] = {t_key(1), t_key(2), t_key(3)};
    cr_assert_eq(zc_disk_tier_write_usage(tier, program.bytes, keys, 3), ZC_OK);
}

static void list_path(uint64_t program_seed, char *path)
{
    zc_key program = t_key(program_seed);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&program, hex);
    snprintf(path, PATH_MAX, "%s/%s%s", cache_dir, hex, ZC_USAGE_SUFFIX);
}

static void set_mtime(const char *path, time_t when)
{
    struct timespec times[2] = {{when, 0}, {when, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0, "%s", path);
}

Test(evict, trimming_to_zero_removes_every_usage_list)
{
    zc_disk_tier *tier = open_tier(1 << 20);
    store_entry(tier, 1, 1000);
    for (uint64_t i = 0; i < 25; i++)
        write_list(tier, 500 + i);
    cr_assert_eq(walk().usage_lists, 25);
    cr_assert_eq(zc_disk_tier_trim(tier, 0, 0, NULL, NULL), ZC_OK);
    cr_assert_eq(walk().usage_lists, 0);
    assert_accounting_exact("after the trim");
    zc_disk_tier_close(tier);
}

/* One list per argument set: only the most recently used stay. */
Test(evict, at_most_the_most_recent_usage_lists_stay)
{
    zc_disk_tier *tier = open_tier(1 << 20);
    time_t now = time(NULL);
    char path[PATH_MAX];
    for (uint64_t i = 0; i < 100; i++) {
        write_list(tier, 500 + i);
        list_path(500 + i, path);
        set_mtime(path, now - 1000 + (time_t)i); /* written in this order */
    }
    cr_assert_eq(walk().usage_lists, ZC_USAGE_LISTS_KEPT);
    for (uint64_t i = 0; i < 100; i++) {
        list_path(500 + i, path);
        cr_assert_eq(t_exists(path), i >= 100 - ZC_USAGE_LISTS_KEPT, "list %llu",
                     (unsigned long long)i);
    }
    zc_disk_tier_close(tier);
}

/* A sweep removes the lists last used before the oldest entry it keeps;
 * reading a list marks its use. */
Test(evict, sweeps_remove_usage_lists_older_than_every_kept_entry)
{
    zc_disk_tier *tier = open_tier(1 << 20);
    char stale[PATH_MAX], read_path[PATH_MAX], fresh[PATH_MAX], entry[PATH_MAX];
    write_list(tier, 600);
    write_list(tier, 601);
    store_entry(tier, 1, 1000);
    entry_file(1, ".l0_cache", entry);
    set_mtime(entry, time(NULL) - 3 * 3600);
    write_list(tier, 602);
    list_path(600, stale);
    list_path(601, read_path);
    list_path(602, fresh);
    set_mtime(stale, time(NULL) - 4 * 3600);
    set_mtime(read_path, time(NULL) - 4 * 3600);
    zc_key program = t_key(601), keys[ZC_USAGE_LIST_MAX];
    size_t count = 0;
    cr_assert_eq(zc_disk_tier_read_usage(tier, program.bytes, keys, &count), ZC_OK);
    cr_assert_eq(count, 3);
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    cr_assert_not(t_exists(stale), "a list older than every entry stayed");
    cr_assert(t_exists(read_path), "a list read since stayed");
    cr_assert(t_exists(fresh));
    cr_assert(t_exists(entry));
    zc_disk_tier_close(tier);
}

/* Making room for a recipe may evict the only other module naming its
 * SPIR-V, and the SPIR-V with it: writing that again must fit too. Here the
 * module does not fit with its inputs at all: its entry goes, nothing is
 * recorded, and the limit holds. */
Test(evict, recording_keeps_the_limit_when_making_room_took_its_spirv)
{
    zc_disk_tier *tier = open_tier(0);
    store_entry(tier, 1, 4000);
    cr_assert_eq(record(tier, 1, 9, 8000), ZC_OK);
    store_entry(tier, 2, 1000);
    char path[PATH_MAX];
    entry_file(1, ".l0_cache", path);
    set_mtime(path, time(NULL) - 1000);
    char recipe[PATH_MAX];
    entry_file(1, ".recipe", recipe);
    struct stat entry_st, recipe_st;
    entry_file(2, ".l0_cache", path);
    cr_assert_eq(stat(path, &entry_st), 0);
    cr_assert_eq(stat(recipe, &recipe_st), 0);
    walk_census before = walk();
    cr_assert_eq(before.blobs, 1);
    uint64_t blob = before.total - (uint64_t)recipe_st.st_size - (uint64_t)entry_st.st_size;
    entry_file(1, ".l0_cache", path);
    struct stat first_st;
    cr_assert_eq(stat(path, &first_st), 0);
    blob -= (uint64_t)first_st.st_size;
    /* The second module with its recipe and SPIR-V is 100 bytes over. */
    uint64_t limit = (uint64_t)entry_st.st_size + blob + (uint64_t)recipe_st.st_size - 100;
    zc_disk_tier_close(tier);
    tier = open_tier(limit);
    cr_assert_eq(record(tier, 2, 9, 8000), ZC_MISS);
    walk_census after = assert_accounting_exact("after the record");
    cr_assert_leq(after.total, limit);
    zc_disk_tier_close(tier);
}

/* A young .recipe not named after a zecache key (a peer's file, or one
 * planted) is no recipe of ours: it must not stop eviction from freeing the
 * SPIR-V that only the evicted entries named, or every eviction empties the
 * cache again. */
Test(evict, a_planted_foreign_recipe_does_not_make_eviction_empty_the_cache)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/planted.recipe", cache_dir);
    mkdir(cache_dir, 0700);
    t_write_file(path, "", 0); /* 0 bytes: the walk counts it as nothing */
    module_mix mix = {.binary_size = 4096, .spirv_size = 16384, .sharing = 1, .modules = 60};
    run_mix(&mix, 200 << 10);
}

/* A recipe of ours with no entry that cannot be removed (a peer's file in a
 * sticky shared directory: EPERM) names nothing an entry needs either. */
static char unremovable[NAME_MAX + 1];

static int unlinkat_refusing(int dirfd, const char *path, int flags)
{
    if (strcmp(path, unremovable) == 0) {
        errno = EPERM;
        return -1;
    }
    return zc_fs_ops_default()->unlinkat(dirfd, path, flags);
}

Test(evict, an_unremovable_orphan_recipe_does_not_make_eviction_empty_the_cache)
{
    static zc_fs_ops ops;
    ops = *zc_fs_ops_default();
    ops.unlinkat = unlinkat_refusing;
    char path[PATH_MAX];
    entry_file(999999, ".recipe", path);
    snprintf(unremovable, sizeof unremovable, "%s", strrchr(path, '/') + 1);
    mkdir(cache_dir, 0700);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(path, '/') - path), path);
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
    mkdir(parent, 0700);
    mkdir(dir, 0700);
    t_write_file(path, "", 0); /* 0 bytes: the walk counts it as nothing */
    tier_ops = &ops;
    module_mix mix = {.binary_size = 4096, .spirv_size = 16384, .sharing = 1, .modules = 60};
    run_mix(&mix, 200 << 10);
    tier_ops = NULL;
}

/* A module left by another user (a run under sudo: its directory and files
 * root's): its recipe cannot be read (EACCES) and its entry cannot be removed
 * (EPERM). A recipe that cannot be read cannot be used either: it must not
 * keep every blob, or every eviction removes every other entry. */
static char unreadable[NAME_MAX + 1], unremovable_entry[NAME_MAX + 1];

static int openat_refusing(int dirfd, const char *path, int flags, mode_t mode)
{
    if (strcmp(path, unreadable) == 0) {
        errno = EACCES;
        return -1;
    }
    return zc_fs_ops_default()->openat(dirfd, path, flags, mode);
}

static int unlinkat_refusing_entry(int dirfd, const char *path, int flags)
{
    if (strcmp(path, unremovable_entry) == 0 || strcmp(path, unreadable) == 0) {
        errno = EPERM;
        return -1;
    }
    return zc_fs_ops_default()->unlinkat(dirfd, path, flags);
}

/* A recipe that can be neither read nor removed names SPIR-V nobody knows:
 * a sweep then removes nothing (neither SPIR-V it may name, nor every
 * entry): stores that need room fail, counted, and every entry keeps
 * serving hits until the file can be read or removed. */
Test(evict, an_unreadable_unremovable_recipe_stops_eviction_and_empties_nothing)
{
    mkdir(cache_dir, 0700);
    zc_disk_tier *tier = open_tier(0);
    store_entry(tier, 999998, 4096);
    cr_assert_eq(record(tier, 999998, 999998, 16384), ZC_OK);
    zc_disk_tier_close(tier);
    char path[PATH_MAX];
    entry_file(999998, ".recipe", path);
    snprintf(unreadable, sizeof unreadable, "%s", strrchr(path, '/') + 1);
    entry_file(999998, ".l0_cache", path);
    snprintf(unremovable_entry, sizeof unremovable_entry, "%s", strrchr(path, '/') + 1);
    static zc_fs_ops ops;
    ops = *zc_fs_ops_default();
    ops.openat = openat_refusing;
    ops.unlinkat = unlinkat_refusing_entry;
    tier_ops = &ops;
    tier = open_tier(200 << 10);
    uint64_t stored = 0;
    zc_status status = ZC_OK;
    for (uint64_t i = 1; i <= 60 && status == ZC_OK; i++) {
        zc_key key = t_key(1000 + i);
        zc_artifact *artifact = t_artifact(4096, 1000 + i);
        status = zc_disk_tier_store(tier, &key, artifact, NULL);
        zc_artifact_unref(artifact);
        if (status == ZC_OK && (status = record(tier, 1000 + i, 1000 + i, 16384)) == ZC_OK)
            stored = i;
    }
    cr_assert(status == ZC_ERR_IO || status == ZC_MISS, "the store that needed room: %s",
              zc_status_name(status));
    cr_assert_gt(stored, 5, "only %llu modules fitted", (unsigned long long)stored);
    cr_assert_eq(zc_disk_tier_evictions(tier), 0);
    for (uint64_t i = 1; i <= stored; i++)
        cr_assert(loads(tier, 1000 + i, 4096), "module %llu: no hit", (unsigned long long)i);
    assert_accounting_exact("after the refused sweep");
    zc_disk_tier_close(tier);
    tier_ops = NULL;
}

/* ---- eviction from one shard ---- */

enum { SHARDED_ENTRIES = 2048 };

static void shard_of(uint64_t seed, char *shard)
{
    zc_key key = t_key(seed);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&key, hex);
    snprintf(shard, 4, "%c/%c", hex[0], hex[1]);
}

static size_t files_in(const char *shard)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", cache_dir, shard);
    return t_count_files_ending(path, "") - 1; /* find names the directory too */
}

/* 2048 entries spread over the 256 shards, entry i used at time i; at the
 * limit, one more store lists only its own shard's directory and evicts
 * that shard's least recently used entries, and nothing elsewhere. */
Test(evict, a_store_at_the_limit_lists_and_evicts_one_shard_only)
{
    zc_disk_tier *tier = open_tier(0);
    char path[PATH_MAX];
    for (uint64_t i = 1; i <= SHARDED_ENTRIES; i++) {
        store_entry(tier, i, 200);
        entry_file(i, ".l0_cache", path);
        set_mtime(path, 1000000 + (time_t)i);
    }
    zc_disk_tier_close(tier);
    uint64_t limit = config_file_value();
    tier = open_tier(limit);
    uint64_t incoming = SHARDED_ENTRIES + 1;
    char shard[4], other[4];
    shard_of(incoming, shard);
    size_t listed = files_in(shard) + 2; /* with "." and ".." */
    uint64_t read_before = zc_disk_tier_dirents_read(tier);
    store_entry(tier, incoming, 200);
    uint64_t read = zc_disk_tier_dirents_read(tier) - read_before;
    cr_assert_leq(read, listed, "the store listed %llu directory entries, its shard has %zu",
                  (unsigned long long)read, listed);
    cr_assert_gt(zc_disk_tier_evictions(tier), 0);
    bool kept_newer = false; /* in the shard, once one stays every newer one does */
    for (uint64_t i = 1; i <= SHARDED_ENTRIES; i++) {
        shard_of(i, other);
        entry_file(i, ".l0_cache", path);
        bool present = t_exists(path);
        if (strcmp(other, shard) != 0)
            cr_assert(present, "entry %llu outside the evicting shard went", (unsigned long long)i);
        else if (present)
            kept_newer = true;
        else
            cr_assert_not(kept_newer, "entry %llu went while an older one in its shard stayed",
                          (unsigned long long)i);
    }
    walk_census census = assert_accounting_exact("after the store at the limit");
    zc_disk_tier_close(tier);
    cr_assert_leq(census.total, limit);
}

/* The seeds, from 2 on, of count keys in shard. */
static void seeds_in_shard(const char *shard, uint64_t *seeds, size_t count)
{
    char other[4];
    for (uint64_t seed = 2; count > 0; seed++) {
        shard_of(seed, other);
        if (strcmp(other, shard) == 0)
            seeds[--count] = seed;
    }
}

/* A cache whose limit gives a third of a shard's share room for about 90
 * entries of the shard: a store at the limit evicts what it needs and at
 * most ZC_SPARE_ENTRIES_MAX more, so that its time under the lock does not
 * grow with the cache; the oldest go first. */
Test(evict, a_store_at_the_limit_evicts_a_bounded_number_of_entries)
{
    enum { IN_SHARD = 120, SMALL = 200, SPARE_MAX = 32 };
    char shard[4], path[PATH_MAX];
    shard_of(1, shard);
    uint64_t seeds[IN_SHARD + 1];
    seeds_in_shard(shard, seeds, IN_SHARD + 1); /* seeds[IN_SHARD]: the incoming */
    zc_disk_tier *tier = open_tier(0);
    uint64_t big = 1;
    for (char big_shard[4] = ""; shard_of(big, big_shard), strcmp(big_shard, shard) == 0;)
        big++;
    store_entry(tier, big, 32u << 20);
    for (size_t i = 0; i < IN_SHARD; i++) {
        store_entry(tier, seeds[i], SMALL);
        entry_file(seeds[i], ".l0_cache", path);
        set_mtime(path, 1000000 + (time_t)i);
    }
    zc_disk_tier_close(tier);
    tier = open_tier(config_file_value());
    store_entry(tier, seeds[IN_SHARD], SMALL);
    uint64_t evicted = zc_disk_tier_evictions(tier);
    cr_assert(evicted >= 1 && evicted <= 1 + SPARE_MAX, "one store evicted %llu entries",
              (unsigned long long)evicted);
    for (size_t i = 0; i < IN_SHARD; i++) {
        entry_file(seeds[i], ".l0_cache", path);
        cr_assert_eq(t_exists(path), i >= evicted, "entry %zu of the shard (oldest first)", i);
    }
    assert_accounting_exact("after the bounded eviction");
    zc_disk_tier_close(tier);
}

/* ---- recording at the limit ---- */

/* Directory entries in shard and the ones after it that a pass may visit
 * (ZC_SHARD_VISITS_MAX), with "." and "..". */
static size_t files_from(const char *shard, unsigned shards)
{
    static const char hex[] = "0123456789abcdef";
    unsigned first =
        (unsigned)(strchr(hex, shard[0]) - hex) * 16 + (unsigned)(strchr(hex, shard[2]) - hex);
    size_t files = 0;
    for (unsigned i = 0; i < shards; i++) {
        unsigned index = (first + i) % 256;
        char name[4] = {hex[index / 16], '/', hex[index % 16], '\0'};
        files += files_in(name) + 2;
    }
    return files;
}

/* The same 2048 entries, and the incoming one stored before the limit: its
 * recorded inputs at the limit, more than its shard's older entries hold,
 * list only that shard and the few after it, as a store does, and keep the
 * entry they are recorded beside. */
Test(evict, a_recording_at_the_limit_lists_one_shard_and_keeps_its_entry)
{
    zc_disk_tier *tier = open_tier(0);
    char path[PATH_MAX];
    uint64_t incoming = SHARDED_ENTRIES + 1;
    for (uint64_t i = 1; i <= SHARDED_ENTRIES; i++) {
        store_entry(tier, i, 200);
        entry_file(i, ".l0_cache", path);
        set_mtime(path, 1000000 + (time_t)i);
    }
    store_entry(tier, incoming, 200);
    zc_disk_tier_close(tier);
    uint64_t limit = config_file_value();
    tier = open_tier(limit);
    char shard[4];
    shard_of(incoming, shard);
    size_t listed = files_from(shard, 4);
    uint64_t read_before = zc_disk_tier_dirents_read(tier);
    cr_assert_eq(record(tier, incoming, 5, 3000), ZC_OK);
    uint64_t read = zc_disk_tier_dirents_read(tier) - read_before;
    cr_assert_leq(read, listed, "the recording listed %llu directory entries, its shards have %zu",
                  (unsigned long long)read, listed);
    cr_assert_gt(zc_disk_tier_evictions(tier), 0);
    entry_file(incoming, ".l0_cache", path);
    cr_assert(t_exists(path), "the entry recorded beside was evicted");
    entry_file(incoming, ".recipe", path);
    cr_assert(t_exists(path));
    walk_census census = assert_accounting_exact("after the recording at the limit");
    zc_disk_tier_close(tier);
    cr_assert_leq(census.total, limit);
}

static char refs_path[PATH_MAX]; /* the last .spirv_refs walked */

static int find_refs(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    (void)st;
    if (type == FTW_F && ends_with(path, ZC_SPIRV_REFS_SUFFIX))
        snprintf(refs_path, sizeof refs_path, "%s", path);
    return 0;
}

/* The count of the only blob's users its count file holds; -1: no file. */
static int64_t blob_users(void)
{
    refs_path[0] = '\0';
    cr_assert_eq(nftw(cache_dir, find_refs, 16, FTW_PHYS), 0);
    if (refs_path[0] == '\0')
        return -1;
    size_t size = 0, content_size = 0;
    uint8_t *data = t_read_bytes(refs_path, &size), *content = NULL, id[ZC_SEALED_ID_SIZE];
    char reason[160] = "";
    cr_assert_eq(zc_sealed_decode(ZC_SPIRV_REFS_MAGIC, data, size, NULL, 8, &content, &content_size,
                                  id, reason, sizeof reason),
                 ZC_OK, "%s: %s", refs_path, reason);
    cr_assert_eq(content_size, 8);
    int64_t count = 0;
    for (int i = 7; i >= 0; i--)
        count = count * 256 + content[i];
    free(content);
    free(data);
    return count;
}

/* Two entries of one shard share a blob; stores at the limit in that shard
 * evict them one at a time, without a full sweep: the blob stays with the
 * first (one user left) and goes with the second. */
Test(evict, a_blob_named_by_two_recipes_goes_with_the_second_from_a_shard)
{
    enum { SHARERS = 2, STORES = 2 };
    char shard[4], path[PATH_MAX];
    shard_of(1, shard);
    uint64_t seeds[SHARERS + STORES];
    seeds_in_shard(shard, seeds, SHARERS + STORES);
    zc_disk_tier *tier = open_tier(0);
    for (size_t i = 0; i < SHARERS; i++) {
        store_entry(tier, seeds[i], 1000);
        cr_assert_eq(record(tier, seeds[i], 77, 8000), ZC_OK);
        entry_file(seeds[i], ".l0_cache", path);
        set_mtime(path, 1000000 + (time_t)i);
    }
    cr_assert_eq(blob_users(), SHARERS);
    zc_disk_tier_close(tier);
    uint64_t limit = config_file_value();
    tier = open_tier(limit);
    for (size_t i = 0; i < STORES; i++) {
        uint64_t read_before = zc_disk_tier_dirents_read(tier);
        size_t listed = files_in(shard) + 2;
        store_entry(tier, seeds[SHARERS + i], 1000);
        cr_assert_leq(zc_disk_tier_dirents_read(tier) - read_before, listed, "a full sweep ran");
        cr_assert_eq(zc_disk_tier_evictions(tier), i + 1, "store %zu: %llu evictions", i,
                     (unsigned long long)zc_disk_tier_evictions(tier));
        entry_file(seeds[i], ".l0_cache", path);
        cr_assert_not(t_exists(path), "sharer %zu, the oldest, stayed", i);
        walk_census census = assert_accounting_exact("after a store at the limit");
        cr_assert_eq(census.blobs, i + 1 < SHARERS ? 1 : 0, "store %zu: %llu blobs", i,
                     (unsigned long long)census.blobs);
        cr_assert_eq(blob_users(), i + 1 < SHARERS ? (int64_t)(SHARERS - i - 1) : -1);
    }
    zc_disk_tier_close(tier);
}
