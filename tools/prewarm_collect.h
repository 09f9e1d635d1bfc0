/* What `zecache prewarm` builds: the recorded inputs of the cache's
 * entries (or of an input bundle), each verified, after the filters. */
#ifndef ZECACHE_PREWARM_COLLECT_H
#define ZECACHE_PREWARM_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/config.h"
#include "zecache/disk_tier.h"
#include "zecache/key.h"
#include "zecache/recipe.h"
#include "tool_inputs.h"

typedef struct prewarm_item {
    zc_key recorded_key; /* the entry it was recorded with */
    bool opencl;         /* an OpenCL program's (zecache-build-cl builds it) */
    /* OpenCL: its build variables, "NAME=VALUE\n" or "NAME\n" (not set)
     * each, which one helper process has one set of; NULL otherwise. */
    char *build_variables;
    char *device_name;
    uint8_t *recipe; /* sealed, as stored */
    size_t recipe_size;
    uint8_t **blobs; /* sealed inputs (SPIR-V, OpenCL C), one per input: the list's (blobs) */
    size_t *blob_sizes;
    uint32_t blob_count;
} prewarm_item;

typedef struct prewarm_list {
    prewarm_item *items;
    size_t count, capacity;
    char **problems; /* damaged recorded inputs: "<key>: reason" */
    size_t problem_count;
    size_t without_inputs; /* entries that have none */
    /* Each SPIR-V once, however many items name it: thousands of keys may
     * share one large module's SPIR-V. Decoded and verified once too, when
     * its first recipe is added (spirv_sizes: its size; bytes NULL: it did
     * not verify). */
    tool_blob_pool blobs;
    uint64_t spirv_decodes; /* SPIR-V decoded to verify them */
} prewarm_list;

typedef struct prewarm_filter {
    int64_t used_since_unix; /* 0: any; else entries last used at or after */
    const char *device;      /* NULL: any; else device names containing it */
    const zc_key *keys;      /* NULL: any; else only these recorded keys */
    size_t key_count;
} prewarm_filter;

/* From the cache directory's entries. False when out of memory or the
 * directory cannot be read (reason). */
bool prewarm_collect_cache(zc_disk_tier *tier, const prewarm_filter *filter, prewarm_list *list,
                           char *reason, size_t reason_size);
/* From an input bundle (prewarm_bundle.c), checked against config's secret
 * (NEO_CACHE_REMOTE_SECRET_FILE). False, with reason, when the bundle is
 * damaged, unsigned or signed otherwise than config asks: then nothing is
 * in list. */
bool prewarm_collect_bundle(const char *path, const zc_config *config, const prewarm_filter *filter,
                            prewarm_list *list, char *reason, size_t reason_size);
/* Verifies a recipe and its blobs and adds them as an item, or as a
 * problem. Takes the buffers. A blob may be NULL when the list's pool has
 * its SPIR-V already (found by tool_blob_pool_find on list->blobs). False
 * when out of memory. */
bool prewarm_list_add(prewarm_list *list, const prewarm_filter *filter, uint8_t *recipe,
                      size_t recipe_size, uint8_t **blobs, size_t *blob_sizes, uint32_t count);
/* From the Redis storages of config's NEO_CACHE_REMOTE, their signatures
 * checked with config's secret; keys already listed (from a directory) are
 * skipped. --used-within does not apply: Redis keeps no last use. False
 * when out of memory (reason); a storage that fails is a problem, not a
 * failure. */
bool prewarm_collect_remote(const zc_config *config, const prewarm_filter *filter,
                            prewarm_list *list, char *reason, size_t reason_size);
/* Whether the filters keep recipe (device and keys). */
bool prewarm_filter_wants(const prewarm_filter *filter, const zc_recipe *recipe);
/* Whether an item for key is listed already. */
bool prewarm_list_has(const prewarm_list *list, const zc_key *key);
/* Adds "<what>: <reason>" as a problem. */
bool prewarm_list_problem(prewarm_list *list, const char *what, const char *reason);
void prewarm_list_free(prewarm_list *list);

#endif
