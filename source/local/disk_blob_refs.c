/* Reference counts of recorded SPIR-V blobs (disk_blob_refs.h).
 *
 * Recipes share blobs, so removing a recipe may or may not free one; the
 * full sweep knows from reading every recipe, a pass over one shard cannot.
 * Each blob therefore has a count file beside it: the number of recipes
 * naming it, in the container recorded inputs use (sealed.h) with the
 * blob's SHA-256 as its id, so that a file torn by a crash, damaged,
 * planted or copied from another blob is no count at all.
 *
 * The count may over-count but never under-count, so it never lets a blob
 * go that a recipe still names:
 *   - it is raised (or created, for a blob written just now) before the
 *     recipe is published, and lowered only after a recipe is gone; a crash
 *     or failure in between leaves one too many;
 *   - a blob without a valid count file (a cache from before the counts, a
 *     failed write, anything planted by its name) has no known count: shard
 *     passes leave it, and the next full sweep, which reads every recipe,
 *     writes its count again;
 *   - a raise that cannot be written removes the count instead, and when
 *     neither can be done the recipe is not published.
 * A reference count was chosen over a naming scheme (one file per recipe
 * and blob) as it costs one small file per blob, not per use, and the full
 * sweep can rewrite it from the census it takes anyway. All of it happens
 * under config.file's lock, as every recipe and blob write and removal
 * does. */
#include "disk_blob_refs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/log.h"
#include "zecache/recipe.h"
#include "zecache/sealed.h"

#define REFS_NAME_SIZE (2 * 32 + sizeof ZC_SPIRV_REFS_SUFFIX)
#define REFS_MAX UINT32_MAX /* more recipes than any cache holds: no count */
#define REFS_FILE_MAX 256   /* a header and the frame of 8 bytes */

typedef enum refs_state {
    REFS_ABSENT,  /* no count file */
    REFS_KNOWN,   /* a count of at least 1 */
    REFS_UNKNOWN, /* something else by its name */
} refs_state;

/* Where one blob and its count are. */
typedef struct blob_place {
    const uint8_t *sha256;
    char dir[ZC_ENTRY_DIR_SIZE];
    char blob[ZC_BLOB_NAME_SIZE];
    char refs[REFS_NAME_SIZE];
} blob_place;

static void place_of(const uint8_t sha256[32], blob_place *place)
{
    place->sha256 = sha256;
    zc_disk_blob_place(sha256, place->dir, place->blob);
    snprintf(place->refs, sizeof place->refs, "%.64s%s", place->blob, ZC_SPIRV_REFS_SUFFIX);
}

static refs_state decode_refs(const blob_place *place, const uint8_t *data, size_t size,
                              uint64_t *count)
{
    uint8_t *content = NULL, id[ZC_SEALED_ID_SIZE];
    size_t content_size = 0;
    char reason[160] = "";
    zc_status status = zc_sealed_decode(ZC_SPIRV_REFS_MAGIC, data, size, place->sha256, 8, &content,
                                        &content_size, id, reason, sizeof reason);
    *count = 0;
    for (size_t i = 0; status == ZC_OK && i < content_size && i < 8; i++)
        *count |= (uint64_t)content[i] << (8 * i);
    free(content);
    if (status == ZC_OK && content_size == 8 && *count >= 1 && *count <= REFS_MAX)
        return REFS_KNOWN;
    zc_log_info("the count of users of %s/%s is no count (%s): left to the full sweep", place->dir,
                place->blob, reason[0] != '\0' ? reason : "out of range");
    return REFS_UNKNOWN;
}

static refs_state read_refs(zc_disk_tier *tier, int dir_fd, const blob_place *place,
                            uint64_t *count)
{
    uint8_t *data = NULL;
    size_t size = 0;
    zc_status status =
        zc_disk_read_small_file(tier, dir_fd, place->refs, REFS_FILE_MAX, &data, &size);
    if (status == ZC_MISS)
        return REFS_ABSENT;
    if (status != ZC_OK) {
        zc_log_info("the count of users of %s/%s is no count (no regular file of at most %d "
                    "bytes, or unreadable): left to the full sweep",
                    place->dir, place->blob, REFS_FILE_MAX);
        return REFS_UNKNOWN;
    }
    refs_state state = decode_refs(place, data, size, count);
    free(data);
    return state;
}

/* Written in place, not renamed over: ext4 flushes a file renamed over
 * another (auto_da_alloc), which cost each eviction milliseconds. A write
 * torn by a crash fails the container's checksums: no count, never a wrong
 * one. Whatever else was planted by its name is neither followed
 * (O_NOFOLLOW), waited for (O_NONBLOCK) nor written. */
static bool write_refs(zc_disk_tier *tier, int dir_fd, const blob_place *place, uint64_t count)
{
    uint8_t content[8], *data = NULL;
    size_t size = 0;
    for (size_t i = 0; i < sizeof content; i++)
        content[i] = (uint8_t)(count >> (8 * i));
    if (zc_sealed_encode(ZC_SPIRV_REFS_MAGIC, place->sha256, content, sizeof content, 1, &data,
                         &size) != ZC_OK)
        return false;
    int fd = tier->ops->openat(dir_fd, place->refs,
                               O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                               tier->file_mode);
    struct stat st;
    bool written = fd >= 0 && tier->ops->fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                   zc_disk_pwrite_all(tier->ops, fd, data, size, 0) == ZC_OK &&
                   tier->ops->ftruncate(fd, (off_t)size) == 0;
    if (fd >= 0)
        zc_disk_close_keeping_errno(tier->ops, fd);
    free(data);
    return written;
}

/* No count is a safe count: the blob then waits for a full sweep. */
static void forget_refs(zc_disk_tier *tier, int dir_fd, const char *name)
{
    if (tier->ops->unlinkat(dir_fd, name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", name, errno);
}

/* After a write of at_least failed: a smaller count left there would let
 * the blob go while a recipe names it, so it goes. False when it stays. */
static bool drop_count_below(zc_disk_tier *tier, int dir_fd, const blob_place *place,
                             uint64_t at_least)
{
    uint64_t count = 0;
    zc_disk_log_errno("cannot count the users of", place->blob, errno);
    if (read_refs(tier, dir_fd, place, &count) != REFS_KNOWN || count >= at_least)
        return true;
    forget_refs(tier, dir_fd, place->refs);
    return read_refs(tier, dir_fd, place, &count) != REFS_KNOWN;
}

/* A count that could not be read now (an I/O error, a file being written)
 * may read later, without the recipe about to come: it goes. False when it
 * stays and reads. */
static bool drop_unread_count(zc_disk_tier *tier, int dir_fd, const blob_place *place)
{
    uint64_t count = 0;
    forget_refs(tier, dir_fd, place->refs);
    return read_refs(tier, dir_fd, place, &count) != REFS_KNOWN;
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
    refs_state state = read_refs(tier, dir_fd, &place, &count);
    zc_status status = ZC_OK;
    /* A blob that was there without a count keeps none: who names it is not
     * known. One written just now is named by no recipe yet; a count left
     * from an earlier copy removed by hand is kept, as it may still be. */
    if (published || state == REFS_KNOWN) {
        uint64_t users = (state == REFS_KNOWN ? count : 0) + 1;
        if (!write_refs(tier, dir_fd, &place, users) &&
            !drop_count_below(tier, dir_fd, &place, users))
            status = ZC_ERR_IO; /* one too low once the recipe is there */
    } else if (state == REFS_UNKNOWN && !drop_unread_count(tier, dir_fd, &place)) {
        status = ZC_ERR_IO; /* a count that may read again, one too low */
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
    zc_disk_accounting_input_removed(tier, false, (uint64_t)st.st_size);
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
    if (read_refs(tier, dir_fd, &place, &count) != REFS_KNOWN)
        ; /* users unknown: left to the full sweep */
    else if (count > 1) {
        if (!write_refs(tier, dir_fd, &place, count - 1))
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
    refs_state state = read_refs(tier, dir_fd, &place, &count);
    if (blob->gone || blob->users == 0) {
        if (state == REFS_KNOWN)
            forget_refs(tier, dir_fd, place.refs);
    } else if (state != REFS_KNOWN || count != blob->users) {
        if (!write_refs(tier, dir_fd, &place, blob->users))
            drop_count_below(tier, dir_fd, &place, blob->users);
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
