/* A private Redis Cluster for a test: six redis-servers (redis_test_support.h)
 * in cluster mode on free ports of 127.0.0.1, joined by
 * `redis-cli --cluster create ... --cluster-replicas 1` into three masters
 * with a replica each, with a node timeout of 1000 ms so that a failover
 * takes seconds. Helpers find a slot's master, its replica and node ids,
 * and wait for replication and failovers. Header-only, as the other support
 * headers. */
#ifndef ZC_REDIS_CLUSTER_SUPPORT_H
#define ZC_REDIS_CLUSTER_SUPPORT_H

#include "redis_test_support.h"

#define T_CLUSTER_NODES 6
#define T_CLUSTER_DEADLINE_MS 60000

typedef struct t_cluster {
    t_redis nodes[T_CLUSTER_NODES];
} t_cluster;

static inline void t_pause_ms(long ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&pause, NULL);
}

/* A command on node i (its Unix socket); NULL when it is down. */
static inline redisReply *t_node_command(const t_cluster *cluster, int i, int argc,
                                         const char **argv)
{
    struct timeval timeout = {2, 0};
    redisContext *context = redisConnectUnixWithTimeout(cluster->nodes[i].socket, timeout);
    redisReply *reply = NULL;
    if (context != NULL && context->err == 0)
        reply = redisCommandArgv(context, argc, argv, NULL);
    if (context != NULL)
        redisFree(context);
    return reply;
}

static inline bool t_node_alive(const t_cluster *cluster, int i)
{
    return cluster->nodes[i].pid > 0;
}

/* Whether node i's CLUSTER INFO holds line. */
static inline bool t_node_info_has(const t_cluster *cluster, int i, const char *line)
{
    redisReply *reply = t_node_command(cluster, i, 2, (const char *[]){"CLUSTER", "INFO"});
    bool has = reply != NULL && reply->type == REDIS_REPLY_STRING && strstr(reply->str, line);
    if (reply != NULL)
        freeReplyObject(reply);
    return has;
}

/* Until every live node says the cluster is whole and serves every slot. */
static inline void t_cluster_wait_ok(const t_cluster *cluster)
{
    uint64_t deadline = t_monotonic_ms() + T_CLUSTER_DEADLINE_MS;
    for (;;) {
        bool ok = true;
        for (int i = 0; i < T_CLUSTER_NODES && ok; i++)
            ok = !t_node_alive(cluster, i) ||
                 (t_node_info_has(cluster, i, "cluster_state:ok") &&
                  t_node_info_has(cluster, i, "cluster_slots_ok:16384"));
        if (ok)
            return;
        cr_assert_lt(t_monotonic_ms(), deadline, "the cluster did not become whole");
        t_pause_ms(50);
    }
}

/* A cluster node: its bus on a free port of its own (the default, the port
 * plus 10000, may be past 65535 or taken). */
static inline void t_cluster_node_start(t_redis *node)
{
    char bus[16];
    snprintf(bus, sizeof bus, "%u", t_free_tcp_port());
    const char *const extra[] = {"--cluster-enabled",
                                 "yes",
                                 "--cluster-config-file",
                                 "nodes.conf",
                                 "--cluster-node-timeout",
                                 "1000",
                                 "--cluster-replica-validity-factor",
                                 "0",
                                 "--cluster-port",
                                 bus,
                                 NULL};
    t_redis_start(node, extra);
}

static inline bool t_program_found(const char *name)
{
    const char *path = getenv("PATH");
    char dirs[4096], file[4200];
    snprintf(dirs, sizeof dirs, "%s", path != NULL ? path : "/usr/bin:/bin");
    char *saveptr = NULL;
    for (char *dir = strtok_r(dirs, ":", &saveptr); dir != NULL;
         dir = strtok_r(NULL, ":", &saveptr)) {
        snprintf(file, sizeof file, "%s/%s", dir, name);
        if (access(file, X_OK) == 0)
            return true;
    }
    return false;
}

/* Skipped, loudly, only where redis-server or redis-cli is not installed
 * (CI installs both: scripts/install-deps.sh). */
static inline void t_cluster_start(t_cluster *cluster)
{
    if (!t_program_found("redis-server") || !t_program_found("redis-cli")) {
        fprintf(stderr, "\n*** SKIPPED: redis-server or redis-cli is not installed: the Redis "
                        "Cluster tests did not run ***\n\n");
        cr_skip_test("redis-server or redis-cli is not installed");
    }
    for (int i = 0; i < T_CLUSTER_NODES; i++)
        t_cluster_node_start(&cluster->nodes[i]);
    char addresses[T_CLUSTER_NODES][32];
    const char *argv[T_CLUSTER_NODES + 8] = {"redis-cli", "--cluster", "create"};
    int argc = 3;
    for (int i = 0; i < T_CLUSTER_NODES; i++) {
        snprintf(addresses[i], sizeof addresses[i], "127.0.0.1:%u", cluster->nodes[i].port);
        argv[argc++] = addresses[i];
    }
    argv[argc++] = "--cluster-replicas";
    argv[argc++] = "1";
    argv[argc++] = "--cluster-yes";
    argv[argc] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execvp("redis-cli", (char *const *)argv);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "redis-cli --cluster create failed");
    t_cluster_wait_ok(cluster);
}

static inline void t_cluster_stop(t_cluster *cluster)
{
    for (int i = 0; i < T_CLUSTER_NODES; i++)
        t_redis_stop(&cluster->nodes[i]);
}

static inline void t_cluster_kill(t_cluster *cluster, int i)
{
    kill(cluster->nodes[i].pid, SIGKILL);
    waitpid(cluster->nodes[i].pid, NULL, 0);
    cluster->nodes[i].pid = 0;
}

static inline int t_any_live_node(const t_cluster *cluster)
{
    for (int i = 0; i < T_CLUSTER_NODES; i++)
        if (t_node_alive(cluster, i))
            return i;
    cr_assert_fail("no live node");
    return -1;
}

static inline int t_node_of_port(const t_cluster *cluster, long long port)
{
    for (int i = 0; i < T_CLUSTER_NODES; i++)
        if (cluster->nodes[i].port == (unsigned)port)
            return i;
    cr_assert_fail("no node on port %lld", port);
    return -1;
}

/* The node serving slot as a live node's CLUSTER SLOTS says. */
static inline int t_master_of_slot(const t_cluster *cluster, long long slot)
{
    redisReply *reply =
        t_node_command(cluster, t_any_live_node(cluster), 2, (const char *[]){"CLUSTER", "SLOTS"});
    cr_assert(reply != NULL && reply->type == REDIS_REPLY_ARRAY);
    int node = -1;
    for (size_t r = 0; r < reply->elements; r++) {
        redisReply *range = reply->element[r];
        if (range->element[0]->integer <= slot && slot <= range->element[1]->integer)
            node = t_node_of_port(cluster, range->element[2]->element[1]->integer);
    }
    freeReplyObject(reply);
    cr_assert_geq(node, 0, "slot %lld is served by no node", slot);
    return node;
}

static inline long long t_key_slot(const t_cluster *cluster, const char *name)
{
    redisReply *reply = t_node_command(cluster, t_any_live_node(cluster), 3,
                                       (const char *[]){"CLUSTER", "KEYSLOT", name});
    cr_assert(reply != NULL && reply->type == REDIS_REPLY_INTEGER);
    long long slot = reply->integer;
    freeReplyObject(reply);
    return slot;
}

/* Node i's id, into id (41 bytes). */
static inline void t_node_id(const t_cluster *cluster, int i, char id[41])
{
    redisReply *reply = t_node_command(cluster, i, 2, (const char *[]){"CLUSTER", "MYID"});
    cr_assert(reply != NULL && reply->type == REDIS_REPLY_STRING && reply->len == 40);
    memcpy(id, reply->str, 41);
    freeReplyObject(reply);
}

/* The replica of master m, once m knows it (a replica joins after the
 * cluster is whole). */
static inline int t_replica_of(const t_cluster *cluster, int m)
{
    char id[41];
    t_node_id(cluster, m, id);
    uint64_t deadline = t_monotonic_ms() + T_CLUSTER_DEADLINE_MS;
    for (;;) {
        redisReply *reply =
            t_node_command(cluster, m, 3, (const char *[]){"CLUSTER", "REPLICAS", id});
        cr_assert(reply != NULL && reply->type == REDIS_REPLY_ARRAY);
        if (reply->elements == 1) {
            /* "<id> 127.0.0.1:<port>@<bus port> slave <master id> ..." */
            const char *colon = strchr(reply->element[0]->str, ':');
            cr_assert_not_null(colon);
            int replica = t_node_of_port(cluster, atoll(colon + 1));
            freeReplyObject(reply);
            return replica;
        }
        freeReplyObject(reply);
        cr_assert_lt(t_monotonic_ms(), deadline, "master %d has no replica", m);
        t_pause_ms(20);
    }
}

static inline long long t_info_number(const char *info, const char *field)
{
    const char *at = strstr(info, field);
    return at != NULL ? atoll(at + strlen(field)) : -1;
}

/* Until master m's replica has everything m has been written. */
static inline void t_cluster_wait_replicated(const t_cluster *cluster, int m)
{
    uint64_t deadline = t_monotonic_ms() + T_CLUSTER_DEADLINE_MS;
    for (;;) {
        redisReply *reply = t_node_command(cluster, m, 2, (const char *[]){"INFO", "replication"});
        cr_assert(reply != NULL && reply->type == REDIS_REPLY_STRING);
        long long master = t_info_number(reply->str, "master_repl_offset:");
        long long replica = t_info_number(reply->str, ",offset=");
        freeReplyObject(reply);
        if (master >= 0 && master == replica)
            return;
        cr_assert_lt(t_monotonic_ms(), deadline, "master %d's replica did not catch up", m);
        t_pause_ms(20);
    }
}

/* Until a live node says the cluster is down (a master failed, no replica
 * took over yet). */
static inline void t_cluster_wait_down(const t_cluster *cluster)
{
    uint64_t deadline = t_monotonic_ms() + T_CLUSTER_DEADLINE_MS;
    while (!t_node_info_has(cluster, t_any_live_node(cluster), "cluster_state:fail")) {
        cr_assert_lt(t_monotonic_ms(), deadline, "the cluster did not see its master fail");
        t_pause_ms(20);
    }
}

/* Until slot is served by a node other than dead, and the cluster is whole. */
static inline void t_cluster_wait_failover(const t_cluster *cluster, long long slot, int dead)
{
    uint64_t deadline = t_monotonic_ms() + T_CLUSTER_DEADLINE_MS;
    while (t_master_of_slot(cluster, slot) == dead) {
        cr_assert_lt(t_monotonic_ms(), deadline, "no replica took over");
        t_pause_ms(50);
    }
    t_cluster_wait_ok(cluster);
}

/* CONFIG SET name value on node i. */
static inline void t_node_config(const t_cluster *cluster, int i, const char *name,
                                 const char *value)
{
    redisReply *reply =
        t_node_command(cluster, i, 4, (const char *[]){"CONFIG", "SET", name, value});
    cr_assert(reply != NULL && reply->type == REDIS_REPLY_STATUS, "CONFIG SET %s", name);
    freeReplyObject(reply);
}

#endif
