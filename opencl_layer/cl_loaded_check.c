/* Whether the driver loaded a hit's cached binaries unchanged: the reads
 * behind zecache/loaded_check.h for a program made from binaries, which
 * decides between the full comparison (CL_PROGRAM_BINARIES copied out) and
 * the sizes alone (CL_PROGRAM_BINARY_SIZES, no copy). */
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/frontend_several.h"

static bool loaded_sizes(void *program, size_t count, size_t *sizes)
{
    return zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, count * sizeof(*sizes),
                                           sizes, NULL) == CL_SUCCESS;
}

static bool loaded_same(void *program, const zc_loaded_binaries *cached)
{
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

bool zcc_loaded_unchanged(cl_program built, cl_uint count, const cl_device_id *devices,
                          const char *options, const size_t *sizes,
                          const unsigned char *const *binaries)
{
    const void *device_handles[ZC_FRONTEND_MAX_DEVICES];
    if (count > ZC_FRONTEND_MAX_DEVICES)
        return false;
    for (cl_uint i = 0; i < count; i++)
        device_handles[i] = devices[i];
    zc_loaded_binaries cached = {.count = count,
                                 .devices = device_handles,
                                 .options = options,
                                 .sizes = sizes,
                                 .binaries = binaries};
    return zc_loaded_unchanged(&zcc_layer.hit_checks, &cached, &program_reader, built);
}
