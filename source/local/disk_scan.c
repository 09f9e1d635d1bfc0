/* Walking the cache directory: the root (the driver's flat layout before
 * 26.05, and our temp files) and up to two levels of one-hex-digit
 * subdirectories. Subdirectories are opened through zc_fs_ops' openat, so a
 * symlink at any level is skipped, never followed. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "disk_blob_refs.h"
#include "disk_internal.h"
#include "zecache/disk_usage_list.h"
#include "zecache/recipe.h"

enum { MAX_DEPTH = 2 };

typedef struct scan_walk {
    zc_disk_tier *tier;
    zc_scan_fn visit;
    void *context;
    bool stopped;
    int max_depth; /* of subdirectories opened: 0 for the root alone */
} scan_walk;

static bool is_hex_level_name(const char *name)
{
    return isxdigit((unsigned char)name[0]) && name[1] == '\0';
}

static bool classify(const char *name, int depth, zc_scan_kind *kind)
{
    if (zc_disk_is_entry_file_name(name))
        *kind = ZC_SCAN_ENTRY;
    else if (zc_disk_has_suffix(name, ZC_TRACE_SUFFIX) ||
             zc_disk_has_suffix(name, ZC_RECIPE_SUFFIX) ||
             zc_disk_has_suffix(name, ZC_INPUT_SUFFIX))
        *kind = ZC_SCAN_SIDECAR;
    else if (depth == MAX_DEPTH && zc_disk_has_suffix(name, ZC_SPIRV_SUFFIX))
        *kind = ZC_SCAN_BLOB;
    else if (depth == MAX_DEPTH && zc_disk_has_suffix(name, ZC_SPIRV_REFS_SUFFIX))
        *kind = ZC_SCAN_REFS;
    else if (depth == 0 && strncmp(name, ZC_TEMP_PREFIX, strlen(ZC_TEMP_PREFIX)) == 0)
        *kind = ZC_SCAN_TEMP;
    else if (zc_disk_has_suffix(name, ZC_LOCK_SUFFIX))
        *kind = ZC_SCAN_LOCK;
    else if (zc_disk_has_suffix(name, ZC_FAILED_SUFFIX))
        *kind = ZC_SCAN_MARK;
    else if (depth == 0 && zc_disk_has_suffix(name, ZC_USAGE_SUFFIX))
        *kind = ZC_SCAN_USAGE;
    else
        return false;
    return true;
}

/* Vanished (a concurrent removal) and symlinks are skipped, not errors. */
static bool ignorable_errno(int err)
{
    return err == ENOENT || err == ELOOP || err == ENOTDIR;
}

static zc_status scan_dir(scan_walk *walk, int fd, const char *rel_prefix, int depth);

static zc_status visit_file(scan_walk *walk, int dir_fd, const char *name, const char *rel,
                            zc_scan_kind kind)
{
    zc_scan_item item = {.kind = kind, .dir_fd = dir_fd, .name = name, .rel = rel};
    struct stat st;
    if (walk->tier->ops->fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return ignorable_errno(errno) ? ZC_OK : ZC_ERR_IO;
    if (!S_ISREG(st.st_mode))
        return ZC_OK;
    item.size = (uint64_t)st.st_size;
    item.mtime = st.st_mtim;
    if (kind == ZC_SCAN_ENTRY && !zc_disk_trace_size(walk->tier, dir_fd, name, &item.trace_size))
        return ZC_ERR_IO;
    walk->stopped = walk->visit(walk->context, &item) != 0;
    return ZC_OK;
}

static zc_status visit_subdir(scan_walk *walk, int dir_fd, const char *name, const char *rel,
                              int depth)
{
    int fd = walk->tier->ops->openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return ignorable_errno(errno) ? ZC_OK : ZC_ERR_IO;
    char prefix[ZC_REL_PATH_SIZE + 1]; /* rel is one or two levels: "a" or "a/b" */
    snprintf(prefix, sizeof prefix, "%s/", rel);
    return scan_dir(walk, fd, prefix, depth + 1);
}

static zc_status scan_entry(scan_walk *walk, int dir_fd, const struct dirent *dirent,
                            const char *rel_prefix, int depth)
{
    const char *name = dirent->d_name;
    char rel[ZC_REL_PATH_SIZE];
    snprintf(rel, sizeof rel, "%s%s", rel_prefix, name);
    zc_scan_kind kind;
    if (depth < walk->max_depth && is_hex_level_name(name) &&
        (dirent->d_type == DT_DIR || dirent->d_type == DT_UNKNOWN))
        return visit_subdir(walk, dir_fd, name, rel, depth);
    if (dirent->d_type == DT_LNK || !classify(name, depth, &kind))
        return ZC_OK;
    return visit_file(walk, dir_fd, name, rel, kind);
}

/* Takes ownership of fd. */
static zc_status scan_dir(scan_walk *walk, int fd, const char *rel_prefix, int depth)
{
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        walk->tier->ops->close(fd);
        return ZC_ERR_IO;
    }
    zc_status status = ZC_OK;
    while (status == ZC_OK && !walk->stopped) {
        errno = 0;
        struct dirent *dirent = readdir(dir);
        if (dirent == NULL) {
            if (errno != 0)
                status = ZC_ERR_IO;
            break;
        }
        atomic_fetch_add_explicit(&walk->tier->dirents_read, 1, memory_order_relaxed);
        if (strcmp(dirent->d_name, ".") != 0 && strcmp(dirent->d_name, "..") != 0)
            status = scan_entry(walk, dirfd(dir), dirent, rel_prefix, depth);
    }
    closedir(dir);
    return status;
}

static zc_status scan_from_root(zc_disk_tier *tier, zc_scan_fn visit, void *context, int max_depth)
{
    scan_walk walk = {.tier = tier, .visit = visit, .context = context, .max_depth = max_depth};
    int fd = zc_disk_open_dir(tier, "", false);
    if (fd < 0) {
        zc_disk_log_errno("cannot scan", tier->dir, errno);
        return ZC_ERR_IO;
    }
    zc_status status = scan_dir(&walk, fd, "", 0);
    if (status != ZC_OK)
        zc_disk_log_errno("cannot scan", tier->dir, errno);
    return status;
}

zc_status zc_disk_scan(zc_disk_tier *tier, zc_scan_fn visit, void *context)
{
    return scan_from_root(tier, visit, context, MAX_DEPTH);
}

zc_status zc_disk_scan_root(zc_disk_tier *tier, zc_scan_fn visit, void *context)
{
    return scan_from_root(tier, visit, context, 0);
}

/* Whether the entry of a sidecar's stem with this suffix is there (or
 * might be: an error other than its absence). */
static bool entry_beside(zc_disk_tier *tier, const zc_scan_item *item, size_t stem,
                         const char *entry_suffix, char entry[NAME_MAX + 1])
{
    struct stat st;
    if (snprintf(entry, NAME_MAX + 1, "%.*s%s", (int)stem, item->name, entry_suffix) >=
        NAME_MAX + 1)
        return true;
    return tier->ops->fstatat(item->dir_fd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0
               ? S_ISREG(st.st_mode)
               : errno != ENOENT;
}

/* True for a .trace or .recipe with no entry of either API beside it
 * (nothing, or no regular file, by its entry's name: a scan counts
 * neither); *ours when it is named after a zecache key. */
static bool orphaned_sidecar(zc_disk_tier *tier, const zc_scan_item *item, bool *ours)
{
    const char *suffix =
        zc_disk_has_suffix(item->name, ZC_RECIPE_SUFFIX) ? ZC_RECIPE_SUFFIX : ZC_TRACE_SUFFIX;
    char entry[NAME_MAX + 1];
    size_t stem = strlen(item->name) - strlen(suffix);
    zc_key key;
    if (item->kind != ZC_SCAN_SIDECAR || !zc_disk_has_suffix(item->name, suffix) ||
        entry_beside(tier, item, stem, ZC_ENTRY_SUFFIX_OPENCL, entry) ||
        entry_beside(tier, item, stem, ZC_ENTRY_SUFFIX, entry))
        return false;
    *ours = zc_disk_parse_entry_name(entry, &key);
    return true;
}

zc_orphan zc_disk_remove_orphan_sidecar(zc_disk_tier *tier, const zc_scan_item *item, time_t now)
{
    bool ours;
    if (!orphaned_sidecar(tier, item, &ours))
        return ZC_ORPHAN_NONE;
    /* Ours are written under the lock after their entry and removed after
     * it: one without its entry is left by a removal cut short, by a hand or
     * by the driver evicting the entry, and is garbage at once. Another
     * writer's trace may come before its entry: only an old one goes. */
    if (!ours && now - item->mtime.tv_sec <= ZC_TEMP_MAX_AGE_SEC)
        return ZC_ORPHAN_KEPT;
    if (tier->ops->unlinkat(item->dir_fd, item->name, 0) == 0 || errno == ENOENT)
        return ZC_ORPHAN_REMOVED;
    zc_disk_log_errno("cannot remove", item->rel, errno);
    return ZC_ORPHAN_KEPT;
}

typedef struct scan_sum {
    zc_disk_tier *tier;
    zc_disk_usage usage;
    time_t now; /* 0: count only; else under the lock, removing orphaned sidecars */
} scan_sum;

static int add_counted(void *context, const zc_scan_item *item)
{
    scan_sum *sum = context;
    zc_disk_usage *usage = &sum->usage;
    bool ours;
    if (item->kind == ZC_SCAN_SIDECAR && sum->now != 0)
        zc_disk_remove_orphan_sidecar(sum->tier, item, sum->now);
    else if (item->kind == ZC_SCAN_SIDECAR && zc_disk_has_suffix(item->name, ZC_RECIPE_SUFFIX) &&
             !orphaned_sidecar(sum->tier, item, &ours)) {
        usage->recipes++; /* counted with its entry, told apart for zecache stats */
        usage->recipe_bytes += item->size;
    }
    if (item->kind == ZC_SCAN_ENTRY) {
        usage->total += item->size + item->trace_size;
        usage->entry_bytes += item->size + item->trace_size;
        usage->entries++;
    }
    if (item->kind == ZC_SCAN_BLOB) {
        usage->total += item->size;
        usage->blobs++;
        usage->blob_bytes += item->size;
    }
    return 0;
}

static zc_status sum_up(zc_disk_tier *tier, time_t now, zc_disk_usage *usage)
{
    scan_sum sum = {.tier = tier, .now = now};
    zc_status status = zc_disk_scan(tier, add_counted, &sum);
    if (status != ZC_OK)
        return status;
    *usage = sum.usage;
    /* A recipe counted with its entry (trace_size) is an input, not an entry. */
    usage->entry_bytes -= usage->recipe_bytes <= usage->entry_bytes ? usage->recipe_bytes : 0;
    return ZC_OK;
}

zc_status zc_disk_tier_scanned_usage(zc_disk_tier *tier, zc_disk_usage *usage)
{
    if (tier == NULL || usage == NULL)
        return ZC_ERR_INVALID_ARG;
    return sum_up(tier, 0, usage);
}

static zc_status total_of(zc_disk_tier *tier, time_t now, uint64_t *total, uint64_t *entries)
{
    zc_disk_usage usage;
    zc_status status = sum_up(tier, now, &usage);
    if (status == ZC_OK) {
        *total = usage.total;
        if (entries != NULL)
            *entries = usage.entries;
    }
    return status;
}

zc_status zc_disk_scan_total(zc_disk_tier *tier, uint64_t *total, uint64_t *entries)
{
    return total_of(tier, 0, total, entries);
}

zc_status zc_disk_rescan_total(zc_disk_tier *tier, uint64_t *total, uint64_t *entries)
{
    return total_of(tier, time(NULL), total, entries);
}

typedef struct foreach_call {
    zc_disk_entry_visit_fn visit;
    void *context;
} foreach_call;

static int visit_public_entry(void *context, const zc_scan_item *item)
{
    if (item->kind != ZC_SCAN_ENTRY)
        return 0;
    const foreach_call *call = context;
    zc_disk_entry_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.path, sizeof info.path, "%s", item->rel);
    info.file_size = item->size;
    info.trace_size = item->trace_size;
    info.last_use_sec = item->mtime.tv_sec;
    info.last_use_nsec = item->mtime.tv_nsec;
    info.is_zecache = zc_disk_parse_entry_name(item->name, &info.key);
    return call->visit(call->context, &info);
}

zc_status zc_disk_tier_foreach(zc_disk_tier *tier, zc_disk_entry_visit_fn visit, void *context)
{
    if (tier == NULL || visit == NULL)
        return ZC_ERR_INVALID_ARG;
    foreach_call call = {visit, context};
    return zc_disk_scan(tier, visit_public_entry, &call);
}
