/* cl_spec_probe: specialization constants of an IL program, as an
 * application sets them, printing every result code and a digest of the
 * native binary built, so a run through the OpenCL layer can be compared
 * with the driver alone (test_opencl_spec_constants.c). The IL declares id
 * 1 (32 bits) and id 2 (64 bits). On a CPU device (PoCL, whose binaries
 * differ from run to run) the kernel runs, and what it computes is printed
 * instead of the binary's digest.
 *   cl_spec_probe PLATFORM IL values A B   id 1 set to 99 and then A (the
 *       last value counts), id 2 to B; built
 *   cl_spec_probe PLATFORM IL bad          calls the driver refuses (a size
 *       not the declared one, an undeclared id, no value, a source program);
 *       then id 1 set to 5, built
 * Exit status 0 when the platform and IL were found, 2 when not (PoCL 3.1
 * takes no IL). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_find_platform.h"

static cl_context context;
static cl_device_id device;

static void *read_il(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    void *bytes = malloc(1 << 16);
    *size = bytes != NULL ? fread(bytes, 1, 1 << 16, file) : 0;
    fclose(file);
    return bytes;
}

/* On a CPU (PoCL, whose binaries differ from run to run): what the kernel
 * computes, id 1's value plus id 2's, in each of 4 work items. */
static void run_kernel(cl_kernel kernel)
{
    cl_uint out[4] = {0};
    size_t items = 4;
    cl_int status;
    cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, NULL, &status);
    cl_mem buffer = clCreateBuffer(context, CL_MEM_WRITE_ONLY, sizeof(out), NULL, &status);
    status = clSetKernelArg(kernel, 0, sizeof(buffer), &buffer);
    if (status == CL_SUCCESS)
        status = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &items, NULL, 0, NULL, NULL);
    if (status == CL_SUCCESS)
        status = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof(out), out, 0, NULL, NULL);
    printf("computed %d: %u %u %u %u\n", (int)status, out[0], out[1], out[2], out[3]);
    clReleaseMemObject(buffer);
    clReleaseCommandQueue(queue);
}

/* FNV-1a of the program's native binary, with the build's result. */
static void print_binary(cl_program program)
{
    size_t size = 0;
    clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, NULL);
    unsigned char *binary = malloc(size > 0 ? size : 1);
    uint64_t digest = 14695981039346656037u;
    if (binary != NULL && size > 0 &&
        clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(binary), &binary, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < size; i++)
            digest = (digest ^ binary[i]) * 1099511628211u;
    free(binary);
    printf("binary %zu bytes, digest %016llx\n", size, (unsigned long long)digest);
}

static void build_and_print(cl_program program)
{
    printf("build %d\n", (int)clBuildProgram(program, 1, &device, "", NULL, NULL));
    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
    if (type != CL_DEVICE_TYPE_CPU)
        print_binary(program);
    cl_int status;
    cl_kernel kernel = clCreateKernel(program, "spec_fill", &status);
    printf("kernel %d\n", (int)status);
    if (kernel != NULL && type == CL_DEVICE_TYPE_CPU)
        run_kernel(kernel);
    if (kernel != NULL)
        clReleaseKernel(kernel);
}

static void set(cl_program program, cl_uint id, size_t size, const void *value)
{
    printf("set id %u size %zu: %d\n", (unsigned)id, size,
           (int)clSetProgramSpecializationConstant(program, id, size, value));
}

static void values(cl_program program, uint32_t a, uint64_t b)
{
    uint32_t first = 99;
    set(program, 1, sizeof(first), &first);
    set(program, 1, sizeof(a), &a);
    set(program, 2, sizeof(b), &b);
    build_and_print(program);
}

static void bad(cl_program program)
{
    uint64_t wide = 5;
    uint32_t narrow = 5;
    set(program, 1, sizeof(wide), &wide);
    set(program, 2, sizeof(narrow), &narrow);
    set(program, 77, sizeof(narrow), &narrow);
    set(program, 1, sizeof(narrow), NULL);
    set(NULL, 1, sizeof(narrow), &narrow);
    const char *source = "kernel void k(global int *out) { *out = 1; }\n";
    cl_program from_source = clCreateProgramWithSource(context, 1, &source, NULL, NULL);
    set(from_source, 1, sizeof(narrow), &narrow);
    clReleaseProgram(from_source);
    set(program, 1, sizeof(narrow), &narrow);
    build_and_print(program);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* all of it, should the layer crash */
    size_t size = 0;
    void *il =
        argc >= 4 && open_first_device(argv[1], &device, &context) ? read_il(argv[2], &size) : NULL;
    cl_int status = CL_INVALID_VALUE;
    cl_program program = il != NULL ? clCreateProgramWithIL(context, il, size, &status) : NULL;
    free(il);
    if (program == NULL)
        return 2;
    if (argc == 6 && strcmp(argv[3], "values") == 0)
        values(program, (uint32_t)strtoul(argv[4], NULL, 0), strtoull(argv[5], NULL, 0));
    else if (argc == 4 && strcmp(argv[3], "bad") == 0)
        bad(program);
    else
        return 2;
    clReleaseProgram(program);
    clReleaseContext(context);
    return 0;
}
