/* fork() and the disk tier.
 *
 * A flock belongs to the open file description, which a child of fork()
 * shares: while a child keeps a copy of a locked descriptor, the lock stays
 * held even after the parent has closed its own copy, and every other
 * process waits for it. The tier locks two kinds of descriptors:
 *
 * - config.file's and the stats file's, which are open only inside a locked
 *   section (zc_disk_section_enter/leave, under the tier's mutex). Every open
 *   tier's mutex is taken around fork(), so no section is mid-flight when
 *   the child is made: it inherits none of those descriptors, and no mutex
 *   held by a thread it does not have. fork() waits for the sections in
 *   flight, which end within the lock deadline plus their own work.
 * - build locks (disk_claim.c), held across a whole compile, far too long to
 *   wait for. Their descriptors (held or polled) are tracked here, and the
 *   child closes its copies: close, never LOCK_UN, which would release the
 *   parent's lock too. Opening and closing a tracked descriptor take the
 *   same lock as fork(), so the child never misses a copy nor closes a
 *   descriptor that was no build lock's. A claim records the process that
 *   took it: the child's copy is not its own (disk_claim.c).
 *
 * A fork() from inside a locked section (nothing in one calls back into the
 * application; a test's fs_ops could) does not lock that thread's own tier,
 * which would deadlock: its child goes on with the section it was in,
 * sharing config.file's lock with the parent until it leaves the section,
 * execs (the descriptor is close-on-exec) or exits. A child that only execs
 * or exits is never stuck.
 *
 * Lock order: the live tiers' lock, then the tiers' mutexes, then fds_lock. No locked
 * section takes a lock of another part of the library, and none of those
 * parts calls into a section while holding its own lock, so the order of
 * the fork handlers of different parts does not matter. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "disk_internal.h"
#include "zecache/log.h"

static void register_fork_handlers(void);
static zc_live_set live_tiers = ZC_LIVE_SET_INIT(register_fork_handlers);

typedef struct tracked_fd {
    const zc_fs_ops *ops; /* the tier's, which opened it */
    int fd;
} tracked_fd;

static pthread_mutex_t fds_lock = PTHREAD_MUTEX_INITIALIZER;
static tracked_fd *tracked;
static size_t tracked_count, tracked_capacity;

/* The tier whose section this thread is in, if any (sections never nest). */
static _Thread_local zc_disk_tier *section_of_this_thread;

/* The mutex of a live tier, unless this thread is in its section. */
static pthread_mutex_t *fork_mutex_of(zc_live_link *link)
{
    zc_disk_tier *tier = ZC_LIVE_OWNER(link, zc_disk_tier, live);
    return tier != section_of_this_thread ? &tier->mutex : NULL;
}

static void lock_for_fork(void)
{
    pthread_mutex_lock(&live_tiers.lock);
    for (zc_live_link *link = live_tiers.head; link != NULL; link = link->next)
        if (fork_mutex_of(link) != NULL)
            pthread_mutex_lock(fork_mutex_of(link));
    pthread_mutex_lock(&fds_lock);
}

static void unlock_after_fork(void)
{
    pthread_mutex_unlock(&fds_lock);
    for (zc_live_link *link = live_tiers.head; link != NULL; link = link->next)
        if (fork_mutex_of(link) != NULL)
            pthread_mutex_unlock(fork_mutex_of(link));
    pthread_mutex_unlock(&live_tiers.lock);
}

static void drop_build_locks_in_child(void)
{
    for (size_t i = 0; i < tracked_count; i++)
        tracked[i].ops->close(tracked[i].fd);
    tracked_count = 0;
    unlock_after_fork();
}

static void register_fork_handlers(void)
{
    if (pthread_atfork(lock_for_fork, unlock_after_fork, drop_build_locks_in_child) != 0)
        zc_log_failure("disk tier: registering fork handlers", ENOMEM);
}

void zc_disk_fork_track_tier(zc_disk_tier *tier)
{
    zc_live_set_add(&live_tiers, &tier->live);
}

void zc_disk_fork_untrack_tier(zc_disk_tier *tier)
{
    zc_live_set_remove(&live_tiers, &tier->live);
}

void zc_disk_section_enter(zc_disk_tier *tier)
{
    pthread_mutex_lock(&tier->mutex);
    section_of_this_thread = tier;
}

void zc_disk_section_leave(zc_disk_tier *tier)
{
    section_of_this_thread = NULL;
    pthread_mutex_unlock(&tier->mutex);
}

/* Under fds_lock. */
static bool track(const zc_fs_ops *ops, int fd)
{
    if (tracked_count == tracked_capacity) {
        size_t capacity = tracked_capacity == 0 ? 8 : 2 * tracked_capacity;
        tracked_fd *grown = realloc(tracked, capacity * sizeof *grown);
        if (grown == NULL)
            return false;
        tracked = grown;
        tracked_capacity = capacity;
    }
    tracked[tracked_count++] = (tracked_fd){ops, fd};
    return true;
}

int zc_disk_fork_openat(const zc_fs_ops *ops, int dir_fd, const char *name, int flags, mode_t mode)
{
    pthread_mutex_lock(&fds_lock);
    int fd = ops->openat(dir_fd, name, flags, mode);
    int err = errno;
    if (fd >= 0 && !track(ops, fd)) {
        ops->close(fd);
        fd = -1;
        err = ENOMEM;
    }
    pthread_mutex_unlock(&fds_lock);
    errno = err;
    return fd;
}

void zc_disk_fork_close(const zc_fs_ops *ops, int fd)
{
    pthread_mutex_lock(&fds_lock);
    for (size_t i = 0; i < tracked_count; i++) {
        if (tracked[i].fd == fd) {
            tracked[i] = tracked[--tracked_count];
            break;
        }
    }
    ops->close(fd);
    pthread_mutex_unlock(&fds_lock);
}
