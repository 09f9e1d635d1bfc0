/* What a hit answers. The application's program is the driver's, created
 * from source or IL and never built; its hit is a program the layer built
 * from the cached binary. What the build made (kernels, binaries, the build
 * status and binary type, global variables) comes from the layer's program;
 * what the application created (source, IL, context, devices, reference
 * count) from its own; the build options and log from the build the entry
 * holds, since a program from a binary answers neither as the build did
 * (intel/compute-runtime keeps no options for one, and logs nothing). */
#include <string.h>

#include "cl_layer_internal.h"

static bool answered_by_build(cl_program_info name)
{
    switch (name) {
    case CL_PROGRAM_NUM_KERNELS:
    case CL_PROGRAM_KERNEL_NAMES:
    case CL_PROGRAM_BINARY_SIZES:
    case CL_PROGRAM_BINARIES:
    case CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT:
    case CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT:
    case 0x4100: /* CL_PROGRAM_DEBUG_INFO_SIZES_INTEL */
    case 0x4101: /* CL_PROGRAM_DEBUG_INFO_INTEL */
        return true;
    default:
        return false;
    }
}

/* The binary of a hit whose entry answers it (zcc_hit.artifact): a
 * compiled object, as the driver's compile gave it (the layer's program,
 * made from it, gives other bytes), or a binary the driver was handed
 * without its SPIR-V, whole again. */
typedef struct binary_query {
    cl_program_info name;
    size_t size;
    void *value;
    size_t *size_ret;
    bool answered;
    cl_int result;
} binary_query;

static void query_entry_binary(zcc_hit *hit, void *context)
{
    binary_query *query = context;
    if (hit->artifact == NULL)
        return;
    query->answered = true;
    if (query->name == CL_PROGRAM_BINARY_SIZES) {
        query->result = zcc_answer(&hit->entry.whole_size, sizeof(hit->entry.whole_size),
                                   query->size, query->value, query->size_ret);
        return;
    }
    /* One device: one pointer, to memory the application sized. */
    unsigned char *const *to = query->value;
    query->result = to != NULL && query->size < sizeof(*to) ? CL_INVALID_VALUE : CL_SUCCESS;
    if (query->result == CL_SUCCESS && query->size_ret != NULL)
        *query->size_ret = sizeof(*to);
    if (query->result == CL_SUCCESS && to != NULL && to[0] != NULL &&
        !zcc_entry_whole(&hit->entry, hit->program, to[0]))
        query->result = CL_OUT_OF_HOST_MEMORY;
}

cl_int CL_API_CALL zcc_get_program_info(cl_program program, cl_program_info name, size_t size,
                                        void *value, size_t *size_ret)
{
    binary_query query = {name, size, value, size_ret, false, CL_SUCCESS};
    if ((name == CL_PROGRAM_BINARY_SIZES || name == CL_PROGRAM_BINARIES) &&
        zcc_hits_with(program, query_entry_binary, &query) && query.answered)
        return query.result;
    cl_program built = answered_by_build(name) ? zcc_hits_built_of(program) : NULL;
    if (built == NULL)
        return zcc_layer.next.clGetProgramInfo(program, name, size, value, size_ret);
    cl_int result = zcc_layer.next.clGetProgramInfo(built, name, size, value, size_ret);
    zcc_layer.next.clReleaseProgram(built);
    return result;
}

typedef struct text_query {
    cl_device_id device;
    cl_program_build_info name;
    size_t size;
    void *value;
    size_t *size_ret;
    bool answered;
    cl_int result;
    cl_program built; /* retained, for the other queries */
} text_query;

cl_int zcc_answer(const void *bytes, size_t bytes_size, size_t size, void *value, size_t *size_ret)
{
    if (value != NULL && size < bytes_size)
        return CL_INVALID_VALUE;
    if (value != NULL)
        memcpy(value, bytes, bytes_size);
    if (size_ret != NULL)
        *size_ret = bytes_size;
    return CL_SUCCESS;
}

/* text holds a NUL after its length bytes. */
static void answer_text(text_query *query, const char *text, size_t length)
{
    query->answered = true;
    query->result = zcc_answer(text, length + 1, query->size, query->value, query->size_ret);
}

static void query_hit(zcc_hit *hit, void *context)
{
    text_query *query = context;
    const char *log = query->device == hit->device ? hit->log : NULL;
    size_t log_size = hit->log_size;
    for (size_t i = 0; log == NULL && i < hit->other_count; i++)
        if (query->device == hit->others[i].device) {
            log = hit->others[i].log;
            log_size = hit->others[i].log_size;
        }
    /* Another device of the program: the driver's answer (an error). */
    if (log == NULL)
        return;
    cl_build_status success = CL_BUILD_SUCCESS;
    if (query->name == CL_PROGRAM_BUILD_OPTIONS)
        answer_text(query, hit->options, strlen(hit->options));
    else if (query->name == CL_PROGRAM_BUILD_STATUS && hit->compiled) {
        /* A compiled object from a binary is not built: the application's
         * was compiled. */
        query->answered = true;
        query->result =
            zcc_answer(&success, sizeof(success), query->size, query->value, query->size_ret);
    } else if (query->name == CL_PROGRAM_BUILD_LOG)
        answer_text(query, log, log_size);
    if (!query->answered) {
        zcc_layer.next.clRetainProgram(hit->built);
        query->built = hit->built;
    }
}

cl_int CL_API_CALL zcc_get_program_build_info(cl_program program, cl_device_id device,
                                              cl_program_build_info name, size_t size, void *value,
                                              size_t *size_ret)
{
    text_query query = {device, name, size, value, size_ret, false, CL_SUCCESS, NULL};
    if (!zcc_hits_with(program, query_hit, &query) || (!query.answered && query.built == NULL))
        return zcc_layer.next.clGetProgramBuildInfo(program, device, name, size, value, size_ret);
    if (query.answered)
        return query.result;
    cl_int result =
        zcc_layer.next.clGetProgramBuildInfo(query.built, device, name, size, value, size_ret);
    zcc_layer.next.clReleaseProgram(query.built);
    return result;
}
