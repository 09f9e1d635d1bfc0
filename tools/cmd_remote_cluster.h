/* zecache remote check on a Redis Cluster: a probe on every master. */
#ifndef ZECACHE_CMD_REMOTE_CLUSTER_H
#define ZECACHE_CMD_REMOTE_CLUSTER_H

#include <stdbool.h>

#include "zecache/storage.h"

/* Writes, reads and removes a probe under key; the problem, or NULL. */
typedef const char *(*remote_probe_fn)(zc_storage *storage, zc_key key, double *elapsed_ms);

/* Prints the line of a probe: label, then ok or problem (NULL: none) with
 * why, as the last message about the node called name said. */
typedef void (*remote_report_fn)(const char *label, const char *name, const char *problem,
                                 bool read_only, double elapsed_ms);

/* Probes every master of storage's cluster with probe, reporting a line for
 * each; the problem, or NULL when every master works. */
const char *check_cluster_masters(zc_storage *storage, remote_probe_fn probe,
                                  remote_report_fn report);

#endif
