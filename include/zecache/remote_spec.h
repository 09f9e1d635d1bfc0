/* NEO_CACHE_REMOTE: the remote storages, in ccache's syntax. A space-separated
 * list of storages, each a URL optionally followed by |attribute parts:
 *
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]     (port 6379, db 0 by default)
 *   rediss://...                                   the same over TLS
 *   redis+unix:///PATH/TO/SOCKET[?db=N]
 *   file:///PATH                                   (the disk tier's layout and format)
 *   http://HOST[:PORT][/PATH], https://...         (port 80 / 443; the disk tier's
 *                                                  layout and format under PATH)
 *
 *   |read-only            never written to
 *   |connect-timeout=MS   default ZC_REMOTE_DEFAULT_CONNECT_TIMEOUT_MS
 *   |timeout=MS           per command, default ZC_REMOTE_DEFAULT_TIMEOUT_MS
 *   |shards=A,B,...       Redis only: one server per name, the URL's '*'
 *                         replaced by it; keys spread by rendezvous hashing
 *   |password-file=PATH   Redis: the password (AUTH), from a file others cannot
 *                         read, one trailing newline dropped; the URL then
 *                         gives no password, only the user, if any
 *                         (redis://USER@HOST|password-file=PATH)
 *   |bearer-token-file=PATH  HTTP only: "Authorization: Bearer <the file's
 *                         text>", refused when others can read the file
 *   |ca-file=PATH         rediss:// and https://: the CA certificates (PEM)
 *                         the server's certificate is checked against,
 *                         instead of the system's
 *   |cert-file=PATH       rediss://: a client certificate (PEM, with its chain)
 *   |key-file=PATH        ... and its key, unencrypted, in a file others
 *                         cannot read (default: in cert-file)
 *   |cluster              Redis Cluster: the URL names a seed node, the
 *                         cluster's slots are discovered from it
 *   |seeds=H:P,H:P,...    cluster only: more seed nodes, with the URL's
 *                         user, password and TLS files
 *   |node-hosts=H,H,...   cluster only: the hosts (names or addresses, as the
 *                         cluster's map and redirections name them) nodes
 *                         may be at beside the seeds' hosts; a node
 *                         elsewhere is never contacted (default: any host
 *                         the cluster names)
 *
 * Files are named by absolute paths.
 *
 * Over TLS, the server's certificate must verify and name the URL's host
 * (or IP address). A storage that does not parse is left out with a
 * message; the others are used. */
#ifndef ZECACHE_REMOTE_SPEC_H
#define ZECACHE_REMOTE_SPEC_H

#include <limits.h>
#include <linux/limits.h> /* PATH_MAX without _GNU_SOURCE */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/status.h"

#define ZC_REMOTE_DEFAULT_CONNECT_TIMEOUT_MS 100
#define ZC_REMOTE_DEFAULT_TIMEOUT_MS 500
#define ZC_REMOTE_MAX_TIMEOUT_MS 600000
#define ZC_REMOTE_DEFAULT_REDIS_PORT 6379
#define ZC_REMOTE_MAX_STORAGES 16
#define ZC_REMOTE_MAX_SHARDS 64
#define ZC_REMOTE_DEFAULT_HTTP_PORT 80
#define ZC_REMOTE_DEFAULT_HTTPS_PORT 443
#define ZC_REMOTE_MAX_BEARER_TOKEN 8192

typedef enum zc_remote_kind {
    ZC_REMOTE_REDIS_TCP,
    ZC_REMOTE_REDIS_UNIX,
    ZC_REMOTE_FILE,
    ZC_REMOTE_HTTP,  /* host, port, and path: the URL's path ("" or "/..." without a */
    ZC_REMOTE_HTTPS, /* trailing '/'), still percent-encoded */
} zc_remote_kind;

/* The longest path of a file attribute (TLS files, password-file,
 * bearer-token-file): each server (up to ZC_REMOTE_MAX_SHARDS of them a
 * storage) and each connection keeps a copy of the three TLS files. */
#define ZC_REMOTE_TLS_PATH_MAX 1024

/* rediss:// and https://: TLS, and the files it takes ("" for none). */
typedef struct zc_remote_tls {
    bool enabled;
    char ca_file[ZC_REMOTE_TLS_PATH_MAX];
    char cert_file[ZC_REMOTE_TLS_PATH_MAX];
    char key_file[ZC_REMOTE_TLS_PATH_MAX];
} zc_remote_tls;

/* One Redis server (one shard), or the directory of a file storage. */
typedef struct zc_remote_server {
    char host[256];      /* TCP; an IPv6 address without its brackets */
    unsigned port;       /* TCP */
    char path[PATH_MAX]; /* the Unix socket, or the file storage's directory */
    unsigned db;
    char user[128];     /* "" for none (AUTH with the password alone) */
    char password[256]; /* "" for no AUTH */
    char name[320];     /* for messages: the URL without the password */
    zc_remote_tls tls;
} zc_remote_server;

typedef struct zc_remote_spec {
    zc_remote_kind kind;
    bool read_only;
    uint32_t connect_timeout_ms;
    uint32_t timeout_ms;
    size_t server_count; /* 1, or the number of shards, or of a cluster's seeds */
    bool cluster;        /* servers are seeds of a Redis Cluster */
    /* Cluster: node-hosts= as given, "," separated; "" for any host. */
    char node_hosts[1024];
    zc_remote_server *servers;
    char name[512]; /* the storage as written, password masked, for messages */
    /* HTTP: the bearer-token-file's text (visible ASCII), malloc'd; NULL
     * for none. Never shown in a message. */
    char *bearer_token;
    /* Not parsed: set by the remote tier before it opens the storage. "" for
     * nodes without a secret; with one, "s<16 hex>:", public and derived
     * from the secret (zc_remote_key_namespace), so that nodes with different
     * secrets keep their entries apart instead of replacing each other's. */
    char key_namespace[24];
    /* Not parsed either: the secret the remote tier checks values with
     * (NULL: none), for a storage that checks a value too large to hold
     * before reading it (storage_redis.c). Outlives the storage. */
    const struct zc_remote_secret *secret;
} zc_remote_spec;

/* Parses one storage (a URL with its |attributes). ZC_OK, or
 * ZC_ERR_INVALID_ARG with the reason. Free with zc_remote_spec_free. */
zc_status zc_remote_spec_parse(const char *text, zc_remote_spec *spec, char *reason,
                               size_t reason_size);
void zc_remote_spec_free(zc_remote_spec *spec);

/* Parses the whole list: the storages that parse go to specs (at most
 * ZC_REMOTE_MAX_STORAGES), each one that does not is reported through
 * complain (NULL: not reported) and left out. Free with zc_remote_specs_free. */
typedef void (*zc_remote_complain_fn)(void *context, const char *storage, const char *reason);
zc_status zc_remote_specs_parse(const char *text, zc_remote_spec **specs, size_t *count,
                                zc_remote_complain_fn complain, void *context);
void zc_remote_specs_free(zc_remote_spec *specs, size_t count);

/* A cluster node found at host:port: like's user, password and the rest,
 * named for messages as like is. */
void zc_remote_server_at(const zc_remote_server *like, const char *host, unsigned port,
                         zc_remote_server *out);

#endif
