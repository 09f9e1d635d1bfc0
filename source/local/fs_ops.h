/* The few system calls the disk tier uses, behind a table so tests can inject
 * failures (EIO, ENOSPC, EINTR, short reads and writes) call by call. The
 * seam is the core's own: the public constructors use the real calls, and
 * only the fault tests open a tier through zc_disk_tier_open_with_ops. */
#ifndef ZECACHE_FS_OPS_H
#define ZECACHE_FS_OPS_H

#include "zecache/config.h"
#include "zecache/disk_tier.h"

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

typedef struct zc_fs_ops {
    /* Opens path relative to dirfd without following any symlink in it. */
    int (*openat)(int dirfd, const char *path, int flags, mode_t mode);
    int (*close)(int fd);
    ssize_t (*read)(int fd, void *buf, size_t count);
    ssize_t (*pread)(int fd, void *buf, size_t count, off_t offset);
    ssize_t (*write)(int fd, const void *buf, size_t count);
    ssize_t (*pwrite)(int fd, const void *buf, size_t count, off_t offset);
    int (*fstat)(int fd, struct stat *st);
    int (*fstatat)(int dirfd, const char *path, struct stat *st, int flags);
    int (*mkdirat)(int dirfd, const char *path, mode_t mode);
    int (*renameat)(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
    int (*unlinkat)(int dirfd, const char *path, int flags);
    int (*flock)(int fd, int operation);
    int (*futimens)(int fd, const struct timespec times[2]);
    int (*ftruncate)(int fd, off_t length);
} zc_fs_ops;

/* The real system calls. */
const zc_fs_ops *zc_fs_ops_default(void);

/* zc_disk_tier_open and zc_disk_tier_open_read_only through ops (NULL: the
 * real calls). */
zc_status zc_disk_tier_open_with_ops(const zc_config *config, const zc_fs_ops *ops,
                                     zc_disk_tier **out);
zc_status zc_disk_tier_open_read_only_with_ops(const zc_config *config, const zc_fs_ops *ops,
                                               zc_disk_tier **out);

#endif
