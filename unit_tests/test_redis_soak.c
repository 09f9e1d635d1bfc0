/* A soak against one real redis-server: waves of worker processes, each with
 * threads asking for modules through its own cache (own disk directory, the
 * shared Redis), while the server is paused (SIGSTOP, SIGCONT), restarted
 * empty, and filled to a tiny maxmemory that refuses every write. Zero wrong
 * binaries (every artifact is checked against its key's) and zero hangs
 * (every worker ends in time, or SIGALRM kills it and the test fails). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "disk_test_support.h"
#include "redis_test_support.h"
#include "test_support.h"
#include "zecache/cache.h"

enum {
    KEYS = 40,
    WORKERS_AT_ONCE = 3,
    THREADS = 4,
    WORKER_MS = 900,
    SOAK_MS = 6000,
    WORKER_DEADLINE_S = 20,
    WRONG_BINARY = 3,
};

static t_redis server;
static char scratch[64];

static size_t size_of_key(uint64_t k)
{
    return 1000 + 97 * (size_t)k;
}

typedef struct worker_thread {
    zc_cache *cache;
    unsigned seed;
    int wrong;
} worker_thread;

static void *ask_for_modules(void *context)
{
    worker_thread *thread = context;
    uint64_t end = t_monotonic_ms() + WORKER_MS;
    while (t_monotonic_ms() < end) {
        uint64_t k = (uint64_t)rand_r(&thread->seed) % KEYS;
        zc_key key = t_key(5000 + k);
        t_counted_compile compile = {0, k, size_of_key(k)};
        zc_artifact *artifact = NULL, *expected = t_artifact(size_of_key(k), k);
        if (zc_cache_get_or_compile(thread->cache, &key, NULL, t_compile_counted, &compile,
                                    &artifact, NULL) != ZC_OK ||
            !t_same_artifact(artifact, expected))
            thread->wrong++;
        zc_artifact_unref(artifact);
        zc_artifact_unref(expected);
    }
    return NULL;
}

static _Noreturn void run_worker(int number)
{
    alarm(WORKER_DEADLINE_S);
    char dir[128];
    snprintf(dir, sizeof dir, "%s/worker-%d", scratch, number);
    zc_config config = t_disk_config(dir, 1 << 26, 1);
    config.wait_timeout_ms = 300;
    snprintf(config.remote, sizeof config.remote, "redis+unix://%s|connect-timeout=200|timeout=200",
             server.socket);
    zc_cache *cache = NULL;
    if (zc_cache_open(&config, &cache) != ZC_OK)
        _exit(4);
    worker_thread threads[THREADS];
    pthread_t ids[THREADS];
    for (int i = 0; i < THREADS; i++) {
        threads[i] = (worker_thread){cache, (unsigned)(number * THREADS + i), 0};
        pthread_create(&ids[i], NULL, ask_for_modules, &threads[i]);
    }
    int wrong = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(ids[i], NULL);
        wrong += threads[i].wrong;
    }
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    zc_cache_close(cache);
    char path[160];
    snprintf(path, sizeof path, "%s/remote_hits", dir);
    FILE *file = fopen(path, "w");
    if (file != NULL) {
        fprintf(file, "%llu\n", (unsigned long long)stats.remote_hits);
        fclose(file);
    }
    _exit(wrong == 0 ? 0 : WRONG_BINARY);
}

static pid_t start_worker(int number)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        run_worker(number);
    return pid;
}

static void pause_ms(long ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&pause, NULL);
}

static void set_maxmemory(const char *bytes)
{
    const char *argv[] = {"CONFIG", "SET", "maxmemory", bytes};
    freeReplyObject(t_redis_command(&server, 4, argv, NULL));
}

/* One step of trouble, by turn: pause, restart, fill, back to normal. */
static void make_trouble(int step)
{
    switch (step % 4) {
    case 0:
        kill(server.pid, SIGSTOP);
        pause_ms(500);
        kill(server.pid, SIGCONT);
        break;
    case 1:
        t_redis_restart(&server, NULL);
        break;
    case 2:
        set_maxmemory("1"); /* every write refused: OOM */
        break;
    default:
        set_maxmemory("0");
        break;
    }
}

Test(soak, workers_through_a_paused_restarted_and_full_server, .timeout = 180)
{
    snprintf(scratch, sizeof scratch, "/tmp/zc_soak.XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    t_redis_start(&server, (const char *const[]){"--maxmemory-policy", "noeviction", NULL});
    pid_t workers[WORKERS_AT_ONCE];
    int started = 0, finished = 0, step = 0;
    for (int i = 0; i < WORKERS_AT_ONCE; i++)
        workers[i] = start_worker(started++);
    uint64_t end = t_monotonic_ms() + SOAK_MS, next_trouble = t_monotonic_ms() + 300;
    while (finished < started) {
        if (t_monotonic_ms() >= next_trouble && t_monotonic_ms() < end) {
            make_trouble(step++);
            next_trouble = t_monotonic_ms() + 400;
        }
        for (int i = 0; i < WORKERS_AT_ONCE; i++) {
            int status;
            if (workers[i] <= 0 || waitpid(workers[i], &status, WNOHANG) != workers[i])
                continue;
            finished++;
            cr_assert(WIFEXITED(status), "worker killed by signal %d (SIGALRM: a hang)",
                      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            cr_assert_neq(WEXITSTATUS(status), WRONG_BINARY, "a worker got a wrong binary");
            cr_assert_eq(WEXITSTATUS(status), 0, "worker status %d", WEXITSTATUS(status));
            workers[i] = t_monotonic_ms() < end ? start_worker(started++) : 0;
        }
        pause_ms(20);
    }
    cr_assert_geq(step, 8, "the server was not troubled enough");
    cr_assert_geq(started, 12);
    /* The control: between the troubles, nodes did take each other's entries. */
    unsigned long long remote_hits = 0;
    for (int i = 0; i < started; i++) {
        char path[160];
        snprintf(path, sizeof path, "%s/worker-%d/remote_hits", scratch, i);
        FILE *file = fopen(path, "r");
        unsigned long long hits = 0;
        if (file != NULL && fscanf(file, "%llu", &hits) == 1)
            remote_hits += hits;
        if (file != NULL)
            fclose(file);
    }
    cr_assert_gt(remote_hits, 0, "no worker took an entry from Redis: the soak shows nothing");
    t_redis_stop(&server);
    t_remove_tree(scratch);
}
