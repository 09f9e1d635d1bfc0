/* zecache.accounting: the shards' figures by kind (zecache/disk_figures.h),
 * read when config.file's lock is taken, marked at the start of a change and
 * rewritten in place with config.file's new total, so stats need not read
 * every entry. Anything but a valid file of ours means "unknown": the
 * figures are then not kept until zecache stats rebuilds the file. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_order.h"
#include "disk_internal.h"
#include "zecache/log.h"
#include "zecache/sha256.h"

static const uint8_t ACCOUNTING_MAGIC[8] = {'Z', 'C', 'A', 'C', 'C', 'T', 0, 1};
enum { FIGURES_AT = 16, CHECKSUM_SIZE = 16 };
#define CHECKSUM_AT (FIGURES_AT + 8u * ZC_ACCOUNTING_FIGURE_COUNT)

/* The fields in the file's order: zc_disk_figures' own. */
static uint64_t *figure_fields(zc_disk_figures *figures, size_t index)
{
    uint64_t *const fields[ZC_ACCOUNTING_FIGURE_COUNT] = {
        &figures->counted.entries,      &figures->counted.entry_bytes, &figures->counted.recipes,
        &figures->counted.recipe_bytes, &figures->counted.blobs,       &figures->counted.blob_bytes,
        &figures->counted.total,        &figures->opencl_entries,      &figures->foreign_entries,
        &figures->file_bytes,           &figures->readable_bytes,      &figures->uncompressed_bytes,
    };
    return fields[index];
}

static bool checksum_of(const uint8_t *bytes, uint8_t checksum[CHECKSUM_SIZE])
{
    uint8_t digest[ZC_SHA256_SIZE];
    if (!zc_sha256_digest(bytes, CHECKSUM_AT, digest))
        return false;
    memcpy(checksum, digest, CHECKSUM_SIZE);
    return true;
}

void zc_disk_encode_accounting(const zc_disk_figures *figures,
                               uint8_t bytes[ZC_ACCOUNTING_FILE_SIZE])
{
    zc_disk_figures copy = *figures;
    memcpy(bytes, ACCOUNTING_MAGIC, sizeof ACCOUNTING_MAGIC);
    zc_put_le32(bytes + 8, ZC_ACCOUNTING_FORMAT_VERSION);
    zc_put_le32(bytes + 12, ZC_ACCOUNTING_FILE_SIZE);
    for (size_t i = 0; i < ZC_ACCOUNTING_FIGURE_COUNT; i++)
        zc_put_le64(bytes + FIGURES_AT + 8 * i, *figure_fields(&copy, i));
    if (!checksum_of(bytes, bytes + CHECKSUM_AT))
        memset(bytes, 0, ZC_ACCOUNTING_FILE_SIZE); /* unreadable rather than unchecked */
}

/* Parts can never exceed the whole: a file saying otherwise is not ours. */
static bool figures_consistent(const zc_disk_figures *f)
{
    const zc_disk_usage *c = &f->counted;
    return c->entry_bytes <= c->total && c->recipe_bytes <= c->total && c->blob_bytes <= c->total &&
           c->entry_bytes + c->recipe_bytes + c->blob_bytes == c->total &&
           c->recipes <= c->entries && f->opencl_entries <= c->entries &&
           f->foreign_entries <= c->entries && f->file_bytes <= c->entry_bytes &&
           f->readable_bytes <= f->file_bytes;
}

zc_status zc_disk_parse_accounting(const void *data, size_t size, zc_disk_figures *figures,
                                   char *reason, size_t reason_size)
{
    const uint8_t *bytes = data;
    uint8_t checksum[CHECKSUM_SIZE];
    if (size != ZC_ACCOUNTING_FILE_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size, "%zu bytes, not %u", size,
                          ZC_ACCOUNTING_FILE_SIZE);
    if (bytes[0] == 0)
        return zc_explain(ZC_MISS, reason, reason_size, "a change was cut short");
    if (memcmp(bytes, ACCOUNTING_MAGIC, sizeof ACCOUNTING_MAGIC) != 0 ||
        zc_get_le32(bytes + 8) != ZC_ACCOUNTING_FORMAT_VERSION ||
        zc_get_le32(bytes + 12) != ZC_ACCOUNTING_FILE_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size, "not an accounting file of this version");
    if (!checksum_of(bytes, checksum) || memcmp(checksum, bytes + CHECKSUM_AT, CHECKSUM_SIZE) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "checksum mismatch");
    zc_disk_figures parsed;
    for (size_t i = 0; i < ZC_ACCOUNTING_FIGURE_COUNT; i++)
        *figure_fields(&parsed, i) = zc_get_le64(bytes + FIGURES_AT + 8 * i);
    if (!figures_consistent(&parsed))
        return zc_explain(ZC_MISS, reason, reason_size, "figures that do not add up");
    *figures = parsed;
    return ZC_OK;
}

/* O_NONBLOCK: a FIFO planted in its place must not stall the lock holder. */
static int open_regular(zc_disk_tier *tier)
{
    int fd = tier->ops->openat(tier->dir_fd, ZC_ACCOUNTING_FILE_NAME,
                               O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC, tier->file_mode);
    struct stat st;
    if (fd >= 0 && (tier->ops->fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        zc_disk_close_keeping_errno(tier->ops, fd);
        return -1;
    }
    return fd;
}

void zc_disk_accounting_open(zc_disk_tier *tier)
{
    zc_disk_accounting *accounting = &tier->accounting;
    accounting->known = accounting->empty = false;
    accounting->fd = tier->read_only ? -1 : open_regular(tier);
    struct stat root;
    if (accounting->fd < 0 || tier->ops->fstat(tier->dir_fd, &root) != 0)
        return;
    accounting->root_dev = root.st_dev;
    accounting->root_ino = root.st_ino;
    uint8_t bytes[ZC_ACCOUNTING_FILE_SIZE + 1]; /* one more, to notice a long file */
    size_t got = 0;
    if (zc_disk_pread_upto(tier->ops, accounting->fd, bytes, sizeof bytes, &got) != ZC_OK)
        return;
    accounting->empty = got == 0;
    accounting->known = zc_disk_parse_accounting(bytes, got, &accounting->shards, NULL, 0) == ZC_OK;
}

void zc_disk_accounting_settle(zc_disk_tier *tier, uint64_t total, bool total_rebuilt)
{
    zc_disk_accounting *accounting = &tier->accounting;
    if (accounting->empty && accounting->fd >= 0 && total == 0) {
        memset(&accounting->shards, 0, sizeof accounting->shards);
        accounting->known = true; /* nothing counted anywhere: a new cache */
    } else if (total_rebuilt)
        zc_disk_accounting_forget(tier);
}

void zc_disk_accounting_close(zc_disk_tier *tier)
{
    if (tier->accounting.fd >= 0)
        tier->ops->close(tier->accounting.fd);
    tier->accounting.fd = -1;
    tier->accounting.known = false;
}

static void mark_changing(zc_disk_tier *tier)
{
    static const uint8_t changing = 0;
    if (zc_disk_pwrite_all(tier->ops, tier->accounting.fd, &changing, 1, 0) != ZC_OK &&
        tier->ops->ftruncate(tier->accounting.fd, 0) != 0)
        zc_disk_log_errno("cannot invalidate", ZC_ACCOUNTING_FILE_NAME, errno);
}

void zc_disk_accounting_changing(zc_disk_tier *tier)
{
    if (tier->accounting.known)
        mark_changing(tier);
}

void zc_disk_accounting_forget(zc_disk_tier *tier)
{
    if (tier->accounting.known && tier->accounting.fd >= 0)
        mark_changing(tier);
    tier->accounting.known = false;
}

void zc_disk_accounting_commit(zc_disk_tier *tier)
{
    zc_disk_accounting *accounting = &tier->accounting;
    if (!accounting->known)
        return;
    uint8_t bytes[ZC_ACCOUNTING_FILE_SIZE];
    zc_disk_encode_accounting(&accounting->shards, bytes);
    if (zc_disk_pwrite_all(tier->ops, accounting->fd, bytes, sizeof bytes, 0) != ZC_OK) {
        zc_disk_log_errno("cannot write", ZC_ACCOUNTING_FILE_NAME, errno);
        zc_disk_accounting_forget(tier);
    }
}

/* Something else planted by its name (a symlink, a FIFO, a directory) is
 * left alone, as every planted file is: the figures then come from scans. */
zc_status zc_disk_accounting_publish(zc_disk_tier *tier, const zc_disk_figures *shards)
{
    struct stat st;
    if (tier->ops->fstatat(tier->dir_fd, ZC_ACCOUNTING_FILE_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISREG(st.st_mode)) {
        zc_log_info("%s in %s is not a regular file: left alone, not rewritten",
                    ZC_ACCOUNTING_FILE_NAME, tier->dir);
        return ZC_ERR_IO;
    }
    uint8_t bytes[ZC_ACCOUNTING_FILE_SIZE];
    zc_disk_encode_accounting(shards, bytes);
    return zc_disk_publish(tier, bytes, sizeof bytes, tier->dir_fd, ZC_ACCOUNTING_FILE_NAME);
}
