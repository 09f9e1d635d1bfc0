/* For the prewarm tests on the real driver: the compiler "upgraded" the way
 * a driver upgrade does it (a different libigc where the driver loads it: a
 * copy with another mtime, first in LD_LIBRARY_PATH, so every key changes),
 * the modules the tests build, and running the zecache tool in the probes'
 * environment. Header-only, as the other support headers. */
#ifndef ZC_PREWARM_TEST_SUPPORT_H
#define ZC_PREWARM_TEST_SUPPORT_H

#include <sys/time.h>

#include "e2e_probe_support.h"

/* Each module as ze_probe builds it: plain with flags, without flags, with
 * specialization constants of two widths, and through the program
 * extension. */
#define MODULE_COUNT 4
static inline const char *const *module_args(int index)
{
    static const char *const modules[MODULE_COUNT][8] = {
        {"--spirv", SAXPY, "--flags", "-ze-opt-level=1 -g", NULL},
        {"--spirv", VECTOR_ADD, NULL},
        {"--spirv", SPEC_CONSTANTS, "--spec", "1=3", "--spec64", "2=5", NULL},
        {"--program", "--spirv", SAXPY, "--flags", "", NULL},
    };
    return modules[index];
}

/* The modules' args with "--native-out FILE" added. */
static inline void run_module(int index, bool with_layer, const char *const *env,
                              const char *native_out)
{
    const char *args[12];
    int count = 0;
    for (const char *const *arg = module_args(index); *arg != NULL; arg++)
        args[count++] = *arg;
    if (native_out != NULL) {
        args[count++] = "--native-out";
        args[count++] = native_out;
    }
    args[count] = NULL;
    probe_run(with_layer, env, args);
    cr_assert_eq(run.exit_status, 0, "module %d: exit %d\n%s", index, run.exit_status, run.err);
    cr_assert(strstr(run.out, "result 0x0\n") != NULL, "module %d: %s\n%s", index, run.out,
              run.err);
}

/* A copy of the system's compiler with another mtime, in dir: the driver
 * loads it through LD_LIBRARY_PATH, and the key names it. */
static inline void upgrade_compiler(const char *dir)
{
    char command[3 * PATH_MAX];
    cr_assert_eq(mkdir(dir, 0755), 0);
    snprintf(command, sizeof command, "cp -L '%s/%s' '%s/'", T_SYSTEM_LIB_DIR, t_system_igc_name(),
             dir);
    cr_assert_eq(system(command), 0);
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s/%s", dir, t_system_igc_name());
    struct timeval times[2] = {{1000000000, 0}, {1000000000, 0}};
    cr_assert_eq(utimes(copy, times), 0);
}

/* Runs the zecache tool with args in the probes' environment plus env. */
static inline void tool_run(const char *const *env, const char *const *args)
{
    char out[PATH_MAX], err[PATH_MAX];
    char *argv[32] = {(char *)ZC_TOOL_PATH};
    int argc = 1;
    for (int i = 0; args[i] != NULL && argc < 31; i++)
        argv[argc++] = (char *)args[i];
    argv[argc] = NULL;
    environment environment;
    env_build(&environment, false, env);
    env_apply(&environment, "NEO_CACHE_PERSISTENT"); /* the driver-alone setting: not here */
    snprintf(out, sizeof out, "%s/tool%d.out", sc.root, sc.runs);
    snprintf(err, sizeof err, "%s/tool%d.err", sc.root, sc.runs);
    sc.runs++;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err_fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out_fd < 0 || err_fd < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
            _exit(126);
        execve(ZC_TOOL_PATH, argv, environment.entries);
        _exit(127);
    }
    env_free(&environment);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    t_read_text(out, run.out, sizeof run.out);
    t_read_text(err, run.err, sizeof run.err);
}

static inline bool same_file_contents(const char *a, const char *b)
{
    size_t size_a = 0, size_b = 0;
    uint8_t *bytes_a = t_read_bytes(a, &size_a), *bytes_b = t_read_bytes(b, &size_b);
    bool same = size_a == size_b && size_a > 0 && memcmp(bytes_a, bytes_b, size_a) == 0;
    free(bytes_a);
    free(bytes_b);
    return same;
}

/* After the upgrade (env names the new compiler): every module's create is
 * a disk hit, no compile, and its binary is what the driver alone builds
 * with the new compiler. */
static inline void assert_every_module_warm_and_the_drivers(const char *const *env)
{
    for (int i = 0; i < MODULE_COUNT; i++) {
        char driver[64], layer[64];
        snprintf(driver, sizeof driver, "driver%d.bin", i);
        snprintf(layer, sizeof layer, "layer%d.bin", i);
        run_module(i, false, env, in_scratch(driver));
        run_module(i, true, env, in_scratch(layer));
        cr_assert_eq(count_of(run.err, MISS), 0, "module %d compiled after prewarm:\n%s", i,
                     run.err);
        cr_assert_eq(count_of(run.err, HIT_DISK), 1, "module %d: %s", i, run.err);
        cr_assert(same_file_contents(in_scratch(driver), in_scratch(layer)),
                  "module %d: the binary is not the driver's own with the new compiler", i);
    }
}

#endif
