/* Sharing one cache directory: NEO_CACHE_SHARED=1 between Unix users of one
 * group (creation modes, setgid, the trust check, two users really sharing,
 * run as root with children that switch to made-up uids and gids), and a
 * read-only directory (a read-only bind mount) that serves hits. Tests that
 * need root skip with a message otherwise. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/cache.h"
#include "zecache/disk_tier.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_claim.h"
#include "zecache/stats.h"

enum {
    TEAM_GID = 47101, /* the shared group */
    USER_A_UID = 47201,
    USER_A_GID = 47202, /* each user's own primary group */
    USER_B_UID = 47301,
    USER_B_GID = 47302,
    OTHER_GID = 47401, /* a group neither belongs to */
    BINARY_SIZE = 3000,
};

static char scratch[128];
static char cache_dir[192];

static void scratch_create(void)
{
    t_make_scratch(scratch, sizeof scratch, "/tmp/zc_share.XXXXXX", cache_dir, sizeof cache_dir);
    /* users made up for a test must be able to reach the cache below it */
    cr_assert_eq(chmod(scratch, 0755), 0);
}

static void scratch_remove(void)
{
    t_remove_tree(scratch);
}

TestSuite(sharing, .init = scratch_create, .fini = scratch_remove);

static void skip_unless_root(void)
{
    if (geteuid() != 0) {
        scratch_remove(); /* a skipped test does not run .fini */
        cr_skip_test("needs root to switch to other users and groups");
    }
}

static zc_config shared_config(const char *dir)
{
    zc_config config = t_disk_config(dir, 1 << 20, 3);
    config.allow_shared = true;
    return config;
}

static zc_status open_status(const zc_config *config)
{
    zc_disk_tier *tier = NULL;
    zc_status status = zc_disk_tier_open(config, &tier);
    zc_disk_tier_close(tier);
    return status;
}

static zc_status store(zc_disk_tier *tier, uint64_t seed)
{
    zc_key key = t_key(seed);
    zc_artifact *artifact = t_artifact(BINARY_SIZE, seed);
    zc_status status = zc_disk_tier_store(tier, &key, artifact, "trace");
    zc_artifact_unref(artifact);
    return status;
}

/* True when seed's entry loads with exactly the bytes stored. */
static bool loads_same(zc_disk_tier *tier, uint64_t seed)
{
    zc_key key = t_key(seed);
    zc_artifact *loaded = NULL;
    if (zc_disk_tier_load(tier, &key, &loaded) != ZC_OK)
        return false;
    zc_artifact *expected = t_artifact(BINARY_SIZE, seed);
    size_t loaded_size, expected_size;
    const uint8_t *a = zc_artifact_binary(loaded, &loaded_size);
    const uint8_t *b = zc_artifact_binary(expected, &expected_size);
    bool same = loaded_size == expected_size && memcmp(a, b, expected_size) == 0;
    zc_artifact_unref(expected);
    zc_artifact_unref(loaded);
    return same;
}

static const char *in_cache(const char *rel)
{
    static char paths[4][PATH_MAX];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, PATH_MAX, "%s/%s", cache_dir, rel);
    return path;
}

static const char *entry_rel(uint64_t seed, const char *suffix)
{
    static char rels[4][128];
    static int next;
    char *rel = rels[next++ % 4], hex[ZC_KEY_HEX_SIZE];
    zc_key key = t_key(seed);
    zc_key_to_hex(&key, hex);
    snprintf(rel, 128, "%c/%c/%s%s", hex[0], hex[1], hex, suffix);
    return rel;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "no %s", path);
    return st.st_mode & 07777;
}

/* ---- what every file and directory in the cache looks like ---- */

typedef struct tree_census {
    int files, dirs;
    int world_writable; /* must stay 0 */
    int not_setgid;     /* directories without S_ISGID */
    int wrong_group;    /* with another group than expected_gid */
    int wrong_mode;     /* files not expected_file_mode, dirs not expected_dir_mode */
} tree_census;

static tree_census census;
static gid_t expected_gid;
static mode_t expected_file_mode, expected_dir_mode;

static int census_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)path, (void)ftw;
    mode_t mode = st->st_mode & 07777;
    census.world_writable += (mode & S_IWOTH) != 0;
    census.wrong_group += st->st_gid != expected_gid;
    if (type == FTW_D) {
        census.dirs++;
        census.not_setgid += !(mode & S_ISGID);
        census.wrong_mode += mode != expected_dir_mode;
    } else {
        census.files++;
        census.wrong_mode += mode != expected_file_mode;
    }
    return 0;
}

static tree_census take_census(gid_t gid, mode_t file_mode, mode_t dir_mode)
{
    memset(&census, 0, sizeof census);
    expected_gid = gid;
    expected_file_mode = file_mode;
    expected_dir_mode = dir_mode;
    cr_assert_eq(nftw(cache_dir, census_one, 16, FTW_PHYS), 0);
    return census;
}

/* Stores, holds a build lock, leaves a not-stored mark and merges stats:
 * every kind of file there is. */
static void fill_every_kind_of_file(zc_disk_tier *tier, zc_disk_claim *claim)
{
    cr_assert_eq(store(tier, 1), ZC_OK);
    cr_assert_eq(store(tier, 2), ZC_OK);
    zc_disk_claim_result result;
    zc_key key = t_key(3);
    cr_assert_eq(zc_disk_tier_claim(tier, &key, 0, &result, claim), ZC_OK);
    cr_assert_eq(result, ZC_DISK_CLAIMED);
    zc_disk_tier_mark_not_stored(tier, claim);
    zc_stats_counters delta = {.stores = 2};
    cr_assert_eq(zc_stats_merge(tier, &delta), ZC_OK);
}

/* Opens cache_dir (shared or private) under umask mask and fills it; the
 * caller releases the claim and closes the tier. */
static zc_disk_tier *open_and_fill(mode_t mask, bool shared, zc_disk_claim *claim)
{
    umask(mask);
    zc_config config = t_disk_config(cache_dir, 1 << 20, 3);
    config.allow_shared = shared;
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    fill_every_kind_of_file(tier, claim);
    return tier;
}

/* ---- creation modes ---- */

Test(sharing, shared_mode_creates_group_setgid_directories_and_group_files_from_the_umask)
{
    zc_disk_claim claim;
    zc_disk_tier *tier = open_and_fill(007, true, &claim);
    tree_census seen = take_census(getegid(), 0660, 02770);
    cr_assert_geq(seen.dirs, 3, "the root and two levels at least");
    cr_assert_eq(seen.files, 1 + 2 * 2 + 1 + 1 + 1 + 1,
                 "config.file, entries, traces, lock, mark, stats, zecache.accounting");
    cr_assert_eq(seen.wrong_mode, 0);
    cr_assert_eq(seen.not_setgid, 0);
    cr_assert_eq(seen.world_writable, 0);
    cr_assert_eq(mode_of(in_cache(entry_rel(1, ZC_ENTRY_SUFFIX))), 0660);
    cr_assert_eq(mode_of(in_cache(ZC_CONFIG_FILE_NAME)), 0660);
    cr_assert_eq(mode_of(in_cache(ZC_STATS_FILE_NAME)), 0660);
    cr_assert_eq(mode_of(in_cache(entry_rel(3, ZC_LOCK_SUFFIX))), 0660);
    cr_assert_eq(mode_of(in_cache(entry_rel(3, ZC_FAILED_SUFFIX))), 0660);
    zc_disk_tier_release(tier, &claim);
    zc_disk_tier_close(tier);
}

Test(sharing, shared_mode_never_creates_anything_world_writable_even_with_umask_0)
{
    zc_disk_claim claim;
    zc_disk_tier *tier = open_and_fill(0, true, &claim);
    tree_census seen = take_census(getegid(), 0664, 02775);
    cr_assert_gt(seen.files, 5);
    cr_assert_eq(seen.world_writable, 0);
    cr_assert_eq(seen.wrong_mode, 0);
    zc_disk_tier_release(tier, &claim);
    zc_disk_tier_close(tier);
}

Test(sharing, private_mode_stays_0700_and_0600_whatever_the_umask)
{
    zc_disk_claim claim;
    zc_disk_tier *tier = open_and_fill(0, false, &claim);
    tree_census seen = take_census(getegid(), 0600, 0700);
    cr_assert_gt(seen.files, 5);
    cr_assert_eq(seen.wrong_mode, 0);
    cr_assert_eq(seen.not_setgid, seen.dirs);
    zc_disk_tier_release(tier, &claim);
    zc_disk_tier_close(tier);
}

Test(sharing, every_missing_level_of_a_shared_path_is_created_setgid)
{
    umask(027);
    char deep[PATH_MAX];
    snprintf(deep, sizeof deep, "%s/a/b", cache_dir);
    zc_config config = shared_config(deep);
    cr_assert_eq(open_status(&config), ZC_OK);
    cr_assert_eq(mode_of(cache_dir), 02750);
    cr_assert_eq(mode_of(in_cache("a")), 02750);
    cr_assert_eq(mode_of(deep), 02750);
}

/* ---- the trust check ---- */

Test(sharing, shared_mode_accepts_group_writable_directories_of_its_groups_only)
{
    cr_assert_eq(mkdir(cache_dir, 0700), 0);
    zc_config config = shared_config(cache_dir);
    const mode_t accepted[] = {0700, 0750, 0770, 02770, 02775, 0755};
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        cr_assert_eq(chmod(cache_dir, accepted[i]), 0);
        cr_assert_eq(open_status(&config), ZC_OK, "mode %o", (unsigned)accepted[i]);
    }
    /* World-writable is refused, sticky or not, shared or not. */
    const mode_t refused[] = {0777, 01777, 02777, 0703, 0772};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        cr_assert_eq(chmod(cache_dir, refused[i]), 0);
        cr_assert_eq(open_status(&config), ZC_ERR_DISABLED, "mode %o", (unsigned)refused[i]);
        config.allow_shared = false;
        cr_assert_eq(open_status(&config), ZC_ERR_DISABLED, "mode %o", (unsigned)refused[i]);
        config.allow_shared = true;
    }
    if (geteuid() != 0)
        return; /* chgrp to a group we are not in needs root */
    cr_assert_eq(chown(cache_dir, (uid_t)-1, OTHER_GID), 0);
    cr_assert_eq(chmod(cache_dir, 02770), 0);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED, "writable by a foreign group");
    cr_assert_eq(chmod(cache_dir, 02750), 0);
    cr_assert_eq(open_status(&config), ZC_OK, "a foreign group may read");
}

Test(sharing, private_mode_accepts_root_owned_directories_but_not_other_owners)
{
    skip_unless_root();
    cr_assert_eq(mkdir(cache_dir, 0755), 0);
    zc_config config = t_disk_config(cache_dir, 1 << 20, 3);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        /* As user A: root's directory is trusted (read-only here), A's own
         * too, user B's not. */
        if (setgid(USER_A_GID) != 0 || setuid(USER_A_UID) != 0)
            _exit(100);
        _exit((int)open_status(&config));
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert_eq(WEXITSTATUS(status), ZC_OK);
    cr_assert_eq(chown(cache_dir, USER_B_UID, USER_B_GID), 0);
    cr_assert_eq(open_status(&config), ZC_ERR_DISABLED, "root in private mode, B's directory");
    config.allow_shared = true;
    cr_assert_eq(open_status(&config), ZC_OK);
}

/* ---- two users ---- */

/* Runs fn as a made-up user whose supplementary group is the team's, with
 * umask 007, in a child; returns its exit status. */
static int as_user(uid_t uid, gid_t gid, int (*fn)(void))
{
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        gid_t team = TEAM_GID;
        if (setgroups(1, &team) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
            _exit(100);
        umask(007);
        _exit(fn());
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status), "the child died");
    return WEXITSTATUS(status);
}

static zc_disk_tier *open_shared_or_exit(void)
{
    zc_config config = shared_config(cache_dir);
    zc_disk_tier *tier = NULL;
    if (zc_disk_tier_open(&config, &tier) != ZC_OK)
        _exit(101);
    return tier;
}

static int user_a_stores(void)
{
    zc_disk_tier *tier = open_shared_or_exit();
    int failures = 0;
    for (uint64_t seed = 1; seed <= 4; seed++)
        failures += store(tier, seed) != ZC_OK;
    zc_stats_counters delta = {.stores = 4};
    failures += zc_stats_merge(tier, &delta) != ZC_OK;
    zc_disk_tier_close(tier);
    return failures;
}

/* B hits all of A's entries, stores its own beside them, takes a build lock
 * in A's directories, merges its counters into A's stats file and removes
 * one of A's entries. */
static int user_b_hits_and_stores(void)
{
    zc_disk_tier *tier = open_shared_or_exit();
    int failures = 0;
    for (uint64_t seed = 1; seed <= 4; seed++)
        failures += !loads_same(tier, seed);
    for (uint64_t seed = 5; seed <= 6; seed++)
        failures += store(tier, seed) != ZC_OK;
    zc_disk_claim claim;
    zc_disk_claim_result result;
    zc_key key = t_key(1);
    failures += zc_disk_tier_claim(tier, &key, 0, &result, &claim) != ZC_OK;
    failures += result != ZC_DISK_READY;
    zc_disk_tier_release(tier, &claim);
    key = t_key(7);
    failures += zc_disk_tier_claim(tier, &key, 0, &result, &claim) != ZC_OK;
    failures += result != ZC_DISK_CLAIMED;
    zc_disk_tier_release(tier, &claim);
    zc_stats_counters delta = {.disk_hits = 4, .stores = 2};
    failures += zc_stats_merge(tier, &delta) != ZC_OK;
    failures += zc_disk_tier_remove_entry(tier, entry_rel(4, ZC_ENTRY_SUFFIX)) != ZC_OK;
    zc_disk_tier_close(tier);
    return failures;
}

static int user_a_hits_what_b_stored(void)
{
    zc_disk_tier *tier = open_shared_or_exit();
    int failures = !loads_same(tier, 5) + !loads_same(tier, 6) + loads_same(tier, 4);
    uint64_t recorded = 0, scanned = 1;
    failures += zc_disk_tier_recorded_size(tier, &recorded) != ZC_OK;
    failures += zc_disk_tier_scanned_size(tier, &scanned, NULL) != ZC_OK;
    failures += recorded != scanned;
    zc_disk_tier_close(tier);
    return failures;
}

Test(sharing, two_users_of_one_group_share_a_directory)
{
    skip_unless_root();
    /* The documented set-up: mkdir -m 2770, chgrp team. */
    cr_assert_eq(mkdir(cache_dir, 0700), 0);
    cr_assert_eq(chown(cache_dir, 0, TEAM_GID), 0);
    cr_assert_eq(chmod(cache_dir, 02770), 0);
    int a = as_user(USER_A_UID, USER_A_GID, user_a_stores);
    if (a == 100) {
        scratch_remove();
        cr_skip_test("cannot switch to other users here");
    }
    cr_assert_eq(a, 0, "user A: %d failures", a);
    int b = as_user(USER_B_UID, USER_B_GID, user_b_hits_and_stores);
    cr_assert_eq(b, 0, "user B: %d failures", b);
    cr_assert_eq(as_user(USER_A_UID, USER_A_GID, user_a_hits_what_b_stored), 0);
    tree_census seen = take_census(TEAM_GID, 0660, 02770);
    cr_assert_eq(seen.world_writable, 0);
    cr_assert_eq(seen.wrong_group, 0, "everything is the team's");
    cr_assert_eq(seen.not_setgid, 0);
    cr_assert_eq(seen.wrong_mode, 0);
    /* root is not in the team, so a tier here would refuse the directory:
     * the stats file is read as text. */
    char text[4096];
    t_read_text(in_cache(ZC_STATS_FILE_NAME), text, sizeof text);
    cr_assert_not_null(strstr(text, "\nstores 6\n"), "both users' counters are in the one file: %s",
                       text);
    cr_assert_not_null(strstr(text, "\ndisk_hits 4\n"), "%s", text);
}

/* ---- read-only directories ---- */

static char read_only_dir[PATH_MAX];

/* A read-only bind mount of cache_dir (root ignores permission bits, not a
 * read-only mount); skips when mounts are not allowed here. */
static void mount_read_only_view(void)
{
    snprintf(read_only_dir, sizeof read_only_dir, "%s/ro", scratch);
    cr_assert_eq(mkdir(read_only_dir, 0700), 0);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount(cache_dir, read_only_dir, NULL, MS_BIND, NULL) != 0) {
        scratch_remove();
        cr_skip_test("cannot make a private bind mount here: %s", strerror(errno));
    }
    if (mount(NULL, read_only_dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) != 0) {
        umount(read_only_dir);
        scratch_remove();
        cr_skip_test("cannot remount read-only here: %s", strerror(errno));
    }
}

Test(sharing, a_read_only_directory_serves_hits_and_skips_stores_quietly)
{
    skip_unless_root();
    zc_config config = t_disk_config(cache_dir, 1 << 20, 3);
    zc_disk_tier *writer = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &writer), ZC_OK);
    for (uint64_t seed = 1; seed <= 3; seed++)
        cr_assert_eq(store(writer, seed), ZC_OK);
    uint64_t total_before;
    cr_assert_eq(zc_disk_tier_recorded_size(writer, &total_before), ZC_OK);
    zc_disk_tier_close(writer);
    mount_read_only_view();

    zc_config read_only = t_disk_config(read_only_dir, 1 << 20, 3);
    read_only.wait_timeout_ms = 60000; /* a wait would show as a hang, not a pass */
    read_only.memory_size = 0;
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&read_only, &cache), ZC_OK);
    cr_assert_not_null(zc_cache_disk_dir(cache), "read-only is not unusable");
    for (uint64_t seed = 1; seed <= 6; seed++) {
        t_counted_compile counter = {.seed = seed, .size = BINARY_SIZE};
        zc_key key = t_key(seed);
        zc_artifact *artifact = NULL;
        zc_lookup_outcome outcome;
        cr_assert_eq(zc_cache_get_or_compile(cache, &key, NULL, t_compile_counted, &counter,
                                             &artifact, &outcome),
                     ZC_OK);
        cr_assert_eq(outcome, seed <= 3 ? ZC_LOOKUP_DISK_HIT : ZC_LOOKUP_COMPILED);
        cr_assert_eq(counter.calls, seed <= 3 ? 0 : 1);
        zc_artifact *expected = t_artifact(BINARY_SIZE, seed);
        t_assert_same_artifact(artifact, expected);
        zc_artifact_unref(expected);
        zc_artifact_unref(artifact);
    }
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    cr_assert_eq(stats.disk_hits, 3);
    cr_assert_eq(stats.misses, 3);
    cr_assert_eq(stats.stores, 0);
    cr_assert_eq(stats.store_errors, 1, "the first skipped store only");
    zc_cache_close(cache);
    umount(read_only_dir);

    zc_disk_tier *after = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &after), ZC_OK);
    uint64_t total_after, entries;
    cr_assert_eq(zc_disk_tier_scanned_size(after, &total_after, &entries), ZC_OK);
    cr_assert_eq(entries, 3);
    cr_assert_eq(total_after, total_before);
    cr_assert(!t_exists(in_cache(entry_rel(4, ZC_LOCK_SUFFIX))));
    zc_disk_tier_close(after);
}
