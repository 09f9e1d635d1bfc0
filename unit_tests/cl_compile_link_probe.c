/* cl_compile_link_probe: a program made as an application that builds from
 * separately compiled parts makes it: two sources compiled with
 * clCompileProgram (the first including a header given as input_headers),
 * linked with clLinkProgram, and a kernel of the link run. Prints every
 * answer, the outputs and a digest of the linked binary, so a run through
 * the OpenCL layer can be compared with the driver alone
 * (test_opencl_compile_link.c).
 *   cl_compile_link_probe PLATFORM HEADER_VALUE LINK_OPTIONS [digest]
 * HEADER_VALUE is the number the embedded header defines (an '@' in it a NUL
 * byte); "digest" prints
 * the digests of the main part's compiled object and the linked binary (PoCL's binaries differ from
 * run to run). Exit status 0 when the platform was found, 2 when not. (Its name is its own: the key
 * looks for the name in the include directories too, and glibc has a values.h.) */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_find_platform.h"

#define ITEMS 8

static const char *const main_source = "#include \"compile_link_values.h\"\n"
                                       "int helper(int x);\n"
                                       "kernel void fill(global int *out) {\n"
                                       "    int i = get_global_id(0);\n"
                                       "    out[i] = helper(i) + VALUE;\n"
                                       "}\n";
static const char *const helper_source = "int helper(int x) { return x * 3; }\n";

static cl_context context;
static cl_device_id device;

/* Called by the helper's compile and by the link: which program, how often. */
static void CL_CALLBACK count_call(cl_program program, void *calls)
{
    (void)program;
    (*(int *)calls)++;
}

/* NULL when the driver refuses it (then every later call says so). */
static cl_program program_of(const char *source)
{
    return clCreateProgramWithSource(context, 1, &source, NULL, NULL);
}

static void print_build(const char *what, cl_program program)
{
    cl_build_status status = 0;
    cl_program_binary_type type = 0;
    size_t log_size = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof(status), &status, NULL);
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BINARY_TYPE, sizeof(type), &type, NULL);
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
    printf("%s: status %d type %u log %s\n", what, (int)status, (unsigned)type,
           log_size > 1 ? "some" : "none");
}

/* FNV-1a of the program's binary: the same bytes print the same. */
static void print_digest(const char *what, cl_program program)
{
    size_t size = 0;
    clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, NULL);
    unsigned char *binary = malloc(size > 0 ? size : 1);
    uint64_t hash = 1469598103934665603u;
    if (binary != NULL &&
        clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(binary), &binary, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < size; i++)
            hash = (hash ^ binary[i]) * 1099511628211u;
    printf("%s binary: %zu bytes, digest %016" PRIx64 "\n", what, size, hash);
    free(binary);
}

static void run_fill(cl_program linked)
{
    cl_int status;
    cl_kernel kernel = clCreateKernel(linked, "fill", &status);
    printf("kernel: %d\n", (int)status);
    if (kernel == NULL)
        return;
    cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, NULL, &status);
    /* Intel's driver on the pretend device runs nothing: it prints these. */
    cl_int values[ITEMS] = {-1, -2, -3, -4, -5, -6, -7, -8};
    cl_mem out = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(values),
                                values, &status);
    size_t items = ITEMS;
    clSetKernelArg(kernel, 0, sizeof(out), &out);
    status = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &items, NULL, 0, NULL, NULL);
    if (status == CL_SUCCESS)
        status = clEnqueueReadBuffer(queue, out, CL_TRUE, 0, sizeof(values), values, 0, NULL, NULL);
    printf("run: %d, outputs", (int)status);
    for (int i = 0; i < ITEMS; i++)
        printf(" %d", (int)values[i]);
    printf("\n");
    clReleaseMemObject(out);
    clReleaseCommandQueue(queue);
    clReleaseKernel(kernel);
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5)
        return 1;
    cl_platform_id platform = find_platform(argv[1]);
    if (platform == NULL ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS)
        return 2;
    context = clCreateContext(NULL, 1, &device, NULL, NULL, NULL);
    char header[64];
    snprintf(header, sizeof(header), "#define VALUE %s\n", argv[2]);
    /* An '@' in HEADER_VALUE is a NUL byte within the header's length. */
    size_t header_length = strlen(header);
    for (char *at = strchr(header, '@'); at != NULL; at = strchr(at + 1, '@'))
        *at = '\0';
    const char *header_text = header;
    cl_program header_program =
        clCreateProgramWithSource(context, 1, &header_text, &header_length, NULL);
    cl_program parts[2] = {program_of(main_source), program_of(helper_source)};
    const char *header_name = "compile_link_values.h";
    printf("compile main: %d\n", (int)clCompileProgram(parts[0], 1, &device, "", 1, &header_program,
                                                       &header_name, NULL, NULL));
    int compile_calls = 0, link_calls = 0;
    printf("compile helper: %d\n", (int)clCompileProgram(parts[1], 0, NULL, NULL, 0, NULL, NULL,
                                                         count_call, &compile_calls));
    printf("compile callback calls: %d\n", compile_calls);
    print_build("main", parts[0]);
    print_build("helper", parts[1]);
    bool digests = argc == 5 && strcmp(argv[4], "digest") == 0;
    if (digests)
        print_digest("main", parts[0]);
    cl_int status;
    cl_program linked =
        clLinkProgram(context, 1, &device, argv[3], 2, parts, count_call, &link_calls, &status);
    printf("link: %d, callback calls: %d\n", (int)status, link_calls);
    if (linked != NULL) {
        print_build("linked", linked);
        char names[256] = "";
        clGetProgramInfo(linked, CL_PROGRAM_KERNEL_NAMES, sizeof(names), names, NULL);
        printf("kernels: %s\n", names);
        if (digests)
            print_digest("linked", linked);
        run_fill(linked);
        clReleaseProgram(linked);
    }
    for (int i = 0; i < 2; i++)
        clReleaseProgram(parts[i]);
    clReleaseProgram(header_program);
    clReleaseContext(context);
    return 0;
}
