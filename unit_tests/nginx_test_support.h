/* A private nginx for a test, as a site runs one for a shared cache: its
 * WebDAV module taking PUT and DELETE (create_full_put_path) and the dav-ext
 * module's PROPFIND (but under /nodav/), on a free port
 * of 127.0.0.1 over http and another over https (also on 127.0.0.2, whose
 * address the certificate does not name), with certificates the test makes
 * with openssl: a CA and a server certificate it signed for localhost and
 * 127.0.0.1, and another CA that signed nothing of it; on a third port,
 * https that asks for a client certificate (the CA signed one). Under /private/ a
 * bearer token is required. Started in a scratch directory (its own
 * configuration, prefix, logs and temporary files) in the foreground with
 * no master process, so its pid is the server, and stopped by that pid.
 * Without an nginx binary the test is skipped, loudly. Header-only, as the
 * other support headers. */
#ifndef ZC_NGINX_TEST_SUPPORT_H
#define ZC_NGINX_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "redis_test_support.h" /* t_free_tcp_port, t_monotonic_ms */
#include "test_support.h"

#define T_NGINX_TOKEN "zc-test-token-7f3a9c0d5e1b"
/* Deadlines no loaded machine misses (a TLS handshake under ASan on two
 * busy cores takes longer than the default 100 ms): for the cases that
 * must not fail; the others set their own. */
#define T_NGINX_TIMEOUTS "|connect-timeout=5000|timeout=30000"

typedef struct t_nginx {
    char dir[128];
    char data[192];     /* the served root */
    char ca[192];       /* the CA that signed the server's certificate */
    char other_ca[192]; /* a CA that did not */
    char token_file[192];
    char client_cert[192], client_key[192];   /* signed by ca, key 0600 */
    unsigned port, tls_port, client_tls_port; /* the last asks for a client certificate */
    pid_t pid;
} t_nginx;

#define T_NGINX_DAV_EXT "/usr/lib/nginx/modules/ngx_http_dav_ext_module.so"

static inline bool t_nginx_available(void)
{
    return access("/usr/sbin/nginx", X_OK) == 0 && access(T_NGINX_DAV_EXT, R_OK) == 0;
}

/* Skips the test when nginx or its PROPFIND module is not installed (CI
 * installs them). */
static inline void t_nginx_require(void)
{
    if (!t_nginx_available()) {
        fprintf(stderr, "\n*** SKIPPED: /usr/sbin/nginx or " T_NGINX_DAV_EXT
                        " is not installed (apt-get install nginx-core "
                        "libnginx-mod-http-dav-ext); the HTTP storage is NOT tested ***\n\n");
        cr_skip_test("nginx is not installed");
    }
}

static inline void t_run(const char *command)
{
    cr_assert_eq(system(command), 0, "failed: %s", command);
}

/* The CA, the server's certificate for localhost and 127.0.0.1, and another
 * CA. EC keys: made in milliseconds. */
static inline void t_nginx_make_certificates(const t_nginx *nginx)
{
    char command[2048];
    snprintf(command, sizeof command,
             "cd %s && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.cnf && "
             "for ca in ca other_ca; do openssl req -x509 -newkey ec -pkeyopt "
             "ec_paramgen_curve:prime256v1 -nodes -keyout $ca.key -out $ca.pem -days 2 "
             "-subj /CN=zecache-test-$ca 2>/dev/null || exit 1; done && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null && "
             "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out server.pem -days 2 -extfile san.cnf 2>/dev/null && "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout client.key -out client.csr -subj /CN=zecache-node 2>/dev/null && "
             "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out client.pem -days 2 2>/dev/null && chmod 600 client.key",
             nginx->dir);
    t_run(command);
}

static inline void t_nginx_write_config(const t_nginx *nginx)
{
    char path[256], config[6144];
    snprintf(path, sizeof path, "%s/nginx.conf", nginx->dir);
    const char *d = nginx->dir;
    snprintf(config, sizeof config,
             "load_module " T_NGINX_DAV_EXT
             ";\ndaemon off;\nmaster_process off;\nworker_processes 1;\npid %s/nginx.pid;\n"
             "error_log %s/error.log warn;\nevents { worker_connections 512; }\n"
             "http {\n  access_log off;\n  client_max_body_size 0;\n"
             "  client_body_temp_path %s/tmp/body;\n  proxy_temp_path %s/tmp/proxy;\n"
             "  fastcgi_temp_path %s/tmp/fastcgi;\n  uwsgi_temp_path %s/tmp/uwsgi;\n"
             "  scgi_temp_path %s/tmp/scgi;\n"
             "  server {\n    listen 127.0.0.1:%u;\n    listen 127.0.0.1:%u ssl;\n"
             "    listen 127.0.0.2:%u ssl;\n"
             "    ssl_certificate %s/server.pem;\n    ssl_certificate_key %s/server.key;\n"
             "    root %s;\n"
             "    location / {\n      dav_methods PUT DELETE; dav_ext_methods PROPFIND OPTIONS;\n"
             "      create_full_put_path on;\n    }\n"
             "    location /nodav/ { dav_methods PUT DELETE; create_full_put_path on; }\n"
             "    location /private/ {\n"
             "      if ($http_authorization != \"Bearer " T_NGINX_TOKEN "\") { return 401; }\n"
             "      dav_methods PUT DELETE; dav_ext_methods PROPFIND OPTIONS;\n"
             "      create_full_put_path on;\n    }\n"
             "    location /readonly/ { limit_except GET HEAD { deny all; } }\n"
             "  }\n"
             "  server {\n    listen 127.0.0.1:%u ssl;\n"
             "    ssl_certificate %s/server.pem;\n    ssl_certificate_key %s/server.key;\n"
             "    ssl_client_certificate %s/ca.pem;\n    ssl_verify_client on;\n"
             "    root %s;\n"
             "    location / { dav_methods PUT DELETE; create_full_put_path on; }\n"
             "  }\n}\n",
             d, d, d, d, d, d, d, nginx->port, nginx->tls_port, nginx->tls_port, d, d, nginx->data,
             nginx->client_tls_port, d, d, d, nginx->data);
    t_write_file(path, config, strlen(config));
}

static inline bool t_nginx_answers(const t_nginx *nginx)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(nginx->port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&address, sizeof address) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static inline void t_nginx_launch(t_nginx *nginx)
{
    char config[256], errors[256];
    snprintf(config, sizeof config, "%s/nginx.conf", nginx->dir);
    snprintf(errors, sizeof errors, "%s/error.log", nginx->dir);
    nginx->pid = fork();
    cr_assert(nginx->pid >= 0);
    if (nginx->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execl("/usr/sbin/nginx", "nginx", "-p", nginx->dir, "-c", config, "-e", errors,
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500 && !t_nginx_answers(nginx); i++) {
        int status;
        cr_assert_eq(waitpid(nginx->pid, &status, WNOHANG), 0, "nginx exited early (see %s)",
                     errors);
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    }
    cr_assert(t_nginx_answers(nginx), "nginx did not come up");
}

/* A new scratch directory, certificates, token file, configuration; then
 * nginx, waited for until it answers. */
static inline void t_nginx_start(t_nginx *nginx)
{
    t_nginx_require();
    memset(nginx, 0, sizeof *nginx);
    snprintf(nginx->dir, sizeof nginx->dir, "/tmp/zc_nginx_XXXXXX");
    cr_assert_not_null(mkdtemp(nginx->dir));
    snprintf(nginx->data, sizeof nginx->data, "%s/data", nginx->dir);
    snprintf(nginx->ca, sizeof nginx->ca, "%s/ca.pem", nginx->dir);
    snprintf(nginx->other_ca, sizeof nginx->other_ca, "%s/other_ca.pem", nginx->dir);
    snprintf(nginx->token_file, sizeof nginx->token_file, "%s/token", nginx->dir);
    snprintf(nginx->client_cert, sizeof nginx->client_cert, "%s/client.pem", nginx->dir);
    snprintf(nginx->client_key, sizeof nginx->client_key, "%s/client.key", nginx->dir);
    char path[256];
    cr_assert_eq(mkdir(nginx->data, 0755), 0);
    snprintf(path, sizeof path, "%s/data/readonly", nginx->dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/tmp", nginx->dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/logs", nginx->dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    t_write_secret(nginx->token_file, T_NGINX_TOKEN "\n");
    /* libcurl honours the proxy variables: the test's servers are local. */
    setenv("no_proxy", "127.0.0.1,127.0.0.2,localhost", 1);
    setenv("NO_PROXY", "127.0.0.1,127.0.0.2,localhost", 1);
    t_nginx_make_certificates(nginx);
    nginx->port = t_free_tcp_port();
    do
        nginx->tls_port = t_free_tcp_port();
    while (nginx->tls_port == nginx->port);
    do
        nginx->client_tls_port = t_free_tcp_port();
    while (nginx->client_tls_port == nginx->port || nginx->client_tls_port == nginx->tls_port);
    t_nginx_write_config(nginx);
    t_nginx_launch(nginx);
}

static inline void t_nginx_stop(t_nginx *nginx)
{
    if (nginx->pid > 0) {
        kill(nginx->pid, SIGKILL);
        waitpid(nginx->pid, NULL, 0);
    }
    nginx->pid = 0;
    if (nginx->dir[0] != '\0')
        t_remove_tree(nginx->dir);
    nginx->dir[0] = '\0';
}

/* The URL of the served root (or a directory below it) over http. */
static inline void t_nginx_url(const t_nginx *nginx, const char *below, char *url, size_t size)
{
    snprintf(url, size, "http://127.0.0.1:%u%s", nginx->port, below);
}

static inline void t_nginx_tls_url(const t_nginx *nginx, const char *host, const char *below,
                                   char *url, size_t size)
{
    snprintf(url, size, "https://%s:%u%s", host, nginx->tls_port, below);
}

#endif
