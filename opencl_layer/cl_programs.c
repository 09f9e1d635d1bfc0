/* clBuildProgram through the cache. A build of a program created from
 * source or IL for one device is looked up by key; a miss is the driver's
 * own build of the application's program, stored when it succeeds; a hit is
 * a program the layer builds from the cached binary, which the
 * application's program answers from (cl_hits.c, cl_queries.c,
 * cl_kernels.c). Whatever goes wrong on the cache's side, the application
 * gets what the driver alone would give it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_layer_internal.h"
#include "zecache/compiler_identity.h"
#include "zecache/log.h"

typedef void(CL_CALLBACK *zcc_notify)(cl_program, void *);

/* One clBuildProgram call with the application's arguments. */
typedef struct build_call {
    cl_program program;
    cl_uint num_devices;
    const cl_device_id *device_list;
    const char *options;
    zcc_notify notify;
    void *user_data;
    cl_device_id device; /* the one device built for */
    const zc_artifact_meta *meta;
    bool ran;
    cl_int result;
} build_call;

static cl_int driver_build(build_call *call)
{
    call->ran = true;
    call->result =
        zcc_layer.next.clBuildProgram(call->program, call->num_devices, call->device_list,
                                      call->options, call->notify, call->user_data);
    return call->result;
}

/* A query's answer in malloc'd memory (one byte more, NUL); NULL on failure. */
static char *build_log_of(cl_program program, cl_device_id device, size_t *length)
{
    size_t size = 0;
    *length = 0;
    if (zcc_layer.next.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL,
                                             &size) != CL_SUCCESS)
        return NULL;
    char *log = calloc(1, size + 1);
    if (log != NULL && zcc_layer.next.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG,
                                                            size, log, NULL) != CL_SUCCESS) {
        free(log);
        return NULL;
    }
    if (log != NULL)
        *length = strlen(log);
    return log;
}

/* The binary of a program built for one device. */
static unsigned char *binary_of(cl_program program, size_t *size)
{
    *size = 0;
    if (zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(*size), size,
                                        NULL) != CL_SUCCESS ||
        *size == 0)
        return NULL;
    unsigned char *binary = malloc(*size);
    if (binary != NULL &&
        zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(binary), &binary,
                                        NULL) != CL_SUCCESS) {
        free(binary);
        binary = NULL;
    }
    return binary;
}

static zc_status compile_with_driver(void *context, zc_artifact **out)
{
    build_call *call = context;
    uint64_t start = zc_artifact_clock_ns();
    if (driver_build(call) != CL_SUCCESS)
        return ZC_ERR_BUILD;
    zc_artifact_meta meta = *call->meta;
    meta.compile_ns = zc_artifact_clock_ns() - start;
    meta.created_unix = (uint64_t)time(NULL);
    size_t binary_size, log_length;
    unsigned char *binary = binary_of(call->program, &binary_size);
    char *log = build_log_of(call->program, call->device, &log_length);
    zc_status status = ZC_ERR_BUILD;
    if (binary != NULL && log != NULL) {
        *out = zc_artifact_create(binary, binary_size, log, log_length, &meta);
        status = *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
    } else {
        zc_log_info("cannot read the binary or build log of a built OpenCL program");
    }
    free(binary);
    free(log);
    /* Intel's compiler is surely loaded now: a prediction found wrong keeps
     * this build out of the cache and hits off for the process. */
    if (zcc_device_is_intel(call->device) && zc_compiler_identity_check_loaded() &&
        status == ZC_OK) {
        zc_artifact_unref(*out);
        *out = NULL;
        return ZC_NOT_CACHEABLE;
    }
    return status;
}

typedef enum hit_outcome {
    HIT_CREATED, /* the application's program answers from the layer's */
    HIT_REFUSED, /* the driver refused the binary */
    HIT_REBUILT, /* the driver did not load the binary unchanged */
} hit_outcome;

static cl_program program_from(build_call *call, const unsigned char *binary, size_t size)
{
    cl_context context = NULL;
    cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
    if (zcc_layer.next.clGetProgramInfo(call->program, CL_PROGRAM_CONTEXT, sizeof(context),
                                        &context, NULL) != CL_SUCCESS)
        return NULL;
    cl_program built = zcc_layer.next.clCreateProgramWithBinary(context, 1, &call->device, &size,
                                                                &binary, &binary_status, &status);
    if (built == NULL || status != CL_SUCCESS || binary_status != CL_SUCCESS ||
        zcc_layer.next.clBuildProgram(built, 1, &call->device, call->options, NULL, NULL) !=
            CL_SUCCESS) {
        if (built != NULL)
            zcc_layer.next.clReleaseProgram(built);
        return NULL;
    }
    return built;
}

static bool loaded_unchanged(cl_program built, const unsigned char *binary, size_t size)
{
    size_t built_size;
    unsigned char *built_binary = binary_of(built, &built_size);
    bool same =
        built_binary != NULL && built_size == size && memcmp(built_binary, binary, size) == 0;
    free(built_binary);
    return same;
}

static zcc_hit *hit_of(build_call *call, cl_program built, const zc_artifact *artifact)
{
    size_t log_size;
    const char *log = zc_artifact_build_log(artifact, &log_size);
    zcc_hit *hit = calloc(1, sizeof(*hit));
    if (hit == NULL)
        return NULL;
    *hit = (zcc_hit){.program = call->program,
                     .built = built,
                     .device = call->device,
                     .options = strdup(call->options != NULL ? call->options : ""),
                     .log = malloc(log_size + 1),
                     .log_size = log_size};
    if (hit->options == NULL || hit->log == NULL) {
        hit->built = NULL;
        zcc_hit_free(hit);
        return NULL;
    }
    memcpy(hit->log, log, log_size);
    hit->log[log_size] = '\0';
    return hit;
}

static hit_outcome create_from_artifact(build_call *call, const zc_artifact *artifact)
{
    size_t size;
    const unsigned char *binary = zc_artifact_binary(artifact, &size);
    cl_program built = program_from(call, binary, size);
    if (built == NULL)
        return HIT_REFUSED;
    if (!loaded_unchanged(built, binary, size)) {
        zcc_layer.next.clReleaseProgram(built);
        return HIT_REBUILT;
    }
    zcc_hit *hit = hit_of(call, built, artifact);
    if (hit == NULL || !zcc_hits_add(hit)) {
        zcc_hit_free(hit);
        if (hit == NULL)
            zcc_layer.next.clReleaseProgram(built);
        return HIT_REFUSED;
    }
    /* As the driver does at the end of a build: once, before returning. */
    if (call->notify != NULL)
        call->notify(call->program, call->user_data);
    return HIT_CREATED;
}

static cl_int compile_and_replace(build_call *call, const zc_key *key, const char *trace)
{
    zc_artifact *fresh = NULL;
    zc_status status = compile_with_driver(call, &fresh);
    zc_cache_count_miss(zcc_layer.cache, status, fresh);
    if (status == ZC_OK)
        (void)zc_cache_replace(zcc_layer.cache, key, fresh, trace);
    zc_artifact_unref(fresh);
    return call->result;
}

static cl_int look_up(build_call *call, const zc_key *key, const char *trace)
{
    zc_artifact *artifact = NULL;
    zc_lookup_outcome lookup = ZC_LOOKUP_COMPILED;
    zc_status status = zc_cache_get_or_compile(zcc_layer.cache, key, trace, compile_with_driver,
                                               call, &artifact, &lookup);
    if (call->ran) {
        zc_artifact_unref(artifact);
        return call->result;
    }
    if (status != ZC_OK) {
        zc_cache_count_bypass(zcc_layer.cache, ZC_BYPASS_CACHE_ERROR, zc_status_name(status));
        return driver_build(call);
    }
    hit_outcome outcome = create_from_artifact(call, artifact);
    if (outcome != HIT_CREATED)
        zc_cache_uncount_hit(zcc_layer.cache, lookup, artifact);
    zc_artifact_unref(artifact);
    if (outcome == HIT_CREATED)
        return CL_SUCCESS;
    if (outcome == HIT_REBUILT) {
        atomic_store(&zcc_layer.hits_not_reproduced, true);
        zc_cache_count_bypass(zcc_layer.cache, ZC_BYPASS_REJECTED_BINARY,
                              "the driver rebuilt the cached binary instead of loading it; "
                              "building, and no more hits in this process");
        return driver_build(call);
    }
    zc_cache_count_bypass(zcc_layer.cache, ZC_BYPASS_REJECTED_BINARY,
                          "the driver refused the cached binary; building");
    return compile_and_replace(call, key, trace);
}

/* The one device of the build, when it is one of the program's. */
static bool single_device(build_call *call, char *detail, size_t detail_size)
{
    cl_device_id devices[2];
    size_t size = 0;
    if (zcc_layer.next.clGetProgramInfo(call->program, CL_PROGRAM_DEVICES, sizeof(devices), devices,
                                        &size) != CL_SUCCESS &&
        size <= sizeof(devices)) {
        snprintf(detail, detail_size, "cannot ask the program's devices");
        return false;
    }
    size_t count = size / sizeof(cl_device_id);
    bool listed = call->num_devices == 1 && call->device_list != NULL;
    if (listed && count >= 1)
        for (size_t i = 0; i < count && i < 2; i++)
            if (devices[i] == call->device_list[0])
                call->device = devices[i];
    if (!listed && count == 1 && call->num_devices == 0 && call->device_list == NULL)
        call->device = devices[0];
    if (call->device == NULL)
        snprintf(detail, detail_size, "a build for several devices, or for none of the program's");
    return call->device != NULL;
}

/* Whether the call can go through the cache; if not, why. */
static bool cacheable(build_call *call, zc_bypass_reason *reason, char *detail, size_t detail_size)
{
    *reason = ZC_BYPASS_UNSUPPORTED_INPUT;
    if (call->program == NULL || (call->notify == NULL && call->user_data != NULL) ||
        (call->num_devices == 0) != (call->device_list == NULL)) {
        snprintf(detail, detail_size, "invalid arguments: the driver answers");
        return false;
    }
    if (!single_device(call, detail, detail_size))
        return false;
    *reason = ZC_BYPASS_NOT_CACHEABLE;
    if (zcc_spec_constants_set(call->program)) {
        snprintf(detail, detail_size, "specialization constants were set");
        return false;
    }
    if (atomic_load(&zcc_layer.hits_not_reproduced)) {
        snprintf(detail, detail_size,
                 "the driver does not load cached binaries unchanged in this process");
        return false;
    }
    return true;
}

cl_int CL_API_CALL zcc_build_program(cl_program program, cl_uint num_devices,
                                     const cl_device_id *device_list, const char *options,
                                     zcc_notify notify, void *user_data)
{
    build_call call = {.program = program,
                       .num_devices = num_devices,
                       .device_list = device_list,
                       .options = options,
                       .notify = notify,
                       .user_data = user_data};
    if (!zcc_hits_drop(program))
        return CL_INVALID_OPERATION;
    zc_bypass_reason reason;
    char detail[256] = "";
    zc_key key;
    char *trace = NULL;
    bool ok = cacheable(&call, &reason, detail, sizeof(detail));
    if (ok) {
        zc_status status = zcc_build_key(program, call.device, options, &call.meta, &key, &trace,
                                         detail, sizeof(detail));
        reason = status == ZC_NOT_CACHEABLE ? ZC_BYPASS_NOT_CACHEABLE : ZC_BYPASS_CACHE_ERROR;
        ok = status == ZC_OK;
    }
    if (!ok) {
        zc_cache_count_bypass(zcc_layer.cache, reason, detail);
        return driver_build(&call);
    }
    cl_int result = look_up(&call, &key, trace);
    free(trace);
    return result;
}
