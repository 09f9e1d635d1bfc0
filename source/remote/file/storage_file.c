/* file:///PATH: a directory with the disk tier's layout and format (on NFS,
 * or a read-only image shipped with an application), served by the disk
 * tier's own code. Without a secret its files are plain entries, so a local
 * cache directory can be served as is; with one, each carries its tag after
 * the entry (remote_tag.h). No cross-node lock: only Redis coordinates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_internal.h"
#include "zecache/log.h"
#include "zecache/remote_tag.h"
#include "zecache/storage.h"
#include "zecache/disk_maintenance.h"
#include "disk_raw.h"
#include "zecache/disk_recipes.h"

typedef struct file_storage {
    zc_storage base;
    zc_disk_tier *tier;
    char name[sizeof(((zc_remote_spec *)0)->name)];
} file_storage;

static zc_status file_get(zc_storage *storage, const zc_key *key, uint8_t **value, size_t *size)
{
    file_storage *file = (file_storage *)storage;
    return zc_disk_tier_read_raw(file->tier, key, value, size);
}

static zc_status file_remove(zc_storage *storage, const zc_key *key)
{
    file_storage *file = (file_storage *)storage;
    char rel[ZC_ENTRY_REL_SIZE];
    zc_disk_entry_rel_path(key, rel);
    return zc_disk_tier_remove_entry(file->tier, rel);
}

/* The disk tier keeps an existing file: a bad one is removed first. */
static zc_status file_put(zc_storage *storage, const zc_key *key, const uint8_t *value, size_t size,
                          bool replace)
{
    file_storage *file = (file_storage *)storage;
    if (replace)
        (void)file_remove(storage, key);
    zc_status status = zc_disk_tier_store_raw(file->tier, key, value, size);
    return status == ZC_EXISTS ? ZC_OK : status; /* the value is there */
}

/* The disk tier's own layout: a prewarm reading the directory finds them. */
static zc_status file_record(zc_storage *storage, const zc_key *key, const uint8_t *recipe,
                             size_t recipe_size, const zc_input_blob *blobs, size_t blob_count)
{
    file_storage *file = (file_storage *)storage;
    return zc_disk_tier_record(file->tier, key, recipe, recipe_size, blobs, blob_count);
}

static void file_close(zc_storage *storage)
{
    file_storage *file = (file_storage *)storage;
    zc_disk_tier_close(file->tier);
    free(file);
}

static const zc_storage_ops file_ops = {
    .get = file_get,
    .put = file_put,
    .remove = file_remove,
    .claim = NULL,
    .release = NULL,
    .record = file_record,
    .close = file_close,
};

zc_status zc_storage_file_open(const zc_remote_spec *spec, const zc_config *config,
                               zc_storage **out)
{
    if (spec == NULL || spec->kind != ZC_REMOTE_FILE || config == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    /* zc_config is large: the directory's own copy lives on the heap. */
    zc_config *dir_config = malloc(sizeof *dir_config);
    file_storage *file = calloc(1, sizeof *file);
    if (dir_config == NULL || file == NULL) {
        free(dir_config);
        free(file);
        return ZC_ERR_NOMEM;
    }
    *dir_config = *config;
    snprintf(dir_config->dir, sizeof dir_config->dir, "%s", spec->servers[0].path);
    dir_config->persistent = true;
    /* Shared by intent: who may write it is the trust model (README). */
    dir_config->allow_shared = true;
    zc_status status = spec->read_only ? zc_disk_tier_open_read_only(dir_config, &file->tier)
                                       : zc_disk_tier_open(dir_config, &file->tier);
    free(dir_config);
    if (status != ZC_OK) {
        free(file);
        return status;
    }
    snprintf(file->name, sizeof file->name, "%s", spec->name);
    file->base = (zc_storage){.ops = &file_ops, .name = file->name, .read_only = spec->read_only};
    *out = &file->base;
    return ZC_OK;
}
