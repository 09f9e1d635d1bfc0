/* HTTP requests to one server through libcurl (curl_api.h), each bounded in
 * time (connect-timeout for lookup, connect and TLS handshake; the whole
 * request within connect-timeout + timeout, whatever the server does) and
 * in memory (a body larger than the caller's limit is refused as soon as
 * its size is announced or reached; one over ZC_REDIS_IN_MEMORY_MAX goes to
 * the caller's sink as it arrives, or is refused). TLS is verified against
 * trust_store.h's CAs, host name included, with the spec's client
 * certificate if it has one; the bearer token, when there is one, goes in
 * every request. Connections are kept
 * for the next request in a few idle handles, taken without waiting; a
 * child of fork() never uses (nor closes) its parent's. Not installed:
 * storage_http.c's transport. */
#ifndef ZECACHE_HTTP_CLIENT_H
#define ZECACHE_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../redis/redis_connection.h" /* zc_redis_sink, ZC_REDIS_IN_MEMORY_MAX */
#include "zecache/remote_spec.h"
#include "zecache/status.h"

typedef struct zc_http_client zc_http_client;

typedef enum zc_http_method {
    ZC_HTTP_GET,
    ZC_HTTP_HEAD,
    ZC_HTTP_PUT,
    ZC_HTTP_DELETE,
    ZC_HTTP_PROPFIND, /* Depth: 1, a listing */
} zc_http_method;

/* A listing's answer is streamed, whatever its size, up to this many bytes
 * (a million names), within connect-timeout + the larger of timeout and
 * ZC_HTTP_LISTING_MIN_TIMEOUT_MS: one request lists what Redis's SCAN
 * takes thousands of commands for. */
#define ZC_HTTP_MAX_LISTING ((uint64_t)1 << 30)
#define ZC_HTTP_LISTING_MIN_TIMEOUT_MS 60000

/* Where a 200's body goes (GET): bytes (malloc'd, the caller frees it; NULL
 * for an empty body) or, larger than ZC_REDIS_IN_MEMORY_MAX with its length
 * announced, sink (NULL: refused); streamed says which. A 207's body
 * (PROPFIND) goes to sink piece by piece, length UINT64_MAX when not
 * announced. */
typedef struct zc_http_body {
    const zc_redis_sink *sink;
    uint8_t *bytes;
    size_t size;
    bool streamed;
} zc_http_body;

/* NULL with the reason when libcurl cannot be loaded or memory is short.
 * max_body: the largest body taken. */
zc_http_client *zc_http_client_new(const zc_remote_spec *spec, uint64_t max_body, char *reason,
                                   size_t reason_size);
void zc_http_client_free(zc_http_client *client);

/* method on the spec's URL followed by "/" and path, with upload's bytes
 * for PUT, and body for GET's (NULL: discarded). ZC_OK when an answer came:
 * *status is its HTTP status (a body refused by the sink still fails).
 * ZC_ERR_IO when none did in time, or the body was refused, with the reason
 * (libcurl's words: "SSL certificate problem: unable to get local issuer
 * certificate", "Operation timed out after ..."). */
zc_status zc_http_request(zc_http_client *client, zc_http_method method, const char *path,
                          const uint8_t *upload, size_t upload_size, zc_http_body *body,
                          long *status, char *reason, size_t reason_size);

#endif
