/* ze_probe's --describe: everything an application can ask of a module,
 * printed as text without addresses, so that a module created by the driver
 * from SPIR-V and one the layer made from a cached native binary can be
 * compared line by line. */
#ifndef ZE_PROBE_DESCRIBE_H
#define ZE_PROBE_DESCRIBE_H

#include <level_zero/ze_api.h>
#include <stdbool.h>
#include <stdio.h>

#define DESCRIBE_MAX_NAMES 12

typedef struct describe_lookups {
    const char *functions[DESCRIBE_MAX_NAMES]; /* zeModuleGetFunctionPointer */
    int function_count;
    const char *globals[DESCRIBE_MAX_NAMES]; /* zeModuleGetGlobalPointer */
    int global_count;
    /* Arguments given every image format, every sampler, or image handles
     * as plain values (a kernel argument that is not an image). */
    struct {
        char kernel[64];
        unsigned index;
        char kind; /* 'i' image, 's' sampler, 'v' value */
    } arguments[DESCRIBE_MAX_NAMES];
    int argument_count;
    ze_context_handle_t context;
    ze_device_handle_t device;
    /* Set: a second module, linked with the described one by
     * zeModuleDynamicLink before its kernels are described. */
    bool has_partner;
    ze_module_handle_t partner; /* NULL when its creation failed */
    ze_result_t partner_result;
} describe_lookups;

/* Prints the creation's result and build log; for a created module also its
 * properties, kernels (properties, attributes, suggested group size, profile
 * information, image arguments when asked; after a dynamic link with the
 * partner module when there is one), the symbol lookups asked for, linkage inspection, debug
 * information and native binary (size and FNV-1a hash). */
void describe_module(FILE *out, ze_result_t created, ze_module_handle_t module,
                     ze_module_build_log_handle_t build_log, const describe_lookups *lookups);

#endif
