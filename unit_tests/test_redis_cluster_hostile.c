/* The Redis storage on a Redis Cluster whose nodes misbehave, the nodes
 * faked in this process (a thread each): a map naming a node that never
 * answers, a map naming a new such node at each reading, MOVED in a loop and
 * down a long chain, 32 nodes answering with 14 MiB values, and nodes that
 * are an HTTP or TLS server. Each call ends within one connect-timeout +
 * timeout (plus a margin for a loaded machine), memory stays within the
 * 64 MiB one server may cost, failures are counted and logged, the
 * password is in no message, and through the cache every lookup gets its
 * compile's result. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "send_test_support.h"
#include "cache_test_support.h"
#include "redis/redis_key_slot.h"
#include "redis_test_support.h"
#include "zecache/cache.h"
#include "zecache/log.h"
#include "zecache/remote_spec.h"
#include "zecache/storage.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

enum { CALL_MS = 200 + 200, MARGIN_MS = 600, MAX_NODES = 48, BIG_VALUE = 14 << 20 };
#define PASSWORD "zc-hunter2-password"

typedef struct fake_node fake_node;
/* The reply to one command (argv[0..argc-1]) into out; false: close. */
typedef bool (*fake_answer)(fake_node *node, int argc, char **argv, int out);

struct fake_node {
    int listener;
    unsigned port;
    fake_answer answer;
    int index;
    pthread_t thread;
};

static fake_node nodes[MAX_NODES];
static int node_count;
static int silent_fds[16];
static unsigned silent_ports[16];
static atomic_int map_readings;
static int stop_pipe[2];
static char scratch[64];
static char log_text[1 << 16];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void capture(void *context, const char *message)
{
    (void)context;
    pthread_mutex_lock(&log_lock);
    size_t used = strlen(log_text);
    snprintf(log_text + used, sizeof log_text - used, "%s\n", message);
    pthread_mutex_unlock(&log_lock);
}

/* One whole command at the start of buffer: its size, or 0 when not all
 * of it came yet. */
static size_t parse_command(char *buffer, size_t size, int *argc, char **argv)
{
    char *end = buffer + size, *at = buffer;
    if (size < 4 || *at != '*')
        return 0;
    int count = atoi(at + 1);
    char *line = memmem(at, (size_t)(end - at), "\r\n", 2);
    if (line == NULL || count < 1 || count > 16)
        return 0;
    at = line + 2;
    for (int i = 0; i < count; i++) {
        line = at < end ? memmem(at, (size_t)(end - at), "\r\n", 2) : NULL;
        if (line == NULL || *at != '$')
            return 0;
        size_t length = (size_t)atol(at + 1);
        at = line + 2;
        if ((size_t)(end - at) < length + 2)
            return 0;
        argv[i] = at;
        at[length] = '\0';
        at += length + 2;
    }
    *argc = count;
    return (size_t)(at - buffer);
}

static void serve(fake_node *node, int fd)
{
    static _Thread_local char buffer[1 << 16];
    size_t used = 0;
    for (;;) {
        struct pollfd ready[2] = {{fd, POLLIN, 0}, {stop_pipe[0], POLLIN, 0}};
        if (poll(ready, 2, -1) < 0 || ready[1].revents != 0)
            return;
        ssize_t got = recv(fd, buffer + used, sizeof buffer - used, 0);
        if (got <= 0)
            return;
        used += (size_t)got;
        int argc = 0;
        char *argv[16];
        size_t taken;
        while ((taken = parse_command(buffer, used, &argc, argv)) > 0) {
            if (!node->answer(node, argc, argv, fd))
                return;
            memmove(buffer, buffer + taken, used - taken);
            used -= taken;
        }
        if (used == sizeof buffer)
            return;
    }
}

static void *run_node(void *context)
{
    fake_node *node = context;
    for (;;) {
        struct pollfd ready[2] = {{node->listener, POLLIN, 0}, {stop_pipe[0], POLLIN, 0}};
        if (poll(ready, 2, -1) < 0 || ready[1].revents != 0)
            return NULL;
        int fd = accept(node->listener, NULL, NULL);
        if (fd < 0)
            continue;
        serve(node, fd);
        close(fd);
    }
}

static fake_node *add_node(fake_answer answer)
{
    cr_assert_lt(node_count, MAX_NODES);
    fake_node *node = &nodes[node_count];
    *node = (fake_node){.answer = answer, .index = node_count++};
    node->listener = t_silent_listener(&node->port);
    cr_assert_eq(pthread_create(&node->thread, NULL, run_node, node), 0);
    return node;
}

static void setup(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/zc_chostile_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    cr_assert_eq(pipe(stop_pipe), 0);
    node_count = 0;
    atomic_store(&map_readings, 0);
    for (int i = 0; i < 16; i++)
        silent_fds[i] = t_silent_listener(&silent_ports[i]);
    log_text[0] = '\0';
    zc_log_set_enabled(true);
    zc_log_set_capture(capture, NULL);
}

static void teardown(void)
{
    cr_assert_eq(write(stop_pipe[1], "x", 1), 1);
    for (int i = 0; i < node_count; i++) {
        pthread_join(nodes[i].thread, NULL);
        close(nodes[i].listener);
    }
    for (int i = 0; i < 16; i++)
        close(silent_fds[i]);
    close(stop_pipe[0]);
    close(stop_pipe[1]);
    zc_log_set_capture(NULL, NULL);
    cr_assert_null(strstr(log_text, PASSWORD), "the password is in a message");
    t_remove_tree(scratch);
}

TestSuite(cluster_hostile, .init = setup, .fini = teardown, .timeout = 120);

/* ---- what the fake nodes answer ---- */

/* A CLUSTER SLOTS reply: ranges slot ranges of equal size over ports. */
static bool send_map(int fd, const unsigned *ports, int ranges)
{
    char text[8192];
    int used = snprintf(text, sizeof text, "*%d\r\n", ranges);
    for (int i = 0; i < ranges; i++) {
        int first = 16384 / ranges * i,
            last = i == ranges - 1 ? 16383 : 16384 / ranges * (i + 1) - 1;
        used +=
            snprintf(text + used, sizeof text - (size_t)used,
                     "*3\r\n:%d\r\n:%d\r\n*2\r\n$9\r\n127.0.0.1\r\n:%u\r\n", first, last, ports[i]);
    }
    return t_send_text(fd, text);
}

static bool is(const char *word, const char *expected)
{
    return strcasecmp(word, expected) == 0;
}

/* What the node's map names: count ports, all slots shared among them. */
typedef const unsigned *(*fake_map)(int *count);

/* What a fake node answers: AUTH and ASKING taken, CLUSTER SLOTS its map,
 * any other command the reply of its kind. */
typedef struct fake_kind {
    fake_map map;
    fake_answer reply;
} fake_kind;

static bool answer(const fake_kind *kind, fake_node *node, int argc, char **argv, int fd)
{
    if (is(argv[0], "AUTH") || is(argv[0], "ASKING"))
        return t_send_text(fd, "+OK\r\n");
    if (argc == 2 && is(argv[0], "CLUSTER") && is(argv[1], "SLOTS")) {
        atomic_fetch_add(&map_readings, 1);
        int count = 0;
        const unsigned *ports = kind->map(&count);
        return send_map(fd, ports, count);
    }
    return kind->reply(node, argc, argv, fd);
}

static bool refuse(fake_node *node, int argc, char **argv, int fd)
{
    (void)node, (void)argc, (void)argv;
    return t_send_text(fd, "-ERR no\r\n");
}

static const unsigned *first_silent(int *count)
{
    *count = 1;
    return &silent_ports[0];
}

static const unsigned *next_silent(int *count)
{
    *count = 1;
    return &silent_ports[atomic_load(&map_readings) % 16];
}

static const unsigned *first_node(int *count)
{
    *count = 1;
    return &nodes[0].port;
}

static const unsigned *second_node(int *count)
{
    *count = 1;
    return &nodes[1].port;
}

static unsigned all_ports[MAX_NODES];

static const unsigned *every_node(int *count)
{
    *count = node_count;
    return all_ports;
}

/* Every key command: MOVED to the next node (the last to node 0: a loop of
 * two, or on down a chain). */
static bool moved_onwards(fake_node *node, int argc, char **argv, int fd)
{
    (void)argc, (void)argv;
    char moved[64];
    snprintf(moved, sizeof moved, "-MOVED 0 127.0.0.1:%u\r\n",
             nodes[(node->index + 1) % node_count].port);
    return t_send_text(fd, moved);
}

static char *big_value_bytes;
static pthread_once_t big_value_once = PTHREAD_ONCE_INIT;

static void make_big_value(void)
{
    big_value_bytes = calloc(1, BIG_VALUE);
}

/* GET: a 14 MiB value. */
static bool big_value(fake_node *node, int argc, char **argv, int fd)
{
    if (!is(argv[0], "GET"))
        return refuse(node, argc, argv, fd);
    pthread_once(&big_value_once, make_big_value);
    char header[32];
    snprintf(header, sizeof header, "$%d\r\n", BIG_VALUE);
    return t_send_text(fd, header) && t_send_all(fd, big_value_bytes, BIG_VALUE) &&
           t_send_text(fd, "\r\n");
}

#define FAKE_KIND(name, map_fn, reply_fn)                                                          \
    static bool name(fake_node *node, int argc, char **argv, int fd)                               \
    {                                                                                              \
        static const fake_kind kind = {map_fn, reply_fn};                                          \
        return answer(&kind, node, argc, argv, fd);                                                \
    }

FAKE_KIND(map_to_silent, first_silent, refuse)
FAKE_KIND(map_to_new_silent, next_silent, refuse)
FAKE_KIND(redirect_onwards, first_node, moved_onwards)
FAKE_KIND(big_values, every_node, big_value)
FAKE_KIND(map_to_next, second_node, refuse)

static bool http_server(fake_node *node, int argc, char **argv, int fd)
{
    (void)node, (void)argc, (void)argv;
    t_send_text(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    return false;
}

static bool tls_server(fake_node *node, int argc, char **argv, int fd)
{
    (void)node, (void)argc, (void)argv;
    t_send_all(fd, "\x15\x03\x01\x00\x02\x02\x46", 7); /* a TLS alert: protocol version */
    return false;
}

/* ---- the storage and the cache on the fake cluster ---- */

static void cluster_url(char *url, size_t size, const char *timeouts)
{
    snprintf(url, size, "redis://:" PASSWORD "@127.0.0.1:%u|cluster|%s", nodes[0].port, timeouts);
}

static zc_storage *open_storage(const char *timeouts, uint64_t max_payload)
{
    char url[256];
    cluster_url(url, sizeof url, timeouts);
    zc_remote_spec spec;
    char reason[256] = "";
    cr_assert_eq(zc_remote_spec_parse(url, &spec, reason, sizeof reason), ZC_OK, "%s", reason);
    zc_storage *storage = NULL;
    cr_assert_eq(zc_storage_redis_open(&spec, max_payload, NULL, &storage), ZC_OK);
    zc_remote_spec_free(&spec);
    return storage;
}

#define SHORT "connect-timeout=200|timeout=200"

/* GET of key seed: its status, within one call's deadline. */
static zc_status timed_get(zc_storage *storage, uint64_t seed)
{
    zc_key key = t_key(seed);
    uint8_t *value = NULL;
    size_t size = 0;
    uint64_t start = t_monotonic_ms();
    zc_status status = storage->ops->get(storage, &key, &value, &size);
    uint64_t took = t_monotonic_ms() - start;
    free(value);
    cr_assert_leq(took, CALL_MS + MARGIN_MS, "a call took %llu ms", (unsigned long long)took);
    return status;
}

/* Modules looked up by a node on the cluster: each gets its compile's
 * result; the storage fails 3 calls (the first one's deadline, then at
 * once: the node is remembered silent) and is left alone. */
Test(cluster_hostile, a_map_naming_a_silent_node_costs_one_deadline_then_the_storage_is_left)
{
    add_node(map_to_silent);
    char url[256];
    cluster_url(url, sizeof url, SHORT);
    zc_cache *cache = t_open_node(scratch, 0, url, NULL, 30000);
    uint64_t start = t_monotonic_ms();
    for (uint64_t i = 0; i < 6; i++) {
        zc_key key = t_key(i);
        t_counted_compile compile = {0, i, 3000};
        zc_artifact *expected = t_artifact(3000, i);
        uint64_t began = t_monotonic_ms();
        cr_assert_eq(t_lookup_expecting(cache, &key, t_compile_counted, &compile, expected),
                     ZC_LOOKUP_COMPILED);
        zc_artifact_unref(expected);
        cr_assert_leq(t_monotonic_ms() - began, 3 * CALL_MS + MARGIN_MS, "module %llu",
                      (unsigned long long)i);
    }
    uint64_t took = t_monotonic_ms() - start;
    zc_cache_stats stats = t_cache_stats(cache);
    zc_cache_close(cache);
    cr_assert_eq(stats.remote_errors, 3);
    cr_assert_lt(took, 3000, "6 modules took %llu ms", (unsigned long long)took);
    cr_assert_not_null(strstr(log_text, "did not answer in time"), "%s", log_text);
    cr_assert_not_null(strstr(log_text, "not used again"), "%s", log_text);
}

/* Each reading of the map names another node that never answers: one
 * call still ends by its one deadline, and fails as a storage that does
 * not answer (what leaves it alone). */
Test(cluster_hostile, a_map_naming_a_new_silent_node_at_each_reading_costs_one_deadline_a_call)
{
    add_node(map_to_new_silent);
    zc_storage *storage = open_storage(SHORT, 1 << 20);
    for (uint64_t i = 0; i < 4; i++)
        cr_assert_eq(timed_get(storage, i), ZC_ERR_IO);
    zc_storage_close(storage);
}

/* Three GETs on the nodes added: each fails in time, with expected
 * (ZC_OK: any failure), and logged is in the messages. */
static void check_calls_fail(zc_status expected, const char *logged)
{
    zc_storage *storage = open_storage(SHORT, 1 << 20);
    for (uint64_t i = 0; i < 3; i++) {
        zc_status status = timed_get(storage, i);
        cr_assert(expected == ZC_OK ? status != ZC_OK : status == expected, "%s",
                  zc_status_name(status));
    }
    zc_storage_close(storage);
    cr_assert_not_null(strstr(log_text, logged), "%s", log_text);
}

/* MOVED between two nodes for ever, and down a chain of 40: the call
 * gives up at the bound, at once, as a failure that counts toward leaving
 * the storage alone. */
static void check_redirections(int count)
{
    for (int i = 0; i < count; i++)
        add_node(redirect_onwards);
    check_calls_fail(ZC_ERR_IO, "redirected more than the bound");
}

Test(cluster_hostile, a_redirection_loop_fails_fast_and_counts)
{
    check_redirections(2);
}

Test(cluster_hostile, a_redirection_chain_fails_fast_and_counts)
{
    check_redirections(40);
}

static size_t heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return __sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#endif
}

/* The first key from seed on whose entry's slot node serves. */
static uint64_t key_on_node(int node, uint64_t seed)
{
    for (;; seed++) {
        zc_key key = t_key(seed);
        char hex[ZC_KEY_HEX_SIZE], name[128];
        zc_key_to_hex(&key, hex);
        snprintf(name, sizeof name, "zecache:v1:{%s}", hex);
        int slot = zc_redis_key_slot(name, strlen(name));
        int owner = slot / (16384 / node_count);
        if ((owner < node_count ? owner : node_count - 1) == node)
            return seed;
    }
}

/* 32 nodes each answer a GET with 14 MiB: what the storage keeps after
 * reading from every one stays within 64 MiB (it was 32 read buffers of
 * 14 MiB). */
Test(cluster_hostile, many_nodes_with_large_values_stay_within_64_mib)
{
    enum { NODES = 32 };
    for (int i = 0; i < NODES; i++)
        all_ports[i] = add_node(big_values)->port;
    zc_storage *storage = open_storage("connect-timeout=1000|timeout=4000", 32 << 20);
    size_t before = heap_in_use(), most = 0;
    for (int n = 0; n < NODES; n++) {
        zc_key key = t_key(key_on_node(n, (uint64_t)n * 1000));
        uint8_t *value = NULL;
        size_t size = 0;
        cr_assert_eq(storage->ops->get(storage, &key, &value, &size), ZC_OK, "node %d", n);
        cr_assert_eq(size, BIG_VALUE);
        free(value);
        size_t now = heap_in_use();
        most = now > most ? now : most;
    }
    size_t grown = most > before ? most - before : 0;
    zc_storage_close(storage);
    free(big_value_bytes);
    cr_assert_lt(grown, (size_t)64 << 20, "%zu MiB kept", grown >> 20);
}

/* A node that is an HTTP or a TLS server: the call fails at once, logged. */
static void check_other_server(fake_answer other)
{
    add_node(map_to_next);
    add_node(other);
    check_calls_fail(ZC_OK, "GET");
}

Test(cluster_hostile, a_node_that_is_an_http_server_fails_in_time)
{
    check_other_server(http_server);
}

Test(cluster_hostile, a_node_that_is_a_tls_server_fails_in_time)
{
    check_other_server(tls_server);
}

/* ---- where the cluster may send the password ---- */

static atomic_int heard;

/* The seed maps every slot to node 1 under the name "localhost". */
static bool map_to_localhost(fake_node *node, int argc, char **argv, int fd)
{
    (void)node;
    if (is(argv[0], "AUTH"))
        return t_send_text(fd, "+OK\r\n");
    if (!(argc == 2 && is(argv[0], "CLUSTER")))
        return t_send_text(fd, "-ERR no\r\n");
    char map[160];
    snprintf(map, sizeof map, "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\nlocalhost\r\n:%u\r\n",
             nodes[1].port);
    return t_send_text(fd, map);
}

static bool listen_for_password(fake_node *node, int argc, char **argv, int fd)
{
    (void)node;
    if (is(argv[0], "AUTH") && strcmp(argv[argc - 1], PASSWORD) == 0)
        atomic_fetch_add(&heard, 1);
    return t_send_text(fd, is(argv[0], "AUTH") ? "+OK\r\n" : "$-1\r\n");
}

/* By default the client follows the map to any host, with the password;
 * |node-hosts= bounds that to the seeds' hosts and those it lists. */
Test(cluster_hostile, node_hosts_keeps_the_password_from_hosts_it_does_not_name)
{
    add_node(map_to_localhost);
    add_node(listen_for_password);
    atomic_store(&heard, 0);
    zc_storage *storage = open_storage(SHORT, 1 << 20);
    cr_assert_eq(timed_get(storage, 1), ZC_MISS);
    zc_storage_close(storage);
    cr_assert_eq(atomic_load(&heard), 1);
    storage = open_storage(SHORT "|node-hosts=127.0.0.2,LOCALHOST.example", 1 << 20);
    cr_assert_eq(timed_get(storage, 1), ZC_ERR_IO); /* no usable map */
    zc_storage_close(storage);
    cr_assert_eq(atomic_load(&heard), 1);
    cr_assert_not_null(strstr(log_text, "node-hosts= does not name"), "%s", log_text);
    storage = open_storage(SHORT "|node-hosts=127.0.0.2,LocalHost", 1 << 20);
    cr_assert_eq(timed_get(storage, 1), ZC_MISS);
    zc_storage_close(storage);
    cr_assert_eq(atomic_load(&heard), 2);
}
