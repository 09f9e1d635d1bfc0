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
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "disk_test_support.h"
#include "redis_storage_support.h"
#include "redis_test_support.h"
#include "test_support.h"
#include "zecache/cache.h"
#include "zecache/entry.h"
#include "zecache/log.h"
#include "zecache/remote_spec.h"
#include "zecache/storage.h"

#if defined(__SANITIZE_ADDRESS__)
/* ASan keeps freed memory in quarantine, 256 MiB by default, which the
 * memory bounds below, measured on RSS, would count: a smaller one. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=8";
}
#endif

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
    unsigned port;
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
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* also when an assertion ends the test */
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
    server.port = port;
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

static const char *const modes[] = {"stall", "trickle", "huge",       "malformed", "drop",
                                    "error", "nested",  "huge-array", "endless",   "reset"};

/* Each storage operation fails within connect + command timeouts. */
static void check_operations_fail_in_time(bool tcp)
{
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        hostile_server server = start_server(modes[m], tcp);
        zc_storage *storage = t_open_redis_storage(server.url);
        zc_key key = t_key(m);
        long rss_before = t_max_rss_kib();
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
        long rss_growth_kib = t_max_rss_kib() - rss_before;
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

/* ---- the hostile-peer matrix: every command against every reply kind ---- */

/* A storage on server's TCP port, with URL parts before the host (AUTH's
 * password) and after it (SELECT's database), and the given timeouts. */
static zc_storage *open_storage(const hostile_server *server, const char *userinfo,
                                const char *path, unsigned timeout_ms, uint64_t max_payload)
{
    char url[512];
    snprintf(url, sizeof url, "redis://%s127.0.0.1:%u%s|connect-timeout=%d|timeout=%u", userinfo,
             server->port, path, CONNECT_MS, timeout_ms);
    zc_remote_spec spec;
    char reason[256] = "";
    cr_assert_eq(zc_remote_spec_parse(url, &spec, reason, sizeof reason), ZC_OK, "%s", reason);
    zc_storage *storage = NULL;
    cr_assert_eq(zc_storage_redis_open(&spec, max_payload, scratch, &storage), ZC_OK);
    zc_remote_spec_free(&spec);
    return storage;
}

/* What a call came to: F a failure (ZC_ERR_IO or ZC_ERR_DISABLED, counted
 * by the remote tier), M a miss, E an empty value (which no entry check
 * takes: rejected and counted by the remote tier), V a value, O done. */
typedef char outcome;

static outcome outcome_of_get(zc_storage *storage, const zc_key *key)
{
    uint8_t *value = NULL;
    size_t size = 0;
    zc_status status = storage->ops->get(storage, key, &value, &size);
    free(value);
    cr_assert(status == ZC_OK || status == ZC_MISS || status == ZC_ERR_IO ||
                  status == ZC_ERR_DISABLED,
              "get: %s", zc_status_name(status));
    return status == ZC_MISS ? 'M' : status != ZC_OK ? 'F' : size == 0 ? 'E' : 'V';
}

static outcome outcome_of(zc_status status)
{
    cr_assert(status == ZC_OK || status == ZC_MISS || status == ZC_ERR_IO ||
                  status == ZC_ERR_DISABLED,
              "%s", zc_status_name(status));
    return status == ZC_OK ? 'O' : status == ZC_MISS ? 'M' : 'F';
}

static bool count_listed(void *context, const zc_key *key)
{
    (void)key;
    (*(size_t *)context)++;
    return true;
}

/* The commands, each the first (or only) one its call sends. */
enum { AUTH, SELECT, GET, SET, DEL, EXISTS, EVAL, SCAN, COMMANDS };
static const char *const command_names[COMMANDS] = {"AUTH", "SELECT", "GET",  "SET",
                                                    "DEL",  "EXISTS", "EVAL", "SCAN"};

static outcome run_command_against(int command, const hostile_server *server)
{
    zc_storage *storage = open_storage(server, command == AUTH ? ":password@" : "",
                                       command == SELECT ? "/1" : "", TIMEOUT_MS, 1 << 20);
    zc_key key = t_key(42);
    uint8_t bytes[64] = {0};
    outcome got = 'F';
    if (command <= GET) {
        got = outcome_of_get(storage, &key);
    } else if (command == SET) {
        got = outcome_of(storage->ops->put(storage, &key, bytes, sizeof bytes, false));
    } else if (command == DEL) {
        got = outcome_of(storage->ops->remove(storage, &key));
    } else if (command == EXISTS) {
        got = outcome_of(storage->ops->record(storage, &key, bytes, sizeof bytes, NULL, 0));
    } else if (command == EVAL) {
        zc_storage_claim_result result;
        zc_storage_claim claim;
        got = outcome_of(storage->ops->claim(storage, &key, 100, &result, &claim));
        storage->ops->release(storage, &key, &claim, true);
    } else {
        size_t listed = 0;
        got = outcome_of(storage->ops->list_recipes(storage, count_listed, &listed));
    }
    zc_storage_close(storage);
    return got;
}

/* stderr to a file for the log lines: captured from here on. */
static int capture_stderr(int *saved)
{
    char path[128];
    snprintf(path, sizeof path, "%s/stderr.txt", scratch);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    fflush(stderr);
    *saved = dup(STDERR_FILENO);
    cr_assert(dup2(fd, STDERR_FILENO) >= 0);
    return fd;
}

static void restore_stderr(int fd, int saved)
{
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);
}

/* The text logged since offset. */
static void logged_since(int fd, off_t offset, char *text, size_t size)
{
    fflush(stderr);
    ssize_t got = pread(fd, text, size - 1, offset);
    text[got > 0 ? got : 0] = '\0';
}

typedef struct reply_kind {
    const char *mode;
    /* What each command comes to, AUTH SELECT GET SET DEL EXISTS EVAL SCAN. A
     * reply AUTH or SELECT takes goes on to GET's. */
    const char *expected;
} reply_kind;

/* Every reply kind: the simple types, bulk strings of every size against
 * the bounds (GET's: the largest entry of a 1 MiB payload; EVAL's word, 128
 * bytes; none for the others), arrays flat, nested and huge, streams that
 * never end, a stall past the timeout, resets, garbage, and SCAN batches
 * (at and past the bound on names in one). */
static void run_matrix(const reply_kind *kinds, size_t count)
{
    zc_log_set_enabled(true);
    int saved, log = capture_stderr(&saved);
    for (size_t k = 0; k < count; k++) {
        hostile_server server = start_server(kinds[k].mode, true);
        long rss_before = t_max_rss_kib();
        for (int c = 0; c < COMMANDS; c++) {
            off_t log_start = lseek(log, 0, SEEK_END);
            uint64_t start = t_monotonic_ms();
            outcome got = run_command_against(c, &server);
            uint64_t elapsed = t_monotonic_ms() - start;
            char text[4096];
            logged_since(log, log_start, text, sizeof text);
            cr_assert_eq(got, kinds[k].expected[c], "%s to %s: '%c', expected '%c'\n%s",
                         kinds[k].mode, command_names[c], got, kinds[k].expected[c], text);
            cr_assert_leq(elapsed, 2 * (CONNECT_MS + TIMEOUT_MS) + MARGIN_MS, "%s to %s: %llu ms",
                          kinds[k].mode, command_names[c], (unsigned long long)elapsed);
            cr_assert(got != 'F' || strstr(text, "remote redis://") != NULL,
                      "%s to %s: nothing logged", kinds[k].mode, command_names[c]);
        }
        long growth = t_max_rss_kib() - rss_before;
        stop_server(&server);
        cr_assert_lt(growth, 64 * 1024, "%s: memory grew by %ld KiB", kinds[k].mode, growth);
    }
    restore_stderr(log, saved);
    zc_log_set_enabled(false);
}

Test(hostile, every_command_against_every_reply_kind, .timeout = 240)
{
    char at_bound[64], past_bound[64];
    uint64_t bound = zc_entry_size_bound(1 << 20);
    snprintf(at_bound, sizeof at_bound, "bulk:%llu", (unsigned long long)bound);
    snprintf(past_bound, sizeof past_bound, "bulk:%llu", (unsigned long long)bound + 1);
    const reply_kind kinds[] = {
        {"status", "FFFOOFOF"},
        {"integer", "FFFOOOFF"},
        {"nil", "MMMOOFFF"},
        {"error", "FFEFFFFF"},
        {"bulk:0", "FFEFFFOF"},
        {"bulk:128", "FFVFFFOF"},
        {"bulk:129", "FFVFFFFF"},
        {at_bound, "FFVFFFFF"},
        {past_bound, "FFFFFFFF"},
        {"huge", "FFFFFFFF"},
        {"array:2", "FFFFFFFF"},
        {"array:0", "FFFFFFFF"},
        {"nested", "FFFFFFFF"},
        {"huge-array", "FFFFFFFF"},
        {"endless", "FFFFFFFF"},
        {"stall", "FFFFFFFF"},
        {"reset", "FFFFFFFF"},
        {"drop", "FFFFFFFF"},
        {"malformed", "FFFFFFFF"},
        {"scan-ok", "FFFFFFFO"},
        {"scan-cycle", "FFFFFFFF"},
        {"scan-names:16384", "FFFFFFFO"},
        {"scan-names:16385", "FFFFFFFF"},
    };
    run_matrix(kinds, sizeof kinds / sizeof kinds[0]);
}

/* A server answering with an array that announces 10^8 elements and then
 * streams them: refused at its first line whatever the command (AUTH and
 * SELECT on connecting too), with a timeout long enough to receive hundreds
 * of MB. */
Test(hostile, an_endless_array_is_refused_at_its_first_line)
{
    hostile_server server = start_server("huge-array", true);
    long rss_before = t_max_rss_kib();
    const char *userinfo[] = {":password@", "", "", ""}, *path[] = {"", "/1", "", ""};
    for (int c = 0; c < 4; c++) {
        zc_storage *storage = open_storage(&server, userinfo[c], path[c], 1500, 1 << 20);
        zc_key key = t_key(1);
        size_t listed = 0;
        if (c < 3)
            cr_assert_eq(outcome_of_get(storage, &key), 'F');
        else
            cr_assert_eq(storage->ops->list_recipes(storage, count_listed, &listed), ZC_ERR_IO);
        zc_storage_close(storage);
    }
    long growth = t_max_rss_kib() - rss_before;
    stop_server(&server);
    cr_assert_lt(growth, 64 * 1024, "memory grew by %ld KiB", growth);
}

/* 800,000,000 bytes that are no entry, to a storage taking entries of the
 * format's largest payload: refused as soon as its first bytes show no
 * entry header, nothing buffered; a bad value (empty: the remote tier
 * rejects it, counts it and replaces it), not a failure of the server. */
Test(hostile, a_huge_value_is_refused_at_its_header)
{
    hostile_server server = start_server("huge", true);
    zc_storage *storage = open_storage(&server, "", "", 3000, 0);
    long rss_before = t_max_rss_kib();
    zc_key key = t_key(1);
    cr_assert_eq(outcome_of_get(storage, &key), 'E');
    long growth = t_max_rss_kib() - rss_before;
    zc_storage_close(storage);
    stop_server(&server);
    cr_assert_lt(growth, 64 * 1024, "memory grew by %ld KiB", growth);
}

/* A header that claims an entry of key with a payload of about 100 MB,
 * signed (its checksum made right), in path. */
static void write_entry_header(const char *path, const zc_key *key, uint64_t total)
{
    zc_artifact *artifact = t_artifact(64, 1);
    uint8_t *entry = NULL;
    size_t size = 0;
    cr_assert_eq(zc_entry_encode(key, artifact, 3, &entry, &size), ZC_OK);
    zc_artifact_unref(artifact);
    uint64_t payload = 100000000,
             compressed = total - ZC_ENTRY_HEADER_SIZE - ZC_ENTRY_SIGNATURE_SIZE;
    for (int i = 0; i < 8; i++) {
        entry[48 + i] = (uint8_t)(payload >> (8 * i)); /* binary size */
        entry[56 + i] = 0;                             /* build log size */
        entry[64 + i] = (uint8_t)(compressed >> (8 * i));
    }
    cr_assert(zc_entry_set_signed(entry)); /* and the header checksum */
    FILE *file = fopen(path, "wb");
    cr_assert_not_null(file);
    cr_assert_eq(fwrite(entry, 1, ZC_ENTRY_HEADER_SIZE, file), ZC_ENTRY_HEADER_SIZE);
    fclose(file);
    free(entry);
}

/* 100 MB under a header that fits the key and the bulk's length: received
 * into a temporary file, not memory, verified there and refused (an empty
 * value, which the remote tier counts as rejected and replaces), the reason
 * logged (the first check the garbage fails: a signed entry's trailer). */
Test(hostile, a_large_value_is_received_into_a_file_and_verified_there)
{
    char path[128], mode[192];
    zc_key key = t_key(5);
    uint64_t total = 100000000;
    snprintf(path, sizeof path, "%s/header", scratch);
    write_entry_header(path, &key, total);
    snprintf(mode, sizeof mode, "prefix:%s:%llu", path, (unsigned long long)total);
    hostile_server server = start_server(mode, true);
    zc_storage *storage = open_storage(&server, "", "", 20000, 0);
    zc_log_set_enabled(true);
    int saved, log = capture_stderr(&saved);
    long rss_before = t_max_rss_kib();
    cr_assert_eq(outcome_of_get(storage, &key), 'E');
    long growth = t_max_rss_kib() - rss_before;
    char text[4096];
    logged_since(log, 0, text, sizeof text);
    restore_stderr(log, saved);
    zc_log_set_enabled(false);
    zc_storage_close(storage);
    stop_server(&server);
    cr_assert_lt(growth, 64 * 1024, "memory grew by %ld KiB", growth);
    cr_assert(strstr(text, "signed, but no signature at the end") != NULL, "%s", text);
    /* A header naming another key refused at once, as a bad value. */
    zc_key other = t_key(6);
    server = start_server(mode, true);
    storage = open_storage(&server, "", "", 20000, 0);
    cr_assert_eq(outcome_of_get(storage, &other), 'E');
    zc_storage_close(storage);
    stop_server(&server);
}

/* A server answering AUTH with two replies (+OK, then nil) and every
 * other command with an error: the second reply to AUTH is no answer to
 * the GET that follows, so the connection is refused, the GET failed (not
 * a miss read from what AUTH left). */
Test(hostile, a_second_reply_to_auth_is_not_the_next_commands)
{
    hostile_server server = start_server("auth-twice", true);
    zc_storage *storage = open_storage(&server, ":password@", "", TIMEOUT_MS, 1 << 20);
    zc_key key = t_key(1);
    outcome got = outcome_of_get(storage, &key);
    cr_assert_eq(got, 'F', "'%c'", got);
    zc_storage_close(storage);
    stop_server(&server);
}

/* SCAN's cursor coming back (always 1, with 256 new names each time) stops
 * the listing at the second batch; a cursor that rises for ever, at the
 * bound on keys. Both are failures. */
Test(hostile, a_scan_that_never_ends_is_stopped)
{
    hostile_server server = start_server("scan-cycle", true);
    zc_storage *storage = open_storage(&server, "", "", TIMEOUT_MS, 1 << 20);
    size_t listed = 0;
    cr_assert_eq(storage->ops->list_recipes(storage, count_listed, &listed), ZC_ERR_DISABLED);
    cr_assert_eq(listed, 512);
    zc_storage_close(storage);
    stop_server(&server);
    server = start_server("scan-rising", true);
    storage = open_storage(&server, "", "", TIMEOUT_MS, 1 << 20);
    long rss_before = t_max_rss_kib();
    listed = 0;
    cr_assert_eq(storage->ops->list_recipes(storage, count_listed, &listed), ZC_ERR_DISABLED);
    cr_assert_eq(listed, 1 << 20);
    long growth = t_max_rss_kib() - rss_before;
    zc_storage_close(storage);
    stop_server(&server);
    cr_assert_lt(growth, 64 * 1024, "memory grew by %ld KiB", growth);
}

/* A cluster node that misbehaves: CLUSTER SLOTS answered in each hostile
 * way leaves no map (ZC_ERR_IO: nothing of the cluster answered as one), and
 * a node that redirects every command to itself, MOVED or ASK, is left after
 * ZC_REDIS_MAX_REDIRECTIONS (ZC_ERR_IO too: a cluster that misleads counts
 * toward leaving the storage alone); all in time. */
Test(hostile, a_cluster_node_that_misbehaves_fails_in_time)
{
    const char *cluster_modes[] = {"stall",   "huge",  "malformed", "nested",     "huge-array",
                                   "endless", "error", "nil",       "moved-loop", "ask-loop"};
    for (size_t m = 0; m < sizeof cluster_modes / sizeof cluster_modes[0]; m++) {
        const char *mode = cluster_modes[m];
        hostile_server server = start_server(mode, true);
        char url[256];
        /* 127.0.0.1 as its map names it: one connection, which resp_server
         * serves (one at a time). */
        snprintf(url, sizeof url, "redis://127.0.0.1:%u|cluster|connect-timeout=%d|timeout=%d",
                 server.port, CONNECT_MS, TIMEOUT_MS);
        zc_storage *storage = t_open_redis_storage(url);
        zc_key key = t_key(900 + m);
        uint8_t *value = NULL;
        size_t size = 0;
        uint64_t start = t_monotonic_ms();
        zc_status got = storage->ops->get(storage, &key, &value, &size);
        uint64_t get_ms = t_monotonic_ms() - start;
        uint8_t entry[64] = {0};
        start = t_monotonic_ms();
        zc_status put = storage->ops->put(storage, &key, entry, sizeof entry, false);
        uint64_t put_ms = t_monotonic_ms() - start;
        zc_storage_close(storage);
        stop_server(&server);
        cr_assert_eq(got, ZC_ERR_IO, "%s: get %s", mode, zc_status_name(got));
        cr_assert_null(value);
        cr_assert_eq(put, ZC_ERR_IO, "%s: put %s", mode, zc_status_name(put));
        cr_assert_leq(get_ms, CONNECT_MS + TIMEOUT_MS + MARGIN_MS, "%s: get took %llu ms", mode,
                      (unsigned long long)get_ms);
        cr_assert_leq(put_ms, CONNECT_MS + TIMEOUT_MS + MARGIN_MS, "%s: put took %llu ms", mode,
                      (unsigned long long)put_ms);
    }
}

static char logged[8192];

static void keep_message(void *context, const char *message)
{
    (void)context;
    size_t used = strlen(logged);
    snprintf(logged + used, sizeof logged - used, "%s\n", message);
}

static void assert_printable(const char *text)
{
    for (const char *c = text; *c != '\0'; c++)
        cr_assert(*c == '\n' || ((unsigned char)*c >= ' ' && *c != 0x7f), "raw 0x%02x in %s",
                  (unsigned char)*c, text);
}

/* An error reply with terminal escapes: quoted in the log and the problem
 * the check prints, its control bytes as \xNN. */
Test(hostile, a_servers_escape_sequences_never_reach_a_message)
{
    hostile_server server = start_server("escapes", true);
    zc_storage *storage = t_open_redis_storage(server.url);
    logged[0] = '\0';
    zc_log_set_capture(keep_message, NULL);
    zc_storage_clear_problem();
    zc_key key = t_key(1);
    uint8_t entry[64] = {0};
    cr_assert_neq(storage->ops->put(storage, &key, entry, sizeof entry, true), ZC_OK);
    zc_log_set_capture(NULL, NULL);
    char problem[512];
    snprintf(problem, sizeof problem, "%s", zc_storage_last_problem());
    zc_storage_close(storage);
    stop_server(&server);
    cr_assert_not_null(strstr(logged, "SET: ERR \\x1b[2J\\x1b]0;pwned\\x07 \\xc2\\x9b31m evil"),
                       "%s", logged);
    assert_printable(logged);
    assert_printable(problem);
}
