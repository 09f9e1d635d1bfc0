/* The OpenCL layer's own logic against a stand-in for the table below it
 * (no driver, so it runs under the sanitizers): an entry's kernel attributes
 * written and read back, every truncation of an entry refused without a
 * read past its end, and what a hit answers itself (build options and log,
 * kernel attributes, its kernels' program) with OpenCL's size rules, and
 * the specialization constants the key gets. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"

/* Stand-in objects: a program, the hit's built program, a device, kernels
 * named by the string they point to. */
static int app_program_object, built_object, device_object, other_device_object;
#define APP_PROGRAM ((cl_program)&app_program_object)
#define BUILT ((cl_program)&built_object)
#define DEVICE ((cl_device_id)&device_object)
#define OTHER_DEVICE ((cl_device_id)&other_device_object)

static const char kernel_names[] = "first;second";
static int forwarded;

static cl_int CL_API_CALL fake_program_info(cl_program program, cl_program_info name, size_t size,
                                            void *value, size_t *size_ret)
{
    (void)program;
    forwarded++;
    cl_uint references = 1;
    if (name == CL_PROGRAM_REFERENCE_COUNT)
        return zcc_answer(&references, sizeof(references), size, value, size_ret);
    if (name != CL_PROGRAM_KERNEL_NAMES)
        return CL_INVALID_VALUE;
    return zcc_answer(kernel_names, sizeof(kernel_names), size, value, size_ret);
}

static cl_program CL_API_CALL fake_create_with_source(cl_context context, cl_uint count,
                                                      const char **strings, const size_t *lengths,
                                                      cl_int *status)
{
    (void)context, (void)count, (void)strings, (void)lengths;
    *status = CL_SUCCESS;
    return APP_PROGRAM;
}

static cl_int CL_API_CALL fake_build_info(cl_program program, cl_device_id device,
                                          cl_program_build_info name, size_t size, void *value,
                                          size_t *size_ret)
{
    (void)program, (void)device, (void)name, (void)size, (void)value, (void)size_ret;
    forwarded++;
    return CL_INVALID_DEVICE;
}

static cl_kernel CL_API_CALL fake_create_kernel(cl_program program, const char *name,
                                                cl_int *status)
{
    (void)program;
    *status = CL_SUCCESS;
    return (cl_kernel)strdup(name);
}

static cl_int CL_API_CALL fake_release_kernel(cl_kernel kernel)
{
    free(kernel);
    return CL_SUCCESS;
}

static cl_int CL_API_CALL fake_kernel_info(cl_kernel kernel, cl_kernel_info name, size_t size,
                                           void *value, size_t *size_ret)
{
    const char *kernel_name = (const char *)kernel;
    cl_program program = BUILT;
    if (name == CL_KERNEL_PROGRAM)
        return zcc_answer(&program, sizeof(program), size, value, size_ret);
    if (name == CL_KERNEL_FUNCTION_NAME)
        return zcc_answer(kernel_name, strlen(kernel_name) + 1, size, value, size_ret);
    const char *attributes =
        strcmp(kernel_name, "first") == 0 ? "__attribute__((reqd_work_group_size(8, 1, 1)))" : "";
    return zcc_answer(attributes, strlen(attributes) + 1, size, value, size_ret);
}

static cl_int CL_API_CALL fake_retain_release(cl_program program)
{
    (void)program;
    return CL_SUCCESS;
}

static void set_up(void)
{
    zcc_layer.next = (cl_icd_dispatch){.clGetProgramInfo = fake_program_info,
                                       .clGetProgramBuildInfo = fake_build_info,
                                       .clCreateKernel = fake_create_kernel,
                                       .clReleaseKernel = fake_release_kernel,
                                       .clGetKernelInfo = fake_kernel_info,
                                       .clRetainProgram = fake_retain_release,
                                       .clReleaseProgram = fake_retain_release,
                                       .clCreateProgramWithSource = fake_create_with_source};
    forwarded = 0;
}

TestSuite(opencl_layer, .init = set_up);

static const unsigned char driver_binary[] = "the driver's binary";

static zc_artifact *make_entry(void)
{
    zc_artifact *artifact =
        zcc_entry_create(APP_PROGRAM, driver_binary, sizeof(driver_binary), "a log", 5, NULL);
    cr_assert_not_null(artifact);
    return artifact;
}

static bool attributes_of(const zcc_entry *entry, const char *name, char *text, size_t size)
{
    const char *attributes;
    size_t length;
    if (!zcc_entry_kernel_attributes(entry->kernels, entry->kernels_size, name, &attributes,
                                     &length))
        return false;
    cr_assert_lt(length, size);
    memcpy(text, attributes, length);
    text[length] = '\0';
    return true;
}

Test(opencl_layer, an_entry_holds_the_binary_and_every_kernels_attributes)
{
    zc_artifact *artifact = make_entry();
    zcc_entry entry;
    cr_assert(zcc_entry_read(artifact, &entry));
    cr_assert_eq(entry.binary_size, sizeof(driver_binary));
    cr_assert_eq(memcmp(entry.binary, driver_binary, sizeof(driver_binary)), 0);
    char text[128];
    cr_assert(attributes_of(&entry, "first", text, sizeof(text)));
    cr_assert_str_eq(text, "__attribute__((reqd_work_group_size(8, 1, 1)))");
    cr_assert(attributes_of(&entry, "second", text, sizeof(text)));
    cr_assert_str_eq(text, "");
    cr_assert_not(attributes_of(&entry, "firs", text, sizeof(text)));
    cr_assert_not(attributes_of(&entry, "third", text, sizeof(text)));
    zc_artifact_unref(artifact);
}

/* Every shorter entry is refused, or its kernels part ends early: never a
 * read past its end (the copy is exactly as long as the cut). */
Test(opencl_layer, a_cut_entry_is_refused_without_reading_past_it)
{
    zc_artifact *artifact = make_entry();
    size_t size;
    const uint8_t *whole = zc_artifact_binary(artifact, &size);
    int readable = 0, second_found = 0;
    for (size_t cut = 0; cut < size; cut++) {
        zc_artifact *shorter = zc_artifact_create(whole, cut, NULL, 0, NULL);
        zcc_entry entry;
        char text[128];
        if (zcc_entry_read(shorter, &entry)) {
            readable++;
            second_found += attributes_of(&entry, "second", text, sizeof(text));
        }
        zc_artifact_unref(shorter);
    }
    /* Readable once the binary and the kernel count are there; "second"'s
     * attributes (the last bytes) only in the whole entry. */
    cr_assert_eq(readable, (int)(size - (8 + 8 + sizeof(driver_binary) + 4)));
    cr_assert_eq(second_found, 0);
    zc_artifact_unref(artifact);
}

Test(opencl_layer, an_entry_of_another_form_is_refused)
{
    zc_artifact *artifact = zc_artifact_create(driver_binary, sizeof(driver_binary), NULL, 0, NULL);
    zcc_entry entry;
    cr_assert_not(zcc_entry_read(artifact, &entry));
    zc_artifact_unref(artifact);
}

static zcc_hit *add_hit(void)
{
    zc_artifact *artifact = make_entry();
    zcc_entry entry;
    cr_assert(zcc_entry_read(artifact, &entry));
    zcc_hit *hit = calloc(1, sizeof(*hit));
    *hit = (zcc_hit){.program = APP_PROGRAM,
                     .built = BUILT,
                     .device = DEVICE,
                     .options = strdup("-cl-mad-enable"),
                     .log = strdup("warning: x"),
                     .log_size = strlen("warning: x"),
                     .kernels = malloc(entry.kernels_size),
                     .kernels_size = entry.kernels_size};
    memcpy(hit->kernels, entry.kernels, entry.kernels_size);
    zc_artifact_unref(artifact);
    cr_assert(zcc_hits_add(hit));
    forwarded = 0;
    return hit;
}

Test(opencl_layer, a_hit_answers_the_builds_options_and_log)
{
    add_hit();
    char text[64];
    size_t size = 0;
    cr_assert_eq(
        zcc_get_program_build_info(APP_PROGRAM, DEVICE, CL_PROGRAM_BUILD_OPTIONS, 0, NULL, &size),
        CL_SUCCESS);
    cr_assert_eq(size, strlen("-cl-mad-enable") + 1);
    cr_assert_eq(zcc_get_program_build_info(APP_PROGRAM, DEVICE, CL_PROGRAM_BUILD_OPTIONS, size - 1,
                                            text, NULL),
                 CL_INVALID_VALUE);
    cr_assert_eq(zcc_get_program_build_info(APP_PROGRAM, DEVICE, CL_PROGRAM_BUILD_LOG, sizeof(text),
                                            text, &size),
                 CL_SUCCESS);
    cr_assert_str_eq(text, "warning: x");
    cr_assert_eq(size, strlen("warning: x") + 1);
    cr_assert_eq(forwarded, 0);
    /* Another device: the driver's answer for the application's program. */
    cr_assert_eq(zcc_get_program_build_info(APP_PROGRAM, OTHER_DEVICE, CL_PROGRAM_BUILD_LOG,
                                            sizeof(text), text, &size),
                 CL_INVALID_DEVICE);
    cr_assert_eq(forwarded, 1);
    zcc_hit_free(zcc_hits_take(APP_PROGRAM));
    cr_assert(zcc_hits_empty());
}

Test(opencl_layer, a_hits_kernels_answer_the_builds_attributes_and_program)
{
    add_hit();
    cl_kernel kernel = (cl_kernel)strdup("first");
    char text[128];
    size_t size = 0;
    cr_assert_eq(zcc_get_kernel_info(kernel, CL_KERNEL_ATTRIBUTES, sizeof(text), text, &size),
                 CL_SUCCESS);
    cr_assert_str_eq(text, "__attribute__((reqd_work_group_size(8, 1, 1)))");
    cr_assert_eq(size, strlen(text) + 1);
    cr_assert_eq(zcc_get_kernel_info(kernel, CL_KERNEL_ATTRIBUTES, 4, text, NULL),
                 CL_INVALID_VALUE);
    cl_program program = NULL;
    cr_assert_eq(zcc_get_kernel_info(kernel, CL_KERNEL_PROGRAM, sizeof(program), &program, NULL),
                 CL_SUCCESS);
    cr_assert_eq(program, APP_PROGRAM);
    zcc_hit_free(zcc_hits_take(APP_PROGRAM));
    cr_assert_eq(zcc_get_kernel_info(kernel, CL_KERNEL_PROGRAM, sizeof(program), &program, NULL),
                 CL_SUCCESS);
    cr_assert_eq(program, BUILT);
    free(kernel);
}

/* A source string with a NUL byte within its length (the driver compiles
 * past it, CL_PROGRAM_SOURCE stops there) marks the program until its last
 * release; lengths of 0 mean "up to the NUL", which holds none. */
Test(opencl_layer, a_source_string_holding_a_nul_byte_is_not_keyed)
{
    const char *strings[] = {"kernel void a(){}", "kernel void b(){}"};
    const size_t whole[] = {strlen(strings[0]) + 1, strlen(strings[1])};
    const size_t up_to_nul[] = {0, 0};
    cl_int status;
    cr_assert_eq(zcc_create_program_with_source(NULL, 2, strings, up_to_nul, &status), APP_PROGRAM);
    cr_assert_null(zcc_unkeyable_reason(APP_PROGRAM));
    cr_assert_eq(zcc_create_program_with_source(NULL, 2, strings, NULL, &status), APP_PROGRAM);
    cr_assert_null(zcc_unkeyable_reason(APP_PROGRAM));
    cr_assert_eq(zcc_create_program_with_source(NULL, 2, strings, whole, &status), APP_PROGRAM);
    cr_assert_str_eq(zcc_unkeyable_reason(APP_PROGRAM), "a source string holding a NUL byte");
    cr_assert_eq(zcc_release_program(APP_PROGRAM), CL_SUCCESS);
    cr_assert_null(zcc_unkeyable_reason(APP_PROGRAM));
}

/* A hit with a live kernel stays (the driver refuses to build the program
 * again); without one it goes. */
Test(opencl_layer, a_hit_with_live_kernels_is_kept_on_a_rebuild)
{
    add_hit();
    zcc_hits_count_kernel(BUILT, 1);
    cr_assert_not(zcc_hits_drop(APP_PROGRAM));
    cr_assert_not(zcc_hits_empty());
    zcc_hits_count_kernel(BUILT, -1);
    zcc_hits_count_kernel(BUILT, -1); /* never below none */
    cr_assert(zcc_hits_drop(APP_PROGRAM));
    cr_assert(zcc_hits_empty());
}

/* A driver that takes a constant of any size for id 1, and refuses the
 * rest (what is refused must not be recorded). */
static cl_int CL_API_CALL fake_set_constant(cl_program program, cl_uint id, size_t size,
                                            const void *value)
{
    (void)program, (void)size, (void)value;
    return id == 1 ? CL_SUCCESS : CL_INVALID_SPEC_ID;
}

static size_t read_spec_kernel(unsigned char *bytes, size_t size)
{
    FILE *file = fopen(ZC_KERNEL_DIR "/e2e_spec_constants.spv", "rb");
    cr_assert_not_null(file);
    size_t read = fread(bytes, 1, size, file);
    fclose(file);
    return read;
}

/* What the key gets: what the driver took, the last value of an id; a
 * size other than the IL's declared width (id 1: 4 bytes) is refused. */
Test(opencl_layer, specialization_constants_as_the_driver_took_them)
{
    zcc_layer.next.clSetProgramSpecializationConstant = fake_set_constant;
    static unsigned char il[1 << 16];
    zc_build_input input = {.kind = ZC_INPUT_SPIRV, .bytes = il};
    input.size = read_spec_kernel(il, sizeof(il));
    uint32_t first = 1, last = 2;
    uint64_t wide = 3;
    cr_assert_eq(zcc_set_program_specialization_constant(APP_PROGRAM, 2, 4, &first),
                 CL_INVALID_SPEC_ID);
    zcc_spec_values values;
    char detail[256] = "";
    cr_assert(zcc_spec_constants_for(APP_PROGRAM, &input, &values, detail, sizeof(detail)));
    cr_assert_eq(values.count, 0);
    cr_assert_eq(zcc_set_program_specialization_constant(APP_PROGRAM, 1, 4, &first), CL_SUCCESS);
    cr_assert_eq(zcc_set_program_specialization_constant(APP_PROGRAM, 1, 4, &last), CL_SUCCESS);
    cr_assert(zcc_spec_constants_for(APP_PROGRAM, &input, &values, detail, sizeof(detail)));
    cr_assert_eq(values.count, 1);
    cr_assert_eq(values.ids[0], 1);
    cr_assert_eq(memcmp(values.values[0], &last, sizeof(last)), 0);
    zcc_spec_values_free(&values);
    cr_assert_eq(zcc_set_program_specialization_constant(APP_PROGRAM, 1, 8, &wide), CL_SUCCESS);
    cr_assert_not(zcc_spec_constants_for(APP_PROGRAM, &input, &values, detail, sizeof(detail)));
    cr_assert_str_eq(detail, "specialization constant 1 set with 8 bytes, declared with 4");
    cr_assert_eq(zcc_release_program(APP_PROGRAM), CL_SUCCESS);
    cr_assert(zcc_spec_constants_none());
}
