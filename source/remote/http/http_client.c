/* See http_client.h. */
#include "http_client.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "curl_api.h"
#include "../tls/trust_store.h"

/* Idle handles kept: each keeps its connection open for the next request. */
enum { IDLE_HANDLES = 4 };

struct zc_http_client {
    const zc_curl_api *curl;
    _Atomic(CURL *) idle[IDLE_HANDLES];
    pid_t owner;                                  /* the process whose handles idle holds */
    struct curl_slist *headers, *listing_headers; /* the second with Depth: 1 */
    char base[16 + sizeof(((zc_remote_server *)0)->host) + PATH_MAX];
    bool https;
    zc_trust_store trust;
    char cert_file[PATH_MAX], key_file[PATH_MAX]; /* "": no client certificate */
    long connect_timeout_ms, timeout_ms, listing_timeout_ms;
    uint64_t max_body;
};

/* One request's state, as libcurl's callbacks see it. */
typedef struct transfer {
    zc_http_client *client;
    CURL *handle;
    zc_http_method method;
    zc_http_body *body; /* NULL: any body is discarded */
    bool taking;        /* the body is a 200's, kept */
    bool started;
    uint64_t announced; /* UINT64_MAX: no Content-Length */
    uint64_t received;  /* of a listing */
    size_t capacity;
    const uint8_t *upload;
    size_t upload_size, uploaded;
    char refusal[160]; /* why the body was refused, "" if it was not */
} transfer;

static void base_url(const zc_remote_spec *spec, char *out, size_t size)
{
    const zc_remote_server *server = &spec->servers[0];
    bool ipv6 = strchr(server->host, ':') != NULL;
    snprintf(out, size, "%s://%s%s%s:%u%s", spec->kind == ZC_REMOTE_HTTPS ? "https" : "http",
             ipv6 ? "[" : "", server->host, ipv6 ? "]" : "", server->port, server->path);
}

/* "Expect:" keeps libcurl from waiting for a 100 Continue before a large
 * body, a second a PUT that servers need not answer. */
static struct curl_slist *make_headers(const zc_curl_api *curl, const char *token,
                                       const char *first)
{
    struct curl_slist *headers = curl->slist_append(NULL, first);
    if (headers != NULL && strcmp(first, "Expect:") != 0 &&
        curl->slist_append(headers, "Expect:") == NULL) {
        curl->slist_free_all(headers);
        return NULL;
    }
    if (headers == NULL || token == NULL)
        return headers;
    size_t size = strlen("Authorization: Bearer ") + strlen(token) + 1;
    char *line = malloc(size);
    struct curl_slist *more = NULL;
    if (line != NULL) {
        snprintf(line, size, "Authorization: Bearer %s", token);
        more = curl->slist_append(headers, line);
        memset(line, 0, size);
        free(line);
    }
    if (more == NULL)
        curl->slist_free_all(headers);
    return more;
}

/* The server's CAs and the client certificate of an https:// spec. */
static bool take_tls(zc_http_client *client, const zc_remote_spec *spec, char *reason,
                     size_t reason_size)
{
    const zc_remote_tls *tls = &spec->servers[0].tls;
    client->https = spec->kind == ZC_REMOTE_HTTPS;
    if (!client->https)
        return true;
    snprintf(client->cert_file, sizeof client->cert_file, "%s", tls->cert_file);
    snprintf(client->key_file, sizeof client->key_file, "%s",
             tls->key_file[0] != '\0' ? tls->key_file : tls->cert_file);
    return zc_trust_store_choose(tls->ca_file, &client->trust, reason, reason_size) == ZC_OK;
}

zc_http_client *zc_http_client_new(const zc_remote_spec *spec, uint64_t max_body, char *reason,
                                   size_t reason_size)
{
    const zc_curl_api *curl = zc_curl_api_get(reason, reason_size);
    if (curl == NULL)
        return NULL;
    zc_http_client *client = calloc(1, sizeof *client);
    struct curl_slist *headers = make_headers(curl, spec->bearer_token, "Expect:");
    struct curl_slist *listing_headers = make_headers(curl, spec->bearer_token, "Depth: 1");
    if (client == NULL || headers == NULL || listing_headers == NULL) {
        free(client);
        if (headers != NULL)
            curl->slist_free_all(headers);
        if (listing_headers != NULL)
            curl->slist_free_all(listing_headers);
        snprintf(reason, reason_size, "out of memory");
        return NULL;
    }
    client->curl = curl;
    for (int i = 0; i < IDLE_HANDLES; i++)
        atomic_init(&client->idle[i], NULL);
    client->owner = getpid();
    client->headers = headers;
    client->listing_headers = listing_headers;
    base_url(spec, client->base, sizeof client->base);
    if (!take_tls(client, spec, reason, reason_size)) {
        zc_http_client_free(client);
        return NULL;
    }
    client->connect_timeout_ms = (long)spec->connect_timeout_ms;
    client->timeout_ms = (long)spec->connect_timeout_ms + (long)spec->timeout_ms;
    client->listing_timeout_ms =
        (long)spec->connect_timeout_ms + (spec->timeout_ms > ZC_HTTP_LISTING_MIN_TIMEOUT_MS
                                              ? (long)spec->timeout_ms
                                              : ZC_HTTP_LISTING_MIN_TIMEOUT_MS);
    client->max_body = max_body;
    return client;
}

void zc_http_client_free(zc_http_client *client)
{
    if (client == NULL)
        return;
    /* A child's copies share their sockets with the parent: closing them
     * would end the parent's TLS sessions. Left as they are. */
    for (int i = 0; i < IDLE_HANDLES && client->owner == getpid(); i++) {
        CURL *handle = atomic_exchange(&client->idle[i], NULL);
        if (handle != NULL)
            client->curl->easy_cleanup(handle);
    }
    client->curl->slist_free_all(client->headers);
    client->curl->slist_free_all(client->listing_headers);
    free(client);
}

static CURL *take_handle(zc_http_client *client)
{
    for (int i = 0; i < IDLE_HANDLES && client->owner == getpid(); i++) {
        CURL *handle = atomic_exchange(&client->idle[i], NULL);
        if (handle != NULL)
            return handle;
    }
    return client->curl->easy_init();
}

static void give_back(zc_http_client *client, CURL *handle)
{
    if (client->owner == getpid()) {
        client->curl->easy_reset(handle); /* keeps the connection */
        for (int i = 0; i < IDLE_HANDLES; i++) {
            CURL *none = NULL;
            if (atomic_compare_exchange_strong(&client->idle[i], &none, handle))
                return;
        }
    }
    client->curl->easy_cleanup(handle);
}

/* ---- the body ---- */

/* At the body's first bytes: whether it is kept, and its announced size. */
static void start_body(transfer *t)
{
    t->started = true;
    long code = 0;
    curl_off_t length = -1;
    t->client->curl->easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &code);
    t->client->curl->easy_getinfo(t->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    t->taking = t->body != NULL && code == (t->method == ZC_HTTP_PROPFIND ? 207 : 200);
    t->announced = length >= 0 ? (uint64_t)length : UINT64_MAX;
}

static bool refuse(transfer *t, uint64_t size, const char *what)
{
    snprintf(t->refusal, sizeof t->refusal, "a body of %s%llu bytes: %s",
             t->announced == UINT64_MAX ? "at least " : "", (unsigned long long)size, what);
    return false;
}

static bool keep_in_memory(transfer *t, const char *bytes, size_t size)
{
    zc_http_body *body = t->body;
    if (body->size + size > t->capacity) {
        size_t wanted = t->announced != UINT64_MAX ? (size_t)t->announced : 2 * t->capacity;
        if (wanted < body->size + size)
            wanted = body->size + size;
        if (wanted < 65536)
            wanted = 65536;
        if (wanted > ZC_REDIS_IN_MEMORY_MAX)
            wanted = ZC_REDIS_IN_MEMORY_MAX;
        uint8_t *grown = realloc(body->bytes, wanted);
        if (grown == NULL)
            return refuse(t, body->size + size, "out of memory");
        body->bytes = grown;
        t->capacity = wanted;
    }
    memcpy(body->bytes + body->size, bytes, size);
    body->size += size;
    return true;
}

/* A body kept: refused past max_body or, not streamed, past what is held in
 * memory; streamed when announced larger than that. */
static bool take_piece(transfer *t, const char *bytes, size_t size)
{
    zc_http_body *body = t->body;
    uint64_t total = (body->streamed ? 0 : body->size) + size;
    uint64_t expected = t->announced != UINT64_MAX ? t->announced : total;
    if (expected > t->client->max_body || total > t->client->max_body)
        return refuse(t, expected > total ? expected : total, "larger than any entry");
    if (t->announced != UINT64_MAX && t->announced > ZC_REDIS_IN_MEMORY_MAX) {
        if (body->sink == NULL)
            return refuse(t, expected, "too large to hold, and nowhere to stream it");
        body->streamed = true;
        return body->sink->write(body->sink->context, t->announced, (const uint8_t *)bytes, size,
                                 t->refusal, sizeof t->refusal);
    }
    if (total > ZC_REDIS_IN_MEMORY_MAX)
        return refuse(t, total, "too large to hold without a Content-Length");
    return keep_in_memory(t, bytes, size);
}

/* A listing's every piece to the sink, up to ZC_HTTP_MAX_LISTING. */
static bool take_listing(transfer *t, const char *bytes, size_t size)
{
    t->received += size;
    if (t->received > ZC_HTTP_MAX_LISTING)
        return refuse(t, t->received, "more than any listing");
    t->body->streamed = true;
    return t->body->sink->write(t->body->sink->context, t->announced, (const uint8_t *)bytes, size,
                                t->refusal, sizeof t->refusal);
}

static size_t write_body(char *bytes, size_t one, size_t count, void *context)
{
    transfer *t = context;
    size_t size = one * count;
    if (!t->started)
        start_body(t);
    if (!t->taking || size == 0)
        return size; /* an error page, or a HEAD's: not kept */
    bool taken =
        t->method == ZC_HTTP_PROPFIND ? take_listing(t, bytes, size) : take_piece(t, bytes, size);
    return taken ? size : 0;
}

static size_t read_upload(char *buffer, size_t one, size_t count, void *context)
{
    transfer *t = context;
    size_t take = t->upload_size - t->uploaded;
    if (take > one * count)
        take = one * count;
    memcpy(buffer, t->upload + t->uploaded, take);
    t->uploaded += take;
    return take;
}

/* ---- the request ---- */

static void set_method(const zc_curl_api *curl, transfer *t, zc_http_method method)
{
    if (method == ZC_HTTP_HEAD) {
        curl->easy_setopt(t->handle, CURLOPT_NOBODY, 1L);
    } else if (method == ZC_HTTP_DELETE || method == ZC_HTTP_PROPFIND) {
        curl->easy_setopt(t->handle, CURLOPT_CUSTOMREQUEST,
                          method == ZC_HTTP_DELETE ? "DELETE" : "PROPFIND");
    } else if (method == ZC_HTTP_PUT) {
        curl->easy_setopt(t->handle, CURLOPT_UPLOAD, 1L);
        curl->easy_setopt(t->handle, CURLOPT_READFUNCTION, read_upload);
        curl->easy_setopt(t->handle, CURLOPT_READDATA, t);
        curl->easy_setopt(t->handle, CURLOPT_INFILESIZE_LARGE, (curl_off_t)t->upload_size);
    }
}

static const char *or_null(const char *path)
{
    return path[0] != '\0' ? path : NULL;
}

/* trust_store.h's CAs, replacing libcurl's own (its CA file and
 * directory, built in: a ca-file would not pin otherwise). */
static void set_tls_options(zc_http_client *client, CURL *h)
{
    const zc_curl_api *curl = client->curl;
    curl->easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl->easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    curl->easy_setopt(h, CURLOPT_CAINFO, or_null(client->trust.file));
    curl->easy_setopt(h, CURLOPT_CAPATH, or_null(client->trust.dir));
    if (client->cert_file[0] == '\0')
        return;
    curl->easy_setopt(h, CURLOPT_SSLCERT, client->cert_file);
    curl->easy_setopt(h, CURLOPT_SSLKEY, client->key_file);
    /* An empty passphrase: a key that has one fails to load rather than
     * OpenSSL asking for it on the application's terminal. */
    curl->easy_setopt(h, CURLOPT_KEYPASSWD, "");
}

/* Every option, set again on each request (a handle is reset between). */
static void set_options(zc_http_client *client, transfer *t, const char *url, char *error)
{
    const zc_curl_api *curl = client->curl;
    CURL *h = t->handle;
    curl->easy_setopt(h, CURLOPT_URL, url);
    curl->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    /* No signals (alarm() for name lookups) in the application's process. */
    curl->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, client->connect_timeout_ms);
    bool listing = t->method == ZC_HTTP_PROPFIND;
    curl->easy_setopt(h, CURLOPT_TIMEOUT_MS,
                      listing ? client->listing_timeout_ms : client->timeout_ms);
    if (client->https)
        set_tls_options(client, h);
    curl->easy_setopt(h, CURLOPT_HTTPHEADER, listing ? client->listing_headers : client->headers);
    curl->easy_setopt(h, CURLOPT_ERRORBUFFER, error);
    curl->easy_setopt(h, CURLOPT_WRITEFUNCTION, write_body);
    curl->easy_setopt(h, CURLOPT_WRITEDATA, t);
}

static zc_status finish(zc_http_client *client, transfer *t, CURLcode code, const char *error,
                        long *status, char *reason, size_t reason_size)
{
    if (code == CURLE_OK) {
        client->curl->easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, status);
        return ZC_OK;
    }
    if (t->refusal[0] != '\0')
        return zc_explain(ZC_ERR_IO, reason, reason_size, "%s", t->refusal);
    return zc_explain(ZC_ERR_IO, reason, reason_size, "%s",
                      error[0] != '\0' ? error : client->curl->easy_strerror(code));
}

zc_status zc_http_request(zc_http_client *client, zc_http_method method, const char *path,
                          const uint8_t *upload, size_t upload_size, zc_http_body *body,
                          long *status, char *reason, size_t reason_size)
{
    *status = 0;
    size_t url_size = strlen(client->base) + strlen(path) + 2;
    char *url = malloc(url_size);
    transfer t = {.client = client,
                  .method = method,
                  .body = body,
                  .upload = upload,
                  .upload_size = upload_size};
    t.handle = url != NULL ? take_handle(client) : NULL;
    if (t.handle == NULL) {
        free(url);
        return zc_explain(ZC_ERR_NOMEM, reason, reason_size, "out of memory");
    }
    snprintf(url, url_size, "%s/%s", client->base, path);
    char error[CURL_ERROR_SIZE] = "";
    set_options(client, &t, url, error);
    set_method(client->curl, &t, method);
    CURLcode code = client->curl->easy_perform(t.handle);
    zc_status result = finish(client, &t, code, error, status, reason, reason_size);
    give_back(client, t.handle);
    free(url);
    if (result != ZC_OK && body != NULL) {
        free(body->bytes);
        body->bytes = NULL;
        body->size = 0;
    }
    return result;
}
