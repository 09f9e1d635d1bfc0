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
 * Which of the two a loaded driver reads is told by the names among its
 * read-only data (a driver naming neither is taken to read neither; with no
 * driver loaded yet, both are assumed).
 *
 * A hidden variable gets a value of its own spelling (NEO_CACHE_PERSISTENT=00,
 * l0_cache_dir=/dev/null/...), and the user's value is kept in
 * ZECACHE_ORIGINAL_<name> ("" when unset). A child process that loads the
 * layer puts the user's value back only where the variable still has that
 * spelling: a value the child set itself, even "0", is its own and stays. */
#include <dlfcn.h>
#include <link.h>
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

/* Where the unwind tables start (they follow the read-only data and are
 * most of its segment, and rarely in memory yet), or 0. */
static ElfW(Addr) unwind_tables_of(const struct dl_phdr_info *info)
{
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
            return info->dlpi_phdr[i].p_vaddr;
    return 0;
}

/* Whether the object's read-only, non-code segments (up to the unwind
 * tables) hold name as a string. */
static bool object_mentions(const struct dl_phdr_info *info, const char *name)
{
    size_t size = strlen(name) + 1; /* with its NUL: a whole string, not a prefix */
    ElfW(Addr) unwind_tables = unwind_tables_of(info);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || (segment->p_flags & (PF_W | PF_X | PF_R)) != PF_R)
            continue;
        size_t length = segment->p_filesz;
        if (unwind_tables > segment->p_vaddr && unwind_tables < segment->p_vaddr + length)
            length = unwind_tables - segment->p_vaddr;
        const void *start = (const void *)(info->dlpi_addr + segment->p_vaddr);
        if (memmem(start, length, name, size) != NULL)
            return true;
    }
    return false;
}

typedef struct switches_search {
    zcl_driver_cache_switches *switches;
    int drivers;
} switches_search;

static int visit_loaded_object(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    switches_search *search = context;
    /* Drivers are files: the vDSO's bare name would cost a library search. */
    if (info->dlpi_name == NULL || strchr(info->dlpi_name, '/') == NULL ||
        !zcl_is_driver_library(info->dlpi_name))
        return 0;
    search->drivers++;
    for (size_t i = 0; i < HIDDEN_COUNT; i++)
        search->switches->reads[i] |= object_mentions(info, hidden_variables[i].name);
    return 0;
}

_Static_assert(HIDDEN_COUNT == ZCL_DRIVER_CACHE_SWITCHES, "one flag per hidden variable");

void zcl_driver_cache_switches_find(zcl_driver_cache_switches *switches)
{
    *switches = (zcl_driver_cache_switches){0};
    switches_search search = {switches, 0};
    dl_iterate_phdr(visit_loaded_object, &search);
    if (search.drivers == 0) /* none loaded yet: assume it reads every switch */
        for (size_t i = 0; i < HIDDEN_COUNT; i++)
            switches->reads[i] = true;
}

void zcl_driver_cache_hide(const zcl_driver_cache_switches *switches)
{
    int written = 0;
    for (size_t i = 0; i < HIDDEN_COUNT; i++) {
        const hidden_variable *variable = &hidden_variables[i];
        const char *user_value = getenv(variable->name);
        if (!switches->reads[i] || !variable->driver_would_cache(user_value))
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
