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
    tool_run(NULL, ARGS("ls"));
    char prefix[13];
    cr_assert_not_null(strchr(run.out, '\n'), "%s", run.out);
    snprintf(prefix, sizeof prefix, "%.12s", strchr(run.out, '\n') + 1); /* below the titles */
    tool_run(NULL, ARGS("show", prefix));
    cr_assert(strstr(run.out, "recorded inputs  yes: ") != NULL, "show: %s", run.out);
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

/* Flips the last byte of every SPIR-V input recorded in dir; how many. */
static int flip_every_spirv(const char *dir)
{
    char command[PATH_MAX + 64], path[PATH_MAX];
    snprintf(command, sizeof command, "find '%s' -name '*.spirv' | sort", dir);
    FILE *found = popen(command, "r");
    cr_assert_not_null(found);
    int flipped = 0;
    while (fgets(path, sizeof path, found) != NULL) {
        path[strcspn(path, "\n")] = '\0';
        flip_last_byte(path);
        flipped++;
    }
    pclose(found);
    return flipped;
}

/* A damaged recipe fails its module with the reason; damaged SPIR-V inputs
 * fail every module using them, by name; the entries stay whole. All in one
 * prewarm under a new compiler, so that none is present already. */
Test(prewarm_e2e, damaged_recorded_inputs_fail_alone_with_the_reason)
{
    fill_cache();
    char recipe[PATH_MAX];
    cr_assert(find_with_suffix(sc.cache, ".recipe", recipe));
    flip_last_byte(recipe);
    const char *name = strrchr(recipe, '/') + 1;
    char prefix[17];
    snprintf(prefix, sizeof prefix, "%.16s", name);
    tool_run(NULL, ARGS("show", prefix));
    cr_assert(strstr(run.out, "recorded inputs  DAMAGED: ") != NULL, "show: %s", run.out);
    cr_assert_geq(flip_every_spirv(sc.cache), 1);
    upgrade_compiler(in_scratch("igc"));
    tool_run(upgraded_tool_env(), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 1, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "(damaged recorded inputs: not built)") != NULL, "%s", run.out);
    cr_assert(strstr(run.out, "zstd") != NULL, "no reason given: %s", run.out);
    cr_assert(strstr(run.out, "SPIR-V input 0:") != NULL, "%s", run.out);
    int built = -1, failed = 0;
    cr_assert_eq(sscanf(strstr(run.out, "recorded modules: ") + 18, "%d built", &built), 1);
    cr_assert_not_null(strstr(run.out, "failed, in"));
    sscanf(strstr(run.out, "already present, ") + 17, "%d failed", &failed);
    cr_assert_eq(built, 0, "%s", run.out);
    cr_assert_eq(failed, MODULE_COUNT, "%s", run.out);
    /* Nothing else was lost: every old entry still verifies. */
    tool_run(NULL, ARGS("verify"));
    cr_assert_eq(run.exit_status, 0, "verify after damaged inputs: %s\n%s", run.out, run.err);
}

/* ---- input bundles: zecache record, prewarm --from ---- */

/* A shell script running ze_probe for every module, for `zecache record`. */
static const char *every_module_script(void)
{
    static char script[8192];
    size_t used = 0;
    for (int i = 0; i < MODULE_COUNT; i++) {
        used += (size_t)snprintf(script + used, sizeof script - used, "%s'%s'",
                                 i > 0 ? " >/dev/null && " : "", ZC_PROBE_PATH);
        for (const char *const *arg = module_args(i); *arg != NULL; arg++)
            used += (size_t)snprintf(script + used, sizeof script - used, " '%s'", *arg);
    }
    snprintf(script + used, sizeof script - used, " >/dev/null");
    return script;
}

static void record_every_module(const char *bundle, const char *const *env)
{
    tool_run(env, ARGS("record", bundle, "--", "/bin/sh", "-c", every_module_script()));
    cr_assert_eq(run.exit_status, 0, "record: %s\n%s", run.out, run.err);
    cr_assert(strstr(run.err, "recorded the inputs of 4 modules") != NULL, "%s", run.err);
    cr_assert_eq(entries_in(sc.cache), 0, "record wrote into the configured cache");
}

Test(prewarm_e2e, a_recorded_bundle_prewarms_a_fresh_directory_after_the_upgrade)
{
    const char *bundle = in_scratch("inputs.zcb");
    record_every_module(bundle, NULL);
    upgrade_compiler(in_scratch("igc"));
    tool_run(upgraded_tool_env(), ARGS("prewarm", "--from", bundle, "-j", "2"));
    cr_assert_eq(run.exit_status, 0, "prewarm --from: %s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "4 recorded modules: 4 built, 0 already present, 0 failed") != NULL,
              "%s", run.out);
    assert_every_module_warm_and_the_drivers(upgraded_env());
}

static void assert_refused(const char *bundle, const char *const *env, const char *says)
{
    int before = entries_in(sc.cache);
    tool_run(env, ARGS("prewarm", "--from", bundle));
    cr_assert_eq(run.exit_status, 1, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.err, says) != NULL, "want \"%s\": %s", says, run.err);
    cr_assert(strstr(run.err, "nothing built") != NULL, "%s", run.err);
    cr_assert_eq(entries_in(sc.cache), before, "a refused bundle built something");
}

Test(prewarm_e2e, damaged_or_wrongly_signed_bundles_are_refused_whole)
{
    const char *bundle = in_scratch("inputs.zcb"), *copy = in_scratch("copy.zcb");
    record_every_module(bundle, NULL);
    size_t size = 0;
    uint8_t *bytes = t_read_bytes(bundle, &size);
    /* One byte anywhere in the items: the SPIR-V or a recipe. */
    bytes[size / 2] ^= 0x01;
    t_write_file(copy, bytes, size);
    assert_refused(copy, NULL, "checksum does not match");
    bytes[size / 2] ^= 0x01;
    t_write_file(copy, bytes, size - 100);
    assert_refused(copy, NULL, "bundle ends");
    t_write_file(copy, "not a bundle at all", 19);
    assert_refused(copy, NULL, "not a zecache bundle");
    free(bytes);

    /* Signed with the secret of the remote storages. */
    const char *secret = in_scratch("secret"), *other = in_scratch("other-secret");
    t_write_secret(secret, "a secret of sixteen bytes or more");
    t_write_secret(other, "another secret, also long enough");
    char with_secret[PATH_MAX + 64], with_other[PATH_MAX + 64];
    snprintf(with_secret, sizeof with_secret, "NEO_CACHE_REMOTE_SECRET_FILE=%s", secret);
    snprintf(with_other, sizeof with_other, "NEO_CACHE_REMOTE_SECRET_FILE=%s", other);
    const char *signed_bundle = in_scratch("signed.zcb");
    record_every_module(signed_bundle, ENV(with_secret));
    assert_refused(signed_bundle, NULL, "the bundle is signed");
    assert_refused(signed_bundle, ENV(with_other), "signature does not match");
    assert_refused(bundle, ENV(with_secret), "not signed");
    tool_run(ENV(with_secret), ARGS("prewarm", "--from", signed_bundle));
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "4 built") != NULL, "%s", run.out);
}

/* export carries the recorded inputs, import puts them back beside their
 * entries: the imported cache prewarms as the original would. */
Test(prewarm_e2e, export_and_import_carry_the_recorded_inputs)
{
    fill_cache();
    const char *bundle = in_scratch("export.zcb"), *other = in_scratch("other");
    tool_run(NULL, ARGS("export", bundle));
    cr_assert_eq(run.exit_status, 0, "%s", run.err);
    cr_assert(strstr(run.err, "recorded inputs of 4, 0 left out") != NULL, "%s", run.err);
    char dir_setting[PATH_MAX + 32];
    snprintf(dir_setting, sizeof dir_setting, "NEO_CACHE_DIR=%s", other);
    tool_run(ENV(dir_setting), ARGS("import", bundle));
    cr_assert_eq(run.exit_status, 0, "%s", run.err);
    cr_assert(strstr(run.err, "recorded inputs of 4, 0 bad") != NULL, "%s", run.err);
    upgrade_compiler(in_scratch("igc"));
    char library_setting[PATH_MAX + 32];
    snprintf(library_setting, sizeof library_setting, "LD_LIBRARY_PATH=%s", in_scratch("igc"));
    tool_run(ENV(dir_setting, library_setting), ARGS("prewarm"));
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "4 recorded modules: 4 built") != NULL, "%s", run.out);
}

/* ---- a cluster sharing a file:// storage ---- */

/* Node A records into the shared directory while it compiles; after the
 * upgrade node B, with an empty cache of its own, prewarms what A recorded
 * into the shared directory; node C, also fresh, then compiles nothing. */
Test(prewarm_e2e, a_node_prewarms_what_another_recorded_in_a_shared_directory)
{
    const char *shared = in_scratch("shared");
    cr_assert_eq(mkdir(shared, 0700), 0);
    char remote[PATH_MAX + 32], node_b[PATH_MAX + 32], node_c[PATH_MAX + 32],
        library[PATH_MAX + 64];
    snprintf(remote, sizeof remote, "NEO_CACHE_REMOTE=file://%s", shared);
    snprintf(node_b, sizeof node_b, "NEO_CACHE_DIR=%s", in_scratch("node_b"));
    snprintf(node_c, sizeof node_c, "NEO_CACHE_DIR=%s", in_scratch("node_c"));
    for (int i = 0; i < MODULE_COUNT; i++)
        run_module(i, true, ENV(remote), NULL);
    cr_assert_eq(entries_in(shared), MODULE_COUNT);
    upgrade_compiler(in_scratch("igc"));
    snprintf(library, sizeof library, "LD_LIBRARY_PATH=%s", in_scratch("igc"));
    tool_run(ENV(remote, node_b, library), ARGS("prewarm", "-j", "2"));
    cr_assert_eq(run.exit_status, 0, "%s\n%s", run.out, run.err);
    cr_assert(strstr(run.out, "4 recorded modules: 4 built") != NULL, "%s", run.out);
    snprintf(library, sizeof library, "LD_LIBRARY_PATH=%s:%s", ZC_LAYER_DIR, in_scratch("igc"));
    for (int i = 0; i < MODULE_COUNT; i++) {
        run_module(i, true, ENV(remote, node_c, library), NULL);
        cr_assert_eq(count_of(run.err, MISS), 0, "node C compiled module %d:\n%s", i, run.err);
        cr_assert_eq(count_of(run.err, "[Cache]: hit remote "), 1, "module %d: %s", i, run.err);
    }
}
