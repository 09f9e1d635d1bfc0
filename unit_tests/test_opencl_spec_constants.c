/* Specialization constants of OpenCL IL programs through the layer, on
 * Intel's driver and PoCL 6.0 (3.1 takes no IL): each set of values is its
 * own entry, built alike alone, cold (a miss) and warm (a disk hit in a new
 * process, which compiles nothing), and calls the driver refuses answer as
 * without the layer. */
#include <criterion/criterion.h>
#include <string.h>

#include "e2e_probe_support.h"

#define LAYER "OPENCL_LAYERS=" ZC_LAYER_DIR "/libzecache_opencl_layer.so.1"
/* As zecache exec leaves them: the driver's own cache off, the layer's on. */
#define LAYER_SETTINGS "NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT=1"

TestSuite(opencl_spec_constants, .init = scratch_create, .fini = scratch_remove, .timeout = 300);

static char alone[OUTPUT_MAX];

static void spec_run(bool with_layer, const char *const *args)
{
    if (with_layer)
        probe_run(false, ENV(LAYER, LAYER_SETTINGS, "POCL_KERNEL_CACHE=0"), args);
    else
        probe_run(false, ENV("POCL_KERNEL_CACHE=0"), args);
    cr_assert_eq(run.exit_status, 0, "exit %d; stdout: %s stderr: %s", run.exit_status, run.out,
                 run.err);
}

static void assert_lookups(int misses, int disk_hits)
{
    cr_assert_eq(count_of(run.err, MISS), misses, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), disk_hits, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, "[Cache]: bypass "), 0, "stderr: %s", run.err);
}

/* Alone, cold and warm print the same; the warm run is one disk hit. */
static void assert_cached_alike(const char *const *args)
{
    spec_run(false, args);
    memcpy(alone, run.out, sizeof(alone));
    spec_run(true, args);
    assert_lookups(1, 0);
    cr_assert_str_eq(run.out, alone, "cold: %s\nalone: %s", run.out, alone);
    spec_run(true, args);
    assert_lookups(0, 1);
    cr_assert_str_eq(run.out, alone, "warm: %s\nalone: %s", run.out, alone);
    cr_assert_not_null(strstr(alone, "build 0\n"), "%s", alone);
}

Test(opencl_spec_constants, each_set_its_own_entry_on_intel)
{
    static char first[OUTPUT_MAX];
    assert_cached_alike(ARGS("Intel", SPEC_CONSTANTS, "values", "1", "2"));
    memcpy(first, alone, sizeof(first));
    /* Another set after the first is stored: a miss of its own, built with
     * its own values (another binary). */
    assert_cached_alike(ARGS("Intel", SPEC_CONSTANTS, "values", "3", "4"));
    cr_assert_str_neq(first, alone, "both sets built alike: %s", alone);
    cr_assert_eq(opencl_entries_in(sc.cache), 2);
}

/* PoCL 6.0 takes IL (3.1 does not: then there is nothing to test); the
 * kernel runs and computes id 1's value plus id 2's. */
Test(opencl_spec_constants, each_set_its_own_entry_on_pocl)
{
    probe_run(false, NULL, ARGS("Portable", SPEC_CONSTANTS, "values", "1", "2"));
    if (run.exit_status == 2)
        cr_skip_test("this PoCL takes no IL");
    assert_cached_alike(ARGS("Portable", SPEC_CONSTANTS, "values", "1", "2"));
    cr_assert_not_null(strstr(alone, "computed 0: 3 3 3 3\n"), "%s", alone);
    assert_cached_alike(ARGS("Portable", SPEC_CONSTANTS, "values", "30", "40"));
    cr_assert_not_null(strstr(alone, "computed 0: 70 70 70 70\n"), "%s", alone);
    cr_assert_eq(opencl_entries_in(sc.cache), 2);
}

Test(opencl_spec_constants, refused_calls_answer_as_alone_on_intel)
{
    assert_cached_alike(ARGS("Intel", SPEC_CONSTANTS, "bad"));
    cr_assert_not_null(strstr(alone, "set id 1 size 8: -30\nset id 2 size 4: -30\n"
                                     "set id 77 size 4: -71\n"),
                       "%s", alone);
    cr_assert_eq(opencl_entries_in(sc.cache), 1);
}
