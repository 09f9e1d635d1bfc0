/* Intel's own OpenCL cache kept off while zecache caches OpenCL builds
 * (cl_cache_dir up to 23.30, NEO_CACHE_PERSISTENT from 23.35), by hiding the
 * switches that would have it on, with the Level Zero layer's convention:
 * ZECACHE_ORIGINAL_<name> holds the user's value, a hidden value has a
 * spelling of its own. */
#ifndef ZECACHE_OPENCL_DRIVER_CACHE_H
#define ZECACHE_OPENCL_DRIVER_CACHE_H

#include <stdbool.h>

/* Puts back the user's values that a parent (zecache exec, a process running
 * a layer) hid, so this process reads what the user set. */
void zc_opencl_driver_cache_restore_user_env(void);

/* Hides every switch with which the driver would cache OpenCL builds itself,
 * remembering the user's values; true when one was (the driver, if it read
 * them already, caches in this process). */
bool zc_opencl_driver_cache_hide(void);

#endif
