/* A recipe's OpenCL part (recipe.h): it reads back as written, a Level Zero
 * recipe has none and stays as it was, and an OpenCL part that is damaged
 * inside a sound container (a count over its bound, a state no key gives,
 * bytes after it, one on a recipe prewarm cannot build through OpenCL) is
 * refused with the field it broke at. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/build_request.h"
#include "zecache/key_files.h"
#include "zecache/recipe.h"
#include "zecache/sha256.h"

static const char source[] = "#include \"scale.h\"\n__kernel void k(void) {}\n";

static zc_recipe_file files[2];
static zc_recipe_variable variables[2];
static zc_recipe_opencl opencl;
static zc_recipe_input input;

/* A source build with an absent and a found header candidate, one variable
 * set and one not. */
static zc_recipe sample(const zc_key *key)
{
    files[0] = (zc_recipe_file){(char *)"/w/scale.h", ZC_KEY_FILE_ABSENT, 0, {0}};
    files[1] = (zc_recipe_file){(char *)"/w/include/scale.h", ZC_KEY_FILE_FOUND, 21, {7, 8}};
    variables[0] = (zc_recipe_variable){(char *)"POCL_EXTRA_BUILD_FLAGS", (char *)"-O1"};
    variables[1] = (zc_recipe_variable){(char *)"POCL_IGNORE_CL_STD", NULL};
    opencl = (zc_recipe_opencl){(char *)"/w", 2, files, 2, variables};
    input = (zc_recipe_input){.spirv_size = sizeof source - 1, .flags = (char *)"-I include"};
    zc_sha256_digest(source, sizeof source - 1, input.spirv_sha256);
    return (zc_recipe){.key = *key,
                       .format = ZC_OPENCL_BUILD_SOURCE,
                       .device_name = (char *)"pthread-skylake",
                       .driver_version = (char *)"3.1",
                       .input_count = 1,
                       .inputs = &input,
                       .opencl = &opencl};
}

static uint8_t *encoded(const zc_recipe *recipe, size_t *size)
{
    uint8_t *bytes = NULL;
    cr_assert_eq(zc_recipe_encode(recipe, 3, &bytes, size), ZC_OK);
    return bytes;
}

Test(recipe_opencl, an_opencl_recipe_reads_back_as_written)
{
    zc_key key = t_key(1);
    key.kind = ZC_ENTRY_OPENCL;
    zc_recipe recipe = sample(&key), read;
    size_t size = 0;
    uint8_t *bytes = encoded(&recipe, &size);
    char reason[256] = "";
    cr_assert_eq(zc_recipe_decode(bytes, size, NULL, &read, reason, sizeof reason), ZC_OK, "%s",
                 reason);
    cr_assert(zc_key_equal(&read.key, &key), "the kind is the OpenCL part's");
    cr_assert_eq(read.format, ZC_OPENCL_BUILD_SOURCE);
    cr_assert_str_eq(read.inputs[0].flags, "-I include");
    cr_assert_not_null(read.opencl);
    cr_assert_str_eq(read.opencl->working_dir, "/w");
    cr_assert_eq(read.opencl->file_count, 2);
    cr_assert_str_eq(read.opencl->files[1].path, "/w/include/scale.h");
    cr_assert_eq(read.opencl->files[0].state, ZC_KEY_FILE_ABSENT);
    cr_assert_eq(read.opencl->files[1].state, ZC_KEY_FILE_FOUND);
    cr_assert_eq(read.opencl->files[1].size, 21);
    cr_assert_eq(memcmp(read.opencl->files[1].sha256, files[1].sha256, 32), 0);
    cr_assert_eq(read.opencl->variable_count, 2);
    cr_assert_str_eq(read.opencl->variables[0].value, "-O1");
    cr_assert_null(read.opencl->variables[1].value, "not set stays distinct from empty");
    zc_recipe_free(&read);
    /* A sweep keeps only the input's digest. */
    cr_assert_eq(zc_recipe_decode_inputs(bytes, size, NULL, &read, reason, sizeof reason), ZC_OK,
                 "%s", reason);
    cr_assert_null(read.opencl);
    cr_assert_eq(memcmp(read.inputs[0].spirv_sha256, input.spirv_sha256, 32), 0);
    zc_recipe_free(&read);
    free(bytes);
}

Test(recipe_opencl, a_level_zero_recipe_has_no_opencl_part)
{
    zc_key key = t_key(2);
    zc_recipe recipe = sample(&key), read;
    recipe.opencl = NULL;
    recipe.format = 0;
    size_t size = 0;
    uint8_t *bytes = encoded(&recipe, &size);
    char reason[256] = "";
    cr_assert_eq(zc_recipe_decode(bytes, size, NULL, &read, reason, sizeof reason), ZC_OK, "%s",
                 reason);
    cr_assert_null(read.opencl);
    cr_assert_eq(read.key.kind, ZC_ENTRY_LEVEL_ZERO);
    zc_recipe_free(&read);
    free(bytes);
}

/* The recipe's content, changed by change, sealed again: a container that
 * verifies around a damaged OpenCL part. */
static void assert_refused_at(void (*change)(uint8_t *content, size_t *size), const char *field)
{
    zc_key key = t_key(3);
    zc_recipe recipe = sample(&key), read;
    size_t size = 0, content_size = 0, resealed_size = 0;
    uint8_t *bytes = encoded(&recipe, &size), *content = NULL, *resealed = NULL, id[32];
    char reason[256] = "";
    cr_assert_eq(zc_sealed_decode(ZC_RECIPE_MAGIC, bytes, size, NULL, ZC_RECIPE_MAX_CONTENT,
                                  &content, &content_size, id, reason, sizeof reason),
                 ZC_OK);
    content = realloc(content, content_size + 16);
    change(content, &content_size);
    cr_assert_eq(
        zc_sealed_encode(ZC_RECIPE_MAGIC, id, content, content_size, 3, &resealed, &resealed_size),
        ZC_OK);
    char want[128];
    snprintf(want, sizeof want, "recipe damaged at its %s", field);
    cr_assert_eq(zc_recipe_decode(resealed, resealed_size, NULL, &read, reason, sizeof reason),
                 ZC_MISS);
    cr_assert_str_eq(reason, want);
    cr_assert_eq(
        zc_recipe_decode_inputs(resealed, resealed_size, NULL, &read, reason, sizeof reason),
        ZC_MISS);
    cr_assert_str_eq(reason, want);
    free(bytes);
    free(content);
    free(resealed);
}

/* Where the OpenCL part starts: after the fixed fields, the two texts and
 * the one input (no constants). */
static size_t opencl_part_at(void)
{
    return 3 * 4 + (4 + strlen("pthread-skylake")) + (4 + strlen("3.1")) + 32 + 8 + 1 +
           (4 + strlen("-I include")) + 1 + 4;
}

static void put_le32(uint8_t *at, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        at[i] = (uint8_t)(value >> (8 * i));
}

static void other_api(uint8_t *content, size_t *size)
{
    (void)size;
    put_le32(content + opencl_part_at(), 2);
}

static void too_many_files(uint8_t *content, size_t *size)
{
    (void)size;
    size_t at = opencl_part_at() + 4 + 4 + strlen("/w");
    put_le32(content + at, ZC_RECIPE_MAX_FILES + 1);
}

static void unknown_file_state(uint8_t *content, size_t *size)
{
    (void)size;
    size_t at = opencl_part_at() + 4 + 4 + strlen("/w") + 4 + 4 + strlen("/w/scale.h");
    content[at] = 3;
}

static void bytes_after_it(uint8_t *content, size_t *size)
{
    content[(*size)++] = 0;
}

static void on_a_level_zero_format(uint8_t *content, size_t *size)
{
    (void)size;
    put_le32(content, 0);
}

Test(recipe_opencl, a_damaged_opencl_part_is_refused_with_its_field)
{
    assert_refused_at(other_api, "api");
    assert_refused_at(too_many_files, "file count");
    assert_refused_at(unknown_file_state, "file state");
    assert_refused_at(bytes_after_it, "the end (bytes follow the last input)");
    assert_refused_at(on_a_level_zero_format, "api");
}
