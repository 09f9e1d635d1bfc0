/* A request through the cache (frontend.h): looked up by key; a hit becomes
 * the application's object made from the cached artifact, a miss is the
 * driver's own build, stored when it succeeds. Whatever goes wrong on the
 * cache's side, the application gets what the driver alone would give it.
 * Each layer only says, through its callbacks, how its API builds, makes an
 * object from an artifact, and calls the driver alone. */
#include <stdio.h>
#include <stdlib.h>

#include "frontend_internal.h"
#include "zecache/frontend.h"
#include "zecache/key_files.h"

typedef struct lookup {
    const zc_frontend *frontend;
    const zc_build_request *request;
    const zc_device_description *device;
    const zc_compiler_identity *compiler; /* the one the key was made with */
    const zc_key *key;                    /* the request's, made before the compile */
    zc_key_files *files;                  /* the files that key read, or NULL */
    const zc_frontend_ops *ops;
    void *context;
    bool ran;
    bool call_failed; /* the application's call failed */
    /* Compiled while the compiler turned out not to be the one keyed: stored
     * under the key of the compiler really loaded, never under the other. */
    zc_artifact *unkeyed;
    zc_frontend_outcome outcome;
} lookup;

static zc_cache *cache_of(const lookup *request)
{
    return request->frontend->cache;
}

/* Whether the files the key read (the headers an OpenCL C source can
 * include) were the same after the compile as when the key was made: if one
 * changed in between (a build system writing a header, another job), the
 * driver may have compiled either version, and what it made does not belong
 * under the key. A file changed and changed back while the driver read it
 * is beyond what a key can see. */
static bool inputs_unchanged(const lookup *request)
{
    return zc_key_files_unchanged(request->files);
}

/* The compile step of a lookup: the layer's build with the application's
 * arguments, then a check that the files the key read are unchanged, then,
 * the compiler being surely loaded now, a check of the prediction the key
 * was made with. ZC_NOT_CACHEABLE keeps the cache from storing under that
 * key. */
static zc_status compile_step(void *context, zc_artifact **out)
{
    lookup *request = context;
    request->ran = true;
    zc_status status = request->ops->compile(request->context, out);
    request->call_failed = status == ZC_ERR_BUILD;
    if (status == ZC_OK && !inputs_unchanged(request)) {
        zc_artifact_unref(*out);
        *out = NULL;
        zc_cache_count_bypass(cache_of(request), ZC_BYPASS_NOT_CACHEABLE,
                              "a header changed while the driver compiled: nothing stored");
        return ZC_NOT_CACHEABLE;
    }
    if (request->call_failed || request->compiler == NULL)
        return status;
    zc_compiler_identity_check_loaded();
    /* After the prediction, the identity no longer depends on the path. */
    if (status == ZC_OK && zc_compiler_identity_get(NULL) != request->compiler) {
        request->unkeyed = *out;
        *out = NULL;
        return ZC_NOT_CACHEABLE;
    }
    return status;
}

static void build_alone(lookup *request)
{
    request->call_failed = !request->ops->build_alone(request->context);
}

/* Stores a compile made under a wrong compiler prediction with the key of
 * the compiler really loaded. */
static void store_under_loaded_compiler(lookup *request)
{
    zc_key key;
    char *trace = NULL;
    char reason[256];
    if (zc_frontend_key(request->request, request->device, zc_compiler_identity_get(NULL),
                        request->frontend->config->binary_cache_trace, &key, &trace, reason,
                        sizeof(reason)) == ZC_OK)
        (void)zc_cache_replace(cache_of(request), &key, request->unkeyed, trace);
    free(trace);
    zc_artifact_unref(request->unkeyed);
    request->unkeyed = NULL;
}

/* After a compile the cache stored under key: its inputs, recorded only
 * once the entry is stored, so no inputs are kept without the entry they
 * rebuild. */
static void record_compiled(lookup *request, const zc_key *key, const zc_artifact *fresh)
{
    if (request->frontend->config->record_inputs)
        zc_frontend_record(cache_of(request), request->request, request->device, request->files,
                           key, zc_artifact_meta_of(fresh)->compile_ns);
}

/* Compiles as usual and puts the result in key's place: when the driver
 * refused a verified entry (say, hardware the key did not tell apart: then
 * the compile is the lookup's miss, counted and recorded as one), and when
 * hits are off because the compiler is not the one predicted. */
static void compile_and_replace(lookup *request, const zc_key *key, const char *trace, bool as_miss)
{
    zc_artifact *fresh = NULL;
    zc_status status = compile_step(request, &fresh);
    if (as_miss) {
        zc_cache_count_miss(cache_of(request), status, fresh);
        request->outcome = status == ZC_OK ? ZC_FRONTEND_BUILT : ZC_FRONTEND_FAILED;
    }
    if (status == ZC_OK) {
        (void)zc_cache_replace(cache_of(request), key, fresh, trace);
        if (as_miss)
            record_compiled(request, key, fresh);
        zc_artifact_unref(fresh);
    }
}

bool zc_frontend_hit_refused(const zc_frontend *frontend, zc_hit_outcome hit, const char *detail)
{
    if (hit == ZC_HIT_REBUILT) {
        /* Whatever made the driver rebuild (a debug key, a debugger) holds
         * for the whole process: later requests go straight to the driver
         * instead of paying for a rebuild and a compile. */
        atomic_store(frontend->hits_off, true);
        zc_cache_count_bypass(frontend->cache, ZC_BYPASS_REJECTED_BINARY,
                              "the driver rebuilt a cached binary instead of loading it; "
                              "compiling, and no more hits in this process");
        return false;
    }
    char why[320];
    snprintf(why, sizeof(why), "%s; compiling", detail);
    zc_cache_count_bypass(frontend->cache, ZC_BYPASS_REJECTED_BINARY, why);
    return true;
}

/* A hit the driver would not take as it is. */
static void hit_not_created(lookup *request, zc_hit_outcome hit, const char *detail,
                            const zc_key *key, const char *trace)
{
    if (zc_frontend_hit_refused(request->frontend, hit, detail))
        compile_and_replace(request, key, trace, true);
    else
        build_alone(request);
}

static void look_up(lookup *request, const zc_key *key, const char *trace)
{
    zc_artifact *artifact = NULL;
    zc_lookup_outcome where = ZC_LOOKUP_COMPILED;
    zc_status status = zc_cache_get_or_compile(cache_of(request), key, trace, compile_step, request,
                                               &artifact, &where);
    if (request->ran) {
        if (status == ZC_OK)
            record_compiled(request, key, artifact);
        zc_artifact_unref(artifact);
        request->outcome = status == ZC_OK ? ZC_FRONTEND_BUILT : ZC_FRONTEND_FAILED;
        return;
    }
    if (status != ZC_OK) {
        zc_cache_count_bypass(cache_of(request), ZC_BYPASS_CACHE_ERROR, zc_status_name(status));
        build_alone(request);
        return;
    }
    char detail[256] = "the driver refused it";
    zc_hit_outcome hit = request->ops->create(request->context, artifact, detail, sizeof(detail));
    if (hit != ZC_HIT_CREATED)
        zc_cache_uncount_hit(cache_of(request), where, artifact); /* nothing saved */
    zc_artifact_unref(artifact);
    if (hit == ZC_HIT_CREATED)
        request->outcome = ZC_FRONTEND_PRESENT;
    else
        hit_not_created(request, hit, detail, key, trace);
}

const char *zc_frontend_outcome_name(zc_frontend_outcome outcome)
{
    static const char *const names[] = {"present", "built", "failed", "uncached", "bypass"};
    return (unsigned)outcome < sizeof(names) / sizeof(names[0]) ? names[outcome] : "unknown";
}

void zc_frontend_bypass(zc_cache *cache, zc_bypass_reason reason, const char *detail)
{
    zc_cache_count_bypass(cache, reason, detail);
    zc_frontend_report(zc_frontend_outcome_name(ZC_FRONTEND_BYPASS), NULL);
}

/* The key, or a bypass (counted, reported) with the driver alone. */
static bool key_or_bypass(lookup *request, zc_key *key, char **trace)
{
    char detail[256] = "the driver does not load cached binaries unchanged in this process";
    zc_bypass_reason reason = ZC_BYPASS_NOT_CACHEABLE;
    zc_status status = ZC_NOT_CACHEABLE;
    if (!atomic_load(request->frontend->hits_off)) {
        status = zc_frontend_key_files(request->request, request->device, request->compiler,
                                       request->frontend->config->binary_cache_trace, key, trace,
                                       detail, sizeof(detail), &request->files);
        reason = status == ZC_NOT_CACHEABLE ? ZC_BYPASS_NOT_CACHEABLE : ZC_BYPASS_CACHE_ERROR;
        if (status != ZC_OK && status != ZC_NOT_CACHEABLE)
            snprintf(detail, sizeof(detail), "key: %s", zc_status_name(status));
    }
    if (status == ZC_OK)
        return true;
    zc_frontend_bypass(cache_of(request), reason, detail);
    build_alone(request);
    return false;
}

zc_frontend_outcome zc_frontend_build(const zc_frontend *frontend, const zc_build_request *request,
                                      const zc_device_description *device,
                                      const zc_compiler_identity *compiler,
                                      const zc_frontend_ops *ops, void *context)
{
    lookup call = {.frontend = frontend,
                   .request = request,
                   .device = device,
                   .compiler = compiler,
                   .ops = ops,
                   .context = context,
                   .outcome = ZC_FRONTEND_UNCACHED};
    zc_key key;
    char *trace = NULL;
    call.key = &key;
    if (!key_or_bypass(&call, &key, &trace))
        return ZC_FRONTEND_BYPASS;
    if (compiler != NULL && zc_compiler_identity_changed()) {
        zc_cache_count_bypass(frontend->cache, ZC_BYPASS_COMPILER_CHANGED,
                              "the compiler loaded is not the one predicted: no hits, compiling");
        compile_and_replace(&call, &key, trace, false);
    } else {
        look_up(&call, &key, trace);
    }
    if (call.unkeyed != NULL)
        store_under_loaded_compiler(&call);
    if (call.call_failed)
        call.outcome = ZC_FRONTEND_FAILED;
    zc_frontend_report(zc_frontend_outcome_name(call.outcome), &key);
    zc_key_files_destroy(call.files);
    free(trace);
    return call.outcome;
}
