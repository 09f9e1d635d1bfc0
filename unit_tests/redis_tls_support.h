/* A private redis-server behind TLS, with certificates the test makes with
 * the openssl command in a scratch directory, and README's ACL user whose
 * password is in a file only its owner reads. Header-only, as the other
 * support headers.
 *
 * Certificates (PEM, EC P-256 keys), in the directory:
 *   ca           the CA the nodes are told to trust (ca-file)
 *   other-ca     another CA
 *   good         server: localhost and 127.0.0.1, signed by ca
 *   other-name   server: elsewhere.example and 10.255.255.1, signed by ca
 *   foreign      server: localhost and 127.0.0.1, signed by other-ca
 *   client       a node's client certificate, signed by ca */
#ifndef ZC_REDIS_TLS_SUPPORT_H
#define ZC_REDIS_TLS_SUPPORT_H

#include <stdarg.h>
#include <sys/stat.h>

#include "redis_test_support.h"

#define T_TLS_USER "zecache"
#define T_TLS_PASSWORD "node-password"

typedef struct t_tls_redis {
    t_redis redis;     /* plain text on its Unix socket, for the test's own commands */
    unsigned tls_port; /* TLS on 127.0.0.1 */
    char certs[128];   /* the certificates' directory */
    char password_file[192];
} t_tls_redis;

/* Runs a shell command in dir (printf-style); asserts it succeeded. */
__attribute__((format(printf, 2, 3))) static inline void t_tls_run(const char *dir,
                                                                   const char *format, ...)
{
    char command[2048];
    int used = snprintf(command, sizeof command, "cd '%s' && { ", dir);
    va_list args;
    va_start(args, format);
    vsnprintf(command + used, sizeof command - (size_t)used, format, args);
    va_end(args);
    size_t length = strlen(command);
    snprintf(command + length, sizeof command - length, "; } >/dev/null 2>&1");
    cr_assert_eq(system(command), 0, "failed: %s", command);
}

static inline void t_tls_make_ca(const char *dir, const char *name)
{
    t_tls_run(dir,
              "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
              "-keyout %s.key -out %s.crt -days 2 -subj '/CN=zecache test %s'",
              name, name, name);
}

/* A stand-in for the system's CAs at dir (made): one CA, linked as
 * c_rehash links /etc/ssl/certs, that signed nothing the tests serve. */
static inline void t_tls_make_unrelated_cas(const char *dir)
{
    cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
    t_tls_make_ca(dir, "unrelated-ca");
    t_tls_run(dir, "openssl rehash .");
}

/* A leaf certificate name.crt (key name.key, mode 0600) signed by ca, for
 * the alternative names given (e.g. "DNS:localhost,IP:127.0.0.1"). */
static inline void t_tls_make_leaf(const char *dir, const char *name, const char *ca,
                                   const char *alt_names, const char *usage)
{
    t_tls_run(dir,
              "printf 'basicConstraints=CA:FALSE\\nsubjectAltName=%s\\nextendedKeyUsage=%s\\n' "
              "> %s.ext",
              alt_names, usage, name);
    t_tls_run(dir,
              "openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
              "-keyout %s.key -out %s.csr -subj '/CN=%s'",
              name, name, name);
    t_tls_run(dir,
              "openssl x509 -req -in %s.csr -CA %s.crt -CAkey %s.key -CAcreateserial -days 2 "
              "-out %s.crt -extfile %s.ext && chmod 600 %s.key",
              name, ca, ca, name, name, name);
}

static inline void t_tls_make_certs(char *dir, size_t size)
{
    snprintf(dir, size, "/tmp/zc_tls_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    t_tls_make_ca(dir, "ca");
    t_tls_make_ca(dir, "other-ca");
    t_tls_make_leaf(dir, "good", "ca", "DNS:localhost,IP:127.0.0.1", "serverAuth");
    t_tls_make_leaf(dir, "other-name", "ca", "DNS:elsewhere.example,IP:10.255.255.1", "serverAuth");
    t_tls_make_leaf(dir, "foreign", "other-ca", "DNS:localhost,IP:127.0.0.1", "serverAuth");
    t_tls_make_leaf(dir, "client", "ca", "DNS:node.example", "clientAuth");
}

/* A file of the certificates' directory: dir/name. */
static inline const char *t_tls_file(const t_tls_redis *server, const char *name)
{
    static char paths[8][256];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, sizeof paths[0], "%s/%s", server->certs, name);
    return path;
}

/* (Re)starts the server on its TLS port with the certificate named cert,
 * asking nodes for a client certificate when auth_clients. */
static inline void t_tls_redis_launch(t_tls_redis *server, const char *cert, bool auth_clients)
{
    char port[16], cert_file[256], key_file[256], ca_file[256];
    snprintf(port, sizeof port, "%u", server->tls_port);
    snprintf(cert_file, sizeof cert_file, "%s/%s.crt", server->certs, cert);
    snprintf(key_file, sizeof key_file, "%s/%s.key", server->certs, cert);
    snprintf(ca_file, sizeof ca_file, "%s/ca.crt", server->certs);
    const char *extra[] = {"--tls-port",
                           port,
                           "--tls-cert-file",
                           cert_file,
                           "--tls-key-file",
                           key_file,
                           "--tls-ca-cert-file",
                           ca_file,
                           "--tls-auth-clients",
                           auth_clients ? "yes" : "no",
                           NULL};
    if (server->redis.pid > 0)
        t_redis_restart(&server->redis, extra);
    else
        t_redis_launch(&server->redis, extra);
    /* README's ACL user: its key prefix and the commands zecache sends. */
    redisReply *reply =
        t_redis_command(&server->redis, 16,
                        (const char *[]){"ACL", "SETUSER", T_TLS_USER, "on", ">" T_TLS_PASSWORD,
                                         "~zecache:*", "resetchannels", "-@all", "+get", "+set",
                                         "+del", "+exists", "+eval", "+select", "+ping", "+scan"},
                        NULL);
    cr_assert_eq(reply->type, REDIS_REPLY_STATUS, "%s", reply->str);
    freeReplyObject(reply);
}

/* Certificates, then the server with the good one; the password file. */
static inline void t_tls_redis_start(t_tls_redis *server, const char *cert, bool auth_clients)
{
    memset(server, 0, sizeof *server);
    t_tls_make_certs(server->certs, sizeof server->certs);
    snprintf(server->redis.dir, sizeof server->redis.dir, "/tmp/zc_redis_XXXXXX");
    cr_assert_not_null(mkdtemp(server->redis.dir));
    snprintf(server->redis.socket, sizeof server->redis.socket, "%s/redis.sock", server->redis.dir);
    server->redis.port = t_free_tcp_port();
    server->tls_port = t_free_tcp_port();
    snprintf(server->password_file, sizeof server->password_file, "%s/password", server->certs);
    FILE *file = fopen(server->password_file, "w");
    cr_assert_not_null(file);
    fputs(T_TLS_PASSWORD "\n", file);
    fclose(file);
    cr_assert_eq(chmod(server->password_file, 0600), 0);
    t_tls_redis_launch(server, cert, auth_clients);
}

static inline void t_tls_redis_stop(t_tls_redis *server)
{
    t_redis_stop(&server->redis);
    if (server->certs[0] != '\0')
        t_remove_tree(server->certs);
}

/* NEO_CACHE_REMOTE for the server: rediss://HOST:PORT with the user, the
 * password file and the attributes given (e.g. "|ca-file=..."). */
static inline void t_tls_url(const t_tls_redis *server, const char *host, const char *attributes,
                             char *url, size_t size)
{
    snprintf(url, size, "rediss://" T_TLS_USER "@%s:%u|password-file=%s%s", host, server->tls_port,
             server->password_file, attributes);
}

static inline long long t_redis_dbsize(const t_redis *redis)
{
    redisReply *reply = t_redis_command(redis, 1, (const char *[]){"DBSIZE"}, NULL);
    long long size = reply->integer;
    freeReplyObject(reply);
    return size;
}

#endif
