/* clLinkProgram through the cache: keyed on the link's options and each
 * input's compiled object, byte for byte (a compile hit's is the entry's,
 * which the driver's compile gave), for the one device. A miss is the
 * driver's link with the application's arguments, whose binary, log and
 * kernels are stored as a build's are (cl_entry.c); a hit is a program the
 * layer builds from the cached executable, checked to give back the same
 * bytes, and handed to the application as the link's program. A library
 * link (-create-library, -enable-link-options) goes to the driver alone:
 * its result is an input to other links, which a program built from a
 * binary is not on every driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/frontend.h"

/* One clLinkProgram call; inputs has a compile hit's program replaced by the
 * layer's, which the driver links. */
typedef struct link_call {
    cl_context context;
    cl_uint num_devices;
    const cl_device_id *device_list;
    const char *options;
    cl_uint num_inputs;
    const cl_program *inputs;
    zcc_notify notify;
    void *user_data;
    cl_device_id device; /* the one device linked for */
    const zc_artifact_meta *meta;
    cl_program linked; /* what the application gets */
    cl_int result;
} link_call;

static bool link_alone(void *context)
{
    link_call *call = context;
    /* A second compile of one request (the compiler changed) links again. */
    if (call->linked != NULL)
        zcc_layer.next.clReleaseProgram(call->linked);
    call->linked = zcc_layer.next.clLinkProgram(call->context, call->num_devices, call->device_list,
                                                call->options, call->num_inputs, call->inputs,
                                                call->notify, call->user_data, &call->result);
    return call->linked != NULL && call->result == CL_SUCCESS;
}

static zc_status link_with_driver(void *context, zc_artifact **out)
{
    link_call *call = context;
    uint64_t start = zc_artifact_clock_ns();
    if (!link_alone(call))
        return ZC_ERR_BUILD;
    return zcc_entry_of(call->linked, call->device, true, call->meta, start, out);
}

static zc_hit_outcome create_linked(void *context, const zc_artifact *artifact, char *detail,
                                    size_t detail_size)
{
    link_call *call = context;
    zcc_entry entry;
    cl_program built = NULL;
    zc_hit_outcome outcome =
        zcc_program_of_entry(artifact, call->context, call->device, call->options, ZCC_MADE_PROGRAM,
                             NULL, &built, &entry, detail, detail_size);
    if (outcome == ZC_HIT_CREATED) {
        call->linked = built;
        call->result = CL_SUCCESS;
    }
    return outcome;
}

static const zc_frontend_ops link_ops = {
    .compile = link_with_driver,
    .create = create_linked,
    .build_alone = link_alone,
};

/* The link's one device: the one named, else the context's only one. */
static bool single_device(link_call *call)
{
    if (call->num_devices == 1) {
        call->device = call->device_list[0];
        return true;
    }
    size_t size = 0;
    return zcc_layer.next.clGetContextInfo(call->context, CL_CONTEXT_DEVICES, sizeof(call->device),
                                           &call->device, &size) == CL_SUCCESS &&
           size == sizeof(call->device);
}

/* Whether the call can go through the cache; if not, why. */
static bool cacheable(link_call *call, zc_bypass_reason *reason, const char **why)
{
    *reason = ZC_BYPASS_UNSUPPORTED_INPUT;
    *why = "arguments the driver answers with an error";
    if (call->context == NULL || call->num_inputs == 0 || call->inputs == NULL ||
        (call->notify == NULL && call->user_data != NULL) ||
        (call->num_devices == 0) != (call->device_list == NULL))
        return false;
    *reason = ZC_BYPASS_NOT_CACHEABLE;
    *why = "a link for several devices: the layer caches links for one device";
    if (call->num_devices > 1 || !single_device(call))
        return false;
    *why = "a library link (-create-library, -enable-link-options)";
    const char *options = call->options != NULL ? call->options : "";
    return strstr(options, "-create-library") == NULL &&
           strstr(options, "-enable-link-options") == NULL;
}

/* Each input's compiled object as the key holds it (malloc'd bytes in
 * inputs[i].bytes); NULL in *why when all could be read. */
static bool objects_of(link_call *call, const cl_program *programs, zc_build_input *inputs,
                       const char **why)
{
    for (cl_uint i = 0; i < call->num_inputs; i++) {
        cl_program_binary_type type = CL_PROGRAM_BINARY_TYPE_NONE;
        size_t size = 0;
        void *bytes = zcc_hits_object_of(programs[i], &size);
        if (bytes == NULL &&
            zcc_layer.next.clGetProgramBuildInfo(call->inputs[i], call->device,
                                                 CL_PROGRAM_BINARY_TYPE, sizeof(type), &type,
                                                 NULL) == CL_SUCCESS &&
            type == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT)
            bytes = zcc_binary_of(call->inputs[i], &size);
        inputs[i] = (zc_build_input){
            .kind = ZC_INPUT_OBJECT, .bytes = bytes, .size = size, .flags = call->options};
        /* Intel's driver links an input's constants from the program, not
         * its object's bytes, which the key holds. */
        if (bytes != NULL && zcc_spec_constants_set(programs[i])) {
            *why = "an input with specialization constants set (the driver takes them at the "
                   "link, from the program)";
            return false;
        }
        if (bytes == NULL) {
            *why = "an input that is not a compiled object of the device, or whose binary "
                   "cannot be read";
            return false;
        }
    }
    return true;
}

/* Links call through the front end; the driver alone (counted) when the
 * inputs cannot be keyed. */
static void link_through_cache(link_call *call, const cl_program *programs)
{
    zc_status status;
    char detail[256] = "";
    const zcc_device *device = zcc_device_of(call->device, &status, detail, sizeof(detail));
    zc_build_input *inputs = calloc(call->num_inputs, sizeof(*inputs));
    const char *why = "out of memory for the inputs";
    if (device == NULL || inputs == NULL || !objects_of(call, programs, inputs, &why)) {
        if (device != NULL)
            snprintf(detail, sizeof(detail), "%s", why);
        zc_frontend_bypass(zcc_layer.cache, ZC_BYPASS_NOT_CACHEABLE, detail);
        link_alone(call);
    } else {
        zc_build_request request = {.api = ZC_API_OPENCL,
                                    .format = ZC_OPENCL_LINK,
                                    .program = true,
                                    .input_count = call->num_inputs,
                                    .inputs = inputs};
        zc_frontend frontend = {.cache = zcc_layer.cache,
                                .config = &zcc_layer.config,
                                .hits_off = &zcc_layer.hits_not_reproduced};
        call->meta = &zcc_device_description(device)->meta;
        (void)zc_frontend_build(&frontend, &request, zcc_device_description(device),
                                zcc_device_compiler(device), &link_ops, call);
    }
    for (cl_uint i = 0; inputs != NULL && i < call->num_inputs; i++)
        free((void *)inputs[i].bytes);
    free(inputs);
}

/* A compile hit among the inputs is replaced by the layer's program, which
 * the driver links; NULL when memory runs out. */
static cl_program *driver_inputs(cl_uint count, const cl_program *programs)
{
    cl_program *inputs = malloc(count * sizeof(*inputs));
    for (cl_uint i = 0; inputs != NULL && i < count; i++) {
        inputs[i] = zcc_hits_built_of(programs[i]);
        if (inputs[i] == NULL)
            inputs[i] = programs[i];
        else
            zcc_layer.next.clReleaseProgram(inputs[i]); /* the hit holds it */
    }
    return inputs;
}

cl_program CL_API_CALL zcc_link_program(cl_context context, cl_uint num_devices,
                                        const cl_device_id *device_list, const char *options,
                                        cl_uint num_input_programs,
                                        const cl_program *input_programs, zcc_notify notify,
                                        void *user_data, cl_int *errcode_ret)
{
    cl_program *inputs = NULL;
    if (input_programs != NULL && num_input_programs > 0)
        inputs = driver_inputs(num_input_programs, input_programs);
    link_call call = {.context = context,
                      .num_devices = num_devices,
                      .device_list = device_list,
                      .options = options,
                      .num_inputs = num_input_programs,
                      .inputs = inputs != NULL ? inputs : input_programs,
                      .notify = notify,
                      .user_data = user_data,
                      .result = CL_SUCCESS};
    zc_bypass_reason reason;
    const char *why = NULL;
    bool notified = false;
    bool keyable = cacheable(&call, &reason, &why);
    if (keyable && inputs == NULL) {
        reason = ZC_BYPASS_CACHE_ERROR;
        why = "out of memory for the inputs";
        keyable = false;
    }
    if (!keyable) {
        zc_frontend_bypass(zcc_layer.cache, reason, why);
        link_alone(&call);
    } else {
        call.notify = notify != NULL ? zcc_note_notified : NULL;
        call.user_data = notify != NULL ? &notified : NULL;
        link_through_cache(&call, input_programs);
    }
    free(inputs);
    zcc_program_born(call.linked);
    if (errcode_ret != NULL)
        *errcode_ret = call.result;
    /* A hit is a link that succeeded, which both drivers report. */
    if (notify != NULL && call.notify == zcc_note_notified &&
        (notified || (call.linked != NULL && call.result == CL_SUCCESS)))
        notify(call.linked, user_data);
    return call.linked;
}
