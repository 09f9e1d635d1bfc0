/* The key of a module description: the compiler, the driver, the hardware
 * and the environment, then every input with its flags and constants, in a
 * fixed order. */
#include <pthread.h>
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

/* The parts every key of this device shares, in the order they are keyed. */
static zc_status add_common_parts(zc_key_builder *builder, const zcl_device_info *device,
                                  const zc_compiler_identity *compiler)
{
    zc_status status = zc_key_add_compiler_identity(builder, compiler);
    if (status == ZC_OK)
        status = add_driver(builder, device);
    if (status == ZC_OK)
        status = add_hardware(builder, device);
    if (status == ZC_OK)
        status = zc_key_add_environment(builder);
    return status;
}

/* Builders holding a device's common parts, made at its first key and kept
 * for the process (devices and compiler identities are never freed): a key
 * then hashes only its inputs. A corrected compiler prediction or tracing
 * gets a prefix of its own. The lock also serialises copies, which flush a
 * traced prefix's trace. Kept prefixes are never removed, so a pointer found
 * under the lock stays valid. */
#define MAX_PREFIXES 16

typedef struct key_prefix {
    const zcl_device_info *device;
    const zc_compiler_identity *compiler;
    bool traced;
    zc_key_builder *builder;
} key_prefix;

static struct {
    pthread_mutex_t lock;
    key_prefix kept[MAX_PREFIXES];
    size_t count;
} prefixes = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const key_prefix *find_prefix(const zcl_device_info *device,
                                     const zc_compiler_identity *compiler, bool want_trace)
{
    for (size_t i = 0; i < prefixes.count; i++) {
        const key_prefix *prefix = &prefixes.kept[i];
        if (prefix->device == device && prefix->compiler == compiler &&
            prefix->traced == want_trace)
            return prefix;
    }
    return NULL;
}

static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void lock_prefixes(void)
{
    pthread_mutex_lock(&prefixes.lock);
}

static void unlock_prefixes(void)
{
    pthread_mutex_unlock(&prefixes.lock);
}

static void register_fork_handlers(void)
{
    (void)pthread_atfork(lock_prefixes, unlock_prefixes, unlock_prefixes);
}

/* A copy of the kept prefix for these parts; NULL (status ZC_OK) when none
 * is kept. */
static zc_status copy_kept(const zcl_device_info *device, const zc_compiler_identity *compiler,
                           bool want_trace, zc_key_builder **out)
{
    pthread_mutex_lock(&prefixes.lock);
    const key_prefix *kept = find_prefix(device, compiler, want_trace);
    zc_status status = kept != NULL ? zc_key_builder_copy(kept->builder, out) : ZC_OK;
    pthread_mutex_unlock(&prefixes.lock);
    return status;
}

/* Keeps prefix unless another thread kept one for the same parts meanwhile
 * (then prefix is destroyed) or there is no room (then *left is prefix). */
static void keep_prefix(const zcl_device_info *device, const zc_compiler_identity *compiler,
                        bool want_trace, zc_key_builder *prefix, zc_key_builder **left)
{
    *left = NULL;
    pthread_mutex_lock(&prefixes.lock);
    if (find_prefix(device, compiler, want_trace) != NULL)
        zc_key_builder_destroy(prefix);
    else if (prefixes.count < MAX_PREFIXES)
        prefixes.kept[prefixes.count++] = (key_prefix){device, compiler, want_trace, prefix};
    else
        *left = prefix;
    pthread_mutex_unlock(&prefixes.lock);
}

/* A builder holding the common parts, ready for the inputs; when they cannot
 * be keyed, a builder holding the refusal (or NULL), with the status. A new
 * prefix is made outside the lock: it reads files (identities, settings),
 * and a fork waits for the lock. */
static zc_status start_key(const zcl_device_info *device, const zc_compiler_identity *compiler,
                           bool want_trace, zc_key_builder **out)
{
    pthread_once(&fork_handlers_once, register_fork_handlers);
    *out = NULL;
    zc_status status = copy_kept(device, compiler, want_trace, out);
    if (*out != NULL || status != ZC_OK)
        return status;
    zc_key_builder *prefix = NULL;
    status = zc_key_builder_create(want_trace, &prefix);
    if (status == ZC_OK)
        status = add_common_parts(prefix, device, compiler);
    if (status != ZC_OK) {
        *out = prefix; /* refused (or NULL): used once, never kept */
        return status;
    }
    keep_prefix(device, compiler, want_trace, prefix, out);
    if (*out != NULL)
        return ZC_OK;
    status = copy_kept(device, compiler, want_trace, out);
    return status == ZC_OK && *out == NULL ? ZC_ERR_NOMEM : status;
}

zc_status zcl_module_key(const ze_module_desc_t *desc, const zcl_device_info *device,
                         const zc_compiler_identity *compiler, bool want_trace, zc_key *key,
                         char **trace, char *reason, size_t reason_size)
{
    zc_key_builder *builder = NULL;
    *trace = NULL;
    snprintf(reason, reason_size, "%s", "");
    zc_status status = start_key(device, compiler, want_trace, &builder);
    if (builder == NULL)
        return status != ZC_OK ? status : ZC_ERR_NOMEM;
    if (status == ZC_OK)
        status = add_inputs(builder, desc);
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
