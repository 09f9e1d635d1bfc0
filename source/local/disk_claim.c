/* Per-key build locks: when the ranks of a parallel job miss on the same key
 * at once, one compiles and the rest wait for its entry.
 *
 * The lock is flock on <k0>/<k1>/<hex>.lock. flock, not fcntl locks: it
 * belongs to the open file, so two opens in one process exclude each other
 * too, and the kernel drops it when its holder dies, so a crashed compile
 * never blocks anyone. Waiters poll with LOCK_NB (a blocking flock could not
 * time out, nor notice the entry appearing).
 *
 * Only the holder of the lock on the file a name refers to may unlink that
 * name, and it does so before letting go. Anyone who takes a lock therefore
 * checks that the file is still the one named (not unlinked by its previous
 * holder meanwhile); if not, it opens the name again.
 *
 * The lock files' descriptors, polled or held, are closed by a child of
 * fork() (disk_fork.c), which holds none of its parent's claims. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "disk_internal.h"
#include "monotonic_clock.h"
#include "zecache/log.h"

enum {
    FIRST_DELAY_MS = 2,
    MAX_DELAY_MS = 20,
    /* Each replacement means another process took and released the lock:
     * progress, but not something to follow forever. */
    MAX_REPLACEMENTS = 64,
};

/* O_NONBLOCK: a FIFO planted under the name must not hang the open. */
static const int lock_open_flags = O_RDONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC;

typedef enum lock_attempt {
    LOCK_TAKEN,
    LOCK_BUSY,     /* another open file holds it */
    LOCK_REPLACED, /* locked a file no longer at the name: open the name again */
    LOCK_FAILED,
} lock_attempt;

typedef struct claim_wait {
    zc_disk_tier *tier;
    zc_disk_claim *claim; /* gets the file only once it is locked */
    int fd;               /* the lock file being polled, or -1 */
    char hex[ZC_KEY_HEX_SIZE];
    char entry_name[ZC_ENTRY_NAME_SIZE];
    char mark_name[2 * ZC_KEY_SIZE + sizeof ZC_FAILED_SUFFIX];
    zc_backoff backoff;
    bool said_waiting;
} claim_wait;

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static int flock_nonblocking(const zc_fs_ops *ops, int fd)
{
    int result;
    do
        result = ops->flock(fd, LOCK_EX | LOCK_NB);
    while (result != 0 && errno == EINTR);
    return result;
}

/* True when name in dir_fd is the regular file fd has open. */
static bool is_named_file(const zc_fs_ops *ops, int dir_fd, const char *name, int fd)
{
    struct stat held, named;
    return ops->fstat(fd, &held) == 0 && S_ISREG(held.st_mode) &&
           ops->fstatat(dir_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0 && same_file(&held, &named);
}

static bool entry_exists(const claim_wait *wait)
{
    struct stat st;
    return wait->tier->ops->fstatat(wait->claim->dir_fd, wait->entry_name, &st,
                                    AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(st.st_mode);
}

/* A mark younger than ZC_FAILED_MARK_MAX_AGE_SEC (one from the future, a
 * clock set back or a planted file, counts as stale). */
static bool mark_is_fresh(const struct stat *st, time_t now)
{
    return S_ISREG(st->st_mode) && st->st_mtim.tv_sec <= now + 1 &&
           now - st->st_mtim.tv_sec < ZC_FAILED_MARK_MAX_AGE_SEC;
}

static bool fresh_mark_exists(const claim_wait *wait)
{
    struct stat st;
    return wait->tier->ops->fstatat(wait->claim->dir_fd, wait->mark_name, &st,
                                    AT_SYMLINK_NOFOLLOW) == 0 &&
           mark_is_fresh(&st, time(NULL));
}

static void close_fd(zc_disk_tier *tier, int *fd)
{
    if (*fd >= 0)
        tier->ops->close(*fd);
    *fd = -1;
}

static void close_lock_fd(zc_disk_tier *tier, int *fd)
{
    if (*fd >= 0)
        zc_disk_fork_close(tier->ops, *fd);
    *fd = -1;
}

/* A child of fork() holds none of its parent's claims: the fork closed its
 * copy of the lock, whose number may since name another file. */
static bool holds_lock(const zc_disk_claim *claim)
{
    return claim->lock_fd >= 0 && claim->owner == getpid();
}

/* Keeps the file open while it is busy, so polling costs one flock call. */
static lock_attempt try_lock(claim_wait *wait)
{
    zc_disk_tier *tier = wait->tier;
    zc_disk_claim *claim = wait->claim;
    if (wait->fd < 0) {
        wait->fd = zc_disk_fork_openat(tier->ops, claim->dir_fd, claim->lock_name, lock_open_flags,
                                       tier->file_mode);
        if (wait->fd < 0) {
            zc_disk_log_errno("cannot open the build lock", claim->lock_name, errno);
            return LOCK_FAILED;
        }
    }
    if (flock_nonblocking(tier->ops, wait->fd) != 0) {
        if (errno == EWOULDBLOCK)
            return LOCK_BUSY;
        zc_disk_log_errno("cannot lock", claim->lock_name, errno);
        return LOCK_FAILED;
    }
    if (!is_named_file(tier->ops, claim->dir_fd, claim->lock_name, wait->fd)) {
        close_lock_fd(tier, &wait->fd);
        return LOCK_REPLACED;
    }
    claim->lock_fd = wait->fd;
    claim->owner = getpid();
    wait->fd = -1;
    return LOCK_TAKEN;
}

/* False once the deadline has passed. */
static bool pause_before_retry(claim_wait *wait)
{
    if (zc_monotonic_ns() >= wait->backoff.deadline_ns)
        return false;
    if (!wait->said_waiting)
        zc_log_info("waiting for another process compiling %s", wait->hex);
    wait->said_waiting = true;
    return zc_backoff_sleep(&wait->backoff);
}

/* With the lock taken: what the previous holder left decides. */
static zc_disk_claim_result claim_outcome(const claim_wait *wait)
{
    if (entry_exists(wait)) /* stored just before it let go */
        return ZC_DISK_READY;
    if (fresh_mark_exists(wait)) /* failed just before it let go */
        return ZC_DISK_NOT_STORED;
    /* A stale mark is only in the way: this holder's outcome is news. */
    if (wait->tier->ops->unlinkat(wait->claim->dir_fd, wait->mark_name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", wait->mark_name, errno);
    return ZC_DISK_CLAIMED;
}

static zc_status wait_for_claim(claim_wait *wait, zc_disk_claim_result *result)
{
    for (int replacements = 0; replacements < MAX_REPLACEMENTS;) {
        if (entry_exists(wait)) {
            *result = ZC_DISK_READY;
            return ZC_OK;
        }
        if (fresh_mark_exists(wait)) {
            zc_log_info("another process could not store %s: compiling", wait->hex);
            *result = ZC_DISK_NOT_STORED;
            return ZC_OK;
        }
        switch (try_lock(wait)) {
        case LOCK_TAKEN:
            *result = claim_outcome(wait);
            return ZC_OK;
        case LOCK_BUSY:
            if (!pause_before_retry(wait)) {
                zc_log_info("stopped waiting for another process compiling %s", wait->hex);
                *result = ZC_DISK_TIMED_OUT;
                return ZC_OK;
            }
            break;
        case LOCK_REPLACED:
            replacements++;
            break;
        case LOCK_FAILED:
            return ZC_ERR_IO;
        }
    }
    zc_log_info("build lock %s keeps being replaced", wait->claim->lock_name);
    return ZC_ERR_IO;
}

zc_status zc_disk_tier_claim(zc_disk_tier *tier, const zc_key *key, uint64_t timeout_ms,
                             zc_disk_claim_result *result, zc_disk_claim *claim)
{
    if (claim != NULL)
        *claim = (zc_disk_claim){.lock_fd = -1, .dir_fd = -1};
    if (tier == NULL || key == NULL || result == NULL || claim == NULL)
        return ZC_ERR_INVALID_ARG;
    *result = ZC_DISK_TIMED_OUT;
    if (tier->read_only)
        return ZC_ERR_DISABLED; /* nothing to lock, and nothing will be stored */
    claim_wait wait = {.tier = tier,
                       .claim = claim,
                       .fd = -1,
                       .backoff = zc_backoff_start(timeout_ms, FIRST_DELAY_MS * UINT64_C(1000000),
                                                   MAX_DELAY_MS * UINT64_C(1000000))};
    zc_key_to_hex(key, wait.hex);
    zc_disk_entry_name(key, wait.entry_name);
    snprintf(claim->lock_name, sizeof claim->lock_name, "%s%s", wait.hex, ZC_LOCK_SUFFIX);
    snprintf(wait.mark_name, sizeof wait.mark_name, "%s%s", wait.hex, ZC_FAILED_SUFFIX);
    char dir[ZC_ENTRY_DIR_SIZE];
    zc_disk_entry_dir(key, dir);
    claim->dir_fd = zc_disk_open_dir(tier, dir, true);
    if (claim->dir_fd < 0) {
        zc_disk_log_errno("cannot open the entry directory", dir, errno);
        return ZC_ERR_IO;
    }
    zc_status status = wait_for_claim(&wait, result);
    close_lock_fd(tier, &wait.fd); /* polled, never locked */
    if (status != ZC_OK || *result != ZC_DISK_CLAIMED)
        zc_disk_tier_release(tier, claim);
    return status;
}

void zc_disk_tier_release(zc_disk_tier *tier, zc_disk_claim *claim)
{
    if (tier == NULL || claim == NULL)
        return;
    if (!holds_lock(claim))
        claim->lock_fd = -1; /* nothing, or a forked child's copy: closed already */
    /* Unlinked while still held, and only if the name is still ours (a user
     * may have removed it, and another process made a new one). */
    if (claim->lock_fd >= 0 &&
        is_named_file(tier->ops, claim->dir_fd, claim->lock_name, claim->lock_fd) &&
        tier->ops->unlinkat(claim->dir_fd, claim->lock_name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", claim->lock_name, errno);
    close_lock_fd(tier, &claim->lock_fd); /* lets the next process in */
    close_fd(tier, &claim->dir_fd);
}

void zc_disk_tier_mark_not_stored(zc_disk_tier *tier, const zc_disk_claim *claim)
{
    if (tier == NULL || claim == NULL || !holds_lock(claim))
        return;
    char mark[sizeof claim->lock_name - sizeof ZC_LOCK_SUFFIX + sizeof ZC_FAILED_SUFFIX];
    snprintf(mark, sizeof mark, "%.*s%s", 2 * ZC_KEY_SIZE, claim->lock_name, ZC_FAILED_SUFFIX);
    /* O_NONBLOCK: a FIFO planted under the name must not hang us. */
    int fd = tier->ops->openat(claim->dir_fd, mark, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC,
                               tier->file_mode);
    if (fd < 0) {
        zc_disk_log_errno("cannot leave the mark", mark, errno);
        return;
    }
    if (tier->ops->futimens(fd, NULL) != 0) /* an older mark is fresh again */
        zc_disk_log_errno("cannot refresh the mark", mark, errno);
    tier->ops->close(fd);
}

void zc_disk_remove_stale_mark(zc_disk_tier *tier, const zc_scan_item *item, time_t now)
{
    struct stat st = {.st_mode = S_IFREG, .st_mtim = item->mtime};
    if (mark_is_fresh(&st, now))
        return;
    if (tier->ops->unlinkat(item->dir_fd, item->name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", item->rel, errno);
}

void zc_disk_remove_unused_lock(zc_disk_tier *tier, const zc_scan_item *item, int64_t min_age_sec,
                                time_t now)
{
    if (min_age_sec > 0 && now - item->mtime.tv_sec < min_age_sec)
        return;
    int fd = tier->ops->openat(item->dir_fd, item->name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0)
        return; /* gone already, or not ours to open */
    /* Held: its holder removes it. Locked but renamed away: not this name's. */
    if (flock_nonblocking(tier->ops, fd) == 0 &&
        is_named_file(tier->ops, item->dir_fd, item->name, fd) &&
        tier->ops->unlinkat(item->dir_fd, item->name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", item->rel, errno);
    tier->ops->close(fd);
}
