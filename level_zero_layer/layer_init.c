/* The layer's start, when the loader dlopens it: inside zeInit, after the
 * drivers are loaded but before any of them compiles, so the settings the
 * driver reads lazily can still be changed here. */
#include <pthread.h>
#include <stdlib.h>

#include "layer_internal.h"
#include "zecache/environment.h"
#include "zecache/log.h"

/* A forked child starts with a copy of the parent's counters; without this
 * both would merge them into the stats file at exit. */
static void zero_counters_in_child(void)
{
    if (zcl_layer.cache != NULL)
        zc_cache_reset_counters(zcl_layer.cache);
}

static void start_cache(void)
{
    zc_status status = zc_cache_open(&zcl_layer.config, &zcl_layer.cache);
    if (status != ZC_OK) {
        zc_log_info("cache off: %s", zc_status_name(status));
        zcl_layer.cache = NULL;
        return;
    }
    const char *dir = zc_cache_disk_dir(zcl_layer.cache);
    zc_log_info("zecache layer: cache on, %s%s", dir != NULL ? "directory " : "memory only",
                dir != NULL ? dir : "");
}

__attribute__((constructor)) static void zcl_layer_load(void)
{
    /* The driver has just read its settings (when loaded); zeInit reads the
     * rest right after. The layer's own writes below are none of them. */
    zc_environment_snapshot_driver();
    /* Our own configuration comes from the user's values, even in a child of
     * a process whose layer hid them from the driver. */
    zcl_driver_cache_restore_user_env();
    zc_config_from_env(&zcl_layer.config);
    zcl_options_parse(getenv("ZE_ENABLE_LAYERS"), &zcl_layer.options);
    /* Environment writes as early as they can be: right after our own reads. */
    if (zcl_layer.options.cache)
        zcl_driver_cache_hide();
    if (zcl_layer.options.validation)
        zcl_chain_open();
    if (!zcl_layer.options.cache)
        return;
    start_cache();
    zcl_prefetch_start();
    pthread_atfork(NULL, NULL, zero_counters_in_child);
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

/* The counters go into the cache's stats file at every store and, for what
 * came after the last one, at exit; the hit path does no I/O for them. This
 * runs at exit only: the layer is linked -z nodelete, so a loader's dlclose
 * does not unload it. The cache is not closed: other threads may still be
 * using it, and the process ends anyway. */
__attribute__((destructor)) static void zcl_layer_unload(void)
{
    if (zcl_layer.cache == NULL)
        return;
    zc_cache_stats stats;
    zc_cache_get_stats(zcl_layer.cache, &stats);
    zc_cache_prefetch_save(zcl_layer.cache);
    zc_cache_merge_stats(zcl_layer.cache);
    log_summary(&stats);
}
