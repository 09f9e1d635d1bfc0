/* zecache-build: the build helper of `zecache prewarm`. It runs with the
 * layer enabled (as `zecache exec` runs a program), reads jobs from its
 * standard input (prewarm_job.h) and creates each module through the real
 * loader and driver, so the layer keys, looks up, compiles and stores it
 * exactly as for the application. The layer tells what each create did on
 * a pipe named by ZECACHE_REPORT_FD (build_helper.c). */
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_helper.h"

#define MAX_DEVICES 64

typedef struct build_context {
    ze_driver_handle_t drivers[MAX_DEVICES];
    ze_device_handle_t devices[MAX_DEVICES];
    ze_context_handle_t contexts[MAX_DEVICES];
    char names[MAX_DEVICES][ZE_MAX_DEVICE_NAME];
    uint32_t device_count;
    int report_fd; /* read end of the layer's report pipe */
} build_context;

static bool add_devices(build_context *build, ze_driver_handle_t driver)
{
    uint32_t count = 0;
    if (zeDeviceGet(driver, &count, NULL) != ZE_RESULT_SUCCESS)
        return false;
    ze_device_handle_t devices[MAX_DEVICES];
    if (count > MAX_DEVICES - build->device_count)
        count = MAX_DEVICES - build->device_count;
    if (zeDeviceGet(driver, &count, devices) != ZE_RESULT_SUCCESS)
        return false;
    ze_context_desc_t context_desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_context_handle_t context = NULL;
    if (zeContextCreate(driver, &context_desc, &context) != ZE_RESULT_SUCCESS)
        return false;
    for (uint32_t i = 0; i < count; i++) {
        ze_device_properties_t properties = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
        if (zeDeviceGetProperties(devices[i], &properties) != ZE_RESULT_SUCCESS)
            continue;
        uint32_t at = build->device_count++;
        build->drivers[at] = driver;
        build->devices[at] = devices[i];
        build->contexts[at] = context;
        snprintf(build->names[at], sizeof build->names[at], "%s", properties.name);
    }
    return true;
}

static bool open_devices(build_context *build)
{
    if (zeInit(ZE_INIT_FLAG_GPU_ONLY) != ZE_RESULT_SUCCESS)
        return false;
    uint32_t count = 0;
    ze_driver_handle_t drivers[8];
    if (zeDriverGet(&count, NULL) != ZE_RESULT_SUCCESS || count == 0)
        return false;
    if (count > 8)
        count = 8;
    if (zeDriverGet(&count, drivers) != ZE_RESULT_SUCCESS)
        return false;
    for (uint32_t i = 0; i < count; i++)
        add_devices(build, drivers[i]);
    return build->device_count > 0;
}

/* The device the recipe was recorded for, by name; a machine with one
 * device takes it whatever its name (a driver upgrade may rename it). */
static int device_for(const build_context *build, const char *name)
{
    for (uint32_t i = 0; i < build->device_count; i++)
        if (strcmp(build->names[i], name) == 0)
            return (int)i;
    return build->device_count == 1 ? 0 : -1;
}

typedef struct module_inputs {
    ze_module_constants_t constants[ZC_RECIPE_MAX_INPUTS];
    const ze_module_constants_t *constant_pointers[ZC_RECIPE_MAX_INPUTS];
    uint32_t *ids[ZC_RECIPE_MAX_INPUTS];
    const void **values[ZC_RECIPE_MAX_INPUTS];
    const char *flags[ZC_RECIPE_MAX_INPUTS];
    size_t sizes[ZC_RECIPE_MAX_INPUTS];
    const uint8_t *modules[ZC_RECIPE_MAX_INPUTS];
} module_inputs;

static bool set_constants(const zc_recipe_input *input, module_inputs *inputs, uint32_t i)
{
    inputs->constant_pointers[i] = NULL;
    if (!input->has_constants)
        return true;
    uint32_t count = input->constant_count;
    inputs->ids[i] = calloc(count + 1, sizeof(uint32_t));
    inputs->values[i] = calloc(count + 1, sizeof(void *));
    if (inputs->ids[i] == NULL || inputs->values[i] == NULL)
        return false;
    for (uint32_t c = 0; c < count; c++) {
        inputs->ids[i][c] = input->constants[c].id;
        inputs->values[i][c] = input->constants[c].value;
    }
    inputs->constants[i] = (ze_module_constants_t){count, inputs->ids[i], inputs->values[i]};
    inputs->constant_pointers[i] = &inputs->constants[i];
    return true;
}

static void free_inputs(module_inputs *inputs, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        free(inputs->ids[i]);
        free(inputs->values[i]);
    }
}

/* The description exactly as the application gave it: the layer keys it. */
static ze_result_t create(const build_context *build, int device, const prewarm_job *job,
                          module_inputs *inputs)
{
    const zc_recipe *recipe = &job->recipe;
    for (uint32_t i = 0; i < recipe->input_count; i++) {
        if (!set_constants(&recipe->inputs[i], inputs, i))
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        inputs->flags[i] = recipe->inputs[i].flags;
        inputs->sizes[i] = (size_t)recipe->inputs[i].spirv_size;
        inputs->modules[i] = job->spirv[i];
    }
    ze_module_program_exp_desc_t program = {.stype = ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC,
                                            .count = recipe->input_count,
                                            .inputSizes = inputs->sizes,
                                            .pInputModules = inputs->modules,
                                            .pBuildFlags = inputs->flags,
                                            .pConstants = inputs->constant_pointers};
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = (ze_module_format_t)recipe->format};
    if (recipe->program) {
        desc.pNext = &program;
    } else {
        desc.inputSize = inputs->sizes[0];
        desc.pInputModule = inputs->modules[0];
        desc.pBuildFlags = inputs->flags[0];
        desc.pConstants = inputs->constant_pointers[0];
    }
    ze_module_handle_t module = NULL;
    ze_module_build_log_handle_t log = NULL;
    ze_result_t result =
        zeModuleCreate(build->contexts[device], build->devices[device], &desc, &module, &log);
    if (module != NULL)
        zeModuleDestroy(module);
    if (log != NULL)
        zeModuleBuildLogDestroy(log);
    return result;
}

static void build_one(void *context, const prewarm_job *job)
{
    const build_context *build = context;
    int device = device_for(build, job->recipe.device_name);
    if (device < 0) {
        printf("%u failed - no device named \"%s\" here\n", job->id, job->recipe.device_name);
        return;
    }
    module_inputs inputs;
    memset(&inputs, 0, sizeof inputs);
    ze_result_t result = create(build, device, job, &inputs);
    free_inputs(&inputs, job->recipe.input_count);
    build_helper_answer(build->report_fd, job->id, result == ZE_RESULT_SUCCESS, (long)result,
                        build->names[device]);
}

int main(void)
{
    static build_context build;
    /* Before zeInit, where the layer starts. */
    if (!build_helper_start(&build.report_fd) || !open_devices(&build)) {
        fprintf(stderr, "zecache-build: no Level Zero device could be opened\n");
        return 1;
    }
    return build_helper_serve(build_one, &build);
}
