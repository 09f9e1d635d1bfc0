/* A device described once, for the front end's key (frontend_device.h): the
 * driver library, the compiler (Intel's: IGC, predicted for the driver
 * library; any other driver: its own compiler, clcore's driver_compiler.h,
 * with the host CPU it compiles for), and the device as clGetDeviceInfo
 * describes it. Described at its first build and kept for the process. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/driver_compiler.h"

#define MAX_DEVICES 32
#define PROPERTIES_MAX 16384

struct zcc_device {
    cl_device_id device;
    zc_library_identity driver;
    const zc_compiler_identity *compiler; /* IGC's; NULL for a driver's own */
    uint8_t properties[PROPERTIES_MAX];
    uint8_t own_compiler[ZC_KEY_SIZE]; /* a driver's own compiler and host CPU */
    zc_device_part parts[2];
    zc_device_description description;
};

static struct {
    pthread_mutex_t lock;
    zcc_device *devices[MAX_DEVICES];
    size_t count;
} known = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The function of the driver that owns object: every OpenCL object starts
 * with its driver's dispatch table. */
static void *driver_function_of(void *object)
{
    const cl_icd_dispatch *dispatch = *(const cl_icd_dispatch *const *)object;
    return dispatch != NULL ? (void *)dispatch->clBuildProgram : NULL;
}

/* Appends "<u32 name><i32 result><u64 size><bytes>" for one query. */
static bool append_info(zcc_device *entry, size_t *used, cl_uint name, cl_platform_id platform)
{
    size_t size = 0;
    uint8_t *at = entry->properties + *used;
    size_t room = PROPERTIES_MAX - *used;
    if (room < 16)
        return false;
    cl_int result =
        platform != NULL
            ? zcc_layer.next.clGetPlatformInfo(platform, name, room - 16, at + 16, &size)
            : zcc_layer.next.clGetDeviceInfo(entry->device, name, room - 16, at + 16, &size);
    uint64_t size64 = result == CL_SUCCESS ? size : 0;
    memcpy(at, &name, 4);
    memcpy(at + 4, &result, 4);
    memcpy(at + 8, &size64, 8);
    *used += 16 + (size_t)size64;
    return true;
}

/* What the build depends on that the device and platform tell: names,
 * versions, extensions, IL versions, and Intel's IP version and UUIDs. */
static bool describe_properties(zcc_device *entry, size_t *used)
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
                                       &platform, NULL) != CL_SUCCESS ||
        platform == NULL)
        return false;
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof(device_infos) / sizeof(device_infos[0]); i++)
        ok = append_info(entry, used, device_infos[i], NULL);
    for (size_t i = 0; ok && i < sizeof(platform_infos) / sizeof(platform_infos[0]); i++)
        ok = append_info(entry, used, platform_infos[i], platform);
    return ok;
}

/* A driver's own compiler and the host CPU, as one digest: the front end
 * keys a device's parts as bytes. */
static zc_status own_compiler_digest(const void *function, uint8_t digest[ZC_KEY_SIZE], bool *pocl,
                                     char *reason, size_t reason_size)
{
    zc_driver_compiler *compiler = NULL;
    zc_status status = zc_driver_compiler_identify(function, &compiler, reason, reason_size);
    *pocl = zc_driver_compiler_is_pocl(compiler);
    zc_key_builder *builder = NULL;
    if (status == ZC_OK)
        status = zc_key_builder_create(false, &builder);
    if (status == ZC_OK)
        status = zc_key_add_driver_compiler(builder, compiler);
    if (status == ZC_OK)
        status = zc_key_add_host_cpu(builder);
    zc_key digest_key;
    if (status == ZC_OK)
        status = zc_key_finish(builder, &digest_key);
    if (status == ZC_NOT_CACHEABLE && builder != NULL && zc_key_builder_reason(builder) != NULL)
        snprintf(reason, reason_size, "%s", zc_key_builder_reason(builder));
    if (status == ZC_OK)
        memcpy(digest, digest_key.bytes, ZC_KEY_SIZE);
    zc_key_builder_destroy(builder);
    zc_driver_compiler_destroy(compiler);
    return status;
}

static void describe_meta(zcc_device *entry)
{
    zc_artifact_meta *meta = &entry->description.meta;
    zcc_layer.next.clGetDeviceInfo(entry->device, CL_DEVICE_NAME, sizeof(meta->device_name),
                                   meta->device_name, NULL);
    zcc_layer.next.clGetDeviceInfo(entry->device, CL_DRIVER_VERSION, sizeof(meta->driver_version),
                                   meta->driver_version, NULL);
    meta->device_name[sizeof(meta->device_name) - 1] = '\0';
    meta->driver_version[sizeof(meta->driver_version) - 1] = '\0';
}

/* Whether path is Intel's OpenCL driver, which compiles with IGC. */
static bool is_intel_driver(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base != NULL ? base + 1 : path, "libigdrcl", strlen("libigdrcl")) == 0;
}

/* Whose front end compiles OpenCL C, by the driver library's name: where
 * the key looks for headers. */
static zc_opencl_c_driver opencl_c_driver_of(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    if (is_intel_driver(path))
        return ZC_OPENCL_C_IGC;
    return strncmp(base, "libpocl", strlen("libpocl")) == 0 ? ZC_OPENCL_C_POCL
                                                            : ZC_OPENCL_C_ANY_DRIVER;
}

static zc_status describe(zcc_device *entry, char *reason, size_t reason_size)
{
    Dl_info info;
    size_t used = 0;
    void *function = driver_function_of(entry->device);
    snprintf(reason, reason_size, "cannot describe the device or its driver");
    if (function == NULL || dladdr(function, &info) == 0 || info.dli_fname == NULL ||
        zc_library_identity_of_path(info.dli_fname, &entry->driver) != ZC_OK ||
        !describe_properties(entry, &used))
        return ZC_ERR_INVALID_ARG;
    entry->parts[0] = (zc_device_part){"OpenCL device and platform", entry->properties, used};
    size_t part_count = 1;
    bool pocl = false;
    if (is_intel_driver(entry->driver.path)) {
        entry->compiler = zc_compiler_identity_get(info.dli_fname);
        snprintf(reason, reason_size, "libigc not found (libigc.so.1, libigc.so.2)");
        if (entry->compiler == NULL)
            return ZC_NOT_CACHEABLE;
    } else {
        zc_status status =
            own_compiler_digest(function, entry->own_compiler, &pocl, reason, reason_size);
        if (status != ZC_OK)
            return status;
        entry->parts[part_count++] =
            (zc_device_part){"the driver's compiler and the host CPU", entry->own_compiler,
                             sizeof(entry->own_compiler)};
    }
    entry->description =
        (zc_device_description){.identity = entry,
                                .libraries = &entry->driver,
                                .library_count = 1,
                                .hardware = entry->parts,
                                .hardware_count = part_count,
                                .opencl_c_driver = opencl_c_driver_of(entry->driver.path)};
    if (pocl)
        entry->description.build_variables =
            zc_pocl_build_variables(&entry->description.build_variable_count);
    describe_meta(entry);
    return ZC_OK;
}

/* Devices that cannot be described stay so for the process (a driver's
 * compiler is identified by reading its files): their refusal is kept. */
typedef struct refused_device {
    cl_device_id device;
    zc_status status;
    char reason[256];
} refused_device;

static refused_device refused[MAX_DEVICES];
static size_t refused_count;

static zcc_device *find_known(cl_device_id device)
{
    for (size_t i = 0; i < known.count; i++)
        if (known.devices[i]->device == device)
            return known.devices[i];
    return NULL;
}

static const refused_device *find_refused(cl_device_id device)
{
    for (size_t i = 0; i < refused_count; i++)
        if (refused[i].device == device)
            return &refused[i];
    return NULL;
}

static zcc_device *add_device(cl_device_id device, zc_status *status, char *reason,
                              size_t reason_size)
{
    *status = known.count < MAX_DEVICES ? ZC_ERR_NOMEM : ZC_NOT_CACHEABLE;
    snprintf(reason, reason_size, "%s",
             known.count < MAX_DEVICES ? "out of memory" : "too many devices");
    zcc_device *entry = known.count < MAX_DEVICES ? calloc(1, sizeof(*entry)) : NULL;
    if (entry == NULL)
        return NULL;
    entry->device = device;
    *status = describe(entry, reason, reason_size);
    if (*status == ZC_OK) {
        known.devices[known.count++] = entry;
        return entry;
    }
    free(entry);
    if (refused_count < MAX_DEVICES) {
        refused_device *no = &refused[refused_count++];
        *no = (refused_device){device, *status, ""};
        snprintf(no->reason, sizeof(no->reason), "%s", reason);
    }
    return NULL;
}

const zcc_device *zcc_device_of(cl_device_id device, zc_status *status, char *reason,
                                size_t reason_size)
{
    pthread_mutex_lock(&known.lock);
    *status = ZC_OK;
    zcc_device *found = find_known(device);
    const refused_device *no = found == NULL ? find_refused(device) : NULL;
    if (no != NULL) {
        *status = no->status;
        snprintf(reason, reason_size, "%s", no->reason);
    } else if (found == NULL) {
        found = add_device(device, status, reason, reason_size);
    }
    pthread_mutex_unlock(&known.lock);
    return found;
}

const zc_device_description *zcc_device_description(const zcc_device *device)
{
    return &device->description;
}

const zc_compiler_identity *zcc_device_compiler(const zcc_device *device)
{
    return device->compiler;
}
