/* Intel's own persistent cache kept off while a zecache layer caches an
 * API's builds, by hiding the switches that would have it on (Level Zero:
 * NEO_CACHE_PERSISTENT, l0_cache_dir; OpenCL: NEO_CACHE_PERSISTENT,
 * cl_cache_dir): ZECACHE_ORIGINAL_<name> holds the user's value, a hidden
 * value has a spelling of its own. */
#ifndef ZECACHE_DRIVER_CACHE_H
#define ZECACHE_DRIVER_CACHE_H

#include <stdbool.h>

#include "zecache/build_request.h"

/* Puts back the user's values of api's switches that a parent (zecache exec,
 * a process running a layer) hid, so this process reads what the user set;
 * a value the process set itself is kept. */
void zc_driver_cache_restore_user_env(zc_api api);

/* Hides every switch of api with which a driver of any generation would
 * cache itself, remembering the user's values; writes nothing when no
 * driver would cache with the values set. True when a switch was hidden. */
bool zc_driver_cache_hide(zc_api api);

#endif
