/* What the front end's files share; not installed. */
#ifndef ZECACHE_FRONTEND_INTERNAL_H
#define ZECACHE_FRONTEND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "zecache/build_request.h"
#include "zecache/cache.h"
#include "zecache/frontend.h"
#include "zecache/frontend_device.h"
#include "zecache/key.h"

/* frontend_report.c: writes "<outcome> <key hex or ->" to ZECACHE_REPORT_FD
 * when it is set (zecache prewarm's helper reads it). */
void zc_frontend_report(const char *outcome, const zc_key *key);

/* Counts a hit the driver did not take (hit: ZC_HIT_REFUSED or
 * ZC_HIT_REBUILT) with why; a rebuild turns hits off for the process.
 * true when the caller compiles and replaces the entry, false when it
 * builds with the driver alone. */
bool zc_frontend_hit_refused(const zc_frontend *frontend, zc_hit_outcome hit, const char *detail);

/* frontend_record.c: keeps request's inputs beside key's entry
 * (NEO_CACHE_RECORD_INPUTS), after a compile of compile_ns that succeeded
 * and was stored. Failures are only logged; so is the cost against the
 * compile (bench/bench_record.sh). */
struct zc_key_files;
void zc_frontend_record(zc_cache *cache, const zc_build_request *request,
                        const zc_device_description *device, const struct zc_key_files *files,
                        const zc_key *key, uint64_t compile_ns);

/* frontend_record_opencl.c: recipe's OpenCL part (recipe->opencl, freed
 * with it) for an OpenCL request keyed with files; false when the request
 * is not one prewarm rebuilds (a compile or a link) or out of memory. */
struct zc_recipe;
bool zc_frontend_describe_opencl(const zc_build_request *request,
                                 const zc_device_description *device,
                                 const struct zc_key_files *files, struct zc_recipe *recipe);

#endif
