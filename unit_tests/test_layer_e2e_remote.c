/* The remote tier on Intel's real driver: ze_probe processes as nodes, each
 * with its own NEO_CACHE_DIR, sharing a private redis-server or a file://
 * directory. Compiles and hits are counted from the layer's
 * PrintDebugMessages lines, summed over the processes. The same against an
 * nginx with WebDAV as an HTTP storage (suite e2e_http). */
#include <criterion/criterion.h>
#include <signal.h>

#include "e2e_together_support.h"
#include "disk_test_support.h"
#include "nginx_test_support.h"
#include "redis_cluster_support.h"
#include "redis_test_support.h"
#include "redis_tls_support.h"

#define SAXPY ZC_KERNEL_DIR "/e2e_saxpy.spv"
#define MISS "[Cache]: miss "
#define HIT_DISK "[Cache]: hit disk "
#define HIT_REMOTE "[Cache]: hit remote "
#define REJECTED ": rejected "
#define NODES 4

static char root[128];
static t_redis server;
static char remote_setting[512];
static int next_probe;

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/zc_e2e_remote.XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    t_redis_start(&server, NULL);
    snprintf(remote_setting, sizeof remote_setting, "NEO_CACHE_REMOTE=redis+unix://%s",
             server.socket);
    next_probe = 0;
}

static void teardown(void)
{
    t_redis_stop(&server);
    t_remove_tree(root);
}

TestSuite(e2e_remote, .init = setup, .fini = teardown, .timeout = 300);

/* A node: its own directory, cache inside it, and the given settings. */
typedef struct node {
    e2e_probe probe;
    char cache_setting[PATH_MAX + 16];
    char cache_dir[PATH_MAX];
} node;

static void make_node(node *n, const char *a, const char *b, const char *c)
{
    memset(n, 0, sizeof *n);
    snprintf(n->probe.dir, sizeof n->probe.dir, "%s/node%d", root, next_probe++);
    snprintf(n->cache_dir, sizeof n->cache_dir, "%s/cache", n->probe.dir);
    snprintf(n->cache_setting, sizeof n->cache_setting, "NEO_CACHE_DIR=%s", n->cache_dir);
    n->probe.settings[0] = n->cache_setting;
    n->probe.settings[1] = a;
    n->probe.settings[2] = b;
    n->probe.settings[3] = c;
}

static void run_nodes(node *nodes, int count)
{
    e2e_probe probes[NODES];
    cr_assert_leq(count, NODES);
    for (int i = 0; i < count; i++)
        probes[i] = nodes[i].probe;
    e2e_run_together(probes, count, SAXPY);
    for (int i = 0; i < count; i++)
        nodes[i].probe = probes[i];
    for (int i = 0; i < count; i++)
        e2e_assert_all_created_the_module(&nodes[i].probe, 1);
}

static void run_node(node *n)
{
    run_nodes(n, 1);
}

static int count_in(const node *n, const char *needle)
{
    return e2e_count_of(n->probe.err, needle);
}

static void assert_lookups(const node *n, int misses, int remote_hits, int rejected)
{
    cr_assert_eq(count_in(n, MISS), misses, "stderr: %s", n->probe.err);
    cr_assert_eq(count_in(n, HIT_REMOTE), remote_hits, "stderr: %s", n->probe.err);
    cr_assert_eq(count_in(n, REJECTED), rejected, "stderr: %s", n->probe.err);
}

static void assert_same_native(const node *reference, const node *n)
{
    e2e_assert_same_native(&reference->probe, &n->probe, 1);
}

/* NODES nodes with setting, cold at once, compile the module once in all;
 * one more then gets it remotely; all have the same native binary. */
static void assert_nodes_compile_once_and_a_new_node_gets_it(node *nodes, const char *setting)
{
    for (int i = 0; i < NODES; i++)
        make_node(&nodes[i], setting, NULL, NULL);
    run_nodes(nodes, NODES);
    int misses = 0, remote_hits = 0;
    for (int i = 0; i < NODES; i++) {
        misses += count_in(&nodes[i], MISS);
        remote_hits += count_in(&nodes[i], HIT_REMOTE);
        assert_same_native(&nodes[0], &nodes[i]);
    }
    cr_assert_eq(misses, 1, "%d nodes compiled; node 0 stderr: %s", misses, nodes[0].probe.err);
    cr_assert_eq(remote_hits, NODES - 1);
    make_node(&nodes[NODES], setting, NULL, NULL);
    run_node(&nodes[NODES]);
    assert_lookups(&nodes[NODES], 0, 1, 0);
    assert_same_native(&nodes[0], &nodes[NODES]);
}

Test(e2e_remote, nodes_cold_at_once_compile_once_and_a_new_node_gets_it)
{
    node *nodes = calloc(NODES + 1, sizeof *nodes);
    assert_nodes_compile_once_and_a_new_node_gets_it(nodes, remote_setting);
    free(nodes);
}

static void corrupt_every_value(void)
{
    /* The entries: the recorded inputs beside them are prewarm's, not a
     * lookup's. */
    redisReply *keys =
        t_redis_command(&server, 2, (const char *[]){"KEYS", "zecache:v1:[0-9a-f]*"}, NULL);
    cr_assert_eq(keys->type, REDIS_REPLY_ARRAY);
    cr_assert_gt(keys->elements, 0);
    for (size_t i = 0; i < keys->elements; i++) {
        const char *name = keys->element[i]->str;
        redisReply *value = t_redis_command(&server, 2, (const char *[]){"GET", name}, NULL);
        cr_assert_eq(value->type, REDIS_REPLY_STRING);
        /* 64 bytes inside the zstd frame: a single flipped bit may land on a
         * bit the decoder ignores, which changes nothing. */
        cr_assert_gt(value->len, 600);
        for (size_t at = value->len / 2; at < value->len / 2 + 64; at++)
            value->str[at] ^= 0xa5;
        freeReplyObject(t_redis_command(&server, 3, (const char *[]){"SET", name, value->str},
                                        (size_t[]){3, strlen(name), value->len}));
        freeReplyObject(value);
    }
    freeReplyObject(keys);
}

Test(e2e_remote, corrupted_values_give_the_same_results_as_no_cache)
{
    node *nodes = calloc(3, sizeof *nodes);
    make_node(&nodes[0], "NEO_CACHE_PERSISTENT=0", NULL, NULL); /* no cache at all */
    run_node(&nodes[0]);
    make_node(&nodes[1], remote_setting, NULL, NULL);
    run_node(&nodes[1]);
    corrupt_every_value();
    make_node(&nodes[2], remote_setting, NULL, NULL);
    run_node(&nodes[2]);
    assert_lookups(&nodes[2], 1, 0, 1);
    assert_same_native(&nodes[0], &nodes[1]);
    assert_same_native(&nodes[0], &nodes[2]);
    free(nodes);
}

Test(e2e_remote, stopped_or_dead_server_gives_the_same_results_without_hanging)
{
    node *nodes = calloc(3, sizeof *nodes);
    make_node(&nodes[0], remote_setting, NULL, NULL);
    run_node(&nodes[0]);
    char timeouts[600];
    snprintf(timeouts, sizeof timeouts, "%s|connect-timeout=100|timeout=100", remote_setting);
    cr_assert_eq(kill(server.pid, SIGSTOP), 0);
    make_node(&nodes[1], timeouts, NULL, NULL); /* never answers */
    run_node(&nodes[1]);
    assert_lookups(&nodes[1], 1, 0, 0);
    t_redis_stop(&server); /* killed */
    make_node(&nodes[2], timeouts, NULL, NULL);
    run_node(&nodes[2]);
    assert_lookups(&nodes[2], 1, 0, 0);
    assert_same_native(&nodes[0], &nodes[1]);
    assert_same_native(&nodes[0], &nodes[2]);
    free(nodes);
}

static void write_secret(const char *name, const char *text, char *setting, size_t size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, name);
    t_write_secret(path, text);
    snprintf(setting, size, "NEO_CACHE_REMOTE_SECRET_FILE=%s", path);
}

Test(e2e_remote, node_with_another_secret_takes_nothing)
{
    char one[PATH_MAX + 40], two[PATH_MAX + 40];
    write_secret("one", "the first secret of this test", one, sizeof one);
    write_secret("two", "the second secret of this test", two, sizeof two);
    node *nodes = calloc(4, sizeof *nodes);
    make_node(&nodes[0], remote_setting, one, NULL);
    run_node(&nodes[0]);
    make_node(&nodes[1], remote_setting, one, NULL);
    run_node(&nodes[1]);
    assert_lookups(&nodes[1], 0, 1, 0);
    /* Another secret: another namespace, a plain miss, nothing replaced. */
    make_node(&nodes[2], remote_setting, two, NULL);
    run_node(&nodes[2]);
    assert_lookups(&nodes[2], 1, 0, 0);
    make_node(&nodes[3], remote_setting, one, NULL);
    run_node(&nodes[3]);
    assert_lookups(&nodes[3], 0, 1, 0);
    assert_same_native(&nodes[0], &nodes[1]);
    assert_same_native(&nodes[0], &nodes[2]);
    assert_same_native(&nodes[0], &nodes[3]);
    free(nodes);
}

Test(e2e_remote, read_only_file_storage_serves_hits)
{
    node *nodes = calloc(2, sizeof *nodes);
    make_node(&nodes[0], NULL, NULL, NULL);
    run_node(&nodes[0]);
    char setting[PATH_MAX + 64];
    snprintf(setting, sizeof setting, "NEO_CACHE_REMOTE=file://%s|read-only", nodes[0].cache_dir);
    make_node(&nodes[1], setting, NULL, NULL);
    run_node(&nodes[1]);
    assert_lookups(&nodes[1], 0, 1, 0);
    cr_assert_eq(count_in(&nodes[1], HIT_DISK), 0);
    assert_same_native(&nodes[0], &nodes[1]);
    free(nodes);
}

/* Admission (NEO_CACHE_REMOTE_MIN_COMPILE_MS): with a threshold above any
 * real compile, nodes cold at once each compile the module themselves (none
 * waits for an entry that will not come), log it as not admitted, and leave
 * Redis without an entry; a node with the default then stores it. */
Test(e2e_remote, a_module_under_the_admission_threshold_stays_out_of_redis)
{
    node *nodes = calloc(NODES + 1, sizeof *nodes);
    for (int i = 0; i < NODES; i++)
        make_node(&nodes[i], remote_setting, "NEO_CACHE_REMOTE_MIN_COMPILE_MS=86400000",
                  "NEO_CACHE_WAIT_TIMEOUT_MS=120000");
    run_nodes(nodes, NODES);
    for (int i = 0; i < NODES; i++) {
        assert_lookups(&nodes[i], 1, 0, 0);
        cr_assert_eq(count_in(&nodes[i], "under NEO_CACHE_REMOTE_MIN_COMPILE_MS=86400000: not "
                                         "admitted to the remote storages"),
                     1, "stderr: %s", nodes[i].probe.err);
        assert_same_native(&nodes[0], &nodes[i]);
    }
    redisReply *keys = t_redis_command(&server, 2, (const char *[]){"KEYS", "*"}, NULL);
    for (size_t i = 0; i < keys->elements; i++)
        cr_assert_not_null(strstr(keys->element[i]->str, ":lock:"), "an entry in Redis: %s",
                           keys->element[i]->str);
    freeReplyObject(keys);
    make_node(&nodes[NODES], remote_setting, NULL, NULL);
    run_node(&nodes[NODES]);
    assert_lookups(&nodes[NODES], 1, 0, 0);
    cr_assert_eq(count_in(&nodes[NODES], "not admitted to the remote storages"), 0);
    keys = t_redis_command(&server, 2, (const char *[]){"KEYS", "zecache:v1:[0-9a-f]*"}, NULL);
    cr_assert_eq(keys->elements, 1);
    freeReplyObject(keys);
    free(nodes);
}

/* ---- rediss:// with README's ACL user, its password from a file ---- */

static t_tls_redis tls_server;

static void setup_tls(void)
{
    snprintf(root, sizeof root, "/tmp/zc_e2e_remote.XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    t_tls_redis_start(&tls_server, "good", false);
    next_probe = 0;
}

static void teardown_tls(void)
{
    t_tls_redis_stop(&tls_server);
    t_remove_tree(root);
}

/* NEO_CACHE_REMOTE for the TLS server, trusting ca (a file of the
 * certificates), with the password in password_file. */
static void tls_setting(const char *ca, const char *password_file, char *setting, size_t size)
{
    char attributes[600], url[1024];
    snprintf(attributes, sizeof attributes, "|ca-file=%s|connect-timeout=2000|timeout=2000",
             t_tls_file(&tls_server, ca));
    t_tls_url(&tls_server, "localhost", attributes, url, sizeof url);
    char *password = strstr(url, tls_server.password_file);
    cr_assert_not_null(password);
    snprintf(setting, size, "NEO_CACHE_REMOTE=%.*s%s%s", (int)(password - url), url, password_file,
             password + strlen(tls_server.password_file));
}

Test(e2e_remote, over_tls_nodes_compile_once_and_failures_give_the_driver_result, .init = setup_tls,
     .fini = teardown_tls)
{
    char good[1200], other_ca[1200], wrong_password[1200], wrong_file[PATH_MAX];
    tls_setting("ca.crt", tls_server.password_file, good, sizeof good);
    tls_setting("other-ca.crt", tls_server.password_file, other_ca, sizeof other_ca);
    snprintf(wrong_file, sizeof wrong_file, "%s/wrong-password", root);
    t_write_secret(wrong_file, "not-the-password\n");
    tls_setting("ca.crt", wrong_file, wrong_password, sizeof wrong_password);
    node *nodes = calloc(NODES + 3, sizeof *nodes);
    assert_nodes_compile_once_and_a_new_node_gets_it(nodes, good);
    /* Refused: the driver's own compile, the failure logged. */
    make_node(&nodes[NODES + 1], other_ca, NULL, NULL);
    make_node(&nodes[NODES + 2], wrong_password, NULL, NULL);
    run_node(&nodes[NODES + 1]);
    run_node(&nodes[NODES + 2]);
    assert_lookups(&nodes[NODES + 1], 1, 0, 0);
    assert_lookups(&nodes[NODES + 2], 1, 0, 0);
    cr_assert_gt(count_in(&nodes[NODES + 1], "cannot connect: TLS handshake: certificate verify "
                                             "failed: self-signed certificate in certificate "
                                             "chain"),
                 0, "stderr: %s", nodes[NODES + 1].probe.err);
    cr_assert_gt(count_in(&nodes[NODES + 2], "cannot connect: AUTH: WRONGPASS"), 0, "stderr: %s",
                 nodes[NODES + 2].probe.err);
    for (int i = NODES; i < NODES + 3; i++) {
        assert_same_native(&nodes[0], &nodes[i]);
        cr_assert_null(strstr(nodes[i].probe.err, T_TLS_PASSWORD), "the password is shown");
    }
    free(nodes);
}

/* ---- a Redis Cluster (redis_cluster_support.h) ---- */

static void cluster_setting(const t_cluster *cluster, char *setting, size_t size)
{
    int used = snprintf(setting, size,
                        "NEO_CACHE_REMOTE=redis://127.0.0.1:%u|cluster|connect-timeout=300|"
                        "timeout=1000|seeds=",
                        cluster->nodes[0].port);
    for (int i = 1; i < T_CLUSTER_NODES; i++)
        used += snprintf(setting + used, size - (size_t)used, "%s127.0.0.1:%u", i > 1 ? "," : "",
                         cluster->nodes[i].port);
}

/* The slot of the one entry the nodes stored. */
static long long slot_of_the_entry(const t_cluster *cluster)
{
    for (int i = 0; i < T_CLUSTER_NODES; i++) {
        redisReply *keys =
            t_node_command(cluster, i, 2, (const char *[]){"KEYS", "zecache:v1:{*}"});
        cr_assert(keys != NULL && keys->type == REDIS_REPLY_ARRAY);
        long long slot = keys->elements == 1 ? t_key_slot(cluster, keys->element[0]->str) : -1;
        freeReplyObject(keys);
        if (slot >= 0)
            return slot;
    }
    cr_assert_fail("no entry in the cluster");
    return -1;
}

/* The real driver against a Redis Cluster: nodes cold at once compile the
 * module once in all; with the master holding its entry killed (its
 * replica kept from taking over), a node gets the driver's result without
 * hanging; after the failover a new node gets the entry from the replica. */
Test(e2e_remote, a_cluster_loses_the_master_of_the_entry)
{
    t_cluster cluster;
    t_cluster_start(&cluster);
    char setting[600];
    cluster_setting(&cluster, setting, sizeof setting);
    node *nodes = calloc(NODES + 2, sizeof *nodes);
    for (int i = 0; i < NODES; i++)
        make_node(&nodes[i], setting, NULL, NULL);
    run_nodes(nodes, NODES);
    int misses = 0;
    for (int i = 0; i < NODES; i++) {
        misses += count_in(&nodes[i], MISS);
        assert_same_native(&nodes[0], &nodes[i]);
    }
    cr_assert_eq(misses, 1, "%d nodes compiled; node 0 stderr: %s", misses, nodes[0].probe.err);
    long long slot = slot_of_the_entry(&cluster);
    int master = t_master_of_slot(&cluster, slot), replica = t_replica_of(&cluster, master);
    t_cluster_wait_replicated(&cluster, master);
    t_node_config(&cluster, replica, "cluster-replica-no-failover", "yes");
    t_cluster_kill(&cluster, master);
    make_node(&nodes[NODES], setting, NULL, NULL);
    run_node(&nodes[NODES]);
    assert_lookups(&nodes[NODES], 1, 0, 0);
    assert_same_native(&nodes[0], &nodes[NODES]);
    t_node_config(&cluster, replica, "cluster-replica-no-failover", "no");
    t_cluster_wait_failover(&cluster, slot, master);
    make_node(&nodes[NODES + 1], setting, NULL, NULL);
    run_node(&nodes[NODES + 1]);
    assert_lookups(&nodes[NODES + 1], 0, 1, 0);
    assert_same_native(&nodes[0], &nodes[NODES + 1]);
    free(nodes);
    t_cluster_stop(&cluster);
}

/* ---- an HTTP storage: nginx with WebDAV (nginx_test_support.h) ---- */

static t_nginx nginx;

static void setup_http(void)
{
    snprintf(root, sizeof root, "/tmp/zc_e2e_http.XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    t_nginx_start(&nginx);
    snprintf(remote_setting, sizeof remote_setting,
             "NEO_CACHE_REMOTE=http://127.0.0.1:%u/zc" T_NGINX_TIMEOUTS, nginx.port);
    next_probe = 0;
}

static void teardown_http(void)
{
    t_nginx_stop(&nginx);
    t_remove_tree(root);
}

TestSuite(e2e_http, .init = setup_http, .fini = teardown_http, .timeout = 300);

/* No cross-node lock over HTTP: each node compiles at most once. */
Test(e2e_http, nodes_cold_at_once_compile_at_most_once_each_and_a_new_node_gets_it)
{
    node *nodes = calloc(NODES + 1, sizeof *nodes);
    for (int i = 0; i < NODES; i++)
        make_node(&nodes[i], remote_setting, NULL, NULL);
    run_nodes(nodes, NODES);
    for (int i = 0; i < NODES; i++) {
        cr_assert_eq(count_in(&nodes[i], MISS) + count_in(&nodes[i], HIT_REMOTE), 1, "node %d: %s",
                     i, nodes[i].probe.err);
        assert_same_native(&nodes[0], &nodes[i]);
    }
    cr_assert_eq(t_count_entries(nginx.data), 1);
    make_node(&nodes[NODES], remote_setting, NULL, NULL);
    run_node(&nodes[NODES]);
    assert_lookups(&nodes[NODES], 0, 1, 0);
    assert_same_native(&nodes[0], &nodes[NODES]);
    free(nodes);
}

/* A certificate from another CA, a name the certificate does not hold, a
 * server that stops answering: the driver's result, no hang. */
Test(e2e_http, a_server_that_fails_gives_the_drivers_result)
{
    node *nodes = calloc(4, sizeof *nodes);
    make_node(&nodes[0], remote_setting, NULL, NULL);
    run_node(&nodes[0]);
    assert_lookups(&nodes[0], 1, 0, 0);
    char other_ca[512], wrong_name[512], stopped[600];
    snprintf(other_ca, sizeof other_ca,
             "NEO_CACHE_REMOTE=https://localhost:%u/zc" T_NGINX_TIMEOUTS "|ca-file=%s",
             nginx.tls_port, nginx.other_ca);
    snprintf(wrong_name, sizeof wrong_name,
             "NEO_CACHE_REMOTE=https://127.0.0.2:%u/zc" T_NGINX_TIMEOUTS "|ca-file=%s",
             nginx.tls_port, nginx.ca);
    snprintf(stopped, sizeof stopped, "%s|connect-timeout=100|timeout=100", remote_setting);
    make_node(&nodes[1], other_ca, NULL, NULL);
    run_node(&nodes[1]);
    make_node(&nodes[2], wrong_name, NULL, NULL);
    run_node(&nodes[2]);
    cr_assert_eq(kill(nginx.pid, SIGSTOP), 0);
    make_node(&nodes[3], stopped, NULL, NULL);
    run_node(&nodes[3]);
    /* The GET, the HEAD before the PUT, the HEAD before recording the
     * inputs: three failures, then the storage is left alone. */
    cr_assert_eq(count_in(&nodes[1], "SSL certificate problem: unable to get local issuer "
                                     "certificate"),
                 3, "%s", nodes[1].probe.err);
    cr_assert_eq(count_in(&nodes[2], "no alternative certificate subject name matches"), 3, "%s",
                 nodes[2].probe.err);
    cr_assert_eq(count_in(&nodes[3], "Operation timed out after"), 3, "%s", nodes[3].probe.err);
    for (int i = 1; i < 4; i++)
        cr_assert_eq(count_in(&nodes[i], "3 failures in a row: not used again"), 1, "%s",
                     nodes[i].probe.err);
    for (int i = 1; i < 4; i++) {
        assert_lookups(&nodes[i], 1, 0, 0);
        assert_same_native(&nodes[0], &nodes[i]);
    }
    free(nodes);
}
