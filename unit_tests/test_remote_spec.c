/* NEO_CACHE_REMOTE parsing: every URL form, attributes, shards, and inputs
 * that must be refused (with a reason) rather than guessed at. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zecache/remote_spec.h"

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
    parse_refused("rediss://secure.example", "TLS tunnel");
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
    cr_assert_str_eq(spec.ca_file, "");
    zc_remote_spec_free(&spec);
    spec = parse_ok("https://[::1]/x|ca-file=/etc/zecache/ca.pem");
    cr_assert_str_eq(spec.servers[0].host, "::1");
    cr_assert_eq(spec.servers[0].port, 443);
    cr_assert_str_eq(spec.name, "https://[::1]:443/x");
    cr_assert_str_eq(spec.ca_file, "/etc/zecache/ca.pem");
    zc_remote_spec_free(&spec);
    parse_refused("http://user:secret@h/", "no user or password");
    parse_refused("http://h/x?a=1", "'?'");
    parse_refused("http://h/x#y", "'#'");
    parse_refused("http://h:0", "port");
    parse_refused("http:///x", "no host");
    parse_refused("http://h|ca-file=/ca.pem", "needs TLS");
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
    cr_assert_eq(zc_remote_specs_parse("  redis://a  rediss://u:hunter2@b\tfile:///c|bogus "
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
