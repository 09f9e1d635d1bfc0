/* fork() beside the disk tier, with children that keep working.
 *
 * A flock belongs to the open file description, which a child shares: a
 * child forked while config.file (or a build lock) was locked would hold
 * that lock for as long as it lives, and every other process would wait for
 * it. A child forked while another thread was inside a locked section would
 * also inherit the tier's mutex locked, by a thread it does not have.
 *
 * The fork is made to land inside a store's locked section: the section
 * pauses (in the tier's flock, once config.file is locked) until the forking
 * thread is past fork(), or until a fork that waits for the section has
 * plainly started (the fix). Children are bounded by alarm(): a hang is a
 * death by SIGALRM, seen by the parent. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../source/key/compiler_identity_internal.h"
#include "../source/key/environment_internal.h"
#include "../source/local/fs_ops.h"
#include "../source/remote/redis/redis_connection.h"
#include "disk_test_support.h"
#include "redis_storage_support.h"
#include "redis_test_support.h"
#include "test_support.h"
#include "zecache/disk_claim.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_tier.h"
#include "zecache/stats.h"
#include "zecache/storage.h"

enum {
    ARTIFACT_SIZE = 4096,
    /* Generous: stores beside a thread storing in a loop take turns at the
     * lock by polling, and a loaded machine may leave one waiting a while. */
    LOCK_DEADLINE_MS = 2000,
    /* How long a section waits once a fork is pending: a fork that does not
     * wait for it is done long before. */
    PENDING_GRACE_MS = 200,
    CHILD_ALARM_SEC = 20,
    STORES = 12,
};

static char test_root[128];
static char cache_dir[256];

static void make_test_root(void)
{
    t_make_scratch(test_root, sizeof test_root, "/tmp/zc_fork_test_XXXXXX", cache_dir,
                   sizeof cache_dir);
    cr_assert_eq(mkdir(cache_dir, 0700), 0);
}

static void remove_test_root(void)
{
    t_remove_tree(test_root);
}

TestSuite(fork_safety, .init = make_test_root, .fini = remove_test_root, .timeout = 240);

/* ---- a locked section that waits for the fork ---- */

/* armed is read without the lock, so that a child (where it is false) never
 * touches a lock another thread may have held at the fork. */
static atomic_bool armed; /* the next locked section pauses */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool in_section; /* a section is paused */
    bool pending;    /* fork() has started (the test's prepare handler) */
    bool forked;     /* the forking thread is past fork() */
} pause_state = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, false};

static void note_fork_pending(void)
{
    pthread_mutex_lock(&pause_state.lock);
    pause_state.pending = true;
    pthread_cond_broadcast(&pause_state.changed);
    pthread_mutex_unlock(&pause_state.lock);
}

/* Registered after the tier's handlers, so that it runs before the tier's
 * prepare handler, which may wait for the paused section. */
static void register_fork_note_once(void)
{
    cr_assert_eq(pthread_atfork(note_fork_pending, NULL, NULL), 0);
}

static void deadline_after_ms(struct timespec *at, long ms)
{
    clock_gettime(CLOCK_REALTIME, at);
    at->tv_sec += ms / 1000;
    at->tv_nsec += (ms % 1000) * 1000000L;
    if (at->tv_nsec >= 1000000000L) {
        at->tv_sec++;
        at->tv_nsec -= 1000000000L;
    }
}

/* Under pause_state.lock: waits until the fork is done, or until it has
 * been pending for PENDING_GRACE_MS (it waits for the caller). */
static void wait_for_the_fork_locked(void)
{
    while (!pause_state.forked && !pause_state.pending)
        pthread_cond_wait(&pause_state.changed, &pause_state.lock);
    if (!pause_state.forked) {
        struct timespec until;
        deadline_after_ms(&until, PENDING_GRACE_MS);
        while (!pause_state.forked &&
               pthread_cond_timedwait(&pause_state.changed, &pause_state.lock, &until) == 0)
            ;
    }
}

/* In the section (config.file locked): waits for the fork. */
static void pause_in_section(void)
{
    pthread_mutex_lock(&pause_state.lock);
    pause_state.in_section = true;
    pthread_cond_broadcast(&pause_state.changed);
    wait_for_the_fork_locked();
    pause_state.in_section = false;
    pthread_mutex_unlock(&pause_state.lock);
}

static int pausing_flock(int fd, int operation)
{
    int result = flock(fd, operation);
    if (result == 0 && (operation & (LOCK_EX | LOCK_SH)) && atomic_exchange(&armed, false))
        pause_in_section();
    return result;
}

static void forget_the_last_fork(void)
{
    pthread_mutex_lock(&pause_state.lock);
    pause_state.pending = false;
    pause_state.forked = false;
    pthread_mutex_unlock(&pause_state.lock);
}

static void arm_pause(void)
{
    forget_the_last_fork();
    atomic_store(&armed, true);
}

static void wait_until_in_section(void)
{
    pthread_mutex_lock(&pause_state.lock);
    while (!pause_state.in_section)
        pthread_cond_wait(&pause_state.changed, &pause_state.lock);
    pthread_mutex_unlock(&pause_state.lock);
}

static void say_forked(void)
{
    pthread_mutex_lock(&pause_state.lock);
    pause_state.forked = true;
    pthread_cond_broadcast(&pause_state.changed);
    pthread_mutex_unlock(&pause_state.lock);
}

/* ---- tiers ---- */

static zc_disk_tier *open_tier(const zc_fs_ops *ops)
{
    zc_config config = t_disk_config(cache_dir, 0, 1);
    config.lock_timeout_ms = LOCK_DEADLINE_MS;
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open_with_ops(&config, ops, &tier), ZC_OK);
    return tier;
}

/* A tier whose next locked section can be made to pause for a fork. */
static zc_disk_tier *open_pausing_tier(void)
{
    static zc_fs_ops ops;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    ops = *zc_fs_ops_default();
    ops.flock = pausing_flock;
    zc_disk_tier *tier = open_tier(&ops);
    pthread_once(&once, register_fork_note_once);
    return tier;
}

/* Stores and loads back keys first..first+count-1: how many did not come
 * back exactly (usable where cr_assert is not: children, threads). */
static int store_and_load(zc_disk_tier *tier, uint64_t first, int count)
{
    int failures = 0;
    for (uint64_t seed = first; seed < first + (uint64_t)count; seed++) {
        zc_key key = t_key(seed);
        zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, seed);
        zc_artifact *loaded = NULL;
        if (zc_disk_tier_store(tier, &key, artifact, NULL) != ZC_OK ||
            zc_disk_tier_load(tier, &key, &loaded) != ZC_OK || !t_same_artifact(loaded, artifact))
            failures++;
        zc_artifact_unref(loaded);
        zc_artifact_unref(artifact);
    }
    return failures;
}

static void write_byte(int fd, char byte)
{
    ssize_t written;
    do
        written = write(fd, &byte, 1);
    while (written < 0 && errno == EINTR);
}

/* The byte read, or 0 at end of file. */
static char read_byte(int fd)
{
    char byte = 0;
    ssize_t got;
    do
        got = read(fd, &byte, 1);
    while (got < 0 && errno == EINTR);
    return got == 1 ? byte : 0;
}

static int exit_code_of(pid_t pid)
{
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "process %ld did not exit (signal %d: a hang caught by alarm?)",
              (long)pid, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

/* A child that lives, doing nothing with the cache, until the parent closes
 * release[1] (then it exits 0). */
static pid_t fork_idle_child(int release[2])
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        alarm(CHILD_ALARM_SEC);
        close(release[1]);
        read_byte(release[0]);
        _exit(0);
    }
    close(release[0]);
    return pid;
}

/* A process that waits for a byte on go, then stores and loads count keys
 * from first through a tier of its own: exits 0 only if all came back and
 * none waited out the lock deadline. */
static pid_t start_other_process(int go_read, int go_write, uint64_t first, int count)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid > 0)
        return pid;
    alarm(CHILD_ALARM_SEC);
    close(go_write);
    if (read_byte(go_read) == 0)
        _exit(3);
    zc_config config = t_disk_config(cache_dir, 0, 1);
    config.lock_timeout_ms = LOCK_DEADLINE_MS;
    zc_disk_tier *tier = NULL;
    if (zc_disk_tier_open(&config, &tier) != ZC_OK)
        _exit(4);
    int failures = store_and_load(tier, first, count);
    uint64_t timeouts = zc_disk_tier_lock_timeouts(tier);
    zc_disk_tier_close(tier);
    _exit(failures != 0 ? 1 : timeouts != 0 ? 2 : 0);
}

/* ---- a thread storing beside the fork ---- */

typedef struct storer {
    zc_disk_tier *tier;
    atomic_bool stop;
    atomic_int failures, stores;
    bool one_per_round; /* stores once per round (rounds below), else in a loop */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int rounds_started, rounds_done;
} storer;

static void *store_in_a_loop(void *argument)
{
    storer *work = argument;
    uint64_t seed = 100000;
    while (!atomic_load(&work->stop)) {
        if (work->one_per_round) {
            pthread_mutex_lock(&work->lock);
            while (work->rounds_started == work->rounds_done && !atomic_load(&work->stop))
                pthread_cond_wait(&work->changed, &work->lock);
            pthread_mutex_unlock(&work->lock);
            if (atomic_load(&work->stop))
                break;
        }
        zc_key key = t_key(seed);
        zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, seed++);
        if (zc_disk_tier_store(work->tier, &key, artifact, NULL) != ZC_OK)
            atomic_fetch_add(&work->failures, 1);
        atomic_fetch_add(&work->stores, 1);
        zc_artifact_unref(artifact);
        usleep(1000); /* leaves the others a turn at the lock */
        if (work->one_per_round) {
            pthread_mutex_lock(&work->lock);
            work->rounds_done++;
            pthread_cond_broadcast(&work->changed);
            pthread_mutex_unlock(&work->lock);
        }
    }
    return NULL;
}

static void start_round(storer *work)
{
    pthread_mutex_lock(&work->lock);
    work->rounds_started++;
    pthread_cond_broadcast(&work->changed);
    pthread_mutex_unlock(&work->lock);
}

static void wait_for_round(storer *work)
{
    pthread_mutex_lock(&work->lock);
    while (work->rounds_done != work->rounds_started)
        pthread_cond_wait(&work->changed, &work->lock);
    pthread_mutex_unlock(&work->lock);
}

static void stop_storer(storer *work, pthread_t thread)
{
    pthread_mutex_lock(&work->lock);
    atomic_store(&work->stop, true);
    pthread_cond_broadcast(&work->changed);
    pthread_mutex_unlock(&work->lock);
    cr_assert_eq(pthread_join(thread, NULL), 0);
}

/* (a) A child forked in the middle of a store lives on (until told to go),
 * while this process and another one keep storing: nobody waits out the
 * lock deadline, every store succeeds. Without the fix the child holds
 * config.file's lock for its whole life. */
Test(fork_safety, long_lived_child_keeps_nobody_waiting)
{
    int go[2], release_child[2];
    cr_assert_eq(pipe(go), 0);
    cr_assert_eq(pipe(release_child), 0);
    zc_disk_tier *tier = open_pausing_tier();
    pid_t other = start_other_process(go[0], go[1], 1, STORES); /* before any thread */
    close(go[0]);
    storer work = {
        .tier = tier, .lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    arm_pause();
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, store_in_a_loop, &work), 0);
    wait_until_in_section();
    pid_t child = fork_idle_child(release_child);
    say_forked();
    write_byte(go[1], 'g');
    close(go[1]);
    int failures = store_and_load(tier, 1000, STORES);
    int other_exit = exit_code_of(other);
    stop_storer(&work, thread);
    uint64_t timeouts = zc_disk_tier_lock_timeouts(tier);
    close(release_child[1]); /* the child may go now */
    cr_assert_eq(exit_code_of(child), 0);
    zc_disk_tier_close(tier);
    cr_assert_eq(timeouts, 0, "%llu operations waited out the lock deadline",
                 (unsigned long long)timeouts);
    cr_assert_eq(failures, 0);
    cr_assert_eq(atomic_load(&work.failures), 0, "%d of %d stores of the thread failed",
                 atomic_load(&work.failures), atomic_load(&work.stores));
    cr_assert_eq(other_exit, 0,
                 "the other process: %d (1: a store failed, 2: it waited out the lock)",
                 other_exit);
}

/* (b) Children forked in the middle of a store store and load entries
 * themselves, through the same tier, and exit: without the fix the child's
 * first store waits for ever on the mutex of a thread it does not have (or
 * on config.file's lock that it shares with its parent). Twenty forks. */
Test(fork_safety, child_stores_and_loads_after_a_fork_in_a_store)
{
#if defined(__SANITIZE_ADDRESS__)
    /* GCC 12's AddressSanitizer does not hold its allocator across fork():
     * a child that allocates, forked while the storing thread frees, can
     * hang in malloc. glibc's malloc does; the plain and TSan trees run it. */
    cr_skip_test("fork() with a thread in malloc is not safe under this AddressSanitizer");
#endif
    enum { ROUNDS = 20, CHILD_STORES = 10 };
    zc_disk_tier *tier = open_pausing_tier();
    storer work = {.tier = tier,
                   .one_per_round = true,
                   .lock = PTHREAD_MUTEX_INITIALIZER,
                   .changed = PTHREAD_COND_INITIALIZER};
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, store_in_a_loop, &work), 0);
    for (int round = 0; round < ROUNDS; round++) {
        arm_pause();
        start_round(&work);
        wait_until_in_section();
        pid_t child = fork();
        cr_assert_geq(child, 0);
        if (child == 0) {
            alarm(CHILD_ALARM_SEC / 2);
            uint64_t timeouts = zc_disk_tier_lock_timeouts(tier);
            int failures = store_and_load(tier, 2000 + 100 * (uint64_t)round, CHILD_STORES);
            _exit(failures != 0 ? 1 : zc_disk_tier_lock_timeouts(tier) != timeouts ? 2 : 0);
        }
        say_forked();
        wait_for_round(&work);
        cr_assert_eq(exit_code_of(child), 0,
                     "round %d: the child's stores (1) failed or (2) waited out the lock", round);
    }
    stop_storer(&work, thread);
    cr_assert_eq(atomic_load(&work.failures), 0);
    cr_assert_eq(zc_disk_tier_lock_timeouts(tier), 0);
    zc_disk_tier_close(tier);
}

typedef struct locked_work {
    void *(*run)(void *);
    void *argument;
} locked_work;

/* The thread lives until the fork is done, so that no TSan child sees it
 * ended unjoined (reported as a thread leak). */
static void *run_then_wait_for_the_fork(void *argument)
{
    locked_work *work = argument;
    work->run(work->argument);
    pthread_mutex_lock(&pause_state.lock);
    while (!pause_state.forked)
        pthread_cond_wait(&pause_state.changed, &pause_state.lock);
    pthread_mutex_unlock(&pause_state.lock);
    return NULL;
}

/* Runs run(argument) on a thread whose first lock (on a pausing tier) is
 * held across a fork of a child that lives until release[1] is closed. */
static pid_t fork_while_locked(void *(*run)(void *), void *argument, int release[2])
{
    arm_pause();
    locked_work work = {run, argument};
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, run_then_wait_for_the_fork, &work), 0);
    wait_until_in_section();
    pid_t child = fork_idle_child(release);
    say_forked();
    cr_assert_eq(pthread_join(thread, NULL), 0);
    return child;
}

/* ---- config.file read under a shared lock ---- */

typedef struct size_query {
    zc_disk_tier *tier;
    zc_status status;
    uint64_t size;
} size_query;

static void *query_recorded_size(void *argument)
{
    size_query *query = argument;
    query->status = zc_disk_tier_recorded_size(query->tier, &query->size);
    return NULL;
}

/* A child forked while another thread reads config.file under its shared
 * lock (zecache stats) lives on while this process stores: no store waits
 * out the lock. Without the fix the child keeps the shared lock, which
 * every store's exclusive one waits for. */
Test(fork_safety, stores_beside_a_child_forked_in_a_size_query)
{
    int release_child[2];
    cr_assert_eq(pipe(release_child), 0);
    zc_disk_tier *tier = open_pausing_tier();
    cr_assert_eq(store_and_load(tier, 1, 1), 0); /* config.file holds a total */
    size_query query = {tier, ZC_ERR_IO, 0};
    pid_t child = fork_while_locked(query_recorded_size, &query, release_child);
    int failures = store_and_load(tier, 10, 3);
    uint64_t timeouts = zc_disk_tier_lock_timeouts(tier);
    close(release_child[1]);
    cr_assert_eq(exit_code_of(child), 0);
    zc_disk_tier_close(tier);
    cr_assert_eq(query.status, ZC_OK);
    cr_assert_gt(query.size, 0);
    cr_assert_eq(timeouts, 0);
    cr_assert_eq(failures, 0);
}

/* ---- the stats file ---- */

typedef struct merge {
    zc_disk_tier *tier;
    zc_status status;
} merge;

static void *merge_one_store(void *argument)
{
    merge *work = argument;
    zc_stats_counters delta = {.stores = 1};
    work->status = zc_stats_merge(work->tier, &delta);
    return NULL;
}

/* A child forked while another thread merges counters into the stats file
 * lives on while this process merges more: none waits out the lock, and
 * every count is there. Without the fix the child holds the stats file's
 * lock for its whole life. */
Test(fork_safety, stats_merges_beside_a_child_forked_in_one)
{
    int release_child[2];
    cr_assert_eq(pipe(release_child), 0);
    zc_disk_tier *tier = open_pausing_tier();
    merge work = {tier, ZC_ERR_IO};
    pid_t child = fork_while_locked(merge_one_store, &work, release_child);
    zc_status merged[3];
    for (int i = 0; i < 3; i++)
        merged[i] = zc_stats_merge(tier, &(zc_stats_counters){.disk_hits = 2});
    zc_stats_counters counters;
    zc_status read = zc_stats_read(tier, &counters);
    uint64_t timeouts = zc_disk_tier_lock_timeouts(tier);
    close(release_child[1]);
    cr_assert_eq(exit_code_of(child), 0);
    zc_disk_tier_close(tier);
    cr_assert_eq(work.status, ZC_OK);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(merged[i], ZC_OK, "merge %d: %s", i, zc_status_name(merged[i]));
    cr_assert_eq(read, ZC_OK);
    cr_assert_eq(counters.stores, 1);
    cr_assert_eq(counters.disk_hits, 6);
    cr_assert_eq(timeouts, 0);
}

/* ---- build claims held at the fork ---- */

static zc_disk_claim claim_key(zc_disk_tier *tier, uint64_t seed, uint64_t timeout_ms,
                               zc_disk_claim_result expected)
{
    zc_key key = t_key(seed);
    zc_disk_claim claim;
    zc_disk_claim_result result = ZC_DISK_READY;
    cr_assert_eq(zc_disk_tier_claim(tier, &key, timeout_ms, &result, &claim), ZC_OK);
    cr_assert_eq(result, expected, "claim: %d, expected %d", (int)result, (int)expected);
    return claim;
}

/* <cache>/<k0>/<k1>/<hex>.lock */
static void lock_path(const zc_key *key, char *path, size_t size)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(path, size, "%s/%c/%c/%s%s", cache_dir, hex[0], hex[1], hex, ZC_LOCK_SUFFIX);
}

/* (c) A child forked while this process holds a build claim finishes and
 * releases its copy of the claim: the parent's lock file stays, and the key
 * stays claimed until the parent releases it. Without the fix the child's
 * release unlinks the parent's lock file, and another claimant takes the key
 * while the parent is still building it. */
Test(fork_safety, child_release_leaves_the_parents_claim)
{
    int released[2], release_child[2];
    cr_assert_eq(pipe(released), 0);
    cr_assert_eq(pipe(release_child), 0);
    zc_disk_tier *tier = open_tier(NULL);
    zc_key key = t_key(7);
    zc_disk_claim claim = claim_key(tier, 7, 0, ZC_DISK_CLAIMED);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        alarm(CHILD_ALARM_SEC);
        close(release_child[1]);
        /* Closed at the fork: the parent's lock is not the child's. */
        char owned = fcntl(claim.lock_fd, F_GETFD) >= 0 ? 'o' : 'n';
        /* The child opens files of its own meanwhile: the lock's number may
         * name one of them, here the worst, the lock file itself. */
        char path[512];
        lock_path(&key, path, sizeof path);
        int opened = owned == 'n' ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        if (opened >= 0 && (dup2(opened, claim.lock_fd) != claim.lock_fd || close(opened) != 0))
            _exit(5);
        zc_disk_tier_release(tier, &claim); /* a child that built, stored and let go */
        write_byte(released[1], owned);
        read_byte(release_child[0]); /* and lives on */
        _exit(0);
    }
    close(release_child[0]);
    close(released[1]);
    char owned = read_byte(released[0]);
    char path[512];
    lock_path(&key, path, sizeof path);
    cr_assert(t_exists(path), "the child removed the parent's lock file");
    zc_disk_tier *other = open_tier(NULL);
    zc_disk_claim second = claim_key(other, 7, 0, ZC_DISK_TIMED_OUT); /* still ours */
    zc_disk_tier_release(other, &second);
    zc_disk_tier_release(tier, &claim);
    second = claim_key(other, 7, 0, ZC_DISK_CLAIMED); /* free at once, the child alive */
    zc_disk_tier_release(other, &second);
    close(release_child[1]);
    cr_assert_eq(exit_code_of(child), 0);
    zc_disk_tier_close(other);
    zc_disk_tier_close(tier);
    cr_assert_eq(owned, 'n', "the child kept a copy of the parent's build lock");
}

static int busy_fd = -1; /* the waiting process says here that it found the lock held */

static int reporting_flock(int fd, int operation)
{
    int result = flock(fd, operation);
    if (result != 0 && errno == EWOULDBLOCK && busy_fd >= 0) {
        int err = errno;
        write_byte(busy_fd, 'b');
        close(busy_fd);
        busy_fd = -1;
        errno = err;
    }
    return result;
}

/* Waits for go, claims seed's key (waiting up to 5 s), and writes the
 * result ('0' + zc_disk_claim_result) to answer. */
static pid_t start_claimant(int go, int busy, int answer)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid > 0)
        return pid;
    alarm(CHILD_ALARM_SEC);
    if (read_byte(go) == 0)
        _exit(3);
    static zc_fs_ops ops;
    ops = *zc_fs_ops_default();
    ops.flock = reporting_flock;
    busy_fd = busy;
    zc_config config = t_disk_config(cache_dir, 0, 1);
    zc_disk_tier *tier = NULL;
    if (zc_disk_tier_open_with_ops(&config, &ops, &tier) != ZC_OK)
        _exit(4);
    zc_key key = t_key(7);
    zc_disk_claim claim;
    zc_disk_claim_result result = ZC_DISK_READY;
    zc_status status = zc_disk_tier_claim(tier, &key, 5000, &result, &claim);
    write_byte(answer, (char)('0' + (status == ZC_OK ? (int)result : 9)));
    zc_disk_tier_release(tier, &claim);
    zc_disk_tier_close(tier);
    _exit(0);
}

/* (c) Another process waiting for a key this process builds gets the claim
 * as soon as this process releases it, while a child forked during the build
 * lives on. Without the fix the child's copy of the lock keeps it held, and
 * the waiter waits until its deadline. */
Test(fork_safety, waiter_gets_the_claim_while_the_child_lives)
{
    int go[2], busy[2], answer[2], release_child[2];
    cr_assert_eq(pipe(go), 0);
    cr_assert_eq(pipe(busy), 0);
    cr_assert_eq(pipe(answer), 0);
    cr_assert_eq(pipe(release_child), 0);
    pid_t claimant = start_claimant(go[0], busy[1], answer[1]); /* holds no claim of ours */
    zc_disk_tier *tier = open_tier(NULL);
    zc_disk_claim claim = claim_key(tier, 7, 0, ZC_DISK_CLAIMED);
    pid_t child = fork_idle_child(release_child);
    write_byte(go[1], 'g');
    cr_assert_eq(read_byte(busy[0]), 'b'); /* the claimant waits for our lock */
    zc_disk_tier_release(tier, &claim);
    char result = read_byte(answer[0]);
    close(release_child[1]);
    cr_assert_eq(exit_code_of(claimant), 0);
    cr_assert_eq(exit_code_of(child), 0);
    zc_disk_tier_close(tier);
    cr_assert_eq(result, '0' + ZC_DISK_CLAIMED,
                 "the waiter got %c, not the claim (2: timed out behind the child)", result);
}

/* ---- the remote connection ---- */

typedef struct blocked_command {
    zc_redis_connection *connection;
    int reply_type; /* -1: no reply */
} blocked_command;

static void *pop_with_a_wait(void *argument)
{
    blocked_command *command = argument;
    redisReply *reply = zc_redis_command(command->connection, ZC_REDIS_REPLY_SIMPLE, NULL, 3,
                                         (const char *[]){"BLPOP", "zc-fork-list", "2"}, NULL);
    command->reply_type = reply != NULL ? reply->type : -1;
    if (reply != NULL)
        freeReplyObject(reply);
    return NULL;
}

/* Until the server says a client waits in BLPOP. */
static void wait_for_blocked_client(const t_redis *server)
{
    for (;;) {
        redisReply *list = t_redis_command(server, 2, (const char *[]){"CLIENT", "LIST"}, NULL);
        bool blocked = list->type == REDIS_REPLY_STRING && strstr(list->str, "cmd=blpop") != NULL;
        freeReplyObject(list);
        if (blocked)
            return;
        usleep(10 * 1000);
    }
}

/* Not connected yet: the first command connects. */
static zc_redis_connection *connection_to(const t_redis *server)
{
    zc_remote_server where = {.db = 0};
    snprintf(where.path, sizeof where.path, "%s", server->socket);
    snprintf(where.name, sizeof where.name, "unix://%s", server->socket);
    zc_redis_limits limits = {.connect_timeout_ms = 2000, .timeout_ms = 4000, .max_reply = 1 << 20};
    zc_redis_connection *connection = zc_redis_connection_new(&where, &limits);
    cr_assert_not_null(connection);
    return connection;
}

/* The server's id of the connection a command went on; -1 without one. */
static long long client_id(zc_redis_connection *connection)
{
    redisReply *reply = zc_redis_command(connection, ZC_REDIS_REPLY_SIMPLE, NULL, 2,
                                         (const char *[]){"CLIENT", "ID"}, NULL);
    long long id = reply != NULL && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;
    if (reply != NULL)
        freeReplyObject(reply);
    return id;
}

/* (d) A child forked while another thread waits for a reply on the shared
 * connection has its own commands answered at once, on a connection of its
 * own, and the parent's thread still gets its own reply. Without the fix
 * the child waits for a mutex held by a thread it does not have, until its
 * command's deadline, and gets nothing. */
Test(fork_safety, child_commands_while_the_parent_waits_for_a_reply)
{
    t_redis server;
    t_redis_start(&server, NULL);
    zc_redis_connection *connection = connection_to(&server);
    cr_assert_gt(client_id(connection), 0);
    blocked_command command = {connection, -1};
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, pop_with_a_wait, &command), 0);
    wait_for_blocked_client(&server);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        alarm(CHILD_ALARM_SEC);
        _exit(client_id(connection) > 0 && client_id(connection) > 0 ? 0 : 1);
    }
    int child_exit = exit_code_of(child);
    cr_assert_eq(pthread_join(thread, NULL), 0);
    long long parent_id = client_id(connection);
    zc_redis_connection_free(connection);
    t_redis_stop(&server);
    cr_assert_eq(command.reply_type, REDIS_REPLY_NIL, "the parent's BLPOP got %d, not its nil",
                 command.reply_type);
    cr_assert_gt(parent_id, 0);
    cr_assert_eq(child_exit, 0, "the child's commands got no answer");
}

/* (d) A child of a process whose connection is idle talks to the server on
 * a connection of its own, never on its parent's socket, which stays the
 * parent's. Without the owner check the child's commands go on the
 * parent's connection. */
Test(fork_safety, child_never_uses_the_parents_socket)
{
    t_redis server;
    t_redis_start(&server, NULL);
    zc_redis_connection *connection = connection_to(&server);
    long long parent_id = client_id(connection);
    int ids[2];
    cr_assert_eq(pipe(ids), 0);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        alarm(CHILD_ALARM_SEC);
        long long id = client_id(connection);
        zc_redis_connection_free(connection);
        _exit(write(ids[1], &id, sizeof id) == sizeof id ? 0 : 1);
    }
    long long child_id = -1;
    cr_assert_eq(read(ids[0], &child_id, sizeof child_id), (ssize_t)sizeof child_id);
    cr_assert_eq(exit_code_of(child), 0);
    long long parent_again = client_id(connection);
    zc_redis_connection_free(connection);
    t_redis_stop(&server);
    cr_assert_gt(parent_id, 0);
    cr_assert_gt(child_id, 0);
    cr_assert_neq(child_id, parent_id, "the child's command went on its parent's connection");
    cr_assert_eq(parent_again, parent_id, "the parent's connection did not stay its own");
}

/* The value of seed's build lock in the server ("" when there is none). */
static void remote_lock_value(const t_redis *server, uint64_t seed, char *value, size_t size)
{
    char hex[ZC_KEY_HEX_SIZE], name[128];
    zc_key key = t_key(seed);
    zc_key_to_hex(&key, hex);
    snprintf(name, sizeof name, "%s%s", ZC_REDIS_LOCK_PREFIX, hex);
    redisReply *reply = t_redis_command(server, 2, (const char *[]){"GET", name}, NULL);
    snprintf(value, size, "%s", reply->type == REDIS_REPLY_STRING ? reply->str : "");
    freeReplyObject(reply);
}

/* (d) A child forked while this process holds a Redis build claim, whose
 * build fails and which lets go of its copy of the claim, leaves the
 * parent's lock (and no "failed" mark) in the server. Without the fix the
 * child's release, with the parent's token, removes it. */
Test(fork_safety, child_release_leaves_the_parents_remote_claim)
{
    t_redis server;
    t_redis_start(&server, NULL);
    char url[512];
    snprintf(url, sizeof url, "redis+unix://%s", server.socket);
    zc_storage *storage = t_open_redis_storage(url);
    zc_key key = t_key(9);
    zc_storage_claim claim;
    zc_storage_claim_result result;
    cr_assert_eq(storage->ops->claim(storage, &key, 10000, &result, &claim), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_CLAIMED);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        alarm(CHILD_ALARM_SEC);
        storage->ops->release(storage, &key, &claim, true);
        zc_storage_close(storage);
        _exit(0);
    }
    cr_assert_eq(exit_code_of(child), 0);
    char held[64];
    remote_lock_value(&server, 9, held, sizeof held);
    storage->ops->release(storage, &key, &claim, false);
    char after[64];
    remote_lock_value(&server, 9, after, sizeof after);
    zc_storage_close(storage);
    t_redis_stop(&server);
    cr_assert_str_eq(held, claim.token, "the child's release replaced the parent's lock by \"%s\"",
                     held);
    cr_assert_str_eq(after, "", "the parent's own release did not remove its lock");
}

/* ---- a fork from inside a locked section ---- */

static atomic_int exec_child_exit = -1;

/* Forks once, with config.file locked, a child that execs at once. */
static int execing_flock(int fd, int operation)
{
    int result = flock(fd, operation);
    if (result == 0 && (operation & LOCK_EX) && atomic_exchange(&armed, false)) {
        pid_t child = fork();
        if (child == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        if (child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status))
            atomic_store(&exec_child_exit, WEXITSTATUS(status));
    }
    return result;
}

/* A fork from inside a locked section (only a hook like this one can make
 * it) does not wait for the section it is in: its child execs, and the
 * store goes on. Without the forking thread's own tier left out of the fork
 * handler, the fork waits for ever on a mutex its own thread holds. */
Test(fork_safety, fork_inside_a_locked_section_does_not_deadlock, .timeout = 30)
{
    static zc_fs_ops ops;
    ops = *zc_fs_ops_default();
    ops.flock = execing_flock;
    zc_disk_tier *tier = open_tier(&ops);
    atomic_store(&exec_child_exit, -1);
    atomic_store(&armed, true);
    int failures = store_and_load(tier, 1, 2);
    zc_disk_tier_close(tier);
    cr_assert_eq(atomic_load(&exec_child_exit), 0);
    cr_assert_eq(failures, 0);
}

/* ---- the key's process-wide locks (fork_guard.c) ----
 *
 * A thread holds the lock, kept in a file read from a FIFO nobody writes
 * yet; this thread forks; a third thread lets the reader go once the fork
 * is done, or once it has been pending for a while (it waits for the lock).
 * The child takes the lock itself, under alarm(). */

/* Registered after the fork guard's handlers (which the test's first use of
 * the facility registers), so that it runs before their prepare handler. */
static void register_guard_note(void)
{
    cr_assert_eq(pthread_atfork(note_fork_pending, NULL, NULL), 0);
}

static void note_forks_before_the_guard(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_guard_note);
    forget_the_last_fork();
}

/* Keeps a thread alive until the forking thread is past fork(), so that no
 * child sees it ended unjoined (a leak to ThreadSanitizer). */
static void live_until_forked(void)
{
    pthread_mutex_lock(&pause_state.lock);
    while (!pause_state.forked)
        pthread_cond_wait(&pause_state.changed, &pause_state.lock);
    pthread_mutex_unlock(&pause_state.lock);
}

/* The writing end of a FIFO a reader waits on: closed (EOF for a reader in
 * read()), or, when fd is -1, opened (a writer for one in open()). */
typedef struct fifo_writer {
    const char *path;
    int fd;
} fifo_writer;

/* Lets the FIFO's reader go once the fork no longer waits for it. */
static void *let_the_reader_go(void *argument)
{
    fifo_writer *writer = argument;
    pthread_mutex_lock(&pause_state.lock);
    wait_for_the_fork_locked();
    pthread_mutex_unlock(&pause_state.lock);
    if (writer->fd >= 0) {
        close(writer->fd);
        writer->fd = -1;
    } else {
        writer->fd = open(writer->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    }
    live_until_forked();
    return NULL;
}

/* Forks a child that runs child_work (its exit code) under alarm(), and
 * lets the reader go while the fork is pending or once it is done. */
static pid_t fork_then_let_go(fifo_writer *writer, int (*child_work)(void))
{
    pthread_t helper;
    cr_assert_eq(pthread_create(&helper, NULL, let_the_reader_go, writer), 0);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        alarm(CHILD_ALARM_SEC);
        _exit(child_work());
    }
    say_forked();
    pthread_join(helper, NULL);
    return child;
}

static void *take_the_driver_part(void *argument)
{
    *(bool *)argument = !zc_environment_driver_part()->failed;
    live_until_forked();
    return NULL;
}

/* Under the same lock (the driver's part is the parent thread's, taken). */
static int propose_the_compiler_part(void)
{
    zc_environment_propose_compiler_part();
    return 0;
}

/* Without the snapshot lock held across fork(), the child waits for ever
 * for the lock of a thread it does not have: killed by its alarm. */
Test(fork_safety, child_takes_the_environment_forked_while_another_thread_reads_it)
{
    char previous_dir[PATH_MAX];
    cr_assert_not_null(getcwd(previous_dir, sizeof previous_dir));
    cr_assert_eq(chdir(test_root), 0);
    zc_environment_forget();
    (void)zc_environment_driver_part(); /* no settings file yet: guards the lock */
    note_forks_before_the_guard();
    char settings_fifo[300];
    snprintf(settings_fifo, sizeof settings_fifo, "%s/igdrcl.config", test_root);
    cr_assert_eq(mkfifo(settings_fifo, 0600), 0);
    zc_environment_forget();
    bool taken = false;
    pthread_t reader;
    cr_assert_eq(pthread_create(&reader, NULL, take_the_driver_part, &taken), 0);
    /* Open once the reader has opened: it has the lock, and waits in read(). */
    fifo_writer writer = {settings_fifo, open(settings_fifo, O_WRONLY | O_CLOEXEC)};
    cr_assert_geq(writer.fd, 0);
    pid_t child = fork_then_let_go(&writer, propose_the_compiler_part);
    pthread_join(reader, NULL);
    int code = exit_code_of(child);
    zc_environment_forget();
    cr_assert_eq(chdir(previous_dir), 0);
    cr_assert(taken);
    cr_assert_eq(code, 0);
}

static char ld_cache_fifo[300];
static _Atomic pid_t predicting_thread;

static void *predict_the_compiler(void *argument)
{
    atomic_store(&predicting_thread, (pid_t)syscall(SYS_gettid));
    *(bool *)argument = zc_compiler_identity_get(NULL) == NULL;
    live_until_forked();
    return NULL;
}

/* Whether the thread is blocked opening path (its address, as passed). */
static bool opening(pid_t thread, const char *path)
{
    char name[64], line[256] = "";
    snprintf(name, sizeof name, "/proc/self/task/%ld/syscall", (long)thread);
    FILE *file = fopen(name, "r");
    if (file == NULL)
        return false;
    bool read = fgets(line, sizeof line, file) != NULL;
    fclose(file);
    long number = -1;
    unsigned long long dir = 0, address = 0;
    return read && sscanf(line, "%ld %llx %llx", &number, &dir, &address) == 3 &&
           number == SYS_openat && address == (unsigned long long)(uintptr_t)path;
}

static int identify_the_compiler_again(void)
{
    static const char *const no_dirs[] = {NULL};
    zc_library_search nowhere = {.default_dirs = no_dirs};
    zc_compiler_identity_reset(&nowhere);
    return zc_compiler_identity_get(NULL) == NULL ? 0 : 1;
}

/* The prediction reads ld.so.cache under the identity's lock: here a FIFO,
 * whose open() waits for a writer. Without the lock held across fork(),
 * the child waits for ever for it: killed by its alarm. */
Test(fork_safety, child_identifies_the_compiler_forked_while_another_thread_does)
{
    static const char *const no_dirs[] = {NULL};
    zc_compiler_identity_reset(NULL); /* guards the lock */
    note_forks_before_the_guard();
    snprintf(ld_cache_fifo, sizeof ld_cache_fifo, "%s/ld.so.cache", test_root);
    cr_assert_eq(mkfifo(ld_cache_fifo, 0600), 0);
    zc_library_search through_the_fifo = {.ld_so_cache = ld_cache_fifo, .default_dirs = no_dirs};
    zc_compiler_identity_reset(&through_the_fifo);
    atomic_store(&predicting_thread, 0);
    bool unidentified = false;
    pthread_t predictor;
    cr_assert_eq(pthread_create(&predictor, NULL, predict_the_compiler, &unidentified), 0);
    for (int i = 0; i < 200000 && !(atomic_load(&predicting_thread) != 0 &&
                                    opening(atomic_load(&predicting_thread), ld_cache_fifo));
         i++)
        usleep(100);
    cr_assert(opening(atomic_load(&predicting_thread), ld_cache_fifo));
    /* The writer stays while the prediction opens the file again. */
    fifo_writer writer = {ld_cache_fifo, -1};
    pid_t child = fork_then_let_go(&writer, identify_the_compiler_again);
    pthread_join(predictor, NULL);
    int code = exit_code_of(child);
    cr_assert_geq(writer.fd, 0);
    close(writer.fd);
    zc_compiler_identity_reset(NULL);
    cr_assert(unidentified);
    cr_assert_eq(code, 0);
}
