/* One connection to one Redis server, through hiredis, where every command
 * finishes or fails within its deadline whatever the server does: name
 * lookup, connect, AUTH and SELECT, sending and receiving all count against
 * it (hiredis's own timeouts bound each recv(), not a command). A reply
 * larger than the caller's limit is refused as soon as its size is
 * announced, and the read buffer never grows past that limit. SIGPIPE is
 * kept from the application. Not installed: storage_redis.c's transport. */
#ifndef ZECACHE_REDIS_CONNECTION_H
#define ZECACHE_REDIS_CONNECTION_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/remote_spec.h"

typedef struct zc_redis_connection zc_redis_connection;

typedef struct zc_redis_limits {
    uint32_t connect_timeout_ms; /* lookup, connect, AUTH and SELECT of a new connection */
    uint32_t timeout_ms;         /* one command, sent and answered */
    size_t max_reply;            /* bytes of one reply */
} zc_redis_limits;

/* NULL when out of memory. Nothing is contacted until the first command. */
zc_redis_connection *zc_redis_connection_new(const zc_remote_server *server,
                                             const zc_redis_limits *limits);
void zc_redis_connection_free(zc_redis_connection *connection);

/* One command (connecting first when needed), within connect_timeout_ms
 * (when it connects) plus timeout_ms from the call, waiting for a command of
 * another thread on this connection included. NULL (logged) when it failed
 * or the deadline passed; the connection is then dropped, so that a late
 * reply cannot answer the next command. Free the reply with
 * freeReplyObject. */
redisReply *zc_redis_command(zc_redis_connection *connection, int argc, const char **argv,
                             const size_t *lengths);

/* The server's name for messages (its URL without the password). */
const char *zc_redis_connection_name(const zc_redis_connection *connection);

#endif
