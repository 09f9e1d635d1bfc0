/* The OpenCL layer's "loaded unchanged" check of a large hit, against a
 * stand-in table: the first hit of a device and options copies the built
 * program's binary into a buffer faulted in while the driver made it, and
 * still compares every byte. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "faulted_buffer.h"

static int built_object, device_object;
#define BUILT ((cl_program)&built_object)
#define DEVICE ((cl_device_id)&device_object)

enum { LARGE = 2 * 1024 * 1024 + 7 };

/* What the stand-in driver holds for BUILT. */
static unsigned char *loaded;
static size_t loaded_size;
static int binaries_read;

static cl_int CL_API_CALL fake_program_info(cl_program program, cl_program_info name, size_t size,
                                            void *value, size_t *size_ret)
{
    (void)size_ret;
    cr_assert_eq(program, BUILT);
    if (name == CL_PROGRAM_BINARY_SIZES && size >= sizeof(size_t)) {
        memcpy(value, &loaded_size, sizeof(size_t));
        return CL_SUCCESS;
    }
    if (name == CL_PROGRAM_BINARIES && size >= sizeof(unsigned char *)) {
        binaries_read++;
        memcpy(*(unsigned char **)value, loaded, loaded_size);
        return CL_SUCCESS;
    }
    return CL_INVALID_VALUE;
}

static unsigned char *cached;

static void set_up(void)
{
    zcc_layer = (zcc_state){0};
    zcc_layer.next = (cl_icd_dispatch){.clGetProgramInfo = fake_program_info};
    cached = malloc(LARGE);
    loaded = malloc(LARGE);
    cr_assert(cached != NULL && loaded != NULL);
    for (size_t i = 0; i < LARGE; i++)
        cached[i] = (unsigned char)(i * 7 + 1);
    memcpy(loaded, cached, LARGE);
    loaded_size = LARGE;
    binaries_read = 0;
}

static void tear_down(void)
{
    free(cached);
    free(loaded);
}

static bool hit_of(const char *options, bool without_ir)
{
    size_t size = LARGE;
    const unsigned char *binary = cached;
    zc_faulted_buffer *prepared = zcc_check_prepare(DEVICE, options, cached, size, without_ir);
    return zcc_loaded_unchanged(BUILT, 1, &(cl_device_id){DEVICE}, options, &size, &binary,
                                without_ir, prepared);
}

static bool hit(const char *options)
{
    return hit_of(options, false);
}

TestSuite(opencl_loaded_check, .init = set_up, .fini = tear_down);

Test(opencl_loaded_check, a_large_first_hit_is_compared_in_full_then_by_size)
{
    zc_faulted_buffer *first = zcc_check_prepare(DEVICE, "-x", cached, LARGE, false);
    cr_assert_not_null(first, "a buffer for the first hit's full check");
    zc_faulted_buffer_free(first);
    cr_assert(hit("-x"));
    cr_assert_eq(binaries_read, 1);
    cr_assert(hit("-x"));
    cr_assert_eq(binaries_read, 1, "a later hit by size");
    zc_faulted_buffer *none = zcc_check_prepare(DEVICE, "-x", cached, LARGE, false);
    cr_assert_null(none, "no buffer for a check by size");
    cr_assert_null(zcc_check_prepare(DEVICE, "-y", cached, ZC_LOADED_CHECK_PREPARE_MIN - 1, false),
                   "small: none");
}

Test(opencl_loaded_check, a_large_hit_rebuilt_to_the_same_size_is_refused)
{
    loaded[LARGE - 1] ^= 0x5a;
    cr_assert_not(hit("-x"));
    cr_assert_eq(binaries_read, 1);
    cr_assert(atomic_load(&zcc_layer.hit_checks.distrust));
}

Test(opencl_loaded_check, a_large_hit_of_another_size_is_refused)
{
    loaded_size = LARGE - 1;
    cr_assert_not(hit("-x"));
    cr_assert_eq(binaries_read, 0, "refused by its size, nothing copied");
}

/* A binary without intermediate code: nothing to rebuild it from, so the
 * size decides from the first hit, no buffer is prepared, and its pass
 * vouches for no binary that has some. */
Test(opencl_loaded_check, a_hit_without_intermediate_code_is_checked_by_size_from_the_first)
{
    cr_assert_null(zcc_check_prepare(DEVICE, "-x", cached, LARGE, true));
    cr_assert(hit_of("-x", true));
    cr_assert(hit_of("-x", true));
    cr_assert_eq(binaries_read, 0, "no copy");
    cr_assert(hit("-x"));
    cr_assert_eq(binaries_read, 1, "a binary with intermediate code is still checked in full");
    loaded_size = LARGE - 1;
    cr_assert_not(hit_of("-x", true), "another size is refused");
    cr_assert(atomic_load(&zcc_layer.hit_checks.distrust));
    loaded_size = LARGE;
    cr_assert(hit_of("-x", true));
    cr_assert_eq(binaries_read, 2, "a process that distrusts checks it in full");
}
