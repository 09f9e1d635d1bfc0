/* The `validation` option: this library takes the validation layer's slot,
 * so it opens the system's real validation layer itself, by absolute path
 * from the loader's own directory, and passes every table through it. */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"
#include "zecache/log.h"

#define LOADER_NAME "libze_loader.so.1"
#define VALIDATION_LAYER_NAME "libze_validation_layer.so.1"

static void *chained_layer;

/* The directory of the loader that loaded this process's layers. */
static bool loader_directory(char *dir, size_t size)
{
    void *loader = dlopen(LOADER_NAME, RTLD_LAZY | RTLD_NOLOAD);
    if (loader == NULL)
        return false;
    Dl_info info;
    void *symbol = dlsym(loader, "zeInit");
    bool found = symbol != NULL && dladdr(symbol, &info) != 0 && info.dli_fname != NULL &&
                 realpath(info.dli_fname, dir) != NULL;
    dlclose(loader);
    if (found) {
        char copy[PATH_MAX];
        snprintf(copy, sizeof(copy), "%s", dir);
        snprintf(dir, size, "%s", dirname(copy));
    }
    return found;
}

static bool is_this_library(const char *path)
{
    Dl_info info;
    char self[PATH_MAX];
    if (dladdr((void *)&zcl_chain_open, &info) == 0 || info.dli_fname == NULL ||
        realpath(info.dli_fname, self) == NULL)
        return false;
    return strcmp(self, path) == 0;
}

bool zcl_chain_open(void)
{
    char dir[PATH_MAX], path[PATH_MAX + sizeof(VALIDATION_LAYER_NAME) + 1], real[PATH_MAX];
    if (!loader_directory(dir, sizeof(dir))) {
        zc_log_info("validation: cannot find the loader (%s); not chained", LOADER_NAME);
        return false;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, VALIDATION_LAYER_NAME);
    if (realpath(path, real) == NULL) {
        zc_log_failure("validation: no validation layer beside the loader", errno);
        return false;
    }
    /* Installed in the loader's own directory, the name would lead back here. */
    if (is_this_library(real)) {
        zc_log_info("validation: %s is this layer; not chained", path);
        return false;
    }
    chained_layer = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (chained_layer == NULL) {
        zc_log_info("validation: cannot open %s: %s", real, dlerror());
        return false;
    }
    zc_log_info("validation: chained to %s", real);
    return true;
}

void *zcl_chain_symbol(const char *name)
{
    return chained_layer != NULL ? dlsym(chained_layer, name) : NULL;
}
