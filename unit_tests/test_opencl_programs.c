/* Real OpenCL programs from Debian through the OpenCL layer: clinfo, a
 * PyOpenCL script (PyOpenCL adds -I <its include dir> to every build, and
 * the script includes one of its headers), and on PoCL three applications
 * and libraries that build their programs at run time: CLBlast's own tests,
 * clFFT through gpyfft, and clpeak. Each answers the same without
 * the layer, through the layer cold (a miss) and warm (a disk hit in a new
 * process); on PoCL the script's kernel runs and computes the same. Every
 * command runs under /bin/sh in the scratch directory (the probe of
 * e2e_probe_support.h is the shell here). */
#include <criterion/criterion.h>
#include <string.h>

#include "e2e_probe_support.h"

#define LAYER "OPENCL_LAYERS=" ZC_LAYER_DIR "/libzecache_opencl_layer.so.1"
/* As zecache exec leaves them for a user who wants the cache on: the
 * driver, which reads them when it starts, sees its own cache off; the
 * layer puts the user's value back for itself. */
#define LAYER_SETTINGS "NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT=1"
#define PYTHON_PROBE "/usr/bin/python3 " ZC_CL_SOURCE_DIR "/pyopencl_probe.py"

TestSuite(opencl_programs, .init = scratch_create, .fini = scratch_remove, .timeout = 300);

static char alone[OUTPUT_MAX], cold[OUTPUT_MAX], warm[OUTPUT_MAX];

/* Runs command under the shell, with the layer or not; its stdout goes to
 * out. PyOpenCL's and PoCL's own caches stay off. */
static void shell_run(bool with_layer, const char *command, char *out)
{
    if (with_layer)
        probe_run(false, ENV(LAYER, LAYER_SETTINGS, "POCL_KERNEL_CACHE=0", "PYOPENCL_NO_CACHE=1"),
                  ARGS("-c", command));
    else
        probe_run(false, ENV("POCL_KERNEL_CACHE=0", "PYOPENCL_NO_CACHE=1"), ARGS("-c", command));
    cr_assert_eq(run.exit_status, 0, "exit %d; stdout: %s stderr: %s", run.exit_status, run.out,
                 run.err);
    memcpy(out, run.out, sizeof(run.out));
}

static void assert_lookups(int misses, int disk_hits)
{
    cr_assert_eq(count_of(run.err, MISS), misses, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), disk_hits, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, "[Cache]: bypass "), 0, "stderr: %s", run.err);
}

/* Files named as Intel's driver names its own entries (<16 hex>.cl_cache on
 * 26.x, longer names on 22.43): anything .cl_cache that is not 64 hex. */
static int driver_entries;
static int count_driver_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    const char *name = path + ftw->base;
    size_t length = strlen(name), hex = strspn(name, "0123456789abcdef");
    bool opencl = length > 9 && strcmp(name + length - 9, ".cl_cache") == 0;
    driver_entries += flag == FTW_F && opencl && !(hex == 64 && length == 64 + 9);
    return 0;
}

static int driver_entries_in(const char *dir)
{
    driver_entries = 0;
    nftw(dir, count_driver_entry, 16, FTW_PHYS);
    return driver_entries;
}

static void assert_pyopencl_alike(const char *command)
{
    shell_run(false, command, alone);
    shell_run(true, command, cold);
    assert_lookups(1, 0);
    shell_run(true, command, warm);
    assert_lookups(0, 1);
    cr_assert_str_eq(cold, alone);
    cr_assert_str_eq(warm, alone);
    cr_assert_not_null(strstr(alone, "kernels twice\n"), "%s", alone);
}

Test(opencl_programs, pyopencl_on_intel)
{
    assert_pyopencl_alike(PYTHON_PROBE " Intel");
}

Test(opencl_programs, pyopencl_on_pocl_computes_the_same)
{
    assert_pyopencl_alike(PYTHON_PROBE " Portable --run");
    cr_assert_not_null(strstr(alone, "result 01844a5cdef848980d74d1901f7523a2"), "%s", alone);
}

/* A Debian application on PoCL (the platform found by name, whatever the
 * ICDs' order): alone, through the layer cold (misses only) and warm in a
 * new process (disk hits only: it compiles nothing), the same output. */
static void assert_application_alike(const char *application)
{
    char command[1024];
    snprintf(command, sizeof command,
             "pocl=$(clinfo -l | sed -n 's/^Platform #\\([0-9]*\\): Portable.*/\\1/p') && "
             "[ -n \"$pocl\" ] && %s",
             application);
    shell_run(false, command, alone);
    shell_run(true, command, cold);
    int misses = count_of(run.err, MISS);
    cr_assert_gt(misses, 0, "nothing built through the layer: %s", run.err);
    assert_lookups(misses, 0);
    shell_run(true, command, warm);
    assert_lookups(0, misses);
    cr_assert_str_eq(cold, alone);
    cr_assert_str_eq(warm, alone);
}

/* CLBlast's tests of one routine: every precision's kernels, built with
 * the library's own options, checked against the reference BLAS. */
Test(opencl_programs, clblast_tests_pass_alike_on_pocl)
{
    assert_application_alike("clblast_test_xscal -platform $pocl");
    cr_assert_not_null(strstr(alone, "12 test(s) passed"), "%s", alone);
}

Test(opencl_programs, clfft_through_gpyfft_computes_the_same_on_pocl)
{
    assert_application_alike("/usr/bin/python3 " ZC_CL_SOURCE_DIR "/gpyfft_probe.py");
    cr_assert_not_null(strstr(alone, "fft 64 3.00 3.03 3.11"), "%s", alone);
}

/* clpeak's latency test; the latency itself is masked, the rest (device,
 * driver, units) compared. */
Test(opencl_programs, clpeak_runs_alike_on_pocl)
{
    assert_application_alike("clpeak -p $pocl --kernel-latency | sed 's/: [0-9.]* us$/: N us/'");
    cr_assert_not_null(strstr(alone, "Kernel launch latency : N us"), "%s", alone);
}

/* clinfo builds nothing: through the layer it answers every query as
 * without it. The device's LUID is not the same from run to run on
 * Intel's pretend device, with or without the layer. */
Test(opencl_programs, clinfo_answers_the_same)
{
    static const char command[] = "clinfo | grep -v 'Device LUID'";
    shell_run(false, command, alone);
    shell_run(true, command, cold);
    cr_assert_not_null(strstr(run.err, "zecache OpenCL layer: cache on"), "%s", run.err);
    cr_assert_str_eq(cold, alone);
    cr_assert_not_null(strstr(alone, "Portable Computing Language"), "%s", alone);
}

/* zecache exec keeps Intel's own OpenCL cache off (22.43 caches in
 * ./cl_cache when it exists, 23.35 on in NEO_CACHE_DIR by default): the
 * driver reads its switches when it starts, before any layer. A second run
 * hits the disk tier. */
Test(opencl_programs, exec_keeps_the_drivers_own_cache_off)
{
    char command[4 * PATH_MAX];
    snprintf(command, sizeof command,
             "mkdir -p cl_cache && '%s' --dir '%s' exec -- '%s' --platform Intel --il '%s'",
             ZC_TOOL_PATH, sc.cache, ZC_CL_PROBE_PATH, KERNEL("e2e_saxpy.spv"));
    probe_run(false, ENV("NEO_CACHE_PERSISTENT=1"), ARGS("-c", command));
    cr_assert_eq(run.exit_status, 0, "%s", run.err);
    assert_lookups(1, 0);
    probe_run(false, ENV("NEO_CACHE_PERSISTENT=1"), ARGS("-c", command));
    cr_assert_eq(run.exit_status, 0, "%s", run.err);
    assert_lookups(0, 1);
    cr_assert_eq(files_in(in_scratch("cl_cache")), 0);
    /* The cache directory holds the entry and zecache's side files only. */
    cr_assert_eq(driver_entries_in(sc.cache), 0);
}

/* PoCL reads POCL_EXTRA_BUILD_FLAGS at every build: set once the context
 * exists, it is the build's, and a run without it is another build. */
Test(opencl_programs, pocl_build_variables_are_read_per_build)
{
#define MACRO_PROBE                                                                                \
    ZC_CL_PROBE_PATH " --platform Portable --no-binaries --source " ZC_CL_SOURCE_DIR               \
                     "/cl_probe_macro.cl --run store_x:b"
#define SET_LATE " --setenv POCL_EXTRA_BUILD_FLAGS=-DX=5"
    static char alone_late[OUTPUT_MAX];
    shell_run(false, MACRO_PROBE SET_LATE, alone_late);
    shell_run(false, MACRO_PROBE, alone);
    cr_assert_str_neq(alone, alone_late, "the variable changed nothing: %s", alone);
    shell_run(true, MACRO_PROBE SET_LATE, cold);
    assert_lookups(1, 0);
    cr_assert_str_eq(cold, alone_late);
    shell_run(true, MACRO_PROBE, cold);
    assert_lookups(1, 0);
    cr_assert_str_eq(cold, alone);
    shell_run(true, MACRO_PROBE SET_LATE, warm);
    assert_lookups(0, 1);
    /* The kernel computes what the driver's does. (A hit answers the
     * build options the application gave; PoCL answers them with the
     * variable's flags appended.) */
    const char *run_line = strstr(alone_late, "run store_x:");
    cr_assert_not_null(run_line);
    cr_assert_not_null(strstr(warm, run_line), "%s", warm);
#undef SET_LATE
#undef MACRO_PROBE
}
