/* The read buffers that all the connections of one storage keep between
 * replies, counted together: a cluster names up to 256 nodes and a storage
 * up to 64 shards, and each connection keeping its largest reply's buffer
 * would cost gigabytes where one server costs at most 64 MiB. A connection
 * whose buffer does not fit gives it back after the reply. Lock-free, for
 * any number of threads. Not installed: redis_connection.c's. */
#ifndef ZECACHE_REDIS_BUFFER_BUDGET_H
#define ZECACHE_REDIS_BUFFER_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* What a storage's connections keep in all: one large entry's buffer, so
 * that a hit on a large module does not regrow it page by page, and the
 * other connections give theirs back. */
#define ZC_REDIS_KEPT_BUFFERS_MAX ((size_t)16 << 20)

typedef struct zc_redis_buffer_budget {
    atomic_size_t kept;
    size_t limit;
} zc_redis_buffer_budget;

void zc_redis_buffer_budget_init(zc_redis_buffer_budget *budget, size_t limit);

/* Counts size more bytes as kept: false (nothing counted) when they would
 * pass the limit. */
bool zc_redis_buffer_budget_take(zc_redis_buffer_budget *budget, size_t size);

/* size bytes taken before are no longer kept. */
void zc_redis_buffer_budget_give(zc_redis_buffer_budget *budget, size_t size);

#endif
