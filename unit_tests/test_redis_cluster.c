/* The Redis storage on a Redis Cluster of the test's own
 * (redis_cluster_support.h: three masters, three replicas): hash slots and
 * tags as the specification gives them, an entry's names on one slot,
 * every master used and listed, MOVED and ASK followed while a slot moves,
 * seeds that are down passed over, and a master killed: calls fail fast
 * (never a wrong value) until its replica takes over, then hits resume in
 * the same process; nodes cold at once compile each module once in all. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "disk_test_support.h"
#include "redis_cluster_support.h"
#include "redis/redis_key_slot.h"
#include "redis_storage_support.h"
#include "zecache/cache.h"
#include "zecache/disk_recipes.h"
#include "zecache/storage.h"

enum { VALUE_SIZE = 3000, CALL_DEADLINE_MS = 10000 };

static t_cluster cluster;
static char scratch[64];
static uint64_t gate_seed;
static atomic_bool gate_reached, gate_open;

/* The rights the tier needs on a cluster, on every node (ACLs are each
 * node's own): the README's, and CLUSTER SLOTS and ASKING. Every test's
 * storage is this user's. */
static void add_acl_user(void)
{
    for (int i = 0; i < T_CLUSTER_NODES; i++) {
        const char *argv[] = {"ACL",        "SETUSER",    "zecache",       "on",
                              ">zc-secret", "~zecache:*", "resetchannels", "-@all",
                              "+get",       "+set",       "+del",          "+exists",
                              "+eval",      "+ping",      "+scan",         "+cluster|slots",
                              "+asking"};
        redisReply *reply = t_node_command(&cluster, i, sizeof argv / sizeof *argv, argv);
        cr_assert(reply != NULL && reply->type == REDIS_REPLY_STATUS, "ACL SETUSER: %s",
                  reply != NULL && reply->str != NULL ? reply->str : "no reply");
        freeReplyObject(reply);
    }
}

static void setup(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/zc_cluster_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    t_cluster_start(&cluster);
    add_acl_user();
    gate_seed = UINT64_MAX;
    atomic_store(&gate_reached, false);
    atomic_store(&gate_open, false);
}

static void teardown(void)
{
    t_cluster_stop(&cluster);
    t_remove_tree(scratch);
}

TestSuite(cluster, .init = setup, .fini = teardown, .timeout = 240);

/* The cluster as NEO_CACHE_REMOTE names it: the ACL user, node 0 as the
 * seed, and the others as more seeds, as a site lists them (a node that
 * starts while its one seed is down cannot find the cluster). */
static void cluster_url(char *url, size_t size, const char *attributes)
{
    int used = snprintf(url, size,
                        "redis://zecache:zc-secret@127.0.0.1:%u|cluster|connect-timeout=300|"
                        "timeout=1000%s|seeds=",
                        cluster.nodes[0].port, attributes);
    for (int i = 1; i < T_CLUSTER_NODES; i++)
        used += snprintf(url + used, size - (size_t)used, "%s127.0.0.1:%u", i > 1 ? "," : "",
                         cluster.nodes[i].port);
}

static zc_storage *open_cluster_storage(void)
{
    char url[512];
    cluster_url(url, sizeof url, "");
    return t_open_redis_storage(url);
}

static void value_of(uint64_t seed, uint8_t value[VALUE_SIZE])
{
    t_fill_random(value, VALUE_SIZE, seed);
}

static zc_status get_exact(zc_storage *storage, uint64_t seed)
{
    zc_key key = t_key(seed);
    uint8_t *value = NULL, expected[VALUE_SIZE];
    size_t size = 0;
    value_of(seed, expected);
    zc_status status = storage->ops->get(storage, &key, &value, &size);
    if (status == ZC_OK) {
        cr_assert_eq(size, VALUE_SIZE, "key %llu", (unsigned long long)seed);
        cr_assert_arr_eq(value, expected, VALUE_SIZE, "key %llu", (unsigned long long)seed);
    } else {
        cr_assert_null(value);
    }
    free(value);
    return status;
}

static void put(zc_storage *storage, uint64_t seed)
{
    zc_key key = t_key(seed);
    uint8_t value[VALUE_SIZE];
    value_of(seed, value);
    cr_assert_eq(storage->ops->put(storage, &key, value, sizeof value, false), ZC_OK, "key %llu",
                 (unsigned long long)seed);
}

/* zecache:v1:<infix>{<hex>}: a key's names in a cluster. */
static void tagged_name(const char *infix, const zc_key *key, char *name, size_t size)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(name, size, "zecache:v1:%s{%s}", infix, hex);
}

/* The bytes of name, read on the master serving it. */
static redisReply *get_on_master(const char *name)
{
    int master = t_master_of_slot(&cluster, t_key_slot(&cluster, name));
    redisReply *reply = t_node_command(&cluster, master, 2, (const char *[]){"GET", name});
    cr_assert_not_null(reply);
    return reply;
}

/* ---- slots ---- */

Test(cluster_slot, crc16_of_the_name_or_of_its_hash_tag)
{
    /* CRC16/XMODEM("123456789") is 0x31C3, the specification's check value. */
    cr_assert_eq(zc_redis_key_slot("123456789", 9), 0x31C3 % 16384);
    cr_assert_eq(zc_redis_key_slot("{user1000}.following", 20), 3443);
    cr_assert_eq(zc_redis_key_slot("{user1000}.followers", 20), 3443);
    cr_assert_eq(zc_redis_key_slot("user1000", 8), 3443);
    /* An empty tag is none: the whole name. */
    cr_assert_eq(zc_redis_key_slot("foo{}{bar}", 10), 8363);
    /* The first '{' and the next '}'. */
    cr_assert_eq(zc_redis_key_slot("foo{{bar}}zap", 13), 4015);
    cr_assert_eq(zc_redis_key_slot("foo{bar}{zap}", 13), 5061);
    /* No '}' after the '{': the whole name. */
    cr_assert_eq(zc_redis_key_slot("foo{bar", 7), 15278);
}

/* What the server says of every name of one entry's protocol: one slot. */
Test(cluster, names_of_one_entry_share_a_slot_and_every_master_holds_entries)
{
    zc_storage *storage = open_cluster_storage();
    enum { KEYS = 24 };
    for (uint64_t i = 0; i < KEYS; i++) {
        cr_assert_eq(get_exact(storage, i), ZC_MISS);
        put(storage, i);
        cr_assert_eq(get_exact(storage, i), ZC_OK);
    }
    int masters_used[T_CLUSTER_NODES] = {0};
    for (uint64_t i = 0; i < KEYS; i++) {
        zc_key key = t_key(i);
        char entry[128], lock[128], recipe[128];
        tagged_name("", &key, entry, sizeof entry);
        tagged_name("lock:", &key, lock, sizeof lock);
        tagged_name("recipe:", &key, recipe, sizeof recipe);
        long long slot = t_key_slot(&cluster, entry);
        cr_assert_eq(t_key_slot(&cluster, lock), slot);
        cr_assert_eq(t_key_slot(&cluster, recipe), slot);
        redisReply *reply = get_on_master(entry);
        uint8_t expected[VALUE_SIZE];
        value_of(i, expected);
        cr_assert_eq(reply->type, REDIS_REPLY_STRING);
        cr_assert_eq(reply->len, VALUE_SIZE);
        cr_assert_arr_eq(reply->str, expected, VALUE_SIZE);
        freeReplyObject(reply);
        masters_used[t_master_of_slot(&cluster, slot)]++;
    }
    int masters = 0;
    for (int n = 0; n < T_CLUSTER_NODES; n++)
        masters += masters_used[n] > 0;
    cr_assert_eq(masters, 3, "the keys did not spread over the three masters");
    for (uint64_t i = 0; i < KEYS; i += 2) {
        zc_key key = t_key(i);
        cr_assert_eq(storage->ops->remove(storage, &key), ZC_OK);
        cr_assert_eq(get_exact(storage, i), ZC_MISS);
        cr_assert_eq(get_exact(storage, i + 1), ZC_OK);
    }
    zc_storage_close(storage);
}

/* The claim script names an entry and its lock: both on one slot, or the
 * cluster refuses it (CROSSSLOT). */
Test(cluster, the_build_lock_works_on_every_master)
{
    zc_storage *storage = open_cluster_storage(), *other = open_cluster_storage();
    for (uint64_t i = 100; i < 112; i++) {
        zc_key key = t_key(i);
        zc_storage_claim claim, lost;
        zc_storage_claim_result result;
        cr_assert_eq(storage->ops->claim(storage, &key, 2000, &result, &claim), ZC_OK);
        cr_assert_eq(result, ZC_STORAGE_CLAIMED, "key %llu", (unsigned long long)i);
        char lock[128];
        tagged_name("lock:", &key, lock, sizeof lock);
        redisReply *reply = get_on_master(lock);
        cr_assert_eq(reply->type, REDIS_REPLY_STRING);
        cr_assert_str_eq(reply->str, claim.token);
        freeReplyObject(reply);
        /* Released as failed: another node is told at once. */
        storage->ops->release(storage, &key, &claim, true);
        cr_assert_eq(other->ops->claim(other, &key, 2000, &result, &lost), ZC_OK);
        cr_assert_eq(result, ZC_STORAGE_GIVE_UP);
        cr_assert(!lost.held);
        put(storage, i);
        cr_assert_eq(other->ops->claim(other, &key, 2000, &result, &lost), ZC_OK);
        cr_assert_eq(result, ZC_STORAGE_READY);
    }
    zc_storage_close(other);
    zc_storage_close(storage);
}

typedef struct listed {
    int count[40];
} listed;

static bool count_listed(void *context, const zc_key *key)
{
    listed *seen = context;
    for (uint64_t i = 0; i < 40; i++) {
        zc_key expected = t_key(200 + i);
        if (zc_key_equal(key, &expected))
            seen->count[i]++;
    }
    return true;
}

/* Recorded inputs beside their entries, read back, and listed from every
 * master: SCAN walks each of them. */
Test(cluster, recorded_inputs_are_kept_and_listed_from_every_master)
{
    zc_storage *storage = open_cluster_storage();
    uint8_t recipe[100], spirv[500];
    for (uint64_t i = 0; i < 40; i++) {
        put(storage, 200 + i);
        zc_key key = t_key(200 + i);
        t_fill_random(recipe, sizeof recipe, 300 + i);
        t_fill_random(spirv, sizeof spirv, 400 + i);
        zc_input_blob blob = {.bytes = spirv, .size = sizeof spirv};
        t_fill_random(blob.sha256, sizeof blob.sha256, 500 + i);
        cr_assert_eq(storage->ops->record(storage, &key, recipe, sizeof recipe, &blob, 1), ZC_OK);
        uint8_t *value = NULL;
        size_t size = 0;
        cr_assert_eq(storage->ops->get_input(storage, ZC_STORAGE_RECIPE, key.bytes, &value, &size),
                     ZC_OK);
        cr_assert_eq(size, sizeof recipe);
        cr_assert_arr_eq(value, recipe, sizeof recipe);
        free(value);
        cr_assert_eq(storage->ops->get_input(storage, ZC_STORAGE_SPIRV, blob.sha256, &value, &size),
                     ZC_OK);
        cr_assert_eq(size, sizeof spirv);
        cr_assert_arr_eq(value, spirv, sizeof spirv);
        free(value);
    }
    listed seen = {{0}};
    cr_assert_eq(storage->ops->list_recipes(storage, count_listed, &seen), ZC_OK);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(seen.count[i], 1, "recipe %d listed %d times", i, seen.count[i]);
    zc_storage_close(storage);
}

/* The first seed is down: the map comes from the next. */
Test(cluster, a_seed_that_is_down_is_passed_over)
{
    unsigned dead_port = t_free_tcp_port();
    char url[256];
    snprintf(url, sizeof url,
             "redis://"
             "zecache:zc-secret@127.0.0.1:%u|cluster|connect-timeout=300|timeout=1000|seeds=127.0."
             "0.1:%u",
             dead_port, cluster.nodes[3].port);
    zc_storage *storage = t_open_redis_storage(url);
    for (uint64_t i = 600; i < 609; i++) {
        put(storage, i);
        cr_assert_eq(get_exact(storage, i), ZC_OK);
    }
    zc_storage_close(storage);
}

/* A key of a slot other than first's: the first t_key(seed) from seed on
 * whose entry is on slot. */
static uint64_t key_on_slot(long long slot, uint64_t seed)
{
    for (;; seed++) {
        zc_key key = t_key(seed);
        char name[128];
        tagged_name("", &key, name, sizeof name);
        if (zc_redis_key_slot(name, strlen(name)) == slot)
            return seed;
    }
}

static void setslot(int node, long long slot, const char *state, const char *id)
{
    char number[24];
    snprintf(number, sizeof number, "%lld", slot);
    const char *argv[] = {"CLUSTER", "SETSLOT", number, state, id};
    redisReply *reply = t_node_command(&cluster, node, 5, argv);
    cr_assert(reply != NULL && reply->type == REDIS_REPLY_STATUS, "SETSLOT %s", state);
    freeReplyObject(reply);
}

/* A slot moved from one master to another as redis-cli --cluster reshard
 * moves it: while it moves, keys not yet moved are read where they were and
 * new ones go to the new master (ASK); after, the old master sends every
 * command to the new one (MOVED). The storage knew the old map throughout. */
Test(cluster, ask_and_moved_are_followed_while_a_slot_moves)
{
    zc_storage *storage = open_cluster_storage();
    uint64_t old_key = 700;
    zc_key key = t_key(old_key);
    char name[128];
    tagged_name("", &key, name, sizeof name);
    long long slot = t_key_slot(&cluster, name);
    uint64_t new_key = key_on_slot(slot, old_key + 1);
    put(storage, old_key);
    int source = t_master_of_slot(&cluster, slot);
    int target = t_master_of_slot(&cluster, (slot + 8000) % 16384);
    cr_assert_neq(source, target);
    char source_id[41], target_id[41];
    t_node_id(&cluster, source, source_id);
    t_node_id(&cluster, target, target_id);
    setslot(target, slot, "IMPORTING", source_id);
    setslot(source, slot, "MIGRATING", target_id);
    /* Moving: the new key is asked for at the target, and stored there. */
    cr_assert_eq(get_exact(storage, new_key), ZC_MISS);
    put(storage, new_key);
    cr_assert_eq(get_exact(storage, new_key), ZC_OK);
    cr_assert_eq(get_exact(storage, old_key), ZC_OK);
    /* The new master holds one key of the slot: the new one. */
    char number[24];
    snprintf(number, sizeof number, "%lld", slot);
    redisReply *reply =
        t_node_command(&cluster, target, 3, (const char *[]){"CLUSTER", "COUNTKEYSINSLOT", number});
    cr_assert_eq(reply->integer, 1, "the new key is not on the new master");
    freeReplyObject(reply);
    /* The old key moves, and the slot is the target's. */
    char port[16];
    snprintf(port, sizeof port, "%u", cluster.nodes[target].port);
    reply = t_node_command(
        &cluster, source, 8,
        (const char *[]){"MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS", name});
    cr_assert(reply != NULL && reply->type == REDIS_REPLY_STATUS, "MIGRATE");
    freeReplyObject(reply);
    setslot(target, slot, "NODE", target_id);
    setslot(source, slot, "NODE", target_id);
    cr_assert_eq(get_exact(storage, old_key), ZC_OK);
    cr_assert_eq(get_exact(storage, new_key), ZC_OK);
    zc_storage_close(storage);
}

/* ---- a master's failure ---- */

static void forbid_failover(int replica, bool forbidden)
{
    t_node_config(&cluster, replica, "cluster-replica-no-failover", forbidden ? "yes" : "no");
}

/* One storage through a master's death: keys of the dead master fail fast
 * and as the cluster answering (never ZC_ERR_IO, which would leave the
 * storage alone), the others hit; once the cluster is down, every key fails
 * so; once the replica took over, every key hits again in the same
 * storage. */
Test(cluster, a_killed_master_fails_fast_then_its_replica_serves_the_same_storage)
{
    zc_storage *storage = open_cluster_storage();
    enum { FIRST = 800, KEYS = 30 };
    for (uint64_t i = FIRST; i < FIRST + KEYS; i++)
        put(storage, i);
    zc_key key = t_key(FIRST);
    char name[128];
    tagged_name("", &key, name, sizeof name);
    long long slot = t_key_slot(&cluster, name);
    int master = t_master_of_slot(&cluster, slot), replica = t_replica_of(&cluster, master);
    t_cluster_wait_replicated(&cluster, master);
    forbid_failover(replica, true);
    t_cluster_kill(&cluster, master);
    int failed = 0;
    for (uint64_t i = FIRST; i < FIRST + KEYS; i++) {
        uint64_t start = t_monotonic_ms();
        zc_status status = get_exact(storage, i);
        cr_assert_lt(t_monotonic_ms() - start, CALL_DEADLINE_MS, "a call hung");
        cr_assert(status == ZC_OK || status == ZC_ERR_DISABLED, "key %llu: %s",
                  (unsigned long long)i, zc_status_name(status));
        failed += status != ZC_OK;
    }
    cr_assert_geq(failed, 1, "no key was on the dead master");
    cr_assert_eq(get_exact(storage, FIRST), ZC_ERR_DISABLED);
    /* Once the cluster saw the master fail, every node refuses every key
     * (CLUSTERDOWN): a failure, not a value. */
    t_cluster_wait_down(&cluster);
    for (uint64_t i = FIRST; i < FIRST + KEYS; i++)
        cr_assert_eq(get_exact(storage, i), ZC_ERR_DISABLED, "key %llu", (unsigned long long)i);
    forbid_failover(replica, false);
    t_cluster_wait_failover(&cluster, slot, master);
    cr_assert_eq(t_master_of_slot(&cluster, slot), replica);
    for (uint64_t i = FIRST; i < FIRST + KEYS; i++)
        cr_assert_eq(get_exact(storage, i), ZC_OK, "key %llu", (unsigned long long)i);
    zc_storage_close(storage);
}

/* ---- nodes: caches sharing the cluster ---- */

enum { ARTIFACT_SIZE = 5000 };

static int next_node;

static zc_cache *open_node(void)
{
    zc_config config = t_disk_config("", ZC_DEFAULT_MAX_SIZE, 1);
    snprintf(config.dir, sizeof config.dir, "%s/node%d", scratch, next_node++);
    config.memory_size = 4 << 20;
    config.wait_timeout_ms = 60000;
    cluster_url(config.remote, sizeof config.remote, "");
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    return cache;
}

/* A compile that waits, for the module gate_seed, until the test opens the
 * gate: the test does something while every node is mid-run. */
static zc_status compile_gated(void *context, zc_artifact **out)
{
    const t_counted_compile *compile = context;
    if (compile->seed == gate_seed) {
        atomic_store(&gate_reached, true);
        uint64_t deadline = t_monotonic_ms() + 60000;
        while (!atomic_load(&gate_open) && t_monotonic_ms() < deadline)
            t_pause_ms(1);
    }
    return t_compile_counted(context, out);
}

/* key seed's lookup: the artifact its compile makes, whatever happened;
 * the compiles it ran are added to compiles. */
static zc_lookup_outcome lookup(zc_cache *cache, uint64_t seed, atomic_int *compiles)
{
    zc_key key = t_key(seed);
    t_counted_compile compile = {0, seed, ARTIFACT_SIZE};
    zc_artifact *artifact = NULL;
    zc_lookup_outcome outcome;
    uint64_t start = t_monotonic_ms();
    zc_status status =
        zc_cache_get_or_compile(cache, &key, NULL, compile_gated, &compile, &artifact, &outcome);
    cr_assert_lt(t_monotonic_ms() - start, 60000, "a lookup hung");
    cr_assert_eq(status, ZC_OK, "key %llu", (unsigned long long)seed);
    atomic_fetch_add(compiles, compile.calls);
    zc_artifact *expected = t_artifact(ARTIFACT_SIZE, seed);
    bool same = t_same_artifact(artifact, expected);
    zc_artifact_unref(expected);
    zc_artifact_unref(artifact);
    cr_assert(same, "key %llu: not the artifact its compile makes", (unsigned long long)seed);
    return outcome;
}

/* Which of a cache's remote counters. */
typedef enum remote_count { REMOTE_HITS, REMOTE_ERRORS } remote_count;

static uint64_t remote_count_of(zc_cache *cache, remote_count which)
{
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    return which == REMOTE_HITS ? stats.remote_hits : stats.remote_errors;
}

enum { NODES = 4, MODULES = 12 };

typedef struct node_run {
    zc_cache *cache;
    atomic_int *counter;
    uint64_t first;
} node_run;

static pthread_barrier_t start_line;

static void *run_node(void *context)
{
    node_run *run = context;
    pthread_barrier_wait(&start_line);
    for (uint64_t i = 0; i < MODULES; i++)
        lookup(run->cache, run->first + i, run->counter);
    return NULL;
}

/* NODES caches cold at once ask for the same modules. */
static void run_nodes_at_once(zc_cache **caches, uint64_t first, atomic_int *counter)
{
    node_run runs[NODES];
    pthread_t threads[NODES];
    pthread_barrier_init(&start_line, NULL, NODES);
    for (int n = 0; n < NODES; n++) {
        runs[n] = (node_run){caches[n], counter, first};
        cr_assert_eq(pthread_create(&threads[n], NULL, run_node, &runs[n]), 0);
    }
    for (int n = 0; n < NODES; n++)
        pthread_join(threads[n], NULL);
    pthread_barrier_destroy(&start_line);
}

/* Every module asked for by a fresh node: how many came from the cluster. */
static uint64_t fresh_node_hits(uint64_t first, int *compiles)
{
    zc_cache *fresh = open_node();
    atomic_int counter = 0;
    for (uint64_t i = 0; i < MODULES; i++)
        lookup(fresh, first + i, &counter);
    uint64_t hits = remote_count_of(fresh, REMOTE_HITS);
    zc_cache_close(fresh);
    *compiles = atomic_load(&counter);
    return hits;
}

/* NODES new nodes cold at once: each module compiled once in all. */
static void open_nodes_cold_at_once(zc_cache **caches, uint64_t first)
{
    for (int n = 0; n < NODES; n++)
        caches[n] = open_node();
    atomic_int compiles = 0;
    run_nodes_at_once(caches, first, &compiles);
    cr_assert_eq(atomic_load(&compiles), MODULES, "%d compiles for %d modules",
                 atomic_load(&compiles), MODULES);
}

Test(cluster, nodes_cold_at_once_compile_each_module_once_and_a_fresh_node_gets_all)
{
    zc_cache *caches[NODES];
    open_nodes_cold_at_once(caches, 1000);
    uint64_t errors = 0;
    for (int n = 0; n < NODES; n++) {
        errors += remote_count_of(caches[n], REMOTE_ERRORS);
        zc_cache_close(caches[n]);
    }
    cr_assert_eq(errors, 0);
    int compiles = -1;
    cr_assert_eq(fresh_node_hits(1000, &compiles), MODULES);
    cr_assert_eq(compiles, 0);
}

/* Nodes through a master's death: each gets its compile's result; while
 * the cluster is without it, lookups compile (counted errors, no hang); after
 * the failover a node that went through it takes entries from the cluster
 * again, and a fresh node gets every module stored since. */
typedef struct background_run {
    zc_cache **caches;
    uint64_t first;
    atomic_int *compiles;
} background_run;

static void *run_in_background(void *context)
{
    background_run *run = context;
    run_nodes_at_once(run->caches, run->first, run->compiles);
    return NULL;
}

Test(cluster, nodes_keep_going_through_a_master_killed_mid_run)
{
    zc_cache *caches[NODES];
    open_nodes_cold_at_once(caches, 2000);
    /* The master of a module the nodes ask for after the kill. */
    zc_key key = t_key(3000 + 3);
    char name[128];
    tagged_name("", &key, name, sizeof name);
    long long slot = t_key_slot(&cluster, name);
    int master = t_master_of_slot(&cluster, slot), replica = t_replica_of(&cluster, master);
    forbid_failover(replica, true);
    /* Every node mid-run (the module before it compiling, the others
     * waiting for it) when the master dies. */
    gate_seed = 3000 + 2;
    atomic_int during = 0;
    background_run run = {caches, 3000, &during};
    pthread_t runner;
    cr_assert_eq(pthread_create(&runner, NULL, run_in_background, &run), 0);
    uint64_t deadline = t_monotonic_ms() + 60000;
    while (!atomic_load(&gate_reached))
        cr_assert_lt(t_monotonic_ms(), deadline, "the nodes did not reach the gate");
    t_cluster_kill(&cluster, master);
    atomic_store(&gate_open, true);
    pthread_join(runner, NULL);
    /* Each lookup its compile's result (asserted in lookup), in time; the
     * dead master's module failed (get, claim, store), counted. */
    cr_assert_geq(atomic_load(&during), MODULES);
    uint64_t errors = 0;
    for (int n = 0; n < NODES; n++)
        errors += remote_count_of(caches[n], REMOTE_ERRORS);
    cr_assert_geq(errors, 3);
    forbid_failover(replica, false);
    t_cluster_wait_failover(&cluster, slot, master);
    /* A fresh node stores modules; the nodes that went through the
     * failure take them from the cluster. */
    int compiles = -1;
    fresh_node_hits(4000, &compiles);
    cr_assert_eq(compiles, MODULES);
    atomic_int after = 0;
    for (int n = 0; n < NODES; n++) {
        uint64_t hits = remote_count_of(caches[n], REMOTE_HITS);
        for (uint64_t i = 0; i < MODULES; i++)
            cr_assert_eq(lookup(caches[n], 4000 + i, &after), ZC_LOOKUP_REMOTE_HIT);
        cr_assert_eq(remote_count_of(caches[n], REMOTE_HITS), hits + MODULES);
        zc_cache_close(caches[n]);
    }
    cr_assert_eq(atomic_load(&after), 0);
}
