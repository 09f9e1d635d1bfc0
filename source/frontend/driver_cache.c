/* Keeps Intel's own persistent cache off while a layer caches, so a build is
 * not stored twice and the driver's cache never answers a miss of ours (a
 * miss must be a real compile), writing to the environment only when the
 * driver would otherwise cache: setenv races with any other thread of the
 * program calling getenv (glibc before 2.40 may free the array getenv is
 * walking), so the fewer writes the better.
 *
 * What Intel's driver reads (intel/compute-runtime):
 *   - Level Zero, at its first compile, after the layer's constructor ran:
 *     up to 24.09 (Debian 12 has 22.43) l0_cache_dir, default "l0_cache"
 *     relative to the working directory, caching when that directory exists
 *     (22.43 tries to write there whatever is set; missing = no-op); 24.13
 *     and newer NEO_CACHE_PERSISTENT (atoll, default 1) with NEO_CACHE_DIR or
 *     $XDG_CACHE_HOME / $HOME; until about 24.x, with NEO_CACHE_PERSISTENT=0
 *     it falls back to l0_cache_dir.
 *   - OpenCL, when it starts (ocl-icd loads the drivers, which read their
 *     settings as they make their platforms, before any layer: measured with
 *     22.43, whose cl_cache/ kept filling with the layer's setenv), so only
 *     `zecache exec`, before the process starts, is in time for the process
 *     itself; the layer's own writes reach its children: up to 23.30
 *     cl_cache_dir, default "cl_cache" as above; 23.35 and newer
 *     NEO_CACHE_PERSISTENT (default 1 from 23.35 for OpenCL), the older
 *     drivers of that line falling back to cl_cache_dir with it 0.
 * Every switch of the API is hidden whatever the loaded driver is: which of
 * them a driver reads cannot be told from its library reliably (26.x lets
 * the compiler merge the string literal "NEO_CACHE_PERSISTENT" into
 * another), and a switch a driver does not read is harmless to set.
 *
 * A hidden variable gets a value of its own spelling (NEO_CACHE_PERSISTENT=00,
 * <api>_cache_dir=/dev/null/...), and the user's value is kept in
 * ZECACHE_ORIGINAL_<name> ("" when unset). A child process that loads a
 * layer puts the user's value back only where the variable still has that
 * spelling: a value the child set itself, even "0", is its own and stays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zecache/driver_cache.h"
#include "zecache/log.h"

/* "00" is 0 to the driver and to zecache, and not what a user writes. A path
 * under /dev/null cannot be a directory, so the driver finds no cache there. */
#define HIDDEN_PERSISTENT "00"
#define HIDDEN_DIR "/dev/null/zecache-keeps-the-driver-cache-off"

typedef struct cache_switches {
    const char *dir_name;    /* the directory switch of the API */
    const char *dir_default; /* the directory the driver uses when it is unset */
    const char *cache_name;  /* for messages */
} cache_switches;

static cache_switches switches_of(zc_api api)
{
    if (api == ZC_API_OPENCL)
        return (cache_switches){"cl_cache_dir", "cl_cache", "OpenCL cache"};
    return (cache_switches){"l0_cache_dir", "l0_cache", "cache"};
}

static bool names_directory(const char *value, const char *unset_default)
{
    struct stat st;
    const char *path = value == NULL ? unset_default : value[0] != '\0' ? value : "/";
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode); /* "" + "/<hash>" */
}

/* Whether a driver reading name would cache with value (NULL: unset). */
static bool would_cache(const cache_switches *switches, const char *name, const char *value)
{
    if (strcmp(name, "NEO_CACHE_PERSISTENT") == 0)
        return value == NULL || atoll(value) != 0; /* the driver's parsing */
    return names_directory(value, switches->dir_default);
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

static bool hide(const cache_switches *switches, const char *name, const char *hidden)
{
    const char *value = getenv(name);
    if (!would_cache(switches, name, value))
        return false;
    char original_name[64];
    snprintf(original_name, sizeof(original_name), "ZECACHE_ORIGINAL_%s", name);
    zc_log_info("the driver's own %s is off while the layer caches: %s=%s (was %s)",
                switches->cache_name, name, hidden, value != NULL ? value : "unset");
    setenv(original_name, value != NULL ? value : "", 1);
    setenv(name, hidden, 1);
    return true;
}

void zc_driver_cache_restore_user_env(zc_api api)
{
    restore("NEO_CACHE_PERSISTENT", HIDDEN_PERSISTENT);
    restore(switches_of(api).dir_name, HIDDEN_DIR);
}

bool zc_driver_cache_hide(zc_api api)
{
    cache_switches switches = switches_of(api);
    bool persistent = hide(&switches, "NEO_CACHE_PERSISTENT", HIDDEN_PERSISTENT);
    bool dir = hide(&switches, switches.dir_name, HIDDEN_DIR);
    return persistent || dir;
}
