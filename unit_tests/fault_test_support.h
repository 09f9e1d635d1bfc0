/* Helpers shared by the test_faults_*.c files: a scratch cache per test, an
 * independent census of the cache directory (nftw, never the tier's own
 * scan), the invariants every fault must leave intact, and a zc_fs_ops table
 * that fails, interrupts or shortens one chosen call. */
#ifndef ZC_FAULT_TEST_SUPPORT_H
#define ZC_FAULT_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../source/local/fs_ops.h"
#include "disk_test_support.h"
#include "fault_content.h"
#include "fault_mix.h"
#include "test_support.h"
#include "zecache/disk_tier.h"

#define FT_MAX_BINARY 2000

static char ft_root[256];
static char ft_cache[512]; /* short, so paths built from it fit PATH_MAX */

/* A tmpfs when there is one: the matrix tests make thousands of metadata
 * changes, which a journalling file system makes slow. */
static inline const char *ft_scratch_parent(void)
{
    return access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
}

static inline void ft_make_root(void)
{
    snprintf(ft_root, sizeof ft_root, "%s/zc_faults_XXXXXX", ft_scratch_parent());
    cr_assert_not_null(mkdtemp(ft_root));
    snprintf(ft_cache, sizeof ft_cache, "%s/cache", ft_root);
}

static inline int ft_remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (type == FTW_DP)
        chmod(path, 0700);
    return remove(path);
}

static inline void ft_unmount_tmpfs(void);

/* Also undoes a tmpfs mount a failed test left behind. */
static inline void ft_remove_root(void)
{
    if (ft_root[0] == '\0')
        return;
    ft_unmount_tmpfs();
    nftw(ft_root, ft_remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* A soak's size from the environment (scripts/crash-soak.sh), else fallback. */
static inline uint64_t ft_env_number(const char *name, uint64_t fallback)
{
    const char *text = getenv(name);
    return text != NULL && text[0] != '\0' ? strtoull(text, NULL, 10) : fallback;
}

static inline zc_config ft_config(const char *dir, uint64_t max_size)
{
    return t_disk_config(dir, max_size, 1);
}

static inline zc_disk_tier *ft_open(uint64_t max_size, const zc_fs_ops *ops)
{
    zc_config config = ft_config(ft_cache, max_size);
    zc_disk_tier *tier = NULL;
    zc_status status = zc_disk_tier_open_with_ops(&config, ops, &tier);
    cr_assert_eq(status, ZC_OK, "open %s: %s", ft_cache, zc_status_name(status));
    return tier;
}

static inline void ft_path(char *out, const char *rel)
{
    snprintf(out, PATH_MAX, "%s/%s", ft_cache, rel);
}

static inline void ft_entry_path(char *out, uint64_t n, const char *suffix)
{
    zc_key key = fc_key(n);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&key, hex);
    snprintf(out, PATH_MAX, "%s/%c/%c/%s%s", ft_cache, hex[0], hex[1], hex, suffix);
}

static inline void ft_make_entry_dirs(uint64_t n)
{
    char path[PATH_MAX];
    ft_entry_path(path, n, "");
    char *last = strrchr(path, '/');
    *last = '\0';
    char *second = strrchr(path, '/');
    *second = '\0';
    mkdir(path, 0700);
    *second = '/';
    mkdir(path, 0700);
}

static inline void ft_write_file(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, data, size), (ssize_t)size, "%s", path);
    cr_assert_eq(close(fd), 0);
}

static inline uint8_t *ft_read_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    *size = (size_t)st.st_size;
    uint8_t *data = malloc(*size + 1);
    cr_assert_eq(read(fd, data, *size), (ssize_t)*size, "%s", path);
    close(fd);
    return data;
}

/* ---- census ---- */

typedef struct ft_census {
    uint64_t total; /* bytes of .l0_cache regular files, as config.file counts them */
    uint64_t entries;
    uint64_t traces;
    uint64_t temps;
    uint64_t others; /* anything else but config.file and the k0/k1 directories */
    char other[PATH_MAX];
} ft_census;

static ft_census ft_walked;

static inline bool ft_is_hex_level(const char *name)
{
    return isxdigit((unsigned char)name[0]) && name[1] == '\0';
}

static inline bool ft_has_suffix(const char *name, const char *suffix)
{
    size_t length = strlen(name), suffix_length = strlen(suffix);
    return length > suffix_length && strcmp(name + length - suffix_length, suffix) == 0;
}

/* A trace counts against the limit (and in config.file) with its entry:
 * its size when the entry beside it exists, else 0. */
static inline uint64_t ft_trace_counted_size(const char *path, const struct stat *st)
{
    char entry[PATH_MAX];
    size_t stem = strlen(path) - strlen(ZC_TRACE_SUFFIX);
    snprintf(entry, sizeof entry, "%.*s%s", (int)stem, path, ZC_ENTRY_SUFFIX);
    struct stat entry_st;
    return lstat(entry, &entry_st) == 0 && S_ISREG(entry_st.st_mode) ? (uint64_t)st->st_size : 0;
}

static inline int ft_census_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    const char *name = path + ftw->base;
    bool regular = type == FTW_F && S_ISREG(st->st_mode);
    if (ftw->level == 0)
        return 0;
    if ((type == FTW_D || type == FTW_DNR) && ftw->level <= 2 && ft_is_hex_level(name))
        return 0;
    if (regular && ft_has_suffix(name, ZC_ENTRY_SUFFIX) && ftw->level <= 3) {
        ft_walked.total += (uint64_t)st->st_size;
        ft_walked.entries++;
    } else if (regular && ft_has_suffix(name, ZC_TRACE_SUFFIX) && ftw->level == 3) {
        ft_walked.traces++;
        ft_walked.total += ft_trace_counted_size(path, st); /* with its entry */
    } else if (regular && ftw->level == 1 &&
               (strcmp(name, ZC_CONFIG_FILE_NAME) == 0 || strcmp(name, "stats") == 0 ||
                strcmp(name, "zecache.accounting") == 0)) {
        /* config.file, the stats file (zecache/stats.h), zecache.accounting
         * (zecache/disk_figures.h) */
    } else if (regular && ftw->level == 1 &&
               strncmp(name, ZC_TEMP_PREFIX, strlen(ZC_TEMP_PREFIX)) == 0) {
        ft_walked.temps++;
    } else {
        ft_walked.others++;
        snprintf(ft_walked.other, sizeof ft_walked.other, "%s", path);
    }
    return 0;
}

static inline ft_census ft_take_census(void)
{
    memset(&ft_walked, 0, sizeof ft_walked);
    cr_assert_eq(nftw(ft_cache, ft_census_one, 16, FTW_PHYS), 0, "walk %s", ft_cache);
    return ft_walked;
}

/* config.file's value, or false when it does not hold exactly 8 bytes. */
static inline bool ft_config_value(uint64_t *value)
{
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0)
        return false;
    uint8_t bytes[16];
    ssize_t got = read(fd, bytes, sizeof bytes);
    close(fd);
    if (got != 8)
        return false;
    memcpy(value, bytes, 8);
    return true;
}

/* config.file holds the real total, and nothing is there but entries, their
 * traces, config.file and the k0/k1 directories. */
static inline ft_census ft_assert_exact_and_clean(const char *context)
{
    ft_census census = ft_take_census();
    uint64_t recorded = 0;
    cr_assert(ft_config_value(&recorded), "%s: config.file must hold 8 bytes", context);
    cr_assert_eq(recorded, census.total, "%s: config.file %llu, real total %llu", context,
                 (unsigned long long)recorded, (unsigned long long)census.total);
    cr_assert_eq(census.temps, 0, "%s: temp files left", context);
    cr_assert_eq(census.others, 0, "%s: unexpected %s", context, census.other);
    return census;
}

/* After a failure config.file may be invalid (not 8 bytes: the next locked
 * operation rescans), but if it holds a value, that value is the truth. */
static inline void ft_assert_recorded_not_wrong(const char *context)
{
    uint64_t recorded;
    ft_census census = ft_take_census();
    if (ft_config_value(&recorded))
        cr_assert_eq(recorded, census.total, "%s: config.file %llu, real total %llu", context,
                     (unsigned long long)recorded, (unsigned long long)census.total);
}

/* ---- stores and loads of fault content ---- */

static inline zc_status ft_try_store(zc_disk_tier *tier, uint64_t n, const char *trace)
{
    zc_key key = fc_key(n);
    zc_artifact *artifact = fc_artifact(n, FT_MAX_BINARY);
    cr_assert_not_null(artifact);
    zc_status status = zc_disk_tier_store(tier, &key, artifact, trace);
    zc_artifact_unref(artifact);
    return status;
}

/* Key n's entry is in place afterwards: stored now, or found there. */
static inline void ft_store(zc_disk_tier *tier, uint64_t n)
{
    zc_status status = ft_try_store(tier, n, NULL);
    cr_assert(status == ZC_OK || status == ZC_EXISTS, "store %llu: %s", (unsigned long long)n,
              zc_status_name(status));
}

/* A load's result: ZC_OK only with exactly key n's artifact. */
static inline zc_status ft_try_load(zc_disk_tier *tier, uint64_t n)
{
    zc_key key = fc_key(n);
    zc_artifact *loaded = (zc_artifact *)1;
    zc_status status = zc_disk_tier_load(tier, &key, &loaded);
    cr_assert(status == ZC_OK || status == ZC_MISS, "load %llu: %s", (unsigned long long)n,
              zc_status_name(status));
    cr_assert_eq(status == ZC_OK, loaded != NULL, "an artifact exactly when a hit");
    if (loaded != NULL)
        cr_assert(fc_artifact_matches(loaded, n, FT_MAX_BINARY), "load %llu: wrong bytes",
                  (unsigned long long)n);
    zc_artifact_unref(loaded);
    return status;
}

static inline void ft_assert_hit(zc_disk_tier *tier, uint64_t n)
{
    cr_assert_eq(ft_try_load(tier, n), ZC_OK, "key %llu must hit", (unsigned long long)n);
}

static inline void ft_assert_miss(zc_disk_tier *tier, uint64_t n)
{
    cr_assert_eq(ft_try_load(tier, n), ZC_MISS, "key %llu must miss", (unsigned long long)n);
}

/* key n's entry bytes (its artifact of at most max_binary bytes), as a
 * store writes them. */
static inline uint8_t *ft_encode_sized(uint64_t n, size_t max_binary, size_t *size)
{
    zc_key key = fc_key(n);
    zc_artifact *artifact = fc_artifact(n, max_binary);
    uint8_t *bytes = NULL;
    cr_assert_eq(zc_entry_encode(&key, artifact, 1, &bytes, size), ZC_OK);
    zc_artifact_unref(artifact);
    return bytes;
}

static inline uint8_t *ft_encode(uint64_t n, size_t *size)
{
    return ft_encode_sized(n, FT_MAX_BINARY, size);
}

/* ---- one faulty system call ---- */

typedef enum ft_fault_kind {
    FT_FAIL,  /* the call fails with plan.error */
    FT_SHORT, /* a read or write moves half of what was asked (at least 1 byte) */
    FT_ZERO,  /* a write moves nothing */
} ft_fault_kind;

typedef struct ft_fault_plan {
    long fail_at; /* 1-based number of the faulty call; 0: none */
    ft_fault_kind kind;
    int error;
    long calls;            /* counted, whether faulted or not */
    const char *faulted;   /* the name of the call that was faulted, or NULL */
    int config_open_error; /* openat of config.file fails with this (0: no) */
    int config_read_error; /* pread of config.file fails with this */
    int config_fd;         /* the last config.file descriptor opened */
} ft_fault_plan;

static ft_fault_plan ft_plan = {.config_fd = -1};

static inline void ft_start_plan(ft_fault_plan plan)
{
    ft_plan = plan;
    ft_plan.config_fd = -1;
}

/* True when this call is the faulty one and fails (errno set). */
static inline bool ft_fails(const char *call)
{
    ft_plan.calls++;
    if (ft_plan.fail_at == 0 || ft_plan.calls != ft_plan.fail_at || ft_plan.kind != FT_FAIL)
        return false;
    ft_plan.faulted = call;
    errno = ft_plan.error;
    return true;
}

/* For reads and writes: how much of count to move, or -1 to fail. */
static inline ssize_t ft_transfer_size(const char *call, size_t count, bool is_write)
{
    if (ft_fails(call))
        return -1;
    if (ft_plan.fail_at == 0 || ft_plan.calls != ft_plan.fail_at)
        return (ssize_t)count;
    if (ft_plan.kind == FT_ZERO && is_write) {
        ft_plan.faulted = call;
        return 0;
    }
    if (ft_plan.kind == FT_SHORT && count > 1) {
        ft_plan.faulted = call;
        return (ssize_t)(count / 2);
    }
    return (ssize_t)count;
}

#define FT_REAL (zc_fs_ops_default())

static inline int ft_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    if (ft_fails("openat"))
        return -1;
    bool config = strcmp(path, ZC_CONFIG_FILE_NAME) == 0;
    if (config && ft_plan.config_open_error != 0) {
        errno = ft_plan.config_open_error;
        return -1;
    }
    int fd = FT_REAL->openat(dirfd, path, flags, mode);
    if (config && fd >= 0)
        ft_plan.config_fd = fd;
    return fd;
}

static inline int ft_close(int fd)
{
    if (fd == ft_plan.config_fd)
        ft_plan.config_fd = -1;
    if (!ft_fails("close"))
        return FT_REAL->close(fd);
    int error = errno;
    FT_REAL->close(fd); /* Linux closes the descriptor even when close fails */
    errno = error;
    return -1;
}

static inline ssize_t ft_read(int fd, void *buf, size_t count)
{
    ssize_t size = ft_transfer_size("read", count, false);
    return size < 0 ? -1 : FT_REAL->read(fd, buf, (size_t)size);
}

static inline ssize_t ft_pread(int fd, void *buf, size_t count, off_t offset)
{
    ssize_t size = ft_transfer_size("pread", count, false);
    if (size >= 0 && fd == ft_plan.config_fd && ft_plan.config_read_error != 0) {
        errno = ft_plan.config_read_error;
        return -1;
    }
    return size < 0 ? -1 : FT_REAL->pread(fd, buf, (size_t)size, offset);
}

static inline ssize_t ft_write(int fd, const void *buf, size_t count)
{
    ssize_t size = ft_transfer_size("write", count, true);
    return size <= 0 ? size : FT_REAL->write(fd, buf, (size_t)size);
}

static inline ssize_t ft_pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    ssize_t size = ft_transfer_size("pwrite", count, true);
    return size <= 0 ? size : FT_REAL->pwrite(fd, buf, (size_t)size, offset);
}

static inline int ft_fstat(int fd, struct stat *st)
{
    return ft_fails("fstat") ? -1 : FT_REAL->fstat(fd, st);
}

static inline int ft_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    return ft_fails("fstatat") ? -1 : FT_REAL->fstatat(dirfd, path, st, flags);
}

static inline int ft_mkdirat(int dirfd, const char *path, mode_t mode)
{
    return ft_fails("mkdirat") ? -1 : FT_REAL->mkdirat(dirfd, path, mode);
}

static inline int ft_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
    return ft_fails("renameat") ? -1 : FT_REAL->renameat(olddirfd, oldpath, newdirfd, newpath);
}

static inline int ft_unlinkat(int dirfd, const char *path, int flags)
{
    return ft_fails("unlinkat") ? -1 : FT_REAL->unlinkat(dirfd, path, flags);
}

static inline int ft_flock(int fd, int operation)
{
    return ft_fails("flock") ? -1 : FT_REAL->flock(fd, operation);
}

static inline int ft_futimens(int fd, const struct timespec times[2])
{
    return ft_fails("futimens") ? -1 : FT_REAL->futimens(fd, times);
}

static inline int ft_ftruncate(int fd, off_t length)
{
    return ft_fails("ftruncate") ? -1 : FT_REAL->ftruncate(fd, length);
}

static const zc_fs_ops ft_faulty_ops = {
    .openat = ft_openat,
    .close = ft_close,
    .read = ft_read,
    .pread = ft_pread,
    .write = ft_write,
    .pwrite = ft_pwrite,
    .fstat = ft_fstat,
    .fstatat = ft_fstatat,
    .mkdirat = ft_mkdirat,
    .renameat = ft_renameat,
    .unlinkat = ft_unlinkat,
    .flock = ft_flock,
    .futimens = ft_futimens,
    .ftruncate = ft_ftruncate,
};

/* ---- a small tmpfs, for a full disk and a read-only remount ---- */

/* Mounts a tmpfs of size_kib at ft_cache's parent's "mnt" and points
 * ft_cache into it. False (the test then skips) when mounting is not
 * allowed here. */
static inline bool ft_mount_tmpfs(unsigned size_kib)
{
    char mnt[300], options[64];
    snprintf(mnt, sizeof mnt, "%s/mnt", ft_root);
    cr_assert_eq(mkdir(mnt, 0700), 0);
    snprintf(options, sizeof options, "size=%uk,mode=0700", size_kib);
    if (mount("tmpfs", mnt, "tmpfs", 0, options) != 0)
        return false;
    snprintf(ft_cache, sizeof ft_cache, "%s/cache", mnt);
    return true;
}

static inline void ft_unmount_tmpfs(void)
{
    char mnt[PATH_MAX];
    snprintf(mnt, sizeof mnt, "%s/mnt", ft_root);
    umount2(mnt, MNT_DETACH);
}

static inline void ft_remount(bool read_only)
{
    char mnt[PATH_MAX];
    snprintf(mnt, sizeof mnt, "%s/mnt", ft_root);
    unsigned long flags = MS_REMOUNT | (read_only ? MS_RDONLY : 0);
    cr_assert_eq(mount("tmpfs", mnt, "tmpfs", flags, NULL), 0, "remount: %s", strerror(errno));
}

/* ---- fault_worker processes ---- */

/* A file of per-worker counters the workers add to (stats=FILE slot=N). */
static inline fm_counters *ft_map_worker_stats(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    size_t size = FM_STATS_SLOTS * sizeof(fm_counters);
    cr_assert_eq(ftruncate(fd, (off_t)size), 0);
    void *table = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    cr_assert_neq(table, MAP_FAILED);
    return table;
}

static inline fm_counters ft_sum_worker_stats(const fm_counters *table)
{
    fm_counters sum;
    memset(&sum, 0, sizeof sum);
    for (int i = 0; i < FM_STATS_SLOTS; i++) {
        sum.loads += table[i].loads;
        sum.hits += table[i].hits;
        sum.stores += table[i].stores;
        sum.trims += table[i].trims;
        sum.removes += table[i].removes;
        sum.scans += table[i].scans;
        sum.checks += table[i].checks;
        fm_raise_max(&sum.largest_locked_total, table[i].largest_locked_total);
    }
    return sum;
}

/* Starts fault_worker with arguments (NULL-terminated; the program path is
 * ZC_FAULT_WORKER); it is killed if the test process dies. */
static inline pid_t ft_spawn_worker(const char *worker, char *const *arguments)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char *argv[16] = {(char *)worker};
        for (int i = 0; arguments[i] != NULL && i < 14; i++)
            argv[i + 1] = arguments[i];
        execv(worker, argv);
        _exit(127);
    }
    return pid;
}

/* Exit status meanings, for messages. */
static inline const char *ft_worker_exit_meaning(int code)
{
    switch (code) {
    case FM_WRONG_BYTES:
        return "a load returned wrong bytes";
    case FM_BAD_STATUS:
        return "an operation returned a status it must not";
    case FM_ACCOUNTING:
        return "config.file wrong or the limit exceeded under the lock";
    case FM_INCOMPLETE:
        return "a listed entry was incomplete";
    case FM_SETUP:
        return "setup failed";
    case 127:
        return "exec failed";
    default:
        return "unexpected exit";
    }
}

#endif
