/* What the key sees, end to end on Intel's real driver (pretending to have a
 * Tiger Lake GPU): for build flags that differ only in white space, for
 * driver debug keys that change the driver's output, in the environment or
 * in the driver's settings file, the layer hands out
 * exactly the native binary the driver makes without it, cold and warm, and
 * each setting has its own entry.
 *
 * Each variant of the inputs runs ze_probe three times in fresh processes:
 * without the layer (the driver's own binary), with the layer and the cache
 * shared by all variants of the test (must compile: a hit would be another
 * variant's binary), and with the layer again (must hit). Compiles and hits
 * are counted from the layer's PrintDebugMessages lines. */
#include <stdint.h>
#include <sys/stat.h>

#include "e2e_probe_support.h"

TestSuite(e2e_key, .init = scratch_create, .fini = scratch_remove, .timeout = 300);

#define MAX_SETTINGS 4

/* One way of building the module: its flags (NULL: none), the settings
 * added to the environment, and a settings file for the driver. */
typedef struct variant {
    const char *name; /* names its files; letters and underscores */
    const char *flags;
    const char *settings[MAX_SETTINGS];
    const char *settings_file; /* igdrcl.config in the working directory, or NULL */
} variant;

static void file_for(char *path, const variant *v, const char *what)
{
    snprintf(path, PATH_MAX, "%s/%s.%s.bin", sc.root, v->name, what);
}

/* Runs ze_probe for v, its native binary going to <name>.<what>.bin. */
static void run_variant(const variant *v, bool with_layer, const char *what)
{
    char binary[PATH_MAX];
    file_for(binary, v, what);
    if (v->flags != NULL)
        probe_run(with_layer, v->settings,
                  ARGS("--spirv", SAXPY, "--native-out", binary, "--flags", v->flags));
    else
        probe_run(with_layer, v->settings, ARGS("--spirv", SAXPY, "--native-out", binary));
    cr_assert_eq(run.exit_status, 0, "%s %s: exit %d\n%s", v->name, what, run.exit_status, run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0\nkernels saxpy\nkernel-create 0x0\n"),
                       "%s %s: %s\n%s", v->name, what, run.out, run.err);
}

static void assert_counts(const variant *v, int misses, int disk_hits)
{
    cr_assert_eq(count_of(run.err, MISS), misses, "%s: %s", v->name, run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), disk_hits, "%s: %s", v->name, run.err);
    cr_assert_eq(count_of(run.err, HIT_MEMORY), 0, "%s", v->name);
    cr_assert_eq(count_of(run.err, "[Cache]: bypass"), 0, "%s: %s", v->name, run.err);
}

static uint8_t *contents(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    cr_assert_not_null(file, "cannot open %s", path);
    uint8_t *bytes = malloc(1 << 20);
    *size = fread(bytes, 1, 1 << 20, file);
    cr_assert_eq(ferror(file), 0);
    fclose(file);
    return bytes;
}

static bool same_contents(const char *a, const char *b)
{
    size_t size_a, size_b;
    uint8_t *bytes_a = contents(a, &size_a), *bytes_b = contents(b, &size_b);
    bool same = size_a == size_b && size_a > 0 && memcmp(bytes_a, bytes_b, size_a) == 0;
    free(bytes_a);
    free(bytes_b);
    return same;
}

static void assert_binary_is_the_drivers(const variant *v, const char *what)
{
    char driver[PATH_MAX], layer[PATH_MAX];
    file_for(driver, v, "driver");
    file_for(layer, v, what);
    cr_assert(same_contents(driver, layer),
              "%s: the layer's %s binary is not the driver's own (%s, %s)", v->name, what, driver,
              layer);
}

/* The driver alone, then the layer cold (one compile, one new entry) and
 * warm (one disk hit): both times the driver's own bytes. */
static void check_variant(const variant *v)
{
    int entries_before = entries_in(sc.cache);
    const char *settings_file = in_scratch("igdrcl.config");
    if (v->settings_file != NULL)
        t_write_file(settings_file, v->settings_file, strlen(v->settings_file));
    run_variant(v, false, "driver");
    cr_assert_eq(count_of(run.err, "[Cache]"), 0, "%s: the layer was loaded", v->name);
    run_variant(v, true, "cold");
    assert_counts(v, 1, 0);
    assert_binary_is_the_drivers(v, "cold");
    cr_assert_eq(entries_in(sc.cache), entries_before + 1, "%s has no entry of its own", v->name);
    run_variant(v, true, "warm");
    assert_counts(v, 0, 1);
    assert_binary_is_the_drivers(v, "warm");
    if (v->settings_file != NULL)
        cr_assert_eq(unlink(settings_file), 0);
}

static bool driver_binaries_differ(const variant *a, const variant *b)
{
    char path_a[PATH_MAX], path_b[PATH_MAX];
    file_for(path_a, a, "driver");
    file_for(path_b, b, "driver");
    return !same_contents(path_a, path_b);
}

/* The driver splits flags on single spaces: a tab joins two options into
 * one, which gives another binary; the other variants may give the same
 * bytes, but each is its own entry. */
Test(e2e_key, flags_differing_only_in_white_space_get_the_drivers_own_binary)
{
    static const variant variants[] = {
        {"space", "-ze-opt-level=1 -g", {NULL}, NULL},
        {"tab", "-ze-opt-level=1\t-g", {NULL}, NULL},
        {"trailing_space", "-ze-opt-level=1 -g ", {NULL}, NULL},
        {"doubled_space", "-ze-opt-level=1  -g", {NULL}, NULL},
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        check_variant(&variants[i]);
    cr_assert(driver_binaries_differ(&variants[0], &variants[1]),
              "the driver made the same binary with a tab: the test shows nothing");
    cr_assert_eq(entries_in(sc.cache), 4);
}

/* With NEOReadDebugKeys=1 (set for the pretend device) the driver reads its
 * debug keys; these two change the code it asks IGC for. */
Test(e2e_key, driver_debug_keys_get_the_drivers_own_binary)
{
    static const variant variants[] = {
        {"plain", NULL, {NULL}, NULL},
        {"inject_api_options", NULL, {"InjectApiBuildOptions=-ze-opt-disable", NULL}, NULL},
        {"stateless", NULL, {"DisableStatelessToStatefulOptimization=1", NULL}, NULL},
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        check_variant(&variants[i]);
    cr_assert(driver_binaries_differ(&variants[0], &variants[1]),
              "InjectApiBuildOptions did not change the driver's binary: the test shows nothing");
    cr_assert(driver_binaries_differ(&variants[0], &variants[2]),
              "DisableStatelessToStatefulOptimization did not change the driver's binary");
    cr_assert(driver_binaries_differ(&variants[1], &variants[2]));
    cr_assert_eq(entries_in(sc.cache), 3);
}

/* With a settings file in its working directory the driver reads its debug
 * keys from there instead of the environment (the pretend device too). */
Test(e2e_key, driver_settings_file_gets_the_drivers_own_binary)
{
#define DEVICE ZC_PRETEND_DEVICE_FILE
    static const variant variants[] = {
        {"file_device_only", NULL, {NULL}, DEVICE},
        {"file_inject_api_options",
         NULL,
         {NULL},
         DEVICE "InjectApiBuildOptions = -ze-opt-disable\n"},
    };
#undef DEVICE
    check_variant(&variants[0]);
    check_variant(&variants[1]);
    cr_assert(driver_binaries_differ(&variants[0], &variants[1]),
              "the settings file did not change the driver's binary: the test shows nothing");
    cr_assert_eq(entries_in(sc.cache), 2);
}

/* A library IGC loads, upgraded without IGC, is another compiler: a copy
 * with one byte more, first in LD_LIBRARY_PATH, gets an entry of its own,
 * and the system's copy hits its own entry again. The SPIR-V reader on IGC
 * 1.x; IGC 2.x links LLVM and the reader in, and needs zlib. */
Test(e2e_key, a_changed_library_the_compiler_loads_is_another_compiler)
{
    const char *igc = t_system_igc_name();
    const char *name = strcmp(igc, "libigc.so.1") == 0 ? "libLLVMSPIRVLib.so.14" : "libz.so.1";
    char system[PATH_MAX], copy[PATH_MAX], search[2 * PATH_MAX + 32];
    snprintf(system, sizeof system, "%s/%s", T_SYSTEM_LIB_DIR, name);
    const char *dir = in_scratch("changed_lib");
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(copy, sizeof copy, "%s/%s", dir, name);
    FILE *in = fopen(system, "rb"), *out = fopen(copy, "wb");
    cr_assert(in != NULL && out != NULL, "cannot copy %s to %s", system, copy);
    char buffer[65536];
    for (size_t got; (got = fread(buffer, 1, sizeof buffer, in)) > 0;)
        cr_assert_eq(fwrite(buffer, 1, got, out), got);
    /* A byte after every section: the loader never reads it. */
    cr_assert_eq(fputc(0, out), 0);
    fclose(in);
    cr_assert_eq(fclose(out), 0);
    snprintf(search, sizeof search, "LD_LIBRARY_PATH=%s:%s", dir, ZC_LAYER_DIR);
    variant plain = {"plain", NULL, {NULL}, NULL};
    variant changed = {"changed_library", NULL, {search, NULL}, NULL};
    check_variant(&plain);
    check_variant(&changed);
    run_variant(&plain, true, "again");
    assert_counts(&plain, 0, 1);
    assert_binary_is_the_drivers(&plain, "again");
    cr_assert_eq(entries_in(sc.cache), 2);
}
