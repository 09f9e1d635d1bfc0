/* The rest of a program's life around the cache: creations, releases,
 * specialization constants (which the driver cannot be asked for back), and
 * programs whose build the key cannot see whole (a source string holding a
 * NUL byte). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/fork_guard.h"
#include "zecache/log.h"

/* Programs whose build the key cannot see whole, with why. */
typedef struct marked_program {
    cl_program program;
    const char *reason; /* a static string */
} marked_program;

static zcc_program_table marked = ZCC_PROGRAM_TABLE_INIT;

/* Held across reading a program's reference count and releasing it, so of
 * two threads releasing its last two references one sees the last. */
static pthread_mutex_t releasing = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool releasing_guarded;

/* false when memory runs out: then the program cannot be told apart, and
 * hits go off for the process. */
static bool mark(cl_program program, const char *reason)
{
    zcc_program_table_lock(&marked);
    bool ok = zcc_program_list_find(&marked.list, program) != NULL;
    marked_program *record = ok ? NULL : malloc(sizeof(*record));
    if (record != NULL) {
        *record = (marked_program){program, reason};
        ok = zcc_program_list_add(&marked.list, record);
        if (!ok)
            free(record);
    }
    zcc_program_table_unlock(&marked);
    if (!ok)
        atomic_store(&zcc_layer.hits_not_reproduced, true);
    return ok;
}

static void forget_mark(cl_program program)
{
    zcc_program_table_lock(&marked);
    free(zcc_program_list_take(&marked.list, program));
    zcc_program_table_unlock(&marked);
}

cl_program zcc_program_born(cl_program program)
{
    if (program != NULL && (!zcc_hits_empty() || !zcc_program_table_empty(&marked))) {
        zcc_hit_free(zcc_hits_take(program));
        forget_mark(program);
    }
    if (program != NULL)
        zcc_spec_constants_forget(program);
    if (program != NULL)
        zcc_il_digest_forget(program);
    return program;
}

const char *zcc_unkeyable_reason(cl_program program)
{
    if (zcc_program_table_empty(&marked))
        return NULL;
    zcc_program_table_lock(&marked);
    const marked_program *record = zcc_program_list_find(&marked.list, program);
    const char *reason = record != NULL ? record->reason : NULL;
    zcc_program_table_unlock(&marked);
    return reason;
}

typedef struct spec_constant {
    cl_uint id;
    size_t size;
    const void *value;
} spec_constant;

static void set_on_compiled_object(zcc_hit *hit, void *context)
{
    const spec_constant *constant = context;
    if (hit->compiled &&
        zcc_layer.next.clSetProgramSpecializationConstant(hit->built, constant->id, constant->size,
                                                          constant->value) != CL_SUCCESS)
        zc_log_info("a specialization constant could not be set on a cached compiled object");
}

cl_int CL_API_CALL zcc_set_program_specialization_constant(cl_program program, cl_uint spec_id,
                                                           size_t spec_size, const void *spec_value)
{
    cl_int result =
        zcc_layer.next.clSetProgramSpecializationConstant(program, spec_id, spec_size, spec_value);
    /* Only what the driver took, so the application sees its own answer
     * to every call; a constant the layer cannot hold makes the program's
     * builds unkeyable. */
    if (result == CL_SUCCESS && !zcc_spec_constants_record(program, spec_id, spec_size, spec_value))
        (void)mark(program, "specialization constants the layer could not record");
    /* A compile hit's object is what the driver links (cl_link.c), and the
     * driver takes constants at the link, from that program. */
    spec_constant constant = {spec_id, spec_size, spec_value};
    if (result == CL_SUCCESS)
        (void)zcc_hits_with(program, set_on_compiled_object, &constant);
    return result;
}

/* A source string with a NUL byte within its length: the driver compiles
 * all of it, but CL_PROGRAM_SOURCE, which the key reads, ends at the NUL. */
cl_program CL_API_CALL zcc_create_program_with_source(cl_context context, cl_uint count,
                                                      const char **strings, const size_t *lengths,
                                                      cl_int *errcode_ret)
{
    cl_program program = zcc_program_born(
        zcc_layer.next.clCreateProgramWithSource(context, count, strings, lengths, errcode_ret));
    bool nul = false;
    for (cl_uint i = 0; program != NULL && i < count && !nul; i++) {
        size_t length = lengths != NULL && lengths[i] > 0 ? lengths[i] : strlen(strings[i]);
        nul = memchr(strings[i], '\0', length) != NULL;
    }
    if (nul)
        (void)mark(program, "a source string holding a NUL byte");
    return program;
}

cl_program CL_API_CALL zcc_create_program_with_il(cl_context context, const void *il, size_t length,
                                                  cl_int *errcode_ret)
{
    cl_program program =
        zcc_program_born(zcc_layer.next.clCreateProgramWithIL(context, il, length, errcode_ret));
    zcc_il_digest_note(program, il, length);
    return program;
}

cl_program CL_API_CALL zcc_create_program_with_binary(cl_context context, cl_uint num_devices,
                                                      const cl_device_id *device_list,
                                                      const size_t *lengths,
                                                      const unsigned char **binaries,
                                                      cl_int *binary_status, cl_int *errcode_ret)
{
    return zcc_program_born(zcc_layer.next.clCreateProgramWithBinary(
        context, num_devices, device_list, lengths, binaries, binary_status, errcode_ret));
}

cl_program CL_API_CALL zcc_create_program_with_built_in_kernels(cl_context context,
                                                                cl_uint num_devices,
                                                                const cl_device_id *device_list,
                                                                const char *kernel_names,
                                                                cl_int *errcode_ret)
{
    return zcc_program_born(zcc_layer.next.clCreateProgramWithBuiltInKernels(
        context, num_devices, device_list, kernel_names, errcode_ret));
}

cl_int CL_API_CALL zcc_release_program(cl_program program)
{
    if (zcc_hits_empty() && zcc_program_table_empty(&marked) && zcc_spec_constants_none() &&
        zcc_il_digests_none())
        return zcc_layer.next.clReleaseProgram(program);
    zc_fork_guard_lock(&releasing, &releasing_guarded);
    cl_uint references = 0;
    bool last =
        zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_REFERENCE_COUNT, sizeof(references),
                                        &references, NULL) == CL_SUCCESS &&
        references == 1;
    zcc_hit *hit = last ? zcc_hits_take(program) : NULL;
    if (last)
        forget_mark(program);
    if (last)
        zcc_spec_constants_forget(program);
    if (last)
        zcc_il_digest_forget(program);
    cl_int result = zcc_layer.next.clReleaseProgram(program);
    pthread_mutex_unlock(&releasing);
    zcc_hit_free(hit);
    return result;
}

bool zcc_hits_drop(cl_program program)
{
    zcc_hit *hit = zcc_hits_take(program);
    if (hit != NULL && hit->live_kernels > 0) {
        (void)zcc_hits_add(hit);
        return false;
    }
    zcc_hit_free(hit);
    return true;
}
