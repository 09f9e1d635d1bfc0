/* Memory-tier functions the tests use and the cache does not; not installed. */
#ifndef ZECACHE_MEMORY_TIER_INTERNAL_H
#define ZECACHE_MEMORY_TIER_INTERNAL_H

#include "zecache/memory_tier.h"

/* A new reference to the artifact for key, or ZC_MISS. A hit makes the entry
 * the most recently used. */
zc_status zc_memory_tier_get(zc_memory_tier *tier, const zc_key *key, zc_artifact **out);

/* How many threads are waiting right now for a build of key (not counting the
 * builder): for tests to wait until threads have piled up. */
size_t zc_memory_tier_waiting(zc_memory_tier *tier, const zc_key *key);

#endif
