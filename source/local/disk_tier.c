/* Load, store and verify of one entry. A load is the hot path: no lock, one
 * openat beneath the kept root fd, one fstat, one read (a large entry: a few
 * per frame, entry_file.h), full verification, then, when the mark is
 * stale, futimens to mark the hit (mtime is the recency eviction uses; atime
 * is useless on noatime/relatime mounts). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "disk_internal.h"
#include "entry_file.h"
#include "prefault.h"
#include "zecache/log.h"

enum { REASON_SIZE = 256 };

/* A hit marks the entry's use only when its mark is older than this. The
 * first change of a file's times in a while costs the file system a journal
 * write: 60-70 us on ext4, more than the rest of a small hit. Eviction still
 * orders exactly every entry unused for longer (a use would have marked it),
 * as relatime does for atime, which Intel's own cache evicts by. */
#define USE_MARK_INTERVAL_S 3600

static bool use_mark_stale(const struct stat *st)
{
    time_t now = time(NULL);
    return st->st_mtime > now || now - st->st_mtime >= USE_MARK_INTERVAL_S;
}

typedef struct entry_file {
    uint8_t *data;
    size_t size;
    struct stat st;
} entry_file;

/* ZC_MISS (with reason) when the file itself is bad; ZC_ERR_TOO_LARGE when
 * it is larger than max_size (0: no limit), which another process with a
 * larger NEO_CACHE_MAX_SIZE may have stored: not ours to use, nor to remove;
 * ZC_ERR_* when examining it failed, which says nothing about the entry. */
static zc_status check_entry_file(zc_disk_tier *tier, int fd, uint64_t max_size, entry_file *file,
                                  char *reason)
{
    memset(file, 0, sizeof *file);
    if (tier->ops->fstat(fd, &file->st) != 0)
        return ZC_ERR_IO;
    if (!S_ISREG(file->st.st_mode)) {
        snprintf(reason, REASON_SIZE, "not a regular file");
        return ZC_MISS;
    }
    uint64_t size = (uint64_t)file->st.st_size;
    if (size > zc_entry_size_bound(0)) { /* larger than any entry: corrupt */
        snprintf(reason, REASON_SIZE, "file of %llu bytes exceeds any entry's size",
                 (unsigned long long)size);
        return ZC_MISS;
    }
    if (max_size != 0 && size > max_size + ZC_ENTRY_SIGNATURE_SIZE) {
        snprintf(reason, REASON_SIZE, "file of %llu bytes is above this process's size limit",
                 (unsigned long long)size);
        return ZC_ERR_TOO_LARGE;
    }
    file->size = (size_t)size;
    return ZC_OK;
}

/* The whole file into file->data, for zc_entry_decode. */
static zc_status read_whole_file(zc_disk_tier *tier, int fd, entry_file *file, char *reason)
{
    file->data = malloc(file->size + 1);
    if (file->data == NULL)
        return ZC_ERR_NOMEM;
    zc_prefault_write(file->data, file->size); /* its size is the file's, not a header's claim */
    zc_status status = zc_disk_read_exact(tier->ops, fd, file->data, file->size);
    if (status == ZC_MISS)
        snprintf(reason, REASON_SIZE, "file ended before its %zu bytes", file->size);
    return status;
}

static zc_status read_entry_file(zc_disk_tier *tier, int fd, uint64_t max_size, entry_file *file,
                                 char *reason)
{
    zc_status status = check_entry_file(tier, fd, max_size, file, reason);
    return status == ZC_OK ? read_whole_file(tier, fd, file, reason) : status;
}

/* After a failed decode: ZC_ERR_TOO_LARGE when the header is sound and only
 * its payload is above this process's limit (an entry another process with a
 * larger NEO_CACHE_MAX_SIZE stored), else ZC_MISS: the entry is bad. */
static zc_status classify_decode_miss(const zc_disk_tier *tier, const entry_file *file,
                                      char *reason)
{
    zc_entry_header header;
    if (tier->max_size == 0 ||
        zc_entry_read_header(file->data, file->size, &header, NULL, 0) != ZC_OK ||
        header.binary_size > ZC_ENTRY_MAX_PAYLOAD ||
        header.log_size > ZC_ENTRY_MAX_PAYLOAD - header.binary_size || /* bad for anyone */
        (header.binary_size <= tier->max_size &&
         header.log_size <= tier->max_size - header.binary_size))
        return ZC_MISS;
    snprintf(reason, REASON_SIZE, "payload of %llu + %llu bytes is above this process's size limit",
             (unsigned long long)header.binary_size, (unsigned long long)header.log_size);
    return ZC_ERR_TOO_LARGE;
}

/* Under the lock, and only if the file there is still the one that failed
 * verification (it may have been replaced since). */
static void remove_bad_entry(zc_disk_tier *tier, const zc_key *key, const struct stat *bad)
{
    char dir[ZC_ENTRY_DIR_SIZE], name[ZC_ENTRY_NAME_SIZE];
    zc_disk_entry_dir(key, dir);
    zc_disk_entry_name(key, name);
    zc_disk_lock lock;
    if (zc_disk_lock_acquire(tier, false, &lock) != ZC_OK)
        return;
    struct stat st;
    int parent_fd = zc_disk_open_dir(tier, dir, false);
    if (parent_fd >= 0 && tier->ops->fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_dev == bad->st_dev && st.st_ino == bad->st_ino) {
        zc_disk_begin_change(tier, &lock);
        uint64_t trace_size = 0;
        if (!zc_disk_unlink_entry(tier, parent_fd, name, &trace_size) ||
            zc_disk_account_removed(tier, &lock, (uint64_t)st.st_size + trace_size) == ZC_OK)
            zc_disk_set_total(tier, &lock, lock.total);
    }
    if (parent_fd >= 0)
        tier->ops->close(parent_fd);
    zc_disk_lock_release(tier, &lock);
}

/* A large entry frame by frame straight into the artifact (entry_file.h);
 * any other, or one that declines, whole into memory, where a bad one's
 * verdict and reason come from. */
static zc_status decode_entry_file(zc_disk_tier *tier, int fd, const zc_key *key, entry_file *file,
                                   zc_artifact **out, char *reason)
{
    zc_status status = ZC_MISS;
    if (file->size >= ZC_ENTRY_FILE_BY_FRAMES_MIN)
        status = zc_entry_load_file(tier->ops, fd, file->size, key, tier->max_size, out);
    if (status == ZC_OK || status == ZC_ERR_IO)
        return status;
    status = read_whole_file(tier, fd, file, reason);
    if (status != ZC_OK)
        return status;
    status = zc_entry_decode(file->data, file->size, key, tier->max_size, out, reason, REASON_SIZE);
    return status == ZC_MISS ? classify_decode_miss(tier, file, reason) : status;
}

static void log_open_failure(const char *rel, int err)
{
    if (err == ELOOP)
        zc_log_info("ignored %s: reached through a symlink", rel);
    else if (err != ENOENT)
        zc_disk_log_errno("cannot open", rel, err);
}

static zc_status load_entry(zc_disk_tier *tier, const zc_key *key, bool remove_bad,
                            zc_artifact **out)
{
    if (tier == NULL || key == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    char rel[ZC_ENTRY_REL_SIZE];
    zc_disk_entry_rel_path(key, rel);
    /* O_NONBLOCK: a FIFO planted under an entry's name must not hang us. */
    int fd = tier->ops->openat(tier->dir_fd, rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) {
        log_open_failure(rel, errno);
        return ZC_MISS;
    }
    char reason[REASON_SIZE] = "";
    entry_file file;
    zc_status status = check_entry_file(tier, fd, tier->max_size, &file, reason);
    if (status == ZC_OK)
        status = decode_entry_file(tier, fd, key, &file, out, reason);
    if (status == ZC_ERR_IO)
        zc_disk_log_errno("cannot read", rel, errno);
    /* Still a hit when the mark fails; a read-only directory fails every time. */
    if (status == ZC_OK && use_mark_stale(&file.st) && tier->ops->futimens(fd, NULL) != 0 &&
        !tier->read_only)
        zc_disk_log_errno("cannot mark the use of", rel, errno);
    tier->ops->close(fd);
    free(file.data);
    if (!remove_bad) {
        /* Left to the lookup that asks for key. */
    } else if (status == ZC_ERR_TOO_LARGE) {
        zc_log_info("not using %s: %s (NEO_CACHE_MAX_SIZE)", rel, reason);
    } else if (status == ZC_MISS && tier->read_only) {
        zc_log_info("ignoring bad entry %s: %s", rel, reason);
    } else if (status == ZC_MISS) {
        zc_log_info("removing bad entry %s: %s", rel, reason);
        remove_bad_entry(tier, key, &file.st);
    }
    return status == ZC_OK ? ZC_OK : ZC_MISS;
}

zc_status zc_disk_tier_load(zc_disk_tier *tier, const zc_key *key, zc_artifact **out)
{
    return load_entry(tier, key, true, out);
}

zc_status zc_disk_tier_load_leaving_bad(zc_disk_tier *tier, const zc_key *key, zc_artifact **out)
{
    return load_entry(tier, key, false, out);
}

/* Under the lock. The k0/k1 directory is opened without symlinks and all
 * later calls are relative to it, so nothing can redirect the rename. */
static zc_status store_locked(zc_disk_tier *tier, zc_disk_lock *lock, const zc_key *key,
                              const uint8_t *entry, size_t entry_size, const char *trace)
{
    char dir[ZC_ENTRY_DIR_SIZE], name[ZC_ENTRY_NAME_SIZE];
    zc_disk_entry_dir(key, dir);
    zc_disk_entry_name(key, name);
    int parent_fd = zc_disk_open_dir(tier, dir, true);
    if (parent_fd < 0) {
        zc_disk_log_errno("cannot open the entry directory", dir, errno);
        return ZC_ERR_IO;
    }
    struct stat st;
    zc_status status = ZC_OK;
    if (tier->ops->fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISREG(st.st_mode)) {
            status = ZC_EXISTS; /* another process stored it first */
            goto done;
        }
    } else if (errno != ENOENT) {
        zc_disk_log_errno("cannot examine", name, errno);
        status = ZC_ERR_IO;
        goto done;
    }
    /* The trace counts with its entry (against NEO_CACHE_MAX_SIZE, and in
     * config.file), and goes with it. */
    char trace_name[ZC_ENTRY_NAME_SIZE];
    size_t trace_size = trace != NULL ? strlen(trace) : 0;
    if (trace != NULL &&
        !zc_disk_sidecar_name(name, ZC_TRACE_SUFFIX, trace_name, sizeof trace_name))
        trace = NULL, trace_size = 0;
    status = zc_disk_make_room(tier, lock, entry_size + trace_size, dir);
    if (status != ZC_OK)
        goto done;
    zc_disk_begin_change(tier, lock);
    status = zc_disk_publish(tier, entry, entry_size, parent_fd, name);
    if (status != ZC_OK) {
        zc_disk_set_total(tier, lock, lock->total); /* nothing changed */
        goto done;
    }
    if (trace != NULL && zc_disk_publish(tier, trace, trace_size, parent_fd, trace_name) != ZC_OK)
        trace = NULL, trace_size = 0; /* optional */
    zc_disk_accounting_entry_added(tier, parent_fd, name);
    status = zc_disk_set_total(tier, lock, lock->total + entry_size + trace_size);
    if (status != ZC_OK) {
        /* Undo, so the entries on disk match what config.file says. */
        tier->ops->unlinkat(parent_fd, name, 0);
        if (trace != NULL)
            tier->ops->unlinkat(parent_fd, trace_name, 0);
    }
done:
    tier->ops->close(parent_fd);
    return status;
}

static zc_status store_bytes(zc_disk_tier *tier, const zc_key *key, const uint8_t *entry,
                             size_t entry_size, const char *trace)
{
    if (tier->max_size != 0 && entry_size > tier->max_size) {
        zc_log_info("entry of %zu bytes exceeds the cache size limit: not stored", entry_size);
        return ZC_ERR_TOO_LARGE;
    }
    zc_disk_lock lock;
    zc_status status = zc_disk_lock_acquire(tier, false, &lock);
    if (status == ZC_OK) {
        status = store_locked(tier, &lock, key, entry, entry_size, trace);
        zc_disk_lock_release(tier, &lock);
    }
    return status;
}

/* A load refuses a payload above the limit (so that a corrupt header cannot
 * make it allocate more), hence a store must not write one, however well it
 * compresses. */
static bool payload_fits(const zc_disk_tier *tier, const zc_artifact *artifact)
{
    size_t binary_size, log_size;
    zc_artifact_binary(artifact, &binary_size);
    zc_artifact_build_log(artifact, &log_size);
    uint64_t payload = (uint64_t)binary_size + log_size;
    if (tier->max_size == 0 || payload <= tier->max_size)
        return true;
    zc_log_info("payload of %llu bytes exceeds the cache size limit: not stored",
                (unsigned long long)payload);
    return false;
}

/* A read-only directory's first skipped store is reported (and counted by
 * the caller as a store error); the rest are skipped quietly. */
static zc_status skip_store_if_read_only(zc_disk_tier *tier)
{
    if (!tier->read_only)
        return ZC_OK;
    if (atomic_exchange(&tier->read_only_reported, true))
        return ZC_ERR_DISABLED;
    zc_log_info("cache directory %s is read-only: not storing entries", tier->dir);
    return ZC_ERR_IO;
}

zc_status zc_disk_tier_store(zc_disk_tier *tier, const zc_key *key, const zc_artifact *artifact,
                             const char *trace)
{
    if (tier == NULL || key == NULL || artifact == NULL)
        return ZC_ERR_INVALID_ARG;
    zc_status status = skip_store_if_read_only(tier);
    if (status != ZC_OK)
        return status;
    if (!payload_fits(tier, artifact))
        return ZC_ERR_TOO_LARGE;
    uint8_t *entry = NULL;
    size_t entry_size = 0;
    /* Compress before taking the lock: other processes wait on it. */
    status = zc_entry_encode(key, artifact, tier->compression_level, &entry, &entry_size);
    if (status == ZC_OK)
        status = store_bytes(tier, key, entry, entry_size, trace);
    free(entry);
    return status;
}

zc_status zc_disk_tier_read_raw(zc_disk_tier *tier, const zc_key *key, uint8_t **data, size_t *size)
{
    if (tier == NULL || key == NULL || data == NULL || size == NULL)
        return ZC_ERR_INVALID_ARG;
    *data = NULL;
    char rel[ZC_ENTRY_REL_SIZE];
    zc_disk_entry_rel_path(key, rel);
    int fd = tier->ops->openat(tier->dir_fd, rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) {
        int err = errno;
        log_open_failure(rel, err);
        return err == ENOENT ? ZC_MISS : ZC_ERR_IO;
    }
    char reason[REASON_SIZE] = "";
    entry_file file;
    zc_status status = read_entry_file(tier, fd, tier->max_size, &file, reason);
    if (status == ZC_ERR_IO)
        zc_disk_log_errno("cannot read", rel, errno);
    if (status == ZC_ERR_TOO_LARGE)
        status = ZC_MISS; /* above this process's limit: not for it */
    if (status == ZC_MISS)
        zc_log_info("ignored %s: %s", rel, reason);
    tier->ops->close(fd);
    if (status != ZC_OK) {
        free(file.data);
        return status;
    }
    *data = file.data;
    *size = file.size;
    return ZC_OK;
}

zc_status zc_disk_tier_store_raw(zc_disk_tier *tier, const zc_key *key, const uint8_t *data,
                                 size_t size)
{
    if (tier == NULL || key == NULL || data == NULL)
        return ZC_ERR_INVALID_ARG;
    zc_status status = skip_store_if_read_only(tier);
    return status == ZC_OK ? store_bytes(tier, key, data, size, NULL) : status;
}

zc_status zc_disk_tier_store_entry(zc_disk_tier *tier, const zc_key *key, const void *entry,
                                   size_t entry_size, char *reason, size_t reason_size)
{
    if (tier == NULL || key == NULL || entry == NULL)
        return ZC_ERR_INVALID_ARG;
    char why[REASON_SIZE] = "";
    zc_artifact *artifact = NULL;
    /* No payload bound but the format's: too large for this cache is not bad. */
    zc_status status = zc_entry_decode(entry, entry_size, key, 0, &artifact, why, sizeof why);
    if (status == ZC_OK && !payload_fits(tier, artifact))
        status = ZC_ERR_TOO_LARGE;
    zc_artifact_unref(artifact);
    if (status == ZC_OK)
        status = skip_store_if_read_only(tier);
    if (status == ZC_OK)
        status = store_bytes(tier, key, entry, entry_size, NULL);
    if (reason != NULL && reason_size > 0)
        snprintf(reason, reason_size, "%s", status == ZC_MISS ? why : zc_status_name(status));
    return status;
}

/* The key a path must hold: only "<k0>/<k1>/<64 hex>.l0_cache" (or
 * .cl_cache, an OpenCL key) with k0 and k1 the name's first two digits is
 * where a load would look. */
static bool expected_key_of(const char *path, zc_key *key)
{
    const char *name = strrchr(path, '/');
    name = name != NULL ? name + 1 : path;
    if (!zc_disk_parse_entry_name(name, key))
        return false;
    char rel[ZC_ENTRY_REL_SIZE];
    zc_disk_entry_rel_path(key, rel);
    return strcmp(rel, path) == 0;
}

/* Reads and verifies the open entry; on ZC_OK, *bytes (when not NULL) takes
 * the file's bytes over. */
static zc_status verify_open_entry(zc_disk_tier *tier, int fd, const zc_key *key,
                                   zc_entry_header *header, char *why, uint8_t **bytes,
                                   size_t *size)
{
    entry_file file;
    /* Whatever this process's size limit: an entry above it is sound when it
     * verifies (another process may use a larger limit). */
    zc_status status = read_entry_file(tier, fd, 0, &file, why);
    if (status != ZC_OK && status != ZC_MISS)
        snprintf(why, REASON_SIZE, "cannot read: %s", strerror(errno));
    zc_artifact *artifact = NULL;
    if (status == ZC_OK)
        status = zc_entry_decode(file.data, file.size, key, 0, &artifact, why, REASON_SIZE);
    zc_artifact_unref(artifact);
    if (status == ZC_OK && header != NULL)
        status = zc_entry_read_header(file.data, file.size, header, why, REASON_SIZE);
    if (status == ZC_OK && bytes != NULL) {
        *bytes = file.data;
        *size = file.size;
        file.data = NULL;
    }
    free(file.data);
    return status;
}

static zc_status verify_path(zc_disk_tier *tier, const char *path, zc_entry_header *header,
                             char *reason, size_t reason_size, uint8_t **bytes, size_t *size)
{
    if (tier == NULL || path == NULL)
        return ZC_ERR_INVALID_ARG;
    char why[REASON_SIZE] = "";
    zc_key key;
    zc_status status = ZC_MISS;
    if (!expected_key_of(path, &key)) {
        snprintf(why, sizeof why, "not named and placed as a zecache entry");
    } else {
        int fd = tier->ops->openat(tier->dir_fd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(why, sizeof why, "cannot open: %s", strerror(errno));
        } else {
            status = verify_open_entry(tier, fd, &key, header, why, bytes, size);
            tier->ops->close(fd);
        }
    }
    if (reason != NULL && reason_size > 0)
        snprintf(reason, reason_size, "%s", status == ZC_OK ? "" : why);
    return status == ZC_OK ? ZC_OK : ZC_MISS;
}

zc_status zc_disk_tier_verify_entry(zc_disk_tier *tier, const char *path, zc_entry_header *header,
                                    char *reason, size_t reason_size)
{
    return verify_path(tier, path, header, reason, reason_size, NULL, NULL);
}

zc_status zc_disk_tier_read_entry(zc_disk_tier *tier, const char *path, uint8_t **entry,
                                  size_t *entry_size, char *reason, size_t reason_size)
{
    if (entry == NULL || entry_size == NULL)
        return ZC_ERR_INVALID_ARG;
    *entry = NULL;
    *entry_size = 0;
    return verify_path(tier, path, NULL, reason, reason_size, entry, entry_size);
}

/* Under the lock: the file at rel is checked again (it may have been
 * replaced by a good entry since the caller's unlocked check) and removed
 * only if it is still bad and still the file that was checked. */
static zc_status remove_if_still_bad(zc_disk_tier *tier, zc_disk_lock *lock, const char *rel,
                                     bool *removed, char *why)
{
    const char *name;
    zc_key key;
    bool named_right = expected_key_of(rel, &key);
    int parent_fd = zc_disk_open_parent(tier, rel, &name);
    if (parent_fd < 0)
        return errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
    zc_status status = ZC_OK;
    struct stat checked, named;
    int fd = tier->ops->openat(parent_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) {
        status = errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
    } else {
        zc_status verdict =
            named_right ? verify_open_entry(tier, fd, &key, NULL, why, NULL, NULL) : ZC_MISS;
        if (verdict != ZC_OK && verdict != ZC_MISS)
            status = verdict; /* could not be read: no reason to remove it */
        bool bad = verdict == ZC_MISS;
        bool stated = tier->ops->fstat(fd, &checked) == 0 &&
                      tier->ops->fstatat(parent_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0;
        if (bad && !stated)
            status = errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
        bool same = stated && S_ISREG(checked.st_mode) && checked.st_dev == named.st_dev &&
                    checked.st_ino == named.st_ino;
        tier->ops->close(fd);
        if (bad && same) {
            zc_disk_begin_change(tier, lock);
            uint64_t trace_size = 0;
            if (!zc_disk_unlink_entry(tier, parent_fd, name, &trace_size)) {
                zc_disk_set_total(tier, lock, lock->total); /* nothing changed */
                status = ZC_ERR_IO;
            } else {
                *removed = true;
                status = zc_disk_account_removed(tier, lock, (uint64_t)named.st_size + trace_size);
                if (status == ZC_OK)
                    status = zc_disk_set_total(tier, lock, lock->total);
            }
        }
    }
    tier->ops->close(parent_fd);
    return status;
}

zc_status zc_disk_tier_remove_if_bad(zc_disk_tier *tier, const char *path, bool *removed)
{
    if (removed != NULL)
        *removed = false;
    if (tier == NULL || path == NULL || removed == NULL || !zc_disk_is_entry_file_name(path) ||
        path[0] == '/' || strncmp(path, "../", 3) == 0 || strstr(path, "/../") != NULL)
        return ZC_ERR_INVALID_ARG; /* not beneath the cache directory */
    zc_disk_lock lock;
    zc_status status = zc_disk_lock_acquire(tier, false, &lock);
    if (status != ZC_OK)
        return status;
    char why[REASON_SIZE] = "";
    status = remove_if_still_bad(tier, &lock, path, removed, why);
    zc_disk_lock_release(tier, &lock);
    if (status == ZC_OK && !*removed)
        zc_log_info("kept %s: it verifies now (replaced since it was checked)", path);
    return status;
}
