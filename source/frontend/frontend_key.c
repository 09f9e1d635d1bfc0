/* The key of a request for a device: the compiler, the driver, the hardware
 * and the environment, then the request's inputs (key_request.h), in a
 * fixed order. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/frontend_device.h"
#include "zecache/key_files.h"
#include "zecache/key_request.h"

static zc_status add_compiler(zc_key_builder *builder, const zc_compiler_identity *compiler)
{
    if (compiler != NULL)
        return zc_key_add_compiler_identity(builder, compiler);
    /* A driver compiling with its own compiler (not IGC): its libraries and
     * hardware parts name it; this part keeps such keys apart from IGC's. */
    return zc_key_add_hardware(builder, "compiler: the driver's own (not IGC)", NULL, 0);
}

static zc_status add_driver(zc_key_builder *builder, const zc_device_description *device)
{
    if (device->library_count == 0 || device->libraries == NULL)
        return ZC_ERR_INVALID_ARG;
    zc_status status = ZC_OK;
    for (size_t i = 0; i < device->library_count && status == ZC_OK; i++)
        status = zc_key_add_driver(builder, &device->libraries[i], device->driver_version,
                                   device->driver_uuid);
    return status;
}

static zc_status add_hardware(zc_key_builder *builder, const zc_device_description *device)
{
    zc_status status = ZC_OK;
    for (size_t i = 0; i < device->hardware_count && status == ZC_OK; i++)
        status = zc_key_add_hardware(builder, device->hardware[i].name, device->hardware[i].bytes,
                                     device->hardware[i].size);
    return status;
}

/* The parts every key of this device shares, in the order they are keyed. */
static zc_status add_common_parts(zc_key_builder *builder, const zc_device_description *device,
                                  const zc_compiler_identity *compiler)
{
    zc_status status = add_compiler(builder, compiler);
    if (status == ZC_OK)
        status = add_driver(builder, device);
    if (status == ZC_OK)
        status = add_hardware(builder, device);
    if (status == ZC_OK)
        status = zc_key_add_environment(builder);
    return status;
}

/* Builders holding a device's common parts, made at its first key and kept
 * for the process (device identities and compiler identities live as long):
 * a key then hashes only its inputs. A corrected compiler prediction or
 * tracing gets a prefix of its own. The lock also serialises copies, which
 * flush a traced prefix's trace. Kept prefixes are never removed, so a
 * pointer found under the lock stays valid. */
#define MAX_PREFIXES 16

typedef struct key_prefix {
    const void *device;
    const zc_compiler_identity *compiler;
    bool traced;
    zc_key_builder *builder;
} key_prefix;

static struct {
    pthread_mutex_t lock;
    key_prefix kept[MAX_PREFIXES];
    size_t count;
} prefixes = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const key_prefix *find_prefix(const void *device, const zc_compiler_identity *compiler,
                                     bool want_trace)
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
static zc_status copy_kept(const void *device, const zc_compiler_identity *compiler,
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
static void keep_prefix(const void *device, const zc_compiler_identity *compiler, bool want_trace,
                        zc_key_builder *prefix, zc_key_builder **left)
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
static zc_status start_key(const zc_device_description *device,
                           const zc_compiler_identity *compiler, bool want_trace,
                           zc_key_builder **out)
{
    pthread_once(&fork_handlers_once, register_fork_handlers);
    *out = NULL;
    zc_status status = copy_kept(device->identity, compiler, want_trace, out);
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
    keep_prefix(device->identity, compiler, want_trace, prefix, out);
    if (*out != NULL)
        return ZC_OK;
    status = copy_kept(device->identity, compiler, want_trace, out);
    return status == ZC_OK && *out == NULL ? ZC_ERR_NOMEM : status;
}

zc_status zc_frontend_key(const zc_build_request *request, const zc_device_description *device,
                          const zc_compiler_identity *compiler, bool want_trace, zc_key *key,
                          char **trace, char *reason, size_t reason_size)
{
    return zc_frontend_key_files(request, device, compiler, want_trace, key, trace, reason,
                                 reason_size, NULL);
}

zc_status zc_frontend_key_files(const zc_build_request *request,
                                const zc_device_description *device,
                                const zc_compiler_identity *compiler, bool want_trace, zc_key *key,
                                char **trace, char *reason, size_t reason_size,
                                zc_key_files **files)
{
    zc_key_builder *builder = NULL;
    *trace = NULL;
    snprintf(reason, reason_size, "%s", "");
    zc_status status = start_key(device, compiler, want_trace, &builder);
    if (builder == NULL)
        return status != ZC_OK ? status : ZC_ERR_NOMEM;
    if (status == ZC_OK)
        status = zc_key_add_build_variables(builder, device->build_variables,
                                            device->build_variable_count);
    if (status == ZC_OK)
        status = zc_key_add_request(builder, request, device->opencl_c_driver);
    if (status == ZC_OK)
        status = zc_key_finish(builder, key);
    /* The entry's name tells the APIs apart (.l0_cache, .cl_cache). */
    if (status == ZC_OK && request->api == ZC_API_OPENCL)
        key->kind = ZC_ENTRY_OPENCL;
    if (status == ZC_NOT_CACHEABLE) {
        const char *why = zc_key_builder_reason(builder);
        snprintf(reason, reason_size, "%s", why != NULL ? why : "an input is missing");
    }
    if (status == ZC_OK && want_trace && zc_key_builder_trace(builder) != NULL)
        *trace = strdup(zc_key_builder_trace(builder));
    if (status == ZC_OK && files != NULL)
        *files = zc_key_builder_take_files(builder);
    zc_key_builder_destroy(builder);
    return status;
}
