/* Parsing NEO_CACHE_REMOTE (syntax in remote_spec.h). Everything that does not
 * parse is refused with a reason: a misspelt "read-only" must not turn into a
 * storage we write to. */
#include "zecache/remote_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "private_file.h"
#include "remote_redact.h"
#include "zecache/config.h"

enum { ITEM_MAX = 4096, NAME_MAX_SHARD = 128 };

static bool starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Copies length bytes of text to out, decoding %XX. False when it does not
 * fit, a %XX is malformed, or it decodes to a NUL. */
static bool percent_decode(const char *text, size_t length, char *out, size_t out_size)
{
    size_t used = 0;
    for (size_t i = 0; i < length; i++) {
        char c = text[i];
        if (c == '%') {
            if (i + 2 >= length)
                return false;
            int high = hex_value(text[i + 1]), low = hex_value(text[i + 2]);
            if (high < 0 || low < 0 || (high == 0 && low == 0))
                return false;
            c = (char)(high * 16 + low);
            i += 2;
        }
        if (used + 1 >= out_size)
            return false;
        out[used++] = c;
    }
    out[used] = '\0';
    return true;
}

static bool parse_number(const char *text, size_t length, uint64_t max, uint64_t *value)
{
    char copy[32];
    if (length == 0 || length >= sizeof copy)
        return false;
    memcpy(copy, text, length);
    copy[length] = '\0';
    for (size_t i = 0; i < length; i++)
        if (!isdigit((unsigned char)copy[i]))
            return false;
    return zc_config_parse_u64(copy, value) && *value <= max;
}

/* ---- redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] ---- */

static zc_status parse_userinfo(const char *text, size_t length, zc_remote_server *server,
                                char *reason, size_t reason_size)
{
    const char *colon = memchr(text, ':', length);
    size_t user_length = colon != NULL ? (size_t)(colon - text) : 0;
    const char *password = colon != NULL ? colon + 1 : text;
    size_t password_length = length - (size_t)(password - text);
    if (!percent_decode(text, user_length, server->user, sizeof server->user) ||
        !percent_decode(password, password_length, server->password, sizeof server->password))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "user or password is malformed or too long");
    if (server->password[0] == '\0')
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "empty password before '@'");
    return ZC_OK;
}

/* What messages name a server by: no user information (which a
 * percent-encoded '@' would smuggle in), nothing a terminal acts on. */
static bool is_host_name(const char *host)
{
    for (const char *c = host; *c != '\0'; c++)
        if (*c <= ' ' || *c == 0x7f || strchr("@/?#|", *c) != NULL)
            return false;
    return true;
}

static zc_status parse_host_port(const char *text, size_t length, zc_remote_server *server,
                                 char *reason, size_t reason_size)
{
    const char *host = text, *port = NULL;
    size_t host_length;
    if (length > 0 && text[0] == '[') { /* [IPv6]:port */
        const char *close = memchr(text, ']', length);
        if (close == NULL)
            return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                              "'[' without ']' in the host");
        host = text + 1;
        host_length = (size_t)(close - host);
        if (close + 1 < text + length) {
            if (close[1] != ':')
                return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                                  "unexpected text after ']'");
            port = close + 2;
        }
    } else {
        const char *colon = memchr(text, ':', length);
        host_length = colon != NULL ? (size_t)(colon - text) : length;
        port = colon != NULL ? colon + 1 : NULL;
    }
    if (host_length == 0)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "no host");
    if (!percent_decode(host, host_length, server->host, sizeof server->host))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "host is malformed or too long");
    if (!is_host_name(server->host))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "the host holds '@', '/', '?', '#', '|', a space or a control character "
                          "(a password goes before the last '@')");
    server->port = ZC_REMOTE_DEFAULT_REDIS_PORT;
    if (port != NULL) {
        uint64_t value;
        if (!parse_number(port, (size_t)(text + length - port), 65535, &value) || value == 0)
            return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                              "port is not a number from 1 to 65535");
        server->port = (unsigned)value;
    }
    return ZC_OK;
}

static zc_status parse_db(const char *text, size_t length, zc_remote_server *server, char *reason,
                          size_t reason_size)
{
    uint64_t value = 0;
    if (length > 0 && !parse_number(text, length, 1000000, &value))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "the database is not a number from 0 to 1000000");
    server->db = (unsigned)value;
    return ZC_OK;
}

/* The user information ends at the last '@', wherever it is: a password
 * may hold '/' unencoded, but never decides where the host or the
 * database is (nor shows in a refusal of them). */
static zc_status parse_redis_tcp(const char *rest, zc_remote_server *server, char *reason,
                                 size_t reason_size)
{
    if (strchr(rest, '?') != NULL)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "redis:// takes no '?' options");
    const char *at = strrchr(rest, '@');
    const char *host = at != NULL ? at + 1 : rest;
    const char *slash = strchr(host, '/');
    const char *end = slash != NULL ? slash : host + strlen(host);
    zc_status status = ZC_OK;
    if (at != NULL)
        status = parse_userinfo(rest, (size_t)(at - rest), server, reason, reason_size);
    if (status == ZC_OK)
        status = parse_host_port(host, (size_t)(end - host), server, reason, reason_size);
    if (status == ZC_OK && slash != NULL)
        status = parse_db(slash + 1, strlen(slash + 1), server, reason, reason_size);
    return status;
}

/* ---- redis+unix:///PATH[?db=N], file:///PATH ---- */

/* "///PATH", "//localhost/PATH" or ccache's "/PATH": the absolute path. */
static const char *absolute_path_of(const char *rest)
{
    if (starts_with(rest, "//localhost/"))
        return rest + strlen("//localhost");
    if (starts_with(rest, "///"))
        return rest + 2;
    if (rest[0] == '/' && rest[1] != '/')
        return rest;
    return NULL;
}

static zc_status parse_path(const char *rest, size_t length, zc_remote_server *server, char *reason,
                            size_t reason_size)
{
    char copy[PATH_MAX];
    if (length >= sizeof copy)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "path too long");
    memcpy(copy, rest, length);
    copy[length] = '\0';
    const char *path = absolute_path_of(copy);
    if (path == NULL)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "expected an absolute path (scheme:///PATH)");
    if (!percent_decode(path, strlen(path), server->path, sizeof server->path))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "path is malformed or too long");
    return ZC_OK;
}

static zc_status parse_redis_unix(const char *rest, zc_remote_server *server, char *reason,
                                  size_t reason_size)
{
    const char *query = strchr(rest, '?');
    size_t length = query != NULL ? (size_t)(query - rest) : strlen(rest);
    zc_status status = parse_path(rest, length, server, reason, reason_size);
    if (status != ZC_OK || query == NULL)
        return status;
    if (!starts_with(query, "?db="))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "the only option is ?db=N");
    return parse_db(query + 4, strlen(query + 4), server, reason, reason_size);
}

/* ---- http://HOST[:PORT][/PATH], https://... ---- */

static bool has_port(const char *authority, size_t length)
{
    const char *close = length > 0 && authority[0] == '[' ? memchr(authority, ']', length) : NULL;
    const char *after = close != NULL ? close + 1 : authority;
    return memchr(after, ':', length - (size_t)(after - authority)) != NULL;
}

/* The path stays percent-encoded: it goes back into URLs as written (its
 * characters were checked with the whole URL's). */
static zc_status parse_http_path(const char *path, zc_remote_server *server, char *reason,
                                 size_t reason_size)
{
    size_t length = strlen(path);
    while (length > 0 && path[length - 1] == '/')
        length--;
    if (length >= sizeof server->path)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "path too long");
    memcpy(server->path, path, length);
    server->path[length] = '\0';
    return ZC_OK;
}

static zc_status parse_http(const char *rest, bool https, zc_remote_server *server, char *reason,
                            size_t reason_size)
{
    for (const char *c = rest; *c != '\0'; c++)
        if (*c <= ' ' || *c > '~' || *c == '?' || *c == '#')
            return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                              "an http(s) URL takes no '?', '#', spaces or control characters");
    const char *slash = strchr(rest, '/');
    size_t authority_length = slash != NULL ? (size_t)(slash - rest) : strlen(rest);
    if (memchr(rest, '@', authority_length) != NULL)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "no user or password in an http(s) URL: the environment and the "
                          "command line show them (use |bearer-token-file=PATH)");
    /* libcurl decodes the host: "%40" would make a user and password it
     * sends in clear text (Basic), and no host name needs encoding. */
    if (memchr(rest, '%', authority_length) != NULL)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "no '%%' in the host of an http(s) URL (\"%%40\" would make a user and "
                          "password)");
    zc_status status = parse_host_port(rest, authority_length, server, reason, reason_size);
    if (status != ZC_OK)
        return status;
    if (!has_port(rest, authority_length))
        server->port = https ? ZC_REMOTE_DEFAULT_HTTPS_PORT : ZC_REMOTE_DEFAULT_HTTP_PORT;
    return parse_http_path(slash != NULL ? slash : "", server, reason, reason_size);
}

static void name_server(zc_remote_kind kind, zc_remote_server *server)
{
    if (kind == ZC_REMOTE_FILE) {
        snprintf(server->name, sizeof server->name, "file://%.300s", server->path);
        return;
    }
    /* Sized so that no part is ever cut (gcc's -Wformat-truncation checks
     * it in every build type): user 60, host or path 200, numbers 10. */
    char auth[72] = "";
    /* A user name with other characters than these may hold a password's
     * part: with a user@password@host typed, the parser takes what comes
     * before the last '@' as the user. */
    size_t user_length = strlen(server->user);
    bool plain_user =
        strspn(server->user, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
        user_length;
    if (server->password[0] != '\0')
        snprintf(auth, sizeof auth, "%.60s:***@", plain_user ? server->user : "***");
    if (kind == ZC_REMOTE_REDIS_UNIX) {
        snprintf(server->name, sizeof server->name, "redis+unix://%s%.200s?db=%u", auth,
                 server->path, server->db);
        return;
    }
    bool ipv6 = strchr(server->host, ':') != NULL;
    if (kind == ZC_REMOTE_HTTP || kind == ZC_REMOTE_HTTPS) {
        snprintf(server->name, sizeof server->name, "%s://%s%.200s%s:%u%.80s",
                 kind == ZC_REMOTE_HTTPS ? "https" : "http", ipv6 ? "[" : "", server->host,
                 ipv6 ? "]" : "", server->port, server->path);
        return;
    }
    snprintf(server->name, sizeof server->name, "%s://%s%s%.200s%s:%u/%u",
             server->tls.enabled ? "rediss" : "redis", auth, ipv6 ? "[" : "", server->host,
             ipv6 ? "]" : "", server->port, server->db);
}

static zc_status parse_url(const char *url, zc_remote_kind *kind, zc_remote_server *server,
                           char *reason, size_t reason_size)
{
    memset(server, 0, sizeof *server);
    zc_status status;
    if (starts_with(url, "rediss://")) {
        *kind = ZC_REMOTE_REDIS_TCP;
        server->tls.enabled = true;
        status = parse_redis_tcp(url + strlen("rediss://"), server, reason, reason_size);
    } else if (starts_with(url, "redis://")) {
        *kind = ZC_REMOTE_REDIS_TCP;
        status = parse_redis_tcp(url + strlen("redis://"), server, reason, reason_size);
    } else if (starts_with(url, "redis+unix:")) {
        *kind = ZC_REMOTE_REDIS_UNIX;
        status = parse_redis_unix(url + strlen("redis+unix:"), server, reason, reason_size);
    } else if (starts_with(url, "http://") || starts_with(url, "https://")) {
        bool https = starts_with(url, "https://");
        *kind = https ? ZC_REMOTE_HTTPS : ZC_REMOTE_HTTP;
        server->tls.enabled = https;
        status = parse_http(url + strlen(https ? "https://" : "http://"), https, server, reason,
                            reason_size);
    } else if (starts_with(url, "file:")) {
        *kind = ZC_REMOTE_FILE;
        status = parse_path(url + strlen("file:"), strlen(url + strlen("file:")), server, reason,
                            reason_size);
    } else {
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "unknown scheme (expected redis://, rediss://, redis+unix://, file://, "
                          "http:// or https://)");
    }
    if (status == ZC_OK)
        name_server(*kind, server);
    return status;
}

static bool is_redis(zc_remote_kind kind)
{
    return kind == ZC_REMOTE_REDIS_TCP || kind == ZC_REMOTE_REDIS_UNIX;
}

static bool is_http(zc_remote_kind kind)
{
    return kind == ZC_REMOTE_HTTP || kind == ZC_REMOTE_HTTPS;
}

/* ---- attributes ---- */

typedef struct attributes {
    bool read_only;
    uint32_t connect_timeout_ms, timeout_ms;
    char shards[ITEM_MAX]; /* "" for none */
    bool cluster;
    char seeds[ITEM_MAX]; /* cluster: more seed nodes, "" for none */
    char node_hosts[sizeof(((zc_remote_spec *)0)->node_hosts)]; /* cluster: "" for anywhere */
    char password_file[ZC_REMOTE_TLS_PATH_MAX], bearer_token_file[ZC_REMOTE_TLS_PATH_MAX];
    zc_remote_tls tls; /* the files; enabled by the scheme */
} attributes;

static zc_status parse_timeout(const char *name, const char *value, uint32_t *out, char *reason,
                               size_t reason_size)
{
    uint64_t ms;
    if (value == NULL || !parse_number(value, strlen(value), ZC_REMOTE_MAX_TIMEOUT_MS, &ms) ||
        ms == 0)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "%s needs a number of milliseconds from 1 to %u", name,
                          ZC_REMOTE_MAX_TIMEOUT_MS);
    *out = (uint32_t)ms;
    return ZC_OK;
}

/* path holds ZC_REMOTE_TLS_PATH_MAX bytes, as each file attribute does. */
static zc_status parse_file_attribute(const char *name, const char *value, char *path, char *reason,
                                      size_t reason_size)
{
    if (value == NULL || value[0] == '\0')
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "%s needs a path", name);
    /* A relative path would be read from whatever directory the
     * application runs in. */
    if (value[0] != '/')
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "%s needs an absolute path",
                          name);
    if (snprintf(path, ZC_REMOTE_TLS_PATH_MAX, "%s", value) >= ZC_REMOTE_TLS_PATH_MAX)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "%s: path longer than %d bytes",
                          name, ZC_REMOTE_TLS_PATH_MAX - 1);
    return ZC_OK;
}

/* |cluster, |seeds=HOST:PORT,... naming more nodes to discover the
 * cluster from than the URL's, and |node-hosts=HOST,... bounding where the
 * cluster may send the client (with the password, and entries). */
static zc_status parse_cluster_attribute(const char *name, const char *value, attributes *attrs,
                                         char *reason, size_t reason_size)
{
    if (strcmp(name, "cluster") == 0) {
        if (value != NULL && strcmp(value, "true") != 0)
            return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "cluster takes no value");
        attrs->cluster = true;
        return ZC_OK;
    }
    bool hosts = strcmp(name, "node-hosts") == 0;
    if (value == NULL || value[0] == '\0')
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "%s",
                          hosts ? "node-hosts needs a list of hosts"
                                : "seeds needs a list of HOST:PORT");
    if (hosts && strlen(value) >= sizeof(((zc_remote_spec *)0)->node_hosts))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "node-hosts: longer than %zu",
                          sizeof(((zc_remote_spec *)0)->node_hosts) - 1);
    if (hosts)
        snprintf(attrs->node_hosts, sizeof attrs->node_hosts, "%s", value);
    else
        snprintf(attrs->seeds, sizeof attrs->seeds, "%s", value);
    return ZC_OK;
}

/* quotable: text lies after the URL's user information, so that it cannot
 * be part of a password that held '|'. */
static zc_status parse_attribute(char *text, bool quotable, attributes *attrs, char *reason,
                                 size_t reason_size)
{
    char *equals = strchr(text, '=');
    const char *value = NULL;
    if (equals != NULL) {
        *equals = '\0';
        value = equals + 1;
    }
    if (strcmp(text, "read-only") == 0) {
        if (value != NULL && strcmp(value, "true") != 0)
            return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "read-only takes no value");
        attrs->read_only = true;
        return ZC_OK;
    }
    if (strcmp(text, "connect-timeout") == 0)
        return parse_timeout(text, value, &attrs->connect_timeout_ms, reason, reason_size);
    if (strcmp(text, "timeout") == 0 || strcmp(text, "operation-timeout") == 0)
        return parse_timeout(text, value, &attrs->timeout_ms, reason, reason_size);
    struct {
        const char *name;
        char *path;
    } files[] = {{"password-file", attrs->password_file},
                 {"bearer-token-file", attrs->bearer_token_file},
                 {"ca-file", attrs->tls.ca_file},
                 {"cert-file", attrs->tls.cert_file},
                 {"key-file", attrs->tls.key_file}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (strcmp(text, files[i].name) == 0)
            return parse_file_attribute(text, value, files[i].path, reason, reason_size);
    if (strcmp(text, "shards") == 0) {
        if (value == NULL || value[0] == '\0')
            return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                              "shards needs a list of names");
        snprintf(attrs->shards, sizeof attrs->shards, "%s", value);
        return ZC_OK;
    }
    if (strcmp(text, "cluster") == 0 || strcmp(text, "seeds") == 0 ||
        strcmp(text, "node-hosts") == 0)
        return parse_cluster_attribute(text, value, attrs, reason, reason_size);
    return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                      "unknown attribute \"%.64s\" (known: read-only, connect-timeout=MS, "
                      "timeout=MS, shards=A,B,..., cluster, seeds=HOST:PORT,..., "
                      "node-hosts=HOST,..., "
                      "password-file=PATH, ca-file=PATH, cert-file=PATH, key-file=PATH, "
                      "bearer-token-file=PATH)",
                      quotable ? text : "***");
}

/* "a*b" with '*' replaced by shard. */
static bool expand_shard(const char *url, const char *shard, char *out, size_t out_size)
{
    const char *star = strchr(url, '*');
    int written = snprintf(out, out_size, "%.*s%s%s", (int)(star - url), url, shard, star + 1);
    return written > 0 && (size_t)written < out_size;
}

/* One server of a comma-separated list, named name, into spec's next
 * server. */
typedef zc_status (*add_server_fn)(const char *url, const char *name, zc_remote_spec *spec,
                                   char *reason, size_t reason_size);

/* add for each name of list, up to ZC_REMOTE_MAX_SHARDS servers in all
 * (what names them in the refusal). */
static zc_status add_each(const char *url, char *list, const char *what, add_server_fn add,
                          zc_remote_spec *spec, char *reason, size_t reason_size)
{
    char *saveptr = NULL;
    for (char *name = strtok_r(list, ",", &saveptr); name != NULL;
         name = strtok_r(NULL, ",", &saveptr)) {
        if (spec->server_count == ZC_REMOTE_MAX_SHARDS)
            return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "more than %d %s",
                              ZC_REMOTE_MAX_SHARDS, what);
        zc_status status = add(url, name, spec, reason, reason_size);
        if (status != ZC_OK)
            return status;
        spec->server_count++;
    }
    return ZC_OK;
}

static zc_status add_shard(const char *url, const char *shard, zc_remote_spec *spec, char *reason,
                           size_t reason_size)
{
    char expanded[ITEM_MAX];
    if (!expand_shard(url, shard, expanded, sizeof expanded))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "shard URL too long");
    zc_remote_kind kind;
    zc_status status =
        parse_url(expanded, &kind, &spec->servers[spec->server_count], reason, reason_size);
    if (status != ZC_OK)
        return status;
    if (!is_redis(kind))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "shards are for Redis servers only");
    spec->kind = kind;
    return ZC_OK;
}

static zc_status add_shards(const char *url, char *shards, zc_remote_spec *spec, char *reason,
                            size_t reason_size)
{
    if (strchr(url, '*') == NULL)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "shards given but the URL has no '*' to replace");
    zc_status status = add_each(url, shards, "shards", add_shard, spec, reason, reason_size);
    if (status != ZC_OK)
        return status;
    if (spec->server_count == 0)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "shards needs a list of names");
    return ZC_OK;
}

/* A seed at HOST[:PORT] with the first's user, password and the rest. */
static zc_status add_seed(const char *url, const char *seed, zc_remote_spec *spec, char *reason,
                          size_t reason_size)
{
    (void)url;
    zc_remote_server *server = &spec->servers[spec->server_count];
    *server = spec->servers[0];
    zc_status status = parse_host_port(seed, strlen(seed), server, reason, reason_size);
    if (status == ZC_OK)
        name_server(spec->kind, server);
    return status;
}

/* A cluster's seed nodes: the URL's, then each of seeds. Cluster nodes are
 * reached over TCP at the addresses they announce, and have database 0
 * only. */
static zc_status add_seeds(const char *url, char *seeds, zc_remote_spec *spec, char *reason,
                           size_t reason_size)
{
    zc_status status = parse_url(url, &spec->kind, &spec->servers[0], reason, reason_size);
    if (status != ZC_OK)
        return status;
    spec->server_count = 1;
    if (spec->kind != ZC_REMOTE_REDIS_TCP)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "cluster needs a redis:// or rediss:// URL (nodes are reached over TCP)");
    if (spec->servers[0].db != 0)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "a cluster has database 0 only");
    return add_each(url, seeds, "seeds", add_seed, spec, reason, reason_size);
}

static zc_status parse_servers(const char *url, attributes *attrs, zc_remote_spec *spec,
                               char *reason, size_t reason_size)
{
    if (attrs->seeds[0] != '\0' && !attrs->cluster)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "seeds needs cluster");
    if (attrs->node_hosts[0] != '\0' && !attrs->cluster)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "node-hosts needs cluster");
    memcpy(spec->node_hosts, attrs->node_hosts, sizeof spec->node_hosts);
    if (attrs->cluster && attrs->shards[0] != '\0')
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "shards and cluster exclude each other: the cluster places keys");
    size_t capacity = attrs->shards[0] != '\0' || attrs->cluster ? ZC_REMOTE_MAX_SHARDS : 1;
    spec->servers = calloc(capacity, sizeof *spec->servers);
    if (spec->servers == NULL)
        return ZC_ERR_NOMEM;
    if (attrs->shards[0] != '\0')
        return add_shards(url, attrs->shards, spec, reason, reason_size);
    if (attrs->cluster)
        return add_seeds(url, attrs->seeds, spec, reason, reason_size);
    if (strchr(url, '*') != NULL && !starts_with(url, "file:"))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "'*' in the URL needs shards=A,B,...");
    spec->server_count = 1;
    return parse_url(url, &spec->kind, &spec->servers[0], reason, reason_size);
}

/* ---- secrets and TLS: the same for every server of a storage ---- */

/* The password in buffer, without one trailing newline (CRLF too). */
static zc_status take_line(const uint8_t *buffer, size_t length, char *password, size_t size)
{
    if (length > 0 && buffer[length - 1] == '\n')
        length--;
    if (length > 0 && buffer[length - 1] == '\r')
        length--;
    if (length == 0 || length >= size || memchr(buffer, '\0', length) != NULL ||
        memchr(buffer, '\n', length) != NULL || memchr(buffer, '\r', length) != NULL)
        return ZC_ERR_INVALID_ARG;
    memcpy(password, buffer, length);
    password[length] = '\0';
    return ZC_OK;
}

/* password-file's password: its bytes up to one trailing newline (CRLF
 * too), on one line. The reason never quotes it. */
static zc_status read_password(const char *path, char *password, size_t size, char *reason,
                               size_t reason_size)
{
    uint8_t buffer[sizeof((zc_remote_server *)0)->password + 1];
    size_t length = 0;
    zc_status status =
        zc_private_file_read(path, buffer, sizeof buffer, &length, reason, reason_size);
    if (status != ZC_OK)
        return status;
    status = take_line(buffer, length, password, size);
    explicit_bzero(buffer, sizeof buffer);
    if (status != ZC_OK)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "password-file %s: expected one line of 1 to %zu bytes, no NUL", path,
                          size - 1);
    return ZC_OK;
}

/* Whether the URL's user information (up to its last '@') holds a ':',
 * which separates a password. */
static bool url_has_password(const char *url)
{
    const char *start = strstr(url, "://");
    start = start != NULL ? start + 3 : url;
    const char *at = strrchr(start, '@');
    return at != NULL && memchr(start, ':', (size_t)(at - start)) != NULL;
}

/* With password-file, "USER@" in the URL, which parse_userinfo took for a
 * password as ccache does, is the user. */
static zc_status apply_password(const char *password, zc_remote_spec *spec,
                                zc_remote_server *server, char *reason, size_t reason_size)
{
    size_t user_length = strlen(server->password);
    if (user_length >= sizeof server->user)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "user too long");
    memcpy(server->user, server->password, user_length + 1);
    snprintf(server->password, sizeof server->password, "%s", password);
    name_server(spec->kind, server);
    return ZC_OK;
}

/* The same files for rediss:// (OpenSSL) and https:// (libcurl). */
static zc_status apply_tls(const zc_remote_tls *tls, zc_remote_server *server, char *reason,
                           size_t reason_size)
{
    bool any_file =
        tls->ca_file[0] != '\0' || tls->cert_file[0] != '\0' || tls->key_file[0] != '\0';
    if (!server->tls.enabled)
        return any_file ? zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                                     "ca-file, cert-file and key-file need rediss:// or https://")
                        : ZC_OK;
    if (tls->key_file[0] != '\0' && tls->cert_file[0] == '\0')
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "key-file needs cert-file");
    memcpy(server->tls.ca_file, tls->ca_file, sizeof tls->ca_file);
    memcpy(server->tls.cert_file, tls->cert_file, sizeof tls->cert_file);
    memcpy(server->tls.key_file, tls->key_file, sizeof tls->key_file);
    return ZC_OK;
}

/* The files that hold secrets: the password read, the client key checked
 * (OpenSSL reads it at the first connection). */
static zc_status read_secrets(const attributes *attrs, const char *url, char *password,
                              size_t password_size, char *reason, size_t reason_size)
{
    zc_status status = ZC_OK;
    if (attrs->password_file[0] != '\0') {
        if (url_has_password(url))
            return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                              "a password in the URL and password-file: give one");
        status = read_password(attrs->password_file, password, password_size, reason, reason_size);
    }
    const char *key = attrs->tls.key_file[0] != '\0' ? attrs->tls.key_file : attrs->tls.cert_file;
    if (status == ZC_OK && key[0] != '\0')
        status = zc_private_file_check(key, reason, reason_size);
    return status == ZC_OK ? ZC_OK : ZC_ERR_INVALID_ARG;
}

/* The token goes into a header line as it is: visible ASCII only, so that
 * no line break can add a header of its own. */
static zc_status read_bearer_token(const char *path, zc_remote_spec *spec, char *reason,
                                   size_t reason_size)
{
    uint8_t token[ZC_REMOTE_MAX_BEARER_TOKEN + 1];
    size_t size = 0;
    if (zc_private_file_read_trimmed(path, token, sizeof token, &size, reason, reason_size) !=
        ZC_OK)
        return ZC_ERR_INVALID_ARG; /* a storage that does not parse */
    bool visible = size > 0 && size <= ZC_REMOTE_MAX_BEARER_TOKEN;
    for (size_t i = 0; i < size && visible; i++)
        visible = token[i] > ' ' && token[i] <= '~';
    if (visible && (spec->bearer_token = malloc(size + 1)) != NULL) {
        memcpy(spec->bearer_token, token, size);
        spec->bearer_token[size] = '\0';
    }
    memset(token, 0, sizeof token);
    if (!visible)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "%s must hold one token of 1 to %d visible ASCII characters", path,
                          ZC_REMOTE_MAX_BEARER_TOKEN);
    return spec->bearer_token != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

static zc_status apply_connection_attributes(const attributes *attrs, const char *url,
                                             zc_remote_spec *spec, char *reason, size_t reason_size)
{
    if (attrs->password_file[0] != '\0' && !is_redis(spec->kind))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "password-file is for Redis storages");
    if (attrs->bearer_token_file[0] != '\0' && !is_http(spec->kind))
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "bearer-token-file is for http:// and https:// only");
    zc_status status = ZC_OK;
    for (size_t i = 0; i < spec->server_count && status == ZC_OK; i++)
        status = apply_tls(&attrs->tls, &spec->servers[i], reason, reason_size);
    if (status == ZC_OK && attrs->bearer_token_file[0] != '\0')
        status = read_bearer_token(attrs->bearer_token_file, spec, reason, reason_size);
    char password[sizeof spec->servers[0].password] = "";
    if (status == ZC_OK)
        status = read_secrets(attrs, url, password, sizeof password, reason, reason_size);
    for (size_t i = 0; i < spec->server_count && status == ZC_OK && password[0] != '\0'; i++)
        status = apply_password(password, spec, &spec->servers[i], reason, reason_size);
    explicit_bzero(password, sizeof password);
    return status;
}

static void name_spec(zc_remote_spec *spec, const attributes *attrs)
{
    if (attrs->cluster)
        snprintf(spec->name, sizeof spec->name, "%s|cluster", spec->servers[0].name);
    else if (spec->server_count == 1)
        snprintf(spec->name, sizeof spec->name, "%s", spec->servers[0].name);
    else
        snprintf(spec->name, sizeof spec->name, "%s (+%zu more shards)", spec->servers[0].name,
                 spec->server_count - 1);
    if (attrs->read_only) {
        size_t length = strlen(spec->name);
        snprintf(spec->name + length, sizeof spec->name - length, "|read-only");
    }
}

zc_status zc_remote_spec_parse(const char *text, zc_remote_spec *spec, char *reason,
                               size_t reason_size)
{
    if (text == NULL || spec == NULL)
        return ZC_ERR_INVALID_ARG;
    memset(spec, 0, sizeof *spec);
    char item[ITEM_MAX];
    if (snprintf(item, sizeof item, "%s", text) >= (int)sizeof item)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "longer than %d characters",
                          ITEM_MAX - 1);
    attributes attrs = {.connect_timeout_ms = ZC_REMOTE_DEFAULT_CONNECT_TIMEOUT_MS,
                        .timeout_ms = ZC_REMOTE_DEFAULT_TIMEOUT_MS};
    char *saveptr = NULL;
    char *url = strtok_r(item, "|", &saveptr);
    if (url == NULL || strchr(text, '|') == text)
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size, "no URL");
    size_t at_length = 0;
    const char *at = zc_remote_last_at(text, &at_length);
    size_t userinfo_end = at != NULL ? (size_t)(at - text) : 0;
    zc_status status = ZC_OK;
    for (char *attr = strtok_r(NULL, "|", &saveptr); attr != NULL && status == ZC_OK;
         attr = strtok_r(NULL, "|", &saveptr))
        status = parse_attribute(attr, (size_t)(attr - item) > userinfo_end, &attrs, reason,
                                 reason_size);
    if (status == ZC_OK)
        status = parse_servers(url, &attrs, spec, reason, reason_size);
    if (status == ZC_OK)
        status = apply_connection_attributes(&attrs, url, spec, reason, reason_size);
    if (status != ZC_OK) {
        zc_remote_spec_free(spec);
        return status;
    }
    spec->read_only = attrs.read_only;
    spec->cluster = attrs.cluster;
    spec->connect_timeout_ms = attrs.connect_timeout_ms;
    spec->timeout_ms = attrs.timeout_ms;
    name_spec(spec, &attrs);
    return ZC_OK;
}

void zc_remote_spec_free(zc_remote_spec *spec)
{
    if (spec == NULL)
        return;
    free(spec->servers);
    spec->servers = NULL;
    spec->server_count = 0;
    if (spec->bearer_token != NULL) /* a secret: not left in freed memory */
        memset(spec->bearer_token, 0, strlen(spec->bearer_token));
    free(spec->bearer_token);
    spec->bearer_token = NULL;
}

zc_status zc_remote_specs_parse(const char *text, zc_remote_spec **specs, size_t *count,
                                zc_remote_complain_fn complain, void *context)
{
    if (specs == NULL || count == NULL)
        return ZC_ERR_INVALID_ARG;
    *specs = NULL;
    *count = 0;
    if (text == NULL)
        return ZC_OK;
    zc_remote_spec *list = calloc(ZC_REMOTE_MAX_STORAGES, sizeof *list);
    char *copy = strdup(text);
    if (list == NULL || copy == NULL) {
        free(list);
        free(copy);
        return ZC_ERR_NOMEM;
    }
    char *saveptr = NULL;
    for (char *item = strtok_r(copy, " \t\n", &saveptr); item != NULL;
         item = strtok_r(NULL, " \t\n", &saveptr)) {
        char reason[512] = "";
        zc_status status = ZC_ERR_INVALID_ARG;
        if (*count == ZC_REMOTE_MAX_STORAGES)
            snprintf(reason, sizeof reason, "more than %d storages", ZC_REMOTE_MAX_STORAGES);
        else
            status = zc_remote_spec_parse(item, &list[*count], reason, sizeof reason);
        if (status == ZC_OK) {
            (*count)++;
        } else if (complain != NULL) {
            char masked[ITEM_MAX];
            zc_remote_redact(item, masked, sizeof masked);
            complain(context, masked, reason);
        }
    }
    free(copy);
    *specs = list;
    return ZC_OK;
}

void zc_remote_specs_free(zc_remote_spec *specs, size_t count)
{
    if (specs == NULL)
        return;
    for (size_t i = 0; i < count; i++)
        zc_remote_spec_free(&specs[i]);
    free(specs);
}

void zc_remote_server_at(const zc_remote_server *like, const char *host, unsigned port,
                         zc_remote_server *out)
{
    *out = *like;
    snprintf(out->host, sizeof out->host, "%s", host);
    out->port = port;
    name_server(ZC_REMOTE_REDIS_TCP, out);
}
