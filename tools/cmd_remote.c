/* zecache remote check: for each storage of NEO_CACHE_REMOTE, connect, write
 * and read back a probe (read only for read-only storages), remove it, and
 * print the latency or the problem: the step that failed and the first
 * message the storage logged meanwhile, which says why (name lookup,
 * connect, TLS handshake, AUTH, the server's refusal). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "cmd_remote_cluster.h"
#include "tool.h"
#include "zecache/log.h"
#include "zecache/printable.h"
#include "zecache/remote_spec.h"
#include "zecache/storage.h"

static double now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

static int complaints;

/* The first message logged since the last reset: the cause; what follows
 * it is its consequences. */
static char first_message[1024];

static void keep_first_message(void *context, const char *message)
{
    (void)context;
    if (first_message[0] == '\0')
        snprintf(first_message, sizeof first_message, "%s", message);
}

/* Why the step that failed failed, for storage: what the backend noted
 * (zc_storage_note_problem), or else the first message logged, without
 * "remote <the storage's name>: ", which the line starts with anyway. */
static const char *cause_for(const char *storage)
{
    if (zc_storage_last_problem()[0] != '\0')
        return zc_storage_last_problem(); /* the backend's own words */
    const char *cause = first_message;
    if (strncmp(cause, "remote ", 7) == 0) {
        cause += 7;
        size_t length = strlen(storage);
        if (strncmp(cause, storage, length) == 0 && strncmp(cause + length, ": ", 2) == 0)
            cause += length + 2;
    }
    return cause;
}

/* One line: label, then what the probe of the storage (or node) called
 * name did, or what failed and why. A cluster's nodes are named by the
 * addresses they announce: the label is escaped as the cause is. */
static void print_result(const char *label, const char *name, const char *problem, bool read_only,
                         double elapsed_ms)
{
    char shown[512], cause[1024];
    zc_printable(label, shown, sizeof shown);
    zc_printable(cause_for(name), cause, sizeof cause);
    if (problem == NULL)
        printf("%-48s ok: %s in %.2f ms\n", shown, read_only ? "read" : "write, read, remove",
               elapsed_ms);
    else if (cause[0] != '\0')
        printf("%-48s FAILED: %s: %s\n", shown, problem, cause);
    else
        printf("%-48s FAILED: %s\n", shown, problem);
}

static void print_complaint(void *context, const char *storage, const char *reason)
{
    (void)context;
    char shown[1024], why[1024];
    zc_printable(storage, shown, sizeof shown);
    zc_printable(reason, why, sizeof why);
    printf("%-48s FAILED: %s\n", shown, why);
    complaints++;
}

/* A random key: the probe never meets a real entry (or another probe). */
static zc_key probe_key(void)
{
    zc_key key = {0};
    if (getrandom(key.bytes, sizeof key.bytes, 0) != (ssize_t)sizeof key.bytes)
        for (size_t i = 0; i < sizeof key.bytes; i++)
            key.bytes[i] = (uint8_t)(rand() ^ (int)time(NULL));
    return key;
}

static const char *probe_storage(zc_storage *storage, zc_key key, double *elapsed_ms)
{
    static const uint8_t probe[] = "zecache remote check probe";
    uint8_t *value = NULL;
    size_t size = 0;
    double start = now_ms();
    const char *problem = NULL;
    first_message[0] = '\0';
    zc_storage_clear_problem();
    if (!storage->read_only && storage->ops->put(storage, &key, probe, sizeof probe, true) != ZC_OK)
        problem = "cannot write the probe";
    zc_status got = problem == NULL ? storage->ops->get(storage, &key, &value, &size) : ZC_OK;
    if (problem == NULL && got != ZC_OK && got != ZC_MISS)
        problem = "cannot read the probe";
    else if (problem == NULL && !storage->read_only &&
             (got != ZC_OK || size != sizeof probe || memcmp(value, probe, size) != 0))
        problem = "the probe read back differs from what was written";
    if (problem == NULL && !storage->read_only && storage->ops->remove(storage, &key) != ZC_OK)
        problem = "cannot remove the probe";
    *elapsed_ms = now_ms() - start;
    free(value);
    return problem;
}

static bool check_one(const zc_remote_spec *spec, const zc_config *config)
{
    zc_storage *storage = NULL;
    first_message[0] = '\0';
    zc_storage_clear_problem();
    if (zc_storage_open(spec, config, &storage) != ZC_OK) {
        print_result(spec->name, spec->name, "cannot open", false, 0);
        return false;
    }
    double elapsed_ms = 0;
    const char *problem = probe_storage(storage, probe_key(), &elapsed_ms);
    print_result(storage->name, storage->name, problem, storage->read_only, elapsed_ms);
    /* Which master fails, if one does. */
    const char *master_problem =
        spec->cluster ? check_cluster_masters(storage, probe_storage, print_result) : NULL;
    problem = problem != NULL ? problem : master_problem;
    zc_storage_close(storage);
    return problem == NULL;
}

static int run_remote(tool_context *tool, int argc, char **argv)
{
    int parsed = tool_parse_plain(tool, argc, argv, 1);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    if (strcmp(argv[optind], "check") != 0)
        return tool_usage_error(tool, "unknown subcommand '%s' (expected check)", argv[optind]);
    zc_config config;
    zc_config_from_env(&config);
    if (config.remote[0] == '\0') {
        printf("NEO_CACHE_REMOTE is not set: no remote storage to check\n");
        return TOOL_EXIT_OK;
    }
    zc_remote_spec *specs = NULL;
    size_t count = 0;
    complaints = 0;
    if (zc_remote_specs_parse(config.remote, &specs, &count, print_complaint, NULL) != ZC_OK)
        return tool_fail(tool, "out of memory");
    bool all_ok = complaints == 0;
    zc_log_set_capture(keep_first_message, NULL);
    for (size_t i = 0; i < count; i++)
        all_ok &= check_one(&specs[i], &config);
    zc_log_set_capture(NULL, NULL);
    zc_remote_specs_free(specs, count);
    return all_ok ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

const tool_command tool_cmd_remote = {
    .name = "remote",
    .synopsis = "remote check",
    .summary = "Check every remote storage of NEO_CACHE_REMOTE",
    .details = "For each storage: connects, writes a probe value under a random key, reads it\n"
               "back, removes it, and prints the time that took; a read-only storage is only\n"
               "read. A storage that does not parse, cannot be reached, times out or refuses\n"
               "is reported with the step that failed and why: name lookup, connect, TLS\n"
               "handshake (with the certificate's verification error), AUTH, or the server's\n"
               "refusal of the probe's write, read or remove.\n"
               "\n"
               "Exit status: 0 every storage works (or none is configured), 1 otherwise.\n",
    .run = run_remote,
};
