/* The one translation of a module description into a build request
 * (zecache/build_request.h): the key, the parity checks, recording and the
 * log lines all read the request, never the description's program
 * extension again. */
#include <stdio.h>
#include <stdlib.h>

#include "layer_internal.h"

/* The program extension of desc, or NULL when desc has no pNext. Sets
 * *supported to false when the pNext chain holds anything else: it could
 * change the build in ways the key does not see. */
static const ze_module_program_exp_desc_t *program_of(const ze_module_desc_t *desc, bool *supported)
{
    *supported = true;
    if (desc->pNext == NULL)
        return NULL;
    const ze_module_program_exp_desc_t *program = desc->pNext;
    if (program->stype != ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC || program->pNext != NULL) {
        *supported = false;
        return NULL;
    }
    return program;
}

static zc_build_input input_of(const void *spirv, size_t size, const char *flags,
                               const ze_module_constants_t *constants)
{
    zc_build_input input = {.kind = ZC_INPUT_SPIRV,
                            .bytes = spirv,
                            .size = size,
                            .flags = flags,
                            .has_constants = constants != NULL};
    if (constants != NULL)
        input.constants =
            (zc_spec_constants){.count = constants->numConstants,
                                .ids = constants->pConstantIds,
                                .values = (const void *const *)constants->pConstantValues};
    return input;
}

/* A program's inputs; none when its arrays are missing (the key refuses
 * such a request). False when memory runs out. */
static bool program_inputs(const ze_module_program_exp_desc_t *program, zcl_request *out)
{
    if (program->count == 0 || program->inputSizes == NULL || program->pInputModules == NULL)
        return true;
    zc_build_input *inputs = calloc(program->count, sizeof *inputs);
    if (inputs == NULL)
        return false;
    for (uint32_t i = 0; i < program->count; i++)
        inputs[i] = input_of(program->pInputModules[i], program->inputSizes[i],
                             program->pBuildFlags != NULL ? program->pBuildFlags[i] : NULL,
                             program->pConstants != NULL ? program->pConstants[i] : NULL);
    out->inputs = inputs;
    out->request.inputs = inputs;
    out->request.input_count = program->count;
    return true;
}

bool zcl_request_of(const ze_module_desc_t *desc, zcl_request *out, zc_bypass_reason *reason,
                    char *detail, size_t detail_size)
{
    bool supported;
    *out = (zcl_request){.request = {.api = ZC_API_LEVEL_ZERO, .format = (uint32_t)desc->format}};
    *reason = ZC_BYPASS_UNSUPPORTED_INPUT;
    if (desc->format == ZE_MODULE_FORMAT_NATIVE) {
        *reason = ZC_BYPASS_NATIVE_INPUT;
        snprintf(detail, detail_size, "ZE_MODULE_FORMAT_NATIVE");
        return false;
    }
    if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV) {
        snprintf(detail, detail_size, "unknown module format %u", (unsigned)desc->format);
        return false;
    }
    const ze_module_program_exp_desc_t *program = program_of(desc, &supported);
    if (!supported) {
        snprintf(detail, detail_size, "unknown pNext structure 0x%x",
                 (unsigned)((const ze_base_desc_t *)desc->pNext)->stype);
        return false;
    }
    if (program == NULL) {
        out->single =
            input_of(desc->pInputModule, desc->inputSize, desc->pBuildFlags, desc->pConstants);
        out->request.inputs = &out->single;
        out->request.input_count = 1;
        return true;
    }
    out->request.program = true;
    out->request.program_flags = desc->pBuildFlags;
    *reason = ZC_BYPASS_CACHE_ERROR;
    snprintf(detail, detail_size, "out of memory describing the program's inputs");
    return program_inputs(program, out);
}

void zcl_request_free(zcl_request *request)
{
    free(request->inputs);
    request->inputs = NULL;
}
