/* A large IL's builds keyed from the digest made at clCreateProgramWithIL
 * (cl_il_digests.c), against a stand-in for the table below the layer: the
 * IL is not read back out of the driver for the key, the key is the one
 * its bytes give, and the bytes are read back when something needs them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/key_request.h"

static int program_object;
#define PROGRAM ((cl_program)&program_object)

static unsigned char *driver_il; /* what the stand-in driver holds */
static size_t driver_il_size;
static int il_reads; /* CL_PROGRAM_IL queries with a buffer */

static cl_program CL_API_CALL fake_create_with_il(cl_context context, const void *il, size_t length,
                                                  cl_int *status)
{
    (void)context;
    driver_il = malloc(length);
    cr_assert_not_null(driver_il);
    memcpy(driver_il, il, length);
    driver_il_size = length;
    *status = CL_SUCCESS;
    return PROGRAM;
}

static cl_int CL_API_CALL fake_program_info(cl_program program, cl_program_info name, size_t size,
                                            void *value, size_t *size_ret)
{
    (void)program;
    if (name != CL_PROGRAM_IL)
        return CL_INVALID_VALUE;
    il_reads += value != NULL;
    return zcc_answer(driver_il, driver_il_size, size, value, size_ret);
}

static void set_up(void)
{
    zcc_layer.next = (cl_icd_dispatch){.clCreateProgramWithIL = fake_create_with_il,
                                       .clGetProgramInfo = fake_program_info};
    il_reads = 0;
}

static void tear_down(void)
{
    zcc_il_digest_forget(PROGRAM);
    free(driver_il);
    driver_il = NULL;
}

TestSuite(opencl_il_digest, .init = set_up, .fini = tear_down);

/* SPIR-V's header, then filler words: the key reads no further. */
static unsigned char *spirv_of(size_t size)
{
    unsigned char *il = calloc(1, size);
    cr_assert_not_null(il);
    const uint32_t header[5] = {0x07230203u, 0x00010000u, 0, 16, 0};
    memcpy(il, header, sizeof header);
    for (size_t i = sizeof header; i < size; i++)
        il[i] = (unsigned char)(i * 31u);
    return il;
}

static zc_key key_of(const zc_build_request *request)
{
    zc_key_builder *builder;
    zc_key key;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_request(builder, request, ZC_OPENCL_C_IGC), ZC_OK);
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    zc_key_builder_destroy(builder);
    return key;
}

Test(opencl_il_digest, a_large_il_is_keyed_from_its_create_without_reading_it_back)
{
    size_t size = (size_t)1 << 20;
    unsigned char *il = spirv_of(size);
    cl_int status;
    cr_assert_eq(zcc_create_program_with_il(NULL, il, size, &status), PROGRAM);
    zcc_request request;
    char detail[256];
    cr_assert(zcc_request_of(PROGRAM, "-cl-fast-relaxed-math", &request, detail, sizeof detail));
    cr_assert_eq(il_reads, 0);
    cr_assert_null(request.input.bytes);
    zc_key digested = key_of(&request.request);

    zc_build_input whole = {
        .kind = ZC_INPUT_SPIRV, .bytes = il, .size = size, .flags = "-cl-fast-relaxed-math"};
    zc_build_request from_bytes = request.request;
    from_bytes.inputs = &whole;
    zc_key expected = key_of(&from_bytes);
    cr_assert(zc_key_equal(&digested, &expected));

    /* A miss reads the bytes back, for the recording of its inputs. */
    cr_assert(zcc_request_read_input(PROGRAM, &request));
    cr_assert_eq(il_reads, 1);
    cr_assert_eq(memcmp(request.input.bytes, il, size), 0);
    zcc_request_free(&request);
    free(il);
}

Test(opencl_il_digest, a_small_il_is_read_back_at_the_build)
{
    size_t size = ZCC_IL_DIGEST_MIN_SIZE - 4;
    unsigned char *il = spirv_of(size);
    cl_int status;
    cr_assert_eq(zcc_create_program_with_il(NULL, il, size, &status), PROGRAM);
    zcc_request request;
    char detail[256];
    cr_assert(zcc_request_of(PROGRAM, NULL, &request, detail, sizeof detail));
    cr_assert_eq(il_reads, 1);
    cr_assert_null(request.input.spirv_digest);
    zcc_request_free(&request);
    free(il);
}
