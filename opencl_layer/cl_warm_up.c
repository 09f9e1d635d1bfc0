/* What a process pays once for the cache, paid when the application creates
 * a context instead of inside its first clBuildProgram (as the Level Zero
 * layer does at its first context): the devices' descriptions (driver and
 * compiler libraries found and read, device queries), the thread's
 * decompression context, and a proposal of the compiler's environment. All
 * of it is done lazily by the build path too, so a failure here changes
 * nothing but when the work is done. */
#include <pthread.h>

#include "cl_layer_internal.h"
#include "zecache/environment.h"

#define WARM_UP_MAX_DEVICES 16

static pthread_once_t warm_up_once = PTHREAD_ONCE_INIT;

static void warm_up_process(void)
{
    zc_cache_prepare_thread(zcc_layer.cache);
    zc_environment_propose_compiler_part();
}

static void warm_up(cl_context context)
{
    cl_device_id devices[WARM_UP_MAX_DEVICES];
    size_t size = 0;
    if (context == NULL ||
        zcc_layer.next.clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof(devices), devices,
                                        &size) != CL_SUCCESS)
        return;
    for (size_t i = 0; i < size / sizeof(devices[0]); i++) {
        zc_status status;
        char reason[256];
        (void)zcc_device_of(devices[i], &status, reason, sizeof(reason));
    }
    pthread_once(&warm_up_once, warm_up_process);
}

cl_context CL_API_CALL zcc_create_context(const cl_context_properties *properties,
                                          cl_uint num_devices, const cl_device_id *devices,
                                          void(CL_CALLBACK *notify)(const char *, const void *,
                                                                    size_t, void *),
                                          void *user_data, cl_int *errcode_ret)
{
    cl_context context = zcc_layer.next.clCreateContext(properties, num_devices, devices, notify,
                                                        user_data, errcode_ret);
    warm_up(context);
    return context;
}

cl_context CL_API_CALL
zcc_create_context_from_type(const cl_context_properties *properties, cl_device_type type,
                             void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                             void *user_data, cl_int *errcode_ret)
{
    cl_context context =
        zcc_layer.next.clCreateContextFromType(properties, type, notify, user_data, errcode_ret);
    warm_up(context);
    return context;
}
