/* One connection to one Redis server, hiredis formatting the commands and
 * parsing the replies, where every command finishes or fails within its
 * deadline whatever the server does: name lookup, connect, the TLS
 * handshake (rediss://, tls_socket.h), AUTH and SELECT, sending and
 * receiving all count against it (hiredis's own timeouts bound each recv(),
 * not a command). A certificate that does not verify fails the connection,
 * as any failure to connect: never plain text instead. Each command
 * says the shape of reply it takes (redis_reply_shape.h): one that does not
 * fit is refused at its first bytes that do not, before hiredis builds any
 * of it, so what one reply buffers is bounded by its shape. A value larger
 * than ZC_REDIS_IN_MEMORY_MAX is never held whole: it goes to the caller's
 * sink as it arrives, or is refused when there is none. SIGPIPE is kept
 * from the application. Not installed: storage_redis.c's transport. */
#ifndef ZECACHE_REDIS_CONNECTION_H
#define ZECACHE_REDIS_CONNECTION_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_buffer_budget.h"
#include "redis_reply_shape.h"
#include "zecache/remote_spec.h"

/* The largest value held in memory as it arrives: 16 MiB covers the entries
 * of nearly every module (a few hundred KiB to a few MiB) and every recipe
 * and compressed SPIR-V seen, while a few connections' worth stays well
 * within the 64 MiB a hostile server may cost. */
#define ZC_REDIS_IN_MEMORY_MAX ((size_t)16 << 20)

typedef struct zc_redis_connection zc_redis_connection;

typedef struct zc_redis_limits {
    uint32_t connect_timeout_ms; /* lookup, connect, AUTH and SELECT of a new connection */
    uint32_t timeout_ms;         /* one command, sent and answered */
    size_t max_reply;            /* bytes of one value (GET), streamed or not */
    /* What the storage's connections keep between replies, together; NULL:
     * each keeps up to 16 MiB on its own. Outlives the connections. */
    zc_redis_buffer_budget *buffers;
} zc_redis_limits;

/* Where a value larger than ZC_REDIS_IN_MEMORY_MAX goes, piece by piece in
 * order: length is the whole value's. False (with why) refuses the value
 * there and then, which drops the connection. */
typedef struct zc_redis_sink {
    bool (*write)(void *context, uint64_t length, const uint8_t *bytes, size_t size, char *why,
                  size_t why_size);
    void *context;
} zc_redis_sink;

/* NULL when out of memory. Nothing is contacted until the first command. */
zc_redis_connection *zc_redis_connection_new(const zc_remote_server *server,
                                             const zc_redis_limits *limits);
void zc_redis_connection_free(zc_redis_connection *connection);

/* One command (connecting first when needed), within connect_timeout_ms
 * (when it connects) plus timeout_ms from the call, waiting for a command of
 * another thread on this connection included, whose reply must have the
 * shape kind. NULL (logged) when it failed, the reply did not fit or the
 * deadline passed; the connection is then dropped, so that a late reply
 * cannot answer the next command. A VALUE larger than
 * ZC_REDIS_IN_MEMORY_MAX goes to sink (NULL: refused) and comes back as a
 * string reply of its length whose str is NULL. Free the reply with
 * freeReplyObject. */
redisReply *zc_redis_command(zc_redis_connection *connection, zc_redis_reply_kind kind,
                             const zc_redis_sink *sink, int argc, const char **argv,
                             const size_t *lengths);

/* A caller's bound on one command, and what it ran into. */
typedef struct zc_redis_call {
    uint64_t deadline_ns; /* zc_monotonic_ns() time; 0: the connection's own only */
    bool timed_out;       /* the command failed on a deadline: the server is silent */
} zc_redis_call;

/* zc_redis_command, finished or failed by call's deadline too (a Redis
 * Cluster's call across its nodes, redis_cluster.h), and saying whether it
 * failed for want of time. */
redisReply *zc_redis_command_within(zc_redis_connection *connection, zc_redis_call *call,
                                    zc_redis_reply_kind kind, const zc_redis_sink *sink, int argc,
                                    const char **argv, const size_t *lengths);

/* The server's name for messages (its URL without the password). */
const char *zc_redis_connection_name(const zc_redis_connection *connection);

#endif
