/* The key builder: every part counts, canonical forms do not, refusals stick. */
#include <criterion/criterion.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "test_support.h"
#include "zecache/key.h"

#define WIDTHS_KERNEL "key_spec_widths"
#define CONSTANT_COUNT 9

typedef struct test_spirv {
    uint8_t *bytes;
    size_t size;
} test_spirv;

#define SPIRV_HEADER_SIZE 20

/* Bytes that pass the key's SPIR-V header check: a header (magic, version
 * 1.0, generator 0, bound 1, schema 0, as little-endian words) followed by
 * body, zero-padded to whole words. Only inputs with spec constants are
 * parsed, so the body need not be valid SPIR-V. Free spirv.bytes. */
static test_spirv spirv_with_body(const void *body, size_t body_size)
{
    static const uint8_t header[SPIRV_HEADER_SIZE] = {0x03, 0x02, 0x23, 0x07, 0, 0, 1, 0, 0, 0,
                                                      0,    0,    1,    0,    0, 0, 0, 0, 0, 0};
    size_t size = sizeof header + (body_size + 3) / 4 * 4;
    test_spirv spirv = {calloc(1, size), size};
    cr_assert_not_null(spirv.bytes);
    memcpy(spirv.bytes, header, sizeof header);
    if (body_size > 0)
        memcpy(spirv.bytes + sizeof header, body, body_size);
    return spirv;
}

/* Reverses the byte order of each of the first word_count words. */
static void swap_words(uint8_t *bytes, size_t word_count)
{
    for (size_t i = 0; i < word_count; i++) {
        uint32_t word;
        memcpy(&word, bytes + 4 * i, 4);
        word = __builtin_bswap32(word);
        memcpy(bytes + 4 * i, &word, 4);
    }
}

/* Everything a key is made of, in a form tests can change one field at a
 * time. Spec constant values sit in 8-byte slots whatever their width. */
typedef struct key_inputs {
    uint8_t *spirv;
    size_t spirv_size;
    const char *flags;
    uint32_t ids[CONSTANT_COUNT];
    uint8_t values[CONSTANT_COUNT][8];
    const void *value_pointers[CONSTANT_COUNT];
    uint32_t constant_count;
    bool second_input;
    zc_library_identity driver_library;
    uint32_t driver_version;
    uint8_t uuid[16];
    uint8_t hardware[24];
    const char *hardware_name;
} key_inputs;

/* The ids of kernels/key_spec_widths.spvasm with their widths. */
static const uint32_t declared_ids[CONSTANT_COUNT] = {1, 2, 8, 16, 32, 64, 116, 132, 164};
static const uint32_t declared_widths[CONSTANT_COUNT] = {1, 1, 1, 2, 4, 8, 2, 4, 8};

static void base_inputs(key_inputs *in)
{
    memset(in, 0, sizeof *in);
    in->spirv = t_read_kernel(WIDTHS_KERNEL, &in->spirv_size);
    in->flags = "-cl-opt-disable";
    in->constant_count = CONSTANT_COUNT;
    for (uint32_t i = 0; i < CONSTANT_COUNT; i++) {
        in->ids[i] = declared_ids[i];
        memset(in->values[i], (int)(0x10 + i), sizeof in->values[i]);
    }
    snprintf(in->driver_library.name, sizeof in->driver_library.name, "libze_intel_gpu.so.1");
    snprintf(in->driver_library.path, sizeof in->driver_library.path, "/lib/libze_intel_gpu.so.1");
    in->driver_library.build_id_size = 20;
    memset(in->driver_library.build_id, 0xab, 20);
    in->driver_library.size = 4096;
    in->driver_library.mtime_sec = 1700000000;
    in->driver_library.mtime_nsec = 123456789;
    in->driver_version = 0x01030000;
    memset(in->uuid, 0x5a, sizeof in->uuid);
    memset(in->hardware, 0x33, sizeof in->hardware);
    in->hardware_name = "device properties";
}

static zc_spec_constants constants_of(key_inputs *in)
{
    for (uint32_t i = 0; i < CONSTANT_COUNT; i++)
        if (in->value_pointers[i] == NULL)
            in->value_pointers[i] = in->values[i];
    return (zc_spec_constants){in->constant_count, in->ids, in->value_pointers};
}

static zc_compiler_identity sample_compiler(void);

/* The parts common to many keys, in the order the layer adds them. */
static void add_common_parts(zc_key_builder *builder, key_inputs *in)
{
    zc_compiler_identity compiler = sample_compiler();
    cr_assert_eq(zc_key_add_compiler_identity(builder, &compiler), ZC_OK);
    cr_assert_eq(zc_key_add_driver(builder, &in->driver_library, in->driver_version, in->uuid),
                 ZC_OK);
    cr_assert_eq(zc_key_add_hardware(builder, in->hardware_name, in->hardware, sizeof in->hardware),
                 ZC_OK);
    cr_assert_eq(zc_key_add_environment(builder), ZC_OK);
}

static zc_key compute_key(key_inputs *in)
{
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    add_common_parts(builder, in);
    zc_spec_constants constants = constants_of(in);
    cr_assert_eq(zc_key_add_spirv(builder, in->spirv, in->spirv_size, in->flags, &constants), ZC_OK,
                 "%s", zc_key_builder_reason(builder));
    if (in->second_input)
        cr_assert_eq(zc_key_add_spirv(builder, in->spirv, in->spirv_size, NULL, NULL), ZC_OK);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    cr_assert_null(zc_key_builder_reason(builder));
    zc_key_builder_destroy(builder);
    return key;
}

/* Keys of SPIR-V inputs given as (input, flags) pairs, nothing else. */
static zc_key key_of_inputs(size_t count, const test_spirv *inputs, const char *const *flags)
{
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    for (size_t i = 0; i < count; i++)
        cr_assert_eq(zc_key_add_spirv(builder, inputs[i].bytes, inputs[i].size, flags[i], NULL),
                     ZC_OK, "%s", zc_key_builder_reason(builder));
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    zc_key_builder_destroy(builder);
    return key;
}

static zc_key key_of_flags(const char *flags)
{
    test_spirv spirv = spirv_with_body("spirv", 5);
    zc_key key = key_of_inputs(1, &spirv, &flags);
    free(spirv.bytes);
    return key;
}

Test(key, same_inputs_give_the_same_key_across_builders)
{
    key_inputs in;
    base_inputs(&in);
    zc_key first = compute_key(&in);
    zc_key second = compute_key(&in);
    cr_assert(zc_key_equal(&first, &second));
    free(in.spirv);
}

/* Each change below alters exactly one part; all keys must differ from the
 * base and from each other. */
typedef void (*mutation)(key_inputs *in);

static void change_spirv_byte(key_inputs *in)
{
    in->spirv[8] ^= 1; /* the generator word: still valid SPIR-V */
}
static void change_flags(key_inputs *in)
{
    in->flags = "-cl-fast-relaxed-math";
}
static void change_flags_to_null(key_inputs *in)
{
    in->flags = NULL;
}
#define CHANGE_CONSTANT(i)                                                                         \
    static void change_constant_##i(key_inputs *in)                                                \
    {                                                                                              \
        in->values[i][declared_widths[i] - 1] ^= 0x80;                                             \
    }
CHANGE_CONSTANT(0)
CHANGE_CONSTANT(1)
CHANGE_CONSTANT(2)
CHANGE_CONSTANT(3)
CHANGE_CONSTANT(4)
CHANGE_CONSTANT(5)
CHANGE_CONSTANT(6)
CHANGE_CONSTANT(7)
CHANGE_CONSTANT(8)
static void drop_last_constant(key_inputs *in)
{
    in->constant_count--;
}
static void add_second_input(key_inputs *in)
{
    in->second_input = true;
}
static void change_driver_version(key_inputs *in)
{
    in->driver_version++;
}
static void change_uuid(key_inputs *in)
{
    in->uuid[15] ^= 1;
}
static void change_library_size(key_inputs *in)
{
    in->driver_library.size++;
}
static void change_library_mtime_sec(key_inputs *in)
{
    in->driver_library.mtime_sec++;
}
static void change_library_mtime_nsec(key_inputs *in)
{
    in->driver_library.mtime_nsec++;
}
static void change_library_build_id(key_inputs *in)
{
    in->driver_library.build_id[19] ^= 1;
}
static void shorten_library_build_id(key_inputs *in)
{
    in->driver_library.build_id_size = 16;
}
static void change_library_name(key_inputs *in)
{
    in->driver_library.name[0] = 'L';
}
static void mark_library_missing(key_inputs *in)
{
    in->driver_library.path[0] = '\0';
}
static void change_hardware_byte(key_inputs *in)
{
    in->hardware[23] ^= 1;
}
static void change_hardware_name(key_inputs *in)
{
    in->hardware_name = "device propertieS";
}

static const struct {
    const char *name;
    mutation apply;
} mutations[] = {
    {"spirv byte", change_spirv_byte},
    {"flags", change_flags},
    {"flags NULL", change_flags_to_null},
    {"bool true", change_constant_0},
    {"bool false", change_constant_1},
    {"int8", change_constant_2},
    {"int16", change_constant_3},
    {"int32", change_constant_4},
    {"int64", change_constant_5},
    {"half", change_constant_6},
    {"float", change_constant_7},
    {"double", change_constant_8},
    {"one constant fewer", drop_last_constant},
    {"second input", add_second_input},
    {"driver version", change_driver_version},
    {"uuid", change_uuid},
    {"library size", change_library_size},
    {"library mtime seconds", change_library_mtime_sec},
    {"library mtime nanoseconds", change_library_mtime_nsec},
    {"library build-id", change_library_build_id},
    {"library build-id size", shorten_library_build_id},
    {"library name", change_library_name},
    {"library missing", mark_library_missing},
    {"hardware byte", change_hardware_byte},
    {"hardware name", change_hardware_name},
};
#define MUTATION_COUNT (sizeof mutations / sizeof mutations[0])

Test(key, each_part_changed_alone_changes_the_key)
{
    key_inputs in;
    base_inputs(&in);
    zc_key keys[MUTATION_COUNT + 1];
    keys[0] = compute_key(&in);
    free(in.spirv);
    for (size_t m = 0; m < MUTATION_COUNT; m++) {
        base_inputs(&in);
        mutations[m].apply(&in);
        keys[m + 1] = compute_key(&in);
        free(in.spirv);
    }
    for (size_t a = 0; a <= MUTATION_COUNT; a++)
        for (size_t b = a + 1; b <= MUTATION_COUNT; b++)
            cr_assert(!zc_key_equal(&keys[a], &keys[b]), "%s == %s",
                      a ? mutations[a - 1].name : "base", mutations[b - 1].name);
}

Test(key, constant_order_does_not_change_the_key)
{
    key_inputs in;
    base_inputs(&in);
    zc_key forward = compute_key(&in);
    key_inputs reversed;
    base_inputs(&reversed);
    for (uint32_t i = 0; i < CONSTANT_COUNT; i++) {
        reversed.ids[i] = in.ids[CONSTANT_COUNT - 1 - i];
        reversed.value_pointers[i] = in.values[CONSTANT_COUNT - 1 - i];
    }
    zc_key backward = compute_key(&reversed);
    cr_assert(zc_key_equal(&forward, &backward));
    free(in.spirv);
    free(reversed.spirv);
}

Test(key, bytes_beyond_the_declared_width_are_not_read)
{
    key_inputs in;
    base_inputs(&in);
    zc_key base = compute_key(&in);
    for (uint32_t i = 0; i < CONSTANT_COUNT; i++)
        for (uint32_t byte = declared_widths[i]; byte < 8; byte++)
            in.values[i][byte] ^= 0xff;
    zc_key changed_beyond = compute_key(&in);
    cr_assert(zc_key_equal(&base, &changed_beyond));
    free(in.spirv);
}

/* Each value in a heap block of exactly its width: under AddressSanitizer a
 * wider read would fail the test. */
Test(key, values_in_buffers_of_exactly_their_width)
{
    key_inputs in;
    base_inputs(&in);
    zc_key base = compute_key(&in);
    void *exact[CONSTANT_COUNT];
    for (uint32_t i = 0; i < CONSTANT_COUNT; i++) {
        exact[i] = malloc(declared_widths[i]);
        memcpy(exact[i], in.values[i], declared_widths[i]);
        in.value_pointers[i] = exact[i];
    }
    zc_key from_exact = compute_key(&in);
    cr_assert(zc_key_equal(&base, &from_exact));
    for (uint32_t i = 0; i < CONSTANT_COUNT; i++)
        free(exact[i]);
    free(in.spirv);
}

Test(key, no_constants_and_zero_constants_are_the_same)
{
    zc_key_builder *with_null, *with_zero;
    cr_assert_eq(zc_key_builder_create(false, &with_null), ZC_OK);
    cr_assert_eq(zc_key_builder_create(false, &with_zero), ZC_OK);
    zc_spec_constants zero = {0, NULL, NULL};
    test_spirv spirv = spirv_with_body("abcd", 4);
    cr_assert_eq(zc_key_add_spirv(with_null, spirv.bytes, spirv.size, "", NULL), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(with_zero, spirv.bytes, spirv.size, "", &zero), ZC_OK);
    free(spirv.bytes);
    zc_key a, b;
    cr_assert_eq(zc_key_finish(with_null, &a), ZC_OK);
    cr_assert_eq(zc_key_finish(with_zero, &b), ZC_OK);
    cr_assert(zc_key_equal(&a, &b));
    zc_key_builder_destroy(with_null);
    zc_key_builder_destroy(with_zero);
}

Test(key, null_and_empty_flags_differ)
{
    zc_key null_flags = key_of_flags(NULL);
    zc_key empty_flags = key_of_flags("");
    zc_key blank_flags = key_of_flags(" ");
    cr_assert(!zc_key_equal(&null_flags, &empty_flags));
    cr_assert(!zc_key_equal(&empty_flags, &blank_flags));
    cr_assert(!zc_key_equal(&null_flags, &blank_flags));
}

/* The driver splits flags on single spaces only: a tab or newline joins two
 * options into one, a doubled space makes an empty one. Every white space
 * variant of the same options is its own key. */
Test(key, flags_differing_only_in_white_space_are_different_keys)
{
    static const char *const variants[] = {
        "-ze-opt-level=1 -g",   "-ze-opt-level=1\t-g",  "-ze-opt-level=1\n-g",
        "-ze-opt-level=1\r-g",  "-ze-opt-level=1\v-g",  "-ze-opt-level=1\f-g",
        "-ze-opt-level=1  -g",  "-ze-opt-level=1 -g ",  " -ze-opt-level=1 -g",
        "-ze-opt-level=1 -g\n", "-ze-opt-level=1 \t-g", "\t-ze-opt-level=1 -g",
        "-ze-opt-level=1-g",    "-g -ze-opt-level=1",
    };
    enum { COUNT = sizeof variants / sizeof variants[0] };
    zc_key keys[COUNT];
    for (size_t i = 0; i < COUNT; i++)
        keys[i] = key_of_flags(variants[i]);
    for (size_t a = 0; a < COUNT; a++)
        for (size_t b = a + 1; b < COUNT; b++)
            cr_assert(!zc_key_equal(&keys[a], &keys[b]), "\"%s\" and \"%s\" share a key",
                      variants[a], variants[b]);
}

/* Long flags (past any stack buffer) are keyed whole, to the last byte. */
Test(key, long_flags_are_keyed_to_the_last_byte)
{
    char long_flags[4096];
    size_t used = 0;
    for (int i = 0; i < 400; i++)
        used += (size_t)snprintf(long_flags + used, sizeof long_flags - used, "-D%d ", i);
    zc_key with_trailing_space = key_of_flags(long_flags);
    long_flags[used - 1] = '\t';
    zc_key with_trailing_tab = key_of_flags(long_flags);
    long_flags[used - 1] = '\0';
    zc_key without = key_of_flags(long_flags);
    cr_assert(!zc_key_equal(&with_trailing_space, &with_trailing_tab));
    cr_assert(!zc_key_equal(&with_trailing_space, &without));
    cr_assert(!zc_key_equal(&with_trailing_tab, &without));
    zc_key again = key_of_flags(long_flags);
    cr_assert(zc_key_equal(&without, &again));
}

Test(key, boundaries_between_inputs_are_kept)
{
    test_spirv spirv = spirv_with_body("S", 1);
    const test_spirv spirv_twice[] = {spirv, spirv};
    const char *flags_ab_empty[] = {"ab", ""};
    const char *flags_a_b[] = {"a", "b"};
    zc_key first = key_of_inputs(2, spirv_twice, flags_ab_empty);
    zc_key second = key_of_inputs(2, spirv_twice, flags_a_b);
    cr_assert(!zc_key_equal(&first, &second));

    /* The same three headers in a row, split after the second or the first. */
    test_spirv header = spirv_with_body(NULL, 0);
    test_spirv two_headers = spirv_with_body(header.bytes, header.size);
    const test_spirv bytes_split_late[] = {two_headers, header};
    const test_spirv bytes_split_early[] = {header, two_headers};
    const char *no_flags[] = {NULL, NULL};
    zc_key late = key_of_inputs(2, bytes_split_late, no_flags);
    zc_key early = key_of_inputs(2, bytes_split_early, no_flags);
    cr_assert(!zc_key_equal(&late, &early));

    /* Flags "x" on the first input vs. on the second. */
    const char *flags_first[] = {"x", NULL};
    const char *flags_second[] = {NULL, "x"};
    zc_key on_first = key_of_inputs(2, spirv_twice, flags_first);
    zc_key on_second = key_of_inputs(2, spirv_twice, flags_second);
    cr_assert(!zc_key_equal(&on_first, &on_second));
    free(spirv.bytes);
    free(header.bytes);
    free(two_headers.bytes);
}

/* A module written on a host of the other byte order: SPIR-V all the same. */
Test(key, byte_swapped_spirv_is_keyed)
{
    test_spirv native = spirv_with_body("abcd", 4);
    test_spirv swapped = spirv_with_body("abcd", 4);
    swap_words(swapped.bytes, SPIRV_HEADER_SIZE / 4);
    cr_assert_eq(memcmp(swapped.bytes, "\x07\x23\x02\x03", 4), 0);
    const char *no_flags[] = {NULL};
    zc_key native_key = key_of_inputs(1, &native, no_flags);
    zc_key swapped_key = key_of_inputs(1, &swapped, no_flags);
    cr_assert(!zc_key_equal(&native_key, &swapped_key));
    free(native.bytes);
    free(swapped.bytes);

    /* With spec constants the whole module is parsed, in its byte order. */
    key_inputs in;
    base_inputs(&in);
    swap_words(in.spirv, in.spirv_size / 4);
    compute_key(&in);
    free(in.spirv);
}

/* ---- refusals ---- */

static zc_key_builder *builder_with_constants(const char *kernel, uint32_t count,
                                              const uint32_t *ids, zc_status expected)
{
    size_t size;
    void *spirv = t_read_kernel(kernel, &size);
    static const uint8_t value[8];
    const void *values[4] = {value, value, value, value};
    zc_spec_constants constants = {count, ids, values};
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(true, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, spirv, size, NULL, &constants), expected);
    free(spirv);
    return builder;
}

static void assert_stays_refused(zc_key_builder *builder, const char *reason)
{
    cr_assert_str_eq(zc_key_builder_reason(builder), reason);
    cr_assert_eq(zc_key_add_hardware(builder, "x", "y", 1), ZC_NOT_CACHEABLE);
    cr_assert_eq(zc_key_add_environment(builder), ZC_NOT_CACHEABLE);
    test_spirv spirv = spirv_with_body("abcd", 4);
    cr_assert_eq(zc_key_add_spirv(builder, spirv.bytes, spirv.size, NULL, NULL), ZC_NOT_CACHEABLE);
    free(spirv.bytes);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_NOT_CACHEABLE);
    cr_assert_str_eq(zc_key_builder_reason(builder), reason);
    cr_assert_not_null(strstr(zc_key_builder_trace(builder), "---- refused ----\n"));
    zc_key_builder_destroy(builder);
}

Test(key, unknown_constant_id_is_not_cacheable)
{
    const uint32_t ids[] = {32, 999};
    zc_key_builder *builder = builder_with_constants(WIDTHS_KERNEL, 2, ids, ZC_NOT_CACHEABLE);
    assert_stays_refused(builder, "spec constant id 999 is not declared in SPIR-V input 0");
}

Test(key, constant_given_twice_is_not_cacheable)
{
    const uint32_t ids[] = {32, 8, 32};
    zc_key_builder *builder = builder_with_constants(WIDTHS_KERNEL, 3, ids, ZC_NOT_CACHEABLE);
    assert_stays_refused(builder, "spec constant id 32 is given twice");
}

Test(key, duplicate_spec_id_in_spirv_is_not_cacheable)
{
    const uint32_t ids[] = {5};
    zc_key_builder *builder =
        builder_with_constants("key_spec_duplicate", 1, ids, ZC_NOT_CACHEABLE);
    assert_stays_refused(builder, "SPIR-V input 0: SpecId 5 is declared twice");
}

Test(key, garbage_with_constants_is_not_cacheable)
{
    const uint32_t ids[] = {1};
    static const uint8_t value[8];
    const void *values[] = {value};
    zc_spec_constants constants = {1, ids, values};
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    test_spirv garbage = spirv_with_body("garbage!", 8);
    cr_assert_eq(zc_key_add_spirv(builder, garbage.bytes, garbage.size, NULL, &constants),
                 ZC_NOT_CACHEABLE);
    const char *reason = zc_key_builder_reason(builder);
    cr_assert_eq(strncmp(reason, "SPIR-V input 0: invalid SPIR-V: ", 32), 0, "%s", reason);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_NOT_CACHEABLE);
    zc_key_builder_destroy(builder);
    free(garbage.bytes);
}

/* A read cut short: mid-word it is not SPIR-V at all; at a word boundary
 * inside the function (here in its OpLabel, the 2 words after the 5-word
 * OpFunction) the walk over the function section finds the cut. */
Test(key, truncated_spirv_with_constants_is_not_cacheable)
{
    size_t size;
    uint8_t *spirv = t_read_kernel(WIDTHS_KERNEL, &size);
    const uint32_t ids[] = {1};
    static const uint8_t value[8];
    const void *values[] = {value};
    zc_spec_constants constants = {1, ids, values};
    const size_t cut_sizes[] = {size - 2, size - 12};
    char expected[2][128];
    snprintf(expected[0], sizeof expected[0], "input 0 is not SPIR-V (%zu bytes, no SPIR-V header)",
             size - 2);
    snprintf(expected[1], sizeof expected[1],
             "SPIR-V input 0: invalid SPIR-V: bad instruction length at word %zu",
             (size - 12) / 4 - 1);
    for (int i = 0; i < 2; i++) {
        zc_key_builder *builder;
        cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
        cr_assert_eq(zc_key_add_spirv(builder, spirv, cut_sizes[i], NULL, &constants),
                     ZC_NOT_CACHEABLE);
        cr_assert_str_eq(zc_key_builder_reason(builder), expected[i]);
        zc_key_builder_destroy(builder);
    }
    free(spirv);
}

Test(key, constant_without_value_is_refused)
{
    size_t size;
    void *spirv = t_read_kernel(WIDTHS_KERNEL, &size);
    const uint32_t ids[] = {32};
    const void *values[] = {NULL};
    zc_spec_constants constants = {1, ids, values};
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, spirv, size, NULL, &constants), ZC_ERR_INVALID_ARG);
    cr_assert_str_eq(zc_key_builder_reason(builder), "spec constant id 32 has no value");
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_NOT_CACHEABLE);
    zc_key_builder_destroy(builder);
    free(spirv);
}

/* ---- inputs that are not SPIR-V ---- */

/* The driver fails such an input or makes an empty module of it, which must
 * not be handed out again: the input is refused, and so is the whole key,
 * also when it follows valid_before valid inputs. */
static void assert_not_spirv(unsigned valid_before, const void *bytes, size_t size)
{
    test_spirv valid = spirv_with_body(NULL, 0);
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(true, &builder), ZC_OK);
    for (unsigned i = 0; i < valid_before; i++)
        cr_assert_eq(zc_key_add_spirv(builder, valid.bytes, valid.size, NULL, NULL), ZC_OK);
    free(valid.bytes);
    cr_assert_eq(zc_key_add_spirv(builder, bytes, size, NULL, NULL), ZC_NOT_CACHEABLE, "%zu bytes",
                 size);
    char reason[128];
    snprintf(reason, sizeof reason, "input %u is not SPIR-V (%zu bytes, no SPIR-V header)",
             valid_before, size);
    assert_stays_refused(builder, reason);
}

Test(key, input_shorter_than_a_header_is_not_spirv)
{
    test_spirv spirv = spirv_with_body(NULL, 0);
    assert_not_spirv(0, spirv.bytes, SPIRV_HEADER_SIZE - 4);
    assert_not_spirv(0, spirv.bytes, 4);
    free(spirv.bytes);
}

Test(key, input_of_no_whole_words_is_not_spirv)
{
    test_spirv spirv = spirv_with_body("abcd", 4);
    assert_not_spirv(0, spirv.bytes, spirv.size - 1);
    assert_not_spirv(2, spirv.bytes, spirv.size - 2);
    free(spirv.bytes);
}

Test(key, input_with_another_magic_number_is_not_spirv)
{
    test_spirv spirv = spirv_with_body("abcd", 4);
    spirv.bytes[3] ^= 0x80;
    assert_not_spirv(0, spirv.bytes, spirv.size);
    swap_words(spirv.bytes, 1);
    assert_not_spirv(1, spirv.bytes, spirv.size);
    free(spirv.bytes);
}

Test(key, empty_input_is_not_spirv)
{
    assert_not_spirv(0, NULL, 0);
    assert_not_spirv(0, "", 0);
    assert_not_spirv(1, NULL, 0);
}

Test(key, finished_builder_takes_no_more_parts)
{
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    cr_assert_eq(zc_key_add_hardware(builder, "x", "y", 1), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_key_finish(builder, &key), ZC_ERR_INVALID_ARG);
    cr_assert_null(zc_key_builder_trace(builder));
    zc_key_builder_destroy(builder);
    cr_assert_eq(zc_key_builder_create(false, NULL), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_key_add_compiler_identity(NULL, NULL), ZC_ERR_INVALID_ARG);
    zc_key_builder_destroy(NULL);
}

/* ---- compiler identity ---- */

/* A compiler identity as zc_compiler_identity_get gives it: libigc and its
 * front end, found. */
static zc_compiler_identity sample_compiler(void)
{
    zc_compiler_identity compiler = {.count = 2};
    zc_library_identity igc = {.name = "libigc.so.1",
                               .path = "/usr/lib/x86_64-linux-gnu/libigc.so.1.0.1",
                               .build_id = {1, 2, 3, 4},
                               .build_id_size = 4,
                               .size = 42029952,
                               .mtime_sec = 1700000000,
                               .mtime_nsec = 5};
    compiler.libraries[0] = igc;
    compiler.libraries[1] = igc;
    snprintf(compiler.libraries[1].name, sizeof compiler.libraries[1].name, "libigdfcl.so.1");
    return compiler;
}

static zc_key key_of_compiler_identity(const zc_compiler_identity *compiler, char **trace)
{
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(trace != NULL, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_compiler_identity(builder, compiler), ZC_OK);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    if (trace != NULL)
        *trace = strdup(zc_key_builder_trace(builder));
    zc_key_builder_destroy(builder);
    return key;
}

/* Every part of each library's identity is keyed except its path: the same
 * file seen through another directory keeps its entries. */
Test(key, compiler_identity_keys_each_field_of_each_library)
{
    zc_compiler_identity base = sample_compiler();
    zc_key base_key = key_of_compiler_identity(&base, NULL);
    for (size_t library = 0; library < base.count; library++) {
        for (int field = 0; field < 6; field++) {
            zc_compiler_identity changed = base;
            zc_library_identity *l = &changed.libraries[library];
            switch (field) {
            case 0:
                l->size++;
                break;
            case 1:
                l->mtime_sec++;
                break;
            case 2:
                l->mtime_nsec++;
                break;
            case 3:
                l->build_id[3] ^= 1;
                break;
            case 4:
                l->build_id_size = 3;
                break;
            case 5:
                l->name[strlen(l->name) - 1] = '2';
                break;
            }
            zc_key key = key_of_compiler_identity(&changed, NULL);
            cr_assert(!zc_key_equal(&base_key, &key), "library %zu field %d", library, field);
        }
        zc_compiler_identity moved = base;
        snprintf(moved.libraries[library].path, sizeof moved.libraries[library].path,
                 "/opt/intel/lib/libigc.so.1");
        zc_key key = key_of_compiler_identity(&moved, NULL);
        cr_assert(zc_key_equal(&base_key, &key));
    }
    zc_compiler_identity fewer = base;
    fewer.count = 1;
    zc_key fewer_key = key_of_compiler_identity(&fewer, NULL);
    cr_assert(!zc_key_equal(&base_key, &fewer_key));
}

Test(key, compiler_identity_trace_names_each_library_found)
{
    zc_compiler_identity base = sample_compiler();
    char *trace;
    (void)key_of_compiler_identity(&base, &trace);
    cr_assert_not_null(strstr(trace, "---- compiler library ----\nname: libigc.so.1\n"
                                     "path: /usr/lib/x86_64-linux-gnu/libigc.so.1.0.1\n"
                                     "build-id: 01020304\nsize: 42029952\n"),
                       "%s", trace);
    cr_assert_not_null(strstr(trace, "name: libigdfcl.so.1\n"), "%s", trace);
    cr_assert_null(strstr(trace, "missing"), "%s", trace);
    free(trace);
}

/* An unidentified compiler is never keyed: the layer bypasses the cache. */
Test(key, unidentified_compiler_is_refused)
{
    zc_compiler_identity empty = {.count = 0};
    zc_compiler_identity too_many = sample_compiler();
    too_many.count = ZC_COMPILER_LIBRARY_MAX + 1;
    const zc_compiler_identity *refused[] = {NULL, &empty, &too_many};
    for (size_t i = 0; i < 3; i++) {
        zc_key_builder *builder;
        cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
        cr_assert_eq(zc_key_add_compiler_identity(builder, refused[i]), ZC_ERR_INVALID_ARG);
        cr_assert_str_eq(zc_key_builder_reason(builder), "the compiler is not identified");
        zc_key key;
        cr_assert_neq(zc_key_finish(builder, &key), ZC_OK);
        zc_key_builder_destroy(builder);
    }
}

/* ---- trace ---- */

Test(key, trace_does_not_change_the_key)
{
    zc_key keys[2];
    for (int want_trace = 0; want_trace < 2; want_trace++) {
        zc_key_builder *builder;
        cr_assert_eq(zc_key_builder_create(want_trace, &builder), ZC_OK);
        test_spirv spirv = spirv_with_body("abc", 3);
        cr_assert_eq(zc_key_add_spirv(builder, spirv.bytes, spirv.size, "-x", NULL), ZC_OK);
        free(spirv.bytes);
        cr_assert_eq(zc_key_add_hardware(builder, "ip", "\x01\x02", 2), ZC_OK);
        cr_assert_eq(zc_key_finish(builder, &keys[want_trace]), ZC_OK);
        cr_assert_eq(zc_key_builder_trace(builder) != NULL, want_trace);
        zc_key_builder_destroy(builder);
    }
    cr_assert(zc_key_equal(&keys[0], &keys[1]));
}

Test(key, trace_shows_every_part)
{
    key_inputs in;
    base_inputs(&in);
    in.driver_library.build_id_size = 4;
    in.constant_count = 2;
    in.ids[0] = 64;
    in.ids[1] = 1;
    uint64_t wide = 0x0102030405060708u;
    uint8_t flag = 1;
    in.value_pointers[0] = &wide;
    in.value_pointers[1] = &flag;
    zc_spec_constants constants = constants_of(&in);
    zc_library_identity missing = {.name = "libmissing.so.1"};
    test_spirv abc = spirv_with_body("abc", 3);
    test_spirv header_only = spirv_with_body(NULL, 0);

    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(true, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, abc.bytes, abc.size, NULL, NULL), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, header_only.bytes, header_only.size, "", NULL), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, in.spirv, in.spirv_size, " -a\t\"b\\\x01\n", &constants),
                 ZC_OK);
    cr_assert_eq(zc_key_add_driver(builder, &in.driver_library, 0x01030000, in.uuid), ZC_OK);
    cr_assert_eq(zc_key_add_driver(builder, &missing, 7, in.uuid), ZC_OK);
    cr_assert_eq(zc_key_add_hardware(builder, "ip version", "\x01\x02\x03", 3), ZC_OK);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);

    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&key, hex);
    char expected[4096];
    snprintf(expected, sizeof expected,
             "---- format ----\nversion: 3\n"
             "---- spirv 0 ----\nsize: 24\n"
             "sha256: ac41d620b9d1e40bb4b65c4125a682fc6d9397cf41d8fda33a6bdaf4a68fd9e6\n"
             "flags: NULL\nspec constants: 0\n"
             "---- spirv 1 ----\nsize: 20\n"
             "sha256: 98065727a1ab8303a0aa274573c4eec46a0204fb1ba3f0193d549131308a340a\n"
             "flags: \"\"\nspec constants: 0\n"
             "---- spirv 2 ----\nsize: %zu\nsha256: %%s\n"
             "flags: \" -a\\t\\\"b\\\\\\x01\\n\"\nspec constants: 2\n"
             "  id 1 width 1 value 01\n"
             "  id 64 width 8 value %s\n"
             "---- driver ----\nname: libze_intel_gpu.so.1\npath: /lib/libze_intel_gpu.so.1\n"
             "build-id: abababab\nsize: 4096\nmtime: 1700000000.123456789\n"
             "version: 0x01030000\nuuid: 5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a\n"
             "---- driver ----\nname: libmissing.so.1\npath: missing\n"
             "version: 0x00000007\nuuid: 5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a\n"
             "---- hardware: ip version ----\nsize: 3\nbytes: 010203\n"
             "---- key ----\n%s\n",
             in.spirv_size,
             __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? "0807060504030201" : "0102030405060708",
             hex);
    uint8_t digest[32];
    cr_assert_eq(EVP_Digest(in.spirv, in.spirv_size, digest, NULL, EVP_sha256(), NULL), 1);
    char kernel_digest[65];
    for (int i = 0; i < 32; i++)
        snprintf(kernel_digest + 2 * i, 3, "%02x", digest[i]);
    const char *trace = zc_key_builder_trace(builder);
    char filled[4096];
    snprintf(filled, sizeof filled, expected, kernel_digest);
    cr_assert_str_eq(trace, filled);
    zc_key_builder_destroy(builder);
    free(in.spirv);
    free(abc.bytes);
    free(header_only.bytes);
}

/* Finishes builder after one input of body; the key, and its trace in
 * *trace (malloc'd) when traced. */
static zc_key finish_with_input(zc_key_builder *builder, const char *body, char **trace)
{
    test_spirv spirv = spirv_with_body(body, strlen(body));
    cr_assert_eq(zc_key_add_spirv(builder, spirv.bytes, spirv.size, "-x", NULL), ZC_OK);
    free(spirv.bytes);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK, "%s", zc_key_builder_reason(builder));
    const char *text = zc_key_builder_trace(builder);
    *trace = text != NULL ? strdup(text) : NULL;
    zc_key_builder_destroy(builder);
    return key;
}

/* Copies of a builder holding the common parts give, with or without a
 * trace, the keys and traces of builders given every part; the copied one
 * is not changed by them. */
Test(key, a_copy_continues_exactly_where_its_original_stood)
{
    key_inputs in;
    base_inputs(&in);
    const char *bodies[] = {"one", "two", "one"};
    for (int want_trace = 0; want_trace < 2; want_trace++) {
        zc_key_builder *prefix;
        cr_assert_eq(zc_key_builder_create(want_trace, &prefix), ZC_OK);
        add_common_parts(prefix, &in);
        zc_key copied[3];
        for (int i = 0; i < 3; i++) {
            zc_key_builder *copy, *whole;
            cr_assert_eq(zc_key_builder_copy(prefix, &copy), ZC_OK);
            cr_assert_eq(zc_key_builder_create(want_trace, &whole), ZC_OK);
            add_common_parts(whole, &in);
            char *copy_trace, *whole_trace;
            copied[i] = finish_with_input(copy, bodies[i], &copy_trace);
            zc_key expected = finish_with_input(whole, bodies[i], &whole_trace);
            cr_assert(zc_key_equal(&copied[i], &expected));
            cr_assert_eq(copy_trace != NULL, want_trace);
            if (want_trace)
                cr_assert_str_eq(copy_trace, whole_trace);
            free(copy_trace);
            free(whole_trace);
        }
        cr_assert_not(zc_key_equal(&copied[0], &copied[1]));
        cr_assert(zc_key_equal(&copied[0], &copied[2]));
        zc_key_builder_destroy(prefix);
    }
    free(in.spirv);
}

Test(key, a_copy_keeps_the_refusal_and_a_finished_builder_is_not_copied)
{
    zc_key_builder *prefix, *copy;
    cr_assert_eq(zc_key_builder_create(false, &prefix), ZC_OK);
    cr_assert_eq(zc_key_add_compiler_identity(prefix, NULL), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_key_builder_copy(prefix, &copy), ZC_OK);
    test_spirv spirv = spirv_with_body("abc", 3);
    cr_assert_eq(zc_key_add_spirv(copy, spirv.bytes, spirv.size, NULL, NULL), ZC_NOT_CACHEABLE);
    zc_key key;
    cr_assert_eq(zc_key_finish(copy, &key), ZC_NOT_CACHEABLE);
    cr_assert_str_eq(zc_key_builder_reason(copy), "the compiler is not identified");
    zc_key_builder_destroy(copy);
    zc_key_builder_destroy(prefix);

    cr_assert_eq(zc_key_builder_create(false, &prefix), ZC_OK);
    cr_assert_eq(zc_key_finish(prefix, &key), ZC_OK);
    copy = prefix;
    cr_assert_eq(zc_key_builder_copy(prefix, &copy), ZC_ERR_INVALID_ARG);
    cr_assert_null(copy);
    cr_assert_eq(zc_key_builder_copy(NULL, &copy), ZC_ERR_INVALID_ARG);
    zc_key_builder_destroy(prefix);
    free(spirv.bytes);
}

Test(key, long_hardware_bytes_wrap_in_the_trace)
{
    uint8_t bytes[40];
    for (int i = 0; i < 40; i++)
        bytes[i] = (uint8_t)i;
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(true, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_hardware(builder, "props", bytes, sizeof bytes), ZC_OK);
    cr_assert_str_eq(zc_key_builder_trace(builder),
                     "---- format ----\nversion: 3\n"
                     "---- hardware: props ----\nsize: 40\nbytes: "
                     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
                     "  2021222324252627\n");
    zc_key_builder_destroy(builder);
}

Test(key, last_byte_of_a_large_input_counts)
{
    size_t body_size = 1 << 20;
    uint8_t *body = malloc(body_size);
    for (size_t i = 0; i < body_size; i++)
        body[i] = (uint8_t)(i * 31);
    test_spirv big = spirv_with_body(body, body_size);
    free(body);
    zc_key_builder *builder;
    zc_key a, b;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, big.bytes, big.size, NULL, NULL), ZC_OK);
    cr_assert_eq(zc_key_finish(builder, &a), ZC_OK);
    zc_key_builder_destroy(builder);
    big.bytes[big.size - 1] ^= 1;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, big.bytes, big.size, NULL, NULL), ZC_OK);
    cr_assert_eq(zc_key_finish(builder, &b), ZC_OK);
    zc_key_builder_destroy(builder);
    cr_assert(!zc_key_equal(&a, &b));
    free(big.bytes);
}

/* ---- threads ---- */

#define THREAD_COUNT 4

typedef struct thread_job {
    key_inputs *inputs;
    zc_key key;
} thread_job;

static void *compute_in_thread(void *argument)
{
    thread_job *job = argument;
    job->key = compute_key(job->inputs);
    return NULL;
}

/* The first key computed in each thread races on the process-wide state
 * (SHA-256 implementation, SPIRV-Tools context, compiler identity). */
Test(key, threads_compute_the_same_key)
{
    key_inputs in[THREAD_COUNT];
    thread_job jobs[THREAD_COUNT];
    pthread_t threads[THREAD_COUNT];
    for (int i = 0; i < THREAD_COUNT; i++) {
        base_inputs(&in[i]);
        jobs[i].inputs = &in[i];
        cr_assert_eq(pthread_create(&threads[i], NULL, compute_in_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < THREAD_COUNT; i++)
        cr_assert_eq(pthread_join(threads[i], NULL), 0);
    zc_key expected = compute_key(&in[0]);
    for (int i = 0; i < THREAD_COUNT; i++) {
        cr_assert(zc_key_equal(&jobs[i].key, &expected), "thread %d", i);
        free(in[i].spirv);
    }
}

/* A finished key names a Level Zero entry whatever the memory held before;
 * the kind is not hashed, and zc_key_equal tells kinds apart. */
Test(key, finish_gives_the_level_zero_kind)
{
    zc_key_builder *builder = NULL;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    zc_key key;
    memset(&key, 0xa5, sizeof key);
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    zc_key_builder_destroy(builder);
    cr_assert_eq(key.kind, ZC_ENTRY_LEVEL_ZERO);
    zc_key opencl = key;
    opencl.kind = ZC_ENTRY_OPENCL;
    cr_assert(!zc_key_equal(&key, &opencl));
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&opencl, hex);
    zc_key parsed;
    memset(&parsed, 0xa5, sizeof parsed);
    cr_assert(zc_key_from_hex(hex, &parsed));
    cr_assert(zc_key_equal(&parsed, &key));
    cr_assert_str_eq(zc_entry_kind_suffix(ZC_ENTRY_OPENCL), ".cl_cache");
    cr_assert_str_eq(zc_entry_kind_suffix(ZC_ENTRY_LEVEL_ZERO), ".l0_cache");
    cr_assert_null(zc_entry_kind_suffix(ZC_ENTRY_KIND_COUNT));
}
