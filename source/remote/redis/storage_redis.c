/* Redis storage: entries, build locks, recorded inputs and shards, over
 * redis_connection.c (the transport: connecting, deadlines, SIGPIPE, reply
 * limits). One string value per entry under
 * ZC_REDIS_ENTRY_PREFIX<hex> (GET, SET, DEL), per recipe under
 * ZC_REDIS_RECIPE_PREFIX<hex> and per distinct SPIR-V under
 * ZC_REDIS_SPIRV_PREFIX<sha256 hex> (replaced unless it holds the same
 * bytes); build locks are
 * SET ZC_REDIS_LOCK_PREFIX<hex> <token> NX PX <ms>, released only by their
 * taker (a script compares the token). With shards, each key lives on the
 * server whose name scores highest for it (rendezvous hashing), so adding a
 * server moves only the keys it wins. In a Redis Cluster (redis_cluster.h)
 * the <hex> of every name is a hash tag, {<hex>}, so that an entry, its
 * lock and its recipe share a slot, which the claim script needs.
 *
 * Every command finishes or fails within the connect and command timeouts,
 * whatever the server does, and takes only the reply shape it expects
 * (redis_reply_shape.h); an entry too large to hold is received into a
 * temporary file and verified there (redis_value_file.h). SCAN is bounded in
 * calls and keys and stops when a cursor repeats. A failed command drops the connection (a late
 * reply must not answer the next command); the next one connects again, and
 * remote.c stops using a storage that keeps failing. One connection per
 * server per process. */
#include <hiredis/hiredis.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "monotonic_clock.h"
#include "redis_cluster.h"
#include "redis_connection.h"
#include "redis_lock_token.h"
#include "redis_value_file.h"
#include "zecache/disk_recipes.h"
#include "zecache/entry.h"
#include "zecache/log.h"
#include "zecache/sha256.h"
#include "zecache/storage.h"

enum { FIRST_POLL_MS = 5, MAX_POLL_MS = 100, MIN_LOCK_MS = 1000, MAX_LOCK_MS = 600000 };
#define SCAN_BATCH "256"
/* One listing's bounds, per server: 2^20 recorded keys (32 MiB of keys in
 * prewarm's list; a cluster's Redis holding more recorded modules would hold
 * at least 4 GiB of the smallest entries), and 2^20 SCAN calls (a full
 * iteration asks for 256 slots a call: a keyspace of 268 million keys). */
enum { SCAN_MAX_KEYS = 1 << 20, SCAN_MAX_CALLS = 1 << 20 };

/* ready: the entry exists; claimed: the lock is ours; failed: the holder
 * stored no entry (its build or store failed, or admission kept the module
 * out); busy:<its value>: another holds it (the value when it is no longer
 * than a token, for a node with a secret to check). */
static const char claim_script[] =
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 'ready' end\n"
    "if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'claimed' end\n"
    "local held = redis.call('GET', KEYS[2])\n"
    "if held == '" ZC_REDIS_FAILED_MARK "' then return 'failed' end\n"
    "if type(held) == 'string' and #held <= tonumber(ARGV[3]) then return 'busy:' .. held end\n"
    "return 'busy'\n";

/* The waiting a node with a secret does, in all, on locks that came to
 * nothing (their holder neither stored the entry nor said it failed):
 * beyond it, it waits on no lock. A lock that carries proof of the secret
 * may still be a genuine one replayed by a party that can write to Redis
 * (after deleting the entry), which this bounds. */
#define FRUITLESS_WAIT_MAX_MS 3000

/* A recorded input's value: kept when it holds these very bytes, else
 * replaced (a damaged or planted value, or one of another type), so that
 * recording again repairs it. Compared on the server: nothing is read back.
 * pcall: GET of another type is an error, which compares unequal. Only GET
 * and SET: the ACL README gives zecache's user is enough. */
static const char put_input_script[] =
    "if redis.pcall('GET', KEYS[1]) == ARGV[1] then return 0 end\n"
    "redis.call('SET', KEYS[1], ARGV[1])\n"
    "return 1\n";

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
    zc_redis_cluster *cluster; /* NULL: servers are shards */
    char name[sizeof(((zc_remote_spec *)0)->name)];
    char key_namespace[NAMESPACE_SIZE];
    uint64_t max_payload;
    const zc_remote_secret *secret;
    char temp_dir[PATH_MAX];                 /* for entries too large to hold */
    atomic_uint_least64_t fruitless_wait_ms; /* see FRUITLESS_WAIT_MAX_MS */
    zc_redis_buffer_budget buffers;          /* its connections' read buffers */
} redis_storage;

/* A key's <hex> in names: {<hex>} in a cluster (2 more bytes). */
typedef char tagged_hex[ZC_KEY_HEX_SIZE + 2];

static void tagged_hex_of(const redis_storage *redis, const zc_key *key, tagged_hex tagged)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(tagged, sizeof(tagged_hex), redis->cluster != NULL ? "{%s}" : "%s", hex);
}

typedef struct redis_key {
    char entry[sizeof ZC_REDIS_ENTRY_PREFIX + NAMESPACE_SIZE + sizeof(tagged_hex)];
    char lock[sizeof ZC_REDIS_LOCK_PREFIX + NAMESPACE_SIZE + sizeof(tagged_hex)];
} redis_key;

/* zecache:v1:[<namespace>]<hex> and zecache:v1:[<namespace>]lock:<hex>. */
static void redis_key_of(const redis_storage *redis, const zc_key *key, redis_key *names)
{
    tagged_hex hex;
    tagged_hex_of(redis, key, hex);
    snprintf(names->entry, sizeof names->entry, ZC_REDIS_ENTRY_PREFIX "%s%s", redis->key_namespace,
             hex);
    snprintf(names->lock, sizeof names->lock, ZC_REDIS_ENTRY_PREFIX "%s" ZC_REDIS_LOCK_INFIX "%s",
             redis->key_namespace, hex);
}

typedef char input_name[sizeof ZC_REDIS_RECIPE_PREFIX + NAMESPACE_SIZE + sizeof(tagged_hex)];

/* zecache:v1:[<namespace>]recipe:<hex of the key> or spirv:<hex of the
 * SHA-256>. Either lives on the server its 32 bytes pick as a key's would: a
 * recipe beside its entry. */
static void input_name_of(const redis_storage *redis, zc_storage_input kind, const zc_key *id,
                          input_name name)
{
    tagged_hex hex;
    tagged_hex_of(redis, id, hex);
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

/* One command for the name on its server (shard's, or in a cluster the
 * node serving name's slot), connecting first if needed, within the
 * storage's deadlines. NULL (logged) when it failed; *failure is then
 * ZC_ERR_IO when the storage could not be reached or did not answer in
 * time, ZC_ERR_DISABLED when a cluster answered but not the name's node. */
static redisReply *command_on(redis_storage *redis, const zc_key *shard, const char *name,
                              zc_redis_reply_kind kind, const zc_redis_sink *sink, int argc,
                              const char **argv, const size_t *lengths, zc_status *failure)
{
    *failure = ZC_ERR_IO;
    if (redis->cluster != NULL)
        return zc_redis_cluster_command(redis->cluster, name, kind, sink, argc, argv, lengths,
                                        failure);
    return zc_redis_command(server_for(redis, shard), kind, sink, argc, argv, lengths);
}

/* Where a key's commands go, for messages: its shard, or the cluster. */
static const char *server_name(redis_storage *redis, const zc_key *shard)
{
    return redis->cluster != NULL ? redis->name
                                  : zc_redis_connection_name(server_for(redis, shard));
}

static void log_failure(const char *server, const char *what, const char *detail)
{
    zc_log_info("remote %s: %s: %s", server, what, detail);
}

/* An error reply: the server answered and refused (OOM, WRONGTYPE, ...). */
static zc_status refused(redis_storage *redis, const zc_key *key, redisReply *reply,
                         const char *what)
{
    log_failure(server_name(redis, key), what, reply->str != NULL ? reply->str : "error");
    freeReplyObject(reply);
    return ZC_ERR_DISABLED;
}

/* ---- the storage operations ---- */

/* A value that is no entry of the key: an empty value, which the caller
 * rejects, counts and replaces. */
static zc_status bad_value(uint8_t **value, size_t *size)
{
    *value = malloc(1);
    *size = 0;
    return *value != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

/* An entry too large to hold went to file: verified there, then read. */
static zc_status take_streamed(redis_storage *redis, const zc_key *shard, const char *name,
                               zc_redis_value_file *file, uint8_t **value, size_t *size)
{
    char reason[256] = "";
    zc_status status = zc_redis_value_file_take(file, value, size, reason, sizeof reason);
    if (status != ZC_MISS)
        return status;
    log_failure(server_name(redis, shard), name, reason);
    return bad_value(value, size);
}

/* GET name on shard's server: ZC_OK with the value, ZC_MISS when none.
 * Without a file, a value too large to hold is refused (ZC_ERR_IO). */
static zc_status get_value(redis_storage *redis, const zc_key *shard, const char *name,
                           zc_redis_value_file *file, uint8_t **value, size_t *size)
{
    zc_redis_sink sink;
    if (file != NULL)
        sink = zc_redis_value_file_sink(file);
    zc_status failure;
    redisReply *reply =
        command_on(redis, shard, name, ZC_REDIS_REPLY_VALUE, file != NULL ? &sink : NULL, 2,
                   (const char *[]){"GET", name}, NULL, &failure);
    if (reply == NULL) /* refused for its header (logged): there, but bad */
        return file != NULL && file->bad_head ? bad_value(value, size) : failure;
    if (reply->type == REDIS_REPLY_STRING && reply->str == NULL && reply->len > 0) {
        freeReplyObject(reply);
        return take_streamed(redis, shard, name, file, value, size);
    }
    if (reply->type == REDIS_REPLY_NIL) {
        freeReplyObject(reply);
        return ZC_MISS;
    }
    /* Not a string (WRONGTYPE): reads as an empty value, which no
     * verification accepts, so the caller replaces it. */
    size_t length = reply->type == REDIS_REPLY_STRING ? reply->len : 0;
    if (reply->type == REDIS_REPLY_ERROR)
        log_failure(server_name(redis, shard), "GET", reply->str);
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
    zc_redis_value_file file;
    zc_redis_value_file_init(&file, redis->temp_dir, key, redis->max_payload, redis->secret);
    zc_status status = get_value(redis, key, names.entry, &file, value, size);
    zc_redis_value_file_close(&file);
    return status;
}

/* SET name value, or with as_input put_input_script's replacement of
 * anything but the same bytes. what names the command in a refusal. */
static zc_status set_value(redis_storage *redis, const zc_key *shard, const char *name,
                           const uint8_t *value, size_t size, bool as_input, const char *what)
{
    const char *set[] = {"SET", name, (const char *)value};
    size_t set_lengths[] = {3, strlen(name), size};
    const char *eval[] = {"EVAL", put_input_script, "1", name, (const char *)value};
    size_t eval_lengths[] = {4, sizeof put_input_script - 1, 1, strlen(name), size};
    zc_status failure;
    redisReply *reply = as_input ? command_on(redis, shard, name, ZC_REDIS_REPLY_SIMPLE, NULL, 5,
                                              eval, eval_lengths, &failure)
                                 : command_on(redis, shard, name, ZC_REDIS_REPLY_SIMPLE, NULL, 3,
                                              set, set_lengths, &failure);
    if (reply == NULL)
        return failure;
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
    zc_status failure;
    redisReply *reply = command_on(redis, key, names.entry, ZC_REDIS_REPLY_SIMPLE, NULL, 2,
                                   (const char *[]){"DEL", names.entry}, NULL, &failure);
    if (reply == NULL)
        return failure;
    if (reply->type == REDIS_REPLY_ERROR)
        return refused(redis, key, reply, "DEL");
    freeReplyObject(reply);
    return ZC_OK;
}

typedef enum claim_answer { ANSWER_READY, ANSWER_CLAIMED, ANSWER_FAILED, ANSWER_BUSY } claim_answer;

/* The claim script's answer; with ANSWER_BUSY, whether the lock held proof
 * of the secret (always, for a node without one). */
static zc_status try_claim(redis_storage *redis, const zc_key *key, const redis_key *names,
                           const char *token, uint64_t lock_ms, claim_answer *answer, bool *proven)
{
    char px[24], longest[8];
    snprintf(px, sizeof px, "%llu", (unsigned long long)lock_ms);
    snprintf(longest, sizeof longest, "%d", ZC_REDIS_LOCK_TOKEN_MAX);
    const char *argv[] = {"EVAL", claim_script, "2", names->entry, names->lock, token, px, longest};
    zc_status failure;
    redisReply *reply =
        command_on(redis, key, names->entry, ZC_REDIS_REPLY_WORD, NULL, 8, argv, NULL, &failure);
    if (reply == NULL)
        return failure;
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
    *proven = redis->secret == NULL || (strncmp(reply->str, "busy:", 5) == 0 &&
                                        zc_redis_lock_token_proven(redis->secret, names->lock,
                                                                   reply->str + 5, reply->len - 5));
    freeReplyObject(reply);
    return ZC_OK;
}

/* Why a node with a secret does not wait on the lock, or NULL. */
static const char *not_waited_for(redis_storage *redis, bool proven)
{
    if (!proven)
        return "the build lock carries no proof of the secret: compiling without waiting";
    if (atomic_load(&redis->fruitless_wait_ms) >= FRUITLESS_WAIT_MAX_MS)
        return "waited on build locks that came to nothing for long enough: compiling";
    return NULL;
}

/* A wait that ended without the entry or the holder's word: counted. */
static void count_fruitless(redis_storage *redis, uint64_t since_ns)
{
    if (redis->secret != NULL)
        atomic_fetch_add(&redis->fruitless_wait_ms, (zc_monotonic_ns() - since_ns) / 1000000);
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
    redis_key names;
    redis_key_of(redis, key, &names);
    zc_redis_lock_token_make(redis->secret, names.lock, claim->token);
    uint64_t lock_ms = timeout_ms < MIN_LOCK_MS   ? MIN_LOCK_MS
                       : timeout_ms > MAX_LOCK_MS ? MAX_LOCK_MS
                                                  : timeout_ms;
    zc_backoff backoff = zc_backoff_start(timeout_ms, FIRST_POLL_MS * UINT64_C(1000000),
                                          MAX_POLL_MS * UINT64_C(1000000));
    uint64_t started = zc_monotonic_ns();
    for (bool waited = false;; waited = true) {
        claim_answer answer = ANSWER_BUSY;
        bool proven = true;
        zc_status status = try_claim(redis, key, &names, claim->token, lock_ms, &answer, &proven);
        if (status != ZC_OK)
            return status;
        const char *why_not = answer == ANSWER_BUSY ? not_waited_for(redis, proven) : NULL;
        if (why_not != NULL) {
            zc_log_info("remote %s: %s", redis->name, why_not);
            return ZC_OK;
        }
        if (answer == ANSWER_READY) {
            *result = ZC_STORAGE_READY;
            return ZC_OK;
        }
        if (answer == ANSWER_CLAIMED) {
            if (waited)
                count_fruitless(redis, started);
            claim->held = true;
            claim->owner = getpid();
            *result = ZC_STORAGE_CLAIMED;
            return ZC_OK;
        }
        bool timed_out = answer != ANSWER_FAILED && !zc_backoff_sleep(&backoff);
        if (timed_out)
            count_fruitless(redis, started);
        if (answer == ANSWER_FAILED || timed_out) {
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
    zc_status failure;
    redisReply *reply =
        command_on(redis, key, names.lock, ZC_REDIS_REPLY_SIMPLE, NULL, 7, argv, NULL, &failure);
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        log_failure(server_name(redis, key), "EVAL (release)", reply->str);
    if (reply != NULL)
        freeReplyObject(reply);
    /* Not released (server gone): the lock expires by itself. */
}

/* ---- recorded inputs ---- */

static zc_status entry_exists(redis_storage *redis, const zc_key *key)
{
    redis_key names;
    redis_key_of(redis, key, &names);
    zc_status failure;
    redisReply *reply = command_on(redis, key, names.entry, ZC_REDIS_REPLY_SIMPLE, NULL, 2,
                                   (const char *[]){"EXISTS", names.entry}, NULL, &failure);
    if (reply == NULL)
        return failure;
    if (reply->type != REDIS_REPLY_INTEGER)
        return refused(redis, key, reply, "EXISTS");
    zc_status status = reply->integer == 1 ? ZC_OK : ZC_MISS;
    freeReplyObject(reply);
    return status;
}

/* Like entries, no expiry: the server's maxmemory-policy evicts. A recipe is
 * written once per store and read only by prewarm, so under an LRU or LFU
 * policy it goes before its entry, which every hit reads. SPIR-V first,
 * each kept when the server holds the same bytes and replaced otherwise (a
 * damaged or planted value is repaired by the next record, as a bad entry
 * is by the next store), then the recipe, so a recipe never names SPIR-V
 * not yet there. */
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
                           "EVAL (recorded SPIR-V)");
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
    return get_value(redis, &shard, name, NULL, value, size);
}

/* Where a listing of one server is: SCAN's cursor, the calls and keys so
 * far, and the cursor last remembered (at call 2^k, Brent's way), which a
 * server that cycles through cursors comes back to. */
typedef struct scan_state {
    char cursor[ZC_REDIS_MAX_CURSOR + 1];
    char remembered[ZC_REDIS_MAX_CURSOR + 1];
    size_t calls, keys;
    bool tagged; /* names hold {<hex>}: a cluster's */
    zc_storage_recipe_fn each;
    void *context;
} scan_state;

/* One SCAN reply (its shape checked by the transport): calls each with the
 * keys its names hold, up to SCAN_MAX_KEYS. False when each said stop. */
static bool take_scan_batch(redisReply *reply, size_t prefix_length, scan_state *scan)
{
    snprintf(scan->cursor, sizeof scan->cursor, "%s", reply->element[0]->str);
    redisReply *names = reply->element[1];
    for (size_t i = 0; i < names->elements && scan->keys < SCAN_MAX_KEYS; i++) {
        zc_key key;
        const redisReply *name = names->element[i];
        size_t tag = scan->tagged ? 1 : 0;
        char hex[ZC_KEY_HEX_SIZE] = "";
        if (name->len == prefix_length + 2 * ZC_KEY_SIZE + 2 * tag &&
            (tag == 0 || (name->str[prefix_length] == '{' && name->str[name->len - 1] == '}')))
            memcpy(hex, name->str + prefix_length + tag, 2 * ZC_KEY_SIZE);
        if (!zc_key_from_hex(hex, &key))
            continue; /* not one of ours */
        scan->keys++;
        if (!scan->each(scan->context, &key))
            return false;
    }
    return true;
}

/* Why the listing must stop before the cursor says the end, or NULL. */
static const char *scan_runaway(scan_state *scan)
{
    if (strcmp(scan->cursor, scan->remembered) == 0)
        return "the cursor came back to one already seen: stopped";
    if (scan->keys >= SCAN_MAX_KEYS)
        return "more recorded keys than any cache holds: stopped";
    if (++scan->calls >= SCAN_MAX_CALLS)
        return "more calls than any keyspace needs: stopped";
    if ((scan->calls & (scan->calls - 1)) == 0)
        memcpy(scan->remembered, scan->cursor, sizeof scan->cursor);
    return NULL;
}

/* One listing: the names it takes and whom it tells. */
typedef struct listing {
    char match[sizeof ZC_REDIS_RECIPE_PREFIX + NAMESPACE_SIZE + 1];
    size_t prefix_length;
    bool tagged;
    zc_storage_recipe_fn each;
    void *context;
} listing;

/* SCAN in batches of SCAN_BATCH, so that no command holds the server long
 * nor brings a reply of every key at once. */
static zc_status scan_server(void *context, zc_redis_connection *server)
{
    const listing *list = context;
    const char *match = list->match;
    size_t prefix_length = list->prefix_length;
    scan_state scan = {
        .cursor = "0", .tagged = list->tagged, .each = list->each, .context = list->context};
    do {
        const char *argv[] = {"SCAN", scan.cursor, "MATCH", match, "COUNT", SCAN_BATCH};
        redisReply *reply = zc_redis_command(server, ZC_REDIS_REPLY_SCAN, NULL, 6, argv, NULL);
        if (reply == NULL)
            return ZC_ERR_IO;
        if (reply->type == REDIS_REPLY_ERROR) {
            log_failure(zc_redis_connection_name(server), "SCAN", reply->str);
            freeReplyObject(reply);
            return ZC_ERR_DISABLED;
        }
        bool go_on = take_scan_batch(reply, prefix_length, &scan);
        freeReplyObject(reply);
        if (!go_on)
            return ZC_OK;
        const char *runaway = strcmp(scan.cursor, "0") != 0 ? scan_runaway(&scan) : NULL;
        if (runaway != NULL) {
            log_failure(zc_redis_connection_name(server), "SCAN", runaway);
            return ZC_ERR_DISABLED;
        }
    } while (strcmp(scan.cursor, "0") != 0);
    return ZC_OK;
}

static zc_status redis_list_recipes(zc_storage *storage, zc_storage_recipe_fn each, void *context)
{
    redis_storage *redis = (redis_storage *)storage;
    listing list = {.tagged = redis->cluster != NULL, .each = each, .context = context};
    snprintf(list.match, sizeof list.match, ZC_REDIS_ENTRY_PREFIX "%s" ZC_REDIS_RECIPE_INFIX "*",
             redis->key_namespace);
    list.prefix_length = strlen(list.match) - 1;
    /* Every server, or every master of a cluster: a recipe lives where its
     * key's shard or slot is. */
    if (redis->cluster != NULL)
        return zc_redis_cluster_each_master(redis->cluster, scan_server, &list);
    zc_status status = ZC_OK;
    for (size_t i = 0; i < redis->server_count && status == ZC_OK; i++)
        status = scan_server(&list, redis->servers[i]);
    return status;
}

static void redis_close(zc_storage *storage)
{
    redis_storage *redis = (redis_storage *)storage;
    for (size_t i = 0; i < redis->server_count; i++)
        zc_redis_connection_free(redis->servers[i]);
    zc_redis_cluster_free(redis->cluster);
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

zc_status zc_storage_redis_open(const zc_remote_spec *spec, uint64_t max_payload,
                                const char *temp_dir, zc_storage **out)
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
    /* Nothing larger than a valid entry (signed, at worst) is ever read. */
    uint64_t max_value = zc_entry_size_bound(max_payload);
    zc_redis_buffer_budget_init(&redis->buffers, ZC_REDIS_KEPT_BUFFERS_MAX);
    zc_redis_limits limits = {spec->connect_timeout_ms, spec->timeout_ms,
                              max_value < SIZE_MAX ? (size_t)max_value : SIZE_MAX, &redis->buffers};
    if (spec->cluster)
        redis->cluster = zc_redis_cluster_new(spec->name, spec->servers, spec->server_count,
                                              spec->node_hosts, &limits);
    if (spec->cluster && redis->cluster == NULL) {
        redis_close(&redis->base);
        return ZC_ERR_NOMEM;
    }
    for (; !spec->cluster && redis->server_count < spec->server_count; redis->server_count++) {
        servers[redis->server_count] =
            zc_redis_connection_new(&spec->servers[redis->server_count], &limits);
        if (servers[redis->server_count] == NULL) {
            redis_close(&redis->base);
            return ZC_ERR_NOMEM;
        }
    }
    snprintf(redis->name, sizeof redis->name, "%s", spec->name);
    snprintf(redis->key_namespace, sizeof redis->key_namespace, "%s", spec->key_namespace);
    snprintf(redis->temp_dir, sizeof redis->temp_dir, "%s", temp_dir != NULL ? temp_dir : "");
    redis->max_payload = max_payload;
    redis->secret = spec->secret;
    atomic_init(&redis->fruitless_wait_ms, 0);
    redis->base =
        (zc_storage){.ops = &redis_ops, .name = redis->name, .read_only = spec->read_only};
    *out = &redis->base;
    return ZC_OK;
}

/* ---- zecache remote check on a cluster ---- */

typedef struct master_list {
    zc_storage_cluster_master *masters;
    zc_redis_connection **connections;
    size_t max, count;
} master_list;

static zc_status add_master(void *context, zc_redis_connection *master)
{
    master_list *list = context;
    if (list->count < list->max) {
        snprintf(list->masters[list->count].name, sizeof list->masters[list->count].name, "%s",
                 zc_redis_connection_name(master));
        list->connections[list->count++] = master;
    }
    return ZC_OK;
}

/* A key for each master: random keys until each has one, at most
 * PROBE_TRIES (with three masters a key misses a given one with odds 2/3:
 * 4096 tries leave none out but with odds below 10^-700). */
static bool find_probe_keys(redis_storage *redis, master_list *list)
{
    enum { PROBE_TRIES = 4096 };
    size_t found = 0;
    bool *has = calloc(list->count + 1, sizeof *has);
    for (int i = 0; has != NULL && i < PROBE_TRIES && found < list->count; i++) {
        zc_key key;
        if (getrandom(key.bytes, sizeof key.bytes, 0) != (ssize_t)sizeof key.bytes)
            break;
        redis_key names;
        redis_key_of(redis, &key, &names);
        zc_redis_connection *owner = zc_redis_cluster_owner(redis->cluster, names.entry);
        for (size_t m = 0; m < list->count; m++) {
            if (list->connections[m] == owner && !has[m]) {
                has[m] = true;
                list->masters[m].probe = key;
                found++;
            }
        }
    }
    free(has);
    return found == list->count;
}

zc_status zc_storage_redis_cluster_masters(zc_storage *storage, zc_storage_cluster_master *masters,
                                           size_t max, size_t *count)
{
    *count = 0;
    redis_storage *redis = (redis_storage *)storage;
    if (storage == NULL || storage->ops != &redis_ops || redis->cluster == NULL)
        return ZC_ERR_INVALID_ARG;
    master_list list = {masters, calloc(max + 1, sizeof *list.connections), max, 0};
    if (list.connections == NULL)
        return ZC_ERR_NOMEM;
    zc_status status = zc_redis_cluster_each_master(redis->cluster, add_master, &list);
    if (status == ZC_OK && !find_probe_keys(redis, &list))
        status = ZC_ERR_DISABLED;
    free(list.connections);
    *count = status == ZC_OK ? list.count : 0;
    return status;
}
