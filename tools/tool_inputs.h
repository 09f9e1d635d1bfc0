/* Recorded inputs in bundles, for export, import, record and prewarm
 * --from: an entry's SPIR-V (each once per bundle) and then its recipe, so
 * a reader has every SPIR-V a recipe names when the recipe arrives. */
#ifndef ZECACHE_TOOL_INPUTS_H
#define ZECACHE_TOOL_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/bundle.h"
#include "zecache/config.h"
#include "zecache/disk_tier.h"
#include "zecache/key.h"
#include "zecache/remote_tag.h"

/* SPIR-V containers by SHA-256: written to a bundle, or read from one. */
typedef struct tool_blob_pool {
    uint8_t (*sha256)[32];
    uint8_t **bytes; /* NULL for one only written (its bytes are not kept) */
    size_t *sizes;
    uint64_t *spirv_sizes; /* its SPIR-V's size once decoded (0 until then) */
    size_t count, capacity;
} tool_blob_pool;

/* Takes bytes (may be NULL). False when out of memory. */
bool tool_blob_pool_add(tool_blob_pool *pool, const uint8_t sha256[32], uint8_t *bytes,
                        size_t size);
/* The index of sha256, or -1. */
long tool_blob_pool_find(const tool_blob_pool *pool, const uint8_t sha256[32]);
void tool_blob_pool_free(tool_blob_pool *pool);

typedef enum tool_inputs_written {
    TOOL_INPUTS_WRITTEN,
    TOOL_INPUTS_NONE,    /* the entry has no recorded inputs */
    TOOL_INPUTS_DAMAGED, /* problem says why: left out */
    TOOL_INPUTS_FAILED,  /* the bundle could not be written */
} tool_inputs_written;

/* key's SPIR-V not written yet (in written) and its recipe, verified. */
tool_inputs_written tool_write_inputs(zc_disk_tier *tier, const zc_key *key,
                                      zc_bundle_writer *writer, tool_blob_pool *written,
                                      char *problem, size_t problem_size);

/* The signer of config's secret (NEO_CACHE_REMOTE_SECRET_FILE), or NULL
 * without one; *failed (with reason) when it is set but unusable. */
const zc_bundle_signer *tool_bundle_signer(const zc_config *config, zc_remote_secret *secret,
                                           zc_bundle_signer *signer, bool *failed, char *reason,
                                           size_t reason_size);

#endif
