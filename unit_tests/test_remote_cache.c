/* The cache walking memory, the local disk and the remote storages, with
 * nodes simulated as caches on separate directories sharing one private
 * redis-server (or a file:// directory): remote hits copied locally, bad and
 * wrongly signed values rejected and replaced, a read-only file storage, a
 * dead or silent server, and one compile per key across nodes. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "redis_test_support.h"
#include "remote_cache_support.h"
#include "zecache/cache.h"
#include "zecache/entry.h"
#include "zecache/remote.h"
#include "zecache/remote_tag.h"

static t_redis server;

static void setup(void)
{
    t_redis_start(&server, NULL);
    snprintf(scratch, sizeof scratch, "/tmp/zc_rcache_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    next_node = 0;
}

static void teardown(void)
{
    t_redis_stop(&server);
    t_remove_tree(scratch);
}

static void redis_url(char *url, size_t size)
{
    snprintf(url, size, "redis+unix://%s", server.socket);
}

static zc_cache *open_redis_node(const char *secret)
{
    char url[256];
    redis_url(url, sizeof url);
    return open_node(url, secret, 0);
}

static void fill_node(zc_cache *cache)
{
    counted_compile counter = {0};
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i);
        cr_assert_eq(lookup(cache, &key, &counter), ZC_LOOKUP_COMPILED);
    }
    cr_assert_eq(counter.calls, KEYS);
    cr_assert_eq(stats_of(cache).remote_stores, KEYS);
}

/* Looks every key up; each has the outcome expected. Returns the compiles. */
static int assert_every_lookup(zc_cache *cache, zc_lookup_outcome expected)
{
    counted_compile counter = {0};
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i);
        cr_assert_eq(lookup(cache, &key, &counter), expected, "key %llu", (unsigned long long)i);
    }
    return counter.calls;
}

static void assert_all_remote_hits(zc_cache *cache)
{
    cr_assert_eq(assert_every_lookup(cache, ZC_LOOKUP_REMOTE_HIT), 0);
    zc_cache_stats stats = stats_of(cache);
    cr_assert_eq(stats.remote_hits, KEYS);
    cr_assert_eq(stats.remote_rejected, 0);
    cr_assert_eq(stats.misses, 0);
}

static void assert_all_compiled_and_rejected(zc_cache *cache)
{
    cr_assert_eq(assert_every_lookup(cache, ZC_LOOKUP_COMPILED), KEYS);
    zc_cache_stats stats = stats_of(cache);
    cr_assert_eq(stats.remote_rejected, KEYS);
    cr_assert_eq(stats.remote_hits, 0);
    cr_assert_eq(stats.misses, KEYS);
}

Test(remote_cache, new_node_gets_every_module_from_redis, .init = setup, .fini = teardown)
{
    zc_cache *first = open_redis_node(NULL);
    fill_node(first);
    zc_cache_close(first);
    zc_cache *fresh = open_redis_node(NULL);
    assert_all_remote_hits(fresh);
    cr_assert_eq(stats_of(fresh).stores, KEYS, "remote hits are copied to the local disk");
    cr_assert_eq(stats_of(fresh).remote_stores, 0);
    zc_cache_close(fresh);
    /* The same node again, memory cold and Redis gone: its disk has them. */
    next_node--;
    t_redis_stop(&server);
    zc_cache *again = open_redis_node(NULL);
    counted_compile counter = {0};
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i);
        cr_assert_eq(lookup(again, &key, &counter), ZC_LOOKUP_DISK_HIT);
    }
    zc_cache_close(again);
}

static void value_name(const zc_key *key, char name[128])
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(name, 128, "zecache:v1:%s", hex);
}

/* Each key's value damaged a different way: a flipped payload byte, a cut,
 * garbage, empty, a non-string, another key's value. */
static void corrupt_every_value(void)
{
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i), other = t_key((i + 1) % KEYS);
        char name[128], other_name[128];
        value_name(&key, name);
        value_name(&other, other_name);
        redisReply *reply = t_redis_command(&server, 2, (const char *[]){"GET", name}, NULL);
        cr_assert_eq(reply->type, REDIS_REPLY_STRING);
        size_t size = reply->len;
        char *value = malloc(size);
        memcpy(value, reply->str, size);
        freeReplyObject(reply);
        if (i == 0) {
            value[size / 2] ^= 0x40;
        } else if (i == 1) {
            size -= 100;
        } else if (i == 2) {
            memset(value, 'g', size);
        } else if (i == 3) {
            size = 0;
        } else {
            freeReplyObject(t_redis_command(&server, 2, (const char *[]){"DEL", name}, NULL));
            freeReplyObject(
                t_redis_command(&server, 3, (const char *[]){"RPUSH", name, "x"}, NULL));
            free(value);
            continue;
        }
        freeReplyObject(t_redis_command(&server, 3, (const char *[]){"SET", name, value},
                                        (size_t[]){3, strlen(name), size}));
        free(value);
    }
}

Test(remote_cache, bad_values_are_misses_and_get_replaced, .init = setup, .fini = teardown)
{
    zc_cache *first = open_redis_node(NULL);
    fill_node(first);
    zc_cache_close(first);
    corrupt_every_value();
    zc_cache *victim = open_redis_node(NULL);
    assert_all_compiled_and_rejected(victim);
    cr_assert_eq(stats_of(victim).remote_stores, KEYS, "the bad values are replaced");
    zc_cache_close(victim);
    zc_cache *later = open_redis_node(NULL);
    assert_all_remote_hits(later);
    zc_cache_close(later);
}

Test(remote_cache, another_secret_takes_nothing, .init = setup, .fini = teardown)
{
    const char *one = "first secret, long enough", *two = "second secret, long enough";
    zc_cache *signer = open_redis_node(one);
    fill_node(signer);
    zc_cache_close(signer);
    zc_cache *same = open_redis_node(one);
    assert_all_remote_hits(same);
    zc_cache_close(same);
    /* Another secret, or none: another namespace of keys. Plain misses,
     * nothing rejected, and the first team's entries are left alone. */
    zc_cache *other = open_redis_node(two);
    fill_node(other);
    cr_assert_eq(stats_of(other).remote_rejected, 0);
    zc_cache_close(other);
    zc_cache *unsigned_node = open_redis_node(NULL);
    fill_node(unsigned_node);
    zc_cache_close(unsigned_node);
    zc_cache *back = open_redis_node(one);
    assert_all_remote_hits(back);
    zc_cache_close(back);
    /* The keys: three namespaces of KEYS entries each, named as documented. */
    redisReply *keys = t_redis_command(&server, 2, (const char *[]){"KEYS", "zecache:v1:*"}, NULL);
    cr_assert_eq(keys->elements, 3 * KEYS);
    size_t namespaced = 0;
    for (size_t i = 0; i < keys->elements; i++) {
        const char *name = keys->element[i]->str;
        size_t hex = strspn(name + 12, "0123456789abcdef");
        namespaced += name[11] == 's' && hex == 16 && name[12 + hex] == ':' &&
                      strspn(name + 29, "0123456789abcdef") == 64 && name[29 + 64] == '\0';
    }
    freeReplyObject(keys);
    cr_assert_eq(namespaced, 2 * KEYS);
}

Test(remote_cache, unsigned_values_are_refused_with_a_secret, .init = setup, .fini = teardown)
{
    zc_cache *plain = open_redis_node(NULL);
    fill_node(plain);
    zc_cache_close(plain);
    /* Unsigned values planted where the secret's nodes look. */
    const char *text = "a secret that is long enough";
    zc_remote_secret secret = {.size = strlen(text)};
    memcpy(secret.bytes, text, secret.size);
    char space[24];
    zc_remote_key_namespace(&secret, space);
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i);
        char name[128], planted[160];
        value_name(&key, name);
        snprintf(planted, sizeof planted, "zecache:v1:%s%s", space, name + strlen("zecache:v1:"));
        freeReplyObject(t_redis_command(&server, 3, (const char *[]){"COPY", name, planted}, NULL));
    }
    zc_cache *strict = open_redis_node(text);
    assert_all_compiled_and_rejected(strict);
    zc_cache_close(strict);
}

Test(remote_cache, unusable_secret_file_turns_the_remotes_off, .init = setup, .fini = teardown)
{
    zc_cache *plain = open_redis_node(NULL);
    fill_node(plain);
    zc_cache_close(plain);
    zc_cache *node = open_redis_node("short");
    counted_compile counter = {0};
    zc_key key = t_key(0);
    cr_assert_eq(lookup(node, &key, &counter), ZC_LOOKUP_COMPILED);
    zc_cache_stats stats = stats_of(node);
    cr_assert_eq(stats.remote_hits + stats.remote_misses + stats.remote_stores, 0);
    zc_cache_close(node);
}

Test(remote_cache, file_storage_serves_hits_and_read_only_takes_nothing, .init = setup,
     .fini = teardown)
{
    /* A node's own cache directory, served as is. */
    zc_cache *first = open_node("", NULL, 0);
    counted_compile counter = {0};
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i);
        lookup(first, &key, &counter);
    }
    char shared[PATH_MAX];
    snprintf(shared, sizeof shared, "%s", zc_cache_disk_dir(first));
    zc_cache_close(first);
    char remote[PATH_MAX + 32];
    snprintf(remote, sizeof remote, "file://%s|read-only", shared);
    zc_cache *reader = open_node(remote, NULL, 0);
    assert_all_remote_hits(reader);
    zc_key new_key = t_key(50);
    cr_assert_eq(lookup(reader, &new_key, &counter), ZC_LOOKUP_COMPILED);
    cr_assert_eq(t_count_entries(shared), KEYS, "a read-only storage was written to");
    cr_assert_eq(stats_of(reader).remote_stores, 0);
    zc_cache_close(reader);
    /* Writable: the new compile lands there too. */
    snprintf(remote, sizeof remote, "file://%s", shared);
    zc_cache *writer = open_node(remote, NULL, 0);
    zc_key newer_key = t_key(51);
    cr_assert_eq(lookup(writer, &newer_key, &counter), ZC_LOOKUP_COMPILED);
    cr_assert_eq(stats_of(writer).remote_stores, 1);
    cr_assert_eq(t_count_entries(shared), KEYS + 1);
    zc_cache_close(writer);
}

/* A file:// storage written with a secret holds signed entries in the one
 * entry format: used as a node's own cache directory (NEO_CACHE_DIR), every
 * entry is a disk hit and none is removed as bad. */
Test(remote_cache, a_signed_file_storage_is_a_cache_directory, .init = setup, .fini = teardown)
{
    char shared[PATH_MAX], remote[PATH_MAX + 16];
    snprintf(shared, sizeof shared, "%s/shared", scratch);
    snprintf(remote, sizeof remote, "file://%s", shared);
    zc_cache *signer = open_node(remote, "a secret that is long enough", 0);
    fill_node(signer);
    zc_cache_close(signer);
    cr_assert_eq(t_count_entries(shared), KEYS);

    zc_config config = t_disk_config(shared, ZC_DEFAULT_MAX_SIZE, 3);
    zc_cache *local = NULL;
    cr_assert_eq(zc_cache_open(&config, &local), ZC_OK);
    cr_assert_eq(assert_every_lookup(local, ZC_LOOKUP_DISK_HIT), 0);
    zc_cache_close(local);
    cr_assert_eq(t_count_entries(shared), KEYS, "signed entries were removed as bad");
}

Test(remote_cache, silent_server_never_hangs_a_program, .init = setup, .fini = teardown,
     .timeout = 60)
{
    unsigned port;
    int listener = t_silent_listener(&port);
    char remote[128];
    snprintf(remote, sizeof remote, "redis://127.0.0.1:%u|connect-timeout=100|timeout=100", port);
    t_assert_compiles_despite(remote, 30000);
    close(listener);
}

static void kill_server(void)
{
    t_redis_stop(&server);
}

Test(remote_cache, stopped_and_killed_servers_never_hang_a_program, .init = setup, .fini = teardown,
     .timeout = 60)
{
    char remote[256];
    snprintf(remote, sizeof remote, "redis+unix://%s|timeout=100", server.socket);
    cr_assert_eq(kill(server.pid, SIGSTOP), 0);
    t_assert_compiles_despite(remote, 30000);
    /* Killed mid-run: a node that was using it goes on compiling. */
    kill(server.pid, SIGCONT);
    t_assert_compiles_after_losing(remote, kill_server);
}

Test(remote_cache, nodes_cold_at_once_compile_each_key_once, .init = setup, .fini = teardown,
     .timeout = 120)
{
    char url[256];
    redis_url(url, sizeof url);
    t_assert_nodes_compile_each_key_once(url);
}

typedef struct failing_holder {
    zc_cache *cache;
    counted_compile counter;
} failing_holder;

static void *fail_a_build(void *context)
{
    failing_holder *holder = context;
    zc_key key = t_key(500);
    compile_request request = {.counter = &holder->counter, .seed = 1};
    zc_artifact *artifact = NULL;
    cr_assert_eq(zc_cache_get_or_compile(holder->cache, &key, NULL, compile_counted, &request,
                                         &artifact, NULL),
                 ZC_ERR_BUILD);
    return NULL;
}

/* The holder's build fails: the waiter compiles at once instead of waiting
 * out its (here 100 s) timeout; the Criterion timeout would catch that. */
Test(remote_cache, holder_failure_releases_waiters_at_once, .init = setup, .fini = teardown,
     .timeout = 60)
{
    char url[256];
    redis_url(url, sizeof url);
    failing_holder holder = {.cache = open_node(url, NULL, 100000),
                             .counter = {.pause_ms = 500, .fail = true}};
    zc_cache *waiter = open_node(url, NULL, 100000);
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, fail_a_build, &holder), 0);
    while (atomic_load(&holder.counter.calls) == 0) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    counted_compile counter = {0};
    zc_key key = t_key(500);
    cr_assert_eq(lookup(waiter, &key, &counter), ZC_LOOKUP_COMPILED);
    cr_assert_eq(counter.calls, 1);
    pthread_join(thread, NULL);
    zc_cache_close(holder.cache);
    zc_cache_close(waiter);
}

/* ---- concurrent stores of one key into a file storage ---- */

typedef struct file_writer {
    zc_storage *storage;
    const uint8_t *entry;
    size_t entry_size;
} file_writer;

static void *put_repeatedly(void *context)
{
    file_writer *writer = context;
    zc_key key = t_key(600);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(writer->storage->ops->put(writer->storage, &key, writer->entry,
                                               writer->entry_size, i % 3 == 0),
                     ZC_OK);
    return NULL;
}

Test(remote_cache, concurrent_stores_into_a_file_storage_leave_one_whole_entry, .init = setup,
     .fini = teardown, .timeout = 120)
{
    enum { WRITERS = 4 };
    char url[PATH_MAX];
    snprintf(url, sizeof url, "file://%s/shared", scratch);
    zc_remote_spec spec;
    char reason[256];
    cr_assert_eq(zc_remote_spec_parse(url, &spec, reason, sizeof reason), ZC_OK, "%s", reason);
    zc_config config;
    memset(&config, 0, sizeof config);
    config.max_size = ZC_DEFAULT_MAX_SIZE;
    zc_key key = t_key(600);
    file_writer writers[WRITERS];
    uint8_t *entries[WRITERS];
    pthread_t threads[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, 700 + (uint64_t)i);
        cr_assert_eq(zc_entry_encode(&key, artifact, 3, &entries[i], &writers[i].entry_size),
                     ZC_OK);
        zc_artifact_unref(artifact);
        writers[i].entry = entries[i];
        cr_assert_eq(zc_storage_open(&spec, &config, &writers[i].storage), ZC_OK);
        cr_assert_eq(pthread_create(&threads[i], NULL, put_repeatedly, &writers[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(threads[i], NULL);
    uint8_t *value = NULL;
    size_t size = 0;
    cr_assert_eq(writers[0].storage->ops->get(writers[0].storage, &key, &value, &size), ZC_OK);
    int matches = 0;
    for (int i = 0; i < WRITERS; i++)
        matches += size == writers[i].entry_size && memcmp(value, entries[i], size) == 0;
    cr_assert_eq(matches, 1, "the file is not exactly one writer's entry");
    cr_assert_eq(t_count_entries(scratch), 1);
    free(value);
    for (int i = 0; i < WRITERS; i++) {
        zc_storage_close(writers[i].storage);
        free(entries[i]);
    }
    zc_remote_spec_free(&spec);
}

/* 32 MiB of garbage under a key's name, more than the transport holds in
 * memory: refused at its first bytes (no entry header) as a bad value,
 * which is counted as rejected, compiled and replaced, so that the next
 * node gets a remote hit. */
Test(remote_cache, a_huge_bad_value_is_rejected_and_replaced, .init = setup, .fini = teardown)
{
    zc_key key = t_key(7);
    char name[128];
    value_name(&key, name);
    size_t size = (size_t)32 << 20;
    char *garbage = malloc(size);
    memset(garbage, 'g', size);
    freeReplyObject(t_redis_command(&server, 3, (const char *[]){"SET", name, garbage},
                                    (size_t[]){3, strlen(name), size}));
    free(garbage);
    zc_cache *victim = open_redis_node(NULL);
    counted_compile counter = {0};
    cr_assert_eq(lookup(victim, &key, &counter), ZC_LOOKUP_COMPILED);
    zc_cache_stats stats = stats_of(victim);
    cr_assert_eq(atomic_load(&counter.calls), 1);
    cr_assert_eq(stats.remote_rejected, 1);
    cr_assert_eq(stats.remote_errors, 0);
    cr_assert_eq(stats.remote_stores, 1, "the bad value is replaced");
    zc_cache_close(victim);
    zc_cache *later = open_redis_node(NULL);
    cr_assert_eq(lookup(later, &key, &counter), ZC_LOOKUP_REMOTE_HIT);
    zc_cache_close(later);
}

/* ---- build locks and the secret ---- */

static const char lock_secret[] = "a secret that is long enough";

/* The build lock of key where the secret's nodes look. */
static void lock_name_of(const zc_key *key, char *name, size_t size)
{
    zc_remote_secret secret = {.size = strlen(lock_secret)};
    memcpy(secret.bytes, lock_secret, secret.size);
    char space[24], hex[ZC_KEY_HEX_SIZE];
    zc_remote_key_namespace(&secret, space);
    zc_key_to_hex(key, hex);
    snprintf(name, size, "zecache:v1:%slock:%s", space, hex);
}

/* Every key looked up by a node with the secret, which waits up to
 * wait_ms on a build lock: each compiled, with its own result. The
 * milliseconds it took. */
static uint64_t signed_lookups_ms(uint64_t wait_ms)
{
    char url[256];
    redis_url(url, sizeof url);
    zc_cache *node = open_node(url, lock_secret, wait_ms);
    uint64_t start = t_monotonic_ms();
    cr_assert_eq(assert_every_lookup(node, ZC_LOOKUP_COMPILED), KEYS);
    uint64_t took = t_monotonic_ms() - start;
    zc_cache_close(node);
    return took;
}

/* Someone with write access to Redis but not the secret sets the build
 * locks of modules (the entries deleted): a node with the secret does not
 * wait on them (it did, NEO_CACHE_WAIT_TIMEOUT_MS per module). */
Test(remote_cache, locks_without_proof_of_the_secret_are_not_waited_on, .init = setup,
     .fini = teardown)
{
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i);
        char name[160];
        lock_name_of(&key, name, sizeof name);
        const char *argv[] = {"SET", name, "0123456789abcdef0123456789abcdef", "PX", "600000"};
        freeReplyObject(t_redis_command(&server, 5, argv, NULL));
    }
    uint64_t took = signed_lookups_ms(5000);
    cr_assert_lt(took, 2000, "%d planted locks cost %llu ms", KEYS, (unsigned long long)took);
}

/* Genuine locks of the secret's, never released (a holder that died, or
 * one's lock replayed by a party that can write to Redis): a node waits on
 * them, but no more than about 3 s in all. */
Test(remote_cache, waiting_on_locks_that_come_to_nothing_is_bounded, .init = setup,
     .fini = teardown)
{
    char url[256];
    redis_url(url, sizeof url);
    zc_remote_spec spec;
    char reason[256] = "";
    cr_assert_eq(zc_remote_spec_parse(url, &spec, reason, sizeof reason), ZC_OK, "%s", reason);
    zc_remote_secret secret = {.size = strlen(lock_secret)};
    memcpy(secret.bytes, lock_secret, secret.size);
    zc_remote_key_namespace(&secret, spec.key_namespace);
    spec.secret = &secret;
    zc_storage *holder = NULL;
    cr_assert_eq(zc_storage_redis_open(&spec, 1 << 20, NULL, &holder), ZC_OK);
    zc_remote_spec_free(&spec);
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i);
        zc_storage_claim claim;
        zc_storage_claim_result result;
        cr_assert_eq(holder->ops->claim(holder, &key, 600000, &result, &claim), ZC_OK);
        cr_assert_eq(result, ZC_STORAGE_CLAIMED);
    }
    zc_storage_close(holder); /* the locks stay */
    uint64_t took = signed_lookups_ms(1500);
    cr_assert_lt(took, 5000, "%d dead locks cost %llu ms", KEYS, (unsigned long long)took);
}
