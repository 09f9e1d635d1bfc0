/* A layer's cache over the life of its process: opened at load, the
 * program's entries prefetched, counters merged and summed up at exit. */
#ifndef ZECACHE_FRONTEND_PROCESS_H
#define ZECACHE_FRONTEND_PROCESS_H

#include "zecache/cache.h"
#include "zecache/config.h"

/* Opens the cache of config, logging which (layer names the layer in the
 * line); NULL (logged) when it cannot. A child the process forks starts
 * with the cache's counters at zero, so the parent's are not merged twice. */
zc_cache *zc_frontend_cache_start(const zc_config *config, const char *layer);

/* Starts loading the entries this program used last time (zc_cache_
 * prefetch_start), the program named by its executable and first argument
 * (the script, for an interpreter). */
void zc_frontend_prefetch_start(zc_cache *cache);

/* At exit: saves the program's usage list, merges the counters into the
 * stats file and logs the summary line. NULL does nothing. */
void zc_frontend_process_end(zc_cache *cache);

#endif
