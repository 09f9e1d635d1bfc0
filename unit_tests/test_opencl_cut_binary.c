/* The OpenCL layer's entries of binaries that carry their SPIR-V, against a
 * stand-in table: stored without the SPIR-V's bytes (an executable's; a
 * compiled object and a binary of another form whole), and without them a
 * second time where they are the program's IL; a build hit hands the
 * driver the binary without them, a link's program (the application's own)
 * is made from the whole one, and a hit answers CL_PROGRAM_BINARIES whole,
 * as the driver's build did. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "section_elf.h"

static int app_object, built_object, device_object, context_object;
#define APP_PROGRAM ((cl_program)&app_object)
#define BUILT ((cl_program)&built_object)
#define DEVICE ((cl_device_id)&device_object)
#define CONTEXT ((cl_context)&context_object)

static elf binary; /* 22.43's OpenCL ELF: options, SPIR-V, device binary */

/* What the stand-in driver was handed for BUILT, and gives back. */
static unsigned char *handed;
static size_t handed_size;
static bool refuses_cut; /* as 26.x when it would build the program again from its SPIR-V */
static int creates;
static int binaries_read; /* CL_PROGRAM_BINARIES: the loaded check in full */
static uint8_t *app_il;   /* APP_PROGRAM's CL_PROGRAM_IL, or none (malloc'd) */
static size_t app_il_size;

static cl_int CL_API_CALL fake_program_info(cl_program program, cl_program_info name, size_t size,
                                            void *value, size_t *size_ret)
{
    if (program == APP_PROGRAM && name == CL_PROGRAM_KERNEL_NAMES)
        return zcc_answer("k", 2, size, value, size_ret);
    if (program == APP_PROGRAM && name == CL_PROGRAM_IL)
        return zcc_answer(app_il, app_il_size, size, value, size_ret);
    if (program != BUILT)
        return CL_INVALID_PROGRAM;
    if (name == CL_PROGRAM_BINARY_SIZES)
        return zcc_answer(&handed_size, sizeof(handed_size), size, value, size_ret);
    if (name != CL_PROGRAM_BINARIES || size < sizeof(unsigned char *))
        return CL_INVALID_VALUE;
    binaries_read++;
    memcpy(*(unsigned char **)value, handed, handed_size);
    return CL_SUCCESS;
}

static cl_program CL_API_CALL fake_create_with_binary(cl_context context, cl_uint count,
                                                      const cl_device_id *devices,
                                                      const size_t *sizes,
                                                      const unsigned char **binaries,
                                                      cl_int *binary_status, cl_int *status)
{
    cr_assert(context == CONTEXT && count == 1 && devices[0] == DEVICE);
    creates++;
    if (refuses_cut && sizes[0] != binary.size) {
        *binary_status = *status = CL_INVALID_BINARY;
        return NULL;
    }
    free(handed);
    handed = malloc(sizes[0]);
    memcpy(handed, binaries[0], sizes[0]);
    handed_size = sizes[0];
    *binary_status = *status = CL_SUCCESS;
    return BUILT;
}

static cl_int CL_API_CALL fake_build(cl_program program, cl_uint count, const cl_device_id *devices,
                                     const char *options,
                                     void(CL_CALLBACK *notify)(cl_program, void *), void *user_data)
{
    (void)options, (void)notify, (void)user_data;
    cr_assert(program == BUILT && count == 1 && devices[0] == DEVICE);
    return CL_SUCCESS;
}

static cl_kernel CL_API_CALL fake_create_kernel(cl_program program, const char *name,
                                                cl_int *status)
{
    (void)program, (void)name;
    *status = CL_SUCCESS;
    return (cl_kernel)&device_object;
}

static cl_int CL_API_CALL fake_kernel_info(cl_kernel kernel, cl_kernel_info name, size_t size,
                                           void *value, size_t *size_ret)
{
    (void)kernel, (void)name;
    return zcc_answer("", 1, size, value, size_ret);
}

static cl_int CL_API_CALL fake_release(void *object)
{
    (void)object;
    return CL_SUCCESS;
}

static void set_up(void)
{
    zcc_layer = (zcc_state){0};
    zcc_layer.next =
        (cl_icd_dispatch){.clGetProgramInfo = fake_program_info,
                          .clCreateProgramWithBinary = fake_create_with_binary,
                          .clBuildProgram = fake_build,
                          .clCreateKernel = fake_create_kernel,
                          .clGetKernelInfo = fake_kernel_info,
                          .clReleaseKernel = (cl_int(CL_API_CALL *)(cl_kernel))fake_release,
                          .clRetainProgram = (cl_int(CL_API_CALL *)(cl_program))fake_release,
                          .clReleaseProgram = (cl_int(CL_API_CALL *)(cl_program))fake_release};
    spec sections[] = {{0xff000006, 45, 1}, {SPIRV, 40000, 1}, {0xff000005, 30000, 1}, {3, 67, 1}};
    binary = make_elf(sections, 4, true, 9);
    handed = NULL;
    handed_size = 0;
    refuses_cut = false;
    creates = 0;
    binaries_read = 0;
    app_il = NULL;
    app_il_size = 0;
}

static void tear_down(void)
{
    free(binary.bytes);
    free(handed);
    free(app_il);
}

/* APP_PROGRAM was created from the IL its binary carries (SPIR-V is the
 * binary's second section), with a byte changed at changed_at unless it
 * is past the end. */
static void created_from_il(size_t changed_at)
{
    app_il_size = 40000;
    app_il = malloc(app_il_size);
    memcpy(app_il, binary.bytes + binary.offset[2], app_il_size);
    if (changed_at < app_il_size)
        app_il[changed_at] ^= 1;
}

TestSuite(opencl_cut_binary, .init = set_up, .fini = tear_down);

static zc_artifact *entry_of(cl_program program, const uint8_t *bytes, size_t size,
                             zcc_entry *entry)
{
    zc_artifact *artifact = zcc_entry_create(program, bytes, size, "a log", 5, NULL);
    cr_assert_not_null(artifact);
    cr_assert(zcc_entry_read(artifact, entry));
    cr_assert_eq(entry->whole_size, size);
    uint8_t *whole = malloc(size);
    cr_assert(zcc_entry_whole(entry, program, whole));
    cr_assert_eq(memcmp(whole, bytes, size), 0, "the entry gives back the driver's binary");
    free(whole);
    return artifact;
}

Test(opencl_cut_binary, an_executable_is_stored_without_its_spirv_and_read_back_whole)
{
    zcc_entry entry;
    zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
    cr_assert_not_null(entry.restore);
    cr_assert_eq(entry.binary_size, binary.size - 40000);
    zc_artifact_unref(artifact);
}

Test(opencl_cut_binary, a_compiled_object_and_a_binary_of_another_form_are_stored_whole)
{
    zcc_entry entry;
    zc_artifact *artifact = entry_of(NULL, binary.bytes, binary.size, &entry);
    cr_assert_null(entry.restore);
    cr_assert_eq(entry.binary_size, binary.size);
    zc_artifact_unref(artifact);
    static const uint8_t pocl[] = "POCLBIN, not ELF";
    artifact = entry_of(APP_PROGRAM, pocl, sizeof(pocl), &entry);
    cr_assert_null(entry.restore);
    zc_artifact_unref(artifact);
}

/* Makes the layer's program of artifact as as, and asserts the driver was
 * last handed size bytes at expected. */
static void assert_made_from(const zc_artifact *artifact, zcc_made_as as, const uint8_t *expected,
                             size_t size)
{
    zcc_entry entry;
    cl_program built = NULL;
    char detail[128] = "";
    cl_program il_of = as == ZCC_MADE_HIT ? APP_PROGRAM : NULL;
    cr_assert_eq(zcc_program_of_entry(artifact, CONTEXT, DEVICE, "", as, il_of, &built, &entry,
                                      detail, sizeof(detail)),
                 ZC_HIT_CREATED, "%s", detail);
    cr_assert_eq(handed_size, size);
    cr_assert_eq(memcmp(handed, expected, size), 0);
}

/* A build hit's program is made from the binary without the SPIR-V's
 * bytes, a link's from the whole binary; each is checked against what it
 * was made from. */
Test(opencl_cut_binary, a_hit_hands_the_driver_the_binary_without_its_spirv)
{
    zcc_entry entry;
    zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
    assert_made_from(artifact, ZCC_MADE_HIT, entry.binary, binary.size - 40000);
    cr_assert_eq(binaries_read, 0, "nothing to rebuild it from: checked by size");
    assert_made_from(artifact, ZCC_MADE_PROGRAM, binary.bytes, binary.size);
    cr_assert_eq(binaries_read, 1, "the whole binary is checked in full");
    zc_artifact_unref(artifact);
}

/* A binary that keeps other intermediate code after its SPIR-V is cut
 * (LLVM bitcode beside it) could still be rebuilt: checked in full. */
Test(opencl_cut_binary, a_cut_binary_with_other_intermediate_code_is_checked_in_full)
{
    free(binary.bytes);
    spec sections[] = {{0xff000006, 45, 1},
                       {SPIRV, 40000, 1},
                       {0xff000003, 900, 1},
                       {0xff000005, 30000, 1},
                       {3, 67, 1}};
    binary = make_elf(sections, 5, true, 4);
    zcc_entry entry;
    zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
    cr_assert_not_null(entry.restore);
    assert_made_from(artifact, ZCC_MADE_HIT, entry.binary, binary.size - 40000);
    cr_assert_eq(binaries_read, 1);
    zc_artifact_unref(artifact);
}

/* A driver that refuses the binary without its SPIR-V gets the whole one,
 * and decides as it did before the cut (its rebuild is then caught by the
 * loaded check). */
static void assert_refused_cut_gets_whole(void)
{
    zcc_entry entry;
    zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
    refuses_cut = true;
    assert_made_from(artifact, ZCC_MADE_HIT, binary.bytes, binary.size);
    cr_assert_eq(creates, 2);
    cr_assert_eq(binaries_read, 1, "the whole binary is checked in full");
    zc_artifact_unref(artifact);
}

Test(opencl_cut_binary, a_driver_that_refuses_the_binary_without_spirv_gets_the_whole_one)
{
    assert_refused_cut_gets_whole();
}

static void assert_hit_answers_whole(void)
{
    zcc_entry entry;
    zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
    zcc_hit *hit = calloc(1, sizeof(*hit));
    *hit = (zcc_hit){.program = APP_PROGRAM,
                     .built = BUILT,
                     .device = DEVICE,
                     .artifact = artifact,
                     .entry = entry};
    cr_assert(zcc_hits_add(hit));
    size_t size = 0, size_ret = 0;
    cr_assert_eq(
        zcc_get_program_info(APP_PROGRAM, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, &size_ret),
        CL_SUCCESS);
    cr_assert_eq(size, binary.size);
    cr_assert_eq(size_ret, sizeof(size));
    unsigned char *answer = malloc(size);
    cr_assert_eq(
        zcc_get_program_info(APP_PROGRAM, CL_PROGRAM_BINARIES, sizeof(answer), &answer, &size_ret),
        CL_SUCCESS);
    cr_assert_eq(memcmp(answer, binary.bytes, binary.size), 0);
    cr_assert_eq(zcc_get_program_info(APP_PROGRAM, CL_PROGRAM_BINARIES, 1, &answer, NULL),
                 CL_INVALID_VALUE);
    free(answer);
    zcc_hit_free(zcc_hits_take(APP_PROGRAM));
}

Test(opencl_cut_binary, a_hit_answers_its_binary_whole)
{
    assert_hit_answers_whole();
}

/* The program's IL is its binary's SPIR-V: the entry holds neither, only
 * how many of the IL's bytes were cut, and every whole binary (a hit's
 * answer, the one a refusing driver gets) is joined from the IL. */
Test(opencl_cut_binary, an_executable_built_from_its_il_is_stored_without_it_a_second_time)
{
    zcc_entry cut_entry, entry;
    zc_artifact *cut = entry_of(APP_PROGRAM, binary.bytes, binary.size, &cut_entry);
    created_from_il(SIZE_MAX);
    zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
    size_t cut_size, size;
    (void)zc_artifact_binary(cut, &cut_size);
    (void)zc_artifact_binary(artifact, &size);
    cr_assert_eq(cut_size - size, 40000 - 8, "the IL's bytes are not stored, their count is");
    cr_assert_eq(entry.cut_from_il, 40000);
    cr_assert_eq(cut_entry.cut_from_il, 0);
    uint8_t *whole = malloc(binary.size);
    cr_assert_not(zcc_entry_whole(&entry, NULL, whole), "without the IL, no whole binary");
    cr_assert_not(zcc_entry_whole(&entry, BUILT, whole), "nor from a program without IL");
    free(whole);
    zc_artifact_unref(cut);
    zc_artifact_unref(artifact);
    assert_hit_answers_whole();
    assert_refused_cut_gets_whole();
}

/* Where the IL differs from the SPIR-V anywhere in the cut bytes, or is
 * shorter, the entry keeps the SPIR-V's bytes. */
Test(opencl_cut_binary, an_il_other_than_the_binarys_spirv_leaves_its_bytes_in_the_entry)
{
    const size_t changed[] = {0, 20000, 39999};
    for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
        free(app_il);
        created_from_il(changed[i]);
        zcc_entry entry;
        zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
        cr_assert_eq(entry.cut_from_il, 0, "changed at %zu", changed[i]);
        zc_artifact_unref(artifact);
    }
    app_il_size = 39999;
    zcc_entry entry;
    zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
    cr_assert_eq(entry.cut_from_il, 0, "a shorter IL");
    zc_artifact_unref(artifact);
}

/* Every shorter cut entry (of either form) is refused, or read with its
 * kernels part ending early: never a read past its end (the copy is
 * exactly as long as the cut, so ASan sees one). */
static void assert_cut_short_refused(void)
{
    zcc_entry entry;
    zc_artifact *artifact = entry_of(APP_PROGRAM, binary.bytes, binary.size, &entry);
    size_t size;
    const uint8_t *bytes = zc_artifact_binary(artifact, &size);
    size_t kernels_at = (size_t)(entry.kernels - bytes);
    uint8_t *whole = malloc(binary.size);
    for (size_t cut = 0; cut < size; cut += cut < kernels_at - 64 ? 997 : 1) {
        zc_artifact *shorter = zc_artifact_create(bytes, cut, NULL, 0, NULL);
        zcc_entry read;
        bool readable = zcc_entry_read(shorter, &read);
        cr_assert_eq(readable, cut >= kernels_at + 4, "an entry cut at %zu of %zu", cut, size);
        if (readable) {
            cr_assert(zcc_entry_whole(&read, APP_PROGRAM, whole));
            cr_assert_eq(memcmp(whole, binary.bytes, binary.size), 0);
        }
        zc_artifact_unref(shorter);
    }
    free(whole);
    zc_artifact_unref(artifact);
}

Test(opencl_cut_binary, a_cut_entry_cut_short_is_refused_without_reading_past_it)
{
    assert_cut_short_refused();
    created_from_il(SIZE_MAX);
    assert_cut_short_refused();
}
