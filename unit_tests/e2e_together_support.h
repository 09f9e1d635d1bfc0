/* Several ze_probe processes at once on Intel's real driver (pretending to
 * have a Tiger Lake GPU), each in its own directory with its own settings,
 * released together from one start line once Level Zero is up in all of
 * them (test_layer_e2e_multiproc.c, test_layer_e2e_remote.c; one probe at a
 * time: e2e_probe_support.h). Lookups are read from the layer's
 * PrintDebugMessages lines. */
#ifndef ZC_E2E_TOGETHER_SUPPORT_H
#define ZC_E2E_TOGETHER_SUPPORT_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pretend_device.h"
#include "test_support.h"

#define E2E_OUTPUT_MAX (64 * 1024)
#define E2E_MAX_SETTINGS 6

typedef struct e2e_probe {
    char dir[256];                          /* its working directory: output and native binary */
    const char *settings[E2E_MAX_SETTINGS]; /* "NAME=value", NULL-terminated */
    pid_t pid;
    int exit_status; /* exit code, or 128 + signal */
    char out[E2E_OUTPUT_MAX];
    char err[E2E_OUTPUT_MAX];
} e2e_probe;

typedef struct e2e_start_line {
    int ready[2]; /* each probe writes a byte once Level Zero is up */
    int go[2];    /* closing the write end lets them all create the module */
} e2e_start_line;

static inline void e2e_file_in(char *path, const e2e_probe *probe, const char *name)
{
    snprintf(path, PATH_MAX, "%.255s/%s", probe->dir, name);
}

static inline _Noreturn void e2e_exec_probe(const e2e_probe *probe, const e2e_start_line *line,
                                            const char *spirv)
{
    static const char *const base[] = {ZC_PRETEND_DEVICE_ENV, "PrintDebugMessages=1",
                                       "LD_LIBRARY_PATH=" ZC_LAYER_DIR,
                                       "ZE_ENABLE_VALIDATION_LAYER=1"};
    char *env[24];
    size_t count = 0;
    char home[PATH_MAX + 8];
    snprintf(home, sizeof home, "HOME=%.255s", probe->dir);
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        env[count++] = (char *)base[i];
    env[count++] = home;
    for (size_t i = 0; i < E2E_MAX_SETTINGS && probe->settings[i] != NULL; i++)
        env[count++] = (char *)probe->settings[i];
    env[count] = NULL;
    char out[PATH_MAX], err[PATH_MAX], native[PATH_MAX], fds[32];
    e2e_file_in(out, probe, "out");
    e2e_file_in(err, probe, "err");
    e2e_file_in(native, probe, "native.bin");
    snprintf(fds, sizeof fds, "%d,%d", line->ready[1], line->go[0]);
    char *argv[] = {ZC_PROBE_PATH, "--spirv",     (char *)spirv, "--native-out",
                    native,        "--start-fds", fds,           NULL};
    int out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err_fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out_fd < 0 || err_fd < 0 || chdir(probe->dir) != 0 || dup2(out_fd, 1) < 0 ||
        dup2(err_fd, 2) < 0 || close(line->ready[0]) != 0 || close(line->go[1]) != 0)
        _exit(126);
    execve(ZC_PROBE_PATH, argv, env);
    _exit(127);
}

static inline void e2e_finish_probe(e2e_probe *probe)
{
    int status;
    char path[PATH_MAX];
    cr_assert_eq(waitpid(probe->pid, &status, 0), probe->pid);
    probe->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    e2e_file_in(path, probe, "out");
    t_read_text(path, probe->out, sizeof probe->out);
    e2e_file_in(path, probe, "err");
    t_read_text(path, probe->err, sizeof probe->err);
}

/* Runs count probes (their dir and settings filled in by the caller; dir is
 * created here) on spirv, letting them create the module only once every
 * one has Level Zero up. */
static inline void e2e_run_together(e2e_probe *probes, int count, const char *spirv)
{
    e2e_start_line line;
    cr_assert_eq(pipe(line.ready), 0);
    cr_assert_eq(pipe(line.go), 0);
    for (int i = 0; i < count; i++) {
        cr_assert_eq(mkdir(probes[i].dir, 0700), 0, "mkdir %s", probes[i].dir);
        probes[i].pid = fork();
        cr_assert_geq(probes[i].pid, 0);
        if (probes[i].pid == 0)
            e2e_exec_probe(&probes[i], &line, spirv);
    }
    close(line.ready[1]);
    close(line.go[0]);
    char byte;
    int ready = 0;
    while (ready < count && read(line.ready[0], &byte, 1) == 1)
        ready++;
    close(line.ready[0]);
    close(line.go[1]); /* go */
    for (int i = 0; i < count; i++)
        e2e_finish_probe(&probes[i]);
    cr_assert_eq(ready, count, "only %d of %d probes started Level Zero; stderr: %s", ready, count,
                 probes[0].err);
}

static inline int e2e_count_of(const char *text, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

static inline int e2e_total_of(const e2e_probe *probes, int count, const char *needle)
{
    int total = 0;
    for (int i = 0; i < count; i++)
        total += e2e_count_of(probes[i].err, needle);
    return total;
}

static inline void e2e_assert_all_created_the_module(const e2e_probe *probes, int count)
{
    for (int i = 0; i < count; i++) {
        cr_assert_eq(probes[i].exit_status, 0, "probe %d exit %d; stderr: %s", i,
                     probes[i].exit_status, probes[i].err);
        cr_assert_not_null(strstr(probes[i].out, "result 0x0\n"), "probe %d stdout: %s", i,
                           probes[i].out);
        cr_assert_not_null(strstr(probes[i].out, "kernel-create 0x0\n"), "probe %d stdout: %s", i,
                           probes[i].out);
    }
}

static inline uint8_t *e2e_native_of(const e2e_probe *probe, size_t *size)
{
    char path[PATH_MAX];
    e2e_file_in(path, probe, "native.bin");
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

/* Every probe's native binary is byte for byte the reference's. */
static inline void e2e_assert_same_native(const e2e_probe *reference, const e2e_probe *probes,
                                          int count)
{
    size_t first_size, size;
    uint8_t *first = e2e_native_of(reference, &first_size);
    for (int i = 0; i < count; i++) {
        uint8_t *bytes = e2e_native_of(&probes[i], &size);
        cr_assert_eq(size, first_size, "probe %d's binary differs in size", i);
        cr_assert_eq(memcmp(bytes, first, size), 0, "probe %d's binary differs", i);
        free(bytes);
    }
    free(first);
}

#endif
