/* The OpenCL probes' way to pick a platform by name. */
#ifndef ZC_CL_FIND_PLATFORM_H
#define ZC_CL_FIND_PLATFORM_H

#include <CL/cl.h>
#include <stdbool.h>
#include <string.h>

/* The first platform whose name contains wanted; NULL when none. */
static inline cl_platform_id find_platform(const char *wanted)
{
    cl_platform_id platforms[8];
    cl_uint count = 0;
    if (clGetPlatformIDs(8, platforms, &count) != CL_SUCCESS)
        return NULL;
    for (cl_uint i = 0; i < count && i < 8; i++) {
        char name[256] = "";
        clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof(name), name, NULL);
        if (strstr(name, wanted) != NULL)
            return platforms[i];
    }
    return NULL;
}

/* The first device of the platform named wanted, and a context of it. */
static inline bool open_first_device(const char *wanted, cl_device_id *device, cl_context *context)
{
    cl_platform_id platform = find_platform(wanted);
    if (platform == NULL ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, device, NULL) != CL_SUCCESS)
        return false;
    *context = clCreateContext(NULL, 1, device, NULL, NULL, NULL);
    return *context != NULL;
}

#endif
