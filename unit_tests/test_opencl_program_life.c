/* A program's life through the OpenCL layer (issue #29), on PoCL and Intel's
 * driver: two threads building one program at once, the program released and
 * a linked one made after it, and build callbacks that make a kernel, build
 * the same source, or release the program. Each answers as the driver alone
 * does, through the layer cold (misses) and warm (hits), with freed memory
 * scribbled over (MALLOC_PERTURB_) so a use after free shows. The probe runs
 * under timeout(1): a build waiting for itself fails instead of hanging. */
#include <criterion/criterion.h>
#include <string.h>

#include "e2e_probe_support.h"

#define LAYER "OPENCL_LAYERS=" ZC_LAYER_DIR "/libzecache_opencl_layer.so.1"
/* As zecache exec leaves them: the driver's own cache off (26.x would say
 * on stdout that it is on), the layer's on. */
#define LAYER_SETTINGS "NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT=1"
#define DEADLINE "120" /* seconds; each run takes a few */

TestSuite(opencl_program_life, .init = scratch_create, .fini = scratch_remove, .timeout = 600);

static char alone[OUTPUT_MAX];

static void life_run(bool with_layer, const char *platform, const char *scenario)
{
    if (with_layer)
        probe_run(true, ENV(LAYER, LAYER_SETTINGS, "POCL_KERNEL_CACHE=0", "MALLOC_PERTURB_=165"),
                  ARGS(DEADLINE, ZC_LIFE_PROBE_PATH, platform, scenario));
    else
        probe_run(false, ENV("POCL_KERNEL_CACHE=0", "MALLOC_PERTURB_=165"),
                  ARGS(DEADLINE, ZC_LIFE_PROBE_PATH, platform, scenario));
    cr_assert_eq(run.exit_status, 0, "exit %d; stdout: %s stderr: %s", run.exit_status, run.out,
                 run.err);
}

/* The scenario answers alike alone, cold and warm; the warm run serves
 * fewest to most builds from the cache. */
static void assert_alike(const char *platform, const char *scenario, int fewest, int most)
{
    life_run(false, platform, scenario);
    memcpy(alone, run.out, sizeof(alone));
    life_run(true, platform, scenario);
    cr_assert_str_eq(run.out, alone, "cold: %s\nalone: %s\nstderr: %s", run.out, alone, run.err);
    life_run(true, platform, scenario);
    cr_assert_str_eq(run.out, alone, "warm: %s\nalone: %s\nstderr: %s", run.out, alone, run.err);
    int hits = count_of(run.err, HIT_DISK) + count_of(run.err, HIT_MEMORY);
    cr_assert(hits >= fewest && hits <= most, "%d hits; stderr: %s", hits, run.err);
}

/* Each of the 3 rounds builds twice, compiles once and links once. */
Test(opencl_program_life, two_builds_at_once_on_pocl)
{
    assert_alike("Portable", "race", 12, 12);
}

Test(opencl_program_life, two_builds_at_once_on_intel)
{
    /* Of two builds that overlap, Intel's driver builds one. */
    assert_alike("Intel", "race", 9, 12);
}

Test(opencl_program_life, build_callbacks_on_pocl)
{
    assert_alike("Portable", "callbacks", 4, 4);
}

Test(opencl_program_life, build_callbacks_on_intel)
{
    assert_alike("Intel", "callbacks", 4, 4);
}
