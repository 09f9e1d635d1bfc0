/* Failed symbol lookups on a hit answer as they would on the driver's own
 * compile of the SPIR-V. Intel's driver from 22.53 on, for a name it cannot
 * find, returns ZE_RESULT_ERROR_UNSUPPORTED_FEATURE for a module built from
 * SPIR-V without -library-compilation (functions) or -ze-take-global-address
 * (globals), but INVALID_FUNCTION_NAME / INVALID_GLOBAL_NAME (INVALID_ARGUMENT
 * before 24.x) for a native module, which it takes to export everything.
 * Successful lookups are the same on both paths and are not touched. */
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"

/* The first driver build whose native modules export every symbol
 * (intel/compute-runtime d75eccc, release 22.53.25242). */
#define EXPORT_ALL_NATIVE_FIRST_BUILD 25242u

unsigned zcl_hit_lookup_flags(const zcl_device_info *device, const char *build_flags)
{
    if ((device->driver_version & 0xffffu) < EXPORT_ALL_NATIVE_FIRST_BUILD)
        return ZCL_HIT_LOOKUPS_AS_NATIVE;
    /* The driver matches them as substrings (ModuleImp::moveBuildOption). */
    unsigned flags = 0;
    if (build_flags != NULL && strstr(build_flags, "-library-compilation") != NULL)
        flags |= ZCL_HIT_EXPORTS_FUNCTIONS;
    if (build_flags != NULL && strstr(build_flags, "-ze-take-global-address") != NULL)
        flags |= ZCL_HIT_EXPORTS_GLOBALS;
    return flags;
}

ze_result_t ZE_APICALL zcl_module_get_function_pointer(ze_module_handle_t module, const char *name,
                                                       void **function)
{
    ze_result_t result = zcl_layer.next.module_get_function_pointer(module, name, function);
    unsigned flags;
    if (result == ZE_RESULT_ERROR_INVALID_FUNCTION_NAME && zcl_hit_modules_find(module, &flags) &&
        !(flags & ZCL_HIT_EXPORTS_FUNCTIONS))
        return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    return result;
}

static bool is_kernel_name(ze_module_handle_t module, const char *name)
{
    uint32_t count = 0;
    if (zcl_layer.next.module_get_kernel_names(module, &count, NULL) != ZE_RESULT_SUCCESS)
        return false;
    const char **names = calloc(count + 1, sizeof(*names));
    bool found = false;
    if (names != NULL &&
        zcl_layer.next.module_get_kernel_names(module, &count, names) == ZE_RESULT_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++)
            found = names[i] != NULL && strcmp(names[i], name) == 0;
    free(names);
    return found;
}

/* Whether name is code in the module's symbol table, which the driver finds
 * before it asks for flags (and answers alike on both paths). Kernels are
 * not in that table, but the function lookup finds them by name too. */
static bool is_function_symbol(ze_module_handle_t module, const char *name)
{
    if (is_kernel_name(module, name))
        return false;
    void *function = NULL;
    return zcl_layer.next.module_get_function_pointer(module, name, &function) ==
               ZE_RESULT_SUCCESS &&
           function != NULL;
}

ze_result_t ZE_APICALL zcl_module_get_global_pointer(ze_module_handle_t module, const char *name,
                                                     size_t *size, void **pointer)
{
    ze_result_t result = zcl_layer.next.module_get_global_pointer(module, name, size, pointer);
    unsigned flags;
    if ((result == ZE_RESULT_ERROR_INVALID_GLOBAL_NAME ||
         result == ZE_RESULT_ERROR_INVALID_ARGUMENT) &&
        name != NULL && zcl_hit_modules_find(module, &flags) &&
        !(flags & ZCL_HIT_EXPORTS_GLOBALS) && !is_function_symbol(module, name))
        return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    return result;
}

ze_result_t ZE_APICALL zcl_module_destroy(ze_module_handle_t module)
{
    /* Before the driver frees it: the handle may be reused at once. */
    zcl_hit_modules_remove(module);
    zcl_image_modules_remove(module);
    return zcl_layer.next.module_destroy(module);
}
