/* Whether the driver loaded a hit's cached binaries unchanged: the reads
 * behind zecache/loaded_check.h for a program made from binaries, which
 * decides between the full comparison (CL_PROGRAM_BINARIES copied out) and
 * the sizes alone (CL_PROGRAM_BINARY_SIZES, no copy). */
#include <string.h>

#include "cl_layer_internal.h"
#include "faulted_buffer.h"
#include "zecache/frontend_several.h"

static bool loaded_sizes(void *program, size_t count, size_t *sizes)
{
    return zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, count * sizeof(*sizes),
                                           sizes, NULL) == CL_SUCCESS;
}

/* The one device's binary copied into the prepared buffer and compared;
 * false when the driver's size is not the cached one. */
static bool prepared_same(cl_program program, const zc_loaded_binaries *cached,
                          zc_faulted_buffer *prepared)
{
    size_t size = 0, prepared_size = 0;
    unsigned char *bytes = zc_faulted_buffer_wait(prepared, &prepared_size);
    return loaded_sizes(program, 1, &size) && size == cached->sizes[0] && size <= prepared_size &&
           zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(bytes), &bytes,
                                           NULL) == CL_SUCCESS &&
           memcmp(bytes, cached->binaries[0], size) == 0;
}

static bool loaded_same(void *program, const zc_loaded_binaries *cached,
                        zc_faulted_buffer *prepared)
{
    if (prepared != NULL && cached->count == 1)
        return prepared_same(program, cached, prepared);
    cl_uint count = (cl_uint)cached->count;
    size_t built_sizes[ZC_FRONTEND_MAX_DEVICES];
    unsigned char *built_binaries[ZC_FRONTEND_MAX_DEVICES];
    bool same = count <= ZC_FRONTEND_MAX_DEVICES &&
                zcc_binaries_of(program, count, built_sizes, built_binaries);
    for (cl_uint i = 0; same && i < count; i++)
        same = built_sizes[i] == cached->sizes[i] &&
               memcmp(built_binaries[i], cached->binaries[i], cached->sizes[i]) == 0;
    zcc_binaries_free(count <= ZC_FRONTEND_MAX_DEVICES ? count : 0, built_binaries);
    return same;
}

static const zc_loaded_reader program_reader = {loaded_sizes, loaded_same};

static bool as_loaded_binaries(cl_uint count, const cl_device_id *devices, const char *options,
                               const size_t *sizes, const unsigned char *const *binaries,
                               bool without_ir, const void **device_handles,
                               zc_loaded_binaries *cached)
{
    if (count > ZC_FRONTEND_MAX_DEVICES)
        return false;
    for (cl_uint i = 0; i < count; i++)
        device_handles[i] = devices[i];
    *cached = (zc_loaded_binaries){.count = count,
                                   .devices = device_handles,
                                   .options = options,
                                   .sizes = sizes,
                                   .binaries = binaries,
                                   .without_ir = without_ir};
    return true;
}

zc_faulted_buffer *zcc_check_prepare(cl_device_id device, const char *options,
                                     const unsigned char *binary, size_t size, bool without_ir)
{
    const void *device_handles[1];
    zc_loaded_binaries cached;
    return as_loaded_binaries(1, &device, options, &size, &binary, without_ir, device_handles,
                              &cached)
               ? zc_loaded_check_prepare(&zcc_layer.hit_checks, &cached)
               : NULL;
}

bool zcc_loaded_unchanged(cl_program built, cl_uint count, const cl_device_id *devices,
                          const char *options, const size_t *sizes,
                          const unsigned char *const *binaries, bool without_ir,
                          zc_faulted_buffer *prepared)
{
    const void *device_handles[ZC_FRONTEND_MAX_DEVICES];
    zc_loaded_binaries cached;
    if (!as_loaded_binaries(count, devices, options, sizes, binaries, without_ir, device_handles,
                            &cached)) {
        zc_faulted_buffer_free(prepared);
        return false;
    }
    return zc_loaded_unchanged(&zcc_layer.hit_checks, &cached, &program_reader, built, prepared);
}
