/* A layer's cache over the life of its process (frontend_process.h). */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zecache/frontend_process.h"
#include "zecache/log.h"

/* The caches layers started in this process (one per layer). A forked child
 * starts with a copy of the parent's counters; without a reset both would
 * merge them into the stats file at exit. Atomics, not a lock: the child's
 * handler must not wait for a lock another thread held at the fork. */
#define MAX_STARTED 4

static _Atomic(zc_cache *) started[MAX_STARTED];
static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;

static void zero_counters_in_child(void)
{
    for (size_t i = 0; i < MAX_STARTED; i++) {
        zc_cache *cache = atomic_load(&started[i]);
        if (cache != NULL)
            zc_cache_reset_counters(cache);
    }
}

static void register_fork_handler(void)
{
    (void)pthread_atfork(NULL, NULL, zero_counters_in_child);
}

static void zero_counters_in_children(zc_cache *cache)
{
    pthread_once(&fork_handler_once, register_fork_handler);
    for (size_t i = 0; i < MAX_STARTED; i++) {
        zc_cache *none = NULL;
        if (atomic_compare_exchange_strong(&started[i], &none, cache))
            return;
    }
}

zc_cache *zc_frontend_cache_start(const zc_config *config, const char *layer)
{
    zc_cache *cache = NULL;
    zc_status status = zc_cache_open(config, &cache);
    if (status != ZC_OK) {
        zc_log_info("cache off: %s", zc_status_name(status));
        return NULL;
    }
    const char *dir = zc_cache_disk_dir(cache);
    zc_log_info("%s: cache on, %s%s", layer, dir != NULL ? "directory " : "memory only",
                dir != NULL ? dir : "");
    zero_counters_in_children(cache);
    return cache;
}

/* What names this program for its usage list: the executable and its first
 * argument (the script, for an interpreter). Empty when unknown. */
static void program_name(char *name, size_t size)
{
    char arguments[4096];
    ssize_t length = readlink("/proc/self/exe", name, size - 1);
    int fd = length > 0 ? open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC) : -1;
    ssize_t got = fd >= 0 ? read(fd, arguments, sizeof arguments - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (length <= 0 || got < 0) {
        name[0] = '\0';
        return;
    }
    arguments[got] = '\0';
    /* NUL-separated: argv[1] follows argv[0]'s NUL, when there is one. */
    size_t first_end = strlen(arguments);
    const char *first = (ssize_t)first_end < got ? arguments + first_end + 1 : "";
    snprintf(name + length, size - (size_t)length, "\n%s", first);
}

void zc_frontend_prefetch_start(zc_cache *cache)
{
    char name[PATH_MAX + 4096];
    program_name(name, sizeof name);
    if (name[0] != '\0')
        (void)zc_cache_prefetch_start(cache, name);
}

static void log_summary(const zc_cache_stats *stats)
{
    uint64_t bypasses = 0;
    for (int i = 0; i < ZC_BYPASS_REASON_COUNT; i++)
        bypasses += stats->bypasses[i];
    zc_log_info(
        "summary: %llu memory hits, %llu disk hits, %llu misses (%llu failed), %llu bypasses, "
        "%llu stores, %llu store errors (%llu lock timeouts), %.3f ms of compiling saved; "
        "remote: %llu hits, %llu misses, %llu stores, %llu errors, %llu rejected, %llu not "
        "admitted",
        (unsigned long long)stats->memory_hits, (unsigned long long)stats->disk_hits,
        (unsigned long long)stats->misses, (unsigned long long)stats->failed_builds,
        (unsigned long long)bypasses, (unsigned long long)stats->stores,
        (unsigned long long)stats->store_errors, (unsigned long long)stats->lock_timeouts,
        (double)stats->compile_ns_saved / 1e6, (unsigned long long)stats->remote_hits,
        (unsigned long long)stats->remote_misses, (unsigned long long)stats->remote_stores,
        (unsigned long long)stats->remote_errors, (unsigned long long)stats->remote_rejected,
        (unsigned long long)stats->remote_not_admitted);
}

void zc_frontend_process_end(zc_cache *cache)
{
    if (cache == NULL)
        return;
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    zc_cache_prefetch_save(cache);
    zc_cache_merge_stats(cache);
    log_summary(&stats);
}
