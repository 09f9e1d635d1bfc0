/* See redis_cluster.h. The slot map holds a node's index in the node table
 * per slot; a thread reading it while another writes a new one may route a
 * command by a mix of both, which costs at most a redirection. The table
 * only grows (nodes found in maps and redirections), up to its bound. */
#include "redis_cluster.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "monotonic_clock.h"
#include "redis_key_slot.h"
#include "zecache/log.h"

enum { NO_NODE = 0xffff };

typedef struct cluster_node {
    zc_remote_server server;
    zc_redis_connection *connection;
    atomic_bool down; /* its last command failed: asked for the map last */
    /* zc_monotonic_ns() time until which it is not asked: it was silent */
    atomic_uint_least64_t silent_until_ns;
} cluster_node;

struct zc_redis_cluster {
    char name[sizeof(((zc_remote_spec *)0)->name)]; /* for messages */
    zc_remote_server like;                          /* user, password and the rest of every node */
    zc_redis_limits limits;
    size_t seed_count;                                          /* the first nodes */
    char node_hosts[sizeof(((zc_remote_spec *)0)->node_hosts)]; /* "": any */
    _Atomic(cluster_node *) nodes[ZC_REDIS_MAX_CLUSTER_NODES];
    atomic_ushort slots[ZC_REDIS_SLOTS]; /* node index, or NO_NODE */
    atomic_bool stale;                   /* read the map before the next command */
};

static cluster_node *node_at(zc_redis_cluster *cluster, size_t index)
{
    return atomic_load_explicit(&cluster->nodes[index], memory_order_acquire);
}

static cluster_node *node_new(const zc_redis_cluster *cluster, const char *host, unsigned port)
{
    cluster_node *node = calloc(1, sizeof *node);
    if (node == NULL)
        return NULL;
    zc_remote_server_at(&cluster->like, host, port, &node->server);
    node->connection = zc_redis_connection_new(&node->server, &cluster->limits);
    if (node->connection == NULL) {
        free(node);
        return NULL;
    }
    atomic_init(&node->down, false);
    atomic_init(&node->silent_until_ns, 0);
    return node;
}

static void node_free(cluster_node *node)
{
    zc_redis_connection_free(node->connection);
    free(node);
}

static bool node_is(const cluster_node *node, const char *host, unsigned port)
{
    return node->server.port == port && strcmp(node->server.host, host) == 0;
}

/* Whether host is among node_hosts= ("," separated), or a seed's. */
static bool host_allowed(zc_redis_cluster *cluster, const char *host)
{
    if (cluster->node_hosts[0] == '\0')
        return true;
    for (size_t i = 0; i < cluster->seed_count; i++)
        if (strcasecmp(node_at(cluster, i)->server.host, host) == 0)
            return true;
    size_t length = strlen(host);
    for (const char *at = cluster->node_hosts; *at != '\0';) {
        size_t item = strcspn(at, ",");
        if (item == length && strncasecmp(at, host, length) == 0)
            return true;
        at += item + (at[item] == ',');
    }
    return false;
}

/* The index of the node at host:port, added when new; NO_NODE when the table
 * is full, memory is out or node-hosts= leaves host out. Threads adding the
 * same node at once agree on one entry. */
static size_t node_index(zc_redis_cluster *cluster, const char *host, unsigned port)
{
    if (!host_allowed(cluster, host)) {
        zc_log_info("remote %s:%u: a cluster node at a host node-hosts= does not name: not used",
                    host, port);
        return NO_NODE;
    }
    cluster_node *added = NULL;
    size_t index = 0;
    while (index < ZC_REDIS_MAX_CLUSTER_NODES) {
        cluster_node *node = node_at(cluster, index);
        if (node == NULL) {
            if (added == NULL && (added = node_new(cluster, host, port)) == NULL)
                return NO_NODE;
            if (atomic_compare_exchange_strong(&cluster->nodes[index], &node, added))
                return index;
        }
        if (node_is(node, host, port)) {
            if (added != NULL)
                node_free(added);
            return index;
        }
        index++;
    }
    if (added != NULL)
        node_free(added);
    zc_log_info("remote %s:%u: more than %d cluster nodes: not used", host, port,
                ZC_REDIS_MAX_CLUSTER_NODES);
    return NO_NODE;
}

/* ---- one call's commands ---- */

/* One call of zc_redis_cluster_command (or a listing's reading of the map):
 * its slot, the node it is at, and what happened on the way. Every command
 * it sends, to any node, ends by the call's one deadline. */
typedef struct route {
    uint16_t slot;
    size_t node;
    bool ask;
    bool answered; /* a node answered as one of a cluster: a map, or a reply */
    bool silent;   /* some node did not answer in time, or is remembered so */
    bool misled;   /* redirected past the bound */
    zc_redis_call call;
} route;

static route route_for(const zc_redis_cluster *cluster, uint16_t slot)
{
    uint64_t ms = (uint64_t)cluster->limits.connect_timeout_ms + cluster->limits.timeout_ms;
    return (route){.slot = slot, .call = {.deadline_ns = zc_monotonic_ns() + ms * 1000000}};
}

static bool is_silent(cluster_node *node)
{
    return zc_monotonic_ns() < atomic_load_explicit(&node->silent_until_ns, memory_order_relaxed);
}

/* One command to node within the call's deadline: its reply, or NULL. A
 * node that let a deadline pass is not asked again for
 * ZC_REDIS_SILENT_NODE_MS, so that a node that never answers (or whose
 * address cannot be reached from here) costs one deadline, not one per
 * call and per reading of the map. */
static redisReply *node_command(cluster_node *node, route *to, zc_redis_reply_kind kind,
                                const zc_redis_sink *sink, int argc, const char **argv,
                                const size_t *lengths)
{
    if (is_silent(node) || zc_monotonic_ns() >= to->call.deadline_ns) {
        to->silent = true;
        return NULL;
    }
    redisReply *reply =
        zc_redis_command_within(node->connection, &to->call, kind, sink, argc, argv, lengths);
    if (reply == NULL && to->call.timed_out) {
        atomic_store_explicit(&node->silent_until_ns,
                              zc_monotonic_ns() + (uint64_t)ZC_REDIS_SILENT_NODE_MS * 1000000,
                              memory_order_relaxed);
        to->silent = true;
    }
    atomic_store_explicit(&node->down, reply == NULL, memory_order_relaxed);
    return reply;
}

/* ---- the slot map ---- */

static bool reply_is_integer(const redisReply *reply, long long min, long long max)
{
    return reply->type == REDIS_REPLY_INTEGER && reply->integer >= min && reply->integer <= max;
}

/* The master of one CLUSTER SLOTS range: its node index, or NO_NODE when its
 * endpoint is unknown (nil, "?") or the range is malformed. An empty
 * endpoint is the answering node's own address. */
static size_t range_master(zc_redis_cluster *cluster, const redisReply *range,
                           const cluster_node *answering)
{
    const redisReply *master = range->element[2];
    if (master->type != REDIS_REPLY_ARRAY || master->elements < 2 ||
        !reply_is_integer(master->element[1], 1, 65535))
        return NO_NODE;
    const redisReply *endpoint = master->element[0];
    if (endpoint->type != REDIS_REPLY_STRING || strcmp(endpoint->str, "?") == 0)
        return NO_NODE;
    const char *host = endpoint->len > 0 ? endpoint->str : answering->server.host;
    return node_index(cluster, host, (unsigned)master->element[1]->integer);
}

/* The map a CLUSTER SLOTS reply gives into map; false when it serves no
 * slot at all (a node not in cluster mode answers with an error before). */
static bool read_map(zc_redis_cluster *cluster, const redisReply *reply,
                     const cluster_node *answering, uint16_t *map)
{
    for (size_t slot = 0; slot < ZC_REDIS_SLOTS; slot++)
        map[slot] = NO_NODE;
    bool any = false;
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *range = reply->element[i];
        if (!reply_is_integer(range->element[0], 0, ZC_REDIS_SLOTS - 1) ||
            !reply_is_integer(range->element[1], range->element[0]->integer, ZC_REDIS_SLOTS - 1))
            continue;
        size_t master = range_master(cluster, range, answering);
        for (long long slot = range->element[0]->integer;
             master != NO_NODE && slot <= range->element[1]->integer; slot++)
            map[slot] = (uint16_t)master;
        any = any || master != NO_NODE;
    }
    return any;
}

/* CLUSTER SLOTS from node into the map; false when it did not answer or
 * served no map. */
static bool map_from(zc_redis_cluster *cluster, cluster_node *node, route *to, uint16_t *map)
{
    redisReply *reply = node_command(node, to, ZC_REDIS_REPLY_SLOTS, NULL, 2,
                                     (const char *[]){"CLUSTER", "SLOTS"}, NULL);
    if (reply == NULL)
        return false;
    bool ok = reply->type == REDIS_REPLY_ARRAY && read_map(cluster, reply, node, map);
    if (!ok)
        zc_log_info("remote %s: CLUSTER SLOTS: %s", node->server.name,
                    reply->type == REDIS_REPLY_ERROR ? reply->str : "no slot served");
    freeReplyObject(reply);
    if (!ok)
        return false;
    for (size_t slot = 0; slot < ZC_REDIS_SLOTS; slot++)
        atomic_store_explicit(&cluster->slots[slot], map[slot], memory_order_relaxed);
    return true;
}

/* Reads the map from a node that answers: those whose last command went
 * well first, each at most once, at most ZC_REDIS_MAP_TRIES in all, none
 * remembered silent, by the call's deadline. False when none gave one. */
static bool refresh(zc_redis_cluster *cluster, route *to)
{
    uint16_t *map = malloc(ZC_REDIS_SLOTS * sizeof *map);
    if (map == NULL)
        return false;
    bool tried[ZC_REDIS_MAX_CLUSTER_NODES] = {false};
    int tries = 0;
    bool done = false;
    for (int pass = 0; pass < 2 && !done && tries < ZC_REDIS_MAP_TRIES; pass++) {
        for (size_t i = 0; i < ZC_REDIS_MAX_CLUSTER_NODES && !done && tries < ZC_REDIS_MAP_TRIES;
             i++) {
            cluster_node *node = node_at(cluster, i);
            if (node == NULL)
                break;
            if (tried[i] || is_silent(node) ||
                (pass == 0 && atomic_load_explicit(&node->down, memory_order_relaxed)))
                continue;
            tried[i] = true;
            tries++;
            done = map_from(cluster, node, to, map);
        }
    }
    free(map);
    if (done)
        atomic_store(&cluster->stale, false);
    to->answered = to->answered || done;
    return done;
}

static size_t slot_owner(zc_redis_cluster *cluster, uint16_t slot)
{
    return atomic_load_explicit(&cluster->slots[slot], memory_order_relaxed);
}

/* ---- redirections ---- */

typedef struct redirection {
    bool ask; /* ASK: this command only, after ASKING; MOVED: the slot moved */
    uint16_t slot;
    size_t node;
} redirection;

/* "MOVED <slot> <host>:<port>" or "ASK ..." into where; false for any other
 * error. An empty host is the answering node's. */
static bool parse_redirection(zc_redis_cluster *cluster, const redisReply *reply,
                              const cluster_node *answering, redirection *where)
{
    if (reply->type != REDIS_REPLY_ERROR || reply->str == NULL)
        return false;
    where->ask = strncmp(reply->str, "ASK ", 4) == 0;
    if (!where->ask && strncmp(reply->str, "MOVED ", 6) != 0)
        return false;
    char host[sizeof answering->server.host];
    unsigned slot, port;
    const char *rest = reply->str + (where->ask ? 4 : 6);
    const char *space = strchr(rest, ' ');
    const char *colon = space != NULL ? strrchr(space, ':') : NULL;
    if (colon == NULL || (size_t)(colon - space - 1) >= sizeof host ||
        sscanf(rest, "%u", &slot) != 1 || slot >= ZC_REDIS_SLOTS ||
        sscanf(colon + 1, "%u", &port) != 1 || port == 0 || port > 65535)
        return false;
    snprintf(host, sizeof host, "%.*s", (int)(colon - space - 1), space + 1);
    where->slot = (uint16_t)slot;
    where->node = node_index(cluster, host[0] != '\0' ? host : answering->server.host, port);
    return where->node != NO_NODE;
}

/* ASKING before a command an ASK sent here; false when it was not taken. */
static bool asking(cluster_node *node, route *to)
{
    redisReply *reply =
        node_command(node, to, ZC_REDIS_REPLY_SIMPLE, NULL, 1, (const char *[]){"ASKING"}, NULL);
    bool ok = reply != NULL && reply->type == REDIS_REPLY_STATUS;
    if (reply != NULL)
        freeReplyObject(reply);
    return ok;
}

/* The node serving route's slot: from the map, read again when it is stale
 * or the slot has no node. False when none serves it. */
static bool find_node(zc_redis_cluster *cluster, route *to)
{
    bool read = atomic_load(&cluster->stale);
    if (read)
        refresh(cluster, to);
    to->node = slot_owner(cluster, to->slot);
    if (to->node == NO_NODE && !read) {
        refresh(cluster, to);
        to->node = slot_owner(cluster, to->slot);
    }
    return to->node != NO_NODE;
}

/* The node failed: read the map again, and go on at the slot's new node
 * when there is one (its replica took over). */
static bool after_failure(zc_redis_cluster *cluster, route *to)
{
    atomic_store(&cluster->stale, true);
    bool read = refresh(cluster, to);
    size_t owner = slot_owner(cluster, to->slot);
    if (!read || owner == NO_NODE || owner == to->node)
        return false;
    to->node = owner;
    to->ask = false;
    return true;
}

/* One try on the route's node: its reply, or NULL when it failed. */
static redisReply *try_node(zc_redis_cluster *cluster, route *to, zc_redis_reply_kind kind,
                            const zc_redis_sink *sink, int argc, const char **argv,
                            const size_t *lengths)
{
    cluster_node *node = node_at(cluster, to->node);
    if (to->ask && !asking(node, to))
        return NULL;
    redisReply *reply = node_command(node, to, kind, sink, argc, argv, lengths);
    to->answered = to->answered || reply != NULL;
    return reply;
}

static redisReply *fail(zc_redis_cluster *cluster, const route *to, const char *command,
                        const char *why, zc_status *failure)
{
    zc_log_info("remote %s: %s: slot %u: %s%s", cluster->name, command, (unsigned)to->slot, why,
                to->silent ? " (a node did not answer in time)" : "");
    *failure = to->answered && !to->silent && !to->misled ? ZC_ERR_DISABLED : ZC_ERR_IO;
    return NULL;
}

/* A MOVED slot is at its new node from now on, and the whole map is read
 * again before the next command (a resharding or a failover moves more than
 * one slot); an ASK is for this command only. */
static void follow(zc_redis_cluster *cluster, route *to, const redirection *where)
{
    if (!where->ask) {
        atomic_store_explicit(&cluster->slots[where->slot], (uint16_t)where->node,
                              memory_order_relaxed);
        atomic_store(&cluster->stale, true);
    }
    to->ask = where->ask;
    to->node = where->node;
}

/* A command's sink, and whether any of the value went to it. */
typedef struct watched_sink {
    const zc_redis_sink *sink;
    bool written;
} watched_sink;

static bool watch_write(void *context, uint64_t length, const uint8_t *bytes, size_t size,
                        char *why, size_t why_size)
{
    watched_sink *watched = context;
    watched->written = true;
    return watched->sink->write(watched->sink->context, length, bytes, size, why, why_size);
}

/* Errors that say the cluster cannot serve the slot just now (a failover
 * under way, a slot being moved, a node loading): failures, not a value. */
static bool cluster_busy(const redisReply *reply)
{
    static const char *const busy[] = {"CLUSTERDOWN ", "TRYAGAIN ", "MASTERDOWN ", "LOADING "};
    for (size_t i = 0; reply->type == REDIS_REPLY_ERROR && i < sizeof busy / sizeof *busy; i++)
        if (strncmp(reply->str, busy[i], strlen(busy[i])) == 0)
            return true;
    return false;
}

redisReply *zc_redis_cluster_command(zc_redis_cluster *cluster, const char *key_name,
                                     zc_redis_reply_kind kind, const zc_redis_sink *sink, int argc,
                                     const char **argv, const size_t *lengths, zc_status *failure)
{
    route to = route_for(cluster, zc_redis_key_slot(key_name, strlen(key_name)));
    watched_sink watched = {sink, false};
    zc_redis_sink through = {watch_write, &watched};
    if (sink != NULL)
        sink = &through;
    if (!find_node(cluster, &to))
        return fail(cluster, &to, argv[0], "served by no node", failure);
    for (int hop = 0;; hop++) {
        redisReply *reply = try_node(cluster, &to, kind, sink, argc, argv, lengths);
        if (reply == NULL) {
            /* Not again into a sink that holds part of the value already. */
            if (after_failure(cluster, &to) && !watched.written && hop < ZC_REDIS_MAX_REDIRECTIONS)
                continue;
            return fail(cluster, &to, argv[0], "its node failed", failure);
        }
        if (cluster_busy(reply)) {
            fail(cluster, &to, argv[0], reply->str, failure);
            freeReplyObject(reply);
            return NULL;
        }
        redirection where;
        if (!parse_redirection(cluster, reply, node_at(cluster, to.node), &where))
            return reply;
        freeReplyObject(reply);
        if (hop == ZC_REDIS_MAX_REDIRECTIONS) {
            to.misled = true;
            return fail(cluster, &to, argv[0], "redirected more than the bound", failure);
        }
        follow(cluster, &to, &where);
    }
}

zc_status zc_redis_cluster_each_master(zc_redis_cluster *cluster, zc_redis_master_fn each,
                                       void *context)
{
    route to = route_for(cluster, 0);
    if (!refresh(cluster, &to))
        return ZC_ERR_IO;
    bool seen[ZC_REDIS_MAX_CLUSTER_NODES] = {false};
    for (size_t slot = 0; slot < ZC_REDIS_SLOTS; slot++) {
        size_t owner = slot_owner(cluster, (uint16_t)slot);
        if (owner == NO_NODE) {
            zc_log_info("remote %s: slot %zu is served by no node: a listing would miss keys",
                        cluster->name, slot);
            return ZC_ERR_DISABLED;
        }
        seen[owner] = true;
    }
    zc_status status = ZC_OK;
    for (size_t i = 0; i < ZC_REDIS_MAX_CLUSTER_NODES && status == ZC_OK; i++)
        if (seen[i])
            status = each(context, node_at(cluster, i)->connection);
    return status;
}

zc_redis_cluster *zc_redis_cluster_new(const char *name, const zc_remote_server *seeds,
                                       size_t seed_count, const char *node_hosts,
                                       const zc_redis_limits *limits)
{
    if (seed_count == 0)
        return NULL;
    zc_redis_cluster *cluster = calloc(1, sizeof *cluster);
    if (cluster == NULL)
        return NULL;
    snprintf(cluster->name, sizeof cluster->name, "%s", name);
    cluster->like = seeds[0];
    cluster->limits = *limits;
    for (size_t slot = 0; slot < ZC_REDIS_SLOTS; slot++)
        atomic_init(&cluster->slots[slot], NO_NODE);
    atomic_init(&cluster->stale, true);
    for (size_t i = 0; i < ZC_REDIS_MAX_CLUSTER_NODES; i++)
        atomic_init(&cluster->nodes[i], NULL);
    /* The seeds first, as written: the first map is read from them. */
    for (size_t i = 0; i < seed_count; i++) {
        if (node_index(cluster, seeds[i].host, seeds[i].port) == NO_NODE) {
            zc_redis_cluster_free(cluster);
            return NULL;
        }
        cluster->seed_count = i + 1;
    }
    snprintf(cluster->node_hosts, sizeof cluster->node_hosts, "%s", node_hosts);
    return cluster;
}

void zc_redis_cluster_free(zc_redis_cluster *cluster)
{
    if (cluster == NULL)
        return;
    for (size_t i = 0; i < ZC_REDIS_MAX_CLUSTER_NODES; i++) {
        cluster_node *node = node_at(cluster, i);
        if (node != NULL)
            node_free(node);
    }
    free(cluster);
}

zc_redis_connection *zc_redis_cluster_owner(zc_redis_cluster *cluster, const char *key_name)
{
    size_t owner = slot_owner(cluster, zc_redis_key_slot(key_name, strlen(key_name)));
    return owner != NO_NODE ? node_at(cluster, owner)->connection : NULL;
}
