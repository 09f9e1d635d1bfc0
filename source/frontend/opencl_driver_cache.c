/* Keeps Intel's own OpenCL cache off while the layer caches, so a program is
 * not stored twice and the driver's cache never answers a miss of ours. What
 * the driver reads (intel/compute-runtime), when it starts (ocl-icd loads the
 * drivers, which read their settings as they make their platforms, before
 * any layer: measured with 22.43, whose cl_cache/ kept filling with the
 * layer's setenv), so only `zecache exec`, before the process starts, is in
 * time for the process itself; the layer's own writes reach its children:
 *   - up to 23.30 (Debian 12 has 22.43): cl_cache_dir, default "cl_cache"
 *     relative to the working directory; it caches when that directory exists;
 *   - 23.35 and newer: NEO_CACHE_PERSISTENT (default 1 from 23.35 for
 *     OpenCL) with NEO_CACHE_DIR; with NEO_CACHE_PERSISTENT=0 the older
 *     drivers of that line fall back to cl_cache_dir.
 * The Level Zero layer keeps its switches the same way (ZECACHE_ORIGINAL_
 * <name> holds the user's value, a hidden value has a spelling of its own),
 * so either layer, and a child process, puts the user's value back first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zecache/opencl_driver_cache.h"
#include "zecache/log.h"

#define HIDDEN_PERSISTENT "00"
#define HIDDEN_DIR "/dev/null/zecache-keeps-the-driver-cache-off"

static bool names_directory(const char *value, const char *unset_default)
{
    struct stat st;
    const char *path = value == NULL ? unset_default : value[0] != '\0' ? value : "/";
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether a driver reading name would cache with value (NULL: unset). */
static bool would_cache(const char *name, const char *value)
{
    if (strcmp(name, "NEO_CACHE_PERSISTENT") == 0)
        return value == NULL || atoll(value) != 0;
    return names_directory(value, "cl_cache");
}

/* The user's value, as a parent's layer kept it, back in place of ours. */
static void restore(const char *name, const char *hidden)
{
    char original_name[64];
    snprintf(original_name, sizeof(original_name), "ZECACHE_ORIGINAL_%s", name);
    const char *original = getenv(original_name);
    const char *value = getenv(name);
    if (original == NULL || value == NULL || strcmp(value, hidden) != 0)
        return;
    if (original[0] == '\0')
        unsetenv(name);
    else
        setenv(name, original, 1);
}

static bool hide(const char *name, const char *hidden)
{
    const char *value = getenv(name);
    if (!would_cache(name, value))
        return false;
    char original_name[64];
    snprintf(original_name, sizeof(original_name), "ZECACHE_ORIGINAL_%s", name);
    zc_log_info("the driver's own OpenCL cache is off while the layer caches: %s=%s (was %s)", name,
                hidden, value != NULL ? value : "unset");
    setenv(original_name, value != NULL ? value : "", 1);
    setenv(name, hidden, 1);
    return true;
}

void zc_opencl_driver_cache_restore_user_env(void)
{
    restore("NEO_CACHE_PERSISTENT", HIDDEN_PERSISTENT);
    restore("cl_cache_dir", HIDDEN_DIR);
}

bool zc_opencl_driver_cache_hide(void)
{
    bool persistent = hide("NEO_CACHE_PERSISTENT", HIDDEN_PERSISTENT);
    bool dir = hide("cl_cache_dir", HIDDEN_DIR);
    return persistent || dir;
}
