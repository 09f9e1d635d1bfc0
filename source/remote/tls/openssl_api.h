/* OpenSSL's libssl.so.3, and the libcrypto.so.3 it needs, loaded at the
 * first TLS connection of a process, never before: linked in (even
 * statically), libssl and the parts of libcrypto it brings made the layer
 * 3.8 times larger (1.8 to 6.9 MB, 4,400 to 23,000 relocations) and its
 * dlopen 7 to 15 ms slower in every process, TLS or not. The functions are
 * called through this table only: a direct call would bind to the static
 * libcrypto the rest of zecache uses (SHA-256), another copy with another
 * error queue. Not installed: tls_socket.c's. */
#ifndef ZECACHE_OPENSSL_API_H
#define ZECACHE_OPENSSL_API_H

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stddef.h>

#define ZC_OPENSSL_FUNCTIONS(X)                                                                    \
    X(TLS_client_method)                                                                           \
    X(SSL_CTX_new)                                                                                 \
    X(SSL_CTX_free)                                                                                \
    X(SSL_CTX_ctrl)                                                                                \
    X(SSL_CTX_set_options)                                                                         \
    X(SSL_CTX_set_verify)                                                                          \
    X(SSL_CTX_set_default_passwd_cb)                                                               \
    X(SSL_CTX_load_verify_locations)                                                               \
    X(SSL_CTX_load_verify_file)                                                                    \
    X(SSL_CTX_load_verify_dir)                                                                     \
    X(SSL_CTX_use_certificate_chain_file)                                                          \
    X(SSL_CTX_use_PrivateKey_file)                                                                 \
    X(SSL_CTX_check_private_key)                                                                   \
    X(SSL_new)                                                                                     \
    X(SSL_free)                                                                                    \
    X(SSL_ctrl)                                                                                    \
    X(SSL_set_fd)                                                                                  \
    X(SSL_get_fd)                                                                                  \
    X(SSL_get0_param)                                                                              \
    X(SSL_set_hostflags)                                                                           \
    X(SSL_set1_host)                                                                               \
    X(SSL_set_connect_state)                                                                       \
    X(SSL_do_handshake)                                                                            \
    X(SSL_read)                                                                                    \
    X(SSL_write)                                                                                   \
    X(SSL_peek)                                                                                    \
    X(SSL_pending)                                                                                 \
    X(SSL_get_error)                                                                               \
    X(SSL_get_verify_result)                                                                       \
    X(X509_VERIFY_PARAM_set1_ip_asc)                                                               \
    X(X509_verify_cert_error_string)                                                               \
    X(X509_get_default_cert_file_env)                                                              \
    X(X509_get_default_cert_dir_env)                                                               \
    X(X509_get_default_cert_dir)                                                                   \
    X(ERR_peek_error)                                                                              \
    X(ERR_peek_last_error)                                                                         \
    X(ERR_reason_error_string)                                                                     \
    X(ERR_error_string_n)                                                                          \
    X(ERR_clear_error)

typedef struct zc_openssl {
#define ZC_OPENSSL_POINTER(name) __typeof__(name) *name;
    ZC_OPENSSL_FUNCTIONS(ZC_OPENSSL_POINTER)
#undef ZC_OPENSSL_POINTER
} zc_openssl;

/* Loads the functions, once per process (later calls cost nothing); NULL
 * with why when libssl.so.3 cannot be loaded. */
const zc_openssl *zc_openssl_load(char *why, size_t why_size);

/* The table zc_openssl_load filled: for code that runs only after it
 * succeeded, OSSL(SSL_new)(ctx) calls SSL_new. */
extern zc_openssl zc_openssl_api;
#define OSSL(name) (zc_openssl_api.name)

#endif
