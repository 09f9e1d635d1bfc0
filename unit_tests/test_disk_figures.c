/* zecache stats' figures (disk_figures.h) without reading every entry: the
 * files they read do not grow with the cache, and two processes storing
 * and evicting at once keep zecache.accounting exactly a scan's. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "fault_test_support.h"
#include "zecache/disk_figures.h"

TestSuite(figures, .init = ft_make_root, .fini = ft_remove_root, .timeout = 120);

static atomic_long files_opened;

static int counting_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    atomic_fetch_add(&files_opened, 1);
    return zc_fs_ops_default()->openat(dirfd, path, flags, mode);
}

/* The files zecache stats opens for its figures, which must come from the
 * accounting file kept by the stores, never a rebuild. */
static long opens_for_figures(zc_disk_tier *tier, uint64_t entries)
{
    zc_disk_figures figures, scanned;
    uint64_t recorded;
    bool recorded_valid, rebuilt;
    atomic_store(&files_opened, 0);
    cr_assert_eq(zc_disk_tier_figures(tier, &figures, &recorded, &recorded_valid, &rebuilt), ZC_OK);
    long opened = atomic_load(&files_opened);
    cr_assert_not(rebuilt, "the stores kept zecache.accounting");
    cr_assert_eq(figures.counted.entries, entries);
    cr_assert_eq(zc_disk_tier_scanned_figures(tier, &scanned), ZC_OK);
    cr_assert_arr_eq(&figures, &scanned, sizeof scanned, "a scan's figures");
    cr_assert(recorded_valid && recorded == scanned.counted.total);
    return opened;
}

Test(figures, stats_opens_as_many_files_over_1000_entries_as_over_10)
{
    static zc_fs_ops ops;
    ops = *zc_fs_ops_default();
    ops.openat = counting_openat;
    zc_disk_tier *tier = ft_open(0, &ops);
    for (uint64_t n = 0; n < 10; n++)
        ft_store(tier, n);
    long over_10 = opens_for_figures(tier, 10);
    for (uint64_t n = 10; n < 1000; n++)
        ft_store(tier, n);
    long over_1000 = opens_for_figures(tier, 1000);
    cr_log_info("figures over 10 entries: %ld files opened; over 1000: %ld", over_10, over_1000);
    cr_assert_eq(over_1000, over_10);
    zc_disk_tier_close(tier);
}

enum { WRITERS = 2, KEYS_EACH = 150, SHARED_KEYS = 40 };

/* Each writer stores keys of its own and keys both store, at a limit that
 * makes most stores evict: exit 0 when every store did what a store does. */
static int run_writer(int writer, uint64_t max_size)
{
    zc_config config = ft_config(ft_cache, max_size);
    zc_disk_tier *tier = NULL;
    if (zc_disk_tier_open(&config, &tier) != ZC_OK)
        return FM_SETUP;
    for (uint64_t i = 0; i < KEYS_EACH; i++) {
        uint64_t n = i % 3 == 0 ? 5000 + i % SHARED_KEYS : 1000 * (uint64_t)(writer + 1) + i;
        zc_status status = ft_try_store(tier, n, NULL);
        if (status != ZC_OK && status != ZC_EXISTS)
            return FM_BAD_STATUS;
    }
    zc_disk_tier_close(tier);
    return 0;
}

Test(figures, two_processes_storing_and_evicting_at_once_keep_it_exact)
{
    zc_disk_tier *tier = ft_open(0, NULL);
    ft_store(tier, 1); /* zecache.accounting starts kept */
    uint64_t entry_size;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &entry_size), ZC_OK);
    uint64_t max_size = 40 * entry_size;
    pid_t writers[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        writers[w] = fork();
        cr_assert_geq(writers[w], 0);
        if (writers[w] == 0)
            _exit(run_writer(w, max_size));
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        cr_assert_eq(waitpid(writers[w], &status, 0), writers[w]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d: %s", w,
                  WIFEXITED(status) ? ft_worker_exit_meaning(WEXITSTATUS(status)) : "killed");
    }
    zc_disk_figures accounted, scanned;
    char reason[200] = "";
    cr_assert_eq(zc_disk_tier_accounted_figures(tier, &accounted, reason, sizeof reason), ZC_OK,
                 "zecache.accounting not kept: %s", reason);
    cr_assert_eq(zc_disk_tier_scanned_figures(tier, &scanned), ZC_OK);
    cr_assert_arr_eq(&accounted, &scanned, sizeof scanned, "a scan's figures");
    cr_assert_lt(scanned.counted.entries, WRITERS * KEYS_EACH, "the writers evicted");
    zc_disk_tier_close(tier);
}
