/* zecache remote check and the remote lines of zecache config, run as a
 * program against a private redis-server, a file storage and bad storages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <sys/wait.h>

#include "redis_cluster_support.h"
#include "redis_test_support.h"
#include "redis_tls_support.h"

static t_redis server;
static char output[16384];
static const char *environment = ""; /* more variables for the tool */

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
    snprintf(line, sizeof line, "%s NEO_CACHE_DIR=%s/cache NEO_CACHE_REMOTE='%s' %s %s 2>&1",
             environment, server.dir, remote, ZC_TOOL_PATH, command);
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
    cr_assert_eq(run_tool("remote check", "redis://secure.example|ca-file=/ca.pem"), 1, "%s",
                 output);
    cr_assert_not_null(strstr(output, "need rediss://"), "%s", output);
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
        run_tool("config",
                 "redis://u:hunter2@cache.example:7000/3|timeout=250 redis://x|ca-file=/c"),
        0, "%s", output);
    cr_assert_not_null(strstr(output, "redis://u:***@cache.example:7000/3 (connect-timeout 100 ms, "
                                      "timeout 250 ms)"),
                       "%s", output);
    cr_assert_not_null(strstr(output, "redis://x|ca-file=/c: IGNORED"), "%s", output);
    cr_assert_null(strstr(output, "hunter2"), "the password is shown: %s", output);
    cr_assert_not_null(strstr(output, "whoever can write to a remote storage"), "%s", output);
}

/* ---- remote check against a TLS server: each failure said exactly ---- */

static t_tls_redis tls_server;

static void setup_tls(void)
{
    t_tls_redis_start(&tls_server, "good", false);
    server = tls_server.redis; /* for run_tool's cache directory */
    /* The system's CAs: one that trusts nothing of the test's. */
    static char variables[256];
    snprintf(variables, sizeof variables, "SSL_CERT_FILE= SSL_CERT_DIR=%s/system-cas",
             tls_server.redis.dir);
    char system_cas[200];
    snprintf(system_cas, sizeof system_cas, "%s/system-cas", tls_server.redis.dir);
    t_tls_make_unrelated_cas(system_cas);
    environment = variables;
}

static void teardown_tls(void)
{
    t_tls_redis_stop(&tls_server);
}

TestSuite(tool_remote_tls, .init = setup_tls, .fini = teardown_tls, .timeout = 60);

/* output is one line, which ends with expected. */
static void assert_line_ends_with(const char *expected)
{
    size_t length = strlen(output);
    cr_assert(length >= strlen(expected), "%s", output);
    cr_assert_str_eq(output + length - strlen(expected), expected, "%s", output);
    cr_assert_eq(strchr(output, '\n'), output + length - 1, "not one line: %s", output);
    cr_assert_null(strstr(output, T_TLS_PASSWORD), "the password is shown: %s", output);
}

/* remote check of the server as host with the test's CA and more: its
 * exit status is status, and its one line is the storage's and ends with
 * expected. */
static void assert_check(const char *host, const char *more, int status, const char *expected)
{
    char attributes[1024], url[1400];
    snprintf(attributes, sizeof attributes, "|ca-file=%s%s", t_tls_file(&tls_server, "ca.crt"),
             more);
    t_tls_url(&tls_server, host, attributes, url, sizeof url);
    cr_assert_eq(run_tool("remote check", url), status, "%s", output);
    char name[600];
    snprintf(name, sizeof name, "rediss://" T_TLS_USER ":***@%s:%u/0 ", host, tls_server.tls_port);
    cr_assert_eq(strncmp(output, name, strlen(name)), 0, "%s", output);
    assert_line_ends_with(expected);
}

static void assert_check_ok(const char *host, const char *more)
{
    assert_check(host, more, 0, " ms\n");
    cr_assert_not_null(strstr(output, " ok: write, read, remove in "), "%s", output);
}

Test(tool_remote_tls, a_working_tls_server_with_the_acl_user)
{
    assert_check_ok("localhost", "");
    assert_check_ok("127.0.0.1", "");
    cr_assert_eq(t_redis_dbsize(&tls_server.redis), 0, "the probes are gone");
}

Test(tool_remote_tls, certificates_that_do_not_verify)
{
    const char *unverified = "FAILED: cannot write the probe: cannot connect: TLS handshake: "
                             "certificate verify failed: ";
    char more[400], expected[300];
    snprintf(more, sizeof more, "|ca-file=%s", t_tls_file(&tls_server, "other-ca.crt"));
    snprintf(expected, sizeof expected, "%s%s\n", unverified,
             "self-signed certificate in certificate chain");
    assert_check("localhost", more, 1, expected);
    char url[1024];
    t_tls_url(&tls_server, "localhost", "", url, sizeof url); /* the system's CAs */
    cr_assert_eq(run_tool("remote check", url), 1, "%s", output);
    cr_assert_not_null(strstr(output, expected), "%s", output);

    t_tls_redis_launch(&tls_server, "foreign", false);
    snprintf(expected, sizeof expected, "%s%s\n", unverified,
             "unable to get local issuer certificate");
    assert_check("localhost", "", 1, expected);

    t_tls_redis_launch(&tls_server, "other-name", false);
    snprintf(expected, sizeof expected, "%s%s\n", unverified, "hostname mismatch");
    assert_check("localhost", "", 1, expected);
    snprintf(expected, sizeof expected, "%s%s\n", unverified, "IP address mismatch");
    assert_check("127.0.0.1", "", 1, expected);
}

Test(tool_remote_tls, a_client_certificate_the_server_asks_for)
{
    t_tls_redis_launch(&tls_server, "good", true);
    /* TLS 1.3 tells a refused client certificate after the client's
     * handshake: before the AUTH is sent, or in answer to it. */
    assert_check("localhost", "", 1, ": tlsv13 alert certificate required\n");
    cr_assert(strstr(output, "FAILED: cannot write the probe: cannot connect: AUTH: TLS: ") ||
                  strstr(output, "FAILED: cannot write the probe: cannot connect: AUTH: receive: "),
              "%s", output);
    char more[600];
    snprintf(more, sizeof more, "|cert-file=%s|key-file=%s", t_tls_file(&tls_server, "client.crt"),
             t_tls_file(&tls_server, "client.key"));
    assert_check_ok("localhost", more);
    /* Without key-file, cert-file holds the key: refused when others can
     * read it, and it must hold one. */
    char url[1024], expected[400];
    snprintf(more, sizeof more, "|ca-file=%s|cert-file=%s", t_tls_file(&tls_server, "ca.crt"),
             t_tls_file(&tls_server, "client.crt"));
    t_tls_url(&tls_server, "localhost", more, url, sizeof url);
    cr_assert_eq(run_tool("remote check", url), 1, "%s", output);
    snprintf(expected, sizeof expected,
             " FAILED: %s is not a regular file readable only by its owner and group (chmod "
             "o-rwx it)\n",
             t_tls_file(&tls_server, "client.crt"));
    assert_line_ends_with(expected);
    cr_assert_eq(chmod(t_tls_file(&tls_server, "client.crt"), 0600), 0);
    cr_assert_eq(run_tool("remote check", url), 1, "%s", output);
    snprintf(expected, sizeof expected,
             " FAILED: cannot write the probe: cannot connect: key-file %s: no unencrypted "
             "private key in it: ",
             t_tls_file(&tls_server, "client.crt"));
    cr_assert_not_null(strstr(output, expected), "%s", output); /* then OpenSSL's words */
    assert_line_ends_with("\n");
}

/* A user with the rights given (besides AUTH), password node-password. */
static void make_user(const char *name, const char *rights)
{
    char command[512];
    snprintf(command, sizeof command,
             "redis-cli -s %s ACL SETUSER %s on '>" T_TLS_PASSWORD "' '~zecache:*' -@all %s "
             ">/dev/null",
             tls_server.redis.socket, name, rights);
    cr_assert_eq(system(command), 0);
}

static void assert_user_check(const char *user, int status, const char *expected)
{
    char url[1024];
    snprintf(url, sizeof url, "rediss://%s@localhost:%u|password-file=%s|ca-file=%s", user,
             tls_server.tls_port, tls_server.password_file, t_tls_file(&tls_server, "ca.crt"));
    cr_assert_eq(run_tool("remote check", url), status, "%s", output);
    assert_line_ends_with(expected);
}

/* The line says a user refused command (Redis 7.2 words NOPERM otherwise). */
static void assert_refused(const char *user, const char *problem, const char *command)
{
    assert_user_check(user, 1, "");
    char expected[256];
    snprintf(expected, sizeof expected, " FAILED: %s: %s: NOPERM ", problem, command);
    cr_assert_not_null(strstr(output, expected), "%s", output);
    snprintf(expected, sizeof expected, " to run the '%s' command\n", command);
    for (char *c = expected; *c != '\0'; c++)
        *c = (char)tolower((unsigned char)*c);
    assert_line_ends_with(expected);
}

Test(tool_remote_tls, users_and_rights)
{
    make_user("no-set", "+get +del");
    make_user("no-get", "+set +del");
    make_user("no-del", "+set +get");
    assert_user_check("nobody", 1,
                      "FAILED: cannot write the probe: cannot connect: AUTH: WRONGPASS invalid "
                      "username-password pair or user is disabled.\n");
    assert_refused("no-set", "cannot write the probe", "SET");
    assert_refused("no-get", "the probe read back differs from what was written", "GET");
    assert_refused("no-del", "cannot remove the probe", "DEL");
}

Test(tool_remote_tls, lookup_and_connect_failures)
{
    char url[512];
    snprintf(url, sizeof url, "rediss://name.invalid:%u|connect-timeout=2000", tls_server.tls_port);
    cr_assert_eq(run_tool("remote check", url), 1, "%s", output);
    cr_assert_not_null(strstr(output, "FAILED: cannot write the probe: cannot connect: name "
                                      "lookup: "),
                       "%s", output);
    snprintf(url, sizeof url, "rediss://127.0.0.1:%u", t_free_tcp_port());
    cr_assert_eq(run_tool("remote check", url), 1, "%s", output);
    cr_assert_not_null(strstr(output, "FAILED: cannot write the probe: cannot connect: connect: "
                                      "Connection refused\n"),
                       "%s", output);
    /* TLS spoken to a plain-text port. */
    snprintf(url, sizeof url, "rediss://127.0.0.1:%u|connect-timeout=2000", tls_server.redis.port);
    cr_assert_eq(run_tool("remote check", url), 1, "%s", output);
    cr_assert_not_null(strstr(output, "FAILED: cannot write the probe: cannot connect: TLS "
                                      "handshake: "),
                       "%s", output);
}

/* libssl.so.3 is loaded at the first TLS connection: one that cannot be
 * loaded fails the storage, and says so. */
Test(tool_remote_tls, a_libssl_that_cannot_be_loaded_is_said)
{
    static char variables[256];
    snprintf(variables, sizeof variables, "LD_LIBRARY_PATH=%s/libs", tls_server.redis.dir);
    char bogus[256];
    snprintf(bogus, sizeof bogus, "%s/libs", tls_server.redis.dir);
    cr_assert_eq(mkdir(bogus, 0700), 0);
    snprintf(bogus, sizeof bogus, "%s/libs/libssl.so.3", tls_server.redis.dir);
    t_write_file(bogus, "not a library", 13);
    environment = variables;
    char expected[512];
    snprintf(expected, sizeof expected,
             "FAILED: cannot write the probe: cannot connect: TLS: cannot load libssl.so.3: "
             "%s: file too short\n",
             bogus);
    assert_check("localhost", "", 1, expected);
}

static int count_of(const char *text, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

/* A Redis Cluster: the storage's probe, then one on each master, whose
 * lines say which master fails when one does. */
Test(tool_remote, check_probes_every_master_of_a_cluster, .init = setup, .fini = teardown,
     .timeout = 120)
{
    t_cluster cluster;
    t_cluster_start(&cluster);
    char remote[1024];
    snprintf(remote, sizeof remote,
             "redis://127.0.0.1:%u|cluster|connect-timeout=300|seeds=127.0.0.1:%u,127.0.0.1:%u",
             cluster.nodes[0].port, cluster.nodes[1].port, cluster.nodes[2].port);
    cr_assert_eq(run_tool("remote check", remote), 0, "%s", output);
    cr_assert_eq(count_of(output, "|cluster "), 1, "%s", output);
    cr_assert_eq(count_of(output, "  master redis://127.0.0.1:"), 3, "%s", output);
    cr_assert_eq(count_of(output, " ok: write, read, remove in "), 4, "%s", output);
    for (int i = 0; i < T_CLUSTER_NODES; i++) {
        redisReply *reply = t_node_command(&cluster, i, 1, (const char *[]){"DBSIZE"});
        cr_assert_eq(reply->integer, 0, "a probe left on node %d", i);
        freeReplyObject(reply);
    }
    /* A master dies, its replica kept from taking over. */
    int master = t_master_of_slot(&cluster, 0), replica = t_replica_of(&cluster, master);
    t_node_config(&cluster, replica, "cluster-replica-no-failover", "yes");
    unsigned dead_port = cluster.nodes[master].port;
    t_cluster_kill(&cluster, master);
    cr_assert_eq(run_tool("remote check", remote), 1, "%s", output);
    char dead[128];
    snprintf(dead, sizeof dead, "  master redis://127.0.0.1:%u/0", dead_port);
    const char *line = strstr(output, dead);
    cr_assert_not_null(line, "%s", output);
    const char *refused = "FAILED: cannot write the probe: cannot connect: connect: Connection "
                          "refused\n";
    cr_assert_not_null(strstr(line, refused), "%s", output);
    cr_assert_eq(count_of(output, "  master redis://127.0.0.1:"), 3, "%s", output);
    /* The dead master's line alone: the others still work. The storage's
     * own probe fails too when its random key is on the dead master; its
     * line then names the node that refused. */
    const char *cause = "cannot connect: connect: Connection refused\n";
    cr_assert_eq(count_of(output, " ok: write, read, remove in ") + count_of(output, "FAILED: "), 4,
                 "%s", output);
    cr_assert_eq(count_of(output, "FAILED: "), count_of(output, cause), "%s", output);
    int failed_masters = 0;
    for (const char *at = strstr(output, "\n  master "); at != NULL;
         at = strstr(at + 1, "\n  master "))
        failed_masters +=
            strncmp(strchr(at + 1, '\n') - strlen(refused) + 1, refused, strlen(refused)) == 0;
    cr_assert_eq(failed_masters, 1, "%s", output);
    t_cluster_stop(&cluster);
}
