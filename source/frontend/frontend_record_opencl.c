/* The OpenCL part of a recipe (zecache/recipe.h): what an OpenCL build's key
 * depends on besides its input and options, so that `zecache prewarm` can
 * build it again in the same conditions, or see that it cannot: the working
 * directory a source build ran in, every header candidate its key visited
 * (path, state and digest: prewarm checks them, it never recreates them),
 * and the driver build variables the key read with their values. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend_internal.h"
#include "zecache/key_files.h"
#include "zecache/recipe.h"

static bool copy_files(const zc_key_files *files, zc_recipe_opencl *opencl)
{
    size_t count = zc_key_files_count(files);
    if (count > ZC_RECIPE_MAX_FILES)
        return false;
    opencl->files = calloc(count + 1, sizeof *opencl->files);
    if (opencl->files == NULL)
        return false;
    for (size_t i = 0; i < count; i++) {
        zc_recipe_file *file = &opencl->files[i];
        zc_key_file_state state;
        const char *path = zc_key_files_at(files, i, &state, &file->size, file->sha256);
        file->state = (uint8_t)state;
        opencl->file_count++;
        if ((file->path = strdup(path)) == NULL)
            return false;
    }
    return true;
}

/* The values the key read (zc_key_add_build_variables): the same getenv,
 * just after it, in the process whose build it was. */
static bool copy_variables(const zc_device_description *device, zc_recipe_opencl *opencl)
{
    size_t count = device->build_variable_count;
    if (count > ZC_RECIPE_MAX_VARIABLES)
        return false;
    opencl->variables = calloc(count + 1, sizeof *opencl->variables);
    if (opencl->variables == NULL)
        return false;
    for (size_t i = 0; i < count; i++) {
        zc_recipe_variable *variable = &opencl->variables[i];
        const char *value = getenv(device->build_variables[i]);
        opencl->variable_count++;
        variable->name = strdup(device->build_variables[i]);
        if (variable->name == NULL || (value != NULL && (variable->value = strdup(value)) == NULL))
            return false;
    }
    return true;
}

bool zc_frontend_describe_opencl(const zc_build_request *request,
                                 const zc_device_description *device, const zc_key_files *files,
                                 zc_recipe *recipe)
{
    /* Compiles and links are several programs' work: only whole builds,
     * which one program with its options gives again, are recorded. */
    if ((request->format != ZC_OPENCL_BUILD_SOURCE && request->format != ZC_OPENCL_BUILD_IL) ||
        request->input_count != 1)
        return false;
    zc_recipe_opencl *opencl = calloc(1, sizeof *opencl);
    if (opencl == NULL)
        return false;
    recipe->opencl = opencl;
    char cwd[PATH_MAX] = "";
    /* Only a source build's key reads it (relative include paths, debug
     * information). */
    if (request->format == ZC_OPENCL_BUILD_SOURCE && getcwd(cwd, sizeof cwd) == NULL)
        return false;
    opencl->working_dir = strdup(cwd);
    return opencl->working_dir != NULL && copy_files(files, opencl) &&
           copy_variables(device, opencl);
}
