/* A device described once, API-neutral: what the parts of a key common to
 * every request for it need. A layer fills one per device from its API's
 * queries; the front end keys it once and keeps the result. */
#ifndef ZECACHE_FRONTEND_DEVICE_H
#define ZECACHE_FRONTEND_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/build_request.h"
#include "zecache/compiler_identity.h"
#include "zecache/identity.h"
#include "zecache/key.h"
#include "zecache/status.h"

/* Bytes describing the hardware, keyed as given; name says what they are
 * (for the trace, and in the record: "device properties", ...). */
typedef struct zc_device_part {
    const char *name;
    const void *bytes;
    size_t size;
} zc_device_part;

typedef struct zc_device_description {
    /* What tells devices apart for the kept key prefixes: stable for the
     * process (the layer's record of the device, say) and always given with
     * the same description. */
    const void *identity;
    /* The driver's libraries, each keyed with the version and UUID below;
     * none is a cache-side error (ZC_ERR_INVALID_ARG). */
    const zc_library_identity *libraries;
    size_t library_count;
    uint32_t driver_version;
    uint8_t driver_uuid[16];
    const zc_device_part *hardware; /* keyed in this order */
    size_t hardware_count;
    /* Variables the driver reads at every build: keyed with each request
     * as they are then (zc_key_add_build_variables), never kept. */
    const char *const *build_variables;
    size_t build_variable_count;
    zc_artifact_meta meta; /* device name and driver version, for entries */
    /* Whose front end compiles OpenCL C for it (where it finds headers);
     * zero, ZC_OPENCL_C_ANY_DRIVER, when not known. */
    zc_opencl_c_driver opencl_c_driver;
} zc_device_description;

/* The key of request for device, compiled by compiler: NULL when the
 * driver's compiler is not IGC, whose identity the device's libraries and
 * hardware parts must then hold (they are keyed whole). The parts common to
 * a device (compiler, driver, hardware, environment) are hashed at its first
 * key and kept for the process, per identity, compiler and tracing. On ZC_OK
 * and want_trace, *trace is a malloc'd readable trace (or NULL).
 * ZC_NOT_CACHEABLE: reason says why; any other failure is the cache's. */
zc_status zc_frontend_key(const zc_build_request *request, const zc_device_description *device,
                          const zc_compiler_identity *compiler, bool want_trace, zc_key *key,
                          char **trace, char *reason, size_t reason_size);
/* The same, also handing on the files the key read (NULL when none), for a
 * check after the compile without keying again (zecache/key_files.h). */
zc_status zc_frontend_key_files(const zc_build_request *request,
                                const zc_device_description *device,
                                const zc_compiler_identity *compiler, bool want_trace, zc_key *key,
                                char **trace, char *reason, size_t reason_size,
                                struct zc_key_files **files);

#endif
