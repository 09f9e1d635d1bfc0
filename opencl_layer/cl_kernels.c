/* Kernels of a hit come from the layer's program; the application sees its
 * own program as theirs. The layer counts them, since a program with
 * kernels cannot be built again (the driver's CL_INVALID_OPERATION). */
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"

static cl_program program_of(cl_kernel kernel)
{
    cl_program program = NULL;
    if (zcc_layer.next.clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof(program), &program,
                                       NULL) != CL_SUCCESS)
        return NULL;
    return program;
}

cl_kernel CL_API_CALL zcc_create_kernel(cl_program program, const char *name, cl_int *errcode_ret)
{
    cl_program built = zcc_hits_built_of(program);
    if (built == NULL)
        return zcc_layer.next.clCreateKernel(program, name, errcode_ret);
    cl_kernel kernel = zcc_layer.next.clCreateKernel(built, name, errcode_ret);
    if (kernel != NULL)
        zcc_hits_count_kernel(built, 1);
    zcc_layer.next.clReleaseProgram(built);
    return kernel;
}

cl_int CL_API_CALL zcc_create_kernels_in_program(cl_program program, cl_uint num_kernels,
                                                 cl_kernel *kernels, cl_uint *num_kernels_ret)
{
    cl_program built = zcc_hits_built_of(program);
    if (built == NULL)
        return zcc_layer.next.clCreateKernelsInProgram(program, num_kernels, kernels,
                                                       num_kernels_ret);
    cl_uint made = 0;
    cl_int result = zcc_layer.next.clCreateKernelsInProgram(built, num_kernels, kernels, &made);
    for (cl_uint i = 0; result == CL_SUCCESS && kernels != NULL && i < made; i++)
        zcc_hits_count_kernel(built, 1);
    if (num_kernels_ret != NULL)
        *num_kernels_ret = made;
    zcc_layer.next.clReleaseProgram(built);
    return result;
}

cl_kernel CL_API_CALL zcc_clone_kernel(cl_kernel kernel, cl_int *errcode_ret)
{
    cl_kernel clone = zcc_layer.next.clCloneKernel(kernel, errcode_ret);
    if (clone != NULL && !zcc_hits_empty())
        zcc_hits_count_kernel(program_of(clone), 1);
    return clone;
}

cl_int CL_API_CALL zcc_release_kernel(cl_kernel kernel)
{
    if (zcc_hits_empty())
        return zcc_layer.next.clReleaseKernel(kernel);
    cl_uint references = 0;
    cl_program program = program_of(kernel);
    bool last =
        zcc_layer.next.clGetKernelInfo(kernel, CL_KERNEL_REFERENCE_COUNT, sizeof(references),
                                       &references, NULL) == CL_SUCCESS &&
        references == 1;
    cl_int result = zcc_layer.next.clReleaseKernel(kernel);
    if (result == CL_SUCCESS && last && program != NULL)
        zcc_hits_count_kernel(program, -1);
    return result;
}

/* A hit's kernel answers the attributes the build gave it (PoCL's kernels
 * of a program from a binary answer none). */
static cl_int kernel_attributes(cl_kernel kernel, size_t size, void *value, size_t *size_ret,
                                bool *answered)
{
    char name[1024];
    cl_program built = program_of(kernel);
    *answered = false;
    if (built == NULL || zcc_layer.next.clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME,
                                                        sizeof(name), name, NULL) != CL_SUCCESS)
        return CL_SUCCESS;
    char *attributes = zcc_hits_kernel_attributes(built, name);
    if (attributes == NULL)
        return CL_SUCCESS;
    *answered = true;
    cl_int result = zcc_answer(attributes, strlen(attributes) + 1, size, value, size_ret);
    free(attributes);
    return result;
}

cl_int CL_API_CALL zcc_get_kernel_info(cl_kernel kernel, cl_kernel_info name, size_t size,
                                       void *value, size_t *size_ret)
{
    if (name == CL_KERNEL_ATTRIBUTES && !zcc_hits_empty()) {
        bool answered;
        cl_int result = kernel_attributes(kernel, size, value, size_ret, &answered);
        if (answered)
            return result;
    }
    cl_int result = zcc_layer.next.clGetKernelInfo(kernel, name, size, value, size_ret);
    if (result == CL_SUCCESS && name == CL_KERNEL_PROGRAM && value != NULL &&
        size >= sizeof(cl_program)) {
        cl_program owner = zcc_hits_owner_of(*(cl_program *)value);
        if (owner != NULL)
            *(cl_program *)value = owner;
    }
    return result;
}
