/* The figures of the whole cache directory for zecache stats and verify:
 * the accounting file's (the shards) plus one listing of the root, checked
 * against config.file under its shared lock; or, when they do not add up,
 * from one scan that also rewrites the file. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_internal.h"
#include "zecache/log.h"

typedef struct figure_scan {
    zc_disk_tier *tier;
    zc_disk_figures root, shards;
    bool failed;
} figure_scan;

static int add_item(void *context, const zc_scan_item *item)
{
    figure_scan *scan = context;
    zc_disk_figures *to = strchr(item->rel, '/') != NULL ? &scan->shards : &scan->root;
    zc_disk_figures entry;
    if (item->kind == ZC_SCAN_ENTRY) {
        scan->failed = !zc_disk_measure_entry(scan->tier, item->dir_fd, item->name, &entry);
        if (!scan->failed)
            zc_disk_figures_add(to, &entry);
    } else if (item->kind == ZC_SCAN_BLOB) {
        to->counted.blobs++;
        to->counted.blob_bytes += item->size;
        to->counted.total += item->size;
    }
    return scan->failed ? 1 : 0;
}

static zc_status scan_figures(zc_disk_tier *tier, bool root_only, figure_scan *scan)
{
    memset(scan, 0, sizeof *scan);
    scan->tier = tier;
    zc_status status =
        root_only ? zc_disk_scan_root(tier, add_item, scan) : zc_disk_scan(tier, add_item, scan);
    return status == ZC_OK && scan->failed ? ZC_ERR_IO : status;
}

zc_status zc_disk_tier_scanned_figures(zc_disk_tier *tier, zc_disk_figures *figures)
{
    if (tier == NULL || figures == NULL)
        return ZC_ERR_INVALID_ARG;
    figure_scan scan;
    zc_status status = scan_figures(tier, false, &scan);
    if (status != ZC_OK)
        return status;
    *figures = scan.root;
    zc_disk_figures_add(figures, &scan.shards);
    return ZC_OK;
}

zc_status zc_disk_accounting_rebuild(zc_disk_tier *tier, zc_disk_figures *figures)
{
    figure_scan scan;
    zc_status status = scan_figures(tier, false, &scan);
    if (status == ZC_OK)
        status = zc_disk_accounting_publish(tier, &scan.shards);
    if (status != ZC_OK)
        return status;
    tier->accounting.known = false; /* the descriptor open is the file replaced */
    if (figures != NULL) {
        *figures = scan.root;
        zc_disk_figures_add(figures, &scan.shards);
    }
    return ZC_OK;
}

zc_status zc_disk_tier_rebuild_figures(zc_disk_tier *tier, zc_disk_figures *figures)
{
    if (tier == NULL || figures == NULL)
        return ZC_ERR_INVALID_ARG;
    if (tier->read_only)
        return ZC_ERR_DISABLED;
    zc_disk_lock lock;
    zc_status status = zc_disk_lock_acquire(tier, false, &lock);
    if (status != ZC_OK)
        return status;
    status = zc_disk_accounting_rebuild(tier, figures);
    zc_disk_lock_release(tier, &lock);
    return status;
}

typedef struct accounted {
    zc_disk_figures figures;
    uint64_t recorded;
    bool recorded_valid;
    char reason[160];
} accounted;

static zc_status read_accounting(zc_disk_tier *tier, zc_disk_figures *shards, char *reason,
                                 size_t reason_size)
{
    int fd = tier->ops->openat(tier->dir_fd, ZC_ACCOUNTING_FILE_NAME,
                               O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0)
        return zc_explain(ZC_MISS, reason, reason_size, "cannot open it: %s", strerror(errno));
    uint8_t bytes[ZC_ACCOUNTING_FILE_SIZE + 1];
    size_t got = 0;
    struct stat st;
    zc_status status;
    if (tier->ops->fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        status = zc_explain(ZC_MISS, reason, reason_size, "not a regular file");
    else if (zc_disk_pread_upto(tier->ops, fd, bytes, sizeof bytes, &got) != ZC_OK)
        status = zc_explain(ZC_MISS, reason, reason_size, "cannot read it: %s", strerror(errno));
    else
        status = zc_disk_parse_accounting(bytes, got, shards, reason, reason_size);
    tier->ops->close(fd);
    return status;
}

/* Under config.file's shared lock: no writer changes anything meanwhile. */
static zc_status gather_locked(zc_disk_tier *tier, int config_fd, accounted *out)
{
    bool oversized;
    out->recorded_valid = zc_disk_read_total(tier, config_fd, &out->recorded, &oversized) == ZC_OK;
    zc_disk_figures shards;
    zc_status status = read_accounting(tier, &shards, out->reason, sizeof out->reason);
    if (status != ZC_OK)
        return status;
    figure_scan root;
    if (scan_figures(tier, true, &root) != ZC_OK)
        return zc_explain(ZC_MISS, out->reason, sizeof out->reason, "cannot list the root");
    out->figures = root.root;
    zc_disk_figures_add(&out->figures, &shards);
    if (!out->recorded_valid)
        return zc_explain(ZC_MISS, out->reason, sizeof out->reason, "%s is missing or malformed",
                          ZC_CONFIG_FILE_NAME);
    if (out->figures.counted.total != out->recorded)
        return zc_explain(ZC_MISS, out->reason, sizeof out->reason,
                          "it and the root count %llu bytes, %s %llu",
                          (unsigned long long)out->figures.counted.total, ZC_CONFIG_FILE_NAME,
                          (unsigned long long)out->recorded);
    return ZC_OK;
}

static zc_status gather(zc_disk_tier *tier, accounted *out)
{
    memset(out, 0, sizeof *out);
    zc_disk_section_enter(tier); /* a locked descriptor: fork() waits (disk_fork.c) */
    int fd = tier->ops->openat(tier->dir_fd, ZC_CONFIG_FILE_NAME, O_RDONLY | O_CLOEXEC, 0);
    zc_status status;
    if (fd < 0)
        status = zc_explain(ZC_MISS, out->reason, sizeof out->reason, "%s is missing",
                            ZC_CONFIG_FILE_NAME);
    else if (zc_disk_flock_within_deadline(tier, fd, LOCK_SH, &tier->config_lock_stuck,
                                           ZC_CONFIG_FILE_NAME) != ZC_OK)
        status = zc_explain(ZC_MISS, out->reason, sizeof out->reason, "%s is locked",
                            ZC_CONFIG_FILE_NAME);
    else
        status = gather_locked(tier, fd, out);
    if (fd >= 0)
        tier->ops->close(fd);
    zc_disk_section_leave(tier);
    return status;
}

zc_status zc_disk_tier_accounted_figures(zc_disk_tier *tier, zc_disk_figures *figures, char *reason,
                                         size_t reason_size)
{
    if (tier == NULL || figures == NULL)
        return ZC_ERR_INVALID_ARG;
    accounted found;
    zc_status status = gather(tier, &found);
    if (status != ZC_OK)
        return zc_explain(status, reason, reason_size, "%s", found.reason);
    *figures = found.figures;
    return ZC_OK;
}

zc_status zc_disk_tier_figures(zc_disk_tier *tier, zc_disk_figures *figures, uint64_t *recorded,
                               bool *recorded_valid, bool *rebuilt)
{
    if (tier == NULL || figures == NULL || recorded == NULL || recorded_valid == NULL ||
        rebuilt == NULL)
        return ZC_ERR_INVALID_ARG;
    accounted found;
    zc_status status = gather(tier, &found);
    *rebuilt = status != ZC_OK;
    if (status == ZC_OK)
        *figures = found.figures;
    else {
        zc_log_info("%s in %s not used (%s): counting from a scan", ZC_ACCOUNTING_FILE_NAME,
                    tier->dir, found.reason);
        status = zc_disk_tier_rebuild_figures(tier, figures);
        if (status != ZC_OK) /* a read-only directory, or a lock held too long */
            status = zc_disk_tier_scanned_figures(tier, figures);
        if (status == ZC_OK)
            gather(tier, &found); /* config.file's value after the rebuild */
    }
    *recorded = found.recorded;
    *recorded_valid = found.recorded_valid;
    return status;
}
