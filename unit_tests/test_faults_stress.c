/* Eight processes of eight threads each storing, loading, trimming, removing
 * and scanning in one cache whose limit makes them evict all the time, for
 * a bounded time (ZC_STRESS_SECONDS, default 3). Seven are fault_worker
 * processes; the eighth is this one, whose threads run the same mix in
 * process, so that the TSan tree (label "threaded") checks the in-process
 * threading, while the workers check the cross-process locking. Every hit
 * is checked byte for byte, every listed entry is complete, and every few
 * operations each thread takes config.file's lock and checks that it holds
 * the real total and that the total is within the limit. Afterwards the
 * cache is exact and clean and every entry in it verifies. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "fault_test_support.h"
#include "zecache/disk_maintenance.h"

TestSuite(fault_stress, .init = ft_make_root, .fini = ft_remove_root);

enum {
    THREADS = 8,
    KEYS = 64,
    MAX_BINARY = 3000,
    LIMIT = 48 << 10,
};

static pid_t start_worker(const char *stats_path, int slot, uint64_t seconds)
{
    enum { ARGS = 10 };
    char args[ARGS][PATH_MAX + 16];
    char *argv[ARGS + 1];
    size_t size = sizeof args[0];
    snprintf(args[0], size, "dir=%s", ft_cache);
    snprintf(args[1], size, "stats=%s", stats_path);
    snprintf(args[2], size, "slot=%d", slot);
    snprintf(args[3], size, "seed=%d", slot);
    snprintf(args[4], size, "max=%d", LIMIT);
    snprintf(args[5], size, "keys=%d", KEYS);
    snprintf(args[6], size, "binary=%d", MAX_BINARY);
    snprintf(args[7], size, "threads=%d", THREADS);
    snprintf(args[8], size, "seconds=%llu", (unsigned long long)seconds);
    snprintf(args[9], size, "check=1");
    for (int i = 0; i < ARGS; i++)
        argv[i] = args[i];
    argv[ARGS] = NULL;
    return ft_spawn_worker(ZC_FAULT_WORKER, argv);
}

typedef struct in_process {
    fm_settings settings;
    fm_thread threads[THREADS];
    zc_disk_tier *tiers[THREADS];
    pthread_t ids[THREADS];
} in_process;

/* Even threads share one tier, odd ones have their own. */
static void start_threads(in_process *run, fm_counters *counters)
{
    for (int i = 0; i < THREADS; i++) {
        run->tiers[i] = i % 2 == 0 && i > 0 ? run->tiers[0] : ft_open(LIMIT, NULL);
        run->threads[i] = (fm_thread){.settings = &run->settings,
                                      .tier = run->tiers[i],
                                      .seed = fc_mix(9000 + (uint64_t)i),
                                      .counters = counters};
        cr_assert_eq(pthread_create(&run->ids[i], NULL, fm_run, &run->threads[i]), 0);
    }
}

static void join_threads(in_process *run)
{
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_join(run->ids[i], NULL), 0);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(run->threads[i].failure, FM_OK, "thread %d: %s (%s)", i,
                     run->threads[i].message, ft_worker_exit_meaning(run->threads[i].failure));
    for (int i = 0; i < THREADS; i++)
        if (i == 0 || i % 2 == 1)
            zc_disk_tier_close(run->tiers[i]);
}

static int verify_listed(void *context, const zc_disk_entry_info *info)
{
    zc_disk_tier *tier = context;
    long n = fc_key_number(&info->key, KEYS);
    cr_assert(info->is_zecache && n >= 0, "%s", info->path);
    zc_artifact *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, &info->key, &loaded), ZC_OK, "%s", info->path);
    cr_assert(fc_artifact_matches(loaded, (uint64_t)n, MAX_BINARY), "%s", info->path);
    zc_artifact_unref(loaded);
    return 0;
}

Test(fault_stress, processes_and_threads_keep_the_cache_exact, .timeout = 600)
{
    uint64_t seconds = ft_env_number("ZC_STRESS_SECONDS", 3);
    uint64_t processes = ft_env_number("ZC_STRESS_PROCESSES", 8);
    cr_assert(processes >= 1 && processes <= FM_STATS_SLOTS);
    cr_assert_eq(mkdir(ft_cache, 0700), 0);
    char stats_path[PATH_MAX];
    snprintf(stats_path, sizeof stats_path, "%s/stats", ft_root);
    fm_counters *stats = ft_map_worker_stats(stats_path);

    /* Fork before any thread exists. */
    pid_t workers[FM_STATS_SLOTS];
    for (uint64_t i = 1; i < processes; i++)
        workers[i] = start_worker(stats_path, (int)i, seconds);
    static in_process run;
    run.settings = (fm_settings){.dir = ft_cache,
                                 .max_size = LIMIT,
                                 .keys = KEYS,
                                 .max_binary = MAX_BINARY,
                                 .seconds = (double)seconds,
                                 .check_under_lock = true};
    double started = fm_now();
    start_threads(&run, &stats[0]);
    join_threads(&run);
    for (uint64_t i = 1; i < processes; i++) {
        int status = 0;
        cr_assert_eq(waitpid(workers[i], &status, 0), workers[i]);
        cr_assert(WIFEXITED(status), "worker %llu: status 0x%x", (unsigned long long)i, status);
        cr_assert_eq(WEXITSTATUS(status), 0, "worker %llu: %s", (unsigned long long)i,
                     ft_worker_exit_meaning(WEXITSTATUS(status)));
    }
    double elapsed = fm_now() - started;

    ft_census census = ft_assert_exact_and_clean("after the stress");
    cr_assert_leq(census.total, LIMIT);
    zc_disk_tier *tier = ft_open(LIMIT, NULL);
    cr_assert_eq(zc_disk_tier_foreach(tier, verify_listed, tier), ZC_OK);
    zc_disk_tier_close(tier);
    fm_counters ops = ft_sum_worker_stats(stats);
    uint64_t total_ops = ops.loads + ops.stores + ops.trims + ops.removes + ops.scans + ops.checks;
    cr_log_info("%llu processes x %d threads for %.1f s: %llu operations (%llu loads, %llu hits, "
                "%llu stores, %llu trims, %llu removals, %llu scans, %llu locked checks)",
                (unsigned long long)processes, THREADS, elapsed, (unsigned long long)total_ops,
                (unsigned long long)ops.loads, (unsigned long long)ops.hits,
                (unsigned long long)ops.stores, (unsigned long long)ops.trims,
                (unsigned long long)ops.removes, (unsigned long long)ops.scans,
                (unsigned long long)ops.checks);
    cr_log_info("largest total seen under the lock: %llu of %d; left %llu entries, %llu bytes",
                (unsigned long long)ops.largest_locked_total, LIMIT,
                (unsigned long long)census.entries, (unsigned long long)census.total);
    cr_assert_gt(ops.checks, 0);
    cr_assert_gt(ops.hits, 0);
}
