/* The driver's own persistent cache under the layer, on whichever driver
 * generation is installed (22.43 caches under l0_cache_dir when it exists;
 * 24.13 and newer under NEO_CACHE_DIR, $XDG_CACHE_HOME or $HOME/.cache by
 * default). For each place a driver may cache:
 *   - with the layer, in a fresh home, nothing but zecache's files appears
 *     anywhere under it (cache directory, $XDG_CACHE_HOME, $HOME/.cache);
 *   - where the driver alone caches, its entry is poisoned (another module's
 *     binary under this module's name, which the driver then serves: the
 *     control) and a zecache miss still gets this module, really compiled.
 * At least one place must cache on any driver, or the test shows nothing. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "e2e_probe_support.h"
#include "test_support.h"

TestSuite(e2e_driver_cache, .init = scratch_create, .fini = scratch_remove, .timeout = 240);

static struct {
    int zecache_entries, foreign;
    char driver_entry[PATH_MAX]; /* the last .l0_cache file zecache did not write */
} walk;

static int visit_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    if (flag != FTW_F)
        return 0;
    const char *name = path + ftw->base;
    size_t length = strlen(name);
    if (is_zecache_entry_name(name))
        walk.zecache_entries++;
    else if (strcmp(name, "config.file") != 0 && strcmp(name, "stats") != 0 &&
             !is_zecache_side_file_name(name)) {
        walk.foreign++;
        if (length > 9 && strcmp(name + length - 9, ".l0_cache") == 0)
            snprintf(walk.driver_entry, sizeof walk.driver_entry, "%s", path);
    }
    return 0;
}

static void walk_home(const char *home)
{
    memset(&walk, 0, sizeof walk);
    nftw(home, visit_file, 16, FTW_PHYS);
}

/* Where a driver may cache, in a home directory of the case's own. */
typedef enum place { HOME_DEFAULT, XDG_CACHE, NEO_CACHE_DIR_SET, L0_CACHE_DIR_SET, PLACES } place;
static const char *const place_names[PLACES] = {"$HOME/.cache", "$XDG_CACHE_HOME", "NEO_CACHE_DIR",
                                                "l0_cache_dir"};

typedef struct place_env {
    char home[PATH_MAX], settings[3][PATH_MAX + 32];
    const char *overrides[6];
} place_env;

static void make_place(place_env *env, place where, const char *tag)
{
    snprintf(env->home, sizeof env->home, "%s/%s%d", sc.root, tag, (int)where);
    cr_assert_eq(mkdir(env->home, 0700), 0);
    snprintf(env->settings[0], sizeof env->settings[0], "HOME=%s", env->home);
    int count = 1;
    if (where == XDG_CACHE)
        snprintf(env->settings[count++], sizeof env->settings[0], "XDG_CACHE_HOME=%s/xdg",
                 env->home);
    if (where == NEO_CACHE_DIR_SET || where == L0_CACHE_DIR_SET)
        snprintf(env->settings[count++], sizeof env->settings[0], "NEO_CACHE_DIR=%s/neo",
                 env->home);
    if (where == L0_CACHE_DIR_SET)
        snprintf(env->settings[count++], sizeof env->settings[0], "l0_cache_dir=%s/l0", env->home);
    for (int i = 1; i < count; i++) { /* directories the user made */
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", strchr(env->settings[i], '=') + 1);
        cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
    }
    /* Only what the case sets: no NEO_CACHE_DIR and no NEO_CACHE_PERSISTENT
     * from the base environment. */
    env->overrides[0] = "NEO_CACHE_DIR";
    env->overrides[1] = "NEO_CACHE_PERSISTENT";
    for (int i = 0; i < count; i++)
        env->overrides[2 + i] = env->settings[i];
    env->overrides[2 + count] = NULL;
}

static void assert_kernel(const char *name, const char *what)
{
    char line[64];
    snprintf(line, sizeof line, "kernels %s\n", name);
    cr_assert_not_null(strstr(run.out, line), "%s: stdout: %s\nstderr: %s", what, run.out, run.err);
}

/* With the layer, in a fresh home: one zecache entry, nothing else. */
static void check_layer_alone(place where)
{
    place_env env;
    make_place(&env, where, "layer");
    probe_run(true, env.overrides, ARGS("--spirv", SAXPY));
    assert_kernel("saxpy", place_names[where]);
    cr_assert_eq(count_of(run.err, MISS), 1, "%s: %s", place_names[where], run.err);
    walk_home(env.home);
    cr_assert_eq(walk.foreign, 0, "%s: a file zecache did not write, e.g. %s", place_names[where],
                 walk.driver_entry);
    cr_assert_eq(walk.zecache_entries, 1, "%s", place_names[where]);
}

/* Returns whether the driver alone caches there; if so, checks that a miss
 * under the layer is a real compile, not the driver's cache answering. */
static bool check_driver_cache_is_not_read(place where)
{
    place_env env;
    make_place(&env, where, "driver");
    probe_run(false, env.overrides, ARGS("--spirv", SAXPY));
    assert_kernel("saxpy", place_names[where]);
    walk_home(env.home);
    if (walk.foreign == 0)
        return false;
    cr_assert_neq(walk.driver_entry[0], '\0', "%s: the driver wrote no .l0_cache file",
                  place_names[where]);
    char saxpy_entry[PATH_MAX];
    snprintf(saxpy_entry, sizeof saxpy_entry, "%s", walk.driver_entry);
    int files_before = walk.foreign;

    /* Poison: vector_add's entry in a home of its own, under saxpy's name. */
    place_env other;
    make_place(&other, where, "other");
    probe_run(false, other.overrides, ARGS("--spirv", VECTOR_ADD));
    walk_home(other.home);
    cr_assert_neq(walk.driver_entry[0], '\0');
    size_t size;
    uint8_t *bytes = t_read_bytes(walk.driver_entry, &size);
    t_write_file(saxpy_entry, bytes, size);
    free(bytes);
    probe_run(false, env.overrides, ARGS("--spirv", SAXPY));
    assert_kernel("vector_add", "the control: the driver serves its poisoned entry");

    probe_run(true, env.overrides, ARGS("--spirv", SAXPY));
    assert_kernel("saxpy", place_names[where]);
    cr_assert_eq(count_of(run.err, MISS), 1, "%s: %s", place_names[where], run.err);
    walk_home(env.home);
    cr_assert_eq(walk.foreign, files_before, "%s: the driver wrote under the layer",
                 place_names[where]);
    return true;
}

Test(e2e_driver_cache, only_zecache_files_appear_and_misses_are_real_compiles)
{
    int caching_places = 0;
    for (place where = 0; where < PLACES; where++) {
        check_layer_alone(where);
        caching_places += check_driver_cache_is_not_read(where);
    }
    cr_assert_geq(caching_places, 1, "the driver caches nowhere: the test shows nothing");
}

/* The layer's constructor writes a switch only where its value would let a
 * driver cache: NEO_CACHE_PERSISTENT unset is on for 24.13 and newer. */
Test(e2e_driver_cache, the_switches_written_are_reported)
{
    probe_run(true, NULL, ARGS("--spirv", SAXPY));
    cr_assert_eq(count_of(run.err, "is off while the layer caches: NEO_CACHE_PERSISTENT=00 (was "
                                   "unset)"),
                 1, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, "is off while the layer caches"), 1, "stderr: %s", run.err);

    char setting[PATH_MAX + 32];
    snprintf(setting, sizeof(setting), "l0_cache_dir=%s", sc.root);
    probe_run(true, ENV(setting, "NEO_CACHE_PERSISTENT=1"), ARGS("--spirv", SAXPY));
    cr_assert_eq(count_of(run.err, "is off while the layer caches: l0_cache_dir="), 1, "stderr: %s",
                 run.err);
    cr_assert_eq(
        count_of(run.err, "is off while the layer caches: NEO_CACHE_PERSISTENT=00 (was 1)"), 1,
        "stderr: %s", run.err);
}
