/* The spec constant scanner against hand-written SPIR-V (kernels/key_spec_*). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"
#include "zecache/spirv.h"

static zc_status scan(const void *spirv, size_t size, zc_spirv_spec_constants *out, char *reason)
{
    return zc_spirv_scan_spec_constants(spirv, size, out, reason, 256);
}

static const zc_spec_constant_decl expected_widths[] = {
    {1, 1}, {2, 1}, {8, 1}, {16, 2}, {32, 4}, {64, 8}, {116, 2}, {132, 4}, {164, 8},
};
#define EXPECTED_COUNT (sizeof expected_widths / sizeof expected_widths[0])

static void assert_expected_widths(const zc_spirv_spec_constants *found)
{
    cr_assert_eq(found->count, EXPECTED_COUNT);
    for (size_t i = 0; i < EXPECTED_COUNT; i++) {
        cr_assert_eq(found->decls[i].spec_id, expected_widths[i].spec_id, "decl %zu", i);
        cr_assert_eq(found->decls[i].width, expected_widths[i].width, "decl %zu", i);
    }
}

Test(spirv, widths_of_every_scalar_type)
{
    size_t size;
    void *spirv = t_read_kernel("key_spec_widths", &size);
    zc_spirv_spec_constants found;
    char reason[256] = "";
    cr_assert_eq(scan(spirv, size, &found, reason), ZC_OK, "%s", reason);
    assert_expected_widths(&found);
    zc_spirv_spec_constants_free(&found);
    free(spirv);
}

Test(spirv, width_lookup)
{
    size_t size;
    void *spirv = t_read_kernel("key_spec_widths", &size);
    zc_spirv_spec_constants found;
    char reason[256];
    cr_assert_eq(scan(spirv, size, &found, reason), ZC_OK);
    for (size_t i = 0; i < EXPECTED_COUNT; i++)
        cr_assert_eq(zc_spirv_spec_constant_width(&found, expected_widths[i].spec_id),
                     expected_widths[i].width);
    /* Undeclared ids, and the constant without a SpecId (default 7). */
    cr_assert_eq(zc_spirv_spec_constant_width(&found, 0), 0);
    cr_assert_eq(zc_spirv_spec_constant_width(&found, 7), 0);
    cr_assert_eq(zc_spirv_spec_constant_width(&found, 33), 0);
    cr_assert_eq(zc_spirv_spec_constant_width(&found, 165), 0);
    cr_assert_eq(zc_spirv_spec_constant_width(NULL, 1), 0);
    zc_spirv_spec_constants_free(&found);
    cr_assert_null(found.decls);
    cr_assert_eq(found.count, 0);
    free(spirv);
}

Test(spirv, unaligned_buffer_gives_the_same_widths)
{
    size_t size;
    void *spirv = t_read_kernel("key_spec_widths", &size);
    char *shifted = malloc(size + 1);
    memcpy(shifted + 1, spirv, size);
    zc_spirv_spec_constants found;
    char reason[256] = "";
    cr_assert_eq(scan(shifted + 1, size, &found, reason), ZC_OK, "%s", reason);
    assert_expected_widths(&found);
    zc_spirv_spec_constants_free(&found);
    free(shifted);
    free(spirv);
}

Test(spirv, big_endian_module_gives_the_same_widths)
{
    size_t size;
    uint32_t *words = t_read_kernel("key_spec_widths", &size);
    for (size_t i = 0; i < size / 4; i++)
        words[i] = __builtin_bswap32(words[i]);
    zc_spirv_spec_constants found;
    char reason[256] = "";
    cr_assert_eq(scan(words, size, &found, reason), ZC_OK, "%s", reason);
    assert_expected_widths(&found);
    zc_spirv_spec_constants_free(&found);
    free(words);
}

static void assert_refused(const char *kernel, const char *expected_reason)
{
    size_t size;
    void *spirv = t_read_kernel(kernel, &size);
    zc_spirv_spec_constants found;
    char reason[256] = "";
    cr_assert_eq(scan(spirv, size, &found, reason), ZC_NOT_CACHEABLE);
    cr_assert_str_eq(reason, expected_reason);
    cr_assert_null(found.decls);
    cr_assert_eq(found.count, 0);
    free(spirv);
}

Test(spirv, duplicate_spec_id_is_refused)
{
    assert_refused("key_spec_duplicate", "SpecId 5 is declared twice");
}

/* spirv-as numbers ids in order of first use: %kernel is %1, the decorated
 * constant %2. */
Test(spirv, constant_with_two_spec_ids_is_refused)
{
    assert_refused("key_spec_twice_decorated", "%2 has two SpecId decorations");
}

Test(spirv, spec_id_on_a_composite_is_refused)
{
    assert_refused("key_spec_composite",
                   "SpecId 3 decorates %2, which is not a spec constant of type bool or of an "
                   "8/16/32/64-bit int or float");
}

Test(spirv, spec_id_on_a_24_bit_int_is_refused)
{
    assert_refused("key_spec_odd_width",
                   "SpecId 24 decorates %2, which is not a spec constant of type bool or of an "
                   "8/16/32/64-bit int or float");
}

Test(spirv, declarations_among_functions_are_refused)
{
    size_t size;
    uint32_t *words = t_read_kernel("key_spec_late", &size);
    /* The decoration follows OpFunctionEnd, the module's last valid word. */
    size_t at = 0;
    for (size_t i = 0; i < size / 4; i++)
        if (words[i] == (1u << 16 | 56))
            at = i + 1;
    cr_assert_gt(at, 0);
    zc_spirv_spec_constants found;
    char reason[256] = "", expected[128];
    cr_assert_eq(scan(words, size, &found, reason), ZC_NOT_CACHEABLE);
    snprintf(expected, sizeof expected,
             "invalid SPIR-V: spec constant declared among functions at word %zu", at);
    cr_assert_str_eq(reason, expected);
    free(words);
}

Test(spirv, bad_instruction_length_among_functions_is_refused)
{
    size_t size;
    uint32_t *words = t_read_kernel("key_spec_widths", &size);
    /* OpLabel follows the 5-word OpFunction; give it a length of 0. */
    size_t label = 0;
    for (size_t i = 0; i < size / 4 && label == 0; i++)
        if (words[i] == (5u << 16 | 54))
            label = i + 5;
    cr_assert_eq(words[label], 2u << 16 | 248);
    words[label] = 248;
    zc_spirv_spec_constants found;
    char reason[256] = "", expected[128];
    cr_assert_eq(scan(words, size, &found, reason), ZC_NOT_CACHEABLE);
    snprintf(expected, sizeof expected, "invalid SPIR-V: bad instruction length at word %zu",
             label);
    cr_assert_str_eq(reason, expected);
    /* And one running past the end of the module. */
    words[label] = 0x100u << 16 | 248;
    cr_assert_eq(scan(words, size, &found, reason), ZC_NOT_CACHEABLE);
    cr_assert_str_eq(reason, expected);
    free(words);
}

Test(spirv, garbage_is_refused)
{
    uint32_t garbage[16];
    for (size_t i = 0; i < 16; i++)
        garbage[i] = 0x9e3779b9u * (uint32_t)(i + 1);
    zc_spirv_spec_constants found;
    char reason[256] = "";
    cr_assert_eq(scan(garbage, sizeof garbage, &found, reason), ZC_NOT_CACHEABLE);
    cr_assert_eq(strncmp(reason, "invalid SPIR-V: ", 16), 0, "%s", reason);
    cr_assert_gt(strlen(reason), 16);
}

Test(spirv, module_cut_inside_an_instruction_is_refused)
{
    size_t size;
    void *spirv = t_read_kernel("key_spec_widths", &size);
    zc_spirv_spec_constants found;
    char reason[256] = "";
    /* Header (5 words) and the first word of the two-word OpCapability. */
    cr_assert_eq(scan(spirv, 24, &found, reason), ZC_NOT_CACHEABLE);
    cr_assert_eq(strncmp(reason, "invalid SPIR-V: ", 16), 0, "%s", reason);
    free(spirv);
}

Test(spirv, size_not_a_multiple_of_four_is_refused)
{
    size_t size;
    void *spirv = t_read_kernel("key_spec_widths", &size);
    zc_spirv_spec_constants found;
    char reason[256] = "";
    cr_assert_eq(scan(spirv, size - 1, &found, reason), ZC_NOT_CACHEABLE);
    char expected[128];
    snprintf(expected, sizeof expected, "SPIR-V size %zu is not a positive multiple of 4",
             size - 1);
    cr_assert_str_eq(reason, expected);
    free(spirv);
}

Test(spirv, empty_input_is_refused)
{
    zc_spirv_spec_constants found;
    char reason[256] = "";
    cr_assert_eq(scan(NULL, 0, &found, reason), ZC_NOT_CACHEABLE);
    cr_assert_str_eq(reason, "SPIR-V size 0 is not a positive multiple of 4");
}

Test(spirv, reason_buffer_is_optional_and_bounded)
{
    size_t size;
    void *spirv = t_read_kernel("key_spec_duplicate", &size);
    zc_spirv_spec_constants found;
    cr_assert_eq(zc_spirv_scan_spec_constants(spirv, size, &found, NULL, 0), ZC_NOT_CACHEABLE);
    char reason[8];
    cr_assert_eq(zc_spirv_scan_spec_constants(spirv, size, &found, reason, sizeof reason),
                 ZC_NOT_CACHEABLE);
    cr_assert_str_eq(reason, "SpecId ");
    cr_assert_eq(zc_spirv_scan_spec_constants(spirv, size, NULL, reason, sizeof reason),
                 ZC_ERR_INVALID_ARG);
    free(spirv);
}
