/* zecache prewarm on Intel's real driver (pretending to have a Tiger Lake
 * GPU): modules built by ze_probe with the layer record their inputs; the
 * compiler is then upgraded the way a driver upgrade does it; prewarm builds
 * every recorded module through the layer; and the next run of each module
 * compiles nothing and gets the driver's own binary for the new compiler.
 * Damaged recorded inputs are reported by key and cost nothing else. */
#include <dirent.h>

#include "prewarm_test_support.h"

TestSuite(prewarm_e2e, .init = scratch_create, .fini = scratch_remove, .timeout = 600);

static const char *const *upgraded_env(void)
{
    static char setting[PATH_MAX + 32];
    static const char *env[2];
    snprintf(setting, sizeof setting, "LD_LIBRARY_PATH=%s:%s", ZC_LAYER_DIR, in_scratch("igc"));
    env[0] = setting;
    env[1] = NULL;
    return env;
}

/* The prewarm tool takes LD_LIBRARY_PATH as it is and puts the layer first. */
static const char *const *upgraded_tool_env(void)
{
    static char setting[PATH_MAX + 32];
    static const char *env[2];
    snprintf(setting, sizeof setting, "LD_LIBRARY_PATH=%s", in_scratch("igc"));
    env[0] = setting;
    env[1] = NULL;
    return env;
}

static void fill_cache(void)
{
    for (int i = 0; i < MODULE_COUNT; i++) {
        run_module(i, true, NULL, NULL);
        cr_assert_eq(count_of(run.err, MISS), 1, "module %d: %s", i, run.err);
    }
}

Test(prewarm_e2e, after_a_compiler_upgrade_prewarm_leaves_nothing_to_compile)
{
    fill_cache();
    upgrade_compiler(in_scratch("igc"));
    tool_run(upgraded_tool_env(), ARGS("prewarm", "-j", "2"));
    cr_assert_eq(run.exit_status, 0, "prewarm: %d\n%s\n%s", run.exit_status, run.out, run.err);
    cr_assert(strstr(run.out, "4 recorded modules: 4 built, 0 already present, 0 failed") != NULL,
              "%s", run.out);
    assert_every_module_warm_and_the_drivers(upgraded_env());
    /* Resumable: a second run finds everything (the new entries recorded
     * their inputs too) and builds nothing. */
    tool_run(upgraded_tool_env(), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 0, "%s", run.out);
    cr_assert(strstr(run.out, " 0 built, 8 already present, 0 failed") != NULL, "%s", run.out);
}

/* The first recipe file found under dir (its path into path). */
static bool find_with_suffix(const char *dir, const char *suffix, char *path)
{
    char command[PATH_MAX + 64];
    snprintf(command, sizeof command, "find '%s' -name '*%s' | sort | head -n 1", dir, suffix);
    FILE *found = popen(command, "r");
    bool ok = found != NULL && fgets(path, PATH_MAX, found) != NULL;
    if (found != NULL)
        pclose(found);
    if (ok)
        path[strcspn(path, "\n")] = '\0';
    return ok && path[0] != '\0';
}

static void flip_last_byte(const char *path)
{
    size_t size = 0;
    uint8_t *bytes = t_read_bytes(path, &size);
    bytes[size - 1] ^= 0x5a;
    t_write_file(path, bytes, size);
    free(bytes);
}

Test(prewarm_e2e, damaged_recorded_inputs_fail_alone_with_the_reason)
{
    fill_cache();
    char recipe[PATH_MAX], blob[PATH_MAX];
    cr_assert(find_with_suffix(sc.cache, ".recipe", recipe));
    cr_assert(find_with_suffix(sc.cache, ".spirv", blob));
    flip_last_byte(recipe);
    upgrade_compiler(in_scratch("igc"));
    tool_run(upgraded_tool_env(), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 1, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "(damaged recorded inputs: not built)") != NULL, "%s", run.out);
    cr_assert(strstr(run.out, "zstd") != NULL, "no reason given: %s", run.out);
    int built = 0, failed = 0;
    cr_assert_eq(sscanf(strstr(run.out, "recorded modules: ") + 18, "%d built", &built), 1);
    cr_assert_not_null(strstr(run.out, "failed, in"));
    sscanf(strstr(run.out, "already present, ") + 17, "%d failed", &failed);
    cr_assert_geq(failed, 1, "%s", run.out);
    cr_assert_eq(built + failed, MODULE_COUNT, "%s", run.out);

    /* A damaged SPIR-V blob: every module using it fails, by name. */
    flip_last_byte(blob);
    tool_run(upgraded_tool_env(), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 1, "%s", run.out);
    cr_assert(strstr(run.out, "SPIR-V input 0:") != NULL, "%s", run.out);
    /* Nothing else was lost: every old entry still verifies. */
    tool_run(NULL, ARGS("verify"));
    cr_assert_eq(run.exit_status, 0, "verify after damaged inputs: %s\n%s", run.out, run.err);
}
