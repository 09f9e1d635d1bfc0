/* The mix of operations fault_worker's threads (and test_faults_stress's own
 * threads) run against one cache until a deadline: loads checked byte for
 * byte, stores, trims, removals, unlocked scans that verify what they list,
 * and, when asked, checks under config.file's lock that the recorded total is
 * the real one and within the limit. No test framework: a failure is
 * returned as an exit code with a message, never asserted from a thread. */
#ifndef ZC_FAULT_MIX_H
#define ZC_FAULT_MIX_H

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../source/local/fs_ops.h"
#include "fault_content.h"
#include "zecache/disk_tier.h"
#include "zecache/disk_maintenance.h"

enum fm_exit {
    FM_OK = 0,
    FM_USAGE = 2,
    FM_WRONG_BYTES = 3, /* a load returned bytes other than the key's */
    FM_BAD_STATUS = 4,  /* an operation returned a status it never may here */
    FM_ACCOUNTING = 5,  /* under the lock: config.file wrong or limit exceeded */
    FM_INCOMPLETE = 6,  /* a listed entry failed verification other than by vanishing */
    FM_SETUP = 7,       /* could not open the cache or start threads */
};

/* A stats file (fault_worker's stats=FILE) holds this many fm_counters. */
#define FM_STATS_SLOTS 64

/* Shared between processes (a mapped file) or threads: plain counters. */
typedef struct fm_counters {
    _Atomic uint64_t loads, hits, stores, trims, removes, scans, checks;
    _Atomic uint64_t largest_locked_total; /* the largest real total a check saw */
    _Atomic uint64_t fs_calls;             /* system calls through fm_crash_ops */
} fm_counters;

typedef struct fm_settings {
    const char *dir;
    uint64_t max_size;
    uint64_t keys;
    size_t max_binary;
    double seconds;
    bool check_under_lock; /* not while processes are being killed */
} fm_settings;

typedef struct fm_thread {
    const fm_settings *settings;
    zc_disk_tier *tier;
    uint64_t seed;
    fm_counters *counters;
    int failure;
    char message[256];
} fm_thread;

static inline double fm_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static inline uint64_t fm_random(uint64_t *state)
{
    *state = fc_mix(*state);
    return *state;
}

static inline __attribute__((format(printf, 3, 4))) int fm_fail(fm_thread *thread, int code,
                                                                const char *fmt, ...)
{
    thread->failure = code;
    va_list args;
    va_start(args, fmt);
    vsnprintf(thread->message, sizeof thread->message, fmt, args);
    va_end(args);
    return code;
}

/* True for a .trace whose entry is beside it in dir_fd. */
static inline bool fm_has_entry_beside(int dir_fd, const char *name)
{
    size_t length = strlen(name), suffix = strlen(ZC_TRACE_SUFFIX);
    if (length <= suffix || strcmp(name + length - suffix, ZC_TRACE_SUFFIX) != 0)
        return false;
    char entry[NAME_MAX + 1];
    struct stat st;
    snprintf(entry, sizeof entry, "%.*s%s", (int)(length - suffix), name, ZC_ENTRY_SUFFIX);
    return fstatat(dir_fd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

/* The real total, walked with plain system calls (not the tier's scan): the
 * root and two levels of one-hex-digit directories, never through a link. */
static inline uint64_t fm_walk_total(int dir_fd, int depth)
{
    int fd = dup(dir_fd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (dir == NULL) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    uint64_t total = 0;
    for (struct dirent *dirent; (dirent = readdir(dir)) != NULL;) {
        const char *name = dirent->d_name;
        struct stat st;
        if (name[0] == '.' || fstatat(dirfd(dir), name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        size_t length = strlen(name), suffix = strlen(ZC_ENTRY_SUFFIX);
        if (S_ISDIR(st.st_mode) && depth < 2 && length == 1) {
            int sub = openat(dirfd(dir), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                total += fm_walk_total(sub, depth + 1);
                close(sub);
            }
        } else if (S_ISREG(st.st_mode) && length > suffix &&
                   strcmp(name + length - suffix, ZC_ENTRY_SUFFIX) == 0) {
            total += (uint64_t)st.st_size;
        } else if (S_ISREG(st.st_mode) && fm_has_entry_beside(dirfd(dir), name)) {
            total += (uint64_t)st.st_size; /* a trace counts with its entry */
        }
    }
    closedir(dir);
    return total;
}

static inline void fm_raise_max(_Atomic uint64_t *max, uint64_t value)
{
    uint64_t seen = atomic_load(max);
    while (value > seen && !atomic_compare_exchange_weak(max, &seen, value)) {
    }
}

/* Under config.file's flock (which every writer of this tier and of the
 * driver holds for every change): config.file is exact and within the limit.
 * An empty config.file is "unknown", as the tier leaves it at open. */
static inline int fm_check_under_lock(fm_thread *thread)
{
    const fm_settings *settings = thread->settings;
    int root = open(settings->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = root >= 0 ? openat(root, ZC_CONFIG_FILE_NAME, O_RDWR | O_CLOEXEC | O_NOFOLLOW) : -1;
    if (fd < 0 || flock(fd, LOCK_EX) != 0) {
        if (fd >= 0)
            close(fd);
        if (root >= 0)
            close(root);
        return fm_fail(thread, FM_SETUP, "cannot lock config.file");
    }
    uint8_t bytes[16];
    ssize_t got = pread(fd, bytes, sizeof bytes, 0);
    uint64_t real = fm_walk_total(root, 0);
    close(fd); /* releases the lock */
    close(root);
    atomic_fetch_add(&thread->counters->checks, 1);
    fm_raise_max(&thread->counters->largest_locked_total, real);
    if (got != 0 && got != 8)
        return fm_fail(thread, FM_ACCOUNTING, "config.file of %zd bytes", got);
    uint64_t recorded = real;
    if (got == 8)
        memcpy(&recorded, bytes, 8);
    if (recorded != real)
        return fm_fail(thread, FM_ACCOUNTING, "config.file %llu, real total %llu",
                       (unsigned long long)recorded, (unsigned long long)real);
    if (settings->max_size != 0 && real > settings->max_size)
        return fm_fail(thread, FM_ACCOUNTING, "real total %llu above the limit %llu",
                       (unsigned long long)real, (unsigned long long)settings->max_size);
    return FM_OK;
}

static inline int fm_load(fm_thread *thread, uint64_t n)
{
    zc_key key = fc_key(n);
    zc_artifact *loaded = NULL;
    zc_status status = zc_disk_tier_load(thread->tier, &key, &loaded);
    atomic_fetch_add(&thread->counters->loads, 1);
    if (status != ZC_OK && status != ZC_MISS)
        return fm_fail(thread, FM_BAD_STATUS, "load %llu: %s", (unsigned long long)n,
                       zc_status_name(status));
    if (status == ZC_MISS)
        return FM_OK;
    atomic_fetch_add(&thread->counters->hits, 1);
    bool right = fc_artifact_matches(loaded, n, thread->settings->max_binary);
    zc_artifact_unref(loaded);
    return right ? FM_OK
                 : fm_fail(thread, FM_WRONG_BYTES, "load %llu: wrong bytes", (unsigned long long)n);
}

static inline int fm_store(fm_thread *thread, uint64_t n)
{
    zc_key key = fc_key(n);
    zc_artifact *artifact = fc_artifact(n, thread->settings->max_binary);
    if (artifact == NULL)
        return fm_fail(thread, FM_SETUP, "out of memory");
    zc_status status =
        zc_disk_tier_store(thread->tier, &key, artifact, n % 4 == 0 ? "trace of the key" : NULL);
    zc_artifact_unref(artifact);
    atomic_fetch_add(&thread->counters->stores, 1);
    /* Stored, or another thread or process stored it first. */
    return status == ZC_OK || status == ZC_EXISTS
               ? FM_OK
               : fm_fail(thread, FM_BAD_STATUS, "store %llu: %s", (unsigned long long)n,
                         zc_status_name(status));
}

static inline int fm_trim(fm_thread *thread)
{
    zc_status status =
        zc_disk_tier_trim(thread->tier, thread->settings->max_size / 2, 0, NULL, NULL);
    atomic_fetch_add(&thread->counters->trims, 1);
    return status == ZC_OK ? FM_OK
                           : fm_fail(thread, FM_BAD_STATUS, "trim: %s", zc_status_name(status));
}

static inline int fm_remove(fm_thread *thread, uint64_t n)
{
    zc_key key = fc_key(n);
    char hex[ZC_KEY_HEX_SIZE], rel[ZC_KEY_HEX_SIZE + 16];
    zc_key_to_hex(&key, hex);
    snprintf(rel, sizeof rel, "%c/%c/%s%s", hex[0], hex[1], hex, ZC_ENTRY_SUFFIX);
    zc_status status = zc_disk_tier_remove_entry(thread->tier, rel);
    atomic_fetch_add(&thread->counters->removes, 1);
    return status == ZC_OK || status == ZC_MISS
               ? FM_OK
               : fm_fail(thread, FM_BAD_STATUS, "remove %llu: %s", (unsigned long long)n,
                         zc_status_name(status));
}

/* Without the lock, as the tool lists: whatever is listed is either gone by
 * the time it is opened or complete and verified. */
static inline int fm_verify_listed(void *context, const zc_disk_entry_info *info)
{
    fm_thread *thread = context;
    char reason[256];
    zc_status status =
        zc_disk_tier_verify_entry(thread->tier, info->path, NULL, reason, sizeof reason);
    if (status == ZC_OK || strncmp(reason, "cannot open", 11) == 0)
        return 0;
    snprintf(thread->message, sizeof thread->message, "listed %.80s: %.160s", info->path, reason);
    thread->failure = FM_INCOMPLETE;
    return 1;
}

static inline int fm_scan(fm_thread *thread)
{
    atomic_fetch_add(&thread->counters->scans, 1);
    zc_status status = zc_disk_tier_foreach(thread->tier, fm_verify_listed, thread);
    if (thread->failure != FM_OK)
        return thread->failure;
    /* A scan may fail on a directory that vanished under it; never worse. */
    return status == ZC_OK || status == ZC_ERR_IO
               ? FM_OK
               : fm_fail(thread, FM_BAD_STATUS, "scan: %s", zc_status_name(status));
}

/* One operation chosen at random: mostly loads and stores, so that with a
 * small limit eviction runs all the time. */
static inline int fm_step(fm_thread *thread, uint64_t *state)
{
    uint64_t n = fm_random(state) % thread->settings->keys;
    unsigned choice = (unsigned)(fm_random(state) % 100);
    if (choice < 48)
        return fm_load(thread, n);
    if (choice < 88)
        return fm_store(thread, n);
    if (choice < 91)
        return fm_trim(thread);
    if (choice < 95)
        return fm_remove(thread, n);
    if (choice < 97)
        return fm_scan(thread);
    return thread->settings->check_under_lock ? fm_check_under_lock(thread) : FM_OK;
}

static inline void *fm_run(void *argument)
{
    fm_thread *thread = argument;
    uint64_t state = thread->seed;
    double deadline = fm_now() + thread->settings->seconds;
    while (thread->failure == FM_OK && fm_now() < deadline)
        if (fm_step(thread, &state) != FM_OK)
            break;
    return NULL;
}

/* ---- dying at a chosen system call ---- */

/* The tier's system calls, counted; call number fm_crash_at (0: never)
 * kills the process with SIGKILL before it is made, so a test can crash a
 * writer between any two of its system calls. */
static _Atomic uint64_t fm_crash_calls;
static uint64_t fm_crash_at;

static inline void fm_before_call(void)
{
    uint64_t call = atomic_fetch_add(&fm_crash_calls, 1) + 1;
    if (call == fm_crash_at)
        raise(SIGKILL);
}

#define FM_CRASH_WRAP(name, type, params, args)                                                    \
    static inline type fm_crash_##name params                                                      \
    {                                                                                              \
        fm_before_call();                                                                          \
        return zc_fs_ops_default()->name args;                                                     \
    }
FM_CRASH_WRAP(openat, int, (int dirfd, const char *path, int flags, mode_t mode),
              (dirfd, path, flags, mode))
FM_CRASH_WRAP(close, int, (int fd), (fd))
FM_CRASH_WRAP(read, ssize_t, (int fd, void *buf, size_t count), (fd, buf, count))
FM_CRASH_WRAP(pread, ssize_t, (int fd, void *buf, size_t count, off_t offset),
              (fd, buf, count, offset))
FM_CRASH_WRAP(write, ssize_t, (int fd, const void *buf, size_t count), (fd, buf, count))
FM_CRASH_WRAP(pwrite, ssize_t, (int fd, const void *buf, size_t count, off_t offset),
              (fd, buf, count, offset))
FM_CRASH_WRAP(fstat, int, (int fd, struct stat *st), (fd, st))
FM_CRASH_WRAP(fstatat, int, (int dirfd, const char *path, struct stat *st, int flags),
              (dirfd, path, st, flags))
FM_CRASH_WRAP(mkdirat, int, (int dirfd, const char *path, mode_t mode), (dirfd, path, mode))
FM_CRASH_WRAP(renameat, int, (int olddirfd, const char *oldpath, int newdirfd, const char *newpath),
              (olddirfd, oldpath, newdirfd, newpath))
FM_CRASH_WRAP(unlinkat, int, (int dirfd, const char *path, int flags), (dirfd, path, flags))
FM_CRASH_WRAP(flock, int, (int fd, int operation), (fd, operation))
FM_CRASH_WRAP(futimens, int, (int fd, const struct timespec times[2]), (fd, times))
FM_CRASH_WRAP(ftruncate, int, (int fd, off_t length), (fd, length))
#undef FM_CRASH_WRAP

static const zc_fs_ops fm_crash_ops = {
    .openat = fm_crash_openat,
    .close = fm_crash_close,
    .read = fm_crash_read,
    .pread = fm_crash_pread,
    .write = fm_crash_write,
    .pwrite = fm_crash_pwrite,
    .fstat = fm_crash_fstat,
    .fstatat = fm_crash_fstatat,
    .mkdirat = fm_crash_mkdirat,
    .renameat = fm_crash_renameat,
    .unlinkat = fm_crash_unlinkat,
    .flock = fm_crash_flock,
    .futimens = fm_crash_futimens,
    .ftruncate = fm_crash_ftruncate,
};

/* A fixed sequence for one thread, the same every run, so that each of its
 * system calls can be the one a crash lands on: stores that evict (with
 * traces), loads, removals and a trim. */
static inline int fm_script(fm_thread *thread)
{
    uint64_t keys = thread->settings->keys;
    for (uint64_t n = 0; n < keys; n++) {
        if (fm_store(thread, n) != FM_OK || (n > 0 && fm_load(thread, n - 1) != FM_OK))
            return thread->failure;
        if (n % 5 == 4 && fm_remove(thread, n - 2) != FM_OK)
            return thread->failure;
    }
    if (fm_trim(thread) != FM_OK)
        return thread->failure;
    for (uint64_t n = 0; n < keys; n++)
        if (fm_load(thread, n) != FM_OK)
            return thread->failure;
    return FM_OK;
}

#endif
