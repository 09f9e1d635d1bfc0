/* The key of a module description: every input with its flags and constants,
 * then the compiler, the driver and the hardware, in a fixed order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"

const ze_module_program_exp_desc_t *zcl_module_program_of(const ze_module_desc_t *desc,
                                                          bool *supported)
{
    *supported = true;
    if (desc->pNext == NULL)
        return NULL;
    const ze_module_program_exp_desc_t *program = desc->pNext;
    /* Anything else in the chain could change the build in ways the key
     * does not see. */
    if (program->stype != ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC || program->pNext != NULL) {
        *supported = false;
        return NULL;
    }
    return program;
}

static zc_status add_input(zc_key_builder *builder, const void *spirv, size_t size,
                           const char *flags, const ze_module_constants_t *constants)
{
    if (spirv == NULL || size == 0)
        return ZC_NOT_CACHEABLE;
    zc_spec_constants spec = {0};
    if (constants != NULL)
        spec = (zc_spec_constants){.count = constants->numConstants,
                                   .ids = constants->pConstantIds,
                                   .values = (const void *const *)constants->pConstantValues};
    return zc_key_add_spirv(builder, spirv, size, flags, constants != NULL ? &spec : NULL);
}

static zc_status add_inputs(zc_key_builder *builder, const ze_module_desc_t *desc)
{
    bool supported;
    const ze_module_program_exp_desc_t *program = zcl_module_program_of(desc, &supported);
    if (program == NULL)
        return add_input(builder, desc->pInputModule, desc->inputSize, desc->pBuildFlags,
                         desc->pConstants);
    if (program->count == 0 || program->inputSizes == NULL || program->pInputModules == NULL)
        return ZC_NOT_CACHEABLE;
    /* The driver links the inputs of a program: keep it apart from a plain
     * module with the same single input. */
    zc_status status = zc_key_add_hardware(builder, "module program extension: input count",
                                           &program->count, sizeof(program->count));
    for (uint32_t i = 0; i < program->count && status == ZC_OK; i++)
        status = add_input(builder, program->pInputModules[i], program->inputSizes[i],
                           program->pBuildFlags != NULL ? program->pBuildFlags[i] : NULL,
                           program->pConstants != NULL ? program->pConstants[i] : NULL);
    return status;
}

static zc_status add_driver(zc_key_builder *builder, const zcl_device_info *device)
{
    const zcl_driver_libraries *libraries = zcl_driver_libraries_get();
    if (libraries == NULL)
        return ZC_ERR_INVALID_ARG;
    zc_status status = ZC_OK;
    for (size_t i = 0; i < libraries->count && status == ZC_OK; i++)
        status = zc_key_add_driver(builder, &libraries->identities[i], device->driver_version,
                                   device->driver_uuid);
    return status;
}

static zc_status add_hardware(zc_key_builder *builder, const zcl_device_info *device)
{
    zc_status status = zc_key_add_hardware(builder, "device properties", device->properties,
                                           device->properties_size);
    if (status == ZC_OK)
        status = zc_key_add_hardware(builder, "device module properties", device->module_properties,
                                     device->module_properties_size);
    if (status == ZC_OK && device->has_ip_version)
        status = zc_key_add_hardware(builder, "device IP version", &device->ip_version,
                                     sizeof(device->ip_version));
    return status;
}

static zc_status add_parts(zc_key_builder *builder, const ze_module_desc_t *desc,
                           const zcl_device_info *device, const zc_compiler_identity *compiler)
{
    zc_status status = add_inputs(builder, desc);
    if (status == ZC_OK)
        status = zc_key_add_compiler_identity(builder, compiler);
    if (status == ZC_OK)
        status = add_driver(builder, device);
    if (status == ZC_OK)
        status = add_hardware(builder, device);
    if (status == ZC_OK)
        status = zc_key_add_environment(builder);
    return status;
}

zc_status zcl_module_key(const ze_module_desc_t *desc, const zcl_device_info *device,
                         const zc_compiler_identity *compiler, bool want_trace, zc_key *key,
                         char **trace, char *reason, size_t reason_size)
{
    zc_key_builder *builder = NULL;
    *trace = NULL;
    snprintf(reason, reason_size, "%s", "");
    zc_status status = zc_key_builder_create(want_trace, &builder);
    if (status != ZC_OK)
        return status;
    status = add_parts(builder, desc, device, compiler);
    if (status == ZC_OK)
        status = zc_key_finish(builder, key);
    if (status == ZC_NOT_CACHEABLE) {
        const char *why = zc_key_builder_reason(builder);
        snprintf(reason, reason_size, "%s", why != NULL ? why : "an input is missing");
    }
    if (status == ZC_OK && want_trace && zc_key_builder_trace(builder) != NULL)
        *trace = strdup(zc_key_builder_trace(builder));
    zc_key_builder_destroy(builder);
    return status;
}
