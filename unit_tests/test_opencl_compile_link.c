/* Programs built from separately compiled parts through the OpenCL layer
 * (issue #32), on PoCL and Intel's driver: cl_compile_link_probe compiles
 * two sources (one including a header given by name) and links them. Cold
 * and warm answer as the driver alone (compile and link results, callback
 * calls, build status and binary type of each part, kernel names, the
 * kernel's outputs, and on Intel the linked binary's digest); warm compiles
 * and links nothing; a changed header or link option misses exactly what
 * it changes. */
#include <criterion/criterion.h>
#include <string.h>

#include "e2e_probe_support.h"

#define LAYER "OPENCL_LAYERS=" ZC_LAYER_DIR "/libzecache_opencl_layer.so.1"
/* As zecache exec leaves them: the driver's own cache off, the layer's on. */
#define LAYER_SETTINGS "NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT=1"

TestSuite(opencl_compile_link, .init = scratch_create, .fini = scratch_remove, .timeout = 600);

static char alone[OUTPUT_MAX];

typedef struct probe_case {
    const char *platform;
    const char *header_value;
    const char *link_options;
    const char *digest; /* "digest" where the driver's binaries are the same each run */
} probe_case;

static void probe(bool with_layer, const probe_case *c)
{
    if (with_layer)
        probe_run(true, ENV(LAYER, LAYER_SETTINGS, "POCL_KERNEL_CACHE=0"),
                  ARGS(c->platform, c->header_value, c->link_options, c->digest));
    else
        probe_run(false, ENV("POCL_KERNEL_CACHE=0"),
                  ARGS(c->platform, c->header_value, c->link_options, c->digest));
    cr_assert_eq(run.exit_status, 0, "exit %d; stdout: %s stderr: %s", run.exit_status, run.out,
                 run.err);
}

/* Runs c through the layer and checks it answers as the driver alone, with
 * hits served from the cache, misses compiled and bypasses (the driver
 * alone) counted. */
static void assert_lookups_as_alone(const probe_case *c, int hits, int misses, int bypasses)
{
    probe(false, c);
    memcpy(alone, run.out, sizeof(alone));
    probe(true, c);
    cr_assert_str_eq(run.out, alone, "layer: %s\nalone: %s\nstderr: %s", run.out, alone, run.err);
    int served = count_of(run.err, HIT_DISK) + count_of(run.err, HIT_MEMORY);
    cr_assert_eq(served, hits, "%d hits; stderr: %s", served, run.err);
    cr_assert_eq(count_of(run.err, MISS), misses, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, "[Cache]: bypass "), bypasses, "stderr: %s", run.err);
}

/* As the driver alone, no bypass, and the kernel ran. */
static void assert_as_alone(const probe_case *c, int hits, int misses)
{
    assert_lookups_as_alone(c, hits, misses, 0);
    cr_assert(strstr(run.out, "run: 0, outputs") != NULL, "stdout: %s", run.out);
}

static void compile_and_link(const char *platform, const char *digest, const char *link_options)
{
    probe_case c = {platform, "5", "", digest};
    /* Cold: two compiles and a link, each stored. */
    assert_as_alone(&c, 0, 3);
    /* Warm: nothing compiled or linked. */
    assert_as_alone(&c, 3, 0);
    /* The header's text: its compile and the link miss. */
    c.header_value = "6";
    assert_as_alone(&c, 1, 2);
    /* A link option: the link misses. */
    c.link_options = link_options;
    assert_as_alone(&c, 2, 1);
}

Test(opencl_compile_link, warm_compiles_nothing_on_pocl)
{
    /* PoCL 3.1 fails every link with an option (CL_LINK_PROGRAM_FAILURE):
     * other bytes are another key all the same. */
    compile_and_link("Portable", "-", " ");
}

Test(opencl_compile_link, warm_compiles_nothing_on_intel)
{
    compile_and_link("Intel", "digest", "-cl-denorms-are-zero");
}

/* What the key cannot hold goes to the driver alone, saying why: a header
 * given by name that may include others, a library link. */
Test(opencl_compile_link, what_cannot_be_keyed_goes_to_the_driver_alone)
{
    probe_case c = {"Intel", "5 /* include */", "", "digest"};
    /* The helper's compile and the link (of the driver's compiled object)
     * are cached. */
    assert_lookups_as_alone(&c, 0, 2, 1);
    cr_assert_not_null(strstr(run.err, "bypass not-cacheable: an input header that may include"),
                       "%s", run.err);
    /* The main compile now a miss, the helper's a hit. */
    c.header_value = "5";
    c.link_options = "-create-library";
    assert_lookups_as_alone(&c, 1, 1, 1);
    cr_assert_not_null(strstr(run.err, "bypass not-cacheable: a library link"), "%s", run.err);
}

/* A header given by name that names a macro the driver expands anew at each
 * compile (__DATE__, __TIME__, __FILE__) is not cached, as a source that
 * names one is not: its compile goes to the driver alone. */
Test(opencl_compile_link, a_header_given_by_name_naming_the_date_is_not_cached)
{
    probe_case c = {"Intel", "sizeof(__DATE__)", "", "-"};
    /* The helper's compile and the link are cached; the main compile not. */
    assert_lookups_as_alone(&c, 0, 2, 1);
    cr_assert_not_null(strstr(run.err, "bypass not-cacheable: OpenCL C: a header given by name "
                                       "names __DATE__"),
                       "%s", run.err);
}

/* A header given by name holding a NUL byte: the driver compiles all of it
 * (clang takes the NUL for a space), CL_PROGRAM_SOURCE ends at the NUL, so
 * its compile goes to the driver alone, as a program with one does. */
Test(opencl_compile_link, a_header_given_by_name_holding_a_nul_is_not_cached)
{
    probe_case c = {"Intel", "5 @+ 1", "", "digest"};
    assert_lookups_as_alone(&c, 0, 2, 1);
    /* Other text after the NUL: the driver alone's program, not the first's. */
    c.header_value = "5 @+ 2";
    assert_lookups_as_alone(&c, 2, 0, 1);
}
