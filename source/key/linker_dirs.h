/* The directories the dynamic linker of this process searches for a dlopen
 * by an object loaded in it, asked of glibc itself. Internal to the core. */
#ifndef ZECACHE_LINKER_DIRS_H
#define ZECACHE_LINKER_DIRS_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>

#include "zecache/status.h"

typedef struct zc_linker_dirs {
    Dl_serinfo *info; /* the directories, in order, as dlinfo gives them */
    size_t count;
    /* ld.so.cache is consulted before directory cache_at (count: after all). */
    size_t cache_at;
    /* The caller has DF_1_NODEFLIB: no default directories, and no cache
     * entry inside one. */
    bool nodeflib;
} zc_linker_dirs;

/* The search of a dlopen called from the object loaded from caller_path:
 * glibc's RTLD_DI_SERINFO listing, which walks what _dl_map_object walks
 * (the DT_RPATH of the caller and of every object on its chain of loaders
 * when the caller has no DT_RUNPATH, the main program's DT_RPATH,
 * LD_LIBRARY_PATH as ld.so parsed it, the caller's DT_RUNPATH, the default
 * directories default_dirs unless DF_1_NODEFLIB), with the position of
 * ld.so.cache, which the listing leaves out. ZC_MISS when caller_path is not
 * loaded or the listing does not end with default_dirs as expected;
 * ZC_ERR_NOMEM. On ZC_OK, free with zc_linker_dirs_free. */
zc_status zc_linker_dirs_of(const char *caller_path, const char *const *default_dirs,
                            zc_linker_dirs *dirs);

const char *zc_linker_dir(const zc_linker_dirs *dirs, size_t index);

void zc_linker_dirs_free(zc_linker_dirs *dirs);

#endif
