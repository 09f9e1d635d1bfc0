/* Admission to the remote storages (NEO_CACHE_REMOTE_MIN_COMPILE_MS): a
 * module whose measured compile took less than the threshold is kept in
 * memory and on the local disk but not written to Redis or a file://
 * storage, counted as remote_not_admitted; a node waiting on the cross-node
 * build lock of such a module compiles at once instead of waiting for an
 * entry that never comes. Nodes are caches on separate directories sharing
 * one private redis-server (redis_test_support.h) or a directory. Written
 * for both Criterion and the plain runner (TSan): no redirection helpers,
 * the environment cleaned by each test itself. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "disk_test_support.h"
#include "redis_test_support.h"
#include "zecache/cache.h"
#include "zecache/disk_tier.h"
#include "zecache/log.h"
#include "zecache/stats.h"
#include "zecache/storage.h"

enum { ARTIFACT_SIZE = 8000, THRESHOLD_MS = 100 };

/* ================================================================ */
/* The setting                                                      */
/* ================================================================ */

static void clean_environment(void)
{
    unsetenv("NEO_CACHE_REMOTE_MIN_COMPILE_MS");
    unsetenv("PrintDebugMessages");
    unsetenv("NEO_PrintDebugMessages");
    unsetenv("NEO_L0_PrintDebugMessages");
}

static void assert_setting(const char *value, uint64_t expected, zc_config_source source)
{
    setenv("NEO_CACHE_REMOTE_MIN_COMPILE_MS", value, 1);
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_eq(config.remote_min_compile_ms, expected, "NEO_CACHE_REMOTE_MIN_COMPILE_MS=\"%s\"",
                 value);
    cr_assert_eq(config.remote_min_compile_source, source, "NEO_CACHE_REMOTE_MIN_COMPILE_MS=\"%s\"",
                 value);
}

Test(admission_setting, default_valid_zero_and_garbage, .init = clean_environment)
{
    zc_config config;
    zc_config_from_env(&config);
    cr_assert_eq(config.remote_min_compile_ms, 0, "the default admits every module");
    cr_assert_eq(config.remote_min_compile_source, ZC_SOURCE_DEFAULT);
    assert_setting("250", 250, ZC_SOURCE_ENV);
    assert_setting(" 75 ", 75, ZC_SOURCE_ENV);
    assert_setting("0", 0, ZC_SOURCE_ENV);
    assert_setting("86400000", 86400000, ZC_SOURCE_ENV);
    static const char *const garbage[] = {
        "", "-1", "5ms", "1.5", "abc", "86400001", "0x10", "+5", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
        assert_setting(garbage[i], 0, ZC_SOURCE_INVALID);
}

/* Standard error into a new temporary file, as the plain runner (TSan) has
 * no redirection: stderr_capture_start starts, stderr_captured ends and
 * returns what was written (malloc'd). */
typedef struct stderr_capture {
    int fd, saved;
} stderr_capture;

static stderr_capture stderr_capture_start(void)
{
    char path[] = "/tmp/zc_admission_err_XXXXXX";
    stderr_capture capture = {.fd = mkstemp(path)};
    cr_assert(capture.fd >= 0);
    unlink(path);
    fflush(stderr);
    capture.saved = dup(STDERR_FILENO);
    cr_assert(capture.saved >= 0 && dup2(capture.fd, STDERR_FILENO) >= 0);
    return capture;
}

static char *stderr_captured(stderr_capture capture)
{
    fflush(stderr);
    dup2(capture.saved, STDERR_FILENO);
    close(capture.saved);
    char *text = calloc(1, 8192);
    cr_assert_not_null(text);
    cr_assert(pread(capture.fd, text, 8191, 0) >= 0);
    close(capture.fd);
    return text;
}

/* Runs zc_config_from_env; returns what it wrote to standard error. */
static char *config_messages(void)
{
    stderr_capture capture = stderr_capture_start();
    zc_config config;
    zc_config_from_env(&config);
    char *text = stderr_captured(capture);
    zc_log_set_enabled(false);
    cr_assert_eq(config.remote_min_compile_ms, 0, "the default is used");
    return text;
}

Test(admission_setting, a_bad_value_is_reported_under_print_debug_messages,
     .init = clean_environment)
{
    setenv("NEO_CACHE_REMOTE_MIN_COMPILE_MS", "fast", 1);
    setenv("PrintDebugMessages", "1", 1);
    char *text = config_messages();
    char expected[256];
    snprintf(expected, sizeof expected,
             "PID %ld [Cache failure]: invalid NEO_CACHE_REMOTE_MIN_COMPILE_MS=\"fast\" (expected "
             "an integer from 0 to 86400000); using 0 errno: %d\n",
             (long)getpid(), EINVAL);
    cr_assert_str_eq(text, expected);
    free(text);
    setenv("PrintDebugMessages", "0", 1);
    text = config_messages();
    cr_assert_str_eq(text, "", "silent without PrintDebugMessages");
    free(text);
}

/* ================================================================ */
/* Nodes                                                            */
/* ================================================================ */

static t_redis server;
static char scratch[128];
static int next_node;

static void setup(void)
{
    t_redis_start(&server, NULL);
    snprintf(scratch, sizeof scratch, "/tmp/zc_admission_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    next_node = 0;
}

static void teardown(void)
{
    zc_log_set_enabled(false);
    t_redis_stop(&server);
    t_remove_tree(scratch);
}

static void node_config(zc_config *config, const char *remote, uint64_t min_compile_ms,
                        uint64_t wait_timeout_ms)
{
    memset(config, 0, sizeof *config);
    config->persistent = true;
    snprintf(config->dir, sizeof config->dir, "%s/node%d", scratch, next_node++);
    config->max_size = ZC_DEFAULT_MAX_SIZE;
    config->memory_size = 4 << 20;
    config->compression_level = 3;
    config->wait_timeout_ms = wait_timeout_ms;
    config->lock_timeout_ms = ZC_DEFAULT_LOCK_TIMEOUT_MS;
    config->remote_min_compile_ms = min_compile_ms;
    snprintf(config->remote, sizeof config->remote, "%s", remote);
}

static zc_cache *open_node(const char *remote, uint64_t min_compile_ms, uint64_t wait_timeout_ms)
{
    zc_config config;
    node_config(&config, remote, min_compile_ms, wait_timeout_ms);
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    return cache;
}

static const char *redis_url(void)
{
    static char url[256];
    snprintf(url, sizeof url, "redis+unix://%s", server.socket);
    return url;
}

/* An artifact whose measured compile took compile_ms. */
static zc_artifact *artifact_compiled_in(uint64_t seed, uint64_t compile_ms)
{
    uint8_t *binary = malloc(ARTIFACT_SIZE);
    cr_assert_not_null(binary);
    t_fill_random(binary, ARTIFACT_SIZE, seed);
    zc_artifact_meta meta = t_meta();
    meta.compile_ns = compile_ms * UINT64_C(1000000);
    zc_artifact *artifact = zc_artifact_create(binary, ARTIFACT_SIZE, "log", 3, &meta);
    free(binary);
    cr_assert_not_null(artifact);
    return artifact;
}

/* A fake compile: reports compile_ms as its measured time, really takes
 * pause_ms, and counts its calls and how many ran at once. */
typedef struct fake_compile {
    uint64_t seed, compile_ms;
    int pause_ms;
    atomic_int calls, running, most_running;
} fake_compile;

static zc_status compile_fake(void *context, zc_artifact **out)
{
    fake_compile *compile = context;
    atomic_fetch_add(&compile->calls, 1);
    int running = atomic_fetch_add(&compile->running, 1) + 1;
    int most = atomic_load(&compile->most_running);
    while (running > most && !atomic_compare_exchange_weak(&compile->most_running, &most, running))
        ;
    if (compile->pause_ms > 0) {
        struct timespec pause = {compile->pause_ms / 1000,
                                 (long)(compile->pause_ms % 1000) * 1000000};
        nanosleep(&pause, NULL);
    }
    atomic_fetch_sub(&compile->running, 1);
    *out = artifact_compiled_in(compile->seed, compile->compile_ms);
    return ZC_OK;
}

/* Looks key up through compile (which may not run); checks the artifact. */
static zc_lookup_outcome lookup(zc_cache *cache, const zc_key *key, fake_compile *compile)
{
    zc_artifact *artifact = NULL;
    zc_lookup_outcome outcome;
    cr_assert_eq(
        zc_cache_get_or_compile(cache, key, NULL, compile_fake, compile, &artifact, &outcome),
        ZC_OK);
    zc_artifact *expected = artifact_compiled_in(compile->seed, compile->compile_ms);
    size_t size, expected_size;
    const uint8_t *bytes = zc_artifact_binary(artifact, &size);
    const uint8_t *expected_bytes = zc_artifact_binary(expected, &expected_size);
    cr_assert(size == expected_size && memcmp(bytes, expected_bytes, size) == 0);
    zc_artifact_unref(expected);
    zc_artifact_unref(artifact);
    return outcome;
}

static zc_cache_stats stats_of(zc_cache *cache)
{
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    return stats;
}

static void redis_name(const zc_key *key, const char *infix, char name[160])
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(name, 160, "zecache:v1:%s%s", infix, hex);
}

static bool in_redis(const zc_key *key)
{
    char name[160];
    redis_name(key, "", name);
    redisReply *reply = t_redis_command(&server, 2, (const char *[]){"EXISTS", name}, NULL);
    bool exists = reply->integer == 1;
    freeReplyObject(reply);
    return exists;
}

/* Entries in Redis: every key but build locks (and their marks). */
static size_t redis_entries(void)
{
    redisReply *reply = t_redis_command(&server, 2, (const char *[]){"KEYS", "*"}, NULL);
    size_t count = 0;
    for (size_t i = 0; i < reply->elements; i++)
        count += strstr(reply->element[i]->str, ":lock:") == NULL;
    freeReplyObject(reply);
    return count;
}

/* The three modules every test uses: compiled in 5 ms (under the threshold),
 * exactly at the threshold, and in 500 ms. */
static fake_compile fast_module(void)
{
    return (fake_compile){.seed = 1, .compile_ms = 5};
}

static fake_compile edge_module(void)
{
    return (fake_compile){.seed = 2, .compile_ms = THRESHOLD_MS};
}

static fake_compile slow_module(void)
{
    return (fake_compile){.seed = 3, .compile_ms = 500};
}

/* ---- what is stored where ---- */

Test(admission, fast_modules_stay_out_of_redis_and_are_local_hits, .init = setup, .fini = teardown,
     .timeout = 120)
{
    zc_key fast_key = t_key(1), edge_key = t_key(2), slow_key = t_key(3);
    fake_compile fast = fast_module(), edge = edge_module(), slow = slow_module();
    zc_cache *node = open_node(redis_url(), THRESHOLD_MS, 30000);
    cr_assert_eq(lookup(node, &fast_key, &fast), ZC_LOOKUP_COMPILED);
    cr_assert_eq(lookup(node, &edge_key, &edge), ZC_LOOKUP_COMPILED);
    cr_assert_eq(lookup(node, &slow_key, &slow), ZC_LOOKUP_COMPILED);
    cr_assert_not(in_redis(&fast_key), "a module compiled in 5 ms was stored in Redis");
    cr_assert(in_redis(&edge_key), "a module compiled in exactly the threshold is admitted");
    cr_assert(in_redis(&slow_key));
    cr_assert_eq(redis_entries(), 2);
    zc_cache_stats stats = stats_of(node);
    cr_assert_eq(stats.misses, 3);
    cr_assert_eq(stats.stores, 3, "every module is on the local disk");
    cr_assert_eq(stats.remote_stores, 2);
    cr_assert_eq(stats.remote_not_admitted, 1);
    /* Local hits both: memory, then disk in a new process of the same node. */
    cr_assert_eq(lookup(node, &fast_key, &fast), ZC_LOOKUP_MEMORY_HIT);
    cr_assert_eq(lookup(node, &slow_key, &slow), ZC_LOOKUP_MEMORY_HIT);
    zc_cache_close(node);
    next_node--;
    node = open_node(redis_url(), THRESHOLD_MS, 30000);
    cr_assert_eq(lookup(node, &fast_key, &fast), ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(lookup(node, &slow_key, &slow), ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(stats_of(node).remote_not_admitted, 0);
    zc_cache_close(node);
    cr_assert_eq(fast.calls, 1);
    cr_assert_eq(slow.calls, 1);
    /* Another node: the slow module from Redis, the fast one compiled (and
     * not admitted either). */
    zc_cache *other = open_node(redis_url(), THRESHOLD_MS, 30000);
    cr_assert_eq(lookup(other, &slow_key, &slow), ZC_LOOKUP_REMOTE_HIT);
    cr_assert_eq(lookup(other, &fast_key, &fast), ZC_LOOKUP_COMPILED);
    cr_assert_eq(fast.calls, 2);
    cr_assert_eq(slow.calls, 1);
    stats = stats_of(other);
    cr_assert_eq(stats.remote_hits, 1);
    cr_assert_eq(stats.remote_misses, 1);
    cr_assert_eq(stats.remote_not_admitted, 1);
    cr_assert_eq(stats.remote_stores, 0);
    zc_cache_close(other);
    cr_assert_eq(redis_entries(), 2);
}

/* A fast module that is in Redis anyway (stored by a node without the
 * setting) is a remote hit for a node with it: admission decides what is
 * written, never what is read. */
Test(admission, a_fast_module_already_in_redis_is_a_remote_hit, .init = setup, .fini = teardown,
     .timeout = 120)
{
    zc_key fast_key = t_key(1);
    fake_compile fast = fast_module();
    zc_cache *everything = open_node(redis_url(), 0, 30000);
    cr_assert_eq(lookup(everything, &fast_key, &fast), ZC_LOOKUP_COMPILED);
    cr_assert_eq(stats_of(everything).remote_not_admitted, 0);
    zc_cache_close(everything);
    cr_assert(in_redis(&fast_key));
    zc_cache *strict = open_node(redis_url(), THRESHOLD_MS, 30000);
    cr_assert_eq(lookup(strict, &fast_key, &fast), ZC_LOOKUP_REMOTE_HIT);
    cr_assert_eq(stats_of(strict).stores, 1, "copied to the local disk");
    cr_assert_eq(stats_of(strict).remote_not_admitted, 0);
    zc_cache_close(strict);
    cr_assert_eq(fast.calls, 1);
    cr_assert(in_redis(&fast_key), "a hit removes nothing");
    /* The same with admission on from the start: the next node compiles. */
    zc_key other_key = t_key(9);
    fake_compile other = {.seed = 9, .compile_ms = 5};
    zc_cache *first = open_node(redis_url(), THRESHOLD_MS, 30000);
    cr_assert_eq(lookup(first, &other_key, &other), ZC_LOOKUP_COMPILED);
    zc_cache_close(first);
    cr_assert_not(in_redis(&other_key));
}

static bool in_directory(const char *dir, const zc_key *key)
{
    char hex[ZC_KEY_HEX_SIZE], path[PATH_MAX];
    zc_key_to_hex(key, hex);
    snprintf(path, sizeof path, "%s/%c/%c/%s%s", dir, hex[0], hex[1], hex, ZC_ENTRY_SUFFIX);
    return access(path, F_OK) == 0;
}

Test(admission, fast_modules_stay_out_of_a_file_storage, .init = setup, .fini = teardown,
     .timeout = 120)
{
    char shared[PATH_MAX], remote[PATH_MAX + 32];
    snprintf(shared, sizeof shared, "%s/shared", scratch);
    snprintf(remote, sizeof remote, "file://%s", shared);
    zc_key fast_key = t_key(1), slow_key = t_key(3);
    fake_compile fast = fast_module(), slow = slow_module();
    zc_cache *node = open_node(remote, THRESHOLD_MS, 30000);
    cr_assert_eq(lookup(node, &fast_key, &fast), ZC_LOOKUP_COMPILED);
    cr_assert_eq(lookup(node, &slow_key, &slow), ZC_LOOKUP_COMPILED);
    cr_assert_not(in_directory(shared, &fast_key));
    cr_assert(in_directory(shared, &slow_key));
    cr_assert_eq(t_count_entries(shared), 1);
    cr_assert_eq(stats_of(node).remote_stores, 1);
    cr_assert_eq(stats_of(node).remote_not_admitted, 1);
    char local[PATH_MAX];
    snprintf(local, sizeof local, "%s", zc_cache_disk_dir(node));
    cr_assert_eq(t_count_entries(local), 2, "both are on the local disk");
    zc_cache_close(node);
    /* A read-only storage takes nothing anyway: nothing is counted. */
    snprintf(remote, sizeof remote, "file://%s|read-only", shared);
    zc_cache *reader = open_node(remote, THRESHOLD_MS, 30000);
    zc_key new_key = t_key(4);
    fake_compile fresh = {.seed = 4, .compile_ms = 5};
    cr_assert_eq(lookup(reader, &new_key, &fresh), ZC_LOOKUP_COMPILED);
    cr_assert_eq(stats_of(reader).remote_not_admitted, 0);
    cr_assert_eq(lookup(reader, &slow_key, &slow), ZC_LOOKUP_REMOTE_HIT);
    zc_cache_close(reader);
    cr_assert_eq(t_count_entries(shared), 1);
}

/* ---- the counter: in the stats file, and the debug line ---- */

/* Runs a lookup with PrintDebugMessages on; returns what it wrote to
 * standard error. */
static char *lookup_messages(zc_cache *cache, const zc_key *key, fake_compile *compile)
{
    stderr_capture capture = stderr_capture_start();
    zc_log_set_enabled(true);
    zc_lookup_outcome outcome = lookup(cache, key, compile);
    zc_log_set_enabled(false);
    char *text = stderr_captured(capture);
    cr_assert_eq(outcome, ZC_LOOKUP_COMPILED);
    return text;
}

Test(admission, counted_in_the_stats_file_and_logged, .init = setup, .fini = teardown,
     .timeout = 120)
{
    zc_config config;
    node_config(&config, redis_url(), THRESHOLD_MS, 30000);
    zc_cache *node = NULL;
    cr_assert_eq(zc_cache_open(&config, &node), ZC_OK);
    zc_key fast_key = t_key(1), slow_key = t_key(3), other_key = t_key(7);
    fake_compile fast = fast_module(), slow = slow_module();
    fake_compile other = {.seed = 7, .compile_ms = 99};
    char *text = lookup_messages(node, &fast_key, &fast);
    char hex[ZC_KEY_HEX_SIZE], expected[512];
    zc_key_to_hex(&fast_key, hex);
    snprintf(expected, sizeof expected,
             "PID %ld [Cache]: miss %s: compiled in 5.000 ms, under "
             "NEO_CACHE_REMOTE_MIN_COMPILE_MS=100: not admitted to the remote storages\n",
             (long)getpid(), hex);
    cr_assert_not_null(strstr(text, expected), "%s", text);
    free(text);
    text = lookup_messages(node, &slow_key, &slow);
    zc_key_to_hex(&slow_key, hex);
    snprintf(expected, sizeof expected, "PID %ld [Cache]: miss %s: compiled\n", (long)getpid(),
             hex);
    cr_assert_not_null(strstr(text, expected), "%s", text);
    cr_assert_null(strstr(text, "not admitted"), "%s", text);
    free(text);
    cr_assert_eq(lookup(node, &other_key, &other), ZC_LOOKUP_COMPILED);
    cr_assert_eq(stats_of(node).remote_not_admitted, 2);
    cr_assert_eq(zc_cache_merge_stats(node), ZC_OK);
    zc_cache_close(node);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    zc_stats_counters counters;
    cr_assert_eq(zc_stats_read(tier, &counters), ZC_OK);
    zc_disk_tier_close(tier);
    cr_assert_eq(counters.remote_not_admitted, 2);
    cr_assert_eq(counters.remote_stores, 1);
    cr_assert_eq(counters.misses, 3);
}

/* ---- bad values and replacements ---- */

/* A bad value in Redis for a module that is not admitted would be rejected
 * by every node for as long as it stays: it is removed. */
Test(admission, a_bad_value_for_a_fast_module_is_removed, .init = setup, .fini = teardown,
     .timeout = 120)
{
    zc_key fast_key = t_key(1);
    char name[160];
    redis_name(&fast_key, "", name);
    freeReplyObject(
        t_redis_command(&server, 3, (const char *[]){"SET", name, "not an entry"}, NULL));
    fake_compile fast = fast_module();
    zc_cache *node = open_node(redis_url(), THRESHOLD_MS, 30000);
    cr_assert_eq(lookup(node, &fast_key, &fast), ZC_LOOKUP_COMPILED);
    zc_cache_stats stats = stats_of(node);
    cr_assert_eq(stats.remote_rejected, 1);
    cr_assert_eq(stats.remote_not_admitted, 1);
    cr_assert_eq(stats.remote_stores, 0);
    cr_assert_eq(stats.remote_errors, 0);
    cr_assert_not(in_redis(&fast_key), "the bad value is still there");
    zc_cache_close(node);
}

/* The driver refused a cached binary and compiled it again in 5 ms: the
 * remotes' value is removed, not replaced; compiled in 500 ms, replaced. */
Test(admission, a_fast_replacement_removes_the_remote_value, .init = setup, .fini = teardown,
     .timeout = 120)
{
    zc_key key = t_key(3);
    fake_compile slow = slow_module();
    zc_cache *node = open_node(redis_url(), THRESHOLD_MS, 30000);
    cr_assert_eq(lookup(node, &key, &slow), ZC_LOOKUP_COMPILED);
    cr_assert(in_redis(&key));
    zc_artifact *fresh = artifact_compiled_in(30, 5);
    cr_assert_eq(zc_cache_replace(node, &key, fresh, NULL), ZC_OK);
    zc_artifact_unref(fresh);
    cr_assert_not(in_redis(&key));
    cr_assert_eq(stats_of(node).remote_not_admitted, 1);
    cr_assert_eq(stats_of(node).remote_stores, 1);
    fresh = artifact_compiled_in(31, 500);
    cr_assert_eq(zc_cache_replace(node, &key, fresh, NULL), ZC_OK);
    zc_artifact_unref(fresh);
    cr_assert(in_redis(&key));
    cr_assert_eq(stats_of(node).remote_not_admitted, 1);
    cr_assert_eq(stats_of(node).remote_stores, 2);
    zc_cache_close(node);
}

/* ---- the cross-node build lock ---- */

static bool lock_value(const zc_key *key, char *value, size_t size)
{
    char name[160];
    redis_name(key, "lock:", name);
    redisReply *reply = t_redis_command(&server, 2, (const char *[]){"GET", name}, NULL);
    bool found = reply->type == REDIS_REPLY_STRING;
    if (found)
        snprintf(value, size, "%s", reply->str);
    freeReplyObject(reply);
    return found;
}

/* The holder of a module it does not admit releases its lock as "nothing is
 * coming" (the mark a failed build leaves), so nodes waiting on it compile
 * at once; an admitted module's lock is simply deleted. */
Test(admission, the_lock_of_a_module_not_admitted_says_nothing_is_coming, .init = setup,
     .fini = teardown, .timeout = 120)
{
    zc_key fast_key = t_key(1), slow_key = t_key(3);
    fake_compile fast = fast_module(), slow = slow_module();
    zc_cache *node = open_node(redis_url(), THRESHOLD_MS, 30000);
    uint64_t started = t_monotonic_ms();
    cr_assert_eq(lookup(node, &fast_key, &fast), ZC_LOOKUP_COMPILED);
    char value[64] = "";
    bool marked = lock_value(&fast_key, value, sizeof value);
    /* The mark lasts ZC_REDIS_FAILED_MARK_MS: only a stalled machine would
     * read it later than that. */
    if (t_monotonic_ms() - started < ZC_REDIS_FAILED_MARK_MS / 2) {
        cr_assert(marked, "the lock of a module not admitted was deleted, not marked");
        cr_assert_str_eq(value, ZC_REDIS_FAILED_MARK);
    }
    cr_assert_eq(lookup(node, &slow_key, &slow), ZC_LOOKUP_COMPILED);
    cr_assert_not(lock_value(&slow_key, value, sizeof value), "left: %s", value);
    zc_cache_close(node);
}

typedef struct waiting_node {
    zc_cache *cache;
    fake_compile *compile;
    zc_key key;
    zc_lookup_outcome outcome;
    uint64_t elapsed_ms;
} waiting_node;

static void *look_up_in_thread(void *context)
{
    waiting_node *node = context;
    uint64_t started = t_monotonic_ms();
    node->outcome = lookup(node->cache, &node->key, node->compile);
    node->elapsed_ms = t_monotonic_ms() - started;
    return NULL;
}

/* One node holds the lock of a module that it then does not admit; three
 * others, waiting on that lock with a 60 s timeout, each compile it
 * themselves, all at once, as soon as the holder is done: none waits out
 * the timeout, none waits for another waiter's compile. */
Test(admission, nodes_waiting_on_a_module_not_admitted_compile_at_once, .init = setup,
     .fini = teardown, .timeout = 120)
{
    enum { WAITERS = 3, WAIT_MS = 60000, HOLDER_MS = 1500, WAITER_MS = 1000 };
    zc_key key = t_key(1);
    /* Compiles taking 1.0-1.5 s, under a 10 s threshold. */
    fake_compile holder_compile = {.seed = 1, .compile_ms = HOLDER_MS, .pause_ms = HOLDER_MS};
    fake_compile waiter_compile = {.seed = 1, .compile_ms = HOLDER_MS, .pause_ms = WAITER_MS};
    waiting_node holder = {
        .cache = open_node(redis_url(), 10000, WAIT_MS), .compile = &holder_compile, .key = key};
    pthread_t holder_thread, threads[WAITERS];
    cr_assert_eq(pthread_create(&holder_thread, NULL, look_up_in_thread, &holder), 0);
    while (atomic_load(&holder_compile.calls) == 0) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    waiting_node waiters[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        waiters[i] = (waiting_node){.cache = open_node(redis_url(), 10000, WAIT_MS),
                                    .compile = &waiter_compile,
                                    .key = key};
        cr_assert_eq(pthread_create(&threads[i], NULL, look_up_in_thread, &waiters[i]), 0);
    }
    pthread_join(holder_thread, NULL);
    for (int i = 0; i < WAITERS; i++)
        pthread_join(threads[i], NULL);
    cr_assert_eq(holder.outcome, ZC_LOOKUP_COMPILED);
    cr_assert_eq(atomic_load(&holder_compile.calls), 1);
    cr_assert_eq(atomic_load(&waiter_compile.calls), WAITERS, "each waiter compiled once");
    cr_assert_eq(atomic_load(&waiter_compile.most_running), WAITERS,
                 "the waiters compiled one after another, not at once");
    for (int i = 0; i < WAITERS; i++) {
        cr_assert_eq(waiters[i].outcome, ZC_LOOKUP_COMPILED);
        cr_assert_lt(waiters[i].elapsed_ms, WAIT_MS / 4, "waiter %d took %llu ms", i,
                     (unsigned long long)waiters[i].elapsed_ms);
        zc_cache_stats stats = stats_of(waiters[i].cache);
        cr_assert_eq(stats.misses, 1);
        cr_assert_eq(stats.remote_hits, 0);
        cr_assert_eq(stats.remote_not_admitted, 1);
        zc_cache_close(waiters[i].cache);
    }
    cr_assert_eq(stats_of(holder.cache).remote_not_admitted, 1);
    zc_cache_close(holder.cache);
    cr_assert_not(in_redis(&key));
}
