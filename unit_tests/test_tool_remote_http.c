/* zecache remote check and config for http:// and https:// storages, run as
 * a program against a private nginx (nginx_test_support.h): each failure
 * is said in the server's or libcurl's words. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "disk_test_support.h"
#include "leaky_urls.h"
#include "nginx_test_support.h"

static t_nginx nginx;
static char output[16384];

static void setup(void)
{
    t_nginx_start(&nginx);
}

static void teardown(void)
{
    t_nginx_stop(&nginx);
}

TestSuite(tool_remote_http, .init = setup, .fini = teardown, .timeout = 60);

/* Runs the tool with NEO_CACHE_REMOTE=remote through wrapper ("env A=B",
 * "": none); returns its exit status. */
static int run_tool_in(const char *wrapper, const char *command, const char *remote)
{
    char line[4096];
    snprintf(line, sizeof line, "NEO_CACHE_DIR=%s/cache NEO_CACHE_REMOTE='%s' %s %s %s 2>&1",
             nginx.dir, remote, wrapper, ZC_TOOL_PATH, command);
    return t_run_capturing(line, output, sizeof output);
}

static int run_tool(const char *command, const char *remote)
{
    return run_tool_in("", command, remote);
}

/* The check's line for the storage named name: "<name> <what>" (what ends
 * with '\n' to match the whole line). */
static void assert_line(const char *name, const char *what)
{
    char line[1536];
    snprintf(line, sizeof line, "%-48s %s", name, what);
    cr_assert_not_null(strstr(output, line), "no line \"%s\" in:\n%s", line, output);
}

Test(tool_remote_http, check_passes_over_http_and_https)
{
    char remote[2048], http[256], https[256];
    t_nginx_url(&nginx, "/zc", http, sizeof http);
    t_nginx_tls_url(&nginx, "localhost", "/zc", https, sizeof https);
    snprintf(remote, sizeof remote,
             "%s" T_NGINX_TIMEOUTS " %s" T_NGINX_TIMEOUTS "|ca-file=%s %s/private" T_NGINX_TIMEOUTS
             "|bearer-token-file=%s",
             http, https, nginx.ca, http, nginx.token_file);
    cr_assert_eq(run_tool("remote check", remote), 0, "%s", output);
    cr_assert_null(strstr(output, "FAILED"), "%s", output);
    size_t ok_lines = 0;
    for (const char *at = strstr(output, " ok: write, read, remove in "); at != NULL;
         at = strstr(at + 1, " ok: write, read, remove in "))
        ok_lines++;
    cr_assert_eq(ok_lines, 3, "%s", output);
    cr_assert_eq(t_count_entries(nginx.data), 0, "the probes are removed");
}

Test(tool_remote_http, check_says_exactly_what_failed)
{
    char remote[4096], http[256], https[256], other_name[512], wrong_host[256];
    t_nginx_url(&nginx, "", http, sizeof http);
    t_nginx_tls_url(&nginx, "localhost", "", https, sizeof https);
    t_nginx_tls_url(&nginx, "127.0.0.2", "", wrong_host, sizeof wrong_host);
    snprintf(other_name, sizeof other_name, "%s" T_NGINX_TIMEOUTS "|ca-file=%s", https,
             nginx.other_ca);
    snprintf(remote, sizeof remote,
             "%s/private" T_NGINX_TIMEOUTS " %s" T_NGINX_TIMEOUTS
             "|ca-file=%s %s %s/readonly" T_NGINX_TIMEOUTS,
             http, wrong_host, nginx.ca, other_name, http);
    cr_assert_eq(run_tool("remote check", remote), 1, "%s", output);
    char name[256];
    snprintf(name, sizeof name, "http://127.0.0.1:%u/private", nginx.port);
    assert_line(name, "FAILED: cannot write the probe: PUT: HTTP 401\n");
    snprintf(name, sizeof name, "https://127.0.0.2:%u", nginx.tls_port);
    /* libcurl 7.88 says "target host name '127.0.0.2'", 8.x "target ipv4
     * address '127.0.0.2'". */
    assert_line(name, "FAILED: cannot write the probe: PUT: SSL: no alternative certificate "
                      "subject name matches target ");
    cr_assert_not_null(strstr(output, " '127.0.0.2'\n"), "%s", output);
    snprintf(name, sizeof name, "https://localhost:%u", nginx.tls_port);
    assert_line(name, "FAILED: cannot write the probe: PUT: SSL certificate problem: unable to "
                      "get local issuer certificate\n");
    snprintf(name, sizeof name, "http://127.0.0.1:%u/readonly", nginx.port);
    assert_line(name, "FAILED: cannot write the probe: PUT: HTTP 403\n");
    /* Read-only, it is only read: a miss is fine. */
    snprintf(remote, sizeof remote, "%s/readonly" T_NGINX_TIMEOUTS "|read-only", http);
    cr_assert_eq(run_tool("remote check", remote), 0, "%s", output);
    snprintf(name, sizeof name, "http://127.0.0.1:%u/readonly|read-only", nginx.port);
    assert_line(name, "ok: read in");
}

/* The storage remote, its secret file made readable by others: refused. */
static void assert_refused_once_others_read(const char *remote, const char *path)
{
    cr_assert_eq(chmod(path, 0644), 0);
    cr_assert_eq(run_tool("remote check", remote), 1, "%s", output);
    char line[2048];
    snprintf(line, sizeof line,
             "%-48s FAILED: %s is not a regular file readable only by its owner and group "
             "(chmod o-rwx it)\n",
             remote, path);
    cr_assert_not_null(strstr(output, line), "no line \"%s\" in:\n%s", line, output);
}

Test(tool_remote_http, a_token_others_can_read_is_refused_and_never_shown)
{
    char remote[1024], http[256];
    t_nginx_url(&nginx, "/private", http, sizeof http);
    snprintf(remote, sizeof remote, "%s|bearer-token-file=%s", http, nginx.token_file);
    cr_assert_eq(run_tool("config", remote), 0, "%s", output);
    cr_assert_null(strstr(output, T_NGINX_TOKEN), "the token is shown: %s", output);
    assert_refused_once_others_read(remote, nginx.token_file);
}

/* dir (made) holding the test's CA as c_rehash links /etc/ssl/certs. */
static void make_ca_directory(const char *dir, const char *ca)
{
    char command[1024];
    snprintf(command, sizeof command, "mkdir %s && cp %s %s/ && openssl rehash %s", dir, ca, dir,
             dir);
    t_run(command);
}

/* Without ca-file, https:// trusts the system's CAs as rediss:// does:
 * SSL_CERT_FILE, SSL_CERT_DIR, else OpenSSL's directory; none at all is
 * said as such. */
Test(tool_remote_http, https_honours_ssl_cert_file_and_ssl_cert_dir)
{
    char https[256], cas[256], empty[256], wrapper[640];
    t_nginx_tls_url(&nginx, "localhost", "/zc" T_NGINX_TIMEOUTS, https, sizeof https);
    snprintf(cas, sizeof cas, "%s/cas", nginx.dir);
    snprintf(empty, sizeof empty, "%s/no-cas", nginx.dir);
    make_ca_directory(cas, nginx.ca);
    cr_assert_eq(mkdir(empty, 0700), 0);
    snprintf(wrapper, sizeof wrapper, "env SSL_CERT_FILE= SSL_CERT_DIR=%s", cas);
    cr_assert_eq(run_tool_in(wrapper, "remote check", https), 0, "%s", output);
    snprintf(wrapper, sizeof wrapper, "env SSL_CERT_FILE=%s SSL_CERT_DIR=%s", nginx.ca, empty);
    cr_assert_eq(run_tool_in(wrapper, "remote check", https), 0, "%s", output);
    snprintf(wrapper, sizeof wrapper, "env SSL_CERT_FILE= SSL_CERT_DIR=%s", empty);
    cr_assert_eq(run_tool_in(wrapper, "remote check", https), 1, "%s", output);
    char line[1024];
    snprintf(line, sizeof line,
             "FAILED: cannot open: no CA certificate to verify the server with: SSL_CERT_FILE is "
             "not set and %s holds none (install ca-certificates, set SSL_CERT_FILE or "
             "SSL_CERT_DIR, or give |ca-file=PATH)\n",
             empty);
    cr_assert_not_null(strstr(output, line), "no \"%s\" in:\n%s", line, output);
}

/* ca-file replaces the system's CAs: with the server's CA among them (a
 * mount namespace puts it in /etc/ssl/certs, as a public CA is), another
 * ca-file still refuses the server. */
Test(tool_remote_http, ca_file_pins_https_to_its_ca_alone)
{
    if (system("unshare -m true 2>/dev/null") != 0) {
        fprintf(stderr, "\n*** SKIPPED: no mount namespace (unshare -m needs root): the ca-file "
                        "pin is NOT tested ***\n\n");
        cr_skip_test("no mount namespace");
    }
    char https[256], cas[256], script[256], wrapper[640], remote[1024];
    t_nginx_tls_url(&nginx, "localhost", "/zc" T_NGINX_TIMEOUTS, https, sizeof https);
    snprintf(cas, sizeof cas, "%s/cas", nginx.dir);
    make_ca_directory(cas, nginx.ca);
    snprintf(script, sizeof script, "%s/system-cas.sh", nginx.dir);
    static const char mount_cas[] = "mount --bind \"$1\" /etc/ssl/certs || exit 99\n"
                                    "shift\nexec \"$@\"\n";
    t_write_file(script, mount_cas, sizeof mount_cas - 1);
    snprintf(wrapper, sizeof wrapper,
             "env SSL_CERT_FILE= SSL_CERT_DIR= unshare -m --propagation private sh %s %s", script,
             cas);
    snprintf(remote, sizeof remote, "%s|ca-file=%s", https, nginx.other_ca);
    cr_assert_eq(run_tool_in(wrapper, "remote check", remote), 1, "%s", output);
    cr_assert_not_null(strstr(output, "FAILED: cannot write the probe: PUT: SSL certificate "
                                      "problem: unable to get local issuer certificate\n"),
                       "%s", output);
    cr_assert_eq(run_tool_in(wrapper, "remote check", https), 0, "the system's CAs: %s", output);
}

/* Whatever the parser, the check and the layer's messages
 * (PrintDebugMessages=1) say of them, never a part of the secret. */
Test(tool_remote_http, no_secret_in_any_message_however_malformed_the_url)
{
    for (size_t i = 0; i < sizeof leaky / sizeof leaky[0]; i++) {
        static const char *const commands[] = {"remote check", "config"};
        for (size_t c = 0; c < 2; c++) {
            (void)run_tool_in("env PrintDebugMessages=1", commands[c], leaky[i]);
            cr_assert_null(strstr(output, SECRET_A), "%s, %s:\n%s", leaky[i], commands[c], output);
            cr_assert_null(strstr(output, SECRET_B), "%s, %s:\n%s", leaky[i], commands[c], output);
        }
    }
}

/* https:// with a client certificate, as rediss://: a server that asks for
 * one gets it; its key must be private. */
Test(tool_remote_http, a_client_certificate_the_server_asks_for)
{
    char url[512], remote[1024];
    snprintf(url, sizeof url, "https://localhost:%u/zc" T_NGINX_TIMEOUTS "|ca-file=%s",
             nginx.client_tls_port, nginx.ca);
    cr_assert_eq(run_tool("remote check", url), 1, "%s", output);
    cr_assert_not_null(strstr(output, "FAILED: cannot write the probe: PUT: HTTP 400\n"), "%s",
                       output);
    snprintf(remote, sizeof remote, "%s|cert-file=%s|key-file=%s", url, nginx.client_cert,
             nginx.client_key);
    cr_assert_eq(run_tool("remote check", remote), 0, "%s", output);
    cr_assert_not_null(strstr(output, " ok: write, read, remove in "), "%s", output);
    cr_assert_eq(t_count_entries(nginx.data), 0, "the probe is removed");
    assert_refused_once_others_read(remote, nginx.client_key);
}
