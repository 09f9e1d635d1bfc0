/* NEO_CACHE_REMOTE parsing: every URL form, attributes, shards, and inputs
 * that must be refused (with a reason) rather than guessed at. */
#include <criterion/criterion.h>
#include <string.h>

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
    parse_refused("http://cache/", "unknown scheme");
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
