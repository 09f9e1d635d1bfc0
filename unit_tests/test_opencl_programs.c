/* Real OpenCL programs from Debian through the OpenCL layer: clinfo, and a
 * PyOpenCL script (PyOpenCL adds -I <its include dir> to every build, and
 * the script includes one of its headers). Each answers the same without
 * the layer, through the layer cold (a miss) and warm (a disk hit in a new
 * process); on PoCL the script's kernel runs and computes the same. Every
 * command runs under /bin/sh in the scratch directory (the probe of
 * e2e_probe_support.h is the shell here). */
#include <criterion/criterion.h>
#include <string.h>

#include "e2e_probe_support.h"

#define LAYER "OPENCL_LAYERS=" ZC_LAYER_DIR "/libzecache_opencl_layer.so.1"
#define PYTHON_PROBE "/usr/bin/python3 " ZC_CL_SOURCE_DIR "/pyopencl_probe.py"

TestSuite(opencl_programs, .init = scratch_create, .fini = scratch_remove, .timeout = 300);

static char alone[OUTPUT_MAX], cold[OUTPUT_MAX], warm[OUTPUT_MAX];

/* Runs command under the shell, with the layer or not; its stdout goes to
 * out. PyOpenCL's and PoCL's own caches stay off. */
static void shell_run(bool with_layer, const char *command, char *out)
{
    if (with_layer)
        probe_run(
            false,
            ENV(LAYER, "NEO_CACHE_PERSISTENT=1", "POCL_KERNEL_CACHE=0", "PYOPENCL_NO_CACHE=1"),
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
