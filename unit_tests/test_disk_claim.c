/* Cross-process single flight: the per-key build lock of the disk tier, with
 * real processes. A "holder" child claims a key and then does what the test
 * asks (stores after a pause, gives up, waits to be told, or waits to be
 * killed); the test process claims the same key and checks the outcome, and
 * that no lock file is left behind. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../source/local/fs_ops.h"
#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/cache.h"
#include "zecache/disk_tier.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_claim.h"

#define LONG_WAIT_MS 60000 /* never reached when the code is right */
#define ARTIFACT_SIZE 4096

static char test_root[128];
static char cache_dir[256];

static void make_test_root(void)
{
    t_make_scratch(test_root, sizeof test_root, "/tmp/zc_claim_test_XXXXXX", cache_dir,
                   sizeof cache_dir);
}

static void remove_test_root(void)
{
    t_remove_tree(test_root);
}

TestSuite(claim, .init = make_test_root, .fini = remove_test_root, .timeout = 120);

/* ---- helpers ---- */

static zc_config config_for(uint64_t max_size)
{
    return t_disk_config(cache_dir, max_size, 3);
}

static zc_disk_tier *open_tier_with(uint64_t max_size, const zc_fs_ops *ops)
{
    zc_config config = config_for(max_size);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open_with_ops(&config, ops, &tier), ZC_OK);
    return tier;
}

static zc_disk_tier *open_tier(void)
{
    return open_tier_with(0, NULL);
}

/* <hex><suffix> where key's entry goes. */
static void path_beside_entry(char *out, const zc_key *key, const char *suffix)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(out, PATH_MAX, "%s/%c/%c/%s%s", cache_dir, hex[0], hex[1], hex, suffix);
}

static void lock_path(char *out, const zc_key *key)
{
    path_beside_entry(out, key, ZC_LOCK_SUFFIX);
}

static int lock_files;
static int count_lock_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    size_t length = strlen(path), suffix = strlen(ZC_LOCK_SUFFIX);
    lock_files +=
        type == FTW_F && length > suffix && strcmp(path + length - suffix, ZC_LOCK_SUFFIX) == 0;
    return 0;
}

static int lock_files_in_cache(void)
{
    lock_files = 0;
    cr_assert_eq(nftw(cache_dir, count_lock_file, 16, FTW_PHYS), 0);
    return lock_files;
}

static void set_old_mtime(const char *path)
{
    time_t old = time(NULL) - 10 * ZC_TEMP_MAX_AGE_SEC;
    struct timespec times[2] = {{old, 0}, {old, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW), 0, "%s", path);
}

static void assert_loads_artifact(zc_disk_tier *tier, const zc_key *key, uint64_t seed)
{
    zc_artifact *loaded = NULL, *expected = t_artifact(ARTIFACT_SIZE, seed);
    cr_assert_eq(zc_disk_tier_load(tier, key, &loaded), ZC_OK);
    t_assert_same_artifact(loaded, expected);
    zc_artifact_unref(loaded);
    zc_artifact_unref(expected);
}

static void store_artifact(zc_disk_tier *tier, const zc_key *key, uint64_t seed)
{
    zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, seed);
    cr_assert_eq(zc_disk_tier_store(tier, key, artifact, NULL), ZC_OK);
    zc_artifact_unref(artifact);
}

/* ---- the holder process ---- */

typedef enum holder_plan {
    STORE_AFTER_A_PAUSE,   /* the normal compile: store, then release */
    GIVE_UP_AFTER_A_PAUSE, /* a failed compile: release without storing */
    HOLD_UNTIL_TOLD,       /* release when the test closes its pipe */
    HOLD_UNTIL_KILLED,
} holder_plan;

typedef struct holder {
    pid_t pid;
    int tell_fd; /* closing it tells a HOLD_UNTIL_TOLD holder to release */
} holder;

static void pause_a_little(void)
{
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
}

/* In the child: no Criterion assertions, only an exit code. */
static _Noreturn void run_holder(const zc_key *key, holder_plan plan, uint64_t seed, int ready_fd,
                                 int told_fd)
{
    zc_config config = config_for(0);
    zc_disk_tier *tier = NULL;
    zc_disk_claim claim;
    zc_disk_claim_result result;
    if (zc_disk_tier_open(&config, &tier) != ZC_OK ||
        zc_disk_tier_claim(tier, key, 0, &result, &claim) != ZC_OK || result != ZC_DISK_CLAIMED)
        _exit(3);
    if (write(ready_fd, "r", 1) != 1)
        _exit(4);
    char byte;
    switch (plan) {
    case STORE_AFTER_A_PAUSE: {
        pause_a_little();
        zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, seed);
        if (zc_disk_tier_store(tier, key, artifact, NULL) != ZC_OK)
            _exit(5);
        zc_artifact_unref(artifact);
        break;
    }
    case GIVE_UP_AFTER_A_PAUSE:
        pause_a_little();
        break;
    case HOLD_UNTIL_TOLD:
        while (read(told_fd, &byte, 1) > 0)
            continue;
        break;
    case HOLD_UNTIL_KILLED:
        for (;;)
            pause();
    }
    zc_disk_tier_release(tier, &claim);
    zc_disk_tier_close(tier);
    _exit(0);
}

/* Returns once the child holds key's claim. */
static holder start_holder(const zc_key *key, holder_plan plan, uint64_t seed)
{
    int ready[2], told[2];
    cr_assert_eq(pipe(ready), 0);
    cr_assert_eq(pipe(told), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(ready[0]);
        close(told[1]);
        run_holder(key, plan, seed, ready[1], told[0]);
    }
    close(ready[1]);
    close(told[0]);
    char byte;
    cr_assert_eq(read(ready[0], &byte, 1), 1, "the holder could not claim the key");
    close(ready[0]);
    return (holder){pid, told[1]};
}

/* Tells the holder to finish and checks how it ended. */
static void finish_holder(holder *h, bool killed)
{
    close(h->tell_fd);
    int status;
    cr_assert_eq(waitpid(h->pid, &status, 0), h->pid);
    if (killed)
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    else
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "holder status %d", status);
}

static void kill_holder(holder *h)
{
    cr_assert_eq(kill(h->pid, SIGKILL), 0);
    finish_holder(h, true);
}

/* A process that kills the holder a little later, while the test waits. */
static pid_t kill_later(pid_t victim)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        pause_a_little();
        _exit(kill(victim, SIGKILL) == 0 ? 0 : 1);
    }
    return pid;
}

static zc_disk_claim_result claim_of(zc_disk_tier *tier, const zc_key *key, uint64_t timeout_ms,
                                     zc_disk_claim *claim)
{
    zc_disk_claim_result result = (zc_disk_claim_result)-1;
    cr_assert_eq(zc_disk_tier_claim(tier, key, timeout_ms, &result, claim), ZC_OK);
    return result;
}

/* ---- in one process ---- */

Test(claim, claim_holds_a_lock_file_that_release_removes)
{
    zc_disk_tier *tier = open_tier();
    zc_key key = t_key(1);
    char path[PATH_MAX];
    lock_path(path, &key);
    zc_disk_claim claim;
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_CLAIMED);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 07777, 0600);
    zc_disk_tier_release(tier, &claim);
    cr_assert_eq(claim.lock_fd, -1);
    cr_assert_not(t_exists(path));

    /* Claimed again, stored: from then on the key is ready without a lock. */
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_CLAIMED);
    store_artifact(tier, &key, 1);
    zc_disk_tier_release(tier, &claim);
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_READY);
    cr_assert_eq(claim.lock_fd, -1);
    zc_disk_tier_release(tier, &claim);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(tier);
}

Test(claim, second_claim_in_the_same_process_is_excluded_too)
{
    zc_disk_tier *first = open_tier(), *second = open_tier();
    zc_key key = t_key(2);
    zc_disk_claim held, other;
    cr_assert_eq(claim_of(first, &key, 0, &held), ZC_DISK_CLAIMED);
    cr_assert_eq(claim_of(second, &key, 20, &other), ZC_DISK_TIMED_OUT);
    cr_assert_eq(other.lock_fd, -1);
    zc_disk_tier_release(second, &other); /* holds nothing: removes nothing */
    cr_assert_eq(lock_files_in_cache(), 1);
    zc_disk_tier_release(first, &held);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(first);
    zc_disk_tier_close(second);
}

Test(claim, release_of_nothing_and_bad_arguments)
{
    zc_disk_tier *tier = open_tier();
    zc_key key = t_key(3);
    zc_disk_claim claim;
    zc_disk_claim_result result;
    cr_assert_eq(zc_disk_tier_claim(NULL, &key, 0, &result, &claim), ZC_ERR_INVALID_ARG);
    cr_assert_eq(claim.lock_fd, -1);
    cr_assert_eq(zc_disk_tier_claim(tier, NULL, 0, &result, &claim), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_disk_tier_claim(tier, &key, 0, NULL, &claim), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_disk_tier_claim(tier, &key, 0, &result, NULL), ZC_ERR_INVALID_ARG);
    zc_disk_tier_release(tier, &claim);
    zc_disk_tier_release(tier, NULL);
    zc_disk_tier_release(NULL, &claim);
    zc_disk_tier_close(tier);
}

/* ---- with another process ---- */

Test(claim, waiter_gets_ready_when_the_holder_stores)
{
    zc_disk_tier *tier = open_tier();
    zc_key key = t_key(10);
    holder h = start_holder(&key, STORE_AFTER_A_PAUSE, 10);
    zc_disk_claim claim;
    cr_assert_eq(claim_of(tier, &key, LONG_WAIT_MS, &claim), ZC_DISK_READY);
    zc_disk_tier_release(tier, &claim);
    assert_loads_artifact(tier, &key, 10);
    finish_holder(&h, false);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(tier);
}

/* The holder's compile failed: a waiter takes over, on the lock file that is
 * at the lock path (not on the one the holder unlinked). */
Test(claim, waiter_takes_over_when_the_holder_gives_up)
{
    zc_disk_tier *tier = open_tier();
    zc_key key = t_key(11);
    char path[PATH_MAX];
    lock_path(path, &key);
    holder h = start_holder(&key, GIVE_UP_AFTER_A_PAUSE, 0);
    zc_disk_claim claim;
    cr_assert_eq(claim_of(tier, &key, LONG_WAIT_MS, &claim), ZC_DISK_CLAIMED);
    struct stat held, named;
    cr_assert_eq(fstat(claim.lock_fd, &held), 0);
    cr_assert_eq(lstat(path, &named), 0);
    cr_assert_eq(held.st_ino, named.st_ino);
    cr_assert_eq(held.st_nlink, 1);
    finish_holder(&h, false);
    zc_disk_tier_release(tier, &claim);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(tier);
}

Test(claim, holder_killed_while_waited_for_hands_over_the_claim)
{
    zc_disk_tier *tier = open_tier();
    zc_key key = t_key(12);
    holder h = start_holder(&key, HOLD_UNTIL_KILLED, 0);
    pid_t killer = kill_later(h.pid);
    zc_disk_claim claim;
    cr_assert_eq(claim_of(tier, &key, LONG_WAIT_MS, &claim), ZC_DISK_CLAIMED);
    int status;
    cr_assert_eq(waitpid(killer, &status, 0), killer);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    finish_holder(&h, true);
    /* The dead holder's lock file was taken over, and goes with the release. */
    cr_assert_eq(lock_files_in_cache(), 1);
    store_artifact(tier, &key, 12);
    zc_disk_tier_release(tier, &claim);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(tier);
}

Test(claim, wait_times_out_while_the_holder_keeps_it)
{
    zc_disk_tier *tier = open_tier();
    zc_key key = t_key(13);
    holder h = start_holder(&key, HOLD_UNTIL_TOLD, 0);
    zc_disk_claim claim;
    cr_assert_eq(claim_of(tier, &key, 30, &claim), ZC_DISK_TIMED_OUT);
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_TIMED_OUT);
    zc_disk_tier_release(tier, &claim);
    cr_assert_eq(lock_files_in_cache(), 1); /* the holder's, still held */
    finish_holder(&h, false);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(tier);
}

/* ---- lock files left by killed processes ---- */

/* A claim whose holder was killed: its lock file stays, unlocked. */
static void leave_dead_lock(const zc_key *key, bool old)
{
    holder h = start_holder(key, HOLD_UNTIL_KILLED, 0);
    kill_holder(&h);
    char path[PATH_MAX];
    lock_path(path, key);
    cr_assert(t_exists(path));
    if (old)
        set_old_mtime(path);
}

Test(claim, next_claimant_removes_a_dead_processes_lock_file)
{
    zc_disk_tier *tier = open_tier();
    zc_key key = t_key(20);
    leave_dead_lock(&key, false);
    zc_disk_claim claim;
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_CLAIMED);
    zc_disk_tier_release(tier, &claim);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(tier);
}

Test(claim, lock_files_are_not_entries)
{
    zc_disk_tier *tier = open_tier();
    zc_key stored = t_key(21), locked = t_key(22);
    store_artifact(tier, &stored, 21);
    leave_dead_lock(&locked, true);
    uint64_t scanned = 0, entries = 0, recorded = 0;
    cr_assert_eq(zc_disk_tier_scanned_size(tier, &scanned, &entries), ZC_OK);
    cr_assert_eq(entries, 1);
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(recorded, scanned);
    zc_disk_tier_close(tier);
}

Test(claim, trim_removes_old_unheld_lock_files_only)
{
    zc_disk_tier *tier = open_tier();
    zc_key dead_old = t_key(30), dead_young = t_key(31), held_old = t_key(32);
    leave_dead_lock(&dead_old, true);
    leave_dead_lock(&dead_young, false);
    holder h = start_holder(&held_old, HOLD_UNTIL_TOLD, 0);
    char path[PATH_MAX];
    lock_path(path, &held_old);
    set_old_mtime(path);
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    lock_path(path, &dead_old);
    cr_assert_not(t_exists(path));
    lock_path(path, &dead_young);
    cr_assert(t_exists(path));
    lock_path(path, &held_old);
    cr_assert(t_exists(path));
    finish_holder(&h, false);
    cr_assert_not(t_exists(path));
    zc_disk_tier_close(tier);
}

Test(claim, eviction_removes_old_unheld_lock_files)
{
    /* Room for about two entries: the third store evicts, and sweeps. */
    zc_disk_tier *tier = open_tier_with(3 * ARTIFACT_SIZE, NULL);
    zc_key dead = t_key(40);
    leave_dead_lock(&dead, true);
    for (uint64_t seed = 41; seed <= 43; seed++) {
        zc_key key = t_key(seed);
        store_artifact(tier, &key, seed);
    }
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(tier);
}

Test(claim, clear_removes_unheld_lock_files_of_any_age)
{
    zc_disk_tier *tier = open_tier();
    zc_key dead = t_key(50), held = t_key(51);
    leave_dead_lock(&dead, false);
    holder h = start_holder(&held, HOLD_UNTIL_TOLD, 0);
    cr_assert_eq(zc_disk_tier_clear(tier), ZC_OK);
    cr_assert_eq(lock_files_in_cache(), 1); /* a build going on keeps its lock */
    finish_holder(&h, false);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier_close(tier);
}

/* ---- when no lock can be had ---- */

static int failing_errno;
static int openat_failing_locks(int dirfd, const char *path, int flags, mode_t mode)
{
    size_t length = strlen(path), suffix = strlen(ZC_LOCK_SUFFIX);
    if (length > suffix && strcmp(path + length - suffix, ZC_LOCK_SUFFIX) == 0) {
        errno = failing_errno;
        return -1;
    }
    return zc_fs_ops_default()->openat(dirfd, path, flags, mode);
}

static int flock_failing(int fd, int operation)
{
    (void)fd, (void)operation;
    errno = failing_errno;
    return -1;
}

Test(claim, unavailable_lock_is_an_io_error_holding_nothing)
{
    zc_fs_ops ops = *zc_fs_ops_default();
    ops.openat = openat_failing_locks;
    failing_errno = EACCES;
    zc_disk_tier *tier = open_tier_with(0, &ops);
    zc_key key = t_key(60);
    zc_disk_claim claim;
    zc_disk_claim_result result;
    cr_assert_eq(zc_disk_tier_claim(tier, &key, LONG_WAIT_MS, &result, &claim), ZC_ERR_IO);
    cr_assert_eq(claim.lock_fd, -1);
    cr_assert_eq(claim.dir_fd, -1);
    zc_disk_tier_close(tier);

    ops = *zc_fs_ops_default();
    ops.flock = flock_failing;
    failing_errno = ENOLCK; /* e.g. NFS without lock support */
    tier = open_tier_with(0, &ops);
    cr_assert_eq(zc_disk_tier_claim(tier, &key, LONG_WAIT_MS, &result, &claim), ZC_ERR_IO);
    cr_assert_eq(claim.lock_fd, -1);
    cr_assert_eq(claim.dir_fd, -1);
    zc_disk_tier_close(tier);
}

/* ---- through the cache ---- */

static zc_cache *open_cache(uint64_t wait_timeout_ms)
{
    zc_config config = config_for(0);
    config.memory_size = 1 << 20;
    config.wait_timeout_ms = wait_timeout_ms;
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    cr_assert_not_null(zc_cache_disk_dir(cache));
    return cache;
}

static zc_lookup_outcome lookup(zc_cache *cache, const zc_key *key, t_counted_compile *compile,
                                uint64_t expected_seed)
{
    zc_artifact *artifact = NULL, *expected = t_artifact(ARTIFACT_SIZE, expected_seed);
    zc_lookup_outcome outcome;
    cr_assert_eq(
        zc_cache_get_or_compile(cache, key, NULL, t_compile_counted, compile, &artifact, &outcome),
        ZC_OK);
    t_assert_same_artifact(artifact, expected);
    zc_artifact_unref(artifact);
    zc_artifact_unref(expected);
    return outcome;
}

Test(claim, cache_waits_for_another_process_instead_of_compiling)
{
    zc_cache *cache = open_cache(LONG_WAIT_MS);
    zc_key key = t_key(70);
    holder h = start_holder(&key, STORE_AFTER_A_PAUSE, 70);
    t_counted_compile compile = {0, 99, ARTIFACT_SIZE};
    cr_assert_eq(lookup(cache, &key, &compile, 70), ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(compile.calls, 0);
    finish_holder(&h, false);
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    cr_assert_eq(stats.disk_hits, 1);
    cr_assert_eq(stats.misses, 0);
    cr_assert_eq(stats.stores, 0);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_cache_close(cache);
}

Test(claim, cache_compiles_and_stores_when_the_holder_dies)
{
    zc_cache *cache = open_cache(LONG_WAIT_MS);
    zc_key key = t_key(71);
    holder h = start_holder(&key, HOLD_UNTIL_KILLED, 0);
    pid_t killer = kill_later(h.pid);
    t_counted_compile compile = {0, 71, ARTIFACT_SIZE};
    cr_assert_eq(lookup(cache, &key, &compile, 71), ZC_LOOKUP_COMPILED);
    cr_assert_eq(compile.calls, 1);
    cr_assert_eq(waitpid(killer, NULL, 0), killer);
    finish_holder(&h, true);
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    cr_assert_eq(stats.stores, 1);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_cache_close(cache);
}

Test(claim, cache_without_waiting_compiles_at_once)
{
    zc_cache *cache = open_cache(0);
    zc_key key = t_key(72);
    holder h = start_holder(&key, HOLD_UNTIL_TOLD, 0);
    t_counted_compile compile = {0, 72, ARTIFACT_SIZE};
    cr_assert_eq(lookup(cache, &key, &compile, 72), ZC_LOOKUP_COMPILED);
    cr_assert_eq(compile.calls, 1);
    finish_holder(&h, false);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_cache_close(cache);
}

Test(claim, cache_compiles_after_the_wait_times_out)
{
    zc_cache *cache = open_cache(30);
    zc_key key = t_key(73);
    holder h = start_holder(&key, HOLD_UNTIL_TOLD, 0);
    t_counted_compile compile = {0, 73, ARTIFACT_SIZE};
    cr_assert_eq(lookup(cache, &key, &compile, 73), ZC_LOOKUP_COMPILED);
    cr_assert_eq(compile.calls, 1);
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    cr_assert_eq(stats.stores, 1);
    finish_holder(&h, false);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_cache_close(cache);
}

/* Another process stores the key while this one compiles it (a wait that
 * timed out, say): this one's store finds the entry there and is neither a
 * store nor an error. */
static zc_status compile_while_another_stores(void *context, zc_artifact **out)
{
    const zc_key *key = context;
    zc_config config = config_for(0);
    zc_disk_tier *other = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &other), ZC_OK);
    zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, 74);
    cr_assert_eq(zc_disk_tier_store(other, key, artifact, NULL), ZC_OK);
    zc_disk_tier_close(other);
    *out = artifact;
    return ZC_OK;
}

Test(claim, a_store_that_finds_the_entry_there_is_not_counted)
{
    zc_cache *cache = open_cache(0);
    zc_key key = t_key(74);
    zc_artifact *artifact = NULL;
    zc_lookup_outcome outcome;
    cr_assert_eq(zc_cache_get_or_compile(cache, &key, NULL, compile_while_another_stores, &key,
                                         &artifact, &outcome),
                 ZC_OK);
    zc_artifact_unref(artifact);
    cr_assert_eq(outcome, ZC_LOOKUP_COMPILED);
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    cr_assert_eq(stats.misses, 1);
    cr_assert_eq(stats.stores, 0);
    cr_assert_eq(stats.store_errors, 0);
    zc_cache_close(cache);
}

/* ---- a holder that fails leaves a mark: its waiters compile together ---- */

static void mark_path(char *out, const zc_key *key)
{
    path_beside_entry(out, key, ZC_FAILED_SUFFIX);
}

Test(claim, a_fresh_mark_sends_claimants_to_compile_and_a_stale_one_is_cleared)
{
    zc_disk_tier *tier = open_tier();
    zc_key key = t_key(80);
    char mark[PATH_MAX];
    mark_path(mark, &key);
    zc_disk_claim claim;
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_CLAIMED);
    zc_disk_tier_mark_not_stored(tier, &claim);
    zc_disk_tier_release(tier, &claim);
    struct stat st;
    cr_assert_eq(lstat(mark, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 07777, 0600);

    /* However long it would wait: not a moment, and holding nothing. */
    cr_assert_eq(claim_of(tier, &key, LONG_WAIT_MS, &claim), ZC_DISK_NOT_STORED);
    cr_assert_eq(claim.lock_fd, -1);
    zc_disk_tier_release(tier, &claim);

    /* Aged: ignored, and the next holder removes it. */
    set_old_mtime(mark);
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_CLAIMED);
    cr_assert_not(t_exists(mark));
    zc_disk_tier_mark_not_stored(tier, &claim);
    zc_disk_tier_release(tier, &claim);
    /* Nor is a mark from the future trusted. */
    time_t later = time(NULL) + 3600;
    struct timespec times[2] = {{later, 0}, {later, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, mark, times, 0), 0);
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_CLAIMED);
    zc_disk_tier_release(tier, &claim);

    /* A stored entry wins over a mark; marks go with sweeps and clear. */
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_CLAIMED);
    zc_disk_tier_mark_not_stored(tier, &claim);
    store_artifact(tier, &key, 80);
    zc_disk_tier_release(tier, &claim);
    cr_assert_eq(claim_of(tier, &key, 0, &claim), ZC_DISK_READY);
    zc_disk_tier_release(tier, &claim);
    zc_key other = t_key(81);
    char other_mark[PATH_MAX];
    mark_path(other_mark, &other);
    cr_assert_eq(claim_of(tier, &other, 0, &claim), ZC_DISK_CLAIMED);
    zc_disk_tier_mark_not_stored(tier, &claim);
    zc_disk_tier_release(tier, &claim);
    set_old_mtime(other_mark);
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    cr_assert_not(t_exists(other_mark), "a sweep removes stale marks");
    cr_assert(t_exists(mark), "and keeps fresh ones");
    cr_assert_eq(zc_disk_tier_clear(tier), ZC_OK);
    cr_assert_not(t_exists(mark));
    zc_disk_tier_close(tier);
}

/* The ranks of a job probing a module that fails (or that cannot be stored):
 * one holder fails, WAITERS processes were waiting for it. Each waiter's
 * compile blocks until every waiter is compiling: they all get there only
 * when they compile together, not one after another behind the lock. */
enum { WAITERS = 4, BARRIER_POLLS = 5000 /* of 2 ms: never reached when right */ };

typedef struct rendezvous {
    atomic_int holder_compiling;
    atomic_int waiters_started; /* about to look the key up */
    atomic_int compiling;       /* waiters inside their compile */
    atomic_int most_at_once;
} rendezvous;

static rendezvous *shared;

static void pause_ms(long ms)
{
    struct timespec pause = {0, ms * 1000 * 1000};
    nanosleep(&pause, NULL);
}

/* All waiters in their compile at once, or false after the bound. */
static bool meet_the_others(void)
{
    int now = atomic_fetch_add(&shared->compiling, 1) + 1;
    int most = atomic_load(&shared->most_at_once);
    while (now > most && !atomic_compare_exchange_weak(&shared->most_at_once, &most, now))
        continue;
    for (int i = 0; i < BARRIER_POLLS && atomic_load(&shared->most_at_once) < WAITERS; i++)
        pause_ms(2);
    return atomic_load(&shared->most_at_once) == WAITERS;
}

static zc_status compile_failing_with_the_others(void *context, zc_artifact **out)
{
    (void)context, (void)out;
    return meet_the_others() ? ZC_ERR_BUILD : ZC_ERR_IO;
}

static zc_status compile_small_with_the_others(void *context, zc_artifact **out)
{
    if (!meet_the_others())
        return ZC_ERR_IO;
    *out = t_artifact(ARTIFACT_SIZE, *(const uint64_t *)context);
    return ZC_OK;
}

typedef struct failing_holder {
    bool too_large; /* builds, but what it builds cannot be stored */
} failing_holder;

static zc_status compile_failing_once_waiters_wait(void *context, zc_artifact **out)
{
    const failing_holder *holder = context;
    atomic_store(&shared->holder_compiling, 1);
    while (atomic_load(&shared->waiters_started) < WAITERS)
        pause_ms(1);
    pause_ms(100); /* they are polling the lock by now (if not, they see the mark) */
    if (!holder->too_large)
        return ZC_ERR_BUILD;
    *out = t_artifact(4 * ARTIFACT_SIZE, 1);
    return ZC_OK;
}

static zc_cache *open_cache_limited(uint64_t max_size)
{
    zc_config config = config_for(max_size);
    config.memory_size = 1 << 20;
    config.wait_timeout_ms = LONG_WAIT_MS;
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    return cache;
}

/* In a child: waits for the holder, then looks the key up; exits 0 when its
 * compile ran together with every other waiter's and returned what it had. */
static _Noreturn void run_waiter(const zc_key *key, bool build_fails, uint64_t max_size)
{
    while (atomic_load(&shared->holder_compiling) == 0)
        pause_ms(1);
    zc_cache *cache = open_cache_limited(max_size);
    atomic_fetch_add(&shared->waiters_started, 1);
    uint64_t seed = 90;
    zc_artifact *artifact = NULL;
    zc_status status = zc_cache_get_or_compile(cache, key, NULL,
                                               build_fails ? compile_failing_with_the_others
                                                           : compile_small_with_the_others,
                                               &seed, &artifact, NULL);
    zc_artifact_unref(artifact);
    _exit(status == (build_fails ? ZC_ERR_BUILD : ZC_OK) ? 0 : 1);
}

static void assert_waiters_compile_together(bool too_large)
{
    shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(shared, MAP_FAILED);
    memset(shared, 0, sizeof *shared);
    uint64_t max_size = too_large ? 2 * ARTIFACT_SIZE : 0;
    zc_key key = t_key(too_large ? 91 : 90);
    pid_t waiters[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        waiters[i] = fork();
        cr_assert_geq(waiters[i], 0);
        if (waiters[i] == 0)
            run_waiter(&key, !too_large, max_size);
    }
    zc_cache *cache = open_cache_limited(max_size);
    failing_holder holder = {too_large};
    zc_artifact *artifact = NULL;
    zc_status status = zc_cache_get_or_compile(cache, &key, NULL, compile_failing_once_waiters_wait,
                                               &holder, &artifact, NULL);
    cr_assert_eq(status, too_large ? ZC_OK : ZC_ERR_BUILD);
    zc_artifact_unref(artifact);
    for (int i = 0; i < WAITERS; i++) {
        int exit_status;
        cr_assert_eq(waitpid(waiters[i], &exit_status, 0), waiters[i]);
        cr_assert(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0,
                  "waiter %d did not compile together with the others", i);
    }
    cr_assert_eq(atomic_load(&shared->most_at_once), WAITERS);
    cr_assert_eq(lock_files_in_cache(), 0);
    zc_disk_tier *tier = open_tier();
    zc_artifact *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), too_large ? ZC_OK : ZC_MISS,
                 "a waiter's small build is stored; a failed build never");
    zc_artifact_unref(loaded);
    zc_disk_tier_close(tier);
    zc_cache_close(cache);
    munmap(shared, sizeof *shared);
}

Test(claim, waiters_of_a_failed_build_compile_together)
{
    assert_waiters_compile_together(false);
}

Test(claim, waiters_of_a_build_that_could_not_be_stored_compile_together)
{
    assert_waiters_compile_together(true);
}
