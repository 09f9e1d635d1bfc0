/* NEO_CACHE_REMOTE parsing: every URL form, attributes, shards, and inputs
 * that must be refused (with a reason) rather than guessed at. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zecache/remote_spec.h"
#include "leaky_urls.h"
#include "zecache/cache.h"
#include "zecache/config.h"
#include "zecache/log.h"
#include "zecache/remote.h"

static zc_remote_spec parse_ok(const char *text)
{
    zc_remote_spec spec;
    char reason[512] = "";
    zc_status status = zc_remote_spec_parse(text, &spec, reason, sizeof reason);
    cr_assert_eq(status, ZC_OK, "%s: %s", text, reason);
    return spec;
}

static void parse_refused(const char *text, const char *reason_part)
{
    zc_remote_spec spec;
    char reason[512] = "";
    cr_assert_eq(zc_remote_spec_parse(text, &spec, reason, sizeof reason), ZC_ERR_INVALID_ARG,
                 "%s was accepted", text);
    cr_assert_not_null(strstr(reason, reason_part), "%s: reason \"%s\" lacks \"%s\"", text, reason,
                       reason_part);
    cr_assert_null(spec.servers);
}

Test(remote_spec, redis_tcp_forms)
{
    zc_remote_spec spec = parse_ok("redis://cache.example");
    cr_assert_eq(spec.kind, ZC_REMOTE_REDIS_TCP);
    cr_assert_eq(spec.server_count, 1);
    cr_assert_str_eq(spec.servers[0].host, "cache.example");
    cr_assert_eq(spec.servers[0].port, 6379);
    cr_assert_eq(spec.servers[0].db, 0);
    cr_assert_str_eq(spec.servers[0].password, "");
    cr_assert_not(spec.read_only);
    cr_assert_eq(spec.connect_timeout_ms, ZC_REMOTE_DEFAULT_CONNECT_TIMEOUT_MS);
    cr_assert_eq(spec.timeout_ms, ZC_REMOTE_DEFAULT_TIMEOUT_MS);
    zc_remote_spec_free(&spec);

    spec = parse_ok("redis://10.0.0.5:7000/3");
    cr_assert_str_eq(spec.servers[0].host, "10.0.0.5");
    cr_assert_eq(spec.servers[0].port, 7000);
    cr_assert_eq(spec.servers[0].db, 3);
    zc_remote_spec_free(&spec);

    spec = parse_ok("redis://[::1]:6380/");
    cr_assert_str_eq(spec.servers[0].host, "::1");
    cr_assert_eq(spec.servers[0].port, 6380);
    cr_assert_str_eq(spec.name, "redis://[::1]:6380/0");
    zc_remote_spec_free(&spec);
}

Test(remote_spec, credentials_and_masking)
{
    zc_remote_spec spec = parse_ok("redis://alice:s%40cret@host:1/2");
    cr_assert_str_eq(spec.servers[0].user, "alice");
    cr_assert_str_eq(spec.servers[0].password, "s@cret");
    cr_assert_null(strstr(spec.name, "cret"), "the name shows the password: %s", spec.name);
    cr_assert_str_eq(spec.name, "redis://alice:***@host:1/2");
    zc_remote_spec_free(&spec);

    spec = parse_ok("redis://:pw@host");
    cr_assert_str_eq(spec.servers[0].user, "");
    cr_assert_str_eq(spec.servers[0].password, "pw");
    zc_remote_spec_free(&spec);

    spec = parse_ok("redis://pw@host"); /* ccache: PASSWORD@ without a user */
    cr_assert_str_eq(spec.servers[0].password, "pw");
    zc_remote_spec_free(&spec);
}

Test(remote_spec, unix_and_file_forms)
{
    zc_remote_spec spec = parse_ok("redis+unix:///run/redis/redis.sock");
    cr_assert_eq(spec.kind, ZC_REMOTE_REDIS_UNIX);
    cr_assert_str_eq(spec.servers[0].path, "/run/redis/redis.sock");
    cr_assert_eq(spec.servers[0].db, 0);
    zc_remote_spec_free(&spec);

    spec = parse_ok("redis+unix:/tmp/r.sock?db=4");
    cr_assert_str_eq(spec.servers[0].path, "/tmp/r.sock");
    cr_assert_eq(spec.servers[0].db, 4);
    zc_remote_spec_free(&spec);

    spec = parse_ok("file:///srv/cache%20dir|read-only");
    cr_assert_eq(spec.kind, ZC_REMOTE_FILE);
    cr_assert_str_eq(spec.servers[0].path, "/srv/cache dir");
    cr_assert(spec.read_only);
    zc_remote_spec_free(&spec);

    spec = parse_ok("file://localhost/srv/c");
    cr_assert_str_eq(spec.servers[0].path, "/srv/c");
    zc_remote_spec_free(&spec);
}

Test(remote_spec, attributes)
{
    zc_remote_spec spec = parse_ok("redis://h|read-only|connect-timeout=50|timeout=2000");
    cr_assert(spec.read_only);
    cr_assert_eq(spec.connect_timeout_ms, 50);
    cr_assert_eq(spec.timeout_ms, 2000);
    zc_remote_spec_free(&spec);
    spec = parse_ok("redis://h|operation-timeout=7"); /* ccache's name */
    cr_assert_eq(spec.timeout_ms, 7);
    zc_remote_spec_free(&spec);
}

Test(remote_spec, shards_expand_the_star)
{
    zc_remote_spec spec = parse_ok("redis://cache-*.example:7000/1|shards=a,b,c");
    cr_assert_eq(spec.server_count, 3);
    cr_assert_str_eq(spec.servers[0].host, "cache-a.example");
    cr_assert_str_eq(spec.servers[1].host, "cache-b.example");
    cr_assert_str_eq(spec.servers[2].host, "cache-c.example");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(spec.servers[i].port, 7000);
        cr_assert_eq(spec.servers[i].db, 1);
    }
    zc_remote_spec_free(&spec);
    spec = parse_ok("redis+unix:///run/redis-*.sock|shards=1,2");
    cr_assert_str_eq(spec.servers[1].path, "/run/redis-2.sock");
    zc_remote_spec_free(&spec);
}

Test(remote_spec, refused_inputs)
{
    parse_refused("ftp://cache/", "unknown scheme");
    parse_refused("redis://", "no host");
    parse_refused("redis://h:0", "port");
    parse_refused("redis://h:65536", "port");
    parse_refused("redis://h:12x", "port");
    parse_refused("redis://h/x", "database");
    parse_refused("redis://[::1", "']'");
    parse_refused("redis://@h", "empty password");
    parse_refused("redis://h?x=1", "'?'");
    parse_refused("redis+unix:relative.sock", "absolute path");
    parse_refused("redis+unix:///s.sock?database=1", "?db=N");
    parse_refused("file:relative", "absolute path");
    parse_refused("file:///a%zz", "malformed");
    parse_refused("file:///a%00b", "malformed");
    parse_refused("redis://h|read_only", "unknown attribute");
    parse_refused("redis://h|read-only=no", "no value");
    parse_refused("redis://h|timeout=0", "milliseconds");
    parse_refused("redis://h|timeout=abc", "milliseconds");
    parse_refused("redis://h|connect-timeout", "milliseconds");
    parse_refused("redis://h|timeout=99999999999", "milliseconds");
    parse_refused("redis://h|shards=a,b", "no '*'");
    parse_refused("redis://h-*|shards=", "list of names");
    parse_refused("redis://h-*", "needs shards");
    parse_refused("file:///d-*|shards=a,b", "Redis servers only");
    parse_refused("|read-only", "no URL");
}

Test(remote_spec, http_forms)
{
    zc_remote_spec spec = parse_ok("http://cache.example");
    cr_assert_eq(spec.kind, ZC_REMOTE_HTTP);
    cr_assert_str_eq(spec.servers[0].host, "cache.example");
    cr_assert_eq(spec.servers[0].port, 80);
    cr_assert_str_eq(spec.servers[0].path, "");
    cr_assert_str_eq(spec.name, "http://cache.example:80");
    cr_assert_null(spec.bearer_token);
    zc_remote_spec_free(&spec);
    spec = parse_ok("https://cache.example:8443/zc/a%20b//|read-only|timeout=900");
    cr_assert_eq(spec.kind, ZC_REMOTE_HTTPS);
    cr_assert_eq(spec.servers[0].port, 8443);
    cr_assert_str_eq(spec.servers[0].path, "/zc/a%20b", "kept encoded, no trailing '/'");
    cr_assert_str_eq(spec.name, "https://cache.example:8443/zc/a%20b|read-only");
    cr_assert(spec.read_only);
    cr_assert_eq(spec.timeout_ms, 900);
    cr_assert(spec.servers[0].tls.enabled);
    cr_assert_str_eq(spec.servers[0].tls.ca_file, "");
    zc_remote_spec_free(&spec);
    spec = parse_ok("https://[::1]/x|ca-file=/etc/zecache/ca.pem");
    cr_assert_str_eq(spec.servers[0].host, "::1");
    cr_assert_eq(spec.servers[0].port, 443);
    cr_assert_str_eq(spec.name, "https://[::1]:443/x");
    cr_assert_str_eq(spec.servers[0].tls.ca_file, "/etc/zecache/ca.pem");
    zc_remote_spec_free(&spec);
    parse_refused("http://user:secret@h/", "no user or password");
    parse_refused("http://h/x?a=1", "'?'");
    parse_refused("http://h/x#y", "'#'");
    parse_refused("http://h:0", "port");
    parse_refused("http:///x", "no host");
    parse_refused("http://h|ca-file=/ca.pem", "need rediss:// or https://");
    /* A client certificate for https:// too, its key private as for rediss://. */
    parse_refused("https://h|cert-file=/c.pem", "cannot open /c.pem");
    parse_refused("http://h|cert-file=/c.pem", "need rediss:// or https://");
    parse_refused("https://h|key-file=/k.pem", "key-file needs cert-file");
    /* libcurl would take "pw-Secret%40host" for a user and a host. */
    parse_refused("http://pw-Secret%40host/x", "no '%' in the host");
    parse_refused("https://h%2fx/", "no '%' in the host");
    parse_refused("https://h|password-file=/p", "for Redis");
    parse_refused("https://h|cluster", "cluster needs a redis:// or rediss:// URL");
    parse_refused("https://h|ca-file=ca.pem", "absolute path");
    parse_refused("redis://h|bearer-token-file=/t", "http:// and https:// only");
    parse_refused("http://h-*|shards=a,b", "Redis servers only");
}

/* The token is the file's text without trailing white space; the file is
 * refused when others may read it, and a token that would break its header
 * line is refused. */
Test(remote_spec, bearer_token_file)
{
    char dir[] = "/tmp/zc_spec_XXXXXX", path[64], item[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/token", dir);
    snprintf(item, sizeof item, "https://h/|bearer-token-file=%s", path);
    const char *good = "abc.DEF-123_~+/=\n";
    FILE *file = fopen(path, "w");
    fputs(good, file);
    fclose(file);
    cr_assert_eq(chmod(path, 0640), 0);
    zc_remote_spec spec = parse_ok(item);
    cr_assert_str_eq(spec.bearer_token, "abc.DEF-123_~+/=");
    cr_assert_null(strstr(spec.name, "abc"));
    zc_remote_spec_free(&spec);
    cr_assert_null(spec.bearer_token);
    cr_assert_eq(chmod(path, 0644), 0);
    parse_refused(item, "chmod o-rwx");
    const char *bad[] = {"two words\n", "line\nbreak", "\n", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        file = fopen(path, "w");
        fputs(bad[i], file);
        fclose(file);
        cr_assert_eq(chmod(path, 0600), 0);
        parse_refused(item, "visible ASCII");
    }
    unlink(path);
    parse_refused(item, "cannot open");
    rmdir(dir);
}

static int complaints;
static void count_complaint(void *context, const char *storage, const char *reason)
{
    (void)context;
    cr_assert_null(strstr(storage, "hunter2"), "a complaint shows the password: %s", storage);
    cr_assert_neq(reason[0], '\0');
    complaints++;
}

Test(remote_spec, list_keeps_the_good_and_reports_the_bad)
{
    zc_remote_spec *specs;
    size_t count;
    complaints = 0;
    cr_assert_eq(
        zc_remote_specs_parse("  redis://a  redis://u:hunter2@b|ca-file=/c\tfile:///c|bogus "
                              "redis+unix:///d.sock\n",
                              &specs, &count, count_complaint, NULL),
        ZC_OK);
    cr_assert_eq(count, 2);
    cr_assert_eq(complaints, 2);
    cr_assert_str_eq(specs[0].servers[0].host, "a");
    cr_assert_str_eq(specs[1].servers[0].path, "/d.sock");
    zc_remote_specs_free(specs, count);

    cr_assert_eq(zc_remote_specs_parse("", &specs, &count, NULL, NULL), ZC_OK);
    cr_assert_eq(count, 0);
    zc_remote_specs_free(specs, count);
}

Test(remote_spec, rediss_takes_the_tls_files)
{
    zc_remote_spec spec = parse_ok("rediss://u:pw@10.1.2.3:6380/2|ca-file=/etc/ca.pem");
    cr_assert_eq(spec.kind, ZC_REMOTE_REDIS_TCP);
    cr_assert(spec.servers[0].tls.enabled);
    cr_assert_str_eq(spec.servers[0].host, "10.1.2.3");
    cr_assert_eq(spec.servers[0].port, 6380);
    cr_assert_str_eq(spec.servers[0].tls.ca_file, "/etc/ca.pem");
    cr_assert_str_eq(spec.servers[0].tls.cert_file, "");
    cr_assert_str_eq(spec.name, "rediss://u:***@10.1.2.3:6380/2");
    zc_remote_spec_free(&spec);

    spec = parse_ok("redis://h");
    cr_assert_not(spec.servers[0].tls.enabled);
    zc_remote_spec_free(&spec);

    spec = parse_ok("rediss://cache-*.example|shards=a,b");
    cr_assert_eq(spec.server_count, 2);
    cr_assert(spec.servers[0].tls.enabled && spec.servers[1].tls.enabled);
    cr_assert_str_eq(spec.servers[1].name, "rediss://cache-b.example:6379/0");
    zc_remote_spec_free(&spec);
}

/* A file in a new directory with mode; its path in path. */
static void write_file(char *path, size_t size, const char *name, const char *text, mode_t mode)
{
    static char dir[64] = "";
    if (dir[0] == '\0') {
        snprintf(dir, sizeof dir, "/tmp/zc_spec_XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
    }
    snprintf(path, size, "%s/%s", dir, name);
    FILE *file = fopen(path, "w");
    cr_assert_not_null(file);
    fputs(text, file);
    fclose(file);
    cr_assert_eq(chmod(path, mode), 0);
}

static zc_remote_spec parse_with_file(const char *format, const char *path)
{
    char text[512];
    snprintf(text, sizeof text, format, path);
    return parse_ok(text);
}

Test(remote_spec, password_file_gives_the_password_out_of_sight)
{
    char path[128], text[512];
    write_file(path, sizeof path, "pw", "s3cret pass\n", 0640);
    zc_remote_spec spec = parse_with_file("redis://cache:7000|password-file=%s", path);
    cr_assert_str_eq(spec.servers[0].user, "");
    cr_assert_str_eq(spec.servers[0].password, "s3cret pass");
    cr_assert_str_eq(spec.name, "redis://:***@cache:7000/0");
    zc_remote_spec_free(&spec);

    /* USER@ is the user when the password comes from the file. */
    spec = parse_with_file("rediss://zecache@cache|password-file=%s", path);
    cr_assert_str_eq(spec.servers[0].user, "zecache");
    cr_assert_str_eq(spec.servers[0].password, "s3cret pass");
    cr_assert_str_eq(spec.name, "rediss://zecache:***@cache:6379/0");
    zc_remote_spec_free(&spec);

    spec = parse_with_file("redis+unix:///r.sock|password-file=%s", path);
    cr_assert_str_eq(spec.servers[0].password, "s3cret pass");
    zc_remote_spec_free(&spec);

    spec = parse_with_file("redis://u@c-*|shards=1,2|password-file=%s", path);
    cr_assert_str_eq(spec.servers[1].user, "u");
    cr_assert_str_eq(spec.servers[1].password, "s3cret pass");
    zc_remote_spec_free(&spec);

    write_file(path, sizeof path, "crlf", "pw\r\n", 0600);
    spec = parse_with_file("redis://h|password-file=%s", path);
    cr_assert_str_eq(spec.servers[0].password, "pw");
    zc_remote_spec_free(&spec);

    write_file(path, sizeof path, "open", "pw\n", 0604);
    snprintf(text, sizeof text, "redis://h|password-file=%s", path);
    parse_refused(text, "readable only by its owner and group");
    write_file(path, sizeof path, "two", "pw\nmore\n", 0600);
    snprintf(text, sizeof text, "redis://h|password-file=%s", path);
    parse_refused(text, "one line");
    write_file(path, sizeof path, "empty", "\n", 0600);
    snprintf(text, sizeof text, "redis://h|password-file=%s", path);
    parse_refused(text, "one line");
    snprintf(text, sizeof text, "redis://u:pw@h|password-file=%s", path);
    parse_refused(text, "a password in the URL and password-file");
    parse_refused("file:///d|password-file=/p", "for Redis");
    parse_refused("redis://h|password-file=/nonexistent/pw", "cannot open /nonexistent/pw");
    parse_refused("redis://h|password-file=", "needs a path");
}

Test(remote_spec, tls_files_are_refused_where_they_make_no_sense)
{
    char key[128], text[512];
    parse_refused("redis://h|ca-file=/ca.pem", "need rediss://");
    parse_refused("redis+unix:///s|cert-file=/c.pem", "need rediss://");
    parse_refused("rediss://h|key-file=/k.pem", "key-file needs cert-file");
    char long_path[1100] = "rediss://h|ca-file=/";
    memset(long_path + strlen(long_path), 'a', sizeof long_path - strlen(long_path) - 1);
    long_path[sizeof long_path - 1] = '\0';
    parse_refused(long_path, "ca-file: path longer than 1023 bytes");
    write_file(key, sizeof key, "key", "not a key", 0644);
    snprintf(text, sizeof text, "rediss://h|cert-file=/c.pem|key-file=%s", key);
    parse_refused(text, "readable only by its owner and group");
    snprintf(text, sizeof text, "rediss://h|cert-file=%s", key); /* the key in cert-file */
    parse_refused(text, "readable only by its owner and group");
    cr_assert_eq(chmod(key, 0640), 0);
    snprintf(text, sizeof text, "rediss://h|cert-file=/c.pem|key-file=%s", key);
    zc_remote_spec spec = parse_ok(text);
    cr_assert_str_eq(spec.servers[0].tls.cert_file, "/c.pem");
    cr_assert_str_eq(spec.servers[0].tls.key_file, key);
    zc_remote_spec_free(&spec);
}

/* |cluster: the URL's node and each of |seeds=, all with the URL's user and
 * password; not with shards, a Unix socket or a database but 0. */
Test(remote_spec, cluster_seeds_take_the_urls_credentials)
{
    zc_remote_spec spec = parse_ok("redis://zc:hunter2@node-a.example:7000|cluster");
    cr_assert(spec.cluster);
    cr_assert_eq(spec.server_count, 1);
    cr_assert_str_eq(spec.name, "redis://zc:***@node-a.example:7000/0|cluster");
    zc_remote_spec_free(&spec);
    spec = parse_ok("redis://zc:hunter2@node-a.example:7000|cluster|read-only"
                    "|seeds=node-b.example:7001,[::1]:7002,10.0.0.3");
    cr_assert(spec.cluster);
    cr_assert(spec.read_only);
    cr_assert_eq(spec.server_count, 4);
    const char *hosts[] = {"node-a.example", "node-b.example", "::1", "10.0.0.3"};
    const unsigned ports[] = {7000, 7001, 7002, 6379};
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(spec.servers[i].host, hosts[i]);
        cr_assert_eq(spec.servers[i].port, ports[i]);
        cr_assert_str_eq(spec.servers[i].user, "zc");
        cr_assert_str_eq(spec.servers[i].password, "hunter2");
        cr_assert_null(strstr(spec.servers[i].name, "hunter2"));
    }
    cr_assert_str_eq(spec.servers[2].name, "redis://zc:***@[::1]:7002/0");
    cr_assert_null(strstr(spec.name, "hunter2"));
    zc_remote_spec_free(&spec);
    spec = parse_ok("redis://h:7000");
    cr_assert(!spec.cluster);
    zc_remote_spec_free(&spec);
    parse_refused("redis://h|seeds=a:1", "seeds needs cluster");
    parse_refused("redis://h|cluster|seeds=", "HOST:PORT");
    parse_refused("redis://h|node-hosts=a", "node-hosts needs cluster");
    parse_refused("redis://h|cluster|node-hosts=", "node-hosts needs a list of hosts");
    parse_refused("redis://h|cluster|seeds=a:0", "port");
    parse_refused("redis://h|cluster=no", "no value");
    parse_refused("redis://h-*|cluster|shards=a,b", "exclude");
    parse_refused("redis://h/2|cluster", "database 0");
    parse_refused("redis+unix:///s.sock|cluster", "TCP");
    parse_refused("file:///d|cluster", "TCP");
}

/* A node found in the cluster's map: the seed's credentials, its own name. */
Test(remote_spec, a_cluster_node_is_named_for_its_address)
{
    zc_remote_spec spec = parse_ok("redis://zc:hunter2@seed.example:7000|cluster");
    zc_remote_server node;
    zc_remote_server_at(&spec.servers[0], "10.1.2.3", 7005, &node);
    cr_assert_str_eq(node.host, "10.1.2.3");
    cr_assert_eq(node.port, 7005);
    cr_assert_str_eq(node.user, "zc");
    cr_assert_str_eq(node.password, "hunter2");
    cr_assert_str_eq(node.name, "redis://zc:***@10.1.2.3:7005/0");
    zc_remote_spec_free(&spec);
}

/* A cluster over TLS with its password in a file: every seed, and every
 * node found in the map, is reached with the TLS files and the user. */
Test(remote_spec, a_tls_cluster_gives_every_node_its_files_and_password)
{
    char path[128], text[512];
    write_file(path, sizeof path, "cluster-pw", "s3cret\n", 0600);
    snprintf(text, sizeof text,
             "rediss://zc@seed.example:7000|cluster|seeds=10.0.0.2:7001|ca-file=/ca.pem"
             "|password-file=%s",
             path);
    zc_remote_spec spec = parse_ok(text);
    cr_assert(spec.cluster);
    cr_assert_eq(spec.server_count, 2);
    zc_remote_server node;
    zc_remote_server_at(&spec.servers[1], "10.1.2.3", 7005, &node);
    const zc_remote_server *servers[] = {&spec.servers[0], &spec.servers[1], &node};
    for (int i = 0; i < 3; i++) {
        cr_assert(servers[i]->tls.enabled);
        cr_assert_str_eq(servers[i]->tls.ca_file, "/ca.pem");
        cr_assert_str_eq(servers[i]->user, "zc");
        cr_assert_str_eq(servers[i]->password, "s3cret");
    }
    cr_assert_str_eq(spec.name, "rediss://zc:***@seed.example:7000/0|cluster");
    cr_assert_str_eq(node.name, "rediss://zc:***@10.1.2.3:7005/0");
    zc_remote_spec_free(&spec);
}

static char said[65536];

static void keep_said(void *context, const char *message)
{
    (void)context;
    size_t used = strlen(said);
    snprintf(said + used, sizeof said - used, "%s\n", message);
}

static void keep_complaint(void *context, const char *storage, const char *reason)
{
    (void)context;
    size_t used = strlen(said);
    snprintf(said + used, sizeof said - used, "%s: %s\n", storage, reason);
}

/* The parser's refusals and what the layer logs opening the storages
 * (PrintDebugMessages=1: the same text on stderr) never show the secret. */
Test(remote_spec, no_secret_in_a_refusal_or_the_layers_messages)
{
    said[0] = '\0';
    zc_log_set_enabled(true);
    zc_log_set_capture(keep_said, NULL);
    for (size_t i = 0; i < sizeof leaky / sizeof leaky[0]; i++) {
        zc_remote_spec *specs = NULL;
        size_t count = 0;
        cr_assert_eq(zc_remote_specs_parse(leaky[i], &specs, &count, keep_complaint, NULL), ZC_OK);
        for (size_t s = 0; s < count; s++)
            keep_said(NULL, specs[s].name);
        zc_remote_specs_free(specs, count);
        zc_config config;
        zc_config_from_env(&config);
        snprintf(config.remote, sizeof config.remote, "%s", leaky[i]);
        zc_cache_counters counters = {0};
        zc_remote *remote = NULL;
        cr_assert_eq(zc_remote_open(&config, &counters, &remote), ZC_OK);
        zc_remote_close(remote);
    }
    zc_log_set_capture(NULL, NULL);
    zc_log_set_enabled(false);
    cr_assert_null(strstr(said, SECRET_A), "%s", said);
    cr_assert_null(strstr(said, SECRET_B), "%s", said);
    cr_assert_not_null(strstr(said, "ignored"), "%s", said);
}
