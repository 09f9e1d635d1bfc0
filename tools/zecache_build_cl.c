/* zecache-build-cl: prewarm's build helper for OpenCL programs (as
 * zecache-build is for Level Zero modules, build_helper.h). It runs with
 * OPENCL_LAYERS naming the layer and rebuilds each recorded program through
 * the ICD loader on the device of the recorded name, in the recorded working
 * directory, with the recorded build variables and options, so the layer
 * keys, compiles and stores it exactly as the application's build. A build
 * whose header candidates are not as the key saw them would have another
 * key: it is answered "inputs changed" and not built (files are never made
 * again here). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build_helper.h"
#include "zecache/artifact.h"
#include "zecache/build_request.h"
#include "zecache/key_files.h"
#include "zecache/printable.h"

#define MAX_DEVICES 64
#define MAX_PLATFORMS 16
#define NAME_SIZE 256

typedef struct cl_helper {
    cl_device_id devices[MAX_DEVICES];
    cl_context contexts[MAX_DEVICES]; /* made at the device's first build */
    char names[MAX_DEVICES][NAME_SIZE];
    cl_uint device_count;
    bool opened; /* at the first job (its build variables set) */
    int report_fd;
} cl_helper;

static bool open_devices(cl_helper *helper)
{
    cl_platform_id platforms[MAX_PLATFORMS];
    cl_uint platform_count = 0;
    if (clGetPlatformIDs(MAX_PLATFORMS, platforms, &platform_count) != CL_SUCCESS)
        return false;
    for (cl_uint p = 0; p < platform_count && p < MAX_PLATFORMS; p++) {
        cl_uint count = 0;
        cl_device_id *at = helper->devices + helper->device_count;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES - helper->device_count, at,
                           &count) != CL_SUCCESS)
            continue;
        if (count > MAX_DEVICES - helper->device_count)
            count = MAX_DEVICES - helper->device_count;
        for (cl_uint i = 0; i < count; i++) {
            char *name = helper->names[helper->device_count + i];
            if (clGetDeviceInfo(at[i], CL_DEVICE_NAME, NAME_SIZE, name, NULL) != CL_SUCCESS)
                name[0] = '\0';
            name[NAME_SIZE - 1] = '\0';
        }
        helper->device_count += count;
    }
    return helper->device_count > 0;
}

/* Whether a device's name is the one recorded, which entries keep to the
 * length of zc_artifact_meta's field (a longer name is its beginning). */
static bool recorded_name(const char *name, const char *recorded)
{
    size_t kept = sizeof((zc_artifact_meta *)NULL)->device_name - 1;
    return strlen(recorded) == kept ? strncmp(name, recorded, kept) == 0
                                    : strcmp(name, recorded) == 0;
}

/* The device the recipe was recorded for, by name (a machine may have
 * several drivers' devices: only the name tells which); a machine with one
 * device takes it whatever its name, as zecache-build does (an upgrade may
 * rename it). Its context is made when first needed; -1 when none fits. */
static int device_for(cl_helper *helper, const char *name)
{
    int found = -1;
    for (cl_uint i = 0; found < 0 && i < helper->device_count; i++)
        if (recorded_name(helper->names[i], name))
            found = (int)i;
    if (found < 0 && helper->device_count == 1)
        found = 0;
    cl_int status = CL_SUCCESS;
    if (found >= 0 && helper->contexts[found] == NULL)
        helper->contexts[found] =
            clCreateContext(NULL, 1, &helper->devices[found], NULL, NULL, &status);
    return found >= 0 && helper->contexts[found] != NULL ? found : -1;
}

/* Whether the header candidates are as recorded; else why not. */
static bool files_as_recorded(const zc_recipe_opencl *opencl, char *why, size_t why_size)
{
    zc_key_files *files = zc_key_files_create();
    bool added = files != NULL;
    for (uint32_t i = 0; added && i < opencl->file_count; i++) {
        const zc_recipe_file *file = &opencl->files[i];
        added = zc_key_files_add(files, file->path, (zc_key_file_state)file->state, file->size,
                                 file->sha256);
    }
    const char *changed = added ? zc_key_files_first_changed(files) : NULL;
    char path[700]; /* escaped, cut to one answer line (build_one) */
    if (!added) {
        snprintf(why, why_size, "out of memory");
    } else if (changed != NULL) {
        zc_printable(changed, path, sizeof path);
        snprintf(why, why_size, "inputs changed: %s is not as recorded", path);
    }
    zc_key_files_destroy(files);
    return added && changed == NULL;
}

/* The recorded working directory and build variables, as the key read them. */
static bool set_conditions(const zc_recipe_opencl *opencl, char *why, size_t why_size)
{
    if (opencl->working_dir[0] != '\0' && chdir(opencl->working_dir) != 0) {
        char path[700]; /* escaped, cut to one answer line (build_one) */
        zc_printable(opencl->working_dir, path, sizeof path);
        snprintf(why, why_size, "inputs changed: working directory %s: %s", path, strerror(errno));
        return false;
    }
    for (uint32_t i = 0; i < opencl->variable_count; i++) {
        const zc_recipe_variable *variable = &opencl->variables[i];
        if ((variable->value != NULL ? setenv(variable->name, variable->value, 1)
                                     : unsetenv(variable->name)) != 0) {
            snprintf(why, why_size, "cannot set %s", variable->name);
            return false;
        }
    }
    return true;
}

/* The specialization constants the application set, at the width the IL
 * declares each (as the layer keys them). */
static cl_int set_constants(cl_program program, const zc_recipe_input *input)
{
    cl_int status = CL_SUCCESS;
    for (uint32_t i = 0; input->has_constants && i < input->constant_count && status == CL_SUCCESS;
         i++) {
        const zc_recipe_constant *constant = &input->constants[i];
        status = clSetProgramSpecializationConstant(program, constant->id, constant->width,
                                                    constant->value);
    }
    return status;
}

/* The program as the application made it: its source or IL, then built
 * for the one device with its options (and constants), which the layer
 * keys. */
static cl_int build_program(cl_context context, cl_device_id device, const prewarm_job *job)
{
    const zc_recipe *recipe = &job->recipe;
    size_t size = (size_t)recipe->inputs[0].spirv_size;
    const char *bytes = (const char *)job->spirv[0];
    cl_int status = CL_SUCCESS;
    cl_program program = recipe->format == ZC_OPENCL_BUILD_SOURCE
                             ? clCreateProgramWithSource(context, 1, &bytes, &size, &status)
                             : clCreateProgramWithIL(context, bytes, size, &status);
    if (program == NULL)
        return status != CL_SUCCESS ? status : CL_OUT_OF_HOST_MEMORY;
    status = set_constants(program, &recipe->inputs[0]);
    if (status == CL_SUCCESS)
        status = clBuildProgram(program, 1, &device, recipe->inputs[0].flags, NULL, NULL);
    clReleaseProgram(program);
    return status;
}

static void build_one(void *context, const prewarm_job *job)
{
    cl_helper *helper = context;
    const zc_recipe *recipe = &job->recipe;
    char why[900]; /* an answer line is read in 1 KiB (prewarm_run.c) */
    if (recipe->opencl == NULL) {
        printf("%u failed - not an OpenCL recipe\n", job->id);
        return;
    }
    if (!files_as_recorded(recipe->opencl, why, sizeof why) ||
        !set_conditions(recipe->opencl, why, sizeof why)) {
        printf("%u failed - %s\n", job->id, why);
        return;
    }
    /* Opened once the first job's build variables are set: PoCL 3.1 reads
     * them when it starts, and keys its compiler with them. prewarm gives a
     * helper only programs recorded with one set of them. */
    if (!helper->opened) {
        (void)open_devices(helper); /* none: each job says so */
        helper->opened = true;
    }
    int device = device_for(helper, recipe->device_name);
    if (device < 0) {
        zc_printable(recipe->device_name, why, sizeof why);
        printf("%u failed - no OpenCL device named \"%s\" here\n", job->id, why);
        return;
    }
    cl_int status = build_program(helper->contexts[device], helper->devices[device], job);
    build_helper_answer(helper->report_fd, job->id, status == CL_SUCCESS, (long)status,
                        helper->names[device]);
}

int main(void)
{
    static cl_helper helper;
    /* Before the first OpenCL call, where the loader loads the layer. */
    if (!build_helper_start(&helper.report_fd)) {
        fprintf(stderr, "zecache-build-cl: cannot make the layer's report pipe\n");
        return 1;
    }
    int status = build_helper_serve(build_one, &helper);
    for (cl_uint i = 0; i < helper.device_count; i++)
        if (helper.contexts[i] != NULL)
            clReleaseContext(helper.contexts[i]);
    return status;
}
