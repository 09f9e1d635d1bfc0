/* See tls_socket.h. OpenSSL is called through openssl_api.h's table,
 * loaded by the first context. Its error queue is per thread and shared
 * with every other user of the library in the thread: each call starts it
 * empty (SSL_get_error reads it) and leaves it empty. */
#include "tls_socket.h"

#include "openssl_api.h"
#include "trust_store.h"
#include "zecache/remote_spec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct zc_tls_context {
    SSL_CTX *ctx;
};

struct zc_tls_socket {
    SSL *ssl;
};

/* OpenSSL's reason for the first error in this thread's queue (the cause;
 * the later ones are its consequences), which is emptied. */
static void explain_queue(const char *what, char *why, size_t why_size)
{
    unsigned long error = OSSL(ERR_peek_error)();
    const char *reason = error != 0 ? OSSL(ERR_reason_error_string)(error) : NULL;
    char code[64];
    if (reason == NULL) {
        OSSL(ERR_error_string_n)(error, code, sizeof code);
        reason = error != 0 ? code : "unknown error";
    }
    snprintf(why, why_size, "%s: %s", what, reason);
    OSSL(ERR_clear_error)();
}

/* A key with a passphrase is refused, never asked for on a terminal. */
static int no_passphrase(char *buffer, int size, int writing, void *context)
{
    (void)buffer, (void)size, (void)writing, (void)context;
    return 0;
}

/* A file OpenSSL cannot open says only "system lib": the reason is said
 * here first. */
static bool readable(const char *name, const char *path, char *why, size_t why_size)
{
    if (path[0] == '\0' || access(path, R_OK) == 0)
        return true;
    snprintf(why, why_size, "%s %s: %s", name, path, strerror(errno));
    return false;
}

/* The client certificate and its key; OpenSSL's own words for a key it
 * cannot read ("PEM lib") say little, so the failure is named here. */
static bool load_client_certificate(SSL_CTX *ctx, const zc_tls_settings *settings, char *why,
                                    size_t why_size)
{
    const char *key = settings->key_file[0] != '\0' ? settings->key_file : settings->cert_file;
    char what[ZC_REMOTE_TLS_PATH_MAX + 96];
    snprintf(what, sizeof what, "cert-file %s", settings->cert_file);
    bool ok = OSSL(SSL_CTX_use_certificate_chain_file)(ctx, settings->cert_file) == 1;
    if (ok) {
        snprintf(what, sizeof what, "key-file %s: no unencrypted private key in it", key);
        ok = OSSL(SSL_CTX_use_PrivateKey_file)(ctx, key, SSL_FILETYPE_PEM) == 1;
    }
    if (ok) {
        snprintf(what, sizeof what, "key-file %s: not the key of cert-file", key);
        ok = OSSL(SSL_CTX_check_private_key)(ctx) == 1;
    }
    if (!ok)
        explain_queue(what, why, why_size);
    return ok;
}

/* The CAs of trust_store.h's rule. The directory's certificates are looked
 * up lazily, issuer by issuer, rather than a file of them all parsed up
 * front, which costs 50 to 80 ms here. */
static bool load_trust(SSL_CTX *ctx, const char *ca_file, char *why, size_t why_size)
{
    zc_trust_store store;
    if (zc_trust_store_choose(ca_file, &store, why, why_size) != ZC_OK)
        return false;
    char what[PATH_MAX + 32];
    bool ok = true;
    if (store.file[0] != '\0') {
        snprintf(what, sizeof what, "%s %s", store.file_name, store.file);
        ok = OSSL(SSL_CTX_load_verify_file)(ctx, store.file) == 1;
    }
    if (ok && store.dir[0] != '\0') {
        snprintf(what, sizeof what, "the CA certificates of %s", store.dir);
        ok = OSSL(SSL_CTX_load_verify_dir)(ctx, store.dir) == 1;
    }
    if (!ok)
        explain_queue(what, why, why_size);
    return ok;
}

static bool load_files(SSL_CTX *ctx, const zc_tls_settings *settings, char *why, size_t why_size)
{
    if (!readable("cert-file", settings->cert_file, why, why_size) ||
        !readable("key-file", settings->key_file, why, why_size) ||
        !load_trust(ctx, settings->ca_file, why, why_size))
        return false;
    return settings->cert_file[0] == '\0' || load_client_certificate(ctx, settings, why, why_size);
}

zc_tls_context *zc_tls_context_new(const zc_tls_settings *settings, char *why, size_t why_size)
{
    if (zc_openssl_load(why, why_size) == NULL)
        return NULL;
    OSSL(ERR_clear_error)();
    zc_tls_context *context = calloc(1, sizeof *context);
    SSL_CTX *ctx = context != NULL ? OSSL(SSL_CTX_new)(OSSL(TLS_client_method)()) : NULL;
    if (ctx == NULL) {
        free(context);
        explain_queue("TLS", why, why_size);
        return NULL;
    }
    OSSL(SSL_CTX_ctrl)(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
    OSSL(SSL_CTX_set_verify)(ctx, SSL_VERIFY_PEER, NULL);
    OSSL(SSL_CTX_set_default_passwd_cb)(ctx, no_passphrase);
    /* Writes resume where a partial one stopped; a server's close without
     * close_notify reads as the end (RESP itself shows a reply cut short). */
    long mode = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
    OSSL(SSL_CTX_ctrl)(ctx, SSL_CTRL_MODE, mode, NULL);
    OSSL(SSL_CTX_set_options)(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (!load_files(ctx, settings, why, why_size)) {
        OSSL(SSL_CTX_free)(ctx);
        free(context);
        return NULL;
    }
    context->ctx = ctx;
    return context;
}

void zc_tls_context_free(zc_tls_context *context)
{
    if (context == NULL)
        return;
    OSSL(SSL_CTX_free)(context->ctx);
    free(context);
}

static bool is_ip_address(const char *host)
{
    unsigned char address[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1;
}

/* The name the certificate must hold: an IP address against its IP
 * entries, a name against its DNS names (and sent as SNI). */
static bool expect_host(SSL *ssl, const char *host)
{
    if (is_ip_address(host))
        return OSSL(X509_VERIFY_PARAM_set1_ip_asc)(OSSL(SSL_get0_param)(ssl), host) == 1;
    OSSL(SSL_set_hostflags)(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return OSSL(SSL_ctrl)(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                          (void *)host) == 1 &&
           OSSL(SSL_set1_host)(ssl, host) == 1;
}

zc_tls_socket *zc_tls_socket_new(zc_tls_context *context, int fd, const char *host, char *why,
                                 size_t why_size)
{
    OSSL(ERR_clear_error)();
    zc_tls_socket *socket = calloc(1, sizeof *socket);
    SSL *ssl = socket != NULL ? OSSL(SSL_new)(context->ctx) : NULL;
    if (ssl == NULL || OSSL(SSL_set_fd)(ssl, fd) != 1 || !expect_host(ssl, host)) {
        OSSL(SSL_free)(ssl);
        free(socket);
        explain_queue("TLS", why, why_size);
        return NULL;
    }
    OSSL(SSL_set_connect_state)(ssl);
    socket->ssl = ssl;
    return socket;
}

void zc_tls_socket_free(zc_tls_socket *socket)
{
    if (socket == NULL)
        return;
    OSSL(SSL_free)(socket->ssl); /* no SSL_shutdown: nothing is written */
    free(socket);
}

/* What a call that returned result <= 0 means: wait for *events, the end
 * of the stream (ZC_TLS_DONE), or a failure explained in why. */
static zc_tls_step classify(SSL *ssl, int result, const char *what, short *events, char *why,
                            size_t why_size)
{
    int saved_errno = errno;
    *events = 0;
    switch (OSSL(SSL_get_error)(ssl, result)) {
    case SSL_ERROR_WANT_READ:
        *events = POLLIN;
        return ZC_TLS_WAIT;
    case SSL_ERROR_WANT_WRITE:
        *events = POLLOUT;
        return ZC_TLS_WAIT;
    case SSL_ERROR_ZERO_RETURN:
        OSSL(ERR_clear_error)();
        return ZC_TLS_DONE;
    case SSL_ERROR_SYSCALL:
        if (OSSL(ERR_peek_error)() == 0) {
            snprintf(why, why_size, "%s: %s", what,
                     saved_errno != 0 ? strerror(saved_errno) : "the server closed the connection");
            return ZC_TLS_FAILED;
        }
        break;
    default:
        break;
    }
    unsigned long error = OSSL(ERR_peek_last_error)();
    long verified = OSSL(SSL_get_verify_result)(ssl);
    if (ERR_GET_REASON(error) == SSL_R_CERTIFICATE_VERIFY_FAILED && verified != X509_V_OK) {
        snprintf(why, why_size, "%s: certificate verify failed: %s", what,
                 OSSL(X509_verify_cert_error_string)(verified));
        OSSL(ERR_clear_error)();
        return ZC_TLS_FAILED;
    }
    explain_queue(what, why, why_size);
    return ZC_TLS_FAILED;
}

zc_tls_step zc_tls_handshake(zc_tls_socket *socket, short *events, char *why, size_t why_size)
{
    OSSL(ERR_clear_error)();
    errno = 0;
    int result = OSSL(SSL_do_handshake)(socket->ssl);
    if (result == 1)
        return ZC_TLS_DONE;
    zc_tls_step step = classify(socket->ssl, result, "TLS handshake", events, why, why_size);
    if (step == ZC_TLS_DONE) { /* closed during the handshake */
        snprintf(why, why_size, "TLS handshake: the server closed the connection");
        return ZC_TLS_FAILED;
    }
    return step;
}

static ssize_t finish_io(SSL *ssl, int result, const char *what, short *events, char *why,
                         size_t why_size)
{
    if (result > 0)
        return result;
    zc_tls_step step = classify(ssl, result, what, events, why, why_size);
    return step == ZC_TLS_DONE ? 0 : -1;
}

ssize_t zc_tls_read(zc_tls_socket *socket, void *buffer, size_t size, short *events, char *why,
                    size_t why_size)
{
    OSSL(ERR_clear_error)();
    errno = 0;
    int result = OSSL(SSL_read)(socket->ssl, buffer, size < INT_MAX ? (int)size : INT_MAX);
    return finish_io(socket->ssl, result, "receive", events, why, why_size);
}

/* Whether the server has already said why it ends the session (an alert,
 * e.g. "tlsv13 alert certificate required": in TLS 1.3 a refused client
 * certificate is told after the client's handshake is done), which a write
 * would hide behind "Connection reset by peer". Nothing is consumed. */
static bool refused_already(SSL *ssl, char *why, size_t why_size)
{
    struct pollfd ready = {.fd = OSSL(SSL_get_fd)(ssl), .events = POLLIN};
    if (OSSL(SSL_pending)(ssl) > 0 || poll(&ready, 1, 0) != 1)
        return false;
    OSSL(ERR_clear_error)();
    char byte;
    int result = OSSL(SSL_peek)(ssl, &byte, 1);
    short events = 0;
    return result <= 0 && classify(ssl, result, "TLS", &events, why, why_size) == ZC_TLS_FAILED;
}

ssize_t zc_tls_write(zc_tls_socket *socket, const void *buffer, size_t size, short *events,
                     char *why, size_t why_size)
{
    *events = 0;
    if (refused_already(socket->ssl, why, why_size))
        return -1;
    OSSL(ERR_clear_error)();
    errno = 0;
    int result = OSSL(SSL_write)(socket->ssl, buffer, size < INT_MAX ? (int)size : INT_MAX);
    ssize_t written = finish_io(socket->ssl, result, "send", events, why, why_size);
    if (written == 0) { /* no write "ends" the stream */
        snprintf(why, why_size, "send: the server closed the connection");
        return -1;
    }
    return written;
}
