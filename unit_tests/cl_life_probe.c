/* cl_life_probe: a program's life around builds, as an application may
 * drive it, printing every result so a run through the OpenCL layer can be
 * compared with the driver alone (test_opencl_program_life.c).
 *   cl_life_probe PLATFORM race      two threads build one program at once,
 *       it is released, and a linked program made after it (often at its
 *       address) answers its kernel names and kernels
 *   cl_life_probe PLATFORM callbacks build callbacks that make a kernel,
 *       build the same source, and release the program
 * Exit status 0 when the platform was found, 2 when not. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_find_platform.h"

static const char *const first_source = "kernel void ka(global int *out) { *out = 111; }\n";
static const char *const second_source = "kernel void kb(global int *out) { *out = 222; }\n";

static cl_context context;
static cl_device_id device;

static cl_program from_source(const char *source)
{
    cl_int status;
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &status);
    return status == CL_SUCCESS ? program : NULL;
}

static pthread_barrier_t both_ready;

static void *build_thread(void *program)
{
    cl_int *result = malloc(sizeof(*result));
    pthread_barrier_wait(&both_ready);
    if (result != NULL)
        *result = clBuildProgram(program, 1, &device, "", NULL, NULL);
    return result;
}

/* Builds on two threads at once. Each builds, or finds the other's build
 * not completed (CL_INVALID_OPERATION: Intel's driver, when the builds
 * overlap, which timing decides; Intel 26.x alone has also answered
 * CL_INVALID_BINARY, the program caught between its two builds); at least
 * one builds. */
static void build_twice_at_once(cl_program program)
{
    pthread_t threads[2];
    cl_int results[2] = {CL_INVALID_VALUE, CL_INVALID_VALUE};
    pthread_barrier_init(&both_ready, NULL, 2);
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, build_thread, program);
    for (int i = 0; i < 2; i++) {
        void *result = NULL;
        pthread_join(threads[i], &result);
        if (result != NULL)
            results[i] = *(cl_int *)result;
        free(result);
    }
    pthread_barrier_destroy(&both_ready);
    bool each_expected = true;
    for (int i = 0; i < 2; i++)
        each_expected &= results[i] == CL_SUCCESS || results[i] == CL_INVALID_OPERATION ||
                         results[i] == CL_INVALID_BINARY;
    if (each_expected && (results[0] == CL_SUCCESS || results[1] == CL_SUCCESS))
        printf("two builds: one or both built\n");
    else
        printf("two builds: %d %d\n", (int)results[0], (int)results[1]);
}

static void print_kernels(const char *what, cl_program program)
{
    char names[256] = "";
    cl_int status = clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, sizeof(names), names, NULL);
    printf("%s: kernel names %d \"%s\"", what, (int)status, names);
    const char *const kernels[] = {"ka", "kb"};
    for (int i = 0; i < 2; i++) {
        cl_kernel kernel = clCreateKernel(program, kernels[i], &status);
        printf(", %s %d", kernels[i], (int)status);
        if (kernel != NULL)
            clReleaseKernel(kernel);
    }
    printf("\n");
}

static void race(void)
{
    for (int round = 0; round < 3; round++) {
        cl_program first = from_source(first_source);
        build_twice_at_once(first);
        print_kernels("built", first);
        cl_program second = from_source(second_source);
        cl_int status = clCompileProgram(second, 1, &device, "", 0, NULL, NULL, NULL, NULL);
        /* Released just before the link, which may get its memory. */
        clReleaseProgram(first);
        cl_program linked = clLinkProgram(context, 1, &device, "", 1, &second, NULL, NULL, &status);
        printf("link %d\n", (int)status);
        if (linked != NULL) {
            print_kernels("linked", linked);
            clReleaseProgram(linked);
        }
        clReleaseProgram(second);
    }
}

/* Each callback's program has a source of its own, so that a cold run
 * builds it (a miss) and a warm run finds it (a hit). */
static const char *const callback_sources[] = {
    "kernel void ka(global int *out) { *out = 1; }\n",
    "kernel void ka(global int *out) { *out = 2; }\n",
    "kernel void ka(global int *out) { *out = 3; }\n",
};

static void make_kernel(cl_program program, void *source)
{
    (void)source;
    cl_int status;
    cl_kernel kernel = clCreateKernel(program, "ka", &status);
    printf("callback made a kernel: %d\n", (int)status);
    if (kernel != NULL)
        clReleaseKernel(kernel);
}

static void build_same_source(cl_program program, void *source)
{
    (void)program;
    cl_program again = from_source(source);
    printf("callback built the same source: %d\n",
           (int)clBuildProgram(again, 1, &device, "", NULL, NULL));
    clReleaseProgram(again);
}

static void release_program(cl_program program, void *source)
{
    (void)source;
    printf("callback released the program: %d\n", (int)clReleaseProgram(program));
}

static void callbacks(void)
{
    void(CL_CALLBACK *const notifies[])(cl_program, void *) = {release_program, make_kernel,
                                                               build_same_source};
    for (size_t i = 0; i < sizeof(notifies) / sizeof(notifies[0]); i++) {
        cl_program program = from_source(callback_sources[i]);
        printf("build %d\n", (int)clBuildProgram(program, 1, &device, "", notifies[i],
                                                 (void *)callback_sources[i]));
        if (notifies[i] != release_program)
            clReleaseProgram(program);
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* all of it, should the layer crash */
    if (argc != 3 || !open_first_device(argv[1], &device, &context))
        return 2;
    if (strcmp(argv[2], "race") == 0)
        race();
    else if (strcmp(argv[2], "callbacks") == 0)
        callbacks();
    else
        return 2;
    clReleaseContext(context);
    return 0;
}
