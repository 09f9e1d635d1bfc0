/* clBuildProgram, and clCompileProgram (cl_compile.c), through the front
 * end's lookup flow (frontend.h). A build of a program created from source
 * or IL, for one device, is looked up by key; a miss is the driver's own
 * build of the application's program, stored when it succeeds; a hit is a
 * program the layer builds from the cached binary (for a compile: creates
 * from the cached compiled object), which the application's program then
 * answers from (cl_hits.c, cl_queries.c, cl_kernels.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_layer_internal.h"
#include "faulted_buffer.h"
#include "prefault.h"
#include "zecache/frontend.h"
#include "zecache/frontend_several.h"
#include "zecache/log.h"

/* One clBuildProgram or clCompileProgram call with the application's
 * arguments. */
typedef struct build_call {
    zcc_build_args app;              /* the application's */
    const zcc_compile_args *compile; /* NULL for clBuildProgram */
    cl_device_id device;             /* the one device built for */
    const zc_artifact_meta *meta;
    zcc_request *request; /* the key's, while the front end runs */
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
    const zcc_compile_args *compile = call->compile;
    call->result = compile != NULL
                       ? zcc_layer.next.clCompileProgram(
                             call->app.program, call->app.num_devices, call->app.device_list,
                             call->app.options, compile->num_input_headers, compile->input_headers,
                             compile->header_include_names, call->app.notify, call->app.user_data)
                       : zcc_build_with_driver(&call->app);
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

bool zcc_binaries_of(cl_program program, cl_uint count, size_t *sizes, unsigned char **binaries)
{
    memset(binaries, 0, count * sizeof(*binaries));
    if (zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, count * sizeof(*sizes),
                                        sizes, NULL) != CL_SUCCESS)
        return false;
    for (cl_uint i = 0; i < count; i++) {
        if (sizes[i] == 0 || (binaries[i] = malloc(sizes[i])) == NULL)
            return false;
        zc_prefault_write(binaries[i], sizes[i]); /* the driver's size, not an entry's claim */
    }
    return zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_BINARIES, count * sizeof(*binaries),
                                           binaries, NULL) == CL_SUCCESS;
}

void zcc_binaries_free(cl_uint count, unsigned char **binaries)
{
    for (cl_uint i = 0; i < count; i++)
        free(binaries[i]);
}

unsigned char *zcc_binary_of(cl_program program, size_t *size)
{
    unsigned char *binary;
    if (zcc_binaries_of(program, 1, size, &binary))
        return binary;
    free(binary);
    return NULL;
}

zc_artifact *zcc_entry_made(cl_program program, cl_device_id device, bool kernels,
                            const zc_artifact_meta *device_meta, uint64_t compile_ns,
                            const unsigned char *binary, size_t binary_size)
{
    zc_artifact_meta meta = *device_meta;
    meta.compile_ns = compile_ns;
    meta.created_unix = (uint64_t)time(NULL);
    size_t log_length;
    char *log = zcc_build_log_of(program, device, &log_length);
    zc_artifact *entry = log != NULL ? zcc_entry_create(kernels ? program : NULL, binary,
                                                        binary_size, log, log_length, &meta)
                                     : NULL;
    free(log);
    return entry;
}

zc_status zcc_entry_of(cl_program program, cl_device_id device, bool kernels,
                       const zc_artifact_meta *device_meta, uint64_t start, zc_artifact **out)
{
    uint64_t compile_ns = zc_artifact_clock_ns() - start;
    size_t binary_size;
    unsigned char *binary = zcc_binary_of(program, &binary_size);
    *out = binary != NULL ? zcc_entry_made(program, device, kernels, device_meta, compile_ns,
                                           binary, binary_size)
                          : NULL;
    free(binary);
    if (*out == NULL)
        zc_log_info("cannot read the binary or build log of a built OpenCL program");
    return *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

/* The driver's build; its binary and log for the entry (a compiled object
 * has no kernels to ask). */
static zc_status compile_with_driver(void *context, zc_artifact **out)
{
    build_call *call = context;
    /* A miss's inputs are recorded from the request's bytes; without them
     * the entry is stored and the recording skipped. */
    (void)zcc_request_read_input(call->app.program, call->request);
    uint64_t start = zc_artifact_clock_ns();
    if (!build_alone(call))
        return ZC_ERR_BUILD;
    return zcc_entry_of(call->app.program, call->device, call->compile == NULL, call->meta, start,
                        out);
}

/* The layer's program from binary for device, built with options (which
 * the driver reads for a binary too), or for a compiled object left as
 * created: both drivers link a compiled object made from a binary as it is
 * (measured: Intel 22.43, PoCL 3.1). NULL, with what the driver said in
 * detail, when the driver refuses it. */
static cl_program program_from(cl_context context, cl_device_id device, const char *options,
                               bool object, const unsigned char *binary, size_t size, char *detail,
                               size_t detail_size)
{
    cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
    cl_program built = zcc_layer.next.clCreateProgramWithBinary(context, 1, &device, &size, &binary,
                                                                &binary_status, &status);
    cl_program_binary_type type = CL_PROGRAM_BINARY_TYPE_NONE;
    if (built != NULL && status == CL_SUCCESS && binary_status == CL_SUCCESS && !object)
        status = zcc_layer.next.clBuildProgram(built, 1, &device, options, NULL, NULL);
    else if (built != NULL && status == CL_SUCCESS && binary_status == CL_SUCCESS)
        status = zcc_layer.next.clGetProgramBuildInfo(built, device, CL_PROGRAM_BINARY_TYPE,
                                                      sizeof(type), &type, NULL) == CL_SUCCESS &&
                         type == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT
                     ? CL_SUCCESS
                     : CL_INVALID_BINARY;
    if (built != NULL && status == CL_SUCCESS && binary_status == CL_SUCCESS)
        return built;
    snprintf(detail, detail_size, "the driver returned %d (binary status %d) for the binary",
             (int)status, (int)binary_status);
    if (built != NULL)
        zcc_layer.next.clReleaseProgram(built);
    return NULL;
}

/* The layer's program from binary, checked to give back the bytes it was
 * made from (an executable; without_ir: zcc_entry_without_ir). */
static zc_hit_outcome made_from(cl_context context, cl_device_id device, const char *options,
                                bool object, const uint8_t *binary, size_t size, bool without_ir,
                                cl_program *built, char *detail, size_t detail_size)
{
    zc_faulted_buffer *prepared =
        object ? NULL : zcc_check_prepare(device, options, binary, size, without_ir);
    *built = program_from(context, device, options, object, binary, size, detail, detail_size);
    if (*built == NULL) {
        zc_faulted_buffer_free(prepared);
        return ZC_HIT_REFUSED;
    }
    if (!object &&
        !zcc_loaded_unchanged(*built, 1, &device, options, &size, &binary, without_ir, prepared)) {
        zcc_layer.next.clReleaseProgram(*built);
        return ZC_HIT_REBUILT;
    }
    return ZC_HIT_CREATED;
}

zc_hit_outcome zcc_program_of_entry(const zc_artifact *artifact, cl_context context,
                                    cl_device_id device, const char *options, zcc_made_as as,
                                    cl_program il_of, cl_program *built, zcc_entry *entry,
                                    char *detail, size_t detail_size)
{
    if (!zcc_entry_read(artifact, entry)) {
        snprintf(detail, detail_size, "an entry of another form");
        return ZC_HIT_REFUSED;
    }
    /* A compiled object made from a binary gives back other bytes on both
     * drivers; its hit answers with the entry's (cl_queries.c). Only a hit
     * answers CL_PROGRAM_BINARIES from the entry, so only a hit's program
     * may be made from the binary without its SPIR-V. */
    zc_hit_outcome outcome = ZC_HIT_REFUSED;
    if (entry->restore == NULL || as == ZCC_MADE_HIT)
        outcome =
            made_from(context, device, options, as == ZCC_MADE_OBJECT, entry->binary,
                      entry->binary_size, zcc_entry_without_ir(entry), built, detail, detail_size);
    if (outcome != ZC_HIT_REFUSED || entry->restore == NULL)
        return outcome;
    /* The whole binary: a program the application gets itself (a link's),
     * or a driver that refuses one without its SPIR-V (26.x, when it would
     * build the program again from it), which then decides as before. */
    uint8_t *whole = NULL;
    if (zcc_entry_whole_binary(entry, il_of, &whole) == NULL) {
        snprintf(detail, detail_size, "the whole binary cannot be made (out of memory)");
        return ZC_HIT_REFUSED;
    }
    outcome = made_from(context, device, options, false, whole, entry->whole_size, false, built,
                        detail, detail_size);
    free(whole);
    return outcome;
}

static zcc_hit *hit_of(build_call *call, const zc_artifact *artifact, const zcc_entry *entry)
{
    size_t log_size;
    const char *log = zc_artifact_build_log(artifact, &log_size);
    zcc_hit *hit = calloc(1, sizeof(*hit));
    if (hit == NULL)
        return NULL;
    /* The driver's program answers CL_PROGRAM_BINARIES with other bytes
     * than the build's for a compiled object and a binary without its
     * SPIR-V: the entry answers then. */
    bool answers_binaries = call->compile != NULL || entry->restore != NULL;
    *hit = (zcc_hit){.program = call->app.program,
                     .device = call->device,
                     .options = strdup(call->app.options != NULL ? call->app.options : ""),
                     .log = malloc(log_size + 1),
                     .log_size = log_size,
                     .kernels = malloc(entry->kernels_size),
                     .kernels_size = entry->kernels_size,
                     .compiled = call->compile != NULL,
                     .artifact = answers_binaries ? zc_artifact_ref(artifact) : NULL,
                     .entry = *entry};
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
    cl_context program_context = NULL;
    if (zcc_layer.next.clGetProgramInfo(call->app.program, CL_PROGRAM_CONTEXT,
                                        sizeof(program_context), &program_context,
                                        NULL) != CL_SUCCESS) {
        snprintf(detail, detail_size, "the program's context cannot be asked");
        return ZC_HIT_REFUSED;
    }
    cl_program built = NULL;
    zcc_entry entry;
    zc_hit_outcome outcome =
        zcc_program_of_entry(artifact, program_context, call->device, call->app.options,
                             call->compile != NULL ? ZCC_MADE_OBJECT : ZCC_MADE_HIT,
                             call->app.program, &built, &entry, detail, detail_size);
    if (outcome != ZC_HIT_CREATED)
        return outcome;
    outcome = zcc_hits_add_built(hit_of(call, artifact, &entry), built, detail, detail_size);
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
    if (unkeyable == NULL && call->compile != NULL)
        unkeyable = call->compile->bypass;
    if (unkeyable != NULL) {
        snprintf(detail, detail_size, "%s", unkeyable);
        return false;
    }
    return true;
}

/* The program's IL, else its source, as the driver holds it (malloc'd);
 * NULL when it has neither (a program from a binary or built-in kernels). */
/* The program's answer to name (CL_PROGRAM_IL or CL_PROGRAM_SOURCE) as the
 * driver holds it (malloc'd, *size bytes); NULL when empty or not asked. */
static char *program_bytes(cl_program program, cl_program_info name, size_t *size)
{
    *size = 0;
    if (zcc_layer.next.clGetProgramInfo(program, name, 0, NULL, size) != CL_SUCCESS || *size <= 1)
        return NULL;
    char *bytes = malloc(*size);
    if (bytes != NULL)
        zc_prefault_write(bytes, *size);
    if (bytes == NULL ||
        zcc_layer.next.clGetProgramInfo(program, name, *size, bytes, NULL) != CL_SUCCESS) {
        free(bytes);
        return NULL;
    }
    return bytes;
}

void *zcc_il_of(cl_program program, size_t *size)
{
    return program_bytes(program, CL_PROGRAM_IL, size);
}

void *zcc_input_of(cl_program program, zc_build_input *input)
{
    size_t size;
    char *bytes = program_bytes(program, CL_PROGRAM_IL, &size);
    if (bytes != NULL) {
        *input = (zc_build_input){.kind = ZC_INPUT_SPIRV, .bytes = bytes, .size = size};
        return bytes;
    }
    bytes = program_bytes(program, CL_PROGRAM_SOURCE, &size);
    /* The source without its terminating NUL, as the driver compiles it. */
    if (bytes != NULL)
        *input = (zc_build_input){.kind = ZC_INPUT_OPENCL_C, .bytes = bytes, .size = strlen(bytes)};
    return bytes;
}

/* A large IL's input from the digest noted at its create, its bytes left
 * for zcc_request_read_input; false when none was noted or constants are
 * set (their widths are read from the IL). */
static bool input_digested(cl_program program, zcc_request *out)
{
    if (zcc_spec_constants_set(program) ||
        !zcc_il_digest_of(program, &out->input.size, out->digest))
        return false;
    out->input.kind = ZC_INPUT_SPIRV;
    out->input.spirv_digest = out->digest;
    return true;
}

bool zcc_request_read_input(cl_program program, zcc_request *request)
{
    if (request->bytes != NULL)
        return true;
    zc_build_input read;
    request->bytes = zcc_input_of(program, &read);
    if (request->bytes == NULL || read.kind != request->input.kind ||
        read.size != request->input.size) {
        free(request->bytes);
        request->bytes = NULL;
        return false;
    }
    request->input.bytes = request->bytes;
    return true;
}

bool zcc_request_of(cl_program program, const char *options, zcc_request *out, char *detail,
                    size_t detail_size)
{
    *out = (zcc_request){0};
    if (!input_digested(program, out))
        out->bytes = zcc_input_of(program, &out->input);
    if (out->bytes == NULL && out->input.spirv_digest == NULL) {
        snprintf(detail, detail_size, "a program from neither source nor IL");
        return false;
    }
    out->input.flags = options;
    if (out->input.spirv_digest == NULL &&
        !zcc_spec_constants_for(program, &out->input, &out->constants, detail, detail_size)) {
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

/* A compile's request: the build's, with the compile's format and its
 * headers given by name; false, with why in detail, when it cannot be
 * keyed. */
static bool as_compile(zcc_request *request, const zcc_compile_args *compile, char *detail,
                       size_t detail_size)
{
    /* Intel's driver takes a compiled program's constants at the link, from
     * the program, not into its object: the object of a compile hit, made
     * from the entry's bytes, would carry none. */
    if (request->constants.count > 0) {
        snprintf(detail, detail_size,
                 "specialization constants on a compiled program (the driver takes them at "
                 "the link)");
        return false;
    }
    bool il = request->input.kind == ZC_INPUT_SPIRV;
    request->request.format = il ? ZC_OPENCL_COMPILE_IL : ZC_OPENCL_COMPILE_SOURCE;
    request->request.header_count = compile->header_count;
    request->request.headers = compile->headers;
    return true;
}

/* Builds call through the front end for its device, or (the bypass
 * counted) with the driver alone when it cannot. */
static void build_through_cache(build_call *call)
{
    zc_status status;
    char detail[256] = "";
    const zcc_device *device = zcc_device_of(call->device, &status, detail, sizeof(detail));
    if (device == NULL) {
        zc_frontend_bypass(zcc_layer.cache,
                           status == ZC_OK || status == ZC_NOT_CACHEABLE ? ZC_BYPASS_NOT_CACHEABLE
                                                                         : ZC_BYPASS_CACHE_ERROR,
                           detail);
        build_alone(call);
        return;
    }
    zcc_request request;
    if (!zcc_request_of(call->app.program, call->app.options, &request, detail, sizeof(detail))) {
        zc_frontend_bypass(zcc_layer.cache, ZC_BYPASS_NOT_CACHEABLE, detail);
        build_alone(call);
        return;
    }
    if (call->compile != NULL && !as_compile(&request, call->compile, detail, sizeof(detail))) {
        zc_frontend_bypass(zcc_layer.cache, ZC_BYPASS_NOT_CACHEABLE, detail);
        build_alone(call);
        zcc_request_free(&request);
        return;
    }
    zc_frontend frontend = zcc_frontend();
    call->meta = &zcc_device_description(device)->meta;
    call->request = &request;
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
void CL_CALLBACK zcc_note_notified(cl_program program, void *notified)
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
        result = build(context, notify != NULL ? zcc_note_notified : NULL,
                       notify != NULL ? &notified : NULL);
    zcc_building_leave(program);
    /* A hit is a build that succeeded, which both drivers report. */
    if (notify != NULL && built && (notified || result == CL_SUCCESS))
        notify(program, user_data);
    return result;
}

cl_int zcc_build_run(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                     const char *options, zcc_notify notify, void *user_data,
                     const zcc_compile_args *compile)
{
    build_call call = {.app = {program, num_devices, device_list, options, notify, user_data},
                       .compile = compile,
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

cl_int CL_API_CALL zcc_build_program(cl_program program, cl_uint num_devices,
                                     const cl_device_id *device_list, const char *options,
                                     zcc_notify notify, void *user_data)
{
    cl_int several_result;
    if (zcc_build_several(program, num_devices, device_list, options, notify, user_data,
                          &several_result))
        return several_result;
    return zcc_build_run(program, num_devices, device_list, options, notify, user_data, NULL);
}
