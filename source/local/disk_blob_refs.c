/* Reference counts of recorded SPIR-V blobs (disk_blob_refs.h).
 *
 * Recipes share blobs, so removing a recipe may or may not free one; the
 * full sweep knows from reading every recipe, a pass over one shard cannot.
 * Each blob therefore has a count file beside it whose *size* is the number
 * of recipes naming it: read with one fstatat, written with one ftruncate
 * (a sparse file, no data blocks), never torn, and a size no writer
 * produced is no count at all.
 *
 * The count may over-count but never under-count, so it never lets a blob
 * go that a recipe still names:
 *   - it is raised (or created, for a blob written just now) before the
 *     recipe is published, and lowered only after a recipe is gone; a crash
 *     or failure in between leaves one too many;
 *   - a blob whose count file is missing, empty, too large or no regular
 *     file (a cache from before the counts, a failed write, a planted file)
 *     has no known count: shard passes leave it, and the next full sweep,
 *     which counts every recipe itself, writes its count again;
 *   - a raise that cannot be written removes the count instead, and when
 *     neither can be done the recipe is not published.
 * All of it happens under config.file's lock, as every recipe and blob
 * write and removal does. */
#include "disk_blob_refs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "zecache/log.h"
#include "zecache/recipe.h"

#define REFS_NAME_SIZE (2 * 32 + sizeof ZC_SPIRV_REFS_SUFFIX)
#define REFS_MAX UINT32_MAX /* more recipes than any cache holds: no count */

typedef enum refs_state {
    REFS_ABSENT,  /* no count file */
    REFS_KNOWN,   /* a count of at least 1 */
    REFS_UNKNOWN, /* something else by its name */
} refs_state;

/* Where one blob and its count are. */
typedef struct blob_place {
    char dir[ZC_ENTRY_DIR_SIZE];
    char blob[ZC_BLOB_NAME_SIZE];
    char refs[REFS_NAME_SIZE];
} blob_place;

static void place_of(const uint8_t sha256[32], blob_place *place)
{
    zc_disk_blob_place(sha256, place->dir, place->blob);
    snprintf(place->refs, sizeof place->refs, "%.64s%s", place->blob, ZC_SPIRV_REFS_SUFFIX);
}

static refs_state read_refs(zc_disk_tier *tier, int dir_fd, const char *name, uint64_t *count)
{
    struct stat st;
    if (tier->ops->fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? REFS_ABSENT : REFS_UNKNOWN;
    if (!S_ISREG(st.st_mode) || st.st_size < 1 || (uint64_t)st.st_size > REFS_MAX)
        return REFS_UNKNOWN;
    *count = (uint64_t)st.st_size;
    return REFS_KNOWN;
}

static bool write_refs(zc_disk_tier *tier, int dir_fd, const char *name, uint64_t count)
{
    /* O_NONBLOCK: a FIFO planted by the name must not stall the lock holder. */
    int fd = tier->ops->openat(
        dir_fd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, tier->file_mode);
    if (fd < 0)
        return false;
    struct stat st;
    bool written = tier->ops->fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                   tier->ops->ftruncate(fd, (off_t)count) == 0;
    zc_disk_close_keeping_errno(tier->ops, fd);
    return written;
}

/* No count is a safe count: the blob then waits for a full sweep. */
static void forget_refs(zc_disk_tier *tier, int dir_fd, const char *name)
{
    if (tier->ops->unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", name, errno);
}

/* Whether the SHA-256 at item index of an array whose items start with one
 * (zc_input_blob, zc_recipe_input) came earlier in it: a recipe naming one
 * SPIR-V twice (a program) is one user. */
static bool named_earlier(const uint8_t *first, size_t stride, size_t index)
{
    for (size_t j = 0; j < index; j++)
        if (memcmp(first + j * stride, first + index * stride, 32) == 0)
            return true;
    return false;
}

/* ---- a recipe comes ---- */

static zc_status add_user(zc_disk_tier *tier, const uint8_t sha256[32], bool published)
{
    blob_place place;
    place_of(sha256, &place);
    int dir_fd = zc_disk_open_dir(tier, place.dir, false);
    if (dir_fd < 0)
        return ZC_ERR_IO; /* its blob was seen or written just now */
    uint64_t count = 0;
    refs_state state = read_refs(tier, dir_fd, place.refs, &count);
    zc_status status = ZC_OK;
    /* A blob that was there without a count keeps none: who names it is not
     * known. One written just now is named by no recipe yet; a count left
     * from an earlier copy removed by hand is kept, as it may still be. */
    if (published || state == REFS_KNOWN) {
        uint64_t users = (state == REFS_KNOWN ? count : 0) + 1;
        if (!write_refs(tier, dir_fd, place.refs, users)) {
            zc_disk_log_errno("cannot count the users of", place.blob, errno);
            forget_refs(tier, dir_fd, place.refs);
            if (read_refs(tier, dir_fd, place.refs, &count) == REFS_KNOWN)
                status = ZC_ERR_IO; /* still a count, one too low once the recipe is there */
        }
    }
    tier->ops->close(dir_fd);
    return status;
}

zc_status zc_blob_refs_add(zc_disk_tier *tier, const zc_input_blob *blobs, size_t count,
                           const bool *published)
{
    zc_status status = ZC_OK;
    for (size_t i = 0; i < count && status == ZC_OK; i++)
        if (!named_earlier(blobs[0].sha256, sizeof *blobs, i))
            status = add_user(tier, blobs[i].sha256, published[i]);
    return status;
}

/* ---- a recipe goes ---- */

/* The last user went: the blob goes, then its count. */
static zc_status remove_unused_blob(zc_disk_tier *tier, zc_disk_lock *lock, int dir_fd,
                                    const blob_place *place)
{
    struct stat st;
    if (tier->ops->fstatat(dir_fd, place->blob, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            forget_refs(tier, dir_fd, place->refs);
        return ZC_OK;
    }
    if (!S_ISREG(st.st_mode))
        return ZC_OK; /* no blob a scan counts */
    if (tier->ops->unlinkat(dir_fd, place->blob, 0) != 0 && errno != ENOENT) {
        zc_disk_log_errno("cannot remove", place->blob, errno);
        return ZC_OK; /* stays, with a count one too high: the next sweep sees to it */
    }
    forget_refs(tier, dir_fd, place->refs);
    return zc_disk_account_removed(tier, lock, (uint64_t)st.st_size);
}

static zc_status release_user(zc_disk_tier *tier, zc_disk_lock *lock, const uint8_t sha256[32])
{
    blob_place place;
    place_of(sha256, &place);
    int dir_fd = zc_disk_open_dir(tier, place.dir, false);
    if (dir_fd < 0)
        return ZC_OK; /* no directory, no blob */
    uint64_t count = 0;
    zc_status status = ZC_OK;
    if (read_refs(tier, dir_fd, place.refs, &count) != REFS_KNOWN)
        ; /* users unknown: left to the full sweep */
    else if (count > 1) {
        if (!write_refs(tier, dir_fd, place.refs, count - 1))
            zc_disk_log_errno("cannot count the users of", place.blob, errno); /* one too many */
    } else
        status = remove_unused_blob(tier, lock, dir_fd, &place);
    tier->ops->close(dir_fd);
    return status;
}

zc_status zc_blob_refs_release(zc_disk_tier *tier, zc_disk_lock *lock,
                               const struct zc_recipe *inputs)
{
    zc_status status = ZC_OK;
    const zc_recipe_input *named = inputs->inputs;
    for (uint32_t i = 0; i < inputs->input_count && status == ZC_OK; i++)
        if (!named_earlier(named[0].spirv_sha256, sizeof *named, i))
            status = release_user(tier, lock, named[i].spirv_sha256);
    return status;
}

/* ---- the full sweep ---- */

static void rebuild_one(zc_disk_tier *tier, const zc_census_blob *blob)
{
    blob_place place;
    place_of(blob->sha256, &place);
    int dir_fd = zc_disk_open_dir(tier, place.dir, false);
    if (dir_fd < 0)
        return;
    uint64_t count = 0;
    refs_state state = read_refs(tier, dir_fd, place.refs, &count);
    if (blob->gone || blob->users == 0) {
        if (state != REFS_ABSENT)
            forget_refs(tier, dir_fd, place.refs);
    } else if (state != REFS_KNOWN || count != blob->users) {
        if (!write_refs(tier, dir_fd, place.refs, blob->users)) {
            zc_disk_log_errno("cannot count the users of", place.blob, errno);
            forget_refs(tier, dir_fd, place.refs);
        }
    }
    tier->ops->close(dir_fd);
}

void zc_blob_refs_rebuild(const zc_census *census)
{
    for (size_t i = 0; i < census->blob_count; i++)
        rebuild_one(census->tier, &census->blobs[i]);
}

void zc_blob_refs_remove_orphan(zc_disk_tier *tier, const zc_scan_item *item)
{
    char blob[ZC_BLOB_NAME_SIZE];
    uint8_t sha256[32];
    struct stat st;
    size_t stem = strlen(item->name) - strlen(ZC_SPIRV_REFS_SUFFIX);
    snprintf(blob, sizeof blob, "%.*s%s", (int)stem, item->name, ZC_SPIRV_SUFFIX);
    /* One not named after a blob counts nothing a recipe can name. */
    if (stem == 64 && zc_disk_parse_blob_name(blob, sha256) &&
        (tier->ops->fstatat(item->dir_fd, blob, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT))
        return;
    if (tier->ops->unlinkat(item->dir_fd, item->name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", item->rel, errno);
}
