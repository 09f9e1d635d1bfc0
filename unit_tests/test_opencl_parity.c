/* An OpenCL hit behaves like a build, on Intel's real driver (the pretend
 * device: real builds and binaries, no kernels run) and on PoCL (kernels
 * run on the CPU). For each class of program, cl_probe prints everything an
 * application can ask of the program it built (result codes, program and
 * build information, binaries, every kernel's information, argument
 * information and work-group information, clSetKernelArg's answers, the
 * build callback's calls) and, on PoCL, the buffers a kernel computed; the
 * test compares:
 *
 *   - the driver alone (no layer),
 *   - the layer's miss (cold cache) and, in the same process, its memory hit,
 *   - the layer's disk hit in a new process.
 *
 * All four must be identical to the byte; PoCL's binaries, which hold what
 * differs from run to run, are compared by presence only: its kernels'
 * results stand for them. */
#include <criterion/criterion.h>
#include <string.h>

#include "e2e_probe_support.h"

#define SOURCE(name) ZC_CL_SOURCE_DIR "/" name
#define LAYER "OPENCL_LAYERS=" ZC_LAYER_DIR "/libzecache_opencl_layer.so.1"
/* As zecache exec leaves them for a user who wants the cache on: the
 * driver, which reads them when it starts, sees its own cache off; the
 * layer puts the user's value back for itself. */
#define LAYER_SETTINGS "NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT=1"
#define BYPASS "[Cache]: bypass "
#define MAX_ARGS 24
#define INTEL "--platform", "Intel"
#define POCL "--platform", "Portable", "--no-binaries"

TestSuite(opencl, .init = scratch_create, .fini = scratch_remove, .timeout = 300);

typedef enum expected_path {
    CACHED, /* miss, then memory hit, then disk hit */
    FAILED, /* the driver's build fails: built each time, never stored */
} expected_path;

/* The devices for the runs of a test (PoCL's POCL_DEVICES, Intel's
 * CreateMultipleRootDevices), or NULL for the driver's default of one; each
 * test runs in a process of its own. */
static const char *devices_setting;

static char alone[OUTPUT_MAX], alone_again[OUTPUT_MAX], missed[OUTPUT_MAX], memory_hit[OUTPUT_MAX],
    disk_hit[OUTPUT_MAX];

/* Runs cl_probe --repeat <repeat> args, with the layer or not. PoCL's own
 * kernel cache stays off, so the driver alone builds every time too. */
static void describe_run(bool with_layer, const char *repeat, const char *const *args)
{
    const char *argv[MAX_ARGS + 1] = {"--repeat", repeat};
    int argc = 2;
    for (int i = 0; args[i] != NULL; i++) {
        cr_assert_lt(argc, MAX_ARGS);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    if (with_layer)
        probe_run(false, ENV(LAYER, LAYER_SETTINGS, "POCL_KERNEL_CACHE=0", devices_setting), argv);
    else
        probe_run(false, ENV("POCL_KERNEL_CACHE=0", devices_setting), argv);
    cr_assert_eq(run.exit_status, 0, "exit %d; stdout: %s stderr: %s", run.exit_status, run.out,
                 run.err);
}

/* The lines after "describe <number>" up to the next "describe" line. */
static void description(int number, char *text, size_t size)
{
    probe_description(number, text, size);
    cr_assert_not_null(strstr(text, "create: 0\n"), "%s", text);
}

static void assert_lookups(int misses, int disk_hits, int memory_hits, int bypasses)
{
    cr_assert_eq(count_of(run.err, MISS), misses, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), disk_hits, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_MEMORY), memory_hits, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, BYPASS), bypasses, "stderr: %s", run.err);
}

/* The lookups of a run: misses, disk hits, memory hits, bypasses. */
typedef struct lookups {
    int misses, disk_hits, memory_hits, bypasses;
} lookups;

static const lookups cached_cold = {1, 0, 1, 0}, cached_warm = {0, 1, 0, 0};
static const lookups failed_cold = {2, 0, 0, 0}, failed_warm = {1, 0, 0, 0};
static const lookups bypassed_cold = {0, 0, 0, 2}, bypassed_warm = {0, 0, 0, 1};

/* The driver alone, the layer cold (miss, memory hit), the layer warm; the
 * layer's runs make the lookups given. The second build of a process is
 * compared with the driver's second: Intel's front end names a program's
 * source by a counter of the process's builds, which its diagnostics show
 * ("2:4:14: error: ..."). */
static void assert_lookups_were(lookups expected)
{
    assert_lookups(expected.misses, expected.disk_hits, expected.memory_hits, expected.bypasses);
}

/* The driver alone and the layer cold alike (the cold run's stderr left in
 * run.err for the caller to check). */
static void assert_cold_alike(const char *const *args)
{
    describe_run(false, "2", args);
    description(0, alone, sizeof(alone));
    description(1, alone_again, sizeof(alone_again));
    describe_run(true, "2", args);
    description(0, missed, sizeof(missed));
    description(1, memory_hit, sizeof(memory_hit));
    char *const texts[] = {alone, alone_again, missed, memory_hit};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        mask_temporary_names(texts[i]);
    assert_same_description("the layer's build", alone, missed);
    assert_same_description("the memory hit", alone_again, memory_hit);
}

static void assert_warm_alike(const char *const *args, lookups warm, int entries)
{
    describe_run(true, "1", args);
    description(0, disk_hit, sizeof(disk_hit));
    assert_lookups_were(warm);
    cr_assert_eq(opencl_entries_in(sc.cache), entries);
    mask_temporary_names(disk_hit);
    assert_same_description("the disk hit", alone, disk_hit);
}

static void assert_runs_alike(const char *const *args, lookups cold, lookups warm, int entries)
{
    assert_cold_alike(args);
    assert_lookups_were(cold);
    assert_warm_alike(args, warm, entries);
}

static void assert_hit_like_build(const char *const *args, expected_path path)
{
    if (path == CACHED)
        assert_runs_alike(args, cached_cold, cached_warm, 1);
    else
        assert_runs_alike(args, failed_cold, failed_warm, 0);
}

#define ARGS_OF(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- Intel's driver ---- */

Test(opencl, intel_il)
{
    assert_hit_like_build(ARGS_OF(INTEL, "--il", KERNEL("e2e_symbols.spv"), "--callback"), CACHED);
    cr_assert_not_null(strstr(disk_hit, "callback calls: 1\n"), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "\"use_symbols;second_kernel\""), "%s", disk_hit);
}

Test(opencl, intel_il_with_options)
{
    assert_hit_like_build(ARGS_OF(INTEL, "--il", KERNEL("e2e_saxpy.spv"), "--options",
                                  "-cl-fast-relaxed-math -cl-mad-enable"),
                          CACHED);
    cr_assert_not_null(strstr(disk_hit, "build options: 0 size=37 \"-cl-fast-relaxed-math "
                                        "-cl-mad-enable\"\n"),
                       "%s", disk_hit);
}

/* Intel's host access to program-scope variables (exported with
 * -library-compilation) finds the hit's. IGC's binaries of such a program
 * differ from process to process: compared by presence. */
Test(opencl, intel_global_variable_pointers)
{
    assert_hit_like_build(ARGS_OF(INTEL, "--il", KERNEL("e2e_symbols.spv"), "--options",
                                  "-library-compilation", "--global", "counter", "--no-binaries"),
                          CACHED);
    cr_assert_not_null(strstr(disk_hit, "global counter: 0 size=4 found=1\n"), "%s", disk_hit);
}

Test(opencl, intel_source)
{
    assert_hit_like_build(ARGS_OF(INTEL, "--source", SOURCE("cl_probe_plain.cl"), "--options",
                                  "-cl-std=CL2.0", "--callback"),
                          CACHED);
    cr_assert_not_null(strstr(disk_hit, "global variables: 0 size=8 04 00 "), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "\"add_offsets;square\""), "%s", disk_hit);
}

Test(opencl, intel_source_with_arg_info_and_headers)
{
    assert_hit_like_build(ARGS_OF(INTEL, "--source", SOURCE("cl_probe_headers.cl"), "--options",
                                  "-cl-kernel-arg-info -I " SOURCE("include")),
                          CACHED);
    cr_assert_not_null(strstr(disk_hit, "arg name: 0 size=3 \"in\"\n"), "%s", disk_hit);
}

/* A program built again: refused while a kernel of it lives, then built
 * (the driver's program of a miss: by the driver; a hit's: from the cache). */
Test(opencl, intel_rebuild)
{
    assert_runs_alike(ARGS_OF(INTEL, "--il", KERNEL("e2e_saxpy.spv"), "--rebuild"),
                      (lookups){1, 0, 2, 2}, (lookups){0, 1, 1, 0}, 1);
    cr_assert_not_null(strstr(disk_hit, "rebuild with a kernel: -59\nrebuild: 0\n"), "%s",
                       disk_hit);
}

/* Specialization constants the layer recorded as the driver took them are
 * in the key: the entry's program answers as the driver's. */
Test(opencl, intel_spec_constants)
{
    assert_hit_like_build(ARGS_OF(INTEL, "--il", SPEC_CONSTANTS, "--spec", "1=3"), CACHED);
    cr_assert_not_null(strstr(run.out, "spec: 0\n"), "%s", run.out);
}

/* What the layer does not cache goes to the driver, counted:
 * clCompileProgram with clLinkProgram. */

/* A source string given with its terminating NUL counted, then another:
 * the driver compiles both, but CL_PROGRAM_SOURCE ends at the NUL, so a
 * key read from it would not see the second string's kernels. */
Test(opencl, intel_source_with_a_nul_byte_bypass)
{
    assert_runs_alike(ARGS_OF(INTEL, "--source", SOURCE("cl_probe_warning.cl"), "--append",
                              SOURCE("cl_probe_headers.cl"), "--options", "-I " SOURCE("include")),
                      bypassed_cold, bypassed_warm, 0);
    cr_assert_not_null(strstr(disk_hit, "\"copy;scale\""), "%s", disk_hit);
    cr_assert_not_null(strstr(run.err, "bypass not-cacheable: a source string holding a NUL byte"),
                       "%s", run.err);
}

Test(opencl, intel_compile_and_link)
{
    /* Two lookups per program: its compile and its link. */
    assert_runs_alike(ARGS_OF(INTEL, "--source", SOURCE("cl_probe_headers.cl"), "--options",
                              "-I " SOURCE("include"), "--compile-link"),
                      (lookups){2, 0, 2, 0}, (lookups){0, 2, 0, 0}, 2);
    cr_assert_not_null(strstr(disk_hit, "compile: 0\nlink: 0\n"), "%s", disk_hit);
}

/* Intel's driver takes an input program's specialization constants at the
 * link, not into its compiled object: a link of the same object with other
 * constants is another program, which the driver alone builds. */
Test(opencl, intel_compile_and_link_with_specialization_constants)
{
    static char first[OUTPUT_MAX];
    for (int i = 0; i < 2; i++) {
        const char *value = i == 0 ? "1=7" : "1=9";
        describe_run(false, "1",
                     ARGS_OF(INTEL, "--il", SPEC_CONSTANTS, "--spec", value, "--compile-link"));
        description(0, alone, sizeof(alone));
        describe_run(true, "1",
                     ARGS_OF(INTEL, "--il", SPEC_CONSTANTS, "--spec", value, "--compile-link"));
        description(0, disk_hit, sizeof(disk_hit));
        cr_assert_str_eq(disk_hit, alone, "layer: %s\nalone: %s\nstderr: %s", disk_hit, alone,
                         run.err);
        assert_lookups(0, 0, 0, 2);
        if (i == 0)
            memcpy(first, alone, sizeof(first));
    }
    cr_assert_str_neq(first, alone, "both values linked alike: %s", alone);
}

/* The same, with the constant set on a compile hit after its compile: the
 * link (the driver's) takes it. */
Test(opencl, intel_specialization_constant_set_on_a_compile_hit)
{
    describe_run(true, "1", ARGS_OF(INTEL, "--il", SPEC_CONSTANTS, "--compile-link"));
    assert_lookups(2, 0, 0, 0);
    describe_run(false, "1",
                 ARGS_OF(INTEL, "--il", SPEC_CONSTANTS, "--spec", "1=9", "--spec-at-link",
                         "--compile-link"));
    description(0, alone, sizeof(alone));
    describe_run(true, "1",
                 ARGS_OF(INTEL, "--il", SPEC_CONSTANTS, "--spec", "1=9", "--spec-at-link",
                         "--compile-link"));
    description(0, disk_hit, sizeof(disk_hit));
    cr_assert_str_eq(disk_hit, alone, "layer: %s\nalone: %s\nstderr: %s", disk_hit, alone, run.err);
    assert_lookups(0, 1, 0, 1);
}

Test(opencl, intel_failed_build)
{
    assert_hit_like_build(ARGS_OF(INTEL, "--source", SOURCE("cl_probe_broken.cl"), "--callback"),
                          FAILED);
    cr_assert_not_null(strstr(disk_hit, "build: -11\n"), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "undeclared_name"), "%s", disk_hit);
}

/* ---- PoCL: kernels run, and compute the same ---- */

/* The newest OpenCL C version this PoCL builds program-scope variables with:
 * 2.0 on PoCL 3.1; PoCL 6 takes 3.0 (with the feature) but refuses 2.0. */
static const char *pocl_cl_std(void)
{
    static const char *chosen;
    if (chosen == NULL) {
        probe_run(
            false, ENV("POCL_KERNEL_CACHE=0"),
            ARGS_OF(POCL, "--source", SOURCE("cl_probe_plain.cl"), "--options", "-cl-std=CL2.0"));
        chosen = strstr(run.out, "\nbuild: 0\n") != NULL ? "-cl-std=CL2.0" : "-cl-std=CL3.0";
    }
    return chosen;
}

Test(opencl, pocl_source_runs)
{
    assert_hit_like_build(ARGS_OF(POCL, "--source", SOURCE("cl_probe_plain.cl"), "--options",
                                  pocl_cl_std(), "--callback", "--run", "add_offsets:bbi"),
                          CACHED);
    cr_assert_not_null(strstr(disk_hit, "run add_offsets: 0 "), "%s", disk_hit);
}

Test(opencl, pocl_headers_and_arg_info)
{
    assert_hit_like_build(ARGS_OF(POCL, "--source", SOURCE("cl_probe_headers.cl"), "--options",
                                  "-cl-kernel-arg-info -I " SOURCE("include"), "--run",
                                  "scale:bbi"),
                          CACHED);
    cr_assert_not_null(strstr(disk_hit, "arg name: 0 size=3 \"in\"\n"), "%s", disk_hit);
}

Test(opencl, pocl_rebuild)
{
    assert_runs_alike(ARGS_OF(POCL, "--source", SOURCE("cl_probe_plain.cl"), "--options",
                              pocl_cl_std(), "--rebuild"),
                      (lookups){1, 0, 2, 2}, (lookups){0, 1, 1, 0}, 1);
    cr_assert_not_null(strstr(disk_hit, "rebuild with a kernel: -59\nrebuild: 0\n"), "%s",
                       disk_hit);
}

/* A build log with a warning: the hit's is the build's (a program from a
 * binary logs nothing). */
Test(opencl, pocl_warning_log)
{
    assert_hit_like_build(
        ARGS_OF(POCL, "--source", SOURCE("cl_probe_warning.cl"), "--run", "copy:bbi"), CACHED);
    cr_assert_not_null(strstr(disk_hit, ":2:2: \"zecache probe warning\""), "%s", disk_hit);
}

Test(opencl, pocl_failed_build)
{
    assert_hit_like_build(ARGS_OF(POCL, "--source", SOURCE("cl_probe_broken.cl"), "--callback"),
                          FAILED);
    cr_assert_not_null(strstr(disk_hit, "build: -11\n"), "%s", disk_hit);
}

/* ---- PoCL with two devices: programs of several devices ---- */

#define TWO_DEVICES "POCL_DEVICES=pthread pthread"
#define TWO_DEVICE_SOURCE                                                                          \
    POCL, "--source", SOURCE("cl_probe_plain.cl"), "--options", pocl_cl_std(), "--callback",       \
        "--run", "add_offsets:bbi"

/* A context of two devices, a program built (devices as given) through the
 * layer: the driver's answers (per-device build status, log and options,
 * one binary per device), its computed results on both devices (or its
 * error on the one not built for), cold and warm, with the lookups given. */
static void assert_two_devices_like_the_driver(const char *const *args, lookups cold, lookups warm,
                                               int entries)
{
    devices_setting = TWO_DEVICES;
    assert_runs_alike(args, cold, warm, entries);
    cr_assert_not_null(strstr(disk_hit, "program num devices: 0 size=4 02 00 00 00\n"), "%s",
                       disk_hit);
}

/* A build for two devices cached per device, cold and warm, as the driver
 * answers alone. Each device's entry is a single build's (keyed by what
 * the device tells), so devices that tell nothing apart (PoCL 6.0's two
 * pthread devices) share one entry: the second lookup of a warm run finds
 * it in memory. A driver that gives no status for a device's binary
 * (Intel's 26.x with two root devices) has each hit refused and the
 * driver's build stored again. */
static void assert_two_devices_cached(const char *const *args)
{
    assert_cold_alike(args);
    if (strstr(run.err, BYPASS "rejected-binary: the driver gave no status") != NULL) {
        assert_lookups_were((lookups){2, 0, 0, 1});
        assert_warm_alike(args, (lookups){0, 0, 0, 1}, 2);
        return;
    }
    assert_lookups_were((lookups){2, 0, 2, 0});
    int entries = opencl_entries_in(sc.cache);
    cr_assert(entries == 1 || entries == 2, "%d entries", entries);
    assert_warm_alike(args, entries == 2 ? (lookups){0, 2, 0, 0} : (lookups){0, 1, 1, 0}, entries);
    cr_assert_not_null(strstr(disk_hit, "program num devices: 0 size=4 02 00 00 00\n"), "%s",
                       disk_hit);
}

/* A later build of a program of one device (a context of the second
 * device alone) finds the entry the build for both stored: each device's
 * key is a single build's. */
static void assert_one_device_hits(const char *const *args)
{
    const char *argv[MAX_ARGS + 1] = {"--context-device", "1"};
    int argc = 2;
    for (int i = 0; args[i] != NULL; i++) {
        cr_assert_lt(argc, MAX_ARGS);
        argv[argc++] = args[i];
    }
    argv[argc] = NULL;
    describe_run(true, "1", argv);
    assert_lookups(0, 1, 0, 0);
}

Test(opencl, pocl_two_devices_built_for_both)
{
    devices_setting = TWO_DEVICES;
    assert_two_devices_cached(ARGS_OF(TWO_DEVICE_SOURCE, "--devices", "all"));
    assert_one_device_hits(ARGS_OF(TWO_DEVICE_SOURCE, "--devices", "all"));
    cr_assert_not_null(strstr(disk_hit, "run add_offsets: 0 "), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "run add_offsets on device 1: 0 "), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "callback calls: 1\n"), "%s", disk_hit);
}

Test(opencl, pocl_two_devices_built_with_no_list)
{
    devices_setting = TWO_DEVICES;
    assert_two_devices_cached(ARGS_OF(TWO_DEVICE_SOURCE));
    cr_assert_not_null(strstr(disk_hit, "run add_offsets on device 1: 0 "), "%s", disk_hit);
}

/* Built for the second device only (kernels run there only: PoCL aborts on
 * a launch on the other): the driver's alone, counted with the reason. */
Test(opencl, pocl_two_devices_built_for_one)
{
    assert_two_devices_like_the_driver(ARGS_OF(TWO_DEVICE_SOURCE, "--devices", "1"), bypassed_cold,
                                       bypassed_warm, 0);
    cr_assert_not_null(
        strstr(run.err, BYPASS "not-cacheable: a build for some of a program's devices"), "%s",
        run.err);
    cr_assert_not_null(strstr(disk_hit, "run add_offsets on device 1: 0 "), "%s", disk_hit);
    cr_assert_not_null(strstr(disk_hit, "run on device 0: not built for it\n"), "%s", disk_hit);
}

/* Intel's driver with two root devices: one binary per device, compared
 * byte for byte, each stored under its device's key. */
Test(opencl, intel_two_root_devices)
{
    devices_setting = "CreateMultipleRootDevices=2";
    assert_two_devices_cached(
        ARGS_OF(INTEL, "--il", KERNEL("e2e_saxpy.spv"), "--devices", "all", "--callback"));
    cr_assert_not_null(strstr(disk_hit, "callback calls: 1\n"), "%s", disk_hit);
    assert_one_device_hits(
        ARGS_OF(INTEL, "--il", KERNEL("e2e_saxpy.spv"), "--devices", "all", "--callback"));
}

/* ---- a header rewritten while the driver compiles ---- */

static void run_line(char *line, size_t size)
{
    const char *at = strstr(run.out, "run add_v: ");
    cr_assert_not_null(at, "%s", run.out);
    snprintf(line, size, "%.*s", (int)strcspn(at, "\n"), at);
}

/* The key read the header before the driver compiled; a build system (here
 * an LD_PRELOAD, at the driver's open) rewrites it in between: the
 * application computes with the driver's build of the new header, as the
 * driver alone does, and nothing is stored under the old header's key. */
Test(opencl, pocl_header_changed_while_the_driver_compiles)
{
    char include[PATH_MAX], header[PATH_MAX + 8], source[PATH_MAX], options[PATH_MAX + 8];
    char through_layer[256], alone_new[256], alone_old[256];
    snprintf(include, sizeof include, "%s/inc", sc.root);
    cr_assert_eq(mkdir(include, 0700), 0);
    snprintf(header, sizeof header, "%s/swap.h", include);
    snprintf(source, sizeof source, "%s/swap.cl", sc.root);
    snprintf(options, sizeof options, "-I %s", include);
    static const char text[] = "#include \"swap.h\"\nkernel void add_v(global int *a, global int "
                               "*b, int n) { int i = get_global_id(0); a[i] = b[i] + V + n; }\n";
    t_write_file(source, text, strlen(text));
    t_write_file(header, "#define V 1\n", 12);
    const char *const args[] = {"--repeat",  "1",     POCL,    "--source",  source,
                                "--options", options, "--run", "add_v:bbi", NULL};
    probe_run(false,
              ENV(LAYER, LAYER_SETTINGS, "POCL_KERNEL_CACHE=0", "LD_PRELOAD=" ZC_SWAP_PRELOAD,
                  "ZC_SWAP_NAME=swap.h", "ZC_SWAP_TEXT=#define V 2\n"),
              args);
    cr_assert_eq(run.exit_status, 0, "%s", run.err);
    run_line(through_layer, sizeof through_layer);
    cr_assert_not_null(
        strstr(run.err, BYPASS "not-cacheable: a header changed while the driver compiled"), "%s",
        run.err);
    cr_assert_eq(count_of(run.err, MISS), 1, "%s", run.err);
    cr_assert_eq(opencl_entries_in(sc.cache), 0);
    char now[64];
    t_read_text(header, now, sizeof now);
    cr_assert_str_eq(now, "#define V 2\n");
    probe_run(false, ENV("POCL_KERNEL_CACHE=0"), args);
    run_line(alone_new, sizeof alone_new);
    cr_assert_str_eq(through_layer, alone_new);
    /* The header's change shows in what the kernel computes. */
    t_write_file(header, "#define V 1\n", 12);
    probe_run(false, ENV("POCL_KERNEL_CACHE=0"), args);
    run_line(alone_old, sizeof alone_old);
    cr_assert_str_neq(alone_old, alone_new);
}

/* ---- the working directory as an include directory ---- */

/* <v.h> found in the working directory (PoCL passes -I. first): a changed
 * v.h is another key, so the warm run computes with the new header, as the
 * driver alone does, instead of hitting the old one's entry. */
Test(opencl, pocl_angled_header_in_the_working_directory)
{
    char header[PATH_MAX + 8], source[PATH_MAX], first[256], warm[256], alone_now[256];
    snprintf(header, sizeof header, "%s/v.h", sc.root);
    snprintf(source, sizeof source, "%s/v.cl", sc.root);
    static const char text[] = "#include <v.h>\nkernel void add_v(global int *a, global int "
                               "*b, int n) { int i = get_global_id(0); a[i] = b[i] + V + n; }\n";
    t_write_file(source, text, strlen(text));
    t_write_file(header, "#define V 1\n", 12);
    const char *const args[] = {"--repeat", "1",     POCL,        "--source",
                                source,     "--run", "add_v:bbi", NULL};
    const char *const *with_layer = ENV(LAYER, LAYER_SETTINGS, "POCL_KERNEL_CACHE=0");
    probe_run(false, with_layer, args);
    run_line(first, sizeof first);
    cr_assert_eq(count_of(run.err, MISS), 1, "%s", run.err);
    t_write_file(header, "#define V 2\n", 12);
    probe_run(false, with_layer, args);
    run_line(warm, sizeof warm);
    cr_assert_eq(count_of(run.err, MISS), 1, "%s", run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), 0, "%s", run.err);
    probe_run(false, ENV("POCL_KERNEL_CACHE=0"), args);
    run_line(alone_now, sizeof alone_now);
    cr_assert_str_eq(warm, alone_now);
    cr_assert_str_neq(first, warm);
}
