/* Keeps the driver's own persistent cache off while the layer caches, so a
 * module is not stored twice, writing to the environment only when the
 * driver would otherwise cache: setenv in a library constructor races with
 * any other thread of the program calling getenv (glibc before 2.40 may free
 * the array getenv is walking), so the fewer writes the better.
 *
 * What Intel's driver reads (intel/compute-runtime), both at its first
 * compile, after this library's constructor ran:
 *   - up to 24.09 (Debian 12 has 22.43): l0_cache_dir, default "l0_cache"
 *     relative to the working directory; it caches when that directory
 *     exists (22.43 tries to write there whatever is set; missing = no-op);
 *   - 24.13 and newer: NEO_CACHE_PERSISTENT (atoll, default 1) with
 *     NEO_CACHE_DIR or $XDG_CACHE_HOME / $HOME; until about 24.x, with
 *     NEO_CACHE_PERSISTENT=0 it falls back to l0_cache_dir as above.
 * Every switch is hidden whatever the loaded driver is: which of them a
 * driver reads cannot be told from its library reliably (26.x lets the
 * compiler merge the string literal "NEO_CACHE_PERSISTENT" into another), a
 * switch a driver does not read is harmless to set, and a switch a driver
 * reads but we left alone stores every module twice and lets the driver's
 * cache answer our misses, which must be real compiles.
 *
 * A hidden variable gets a value of its own spelling (NEO_CACHE_PERSISTENT=00,
 * l0_cache_dir=/dev/null/...), and the user's value is kept in
 * ZECACHE_ORIGINAL_<name> ("" when unset). A child process that loads the
 * layer puts the user's value back only where the variable still has that
 * spelling: a value the child set itself, even "0", is its own and stays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "layer_internal.h"
#include "zecache/log.h"

typedef struct hidden_variable {
    const char *name;
    /* Whether a driver that reads the variable caches with this value (NULL:
     * unset). */
    bool (*driver_would_cache)(const char *value);
    const char *hidden_value; /* off for the driver, and only ever written by us */
} hidden_variable;

static bool persistent_would_cache(const char *value)
{
    return value == NULL || atoll(value) != 0; /* the driver's parsing */
}

static bool is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool cache_dir_would_cache(const char *value)
{
    if (value == NULL)
        return is_directory("l0_cache");
    return is_directory(value[0] != '\0' ? value : "/"); /* "" + "/<hash>" */
}

/* "00" is 0 to the driver and to zecache, and not what a user writes. A path
 * under /dev/null cannot be a directory, so the driver finds no cache there. */
static const hidden_variable hidden_variables[] = {
    {"NEO_CACHE_PERSISTENT", persistent_would_cache, "00"},
    {"l0_cache_dir", cache_dir_would_cache, "/dev/null/zecache-keeps-the-driver-cache-off"},
};

#define HIDDEN_COUNT (sizeof(hidden_variables) / sizeof(hidden_variables[0]))
#define ORIGINAL_PREFIX "ZECACHE_ORIGINAL_"

static void original_name_of(const hidden_variable *variable, char *name, size_t size)
{
    snprintf(name, size, "%s%s", ORIGINAL_PREFIX, variable->name);
}

static void set_or_unset(const char *name, const char *value)
{
    if (value == NULL || value[0] == '\0')
        unsetenv(name);
    else
        setenv(name, value, 1);
}

void zcl_driver_cache_restore_user_env(void)
{
    for (size_t i = 0; i < HIDDEN_COUNT; i++) {
        const hidden_variable *variable = &hidden_variables[i];
        char original_name[64];
        original_name_of(variable, original_name, sizeof(original_name));
        const char *original = getenv(original_name);
        const char *value = getenv(variable->name);
        if (original != NULL && value != NULL && strcmp(value, variable->hidden_value) == 0)
            set_or_unset(variable->name, original);
    }
}

void zcl_driver_cache_hide(void)
{
    int written = 0;
    for (size_t i = 0; i < HIDDEN_COUNT; i++) {
        const hidden_variable *variable = &hidden_variables[i];
        const char *user_value = getenv(variable->name);
        if (!variable->driver_would_cache(user_value))
            continue;
        char original_name[64];
        original_name_of(variable, original_name, sizeof(original_name));
        zc_log_info("the driver's own cache is off while the layer caches: %s=%s (was %s)",
                    variable->name, variable->hidden_value,
                    user_value != NULL ? user_value : "unset");
        setenv(original_name, user_value != NULL ? user_value : "", 1);
        setenv(variable->name, variable->hidden_value, 1);
        written++;
    }
    if (written == 0)
        zc_log_info("the driver's own cache is off already: no variable written");
}
