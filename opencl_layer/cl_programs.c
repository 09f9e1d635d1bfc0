/* clBuildProgram through the front end's lookup flow (frontend.h). A build
 * of a program created from source or IL, for one device, is looked up by
 * key; a miss is the driver's own build of the application's program,
 * stored when it succeeds; a hit is a program the layer builds from the
 * cached binary, which the application's program then answers from
 * (cl_hits.c, cl_queries.c, cl_kernels.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_layer_internal.h"
#include "zecache/frontend.h"
#include "zecache/log.h"

/* One clBuildProgram call with the application's arguments. */
typedef struct build_call {
    zcc_build_args app;  /* the application\'s */
    cl_device_id device; /* the one device built for */
    const zc_artifact_meta *meta;
    cl_int result;
} build_call;

cl_int zcc_build_with_driver(const zcc_build_args *args)
{
    return zcc_layer.next.clBuildProgram(args->program, args->num_devices, args->device_list,
                                         args->options, args->notify, args->user_data);
}

static bool build_alone(void *context)
{
    build_call *call = context;
    call->result = zcc_build_with_driver(&call->app);
    return call->result == CL_SUCCESS;
}

char *zcc_build_log_of(cl_program program, cl_device_id device, size_t *length)
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

/* The binary of a program built for one device (malloc'd); NULL on failure. */
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

/* The driver's build; its binary and log for the entry. */
static zc_status compile_with_driver(void *context, zc_artifact **out)
{
    build_call *call = context;
    uint64_t start = zc_artifact_clock_ns();
    if (!build_alone(call))
        return ZC_ERR_BUILD;
    zc_artifact_meta meta = *call->meta;
    meta.compile_ns = zc_artifact_clock_ns() - start;
    meta.created_unix = (uint64_t)time(NULL);
    size_t binary_size, log_length;
    unsigned char *binary = binary_of(call->app.program, &binary_size);
    char *log = zcc_build_log_of(call->app.program, call->device, &log_length);
    zc_status status = ZC_ERR_NOMEM;
    if (binary != NULL && log != NULL) {
        *out = zcc_entry_create(call->app.program, binary, binary_size, log, log_length, &meta);
        status = *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
    } else {
        zc_log_info("cannot read the binary or build log of a built OpenCL program");
    }
    free(binary);
    free(log);
    return status;
}

/* The layer's program from binary, built for the call's device with the
 * call's options (which the driver reads for a binary too); NULL, with what
 * the driver said in detail, when the driver refuses it. */
static cl_program program_from(build_call *call, const unsigned char *binary, size_t size,
                               char *detail, size_t detail_size)
{
    cl_context context = NULL;
    cl_int status = zcc_layer.next.clGetProgramInfo(call->app.program, CL_PROGRAM_CONTEXT,
                                                    sizeof(context), &context, NULL);
    cl_int binary_status = CL_SUCCESS;
    cl_program built = NULL;
    if (status == CL_SUCCESS)
        built = zcc_layer.next.clCreateProgramWithBinary(context, 1, &call->device, &size, &binary,
                                                         &binary_status, &status);
    if (built != NULL && status == CL_SUCCESS && binary_status == CL_SUCCESS)
        status =
            zcc_layer.next.clBuildProgram(built, 1, &call->device, call->app.options, NULL, NULL);
    if (built != NULL && status == CL_SUCCESS && binary_status == CL_SUCCESS)
        return built;
    snprintf(detail, detail_size, "the driver returned %d (binary status %d) for the binary",
             (int)status, (int)binary_status);
    if (built != NULL)
        zcc_layer.next.clReleaseProgram(built);
    return NULL;
}

/* Whether built gives back exactly binary: the driver did not rebuild it
 * from the intermediate code it holds (a debug key, a debugger). */
static bool loaded_unchanged(cl_program built, const unsigned char *binary, size_t size)
{
    size_t built_size;
    unsigned char *built_binary = binary_of(built, &built_size);
    bool same =
        built_binary != NULL && built_size == size && memcmp(built_binary, binary, size) == 0;
    free(built_binary);
    return same;
}

static zcc_hit *hit_of(build_call *call, const zc_artifact *artifact, const zcc_entry *entry)
{
    size_t log_size;
    const char *log = zc_artifact_build_log(artifact, &log_size);
    zcc_hit *hit = calloc(1, sizeof(*hit));
    if (hit == NULL)
        return NULL;
    *hit = (zcc_hit){.program = call->app.program,
                     .device = call->device,
                     .options = strdup(call->app.options != NULL ? call->app.options : ""),
                     .log = malloc(log_size + 1),
                     .log_size = log_size,
                     .kernels = malloc(entry->kernels_size),
                     .kernels_size = entry->kernels_size};
    if (hit->options == NULL || hit->log == NULL || hit->kernels == NULL) {
        zcc_hit_free(hit);
        return NULL;
    }
    memcpy(hit->log, log, log_size);
    hit->log[log_size] = '\0';
    memcpy(hit->kernels, entry->kernels, entry->kernels_size);
    return hit;
}

static zc_hit_outcome create_from_artifact(void *context, const zc_artifact *artifact, char *detail,
                                           size_t detail_size)
{
    build_call *call = context;
    zcc_entry entry;
    if (!zcc_entry_read(artifact, &entry)) {
        snprintf(detail, detail_size, "an entry of another form");
        return ZC_HIT_REFUSED;
    }
    cl_program built = program_from(call, entry.binary, entry.binary_size, detail, detail_size);
    if (built == NULL)
        return ZC_HIT_REFUSED;
    if (!loaded_unchanged(built, entry.binary, entry.binary_size)) {
        zcc_layer.next.clReleaseProgram(built);
        return ZC_HIT_REBUILT;
    }
    zc_hit_outcome outcome =
        zcc_hits_add_built(hit_of(call, artifact, &entry), built, detail, detail_size);
    if (outcome == ZC_HIT_CREATED)
        call->result = CL_SUCCESS;
    return outcome;
}

static const zc_frontend_ops build_ops = {
    .compile = compile_with_driver,
    .create = create_from_artifact,
    .build_alone = build_alone,
};

/* The one device of the build, when it is one of the program's. */
static bool single_device(build_call *call, zc_bypass_reason *reason, char *detail,
                          size_t detail_size)
{
    cl_device_id devices[2];
    size_t size = 0;
    if (zcc_layer.next.clGetProgramInfo(call->app.program, CL_PROGRAM_DEVICES, sizeof(devices),
                                        devices, &size) != CL_SUCCESS ||
        size != sizeof(cl_device_id)) {
        snprintf(detail, detail_size,
                 "a program of several devices (its context's): the layer caches programs of "
                 "one device");
        return false;
    }
    call->device = devices[0];
    if (call->app.device_list == NULL || call->app.device_list[0] == devices[0])
        return true;
    *reason = ZC_BYPASS_UNSUPPORTED_INPUT;
    snprintf(detail, detail_size, "a build for a device not the program's");
    return false;
}

/* Whether the call can go through the cache; if not, why. */
static bool cacheable(build_call *call, zc_bypass_reason *reason, char *detail, size_t detail_size)
{
    *reason = ZC_BYPASS_UNSUPPORTED_INPUT;
    if (call->app.program == NULL || (call->app.notify == NULL && call->app.user_data != NULL) ||
        (call->app.num_devices == 0) != (call->app.device_list == NULL)) {
        snprintf(detail, detail_size, "arguments the driver answers with an error");
        return false;
    }
    *reason = ZC_BYPASS_NOT_CACHEABLE;
    if (call->app.num_devices > 1) {
        snprintf(detail, detail_size,
                 "a build for several devices: the layer caches builds for one device");
        return false;
    }
    if (!single_device(call, reason, detail, detail_size))
        return false;
    /* Built by the driver before: whether kernels of it live (then the
     * driver refuses to build it again) only the driver knows. */
    cl_build_status built = CL_BUILD_NONE;
    if (zcc_layer.next.clGetProgramBuildInfo(call->app.program, call->device,
                                             CL_PROGRAM_BUILD_STATUS, sizeof(built), &built,
                                             NULL) != CL_SUCCESS ||
        built != CL_BUILD_NONE) {
        snprintf(detail, detail_size, "a program the driver built before");
        return false;
    }
    const char *unkeyable = zcc_unkeyable_reason(call->app.program);
    if (unkeyable != NULL) {
        snprintf(detail, detail_size, "%s", unkeyable);
        return false;
    }
    return true;
}

void *zcc_program_input(cl_program program, zc_build_input *input)
{
    static const struct {
        cl_program_info name;
        zc_input_kind kind;
    } kinds[] = {{CL_PROGRAM_IL, ZC_INPUT_SPIRV}, {CL_PROGRAM_SOURCE, ZC_INPUT_OPENCL_C}};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t size = 0;
        if (zcc_layer.next.clGetProgramInfo(program, kinds[i].name, 0, NULL, &size) != CL_SUCCESS ||
            size <= 1)
            continue;
        char *bytes = malloc(size);
        if (bytes == NULL || zcc_layer.next.clGetProgramInfo(program, kinds[i].name, size, bytes,
                                                             NULL) != CL_SUCCESS) {
            free(bytes);
            return NULL;
        }
        /* The source without its terminating NUL, as the driver compiles it. */
        *input = (zc_build_input){.kind = kinds[i].kind,
                                  .bytes = bytes,
                                  .size = kinds[i].kind == ZC_INPUT_SPIRV ? size : strlen(bytes)};
        return bytes;
    }
    return NULL;
}

bool zcc_request_of(cl_program program, const char *options, zcc_request *out, char *detail,
                    size_t detail_size)
{
    *out = (zcc_request){0};
    out->bytes = zcc_program_input(program, &out->input);
    if (out->bytes == NULL) {
        snprintf(detail, detail_size, "a program from neither source nor IL");
        return false;
    }
    out->input.flags = options;
    if (!zcc_spec_constants_for(program, &out->input, &out->constants, detail, detail_size)) {
        free(out->bytes);
        out->bytes = NULL;
        return false;
    }
    /* Without constants the key stays what it was before they were cached. */
    out->input.has_constants = out->constants.count > 0;
    out->input.constants = (zc_spec_constants){
        .count = out->constants.count, .ids = out->constants.ids, .values = out->constants.values};
    out->request = (zc_build_request){
        .api = ZC_API_OPENCL,
        .format = out->input.kind == ZC_INPUT_SPIRV ? ZC_OPENCL_BUILD_IL : ZC_OPENCL_BUILD_SOURCE,
        .input_count = 1,
        .inputs = &out->input};
    return true;
}

void zcc_request_free(zcc_request *request)
{
    zcc_spec_values_free(&request->constants);
    free(request->bytes);
}

zc_frontend zcc_frontend(void)
{
    return (zc_frontend){.cache = zcc_layer.cache,
                         .config = &zcc_layer.config,
                         .hits_off = &zcc_layer.hits_not_reproduced};
}

/* Builds call through the front end for its device, or (the bypass
 * counted) with the driver alone when it cannot. */
static void build_through_cache(build_call *call)
{
    zc_status status;
    char detail[256] = "";
    const zcc_device *device = zcc_device_of(call->device, &status, detail, sizeof(detail));
    zcc_request request;
    if (device == NULL) {
        zc_frontend_bypass(zcc_layer.cache,
                           status == ZC_OK || status == ZC_NOT_CACHEABLE ? ZC_BYPASS_NOT_CACHEABLE
                                                                         : ZC_BYPASS_CACHE_ERROR,
                           detail);
        build_alone(call);
        return;
    }
    if (!zcc_request_of(call->app.program, call->app.options, &request, detail, sizeof(detail))) {
        zc_frontend_bypass(zcc_layer.cache, ZC_BYPASS_NOT_CACHEABLE, detail);
        build_alone(call);
        return;
    }
    zc_frontend frontend = zcc_frontend();
    call->meta = &zcc_device_description(device)->meta;
    (void)zc_frontend_build(&frontend, &request.request, zcc_device_description(device),
                            zcc_device_compiler(device), &build_ops, call);
    zcc_request_free(&request);
}

/* The layer's stand-in for the application's callback, given to the driver
 * on the cached path: it only notes that the driver called it (both drivers
 * call it before clBuildProgram returns), so that the application's is
 * called exactly when the driver would have called it, and only after the
 * layer is done with the program: the callback may release it, build it or
 * another program again, or make kernels of it. */
static void CL_CALLBACK note_notified(cl_program program, void *notified)
{
    (void)program;
    *(bool *)notified = true;
}

static cl_int build_one_through_cache(void *context, zcc_notify notify, void *user_data)
{
    build_call *call = context;
    call->app.notify = notify;
    call->app.user_data = user_data;
    build_through_cache(call);
    return call->result;
}

cl_int zcc_build_guarded(cl_program program, bool refuses, zcc_notify notify, void *user_data,
                         cl_int (*build)(void *context, zcc_notify notify, void *user_data),
                         void *context)
{
    cl_int entered = zcc_building_enter(program, !refuses);
    if (entered != CL_SUCCESS)
        return entered;
    bool built = zcc_hits_drop(program), notified = false;
    cl_int result = CL_INVALID_OPERATION;
    if (built)
        result = build(context, notify != NULL ? note_notified : NULL,
                       notify != NULL ? &notified : NULL);
    zcc_building_leave(program);
    /* A hit is a build that succeeded, which both drivers report. */
    if (notify != NULL && built && (notified || result == CL_SUCCESS))
        notify(program, user_data);
    return result;
}

cl_int CL_API_CALL zcc_build_program(cl_program program, cl_uint num_devices,
                                     const cl_device_id *device_list, const char *options,
                                     zcc_notify notify, void *user_data)
{
    cl_int several_result;
    if (zcc_build_several(program, num_devices, device_list, options, notify, user_data,
                          &several_result))
        return several_result;
    build_call call = {.app = {program, num_devices, device_list, options, notify, user_data},
                       .result = CL_SUCCESS};
    zc_bypass_reason reason;
    char detail[256] = "";
    if (!cacheable(&call, &reason, detail, sizeof(detail))) {
        zc_frontend_bypass(zcc_layer.cache, reason, detail);
        if (!zcc_hits_drop(program))
            return CL_INVALID_OPERATION;
        build_alone(&call);
        return call.result;
    }
    /* Intel's driver (the one whose compiler is IGC) refuses a second build
     * while one runs; PoCL's waits for it. */
    zc_status described;
    const zcc_device *device = zcc_device_of(call.device, &described, detail, sizeof(detail));
    bool refuses = device != NULL && zcc_device_compiler(device) != NULL;
    return zcc_build_guarded(program, refuses, notify, user_data, build_one_through_cache, &call);
}
