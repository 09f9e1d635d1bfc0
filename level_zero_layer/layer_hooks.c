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

/* The context table as loaders for API 1.1 and later lay it out. */
void zcl_hook_context(ze_api_version_t version, void *table)
{
    ze_context_dditable_t *context = table;
    if (context->pfnCreate == zcl_context_create || !cache_active())
        return;
    if (context->pfnCreate != NULL) {
        zcl_layer.next.context_create = context->pfnCreate;
        context->pfnCreate = zcl_context_create;
    }
    if (version >= ZE_MAKE_VERSION(1, 1) && context->pfnCreateEx != NULL) {
        zcl_layer.next.context_create_ex = context->pfnCreateEx;
        context->pfnCreateEx = zcl_context_create_ex;
    }
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

/* Image arguments of hits answer as compiles do only once all of the kernel
 * and image functions below are wrapped (layer_image_arguments.c). */
enum {
    WRAPPED_KERNEL = 1,
    WRAPPED_IMAGE = 2,
    WRAPPED_IMAGE_EXP = 4,
    WRAPPED_ALL = 7,
};
static unsigned image_functions_wrapped;

static void image_functions_add(unsigned which)
{
    image_functions_wrapped |= which;
    zcl_layer.image_arguments_wrapped = image_functions_wrapped == WRAPPED_ALL;
}

void zcl_hook_kernel(ze_api_version_t version, void *table)
{
    (void)version;
    ze_kernel_dditable_t *kernel = table;
    if (kernel->pfnCreate == zcl_kernel_create || !cache_active() || kernel->pfnCreate == NULL ||
        kernel->pfnDestroy == NULL || kernel->pfnSetArgumentValue == NULL)
        return;
    zcl_layer.next.kernel_create = kernel->pfnCreate;
    zcl_layer.next.kernel_destroy = kernel->pfnDestroy;
    zcl_layer.next.kernel_set_argument_value = kernel->pfnSetArgumentValue;
    kernel->pfnCreate = zcl_kernel_create;
    kernel->pfnDestroy = zcl_kernel_destroy;
    kernel->pfnSetArgumentValue = zcl_kernel_set_argument_value;
    image_functions_add(WRAPPED_KERNEL);
}

/* The image table as loaders for API 1.5 and later lay it out. */
typedef struct image_table_1_5 {
    ze_image_dditable_t v1_0;
    zcl_pfn_image_view_create pfnViewCreateExt;
} image_table_1_5;

void zcl_hook_image(ze_api_version_t version, void *table)
{
    ze_image_dditable_t *image = table;
    if (image->pfnCreate == zcl_image_create || !cache_active() || image->pfnCreate == NULL ||
        image->pfnDestroy == NULL)
        return;
    zcl_layer.next.image_create = image->pfnCreate;
    zcl_layer.next.image_destroy = image->pfnDestroy;
    image->pfnCreate = zcl_image_create;
    image->pfnDestroy = zcl_image_destroy;
    /* Older loaders have no such function, and a driver may leave it NULL:
     * then no view can be made through it. */
    image_table_1_5 *extended = table;
    if (version >= ZE_MAKE_VERSION(1, 5) && extended->pfnViewCreateExt != NULL) {
        zcl_layer.next.image_view_create_ext = extended->pfnViewCreateExt;
        extended->pfnViewCreateExt = zcl_image_view_create_ext;
    }
    image_functions_add(WRAPPED_IMAGE);
}

void zcl_hook_image_exp(ze_api_version_t version, void *table)
{
    (void)version;
    ze_image_exp_dditable_t *image = table;
    if (image->pfnViewCreateExp == zcl_image_view_create_exp || !cache_active())
        return;
    if (image->pfnViewCreateExp != NULL) {
        zcl_layer.next.image_view_create_exp = image->pfnViewCreateExp;
        image->pfnViewCreateExp = zcl_image_view_create_exp;
    }
    image_functions_add(WRAPPED_IMAGE_EXP);
}

void zcl_hook_command_list(ze_api_version_t version, void *table)
{
    (void)table;
    if (version >= ZE_MAKE_VERSION(1, 14))
        zcl_layer.launch_with_arguments = true;
}
