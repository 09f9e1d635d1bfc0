/* TLS (OpenSSL's libssl) on a socket its caller connected and waits on: the
 * caller keeps the descriptor, the deadlines and every poll(); these calls
 * never block, they say which event to wait for instead. The server's
 * certificate is checked against the system's CAs or a given CA file, and
 * its name (or IP address) against the host the caller dialled; a failed
 * check fails the handshake, with OpenSSL's words for why. Not installed:
 * redis_connection.c's transport. */
#ifndef ZECACHE_TLS_SOCKET_H
#define ZECACHE_TLS_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

/* What the connections of one server share: CAs, client certificate. */
typedef struct zc_tls_context zc_tls_context;
typedef struct zc_tls_socket zc_tls_socket;

typedef struct zc_tls_settings {
    const char *ca_file;   /* "": the system's CAs (SSL_CERT_FILE, SSL_CERT_DIR) */
    const char *cert_file; /* "": no client certificate */
    const char *key_file;  /* "": the key is in cert_file */
} zc_tls_settings;

/* NULL with why when a file cannot be loaded (or out of memory). */
zc_tls_context *zc_tls_context_new(const zc_tls_settings *settings, char *why, size_t why_size);
void zc_tls_context_free(zc_tls_context *context);

/* A client session on fd (connected, non-blocking, still the caller's to
 * close) whose certificate must name host. NULL with why. */
zc_tls_socket *zc_tls_socket_new(zc_tls_context *context, int fd, const char *host, char *why,
                                 size_t why_size);
/* Frees the session without a word on the socket: it may be a copy a child
 * of fork() holds, whose parent still talks through it. */
void zc_tls_socket_free(zc_tls_socket *socket);

/* The results of the steps below: done, wait for *events on the socket and
 * call again, or failed (why says what, e.g. "certificate verify failed:
 * hostname mismatch"). */
typedef enum zc_tls_step { ZC_TLS_DONE, ZC_TLS_WAIT, ZC_TLS_FAILED } zc_tls_step;

zc_tls_step zc_tls_handshake(zc_tls_socket *socket, short *events, char *why, size_t why_size);

/* As read() and write() on a non-blocking socket: bytes moved (> 0), 0 when
 * the server closed the connection (read), -1 with *events set to wait
 * for, or with *events 0 and why when failed. */
ssize_t zc_tls_read(zc_tls_socket *socket, void *buffer, size_t size, short *events, char *why,
                    size_t why_size);
ssize_t zc_tls_write(zc_tls_socket *socket, const void *buffer, size_t size, short *events,
                     char *why, size_t why_size);

#endif
