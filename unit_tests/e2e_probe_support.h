/* Running ze_probe for the end-to-end tests (test_layer_e2e.c,
 * test_layer_parity.c): a scratch directory per test, a controlled
 * environment with Intel's real driver pretending to have a Tiger Lake GPU
 * (see real-driver-without-gpu.md), the probe's output and the layer's
 * PrintDebugMessages lines. Header-only, as the other support headers. */
#ifndef ZC_E2E_PROBE_SUPPORT_H
#define ZC_E2E_PROBE_SUPPORT_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pretend_device.h"
#include "test_support.h"

#define KERNEL(name) ZC_KERNEL_DIR "/" name
#define SAXPY KERNEL("e2e_saxpy.spv")
#define VECTOR_ADD KERNEL("e2e_vector_add.spv")
#define SPEC_CONSTANTS KERNEL("e2e_spec_constants.spv")
#define FP64 KERNEL("e2e_fp64.spv")

#define MISS "[Cache]: miss "
#define HIT_DISK "[Cache]: hit disk "
#define HIT_MEMORY "[Cache]: hit memory "
#define MAX_ENV 48
#define OUTPUT_MAX (256 * 1024)

typedef struct scratch {
    char root[128]; /* mkdtemp's short name, so paths under it always fit */
    char cache[PATH_MAX];
    int runs;
} scratch;

typedef struct run_result {
    int exit_status; /* exit code, or 128 + signal */
    char out[OUTPUT_MAX];
    char err[OUTPUT_MAX];
} run_result;

static scratch sc;
static run_result run;

/* ---- scratch directories ---- */

static inline void scratch_create(void)
{
    t_make_scratch(sc.root, sizeof sc.root, "/tmp/zc_e2e.XXXXXX", sc.cache, sizeof sc.cache);
    cr_assert_eq(mkdir(sc.cache, 0700), 0);
    sc.runs = 0;
}

static inline void scratch_remove(void)
{
    t_remove_tree(sc.root);
}

static inline const char *in_scratch(const char *name)
{
    static char paths[8][PATH_MAX];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, PATH_MAX, "%s/%s", sc.root, name);
    return path;
}

/* ---- running the probe ---- */

typedef struct environment {
    char *entries[MAX_ENV + 1];
    int count;
} environment;

/* "NAME=VALUE" sets, "NAME" removes. */
static inline void env_apply(environment *env, const char *setting)
{
    size_t name_length = strcspn(setting, "=");
    for (int i = 0; i < env->count; i++) {
        if (strncmp(env->entries[i], setting, name_length) == 0 &&
            env->entries[i][name_length] == '=') {
            free(env->entries[i]);
            env->entries[i] = env->entries[--env->count];
            break;
        }
    }
    if (setting[name_length] == '=' && env->count < MAX_ENV)
        env->entries[env->count++] = strdup(setting);
    env->entries[env->count] = NULL;
}

static inline void env_apply_format(environment *env, const char *name, const char *value)
{
    char setting[PATH_MAX + 64];
    snprintf(setting, sizeof(setting), "%s=%s", name, value);
    env_apply(env, setting);
}

static inline void env_build(environment *env, bool with_layer, const char *const *overrides)
{
    static const char *const passed_through[] = {"PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS",
                                                 "LSAN_OPTIONS", "TSAN_OPTIONS"};
    env->count = 0;
    for (size_t i = 0; i < sizeof(passed_through) / sizeof(passed_through[0]); i++)
        if (getenv(passed_through[i]) != NULL)
            env_apply_format(env, passed_through[i], getenv(passed_through[i]));
    static const char *const pretend_device[] = {ZC_PRETEND_DEVICE_ENV};
    for (size_t i = 0; i < sizeof(pretend_device) / sizeof(pretend_device[0]); i++)
        env_apply(env, pretend_device[i]);
    env_apply(env, "PrintDebugMessages=1");
    env_apply_format(env, "HOME", sc.root);
    env_apply_format(env, "NEO_CACHE_DIR", sc.cache);
    if (with_layer) {
        env_apply_format(env, "LD_LIBRARY_PATH", ZC_LAYER_DIR);
        env_apply(env, "ZE_ENABLE_VALIDATION_LAYER=1");
    } else {
        /* The driver alone compiles every time, as a miss does: from 24.13
         * its own cache is on by default and would answer a later run. */
        env_apply(env, "NEO_CACHE_PERSISTENT=0");
    }
    for (int i = 0; overrides != NULL && overrides[i] != NULL; i++)
        env_apply(env, overrides[i]);
}

static inline void env_free(environment *env)
{
    for (int i = 0; i < env->count; i++)
        free(env->entries[i]);
    env->count = 0;
}

static inline void exec_probe(const char *out, const char *err, char *const *argv,
                              char *const *envp)
{
    int out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err_fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out_fd < 0 || err_fd < 0 || chdir(sc.root) != 0 || dup2(out_fd, 1) < 0 ||
        dup2(err_fd, 2) < 0)
        _exit(126);
    execve(ZC_PROBE_PATH, argv, envp);
    _exit(127);
}

/* Runs ze_probe with args (NULL-terminated) and the base environment plus
 * overrides; fills run. */
static inline void probe_run(bool with_layer, const char *const *overrides, const char *const *args)
{
    char out[PATH_MAX], err[PATH_MAX];
    char *argv[32] = {(char *)ZC_PROBE_PATH};
    int argc = 1;
    for (int i = 0; args[i] != NULL && argc < 31; i++)
        argv[argc++] = (char *)args[i];
    argv[argc] = NULL;
    environment env;
    env_build(&env, with_layer, overrides);
    snprintf(out, sizeof(out), "%s/run%d.out", sc.root, sc.runs);
    snprintf(err, sizeof(err), "%s/run%d.err", sc.root, sc.runs);
    sc.runs++;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        exec_probe(out, err, argv, env.entries);
    env_free(&env);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    t_read_text(out, run.out, sizeof(run.out));
    t_read_text(err, run.err, sizeof(run.err));
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---- looking at the results ---- */

static inline int count_of(const char *text, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

/* The lines of the probe's output after "describe <number>" up to the next
 * "describe" line (ze_probe --describe, cl_probe). */
static inline void probe_description(int number, char *text, size_t size)
{
    char marker[32];
    snprintf(marker, sizeof(marker), "describe %d\n", number);
    const char *start = strstr(run.out, marker);
    cr_assert_not_null(start, "no \"%s\" in: %s", marker, run.out);
    start += strlen(marker);
    const char *end = strstr(start, "describe ");
    size_t length = end != NULL ? (size_t)(end - start) : strlen(start);
    cr_assert_lt(length, size);
    memcpy(text, start, length);
    text[length] = '\0';
}

static inline void assert_same_description(const char *what, const char *expected,
                                           const char *actual)
{
    cr_assert_str_eq(actual, expected, "%s differs.\n--- expected:\n%s--- got:\n%s", what, expected,
                     actual);
}

/* PoCL names the file it compiles in its diagnostics after a random
 * temporary one (".../tempfile_2RlT8x.cl:4:14: ..."), the driver alone
 * too: cl_probe's descriptions are compared with the name masked. */
static inline void mask_temporary_names(char *text)
{
    for (char *at = strstr(text, "tempfile_"); at != NULL; at = strstr(at + 1, "tempfile_"))
        for (size_t i = strlen("tempfile_"); i < strlen("tempfile_") + 6 && at[i] != '\0'; i++)
            at[i] = '*';
}

/* zecache's entries are <64 hex>.l0_cache; Intel's driver names its own
 * 16-hex (26.x) or 64-hex-and-more (22.43). */
/* Asserts the files at a and b hold the same bytes. */
static inline void assert_same_file(const char *a, const char *b)
{
    size_t size_a, size_b;
    uint8_t *bytes_a = t_read_bytes(a, &size_a), *bytes_b = t_read_bytes(b, &size_b);
    cr_assert_eq(size_a, size_b, "%s and %s differ in size", a, b);
    cr_assert_eq(memcmp(bytes_a, bytes_b, size_a), 0, "%s and %s differ", a, b);
    free(bytes_a);
    free(bytes_b);
}

static inline bool is_zecache_entry_name(const char *name)
{
    size_t hex = strspn(name, "0123456789abcdef");
    return hex == 64 && strcmp(name + hex, ".l0_cache") == 0;
}

static int counted_entries;
static int counted_files;

static inline int count_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    if (flag == FTW_F && ftw->level > 0) {
        counted_files++;
        counted_entries += is_zecache_entry_name(path + ftw->base);
    }
    return 0;
}

/* zecache's entries under dir. */
static inline int entries_in(const char *dir)
{
    counted_entries = counted_files = 0;
    nftw(dir, count_entry, 16, FTW_PHYS);
    return counted_entries;
}

/* zecache's OpenCL entries: <64 hex>.cl_cache. */
static int opencl_entries;
static inline int count_opencl_entry(const char *path, const struct stat *st, int flag,
                                     struct FTW *ftw)
{
    (void)st;
    const char *name = path + ftw->base;
    size_t hex = strspn(name, "0123456789abcdef");
    opencl_entries += flag == FTW_F && hex == 64 && strcmp(name + hex, ".cl_cache") == 0;
    return 0;
}

static inline int opencl_entries_in(const char *dir)
{
    opencl_entries = 0;
    nftw(dir, count_opencl_entry, 16, FTW_PHYS);
    return opencl_entries;
}

/* Every file under dir, whatever its name. */
static inline int files_in(const char *dir)
{
    entries_in(dir);
    return counted_files;
}

#endif
