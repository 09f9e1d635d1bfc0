/* One build for several devices (an OpenCL clBuildProgram naming several)
 * through the cache: each device's key is exactly the key a build of the
 * same request for that device alone has, so the entries are shared with
 * single-device builds. Every key is looked up first: all found -> one
 * object made from all the artifacts; any missing -> the application's call
 * unchanged (one driver build for all devices), whose artifact for each
 * missing device is stored. */
#ifndef ZECACHE_FRONTEND_SEVERAL_H
#define ZECACHE_FRONTEND_SEVERAL_H

#include <stdbool.h>
#include <stddef.h>

#include "zecache/frontend.h"

/* What a layer does for a build for several devices, in the order of the
 * devices given to zc_frontend_build_several; context is the layer's. */
typedef struct zc_frontend_several_ops {
    /* The driver's build with the application's own arguments. ZC_OK:
     * out[i] (one reference each) is device i's artifact. ZC_ERR_BUILD: the
     * driver's build failed. Any other status: it succeeded, but the
     * artifacts could not be taken (nothing stored). */
    zc_status (*compile)(void *context, zc_artifact **out);
    /* Gives the application an object made from every device's artifact,
     * as the build would have (same contract as zc_frontend_ops.create). */
    zc_hit_outcome (*create)(void *context, const zc_artifact *const *artifacts, char *detail,
                             size_t detail_size);
    /* The driver alone with the application's arguments; whether its call
     * succeeded. */
    bool (*build_alone)(void *context);
} zc_frontend_several_ops;

/* At most this many devices in one build through the cache; more go to the
 * driver alone (a bypass). */
#define ZC_FRONTEND_MAX_DEVICES 16

/* Serves request for devices[0..count) (compilers[i] as for
 * zc_frontend_build, for devices[i]). All keys found: ops->create; the hits
 * are counted (one per device) only once it created the object; a refusal
 * compiles all again and replaces every entry (counted as misses, as one
 * device's refused hit is); a rebuild turns hits off as for one device.
 * Some missing: ops->compile; each missing device's artifact is stored (a
 * miss each), each found device's counts as a miss not stored (the driver
 * compiled it again). Not stored: an artifact compiled after a header the
 * key read changed, or under a compiler other than the one predicted. A
 * request the key refuses for any device, made while hits are off or while
 * the compiler is not the predicted one, is a bypass with the driver alone.
 * Reports the outcome once per device (ZECACHE_REPORT_FD). */
zc_frontend_outcome zc_frontend_build_several(const zc_frontend *frontend,
                                              const zc_build_request *request,
                                              const zc_device_description *const *devices,
                                              const zc_compiler_identity *const *compilers,
                                              size_t count, const zc_frontend_several_ops *ops,
                                              void *context);

#endif
