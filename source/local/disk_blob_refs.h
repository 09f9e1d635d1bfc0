/* How many recipes name each recorded SPIR-V blob (disk_blob_refs.c), so
 * that eviction from one shard frees a blob with its last recipe without
 * reading every recipe. Every call is made under config.file's lock. */
#ifndef ZECACHE_DISK_BLOB_REFS_H
#define ZECACHE_DISK_BLOB_REFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk_internal.h"
#include "zecache/disk_recipes.h"

/* <s0>/<s1>/<64 hex>.spirv_refs beside <64 hex>.spirv: the count as 8
 * bytes little-endian in a sealed container (sealed.h) of this magic, with
 * the blob's SHA-256 as its id. */
#define ZC_SPIRV_REFS_SUFFIX ".spirv_refs"
#define ZC_SPIRV_REFS_MAGIC "ZCSPREF" /* with its NUL: 8 bytes */

struct zc_recipe;

/* Before the recipe naming blobs is published: one user more for each
 * distinct blob; published[i] says blob i was written just now (no recipe
 * names it yet). ZC_ERR_IO when a count could be neither raised nor
 * forgotten: the recipe must then not be published. */
zc_status zc_blob_refs_add(zc_disk_tier *tier, const zc_input_blob *blobs, size_t count,
                           const bool *published);
/* After the recipe naming inputs is gone: one user less for each distinct
 * blob, removing those it was the last user of (counted through
 * zc_disk_account_removed). ZC_ERR_IO when the total became unknown. */
zc_status zc_blob_refs_release(zc_disk_tier *tier, zc_disk_lock *lock,
                               const struct zc_recipe *inputs);
/* After a sweep's removals, from its exact census: each remaining blob's
 * count set to its users, the counts of removed blobs removed. */
void zc_blob_refs_rebuild(const zc_census *census);
/* A scan's ZC_SCAN_REFS item: removed when no blob of its name is beside it. */
void zc_blob_refs_remove_orphan(zc_disk_tier *tier, const zc_scan_item *item);

#endif
