/* Cross-process single flight on Intel's real driver (pretending to have a
 * Tiger Lake GPU): several ze_probe processes, released from one start line
 * once Level Zero is up in all of them, create the same module with one
 * cache directory. Compiles are counted from the layer's PrintDebugMessages
 * lines, summed over the processes, as in test_layer_e2e.c. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_together_support.h"
#include "test_support.h"

#define SAXPY ZC_KERNEL_DIR "/e2e_saxpy.spv"
#define MISS "[Cache]: miss "
#define HIT_DISK "[Cache]: hit disk "
#define HIT_MEMORY "[Cache]: hit memory "
#define WAITING "[Cache]: waiting for another process compiling "
#define STOPPED_WAITING "stopped waiting for another process compiling "
#define PROCESSES 4

static char root[128];
static char cache[PATH_MAX];
static int batch; /* numbers each group of runs, so their files stay apart */

static void scratch_create(void)
{
    t_make_scratch(root, sizeof root, "/tmp/zc_e2e_mp.XXXXXX", cache, sizeof cache);
    cr_assert_eq(mkdir(cache, 0700), 0);
}

static void scratch_remove(void)
{
    t_remove_tree(root);
}

TestSuite(e2e_multiproc, .init = scratch_create, .fini = scratch_remove, .timeout = 300);

/* ---- running probes together (e2e_together_support.h) ---- */

typedef e2e_probe probe_run;

static char cache_setting[PATH_MAX + 16];

/* Runs count probes on one cache directory (extra: one more environment
 * setting, or NULL), released together once Level Zero is up in all. */
static void run_together(probe_run *runs, int count, const char *extra)
{
    snprintf(cache_setting, sizeof cache_setting, "NEO_CACHE_DIR=%s", cache);
    for (int i = 0; i < count; i++) {
        memset(&runs[i], 0, sizeof runs[i]);
        snprintf(runs[i].dir, sizeof runs[i].dir, "%s/batch%d_p%d", root, batch, i);
        runs[i].settings[0] = cache_setting;
        runs[i].settings[1] = extra;
    }
    batch++;
    e2e_run_together(runs, count, SAXPY);
}

static int count_of(const char *text, const char *needle)
{
    return e2e_count_of(text, needle);
}

static int total_of(const probe_run *runs, int count, const char *needle)
{
    return e2e_total_of(runs, count, needle);
}

static void assert_all_created_the_module(const probe_run *runs, int count)
{
    e2e_assert_all_created_the_module(runs, count);
}

static void assert_lookups(const probe_run *runs, int count, int misses, int disk_hits)
{
    cr_assert_eq(total_of(runs, count, MISS), misses, "stderr of probe 0: %s", runs[0].err);
    cr_assert_eq(total_of(runs, count, HIT_DISK), disk_hits, "stderr of probe 0: %s", runs[0].err);
    cr_assert_eq(total_of(runs, count, HIT_MEMORY), 0);
}

static void assert_same_native_binaries(const probe_run *runs, int count)
{
    e2e_assert_same_native(&runs[0], runs, count);
}

/* Files in the cache, by kind: only complete entries, config.file and the
 * stats file may be left (no lock or temp files). */
static int cache_entries, cache_others;
static char entry_path[PATH_MAX];

static int classify_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    if (flag != FTW_F)
        return 0;
    size_t length = strlen(path);
    if (length > 9 && strcmp(path + length - 9, ".l0_cache") == 0) {
        cache_entries++;
        snprintf(entry_path, sizeof entry_path, "%s", path);
    } else if (!(ftw->level == 1 && (strcmp(path + ftw->base, "config.file") == 0 ||
                                     strcmp(path + ftw->base, "stats") == 0)) &&
               !is_zecache_side_file_name(path + ftw->base)) {
        cache_others++;
    }
    return 0;
}

static void assert_cache_holds_one_entry_only(void)
{
    cache_entries = cache_others = 0;
    cr_assert_eq(nftw(cache, classify_file, 16, FTW_PHYS), 0);
    cr_assert_eq(cache_entries, 1);
    cr_assert_eq(cache_others, 0, "files other than the entry, config.file and stats are left");
}

/* The lock path of the only entry: "<dir>/<hex>.lock" beside it. */
static void lock_path_of_the_entry(char *path)
{
    assert_cache_holds_one_entry_only();
    size_t stem = strlen(entry_path) - strlen(".l0_cache");
    snprintf(path, PATH_MAX, "%.*s.lock", (int)stem, entry_path);
}

/* ---- the tests ---- */

Test(e2e_multiproc, four_processes_starting_together_compile_once)
{
    probe_run *runs = calloc(PROCESSES, sizeof *runs);
    run_together(runs, PROCESSES, NULL);
    assert_all_created_the_module(runs, PROCESSES);
    assert_lookups(runs, PROCESSES, 1, PROCESSES - 1);
    assert_same_native_binaries(runs, PROCESSES);
    assert_cache_holds_one_entry_only();
    cr_log_info("%d of %d processes waited for the compiling one",
                total_of(runs, PROCESSES, WAITING), PROCESSES - 1);
    free(runs);
}

/* A lock file left by a killed process (unlocked, as the kernel drops the
 * flock of a dead holder) costs nothing and is gone afterwards. */
Test(e2e_multiproc, lock_file_left_by_a_killed_process_is_taken_over_and_removed)
{
    probe_run *runs = calloc(PROCESSES, sizeof *runs);
    run_together(runs, 1, NULL);
    char lock[PATH_MAX];
    lock_path_of_the_entry(lock);
    cr_assert_eq(unlink(entry_path), 0);
    int fd = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    close(fd);

    run_together(runs, PROCESSES, NULL);
    assert_all_created_the_module(runs, PROCESSES);
    assert_lookups(runs, PROCESSES, 1, PROCESSES - 1);
    assert_same_native_binaries(runs, PROCESSES);
    assert_cache_holds_one_entry_only();
    free(runs);
}

/* A process (here the test) that holds the build lock and never stores, hung
 * say: the layer gives up after NEO_CACHE_WAIT_TIMEOUT_MS and compiles. */
Test(e2e_multiproc, holder_that_never_stores_makes_the_layer_time_out_and_compile)
{
    probe_run *runs = calloc(2, sizeof *runs);
    run_together(&runs[0], 1, NULL);
    char lock[PATH_MAX];
    lock_path_of_the_entry(lock);
    cr_assert_eq(unlink(entry_path), 0);
    int fd = open(lock, O_RDONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(flock(fd, LOCK_EX), 0);

    run_together(&runs[1], 1, "NEO_CACHE_WAIT_TIMEOUT_MS=200");
    assert_all_created_the_module(&runs[1], 1);
    assert_lookups(&runs[1], 1, 1, 0);
    cr_assert_eq(count_of(runs[1].err, WAITING), 1, "stderr: %s", runs[1].err);
    cr_assert_eq(count_of(runs[1].err, STOPPED_WAITING), 1, "stderr: %s", runs[1].err);
    assert_same_native_binaries(runs, 2);
    /* The holder's lock file is left to its holder, who removes it. */
    struct stat st;
    cr_assert_eq(lstat(lock, &st), 0);
    cr_assert_eq(unlink(lock), 0);
    close(fd);
    assert_cache_holds_one_entry_only();
    free(runs);
}
