/* File-level helpers of the disk tier: entry names, complete reads and
 * writes through zc_fs_ops, and publishing a file atomically. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "disk_internal.h"
#include "zecache/recipe.h"
#include "zecache/log.h"

enum { TEMP_SUFFIX_DIGITS = 16, TEMP_NAME_ATTEMPTS = 8 };
#define ZC_TEMP_NAME_SIZE (sizeof ZC_TEMP_PREFIX + TEMP_SUFFIX_DIGITS)

void zc_disk_entry_dir(const zc_key *key, char dir[ZC_ENTRY_DIR_SIZE])
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    dir[0] = hex[0];
    dir[1] = '/';
    dir[2] = hex[1];
    dir[3] = '\0';
}

_Static_assert(sizeof ZC_ENTRY_SUFFIX == sizeof ZC_ENTRY_SUFFIX_OPENCL,
               "both kinds' names have one length");

/* A key of no known kind (never made by the core) names a Level Zero
 * entry rather than none. */
static const char *entry_suffix(const zc_key *key)
{
    const char *suffix = zc_entry_kind_suffix((zc_entry_kind)key->kind);
    return suffix != NULL ? suffix : ZC_ENTRY_SUFFIX;
}

void zc_disk_entry_name(const zc_key *key, char name[ZC_ENTRY_NAME_SIZE])
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(name, ZC_ENTRY_NAME_SIZE, "%s%s", hex, entry_suffix(key));
}

void zc_disk_entry_rel_path(const zc_key *key, char rel[ZC_ENTRY_REL_SIZE])
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(rel, ZC_ENTRY_REL_SIZE, "%c/%c/%s%s", hex[0], hex[1], hex, entry_suffix(key));
}

void zc_disk_tier_entry_path(const zc_key *key, char path[ZC_DISK_ENTRY_PATH_SIZE])
{
    zc_disk_entry_rel_path(key, path);
}

bool zc_disk_is_entry_file_name(const char *name)
{
    return zc_disk_has_suffix(name, ZC_ENTRY_SUFFIX) ||
           zc_disk_has_suffix(name, ZC_ENTRY_SUFFIX_OPENCL);
}

bool zc_disk_has_suffix(const char *name, const char *suffix)
{
    size_t length = strlen(name), suffix_length = strlen(suffix);
    return length > suffix_length && strcmp(name + length - suffix_length, suffix) == 0;
}

bool zc_disk_parse_entry_name(const char *name, zc_key *key)
{
    char hex[ZC_KEY_HEX_SIZE];
    if (strlen(name) != ZC_ENTRY_NAME_SIZE - 1 || !zc_disk_is_entry_file_name(name))
        return false;
    memcpy(hex, name, 2 * ZC_KEY_SIZE);
    hex[2 * ZC_KEY_SIZE] = '\0';
    if (!zc_key_from_hex(hex, key))
        return false;
    key->kind =
        zc_disk_has_suffix(name, ZC_ENTRY_SUFFIX_OPENCL) ? ZC_ENTRY_OPENCL : ZC_ENTRY_LEVEL_ZERO;
    return true;
}

bool zc_disk_sidecar_name(const char *entry_name, const char *suffix, char *out, size_t out_size)
{
    size_t stem = strlen(entry_name) - strlen(ZC_ENTRY_SUFFIX);
    int written = snprintf(out, out_size, "%.*s%s", (int)stem, entry_name, suffix);
    return written >= 0 && (size_t)written < out_size;
}

static bool sidecar_size(zc_disk_tier *tier, int parent_fd, const char *entry_name,
                         const char *suffix, uint64_t *size)
{
    char name[ZC_REL_PATH_SIZE];
    struct stat st;
    *size = 0;
    if (!zc_disk_sidecar_name(entry_name, suffix, name, sizeof name))
        return true; /* no such name: no sidecar */
    if (tier->ops->fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT;
    if (S_ISREG(st.st_mode))
        *size = (uint64_t)st.st_size;
    return true;
}

/* The trace and the recipe (recorded inputs) both count with their entry. */
bool zc_disk_trace_size(zc_disk_tier *tier, int parent_fd, const char *entry_name, uint64_t *size)
{
    uint64_t trace, recipe;
    if (!sidecar_size(tier, parent_fd, entry_name, ZC_TRACE_SUFFIX, &trace) ||
        !sidecar_size(tier, parent_fd, entry_name, ZC_RECIPE_SUFFIX, &recipe))
        return false;
    *size = trace + recipe;
    return true;
}

void zc_disk_log_errno(const char *action, const char *path, int err)
{
    char what[PATH_MAX + 64];
    snprintf(what, sizeof what, "%s %s", action, path);
    zc_log_failure(what, err);
}

zc_status zc_disk_write_all(const zc_fs_ops *ops, int fd, const void *data, size_t size)
{
    const uint8_t *bytes = data;
    while (size > 0) {
        ssize_t written = ops->write(fd, bytes, size);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0) {
            if (written == 0)
                errno = ENOSPC; /* no progress: do not spin */
            return ZC_ERR_IO;
        }
        bytes += written;
        size -= (size_t)written;
    }
    return ZC_OK;
}

zc_status zc_disk_pwrite_all(const zc_fs_ops *ops, int fd, const void *data, size_t size,
                             off_t offset)
{
    const uint8_t *bytes = data;
    while (size > 0) {
        ssize_t written = ops->pwrite(fd, bytes, size, offset);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0) {
            if (written == 0)
                errno = ENOSPC;
            return ZC_ERR_IO;
        }
        bytes += written;
        size -= (size_t)written;
        offset += written;
    }
    return ZC_OK;
}

zc_status zc_disk_read_exact(const zc_fs_ops *ops, int fd, void *data, size_t size)
{
    uint8_t *bytes = data;
    while (size > 0) {
        ssize_t got = ops->read(fd, bytes, size);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return ZC_ERR_IO;
        if (got == 0)
            return ZC_MISS;
        bytes += got;
        size -= (size_t)got;
    }
    return ZC_OK;
}

zc_status zc_disk_pread_upto(const zc_fs_ops *ops, int fd, void *data, size_t size, size_t *done)
{
    uint8_t *bytes = data;
    *done = 0;
    while (*done < size) {
        ssize_t got = ops->pread(fd, bytes + *done, size - *done, (off_t)*done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return ZC_ERR_IO;
        if (got == 0)
            break;
        *done += (size_t)got;
    }
    return ZC_OK;
}

static const int dir_open_flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

/* Level by level, each mkdirat relative to a directory already opened without
 * symlinks, so a symlink planted at any level is refused, never followed. A
 * concurrent creator makes mkdirat fail with EEXIST, which is fine. */
static int create_dir_levels(zc_disk_tier *tier, const char *rel_dir)
{
    char copy[PATH_MAX];
    size_t length = strlen(rel_dir);
    if (length >= sizeof copy) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(copy, rel_dir, length + 1);
    int current = tier->ops->openat(tier->dir_fd, ".", dir_open_flags, 0);
    char *saveptr = NULL;
    for (char *level = strtok_r(copy, "/", &saveptr); level != NULL && current >= 0;
         level = strtok_r(NULL, "/", &saveptr)) {
        if (tier->ops->mkdirat(current, level, tier->dir_mode) != 0 && errno != EEXIST) {
            zc_disk_close_keeping_errno(tier->ops, current);
            return -1;
        }
        int next = tier->ops->openat(current, level, dir_open_flags, 0);
        zc_disk_close_keeping_errno(tier->ops, current);
        current = next;
    }
    return current;
}

int zc_disk_open_dir(zc_disk_tier *tier, const char *rel_dir, bool create)
{
    int fd = tier->ops->openat(tier->dir_fd, rel_dir[0] != '\0' ? rel_dir : ".", dir_open_flags, 0);
    if (fd >= 0 || !create || errno != ENOENT)
        return fd;
    return create_dir_levels(tier, rel_dir);
}

int zc_disk_open_parent(zc_disk_tier *tier, const char *rel, const char **name)
{
    const char *slash = strrchr(rel, '/');
    if (slash == NULL) {
        *name = rel;
        return zc_disk_open_dir(tier, "", false);
    }
    char dir[PATH_MAX];
    size_t length = (size_t)(slash - rel);
    if (length >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dir, rel, length);
    dir[length] = '\0';
    *name = slash + 1;
    return zc_disk_open_dir(tier, dir, false);
}

/* The name only has to be unpredictable enough not to collide: O_EXCL makes
 * a collision a retry, never a clobber. */
static void make_temp_name(char name[ZC_TEMP_NAME_SIZE])
{
    static atomic_uint_fast64_t counter;
    uint64_t random = 0;
    if (getrandom(&random, sizeof random, GRND_NONBLOCK) != (ssize_t)sizeof random) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        random = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^ ((uint64_t)getpid() << 40) ^
                 atomic_fetch_add(&counter, 1);
    }
    snprintf(name, ZC_TEMP_NAME_SIZE, "%s%016" PRIx64, ZC_TEMP_PREFIX, random);
}

static int create_temp(zc_disk_tier *tier, char name[ZC_TEMP_NAME_SIZE])
{
    for (int attempt = 0; attempt < TEMP_NAME_ATTEMPTS; attempt++) {
        make_temp_name(name);
        int fd = tier->ops->openat(tier->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                                   tier->file_mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

zc_status zc_disk_publish(zc_disk_tier *tier, const void *data, size_t size, int parent_fd,
                          const char *name)
{
    char temp[ZC_TEMP_NAME_SIZE];
    int fd = create_temp(tier, temp);
    if (fd < 0) {
        zc_disk_log_errno("cannot create a temp file in", tier->dir, errno);
        return ZC_ERR_IO;
    }
    zc_status status = zc_disk_write_all(tier->ops, fd, data, size);
    if (status != ZC_OK)
        zc_disk_log_errno("cannot write", temp, errno);
    /* A failing close can mean lost data (e.g. on NFS): not publishable. */
    if (tier->ops->close(fd) != 0 && status == ZC_OK) {
        zc_disk_log_errno("cannot close", temp, errno);
        status = ZC_ERR_IO;
    }
    if (status == ZC_OK && tier->ops->renameat(tier->dir_fd, temp, parent_fd, name) != 0) {
        zc_disk_log_errno("cannot rename a temp file to", name, errno);
        status = ZC_ERR_IO;
    }
    if (status != ZC_OK && tier->ops->unlinkat(tier->dir_fd, temp, 0) != 0)
        zc_disk_log_errno("cannot remove", temp, errno);
    return status;
}

zc_status zc_disk_read_small_file(zc_disk_tier *tier, int dir_fd, const char *name,
                                  uint64_t max_size, uint8_t **data, size_t *size)
{
    *data = NULL;
    int fd = tier->ops->openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0)
        return errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
    struct stat st;
    zc_status status = ZC_ERR_IO;
    if (tier->ops->fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= max_size) {
        *data = malloc((size_t)st.st_size + 1);
        status = *data != NULL ? zc_disk_pread_upto(tier->ops, fd, *data, (size_t)st.st_size, size)
                               : ZC_ERR_NOMEM;
    }
    tier->ops->close(fd);
    if (status != ZC_OK) {
        free(*data);
        *data = NULL;
    }
    return status;
}
