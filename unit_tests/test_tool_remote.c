/* zecache remote check and the remote lines of zecache config, run as a
 * program against a private redis-server, a file storage and bad storages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "redis_test_support.h"

static t_redis server;
static char output[16384];

static void setup(void)
{
    t_redis_start(&server, NULL);
}

static void teardown(void)
{
    t_redis_stop(&server);
}

/* Runs the tool with NEO_CACHE_REMOTE=remote; returns its exit status. */
static int run_tool(const char *command, const char *remote)
{
    char line[4096];
    snprintf(line, sizeof line, "NEO_CACHE_DIR=%s/cache NEO_CACHE_REMOTE='%s' %s %s 2>&1",
             server.dir, remote, ZC_TOOL_PATH, command);
    return t_run_capturing(line, output, sizeof output);
}

Test(tool_remote, check_passes_for_working_storages, .init = setup, .fini = teardown, .timeout = 60)
{
    char remote[1024];
    snprintf(remote, sizeof remote, "redis+unix://%s redis://127.0.0.1:%u/2 file://%s/shared",
             server.socket, server.port, server.dir);
    cr_assert_eq(run_tool("remote check", remote), 0, "%s", output);
    cr_assert_eq(strstr(output, "FAILED"), NULL, "%s", output);
    int ok_lines = 0;
    for (const char *at = strstr(output, " ok: write, read, remove in "); at != NULL;
         at = strstr(at + 1, " ok: write, read, remove in "))
        ok_lines++;
    cr_assert_eq(ok_lines, 3, "%s", output);
    /* The probes are gone. */
    redisReply *reply = t_redis_command(&server, 1, (const char *[]){"DBSIZE"}, NULL);
    cr_assert_eq(reply->integer, 0);
    freeReplyObject(reply);
}

Test(tool_remote, check_fails_for_any_bad_storage, .init = setup, .fini = teardown, .timeout = 60)
{
    char remote[1024];
    unsigned dead_port = t_free_tcp_port();
    snprintf(remote, sizeof remote, "redis+unix://%s redis://127.0.0.1:%u|connect-timeout=100",
             server.socket, dead_port);
    cr_assert_eq(run_tool("remote check", remote), 1, "%s", output);
    cr_assert_not_null(strstr(output, " ok: "), "%s", output);
    cr_assert_not_null(strstr(output, "FAILED: cannot write the probe"), "%s", output);
    cr_assert_eq(run_tool("remote check", "rediss://secure.example"), 1, "%s", output);
    cr_assert_not_null(strstr(output, "TLS tunnel"), "%s", output);
    cr_assert_eq(run_tool("remote check", "redis://h|read_only"), 1, "%s", output);
    cr_assert_not_null(strstr(output, "unknown attribute"), "%s", output);
    cr_assert_eq(run_tool("remote check", ""), 0, "%s", output);
    cr_assert_not_null(strstr(output, "NEO_CACHE_REMOTE is not set"), "%s", output);
    cr_assert_eq(run_tool("remote frobnicate", ""), 2, "%s", output);
}

Test(tool_remote, config_shows_each_storage_and_the_trust_warning, .init = setup, .fini = teardown,
     .timeout = 60)
{
    cr_assert_eq(
        run_tool("config", "redis://u:hunter2@cache.example:7000/3|timeout=250 rediss://x"), 0,
        "%s", output);
    cr_assert_not_null(strstr(output, "redis://u:***@cache.example:7000/3 (connect-timeout 100 ms, "
                                      "timeout 250 ms)"),
                       "%s", output);
    cr_assert_not_null(strstr(output, "rediss://x: IGNORED"), "%s", output);
    cr_assert_null(strstr(output, "hunter2"), "the password is shown: %s", output);
    cr_assert_not_null(strstr(output, "whoever can write to a remote storage"), "%s", output);
}
