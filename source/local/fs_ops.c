/* The real system calls behind zc_fs_ops. Only openat needs work of its own:
 * a path inside the cache must never pass through a symlink, whether one
 * planted by another user (when the directory is shared) or left by a tool. */
#include "fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "disk_internal.h"

/* Set once the kernel said it has no openat2 (before Linux 5.6), so later
 * calls go straight to the fallback. */
static atomic_bool openat2_missing;

/* With O_DIRECTORY, a symlink fails as ENOTDIR; say ELOOP as openat2 does. */
static int open_directory_nofollow(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 && errno == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode))
        errno = ELOOP;
    return fd;
}

/* O_NOFOLLOW on every component stands in for RESOLVE_NO_SYMLINKS, and
 * refusing absolute paths and ".." for RESOLVE_BENEATH. */
int zc_fs_openat_by_components(int dirfd, const char *path, int flags, mode_t mode)
{
    char copy[PATH_MAX];
    size_t length = strlen(path);
    if (length == 0 || path[0] == '/') {
        errno = length == 0 ? ENOENT : EXDEV;
        return -1;
    }
    if (length >= sizeof copy) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(copy, path, length + 1);

    int current = dirfd;
    char *component = copy;
    for (;;) {
        char *slash = strchr(component, '/');
        if (slash != NULL)
            *slash = '\0';
        if (strcmp(component, "..") == 0) {
            if (current != dirfd)
                zc_disk_close_keeping_errno(zc_fs_ops_default(), current);
            errno = EXDEV;
            return -1;
        }
        bool last = slash == NULL;
        int next = last ? openat(current, component, flags | O_NOFOLLOW, mode)
                        : open_directory_nofollow(current, component);
        if (current != dirfd)
            zc_disk_close_keeping_errno(zc_fs_ops_default(), current);
        if (next < 0 || last)
            return next;
        current = next;
        component = slash + 1;
        while (*component == '/')
            component++;
        if (*component == '\0') { /* a trailing slash names the directory itself */
            int result = openat(current, ".", flags, mode);
            zc_disk_close_keeping_errno(zc_fs_ops_default(), current);
            return result;
        }
    }
}

static int openat_without_symlinks(int dirfd, const char *path, int flags, mode_t mode)
{
    if (!atomic_load_explicit(&openat2_missing, memory_order_relaxed)) {
        struct open_how how = {
            .flags = (uint64_t)(unsigned)flags,
            /* openat2 rejects a mode unless a file may be created. */
            .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
            .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH,
        };
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0 || errno != ENOSYS)
            return (int)fd;
        atomic_store_explicit(&openat2_missing, true, memory_order_relaxed);
    }
    return zc_fs_openat_by_components(dirfd, path, flags, mode);
}

static const zc_fs_ops default_ops = {
    .openat = openat_without_symlinks,
    .close = close,
    .read = read,
    .pread = pread,
    .write = write,
    .pwrite = pwrite,
    .fstat = fstat,
    .fstatat = fstatat,
    .mkdirat = mkdirat,
    .renameat = renameat,
    .unlinkat = unlinkat,
    .flock = flock,
    .futimens = futimens,
    .ftruncate = ftruncate,
};

void zc_disk_close_keeping_errno(const zc_fs_ops *ops, int fd)
{
    int saved = errno;
    ops->close(fd);
    errno = saved;
}

const zc_fs_ops *zc_fs_ops_default(void)
{
    return &default_ops;
}
