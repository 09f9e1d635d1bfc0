/* What the layer takes from, and puts into, the tables it changes. Every
 * field touched here exists since API 1.0. With the cache off the tables pass
 * through untouched. */
#include "layer_internal.h"

static bool cache_active(void)
{
    return zcl_layer.cache != NULL;
}

void zcl_hook_none(ze_api_version_t version, void *table)
{
    (void)version;
    (void)table;
}

void zcl_hook_driver(ze_api_version_t version, void *table)
{
    (void)version;
    const ze_driver_dditable_t *driver = table;
    zcl_layer.next.driver_get = driver->pfnGet;
    zcl_layer.next.driver_get_properties = driver->pfnGetProperties;
    zcl_layer.next.driver_get_extension_properties = driver->pfnGetExtensionProperties;
}

void zcl_hook_device(ze_api_version_t version, void *table)
{
    (void)version;
    const ze_device_dditable_t *device = table;
    zcl_layer.next.device_get = device->pfnGet;
    zcl_layer.next.device_get_sub_devices = device->pfnGetSubDevices;
    zcl_layer.next.device_get_properties = device->pfnGetProperties;
    zcl_layer.next.device_get_module_properties = device->pfnGetModuleProperties;
}

void zcl_hook_module_before_chain(ze_api_version_t version, void *table)
{
    (void)version;
    const ze_module_dditable_t *module = table;
    zcl_layer.next.loader_module_create = (void *)module->pfnCreate;
}

void zcl_hook_module(ze_api_version_t version, void *table)
{
    (void)version;
    ze_module_dditable_t *module = table;
    /* Asked twice for the same table, the layer must not take its own
     * function as the next one: every create would call itself. */
    if (module->pfnCreate == zcl_module_create || module->pfnDestroy == zcl_module_destroy)
        return;
    zcl_layer.next.module_create = module->pfnCreate;
    zcl_layer.next.module_destroy = module->pfnDestroy;
    zcl_layer.next.module_get_native_binary = module->pfnGetNativeBinary;
    zcl_layer.next.module_get_function_pointer = module->pfnGetFunctionPointer;
    zcl_layer.next.module_get_global_pointer = module->pfnGetGlobalPointer;
    zcl_layer.next.module_get_kernel_names = module->pfnGetKernelNames;
    if (!cache_active() || module->pfnCreate == NULL)
        return;
    module->pfnCreate = zcl_module_create;
    /* Hits answer failed lookups as compiles do only with all of these. */
    if (module->pfnDestroy != NULL && module->pfnGetFunctionPointer != NULL &&
        module->pfnGetGlobalPointer != NULL && module->pfnGetKernelNames != NULL) {
        module->pfnDestroy = zcl_module_destroy;
        module->pfnGetFunctionPointer = zcl_module_get_function_pointer;
        module->pfnGetGlobalPointer = zcl_module_get_global_pointer;
        zcl_layer.lookups_wrapped = true;
    }
}

void zcl_hook_module_build_log(ze_api_version_t version, void *table)
{
    (void)version;
    ze_module_build_log_dditable_t *build_log = table;
    if (build_log->pfnDestroy == zcl_build_log_destroy)
        return;
    zcl_layer.next.build_log_destroy = build_log->pfnDestroy;
    zcl_layer.next.build_log_get_string = build_log->pfnGetString;
    if (cache_active() && build_log->pfnDestroy != NULL && build_log->pfnGetString != NULL) {
        build_log->pfnDestroy = zcl_build_log_destroy;
        build_log->pfnGetString = zcl_build_log_get_string;
        zcl_layer.build_log_wrapped = true;
    }
}
