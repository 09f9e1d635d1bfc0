/* clBuildProgram of a program of several devices through the front end
 * (frontend_several.h): each device keyed as a build for it alone would
 * be, so entries are shared with single-device builds. All found: the
 * layer's program is made from every device's binary (one
 * clCreateProgramWithBinary, one clBuildProgram for all), as a hit for one
 * device is. Any missing: the application's call unchanged, whose binary
 * for each device (CL_PROGRAM_BINARIES, in the program's device order) is
 * stored under that device's key. The hit answers queries for each of its
 * devices (cl_queries.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/frontend_several.h"
#include "zecache/log.h"

/* No OpenCL status: positive values are not used by the API's errors. */
#define UNWRITTEN_STATUS 0x7a63

typedef struct several_call {
    zcc_build_args app; /* the application\'s */
    cl_uint count;      /* the program's devices, in its order */
    cl_device_id devices[ZC_FRONTEND_MAX_DEVICES];
    const zc_device_description *descriptions[ZC_FRONTEND_MAX_DEVICES];
    const zc_compiler_identity *compilers[ZC_FRONTEND_MAX_DEVICES];
    cl_int result;
} several_call;

static bool several_alone(void *context)
{
    several_call *call = context;
    call->result = zcc_build_with_driver(&call->app);
    return call->result == CL_SUCCESS;
}

static zc_status several_compile(void *context, zc_artifact **out)
{
    several_call *call = context;
    uint64_t start = zc_artifact_clock_ns();
    if (!several_alone(call))
        return ZC_ERR_BUILD;
    /* The driver compiled all at once: each device's share of the time. */
    uint64_t compile_ns = (zc_artifact_clock_ns() - start) / call->count;
    size_t sizes[ZC_FRONTEND_MAX_DEVICES];
    unsigned char *binaries[ZC_FRONTEND_MAX_DEVICES];
    zc_status status = ZC_ERR_NOMEM;
    if (zcc_binaries_of(call->app.program, call->count, sizes, binaries)) {
        status = ZC_OK;
        for (cl_uint i = 0; i < call->count; i++) {
            out[i] =
                zcc_entry_made(call->app.program, call->devices[i], true,
                               &call->descriptions[i]->meta, compile_ns, binaries[i], sizes[i]);
            status = out[i] != NULL ? status : ZC_ERR_NOMEM;
        }
        for (cl_uint i = 0; status != ZC_OK && i < call->count; i++)
            zc_artifact_unref(out[i]);
    }
    if (status != ZC_OK)
        zc_log_info("cannot read the binaries or build logs of a built OpenCL program");
    zcc_binaries_free(call->count, binaries);
    return status;
}

/* The layer's program from the binaries, built for every device with the
 * call's options; NULL, with what the driver said in detail, when refused. */
static cl_program program_from(several_call *call, const size_t *sizes,
                               const unsigned char *const *binaries, char *detail,
                               size_t detail_size)
{
    cl_context context = NULL;
    cl_int status = zcc_layer.next.clGetProgramInfo(call->app.program, CL_PROGRAM_CONTEXT,
                                                    sizeof(context), &context, NULL);
    /* A status the driver leaves unwritten is a refusal: Intel's 26.x
     * answers so for a second root device (CreateMultipleRootDevices=2),
     * lists each kernel twice, and crashes in clCreateKernelsInProgram. */
    cl_int binary_status[ZC_FRONTEND_MAX_DEVICES];
    for (cl_uint i = 0; i < call->count; i++)
        binary_status[i] = UNWRITTEN_STATUS;
    cl_program built = NULL;
    if (status == CL_SUCCESS)
        built = zcc_layer.next.clCreateProgramWithBinary(context, call->count, call->devices, sizes,
                                                         (const unsigned char **)binaries,
                                                         binary_status, &status);
    for (cl_uint i = 0; status == CL_SUCCESS && i < call->count; i++)
        status = binary_status[i];
    if (built != NULL && status == CL_SUCCESS)
        status = zcc_layer.next.clBuildProgram(built, call->count, call->devices, call->app.options,
                                               NULL, NULL);
    if (built != NULL && status == CL_SUCCESS)
        return built;
    if (status == UNWRITTEN_STATUS)
        snprintf(detail, detail_size, "the driver gave no status for a device's binary");
    else
        snprintf(detail, detail_size, "the driver returned %d for the binaries", (int)status);
    if (built != NULL)
        zcc_layer.next.clReleaseProgram(built);
    return NULL;
}

static char *copy_log(const zc_artifact *artifact, size_t *size)
{
    const char *log = zc_artifact_build_log(artifact, size);
    char *copy = malloc(*size + 1);
    if (copy != NULL) {
        memcpy(copy, log, *size);
        copy[*size] = '\0';
    }
    return copy;
}

/* The hit record: the first device's parts as for one device, the others'
 * logs beside them. */
static zcc_hit *hit_of(several_call *call, const zc_artifact *const *artifacts,
                       const zcc_entry *first)
{
    zcc_hit *hit = calloc(1, sizeof(*hit));
    if (hit == NULL)
        return NULL;
    *hit = (zcc_hit){.program = call->app.program,
                     .device = call->devices[0],
                     .options = strdup(call->app.options != NULL ? call->app.options : ""),
                     .kernels = malloc(first->kernels_size),
                     .kernels_size = first->kernels_size,
                     .others = calloc(call->count - 1, sizeof(*hit->others))};
    bool complete = hit->options != NULL && hit->kernels != NULL && hit->others != NULL;
    hit->log = complete ? copy_log(artifacts[0], &hit->log_size) : NULL;
    complete = complete && hit->log != NULL;
    for (cl_uint i = 1; complete && i < call->count; i++) {
        struct zcc_hit_device *other = &hit->others[hit->other_count++];
        other->device = call->devices[i];
        other->log = copy_log(artifacts[i], &other->log_size);
        complete = other->log != NULL;
    }
    if (!complete) {
        zcc_hit_free(hit);
        return NULL;
    }
    memcpy(hit->kernels, first->kernels, first->kernels_size);
    return hit;
}

/* Each device's whole binary (the hit answers CL_PROGRAM_BINARIES from the
 * layer's program), joined into held[i] when the entry holds it cut. */
static bool binaries_of_entries(const several_call *call, const zc_artifact *const *artifacts,
                                zcc_entry *entries, size_t *sizes, const unsigned char **binaries,
                                uint8_t **held, char *detail, size_t detail_size)
{
    for (cl_uint i = 0; i < call->count; i++) {
        if (!zcc_entry_read(artifacts[i], &entries[i])) {
            snprintf(detail, detail_size, "an entry of another form");
            return false;
        }
        sizes[i] = entries[i].whole_size;
        binaries[i] = zcc_entry_whole_binary(&entries[i], call->app.program, &held[i]);
        if (binaries[i] == NULL) {
            snprintf(detail, detail_size, "the whole binary cannot be made (out of memory)");
            return false;
        }
    }
    return true;
}

static zc_hit_outcome several_create(void *context, const zc_artifact *const *artifacts,
                                     char *detail, size_t detail_size)
{
    several_call *call = context;
    size_t sizes[ZC_FRONTEND_MAX_DEVICES];
    const unsigned char *binaries[ZC_FRONTEND_MAX_DEVICES];
    zcc_entry entries[ZC_FRONTEND_MAX_DEVICES];
    uint8_t *held[ZC_FRONTEND_MAX_DEVICES] = {0};
    zc_hit_outcome outcome = ZC_HIT_REFUSED;
    cl_program built = NULL;
    if (binaries_of_entries(call, artifacts, entries, sizes, binaries, held, detail, detail_size))
        built = program_from(call, sizes, binaries, detail, detail_size);
    if (built != NULL && !zcc_loaded_unchanged(built, call->count, call->devices, call->app.options,
                                               sizes, binaries, false, NULL)) {
        zcc_layer.next.clReleaseProgram(built);
        built = NULL;
        outcome = ZC_HIT_REBUILT;
    }
    for (cl_uint i = 0; i < call->count; i++)
        free(held[i]);
    if (built == NULL)
        return outcome;
    outcome = zcc_hits_add_built(hit_of(call, artifacts, &entries[0]), built, detail, detail_size);
    if (outcome == ZC_HIT_CREATED)
        call->result = CL_SUCCESS;
    return outcome;
}

static const zc_frontend_several_ops several_ops = {
    .compile = several_compile,
    .create = several_create,
    .build_alone = several_alone,
};

/* Whether the call names every device of the program (or none: all). */
static bool names_every_device(const several_call *call)
{
    if (call->app.device_list == NULL)
        return true;
    if (call->app.num_devices != call->count)
        return false;
    for (cl_uint i = 0; i < call->count; i++) {
        bool named = false;
        for (cl_uint j = 0; !named && j < call->app.num_devices; j++)
            named = call->app.device_list[j] == call->devices[i];
        if (!named)
            return false;
    }
    return true;
}

/* Whether every device can be keyed and no device was built before; if
 * not, why in detail. */
static bool cacheable(several_call *call, zc_bypass_reason *reason, char *detail,
                      size_t detail_size)
{
    *reason = ZC_BYPASS_NOT_CACHEABLE;
    if (!names_every_device(call)) {
        snprintf(detail, detail_size, "a build for some of a program's devices");
        return false;
    }
    for (cl_uint i = 0; i < call->count; i++) {
        cl_build_status built = CL_BUILD_NONE;
        if (zcc_layer.next.clGetProgramBuildInfo(call->app.program, call->devices[i],
                                                 CL_PROGRAM_BUILD_STATUS, sizeof(built), &built,
                                                 NULL) != CL_SUCCESS ||
            built != CL_BUILD_NONE) {
            snprintf(detail, detail_size, "a program the driver built before");
            return false;
        }
        zc_status status;
        const zcc_device *device = zcc_device_of(call->devices[i], &status, detail, detail_size);
        if (device == NULL) {
            *reason = status == ZC_NOT_CACHEABLE ? ZC_BYPASS_NOT_CACHEABLE : ZC_BYPASS_CACHE_ERROR;
            return false;
        }
        call->descriptions[i] = zcc_device_description(device);
        call->compilers[i] = zcc_device_compiler(device);
    }
    const char *unkeyable = zcc_unkeyable_reason(call->app.program);
    if (unkeyable != NULL)
        snprintf(detail, detail_size, "%s", unkeyable);
    return unkeyable == NULL;
}

static cl_int several_through_cache(void *context, zcc_notify notify, void *user_data)
{
    several_call *call = context;
    call->app.notify = notify;
    call->app.user_data = user_data;
    char detail[256] = "";
    zcc_request request;
    if (!zcc_request_of(call->app.program, call->app.options, &request, detail, sizeof(detail))) {
        zc_frontend_bypass(zcc_layer.cache, ZC_BYPASS_NOT_CACHEABLE, detail);
        several_alone(call);
        return call->result;
    }
    /* Several devices are rare: their misses record the bytes read now. */
    (void)zcc_request_read_input(call->app.program, &request);
    zc_frontend frontend = zcc_frontend();
    (void)zc_frontend_build_several(&frontend, &request.request, call->descriptions,
                                    call->compilers, call->count, &several_ops, call);
    zcc_request_free(&request);
    return call->result;
}

bool zcc_build_several(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                       const char *options, zcc_notify notify, void *user_data, cl_int *result)
{
    several_call call = {.app = {program, num_devices, device_list, options, notify, user_data},
                         .result = CL_SUCCESS};
    size_t size = 0;
    if (program == NULL || (notify == NULL && user_data != NULL) ||
        (num_devices == 0) != (device_list == NULL) ||
        zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_DEVICES, sizeof(call.devices),
                                        call.devices, &size) != CL_SUCCESS ||
        size < 2 * sizeof(cl_device_id))
        return false;
    call.count = (cl_uint)(size / sizeof(cl_device_id));
    zc_bypass_reason reason;
    char detail[256] = "";
    if (!cacheable(&call, &reason, detail, sizeof(detail))) {
        zc_frontend_bypass(zcc_layer.cache, reason, detail);
        *result =
            zcc_hits_drop(program) ? (several_alone(&call), call.result) : CL_INVALID_OPERATION;
        return true;
    }
    /* Intel's driver refuses a second build while one runs; PoCL's waits. */
    *result = zcc_build_guarded(program, call.compilers[0] != NULL, notify, user_data,
                                several_through_cache, &call);
    return true;
}
