/* config.file: the total size of all .l0_cache files as one native size_t at
 * offset 0, read and written under flock(LOCK_EX) exactly as Intel's driver
 * does, so both can share a directory. Its value is never trusted blindly: a
 * missing, short, long or implausible file is rebuilt from a scan. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "disk_internal.h"
#include "monotonic_clock.h"
#include "zecache/log.h"

/* The driver stores a size_t; this port is for 64-bit hosts only. */
_Static_assert(sizeof(size_t) == sizeof(uint64_t), "config.file holds an 8-byte size_t");

/* Far above any real cache: the driver's unsigned arithmetic can wrap below 0. */
#define ZC_TOTAL_SANITY_LIMIT (UINT64_C(1) << 56)

/* With a limit, entries are evicted before the total passes it; a process
 * with a somewhat larger limit may overshoot it, but not by a factor of two. */
static bool total_plausible(uint64_t max_size, uint64_t total)
{
    if (total > ZC_TOTAL_SANITY_LIMIT)
        return false;
    return max_size == 0 || total <= max_size || total - max_size <= max_size;
}

zc_status zc_disk_parse_total(const void *bytes, size_t size, uint64_t max_size, uint64_t *total)
{
    size_t value;
    if (size != sizeof value)
        return ZC_MISS;
    memcpy(&value, bytes, sizeof value);
    if (!total_plausible(max_size, value))
        return ZC_MISS;
    *total = value;
    return ZC_OK;
}

static int flock_retrying(const zc_fs_ops *ops, int fd, int operation)
{
    int result;
    do
        result = ops->flock(fd, operation);
    while (result != 0 && errno == EINTR);
    return result;
}

zc_status zc_disk_read_total(zc_disk_tier *tier, int fd, uint64_t *total, bool *oversized)
{
    unsigned char bytes[sizeof(size_t) + 1]; /* one more, to notice a long file */
    size_t got = 0;
    *oversized = false;
    if (zc_disk_pread_upto(tier->ops, fd, bytes, sizeof bytes, &got) != ZC_OK) {
        zc_disk_log_errno("cannot read", ZC_CONFIG_FILE_NAME, errno);
        return ZC_ERR_IO;
    }
    *oversized = got > sizeof(size_t);
    return zc_disk_parse_total(bytes, got, tier->max_size, total);
}

enum { FIRST_POLL_US = 500, MAX_POLL_US = 10000 };

/* The lock is normally held for milliseconds; one held for longer belongs to
 * a process that is stopped (SIGSTOP, a debugger), stalled (NFS) or a child
 * that inherited it. Waiting without bound would stall this program too. */
zc_status zc_disk_flock_within_deadline(zc_disk_tier *tier, int fd, int operation,
                                        atomic_bool *stuck, const char *name)
{
    if (tier->lock_timeout_ms == 0)
        return flock_retrying(tier->ops, fd, operation) == 0 ? ZC_OK : ZC_ERR_IO;
    bool try_once = atomic_load_explicit(stuck, memory_order_relaxed);
    zc_backoff backoff =
        zc_backoff_start(tier->lock_timeout_ms, FIRST_POLL_US * 1000, MAX_POLL_US * 1000);
    for (;;) {
        if (flock_retrying(tier->ops, fd, operation | LOCK_NB) == 0) {
            atomic_store_explicit(stuck, false, memory_order_relaxed);
            return ZC_OK;
        }
        if (errno != EWOULDBLOCK)
            return ZC_ERR_IO;
        if (try_once || !zc_backoff_sleep(&backoff))
            break;
    }
    atomic_fetch_add_explicit(&tier->lock_timeouts, 1, memory_order_relaxed);
    if (!try_once)
        zc_log_info("%s in %s held by another process for over %llu ms: skipped, and later "
                    "operations try once until it is free",
                    name, tier->dir, (unsigned long long)tier->lock_timeout_ms);
    else
        zc_log_info("%s in %s still held by another process: skipped", name, tier->dir);
    atomic_store_explicit(stuck, true, memory_order_relaxed);
    errno = EWOULDBLOCK;
    return ZC_ERR_BUSY;
}

uint64_t zc_disk_tier_lock_timeouts(zc_disk_tier *tier)
{
    return atomic_load_explicit(&tier->lock_timeouts, memory_order_relaxed);
}

static zc_status open_and_lock(zc_disk_tier *tier, int *fd)
{
    *fd = tier->ops->openat(tier->dir_fd, ZC_CONFIG_FILE_NAME, O_RDWR | O_CREAT | O_CLOEXEC,
                            tier->file_mode);
    if (*fd < 0) {
        zc_disk_log_errno("cannot open", ZC_CONFIG_FILE_NAME, errno);
        return ZC_ERR_IO;
    }
    zc_status status = zc_disk_flock_within_deadline(tier, *fd, LOCK_EX, &tier->config_lock_stuck,
                                                     ZC_CONFIG_FILE_NAME);
    if (status != ZC_OK) {
        if (status == ZC_ERR_IO)
            zc_disk_log_errno("cannot lock", ZC_CONFIG_FILE_NAME, errno);
        tier->ops->close(*fd);
        return status;
    }
    return ZC_OK;
}

/* A config.file removed or replaced while we waited for its lock (a user
 * deleting it, say) would leave us holding a lock nobody else takes: lock
 * the file the name now refers to instead. */
static zc_status lock_config_file(zc_disk_tier *tier, zc_disk_lock *lock)
{
    enum { ATTEMPTS = 4 };
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
        zc_status status = open_and_lock(tier, &lock->fd);
        if (status != ZC_OK)
            return status;
        struct stat st;
        if (tier->ops->fstat(lock->fd, &st) != 0) {
            zc_disk_log_errno("cannot examine", ZC_CONFIG_FILE_NAME, errno);
            tier->ops->close(lock->fd);
            return ZC_ERR_IO;
        }
        if (st.st_nlink > 0)
            return ZC_OK;
        tier->ops->close(lock->fd);
    }
    zc_log_info("%s in %s keeps being replaced", ZC_CONFIG_FILE_NAME, tier->dir);
    return ZC_ERR_IO;
}

zc_status zc_disk_lock_acquire(zc_disk_tier *tier, bool rescan, zc_disk_lock *lock)
{
    memset(lock, 0, sizeof *lock);
    if (tier == NULL)
        return ZC_ERR_INVALID_ARG;
    zc_disk_section_enter(tier);
    zc_status status = lock_config_file(tier, lock);
    if (status != ZC_OK) {
        zc_disk_section_leave(tier);
        return status;
    }
    /* Read even for a rescan: only reading tells a too-long file, which the
     * total written later must then cut back to 8 bytes. */
    bool valid = zc_disk_read_total(tier, lock->fd, &lock->total, &lock->file_oversized) == ZC_OK;
    zc_disk_accounting_open(tier);
    if (!rescan && valid) {
        zc_disk_accounting_settle(tier, lock->total, false);
        return ZC_OK;
    }
    if (!rescan)
        zc_log_info("%s in %s is missing or malformed: rescanning", ZC_CONFIG_FILE_NAME, tier->dir);
    status = zc_disk_rescan_total(tier, &lock->total, NULL);
    if (status != ZC_OK) {
        zc_disk_lock_release(tier, lock);
        return status;
    }
    /* What left config.file wrong (a crash, a hand) may have changed more
     * than the total: the figures are rebuilt too, by zecache stats. */
    zc_disk_accounting_settle(tier, lock->total, !valid);
    /* Worth repairing now even if the caller fails later; a failure here is
     * logged and the caller's own write tries again. A caller that asked for
     * the rescan writes the total itself. */
    if (!rescan)
        zc_disk_set_total(tier, lock, lock->total);
    return ZC_OK;
}

void zc_disk_lock_release(zc_disk_tier *tier, zc_disk_lock *lock)
{
    zc_disk_accounting_close(tier);
    /* Closing the only descriptor of this open file releases the flock. */
    tier->ops->close(lock->fd);
    lock->fd = -1;
    zc_disk_section_leave(tier);
}

zc_status zc_disk_set_total(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t total)
{
    size_t value = total;
    lock->total = total;
    if (zc_disk_pwrite_all(tier->ops, lock->fd, &value, sizeof value, 0) == ZC_OK &&
        (!lock->file_oversized || tier->ops->ftruncate(lock->fd, sizeof value) == 0)) {
        lock->file_oversized = false;
        zc_disk_accounting_commit(tier);
        return ZC_OK;
    }
    zc_disk_log_errno("cannot write", ZC_CONFIG_FILE_NAME, errno);
    zc_disk_invalidate_total(tier, lock);
    return ZC_ERR_IO;
}

void zc_disk_invalidate_total(zc_disk_tier *tier, zc_disk_lock *lock)
{
    zc_disk_accounting_forget(tier);
    /* Empty reads as "short" to us and as 0 to the driver: both harmless. */
    if (tier->ops->ftruncate(lock->fd, 0) != 0)
        zc_disk_log_errno("cannot invalidate", ZC_CONFIG_FILE_NAME, errno);
}

/* A ninth byte makes config.file too long for us to trust, while the driver
 * still reads the (correct) old total from the first eight; and unlike a
 * truncation it frees no block, so the total can still be written back on a
 * full disk. */
void zc_disk_begin_change(zc_disk_tier *tier, zc_disk_lock *lock)
{
    static const unsigned char marker = 0;
    zc_disk_accounting_changing(tier);
    if (zc_disk_pwrite_all(tier->ops, lock->fd, &marker, sizeof marker, sizeof(size_t)) == ZC_OK) {
        lock->file_oversized = true;
        return;
    }
    zc_disk_invalidate_total(tier, lock);
}

zc_status zc_disk_account_removed(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t size)
{
    if (size <= lock->total) {
        lock->total -= size;
        return ZC_OK;
    }
    /* The recorded total was too small (another writer's arithmetic): only a
     * scan knows the truth now. */
    zc_status status = zc_disk_rescan_total(tier, &lock->total, NULL);
    if (status != ZC_OK)
        zc_disk_invalidate_total(tier, lock);
    return status;
}

zc_status zc_disk_tier_recorded_size(zc_disk_tier *tier, uint64_t *size)
{
    if (tier == NULL || size == NULL)
        return ZC_ERR_INVALID_ARG;
    zc_disk_section_enter(tier); /* a locked descriptor: fork() waits (disk_fork.c) */
    int fd = tier->ops->openat(tier->dir_fd, ZC_CONFIG_FILE_NAME, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        zc_disk_section_leave(tier);
        return errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
    }
    /* Shared: waits for a writer holding LOCK_EX, so the value is not torn. */
    bool oversized;
    zc_status status = zc_disk_flock_within_deadline(tier, fd, LOCK_SH, &tier->config_lock_stuck,
                                                     ZC_CONFIG_FILE_NAME);
    if (status == ZC_OK)
        status = zc_disk_read_total(tier, fd, size, &oversized);
    tier->ops->close(fd);
    zc_disk_section_leave(tier);
    return status;
}

zc_status zc_disk_tier_scanned_size(zc_disk_tier *tier, uint64_t *size, uint64_t *entries)
{
    if (tier == NULL || size == NULL)
        return ZC_ERR_INVALID_ARG;
    return zc_disk_scan_total(tier, size, entries);
}

zc_status zc_disk_tier_repair_accounting(zc_disk_tier *tier, uint64_t *size)
{
    zc_disk_lock lock;
    zc_status status = zc_disk_lock_acquire(tier, true, &lock);
    if (status != ZC_OK)
        return status;
    status = zc_disk_set_total(tier, &lock, lock.total);
    if (status == ZC_OK && !tier->read_only)
        status = zc_disk_accounting_rebuild(tier, NULL);
    if (size != NULL)
        *size = lock.total;
    zc_disk_lock_release(tier, &lock);
    return status;
}
