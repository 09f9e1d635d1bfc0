/* cl_probe: builds one OpenCL program as the end-to-end tests describe it on
 * the command line and prints everything an application can ask of it, so
 * the tests can compare the answers of the driver alone with those through
 * the layer (miss, memory hit, disk hit) in fresh processes.
 *
 *   --platform TEXT   the first platform whose name contains TEXT
 *   --source FILE     clCreateProgramWithSource (FILE's bytes)
 *   --append FILE     with --source: FILE as a second source string, the first
 *                     given with its terminating NUL counted in its length
 *   --il FILE         clCreateProgramWithIL
 *   --options TEXT    build options (default NULL)
 *   --repeat N        create, build and describe N times in this process
 *   --callback        build with a notify callback and print its calls
 *   --no-binaries     print binary sizes but not the binaries' digest (PoCL
 *                     binaries carry what differs between runs)
 *   --rebuild         build again while a kernel of the program lives (the
 *                     driver refuses), then once it is released, and describe
 *   --global NAME     look NAME up with clGetDeviceGlobalVariablePointerINTEL
 *                     (where the platform has it) and print the result
 *   --spec ID=VALUE   clSetProgramSpecializationConstant, 32 bits, before the
 *                     build
 *   --compile-link    clCompileProgram then clLinkProgram instead of
 *                     clBuildProgram; the linked program is described
 *   --spec-at-link    with --compile-link: --spec set after the compile,
 *                     before the link
 *   --devices WHICH   build for "all" the context's devices given as a list,
 *                     or for the one of index WHICH (default: device_list
 *                     NULL)
 *   --context-device N  a context of the platform's device N alone (default:
 *                     all its devices)
 *   --time            print how long clBuildProgram took ("build time: N us"),
 *                     on stderr (the descriptions stay comparable)
 *   --setenv NAME=VALUE  set NAME once the context is created, before the
 *                     first build (repeat for several)
 *   --run K:SPEC      run kernel K with arguments SPEC, one letter each:
 *                     b a buffer of 256 ints (filled 0, 3, 6, ...), i the int
 *                     64; print the digest of every buffer afterwards; on
 *                     each device of the build
 *
 * Exit status 0 when the platform was found, 2 when not or on bad arguments. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_find_platform.h"

#define MAX_DEVICES 8
#define MAX_KERNELS 32
#define MAX_RUN_ARGS 8
#define RUN_INTS 256

#define MAX_SETENV 4

typedef struct probe_options {
    const char *platform, *source_path, *il_path, *options, *run, *global;
    int repeat;
    bool callback, no_binaries, rebuild, compile_link, spec_at_link, time;
    const char *spec, *append, *devices, *context_device;
    char *setenv[MAX_SETENV];
    int setenv_count;
} probe_options;

static uint64_t digest(const void *data, size_t size)
{
    uint64_t hash = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ ((const uint8_t *)data)[i]) * 0x100000001b3u;
    return hash;
}

static void *read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *data = malloc((size_t)length + 1);
    if (data != NULL && fread(data, 1, (size_t)length, file) != (size_t)length) {
        free(data);
        data = NULL;
    }
    fclose(file);
    if (data != NULL)
        data[length] = '\0';
    *size = (size_t)length;
    return data;
}

/* A query's answer as "<code> size=<n> <text or digest>". */
typedef cl_int (*info_fn)(void *object, cl_uint name, size_t size, void *value, size_t *ret);

static void print_info(const char *label, info_fn query, void *object, cl_uint name, bool text)
{
    size_t size = 0;
    cl_int code = query(object, name, 0, NULL, &size);
    printf("%s: %d size=%zu", label, code, size);
    if (code == CL_SUCCESS && size > 0) {
        char *value = calloc(1, size + 1);
        code = query(object, name, size, value, NULL);
        if (code != CL_SUCCESS)
            printf(" then %d", code);
        else if (text)
            printf(" \"%s\"", value);
        else if (size <= 16) {
            for (size_t i = 0; i < size; i++)
                printf(" %02x", (uint8_t)value[i]);
        } else {
            printf(" digest=%016" PRIx64, digest(value, size));
        }
        free(value);
    }
    printf("\n");
}

static cl_int program_info(void *program, cl_uint name, size_t size, void *value, size_t *ret)
{
    return clGetProgramInfo(program, name, size, value, ret);
}

static cl_device_id build_device;
static cl_int build_info(void *program, cl_uint name, size_t size, void *value, size_t *ret)
{
    return clGetProgramBuildInfo(program, build_device, name, size, value, ret);
}

static cl_int kernel_info(void *kernel, cl_uint name, size_t size, void *value, size_t *ret)
{
    return clGetKernelInfo(kernel, name, size, value, ret);
}

static cl_int kernel_group_info(void *kernel, cl_uint name, size_t size, void *value, size_t *ret)
{
    return clGetKernelWorkGroupInfo(kernel, build_device, name, size, value, ret);
}

static cl_uint arg_index;
static cl_int kernel_arg_info(void *kernel, cl_uint name, size_t size, void *value, size_t *ret)
{
    return clGetKernelArgInfo(kernel, arg_index, name, size, value, ret);
}

static void print_binaries(cl_program program, cl_uint device_count, bool no_binaries)
{
    size_t sizes[MAX_DEVICES] = {0};
    cl_int code = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(sizes), sizes, NULL);
    printf("binary sizes: %d", code);
    for (cl_uint i = 0; i < device_count && code == CL_SUCCESS; i++)
        printf(" %zu", no_binaries ? (size_t)(sizes[i] > 0) : sizes[i]);
    printf("\n");
    if (code != CL_SUCCESS || no_binaries)
        return;
    unsigned char *binaries[MAX_DEVICES] = {0};
    for (cl_uint i = 0; i < device_count; i++)
        binaries[i] = malloc(sizes[i] + 1);
    code = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(binaries), binaries, NULL);
    printf("binaries: %d", code);
    for (cl_uint i = 0; i < device_count && code == CL_SUCCESS; i++)
        printf(" %016" PRIx64, digest(binaries[i], sizes[i]));
    printf("\n");
    for (cl_uint i = 0; i < device_count; i++)
        free(binaries[i]);
}

static void describe_program(cl_program program, cl_uint device_count, const cl_device_id *devices,
                             bool no_binaries)
{
    print_info("program source", program_info, program, CL_PROGRAM_SOURCE, false);
    print_info("program il", program_info, program, CL_PROGRAM_IL, false);
    print_info("program num devices", program_info, program, CL_PROGRAM_NUM_DEVICES, false);
    print_info("program num kernels", program_info, program, CL_PROGRAM_NUM_KERNELS, false);
    print_info("program kernel names", program_info, program, CL_PROGRAM_KERNEL_NAMES, true);
    print_info("program ctors", program_info, program, CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT,
               false);
    print_info("program dtors", program_info, program, CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT,
               false);
    print_binaries(program, device_count, no_binaries);
    for (cl_uint i = 0; i < device_count; i++) {
        build_device = devices[i];
        printf("device %u\n", i);
        print_info(" build status", build_info, program, CL_PROGRAM_BUILD_STATUS, false);
        print_info(" build options", build_info, program, CL_PROGRAM_BUILD_OPTIONS, true);
        print_info(" build log", build_info, program, CL_PROGRAM_BUILD_LOG, true);
        print_info(" binary type", build_info, program, CL_PROGRAM_BINARY_TYPE, false);
        print_info(" global variables", build_info, program,
                   CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE, false);
    }
}

static void describe_arguments(cl_kernel kernel, cl_uint count)
{
    static const struct {
        const char *label;
        cl_uint name;
        bool text;
    } queries[] = {{"  arg address", CL_KERNEL_ARG_ADDRESS_QUALIFIER, false},
                   {"  arg access", CL_KERNEL_ARG_ACCESS_QUALIFIER, false},
                   {"  arg type name", CL_KERNEL_ARG_TYPE_NAME, true},
                   {"  arg type qualifier", CL_KERNEL_ARG_TYPE_QUALIFIER, false},
                   {"  arg name", CL_KERNEL_ARG_NAME, true}};
    for (arg_index = 0; arg_index < count; arg_index++) {
        printf(" argument %u\n", arg_index);
        for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++)
            print_info(queries[i].label, kernel_arg_info, kernel, queries[i].name, queries[i].text);
        /* A wrong size says whether the argument is a pointer or a value. */
        printf("  set arg size 1: %d\n", clSetKernelArg(kernel, arg_index, 1, NULL));
    }
}

static void describe_kernel(cl_program program, cl_kernel kernel)
{
    cl_program owner = NULL;
    cl_uint args = 0;
    clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof(owner), &owner, NULL);
    printf(" program is the application's: %d\n", owner == program);
    print_info(" function name", kernel_info, kernel, CL_KERNEL_FUNCTION_NAME, true);
    print_info(" num args", kernel_info, kernel, CL_KERNEL_NUM_ARGS, false);
    print_info(" attributes", kernel_info, kernel, CL_KERNEL_ATTRIBUTES, true);
    print_info(" reference count", kernel_info, kernel, CL_KERNEL_REFERENCE_COUNT, false);
    print_info(" work group size", kernel_group_info, kernel, CL_KERNEL_WORK_GROUP_SIZE, false);
    print_info(" compile work group size", kernel_group_info, kernel,
               CL_KERNEL_COMPILE_WORK_GROUP_SIZE, false);
    print_info(" local mem size", kernel_group_info, kernel, CL_KERNEL_LOCAL_MEM_SIZE, false);
    print_info(" preferred multiple", kernel_group_info, kernel,
               CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, false);
    print_info(" private mem size", kernel_group_info, kernel, CL_KERNEL_PRIVATE_MEM_SIZE, false);
    clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof(args), &args, NULL);
    describe_arguments(kernel, args);
}

static void describe_kernels(cl_program program)
{
    cl_kernel kernels[MAX_KERNELS];
    cl_uint count = 0;
    cl_int code = clCreateKernelsInProgram(program, MAX_KERNELS, kernels, &count);
    printf("create kernels in program: %d count=%u\n", code, count);
    cl_int missing = CL_SUCCESS;
    cl_kernel none = clCreateKernel(program, "no_such_kernel", &missing);
    printf("create kernel no_such_kernel: %d %d\n", missing, none != NULL);
    for (cl_uint i = 0; code == CL_SUCCESS && i < count; i++) {
        char name[256] = "";
        clGetKernelInfo(kernels[i], CL_KERNEL_FUNCTION_NAME, sizeof(name), name, NULL);
        cl_int created = CL_SUCCESS;
        cl_kernel kernel = clCreateKernel(program, name, &created);
        printf("kernel %s: %d\n", name, created);
        if (kernel != NULL) {
            describe_kernel(program, kernel);
            clReleaseKernel(kernel);
        }
        clReleaseKernel(kernels[i]);
    }
}

/* Runs spec's kernel over 64 work items and prints its buffers' digests. */
static void run_kernel(cl_context context, cl_device_id device, cl_uint index, cl_program program,
                       const char *spec)
{
    char name[128];
    const char *colon = strchr(spec, ':');
    if (colon == NULL || (size_t)(colon - spec) >= sizeof(name))
        return;
    snprintf(name, sizeof(name), "%.*s", (int)(colon - spec), spec);
    const char *letters = colon + 1;
    cl_int code;
    cl_kernel kernel = clCreateKernel(program, name, &code);
    cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, NULL, &code);
    cl_mem buffers[MAX_RUN_ARGS] = {0};
    cl_int ints[RUN_INTS];
    for (int i = 0; i < RUN_INTS; i++)
        ints[i] = 3 * i;
    for (cl_uint i = 0; letters[i] != '\0' && i < MAX_RUN_ARGS && kernel != NULL; i++) {
        if (letters[i] == 'b') {
            buffers[i] = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                        sizeof(ints), ints, &code);
            clSetKernelArg(kernel, i, sizeof(cl_mem), &buffers[i]);
        } else {
            cl_int value = 64;
            clSetKernelArg(kernel, i, sizeof(value), &value);
        }
    }
    size_t global = 64;
    code = kernel != NULL && queue != NULL
               ? clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL)
               : CL_INVALID_KERNEL;
    if (index == 0)
        printf("run %s: %d", name, code);
    else
        printf("run %s on device %u: %d", name, index, code);
    for (cl_uint i = 0; i < MAX_RUN_ARGS; i++) {
        if (buffers[i] == NULL)
            continue;
        cl_int out[RUN_INTS];
        clEnqueueReadBuffer(queue, buffers[i], CL_TRUE, 0, sizeof(out), out, 0, NULL, NULL);
        printf(" %016" PRIx64, digest(out, sizeof(out)));
        clReleaseMemObject(buffers[i]);
    }
    printf("\n");
    if (kernel != NULL)
        clReleaseKernel(kernel);
    if (queue != NULL)
        clReleaseCommandQueue(queue);
}

/* Builds program again with a kernel of it alive, then without. */
static void rebuild(cl_program program, cl_uint device_count, const cl_device_id *devices,
                    const probe_options *options)
{
    char names[1024] = "";
    clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, sizeof(names), names, NULL);
    names[strcspn(names, ";")] = '\0';
    cl_kernel kernel = clCreateKernel(program, names, NULL);
    printf("rebuild with a kernel: %d\n",
           clBuildProgram(program, 0, NULL, options->options, NULL, NULL));
    if (kernel != NULL)
        clReleaseKernel(kernel);
    printf("rebuild: %d\n", clBuildProgram(program, 0, NULL, options->options, NULL, NULL));
    describe_program(program, device_count, devices, options->no_binaries);
    describe_kernels(program);
}

static cl_platform_id probed_platform;

/* The host's view of a program-scope variable, through Intel's extension. */
static void look_up_global(cl_program program, cl_device_id device, const char *name)
{
    typedef cl_int(CL_API_CALL * lookup_fn)(cl_device_id, cl_program, const char *, size_t *,
                                            void **);
    lookup_fn lookup = (lookup_fn)clGetExtensionFunctionAddressForPlatform(
        probed_platform, "clGetDeviceGlobalVariablePointerINTEL");
    size_t size = 0;
    void *pointer = NULL;
    cl_int code = lookup != NULL ? lookup(device, program, name, &size, &pointer) : 1;
    printf("global %s: %d size=%zu found=%d\n", name, code, size, pointer != NULL);
}

static int callback_calls;
static void CL_CALLBACK notify(cl_program program, void *user_data)
{
    (void)program;
    (void)user_data;
    callback_calls++;
}

static cl_program create_program(cl_context context, const probe_options *options)
{
    size_t size = 0;
    void *input =
        read_file(options->source_path != NULL ? options->source_path : options->il_path, &size);
    if (input == NULL)
        return NULL;
    cl_int code;
    cl_program program;
    if (options->source_path != NULL && options->append != NULL) {
        size_t appended_size = 0;
        char *appended = read_file(options->append, &appended_size);
        const char *texts[2] = {input, appended != NULL ? appended : ""};
        size_t sizes[2] = {size + 1, appended_size};
        program = clCreateProgramWithSource(context, 2, texts, sizes, &code);
        free(appended);
    } else if (options->source_path != NULL) {
        const char *text = input;
        program = clCreateProgramWithSource(context, 1, &text, &size, &code);
    } else {
        program = clCreateProgramWithIL(context, input, size, &code);
    }
    printf("create: %d\n", code);
    free(input);
    return program;
}

/* clCompileProgram, then clLinkProgram of the one object; the linked
 * program (the compiled one released), or NULL. */
static void set_spec(cl_program program, const probe_options *options)
{
    if (options->spec == NULL)
        return;
    cl_uint id = (cl_uint)strtoul(options->spec, NULL, 0);
    cl_uint value = (cl_uint)strtoul(strchr(options->spec, '=') + 1, NULL, 0);
    printf("spec: %d\n", clSetProgramSpecializationConstant(program, id, sizeof(value), &value));
}

static cl_program compile_and_link(cl_context context, cl_program program,
                                   const probe_options *options)
{
    cl_int code = clCompileProgram(program, 0, NULL, options->options, 0, NULL, NULL, NULL, NULL);
    printf("compile: %d\n", code);
    if (options->spec_at_link)
        set_spec(program, options);
    cl_program linked = clLinkProgram(context, 0, NULL, NULL, 1, &program, NULL, NULL, &code);
    printf("link: %d\n", code);
    clReleaseProgram(program);
    return linked;
}

/* Whether device is among those --devices names: PoCL 3.1 reports a build
 * for every device of the program, and aborts on a launch on one the build
 * did not name. */
static bool built_for(cl_uint index, const probe_options *options)
{
    return options->devices == NULL || strcmp(options->devices, "all") == 0 ||
           (cl_uint)strtoul(options->devices, NULL, 10) == index;
}

/* The device list clBuildProgram is given (--devices), *count its length. */
static const cl_device_id *build_devices(cl_uint device_count, const cl_device_id *devices,
                                         const probe_options *options, cl_uint *count)
{
    *count = 0;
    if (options->devices == NULL)
        return NULL;
    if (strcmp(options->devices, "all") == 0) {
        *count = device_count;
        return devices;
    }
    cl_uint index = (cl_uint)strtoul(options->devices, NULL, 10);
    *count = 1;
    return &devices[index < device_count ? index : 0];
}

static void probe_once(cl_context context, cl_uint device_count, const cl_device_id *devices,
                       const probe_options *options)
{
    cl_program program = create_program(context, options);
    if (program == NULL)
        return;
    callback_calls = 0;
    if (!options->spec_at_link)
        set_spec(program, options);
    if (options->compile_link) {
        program = compile_and_link(context, program, options);
        if (program == NULL)
            return;
    } else {
        struct timespec start, end;
        clock_gettime(CLOCK_MONOTONIC, &start);
        cl_uint count = 0;
        const cl_device_id *list = build_devices(device_count, devices, options, &count);
        cl_int code = clBuildProgram(program, count, list, options->options,
                                     options->callback ? notify : NULL, NULL);
        clock_gettime(CLOCK_MONOTONIC, &end);
        if (options->time)
            fprintf(stderr, "build time: %lld us\n",
                    (long long)(end.tv_sec - start.tv_sec) * 1000000 +
                        (end.tv_nsec - start.tv_nsec) / 1000);
        printf("build: %d\n", code);
    }
    if (options->callback)
        printf("callback calls: %d\n", callback_calls);
    describe_program(program, device_count, devices, options->no_binaries);
    describe_kernels(program);
    for (cl_uint i = 0; options->run != NULL && i < device_count; i++)
        if (built_for(i, options))
            run_kernel(context, devices[i], i, program, options->run);
        else
            printf("run on device %u: not built for it\n", i);
    if (options->global != NULL)
        look_up_global(program, devices[0], options->global);
    if (options->rebuild)
        rebuild(program, device_count, devices, options);
    print_info("program reference count", program_info, program, CL_PROGRAM_REFERENCE_COUNT, false);
    printf("release: %d\n", clReleaseProgram(program));
}

static bool parse(int argc, char **argv, probe_options *options)
{
    *options = (probe_options){.platform = "", .repeat = 1};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--callback") == 0)
            options->callback = true;
        else if (strcmp(arg, "--time") == 0)
            options->time = true;
        else if (strcmp(arg, "--compile-link") == 0)
            options->compile_link = true;
        else if (strcmp(arg, "--spec-at-link") == 0)
            options->spec_at_link = true;
        else if (strcmp(arg, "--rebuild") == 0)
            options->rebuild = true;
        else if (strcmp(arg, "--no-binaries") == 0)
            options->no_binaries = true;
        else if (next == NULL)
            return false;
        else if (strcmp(arg, "--platform") == 0)
            options->platform = argv[++i];
        else if (strcmp(arg, "--source") == 0)
            options->source_path = argv[++i];
        else if (strcmp(arg, "--il") == 0)
            options->il_path = argv[++i];
        else if (strcmp(arg, "--options") == 0)
            options->options = argv[++i];
        else if (strcmp(arg, "--append") == 0)
            options->append = argv[++i];
        else if (strcmp(arg, "--devices") == 0)
            options->devices = argv[++i];
        else if (strcmp(arg, "--context-device") == 0)
            options->context_device = argv[++i];
        else if (strcmp(arg, "--spec") == 0)
            options->spec = argv[++i];
        else if (strcmp(arg, "--global") == 0)
            options->global = argv[++i];
        else if (strcmp(arg, "--run") == 0)
            options->run = argv[++i];
        else if (strcmp(arg, "--setenv") == 0 && strchr(next, '=') != NULL &&
                 options->setenv_count < MAX_SETENV)
            options->setenv[options->setenv_count++] = argv[++i];
        else if (strcmp(arg, "--repeat") == 0)
            options->repeat = atoi(argv[++i]);
        else
            return false;
    }
    return (options->source_path != NULL) != (options->il_path != NULL);
}

int main(int argc, char **argv)
{
    probe_options options;
    if (!parse(argc, argv, &options)) {
        fprintf(stderr, "usage: see cl_probe.c\n");
        return 2;
    }
    cl_platform_id platform = find_platform(options.platform);
    probed_platform = platform;
    cl_device_id devices[MAX_DEVICES];
    cl_uint device_count = 0;
    if (platform == NULL || clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, MAX_DEVICES, devices,
                                           &device_count) != CL_SUCCESS) {
        fprintf(stderr, "no platform or device for \"%s\"\n", options.platform);
        return 2;
    }
    if (device_count > MAX_DEVICES)
        device_count = MAX_DEVICES;
    if (options.context_device != NULL) {
        cl_uint index = (cl_uint)strtoul(options.context_device, NULL, 10);
        if (index >= device_count) {
            fprintf(stderr, "no device %u\n", index);
            return 2;
        }
        devices[0] = devices[index];
        device_count = 1;
    }
    cl_context context = clCreateContext(NULL, device_count, devices, NULL, NULL, NULL);
    for (int i = 0; i < options.setenv_count; i++) {
        char *setting = options.setenv[i];
        char *equals = strchr(setting, '=');
        *equals = '\0';
        setenv(setting, equals + 1, 1);
    }
    for (int i = 0; i < options.repeat; i++) {
        printf("describe %d\n", i);
        probe_once(context, device_count, devices, &options);
    }
    clReleaseContext(context);
    return 0;
}
