/* The layer's entry points: the loader (ocl-icd 2.3 through OPENCL_LAYERS,
 * or the Khronos ICD loader) asks clGetLayerInfo for the API version, then
 * hands the dispatch table below the layer to clInitLayer (or, in Khronos
 * loaders from v2026.05, clInitLayerWithProperties) and takes the layer's
 * table back. The layer hands out the driver's own objects: every call it
 * does not answer goes straight to the table below. */
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/environment.h"
#include "zecache/frontend_process.h"
#include "zecache/driver_cache.h"
#include "zecache/log.h"

/* The layer extension's declarations that Debian 12's headers lack. */
typedef cl_properties zcc_layer_properties;
#define ZCC_LAYER_API_VERSION 0x4240
#define ZCC_LAYER_NAME 0x4241
#define ZCC_LAYER_API_VERSION_100 100

#define EXPORT __attribute__((visibility("default")))

static cl_icd_dispatch own_table;

/* At load, before any build: the driver reads its cache settings at its
 * first compile, so hiding them here is in time. */
__attribute__((constructor)) static void zcc_layer_load(void)
{
    zc_environment_snapshot_driver();
    /* Our configuration is the user's, even in a child of a process whose
     * layer hid it from the driver. */
    zc_driver_cache_restore_user_env(ZC_API_OPENCL);
    zc_config_from_env(&zcc_layer.config);
    if (zc_driver_cache_hide(ZC_API_OPENCL))
        zc_log_info("Intel's driver reads its cache settings when it starts, before any layer: "
                    "its own OpenCL cache may stay on in this process (zecache exec keeps it "
                    "off); child processes start with it off");
    zcc_layer.cache = zc_frontend_cache_start(&zcc_layer.config, "zecache OpenCL layer");
    if (zcc_layer.cache != NULL)
        zc_frontend_prefetch_start(zcc_layer.cache);
}

/* At exit only (-z nodelete): the counters go to the stats file. */
__attribute__((destructor)) static void zcc_layer_unload(void)
{
    zc_frontend_process_end(zcc_layer.cache);
}

EXPORT cl_int CL_API_CALL clGetLayerInfo(cl_uint name, size_t size, void *value, size_t *size_ret)
{
    static const char layer_name[] = "zecache: persistent compiler cache";
    cl_uint version = ZCC_LAYER_API_VERSION_100;
    if (name == ZCC_LAYER_API_VERSION)
        return zcc_answer(&version, sizeof(version), size, value, size_ret);
    if (name == ZCC_LAYER_NAME)
        return zcc_answer(layer_name, sizeof(layer_name), size, value, size_ret);
    return CL_INVALID_VALUE;
}

/* The entries the layer answers, where the table below has them (a loader
 * with a shorter table never calls the others); everything else is the
 * table below. */
#define HOOK(name, function)                                                                       \
    do {                                                                                           \
        if (zcc_layer.next.name != NULL)                                                           \
            table->name = function;                                                                \
    } while (0)

static void hook(cl_icd_dispatch *table)
{
    HOOK(clCreateContext, zcc_create_context);
    HOOK(clCreateContextFromType, zcc_create_context_from_type);
    HOOK(clCreateProgramWithSource, zcc_create_program_with_source);
    HOOK(clCreateProgramWithIL, zcc_create_program_with_il);
    HOOK(clCreateProgramWithBinary, zcc_create_program_with_binary);
    HOOK(clCreateProgramWithBuiltInKernels, zcc_create_program_with_built_in_kernels);
    HOOK(clBuildProgram, zcc_build_program);
    HOOK(clCompileProgram, zcc_compile_program);
    HOOK(clLinkProgram, zcc_link_program);
    HOOK(clReleaseProgram, zcc_release_program);
    HOOK(clSetProgramSpecializationConstant, zcc_set_program_specialization_constant);
    HOOK(clGetProgramInfo, zcc_get_program_info);
    HOOK(clGetProgramBuildInfo, zcc_get_program_build_info);
    HOOK(clCreateKernel, zcc_create_kernel);
    HOOK(clCreateKernelsInProgram, zcc_create_kernels_in_program);
    HOOK(clCloneKernel, zcc_clone_kernel);
    HOOK(clReleaseKernel, zcc_release_kernel);
    HOOK(clGetKernelInfo, zcc_get_kernel_info);
    HOOK(clGetExtensionFunctionAddressForPlatform, zcc_get_extension_function_address_for_platform);
    HOOK(clGetExtensionFunctionAddress, zcc_get_extension_function_address);
}

#define TABLE_ENTRIES (sizeof(cl_icd_dispatch) / sizeof(void *))

static cl_int init_layer(cl_uint num_entries, const cl_icd_dispatch *target,
                         cl_uint *num_entries_ret, const cl_icd_dispatch **layer_dispatch_ret)
{
    if (target == NULL || num_entries_ret == NULL || layer_dispatch_ret == NULL)
        return CL_INVALID_VALUE;
    /* A loader with a shorter table leaves the entries it lacks NULL. */
    size_t copied = num_entries < TABLE_ENTRIES ? num_entries : TABLE_ENTRIES;
    memset(&zcc_layer.next, 0, sizeof(zcc_layer.next));
    memcpy(&zcc_layer.next, target, copied * sizeof(void *));
    own_table = zcc_layer.next;
    if (zcc_layer.cache != NULL && zcc_layer.next.clBuildProgram != NULL &&
        zcc_layer.next.clCreateProgramWithBinary != NULL)
        hook(&own_table);
    *num_entries_ret = (cl_uint)TABLE_ENTRIES;
    *layer_dispatch_ret = &own_table;
    return CL_SUCCESS;
}

EXPORT cl_int CL_API_CALL clInitLayer(cl_uint num_entries, const cl_icd_dispatch *target_dispatch,
                                      cl_uint *num_entries_ret,
                                      const cl_icd_dispatch **layer_dispatch_ret)
{
    return init_layer(num_entries, target_dispatch, num_entries_ret, layer_dispatch_ret);
}

/* No property changes what the layer does; unknown ones are ignored rather
 * than refused, so a newer loader still loads the layer. */
EXPORT cl_int CL_API_CALL clInitLayerWithProperties(cl_uint num_entries,
                                                    const cl_icd_dispatch *target_dispatch,
                                                    cl_uint *num_entries_ret,
                                                    const cl_icd_dispatch **layer_dispatch_ret,
                                                    const zcc_layer_properties *properties)
{
    (void)properties;
    return init_layer(num_entries, target_dispatch, num_entries_ret, layer_dispatch_ret);
}

/* The counters are merged at exit (the destructor); the cache stays open:
 * kernels of hits may outlive the loader's teardown. */
EXPORT cl_int CL_API_CALL clDeinitLayer(void)
{
    if (zcc_layer.cache != NULL)
        zc_cache_merge_stats(zcc_layer.cache);
    return CL_SUCCESS;
}
