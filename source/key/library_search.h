/* Where the dynamic linker will find a library that a given object dlopens,
 * found without loading anything. Internal to the core (tests give every
 * input explicitly). */
#ifndef ZECACHE_LIBRARY_SEARCH_H
#define ZECACHE_LIBRARY_SEARCH_H

#include <limits.h>

#include "zecache/identity.h"
#include "zecache/status.h"

/* Which step of the search found a library. */
typedef enum zc_search_step {
    ZC_SEARCH_CALLER_RPATH,     /* the caller's DT_RPATH (it has no DT_RUNPATH) */
    ZC_SEARCH_EXECUTABLE_RPATH, /* the main program's DT_RPATH */
    ZC_SEARCH_LD_LIBRARY_PATH,
    ZC_SEARCH_CALLER_RUNPATH,
    /* a directory glibc lists for the loaded caller before ld.so.cache: the
     * DT_RPATH of it and its loaders, the program's, LD_LIBRARY_PATH or the
     * caller's DT_RUNPATH (glibc does not say which) */
    ZC_SEARCH_LINKER_DIRS,
    ZC_SEARCH_LD_SO_CACHE,
    ZC_SEARCH_DEFAULT_DIRS,
} zc_search_step;

/* The inputs of one search; NULL members are left out. */
typedef struct zc_library_search {
    const char *caller;          /* path of the object calling dlopen, as it was loaded */
    const char *executable;      /* path of the main program */
    const char *ld_library_path; /* LD_LIBRARY_PATH's value */
    /* With ld_library_path NULL: take zc_initial_ld_library_path() when the
     * ELF-based search needs it (reading it costs tens of microseconds). */
    bool initial_ld_library_path;
    const char *ld_so_cache; /* path of the ld.so.cache file */
    /* NULL-terminated; NULL means this machine's default directories. */
    const char *const *default_dirs;
    /* When the caller is loaded in this process, take the directories from
     * the dynamic linker (dlinfo) instead of the caller's and the program's
     * ELF files and ld_library_path: its list also holds the DT_RPATH of
     * the objects that loaded the caller. */
    bool ask_dynamic_linker;
} zc_library_search;

/* LD_LIBRARY_PATH as the dynamic linker of this process uses it: the value
 * the program started with, NULL in set-user-ID programs or when unset. */
const char *zc_initial_ld_library_path(void);

/* The search of this process: the caller given, the main program (its path
 * is written to executable, PATH_MAX bytes), zc_initial_ld_library_path() (read
 * only if needed),
 * /etc/ld.so.cache, the default directories, and the dynamic linker's own
 * list when the caller is loaded. */
zc_library_search zc_library_search_of_process(const char *caller, char *executable);

/* Finds name (a file name without '/') in glibc's order for dlopen: the
 * caller's DT_RPATH when it has no DT_RUNPATH (and, asking the dynamic
 * linker, its loaders'), then the main program's DT_RPATH, LD_LIBRARY_PATH,
 * the caller's DT_RUNPATH ($ORIGIN, $LIB and $PLATFORM expanded), the cache,
 * the default directories (when the caller is marked DF_1_NODEFLIB, neither
 * these nor a cache entry inside them). Each directory is tried in the
 * hardware capability subdirectories glibc tries first (glibc-hwcaps/...).
 * Candidates the loader would reject (not ELF, another machine) are
 * skipped, as by the loader. step may be NULL. ZC_MISS when not found,
 * ZC_ERR_INVALID_ARG for a bad name. */
zc_status zc_library_search_find(const zc_library_search *search, const char *name,
                                 zc_library_identity *identity, zc_search_step *step);

/* The same for each of names[0..count), reading the caller and the program
 * once: found[i] says whether identities[i] (and steps[i], when steps is not
 * NULL) were written. ZC_ERR_INVALID_ARG when a name is bad. */
zc_status zc_library_search_find_each(const zc_library_search *search, const char *const *names,
                                      size_t count, zc_library_identity *identities,
                                      zc_search_step *steps, bool *found);

/* ---- identity.c ---- */

/* Describes the file at path as the library called name if it is a library
 * this process could load; identity is written only on success (ZC_OK),
 * otherwise ZC_MISS. */
zc_status zc_library_identity_describe(const char *path, const char *name,
                                       zc_library_identity *identity);

#endif
