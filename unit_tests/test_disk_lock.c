/* config.file's lock with a deadline: a process that holds it and does not
 * let go (stopped inside its locked section, or a plain holder that never
 * releases) must not stall anyone else's stores. Stores beside it are
 * skipped (ZC_ERR_BUSY, counted), the program gets its compiled module, and
 * only the first skipped store waits for the deadline: the later ones try
 * the lock once (counted here as flock calls, never timed). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../source/local/fs_ops.h"
#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/cache.h"
#include "zecache/disk_tier.h"

#define ARTIFACT_SIZE 2048
#define DEADLINE_MS 200
#define MODULES 8

static char test_root[128];
static char cache_dir[256];

static void make_test_root(void)
{
    t_make_scratch(test_root, sizeof test_root, "/tmp/zc_lock_test_XXXXXX", cache_dir,
                   sizeof cache_dir);
    cr_assert_eq(mkdir(cache_dir, 0700), 0);
}

static void remove_test_root(void)
{
    t_remove_tree(test_root);
}

TestSuite(lock, .init = make_test_root, .fini = remove_test_root, .timeout = 120);

/* ---- counting flock calls on config.file ---- */

static atomic_long flock_calls;

static int counting_flock(int fd, int operation)
{
    atomic_fetch_add(&flock_calls, 1);
    return zc_fs_ops_default()->flock(fd, operation);
}

static zc_fs_ops counting_ops(void)
{
    zc_fs_ops ops = *zc_fs_ops_default();
    ops.flock = counting_flock;
    return ops;
}

static zc_config config_with_deadline(uint64_t deadline_ms)
{
    zc_config config = t_disk_config(cache_dir, 0, 1);
    config.lock_timeout_ms = deadline_ms;
    config.memory_size = 1 << 20;
    return config;
}

/* A tier with the test's deadline whose flock calls are counted. */
static zc_disk_tier *open_counting_tier(void)
{
    static zc_fs_ops ops;
    ops = counting_ops();
    zc_config config = config_with_deadline(DEADLINE_MS);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open_with_ops(&config, &ops, &tier), ZC_OK);
    return tier;
}

/* ---- holders ---- */

static void config_path(char *path)
{
    snprintf(path, PATH_MAX, "%s/%s", cache_dir, ZC_CONFIG_FILE_NAME);
}

/* A child that takes config.file's lock with flock and keeps it until killed. */
static pid_t start_plain_holder(void)
{
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        char path[PATH_MAX];
        config_path(path);
        int fd = open(path, O_RDWR | O_CREAT, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) != 0)
            _exit(3);
        (void)!write(ready[1], "x", 1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char byte;
    cr_assert_eq(read(ready[0], &byte, 1), 1, "the holder took the lock");
    close(ready[0]);
    return pid;
}

/* The child's store stops itself (SIGSTOP) inside its locked section, just
 * before it publishes the entry. */
static int stopping_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    raise(SIGSTOP);
    return zc_fs_ops_default()->renameat(olddirfd, oldpath, newdirfd, newpath);
}

static pid_t start_stopped_holder(uint64_t seed)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        zc_fs_ops ops = *zc_fs_ops_default();
        ops.renameat = stopping_renameat;
        zc_config config = config_with_deadline(0);
        zc_disk_tier *tier = NULL;
        if (zc_disk_tier_open_with_ops(&config, &ops, &tier) != ZC_OK)
            _exit(3);
        zc_key key = t_key(seed);
        zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, seed);
        _exit(zc_disk_tier_store(tier, &key, artifact, NULL) == ZC_OK ? 0 : 4);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, WUNTRACED), pid);
    cr_assert(WIFSTOPPED(status), "the holder stopped inside its store");
    return pid;
}

static void end_holder(pid_t pid)
{
    kill(pid, SIGKILL);
    kill(pid, SIGCONT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
}

/* ---- the checks ---- */

/* Stores MODULES keys: all skipped, each counted, and flock was polled for
 * one deadline's worth only before the first, once for each after it. */
static void assert_stores_skipped_paying_one_deadline(zc_disk_tier *tier, uint64_t first_seed)
{
    long calls_before_each[MODULES + 1];
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < MODULES; i++) {
        calls_before_each[i] = atomic_load(&flock_calls);
        zc_key key = t_key(first_seed + (uint64_t)i);
        zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, first_seed + (uint64_t)i);
        cr_assert_eq(zc_disk_tier_store(tier, &key, artifact, NULL), ZC_ERR_BUSY, "store %d", i);
        zc_artifact_unref(artifact);
        zc_artifact *loaded = NULL;
        cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_MISS);
    }
    calls_before_each[MODULES] = atomic_load(&flock_calls);
    clock_gettime(CLOCK_MONOTONIC, &end);
    /* A figure, not an assertion: about one deadline in all. */
    cr_log_info("%d stores skipped in %.0f ms (deadline %d ms)", MODULES,
                (double)(end.tv_sec - start.tv_sec) * 1e3 +
                    (double)(end.tv_nsec - start.tv_nsec) / 1e6,
                DEADLINE_MS);
    cr_assert_gt(calls_before_each[1] - calls_before_each[0], 2, "the first store polled");
    for (int i = 1; i < MODULES; i++)
        cr_assert_eq(calls_before_each[i + 1] - calls_before_each[i], 1,
                     "store %d tried the lock once", i);
    cr_assert_eq(zc_disk_tier_lock_timeouts(tier), MODULES);
}

static void assert_store_works_again(zc_disk_tier *tier, uint64_t seed)
{
    zc_key key = t_key(seed);
    zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, seed), *loaded = NULL;
    cr_assert_eq(zc_disk_tier_store(tier, &key, artifact, NULL), ZC_OK);
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_OK);
    t_assert_same_artifact(loaded, artifact);
    zc_artifact_unref(loaded);
    zc_artifact_unref(artifact);
}

Test(lock, stores_beside_a_holder_that_never_lets_go_are_skipped_after_one_deadline)
{
    zc_disk_tier *tier = open_counting_tier();
    pid_t holder = start_plain_holder();
    assert_stores_skipped_paying_one_deadline(tier, 100);
    end_holder(holder);
    /* Free again: the next store's single try succeeds, and waiting resumes. */
    assert_store_works_again(tier, 200);
    assert_store_works_again(tier, 201);
    cr_assert_eq(zc_disk_tier_lock_timeouts(tier), MODULES);
    zc_disk_tier_close(tier);
}

Test(lock, stores_beside_a_process_stopped_inside_its_store_are_skipped)
{
    pid_t holder = start_stopped_holder(300);
    zc_disk_tier *tier = open_counting_tier();
    assert_stores_skipped_paying_one_deadline(tier, 400);
    /* Let it go on: its store completes. */
    cr_assert_eq(kill(holder, SIGCONT), 0);
    int status;
    cr_assert_eq(waitpid(holder, &status, 0), holder);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the stopped store completed");
    zc_artifact *loaded = NULL;
    zc_key key = t_key(300);
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_OK);
    zc_artifact_unref(loaded);
    assert_store_works_again(tier, 500);
    zc_disk_tier_close(tier);
}

/* Removals of bad entries on the load path must not wait without end either. */
Test(lock, a_bad_entry_beside_a_stuck_holder_is_a_miss_without_a_stall)
{
    zc_disk_tier *tier = open_counting_tier();
    assert_store_works_again(tier, 600);
    zc_key key = t_key(600);
    char hex[ZC_KEY_HEX_SIZE], path[PATH_MAX];
    zc_key_to_hex(&key, hex);
    snprintf(path, sizeof path, "%s/%c/%c/%s%s", cache_dir, hex[0], hex[1], hex, ZC_ENTRY_SUFFIX);
    t_write_file(path, "garbage", 7);
    pid_t holder = start_plain_holder();
    zc_artifact *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_MISS);
    cr_assert_eq(zc_disk_tier_lock_timeouts(tier), 1);
    cr_assert(t_exists(path), "not removed without the lock");
    end_holder(holder);
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_MISS);
    cr_assert(!t_exists(path), "removed once the lock is free");
    zc_disk_tier_close(tier);
}

/* ---- through the cache: the program gets its modules ---- */

static zc_status compile_seeded(void *context, zc_artifact **out)
{
    uint64_t *seed = context;
    *out = t_artifact(ARTIFACT_SIZE, *seed);
    return ZC_OK;
}

Test(lock, the_cache_returns_compiled_modules_beside_a_stuck_holder_and_counts_the_skips)
{
    zc_config config = config_with_deadline(DEADLINE_MS);
    config.wait_timeout_ms = 0;
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    pid_t holder = start_plain_holder();
    for (uint64_t seed = 700; seed < 700 + MODULES; seed++) {
        zc_key key = t_key(seed);
        zc_artifact *artifact = NULL, *expected = t_artifact(ARTIFACT_SIZE, seed);
        zc_lookup_outcome outcome;
        cr_assert_eq(
            zc_cache_get_or_compile(cache, &key, NULL, compile_seeded, &seed, &artifact, &outcome),
            ZC_OK);
        cr_assert_eq(outcome, ZC_LOOKUP_COMPILED);
        t_assert_same_artifact(artifact, expected);
        zc_artifact_unref(artifact);
        zc_artifact_unref(expected);
    }
    end_holder(holder);
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    cr_assert_eq(stats.misses, MODULES);
    cr_assert_eq(stats.stores, 0);
    cr_assert_eq(stats.store_errors, MODULES);
    cr_assert_eq(stats.lock_timeouts, MODULES);
    zc_cache_close(cache);
}
