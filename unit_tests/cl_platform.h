/* The first OpenCL platform whose name contains a text, for the probes
 * that the end-to-end tests run (cl_diff_probe.c; cl_probe.c has its own
 * copy still). Header-only, as the other support headers. */
#ifndef ZC_CL_PLATFORM_H
#define ZC_CL_PLATFORM_H

#include <CL/cl.h>
#include <string.h>

static inline cl_platform_id cl_find_platform(const char *wanted)
{
    cl_platform_id platforms[8];
    cl_uint count = 0;
    if (clGetPlatformIDs(8, platforms, &count) != CL_SUCCESS)
        return NULL;
    for (cl_uint i = 0; i < count && i < 8; i++) {
        char name[256] = "";
        clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, wanted) != NULL)
            return platforms[i];
    }
    return NULL;
}

#endif
