/* The inputs of a build request (build_request.h) in a key. */
#ifndef ZECACHE_KEY_REQUEST_H
#define ZECACHE_KEY_REQUEST_H

#include "zecache/build_request.h"
#include "zecache/key.h"
#include "zecache/status.h"

/* Adds request's inputs to builder, after the parts common to its device.
 * Level Zero requests are keyed exactly as before requests existed (a
 * program: its input count as the hardware part "module program extension:
 * input count", then each input), so existing caches keep hitting. OpenCL
 * requests first add the API and the format (so the same SPIR-V through
 * both APIs never shares an entry), then the same; their OpenCL C inputs go
 * through zc_key_add_opencl_c with their flags as the build options and
 * driver's header search.
 * ZC_NOT_CACHEABLE (with zc_key_builder_reason when there is one) for a
 * request without inputs, an input without bytes (but SPIR-V given by its
 * digest, build_request.h), constants on a source
 * input, or anything the input's own adder refuses. */
zc_status zc_key_add_request(zc_key_builder *builder, const zc_build_request *request,
                             zc_opencl_c_driver driver);

#endif
