/* Recorded inputs on the disk tier (recipe.h): each entry's recipe beside
 * it as <hex>.recipe (counted and removed with the entry, as its trace), and
 * the SPIR-V the recipes name, once per content, as
 * <s0>/<s1>/<64 hex of its SHA-256>.spirv, counted in config.file. Writes
 * happen under config.file's lock, and so does the removal of SPIR-V no
 * recipe names any more (every sweep: eviction, trim), so a blob never goes
 * while a recipe naming it exists or is being written by another process. */
#ifndef ZECACHE_DISK_RECIPES_H
#define ZECACHE_DISK_RECIPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/disk_tier.h"
#include "zecache/key.h"
#include "zecache/status.h"

/* One SPIR-V a recipe names, in its container (zc_spirv_blob_encode). */
typedef struct zc_input_blob {
    uint8_t sha256[32];
    const uint8_t *bytes;
    size_t size;
} zc_input_blob;

/* Stores key's encoded recipe and the blobs not there yet, making room as a
 * store does. ZC_MISS when key's entry is not on disk (nothing is written:
 * no recipe without its entry), ZC_EXISTS when it has a recipe already,
 * ZC_ERR_DISABLED in a read-only directory. */
zc_status zc_disk_tier_record(zc_disk_tier *tier, const zc_key *key, const uint8_t *recipe,
                              size_t recipe_size, const zc_input_blob *blobs, size_t blob_count);

/* key's recipe or a blob as stored, unverified (the caller decodes):
 * ZC_MISS when absent, ZC_ERR_IO when unreadable. */
zc_status zc_disk_tier_read_recipe(zc_disk_tier *tier, const zc_key *key, uint8_t **data,
                                   size_t *size);
zc_status zc_disk_tier_read_blob(zc_disk_tier *tier, const uint8_t sha256[32], uint8_t **data,
                                 size_t *size);
/* Whether key's entry has a recipe beside it. */
bool zc_disk_tier_has_recipe(zc_disk_tier *tier, const zc_key *key);

#endif
