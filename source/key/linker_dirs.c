/* glibc's own list of search directories for a loaded object
 * (dlinfo RTLD_DI_SERINFO, elf/dl-load.c _dl_rtld_di_serinfo), checked
 * against glibc 2.36 and 2.41:
 *
 * - It lists the directories of every step of _dl_map_object but one, in
 *   its order, after the same pruning (a list none of whose directories
 *   exists is dropped), $ORIGIN, $LIB and $PLATFORM expanded, and with the
 *   loader chain (l->l_loader) that no ELF file shows.
 * - It lists each directory once, not its glibc-hwcaps or legacy hwcap
 *   subdirectories (open_path adds those as it tries files), and every
 *   dls_flags is 0 (its add_path is defined to pass 0), so the flags cannot
 *   tell where a step ends.
 * - ld.so.cache, which _dl_map_object consults after the caller's RUNPATH
 *   and before the default directories, is not listed. Its place is found
 *   from the end: the default directories are always the last entries
 *   unless the caller has DF_1_NODEFLIB, and then nothing follows the
 *   RUNPATH, so the cache comes last (still consulted, but none of its
 *   entries inside a default directory is used). */
#include "linker_dirs.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

/* DF_1_NODEFLIB of a loaded object, from its dynamic section in memory. */
static bool has_nodeflib(void *handle)
{
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL || map->l_ld == NULL)
        return false;
    for (const ElfW(Dyn) *dyn = map->l_ld; dyn->d_tag != DT_NULL; dyn++)
        if (dyn->d_tag == DT_FLAGS_1)
            return (dyn->d_un.d_val & DF_1_NODEFLIB) != 0;
    return false;
}

static zc_status read_serinfo(void *handle, Dl_serinfo **out)
{
    Dl_serinfo size;
    if (dlinfo(handle, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof size)
        return ZC_MISS;
    Dl_serinfo *info = malloc(size.dls_size);
    if (info == NULL)
        return ZC_ERR_NOMEM;
    *info = size; /* dlinfo fills as much as the counted size and count say */
    if (dlinfo(handle, RTLD_DI_SERINFO, info) != 0) {
        free(info);
        return ZC_MISS;
    }
    *out = info;
    return ZC_OK;
}

/* Whether the listing ends with default_dirs, as it must without
 * DF_1_NODEFLIB; writes where they start. */
static bool ends_with_defaults(const zc_linker_dirs *dirs, const char *const *default_dirs,
                               size_t *start)
{
    size_t defaults = 0;
    while (default_dirs[defaults] != NULL)
        defaults++;
    if (defaults > dirs->count)
        return false;
    *start = dirs->count - defaults;
    for (size_t i = 0; i < defaults; i++)
        if (strcmp(zc_linker_dir(dirs, *start + i), default_dirs[i]) != 0)
            return false;
    return true;
}

zc_status zc_linker_dirs_of(const char *caller_path, const char *const *default_dirs,
                            zc_linker_dirs *dirs)
{
    if (caller_path == NULL)
        return ZC_MISS;
    void *handle = dlopen(caller_path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL)
        return ZC_MISS;
    *dirs = (zc_linker_dirs){.nodeflib = has_nodeflib(handle)};
    zc_status status = read_serinfo(handle, &dirs->info);
    dlclose(handle);
    if (status != ZC_OK)
        return status;
    dirs->count = dirs->info->dls_cnt;
    dirs->cache_at = dirs->count;
    if (!dirs->nodeflib && !ends_with_defaults(dirs, default_dirs, &dirs->cache_at)) {
        zc_linker_dirs_free(dirs);
        return ZC_MISS;
    }
    return ZC_OK;
}

const char *zc_linker_dir(const zc_linker_dirs *dirs, size_t index)
{
    return dirs->info->dls_serpath[index].dls_name;
}

void zc_linker_dirs_free(zc_linker_dirs *dirs)
{
    free(dirs->info);
    dirs->info = NULL;
}
