/* Which CA certificates a TLS server is verified with, one rule for
 * rediss:// (tls_socket.c) and https:// (http_client.c): ca-file alone when
 * given (the system's CAs are then not trusted: a pin to a private CA);
 * else the system's as OpenSSL finds them, SSL_CERT_FILE when set and the
 * directories of SSL_CERT_DIR (':'-separated) or OpenSSL's default
 * (/usr/lib/ssl/certs, Debian's /etc/ssl/certs). Without any CA (no
 * ca-certificates installed) it says so, rather than leaving the
 * handshake to fail with a reason that names no cause. Not installed. */
#ifndef ZECACHE_TRUST_STORE_H
#define ZECACHE_TRUST_STORE_H

#include <limits.h>
#include <stddef.h>

#include "zecache/status.h"

typedef struct zc_trust_store {
    char file[PATH_MAX];   /* "": none */
    const char *file_name; /* what named file, for messages: "ca-file", "SSL_CERT_FILE" */
    char dir[PATH_MAX];    /* "": none; c_rehash's links, one directory or a list */
} zc_trust_store;

/* The store for ca_file ("": the system's). Loads libssl (openssl_api.h)
 * for its defaults. ZC_ERR_INVALID_ARG with why when ca_file or
 * SSL_CERT_FILE cannot be read, or the system has no CA certificate;
 * ZC_ERR_DISABLED when libssl cannot be loaded. */
zc_status zc_trust_store_choose(const char *ca_file, zc_trust_store *store, char *why,
                                size_t why_size);

#endif
