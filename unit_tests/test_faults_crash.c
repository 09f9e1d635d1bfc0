/* Writers killed with SIGKILL at random moments while other processes keep
 * loading, storing, trimming and removing in the same cache. Four
 * fault_worker processes (two threads each, a limit small enough to evict
 * all the time) run; every few milliseconds (a random delay in
 * microseconds) one of them is killed and a new one started. Workers check
 * every hit byte for byte and every listed entry for completeness as they
 * go. Afterwards:
 *  - every entry on disk is complete and verified, and holds exactly its
 *    key's bytes;
 *  - nothing is there but entries, traces, config.file and temp files, and
 *    there are no more temp files than kills;
 *  - the old temp files are removed by a trim (after ZC_TEMP_MAX_AGE_SEC);
 *  - zc_disk_tier_repair_accounting makes config.file exact.
 * ZC_CRASH_KILLS (default 100) sets the number of kills;
 * scripts/crash-soak.sh runs it with 1000 and more. */
#include <criterion/criterion.h>
#include <time.h>

#include "fault_test_support.h"
#include "zecache/disk_maintenance.h"

TestSuite(fault_crash, .init = ft_make_root, .fini = ft_remove_root);

enum {
    WORKERS = 4,
    KEYS = 48,
    MAX_BINARY = 3000,
    LIMIT = 48 << 10,
};

enum { ARG_SLOT = 7, ARG_SEED = 8, ARGS = 9 };

typedef struct crash_run {
    char args[ARGS][PATH_MAX + 16];
    char *argv[ARGS + 1];
    fm_counters *stats;
    pid_t pids[WORKERS];
    uint64_t starts, kills, random_state;
} crash_run;

static void start_worker(crash_run *run, int index)
{
    /* A slot per start, so a killed worker's counts are kept. */
    snprintf(run->args[ARG_SLOT], sizeof run->args[ARG_SLOT], "slot=%llu",
             (unsigned long long)(run->starts % FM_STATS_SLOTS));
    snprintf(run->args[ARG_SEED], sizeof run->args[ARG_SEED], "seed=%llu",
             (unsigned long long)fm_random(&run->random_state));
    run->pids[index] = ft_spawn_worker(ZC_FAULT_WORKER, run->argv);
    run->starts++;
}

static void assert_died_of_kill(pid_t pid, int status)
{
    if (WIFEXITED(status))
        cr_assert_fail("worker %d exited with %d: %s", (int)pid, WEXITSTATUS(status),
                       ft_worker_exit_meaning(WEXITSTATUS(status)));
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "worker %d: status 0x%x",
              (int)pid, status);
}

static void kill_worker(crash_run *run, int index)
{
    pid_t pid = run->pids[index];
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    assert_died_of_kill(pid, status);
    run->kills++;
}

static void prepare_run(crash_run *run, uint64_t seed)
{
    memset(run, 0, sizeof *run);
    run->random_state = seed;
    char stats_path[PATH_MAX];
    snprintf(stats_path, sizeof stats_path, "%s/stats", ft_root);
    run->stats = ft_map_worker_stats(stats_path);
    size_t size = sizeof run->args[0];
    snprintf(run->args[0], size, "dir=%s", ft_cache);
    snprintf(run->args[1], size, "stats=%s", stats_path);
    snprintf(run->args[2], size, "max=%d", LIMIT);
    snprintf(run->args[3], size, "keys=%d", KEYS);
    snprintf(run->args[4], size, "binary=%d", MAX_BINARY);
    snprintf(run->args[5], size, "threads=2");
    snprintf(run->args[6], size, "seconds=600");
    for (int i = 0; i < ARGS; i++)
        run->argv[i] = run->args[i];
    run->argv[ARGS] = NULL;
}

/* ---- what the crashes left ---- */

typedef struct entry_check {
    zc_disk_tier *tier;
    uint64_t keys;
    uint64_t verified;
} entry_check;

static int check_entry(void *context, const zc_disk_entry_info *info)
{
    entry_check *check = context;
    cr_assert(info->is_zecache, "%s is not a zecache entry", info->path);
    long n = fc_key_number(&info->key, check->keys);
    cr_assert_geq(n, 0, "%s holds an unknown key", info->path);
    char reason[256];
    cr_assert_eq(zc_disk_tier_verify_entry(check->tier, info->path, NULL, reason, sizeof reason),
                 ZC_OK, "%s is incomplete: %s", info->path, reason);
    zc_artifact *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(check->tier, &info->key, &loaded), ZC_OK, "%s", info->path);
    cr_assert(fc_artifact_matches(loaded, (uint64_t)n, MAX_BINARY), "%s: wrong bytes", info->path);
    zc_artifact_unref(loaded);
    check->verified++;
    return 0;
}

static int age_temp(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    if (type == FTW_F && ftw->level == 1 &&
        strncmp(path + ftw->base, ZC_TEMP_PREFIX, strlen(ZC_TEMP_PREFIX)) == 0) {
        time_t old = time(NULL) - ZC_TEMP_MAX_AGE_SEC - 60;
        struct timespec times[2] = {{old, 0}, {old, 0}};
        cr_assert_eq(utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW), 0);
    }
    return 0;
}

typedef struct leftovers {
    ft_census census;
    bool recorded_valid;
    uint64_t recorded;
} leftovers;

/* What crashes may leave: only complete entries holding their keys' exact
 * bytes, traces, config.file and at most max_temps temp files; and
 * config.file either exact or marked invalid, never plausible and wrong.
 * Changes nothing but the loads' recency. */
static leftovers check_leftovers(uint64_t keys, uint64_t limit, uint64_t max_temps)
{
    leftovers left;
    zc_disk_tier *tier = ft_open(limit, NULL);
    left.census = ft_take_census();
    cr_assert_eq(left.census.others, 0, "unexpected %s", left.census.other);
    cr_assert_leq(left.census.temps, max_temps, "temp files only from killed writers");
    left.recorded_valid = zc_disk_tier_recorded_size(tier, &left.recorded) == ZC_OK;
    cr_assert(!left.recorded_valid || left.recorded == left.census.total,
              "config.file %llu, real total %llu", (unsigned long long)left.recorded,
              (unsigned long long)left.census.total);
    uint64_t scanned = 0, entries = 0;
    cr_assert_eq(zc_disk_tier_scanned_size(tier, &scanned, &entries), ZC_OK);
    cr_assert_eq(scanned, left.census.total);
    entry_check check = {tier, keys, 0};
    cr_assert_eq(zc_disk_tier_foreach(tier, check_entry, &check), ZC_OK);
    cr_assert_eq(check.verified, left.census.entries);
    zc_disk_tier_close(tier);
    return left;
}

/* Repairs config.file, then sweeps the temp files (aged past
 * ZC_TEMP_MAX_AGE_SEC) with a trim: the cache is then exact and clean. */
static void repair_and_sweep(uint64_t limit)
{
    zc_disk_tier *tier = ft_open(limit, NULL);
    uint64_t entries = ft_take_census().entries;
    uint64_t repaired = 0, after = 0;
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, &repaired), ZC_OK);
    cr_assert_eq(repaired, ft_take_census().total);
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &after), ZC_OK);
    cr_assert_eq(after, repaired, "after repair, recorded == scanned");
    cr_assert_eq(nftw(ft_cache, age_temp, 16, FTW_PHYS), 0);
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    ft_census swept = ft_assert_exact_and_clean("after the sweep of old temp files");
    cr_assert_eq(swept.entries, entries, "the sweep removes no entry");
    zc_disk_tier_close(tier);
}

static void report(const crash_run *run, const leftovers *left)
{
    fm_counters ops = ft_sum_worker_stats(run->stats);
    cr_log_info("%llu kills of %llu worker processes; %llu loads (%llu hits), %llu stores, "
                "%llu trims, %llu removals, %llu scans",
                (unsigned long long)run->kills, (unsigned long long)run->starts,
                (unsigned long long)ops.loads, (unsigned long long)ops.hits,
                (unsigned long long)ops.stores, (unsigned long long)ops.trims,
                (unsigned long long)ops.removes, (unsigned long long)ops.scans);
    cr_log_info("left: %llu entries (%llu bytes, limit %d), %llu traces, %llu temp files; "
                "config.file %s%llu before repair",
                (unsigned long long)left->census.entries, (unsigned long long)left->census.total,
                LIMIT, (unsigned long long)left->census.traces,
                (unsigned long long)left->census.temps, left->recorded_valid ? "" : "invalid, ",
                (unsigned long long)left->recorded);
}

Test(fault_crash, killed_writers_leave_only_complete_entries, .timeout = 1800)
{
    uint64_t target = ft_env_number("ZC_CRASH_KILLS", 100);
    uint64_t max_delay_us = ft_env_number("ZC_CRASH_MAX_DELAY_US", 20000);
    uint64_t seed = ft_env_number("ZC_CRASH_SEED", (uint64_t)time(NULL));
    cr_log_info("seed %llu (ZC_CRASH_SEED), %llu kills, delays up to %llu us",
                (unsigned long long)seed, (unsigned long long)target,
                (unsigned long long)max_delay_us);
    static crash_run run;
    prepare_run(&run, seed);
    cr_assert_eq(mkdir(ft_cache, 0700), 0);
    double started = fm_now();
    for (int i = 0; i < WORKERS; i++)
        start_worker(&run, i);
    while (run.kills < target) {
        usleep((useconds_t)(fm_random(&run.random_state) % (max_delay_us + 1)));
        int status = 0;
        pid_t ended = waitpid(-1, &status, WNOHANG);
        cr_assert_leq(ended, 0, "a worker ended by itself: status 0x%x (%s)", status,
                      WIFEXITED(status) ? ft_worker_exit_meaning(WEXITSTATUS(status)) : "signal");
        int index = (int)(fm_random(&run.random_state) % WORKERS);
        kill_worker(&run, index);
        start_worker(&run, index);
    }
    for (int i = 0; i < WORKERS; i++)
        kill_worker(&run, i);
    cr_log_info("%.1f s of killing", fm_now() - started);
    leftovers left = check_leftovers(KEYS, LIMIT, run.kills);
    repair_and_sweep(LIMIT);
    report(&run, &left);
}

/* ---- a crash at every system call ---- */

enum { SCRIPT_KEYS = 8, SCRIPT_LIMIT = 6 << 10 };

/* Runs fm_script once in a fault_worker that dies at system call crash_at
 * (0: never); returns its wait status. */
static int run_script(const char *stats_path, uint64_t crash_at)
{
    enum { ARGS = 8 };
    char args[ARGS][PATH_MAX + 16];
    char *argv[ARGS + 1];
    size_t size = sizeof args[0];
    snprintf(args[0], size, "dir=%s", ft_cache);
    snprintf(args[1], size, "stats=%s", stats_path);
    snprintf(args[2], size, "max=%d", SCRIPT_LIMIT);
    snprintf(args[3], size, "keys=%d", SCRIPT_KEYS);
    snprintf(args[4], size, "binary=%d", MAX_BINARY);
    snprintf(args[5], size, "script=1");
    snprintf(args[6], size, "crash_at=%llu", (unsigned long long)crash_at);
    snprintf(args[7], size, "slot=0");
    for (int i = 0; i < ARGS; i++)
        argv[i] = args[i];
    argv[ARGS] = NULL;
    pid_t pid = ft_spawn_worker(ZC_FAULT_WORKER, argv);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

static void assert_script_passed(int status, const char *context)
{
    cr_assert(WIFEXITED(status), "%s: status 0x%x", context, status);
    cr_assert_eq(WEXITSTATUS(status), 0, "%s: %s", context,
                 ft_worker_exit_meaning(WEXITSTATUS(status)));
}

/* The same script in this process: cheaper than another worker. */
static void run_script_here(void)
{
    fm_settings settings = {
        .dir = ft_cache, .max_size = SCRIPT_LIMIT, .keys = SCRIPT_KEYS, .max_binary = MAX_BINARY};
    fm_counters counters;
    memset(&counters, 0, sizeof counters);
    fm_thread thread = {
        .settings = &settings, .tier = ft_open(SCRIPT_LIMIT, NULL), .counters = &counters};
    cr_assert_eq(fm_script(&thread), FM_OK, "the script after the crash: %s", thread.message);
    zc_disk_tier_close(thread.tier);
}

static void fresh_cache(void)
{
    if (t_exists(ft_cache))
        cr_assert_eq(nftw(ft_cache, ft_remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
    cr_assert_eq(mkdir(ft_cache, 0700), 0);
}

/* One writer, a fixed script of stores that evict, loads, removals and a
 * trim, killed before its 1st, 2nd, ... system call in turn. After each
 * crash the cache holds only complete entries and at most one temp file,
 * and config.file is exact or invalid; the same script then runs cleanly on
 * it and leaves config.file exact with no repair. */
Test(fault_crash, crash_before_every_system_call_leaves_a_consistent_cache, .timeout = 1800)
{
    char stats_path[PATH_MAX];
    snprintf(stats_path, sizeof stats_path, "%s/stats", ft_root);
    fm_counters *stats = ft_map_worker_stats(stats_path);
    fresh_cache();
    assert_script_passed(run_script(stats_path, 0), "the script without a crash");
    uint64_t calls = stats[0].fs_calls;
    cr_assert_gt(calls, 100);
    uint64_t temps_left = 0, invalid = 0;
    for (uint64_t crash_at = 1; crash_at <= calls; crash_at++) {
        fresh_cache();
        int status = run_script(stats_path, crash_at);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "crash at call %llu: status 0x%x", (unsigned long long)crash_at, status);
        leftovers left = check_leftovers(SCRIPT_KEYS, SCRIPT_LIMIT, 1);
        temps_left += left.census.temps;
        invalid += !left.recorded_valid;
        run_script_here();
        uint64_t recorded = 0;
        ft_census census = ft_take_census();
        cr_assert(ft_config_value(&recorded), "crash at call %llu", (unsigned long long)crash_at);
        cr_assert_eq(recorded, census.total, "crash at call %llu: exact after the next stores",
                     (unsigned long long)crash_at);
        repair_and_sweep(SCRIPT_LIMIT);
    }
    cr_log_info("%llu crash points (one per system call of the script): %llu left a temp file, "
                "%llu left config.file marked invalid, none left it wrong",
                (unsigned long long)calls, (unsigned long long)temps_left,
                (unsigned long long)invalid);
}
