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
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

#define SAXPY ZC_KERNEL_DIR "/e2e_saxpy.spv"
#define TEXT_MAX (64 * 1024)
#define MAX_SETTINGS 4

static char root[128];
static char cache[PATH_MAX];

/* The layer makes the cache directory (NEO_CACHE_DIR) on its first run. */
static void scratch_create(void)
{
    t_make_scratch(root, sizeof root, "/tmp/zc_e2e_key.XXXXXX", cache, sizeof cache);
}

static void scratch_remove(void)
{
    t_remove_tree(root);
}

TestSuite(e2e_key, .init = scratch_create, .fini = scratch_remove, .timeout = 300);

/* One way of building the module: its flags (NULL: none) and the settings
 * added to the environment. */
typedef struct variant {
    const char *name; /* names its files; letters and underscores */
    const char *flags;
    const char *settings[MAX_SETTINGS];
    const char *settings_file; /* igdrcl.config in the working directory, or NULL */
} variant;

typedef struct outcome {
    int status;
    char out[TEXT_MAX];
    char err[TEXT_MAX];
} outcome;

/* The environment every run starts from: the pretend device, the layer's
 * lookup lines, a cache directory, and the layer only when asked. */
static void environment_for(const variant *v, bool with_layer, char **envp, char *storage,
                            size_t storage_size)
{
    size_t used = 0, count = 0;
    char layer_dir[PATH_MAX + 32], cache_dir[PATH_MAX + 32], home[PATH_MAX + 32];
    snprintf(layer_dir, sizeof layer_dir, "LD_LIBRARY_PATH=%s", ZC_LAYER_DIR);
    snprintf(cache_dir, sizeof cache_dir, "NEO_CACHE_DIR=%s", cache);
    snprintf(home, sizeof home, "HOME=%s", root);
    const char *base[] = {"NEOReadDebugKeys=1",
                          "SetCommandStreamReceiver=1",
                          "ProductFamilyOverride=tgllp",
                          "PrintDebugMessages=1",
                          cache_dir,
                          home};
    const char *layer[] = {layer_dir, "ZE_ENABLE_VALIDATION_LAYER=1"};
    const char *const *lists[] = {base, with_layer ? layer : NULL, v->settings};
    const size_t sizes[] = {sizeof base / sizeof base[0], 2, MAX_SETTINGS};
    for (size_t l = 0; l < 3; l++)
        for (size_t i = 0; lists[l] != NULL && i < sizes[l] && lists[l][i] != NULL; i++) {
            size_t length = strlen(lists[l][i]) + 1;
            cr_assert_leq(used + length, storage_size);
            envp[count++] = memcpy(storage + used, lists[l][i], length);
            used += length;
        }
    envp[count] = NULL;
}

static void file_for(char *path, const variant *v, const char *what)
{
    snprintf(path, PATH_MAX, "%s/%s.%s", root, v->name, what);
}

/* Runs ze_probe for v, writing its native binary to <name>.<what>.bin. */
static void run_probe(const variant *v, bool with_layer, const char *what, outcome *result)
{
    char binary[PATH_MAX], out[PATH_MAX], err[PATH_MAX];
    char name[64];
    snprintf(name, sizeof name, "%s.bin", what);
    file_for(binary, v, name);
    snprintf(name, sizeof name, "%s.out", what);
    file_for(out, v, name);
    snprintf(name, sizeof name, "%s.err", what);
    file_for(err, v, name);
    char *argv[] = {(char *)ZC_PROBE_PATH, "--spirv",        (char *)SAXPY, "--native-out", binary,
                    (char *)"--flags",     (char *)v->flags, NULL};
    if (v->flags == NULL)
        argv[5] = NULL;
    char *envp[16], storage[4 * PATH_MAX];
    environment_for(v, with_layer, envp, storage, sizeof storage);

    posix_spawn_file_actions_t actions;
    cr_assert_eq(posix_spawn_file_actions_init(&actions), 0);
    posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    /* The driver writes an .aub file into its working directory. */
    posix_spawn_file_actions_addchdir_np(&actions, root);
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, ZC_PROBE_PATH, &actions, NULL, argv, envp), 0);
    posix_spawn_file_actions_destroy(&actions);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    result->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    t_read_text(out, result->out, sizeof result->out);
    t_read_text(err, result->err, sizeof result->err);
    cr_assert_eq(result->status, 0, "%s %s: exit %d\n%s", v->name, what, result->status,
                 result->err);
    cr_assert_not_null(strstr(result->out, "result 0x0\nkernels saxpy\nkernel-create 0x0\n"),
                       "%s %s: %s\n%s", v->name, what, result->out, result->err);
}

static int occurrences(const char *text, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

static void assert_counts(const outcome *result, const variant *v, int misses, int disk_hits)
{
    cr_assert_eq(occurrences(result->err, "[Cache]: miss "), misses, "%s: %s", v->name,
                 result->err);
    cr_assert_eq(occurrences(result->err, "[Cache]: hit disk "), disk_hits, "%s: %s", v->name,
                 result->err);
    cr_assert_eq(occurrences(result->err, "[Cache]: hit memory "), 0, "%s", v->name);
    cr_assert_eq(occurrences(result->err, "[Cache]: bypass"), 0, "%s: %s", v->name, result->err);
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
    char driver[PATH_MAX], layer[PATH_MAX], name[64];
    file_for(driver, v, "driver.bin");
    snprintf(name, sizeof name, "%s.bin", what);
    file_for(layer, v, name);
    cr_assert(same_contents(driver, layer),
              "%s: the layer's %s binary is not the driver's own (%s, %s)", v->name, what, driver,
              layer);
}

static int entries;
static int count_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    size_t length = strlen(path);
    entries += flag == FTW_F && length > 9 && strcmp(path + length - 9, ".l0_cache") == 0;
    return 0;
}

static int cache_entries(void)
{
    entries = 0;
    nftw(cache, count_entry, 16, FTW_PHYS);
    return entries;
}

/* The driver alone, then the layer cold (one compile, one new entry) and
 * warm (one disk hit): both times the driver's own bytes. */
static void check_variant(const variant *v)
{
    outcome *result = malloc(sizeof *result);
    int entries_before = cache_entries();
    char settings_file[PATH_MAX];
    snprintf(settings_file, sizeof settings_file, "%s/igdrcl.config", root);
    if (v->settings_file != NULL)
        t_write_file(settings_file, v->settings_file, strlen(v->settings_file));
    run_probe(v, false, "driver", result);
    cr_assert_eq(occurrences(result->err, "[Cache]"), 0, "%s: the layer was loaded", v->name);
    run_probe(v, true, "cold", result);
    assert_counts(result, v, 1, 0);
    assert_binary_is_the_drivers(v, "cold");
    cr_assert_eq(cache_entries(), entries_before + 1, "%s has no entry of its own", v->name);
    run_probe(v, true, "warm", result);
    assert_counts(result, v, 0, 1);
    assert_binary_is_the_drivers(v, "warm");
    if (v->settings_file != NULL)
        cr_assert_eq(unlink(settings_file), 0);
    free(result);
}

static bool driver_binaries_differ(const variant *a, const variant *b)
{
    char path_a[PATH_MAX], path_b[PATH_MAX];
    file_for(path_a, a, "driver.bin");
    file_for(path_b, b, "driver.bin");
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
    cr_assert_eq(cache_entries(), 4);
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
    cr_assert_eq(cache_entries(), 3);
}

/* With a settings file in its working directory the driver reads its debug
 * keys from there instead of the environment (the pretend device too). */
Test(e2e_key, driver_settings_file_gets_the_drivers_own_binary)
{
#define DEVICE "SetCommandStreamReceiver = 1\nProductFamilyOverride = tgllp\n"
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
    cr_assert_eq(cache_entries(), 2);
}
