/* Recorded inputs on the disk tier (disk_recipes.h): recipes beside their
 * entries, SPIR-V blobs shared by them, and the removal of blobs that no
 * recipe names any more. */
#include "zecache/disk_recipes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "disk_blob_refs.h"
#include "disk_internal.h"
#include "zecache/log.h"
#include "zecache/recipe.h"

#define RECIPE_NAME_SIZE (2 * ZC_KEY_SIZE + sizeof ZC_RECIPE_SUFFIX)

/* The largest recorded input's file, and the largest recipe's. */
#define SEALED_FILE_MAX (ZC_SEALED_MAX_CONTENT + ZC_SEALED_HEADER_SIZE)
#define RECIPE_FILE_MAX (ZC_SEALED_HEADER_SIZE + ZSTD_COMPRESSBOUND(ZC_RECIPE_MAX_CONTENT))

void zc_disk_blob_place(const uint8_t sha256[32], char dir[ZC_ENTRY_DIR_SIZE], char *name)
{
    zc_key as_key = {0};
    char hex[ZC_KEY_HEX_SIZE];
    memcpy(as_key.bytes, sha256, 32);
    zc_disk_entry_dir(&as_key, dir);
    zc_key_to_hex(&as_key, hex);
    snprintf(name, ZC_BLOB_NAME_SIZE, "%s%s", hex, ZC_SPIRV_SUFFIX);
}

static void recipe_name_of(const zc_key *key, char name[RECIPE_NAME_SIZE])
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(name, RECIPE_NAME_SIZE, "%s%s", hex, ZC_RECIPE_SUFFIX);
}

/* ZC_OK when a regular file is there, ZC_MISS when nothing is. */
static zc_status file_present(zc_disk_tier *tier, int dir_fd, const char *name)
{
    struct stat st;
    if (tier->ops->fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        return S_ISREG(st.st_mode) ? ZC_OK : ZC_ERR_IO;
    return errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
}

/* ---- recording ---- */

/* The bytes of blobs not on disk yet; *missing[i] says which. */
static zc_status count_missing_blobs(zc_disk_tier *tier, const zc_input_blob *blobs, size_t count,
                                     bool *missing, uint64_t *bytes)
{
    *bytes = 0;
    for (size_t i = 0; i < count; i++) {
        char dir[ZC_ENTRY_DIR_SIZE], name[ZC_BLOB_NAME_SIZE];
        zc_disk_blob_place(blobs[i].sha256, dir, name);
        int dir_fd = zc_disk_open_dir(tier, dir, false);
        zc_status present = dir_fd >= 0 ? file_present(tier, dir_fd, name) : ZC_MISS;
        if (dir_fd >= 0)
            tier->ops->close(dir_fd);
        if (present == ZC_ERR_IO)
            return ZC_ERR_IO;
        /* A recipe naming one SPIR-V twice (a program) writes it once. */
        missing[i] = present == ZC_MISS;
        for (size_t j = 0; j < i && missing[i]; j++)
            missing[i] = memcmp(blobs[j].sha256, blobs[i].sha256, 32) != 0;
        *bytes += missing[i] ? blobs[i].size : 0;
    }
    return ZC_OK;
}

static zc_status publish_blob(zc_disk_tier *tier, const zc_input_blob *blob)
{
    char dir[ZC_ENTRY_DIR_SIZE], name[ZC_BLOB_NAME_SIZE];
    zc_disk_blob_place(blob->sha256, dir, name);
    int dir_fd = zc_disk_open_dir(tier, dir, true);
    if (dir_fd < 0)
        return ZC_ERR_IO;
    zc_status status = zc_disk_publish(tier, blob->bytes, blob->size, dir_fd, name);
    tier->ops->close(dir_fd);
    return status;
}

typedef struct record_call {
    const zc_key *key;
    const uint8_t *recipe;
    size_t recipe_size;
    const zc_input_blob *blobs;
    size_t blob_count;
    bool *missing;
} record_call;

/* Under the lock, with the entry's directory open: blobs first, then the
 * recipe, so a recipe never names a blob that is not there. */
static zc_status write_locked(zc_disk_tier *tier, zc_disk_lock *lock, int parent_fd,
                              const record_call *call)
{
    char dir[ZC_ENTRY_DIR_SIZE], entry_name[ZC_ENTRY_NAME_SIZE], recipe_name[RECIPE_NAME_SIZE];
    zc_disk_entry_dir(call->key, dir);
    zc_disk_entry_name(call->key, entry_name);
    recipe_name_of(call->key, recipe_name);
    uint64_t blob_bytes = 0, room = 0;
    zc_status status =
        count_missing_blobs(tier, call->blobs, call->blob_count, call->missing, &blob_bytes);
    /* Making room from the entry's shard spares the entry, as a store's
     * does the one it brings; the full sweep it may fall back to may still
     * evict it (every entry went), or the only other recipe naming a blob
     * counted as present, and that blob with it: count again, until what is
     * missing fits in the room made. Each round finds more missing, so
     * there are at most blob_count + 1. */
    while (status == ZC_OK && blob_bytes + call->recipe_size > room) {
        room = blob_bytes + call->recipe_size;
        status = zc_disk_make_room_sparing(tier, lock, room, dir, entry_name);
        if (status == ZC_OK)
            status = file_present(tier, parent_fd, entry_name);
        if (status == ZC_OK)
            status = count_missing_blobs(tier, call->blobs, call->blob_count, call->missing,
                                         &blob_bytes);
    }
    if (status != ZC_OK)
        return status;
    zc_disk_begin_change(tier, lock);
    uint64_t written = 0, blobs_written = 0;
    for (size_t i = 0; i < call->blob_count && status == ZC_OK; i++)
        if (call->missing[i] && (status = publish_blob(tier, &call->blobs[i])) == ZC_OK)
            written += call->blobs[i].size, blobs_written++;
    uint64_t blobs_bytes = written;
    if (status == ZC_OK)
        status = zc_blob_refs_add(tier, call->blobs, call->blob_count, call->missing);
    if (status == ZC_OK && (status = zc_disk_publish(tier, call->recipe, call->recipe_size,
                                                     parent_fd, recipe_name)) == ZC_OK)
        written += call->recipe_size;
    zc_disk_accounting_inputs_added(tier, written - blobs_bytes, blobs_written, blobs_bytes);
    /* Blobs written before a failure stay counted: the next sweep removes
     * them, as no recipe names them. */
    zc_status total = zc_disk_set_total(tier, lock, lock->total + written);
    return status != ZC_OK ? status : total;
}

static zc_status record_locked(zc_disk_tier *tier, zc_disk_lock *lock, const record_call *call)
{
    char dir[ZC_ENTRY_DIR_SIZE], entry_name[ZC_ENTRY_NAME_SIZE], recipe_name[RECIPE_NAME_SIZE];
    zc_disk_entry_dir(call->key, dir);
    zc_disk_entry_name(call->key, entry_name);
    recipe_name_of(call->key, recipe_name);
    int parent_fd = zc_disk_open_dir(tier, dir, false);
    if (parent_fd < 0)
        return errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
    zc_status status = file_present(tier, parent_fd, entry_name);
    if (status == ZC_OK) {
        zc_status recipe = file_present(tier, parent_fd, recipe_name);
        status = recipe == ZC_OK ? ZC_EXISTS : recipe == ZC_MISS ? ZC_OK : recipe;
    }
    if (status == ZC_OK)
        status = write_locked(tier, lock, parent_fd, call);
    tier->ops->close(parent_fd);
    return status;
}

zc_status zc_disk_tier_record(zc_disk_tier *tier, const zc_key *key, const uint8_t *recipe,
                              size_t recipe_size, const zc_input_blob *blobs, size_t blob_count)
{
    if (tier == NULL || key == NULL || recipe == NULL || (blobs == NULL && blob_count > 0))
        return ZC_ERR_INVALID_ARG;
    if (tier->read_only)
        return ZC_ERR_DISABLED;
    record_call call = {key, recipe, recipe_size, blobs, blob_count, NULL};
    call.missing = calloc(blob_count + 1, sizeof *call.missing);
    if (call.missing == NULL)
        return ZC_ERR_NOMEM;
    zc_disk_lock lock;
    zc_status status = zc_disk_lock_acquire(tier, false, &lock);
    if (status == ZC_OK) {
        status = record_locked(tier, &lock, &call);
        zc_disk_lock_release(tier, &lock);
    }
    free(call.missing);
    return status;
}

/* ---- reading ---- */

/* The file name in the directory dir (relative to the cache's root). */
static zc_status read_file_in(zc_disk_tier *tier, const char *dir, const char *name,
                              uint64_t max_size, uint8_t **data, size_t *size)
{
    int dir_fd = zc_disk_open_dir(tier, dir, false);
    if (dir_fd < 0)
        return errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
    zc_status status = zc_disk_read_small_file(tier, dir_fd, name, max_size, data, size);
    tier->ops->close(dir_fd);
    return status;
}

zc_status zc_disk_tier_read_recipe(zc_disk_tier *tier, const zc_key *key, uint8_t **data,
                                   size_t *size)
{
    char dir[ZC_ENTRY_DIR_SIZE], name[RECIPE_NAME_SIZE];
    zc_disk_entry_dir(key, dir);
    recipe_name_of(key, name);
    return read_file_in(tier, dir, name, RECIPE_FILE_MAX, data, size);
}

zc_status zc_disk_tier_read_blob(zc_disk_tier *tier, const uint8_t sha256[32], uint8_t **data,
                                 size_t *size)
{
    char dir[ZC_ENTRY_DIR_SIZE], name[ZC_BLOB_NAME_SIZE];
    zc_disk_blob_place(sha256, dir, name);
    return read_file_in(tier, dir, name, SEALED_FILE_MAX, data, size);
}

bool zc_disk_tier_has_recipe(zc_disk_tier *tier, const zc_key *key)
{
    char dir[ZC_ENTRY_DIR_SIZE], name[RECIPE_NAME_SIZE];
    zc_disk_entry_dir(key, dir);
    recipe_name_of(key, name);
    int dir_fd = zc_disk_open_dir(tier, dir, false);
    if (dir_fd < 0)
        return false;
    bool present = file_present(tier, dir_fd, name) == ZC_OK;
    tier->ops->close(dir_fd);
    return present;
}

/* ---- what a sweep needs of a recipe ---- */

zc_status zc_disk_sweep_recipe(zc_disk_tier *tier, int dir_fd, const char *entry_name,
                               zc_recipe *inputs, uint64_t *removed_size)
{
    char name[NAME_MAX + 1], reason[160] = "";
    zc_key key;
    struct stat st;
    *removed_size = 0;
    memset(inputs, 0, sizeof *inputs);
    if (!zc_disk_sidecar_name(entry_name, ZC_RECIPE_SUFFIX, name, sizeof name))
        return ZC_MISS;
    if (tier->ops->fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
    if (!S_ISREG(st.st_mode))
        return ZC_MISS; /* counted as nothing, and named by nothing */
    uint8_t *data = NULL;
    size_t size = 0;
    zc_status status = ZC_MISS;
    if ((uint64_t)st.st_size > RECIPE_FILE_MAX)
        snprintf(reason, sizeof reason, "%llu bytes, more than any recipe",
                 (unsigned long long)st.st_size);
    else
        status = zc_disk_read_small_file(tier, dir_fd, name, RECIPE_FILE_MAX, &data, &size);
    /* One that cannot be read (another user's file, an I/O error) is as
     * unusable as a damaged one, and names SPIR-V nobody knows: kept, it
     * would stay beside a sweep that removes what it named. */
    if (status == ZC_ERR_IO) {
        snprintf(reason, sizeof reason, "cannot be read (%s)", strerror(errno));
        status = ZC_MISS;
    }
    /* Only the inputs: a sweep has no use for texts and constants. */
    if (status == ZC_OK)
        status = zc_recipe_decode_inputs(data, size,
                                         zc_disk_parse_entry_name(entry_name, &key) ? &key : NULL,
                                         inputs, reason, sizeof reason);
    free(data);
    if (status != ZC_MISS || reason[0] == '\0')
        return status; /* ZC_MISS without a reason: removed meanwhile */
    zc_log_info("removing damaged recorded inputs %s: %s", name, reason);
    if (tier->ops->unlinkat(dir_fd, name, 0) == 0) {
        *removed_size = (uint64_t)st.st_size;
        zc_disk_accounting_input_removed(tier, true, *removed_size);
    } else if (errno != ENOENT)
        return ZC_ERR_IO; /* still there, and still unread */
    return ZC_MISS;
}

bool zc_disk_parse_blob_name(const char *name, uint8_t sha256[32])
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key as_key;
    if (strlen(name) != ZC_BLOB_NAME_SIZE - 1 || !zc_disk_has_suffix(name, ZC_SPIRV_SUFFIX))
        return false;
    memcpy(hex, name, 64);
    hex[64] = '\0';
    if (!zc_key_from_hex(hex, &as_key))
        return false;
    memcpy(sha256, as_key.bytes, 32);
    return true;
}
