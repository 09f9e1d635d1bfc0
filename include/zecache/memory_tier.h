/* The in-memory tier: a thread-safe map from key to artifact with a byte
 * budget, LRU eviction and single flight (one build per missing key; other
 * threads asking for it wait for that build). */
#ifndef ZECACHE_MEMORY_TIER_H
#define ZECACHE_MEMORY_TIER_H

#include <stddef.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/key.h"
#include "zecache/status.h"

typedef struct zc_memory_tier zc_memory_tier;

/* budget_bytes: total zc_artifact_footprint allowed; 0 keeps nothing (but
 * single flight still works). */
zc_status zc_memory_tier_create(size_t budget_bytes, zc_memory_tier **out);
void zc_memory_tier_destroy(zc_memory_tier *tier);
/* How long a thread waits for another thread's build of the same key before
 * it builds the key apart (NEO_CACHE_WAIT_TIMEOUT_MS; 0: it never waits).
 * Until set, a thread waits as long as the build takes. */
void zc_memory_tier_set_wait_timeout(zc_memory_tier *tier, uint64_t milliseconds);

/* Inserts (or replaces) key's artifact; takes its own reference. An artifact
 * larger than the whole budget is not kept. */
zc_status zc_memory_tier_put(zc_memory_tier *tier, const zc_key *key, zc_artifact *artifact);

/* Produces the artifact for a missing key. On ZC_OK *out holds one reference
 * that the tier takes over. Any other status is a failed build. */
typedef zc_status (*zc_build_fn)(void *context, zc_artifact **out);

typedef enum zc_memory_outcome {
    ZC_MEMORY_HIT,    /* found in the map */
    ZC_MEMORY_BUILT,  /* this call ran build */
    ZC_MEMORY_WAITED, /* another thread built it while this one waited */
} zc_memory_outcome;

/* Returns key's artifact, building it with build(context) if missing. When
 * several threads ask for the same missing key, exactly one runs build and the
 * rest wait for its result; if that build fails, the failure is returned to
 * its caller and one waiter builds again. outcome may be NULL. */
zc_status zc_memory_tier_get_or_build(zc_memory_tier *tier, const zc_key *key, zc_build_fn build,
                                      void *context, zc_artifact **out, zc_memory_outcome *outcome);

typedef struct zc_memory_tier_stats {
    size_t entries;
    size_t bytes;
    size_t budget;
    uint64_t evictions;
} zc_memory_tier_stats;

void zc_memory_tier_get_stats(zc_memory_tier *tier, zc_memory_tier_stats *stats);

#endif
