/* zecache prewarm for OpenCL programs, on PoCL and on Intel's real driver
 * (pretend device): cl_probe builds programs through the layer (OpenCL C
 * with a header found through a relative -I, and on Intel an IL program),
 * which records their inputs; the compiler then changes the way a driver
 * upgrade changes it (Intel: a copy of IGC with another mtime first in
 * LD_LIBRARY_PATH; PoCL: a copy of a library of its closure, libhwloc);
 * prewarm rebuilds every recorded program through zecache-build-cl; and the
 * next run of each compiles nothing and answers as the driver alone does
 * with the new compiler. A header changed between the recording and the
 * prewarm is reported ("inputs changed") and its program skipped. */
#include <dirent.h>

#include "prewarm_test_support.h"
#include "redis_test_support.h"

#define LAYER "OPENCL_LAYERS=" ZC_LAYER_DIR "/libzecache_opencl_layer.so.1"
/* As zecache exec leaves them (test_opencl_parity.c). */
#define LAYER_SETTINGS "NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT=1"
#define NO_POCL_CACHE "POCL_KERNEL_CACHE=0"
#define HEADER_NAME "cl_probe_scale.h"
#define MAX_PROGRAMS 2

static void copy_header(void)
{
    size_t size = 0;
    uint8_t *bytes = t_read_bytes(ZC_CL_SOURCE_DIR "/include/" HEADER_NAME, &size);
    cr_assert_not_null(bytes);
    cr_assert_eq(mkdir(in_scratch("include"), 0755), 0);
    t_write_file(in_scratch("include/" HEADER_NAME), bytes, size);
    free(bytes);
}

static void set_up(void)
{
    scratch_create();
    copy_header(); /* the probe runs in the scratch directory: -I include finds it */
}

TestSuite(prewarm_opencl, .init = set_up, .fini = scratch_remove, .timeout = 600);

/* cl_probe's arguments for each program of a platform, NULL-terminated. */
typedef struct platform {
    const char *const *programs[MAX_PROGRAMS + 1];
    int count;
} platform;

#define SOURCE_WITH_HEADER                                                                         \
    "--source", ZC_CL_SOURCE_DIR "/cl_probe_headers.cl", "--options", "-I include"

static const platform pocl = {
    {(const char *const[]){"--platform", "Portable", "--no-binaries", SOURCE_WITH_HEADER, NULL}},
    1};
/* PoCL 3.1 takes no IL (clCreateProgramWithIL: CL_INVALID_VALUE): on Intel. */
static const platform intel = {
    {(const char *const[]){"--platform", "Intel", SOURCE_WITH_HEADER, NULL},
     (const char *const[]){"--platform", "Intel", "--il", SAXPY, NULL}},
    2};

/* A library the compiler's identity covers, copied with another mtime into
 * dir: PoCL's identity is its library closure (driver_compiler.c), IGC's
 * its own library (upgrade_compiler). */
static void upgrade_pocl(const char *dir)
{
    char command[3 * PATH_MAX];
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(command, sizeof command, "cp -L '%s/libhwloc.so.15' '%s/'", T_SYSTEM_LIB_DIR, dir);
    cr_assert_eq(system(command), 0);
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s/libhwloc.so.15", dir);
    struct timeval times[2] = {{1000000000, 0}, {1000000000, 0}};
    cr_assert_eq(utimes(copy, times), 0);
}

static void upgrade(const platform *p)
{
    if (p == &pocl)
        upgrade_pocl(in_scratch("upgraded"));
    else
        upgrade_compiler(in_scratch("upgraded"));
}

static const char *upgraded_library_path(void)
{
    static char setting[PATH_MAX + 32];
    snprintf(setting, sizeof setting, "LD_LIBRARY_PATH=%s", in_scratch("upgraded"));
    return setting;
}

/* Runs a program's build with the layer (or the driver alone); library is
 * an LD_LIBRARY_PATH setting or NULL. */
static void run_program(const char *const *args, bool with_layer, const char *library)
{
    if (with_layer)
        probe_run(false, ENV(LAYER, LAYER_SETTINGS, NO_POCL_CACHE, library), args);
    else
        probe_run(false, ENV(NO_POCL_CACHE, library), args);
    cr_assert_eq(run.exit_status, 0, "exit %d: %s\n%s", run.exit_status, run.out, run.err);
    cr_assert(strstr(run.out, "build: 0\n") != NULL, "%s\n%s", run.out, run.err);
}

static void record_every_program(const platform *p)
{
    for (int i = 0; i < p->count; i++) {
        run_program(p->programs[i], true, NULL);
        cr_assert_eq(count_of(run.err, MISS), 1, "program %d: %s", i, run.err);
    }
}

/* After the upgrade: each program is a disk hit, nothing compiled, and
 * answers every query as the driver alone with the new compiler. */
static void assert_every_program_warm_and_the_drivers(const platform *p)
{
    static char alone[OUTPUT_MAX], layer[OUTPUT_MAX];
    for (int i = 0; i < p->count; i++) {
        run_program(p->programs[i], false, upgraded_library_path());
        probe_description(0, alone, sizeof alone);
        run_program(p->programs[i], true, upgraded_library_path());
        probe_description(0, layer, sizeof layer);
        cr_assert_eq(count_of(run.err, MISS), 0, "program %d compiled after prewarm:\n%s", i,
                     run.err);
        cr_assert_eq(count_of(run.err, HIT_DISK), 1, "program %d: %s", i, run.err);
        mask_temporary_names(alone);
        mask_temporary_names(layer);
        assert_same_description("the prewarmed program", alone, layer);
    }
}

static void prewarm_after_an_upgrade(const platform *p)
{
    record_every_program(p);
    upgrade(p);
    tool_run(ENV(NO_POCL_CACHE, upgraded_library_path()), ARGS("prewarm", "-j", "2"));
    cr_assert_eq(run.exit_status, 0, "prewarm: %d\n%s\n%s", run.exit_status, run.out, run.err);
    char summary[128];
    snprintf(summary, sizeof summary, "%d recorded modules: %d built, 0 already present, 0 failed",
             p->count, p->count);
    cr_assert(strstr(run.out, summary) != NULL, "%s\n%s", run.out, run.err);
    assert_every_program_warm_and_the_drivers(p);
}

Test(prewarm_opencl, after_an_upgrade_pocl_compiles_nothing)
{
    prewarm_after_an_upgrade(&pocl);
}

Test(prewarm_opencl, after_an_upgrade_intel_compiles_nothing)
{
    prewarm_after_an_upgrade(&intel);
}

/* The header the source includes, changed after the recording: the build
 * would have another key, so prewarm says which file and builds nothing
 * (it never writes the recorded header back); the IL program is built. */
Test(prewarm_opencl, a_header_changed_since_the_recording_is_reported_and_skipped)
{
    record_every_program(&intel);
    t_write_file(in_scratch("include/" HEADER_NAME), "#define PROBE_SCALE 7\n", 22);
    upgrade(&intel);
    tool_run(ENV(NO_POCL_CACHE, upgraded_library_path()), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 1, "%s\n%s", run.out, run.err);
    char says[PATH_MAX + 64];
    snprintf(says, sizeof says, "inputs changed: %s/include/" HEADER_NAME " is not as recorded",
             sc.root);
    cr_assert(strstr(run.out, says) != NULL, "want \"%s\": %s", says, run.out);
    cr_assert(strstr(run.out, "2 recorded modules: 1 built, 0 already present, 1 failed") != NULL,
              "%s", run.out);
    size_t size = 0;
    uint8_t *header = t_read_bytes(in_scratch("include/" HEADER_NAME), &size);
    cr_assert(size == 22 && memcmp(header, "#define PROBE_SCALE 7\n", 22) == 0,
              "prewarm rewrote the header");
    free(header);
}

/* zecache record's bundle carries OpenCL programs too: prewarm --from
 * builds them into a fresh directory under the new compiler, in the
 * directory the program ran in (its key names the header candidates there),
 * where the program runs again. */
Test(prewarm_opencl, a_recorded_bundle_prewarms_opencl_programs)
{
    char script[2 * PATH_MAX];
    snprintf(script, sizeof script,
             "cd '%s' && exec '%s' --platform Portable --no-binaries --source '%s' --options "
             "'-I include'",
             sc.root, ZC_PROBE_PATH, ZC_CL_SOURCE_DIR "/cl_probe_headers.cl");
    const char *bundle = in_scratch("inputs.zcb");
    tool_run(ENV(NO_POCL_CACHE), ARGS("record", bundle, "--", "/bin/sh", "-c", script));
    cr_assert_eq(run.exit_status, 0, "record: %s\n%s", run.out, run.err);
    cr_assert(strstr(run.err, "recorded the inputs of 1 modules") != NULL, "%s", run.err);
    cr_assert_eq(files_in(sc.cache), 0, "record wrote into the configured cache");
    upgrade(&pocl);
    tool_run(ENV(NO_POCL_CACHE, upgraded_library_path()), ARGS("prewarm", "--from", bundle));
    cr_assert_eq(run.exit_status, 0, "prewarm --from: %s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "1 recorded modules: 1 built, 0 already present, 0 failed") != NULL,
              "%s", run.out);
    assert_every_program_warm_and_the_drivers(&pocl);
}

/* A cluster sharing the storage remote names ("NEO_CACHE_REMOTE=..."):
 * node A's program records into it; after the upgrade node B, with an empty
 * directory of its own, prewarms what A recorded there; node C, also fresh,
 * then compiles nothing. */
static void assert_a_node_prewarms_what_another_recorded(const char *remote)
{
    char node_b[PATH_MAX + 32], node_c[PATH_MAX + 32];
    snprintf(node_b, sizeof node_b, "NEO_CACHE_DIR=%s", in_scratch("node_b"));
    snprintf(node_c, sizeof node_c, "NEO_CACHE_DIR=%s", in_scratch("node_c"));
    const char *const *program = pocl.programs[0];
    probe_run(false, ENV(LAYER, LAYER_SETTINGS, NO_POCL_CACHE, remote), program);
    cr_assert_eq(count_of(run.err, MISS), 1, "%s", run.err);
    upgrade(&pocl);
    tool_run(ENV(NO_POCL_CACHE, remote, node_b, upgraded_library_path()), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "1 recorded modules: 1 built") != NULL, "%s", run.out);
    probe_run(false,
              ENV(LAYER, LAYER_SETTINGS, NO_POCL_CACHE, remote, node_c, upgraded_library_path()),
              program);
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert_eq(count_of(run.err, MISS), 0, "node C compiled:\n%s", run.err);
    cr_assert_eq(count_of(run.err, "[Cache]: hit remote "), 1, "%s", run.err);
}

Test(prewarm_opencl, a_node_prewarms_what_another_recorded_in_a_shared_directory)
{
    const char *shared = in_scratch("shared");
    cr_assert_eq(mkdir(shared, 0700), 0);
    char remote[PATH_MAX + 32];
    snprintf(remote, sizeof remote, "NEO_CACHE_REMOTE=file://%s", shared);
    assert_a_node_prewarms_what_another_recorded(remote);
}

/* A PoCL build variable the program ran with is keyed: prewarm builds with
 * the recorded value, not with its own environment's (here: none). */
Test(prewarm_opencl, the_recorded_build_variables_are_set_for_the_rebuild)
{
    const char *const *program = pocl.programs[0];
    const char *flags = "POCL_EXTRA_BUILD_FLAGS=-DZC_UNUSED_MACRO=1";
    probe_run(false, ENV(LAYER, LAYER_SETTINGS, NO_POCL_CACHE, flags), program);
    cr_assert_eq(count_of(run.err, MISS), 1, "%s", run.err);
    upgrade(&pocl);
    tool_run(ENV(NO_POCL_CACHE, upgraded_library_path()), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "1 recorded modules: 1 built") != NULL, "%s", run.out);
    probe_run(false, ENV(LAYER, LAYER_SETTINGS, NO_POCL_CACHE, flags, upgraded_library_path()),
              program);
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert_eq(count_of(run.err, MISS), 0, "compiled after prewarm:\n%s", run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), 1, "%s", run.err);
}

/* export carries OpenCL programs' recorded inputs, import puts them back
 * beside their .cl_cache entries: the imported cache prewarms. */
Test(prewarm_opencl, export_and_import_carry_opencl_recorded_inputs)
{
    record_every_program(&pocl);
    const char *bundle = in_scratch("export.zcb");
    char other[PATH_MAX + 32];
    snprintf(other, sizeof other, "NEO_CACHE_DIR=%s", in_scratch("other"));
    tool_run(NULL, ARGS("export", bundle));
    cr_assert_eq(run.exit_status, 0, "%s", run.err);
    cr_assert(strstr(run.err, "recorded inputs of 1, 0 left out") != NULL, "%s", run.err);
    tool_run(ENV(other), ARGS("import", bundle));
    cr_assert_eq(run.exit_status, 0, "%s", run.err);
    cr_assert(strstr(run.err, "recorded inputs of 1, 0 bad") != NULL, "%s", run.err);
    upgrade(&pocl);
    tool_run(ENV(NO_POCL_CACHE, other, upgraded_library_path()), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "1 recorded modules: 1 built") != NULL, "%s", run.out);
}

/* ---- a cluster sharing Redis ---- */

static t_redis server;

static void start_redis(void)
{
    set_up();
    t_redis_start(&server, NULL);
}

static void stop_redis(void)
{
    t_redis_stop(&server);
    scratch_remove();
}

TestSuite(prewarm_opencl_redis, .init = start_redis, .fini = stop_redis, .timeout = 600);

Test(prewarm_opencl_redis, a_node_prewarms_what_another_recorded_in_redis)
{
    char remote[PATH_MAX + 64];
    snprintf(remote, sizeof remote, "NEO_CACHE_REMOTE=redis+unix://%s", server.socket);
    assert_a_node_prewarms_what_another_recorded(remote);
}

/* An IL program built with a specialization constant set: prewarm builds
 * it with the recorded constant, so the next run's build (with it) is a
 * disk hit. */
Test(prewarm_opencl, specialization_constants_are_set_for_the_rebuild)
{
    const platform spec = {{(const char *const[]){"--platform", "Intel", "--il", SPEC_CONSTANTS,
                                                  "--spec", "1=7", NULL}},
                           1};
    prewarm_after_an_upgrade(&spec);
}
