/* The key of an OpenCL build for one device: the compiler, the driver
 * library, the device as clGetDeviceInfo describes it and the environment
 * the driver and the compiler read, then the program's input with its
 * options. A device is described once, at its first build. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/compiler_identity.h"
#include "zecache/identity.h"

#define MAX_DEVICES 32
#define HARDWARE_MAX 16384

typedef struct zcc_device {
    cl_device_id device;
    bool intel;
    zc_library_identity driver;
    const zc_compiler_identity *compiler; /* NULL: not identified */
    uint8_t hardware[HARDWARE_MAX];
    size_t hardware_size;
    zc_artifact_meta meta;
} zcc_device;

static struct {
    pthread_mutex_t lock;
    zcc_device *devices[MAX_DEVICES];
    size_t count;
} known = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The library of the driver that owns object: every OpenCL object starts
 * with its driver's dispatch table, whose functions live in the driver. */
static bool driver_library_of(void *object, char *path, size_t size)
{
    const cl_icd_dispatch *dispatch = *(const cl_icd_dispatch *const *)object;
    Dl_info info;
    if (dispatch == NULL || dladdr((void *)dispatch->clBuildProgram, &info) == 0 ||
        info.dli_fname == NULL)
        return false;
    return snprintf(path, size, "%s", info.dli_fname) < (int)size;
}

/* Appends "<u32 name><u32 result><u64 size><bytes>" for one query. */
static bool append_info(zcc_device *entry, cl_uint name, bool platform, cl_platform_id id)
{
    size_t size = 0;
    uint8_t *at = entry->hardware + entry->hardware_size;
    size_t room = HARDWARE_MAX - entry->hardware_size;
    if (room < 16)
        return false;
    uint8_t *value = at + 16;
    cl_int result =
        platform ? zcc_layer.next.clGetPlatformInfo(id, name, room - 16, value, &size)
                 : zcc_layer.next.clGetDeviceInfo(entry->device, name, room - 16, value, &size);
    if (result != CL_SUCCESS)
        size = 0;
    uint64_t size64 = size;
    memcpy(at, &name, 4);
    memcpy(at + 4, &result, 4);
    memcpy(at + 8, &size64, 8);
    entry->hardware_size += 16 + size;
    return true;
}

/* What the compile depends on that the device tells: its name, version,
 * extensions and IL versions, and for Intel's its IP version and UUIDs. */
static bool describe_hardware(zcc_device *entry)
{
    static const cl_uint device_infos[] = {
        CL_DEVICE_NAME,
        CL_DEVICE_VENDOR,
        CL_DEVICE_VENDOR_ID,
        CL_DEVICE_VERSION,
        CL_DRIVER_VERSION,
        CL_DEVICE_OPENCL_C_VERSION,
        CL_DEVICE_EXTENSIONS,
        CL_DEVICE_IL_VERSION,
        CL_DEVICE_ADDRESS_BITS,
        CL_DEVICE_TYPE,
        CL_DEVICE_PROFILE,
        CL_DEVICE_MAX_COMPUTE_UNITS,
        CL_DEVICE_NUMERIC_VERSION,
        0x106A, /* CL_DEVICE_UUID_KHR */
        0x106B, /* CL_DRIVER_UUID_KHR */
        0x4250, /* CL_DEVICE_IP_VERSION_INTEL */
        0x4251, /* CL_DEVICE_ID_INTEL */
    };
    static const cl_uint platform_infos[] = {CL_PLATFORM_NAME, CL_PLATFORM_VENDOR,
                                             CL_PLATFORM_VERSION};
    cl_platform_id platform = NULL;
    if (zcc_layer.next.clGetDeviceInfo(entry->device, CL_DEVICE_PLATFORM, sizeof(platform),
                                       &platform, NULL) != CL_SUCCESS)
        return false;
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof(device_infos) / sizeof(device_infos[0]); i++)
        ok = append_info(entry, device_infos[i], false, NULL);
    for (size_t i = 0; ok && i < sizeof(platform_infos) / sizeof(platform_infos[0]); i++)
        ok = append_info(entry, platform_infos[i], true, platform);
    return ok;
}

static void describe_meta(zcc_device *entry)
{
    zcc_layer.next.clGetDeviceInfo(entry->device, CL_DEVICE_NAME, sizeof(entry->meta.device_name),
                                   entry->meta.device_name, NULL);
    zcc_layer.next.clGetDeviceInfo(entry->device, CL_DRIVER_VERSION,
                                   sizeof(entry->meta.driver_version), entry->meta.driver_version,
                                   NULL);
    entry->meta.device_name[sizeof(entry->meta.device_name) - 1] = '\0';
    entry->meta.driver_version[sizeof(entry->meta.driver_version) - 1] = '\0';
}

static zcc_device *describe(cl_device_id device)
{
    zcc_device *entry = calloc(1, sizeof(*entry));
    char path[ZC_LIBRARY_PATH_SIZE];
    if (entry == NULL)
        return NULL;
    entry->device = device;
    bool ok = driver_library_of(device, path, sizeof(path)) &&
              zc_library_identity_of_path(path, &entry->driver) == ZC_OK &&
              describe_hardware(entry);
    if (!ok) {
        free(entry);
        return NULL;
    }
    const char *base = strrchr(entry->driver.path, '/');
    entry->intel = strncmp(base != NULL ? base + 1 : path, "libigdrcl", 9) == 0;
    if (entry->intel)
        entry->compiler = zc_compiler_identity_get(path);
    describe_meta(entry);
    return entry;
}

static const zcc_device *device_of(cl_device_id device)
{
    pthread_mutex_lock(&known.lock);
    zcc_device *found = NULL;
    for (size_t i = 0; i < known.count && found == NULL; i++)
        if (known.devices[i]->device == device)
            found = known.devices[i];
    if (found == NULL && known.count < MAX_DEVICES) {
        found = describe(device);
        if (found != NULL)
            known.devices[known.count++] = found;
    }
    pthread_mutex_unlock(&known.lock);
    return found;
}

bool zcc_device_is_intel(cl_device_id device)
{
    const zcc_device *entry = device_of(device);
    return entry != NULL && entry->intel;
}

static zc_status add_device(zc_key_builder *builder, const zcc_device *entry)
{
    static const uint8_t no_uuid[16] = {0};
    zc_status status = entry->compiler != NULL
                           ? zc_key_add_compiler_identity(builder, entry->compiler)
                           : ZC_NOT_CACHEABLE;
    if (status == ZC_OK)
        status = zc_key_add_driver(builder, &entry->driver, 0, no_uuid);
    if (status == ZC_OK)
        status = zc_key_add_hardware(builder, "OpenCL device and platform", entry->hardware,
                                     entry->hardware_size);
    if (status == ZC_OK)
        status = zc_key_add_environment(builder);
    return status;
}

/* The program's input: its IL, else its source, as the driver holds it. */
static void *input_of(cl_program program, cl_program_info name, size_t *size)
{
    *size = 0;
    if (zcc_layer.next.clGetProgramInfo(program, name, 0, NULL, size) != CL_SUCCESS || *size == 0)
        return NULL;
    void *input = malloc(*size);
    if (input != NULL &&
        zcc_layer.next.clGetProgramInfo(program, name, *size, input, NULL) != CL_SUCCESS) {
        free(input);
        input = NULL;
    }
    return input;
}

static zc_status add_input(zc_key_builder *builder, cl_program program, const char *options,
                           char *reason, size_t reason_size)
{
    static const char api[] = "opencl";
    size_t size;
    zc_status status = zc_key_add_hardware(builder, "API", api, sizeof(api));
    void *il = input_of(program, CL_PROGRAM_IL, &size);
    if (il != NULL) {
        if (status == ZC_OK)
            status = zc_key_add_spirv(builder, il, size, options, NULL);
        free(il);
        return status;
    }
    char *source = input_of(program, CL_PROGRAM_SOURCE, &size);
    if (source == NULL || size <= 1) {
        free(source);
        snprintf(reason, reason_size, "a program created from neither source nor IL");
        return ZC_NOT_CACHEABLE;
    }
    if (status == ZC_OK)
        status = zc_key_add_opencl_c(builder, source, strlen(source), options);
    free(source);
    return status;
}

zc_status zcc_build_key(cl_program program, cl_device_id device, const char *options,
                        const zc_artifact_meta **meta, zc_key *key, char **trace, char *reason,
                        size_t reason_size)
{
    *trace = NULL;
    snprintf(reason, reason_size, "cannot describe the device or its driver");
    const zcc_device *entry = device_of(device);
    if (entry == NULL)
        return ZC_ERR_INVALID_ARG;
    *meta = &entry->meta;
    snprintf(reason, reason_size, "the compiler of %s is not identified", entry->driver.path);
    if (entry->compiler == NULL)
        return ZC_NOT_CACHEABLE;
    snprintf(reason, reason_size, "%s", "");
    zc_key_builder *builder = NULL;
    zc_status status = zc_key_builder_create(zcc_layer.config.binary_cache_trace, &builder);
    if (status != ZC_OK)
        return status;
    status = add_device(builder, entry);
    if (status == ZC_OK)
        status = add_input(builder, program, options, reason, reason_size);
    if (status == ZC_OK)
        status = zc_key_finish(builder, key);
    key->kind = ZC_ENTRY_OPENCL;
    const char *why = zc_key_builder_reason(builder);
    if (status == ZC_NOT_CACHEABLE && why != NULL)
        snprintf(reason, reason_size, "%s", why);
    if (status == ZC_OK && zc_key_builder_trace(builder) != NULL)
        *trace = strdup(zc_key_builder_trace(builder));
    zc_key_builder_destroy(builder);
    return status;
}
