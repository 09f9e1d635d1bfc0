/* Extension functions that take a program: Intel's host access to a
 * program's global variables and functions (cl_intel_global_variable_pointers,
 * cl_intel_function_pointers). The application's program of a hit was never
 * built on the driver, so the layer hands out its own function, which asks
 * the driver's about the hit's program. Every other extension function is
 * the driver's own. */
#include <pthread.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/fork_guard.h"

typedef cl_int(CL_API_CALL *global_pointer_fn)(cl_device_id, cl_program, const char *, size_t *,
                                               void **);
typedef cl_int(CL_API_CALL *function_pointer_fn)(cl_device_id, cl_program, const char *,
                                                 cl_ulong *);

#define MAX_PLATFORMS 8

/* The driver's functions, per platform (NULL: the deprecated lookup
 * without one). */
typedef struct driver_functions {
    cl_platform_id platform;
    global_pointer_fn global_pointer;
    function_pointer_fn function_pointer;
} driver_functions;

static struct {
    pthread_mutex_t lock;
    driver_functions platforms[MAX_PLATFORMS];
    size_t count;
    atomic_bool guarded; /* held across fork() (fork_guard.h) */
} drivers = {.lock = PTHREAD_MUTEX_INITIALIZER};

static driver_functions *functions_of(cl_platform_id platform)
{
    for (size_t i = 0; i < drivers.count; i++)
        if (drivers.platforms[i].platform == platform)
            return &drivers.platforms[i];
    if (drivers.count == MAX_PLATFORMS)
        return NULL;
    drivers.platforms[drivers.count] = (driver_functions){.platform = platform};
    return &drivers.platforms[drivers.count++];
}

/* The driver's function for device, found as the lookup found it. */
static driver_functions lookup_for(cl_device_id device)
{
    cl_platform_id platform = NULL;
    driver_functions found = {0};
    if (zcc_layer.next.clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof(platform), &platform,
                                       NULL) != CL_SUCCESS)
        platform = NULL;
    zc_fork_guard_lock(&drivers.lock, &drivers.guarded);
    for (size_t i = 0; i < drivers.count; i++) {
        if (drivers.platforms[i].platform == platform || drivers.platforms[i].platform == NULL)
            found = drivers.platforms[i];
        if (drivers.platforms[i].platform == platform)
            break;
    }
    pthread_mutex_unlock(&drivers.lock);
    return found;
}

static cl_int CL_API_CALL global_pointer(cl_device_id device, cl_program program, const char *name,
                                         size_t *size, void **pointer)
{
    global_pointer_fn driver = lookup_for(device).global_pointer;
    if (driver == NULL)
        return CL_INVALID_DEVICE;
    cl_program built = zcc_hits_built_of(program);
    cl_int result = driver(device, built != NULL ? built : program, name, size, pointer);
    if (built != NULL)
        zcc_layer.next.clReleaseProgram(built);
    return result;
}

static cl_int CL_API_CALL function_pointer(cl_device_id device, cl_program program,
                                           const char *name, cl_ulong *pointer)
{
    function_pointer_fn driver = lookup_for(device).function_pointer;
    if (driver == NULL)
        return CL_INVALID_DEVICE;
    cl_program built = zcc_hits_built_of(program);
    cl_int result = driver(device, built != NULL ? built : program, name, pointer);
    if (built != NULL)
        zcc_layer.next.clReleaseProgram(built);
    return result;
}

/* The layer's function in place of the driver's (found) for name, or found
 * itself. */
static void *wrapped(cl_platform_id platform, const char *name, void *found)
{
    bool global = strcmp(name, "clGetDeviceGlobalVariablePointerINTEL") == 0;
    bool function = strcmp(name, "clGetDeviceFunctionPointerINTEL") == 0;
    if (found == NULL || (!global && !function))
        return found;
    zc_fork_guard_lock(&drivers.lock, &drivers.guarded);
    driver_functions *slot = functions_of(platform);
    if (slot != NULL && global)
        slot->global_pointer = (global_pointer_fn)found;
    if (slot != NULL && function)
        slot->function_pointer = (function_pointer_fn)found;
    pthread_mutex_unlock(&drivers.lock);
    if (slot == NULL)
        return found; /* hits may then answer otherwise: a limit of 8 platforms */
    return global ? (void *)global_pointer : (void *)function_pointer;
}

void *CL_API_CALL zcc_get_extension_function_address_for_platform(cl_platform_id platform,
                                                                  const char *name)
{
    void *found = zcc_layer.next.clGetExtensionFunctionAddressForPlatform(platform, name);
    return name != NULL ? wrapped(platform, name, found) : found;
}

void *CL_API_CALL zcc_get_extension_function_address(const char *name)
{
    void *found = zcc_layer.next.clGetExtensionFunctionAddress(name);
    return name != NULL ? wrapped(NULL, name, found) : found;
}
