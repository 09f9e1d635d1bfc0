/* Recording a request's inputs after a miss (NEO_CACHE_RECORD_INPUTS): the
 * request the key was made from, in a recipe (zecache/recipe.h), so that
 * `zecache prewarm` can build it again under another compiler. Runs after
 * the driver's compile succeeded and the entry was stored; whatever fails
 * here is logged and changes nothing for the application. Prewarm rebuilds
 * Level Zero modules from SPIR-V, and OpenCL programs from their source or
 * IL (with frontend_record_opencl.c's part); the input's bytes are kept as
 * SPIR-V blobs are, once per content. */
#include <stdlib.h>
#include <string.h>

#include "frontend_internal.h"
#include "zecache/key_files.h"
#include "zecache/log.h"
#include "zecache/recipe.h"
#include "zecache/spirv.h"

/* The constants at the width the SPIR-V declares each (as the key reads
 * them); false when one is not declared (the key would have refused it). */
static bool copy_constants(const zc_build_input *from, zc_recipe_input *input)
{
    const zc_spec_constants *constants = &from->constants;
    input->has_constants = from->has_constants;
    if (!from->has_constants || constants->count == 0)
        return true;
    zc_spirv_spec_constants declared;
    char reason[128];
    if (zc_spirv_scan_spec_constants(from->bytes, from->size, &declared, reason, sizeof reason) !=
        ZC_OK)
        return false;
    input->constants = calloc(constants->count, sizeof *input->constants);
    bool ok = input->constants != NULL;
    for (uint32_t i = 0; ok && i < constants->count; i++) {
        zc_recipe_constant *constant = &input->constants[i];
        constant->id = constants->ids[i];
        constant->width = zc_spirv_spec_constant_width(&declared, constant->id);
        ok = constant->width > 0 && constant->width <= sizeof constant->value;
        if (ok)
            memcpy(constant->value, constants->values[i], constant->width);
    }
    input->constant_count = ok ? constants->count : 0;
    zc_spirv_spec_constants_free(&declared);
    return ok;
}

static bool copy_input(const zc_build_input *from, zc_recipe_input *input)
{
    input->spirv_size = from->size;
    if (from->flags != NULL && (input->flags = strdup(from->flags)) == NULL)
        return false;
    return copy_constants(from, input);
}

/* The kind of input each API's recipe rebuilds from. */
static zc_input_kind recorded_kind(const zc_build_request *request)
{
    return request->api == ZC_API_OPENCL && request->format == ZC_OPENCL_BUILD_SOURCE
               ? ZC_INPUT_OPENCL_C
               : ZC_INPUT_SPIRV;
}

static bool describe(const zc_build_request *request, zc_recipe *recipe, const void **spirv)
{
    recipe->format = request->format;
    recipe->program = request->program;
    recipe->input_count = request->input_count;
    if (recipe->input_count == 0 || recipe->input_count > ZC_RECIPE_MAX_INPUTS)
        return false;
    recipe->inputs = calloc(recipe->input_count, sizeof *recipe->inputs);
    bool ok = recipe->inputs != NULL;
    for (uint32_t i = 0; ok && i < request->input_count; i++) {
        spirv[i] = request->inputs[i].bytes;
        ok = spirv[i] != NULL && request->inputs[i].kind == recorded_kind(request) &&
             copy_input(&request->inputs[i], &recipe->inputs[i]);
    }
    return ok;
}

void zc_frontend_record(zc_cache *cache, const zc_build_request *request,
                        const zc_device_description *device, const zc_key_files *files,
                        const zc_key *key, uint64_t compile_ns)
{
    if (request->api == ZC_API_OPENCL && request->format != ZC_OPENCL_BUILD_SOURCE &&
        request->format != ZC_OPENCL_BUILD_IL)
        return; /* compiles and links: not rebuilt from one program */
    uint64_t start = zc_artifact_clock_ns();
    zc_recipe recipe = {0};
    const void *spirv[ZC_RECIPE_MAX_INPUTS];
    recipe.device_name = strdup(device->meta.device_name);
    recipe.driver_version = strdup(device->meta.driver_version);
    zc_status status = ZC_ERR_NOMEM;
    if (recipe.device_name != NULL && recipe.driver_version != NULL &&
        describe(request, &recipe, spirv) &&
        (request->api != ZC_API_OPENCL ||
         zc_frontend_describe_opencl(request, device, files, &recipe)))
        status = zc_cache_record_inputs(cache, key, &recipe, spirv);
    zc_recipe_free(&recipe);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    if (status != ZC_OK && status != ZC_EXISTS)
        zc_log_info("inputs of %s not recorded: %s", hex, zc_status_name(status));
    else if (status == ZC_OK)
        zc_log_info("inputs of %s recorded in %.3f ms after a %.3f ms compile", hex,
                    (double)(zc_artifact_clock_ns() - start) / 1e6, (double)compile_ns / 1e6);
}
