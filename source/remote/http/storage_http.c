/* HTTP storage (http://, https://): entries as files of a web server that
 * takes PUT (nginx's WebDAV module, an S3 gateway, bazel-remote's or
 * ccache's HTTP caches), over http_client.c (libcurl, deadlines, memory
 * bounds, TLS). An entry is at URL/<a>/<b>/<64 hex>.l0_cache, the disk
 * tier's layout, with the disk tier's bytes (signed as other remote values
 * with a secret): a cache directory behind any web server is a read-only
 * HTTP storage as it is, and a directory nginx fills is a file:// storage.
 * GET reads (404: a miss), HEAD spares a PUT of an entry already there,
 * PUT writes, DELETE removes a bad one where the server allows it. No
 * cross-node lock (single flight is per node). Recorded inputs are kept as
 * in Redis (signed with a secret) at URL/inputs/recipe/<64 hex of the key>
 * and URL/inputs/spirv/<64 hex of the SPIR-V's SHA-256>, outside the disk
 * tier's layout (whose scans pass other names by), and prewarm lists the
 * recipes with a WebDAV PROPFIND (nginx's dav-ext module); a server
 * without PROPFIND lists nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dav_listing.h"
#include "disk_internal.h"
#include "http_client.h"
#include "../redis/redis_value_file.h"
#include "zecache/disk_recipes.h"
#include "zecache/entry.h"
#include "zecache/log.h"
#include "zecache/storage.h"

typedef struct http_storage {
    zc_storage base;
    zc_http_client *client;
    char name[sizeof(((zc_remote_spec *)0)->name)];
    uint64_t max_payload;
    const zc_remote_secret *secret;
    char temp_dir[PATH_MAX]; /* for entries too large to hold */
} http_storage;

#define INPUTS_DIR "inputs/"
#define RECIPE_DIR "recipe/"
#define SPIRV_DIR "spirv/"
/* A listing's bound, as SCAN's in Redis: 2^20 recorded keys. */
enum { LISTING_MAX_KEYS = 1 << 20 };

typedef struct http_call {
    const char *method;
    char path[sizeof INPUTS_DIR RECIPE_DIR + ZC_KEY_HEX_SIZE + ZC_ENTRY_REL_SIZE];
    long status;
    char reason[320]; /* libcurl's error text and more */
} http_call;

static http_call call_for(const char *method, const zc_key *key)
{
    http_call call = {.method = method};
    zc_disk_entry_rel_path(key, call.path);
    return call;
}

/* Logged, and kept for zecache remote check. */
static zc_status failed(const http_storage *http, const http_call *call, zc_status status)
{
    zc_log_info("remote %s: %s %s: %s", http->name, call->method, call->path, call->reason);
    zc_storage_note_problem("%s: %s", call->method, call->reason);
    return status;
}

/* An answer that is no success: the server is sick (5xx, or a status an
 * entry's URL never has) or refuses (4xx: a wrong token, a read-only
 * server). Only the first counts towards leaving the storage alone. */
static zc_status refused(const http_storage *http, http_call *call)
{
    snprintf(call->reason, sizeof call->reason, "HTTP %ld", call->status);
    bool client_error = call->status >= 400 && call->status < 500;
    return failed(http, call, client_error ? ZC_ERR_DISABLED : ZC_ERR_IO);
}

static zc_status send_request(http_storage *http, http_call *call, zc_http_method method,
                              const uint8_t *upload, size_t upload_size, zc_http_body *body)
{
    zc_status status = zc_http_request(http->client, method, call->path, upload, upload_size, body,
                                       &call->status, call->reason, sizeof call->reason);
    return status == ZC_OK ? ZC_OK : failed(http, call, status);
}

/* A value that is no entry of the key: an empty value, which the caller
 * rejects, counts and replaces. */
static zc_status bad_value(uint8_t **value, size_t *size)
{
    *value = malloc(1);
    *size = 0;
    return *value != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

/* The body as the remote tier takes it: in memory as it came, or verified
 * in its file first. */
static zc_status take_body(http_storage *http, http_call *call, zc_http_body *body,
                           zc_redis_value_file *file, uint8_t **value, size_t *size)
{
    if (!body->streamed) {
        if (body->bytes == NULL)
            return bad_value(value, size);
        *value = body->bytes;
        *size = body->size;
        return ZC_OK;
    }
    zc_status status =
        zc_redis_value_file_take(file, value, size, call->reason, sizeof call->reason);
    if (status != ZC_MISS)
        return status;
    zc_log_info("remote %s: GET %s: %s", http->name, call->path, call->reason);
    return bad_value(value, size);
}

static zc_status http_get(zc_storage *storage, const zc_key *key, uint8_t **value, size_t *size)
{
    http_storage *http = (http_storage *)storage;
    http_call call = call_for("GET", key);
    zc_redis_value_file file;
    zc_redis_value_file_init(&file, http->temp_dir, key, http->max_payload, http->secret);
    zc_redis_sink sink = zc_redis_value_file_sink(&file);
    zc_http_body body = {.sink = &sink};
    zc_status status = send_request(http, &call, ZC_HTTP_GET, NULL, 0, &body);
    if (status != ZC_OK) /* refused for its header: there, but bad */
        status = file.bad_head ? bad_value(value, size) : status;
    else if (call.status == 200)
        status = take_body(http, &call, &body, &file, value, size);
    else if (call.status == 404 || call.status == 410)
        status = ZC_MISS;
    else
        status = refused(http, &call);
    if (status != ZC_OK || *value != body.bytes)
        free(body.bytes);
    zc_redis_value_file_close(&file);
    return status;
}

/* An existing value is kept unless it is to be replaced (a bad one): HEAD
 * spares sending an entry another node stored meanwhile. */
static zc_status http_put(zc_storage *storage, const zc_key *key, const uint8_t *value, size_t size,
                          bool replace)
{
    http_storage *http = (http_storage *)storage;
    http_call call = call_for("HEAD", key);
    if (!replace) {
        zc_status status = send_request(http, &call, ZC_HTTP_HEAD, NULL, 0, NULL);
        if (status != ZC_OK || call.status == 200)
            return status;
    }
    call = call_for("PUT", key);
    zc_status status = send_request(http, &call, ZC_HTTP_PUT, value, size, NULL);
    if (status != ZC_OK || call.status == 200 || call.status == 201 || call.status == 204)
        return status;
    return refused(http, &call);
}

static zc_status http_remove(zc_storage *storage, const zc_key *key)
{
    http_storage *http = (http_storage *)storage;
    http_call call = call_for("DELETE", key);
    zc_status status = send_request(http, &call, ZC_HTTP_DELETE, NULL, 0, NULL);
    if (status != ZC_OK || (call.status >= 200 && call.status < 300) || call.status == 404)
        return status;
    return refused(http, &call);
}

/* ---- recorded inputs ---- */

static http_call input_call(const char *method, zc_storage_input kind, const uint8_t id[32])
{
    http_call call = {.method = method};
    zc_key key;
    memcpy(key.bytes, id, sizeof key.bytes);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&key, hex);
    snprintf(call.path, sizeof call.path, INPUTS_DIR "%s%s",
             kind == ZC_STORAGE_RECIPE ? RECIPE_DIR : SPIRV_DIR, hex);
    return call;
}

static zc_status put_input(http_storage *http, zc_storage_input kind, const uint8_t id[32],
                           const uint8_t *value, size_t size)
{
    http_call call = input_call("PUT", kind, id);
    zc_status status = send_request(http, &call, ZC_HTTP_PUT, value, size, NULL);
    if (status != ZC_OK || call.status == 200 || call.status == 201 || call.status == 204)
        return status;
    return refused(http, &call);
}

/* As in Redis: only beside an entry that is there; each SPIR-V put again,
 * so that a damaged or planted one is repaired, then the recipe, so that a
 * recipe never names SPIR-V not yet there. */
static zc_status http_record(zc_storage *storage, const zc_key *key, const uint8_t *recipe,
                             size_t recipe_size, const zc_input_blob *blobs, size_t blob_count)
{
    http_storage *http = (http_storage *)storage;
    http_call call = call_for("HEAD", key);
    zc_status status = send_request(http, &call, ZC_HTTP_HEAD, NULL, 0, NULL);
    if (status == ZC_OK && call.status != 200)
        status = call.status == 404 ? ZC_MISS : refused(http, &call);
    for (size_t i = 0; i < blob_count && status == ZC_OK; i++)
        status = put_input(http, ZC_STORAGE_SPIRV, blobs[i].sha256, blobs[i].bytes, blobs[i].size);
    if (status != ZC_OK)
        return status;
    return put_input(http, ZC_STORAGE_RECIPE, key->bytes, recipe, recipe_size);
}

/* Recipes and SPIR-V are held in memory: one too large to hold is refused,
 * as in Redis. */
static zc_status http_get_input(zc_storage *storage, zc_storage_input kind, const uint8_t id[32],
                                uint8_t **value, size_t *size)
{
    http_storage *http = (http_storage *)storage;
    http_call call = input_call("GET", kind, id);
    zc_http_body body = {.sink = NULL};
    zc_status status = send_request(http, &call, ZC_HTTP_GET, NULL, 0, &body);
    if (status == ZC_OK && call.status == 200)
        return take_body(http, &call, &body, NULL, value, size);
    free(body.bytes);
    if (status != ZC_OK)
        return status;
    return call.status == 404 || call.status == 410 ? ZC_MISS : refused(http, &call);
}

static bool feed_listing(void *context, uint64_t length, const uint8_t *bytes, size_t size,
                         char *why, size_t why_size)
{
    (void)length;
    zc_dav_listing *listing = context;
    if (zc_dav_listing_feed(listing, bytes, size))
        return true;
    snprintf(why, why_size, "%s",
             listing->stopped ? "the listing was stopped"
                              : "more recorded keys than any cache holds: stopped");
    return false;
}

/* PROPFIND of URL/inputs/recipe/. None there (404), or a server without
 * PROPFIND (405, 501): nothing listed. */
static zc_status http_list_recipes(zc_storage *storage, zc_storage_recipe_fn each, void *context)
{
    http_storage *http = (http_storage *)storage;
    http_call call = {.method = "PROPFIND", .path = INPUTS_DIR RECIPE_DIR};
    zc_dav_listing listing;
    zc_dav_listing_init(&listing, RECIPE_DIR, LISTING_MAX_KEYS, each, context);
    zc_redis_sink sink = {feed_listing, &listing};
    zc_http_body body = {.sink = &sink};
    zc_status status = send_request(http, &call, ZC_HTTP_PROPFIND, NULL, 0, &body);
    if (listing.stopped)
        return ZC_OK;
    if (status != ZC_OK)
        return listing.over_limit ? ZC_ERR_DISABLED : status;
    if (call.status == 207 || call.status == 404)
        return ZC_OK;
    if (call.status == 405 || call.status == 501) {
        zc_log_info("remote %s: PROPFIND refused (HTTP %ld): no recorded inputs listed", http->name,
                    call.status);
        return ZC_OK;
    }
    return refused(http, &call);
}

static void http_close(zc_storage *storage)
{
    http_storage *http = (http_storage *)storage;
    zc_http_client_free(http->client);
    free(http);
}

static const zc_storage_ops http_ops = {
    .get = http_get,
    .put = http_put,
    .remove = http_remove,
    .claim = NULL,
    .release = NULL,
    .record = http_record,
    .record_signed = true,
    .get_input = http_get_input,
    .list_recipes = http_list_recipes,
    .close = http_close,
};

zc_status zc_storage_http_open(const zc_remote_spec *spec, uint64_t max_payload,
                               const char *temp_dir, zc_storage **out)
{
    if (spec == NULL || (spec->kind != ZC_REMOTE_HTTP && spec->kind != ZC_REMOTE_HTTPS) ||
        spec->server_count != 1 || out == NULL)
        return ZC_ERR_INVALID_ARG;
    http_storage *http = calloc(1, sizeof *http);
    if (http == NULL)
        return ZC_ERR_NOMEM;
    /* Nothing larger than a valid entry (signed, at worst) is ever read. */
    uint64_t max_body = zc_entry_size_bound(max_payload);
    char reason[320] = "";
    http->client = zc_http_client_new(spec, max_body, reason, sizeof reason);
    if (http->client == NULL) {
        zc_log_info("remote %s: %s", spec->name, reason);
        zc_storage_note_problem("%s", reason);
        free(http);
        return ZC_ERR_DISABLED;
    }
    snprintf(http->name, sizeof http->name, "%s", spec->name);
    snprintf(http->temp_dir, sizeof http->temp_dir, "%s", temp_dir != NULL ? temp_dir : "");
    http->max_payload = max_payload;
    http->secret = spec->secret;
    http->base = (zc_storage){.ops = &http_ops, .name = http->name, .read_only = spec->read_only};
    *out = &http->base;
    return ZC_OK;
}
