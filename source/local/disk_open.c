/* Opening the cache directory. Unlike the driver, which needs NEO_CACHE_DIR
 * to exist, missing directories are created. A directory another user could
 * write to would let them plant binaries the driver then runs, so:
 *
 * - private (the default): created 0700, files 0600; the directory must be
 *   owned by this user (or root, who can replace our binaries anyway) and
 *   not writable by group or others;
 * - NEO_CACHE_SHARED=1, for the users of one group: created 02775, files
 *   0664, so the process umask (007 for a team) decides group access and the
 *   setgid bit passes the directory's group down; any owner is accepted, a
 *   group-writable directory only when its group is one of this process's
 *   groups, and a world-writable one never (sticky or not: anyone could
 *   plant an entry in a level it creates).
 *
 * A directory that cannot be written (read-only mount, no permission) is
 * opened read-only: hits are served, nothing is stored. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

enum {
    PRIVATE_DIR_MODE = 0700,
    PRIVATE_FILE_MODE = 0600,
    SHARED_DIR_MODE = 02775,
    SHARED_FILE_MODE = 0664,
};

/* mkdir ignores S_ISGID (a new directory only inherits it from a setgid
 * parent), so a shared directory we create is given it explicitly, keeping
 * what the umask left of the rest. Through a descriptor opened without
 * following a symlink: the name may have been replaced since the mkdir. */
static void make_setgid(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 ||
        (!(st.st_mode & S_ISGID) &&
         fchmod(fd, (st.st_mode & 07777 & ~(mode_t)S_IWOTH) | S_ISGID) != 0))
        zc_disk_log_errno("cannot set the setgid bit of", path, errno);
    if (fd >= 0)
        close(fd);
}

/* mkdir -p. The path up to the cache directory is the user's: symlinks in it
 * are followed, as for any path they give. */
static bool make_directories(const zc_fs_ops *ops, const char *dir, mode_t mode)
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
        int made = ops->mkdirat(AT_FDCWD, path, mode);
        if (made == 0 && (mode & S_ISGID))
            make_setgid(path);
        path[i] = saved;
        if (made != 0 && errno != EEXIST)
            return false;
    }
    return true;
}

static bool in_my_groups(gid_t gid)
{
    if (gid == getegid())
        return true;
    int count = getgroups(0, NULL);
    gid_t *groups = count > 0 ? calloc((size_t)count, sizeof *groups) : NULL;
    if (groups != NULL)
        count = getgroups(count, groups);
    bool found = false;
    for (int i = 0; groups != NULL && i < count && !found; i++)
        found = groups[i] == gid;
    free(groups);
    return found;
}

static zc_status check_directory(const zc_fs_ops *ops, int dir_fd, const zc_config *config)
{
    struct stat st;
    if (ops->fstat(dir_fd, &st) != 0)
        return refuse(config->dir, "cannot be examined", errno);
    if (!S_ISDIR(st.st_mode))
        return refuse(config->dir, "is not a directory", ENOTDIR);
    if (st.st_mode & S_IWOTH)
        return refuse(config->dir, "is writable by everyone (refused even with NEO_CACHE_SHARED=1)",
                      EPERM);
    if (config->allow_shared)
        return (st.st_mode & S_IWGRP) && !in_my_groups(st.st_gid)
                   ? refuse(config->dir, "is writable by a group this process is not in", EPERM)
                   : ZC_OK;
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return refuse(config->dir, "is owned by another user (NEO_CACHE_SHARED=1 allows it)",
                      EPERM);
    if (st.st_mode & S_IWGRP)
        return refuse(config->dir, "is writable by group or others (NEO_CACHE_SHARED=1 allows it)",
                      EPERM);
    return ZC_OK;
}

/* Creating config.file proves the directory writable (access() would not:
 * it ignores read-only mounts for root and says nothing about ACLs). A
 * directory we may only read still serves hits: *read_only says so. */
static zc_status check_writable(const zc_fs_ops *ops, int dir_fd, const char *dir, mode_t mode,
                                bool *read_only)
{
    *read_only = false;
    int fd = ops->openat(dir_fd, ZC_CONFIG_FILE_NAME, O_RDWR | O_CREAT | O_CLOEXEC, mode);
    if (fd >= 0) {
        ops->close(fd);
        return ZC_OK;
    }
    int err = errno;
    /* Not ours to remove, and "not writable" would send the user looking
     * at permissions. */
    if (err == ELOOP || err == EISDIR)
        return refuse(dir, "holds a " ZC_CONFIG_FILE_NAME " that is a symlink or a directory", err);
    if (err != EROFS && err != EACCES && err != EPERM)
        return refuse(dir, "is not writable (" ZC_CONFIG_FILE_NAME ")", err);
    char what[PATH_MAX + 128];
    snprintf(what, sizeof what,
             "cache directory %s is read-only (" ZC_CONFIG_FILE_NAME
             "): serving hits, storing nothing",
             dir);
    zc_log_failure(what, err);
    *read_only = true;
    return ZC_OK;
}

static zc_status open_checked_directory(const zc_config *config, zc_disk_tier *tier, int *dir_fd)
{
    const zc_fs_ops *ops = tier->ops;
    if (!tier->read_only && !make_directories(ops, config->dir, tier->dir_mode))
        return refuse(config->dir, "cannot be created", errno);
    /* Plain open: the user's path may lead through symlinks (not so below it). */
    *dir_fd = open(config->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*dir_fd < 0)
        return refuse(config->dir, errno == ENOTDIR ? "is not a directory" : "cannot be opened",
                      errno);
    zc_status status = check_directory(ops, *dir_fd, config);
    if (status == ZC_OK && !tier->read_only)
        status = check_writable(ops, *dir_fd, config->dir, tier->file_mode, &tier->read_only);
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
    zc_disk_tier *tier = calloc(1, sizeof *tier);
    if (tier == NULL)
        return ZC_ERR_NOMEM;
    tier->ops = ops;
    tier->max_size = config->max_size;
    tier->compression_level = config->compression_level;
    tier->lock_timeout_ms = config->lock_timeout_ms;
    tier->dir_mode = config->allow_shared ? SHARED_DIR_MODE : PRIVATE_DIR_MODE;
    tier->file_mode = config->allow_shared ? SHARED_FILE_MODE : PRIVATE_FILE_MODE;
    tier->read_only = read_only; /* else found out by check_writable */
    zc_status status = open_checked_directory(config, tier, &tier->dir_fd);
    if (status == ZC_OK && pthread_mutex_init(&tier->mutex, NULL) != 0) {
        close(tier->dir_fd);
        status = ZC_ERR_NOMEM;
    }
    if (status != ZC_OK) {
        free(tier);
        return status;
    }
    if (realpath(config->dir, tier->dir) == NULL)
        snprintf(tier->dir, sizeof tier->dir, "%s", config->dir);
    zc_disk_fork_track_tier(tier);
    *out = tier;
    return ZC_OK;
}

zc_status zc_disk_tier_open_with_ops(const zc_config *config, const zc_fs_ops *ops,
                                     zc_disk_tier **out)
{
    return open_tier(config, ops, false, out);
}

zc_status zc_disk_tier_open_read_only_with_ops(const zc_config *config, const zc_fs_ops *ops,
                                               zc_disk_tier **out)
{
    return open_tier(config, ops, true, out);
}

zc_status zc_disk_tier_open(const zc_config *config, zc_disk_tier **out)
{
    return open_tier(config, NULL, false, out);
}

zc_status zc_disk_tier_open_read_only(const zc_config *config, zc_disk_tier **out)
{
    return open_tier(config, NULL, true, out);
}

void zc_disk_tier_close(zc_disk_tier *tier)
{
    if (tier == NULL)
        return;
    zc_disk_fork_untrack_tier(tier);
    close(tier->dir_fd);
    pthread_mutex_destroy(&tier->mutex);
    free(tier);
}

const char *zc_disk_tier_dir(const zc_disk_tier *tier)
{
    return tier->dir;
}

bool zc_disk_tier_is_read_only(const zc_disk_tier *tier)
{
    return tier->read_only;
}
