/* zecache remote check on a Redis Cluster: a probe on every master. */
#ifndef ZECACHE_CMD_REMOTE_CLUSTER_H
#define ZECACHE_CMD_REMOTE_CLUSTER_H

#include "zecache/storage.h"

/* Writes, reads and removes a probe under key; the problem, or NULL. */
typedef const char *(*remote_probe_fn)(zc_storage *storage, zc_key key, double *elapsed_ms);

/* Probes every master of storage's cluster with probe, printing a line for
 * each; the problem, or NULL when every master works. */
const char *check_cluster_masters(zc_storage *storage, remote_probe_fn probe);

#endif
