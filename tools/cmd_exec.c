/* zecache exec -- PROGRAM [ARGS...]: runs PROGRAM with the layer enabled.
 * The layer is found beside the tool: <build>/bin/zecache uses
 * <build>/layers, <prefix>/bin/zecache uses <prefix>/<libdir>/zecache (both
 * relative paths come from CMake); ZECACHE_LAYER_DIR overrides. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"
#include "zecache/driver_cache.h"

/* The file name the Level Zero loader loads for the validation layer. */
#define LAYER_FILE_NAME "libze_validation_layer.so.1"
/* The OpenCL layer's, in the same directory. */
#define OPENCL_LAYER_FILE_NAME "libzecache_opencl_layer.so.1"

static bool holds_layer(const char *dir)
{
    char path[PATH_MAX];
    int written = snprintf(path, sizeof path, "%s/%s", dir, LAYER_FILE_NAME);
    return written > 0 && (size_t)written < sizeof path && access(path, F_OK) == 0;
}

/* The directory of the running executable, from /proc/self/exe. */
static bool executable_dir(char dir[PATH_MAX])
{
    ssize_t length = readlink("/proc/self/exe", dir, PATH_MAX - 1);
    if (length <= 0)
        return false;
    dir[length] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return false;
    *slash = '\0';
    return true;
}

static bool find_layer_dir(char layer_dir[PATH_MAX])
{
    const char *override = getenv("ZECACHE_LAYER_DIR");
    if (override != NULL && override[0] != '\0')
        return snprintf(layer_dir, PATH_MAX, "%s", override) < PATH_MAX;
    static const char *const relative_dirs[] = {ZC_TOOL_BUILD_LAYER_DIR, ZC_TOOL_INSTALL_LAYER_DIR};
    char exe_dir[PATH_MAX], candidate[2 * PATH_MAX];
    if (!executable_dir(exe_dir))
        return false;
    for (size_t i = 0; i < sizeof relative_dirs / sizeof relative_dirs[0]; i++) {
        snprintf(candidate, sizeof candidate, "%s/%s", exe_dir, relative_dirs[i]);
        if (holds_layer(candidate) && realpath(candidate, layer_dir) != NULL)
            return true;
    }
    return false;
}

static bool prepend_to_path(const char *variable, const char *dir)
{
    const char *old = getenv(variable);
    if (old == NULL || old[0] == '\0')
        return setenv(variable, dir, 1) == 0;
    size_t size = strlen(dir) + 1 + strlen(old) + 1;
    char *value = malloc(size);
    if (value == NULL)
        return false;
    snprintf(value, size, "%s:%s", dir, old);
    bool ok = setenv(variable, value, 1) == 0;
    free(value);
    return ok;
}

/* NEO_CACHE_* stay as the user set them: the layer reads them itself. Every
 * loader (1.8 to 1.2x) finds the layer through LD_LIBRARY_PATH by its bare
 * name; ZEL_LIBRARY_PATH is not set, since loaders from 1.15 then open every
 * layer (the tracing layer too) from that one directory only. */
/* The OpenCL layer, beside the Level Zero one: the ICD loader (ocl-icd 2.3,
 * the Khronos loader) loads the layers whose paths OPENCL_LAYERS lists,
 * before any the user listed; listed once. Intel's driver reads its OpenCL
 * cache switches when it starts, before the loader loads any layer: they
 * are hidden here, before the program starts (the layer puts the user's
 * values back for its own configuration). */
/* Whether the colon-separated list names path. */
static bool listed_in(const char *list, const char *path)
{
    size_t length = strlen(path);
    for (const char *at = list; at != NULL && *at != '\0'; at += strcspn(at, ":")) {
        at += *at == ':';
        if (strncmp(at, path, length) == 0 && (at[length] == ':' || at[length] == '\0'))
            return true;
    }
    return false;
}

static bool enable_opencl_layer(const char *layer_dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", layer_dir, OPENCL_LAYER_FILE_NAME) >= (int)sizeof path)
        return false;
    (void)zc_driver_cache_hide(ZC_API_OPENCL);
    return listed_in(getenv("OPENCL_LAYERS"), path) || prepend_to_path("OPENCL_LAYERS", path);
}

static bool enable_layer(const char *layer_dir)
{
    return prepend_to_path("LD_LIBRARY_PATH", layer_dir) &&
           setenv("ZE_ENABLE_VALIDATION_LAYER", "1", 1) == 0 && enable_opencl_layer(layer_dir);
}

int tool_enable_layer(const tool_context *tool)
{
    const char *library_path = getenv("ZEL_LIBRARY_PATH");
    if (library_path != NULL && library_path[0] != '\0') {
        tool_fail(tool,
                  "ZEL_LIBRARY_PATH=%s is set: loaders from 1.15 on open layers only from "
                  "that directory, so the zecache layer would not load (and pointed at "
                  "zecache's directory, the other layers would be lost); unset it, the "
                  "layer is found through LD_LIBRARY_PATH",
                  library_path);
        return TOOL_EXIT_NO_LAYER;
    }
    char layer_dir[PATH_MAX];
    if (!find_layer_dir(layer_dir)) {
        tool_fail(tool,
                  "cannot find the zecache layer (%s) beside this tool; set "
                  "ZECACHE_LAYER_DIR to its directory",
                  LAYER_FILE_NAME);
        return TOOL_EXIT_NO_LAYER;
    }
    if (!enable_layer(layer_dir)) {
        tool_fail(tool, "cannot set the environment: %s", strerror(errno));
        return TOOL_EXIT_NO_LAYER;
    }
    return TOOL_EXIT_OK;
}

bool tool_sibling_path(const char *name, char path[PATH_MAX])
{
    char dir[PATH_MAX];
    return executable_dir(dir) && snprintf(path, PATH_MAX, "%s/%s", dir, name) < PATH_MAX;
}

static int run_exec(tool_context *tool, int argc, char **argv)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int option = tool_next_option(tool, argc, argv, options);
    if (option != TOOL_OPTIONS_DONE)
        return tool_options_exit(option);
    if (optind == argc)
        return tool_usage_error(tool, "no program to run");
    int enabled = tool_enable_layer(tool);
    if (enabled != TOOL_EXIT_OK)
        return enabled;
    char **program = argv + optind;
    execvp(program[0], program);
    int err = errno; /* only reached when the program could not be started */
    if (err == ENOENT) {
        tool_fail(tool, "%s: command not found", program[0]);
        return TOOL_EXIT_NOT_FOUND;
    }
    tool_fail(tool, "%s: %s", program[0], strerror(err));
    return TOOL_EXIT_CANNOT_RUN;
}

const tool_command tool_cmd_exec = {
    .name = "exec",
    .synopsis = "exec [--] PROGRAM [ARGS...]",
    .summary = "Run a program with the zecache layer enabled",
    .details = "Prepends the layer's directory to LD_LIBRARY_PATH and sets\n"
               "ZE_ENABLE_VALIDATION_LAYER=1 (Level Zero), prepends the OpenCL layer's\n"
               "path to OPENCL_LAYERS (OpenCL), then replaces itself with PROGRAM, so the\n"
               "exit status is PROGRAM's. It refuses to run with ZEL_LIBRARY_PATH set\n"
               "(loaders from 1.15 then load layers from that directory only). The NEO_CACHE_* "
               "settings are passed on unchanged\n"
               "(--dir sets NEO_CACHE_DIR). The layer is looked for beside this tool (the\n"
               "build tree's layers/, or <libdir>/zecache/ beside the installed tool, e.g.\n"
               "/usr/lib/x86_64-linux-gnu/zecache/); ZECACHE_LAYER_DIR "
               "overrides.\n"
               "\n"
               "Exit status: PROGRAM's; 125 the layer was not found or cannot load, 126 PROGRAM "
               "cannot be\n"
               "run, 127 PROGRAM was not found.\n",
    .run = run_exec,
};
