/* Nodes for the remote tier's tests (test_remote_cache.c, test_remote_tls.c):
 * caches on separate directories of one scratch directory, each with the
 * remotes given, and a compile that counts its calls and makes an artifact
 * known from its key. Header-only, as the other support headers. */
#ifndef ZC_REMOTE_CACHE_SUPPORT_H
#define ZC_REMOTE_CACHE_SUPPORT_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "cache_test_support.h"
#include "disk_test_support.h"
#include "zecache/cache.h"
#include "zecache/remote.h"

enum { ARTIFACT_SIZE = 20000, KEYS = 5 };

static char scratch[128];
static int next_node;

/* A node: its own cache directory, the given remotes and secret. */
static inline zc_cache *open_node(const char *remote, const char *secret, uint64_t wait_timeout_ms)
{
    return t_open_node(scratch, next_node++, remote, secret, wait_timeout_ms);
}

typedef struct counted_compile {
    atomic_int calls;
    int pause_ms;
    bool fail;
} counted_compile;

static inline uint64_t seed_of(const zc_key *key)
{
    return key->bytes[0] + 1000;
}

typedef struct compile_request {
    counted_compile *counter;
    uint64_t seed;
} compile_request;

static inline zc_status compile_counted(void *context, zc_artifact **out)
{
    compile_request *request = context;
    atomic_fetch_add(&request->counter->calls, 1);
    if (request->counter->pause_ms > 0) {
        struct timespec pause = {0, (long)request->counter->pause_ms * 1000000};
        nanosleep(&pause, NULL);
    }
    if (request->counter->fail)
        return ZC_ERR_BUILD;
    *out = t_artifact(ARTIFACT_SIZE, request->seed);
    return ZC_OK;
}

/* Looks key up and checks the artifact is exactly the one its seed makes. */
static inline zc_lookup_outcome lookup(zc_cache *cache, const zc_key *key, counted_compile *counter)
{
    compile_request request = {.counter = counter, .seed = seed_of(key)};
    zc_artifact *expected = t_artifact(ARTIFACT_SIZE, seed_of(key));
    zc_lookup_outcome outcome = t_lookup_expecting(cache, key, compile_counted, &request, expected);
    zc_artifact_unref(expected);
    return outcome;
}

static inline zc_cache_stats stats_of(zc_cache *cache)
{
    return t_cache_stats(cache);
}

/* Every lookup through remote still gives the right artifact, compiled;
 * the storage fails until the tier leaves it alone (ZC_REMOTE_MAX_FAILURES
 * failed calls) and stores nothing. */
static inline void t_assert_compiles_despite(const char *remote, uint64_t wait_timeout_ms)
{
    zc_cache *node = open_node(remote, NULL, wait_timeout_ms);
    counted_compile counter = {0};
    for (uint64_t i = 0; i < 10; i++) {
        zc_key key = t_key(200 + i);
        cr_assert_eq(lookup(node, &key, &counter), ZC_LOOKUP_COMPILED);
    }
    cr_assert_eq(counter.calls, 10);
    zc_cache_stats stats = stats_of(node);
    cr_assert_eq(stats.remote_errors, ZC_REMOTE_MAX_FAILURES);
    cr_assert_eq(stats.remote_hits, 0);
    cr_assert_eq(stats.remote_stores, 0);
    cr_assert_eq(stats.stores, 10);
    zc_cache_close(node);
}

/* A node stores a key through remote, then the server is lost (lose): the
 * next keys are compiled, the storage fails until the tier leaves it
 * alone. */
static inline void t_assert_compiles_after_losing(const char *remote, void (*lose)(void))
{
    zc_cache *node = open_node(remote, NULL, 30000);
    counted_compile counter = {0};
    zc_key key = t_key(300);
    cr_assert_eq(lookup(node, &key, &counter), ZC_LOOKUP_COMPILED);
    cr_assert_eq(stats_of(node).remote_stores, 1);
    lose();
    for (uint64_t i = 1; i < 6; i++) {
        key = t_key(300 + i);
        cr_assert_eq(lookup(node, &key, &counter), ZC_LOOKUP_COMPILED);
    }
    cr_assert_eq(counter.calls, 6);
    cr_assert_eq(stats_of(node).remote_errors, ZC_REMOTE_MAX_FAILURES);
    zc_cache_close(node);
}

/* ---- one compile per key across nodes ---- */

enum { NODES = 4, SHARED_KEYS = 3 };

typedef struct node_run {
    zc_cache *cache;
    counted_compile *counter;
    zc_lookup_outcome outcomes[SHARED_KEYS];
} node_run;

static pthread_barrier_t start_line;

static inline void *run_node(void *context)
{
    node_run *run = context;
    pthread_barrier_wait(&start_line);
    for (uint64_t i = 0; i < SHARED_KEYS; i++) {
        zc_key key = t_key(400 + i);
        run->outcomes[i] = lookup(run->cache, &key, run->counter);
    }
    return NULL;
}

/* NODES nodes, cold, look the same keys up at once through url: one
 * compile for each key in all, every other lookup a remote hit. */
static inline void t_assert_nodes_compile_each_key_once(const char *url)
{
    counted_compile counter = {.pause_ms = 300};
    node_run runs[NODES];
    pthread_t threads[NODES];
    pthread_barrier_init(&start_line, NULL, NODES);
    for (int n = 0; n < NODES; n++) {
        runs[n] = (node_run){.cache = open_node(url, NULL, 60000), .counter = &counter};
        cr_assert_eq(pthread_create(&threads[n], NULL, run_node, &runs[n]), 0);
    }
    for (int n = 0; n < NODES; n++)
        pthread_join(threads[n], NULL);
    pthread_barrier_destroy(&start_line);
    cr_assert_eq(counter.calls, SHARED_KEYS, "%d compiles for %d keys", counter.calls, SHARED_KEYS);
    uint64_t compiled = 0, remote_hits = 0;
    for (int n = 0; n < NODES; n++) {
        zc_cache_stats stats = stats_of(runs[n].cache);
        compiled += stats.misses;
        remote_hits += stats.remote_hits;
        zc_cache_close(runs[n].cache);
    }
    cr_assert_eq(compiled, SHARED_KEYS);
    cr_assert_eq(remote_hits, (NODES - 1) * SHARED_KEYS);
}

#endif
