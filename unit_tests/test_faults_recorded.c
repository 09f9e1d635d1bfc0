/* Recorded inputs (recipes and the SPIR-V they name) under crashes and
 * planted files: two defects the model test (test_disk_model.c) found.
 *  - a clear killed at any system call never leaves a recipe naming SPIR-V
 *    that is gone (it removed files in directory order);
 *  - a .trace or .recipe beside something that is no regular file at its
 *    entry's name (a symlink) is an orphan: removed by a repair, never left
 *    uncounted beside an exact-looking config.file. */
#include <criterion/criterion.h>
#include <sys/wait.h>

#include "fault_test_support.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_recipes.h"

TestSuite(faults_recorded, .init = ft_make_root, .fini = ft_remove_root, .timeout = 300);

enum { MODULES = 12, SPIRV_SIZE = 2000 };

/* Where the SPIR-V t_record_inputs made from seed lies. */
static void blob_path_of(uint64_t seed, char path[PATH_MAX])
{
    uint8_t spirv[SPIRV_SIZE], *container = NULL;
    size_t size = 0;
    zc_key sha;
    char hex[ZC_KEY_HEX_SIZE];
    t_fill_random(spirv, sizeof spirv, seed);
    cr_assert_eq(zc_spirv_blob_encode(spirv, sizeof spirv, 3, sha.bytes, &container, &size), ZC_OK);
    free(container);
    zc_key_to_hex(&sha, hex);
    snprintf(path, PATH_MAX, "%s/%c/%c/%s%s", ft_cache, hex[0], hex[1], hex, ZC_SPIRV_SUFFIX);
}

/* A child clears the cache and is killed before its system call number at;
 * true when it finished before that call. */
static bool clear_killed_at(uint64_t at)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        zc_config config = ft_config(ft_cache, 0);
        zc_disk_tier *tier = NULL;
        if (zc_disk_tier_open_with_ops(&config, &fm_crash_ops, &tier) != ZC_OK)
            _exit(2);
        atomic_store(&fm_crash_calls, 0);
        fm_crash_at = at;
        zc_disk_tier_clear(tier);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) ? WEXITSTATUS(status) == 0 : WTERMSIG(status) == SIGKILL);
    return WIFEXITED(status);
}

Test(faults_recorded, a_clear_killed_anywhere_leaves_no_recipe_without_its_spirv)
{
    bool finished = false;
    for (uint64_t at = 1; !finished; at++) {
        snprintf(ft_cache, sizeof ft_cache, "%s/c%llu", ft_root, (unsigned long long)at);
        zc_disk_tier *tier = ft_open(0, NULL);
        for (uint64_t n = 0; n < MODULES; n++) {
            zc_key key = fc_key(n);
            ft_store(tier, n);
            cr_assert_eq(t_record_inputs(tier, &key, n, SPIRV_SIZE), ZC_OK);
        }
        zc_disk_tier_close(tier);
        finished = clear_killed_at(at);
        for (uint64_t n = 0; n < MODULES; n++) {
            char recipe[PATH_MAX], blob[PATH_MAX];
            ft_entry_path(recipe, n, ZC_RECIPE_SUFFIX);
            blob_path_of(n, blob);
            cr_assert(!t_exists(recipe) || t_exists(blob),
                      "a clear killed before its call %llu left %s naming a SPIR-V that is gone",
                      (unsigned long long)at, recipe);
        }
    }
}

Test(faults_recorded, a_sidecar_beside_a_symlinked_entry_is_an_orphan)
{
    zc_disk_tier *tier = ft_open(0, NULL);
    zc_key linked = fc_key(4);
    cr_assert_eq(ft_try_store(tier, 4, "a trace"), ZC_OK);
    cr_assert_eq(t_record_inputs(tier, &linked, 4, SPIRV_SIZE), ZC_OK);
    ft_store(tier, 5);
    char path[PATH_MAX], other[PATH_MAX], trace[PATH_MAX], recipe[PATH_MAX];
    ft_entry_path(path, 4, ZC_ENTRY_SUFFIX);
    ft_entry_path(other, 5, ZC_ENTRY_SUFFIX);
    ft_entry_path(trace, 4, ZC_TRACE_SUFFIX);
    ft_entry_path(recipe, 4, ZC_RECIPE_SUFFIX);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(symlink(other, path), 0);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    cr_assert_not(t_exists(trace), "the trace beside a symlink stayed");
    cr_assert_not(t_exists(recipe), "the recipe beside a symlink stayed");
    /* What is left to count: the other entry, and the SPIR-V the removed
     * recipe named until a sweep finds it unnamed. */
    char blob[PATH_MAX];
    struct stat entry_st, blob_st;
    blob_path_of(4, blob);
    cr_assert_eq(stat(other, &entry_st), 0);
    uint64_t counted =
        (uint64_t)entry_st.st_size + (stat(blob, &blob_st) == 0 ? (uint64_t)blob_st.st_size : 0);
    uint64_t recorded = 0;
    cr_assert(ft_config_value(&recorded));
    cr_assert_eq(recorded, counted, "config.file %llu, counted files %llu",
                 (unsigned long long)recorded, (unsigned long long)counted);
    zc_disk_tier_close(tier);
}
