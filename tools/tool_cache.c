/* Opening the cache directory that the configuration names -- the same
 * zc_config_from_env the layer calls, so both always agree on it. */
#include "tool.h"
#include "zecache/log.h"

zc_status tool_open_tier(const tool_context *tool, const zc_config *config, zc_disk_tier **tier)
{
    zc_config usable = *config;
    /* NEO_CACHE_PERSISTENT=0 keeps the layer away from the directory; the
     * tool still inspects and maintains it. */
    usable.persistent = true;
    /* The core explains a refused directory only through its debug log. */
    bool log_was_enabled = zc_log_enabled();
    zc_log_set_enabled(true);
    zc_status status = zc_disk_tier_open(&usable, tier);
    zc_log_set_enabled(log_was_enabled);
    if (status != ZC_OK)
        tool_fail(tool, "cannot use the cache directory %s (%s)",
                  config->dir[0] != '\0' ? config->dir : "(none configured)",
                  zc_status_name(status));
    return status;
}

zc_status tool_open_configured_tier(const tool_context *tool, zc_config *config,
                                    zc_disk_tier **tier)
{
    zc_config_from_env(config);
    return tool_open_tier(tool, config, tier);
}

int tool_with_tier(tool_context *tool, tool_tier_body body, void *args)
{
    zc_config config;
    zc_disk_tier *tier;
    if (tool_open_configured_tier(tool, &config, &tier) != ZC_OK)
        return TOOL_EXIT_FAILURE;
    int exit_status = body(tool, &config, tier, args);
    zc_disk_tier_close(tier);
    return exit_status;
}
