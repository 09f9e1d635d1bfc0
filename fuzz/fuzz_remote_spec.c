/* NEO_CACHE_REMOTE, fuzzed through zc_remote_specs_parse. Input: the
 * variable's value (bytes up to the first NUL). Properties: no read or write
 * outside its buffers (the sanitizers); every storage that parses is within
 * the documented limits, with NUL-terminated fields; no name meant for
 * messages shows a password; every complaint names a storage and a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "zecache/remote_spec.h"

#define TERMINATED(field) (strnlen((field), sizeof(field)) < sizeof(field))

static void check_complaint(void *context, const char *storage, const char *reason)
{
    (void)context;
    FUZZ_CHECK(storage != NULL && reason != NULL && reason[0] != '\0');
}

/* A password shown as user:password@ would be a leak; "***" is the mask. */
static void check_masked(const char *name, const char *password)
{
    size_t length = strlen(password);
    if (length == 0 || strspn(password, "*") == length)
        return;
    char shown[sizeof(((zc_remote_server *)0)->password) + 2];
    snprintf(shown, sizeof shown, ":%s@", password);
    FUZZ_CHECK(strstr(name, shown) == NULL);
}

static void check_server(const zc_remote_spec *spec, const zc_remote_server *server)
{
    FUZZ_CHECK(TERMINATED(server->host) && TERMINATED(server->path) && TERMINATED(server->user) &&
               TERMINATED(server->password) && TERMINATED(server->name));
    bool http = spec->kind == ZC_REMOTE_HTTP || spec->kind == ZC_REMOTE_HTTPS;
    if (spec->kind == ZC_REMOTE_REDIS_TCP || http)
        FUZZ_CHECK(server->host[0] != '\0' && server->port > 0 && server->port <= 65535);
    if (http)
        FUZZ_CHECK(server->path[0] == '\0' || server->path[0] == '/');
    else if (spec->kind != ZC_REMOTE_REDIS_TCP)
        FUZZ_CHECK(server->path[0] == '/');
    check_masked(server->name, server->password);
    check_masked(spec->name, server->password);
    /* TLS: rediss:// (TCP) and https:// only; its files only with it, and
     * https:// takes no client certificate. */
    const zc_remote_tls *tls = &server->tls;
    FUZZ_CHECK(TERMINATED(tls->ca_file) && TERMINATED(tls->cert_file) && TERMINATED(tls->key_file));
    FUZZ_CHECK(tls->enabled == (spec->kind == ZC_REMOTE_HTTPS) ||
               spec->kind == ZC_REMOTE_REDIS_TCP);
    FUZZ_CHECK(tls->enabled ||
               (tls->ca_file[0] == '\0' && tls->cert_file[0] == '\0' && tls->key_file[0] == '\0'));
    FUZZ_CHECK(!http || (tls->cert_file[0] == '\0' && tls->key_file[0] == '\0'));
}

static void check_spec(const zc_remote_spec *spec)
{
    FUZZ_CHECK(spec->kind == ZC_REMOTE_REDIS_TCP || spec->kind == ZC_REMOTE_REDIS_UNIX ||
               spec->kind == ZC_REMOTE_FILE || spec->kind == ZC_REMOTE_HTTP ||
               spec->kind == ZC_REMOTE_HTTPS);
    FUZZ_CHECK(spec->kind == ZC_REMOTE_HTTP || spec->kind == ZC_REMOTE_HTTPS ||
               spec->bearer_token == NULL);
    FUZZ_CHECK(spec->server_count >= 1 && spec->server_count <= ZC_REMOTE_MAX_SHARDS);
    FUZZ_CHECK(spec->kind != ZC_REMOTE_FILE || spec->server_count == 1);
    FUZZ_CHECK(spec->connect_timeout_ms <= ZC_REMOTE_MAX_TIMEOUT_MS &&
               spec->timeout_ms <= ZC_REMOTE_MAX_TIMEOUT_MS);
    FUZZ_CHECK(TERMINATED(spec->name));
    /* A cluster's seeds: TCP nodes of database 0 (the only one a cluster has). */
    FUZZ_CHECK(!spec->cluster || spec->kind == ZC_REMOTE_REDIS_TCP);
    for (size_t i = 0; i < spec->server_count; i++) {
        check_server(spec, &spec->servers[i]);
        FUZZ_CHECK(!spec->cluster || spec->servers[i].db == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    zc_remote_spec *specs = NULL;
    size_t count = 0;
    FUZZ_CHECK(zc_remote_specs_parse(text, &specs, &count, check_complaint, NULL) == ZC_OK);
    FUZZ_CHECK(count <= ZC_REMOTE_MAX_STORAGES);
    for (size_t i = 0; i < count; i++)
        check_spec(&specs[i]);
    zc_remote_specs_free(specs, count);
    free(text);
    return 0;
}
