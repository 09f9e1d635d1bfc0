/* The Redis storage against a private redis-server: values under their
 * documented keys, shards, server errors (OOM, WRONGTYPE), timeouts against a
 * stopped server and a listener that never answers, concurrent stores of one
 * key, and the cross-node lock's semantics. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "disk_test_support.h"
#include "redis_storage_support.h"
#include "redis_test_support.h"
#include "zecache/disk_recipes.h"
#include "zecache/entry.h"
#include "zecache/remote_tag.h"
#include "zecache/storage.h"

static t_redis server;

static void start_plain(void)
{
    t_redis_start(&server, NULL);
}

static void stop(void)
{
    t_redis_stop(&server);
}

static zc_storage *open_unix(const char *attributes)
{
    char url[512];
    snprintf(url, sizeof url, "redis+unix://%s%s", server.socket, attributes);
    return t_open_redis_storage(url);
}

static void value_of(uint64_t seed, uint8_t *bytes, size_t size)
{
    t_fill_random(bytes, size, seed);
}

static void assert_get(zc_storage *storage, const zc_key *key, const uint8_t *expected, size_t size)
{
    uint8_t *value = NULL;
    size_t value_size = 0;
    cr_assert_eq(storage->ops->get(storage, key, &value, &value_size), ZC_OK);
    cr_assert_eq(value_size, size);
    cr_assert_arr_eq(value, expected, size);
    free(value);
}

static void assert_missing(zc_storage *storage, const zc_key *key)
{
    uint8_t *value = NULL;
    size_t size;
    cr_assert_eq(storage->ops->get(storage, key, &value, &size), ZC_MISS);
    cr_assert_null(value);
}

Test(storage_redis, put_get_remove_under_the_documented_key, .init = start_plain, .fini = stop)
{
    char tcp[64];
    snprintf(tcp, sizeof tcp, "redis://127.0.0.1:%u", server.port);
    zc_storage *storages[] = {open_unix(""), t_open_redis_storage(tcp)};
    for (int s = 0; s < 2; s++) {
        zc_storage *storage = storages[s];
        zc_key key = t_key(100 + (uint64_t)s);
        uint8_t value[3000];
        value_of(7 + (uint64_t)s, value, sizeof value);
        assert_missing(storage, &key);
        cr_assert_eq(storage->ops->put(storage, &key, value, sizeof value, false), ZC_OK);
        assert_get(storage, &key, value, sizeof value);
        /* The value is at zecache:v1:<hex>, byte for byte. */
        char hex[ZC_KEY_HEX_SIZE], name[128];
        zc_key_to_hex(&key, hex);
        snprintf(name, sizeof name, "zecache:v1:%s", hex);
        redisReply *reply = t_redis_command(&server, 2, (const char *[]){"GET", name}, NULL);
        cr_assert_eq(reply->type, REDIS_REPLY_STRING);
        cr_assert_eq(reply->len, sizeof value);
        cr_assert_arr_eq(reply->str, value, sizeof value);
        freeReplyObject(reply);
        cr_assert_eq(storage->ops->remove(storage, &key), ZC_OK);
        assert_missing(storage, &key);
        zc_storage_close(storage);
    }
}

Test(storage_redis, database_number_is_selected, .init = start_plain, .fini = stop)
{
    zc_storage *db5 = open_unix("?db=5"), *db0 = open_unix("");
    zc_key key = t_key(3);
    uint8_t value[10] = "0123456789";
    cr_assert_eq(db5->ops->put(db5, &key, value, sizeof value, false), ZC_OK);
    assert_get(db5, &key, value, sizeof value);
    assert_missing(db0, &key);
    zc_storage_close(db5);
    zc_storage_close(db0);
}

Test(storage_redis, password_is_sent, .fini = stop)
{
    t_redis_start(&server, (const char *[]){"--requirepass", "hunter2-pass", NULL});
    zc_key key = t_key(4);
    uint8_t value[4] = "abcd", *got = NULL;
    size_t size;
    char url[512];
    snprintf(url, sizeof url, "redis://:hunter2-pass@127.0.0.1:%u", server.port);
    zc_storage *good = t_open_redis_storage(url);
    cr_assert_eq(good->ops->put(good, &key, value, sizeof value, false), ZC_OK);
    assert_get(good, &key, value, sizeof value);
    snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%u", server.port);
    zc_storage *bad = t_open_redis_storage(url);
    cr_assert_eq(bad->ops->get(bad, &key, &got, &size), ZC_ERR_IO);
    zc_storage_close(good);
    zc_storage_close(bad);
}

/* Every key on exactly one shard, chosen the same way by every client. */
Test(storage_redis, shards_spread_keys_by_rendezvous_hashing, .fini = stop)
{
    t_redis shards[2];
    t_redis_start(&shards[0], NULL);
    t_redis_start(&shards[1], NULL);
    char url[600];
    /* Both sockets differ only in their directory: the '*' stands for it. */
    snprintf(url, sizeof url, "redis+unix://*/redis.sock|shards=%s,%s", shards[0].dir,
             shards[1].dir);
    zc_storage *one = t_open_redis_storage(url), *two = t_open_redis_storage(url);
    enum { KEYS = 64 };
    int on_first = 0;
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(1000 + i);
        uint8_t value[16];
        value_of(i, value, sizeof value);
        cr_assert_eq(one->ops->put(one, &key, value, sizeof value, false), ZC_OK);
        assert_get(two, &key, value, sizeof value);
        char hex[ZC_KEY_HEX_SIZE], name[128];
        zc_key_to_hex(&key, hex);
        snprintf(name, sizeof name, "zecache:v1:%s", hex);
        int found = 0;
        for (int s = 0; s < 2; s++) {
            redisReply *reply =
                t_redis_command(&shards[s], 2, (const char *[]){"EXISTS", name}, NULL);
            found += (int)reply->integer;
            on_first += s == 0 ? (int)reply->integer : 0;
            freeReplyObject(reply);
        }
        cr_assert_eq(found, 1, "key %llu on %d shards", (unsigned long long)i, found);
    }
    cr_assert(on_first > 0 && on_first < KEYS, "all %d keys on one shard", KEYS);
    zc_storage_close(one);
    zc_storage_close(two);
    t_redis_stop(&shards[0]);
    t_redis_stop(&shards[1]);
}

Test(storage_redis, out_of_memory_is_a_refusal_not_a_failure, .fini = stop)
{
    t_redis_start(&server,
                  (const char *[]){"--maxmemory", "1mb", "--maxmemory-policy", "noeviction", NULL});
    zc_storage *storage = open_unix("");
    static uint8_t value[2 << 20];
    value_of(5, value, sizeof value);
    zc_key key = t_key(5);
    cr_assert_eq(storage->ops->put(storage, &key, value, sizeof value, false), ZC_ERR_DISABLED);
    assert_missing(storage, &key); /* reads still work */
    zc_storage_close(storage);
}

Test(storage_redis, wrong_type_reads_as_an_empty_value_and_is_overwritten, .init = start_plain,
     .fini = stop)
{
    zc_storage *storage = open_unix("");
    zc_key key = t_key(6);
    char hex[ZC_KEY_HEX_SIZE], name[128];
    zc_key_to_hex(&key, hex);
    snprintf(name, sizeof name, "zecache:v1:%s", hex);
    freeReplyObject(t_redis_command(&server, 3, (const char *[]){"LPUSH", name, "x"}, NULL));
    uint8_t *got = NULL;
    size_t size = 99;
    cr_assert_eq(storage->ops->get(storage, &key, &got, &size), ZC_OK);
    cr_assert_eq(size, 0);
    free(got);
    uint8_t value[8] = "replaced";
    cr_assert_eq(storage->ops->put(storage, &key, value, sizeof value, true), ZC_OK);
    assert_get(storage, &key, value, sizeof value);
    zc_storage_close(storage);
}

/* A stopped server accepts connections (the kernel does) and answers
 * nothing: every call returns ZC_ERR_IO after the timeouts. The Criterion
 * timeout catches a hang. */
Test(storage_redis, stopped_server_times_out, .init = start_plain, .fini = stop, .timeout = 30)
{
    zc_storage *connected = open_unix("|timeout=100");
    zc_key key = t_key(8);
    assert_missing(connected, &key); /* connected before the stop */
    cr_assert_eq(kill(server.pid, SIGSTOP), 0);
    char tcp[96];
    snprintf(tcp, sizeof tcp, "redis://127.0.0.1:%u|connect-timeout=100|timeout=100", server.port);
    zc_storage *fresh = t_open_redis_storage(tcp);
    uint8_t value[4] = "abcd", *got = NULL;
    size_t size;
    zc_storage_claim claim;
    zc_storage_claim_result result;
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(connected->ops->get(connected, &key, &got, &size), ZC_ERR_IO);
        cr_assert_eq(connected->ops->put(connected, &key, value, sizeof value, false), ZC_ERR_IO);
        cr_assert_eq(fresh->ops->get(fresh, &key, &got, &size), ZC_ERR_IO);
        cr_assert_eq(fresh->ops->claim(fresh, &key, 5000, &result, &claim), ZC_ERR_IO);
        cr_assert_not(claim.held);
    }
    kill(server.pid, SIGCONT);
    /* Back: the next call reconnects. */
    cr_assert_eq(connected->ops->put(connected, &key, value, sizeof value, false), ZC_OK);
    assert_get(fresh, &key, value, sizeof value);
    zc_storage_close(connected);
    zc_storage_close(fresh);
}

Test(storage_redis, silent_listener_and_refused_connections_time_out, .timeout = 30)
{
    unsigned port;
    int listener = t_silent_listener(&port);
    char url[96];
    snprintf(url, sizeof url, "redis://127.0.0.1:%u|connect-timeout=100|timeout=100", port);
    zc_storage *silent = t_open_redis_storage(url);
    snprintf(url, sizeof url, "redis://127.0.0.1:%u|connect-timeout=100", t_free_tcp_port());
    zc_storage *refused = t_open_redis_storage(url);
    zc_key key = t_key(9);
    uint8_t *got = NULL, value[1] = {1};
    size_t size;
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(silent->ops->get(silent, &key, &got, &size), ZC_ERR_IO);
        cr_assert_eq(silent->ops->put(silent, &key, value, 1, false), ZC_ERR_IO);
        cr_assert_eq(refused->ops->get(refused, &key, &got, &size), ZC_ERR_IO);
    }
    zc_storage_close(silent);
    zc_storage_close(refused);
    close(listener);
}

/* ---- concurrent stores of one key ---- */

enum { WRITERS = 6, ROUNDS = 20, VALUE_SIZE = 50000 };

typedef struct writer {
    zc_storage *storage;
    uint64_t seed;
} writer;

static void *write_one_key(void *context)
{
    writer *w = context;
    zc_key key = t_key(77);
    uint8_t *value = malloc(VALUE_SIZE);
    value_of(w->seed, value, VALUE_SIZE);
    for (int i = 0; i < ROUNDS; i++)
        cr_assert_eq(w->storage->ops->put(w->storage, &key, value, VALUE_SIZE, i % 2 == 0), ZC_OK);
    free(value);
    return NULL;
}

Test(storage_redis, concurrent_stores_of_one_key_leave_one_whole_value, .init = start_plain,
     .fini = stop)
{
    /* Shared connections (one storage, several threads) and separate ones. */
    zc_storage *shared = open_unix("");
    pthread_t threads[WRITERS];
    writer writers[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        writers[i] =
            (writer){.storage = i % 2 == 0 ? shared : open_unix(""), .seed = 500 + (uint64_t)i};
        cr_assert_eq(pthread_create(&threads[i], NULL, write_one_key, &writers[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(threads[i], NULL);
    zc_key key = t_key(77);
    uint8_t *got = NULL;
    size_t size;
    cr_assert_eq(shared->ops->get(shared, &key, &got, &size), ZC_OK);
    cr_assert_eq(size, VALUE_SIZE);
    int matches = 0;
    uint8_t *expected = malloc(VALUE_SIZE);
    for (int i = 0; i < WRITERS; i++) {
        value_of(500 + (uint64_t)i, expected, VALUE_SIZE);
        matches += memcmp(got, expected, VALUE_SIZE) == 0;
    }
    cr_assert_eq(matches, 1, "the value is not exactly one writer's");
    free(expected);
    free(got);
    for (int i = 0; i < WRITERS; i++)
        if (writers[i].storage != shared)
            zc_storage_close(writers[i].storage);
    zc_storage_close(shared);
}

/* ---- the lock ---- */

static char *lock_value(const zc_key *key)
{
    char hex[ZC_KEY_HEX_SIZE], name[128];
    zc_key_to_hex(key, hex);
    snprintf(name, sizeof name, "zecache:v1:lock:%s", hex);
    redisReply *reply = t_redis_command(&server, 2, (const char *[]){"GET", name}, NULL);
    char *value = reply->type == REDIS_REPLY_STRING ? strdup(reply->str) : NULL;
    freeReplyObject(reply);
    return value;
}

Test(storage_redis, lock_claim_wait_fail_and_release, .init = start_plain, .fini = stop,
     .timeout = 60)
{
    zc_storage *a = open_unix(""), *b = open_unix("");
    zc_key key = t_key(20);
    zc_storage_claim claim_a, claim_b;
    zc_storage_claim_result result;

    cr_assert_eq(a->ops->claim(a, &key, 10000, &result, &claim_a), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_CLAIMED);
    cr_assert(claim_a.held);
    char *held = lock_value(&key);
    cr_assert_str_eq(held, claim_a.token);
    free(held);

    /* Busy: b waits, times out, and holds nothing. */
    cr_assert_eq(b->ops->claim(b, &key, 50, &result, &claim_b), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_GIVE_UP);
    cr_assert_not(claim_b.held);
    /* Releasing another's claim does nothing. */
    zc_storage_claim forged = {.held = true};
    snprintf(forged.token, sizeof forged.token, "not-the-token");
    b->ops->release(b, &key, &forged, false);
    held = lock_value(&key);
    cr_assert_str_eq(held, claim_a.token);
    free(held);

    /* The holder's build failed: waiters give up at once. */
    a->ops->release(a, &key, &claim_a, true);
    cr_assert_not(claim_a.held);
    held = lock_value(&key);
    cr_assert_str_eq(held, ZC_REDIS_FAILED_MARK);
    free(held);
    uint64_t before = t_monotonic_ms();
    cr_assert_eq(b->ops->claim(b, &key, 60000, &result, &claim_b), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_GIVE_UP);
    cr_assert(t_monotonic_ms() - before < 30000, "waited for the whole timeout");

    /* A normal release deletes the lock; the next claim takes it. */
    char hex[ZC_KEY_HEX_SIZE], name[128];
    zc_key_to_hex(&key, hex);
    snprintf(name, sizeof name, "zecache:v1:lock:%s", hex);
    freeReplyObject(t_redis_command(&server, 2, (const char *[]){"DEL", name}, NULL));
    cr_assert_eq(a->ops->claim(a, &key, 1000, &result, &claim_a), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_CLAIMED);
    a->ops->release(a, &key, &claim_a, false);
    cr_assert_null(lock_value(&key));

    /* An entry present: READY without taking the lock. */
    uint8_t value[3] = "abc";
    cr_assert_eq(a->ops->put(a, &key, value, sizeof value, false), ZC_OK);
    cr_assert_eq(b->ops->claim(b, &key, 1000, &result, &claim_b), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_READY);
    cr_assert_not(claim_b.held);
    cr_assert_null(lock_value(&key));
    zc_storage_close(a);
    zc_storage_close(b);
}

/* A holder that dies never releases: its lock expires (PX is the wait
 * timeout, at least 1 s) and the next claimant takes it. */
Test(storage_redis, lock_of_a_dead_holder_expires, .init = start_plain, .fini = stop, .timeout = 60)
{
    zc_storage *a = open_unix(""), *b = open_unix("");
    zc_key key = t_key(21);
    zc_storage_claim claim_a, claim_b;
    zc_storage_claim_result result;
    cr_assert_eq(a->ops->claim(a, &key, 1000, &result, &claim_a), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_CLAIMED);
    zc_storage_close(a); /* "dies" holding it */
    cr_assert_eq(b->ops->claim(b, &key, 20000, &result, &claim_b), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_CLAIMED);
    b->ops->release(b, &key, &claim_b, false);
    zc_storage_close(b);
}

typedef struct late_store {
    zc_storage *storage;
    zc_key key;
} late_store;

static void *store_after_a_pause(void *context)
{
    late_store *late = context;
    struct timespec pause = {0, 200 * 1000000};
    nanosleep(&pause, NULL);
    uint8_t value[5] = "entry";
    cr_assert_eq(late->storage->ops->put(late->storage, &late->key, value, sizeof value, false),
                 ZC_OK);
    zc_storage_claim dummy = {.held = false};
    late->storage->ops->release(late->storage, &late->key, &dummy, false);
    return NULL;
}

Test(storage_redis, waiter_sees_the_entry_appear, .init = start_plain, .fini = stop, .timeout = 60)
{
    zc_storage *a = open_unix(""), *b = open_unix("");
    late_store late = {.storage = a, .key = t_key(22)};
    zc_storage_claim claim_a, claim_b;
    zc_storage_claim_result result;
    cr_assert_eq(a->ops->claim(a, &late.key, 30000, &result, &claim_a), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_CLAIMED);
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, store_after_a_pause, &late), 0);
    cr_assert_eq(b->ops->claim(b, &late.key, 30000, &result, &claim_b), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_READY);
    pthread_join(thread, NULL);
    a->ops->release(a, &late.key, &claim_a, false);
    cr_assert_null(lock_value(&late.key));
    zc_storage_close(a);
    zc_storage_close(b);
}

/* An ACL user limited to the key prefix and the commands zecache sends is
 * enough for everything (README's Redis set-up), and nothing else works. */
Test(storage_redis, acl_user_limited_to_the_prefix_is_enough, .init = start_plain, .fini = stop,
     .timeout = 60)
{
    redisReply *reply = t_redis_command(
        &server, 11,
        (const char *[]){"ACL", "SETUSER", "zecache", "on", ">node-password", "resetkeys",
                         "~zecache:v1:*", "-@all", "+get", "+set", "+del"},
        NULL);
    cr_assert_eq(reply->type, REDIS_REPLY_STATUS, "%s", reply->str);
    freeReplyObject(reply);
    reply = t_redis_command(
        &server, 6, (const char *[]){"ACL", "SETUSER", "zecache", "+exists", "+eval", "+ping"},
        NULL);
    cr_assert_eq(reply->type, REDIS_REPLY_STATUS, "%s", reply->str);
    freeReplyObject(reply);
    char url[512];
    snprintf(url, sizeof url, "redis://zecache:node-password@127.0.0.1:%u", server.port);
    zc_storage *storage = t_open_redis_storage(url);
    zc_key key = t_key(30);
    uint8_t value[6] = "value!";
    zc_storage_claim claim;
    zc_storage_claim_result result;
    cr_assert_eq(storage->ops->claim(storage, &key, 1000, &result, &claim), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_CLAIMED);
    cr_assert_eq(storage->ops->put(storage, &key, value, sizeof value, false), ZC_OK);
    storage->ops->release(storage, &key, &claim, false);
    assert_get(storage, &key, value, sizeof value);
    cr_assert_eq(storage->ops->claim(storage, &key, 1000, &result, &claim), ZC_OK);
    cr_assert_eq(result, ZC_STORAGE_READY);
    cr_assert_eq(storage->ops->remove(storage, &key), ZC_OK);
    zc_storage_close(storage);
    snprintf(url, sizeof url, "redis://zecache:wrong@127.0.0.1:%u", server.port);
    storage = t_open_redis_storage(url);
    uint8_t *got = NULL;
    size_t size;
    cr_assert_eq(storage->ops->get(storage, &key, &got, &size), ZC_ERR_IO);
    zc_storage_close(storage);
    /* The user cannot touch other keys. */
    struct timeval timeout = {2, 0};
    redisContext *context = redisConnectUnixWithTimeout(server.socket, timeout);
    freeReplyObject(redisCommand(context, "AUTH zecache node-password"));
    reply = redisCommand(context, "GET other:key");
    cr_assert_eq(reply->type, REDIS_REPLY_ERROR);
    cr_assert_not_null(strstr(reply->str, "NOPERM"), "%s", reply->str);
    freeReplyObject(reply);
    redisFree(context);
}

/* ---- recorded inputs ---- */

static bool collect_listed(void *context, const zc_key *key)
{
    zc_key *listed = context;
    for (int i = 0; i < 3; i++)
        if (listed[i].bytes[0] == 0 && listed[i].bytes[1] == 0) {
            listed[i] = *key;
            return true;
        }
    cr_assert_fail("more keys listed than recorded");
    return false;
}

static void assert_input(zc_storage *storage, zc_storage_input kind, const uint8_t id[32],
                         const uint8_t *expected, size_t size)
{
    uint8_t *value = NULL;
    size_t value_size = 0;
    cr_assert_eq(storage->ops->get_input(storage, kind, id, &value, &value_size), ZC_OK);
    cr_assert_eq(value_size, size);
    cr_assert_arr_eq(value, expected, size);
    free(value);
}

/* A recipe only beside its entry; SPIR-V under its digest, replaced when it
 * holds other bytes than the recorded ones (under the digest of the first,
 * the second is a planted or damaged value); every recorded key listed,
 * across shards. */
Test(storage_redis, recorded_inputs_beside_their_entries_and_listed, .fini = stop)
{
    t_redis other;
    t_redis_start(&server, NULL);
    t_redis_start(&other, NULL);
    char url[600];
    snprintf(url, sizeof url, "redis+unix://*/redis.sock|shards=%s,%s", server.dir, other.dir);
    zc_storage *storage = t_open_redis_storage(url);
    uint8_t recipe[100], spirv[200], other_spirv[200];
    value_of(1, recipe, sizeof recipe);
    value_of(2, spirv, sizeof spirv);
    value_of(3, other_spirv, sizeof other_spirv);
    zc_input_blob blob = {.bytes = spirv, .size = sizeof spirv};
    memset(blob.sha256, 0x42, 32);
    zc_key keys[3] = {t_key(1), t_key(2), t_key(3)};
    cr_assert_eq(storage->ops->record(storage, &keys[0], recipe, sizeof recipe, &blob, 1), ZC_MISS,
                 "a recipe without its entry");
    uint8_t *value = NULL;
    size_t size = 0;
    cr_assert_eq(storage->ops->get_input(storage, ZC_STORAGE_SPIRV, blob.sha256, &value, &size),
                 ZC_MISS, "SPIR-V sent for an entry that is not there");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(storage->ops->put(storage, &keys[i], recipe, sizeof recipe, false), ZC_OK);
        cr_assert_eq(storage->ops->record(storage, &keys[i], recipe, sizeof recipe, &blob, 1),
                     ZC_OK);
        assert_input(storage, ZC_STORAGE_SPIRV, blob.sha256, blob.bytes, sizeof spirv);
        blob.bytes = i == 0 ? other_spirv : spirv; /* the same digest: what is recorded stays */
    }
    for (int i = 0; i < 3; i++)
        assert_input(storage, ZC_STORAGE_RECIPE, keys[i].bytes, recipe, sizeof recipe);
    /* A value of another type under the SPIR-V's name is replaced too. */
    char spirv_name[128] = "zecache:v1:spirv:";
    for (int i = 0; i < 32; i++)
        strcat(spirv_name, "42");
    t_redis *holder = &server;
    redisReply *type = t_redis_command(&server, 2, (const char *[]){"TYPE", spirv_name}, NULL);
    if (strcmp(type->str, "none") == 0)
        holder = &other;
    freeReplyObject(type);
    freeReplyObject(t_redis_command(holder, 2, (const char *[]){"DEL", spirv_name}, NULL));
    freeReplyObject(
        t_redis_command(holder, 3, (const char *[]){"RPUSH", spirv_name, "planted"}, NULL));
    cr_assert_eq(storage->ops->record(storage, &keys[0], recipe, sizeof recipe, &blob, 1), ZC_OK);
    assert_input(storage, ZC_STORAGE_SPIRV, blob.sha256, spirv, sizeof spirv);
    zc_key listed[3];
    memset(listed, 0, sizeof listed);
    cr_assert_eq(storage->ops->list_recipes(storage, collect_listed, listed), ZC_OK);
    for (int i = 0; i < 3; i++) {
        bool found = false;
        for (int j = 0; j < 3; j++)
            found = found || zc_key_equal(&listed[j], &keys[i]);
        cr_assert(found, "recorded key %d not listed", i);
    }
    zc_storage_close(storage);
    t_redis_stop(&other);
}

/* An entry of 20 MiB, over what the transport holds in memory: received
 * into a temporary file, verified there and then read, byte for byte; the
 * same entry with one byte of its compressed payload changed reads as an
 * empty value (rejected), and one that is not signed where a secret is set
 * too. */
Test(storage_redis, an_entry_too_large_to_hold_is_verified_in_a_file, .init = start_plain,
     .fini = stop, .timeout = 120)
{
    zc_key key = t_key(20);
    zc_artifact *artifact = t_artifact(20 << 20, 20);
    uint8_t *entry = NULL;
    size_t size = 0;
    cr_assert_eq(zc_entry_encode(&key, artifact, 1, &entry, &size), ZC_OK);
    zc_artifact_unref(artifact);
    cr_assert_gt(size, (size_t)16 << 20 /* ZC_REDIS_IN_MEMORY_MAX */);
    char url[512];
    snprintf(url, sizeof url, "redis+unix://%s|timeout=20000", server.socket);
    zc_remote_spec spec;
    char reason[256] = "";
    cr_assert_eq(zc_remote_spec_parse(url, &spec, reason, sizeof reason), ZC_OK, "%s", reason);
    zc_storage *storage = NULL;
    cr_assert_eq(zc_storage_redis_open(&spec, 0, server.dir, &storage), ZC_OK);
    cr_assert_eq(storage->ops->put(storage, &key, entry, size, false), ZC_OK);
    assert_get(storage, &key, entry, size);
    entry[size / 2] ^= 0x20;
    cr_assert_eq(storage->ops->put(storage, &key, entry, size, true), ZC_OK);
    uint8_t *value = NULL;
    size_t value_size = 1;
    cr_assert_eq(storage->ops->get(storage, &key, &value, &value_size), ZC_OK);
    cr_assert_eq(value_size, 0, "a damaged entry came back");
    free(value);
    zc_storage_close(storage);
    zc_remote_secret secret = {.size = 16};
    memset(secret.bytes, 's', secret.size);
    spec.secret = &secret;
    cr_assert_eq(zc_storage_redis_open(&spec, 0, server.dir, &storage), ZC_OK);
    entry[size / 2] ^= 0x20;
    cr_assert_eq(storage->ops->put(storage, &key, entry, size, true), ZC_OK);
    value_size = 1;
    cr_assert_eq(storage->ops->get(storage, &key, &value, &value_size), ZC_OK);
    cr_assert_eq(value_size, 0, "an unsigned entry came back");
    free(value);
    zc_storage_close(storage);
    zc_remote_spec_free(&spec);
    free(entry);
}
