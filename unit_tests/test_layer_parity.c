/* A hit behaves like a miss, on Intel's real driver. For each class of
 * module, ze_probe --describe prints everything an application can ask of
 * the module it got (result codes, build log, module and kernel properties,
 * source attributes, suggested group sizes, profile information, function
 * and global pointer lookups, linkage inspection, debug information, native
 * binary; every image format and sampler for image kernels; zeModuleDynamicLink with a
 * second module), and the test compares:
 *
 *   - the driver alone (no layer),
 *   - the layer's miss (cold cache) and, in the same process, its memory hit,
 *   - the layer's disk hit in a new process.
 *
 * The three layer descriptions must be identical to the byte, native binary
 * included. The driver alone must match them too; only for classes where IGC
 * itself gives different bytes in two processes (-library-compilation, -g,
 * unresolved imports) is the
 * native binary's hash left out of that comparison. Classes the layer cannot
 * reproduce from a native binary must be counted bypasses. */
#include <criterion/criterion.h>
#include <string.h>

#include "e2e_probe_support.h"

#define SYMBOLS KERNEL("e2e_symbols.spv")
#define IMAGES KERNEL("e2e_images.spv")
#define BYPASS "[Cache]: bypass not-cacheable: "
#define MAX_ARGS 28

TestSuite(parity, .init = scratch_create, .fini = scratch_remove, .timeout = 240);

typedef enum expected_path {
    CACHED,   /* miss, then memory hit, then disk hit */
    BYPASSED, /* every creation goes around the cache, counted */
    FAILED,   /* the driver's build fails: compiled each time, never stored */
} expected_path;

typedef enum native_bytes {
    SAME_BYTES,       /* IGC gives the same binary in every process */
    BYTES_MAY_DIFFER, /* not across processes: compare sizes only */
} native_bytes;

static char plain[OUTPUT_MAX], plain_again[OUTPUT_MAX], missed[OUTPUT_MAX], memory_hit[OUTPUT_MAX],
    disk_hit[OUTPUT_MAX];

/* Runs ze_probe --describe --repeat <repeat> args. */
static void describe_run(bool with_layer, const char *repeat, const char *const *args)
{
    const char *argv[MAX_ARGS + 1] = {"--describe", "--repeat", repeat};
    int argc = 3;
    for (int i = 0; args[i] != NULL; i++) {
        cr_assert_lt(argc, MAX_ARGS);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    probe_run(with_layer, NULL, argv);
    cr_assert_eq(run.exit_status, 0, "exit %d; stdout: %s stderr: %s", run.exit_status, run.out,
                 run.err);
}

/* The lines after "describe <number>" up to the next "describe" line. */
static void description(int number, char *text, size_t size)
{
    probe_description(number, text, size);
    cr_assert_not_null(strstr(text, "create 0x"), "%s", text);
}

/* Cuts the hash off the line starting with what (its size stays). */
static void without_hash(char *text, const char *what)
{
    char *line = strstr(text, what);
    char *hash = line != NULL ? strstr(line, " fnv ") : NULL;
    if (hash != NULL)
        memmove(hash, hash + strcspn(hash, "\n"), strlen(hash + strcspn(hash, "\n")) + 1);
}

/* The line starting with what, or "" (a static copy). */
static const char *line_of(const char *text, const char *what)
{
    static char line[256];
    const char *start = strstr(text, what);
    size_t length = start != NULL ? strcspn(start, "\n") : 0;
    snprintf(line, sizeof line, "%.*s", (int)(length < sizeof line ? length : sizeof line - 1),
             start != NULL ? start : "");
    return line;
}

static void assert_same(const char *what, const char *expected, const char *actual)
{
    assert_same_description(what, expected, actual);
}

static void assert_lookups(int misses, int disk_hits, int memory_hits, int bypasses)
{
    cr_assert_eq(count_of(run.err, MISS), misses, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), disk_hits, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_MEMORY), memory_hits, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, BYPASS), bypasses, "stderr: %s", run.err);
}

/* The two layer runs' lookups for path and the number of modules each
 * creation makes: cold (two creations), then warm. */
static void assert_cold_lookups(expected_path path, int n)
{
    if (path == CACHED)
        assert_lookups(n, 0, n, 0);
    else if (path == BYPASSED)
        assert_lookups(0, 0, 0, 2 * n);
    else
        assert_lookups(2 * n, 0, 0, 0);
}

static void assert_warm_lookups(expected_path path, int n)
{
    if (path == CACHED)
        assert_lookups(0, n, 0, 0);
    else if (path == BYPASSED)
        assert_lookups(0, 0, 0, n);
    else
        assert_lookups(n, 0, 0, 0);
}

/* 1, or 2 with --link-with. */
static int modules_per_creation(const char *const *args)
{
    int modules = 1;
    for (int i = 0; args[i] != NULL; i++)
        modules += strcmp(args[i], "--link-with") == 0;
    return modules;
}

/* The driver alone, the layer cold (miss, memory hit), the layer warm. */
static void assert_hit_like_miss(const char *const *args, expected_path path, native_bytes bytes)
{
    int n = modules_per_creation(args);
    describe_run(false, "2", args);
    description(1, plain, sizeof(plain));
    description(2, plain_again, sizeof(plain_again));
    describe_run(true, "2", args);
    description(1, missed, sizeof(missed));
    description(2, memory_hit, sizeof(memory_hit));
    assert_cold_lookups(path, n);
    describe_run(true, "1", args);
    description(1, disk_hit, sizeof(disk_hit));
    assert_warm_lookups(path, n);
    cr_assert_eq(entries_in(sc.cache), path == CACHED ? n : 0);

    /* Debug information the driver itself gives differently for two modules
     * of one process (26.x relocates it to each module's addresses) is
     * compared by size, as the driver's own two are. */
    char debug_info[256];
    snprintf(debug_info, sizeof debug_info, "%s", line_of(plain, "debug-info "));
    if (strcmp(debug_info, line_of(plain_again, "debug-info ")) != 0) {
        char *const texts[] = {plain, missed, memory_hit, disk_hit};
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
            without_hash(texts[i], "debug-info ");
    }
    assert_same("the memory hit", missed, memory_hit);
    assert_same("the disk hit", missed, disk_hit);
    if (bytes == BYTES_MAY_DIFFER) {
        without_hash(plain, "native-binary ");
        without_hash(missed, "native-binary ");
    }
    assert_same("the layer's compile", plain, missed);
}

#define ARGS_OF(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(parity, plain_kernel)
{
    assert_hit_like_miss(ARGS_OF("--spirv", SAXPY, "--function", "saxpy", "--function", "absent",
                                 "--global", "absent"),
                         CACHED, SAME_BYTES);
    cr_assert_not_null(strstr(disk_hit, "kernel saxpy create 0x0\n"), "%s", disk_hit);
}

/* Specialization constants are baked into the native binary. */
Test(parity, spec_constants)
{
    assert_hit_like_miss(ARGS_OF("--spirv", SPEC_CONSTANTS, "--spec", "1=3", "--spec64", "2=5"),
                         CACHED, SAME_BYTES);
    cr_assert_not_null(strstr(disk_hit, "kernel spec_fill create 0x0\n"), "%s", disk_hit);
}

/* Program-scope variables and a function that is not a kernel, looked up
 * with and without the flag that exports symbols. */
#define SYMBOL_LOOKUPS                                                                             \
    "--spirv", SYMBOLS, "--function", "scaled", "--function", "use_symbols", "--function",         \
        "absent", "--global", "counter", "--global", "table", "--global", "limits", "--global",    \
        "absent"

Test(parity, exported_functions_and_globals)
{
    assert_hit_like_miss(ARGS_OF(SYMBOL_LOOKUPS, "--flags", "-library-compilation"), CACHED,
                         BYTES_MAY_DIFFER);
    /* The control: the symbols really are there to be found. */
    cr_assert_not_null(strstr(disk_hit, "function scaled 0x0 found\n"), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "global counter 0x0 size 4 found\n"), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "global limits 0x0 size 16 found\n"), "%s", disk_hit);
}

Test(parity, symbols_not_exported)
{
    assert_hit_like_miss(ARGS_OF(SYMBOL_LOOKUPS), CACHED, SAME_BYTES);
    /* The control: not found, with the driver's own code for that (22.43:
     * INVALID_FUNCTION_NAME; 22.53 on: UNSUPPORTED_FEATURE, where its
     * native modules give INVALID_FUNCTION_NAME). */
    const char *line = line_of(disk_hit, "function scaled ");
    cr_assert(strcmp(line, "function scaled 0x78000012 null") == 0 ||
                  strcmp(line, "function scaled 0x78000003 null") == 0,
              "%s", line);
}

/* A module with an unresolved import, linked at run time with the module
 * that exports it (both built to export symbols). */
Test(parity, dynamic_link)
{
    assert_hit_like_miss(ARGS_OF("--spirv", KERNEL("e2e_import.spv"), "--link-with",
                                 KERNEL("e2e_export.spv"), "--flags", "-library-compilation",
                                 "--function", "exported_twice"),
                         CACHED, BYTES_MAY_DIFFER);
    /* The control: the import is there, and the link resolves it. */
    cr_assert_not_null(strstr(disk_hit, "module-properties 0x0 flags 0x1\n"), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "dynamic-link 0x0\n"), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "kernel call_import create 0x0\n"), "%s", disk_hit);
}

/* Flags the driver turns into compiler options, and one it reads when it
 * loads the module (-zet-profile-flags, zetKernelGetProfileInfo). */
Test(parity, build_flags)
{
    /* With -g, IGC's bytes differ from process to process. */
    assert_hit_like_miss(ARGS_OF("--spirv", SYMBOLS, "--flags", "-ze-opt-disable -g"), CACHED,
                         BYTES_MAY_DIFFER);
    scratch_remove();
    scratch_create();
    assert_hit_like_miss(ARGS_OF("--spirv", SAXPY, "--flags", "-zet-profile-flags 0x3"), CACHED,
                         SAME_BYTES);
    cr_assert_not_null(strstr(disk_hit, "profile 0x0 flags 0x3 "), "%s", disk_hit);
}

Test(parity, program_with_the_same_flags_for_every_input)
{
    assert_hit_like_miss(ARGS_OF("--program", "--spirv", SAXPY, "--spirv", VECTOR_ADD, "--flags",
                                 "-zet-profile-flags 0x5"),
                         CACHED, SAME_BYTES);
    cr_assert_not_null(strstr(disk_hit, "kernel-names 0x0 saxpy vector_add\n"), "%s", disk_hit);
    cr_assert_eq(count_of(disk_hit, "profile 0x0 flags 0x5 "), 2, "%s", disk_hit);
}

/* The driver takes -zet-profile-flags from the last input that has it; a
 * module made from a native binary takes one flags string. */
Test(parity, program_with_different_flags_per_input_bypasses)
{
    assert_hit_like_miss(ARGS_OF("--program", "--spirv", SAXPY, "--spirv", VECTOR_ADD,
                                 "--input-flags", "NULL", "--input-flags",
                                 "-zet-profile-flags 0x2"),
                         BYPASSED, SAME_BYTES);
    cr_assert_eq(count_of(disk_hit, "profile 0x0 flags 0x2 "), 2, "%s", disk_hit);
    cr_assert_eq(count_of(run.err, "inputs with different build flags"), 1, "%s", run.err);
}

Test(parity, program_with_flags_on_the_description_bypasses)
{
    assert_hit_like_miss(
        ARGS_OF("--program", "--spirv", SAXPY, "--module-flags", "", "--flags", "-ze-opt-level=1"),
        BYPASSED, SAME_BYTES);
    cr_assert_eq(count_of(run.err, "build flags on the module description"), 1, "%s", run.err);
}

/* Image and sampler kernels are cached. zeKernelSetArgumentValue refuses
 * image formats without an OpenCL channel type only for modules built from
 * SPIR-V; a native module would take them, so hits answer for it. Every
 * format the driver knows goes to every image argument (first, after a
 * sampler, after a buffer and a value, 3D and 1D), as a view, and as a plain
 * value to arguments that are not images; every sampler to a sampler. */
#define IMAGE_ARGUMENTS                                                                            \
    "--argument", "read_first:0:image", "--argument", "sample_second:0:sampler", "--argument",     \
        "sample_second:1:image", "--argument", "sample_second:3:value", "--argument",              \
        "write_third:2:image", "--argument", "write_third:1:value", "--argument",                  \
        "volume_and_line:0:image", "--argument", "volume_and_line:1:image", "--argument",          \
        "no_image:1:value"

Test(parity, image_and_sampler_kernels)
{
    assert_hit_like_miss(ARGS_OF("--spirv", IMAGES, IMAGE_ARGUMENTS), CACHED, SAME_BYTES);
    /* The controls: the driver refuses some formats and takes others on
     * each image argument and view, and a plain value never refuses. */
    cr_assert_gt(count_of(disk_hit, "set 0x7800000e size-0 0x7800000e\n"), 5 * 4, "%s", disk_hit);
    cr_assert_gt(count_of(disk_hit, "set 0x0 size-0 0x0\n"), 5 * 4, "%s", disk_hit);
    cr_assert_eq(count_of(disk_hit, " create 0x0 view 0x0 set 0x7800000e\n"), 5, "%s", disk_hit);
    cr_assert_eq(count_of(disk_hit, "sampler 0 mode"), 20, "%s", disk_hit);
    int values = 0;
    for (const char *line = strstr(disk_hit, " value "); line != NULL;
         line = strstr(line + 1, " value "), values++)
        cr_assert_neq(strncmp(line + strcspn(line, "\n") - 10, "0x7800000e", 10), 0, "%s",
                      disk_hit);
    cr_assert_gt(values, 3 * 5 * 40, "%s", disk_hit);
}

Test(parity, failing_build)
{
    assert_hit_like_miss(ARGS_OF("--spirv", FP64), FAILED, SAME_BYTES);
    cr_assert_eq(strstr(disk_hit, "create 0x0\n"), NULL, "%s", disk_hit);
    cr_assert_neq(strstr(disk_hit, "build-log 0x0 \""), NULL, "%s", disk_hit);
}
