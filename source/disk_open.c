/* Opening the cache directory. Unlike the driver, which needs NEO_CACHE_DIR
 * to exist, missing directories are created (0700). A directory another user
 * could write to would let them plant binaries the driver then runs, so it is
 * refused unless NEO_CACHE_SHARED=1 says the sharing is intended. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "disk_internal.h"
#include "zecache/log.h"

static zc_status refuse(const char *dir, const char *why, int err)
{
    char what[PATH_MAX + 128];
    snprintf(what, sizeof what, "cache directory %s %s: persistent cache disabled", dir, why);
    zc_log_failure(what, err);
    return ZC_ERR_DISABLED;
}

/* mkdir -p. The path up to the cache directory is the user's: symlinks in it
 * are followed, as for any path they give. */
static bool make_directories(const zc_fs_ops *ops, const char *dir)
{
    char path[PATH_MAX];
    size_t length = strlen(dir);
    if (length >= sizeof path) {
        errno = ENAMETOOLONG;
        return false;
    }
    memcpy(path, dir, length + 1);
    for (size_t i = 1; i <= length; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        if (path[i - 1] == '/')
            continue; /* "//" */
        char saved = path[i];
        path[i] = '\0';
        int made = ops->mkdirat(AT_FDCWD, path, 0700);
        path[i] = saved;
        if (made != 0 && errno != EEXIST)
            return false;
    }
    return true;
}

static zc_status check_directory(const zc_fs_ops *ops, int dir_fd, const zc_config *config)
{
    struct stat st;
    if (ops->fstat(dir_fd, &st) != 0)
        return refuse(config->dir, "cannot be examined", errno);
    if (!S_ISDIR(st.st_mode))
        return refuse(config->dir, "is not a directory", ENOTDIR);
    if (config->allow_shared)
        return ZC_OK;
    if (st.st_uid != geteuid())
        return refuse(config->dir, "is owned by another user (NEO_CACHE_SHARED=1 allows it)",
                      EPERM);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return refuse(config->dir, "is writable by group or others (NEO_CACHE_SHARED=1 allows it)",
                      EPERM);
    return ZC_OK;
}

/* Creating config.file proves the directory writable (access() would not:
 * it ignores read-only mounts for root and says nothing about ACLs). */
static zc_status check_writable(const zc_fs_ops *ops, int dir_fd, const char *dir)
{
    int fd = ops->openat(dir_fd, ZC_CONFIG_FILE_NAME, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ops->close(fd);
        return ZC_OK;
    }
    /* Not ours to remove, and "not writable" would send the user looking
     * at permissions. */
    if (errno == ELOOP || errno == EISDIR)
        return refuse(dir, "holds a " ZC_CONFIG_FILE_NAME " that is a symlink or a directory",
                      errno);
    return refuse(dir, "is not writable (" ZC_CONFIG_FILE_NAME ")", errno);
}

static zc_status open_checked_directory(const zc_config *config, const zc_fs_ops *ops,
                                        bool read_only, int *dir_fd)
{
    if (!read_only && !make_directories(ops, config->dir))
        return refuse(config->dir, "cannot be created", errno);
    /* Plain open: the user's path may lead through symlinks (not so below it). */
    *dir_fd = open(config->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*dir_fd < 0)
        return refuse(config->dir, errno == ENOTDIR ? "is not a directory" : "cannot be opened",
                      errno);
    zc_status status = check_directory(ops, *dir_fd, config);
    if (status == ZC_OK && !read_only)
        status = check_writable(ops, *dir_fd, config->dir);
    if (status != ZC_OK)
        close(*dir_fd);
    return status;
}

static zc_status open_tier(const zc_config *config, const zc_fs_ops *ops, bool read_only,
                           zc_disk_tier **out)
{
    if (config == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    if (!config->persistent)
        return ZC_ERR_DISABLED;
    if (config->dir[0] == '\0') {
        zc_log_failure("no cache directory (NEO_CACHE_DIR, XDG_CACHE_HOME and HOME unset): "
                       "persistent cache disabled",
                       0);
        return ZC_ERR_DISABLED;
    }
    if (ops == NULL)
        ops = zc_fs_ops_default();
    int dir_fd = -1;
    zc_status status = open_checked_directory(config, ops, read_only, &dir_fd);
    if (status != ZC_OK)
        return status;
    zc_disk_tier *tier = calloc(1, sizeof *tier);
    if (tier == NULL || pthread_mutex_init(&tier->mutex, NULL) != 0) {
        free(tier);
        close(dir_fd);
        return ZC_ERR_NOMEM;
    }
    tier->ops = ops;
    tier->dir_fd = dir_fd;
    tier->max_size = config->max_size;
    tier->compression_level = config->compression_level;
    if (realpath(config->dir, tier->dir) == NULL)
        snprintf(tier->dir, sizeof tier->dir, "%s", config->dir);
    *out = tier;
    return ZC_OK;
}

zc_status zc_disk_tier_open(const zc_config *config, const zc_fs_ops *ops, zc_disk_tier **out)
{
    return open_tier(config, ops, false, out);
}

zc_status zc_disk_tier_open_read_only(const zc_config *config, const zc_fs_ops *ops,
                                      zc_disk_tier **out)
{
    return open_tier(config, ops, true, out);
}

void zc_disk_tier_close(zc_disk_tier *tier)
{
    if (tier == NULL)
        return;
    close(tier->dir_fd);
    pthread_mutex_destroy(&tier->mutex);
    free(tier);
}

const char *zc_disk_tier_dir(const zc_disk_tier *tier)
{
    return tier->dir;
}
