/* The lookup flow every layer shares: a request (build_request.h) for a
 * device (frontend_device.h) is keyed, looked up in the cache, and either
 * made from the cached artifact or built by the driver, through a small
 * struct of callbacks that are all a layer writes for its API. Whatever goes
 * wrong on the cache's side, the application gets what the driver alone
 * would give it. */
#ifndef ZECACHE_FRONTEND_H
#define ZECACHE_FRONTEND_H

#include <stdatomic.h>
#include <stddef.h>

#include "zecache/artifact.h"
#include "zecache/build_request.h"
#include "zecache/cache.h"
#include "zecache/compiler_identity.h"
#include "zecache/config.h"
#include "zecache/frontend_device.h"
#include "zecache/status.h"

/* Where a layer's requests go. */
typedef struct zc_frontend {
    zc_cache *cache;         /* not NULL */
    const zc_config *config; /* binary_cache_trace, record_inputs */
    /* The API's "no more hits in this process": set once the driver did not
     * load a cached binary unchanged (a debug key, a debugger), read before
     * every request. */
    atomic_bool *hits_off;
} zc_frontend;

typedef enum zc_hit_outcome {
    ZC_HIT_CREATED, /* the application has its object, made from the artifact */
    ZC_HIT_REFUSED, /* the driver returned an error for the binary */
    ZC_HIT_REBUILT, /* the driver did not load the binary unchanged */
} zc_hit_outcome;

/* What a layer does for one request; context is the layer's own. */
typedef struct zc_frontend_ops {
    /* The driver's build with the application's own arguments, writing what
     * the application sees. ZC_OK: *out (one reference) is the artifact (the
     * binary, the build log, meta with the device's names and the driver's
     * compile_ns). ZC_ERR_BUILD: the driver's build failed. Any other status:
     * it succeeded, but its artifact could not be taken (nothing stored).
     * May run twice for one request (a refused hit, a compiler changed). */
    zc_status (*compile)(void *context, zc_artifact **out);
    /* Gives the application an object made from artifact, as the build
     * would have; on anything but ZC_HIT_CREATED, nothing of it is left and
     * the application's outputs are untouched. For ZC_HIT_REFUSED, detail
     * says what the driver returned. */
    zc_hit_outcome (*create)(void *context, const zc_artifact *artifact, char *detail,
                             size_t detail_size);
    /* The driver alone with the application's arguments, for when the cache
     * cannot serve; whether the driver's call succeeded. */
    bool (*build_alone)(void *context);
} zc_frontend_ops;

/* What zc_frontend_build did, as ZECACHE_REPORT_FD reports it. */
typedef enum zc_frontend_outcome {
    ZC_FRONTEND_PRESENT,  /* "present": a hit */
    ZC_FRONTEND_BUILT,    /* "built": a miss the driver built and the cache stored */
    ZC_FRONTEND_FAILED,   /* "failed": the application's call failed, or nothing was stored */
    ZC_FRONTEND_UNCACHED, /* "uncached": the driver alone after a cache-side failure */
    ZC_FRONTEND_BYPASS,   /* "bypass": not cacheable, the driver alone */
} zc_frontend_outcome;

/* Serves request for device (compiler as for zc_frontend_key; when not
 * NULL, what zc_compiler_identity_get returned: the process's): key; look
 * up; on a miss ops->compile, stored when it succeeds, its inputs recorded
 * (NEO_CACHE_RECORD_INPUTS, Level Zero SPIR-V requests) once stored; on a
 * hit ops->create: refused -> compiled again as the lookup's miss and
 * replaced; rebuilt -> *hits_off set and the driver alone. A request the key
 * refuses, or made while hits are off, is a bypass (counted, logged). With a
 * compiler: when the compile shows the driver loaded another than the one
 * keyed, that compile is stored under the loaded one's key and the process
 * serves no hits from then on. Reports the outcome (ZECACHE_REPORT_FD). */
zc_frontend_outcome zc_frontend_build(const zc_frontend *frontend, const zc_build_request *request,
                                      const zc_device_description *device,
                                      const zc_compiler_identity *compiler,
                                      const zc_frontend_ops *ops, void *context);

/* For a request a layer sends to the driver without the cache: counts it
 * (cache may be NULL), logs why under PrintDebugMessages (detail may be
 * NULL) and reports "bypass". The layer then calls the driver. */
void zc_frontend_bypass(zc_cache *cache, zc_bypass_reason reason, const char *detail);

/* The name of outcome as reported ("present", ...). */
const char *zc_frontend_outcome_name(zc_frontend_outcome outcome);

#endif
