/* Which driver library compiles: the key names its file (build-id, size,
 * mtime), because a driver update can change code generation without
 * changing the version the API reports.
 *
 * With one driver the loader hands layers the driver's own zeModuleCreate,
 * so its library is found with dladdr. When the loader routes calls itself
 * (several drivers), every loaded driver library is named instead: an update
 * to any of them then misses, which is safe. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"
#include "zecache/log.h"

static zcl_driver_libraries driver_libraries;
static pthread_once_t driver_libraries_once = PTHREAD_ONCE_INIT;

/* Whether the object loaded from path defines symbol itself. */
static bool defines_symbol(const char *path, const char *symbol)
{
    void *handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL)
        return false;
    void *address = dlsym(handle, symbol);
    Dl_info info;
    bool defined = address != NULL && dladdr(address, &info) != 0 && info.dli_fname != NULL &&
                   strcmp(info.dli_fname, path) == 0;
    dlclose(handle);
    return defined;
}

/* Drivers export the table functions; the loader and layers also export
 * zelLoaderGetVersion(s), which drivers do not. */
bool zcl_is_driver_library(const char *path)
{
    return defines_symbol(path, "zeGetDriverProcAddrTable") &&
           !defines_symbol(path, "zelLoaderGetVersions") &&
           !defines_symbol(path, "zelLoaderGetVersion");
}

static void add_library(const char *path)
{
    if (driver_libraries.count == ZCL_MAX_DRIVER_LIBRARIES)
        return;
    zc_library_identity *identity = &driver_libraries.identities[driver_libraries.count];
    if (zc_library_identity_of_path(path, identity) == ZC_OK)
        driver_libraries.count++;
}

static int visit_loaded_object(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    (void)context;
    if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0' &&
        zcl_is_driver_library(info->dlpi_name))
        add_library(info->dlpi_name);
    return 0;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(((const zc_library_identity *)a)->path, ((const zc_library_identity *)b)->path);
}

static void find_driver_libraries(void)
{
    Dl_info info;
    void *module_create = zcl_layer.next.loader_module_create;
    if (module_create == NULL || dladdr(module_create, &info) == 0 || info.dli_fname == NULL)
        return;
    if (zcl_is_driver_library(info.dli_fname)) {
        add_library(info.dli_fname);
        snprintf(driver_libraries.loaded_path, sizeof driver_libraries.loaded_path, "%s",
                 info.dli_fname);
        return;
    }
    dl_iterate_phdr(visit_loaded_object, NULL);
    /* Load order is not stable across processes; the key must be. */
    qsort(driver_libraries.identities, driver_libraries.count, sizeof(zc_library_identity),
          compare_paths);
}

const zcl_driver_libraries *zcl_driver_libraries_get(void)
{
    pthread_once(&driver_libraries_once, find_driver_libraries);
    if (driver_libraries.count == 0)
        return NULL;
    return &driver_libraries;
}

/* With several drivers the caller of the compiler's dlopen is not known: the
 * prediction then leaves out DT_RPATH/DT_RUNPATH, and the check after the
 * first compile catches a difference. */
const zc_compiler_identity *zcl_compiler_identity_get(void)
{
    const zcl_driver_libraries *libraries = zcl_driver_libraries_get();
    const char *caller =
        libraries != NULL && libraries->loaded_path[0] != '\0' ? libraries->loaded_path : NULL;
    return zc_compiler_identity_get(caller);
}
