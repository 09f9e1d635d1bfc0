/* What the key needs to know about a device and its driver, queried through
 * the API once per device and kept for the life of the process (devices
 * outlive every module made for them).
 *
 * Device properties enter the key whole, field by field (the structures have
 * padding), except pNext. Nothing else is zeroed: the device UUID holds the
 * revision (stepping) on Intel's driver, which code generation depends on, so
 * two identical GPUs in different slots keep separate entries. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"
#include "zecache/fork_guard.h"
#include "zecache/log.h"

/* Not in the 1.4 headers Debian ships; layout and values from the spec. */
#define ZCL_DEVICE_IP_VERSION_EXT_NAME "ZE_extension_device_ip_version"
#define ZCL_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT ((ze_structure_type_t)0x0001000f)
typedef struct zcl_device_ip_version_ext {
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t ipVersion;
} zcl_device_ip_version_ext;

#define MAX_HANDLES 64

typedef struct device_record {
    struct device_record *next;
    zcl_device_info info;
} device_record;

static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held across fork(): a fork waits for a device's first queries, else a
 * child forked meanwhile would wait for ever at its next module. */
static atomic_bool records_lock_guarded;
static device_record *records;

typedef struct byte_writer {
    uint8_t *bytes;
    size_t capacity, size;
} byte_writer;

static void put_bytes(byte_writer *writer, const void *bytes, size_t size)
{
    if (writer->size + size <= writer->capacity)
        memcpy(writer->bytes + writer->size, bytes, size);
    writer->size += size;
}

/* A field's bytes as the driver gave them (native order): the record only
 * has to tell devices apart on the host that wrote it. */
#define put_field(writer, field) put_bytes((writer), &(field), sizeof(field))
_Static_assert(sizeof(ze_device_type_t) == sizeof(uint32_t), "type is keyed as 4 bytes");

static void serialise_device_properties(const ze_device_properties_t *p, zcl_device_info *info)
{
    byte_writer w = {info->properties, sizeof(info->properties), 0};
    put_field(&w, p->type);
    put_field(&w, p->vendorId);
    put_field(&w, p->deviceId);
    put_field(&w, p->flags);
    put_field(&w, p->subdeviceId);
    put_field(&w, p->coreClockRate);
    put_field(&w, p->maxMemAllocSize);
    put_field(&w, p->maxHardwareContexts);
    put_field(&w, p->maxCommandQueuePriority);
    put_field(&w, p->numThreadsPerEU);
    put_field(&w, p->physicalEUSimdWidth);
    put_field(&w, p->numEUsPerSubslice);
    put_field(&w, p->numSubslicesPerSlice);
    put_field(&w, p->numSlices);
    put_field(&w, p->timerResolution);
    put_field(&w, p->timestampValidBits);
    put_field(&w, p->kernelTimestampValidBits);
    put_bytes(&w, p->uuid.id, sizeof(p->uuid.id));
    put_bytes(&w, p->name, strnlen(p->name, sizeof(p->name)));
    info->properties_size = w.size;
}

static void serialise_module_properties(const ze_device_module_properties_t *p,
                                        zcl_device_info *info)
{
    byte_writer w = {info->module_properties, sizeof(info->module_properties), 0};
    put_field(&w, p->spirvVersionSupported);
    put_field(&w, p->flags);
    put_field(&w, p->fp16flags);
    put_field(&w, p->fp32flags);
    put_field(&w, p->fp64flags);
    put_field(&w, p->maxArgumentsSize);
    put_field(&w, p->printfBufferSize);
    put_bytes(&w, p->nativeKernelSupported.id, sizeof(p->nativeKernelSupported.id));
    info->module_properties_size = w.size;
}

static bool device_in_tree(ze_device_handle_t wanted, ze_device_handle_t device, int depth)
{
    if (device == wanted)
        return true;
    uint32_t count = 0;
    ze_device_handle_t subdevices[MAX_HANDLES];
    if (depth == 0 || zcl_layer.next.device_get_sub_devices == NULL ||
        zcl_layer.next.device_get_sub_devices(device, &count, NULL) != ZE_RESULT_SUCCESS)
        return false;
    count = count < MAX_HANDLES ? count : MAX_HANDLES;
    if (count == 0 ||
        zcl_layer.next.device_get_sub_devices(device, &count, subdevices) != ZE_RESULT_SUCCESS)
        return false;
    for (uint32_t i = 0; i < count; i++)
        if (device_in_tree(wanted, subdevices[i], depth - 1))
            return true;
    return false;
}

static bool driver_has_device(ze_driver_handle_t driver, ze_device_handle_t wanted)
{
    uint32_t count = MAX_HANDLES;
    ze_device_handle_t devices[MAX_HANDLES];
    if (zcl_layer.next.device_get(driver, &count, devices) != ZE_RESULT_SUCCESS)
        return false;
    for (uint32_t i = 0; i < count; i++)
        if (device_in_tree(wanted, devices[i], 2))
            return true;
    return false;
}

/* Level Zero 1.4 has no "driver of this device" query: search for it. */
static ze_driver_handle_t driver_of(ze_device_handle_t device)
{
    uint32_t count = MAX_HANDLES;
    ze_driver_handle_t drivers[MAX_HANDLES];
    if (zcl_layer.next.driver_get == NULL || zcl_layer.next.device_get == NULL ||
        zcl_layer.next.driver_get(&count, drivers) != ZE_RESULT_SUCCESS)
        return NULL;
    for (uint32_t i = 0; i < count; i++)
        if (driver_has_device(drivers[i], device))
            return drivers[i];
    return NULL;
}

static bool driver_supports(ze_driver_handle_t driver, const char *extension)
{
    uint32_t count = 0;
    if (zcl_layer.next.driver_get_extension_properties == NULL ||
        zcl_layer.next.driver_get_extension_properties(driver, &count, NULL) != ZE_RESULT_SUCCESS)
        return false;
    ze_driver_extension_properties_t *extensions = calloc(count, sizeof(*extensions));
    bool supported = false;
    if (extensions != NULL && zcl_layer.next.driver_get_extension_properties(
                                  driver, &count, extensions) == ZE_RESULT_SUCCESS)
        for (uint32_t i = 0; i < count && !supported; i++)
            supported = strcmp(extensions[i].name, extension) == 0;
    free(extensions);
    return supported;
}

static bool query_driver(ze_driver_handle_t driver, zcl_device_info *info)
{
    ze_driver_properties_t properties = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
    if (zcl_layer.next.driver_get_properties == NULL ||
        zcl_layer.next.driver_get_properties(driver, &properties) != ZE_RESULT_SUCCESS)
        return false;
    info->driver_version = properties.driverVersion;
    /* The driver UUID stays zero in the key: Intel's driver builds it from
     * its version and a timestamp taken at start-up, so it differs in every
     * process. The version and the library's identity name the driver. */
    memset(info->driver_uuid, 0, sizeof(info->driver_uuid));
    /* Intel's encoding: major.minor in the top bytes, build number below. */
    snprintf(info->meta.driver_version, sizeof(info->meta.driver_version), "%u.%u.%u",
             properties.driverVersion >> 24, (properties.driverVersion >> 16) & 0xffu,
             properties.driverVersion & 0xffffu);
    return true;
}

static bool query_device(ze_device_handle_t device, bool with_ip_version, zcl_device_info *info)
{
    zcl_device_ip_version_ext ip_version = {.stype = ZCL_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT};
    ze_device_properties_t properties = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES,
                                         .pNext = with_ip_version ? &ip_version : NULL};
    ze_device_module_properties_t module_properties = {
        .stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    if (zcl_layer.next.device_get_properties == NULL ||
        zcl_layer.next.device_get_module_properties == NULL ||
        zcl_layer.next.device_get_properties(device, &properties) != ZE_RESULT_SUCCESS ||
        zcl_layer.next.device_get_module_properties(device, &module_properties) !=
            ZE_RESULT_SUCCESS)
        return false;
    serialise_device_properties(&properties, info);
    serialise_module_properties(&module_properties, info);
    info->has_ip_version = with_ip_version;
    info->ip_version = ip_version.ipVersion;
    snprintf(info->meta.device_name, sizeof(info->meta.device_name), "%.*s",
             (int)sizeof(info->meta.device_name) - 1, properties.name);
    return info->properties_size <= sizeof(info->properties) &&
           info->module_properties_size <= sizeof(info->module_properties);
}

/* The device for the front end's key: the parts in the order the layer
 * has always keyed them (existing entries keep hitting). No driver library
 * identified leaves none, which the key takes as a cache-side error. */
static void describe(zcl_device_info *info)
{
    const zcl_driver_libraries *libraries = zcl_driver_libraries_get();
    info->hardware[0] =
        (zc_device_part){"device properties", info->properties, info->properties_size};
    info->hardware[1] = (zc_device_part){"device module properties", info->module_properties,
                                         info->module_properties_size};
    info->hardware[2] =
        (zc_device_part){"device IP version", &info->ip_version, sizeof(info->ip_version)};
    info->description =
        (zc_device_description){.identity = info,
                                .libraries = libraries != NULL ? libraries->identities : NULL,
                                .library_count = libraries != NULL ? libraries->count : 0,
                                .driver_version = info->driver_version,
                                .hardware = info->hardware,
                                .hardware_count = info->has_ip_version ? 3 : 2,
                                .meta = info->meta};
    memcpy(info->description.driver_uuid, info->driver_uuid, sizeof(info->driver_uuid));
}

static device_record *find_record(ze_device_handle_t device)
{
    for (device_record *record = records; record != NULL; record = record->next)
        if (record->info.device == device)
            return record;
    return NULL;
}

static device_record *create_record(ze_device_handle_t device)
{
    ze_driver_handle_t driver = driver_of(device);
    device_record *record = calloc(1, sizeof(*record));
    if (driver == NULL || record == NULL) {
        zc_log_info("cannot describe device %p for the key", (void *)device);
        free(record);
        return NULL;
    }
    record->info.device = device;
    bool with_ip_version = driver_supports(driver, ZCL_DEVICE_IP_VERSION_EXT_NAME);
    if (!query_driver(driver, &record->info) ||
        !query_device(device, with_ip_version, &record->info)) {
        zc_log_info("cannot query device %p for the key", (void *)device);
        free(record);
        return NULL;
    }
    describe(&record->info);
    return record;
}

const zcl_device_info *zcl_device_info_get(ze_device_handle_t device)
{
    /* Queries run under the lock, but only on a device's first module. */
    zc_fork_guard_lock(&records_lock, &records_lock_guarded);
    device_record *record = find_record(device);
    if (record == NULL) {
        record = create_record(device);
        if (record != NULL) {
            record->next = records;
            records = record;
        }
    }
    pthread_mutex_unlock(&records_lock);
    return record != NULL ? &record->info : NULL;
}
