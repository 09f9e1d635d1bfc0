/* Redis Cluster routing above the connections (redis_connection.h): one
 * connection per node, the slot map read with CLUSTER SLOTS, MOVED and ASK
 * followed, and the map read again after a redirection or a node's failure,
 * so that a replica that took over its failed master is found. Every
 * command for one key name goes to the node serving its slot
 * (redis_key_slot.h). Safe for any number of threads, and across fork()
 * as the connections are: the map and the node table are atomics, nodes
 * are never freed before the cluster. Not installed: storage_redis.c's. */
#ifndef ZECACHE_REDIS_CLUSTER_H
#define ZECACHE_REDIS_CLUSTER_H

#include <stddef.h>

#include "redis_connection.h"
#include "zecache/status.h"

/* Redirections one command follows (MOVED, ASK, or a failed node's slot
 * found at another): a resharding moves a slot once, a failover once. */
#define ZC_REDIS_MAX_REDIRECTIONS 5
/* Nodes a cluster storage knows at most (seeds included): more than any
 * site's cluster has, masters and replicas; a node past it is not used. */
#define ZC_REDIS_MAX_CLUSTER_NODES 256
/* Nodes asked for the map on one reading of it, so that a cluster with
 * many nodes down costs a few deadlines, not one per node. */
#define ZC_REDIS_MAP_TRIES 3
/* How long a node that let a deadline pass is not asked again (the map's
 * other nodes are): a map may name nodes this host cannot reach (addresses
 * behind NAT or in containers), or a hostile one nodes that never answer. */
#define ZC_REDIS_SILENT_NODE_MS 10000

typedef struct zc_redis_cluster zc_redis_cluster;

/* The cluster the seeds belong to (each with the user, password and the rest
 * every node is reached with), called name in messages. node_hosts: ""
 * for nodes at any host the cluster names, or the hosts ("," separated,
 * compared without case) nodes may be at beside the seeds' hosts; a node
 * elsewhere is never contacted, and the slots it serves have no node. NULL
 * when out of memory. Nothing is contacted until the first command. */
zc_redis_cluster *zc_redis_cluster_new(const char *name, const zc_remote_server *seeds,
                                       size_t seed_count, const char *node_hosts,
                                       const zc_redis_limits *limits);
void zc_redis_cluster_free(zc_redis_cluster *cluster);

/* One command (as zc_redis_command) on the node serving key_name's slot,
 * following redirections, all of it (connects, readings of the map,
 * redirections) within one connect_timeout_ms + timeout_ms from the call.
 * NULL (logged) when it failed; then *failure is ZC_ERR_DISABLED when
 * the cluster answered promptly that it cannot serve the slot just now (a
 * failover under way: CLUSTERDOWN and the like, a master that refuses
 * connections), and ZC_ERR_IO otherwise: no node answered, a node was
 * silent (let a deadline pass, or did so within ZC_REDIS_SILENT_NODE_MS),
 * or the redirections went past their bound. */
redisReply *zc_redis_cluster_command(zc_redis_cluster *cluster, const char *key_name,
                                     zc_redis_reply_kind kind, const zc_redis_sink *sink, int argc,
                                     const char **argv, const size_t *lengths, zc_status *failure);

/* Reads the map afresh and calls each with the connection of every master
 * serving slots, until it returns anything but ZC_OK, which is returned.
 * ZC_ERR_IO when no node answered; ZC_ERR_DISABLED (logged) when some slot
 * is served by no node: a listing would miss its keys. */
typedef zc_status (*zc_redis_master_fn)(void *context, zc_redis_connection *master);
zc_status zc_redis_cluster_each_master(zc_redis_cluster *cluster, zc_redis_master_fn each,
                                       void *context);

/* The connection of the node serving key_name's slot in the map as it is
 * (nothing is sent), or NULL when none does. */
zc_redis_connection *zc_redis_cluster_owner(zc_redis_cluster *cluster, const char *key_name);

#endif
