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

#include "test_support.h"

#define SAXPY ZC_KERNEL_DIR "/e2e_saxpy.spv"
#define MISS "[Cache]: miss "
#define HIT_DISK "[Cache]: hit disk "
#define HIT_MEMORY "[Cache]: hit memory "
#define WAITING "[Cache]: waiting for another process compiling "
#define STOPPED_WAITING "stopped waiting for another process compiling "
#define PROCESSES 4
#define OUTPUT_MAX (64 * 1024)

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

/* ---- one run's files: its working directory holds its output ---- */

typedef struct probe_run {
    char dir[256]; /* short, so the paths of files in it always fit */
    pid_t pid;
    int exit_status; /* exit code, or 128 + signal */
    char out[OUTPUT_MAX];
    char err[OUTPUT_MAX];
} probe_run;

static void file_in(char *path, const probe_run *run, const char *name)
{
    snprintf(path, PATH_MAX, "%s/%s", run->dir, name);
}

static uint8_t *read_bytes(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    cr_assert_not_null(file, "cannot open %s", path);
    cr_assert_eq(fseek(file, 0, SEEK_END), 0);
    long length = ftell(file);
    cr_assert_gt(length, 0, "%s is empty", path);
    rewind(file);
    uint8_t *data = malloc((size_t)length);
    cr_assert_eq(fread(data, 1, (size_t)length, file), (size_t)length);
    fclose(file);
    *size = (size_t)length;
    return data;
}

/* ---- starting probes together ---- */

static char *const probe_environment[] = {
    "NEOReadDebugKeys=1",
    "SetCommandStreamReceiver=1",
    "ProductFamilyOverride=tgllp",
    "PrintDebugMessages=1",
    "LD_LIBRARY_PATH=" ZC_LAYER_DIR,
    "ZE_ENABLE_VALIDATION_LAYER=1",
    NULL, /* HOME */
    NULL, /* NEO_CACHE_DIR */
    NULL, /* an extra setting */
    NULL,
};

typedef struct start_line {
    int ready[2]; /* each probe writes a byte once Level Zero is up */
    int go[2];    /* closing the write end lets them all create the module */
} start_line;

/* In the child: its own directory (the driver writes an .aub file into the
 * working one), output to files there, the start line's ends as fds. */
static _Noreturn void exec_probe(const probe_run *run, const start_line *line, const char *extra)
{
    char home[PATH_MAX + 8], cache_setting[PATH_MAX + 16], out[PATH_MAX], err[PATH_MAX];
    char native[PATH_MAX], fds[32];
    char *env[sizeof probe_environment / sizeof probe_environment[0]];
    memcpy(env, probe_environment, sizeof env);
    snprintf(home, sizeof home, "HOME=%s", root);
    snprintf(cache_setting, sizeof cache_setting, "NEO_CACHE_DIR=%s", cache);
    env[6] = home;
    env[7] = cache_setting;
    env[8] = (char *)extra;
    file_in(out, run, "out");
    file_in(err, run, "err");
    file_in(native, run, "native.bin");
    snprintf(fds, sizeof fds, "%d,%d", line->ready[1], line->go[0]);
    char *argv[] = {ZC_PROBE_PATH, "--spirv",     SAXPY, "--native-out",
                    native,        "--start-fds", fds,   NULL};
    int out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err_fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out_fd < 0 || err_fd < 0 || chdir(run->dir) != 0 || dup2(out_fd, 1) < 0 ||
        dup2(err_fd, 2) < 0 || close(line->ready[0]) != 0 || close(line->go[1]) != 0)
        _exit(126);
    execve(ZC_PROBE_PATH, argv, env);
    _exit(127);
}

static void start_probe(probe_run *run, int index, const start_line *line, const char *extra)
{
    snprintf(run->dir, sizeof run->dir, "%s/batch%d_p%d", root, batch, index);
    cr_assert_eq(mkdir(run->dir, 0700), 0);
    run->pid = fork();
    cr_assert_geq(run->pid, 0);
    if (run->pid == 0)
        exec_probe(run, line, extra);
}

static void finish_probe(probe_run *run)
{
    int status;
    char path[PATH_MAX];
    cr_assert_eq(waitpid(run->pid, &status, 0), run->pid);
    run->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    file_in(path, run, "out");
    t_read_text(path, run->out, sizeof run->out);
    file_in(path, run, "err");
    t_read_text(path, run->err, sizeof run->err);
}

/* Runs count probes (extra: one more environment setting, or NULL), and lets
 * them create the module only once every one of them has Level Zero up. */
static void run_together(probe_run *runs, int count, const char *extra)
{
    start_line line;
    cr_assert_eq(pipe(line.ready), 0);
    cr_assert_eq(pipe(line.go), 0);
    for (int i = 0; i < count; i++)
        start_probe(&runs[i], i, &line, extra);
    batch++;
    close(line.ready[1]);
    close(line.go[0]);
    char byte;
    int ready = 0;
    while (ready < count && read(line.ready[0], &byte, 1) == 1)
        ready++;
    close(line.ready[0]);
    close(line.go[1]); /* go */
    for (int i = 0; i < count; i++)
        finish_probe(&runs[i]);
    cr_assert_eq(ready, count, "only %d of %d probes started Level Zero; stderr: %s", ready, count,
                 runs[0].err);
}

/* ---- looking at the results ---- */

static int count_of(const char *text, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

static int total_of(const probe_run *runs, int count, const char *needle)
{
    int total = 0;
    for (int i = 0; i < count; i++)
        total += count_of(runs[i].err, needle);
    return total;
}

static void assert_all_created_the_module(const probe_run *runs, int count)
{
    for (int i = 0; i < count; i++) {
        cr_assert_eq(runs[i].exit_status, 0, "probe %d exit %d; stderr: %s", i, runs[i].exit_status,
                     runs[i].err);
        cr_assert_not_null(strstr(runs[i].out, "result 0x0\n"), "probe %d stdout: %s", i,
                           runs[i].out);
        cr_assert_not_null(strstr(runs[i].out, "kernel-create 0x0\n"), "probe %d stdout: %s", i,
                           runs[i].out);
    }
}

static void assert_lookups(const probe_run *runs, int count, int misses, int disk_hits)
{
    cr_assert_eq(total_of(runs, count, MISS), misses, "stderr of probe 0: %s", runs[0].err);
    cr_assert_eq(total_of(runs, count, HIT_DISK), disk_hits, "stderr of probe 0: %s", runs[0].err);
    cr_assert_eq(total_of(runs, count, HIT_MEMORY), 0);
}

static void assert_same_native_binaries(const probe_run *runs, int count)
{
    char path[PATH_MAX];
    size_t first_size, size;
    file_in(path, &runs[0], "native.bin");
    uint8_t *first = read_bytes(path, &first_size);
    for (int i = 1; i < count; i++) {
        file_in(path, &runs[i], "native.bin");
        uint8_t *bytes = read_bytes(path, &size);
        cr_assert_eq(size, first_size, "probe %d's binary differs in size", i);
        cr_assert_eq(memcmp(bytes, first, size), 0, "probe %d's binary differs", i);
        free(bytes);
    }
    free(first);
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
                                     strcmp(path + ftw->base, "stats") == 0))) {
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
