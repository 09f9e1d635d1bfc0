/* A systematic matrix of failing system calls through the zc_fs_ops seam:
 * for every operation of the disk tier, every kind of fault, and N = 1, 2,
 * ... until the operation makes fewer than N calls, the Nth call fails
 * (EIO, ENOSPC, EINTR, ENOENT), moves half of what was asked (a short read
 * or write) or, for writes, nothing. After each:
 *  - the result is what it would be without the fault, or a clean failure
 *    (a miss for loads); faults the tier must absorb (short transfers,
 *    EINTR on reads, writes and flock) change nothing at all;
 *  - no temp file or stray file is left; every entry on disk verifies;
 *  - config.file holds the real total or is invalid, and the next (clean)
 *    store leaves it exact.
 * test_disk_tier.c has EIO on each call of a store and a load; this is the
 * full matrix. */
#include <criterion/criterion.h>

#include "../source/local/fs_ops.h"
#include "fault_test_support.h"
#include "zecache/stats.h"
#include "zecache/disk_maintenance.h"

TestSuite(fault_io, .init = ft_make_root, .fini = ft_remove_root);

typedef struct cell {
    zc_disk_tier *tier;
    uint64_t key;
    uint64_t max_size;
    uint64_t target; /* trim's size bound */
    bool planted;    /* prepare wrote a wrong value into config.file */
    uint64_t planted_value;
} cell;

typedef struct scenario {
    const char *name;
    uint64_t max_size;
    zc_status expected; /* without faults */
    void (*prepare)(cell *c);
    zc_status (*run)(cell *c);
    void (*check)(cell *c, zc_status status);
} scenario;

static uint64_t next_key = 1000;

static void entry_rel(uint64_t n, char rel[PATH_MAX])
{
    zc_key key = fc_key(n);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&key, hex);
    snprintf(rel, PATH_MAX, "%c/%c/%s%s", hex[0], hex[1], hex, ZC_ENTRY_SUFFIX);
}

static bool entry_exists(uint64_t n, const char *suffix)
{
    char path[PATH_MAX];
    ft_entry_path(path, n, suffix);
    return t_exists(path);
}

/* ---- the operations ---- */

static void prepare_nothing(cell *c)
{
    (void)c;
}

static zc_status run_store(cell *c)
{
    return ft_try_store(c->tier, c->key, "trace");
}

static void check_store(cell *c, zc_status status)
{
    if (status == ZC_OK) {
        ft_assert_hit(c->tier, c->key);
        return;
    }
    cr_assert(!entry_exists(c->key, ZC_ENTRY_SUFFIX), "a failed store leaves no entry");
    cr_assert(!entry_exists(c->key, ZC_TRACE_SUFFIX), "nor a trace");
}

/* Fills the cache so that the next store must evict. */
static void prepare_full(cell *c)
{
    for (;;) {
        ft_census census = ft_take_census();
        if (census.total + 2 * FT_MAX_BINARY > c->max_size)
            return;
        ft_store(c->tier, next_key++);
    }
}

static void check_store_evicting(cell *c, zc_status status)
{
    check_store(c, status);
    cr_assert_leq(ft_take_census().total, c->max_size);
}

static void prepare_stored(cell *c)
{
    ft_store(c->tier, c->key);
}

static zc_status run_load(cell *c)
{
    return ft_try_load(c->tier, c->key); /* checks any hit byte for byte */
}

static void check_load_hit(cell *c, zc_status status)
{
    (void)status;
    cr_assert(entry_exists(c->key, ZC_ENTRY_SUFFIX), "an I/O error is no reason to remove");
}

static void prepare_corrupt(cell *c)
{
    ft_store(c->tier, c->key);
    char path[PATH_MAX];
    ft_entry_path(path, c->key, ZC_ENTRY_SUFFIX);
    size_t size;
    uint8_t *bytes = ft_read_file(path, &size);
    bytes[size - 9] ^= 0x40; /* in the frame: same size, config.file stays exact */
    ft_write_file(path, bytes, size);
    free(bytes);
}

static long removals_prevented;

static void check_load_corrupt(cell *c, zc_status status)
{
    cr_assert_eq(status, ZC_MISS);
    if (entry_exists(c->key, ZC_ENTRY_SUFFIX)) { /* removal failed: a clean load retries */
        removals_prevented++;
        ft_assert_miss(c->tier, c->key);
    }
    cr_assert(!entry_exists(c->key, ZC_ENTRY_SUFFIX));
}

static void prepare_several(cell *c)
{
    for (int i = 0; i < 4; i++)
        ft_store(c->tier, next_key++);
    ft_store(c->tier, c->key);
    c->target = ft_take_census().total / 2;
}

static zc_status run_trim(cell *c)
{
    return zc_disk_tier_trim(c->tier, c->target, 0, NULL, NULL);
}

static void check_trim(cell *c, zc_status status)
{
    if (status == ZC_OK)
        cr_assert_leq(ft_take_census().total, c->target);
}

static zc_status run_clear(cell *c)
{
    return zc_disk_tier_clear(c->tier);
}

static void check_clear(cell *c, zc_status status)
{
    (void)c;
    if (status == ZC_OK)
        cr_assert_eq(ft_take_census().entries, 0);
}

static zc_status run_remove(cell *c)
{
    char rel[PATH_MAX];
    entry_rel(c->key, rel);
    return zc_disk_tier_remove_entry(c->tier, rel);
}

static void check_remove(cell *c, zc_status status)
{
    if (status == ZC_OK)
        cr_assert(!entry_exists(c->key, ZC_ENTRY_SUFFIX));
}

static zc_status run_remove_if_bad(cell *c)
{
    char rel[PATH_MAX];
    entry_rel(c->key, rel);
    bool removed = false;
    zc_status status = zc_disk_tier_remove_if_bad(c->tier, rel, &removed);
    cr_assert(status != ZC_OK || removed, "a corrupt entry is removed when all goes well");
    return status;
}

/* A failed removal leaves the corrupt entry; the next load removes it. */
static void check_remove_if_bad(cell *c, zc_status status)
{
    if (status == ZC_OK)
        cr_assert(!entry_exists(c->key, ZC_ENTRY_SUFFIX));
    else if (entry_exists(c->key, ZC_ENTRY_SUFFIX))
        ft_assert_miss(c->tier, c->key);
    cr_assert(!entry_exists(c->key, ZC_ENTRY_SUFFIX));
}

static void prepare_drifted(cell *c)
{
    prepare_several(c);
    c->planted = true;
    c->planted_value = 1;
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    ft_write_file(path, &c->planted_value, sizeof c->planted_value);
}

static zc_status run_repair(cell *c)
{
    uint64_t size = 0;
    zc_status status = zc_disk_tier_repair_accounting(c->tier, &size);
    if (status == ZC_OK)
        cr_assert_eq(size, ft_take_census().total);
    return status;
}

static void check_repair(cell *c, zc_status status)
{
    (void)c;
    if (status == ZC_OK)
        ft_assert_exact_and_clean("after a successful repair");
}

static zc_status run_open(cell *c)
{
    zc_config config = ft_config(ft_cache, c->max_size);
    zc_disk_tier *tier = (zc_disk_tier *)1;
    zc_status status = zc_disk_tier_open_with_ops(&config, &ft_faulty_ops, &tier);
    cr_assert(status == ZC_OK || status == ZC_ERR_DISABLED, "%s", zc_status_name(status));
    cr_assert_eq(status == ZC_OK, tier != NULL);
    zc_disk_tier_close(tier);
    return status;
}

/* ---- the stats file, through the same seam ---- */

static zc_stats_counters stats_delta(void)
{
    zc_stats_counters delta;
    memset(&delta, 0, sizeof delta);
    delta.misses = 7;
    delta.stores = 5;
    delta.bypasses[ZC_BYPASS_NOT_CACHEABLE] = 3;
    return delta;
}

static void prepare_stats(cell *c)
{
    zc_stats_counters delta = stats_delta();
    cr_assert_eq(zc_stats_merge(c->tier, &delta), ZC_OK);
}

static zc_status run_stats_merge(cell *c)
{
    zc_stats_counters delta = stats_delta();
    return zc_stats_merge(c->tier, &delta);
}

/* Merged or not, never torn or zeroed: the file holds the old sums or the
 * new ones. */
static void check_stats_merge(cell *c, zc_status status)
{
    zc_stats_counters read;
    cr_assert_eq(zc_stats_read(c->tier, &read), ZC_OK);
    uint64_t times = read.misses / 7;
    cr_assert(times == 2 || (status != ZC_OK && times == 1), "misses %llu after %s",
              (unsigned long long)read.misses, zc_status_name(status));
    cr_assert_eq(read.misses, 7 * times);
    cr_assert_eq(read.stores, 5 * times);
    cr_assert_eq(read.bypasses[ZC_BYPASS_NOT_CACHEABLE], 3 * times);
}

static zc_status run_stats_read(cell *c)
{
    zc_stats_counters read;
    zc_status status = zc_stats_read(c->tier, &read);
    if (status == ZC_OK)
        cr_assert_eq(read.misses, 7);
    return status;
}

static void check_nothing(cell *c, zc_status status)
{
    (void)c, (void)status;
}

static const scenario scenarios[] = {
    {"store", 1 << 20, ZC_OK, prepare_nothing, run_store, check_store},
    {"store evicting", 12 << 10, ZC_OK, prepare_full, run_store, check_store_evicting},
    {"load hit", 1 << 20, ZC_OK, prepare_stored, run_load, check_load_hit},
    {"load corrupt", 1 << 20, ZC_MISS, prepare_corrupt, run_load, check_load_corrupt},
    {"trim", 1 << 20, ZC_OK, prepare_several, run_trim, check_trim},
    {"clear", 1 << 20, ZC_OK, prepare_several, run_clear, check_clear},
    {"remove entry", 1 << 20, ZC_OK, prepare_several, run_remove, check_remove},
    {"repair", 1 << 20, ZC_OK, prepare_drifted, run_repair, check_repair},
    {"open", 1 << 20, ZC_OK, prepare_nothing, run_open, check_nothing},
    {"stats merge", 1 << 20, ZC_OK, prepare_stats, run_stats_merge, check_stats_merge},
    {"stats read", 1 << 20, ZC_OK, prepare_stats, run_stats_read, check_nothing},
    {"remove if bad", 1 << 20, ZC_OK, prepare_corrupt, run_remove_if_bad, check_remove_if_bad},
};

/* ---- the faults ---- */

typedef struct fault {
    const char *name;
    ft_fault_kind kind;
    int error;
} fault;

/* Not ENOENT or ELOOP: the tier reads them as "removed meanwhile" or "a
 * symlink", and under its lock neither can be true of a file it just saw,
 * so injecting them would only test a lie. */
static const fault faults[] = {
    {"EIO", FT_FAIL, EIO},       {"ENOSPC", FT_FAIL, ENOSPC}, {"EINTR", FT_FAIL, EINTR},
    {"EACCES", FT_FAIL, EACCES}, {"short", FT_SHORT, 0},      {"zero", FT_ZERO, 0},
};

/* Faults the tier must absorb without any visible change. */
static bool absorbed(const fault *f, const char *faulted)
{
    if (faulted == NULL || f->kind == FT_SHORT)
        return true;
    bool transfer = strcmp(faulted, "read") == 0 || strcmp(faulted, "pread") == 0 ||
                    strcmp(faulted, "write") == 0 || strcmp(faulted, "pwrite") == 0;
    return f->kind == FT_FAIL && f->error == EINTR && (transfer || strcmp(faulted, "flock") == 0);
}

static int verify_visited(void *context, const zc_disk_entry_info *info)
{
    zc_disk_tier *tier = context;
    char reason[256];
    zc_status status = zc_disk_tier_verify_entry(tier, info->path, NULL, reason, sizeof reason);
    cr_assert_eq(status, ZC_OK, "%s: %s", info->path, reason);
    return 0;
}

static void assert_invariants(cell *c, const char *context)
{
    ft_census census = ft_take_census();
    cr_assert_eq(census.temps, 0, "%s: temp files left", context);
    cr_assert_eq(census.others, 0, "%s: unexpected %s", context, census.other);
    uint64_t recorded;
    if (ft_config_value(&recorded) && !(c->planted && recorded == c->planted_value))
        cr_assert_eq(recorded, census.total, "%s: config.file %llu, real total %llu", context,
                     (unsigned long long)recorded, (unsigned long long)census.total);
    cr_assert_eq(zc_disk_tier_foreach(c->tier, verify_visited, c->tier), ZC_OK);
    /* A drift the test planted is not the fault's doing, and a store does
     * not look for drift: repair that first. */
    if (c->planted && ft_config_value(&recorded) && recorded == c->planted_value)
        cr_assert_eq(zc_disk_tier_repair_accounting(c->tier, NULL), ZC_OK);
    /* Whatever the fault left, the next store leaves config.file exact. */
    ft_store(c->tier, next_key++);
    ft_assert_exact_and_clean(context);
}

typedef struct tally {
    long cells, faulted, failed, absorbed;
} tally;

static int remove_below_root(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    return ftw->level == 0 ? 0 : ft_remove_one(path, st, type, ftw);
}

/* Each case starts from an empty cache (the tier keeps its root open), so
 * the number of calls an operation makes does not grow from case to case. */
static void empty_the_cache(void)
{
    cr_assert_eq(nftw(ft_cache, remove_below_root, 16, FTW_DEPTH | FTW_PHYS), 0);
    uint64_t zero = 0;
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    ft_write_file(path, &zero, sizeof zero);
}

/* Runs one scenario with one fault on call N: returns false once the
 * operation makes fewer than N calls. */
static bool run_cell(const scenario *s, const fault *f, long n, zc_disk_tier *tier, tally *t)
{
    cell c = {.tier = tier, .key = next_key++, .max_size = s->max_size};
    ft_start_plan((ft_fault_plan){0});
    empty_the_cache();
    s->prepare(&c);
    ft_start_plan((ft_fault_plan){.fail_at = n, .kind = f->kind, .error = f->error});
    zc_status status = s->run(&c);
    ft_fault_plan seen = ft_plan;
    ft_start_plan((ft_fault_plan){0});
    char context[128];
    snprintf(context, sizeof context, "%s, %s on call %ld (%s)", s->name, f->name, n,
             seen.faulted != NULL ? seen.faulted : "not faulted");
    if (absorbed(f, seen.faulted))
        cr_assert_eq(status, s->expected, "%s: %s", context, zc_status_name(status));
    s->check(&c, status);
    assert_invariants(&c, context);
    t->cells++;
    t->faulted += seen.faulted != NULL;
    t->failed += status != s->expected;
    t->absorbed += seen.faulted != NULL && status == s->expected;
    return seen.calls >= n;
}

static void run_scenario(const scenario *s)
{
    zc_disk_tier *tier = ft_open(s->max_size, &ft_faulty_ops);
    tally total = {0};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        tally t = {0};
        long n = 1;
        while (run_cell(s, &faults[i], n, tier, &t))
            n++;
        cr_log_info("%s, %s: %ld calls, %ld faulted, %ld failed cleanly, %ld absorbed", s->name,
                    faults[i].name, n - 1, t.faulted, t.failed, t.absorbed);
        total.cells += t.cells;
        total.faulted += t.faulted;
        total.failed += t.failed;
    }
    cr_log_info("%s: %ld cases, %ld with a fault, %ld failed cleanly", s->name, total.cells,
                total.faulted, total.failed);
    cr_assert_gt(total.faulted, 0);
    if (s->expected == ZC_OK)
        cr_assert_gt(total.failed, 0, "the faults really reached the operation");
    else
        cr_assert_gt(removals_prevented, 0, "the faults really reached the removal");
    zc_disk_tier_close(tier);
}

Test(fault_io, store_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[0]);
}

Test(fault_io, evicting_store_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[1]);
}

Test(fault_io, load_hit_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[2]);
}

Test(fault_io, load_of_a_corrupt_entry_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[3]);
}

Test(fault_io, trim_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[4]);
}

Test(fault_io, clear_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[5]);
}

Test(fault_io, remove_entry_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[6]);
}

Test(fault_io, repair_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[7]);
}

Test(fault_io, open_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[8]);
}

Test(fault_io, stats_merge_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[9]);
}

Test(fault_io, stats_read_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[10]);
}

/* The one fault combination a single failing call cannot reach: config.file
 * recorded too small (another writer's arithmetic, or a crash), so removing
 * an entry must rescan, and that rescan fails. config.file must then not be
 * left holding a made-up total. */
Test(fault_io, failed_rescan_after_a_too_small_total_leaves_no_wrong_value)
{
    zc_disk_tier *tier = ft_open(1 << 20, &ft_faulty_ops);
    for (uint64_t n = 1; n <= 4; n++)
        ft_store(tier, n);
    char path[PATH_MAX];
    uint64_t too_small = 1;
    ft_path(path, ZC_CONFIG_FILE_NAME);
    char rel[PATH_MAX];
    entry_rel(2, rel);
    for (long n = 1;; n++) {
        ft_write_file(path, &too_small, sizeof too_small);
        ft_store(tier, 2); /* a no-op when there, else back */
        ft_write_file(path, &too_small, sizeof too_small);
        /* fstatat fails from call n on: the rescan cannot finish. */
        ft_start_plan((ft_fault_plan){.fail_at = n, .kind = FT_FAIL, .error = EIO});
        zc_status status = zc_disk_tier_remove_entry(tier, rel);
        ft_fault_plan seen = ft_plan;
        ft_start_plan((ft_fault_plan){0});
        char context[64];
        snprintf(context, sizeof context, "remove with EIO on call %ld (%s)", n,
                 seen.faulted != NULL ? seen.faulted : "none");
        cr_assert(status == ZC_OK || status == ZC_ERR_IO, "%s", context);
        uint64_t recorded = 0;
        uint64_t real = ft_take_census().total;
        if (ft_config_value(&recorded))
            cr_assert(recorded == too_small || recorded == real,
                      "%s: config.file %llu, real total %llu", context,
                      (unsigned long long)recorded, (unsigned long long)real);
        if (seen.calls < n)
            break;
    }
    zc_disk_tier_close(tier);
}

Test(fault_io, remove_if_bad_under_each_fault_on_each_call)
{
    run_scenario(&scenarios[11]);
}
