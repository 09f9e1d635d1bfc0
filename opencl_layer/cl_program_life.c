/* The rest of a program's life around the cache: releases, builds the
 * cache does not serve (clCompileProgram, clLinkProgram), and programs with
 * specialization constants, whose values the layer cannot read back to key. */
#include <pthread.h>
#include <stdlib.h>

#include "cl_layer_internal.h"

static struct {
    pthread_mutex_t lock;
    cl_program *programs;
    size_t count, capacity;
    atomic_size_t live;
} with_constants = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t constants_index(cl_program program)
{
    for (size_t i = 0; i < with_constants.count; i++)
        if (with_constants.programs[i] == program)
            return i;
    return with_constants.count;
}

/* false when memory runs out: then the program cannot be told apart, and
 * hits go off for the process. */
static bool remember_constants(cl_program program)
{
    pthread_mutex_lock(&with_constants.lock);
    bool ok = constants_index(program) < with_constants.count;
    if (!ok && with_constants.count == with_constants.capacity) {
        size_t capacity = with_constants.capacity == 0 ? 8 : 2 * with_constants.capacity;
        cl_program *grown = realloc(with_constants.programs, capacity * sizeof(*grown));
        if (grown != NULL) {
            with_constants.programs = grown;
            with_constants.capacity = capacity;
        }
    }
    if (!ok && with_constants.count < with_constants.capacity) {
        with_constants.programs[with_constants.count++] = program;
        atomic_store(&with_constants.live, with_constants.count);
        ok = true;
    }
    pthread_mutex_unlock(&with_constants.lock);
    return ok;
}

static void forget_constants(cl_program program)
{
    if (atomic_load(&with_constants.live) == 0)
        return;
    pthread_mutex_lock(&with_constants.lock);
    size_t i = constants_index(program);
    if (i < with_constants.count) {
        with_constants.programs[i] = with_constants.programs[--with_constants.count];
        atomic_store(&with_constants.live, with_constants.count);
    }
    pthread_mutex_unlock(&with_constants.lock);
}

bool zcc_spec_constants_set(cl_program program)
{
    if (atomic_load(&with_constants.live) == 0)
        return false;
    pthread_mutex_lock(&with_constants.lock);
    bool found = constants_index(program) < with_constants.count;
    pthread_mutex_unlock(&with_constants.lock);
    return found;
}

cl_int CL_API_CALL zcc_set_program_specialization_constant(cl_program program, cl_uint spec_id,
                                                           size_t spec_size, const void *spec_value)
{
    cl_int result =
        zcc_layer.next.clSetProgramSpecializationConstant(program, spec_id, spec_size, spec_value);
    if (result == CL_SUCCESS && !remember_constants(program))
        atomic_store(&zcc_layer.hits_not_reproduced, true);
    return result;
}

cl_int CL_API_CALL zcc_release_program(cl_program program)
{
    cl_uint references = 0;
    bool last =
        (!zcc_hits_empty() || atomic_load(&with_constants.live) > 0) &&
        zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_REFERENCE_COUNT, sizeof(references),
                                        &references, NULL) == CL_SUCCESS &&
        references == 1;
    if (last) {
        zcc_hit_free(zcc_hits_take(program));
        forget_constants(program);
    }
    return zcc_layer.next.clReleaseProgram(program);
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

cl_int CL_API_CALL zcc_compile_program(cl_program program, cl_uint num_devices,
                                       const cl_device_id *device_list, const char *options,
                                       cl_uint num_input_headers, const cl_program *input_headers,
                                       const char **header_include_names,
                                       void(CL_CALLBACK *notify)(cl_program, void *),
                                       void *user_data)
{
    if (!zcc_hits_drop(program))
        return CL_INVALID_OPERATION;
    zc_cache_count_bypass(zcc_layer.cache, ZC_BYPASS_UNSUPPORTED_INPUT,
                          "clCompileProgram is not cached");
    return zcc_layer.next.clCompileProgram(program, num_devices, device_list, options,
                                           num_input_headers, input_headers, header_include_names,
                                           notify, user_data);
}

/* A hit among the inputs is an executable to the application, as the
 * layer's program is to the driver, which answers for it. */
cl_program CL_API_CALL zcc_link_program(cl_context context, cl_uint num_devices,
                                        const cl_device_id *device_list, const char *options,
                                        cl_uint num_input_programs,
                                        const cl_program *input_programs,
                                        void(CL_CALLBACK *notify)(cl_program, void *),
                                        void *user_data, cl_int *errcode_ret)
{
    zc_cache_count_bypass(zcc_layer.cache, ZC_BYPASS_UNSUPPORTED_INPUT,
                          "clLinkProgram is not cached");
    cl_program *inputs = NULL;
    if (!zcc_hits_empty() && input_programs != NULL && num_input_programs > 0)
        inputs = malloc(num_input_programs * sizeof(*inputs));
    for (cl_uint i = 0; inputs != NULL && i < num_input_programs; i++) {
        inputs[i] = zcc_hits_built_of(input_programs[i]);
        if (inputs[i] == NULL)
            inputs[i] = input_programs[i];
        else
            zcc_layer.next.clReleaseProgram(inputs[i]); /* the hit holds it */
    }
    cl_program linked = zcc_layer.next.clLinkProgram(
        context, num_devices, device_list, options, num_input_programs,
        inputs != NULL ? inputs : input_programs, notify, user_data, errcode_ret);
    free(inputs);
    return linked;
}
