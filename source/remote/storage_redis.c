/* Redis storage: entries, build locks, recorded inputs and shards, over
 * redis_connection.c (the transport: connecting, deadlines, SIGPIPE, reply
 * limits). One string value per entry under
 * ZC_REDIS_ENTRY_PREFIX<hex> (GET, SET, DEL), per recipe under
 * ZC_REDIS_RECIPE_PREFIX<hex> and per distinct SPIR-V under
 * ZC_REDIS_SPIRV_PREFIX<sha256 hex> (SET NX); build locks are
 * SET ZC_REDIS_LOCK_PREFIX<hex> <token> NX PX <ms>, released only by their
 * taker (a script compares the token). With shards, each key lives on the
 * server whose name scores highest for it (rendezvous hashing), so adding a
 * server moves only the keys it wins.
 *
 * Every command finishes or fails within the connect and command timeouts,
 * whatever the server does. A failed command drops the connection (a late
 * reply must not answer the next command); the next one connects again, and
 * remote.c stops using a storage that keeps failing. One connection per
 * server per process. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "monotonic_clock.h"
#include "redis_connection.h"
#include "zecache/disk_recipes.h"
#include "zecache/log.h"
#include "zecache/sha256.h"
#include "zecache/storage.h"

enum { FIRST_POLL_MS = 5, MAX_POLL_MS = 100, MIN_LOCK_MS = 1000, MAX_LOCK_MS = 600000 };
#define SCAN_BATCH "256"

/* ready: the entry exists; claimed: the lock is ours; failed: the holder
 * stored no entry (its build or store failed, or admission kept the module
 * out); busy: another holds it. */
static const char claim_script[] =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 'ready' end\n"
    "if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'claimed' end\n"
    "if redis.call('GET', KEYS[2]) == '" ZC_REDIS_FAILED_MARK "' then return 'failed' end\n"
    "return 'busy'\n";

/* Only the taker's token may delete the lock, or mark it failed. */
static const char release_script[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "if ARGV[2] == '1' then\n"
    "  redis.call('SET', KEYS[1], '" ZC_REDIS_FAILED_MARK "', 'PX', ARGV[3])\n"
    "  return 1\n"
    "end\n"
    "return redis.call('DEL', KEYS[1])\n";

#define NAMESPACE_SIZE sizeof(((zc_remote_spec *)0)->key_namespace)

typedef struct redis_storage {
    zc_storage base;
    size_t server_count;
    zc_redis_connection **servers;
    char name[sizeof(((zc_remote_spec *)0)->name)];
    char key_namespace[NAMESPACE_SIZE];
} redis_storage;

typedef struct redis_key {
    char entry[sizeof ZC_REDIS_ENTRY_PREFIX + NAMESPACE_SIZE + ZC_KEY_HEX_SIZE];
    char lock[sizeof ZC_REDIS_LOCK_PREFIX + NAMESPACE_SIZE + ZC_KEY_HEX_SIZE];
} redis_key;

/* zecache:v1:[<namespace>]<hex> and zecache:v1:[<namespace>]lock:<hex>. */
static void redis_key_of(const redis_storage *redis, const zc_key *key, redis_key *names)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(names->entry, sizeof names->entry, ZC_REDIS_ENTRY_PREFIX "%s%s", redis->key_namespace,
             hex);
    snprintf(names->lock, sizeof names->lock, ZC_REDIS_ENTRY_PREFIX "%s" ZC_REDIS_LOCK_INFIX "%s",
             redis->key_namespace, hex);
}

typedef char input_name[sizeof ZC_REDIS_RECIPE_PREFIX + NAMESPACE_SIZE + ZC_KEY_HEX_SIZE];

/* zecache:v1:[<namespace>]recipe:<hex of the key> or spirv:<hex of the
 * SHA-256>. Either lives on the server its 32 bytes pick as a key's would: a
 * recipe beside its entry. */
static void input_name_of(const redis_storage *redis, zc_storage_input kind, const zc_key *id,
                          input_name name)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(id, hex);
    snprintf(name, sizeof(input_name), ZC_REDIS_ENTRY_PREFIX "%s%s%s", redis->key_namespace,
             kind == ZC_STORAGE_RECIPE ? ZC_REDIS_RECIPE_INFIX : ZC_REDIS_SPIRV_INFIX, hex);
}

/* ---- rendezvous hashing ---- */

static uint64_t shard_score(const zc_key *key, const char *server_name)
{
    uint8_t digest[ZC_SHA256_SIZE];
    zc_sha256 *hash = zc_sha256_create();
    bool ok = hash != NULL && zc_sha256_update(hash, key->bytes, ZC_KEY_SIZE) &&
              zc_sha256_update(hash, server_name, strlen(server_name)) &&
              zc_sha256_finish(hash, digest);
    zc_sha256_destroy(hash);
    uint64_t score = 0;
    for (int i = 0; ok && i < 8; i++)
        score = score << 8 | digest[i];
    return score;
}

static zc_redis_connection *server_for(redis_storage *redis, const zc_key *key)
{
    size_t best = 0;
    uint64_t best_score = 0;
    for (size_t i = 0; i < redis->server_count && redis->server_count > 1; i++) {
        uint64_t score = shard_score(key, zc_redis_connection_name(redis->servers[i]));
        if (i == 0 || score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return redis->servers[best];
}

/* One command on key's server, connecting first if needed, within the
 * storage's deadlines. NULL (logged) when the server could not be reached or
 * did not answer in time. */
static redisReply *run_command(redis_storage *redis, const zc_key *key, int argc, const char **argv,
                               const size_t *lengths)
{
    return zc_redis_command(server_for(redis, key), argc, argv, lengths);
}

static void log_failure(const zc_redis_connection *server, const char *what, const char *detail)
{
    zc_log_info("remote %s: %s: %s", zc_redis_connection_name(server), what, detail);
}

/* An error reply: the server answered and refused (OOM, WRONGTYPE, ...). */
static zc_status refused(redis_storage *redis, const zc_key *key, redisReply *reply,
                         const char *what)
{
    log_failure(server_for(redis, key), what, reply->str != NULL ? reply->str : "error");
    freeReplyObject(reply);
    return ZC_ERR_DISABLED;
}

/* ---- the storage operations ---- */

/* GET name on shard's server: ZC_OK with the value, ZC_MISS when none. */
static zc_status get_value(redis_storage *redis, const zc_key *shard, const char *name,
                           uint8_t **value, size_t *size)
{
    redisReply *reply = run_command(redis, shard, 2, (const char *[]){"GET", name}, NULL);
    if (reply == NULL)
        return ZC_ERR_IO;
    if (reply->type == REDIS_REPLY_NIL) {
        freeReplyObject(reply);
        return ZC_MISS;
    }
    /* Not a string (WRONGTYPE): reads as an empty value, which no
     * verification accepts, so the caller replaces it. */
    size_t length = reply->type == REDIS_REPLY_STRING ? reply->len : 0;
    if (reply->type == REDIS_REPLY_ERROR)
        log_failure(server_for(redis, shard), "GET", reply->str);
    uint8_t *copy = NULL;
    if (length > 0) {
        /* hiredis 0.14 allocates a string reply's bytes with malloc and frees
         * them in freeReplyObject unless taken: taking them saves copying
         * megabytes on the hit path. */
        copy = (uint8_t *)reply->str;
        reply->str = NULL;
    } else {
        copy = malloc(1);
    }
    freeReplyObject(reply);
    if (copy == NULL)
        return ZC_ERR_NOMEM;
    *value = copy;
    *size = length;
    return ZC_OK;
}

static zc_status redis_get(zc_storage *storage, const zc_key *key, uint8_t **value, size_t *size)
{
    redis_storage *redis = (redis_storage *)storage;
    redis_key names;
    redis_key_of(redis, key, &names);
    return get_value(redis, key, names.entry, value, size);
}

/* SET name value [NX]: ZC_OK also when NX found one there. what names the
 * command in a refusal. */
static zc_status set_value(redis_storage *redis, const zc_key *shard, const char *name,
                           const uint8_t *value, size_t size, bool only_new, const char *what)
{
    const char *argv[] = {"SET", name, (const char *)value, "NX"};
    size_t lengths[] = {3, strlen(name), size, 2};
    redisReply *reply = run_command(redis, shard, only_new ? 4 : 3, argv, lengths);
    if (reply == NULL)
        return ZC_ERR_IO;
    if (reply->type == REDIS_REPLY_ERROR)
        return refused(redis, shard, reply, what);
    freeReplyObject(reply);
    return ZC_OK;
}

/* SET overwrites whatever is there, a bad value or another node's equal one:
 * replace needs nothing more. */
static zc_status redis_put(zc_storage *storage, const zc_key *key, const uint8_t *value,
                           size_t size, bool replace)
{
    (void)replace;
    redis_storage *redis = (redis_storage *)storage;
    redis_key names;
    redis_key_of(redis, key, &names);
    return set_value(redis, key, names.entry, value, size, false, "SET");
}

static zc_status redis_remove(zc_storage *storage, const zc_key *key)
{
    redis_storage *redis = (redis_storage *)storage;
    redis_key names;
    redis_key_of(redis, key, &names);
    redisReply *reply = run_command(redis, key, 2, (const char *[]){"DEL", names.entry}, NULL);
    if (reply == NULL)
        return ZC_ERR_IO;
    if (reply->type == REDIS_REPLY_ERROR)
        return refused(redis, key, reply, "DEL");
    freeReplyObject(reply);
    return ZC_OK;
}

static void make_token(char token[33])
{
    uint8_t random[16];
    if (getrandom(random, sizeof random, GRND_NONBLOCK) != (ssize_t)sizeof random) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t mix =
            (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^ (uint64_t)(uintptr_t)token;
        for (int i = 0; i < 16; i++)
            random[i] = (uint8_t)(mix >> (8 * (i % 8))) ^ (uint8_t)i;
    }
    for (int i = 0; i < 16; i++)
        snprintf(token + 2 * i, 3, "%02x", random[i]);
}

typedef enum claim_answer { ANSWER_READY, ANSWER_CLAIMED, ANSWER_FAILED, ANSWER_BUSY } claim_answer;

static zc_status try_claim(redis_storage *redis, const zc_key *key, const redis_key *names,
                           const char *token, uint64_t lock_ms, claim_answer *answer)
{
    char px[24];
    snprintf(px, sizeof px, "%llu", (unsigned long long)lock_ms);
    const char *argv[] = {"EVAL", claim_script, "2", names->entry, names->lock, token, px};
    redisReply *reply = run_command(redis, key, 7, argv, NULL);
    if (reply == NULL)
        return ZC_ERR_IO;
    if (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS)
        return refused(redis, key, reply, "EVAL (claim)");
    if (strcmp(reply->str, "ready") == 0)
        *answer = ANSWER_READY;
    else if (strcmp(reply->str, "claimed") == 0)
        *answer = ANSWER_CLAIMED;
    else if (strcmp(reply->str, "failed") == 0)
        *answer = ANSWER_FAILED;
    else
        *answer = ANSWER_BUSY;
    freeReplyObject(reply);
    return ZC_OK;
}

/* The lock outlives a holder that died by at most its expiry: the wait
 * timeout, within [MIN_LOCK_MS, MAX_LOCK_MS]. It is not renewed: a compile
 * that takes longer lets a waiter take over, which costs a second compile,
 * never a wrong result. */
static zc_status redis_claim(zc_storage *storage, const zc_key *key, uint64_t timeout_ms,
                             zc_storage_claim_result *result, zc_storage_claim *claim)
{
    redis_storage *redis = (redis_storage *)storage;
    *claim = (zc_storage_claim){.held = false};
    *result = ZC_STORAGE_GIVE_UP;
    make_token(claim->token);
    redis_key names;
    redis_key_of(redis, key, &names);
    uint64_t lock_ms = timeout_ms < MIN_LOCK_MS   ? MIN_LOCK_MS
                       : timeout_ms > MAX_LOCK_MS ? MAX_LOCK_MS
                                                  : timeout_ms;
    zc_backoff backoff = zc_backoff_start(timeout_ms, FIRST_POLL_MS * UINT64_C(1000000),
                                          MAX_POLL_MS * UINT64_C(1000000));
    for (;;) {
        claim_answer answer;
        zc_status status = try_claim(redis, key, &names, claim->token, lock_ms, &answer);
        if (status != ZC_OK)
            return status;
        if (answer == ANSWER_READY) {
            *result = ZC_STORAGE_READY;
            return ZC_OK;
        }
        if (answer == ANSWER_CLAIMED) {
            claim->held = true;
            claim->owner = getpid();
            *result = ZC_STORAGE_CLAIMED;
            return ZC_OK;
        }
        if (answer == ANSWER_FAILED || !zc_backoff_sleep(&backoff)) {
            zc_log_info("remote %s: %s", redis->name,
                        answer == ANSWER_FAILED
                            ? "the other node stored no entry (its build or store "
                              "failed, or the module was not admitted): "
                              "compiling"
                            : "stopped waiting for another node");
            return ZC_OK;
        }
    }
}

static void redis_release(zc_storage *storage, const zc_key *key, zc_storage_claim *claim,
                          bool failed)
{
    if (claim == NULL || !claim->held)
        return;
    claim->held = false;
    if (claim->owner != getpid())
        return; /* a forked child's copy: the parent's lock, not the child's */
    redis_storage *redis = (redis_storage *)storage;
    redis_key names;
    redis_key_of(redis, key, &names);
    char mark_ms[16];
    snprintf(mark_ms, sizeof mark_ms, "%d", ZC_REDIS_FAILED_MARK_MS);
    const char *argv[] = {"EVAL",       release_script,     "1",    names.lock,
                          claim->token, failed ? "1" : "0", mark_ms};
    redisReply *reply = run_command(redis, key, 7, argv, NULL);
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        log_failure(server_for(redis, key), "EVAL (release)", reply->str);
    if (reply != NULL)
        freeReplyObject(reply);
    /* Not released (server gone): the lock expires by itself. */
}

/* ---- recorded inputs ---- */

static zc_status entry_exists(redis_storage *redis, const zc_key *key)
{
    redis_key names;
    redis_key_of(redis, key, &names);
    redisReply *reply = run_command(redis, key, 2, (const char *[]){"EXISTS", names.entry}, NULL);
    if (reply == NULL)
        return ZC_ERR_IO;
    if (reply->type != REDIS_REPLY_INTEGER)
        return refused(redis, key, reply, "EXISTS");
    zc_status status = reply->integer == 1 ? ZC_OK : ZC_MISS;
    freeReplyObject(reply);
    return status;
}

/* Like entries, no expiry: the server's maxmemory-policy evicts. A recipe is
 * written once per store and read only by prewarm, so under an LRU or LFU
 * policy it goes before its entry, which every hit reads. SPIR-V first,
 * each SET NX (the same content is never sent twice to a server that has
 * it), then the recipe, so a recipe never names SPIR-V not yet there. */
static zc_status redis_record(zc_storage *storage, const zc_key *key, const uint8_t *recipe,
                              size_t recipe_size, const zc_input_blob *blobs, size_t blob_count)
{
    redis_storage *redis = (redis_storage *)storage;
    zc_status status = entry_exists(redis, key);
    input_name name;
    for (size_t i = 0; i < blob_count && status == ZC_OK; i++) {
        zc_key shard;
        memcpy(shard.bytes, blobs[i].sha256, sizeof shard.bytes);
        input_name_of(redis, ZC_STORAGE_SPIRV, &shard, name);
        status = set_value(redis, &shard, name, blobs[i].bytes, blobs[i].size, true,
                           "SET (recorded inputs)");
    }
    if (status != ZC_OK)
        return status;
    input_name_of(redis, ZC_STORAGE_RECIPE, key, name);
    return set_value(redis, key, name, recipe, recipe_size, false, "SET (recorded inputs)");
}

static zc_status redis_get_input(zc_storage *storage, zc_storage_input kind, const uint8_t id[32],
                                 uint8_t **value, size_t *size)
{
    redis_storage *redis = (redis_storage *)storage;
    zc_key shard;
    memcpy(shard.bytes, id, sizeof shard.bytes);
    input_name name;
    input_name_of(redis, kind, &shard, name);
    return get_value(redis, &shard, name, value, size);
}

/* One SCAN reply: calls each with the keys its names hold. *cursor is the
 * next cursor, "0" at the end. False when each said stop. */
static bool take_scan_batch(redisReply *reply, size_t prefix_length, char cursor[32],
                            zc_storage_recipe_fn each, void *context)
{
    snprintf(cursor, 32, "%s", reply->element[0]->str);
    redisReply *names = reply->element[1];
    for (size_t i = 0; i < names->elements; i++) {
        zc_key key;
        const redisReply *name = names->element[i];
        if (name->type != REDIS_REPLY_STRING || name->len != prefix_length + 2 * ZC_KEY_SIZE ||
            !zc_key_from_hex(name->str + prefix_length, &key))
            continue; /* not one of ours */
        if (!each(context, &key))
            return false;
    }
    return true;
}

static bool scan_reply_ok(const redisReply *reply)
{
    return reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
           reply->element[0]->type == REDIS_REPLY_STRING &&
           reply->element[1]->type == REDIS_REPLY_ARRAY;
}

/* SCAN in batches of SCAN_BATCH, so that no command holds the server long
 * nor brings a reply of every key at once. */
static zc_status scan_server(zc_redis_connection *server, const char *match, size_t prefix_length,
                             zc_storage_recipe_fn each, void *context)
{
    char cursor[32] = "0";
    do {
        const char *argv[] = {"SCAN", cursor, "MATCH", match, "COUNT", SCAN_BATCH};
        redisReply *reply = zc_redis_command(server, 6, argv, NULL);
        if (reply == NULL)
            return ZC_ERR_IO;
        if (!scan_reply_ok(reply)) {
            log_failure(server, "SCAN", reply->type == REDIS_REPLY_ERROR ? reply->str : "reply");
            freeReplyObject(reply);
            return ZC_ERR_DISABLED;
        }
        bool go_on = take_scan_batch(reply, prefix_length, cursor, each, context);
        freeReplyObject(reply);
        if (!go_on)
            return ZC_OK;
    } while (strcmp(cursor, "0") != 0);
    return ZC_OK;
}

static zc_status redis_list_recipes(zc_storage *storage, zc_storage_recipe_fn each, void *context)
{
    redis_storage *redis = (redis_storage *)storage;
    char match[sizeof ZC_REDIS_RECIPE_PREFIX + NAMESPACE_SIZE + 1];
    snprintf(match, sizeof match, ZC_REDIS_ENTRY_PREFIX "%s" ZC_REDIS_RECIPE_INFIX "*",
             redis->key_namespace);
    size_t prefix_length = strlen(match) - 1;
    /* Every server: a recipe lives where its key's shard is. */
    zc_status status = ZC_OK;
    for (size_t i = 0; i < redis->server_count && status == ZC_OK; i++)
        status = scan_server(redis->servers[i], match, prefix_length, each, context);
    return status;
}

static void redis_close(zc_storage *storage)
{
    redis_storage *redis = (redis_storage *)storage;
    for (size_t i = 0; i < redis->server_count; i++)
        zc_redis_connection_free(redis->servers[i]);
    free(redis->servers);
    free(redis);
}

static const zc_storage_ops redis_ops = {
    .get = redis_get,
    .put = redis_put,
    .remove = redis_remove,
    .claim = redis_claim,
    .release = redis_release,
    .record = redis_record,
    .record_signed = true,
    .get_input = redis_get_input,
    .list_recipes = redis_list_recipes,
    .close = redis_close,
};

zc_status zc_storage_redis_open(const zc_remote_spec *spec, size_t max_value, zc_storage **out)
{
    if (spec == NULL || spec->kind == ZC_REMOTE_FILE || spec->server_count == 0 || out == NULL)
        return ZC_ERR_INVALID_ARG;
    redis_storage *redis = calloc(1, sizeof *redis);
    zc_redis_connection **servers = calloc(spec->server_count, sizeof *servers);
    if (redis == NULL || servers == NULL) {
        free(redis);
        free(servers);
        return ZC_ERR_NOMEM;
    }
    redis->servers = servers;
    zc_redis_limits limits = {spec->connect_timeout_ms, spec->timeout_ms, max_value};
    for (; redis->server_count < spec->server_count; redis->server_count++) {
        servers[redis->server_count] =
            zc_redis_connection_new(&spec->servers[redis->server_count], &limits);
        if (servers[redis->server_count] == NULL) {
            redis_close(&redis->base);
            return ZC_ERR_NOMEM;
        }
    }
    snprintf(redis->name, sizeof redis->name, "%s", spec->name);
    snprintf(redis->key_namespace, sizeof redis->key_namespace, "%s", spec->key_namespace);
    redis->base =
        (zc_storage){.ops = &redis_ops, .name = redis->name, .read_only = spec->read_only};
    *out = &redis->base;
    return ZC_OK;
}
