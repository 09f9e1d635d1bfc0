/* The cache with an HTTP storage (nginx WebDAV, nginx_test_support.h): nodes
 * simulated as caches on separate directories, each with threads of its
 * own, cold at once (each compiles a module at most once: single flight is
 * per node over HTTP), a fresh node taking every module remotely, a bad
 * value rejected and replaced, signed entries read back through file:// from
 * the directory nginx fills (one layout), and TLS that does not verify: a
 * counted failure, the compile's own result. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cache_test_support.h"
#include "nginx_test_support.h"
#include "zecache/cache.h"
#include "zecache/disk_recipes.h"
#include "zecache/remote.h"

enum { ARTIFACT_SIZE = 30000, KEYS = 6, NODES = 4, THREADS_PER_NODE = 2 };

static t_nginx nginx;
static char scratch[128];
static int nodes_made;

static void setup(void)
{
    t_nginx_start(&nginx);
    snprintf(scratch, sizeof scratch, "/tmp/zc_http_cache_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    nodes_made = 0;
}

static void teardown(void)
{
    t_nginx_stop(&nginx);
    t_remove_tree(scratch);
}

TestSuite(http_cache, .init = setup, .fini = teardown, .timeout = 120);

/* A node's cache on a directory of its own, with NEO_CACHE_REMOTE=remote. */
static zc_cache *make_node(const char *remote, const char *secret)
{
    return t_open_node(scratch, nodes_made++, remote, secret, 0);
}

static void http_remote(const char *attributes, char *remote, size_t size)
{
    char url[256];
    t_nginx_url(&nginx, "/zc", url, sizeof url);
    snprintf(remote, size, "%s" T_NGINX_TIMEOUTS "%s", url, attributes);
}

/* Compiles count per node: key i's artifact is made from seed 500 + i. */
typedef struct node_compiles {
    atomic_int per_key[KEYS];
} node_compiles;

typedef struct build {
    node_compiles *compiles;
    uint64_t index;
} build;

static zc_status build_key(void *context, zc_artifact **out)
{
    build *b = context;
    atomic_fetch_add(&b->compiles->per_key[b->index], 1);
    struct timespec pause = {0, 20 * 1000000}; /* long enough for the others to meet it */
    nanosleep(&pause, NULL);
    *out = t_artifact(ARTIFACT_SIZE, 500 + b->index);
    return ZC_OK;
}

/* Key i looked up on cache: the artifact is exactly the compile's. */
static zc_lookup_outcome look_up(zc_cache *cache, uint64_t i, node_compiles *compiles)
{
    zc_key key = t_key(i);
    build b = {compiles, i};
    zc_artifact *expected = t_artifact(ARTIFACT_SIZE, 500 + i);
    zc_lookup_outcome outcome = t_lookup_expecting(cache, &key, build_key, &b, expected);
    zc_artifact_unref(expected);
    return outcome;
}

/* Every key looked up once on a node of its own; how many it compiled. */
static int compiles_on_a_new_node(const char *remote, const char *secret,
                                  zc_lookup_outcome expected, zc_cache_stats *stats)
{
    zc_cache *cache = make_node(remote, secret);
    node_compiles compiles = {0};
    int total = 0;
    for (uint64_t i = 0; i < KEYS; i++) {
        cr_assert_eq(look_up(cache, i, &compiles), expected, "key %llu", (unsigned long long)i);
        total += compiles.per_key[i];
    }
    *stats = t_cache_stats(cache);
    zc_cache_close(cache);
    return total;
}

typedef struct worker {
    zc_cache *cache;
    node_compiles *compiles;
    pthread_barrier_t *start;
} worker;

static void *run_worker(void *context)
{
    worker *w = context;
    pthread_barrier_wait(w->start);
    for (uint64_t i = 0; i < KEYS; i++)
        (void)look_up(w->cache, i, w->compiles);
    return NULL;
}

Test(http_cache, nodes_cold_at_once_compile_at_most_once_each_and_a_new_node_gets_all)
{
    char remote[512];
    http_remote("", remote, sizeof remote);
    zc_cache *caches[NODES];
    node_compiles compiles[NODES];
    worker workers[NODES * THREADS_PER_NODE];
    pthread_t threads[NODES * THREADS_PER_NODE];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NODES * THREADS_PER_NODE);
    for (int n = 0; n < NODES; n++) {
        caches[n] = make_node(remote, NULL);
        memset(&compiles[n], 0, sizeof compiles[n]);
    }
    for (int t = 0; t < NODES * THREADS_PER_NODE; t++) {
        workers[t] =
            (worker){caches[t / THREADS_PER_NODE], &compiles[t / THREADS_PER_NODE], &start};
        cr_assert_eq(pthread_create(&threads[t], NULL, run_worker, &workers[t]), 0);
    }
    for (int t = 0; t < NODES * THREADS_PER_NODE; t++)
        pthread_join(threads[t], NULL);
    pthread_barrier_destroy(&start);
    for (int n = 0; n < NODES; n++) {
        for (int i = 0; i < KEYS; i++)
            cr_assert_leq(compiles[n].per_key[i], 1, "node %d compiled key %d %d times", n, i,
                          compiles[n].per_key[i]);
        cr_assert_eq(t_cache_stats(caches[n]).remote_errors, 0);
        zc_cache_close(caches[n]);
    }
    cr_assert_eq(t_count_entries(nginx.data), KEYS);
    zc_cache_stats stats;
    cr_assert_eq(compiles_on_a_new_node(remote, NULL, ZC_LOOKUP_REMOTE_HIT, &stats), 0);
    cr_assert_eq(stats.remote_hits, KEYS);
    cr_assert_eq(stats.remote_errors, 0);
}

/* Each entry on the server damaged: rejected, compiled, replaced (PUT over
 * it); the next node takes every module. */
Test(http_cache, bad_values_are_rejected_and_replaced)
{
    char remote[512];
    http_remote("", remote, sizeof remote);
    zc_cache_stats stats;
    cr_assert_eq(compiles_on_a_new_node(remote, NULL, ZC_LOOKUP_COMPILED, &stats), KEYS);
    cr_assert_eq(stats.remote_stores, KEYS);
    for (uint64_t i = 0; i < KEYS; i++) {
        char hex[ZC_KEY_HEX_SIZE], path[512];
        zc_key key = t_key(i);
        zc_key_to_hex(&key, hex);
        snprintf(path, sizeof path, "%s/zc/%c/%c/%s.l0_cache", nginx.data, hex[0], hex[1], hex);
        size_t size = 0;
        uint8_t *bytes = t_read_bytes(path, &size);
        bytes[size / 2] ^= 0x40;
        t_write_file(path, bytes, i % 2 == 0 ? size : size / 3);
        free(bytes);
    }
    cr_assert_eq(compiles_on_a_new_node(remote, NULL, ZC_LOOKUP_COMPILED, &stats), KEYS);
    cr_assert_eq(stats.remote_rejected, KEYS);
    cr_assert_eq(stats.remote_stores, KEYS, "the bad values are replaced");
    cr_assert_eq(compiles_on_a_new_node(remote, NULL, ZC_LOOKUP_REMOTE_HIT, &stats), 0);
    cr_assert_eq(stats.remote_rejected, 0);
}

/* Signed entries go to the server as a file:// storage has them: the
 * directory nginx fills serves them as one. */
Test(http_cache, signed_entries_in_the_layout_of_a_file_storage)
{
    const char *secret = "the secret of this test, long enough";
    char remote[512], directory[512];
    http_remote("", remote, sizeof remote);
    zc_cache_stats stats;
    cr_assert_eq(compiles_on_a_new_node(remote, secret, ZC_LOOKUP_COMPILED, &stats), KEYS);
    cr_assert_eq(compiles_on_a_new_node(remote, secret, ZC_LOOKUP_REMOTE_HIT, &stats), 0);
    snprintf(directory, sizeof directory, "file://%s/zc|read-only", nginx.data);
    cr_assert_eq(compiles_on_a_new_node(directory, secret, ZC_LOOKUP_REMOTE_HIT, &stats), 0);
    cr_assert_eq(stats.remote_hits, KEYS);
    cr_assert_eq(compiles_on_a_new_node(remote, "another secret, long enough too",
                                        ZC_LOOKUP_COMPILED, &stats),
                 KEYS);
    cr_assert_eq(stats.remote_rejected, KEYS, "signed with another secret: rejected");
}

/* A certificate that does not verify: each call a counted failure (three in
 * a row and the storage is left alone), never a plain-text fallback; the
 * modules are compiled, nothing reaches the server. */
static void assert_tls_fails(const char *host, const char *ca)
{
    char url[256], remote[512];
    t_nginx_tls_url(&nginx, host, "/zc", url, sizeof url);
    snprintf(remote, sizeof remote, "%s" T_NGINX_TIMEOUTS "|ca-file=%s", url, ca);
    zc_cache_stats stats;
    cr_assert_eq(compiles_on_a_new_node(remote, NULL, ZC_LOOKUP_COMPILED, &stats), KEYS);
    cr_assert_eq(stats.remote_errors, ZC_REMOTE_MAX_FAILURES);
    cr_assert_eq(stats.remote_hits, 0);
    cr_assert_eq(stats.remote_stores, 0);
    cr_assert_eq(t_count_entries(nginx.data), 0);
}

Test(http_cache, tls_that_does_not_verify_is_a_counted_failure)
{
    assert_tls_fails("localhost", nginx.other_ca);
    assert_tls_fails("127.0.0.2", nginx.ca);
    char url[256], remote[512];
    t_nginx_tls_url(&nginx, "localhost", "/zc", url, sizeof url);
    snprintf(remote, sizeof remote, "%s" T_NGINX_TIMEOUTS "|ca-file=%s", url, nginx.ca);
    zc_cache_stats stats;
    cr_assert_eq(compiles_on_a_new_node(remote, NULL, ZC_LOOKUP_COMPILED, &stats), KEYS);
    cr_assert_eq(stats.remote_stores, KEYS);
    cr_assert_eq(compiles_on_a_new_node(remote, NULL, ZC_LOOKUP_REMOTE_HIT, &stats), 0);
    cr_assert_eq(stats.remote_errors, 0);
}

/* Recorded inputs through the remote tier with a secret: signed on the
 * server, listed and read back (signature cut) by a node with the secret;
 * one with another secret rejects them. */
static zc_remote *open_remote(const char *secret, zc_cache_counters *counters)
{
    zc_config config = t_disk_config("", ZC_DEFAULT_MAX_SIZE, 3);
    http_remote("", config.remote, sizeof config.remote);
    snprintf(config.remote_secret_file, sizeof config.remote_secret_file, "%s/secret%d", scratch,
             nodes_made++);
    t_write_secret(config.remote_secret_file, secret);
    zc_remote *remote = NULL;
    cr_assert_eq(zc_remote_open(&config, counters, &remote), ZC_OK);
    cr_assert_not_null(remote);
    return remote;
}

static bool take_key(void *context, const zc_key *key)
{
    zc_key *found = context;
    *found = *key;
    return true;
}

Test(http_cache, signed_recorded_inputs_are_listed_and_read_back)
{
    zc_cache_counters counters = {0};
    zc_remote *writer = open_remote("the secret of this test, long enough", &counters);
    zc_key key = t_key(60);
    static const uint8_t recipe[] = "a recipe", spirv[] = "SPIR-V";
    zc_input_blob blob = {.bytes = spirv, .size = sizeof spirv};
    memset(blob.sha256, 0x6b, sizeof blob.sha256);
    zc_artifact *artifact = t_artifact(ARTIFACT_SIZE, 60);
    uint8_t *entry = NULL;
    size_t entry_size = 0;
    cr_assert_eq(zc_entry_encode(&key, artifact, 3, &entry, &entry_size), ZC_OK);
    cr_assert(zc_remote_store(writer, &key, entry, entry_size, 0));
    free(entry);
    zc_artifact_unref(artifact);
    zc_remote_record(writer, &key, recipe, sizeof recipe, &blob, 1);
    zc_remote_close(writer);
    zc_remote *reader = open_remote("the secret of this test, long enough", &counters);
    zc_key found = t_key(0);
    cr_assert_eq(zc_remote_list_recipes(reader, take_key, &found), ZC_OK);
    cr_assert(zc_key_equal(&found, &key));
    uint8_t *value = NULL;
    size_t size = 0;
    char reason[256];
    cr_assert_eq(zc_remote_read_input(reader, ZC_STORAGE_RECIPE, key.bytes, &value, &size, reason,
                                      sizeof reason),
                 ZC_OK, "%s", reason);
    cr_assert(size == sizeof recipe && memcmp(value, recipe, size) == 0);
    free(value);
    cr_assert_eq(zc_remote_read_input(reader, ZC_STORAGE_SPIRV, blob.sha256, &value, &size, reason,
                                      sizeof reason),
                 ZC_OK, "%s", reason);
    cr_assert(size == sizeof spirv && memcmp(value, spirv, size) == 0);
    free(value);
    zc_remote_close(reader);
    zc_remote *other = open_remote("another secret, long enough too", &counters);
    cr_assert_eq(zc_remote_read_input(other, ZC_STORAGE_RECIPE, key.bytes, &value, &size, reason,
                                      sizeof reason),
                 ZC_MISS);
    cr_assert_neq(reason[0], '\0', "rejected, with the reason");
    cr_assert_eq(counters.remote_rejected, 1);
    cr_assert_eq(counters.remote_errors, 0);
    zc_remote_close(other);
}
