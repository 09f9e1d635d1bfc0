/* The Redis storage against servers that misbehave (resp_server.c): one that
 * stalls, trickles a value a byte at a time, announces a huge value, answers
 * with garbage, drops the connection mid-reply or refuses everything, on a
 * Unix socket and on TCP (through a name lookup of "localhost"). Every case:
 * the call fails (or, through the cache, the compile runs and its result is
 * what the caller gets) within the deadlines plus a small margin, memory
 * stays bounded, and the counters say what happened. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "disk_test_support.h"
#include "redis_storage_support.h"
#include "redis_test_support.h"
#include "test_support.h"
#include "zecache/cache.h"
#include "zecache/remote_spec.h"
#include "zecache/storage.h"

#define CONNECT_MS 300
#define TIMEOUT_MS 300
#define MARGIN_MS 400 /* scheduling on a loaded 2-core machine */

static char scratch[64];

static void make_scratch(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/zc_hostile.XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
}

static void remove_scratch(void)
{
    t_remove_tree(scratch);
}

TestSuite(hostile, .init = make_scratch, .fini = remove_scratch, .timeout = 120);

typedef struct hostile_server {
    pid_t pid;
    char url[512];
} hostile_server;

static hostile_server start_server(const char *mode, bool tcp)
{
    hostile_server server = {0};
    char socket_path[128];
    snprintf(socket_path, sizeof socket_path, "%s/%s.sock", scratch, mode);
    int out[2];
    cr_assert_eq(pipe(out), 0);
    server.pid = fork();
    cr_assert_geq(server.pid, 0);
    if (server.pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        execl(ZC_RESP_SERVER_PATH, "resp_server", mode, tcp ? "tcp" : "unix", socket_path,
              (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *lines = fdopen(out[0], "r");
    unsigned port = 0;
    cr_assert_eq(fscanf(lines, "ready %u", &port), 1, "resp_server %s did not start", mode);
    fclose(lines);
    const char *attributes = "|connect-timeout=300|timeout=300";
    if (tcp)
        snprintf(server.url, sizeof server.url, "redis://localhost:%u%s", port, attributes);
    else
        snprintf(server.url, sizeof server.url, "redis+unix://%s%s", socket_path, attributes);
    return server;
}

static void stop_server(hostile_server *server)
{
    kill(server->pid, SIGKILL);
    waitpid(server->pid, NULL, 0);
}

static long max_rss_kib(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

static const char *const modes[] = {"stall", "trickle", "huge", "malformed", "drop", "error"};

/* Each storage operation fails within connect + command timeouts. */
static void check_operations_fail_in_time(bool tcp)
{
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        hostile_server server = start_server(modes[m], tcp);
        zc_storage *storage = t_open_redis_storage(server.url);
        zc_key key = t_key(m);
        long rss_before = max_rss_kib();
        uint64_t start = t_monotonic_ms();
        uint8_t *value = NULL;
        size_t size = 0;
        zc_status got = storage->ops->get(storage, &key, &value, &size);
        uint64_t get_ms = t_monotonic_ms() - start;
        /* An error reply reads as an empty value, which no entry check takes. */
        cr_assert(got != ZC_OK || size == 0, "%s: a value came back", modes[m]);
        free(value);
        start = t_monotonic_ms();
        uint8_t entry[64] = {0};
        zc_status put = storage->ops->put(storage, &key, entry, sizeof entry, false);
        uint64_t put_ms = t_monotonic_ms() - start;
        cr_assert_neq(put, ZC_OK, "%s: a store was taken for done", modes[m]);
        long rss_growth_kib = max_rss_kib() - rss_before;
        zc_storage_close(storage);
        stop_server(&server);
        cr_assert_leq(get_ms, CONNECT_MS + TIMEOUT_MS + MARGIN_MS, "%s %s: get took %llu ms",
                      modes[m], tcp ? "tcp" : "unix", (unsigned long long)get_ms);
        cr_assert_leq(put_ms, CONNECT_MS + TIMEOUT_MS + MARGIN_MS, "%s %s: put took %llu ms",
                      modes[m], tcp ? "tcp" : "unix", (unsigned long long)put_ms);
        cr_assert_lt(rss_growth_kib, 64 * 1024, "%s: memory grew by %ld KiB", modes[m],
                     rss_growth_kib);
    }
}

Test(hostile, every_operation_fails_within_its_deadline_on_a_unix_socket)
{
    check_operations_fail_in_time(false);
}

Test(hostile, every_operation_fails_within_its_deadline_over_tcp)
{
    check_operations_fail_in_time(true);
}

/* The control: a server that answers "no such key" is a plain miss. */
Test(hostile, a_server_that_answers_is_a_plain_miss)
{
    hostile_server server = start_server("nil", false);
    zc_storage *storage = t_open_redis_storage(server.url);
    zc_key key = t_key(7);
    uint8_t *value = NULL;
    size_t size = 0;
    cr_assert_eq(storage->ops->get(storage, &key, &value, &size), ZC_MISS);
    zc_storage_close(storage);
    stop_server(&server);
}

/* Through the cache: the compile runs, its artifact is what comes back, and
 * the failures are counted as remote errors, all in time. */
Test(hostile, the_cache_compiles_and_counts_what_the_server_did)
{
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        hostile_server server = start_server(modes[m], m % 2 == 1);
        char dir[128];
        snprintf(dir, sizeof dir, "%s/cache-%zu", scratch, m);
        zc_config config = t_disk_config(dir, 1 << 26, 3);
        snprintf(config.remote, sizeof config.remote, "%s", server.url);
        zc_cache *cache = NULL;
        cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
        zc_key key = t_key(100 + m);
        t_counted_compile compile = {0, 100 + m, 4096};
        zc_artifact *artifact = NULL, *expected = t_artifact(4096, 100 + m);
        uint64_t start = t_monotonic_ms();
        cr_assert_eq(zc_cache_get_or_compile(cache, &key, NULL, t_compile_counted, &compile,
                                             &artifact, NULL),
                     ZC_OK);
        uint64_t elapsed = t_monotonic_ms() - start;
        t_assert_same_artifact(artifact, expected);
        zc_artifact_unref(artifact);
        zc_artifact_unref(expected);
        zc_cache_stats stats;
        zc_cache_get_stats(cache, &stats);
        zc_cache_close(cache);
        stop_server(&server);
        cr_assert_eq(compile.calls, 1, "%s", modes[m]);
        cr_assert_eq(stats.misses, 1, "%s", modes[m]);
        cr_assert_geq(stats.remote_errors + stats.remote_rejected, 1, "%s: not counted", modes[m]);
        cr_assert_eq(stats.remote_hits + stats.remote_stores, 0, "%s", modes[m]);
        /* Claim, get and store each within their deadlines. */
        cr_assert_leq(elapsed, 3 * (CONNECT_MS + TIMEOUT_MS) + MARGIN_MS, "%s: took %llu ms",
                      modes[m], (unsigned long long)elapsed);
    }
}
