/* The layer's start, when the loader dlopens it: inside zeInit, after the
 * drivers are loaded but before any of them compiles, so the settings the
 * driver reads lazily can still be changed here. */
#include <stdlib.h>

#include "layer_internal.h"
#include "zecache/driver_cache.h"
#include "zecache/environment.h"
#include "zecache/frontend_process.h"
#include "zecache/log.h"

__attribute__((constructor)) static void zcl_layer_load(void)
{
    /* The driver has just read its settings (when loaded); zeInit reads the
     * rest right after. The layer's own writes below are none of them. */
    zc_environment_snapshot_driver();
    /* Our own configuration comes from the user's values, even in a child of
     * a process whose layer hid them from the driver. */
    zc_driver_cache_restore_user_env(ZC_API_LEVEL_ZERO);
    zc_config_from_env(&zcl_layer.config);
    zcl_options_parse(getenv("ZE_ENABLE_LAYERS"), &zcl_layer.options);
    /* Environment writes as early as they can be: right after our own reads. */
    if (zcl_layer.options.cache && !zc_driver_cache_hide(ZC_API_LEVEL_ZERO))
        zc_log_info("the driver's own cache is off already: no variable written");
    if (zcl_layer.options.validation)
        zcl_chain_open();
    if (!zcl_layer.options.cache)
        return;
    zcl_layer.cache = zc_frontend_cache_start(&zcl_layer.config, "zecache layer");
    if (zcl_layer.cache != NULL)
        zc_frontend_prefetch_start(zcl_layer.cache);
}

/* The counters go into the cache's stats file at every store and, for what
 * came after the last one, at exit; the hit path does no I/O for them. This
 * runs at exit only: the layer is linked -z nodelete, so a loader's dlclose
 * does not unload it. The cache is not closed: other threads may still be
 * using it, and the process ends anyway. */
__attribute__((destructor)) static void zcl_layer_unload(void)
{
    zc_frontend_process_end(zcl_layer.cache);
}
