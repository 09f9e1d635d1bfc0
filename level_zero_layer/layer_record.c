/* Recording a module's inputs after a miss (NEO_CACHE_RECORD_INPUTS): the
 * description the key was made from, in a recipe (zecache/recipe.h), so that
 * `zecache prewarm` can build it again under another compiler. Runs after
 * the driver's compile succeeded and the entry was stored; whatever fails
 * here is logged and changes nothing for the application. */
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"
#include "zecache/log.h"
#include "zecache/recipe.h"
#include "zecache/spirv.h"

/* The constants at the width the SPIR-V declares each (as the key reads
 * them); false when one is not declared (the key would have refused it). */
static bool copy_constants(const void *spirv, size_t size, const ze_module_constants_t *constants,
                           zc_recipe_input *input)
{
    input->has_constants = constants != NULL;
    if (constants == NULL || constants->numConstants == 0)
        return true;
    zc_spirv_spec_constants declared;
    char reason[128];
    if (zc_spirv_scan_spec_constants(spirv, size, &declared, reason, sizeof reason) != ZC_OK)
        return false;
    input->constants = calloc(constants->numConstants, sizeof *input->constants);
    bool ok = input->constants != NULL;
    for (uint32_t i = 0; ok && i < constants->numConstants; i++) {
        zc_recipe_constant *constant = &input->constants[i];
        constant->id = constants->pConstantIds[i];
        constant->width = zc_spirv_spec_constant_width(&declared, constant->id);
        ok = constant->width > 0 && constant->width <= sizeof constant->value;
        if (ok)
            memcpy(constant->value, constants->pConstantValues[i], constant->width);
    }
    input->constant_count = ok ? constants->numConstants : 0;
    zc_spirv_spec_constants_free(&declared);
    return ok;
}

static bool copy_input(const void *spirv, size_t size, const char *flags,
                       const ze_module_constants_t *constants, zc_recipe_input *input)
{
    input->spirv_size = size;
    if (flags != NULL && (input->flags = strdup(flags)) == NULL)
        return false;
    return copy_constants(spirv, size, constants, input);
}

static bool describe(const ze_module_desc_t *desc, zc_recipe *recipe, const void **spirv)
{
    bool supported;
    const ze_module_program_exp_desc_t *program = zcl_module_program_of(desc, &supported);
    recipe->format = (uint32_t)desc->format;
    recipe->program = program != NULL;
    recipe->input_count = program != NULL ? program->count : 1;
    if (recipe->input_count > ZC_RECIPE_MAX_INPUTS)
        return false;
    recipe->inputs = calloc(recipe->input_count, sizeof *recipe->inputs);
    if (recipe->inputs == NULL)
        return false;
    if (program == NULL) {
        spirv[0] = desc->pInputModule;
        return copy_input(desc->pInputModule, desc->inputSize, desc->pBuildFlags, desc->pConstants,
                          &recipe->inputs[0]);
    }
    bool ok = true;
    for (uint32_t i = 0; ok && i < program->count; i++) {
        spirv[i] = program->pInputModules[i];
        ok = copy_input(program->pInputModules[i], program->inputSizes[i],
                        program->pBuildFlags != NULL ? program->pBuildFlags[i] : NULL,
                        program->pConstants != NULL ? program->pConstants[i] : NULL,
                        &recipe->inputs[i]);
    }
    return ok;
}

void zcl_record_inputs(const ze_module_desc_t *desc, const zcl_device_info *device,
                       const zc_key *key, uint64_t compile_ns)
{
    uint64_t start = zc_artifact_clock_ns();
    zc_recipe recipe = {0};
    const void *spirv[ZC_RECIPE_MAX_INPUTS];
    recipe.device_name = strdup(device->meta.device_name);
    recipe.driver_version = strdup(device->meta.driver_version);
    zc_status status = ZC_ERR_NOMEM;
    if (recipe.device_name != NULL && recipe.driver_version != NULL &&
        describe(desc, &recipe, spirv))
        status = zc_cache_record_inputs(zcl_layer.cache, key, &recipe, spirv);
    zc_recipe_free(&recipe);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    if (status != ZC_OK && status != ZC_EXISTS)
        zc_log_info("inputs of %s not recorded: %s", hex, zc_status_name(status));
    else if (status == ZC_OK)
        zc_log_info("inputs of %s recorded in %.3f ms after a %.3f ms compile", hex,
                    (double)(zc_artifact_clock_ns() - start) / 1e6, (double)compile_ns / 1e6);
}
