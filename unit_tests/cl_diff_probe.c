/* cl_diff_probe: one step of the front end's differential test
 * (test_opencl_differential.c): builds one OpenCL C program in the call
 * pattern asked for and prints what the application sees of it, so that a
 * run with the driver alone and one through the layer can be compared.
 *
 *   --platform TEXT    the first platform whose name contains TEXT
 *   --source FILE      a source string (repeatable: several strings)
 *   --options TEXT     build options
 *   --chdir DIR        the working directory of the builds
 *   --setenv NAME=VAL  setenv after clCreateContext (a build variable the
 *                      driver reads per build)
 *   --pattern NAME     build, rebuild (twice on one program), link (compile
 *                      then link), threads (two threads, a program each),
 *                      shared (two threads building one program),
 *                      cb-release (the build callback releases the program),
 *                      cb-build (the build callback builds the same source)
 *   --repeat N         the pattern N times in this process
 *   --run              run kernel "k" and print what it computed (PoCL);
 *                      otherwise print the binary's digest (Intel)
 *   --deadline S       die by SIGALRM after S seconds (a hang is a result)
 *
 * Exit status 0 when the platform was found, 2 when not or on bad arguments. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_find_platform.h"

#define MAX_SOURCES 8
#define OUTPUT_INTS 8

typedef struct probe_args {
    const char *platform, *options, *chdir, *setenv, *pattern;
    const char *sources[MAX_SOURCES];
    int source_count, repeat, deadline;
    bool run;
} probe_args;

static probe_args args;
static char *texts[MAX_SOURCES];
static cl_context context;
static cl_device_id device;

static uint64_t digest(const void *data, size_t size)
{
    uint64_t hash = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ ((const uint8_t *)data)[i]) * 0x100000001b3u;
    return hash;
}

static char *read_text(const char *path)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    char *text = calloc(1, 1 << 16);
    size_t length = text != NULL ? fread(text, 1, (1 << 16) - 1, file) : 0;
    fclose(file);
    if (text != NULL)
        text[length] = '\0';
    return text;
}

static cl_program create_program(void)
{
    cl_int code;
    cl_program program = clCreateProgramWithSource(context, (cl_uint)args.source_count,
                                                   (const char **)texts, NULL, &code);
    printf("create: %d\n", code);
    return program;
}

/* The log with the names that differ from run to run masked: PoCL's
 * temporary files (".../tempfile_2RlT8x.cl"). */
static void print_log(cl_program program)
{
    size_t size = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = calloc(1, size + 1);
    if (log == NULL)
        return;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
    for (char *at = strstr(log, "tempfile_"); at != NULL; at = strstr(at + 1, "tempfile_"))
        for (size_t i = strlen("tempfile_"); i < strlen("tempfile_") + 6 && at[i] != '\0'; i++)
            at[i] = '*';
    printf("log: \"%s\"\n", log);
    free(log);
}

static void print_binary(cl_program program)
{
    size_t size = 0;
    cl_int code = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
    unsigned char *binary = malloc(size + 1);
    if (code == CL_SUCCESS && binary != NULL)
        code = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binary, &binary, NULL);
    printf("binary: %d size=%zu digest=%016" PRIx64 "\n", code, size,
           code == CL_SUCCESS ? digest(binary, size) : 0);
    free(binary);
}

/* Runs k(out) over OUTPUT_INTS items and prints out. */
static void run_kernel(cl_program program)
{
    cl_int code;
    cl_kernel kernel = clCreateKernel(program, "k", &code);
    cl_command_queue queue = clCreateCommandQueueWithProperties(context, device, NULL, &code);
    cl_int out[OUTPUT_INTS] = {0};
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof out, NULL, &code);
    size_t global = OUTPUT_INTS;
    if (kernel != NULL)
        clSetKernelArg(kernel, 0, sizeof buffer, &buffer);
    code = kernel != NULL
               ? clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL)
               : CL_INVALID_KERNEL;
    if (code == CL_SUCCESS)
        code = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL);
    printf("run: %d", code);
    for (int i = 0; i < OUTPUT_INTS; i++)
        printf(" %d", out[i]);
    printf("\n");
    clReleaseMemObject(buffer);
    if (kernel != NULL)
        clReleaseKernel(kernel);
    clReleaseCommandQueue(queue);
}

static void describe(cl_program program)
{
    cl_build_status status = CL_BUILD_NONE;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_STATUS, sizeof status, &status, NULL);
    printf("status: %d\n", status);
    print_log(program);
    if (status != CL_BUILD_SUCCESS)
        return;
    char names[256] = "";
    clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, sizeof names, names, NULL);
    printf("kernels: %s\n", names);
    if (args.run)
        run_kernel(program);
    else
        print_binary(program);
}

/* Builds a new program `builds` times (a rebuild from the second). */
static void build_times(int builds)
{
    cl_program program = create_program();
    if (program == NULL)
        return;
    for (int i = 0; i < builds; i++)
        printf("%s: %d\n", i == 0 ? "build" : "rebuild",
               clBuildProgram(program, 0, NULL, args.options, NULL, NULL));
    describe(program);
    clReleaseProgram(program);
}

static void compile_and_link(void)
{
    cl_program program = create_program();
    if (program == NULL)
        return;
    printf("compile: %d\n",
           clCompileProgram(program, 0, NULL, args.options, 0, NULL, NULL, NULL, NULL));
    cl_int code;
    cl_program linked = clLinkProgram(context, 0, NULL, NULL, 1, &program, NULL, NULL, &code);
    printf("link: %d\n", code);
    clReleaseProgram(program);
    if (linked != NULL) {
        describe(linked);
        clReleaseProgram(linked);
    }
}

/* ---- two threads ---- */

typedef struct thread_build {
    cl_program program;
    cl_int code;
} thread_build;

static void *build_in_thread(void *arg)
{
    thread_build *build = arg;
    build->code = clBuildProgram(build->program, 0, NULL, args.options, NULL, NULL);
    return NULL;
}

/* Two threads build at once: a program each, or (shared) the same one, where
 * one of them may be refused (CL_INVALID_OPERATION) while the other builds:
 * only the program's final state is printed then. */
static void two_threads(bool shared)
{
    thread_build builds[2] = {{create_program(), 0}, {NULL, 0}};
    builds[1].program = shared ? builds[0].program : create_program();
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, build_in_thread, &builds[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < (shared ? 1 : 2); i++) {
        if (!shared)
            printf("thread build: %d\n", builds[i].code);
        describe(builds[i].program);
        clReleaseProgram(builds[i].program);
    }
}

/* ---- build callbacks ---- */

static void CL_CALLBACK release_in_callback(cl_program program, void *user_data)
{
    (void)user_data;
    describe(program);
    printf("callback release: %d\n", clReleaseProgram(program));
}

static void CL_CALLBACK build_in_callback(cl_program program, void *user_data)
{
    (void)program;
    (void)user_data;
    printf("callback builds\n");
    build_times(1);
}

static void with_callback(bool release)
{
    cl_program program = create_program();
    if (program == NULL)
        return;
    cl_int code = clBuildProgram(program, 0, NULL, args.options,
                                 release ? release_in_callback : build_in_callback, NULL);
    printf("build: %d\n", code);
    if (!release) {
        describe(program);
        clReleaseProgram(program);
    }
}

static void run_pattern(void)
{
    const char *pattern = args.pattern;
    if (strcmp(pattern, "rebuild") == 0)
        build_times(2);
    else if (strcmp(pattern, "link") == 0)
        compile_and_link();
    else if (strcmp(pattern, "threads") == 0 || strcmp(pattern, "shared") == 0)
        two_threads(strcmp(pattern, "shared") == 0);
    else if (strcmp(pattern, "cb-release") == 0 || strcmp(pattern, "cb-build") == 0)
        with_callback(strcmp(pattern, "cb-release") == 0);
    else
        build_times(1);
}

static bool parse(int argc, char **argv)
{
    args = (probe_args){.platform = "", .pattern = "build", .repeat = 1};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--run") == 0)
            args.run = true;
        else if (next == NULL)
            return false;
        else if (strcmp(arg, "--platform") == 0)
            args.platform = argv[++i];
        else if (strcmp(arg, "--source") == 0 && args.source_count < MAX_SOURCES)
            args.sources[args.source_count++] = argv[++i];
        else if (strcmp(arg, "--options") == 0)
            args.options = argv[++i];
        else if (strcmp(arg, "--chdir") == 0)
            args.chdir = argv[++i];
        else if (strcmp(arg, "--setenv") == 0)
            args.setenv = argv[++i];
        else if (strcmp(arg, "--pattern") == 0)
            args.pattern = argv[++i];
        else if (strcmp(arg, "--repeat") == 0)
            args.repeat = atoi(argv[++i]);
        else if (strcmp(arg, "--deadline") == 0)
            args.deadline = atoi(argv[++i]);
        else
            return false;
    }
    return args.source_count > 0;
}

static bool find_device(void)
{
    cl_platform_id platform = find_platform(args.platform);
    return platform != NULL &&
           clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) == CL_SUCCESS;
}

static void set_after_context(void)
{
    char setting[1024];
    snprintf(setting, sizeof setting, "%s", args.setenv);
    char *equals = strchr(setting, '=');
    if (equals == NULL)
        return;
    *equals = '\0';
    setenv(setting, equals + 1, 1);
}

int main(int argc, char **argv)
{
    if (!parse(argc, argv)) {
        fprintf(stderr, "usage: see cl_diff_probe.c\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* what came before a crash or a hang */
    if (args.deadline > 0)
        alarm((unsigned)args.deadline);
    for (int i = 0; i < args.source_count; i++)
        if ((texts[i] = read_text(args.sources[i])) == NULL)
            return 2;
    if (args.chdir != NULL && chdir(args.chdir) != 0)
        return 2;
    if (!find_device()) {
        fprintf(stderr, "no platform or device for \"%s\"\n", args.platform);
        return 2;
    }
    context = clCreateContext(NULL, 1, &device, NULL, NULL, NULL);
    if (args.setenv != NULL)
        set_after_context();
    for (int i = 0; i < args.repeat; i++) {
        printf("pattern %d\n", i);
        run_pattern();
    }
    clReleaseContext(context);
    for (int i = 0; i < args.source_count; i++)
        free(texts[i]);
    return 0;
}
