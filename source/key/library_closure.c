/* Resolving a needed library as the dynamic linker would (library_closure.h). */
#include "library_closure.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool zc_library_resolve_needed(const char *name, const char *needed_by,
                               const zc_library_search *search, char path[PATH_MAX])
{
    void *handle = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
    if (handle != NULL) {
        struct link_map *map = NULL;
        bool known = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL &&
                     map->l_name != NULL && realpath(map->l_name, path) != NULL;
        dlclose(handle);
        if (known)
            return true;
    }
    if (strchr(name, '/') != NULL)
        return realpath(name, path) != NULL;
    char executable[PATH_MAX];
    zc_library_search for_object = zc_library_search_of_process(needed_by, executable);
    if (search != NULL) {
        /* The inputs given, searched for needed_by (its RPATH or RUNPATH,
         * not the dlopen caller's), which is not loaded. */
        for_object = *search;
        for_object.caller = needed_by;
        for_object.ask_dynamic_linker = false;
    }
    zc_library_identity found;
    if (zc_library_search_find(&for_object, name, &found, NULL) != ZC_OK)
        return false;
    snprintf(path, PATH_MAX, "%s", found.path);
    return true;
}
