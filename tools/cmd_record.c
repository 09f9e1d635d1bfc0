/* zecache record FILE -- PROGRAM [ARGS...]: runs PROGRAM with the layer
 * enabled on a cache directory of its own, so every module it builds is a
 * miss whose inputs are recorded, and writes those inputs (no native code)
 * to the input bundle FILE, signed with NEO_CACHE_REMOTE_SECRET_FILE when it
 * is set. `zecache prewarm --from FILE` builds them on the machine that
 * runs the program, with its own driver. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool.h"
#include "tool_inputs.h"
#include "zecache/disk_maintenance.h"

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

/* The program's exit status (128 + signal), or -1 when it could not run. */
static int run_program(char **program, const char *dir)
{
    pid_t pid = fork();
    if (pid == 0) {
        /* Its own directory, every module recorded, nothing sent elsewhere. */
        if (setenv("NEO_CACHE_DIR", dir, 1) != 0 ||
            setenv("NEO_CACHE_RECORD_INPUTS", "1", 1) != 0 ||
            setenv("NEO_CACHE_PERSISTENT", "1", 1) != 0 || unsetenv("NEO_CACHE_REMOTE") != 0)
            _exit(TOOL_EXIT_CANNOT_RUN);
        execvp(program[0], program);
        fprintf(stderr, "zecache record: %s: %s\n", program[0], strerror(errno));
        _exit(errno == ENOENT ? TOOL_EXIT_NOT_FOUND : TOOL_EXIT_CANNOT_RUN);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

typedef struct record_walk {
    zc_disk_tier *tier;
    zc_bundle_writer *writer;
    tool_blob_pool written;
    uint64_t modules, damaged;
    bool failed;
} record_walk;

static int write_entry_inputs(void *context, const zc_disk_entry_info *info)
{
    record_walk *walk = context;
    char problem[256];
    if (!info->is_zecache)
        return 0;
    tool_inputs_written written = tool_write_inputs(walk->tier, &info->key, walk->writer,
                                                    &walk->written, problem, sizeof problem);
    walk->modules += written == TOOL_INPUTS_WRITTEN;
    walk->damaged += written == TOOL_INPUTS_DAMAGED;
    walk->failed = written == TOOL_INPUTS_FAILED;
    return walk->failed;
}

/* Every recipe of the directory, with its SPIR-V, into out. */
static bool write_bundle(const tool_context *tool, const char *dir, FILE *out, record_walk *walk)
{
    zc_config config;
    zc_config_from_env(&config);
    snprintf(config.dir, sizeof config.dir, "%s", dir);
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    bool failed;
    char reason[256];
    const zc_bundle_signer *sign =
        tool_bundle_signer(&config, &secret, &signer, &failed, reason, sizeof reason);
    if (failed) {
        tool_fail(tool, "NEO_CACHE_REMOTE_SECRET_FILE: %s", reason);
        return false;
    }
    if (tool_open_tier(tool, &config, &walk->tier) != ZC_OK)
        return false;
    zc_bundle_writer writer = {0};
    walk->writer = &writer;
    bool ok = zc_bundle_write_start_signed(&writer, out, sign) == ZC_OK &&
              zc_disk_tier_foreach(walk->tier, write_entry_inputs, walk) == ZC_OK &&
              !walk->failed && zc_bundle_write_end(&writer) == ZC_OK;
    zc_bundle_writer_close(&writer);
    tool_blob_pool_free(&walk->written);
    zc_disk_tier_close(walk->tier);
    return ok;
}

static int record(tool_context *tool, const char *file, char **program)
{
    int status = tool_enable_layer(tool);
    if (status != TOOL_EXIT_OK)
        return status;
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/zecache-record.XXXXXX", tmp != NULL && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL)
        return tool_fail(tool, "cannot make a directory to record in: %s", strerror(errno));
    int program_status = run_program(program, dir);
    FILE *out = fopen(file, "wb");
    record_walk walk = {0};
    bool written = out != NULL && write_bundle(tool, dir, out, &walk);
    if (out != NULL && fclose(out) != 0)
        written = false;
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    if (!written)
        return tool_fail(tool, "cannot write %s: %s", file, strerror(errno));
    fprintf(stderr, "recorded the inputs of %llu modules in %s", (unsigned long long)walk.modules,
            file);
    if (walk.damaged > 0)
        fprintf(stderr, "; %llu damaged, left out", (unsigned long long)walk.damaged);
    fprintf(stderr, "\n");
    if (program_status != 0)
        return tool_fail(tool, "%s exited with status %d", program[0], program_status);
    return walk.damaged == 0 ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

static int run_record(tool_context *tool, int argc, char **argv)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS, {NULL, 0, NULL, 0}};
    int option = tool_next_option(tool, argc, argv, options);
    if (option != TOOL_OPTIONS_DONE)
        return tool_options_exit(option);
    if (argc - optind < 2)
        return tool_usage_error(tool, "want FILE -- PROGRAM [ARGS...]");
    const char *file = argv[optind];
    char **program = argv + optind + 1;
    if (strcmp(program[0], "--") == 0)
        program++;
    if (program[0] == NULL)
        return tool_usage_error(tool, "no program to run");
    return record(tool, file, program);
}

const tool_command tool_cmd_record = {
    .name = "record",
    .synopsis = "record FILE [--] PROGRAM [ARGS...]",
    .summary = "Run a program and write the inputs of the modules it builds to FILE",
    .details = "Runs PROGRAM with the layer enabled on a cache directory of its own (so every\n"
               "module is compiled once and its inputs recorded; nothing goes to the configured\n"
               "cache or remote storages), then writes the recorded inputs (SPIR-V, OpenCL C\n"
               "source or IL, flags, specialization constants, device; no native code) to the\n"
               "input bundle FILE: versioned, checksummed, and signed with\n"
               "NEO_CACHE_REMOTE_SECRET_FILE when it is set. Ship FILE with the program (a\n"
               "container image, a package); on the machine that runs it, 'zecache prewarm\n"
               "--from FILE' builds it with that machine's driver.\n"
               "\n"
               "Exit status: 0 recorded, 1 PROGRAM failed or FILE could not be written.\n",
    .run = run_record,
};
