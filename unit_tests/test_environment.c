/* The driver and compiler environment in the key: each class of setting
 * changes the key when set and only then, the layer's own variables and
 * ordinary ones never do, and the snapshot is taken once per process.
 *
 * Criterion runs each test in its own process; tests that compare keys
 * before and after a change forget the snapshot in between, as a new
 * process would start without one. */
#include <criterion/criterion.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../source/key/environment_internal.h"
#include "test_support.h"
#include "zecache/key.h"

/* Every test starts in an empty working directory (no igdrcl.config) with
 * no variable of any keyed class set. */
static char scratch[64];

static void clear_keyed_variables(void)
{
    extern char **environ;
    for (;;) {
        char **entry = environ;
        while (entry != NULL && *entry != NULL && !zc_environment_is_driver_setting(*entry, true) &&
               strncmp(*entry, "IGC_", 4) != 0 && strncmp(*entry, "NEOReadDebugKeys=", 17) != 0)
            entry++;
        if (entry == NULL || *entry == NULL)
            return;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(*entry, "="), *entry);
        cr_assert_eq(unsetenv(name), 0);
    }
}

static void enter_scratch(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/zc_env_test.XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    cr_assert_eq(chdir(scratch), 0);
    clear_keyed_variables();
}

static void leave_scratch(void)
{
    cr_assert_eq(chdir("/"), 0);
    t_remove_tree(scratch);
}

TestSuite(environment, .init = enter_scratch, .fini = leave_scratch);

/* The key of the environment part alone, from whatever snapshot the process
 * holds. */
static zc_key key_now(void)
{
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_environment(builder), ZC_OK);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    zc_key_builder_destroy(builder);
    return key;
}

/* The same from a fresh snapshot, as a new process would take it. */
static zc_key fresh_key(void)
{
    zc_environment_forget();
    return key_now();
}

/* Setting name=value changes the key (and unsetting it restores it), or
 * leaves it alone, as expected. */
static void assert_setting_counts(const char *name, const char *value, bool counts)
{
    zc_key before = fresh_key();
    cr_assert_eq(setenv(name, value, 1), 0);
    zc_key with = fresh_key();
    cr_assert_eq(!zc_key_equal(&before, &with), counts, "%s=%s %s the key", name, value,
                 counts ? "does not change" : "changes");
    if (counts) {
        cr_assert_eq(setenv(name, "another value", 1), 0);
        zc_key other_value = fresh_key();
        cr_assert(!zc_key_equal(&with, &other_value), "%s: the value does not count", name);
    }
    cr_assert_eq(unsetenv(name), 0);
    zc_key after = fresh_key();
    cr_assert(zc_key_equal(&before, &after), "%s: unsetting does not restore the key", name);
}

/* Debug key names as the driver declares them (22.43 and newer; the last one
 * starts in lower case), each also with the Level Zero prefixes. */
static const char *const debug_keys[] = {
    "InjectInternalBuildOptions",
    "InjectApiBuildOptions",
    "DisableStatelessToStatefulOptimization",
    "ProductFamilyOverride",
    "RebuildPrecompiledKernels",
    "ForceAuxTranslationMode",
    "UseBindlessMode",
    "sipFifoValidNodeMaxTimeoutMs",
    "EnableDebugBreak",
    "Enable64kbpages",
};
#define DEBUG_KEY_COUNT (sizeof debug_keys / sizeof debug_keys[0])
static const char *const prefixes[] = {"", "NEO_", "NEO_L0_"};

/* assert_setting_counts for name and its prefixed forms. */
static void assert_prefixed_setting_counts(const char *name, const char *value, bool counts)
{
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
        char prefixed[128];
        snprintf(prefixed, sizeof prefixed, "%s%s", prefixes[p], name);
        assert_setting_counts(prefixed, value, counts);
    }
}

/* The same for each name (and its prefixed forms when asked), with debug
 * keys off, then on. */
static void assert_each_counts_either_way(const char *const *names, size_t count,
                                          bool with_prefixes, const char *value, bool counts)
{
    for (int gate = 0; gate < 2; gate++) {
        if (gate)
            cr_assert_eq(setenv("NEOReadDebugKeys", "1", 1), 0);
        for (size_t i = 0; i < count; i++) {
            if (with_prefixes)
                assert_prefixed_setting_counts(names[i], value, counts);
            else
                assert_setting_counts(names[i], value, counts);
        }
    }
    cr_assert_eq(unsetenv("NEOReadDebugKeys"), 0);
}

static void assert_debug_keys_count(bool counts)
{
    for (size_t k = 0; k < DEBUG_KEY_COUNT; k++)
        assert_prefixed_setting_counts(debug_keys[k], "-ze-opt-disable", counts);
}

Test(environment, debug_keys_count_when_the_driver_reads_them)
{
    static const char *const on[] = {"1", "-1", "2", " 1", "1abc", "+7"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        cr_assert_eq(setenv("NEOReadDebugKeys", on[i], 1), 0);
        cr_assert(zc_environment_debug_keys_on(on[i]));
        assert_debug_keys_count(true);
    }
}

/* The driver parses NEOReadDebugKeys with atoll: these are all off. */
Test(environment, debug_keys_do_not_count_when_the_driver_ignores_them)
{
    assert_debug_keys_count(false);
    static const char *const off[] = {"0", "", "abc", "0x1", "-0", " ", "true"};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        cr_assert_eq(setenv("NEOReadDebugKeys", off[i], 1), 0);
        cr_assert_not(zc_environment_debug_keys_on(off[i]), "%s", off[i]);
        assert_debug_keys_count(false);
    }
    cr_assert_not(zc_environment_debug_keys_on(NULL));
}

/* Only the unprefixed NEOReadDebugKeys switches debug keys on. */
Test(environment, prefixed_switch_does_not_turn_debug_keys_on)
{
    cr_assert_eq(setenv("NEO_NEOReadDebugKeys", "1", 1), 0);
    cr_assert_eq(setenv("NEO_L0_NEOReadDebugKeys", "1", 1), 0);
    assert_setting_counts("InjectInternalBuildOptions", "-ze-opt-disable", false);
}

/* What the layer reads for its own output does not split the cache. */
Test(environment, output_only_debug_keys_do_not_count)
{
    cr_assert_eq(setenv("NEOReadDebugKeys", "1", 1), 0);
    static const char *const names[] = {"PrintDebugMessages", "BinaryCacheTrace"};
    for (size_t n = 0; n < 2; n++)
        assert_prefixed_setting_counts(names[n], "1", false);
}

/* Read by the driver whatever NEOReadDebugKeys says, and able to change
 * what reaches the compiler. */
Test(environment, ungated_settings_count_with_and_without_debug_keys)
{
    static const char *const unprefixed[] = {
        "ZET_ENABLE_PROGRAM_DEBUGGING",
        "ZET_ENABLE_PROGRAM_INSTRUMENTATION",
        "ONEAPI_PVC_SEND_WAR_WA",
        "NEO_FP64_EMULATION",
    };
    static const char *const release[] = {"OverrideDefaultFP64Settings", "ZEX_NUMBER_OF_CCS"};
    assert_each_counts_either_way(unprefixed, sizeof unprefixed / sizeof unprefixed[0], false, "1",
                                  true);
    assert_each_counts_either_way(release, 2, true, "0:4", true);
}

/* Names the driver does not read as settings, and the variables the layer
 * itself writes: none of them counts, debug keys on or off. */
Test(environment, other_variables_do_not_count)
{
    static const char *const names[] = {
        "HOME",
        "PATH",
        "LD_LIBRARY_PATH",
        "NEO_CACHE_PERSISTENT",
        "NEO_CACHE_DIR",
        "NEO_CACHE_MAX_SIZE",
        "l0_cache_dir",
        "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT",
        "ZECACHE_ORIGINAL_l0_cache_dir",
        "ZE_ENABLE_VALIDATION_LAYER",
        "ZE_ENABLE_LAYERS",
        "ZE_AFFINITY_MASK",
        "ZET_ENABLE_METRICS",
        "ZET_ENABLE_PROGRAM_DEBUGGING_NOT",
        "XZET_ENABLE_PROGRAM_DEBUGGING",
        "NEO_OCL_InjectInternalBuildOptions",
        "NEO_",
        "NEO_L0_",
        "lowercase",
        "UPPERCASE",
        "Camel_Case",
        "1Camel",
        "Camel-Case",
        "igc_ShaderDumpEnable",
        "NOT_IGC_Option",
    };
    assert_each_counts_either_way(names, sizeof names / sizeof names[0], false, "1", false);
}

Test(environment, igc_variables_count_always)
{
    static const char *const names[] = {"IGC_ShaderDumpEnable", "IGC_", "IGC_VISAOptions"};
    assert_each_counts_either_way(names, 3, false, "-nocompaction", true);
}

Test(environment, variables_are_keyed_by_name_whatever_their_order)
{
    cr_assert_eq(setenv("NEOReadDebugKeys", "1", 1), 0);
    static const char *const names[] = {"IGC_A", "IGC_A0", "IGC_B", "Aa", "Aa0", "Bb"};
    for (size_t i = 0; i < 6; i++)
        cr_assert_eq(setenv(names[i], "1", 1), 0);
    zc_key forward = fresh_key();
    for (size_t i = 0; i < 6; i++)
        cr_assert_eq(unsetenv(names[i]), 0);
    for (size_t i = 6; i-- > 0;)
        cr_assert_eq(setenv(names[i], "1", 1), 0);
    zc_key backward = fresh_key();
    cr_assert(zc_key_equal(&forward, &backward));

    zc_environment_forget();
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(true, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_environment(builder), ZC_OK);
    const char *trace = zc_key_builder_trace(builder);
    const char *expected = "---- format ----\nversion: 3\n"
                           "---- environment ----\nvariables: 7\n"
                           "Aa=1\nAa0=1\nBb=1\nNEOReadDebugKeys=1\n"
                           "IGC_A=1\nIGC_A0=1\nIGC_B=1\n"
                           "settings file igdrcl.config: absent\n"
                           "settings file neo.config: absent\n"
                           "settings file /tmp/IntelIGC/debugFlags/Options.txt: ";
    cr_assert_eq(strncmp(trace, expected, strlen(expected)), 0, "%s", trace);
    zc_key_builder_destroy(builder);
}

Test(environment, many_variables)
{
    zc_key before = fresh_key();
    char name[32];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "IGC_Many%03d", i);
        cr_assert_eq(setenv(name, "x", 1), 0);
    }
    zc_key many = fresh_key();
    cr_assert(!zc_key_equal(&before, &many));
    cr_assert_eq(setenv("IGC_Many050", "y", 1), 0);
    zc_key one_changed = fresh_key();
    cr_assert(!zc_key_equal(&many, &one_changed));
}

/* The driver reads its settings once, when it starts: later changes in the
 * process reach it no more than they change the key. */
Test(environment, driver_settings_are_taken_once_per_process)
{
    cr_assert_eq(setenv("NEOReadDebugKeys", "1", 1), 0);
    cr_assert_eq(setenv("IGC_ShaderDumpEnable", "1", 1), 0);
    zc_key first = fresh_key();
    cr_assert_eq(setenv("InjectInternalBuildOptions", "-ze-opt-disable", 1), 0);
    cr_assert_eq(setenv("ZET_ENABLE_PROGRAM_DEBUGGING", "1", 1), 0);
    cr_assert_eq(unsetenv("NEOReadDebugKeys"), 0);
    t_write_file("igdrcl.config", "UseBindlessMode = 1\n", 20);
    zc_key later = key_now();
    cr_assert(zc_key_equal(&first, &later));
    zc_key retaken = fresh_key();
    cr_assert(!zc_key_equal(&first, &retaken));
}

static void assert_refused_as_changed(void)
{
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_environment(builder), ZC_NOT_CACHEABLE);
    cr_assert_str_eq(zc_key_builder_reason(builder),
                     "IGC_* variables changed since the process's first module (IGC reads them "
                     "once, at its first compile)");
    zc_key_builder_destroy(builder);
}

/* IGC reads its variables once, just before its first compile, which may
 * come after the first key (its modules all hits): a change after the first
 * key may or may not reach IGC, so nothing keyed after it is cached, until
 * the variables are back as they were. */
Test(environment, compiler_settings_changed_after_the_first_key_are_not_cacheable)
{
    cr_assert_eq(setenv("IGC_A", "1", 1), 0);
    cr_assert_eq(setenv("IGC_A0", "2", 1), 0);
    zc_key first = fresh_key();

    cr_assert_eq(setenv("IGC_A", "2", 1), 0);
    assert_refused_as_changed();
    cr_assert_eq(setenv("IGC_A", "1", 1), 0);
    zc_key restored = key_now();
    cr_assert(zc_key_equal(&first, &restored));

    cr_assert_eq(setenv("IGC_B", "1", 1), 0);
    assert_refused_as_changed();
    cr_assert_eq(unsetenv("IGC_B"), 0);

    cr_assert_eq(unsetenv("IGC_A0"), 0);
    assert_refused_as_changed();
    cr_assert_eq(setenv("IGC_A0", "2", 1), 0);

    cr_assert_eq(setenv("Unrelated", "1", 1), 0);
    cr_assert_eq(setenv("HOME", "/elsewhere", 1), 0);
    zc_key after_others = key_now();
    cr_assert(zc_key_equal(&first, &after_others));
}

/* A builder copied after the environment was added checks it again when
 * finished: the copy may be made long after (the layer keeps one per
 * device for the whole process). */
Test(environment, a_copy_finished_after_a_compiler_setting_changed_is_not_cacheable)
{
    cr_assert_eq(setenv("IGC_A", "1", 1), 0);
    zc_key first = fresh_key();
    zc_key_builder *prefix, *copy;
    cr_assert_eq(zc_key_builder_create(false, &prefix), ZC_OK);
    cr_assert_eq(zc_key_add_environment(prefix), ZC_OK);
    zc_key key;
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(setenv("IGC_A", "2", 1), 0);
        cr_assert_eq(zc_key_builder_copy(prefix, &copy), ZC_OK);
        cr_assert_eq(zc_key_finish(copy, &key), ZC_NOT_CACHEABLE);
        cr_assert_str_eq(zc_key_builder_reason(copy),
                         "IGC_* variables changed since the process's first module (IGC reads "
                         "them once, at its first compile)");
        zc_key_builder_destroy(copy);
        cr_assert_eq(setenv("IGC_A", "1", 1), 0);
        cr_assert_eq(zc_key_builder_copy(prefix, &copy), ZC_OK);
        cr_assert_eq(zc_key_finish(copy, &key), ZC_OK);
        cr_assert(zc_key_equal(&first, &key));
        zc_key_builder_destroy(copy);
    }
    zc_key_builder_destroy(prefix);
}

/* The layer takes the driver's part when the driver has read its settings;
 * the compiler's part waits for the first key. */
Test(environment, driver_part_taken_early_keeps_its_values)
{
    cr_assert_eq(setenv("NEOReadDebugKeys", "1", 1), 0);
    cr_assert_eq(setenv("IGC_ShaderDumpEnable", "1", 1), 0);
    zc_key expected = fresh_key();
    cr_assert_eq(unsetenv("IGC_ShaderDumpEnable"), 0);

    zc_environment_forget();
    zc_environment_snapshot_driver();
    cr_assert_eq(setenv("InjectInternalBuildOptions", "-ze-opt-disable", 1), 0);
    cr_assert_eq(setenv("IGC_ShaderDumpEnable", "1", 1), 0);
    zc_key late = key_now();
    cr_assert(zc_key_equal(&expected, &late),
              "the driver's part must be the one taken early, the compiler's the first key's");
}

static const char *const options_file = "/tmp/IntelIGC/debugFlags/Options.txt";

static void set_or_unset(const char *name, const char *value)
{
    cr_assert_eq(value != NULL ? setenv(name, value, 1) : unsetenv(name), 0);
}

/* The layer's warm-up proposes the compiler's part at the first context:
 * IGC_* variables set, changed or unset between then and the first key are
 * what the key holds. */
Test(environment, a_proposal_is_taken_again_when_a_variable_changed)
{
    const char *before[] = {NULL, "1", "1"}, *after[] = {"1", "2", NULL};
    for (int i = 0; i < 3; i++) {
        set_or_unset("IGC_ShaderDumpEnable", after[i]);
        zc_key expected = fresh_key();
        set_or_unset("IGC_ShaderDumpEnable", before[i]);
        zc_environment_forget();
        zc_environment_propose_compiler_part();
        set_or_unset("IGC_ShaderDumpEnable", after[i]);
        zc_key late = key_now();
        cr_assert(zc_key_equal(&expected, &late), "round %d: the proposal's values were kept", i);
    }
    set_or_unset("IGC_ShaderDumpEnable", NULL);
}

/* The proposal's options file is checked (a stat) at the first key: a file
 * created after the proposal is keyed, as the snapshot at the first key
 * would have it. */
Test(environment, an_options_file_created_after_the_proposal_is_keyed)
{
    cr_assert_eq(setenv("IGC_ShaderDumpEnable", "1", 1), 0);
    bool made_top = mkdir("/tmp/IntelIGC", 0755) == 0;
    bool made_flags = mkdir("/tmp/IntelIGC/debugFlags", 0755) == 0;
    bool planted = access(options_file, F_OK) != 0;
    zc_environment_forget();
    zc_environment_propose_compiler_part();
    if (planted)
        t_write_file(options_file, "", 0); /* empty: nothing for a concurrent IGC */
    zc_key first = key_now();
    zc_key present = fresh_key();
    if (planted)
        cr_assert_eq(unlink(options_file), 0);
    zc_key absent = fresh_key();
    if (made_flags)
        cr_assert_eq(rmdir("/tmp/IntelIGC/debugFlags"), 0);
    if (made_top)
        cr_assert_eq(rmdir("/tmp/IntelIGC"), 0);
    cr_assert(!planted || zc_key_equal(&first, &present), "the proposal's absent file was kept");
    cr_assert(!planted || !zc_key_equal(&present, &absent));
    cr_assert_eq(unsetenv("IGC_ShaderDumpEnable"), 0);
}

/* The driver reads igdrcl.config (newer drivers also neo.config) from the
 * working directory instead of the environment: its bytes count. */
Test(environment, driver_settings_files_count)
{
    static const char *const files[] = {"igdrcl.config", "neo.config"};
    for (size_t f = 0; f < 2; f++) {
        zc_key none = fresh_key();
        t_write_file(files[f], "InjectInternalBuildOptions = -ze-opt-disable\n", 45);
        zc_key with = fresh_key();
        cr_assert(!zc_key_equal(&none, &with), "%s", files[f]);
        t_write_file(files[f], "InjectInternalBuildOptions = -ze-opt-disable \n", 46);
        zc_key changed = fresh_key();
        cr_assert(!zc_key_equal(&with, &changed), "%s", files[f]);
        cr_assert_eq(unlink(files[f]), 0);
        zc_key removed = fresh_key();
        cr_assert(zc_key_equal(&none, &removed), "%s", files[f]);
    }
}

/* A settings file that exists but cannot be read through is not guessed
 * at: nothing is cached. */
Test(environment, unreadable_settings_file_is_not_cacheable)
{
    cr_assert_eq(mkdir("igdrcl.config", 0700), 0);
    zc_environment_forget();
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_environment(builder), ZC_NOT_CACHEABLE);
    cr_assert_str_eq(zc_key_builder_reason(builder),
                     "the driver's or the compiler's settings could not be read");
    zc_key_builder_destroy(builder);
    cr_assert_eq(rmdir("igdrcl.config"), 0);
}

static void *key_in_thread(void *out)
{
    *(zc_key *)out = key_now();
    return NULL;
}

/* The first keys of a process, in several threads at once, take the
 * snapshot once between them and agree. */
Test(environment, threads_taking_the_snapshot_at_once_agree)
{
    cr_assert_eq(setenv("NEOReadDebugKeys", "1", 1), 0);
    cr_assert_eq(setenv("InjectApiBuildOptions", "-ze-opt-disable", 1), 0);
    cr_assert_eq(setenv("IGC_ShaderDumpEnable", "1", 1), 0);
    zc_key expected = fresh_key();
    enum { THREADS = 4 };
    pthread_t threads[THREADS];
    zc_key keys[THREADS];
    zc_environment_forget();
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&threads[i], NULL, key_in_thread, &keys[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(pthread_join(threads[i], NULL), 0);
        cr_assert(zc_key_equal(&keys[i], &expected), "thread %d", i);
    }
}
