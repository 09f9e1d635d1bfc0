/* rediss:// against a private redis-server behind TLS (redis_tls_support.h),
 * with README's ACL user and its password from a file: nodes cold at once
 * compile each key once in all, a fresh node gets every key remotely, and a
 * certificate that does not verify (another CA, another name, no client
 * certificate where one is asked for) or a wrong password is a counted
 * failure, never plain text, the program getting the compile's result. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "redis_tls_support.h"
#include "remote_cache_support.h"
#include "zecache/entry.h"
#include "zecache/remote.h"
#include "zecache/storage.h"

static t_tls_redis server;

static void start(const char *cert, bool auth_clients)
{
    t_tls_redis_start(&server, cert, auth_clients);
    snprintf(scratch, sizeof scratch, "/tmp/zc_rtls_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    next_node = 0;
    /* The system's CAs: one that trusts nothing of the test's. */
    char system_cas[192];
    snprintf(system_cas, sizeof system_cas, "%s/system-cas", scratch);
    t_tls_make_unrelated_cas(system_cas);
    setenv("SSL_CERT_DIR", system_cas, 1);
    unsetenv("SSL_CERT_FILE");
}

static void setup(void)
{
    start("good", false);
}

static void teardown(void)
{
    t_tls_redis_stop(&server);
    t_remove_tree(scratch);
}

TestSuite(remote_tls, .init = setup, .fini = teardown, .timeout = 120);

/* The URL of the server as host, trusting the test's CA, with more. */
static const char *url_for(const char *host, const char *more)
{
    static char url[1024];
    char attributes[768];
    snprintf(attributes, sizeof attributes, "|ca-file=%s|connect-timeout=2000|timeout=2000%s",
             t_tls_file(&server, "ca.crt"), more);
    t_tls_url(&server, host, attributes, url, sizeof url);
    return url;
}

Test(remote_tls, nodes_cold_at_once_compile_each_key_once_and_a_fresh_node_gets_them)
{
    t_assert_nodes_compile_each_key_once(url_for("localhost", ""));
    cr_assert_eq(t_redis_dbsize(&server.redis), SHARED_KEYS);
    zc_cache *fresh = open_node(url_for("127.0.0.1", ""), NULL, 0);
    counted_compile counter = {0};
    for (uint64_t i = 0; i < SHARED_KEYS; i++) {
        zc_key key = t_key(400 + i);
        cr_assert_eq(lookup(fresh, &key, &counter), ZC_LOOKUP_REMOTE_HIT);
    }
    cr_assert_eq(counter.calls, 0);
    cr_assert_eq(stats_of(fresh).remote_errors, 0);
    zc_cache_close(fresh);
}

/* Ten keys through remote: each compiled and right, the storage failing
 * until the tier leaves it alone, nothing written to the server. */
static void assert_refused_and_compiled(const char *remote)
{
    t_assert_compiles_despite(remote, 30000);
    cr_assert_eq(t_redis_dbsize(&server.redis), 0, "something reached the server");
}

Test(remote_tls, a_server_the_ca_file_does_not_vouch_for_is_refused)
{
    char more[300];
    snprintf(more, sizeof more, "|ca-file=%s", t_tls_file(&server, "other-ca.crt"));
    assert_refused_and_compiled(url_for("localhost", more));
}

Test(remote_tls, without_ca_file_the_system_cas_decide)
{
    char url[1024];
    t_tls_url(&server, "localhost", "|connect-timeout=2000", url, sizeof url);
    assert_refused_and_compiled(url);
}

Test(remote_tls, a_certificate_from_another_ca_is_refused)
{
    t_tls_redis_launch(&server, "foreign", false);
    assert_refused_and_compiled(url_for("localhost", ""));
}

Test(remote_tls, a_certificate_for_another_name_or_address_is_refused)
{
    t_tls_redis_launch(&server, "other-name", false);
    assert_refused_and_compiled(url_for("localhost", ""));
    assert_refused_and_compiled(url_for("127.0.0.1", ""));
}

Test(remote_tls, a_wrong_password_is_refused)
{
    char url[1024], attributes[512], wrong[256];
    snprintf(wrong, sizeof wrong, "%s/wrong-password", scratch);
    t_write_secret(wrong, "not-the-password\n");
    snprintf(attributes, sizeof attributes, "|ca-file=%s|password-file=%s",
             t_tls_file(&server, "ca.crt"), wrong);
    snprintf(url, sizeof url, "rediss://" T_TLS_USER "@localhost:%u%s", server.tls_port,
             attributes);
    assert_refused_and_compiled(url);
}

Test(remote_tls, a_client_certificate_is_given_when_the_server_asks)
{
    t_tls_redis_launch(&server, "good", true);
    assert_refused_and_compiled(url_for("localhost", ""));
    char more[600];
    snprintf(more, sizeof more, "|cert-file=%s|key-file=%s", t_tls_file(&server, "client.crt"),
             t_tls_file(&server, "client.key"));
    zc_cache *node = open_node(url_for("localhost", more), NULL, 30000);
    counted_compile counter = {0};
    zc_key key = t_key(500);
    cr_assert_eq(lookup(node, &key, &counter), ZC_LOOKUP_COMPILED);
    cr_assert_eq(stats_of(node).remote_stores, 1);
    cr_assert_eq(stats_of(node).remote_errors, 0);
    zc_cache_close(node);
    node = open_node(url_for("localhost", more), NULL, 30000);
    cr_assert_eq(lookup(node, &key, &counter), ZC_LOOKUP_REMOTE_HIT);
    cr_assert_eq(counter.calls, 1);
    zc_cache_close(node);
}

static void stop_server(void)
{
    cr_assert_eq(kill(server.redis.pid, SIGSTOP), 0);
}

/* Every call bounded: a listener that never answers the handshake, and a
 * server stopped after the handshake, leave lookups compiling. */
Test(remote_tls, a_silent_or_stopped_server_never_hangs_a_program)
{
    unsigned port;
    int listener = t_silent_listener(&port);
    char url[1024], attributes[512];
    snprintf(attributes, sizeof attributes, "|ca-file=%s|connect-timeout=100|timeout=100",
             t_tls_file(&server, "ca.crt"));
    snprintf(url, sizeof url, "rediss://127.0.0.1:%u%s", port, attributes);
    assert_refused_and_compiled(url);
    close(listener);

    t_assert_compiles_after_losing(url_for("localhost", "|connect-timeout=100|timeout=100"),
                                   stop_server);
    kill(server.redis.pid, SIGCONT);
}

/* A child of fork() shares the parent's socket and TLS session: it must
 * connect on its own and never write a byte on the parent's session, whose
 * record numbers the server would then find out of order. */
Test(remote_tls, a_forked_child_leaves_the_parents_session_alone)
{
    zc_cache *node = open_node(url_for("localhost", ""), NULL, 30000);
    counted_compile counter = {0};
    zc_key key = t_key(700);
    cr_assert_eq(lookup(node, &key, &counter), ZC_LOOKUP_COMPILED); /* connected */
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        zc_key own = t_key(701);
        zc_lookup_outcome outcome = lookup(node, &own, &counter);
        _exit(outcome == ZC_LOOKUP_COMPILED && stats_of(node).remote_stores == 2 &&
                      stats_of(node).remote_errors == 0
                  ? 0
                  : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's store failed");
    key = t_key(702);
    cr_assert_eq(lookup(node, &key, &counter), ZC_LOOKUP_COMPILED);
    cr_assert_eq(stats_of(node).remote_stores, 2);
    cr_assert_eq(stats_of(node).remote_errors, 0, "the parent's session was broken");
    zc_cache_close(node);
    cr_assert_eq(t_redis_dbsize(&server.redis), 3);
}

/* Entries through TLS byte for byte: one held in memory, and one of 20 MiB,
 * over what the transport holds (ZC_REDIS_IN_MEMORY_MAX), whose reply goes
 * from the TLS session to a temporary file after the bytes hiredis's reader
 * had buffered, and is verified there. */
Test(remote_tls, small_and_large_entries_come_back_whole)
{
    zc_remote_spec spec;
    char reason[256] = "";
    cr_assert_eq(
        zc_remote_spec_parse(url_for("localhost", "|timeout=30000"), &spec, reason, sizeof reason),
        ZC_OK, "%s", reason);
    zc_storage *storage = NULL;
    cr_assert_eq(zc_storage_redis_open(&spec, 0, scratch, &storage), ZC_OK);
    zc_remote_spec_free(&spec);
    const size_t sizes[] = {100000, 20 << 20};
    for (size_t i = 0; i < 2; i++) {
        zc_key key = t_key(800 + i);
        zc_artifact *artifact = t_artifact(sizes[i], 800 + i);
        uint8_t *entry = NULL, *value = NULL;
        size_t size = 0, value_size = 0;
        cr_assert_eq(zc_entry_encode(&key, artifact, 1, &entry, &size), ZC_OK);
        zc_artifact_unref(artifact);
        cr_assert_eq(storage->ops->put(storage, &key, entry, size, false), ZC_OK);
        cr_assert_eq(storage->ops->get(storage, &key, &value, &value_size), ZC_OK);
        cr_assert_eq(value_size, size);
        cr_assert_arr_eq(value, entry, size);
        free(value);
        free(entry);
    }
    zc_storage_close(storage);
}
