/* The file system underneath: a full disk and a read-only remount (a small
 * tmpfs mounted for the test; skipped where mounting is not allowed), the
 * cache directory removed while in use, and the directory the environment
 * names being a file, missing, forbidden or absent. Nothing may crash; a
 * store either works with exact accounting or fails cleanly; a load either
 * returns the right bytes or misses. */
#include <criterion/criterion.h>
#include <pwd.h>
#include <signal.h>
#include <sys/wait.h>

#include "fault_test_support.h"
#include "zecache/config.h"
#include "zecache/log.h"
#include "zecache/disk_maintenance.h"

TestSuite(fault_fs, .init = ft_make_root, .fini = ft_remove_root);

enum { BIG_BINARY = 40000 };

static zc_status store_big(zc_disk_tier *tier, uint64_t n, const char *trace)
{
    zc_key key = fc_key(n);
    zc_artifact *artifact = fc_artifact(n, BIG_BINARY);
    zc_status status = zc_disk_tier_store(tier, &key, artifact, trace);
    zc_artifact_unref(artifact);
    cr_assert(status == ZC_OK || status == ZC_ERR_IO || status == ZC_ERR_DISABLED, "store %llu: %s",
              (unsigned long long)n, zc_status_name(status));
    return status;
}

static zc_status load_big(zc_disk_tier *tier, uint64_t n)
{
    zc_key key = fc_key(n);
    zc_artifact *loaded = NULL;
    zc_status status = zc_disk_tier_load(tier, &key, &loaded);
    cr_assert(status == ZC_OK || status == ZC_MISS);
    if (status == ZC_OK)
        cr_assert(fc_artifact_matches(loaded, n, BIG_BINARY), "key %llu: wrong bytes",
                  (unsigned long long)n);
    zc_artifact_unref(loaded);
    return status;
}

static void skip_unless_mounted(unsigned size_kib)
{
    if (!ft_mount_tmpfs(size_kib)) {
        ft_remove_root(); /* a skipped test does not run .fini */
        cr_skip_test("cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)");
    }
}

/* ---- a full disk ---- */

/* Fills a 256 KiB tmpfs with stores (the size limit is far above it), then
 * keeps storing: every failure is ZC_ERR_IO with no temp file left and
 * config.file exact, every stored entry keeps loading, and once space is
 * freed stores work again. */
Test(fault_fs, full_disk_fails_stores_cleanly_and_loads_still_hit)
{
    skip_unless_mounted(256);
    zc_disk_tier *tier = ft_open(ZC_DEFAULT_MAX_SIZE, NULL);
    bool stored[200] = {false};
    uint64_t failures = 0, successes = 0;
    for (uint64_t n = 1; n < 200; n++) {
        zc_status status = store_big(tier, n, n % 2 ? "trace of an odd key" : NULL);
        stored[n] = status == ZC_OK;
        successes += status == ZC_OK;
        failures += status != ZC_OK;
        ft_assert_exact_and_clean("storing on a filling disk");
    }
    cr_log_info("256 KiB tmpfs: %llu stores fitted, %llu failed cleanly",
                (unsigned long long)successes, (unsigned long long)failures);
    cr_assert_gt(failures, 100, "the disk really filled up");
    for (uint64_t n = 1; n < 200; n++)
        cr_assert_eq(load_big(tier, n), stored[n] ? ZC_OK : ZC_MISS, "key %llu",
                     (unsigned long long)n);

    /* config.file lost while the disk is full: it cannot even hold 8 bytes. */
    char config[PATH_MAX];
    ft_path(config, ZC_CONFIG_FILE_NAME);
    cr_assert_eq(unlink(config), 0);
    store_big(tier, 500, NULL);
    ft_census census = ft_take_census();
    cr_assert_eq(census.temps, 0);
    uint64_t recorded;
    if (ft_config_value(&recorded))
        cr_assert_eq(recorded, census.total);

    /* Space freed: stores work again and accounting is exact. */
    uint64_t removed_entries = 0;
    cr_assert_eq(zc_disk_tier_trim(tier, 64 << 10, 0, &removed_entries, NULL), ZC_OK);
    cr_assert_gt(removed_entries, 0);
    cr_assert_eq(store_big(tier, 501, "trace"), ZC_OK);
    cr_assert_eq(load_big(tier, 501), ZC_OK);
    ft_assert_exact_and_clean("after freeing space");
    zc_disk_tier_close(tier);
    ft_unmount_tmpfs();
}

/* ---- a read-only remount under an open tier ---- */

Test(fault_fs, read_only_remount_keeps_loads_hitting_and_fails_writes_cleanly)
{
    skip_unless_mounted(1024);
    zc_disk_tier *tier = ft_open(ZC_DEFAULT_MAX_SIZE, NULL);
    for (uint64_t n = 1; n <= 5; n++)
        cr_assert_eq(store_big(tier, n, n == 1 ? "trace" : NULL), ZC_OK);
    char bad[PATH_MAX];
    ft_entry_path(bad, 5, ZC_ENTRY_SUFFIX);
    ft_write_file(bad, "corrupt", 7); /* before the remount: the load cannot remove it */
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    ft_census before = ft_take_census();
    ft_remount(true);

    for (uint64_t n = 1; n <= 4; n++)
        cr_assert_eq(load_big(tier, n), ZC_OK, "key %llu", (unsigned long long)n);
    cr_assert_eq(load_big(tier, 5), ZC_MISS);
    cr_assert(t_exists(bad), "cannot be removed on a read-only mount");
    cr_assert_eq(store_big(tier, 6, "trace"), ZC_ERR_IO);
    char rel[PATH_MAX];
    zc_key key = fc_key(1);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&key, hex);
    snprintf(rel, sizeof rel, "%c/%c/%s%s", hex[0], hex[1], hex, ZC_ENTRY_SUFFIX);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, rel), ZC_ERR_IO);
    cr_assert_eq(zc_disk_tier_trim(tier, 0, 0, NULL, NULL), ZC_ERR_IO);
    cr_assert_eq(zc_disk_tier_clear(tier), ZC_ERR_IO);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_ERR_IO);
    uint64_t recorded;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(recorded, before.total);
    ft_census after = ft_take_census();
    cr_assert_eq(after.entries, before.entries);
    cr_assert_eq(after.total, before.total);

    /* A tier opened now either refuses the directory or works read-only. */
    zc_config config = ft_config(ft_cache, ZC_DEFAULT_MAX_SIZE);
    zc_disk_tier *late = NULL;
    zc_status status = zc_disk_tier_open(&config, &late);
    cr_assert(status == ZC_OK || status == ZC_ERR_DISABLED, "%s", zc_status_name(status));
    if (status == ZC_OK) {
        cr_assert_eq(load_big(late, 1), ZC_OK);
        cr_assert_eq(store_big(late, 7, NULL), ZC_ERR_IO);
        zc_disk_tier_close(late);
    }

    ft_remount(false);
    cr_assert_eq(load_big(tier, 5), ZC_MISS);
    cr_assert(!t_exists(bad), "removed once writable again");
    cr_assert_eq(store_big(tier, 6, "trace"), ZC_OK);
    cr_assert_eq(load_big(tier, 6), ZC_OK);
    ft_assert_exact_and_clean("after the remount read-write");
    zc_disk_tier_close(tier);
    ft_unmount_tmpfs();
}

/* ---- the cache directory removed while in use ---- */

static void remove_cache_dir(void)
{
    cr_assert_eq(nftw(ft_cache, ft_remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
    cr_assert(!t_exists(ft_cache));
}

/* Every operation on a tier whose directory is gone: no crash, loads miss,
 * the rest fails; nothing is recreated at the old path except, if the
 * implementation chose to, a clean cache. */
static void exercise_orphaned_tier(zc_disk_tier *tier)
{
    ft_assert_miss(tier, 1);
    zc_status status = ft_try_store(tier, 4, "trace");
    cr_assert(status == ZC_OK || status == ZC_ERR_IO, "%s", zc_status_name(status));
    cr_assert_neq(zc_disk_tier_trim(tier, 0, 0, NULL, NULL), ZC_OK);
    cr_assert_neq(zc_disk_tier_clear(tier), ZC_OK);
    cr_assert_neq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    uint64_t size = 0, entries = 0;
    cr_assert_neq(zc_disk_tier_recorded_size(tier, &size), ZC_OK);
    zc_disk_tier_scanned_size(tier, &size, &entries); /* may succeed: an empty directory */
    cr_assert_eq(entries, 0);
}

Test(fault_fs, directory_removed_while_in_use_fails_cleanly)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    for (uint64_t n = 1; n <= 3; n++)
        ft_store(tier, n);
    remove_cache_dir();
    exercise_orphaned_tier(tier);
    cr_assert(!t_exists(ft_cache) || ft_take_census().temps == 0);

    /* Another process recreates it: the old tier must not write into the
     * new one wrongly; a new tier works there. */
    zc_disk_tier *fresh = ft_open(1 << 20, NULL);
    ft_store(fresh, 10);
    exercise_orphaned_tier(tier);
    ft_assert_hit(fresh, 10);
    cr_assert_eq(ft_assert_exact_and_clean("the recreated cache").entries, 1);
    zc_disk_tier_close(tier);
    zc_disk_tier_close(fresh);
}

Test(fault_fs, level_directory_removed_while_in_use_is_recreated)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    ft_store(tier, 1);
    ft_store(tier, 2);
    char path[PATH_MAX];
    ft_entry_path(path, 1, "");
    *strrchr(path, '/') = '\0';
    *strrchr(path, '/') = '\0'; /* .../k0 */
    cr_assert_eq(nftw(path, ft_remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
    ft_assert_miss(tier, 1);
    ft_store(tier, 1);
    ft_assert_hit(tier, 1);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    ft_assert_exact_and_clean("after the k0 directory came back");
    zc_disk_tier_close(tier);
}

/* ---- the directory the environment names ---- */

static void clear_cache_environment(void)
{
    static const char *const names[] = {"NEO_CACHE_PERSISTENT",
                                        "NEO_CACHE_DIR",
                                        "NEO_CACHE_MAX_SIZE",
                                        "NEO_CACHE_MEMORY_SIZE",
                                        "NEO_CACHE_COMPRESSION_LEVEL",
                                        "NEO_CACHE_SHARED",
                                        "XDG_CACHE_HOME",
                                        "HOME",
                                        "PrintDebugMessages",
                                        "NEO_PrintDebugMessages",
                                        "NEO_L0_PrintDebugMessages"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
}

/* Opens what the environment configures; when that works, proves the tier
 * usable with a store and a load. Returns zc_disk_tier_open's status. */
static zc_status open_from_environment(char *dir_out)
{
    zc_config config;
    zc_config_from_env(&config);
    if (dir_out != NULL)
        snprintf(dir_out, PATH_MAX, "%s", config.dir);
    zc_disk_tier *tier = (zc_disk_tier *)1;
    zc_status status = zc_disk_tier_open(&config, &tier);
    cr_assert(status == ZC_OK || status == ZC_ERR_DISABLED, "%s", zc_status_name(status));
    if (status != ZC_OK) {
        cr_assert_null(tier);
        return status;
    }
    ft_store(tier, 1);
    ft_assert_hit(tier, 1);
    zc_disk_tier_close(tier);
    return status;
}

static void setenv_in_root(const char *name, const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", ft_root, rel);
    setenv(name, path, 1);
}

Test(fault_fs, cache_dir_naming_a_file_is_disabled)
{
    clear_cache_environment();
    setenv_in_root("NEO_CACHE_DIR", "file");
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/file", ft_root);
    ft_write_file(file, "keep", 4);
    cr_assert_eq(open_from_environment(NULL), ZC_ERR_DISABLED);
    setenv_in_root("NEO_CACHE_DIR", "file/below");
    cr_assert_eq(open_from_environment(NULL), ZC_ERR_DISABLED);
    size_t size;
    free(ft_read_file(file, &size));
    cr_assert_eq(size, 4);
}

Test(fault_fs, missing_cache_dir_is_created_private)
{
    clear_cache_environment();
    setenv_in_root("NEO_CACHE_DIR", "new/deeper//cache/");
    char dir[PATH_MAX];
    cr_assert_eq(open_from_environment(dir), ZC_OK);
    struct stat st;
    cr_assert_eq(stat(dir, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700);
}

Test(fault_fs, relative_cache_dir_is_resolved_once)
{
    clear_cache_environment();
    cr_assert_eq(chdir(ft_root), 0);
    setenv("NEO_CACHE_DIR", "relative/cache", 1);
    char dir[PATH_MAX];
    cr_assert_eq(open_from_environment(dir), ZC_OK);
    cr_assert_eq(dir[0], '/');
    cr_assert_eq(chdir("/"), 0);
}

Test(fault_fs, no_home_and_no_xdg_disables_the_disk_tier)
{
    clear_cache_environment();
    char dir[PATH_MAX];
    cr_assert_eq(open_from_environment(dir), ZC_ERR_DISABLED);
    cr_assert_str_eq(dir, "");
    setenv("HOME", "", 1);
    setenv("XDG_CACHE_HOME", "", 1);
    setenv("NEO_CACHE_DIR", "", 1);
    cr_assert_eq(open_from_environment(dir), ZC_ERR_DISABLED);
}

Test(fault_fs, home_or_xdg_that_cannot_hold_a_cache_disables_it)
{
    clear_cache_environment();
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/home_file", ft_root);
    ft_write_file(file, "x", 1);
    setenv("HOME", file, 1);
    cr_assert_eq(open_from_environment(NULL), ZC_ERR_DISABLED);
    setenv("XDG_CACHE_HOME", file, 1);
    cr_assert_eq(open_from_environment(NULL), ZC_ERR_DISABLED);
    setenv_in_root("XDG_CACHE_HOME", "xdg");
    char dir[PATH_MAX];
    cr_assert_eq(open_from_environment(dir), ZC_OK, "a missing XDG_CACHE_HOME is created");
    cr_assert(strstr(dir, "/xdg/neo_compiler_cache") != NULL);
}

/* Relative values would move the cache with the working directory: ignored,
 * as the XDG base directory specification says (found by fuzz_config). */
Test(fault_fs, relative_home_or_xdg_is_ignored)
{
    clear_cache_environment();
    cr_assert_eq(chdir(ft_root), 0);
    setenv("XDG_CACHE_HOME", "relative_xdg", 1);
    setenv_in_root("HOME", "home");
    char dir[PATH_MAX];
    cr_assert_eq(open_from_environment(dir), ZC_OK);
    cr_assert(strstr(dir, "/home/.cache/neo_compiler_cache") != NULL, "%s", dir);
    setenv("HOME", "relative_home", 1);
    cr_assert_eq(open_from_environment(dir), ZC_ERR_DISABLED);
    cr_assert_str_eq(dir, "");
    cr_assert(!t_exists("relative_xdg") && !t_exists("relative_home"));
    cr_assert_eq(chdir("/"), 0);
}

Test(fault_fs, overlong_cache_dir_falls_back_or_disables)
{
    clear_cache_environment();
    char *longest = malloc(PATH_MAX + 64);
    memset(longest, 'a', PATH_MAX + 63);
    longest[0] = '/';
    longest[PATH_MAX + 63] = '\0';
    setenv("NEO_CACHE_DIR", longest, 1);
    cr_assert_eq(open_from_environment(NULL), ZC_ERR_DISABLED, "too long, and no default");
    setenv_in_root("HOME", "home");
    char dir[PATH_MAX];
    cr_assert_eq(open_from_environment(dir), ZC_OK, "too long: the default is used");
    cr_assert(strstr(dir, "/home/.cache/neo_compiler_cache") != NULL, "%s", dir);
    longest[PATH_MAX - 2] = '\0'; /* fits, but no component may be that long */
    setenv("NEO_CACHE_DIR", longest, 1);
    cr_assert_eq(open_from_environment(NULL), ZC_ERR_DISABLED);
    free(longest);
}

Test(fault_fs, garbage_settings_fall_back_to_defaults_and_work)
{
    clear_cache_environment();
    setenv_in_root("NEO_CACHE_DIR", "cache");
    setenv("NEO_CACHE_PERSISTENT", "yes", 1);
    setenv("NEO_CACHE_MAX_SIZE", "-1", 1);
    setenv("NEO_CACHE_COMPRESSION_LEVEL", "99999999999999999999999", 1);
    setenv("NEO_CACHE_SHARED", "2", 1);
    cr_assert_eq(open_from_environment(NULL), ZC_OK);
    setenv("NEO_CACHE_PERSISTENT", "0", 1);
    cr_assert_eq(open_from_environment(NULL), ZC_ERR_DISABLED);
}

/* As root every permission check passes, so the forbidden paths are tried by
 * a child that gives up root first. A directory it cannot create is
 * disabled; root's existing one, which it may read but not write, serves
 * hits read-only (root is trusted as an owner: root could replace our
 * binaries anyway). */
Test(fault_fs, cache_dir_without_permission_is_disabled_or_read_only)
{
    if (geteuid() != 0) {
        ft_remove_root();
        cr_skip_test("needs root to switch to an unprivileged user");
    }
    struct passwd *nobody = getpwnam("nobody");
    uid_t uid = nobody != NULL ? nobody->pw_uid : 65534;
    gid_t gid = nobody != NULL ? nobody->pw_gid : 65534;
    char private_dir[PATH_MAX];
    snprintf(private_dir, sizeof private_dir, "%s/private", ft_root);
    cr_assert_eq(mkdir(private_dir, 0700), 0);
    cr_assert_eq(chmod(ft_root, 0755), 0); /* nobody may enter the root, not private/ */
    clear_cache_environment();
    setenv_in_root("NEO_CACHE_DIR", "private/cache");
    char existing[PATH_MAX]; /* root's, readable by all */
    snprintf(existing, sizeof existing, "%s/existing", ft_root);
    zc_config root_config = ft_config(existing, ZC_DEFAULT_MAX_SIZE);
    zc_disk_tier *root_tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&root_config, &root_tier), ZC_OK);
    cr_assert_eq(store_big(root_tier, 1, NULL), ZC_OK);
    zc_disk_tier_close(root_tier);
    char command[PATH_MAX + 64]; /* the levels and the entry readable by nobody */
    snprintf(command, sizeof command, "chmod -R a+rX '%s'", existing);
    cr_assert_eq(system(command), 0);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        if (setgid(gid) != 0 || setuid(uid) != 0)
            _exit(100);
        zc_config config;
        zc_config_from_env(&config);
        zc_disk_tier *tier = NULL;
        zc_status missing = zc_disk_tier_open(&config, &tier);
        snprintf(config.dir, sizeof config.dir, "%s", existing);
        if (zc_disk_tier_open(&config, &tier) != ZC_OK)
            _exit(101);
        bool read_only = load_big(tier, 1) == ZC_OK && store_big(tier, 2, NULL) == ZC_ERR_IO &&
                         store_big(tier, 3, NULL) == ZC_ERR_DISABLED &&
                         load_big(tier, 2) == ZC_MISS;
        zc_disk_tier_close(tier);
        _exit(read_only ? (int)missing : 102);
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status));
    if (WEXITSTATUS(status) == 100) {
        ft_remove_root();
        cr_skip_test("cannot switch to an unprivileged user here");
    }
    cr_assert_eq(WEXITSTATUS(status), ZC_ERR_DISABLED, "exit %d", WEXITSTATUS(status));
    char created[PATH_MAX];
    snprintf(created, sizeof created, "%s/private/cache", ft_root);
    cr_assert(!t_exists(created));
}

/* ---- refusals say why ---- */

static char captured[8192];

/* Runs open with zc_log on and stderr captured. */
static zc_status open_capturing(const zc_config *config)
{
    char log_path[PATH_MAX];
    snprintf(log_path, sizeof log_path, "%s/stderr.txt", ft_root);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    dup2(fd, 2);
    close(fd);
    zc_log_set_enabled(true);
    zc_disk_tier *tier = NULL;
    zc_status status = zc_disk_tier_open(config, &tier);
    zc_log_set_enabled(false);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    zc_disk_tier_close(tier);
    memset(captured, 0, sizeof captured);
    fd = open(log_path, O_RDONLY);
    cr_assert_geq(read(fd, captured, sizeof captured - 1), 0);
    close(fd);
    return status;
}

Test(fault_fs, refusals_of_a_shared_directory_say_why_and_how_to_allow_it)
{
    cr_assert_eq(mkdir(ft_cache, 0700), 0);
    zc_config config = ft_config(ft_cache, 1 << 20);
    cr_assert_eq(chmod(ft_cache, 0775), 0);
    cr_assert_eq(open_capturing(&config), ZC_ERR_DISABLED);
    cr_assert(strstr(captured, "writable by group or others") != NULL, "%s", captured);
    cr_assert(strstr(captured, "NEO_CACHE_SHARED=1") != NULL, "%s", captured);
    cr_assert(strstr(captured, ft_cache) != NULL, "%s", captured);
    cr_assert_eq(chmod(ft_cache, 0700), 0);
    if (geteuid() == 0) {
        cr_assert_eq(chown(ft_cache, 12345, 12345), 0);
        cr_assert_eq(open_capturing(&config), ZC_ERR_DISABLED);
        cr_assert(strstr(captured, "owned by another user") != NULL, "%s", captured);
        cr_assert(strstr(captured, "NEO_CACHE_SHARED=1") != NULL, "%s", captured);
    }
    clear_cache_environment();
    setenv("NEO_CACHE_DIR", ft_cache, 1);
    setenv("NEO_CACHE_SHARED", "1", 1);
    zc_config_from_env(&config);
    cr_assert(config.allow_shared);
    cr_assert_eq(open_capturing(&config), ZC_OK);
}

Test(fault_fs, refusal_of_a_symlinked_config_file_says_so)
{
    cr_assert_eq(mkdir(ft_cache, 0700), 0);
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    cr_assert_eq(symlink("/etc/passwd", path), 0);
    zc_config config = ft_config(ft_cache, 1 << 20);
    cr_assert_eq(open_capturing(&config), ZC_ERR_DISABLED);
    cr_assert(strstr(captured, "symlink") != NULL, "%s", captured);
}
