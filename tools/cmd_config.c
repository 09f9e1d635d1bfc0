/* zecache config: the effective configuration, where each value came from,
 * and whether the cache directory is usable. */
#include <stdio.h>
#include <stdlib.h>

#include "tool.h"
#include "tool_support.h"
#include "zecache/printable.h"
#include "zecache/remote_spec.h"

static void print_source(const char *variable, zc_config_source source)
{
    if (source == ZC_SOURCE_ENV)
        printf("environment\n");
    else if (source == ZC_SOURCE_DEFAULT)
        printf("default\n");
    else
        printf("invalid %s=\"%s\": default used\n", variable, getenv(variable));
}

static void print_size_setting(const char *variable, uint64_t bytes, const char *zero_means,
                               zc_config_source source)
{
    char size[TOOL_SIZE_TEXT], value[64];
    tool_format_size(bytes, size);
    if (bytes == 0)
        snprintf(value, sizeof value, "0 (%s)", zero_means);
    else
        snprintf(value, sizeof value, "%llu (%s)", (unsigned long long)bytes, size);
    printf("%-31s %-32s ", variable, value);
    print_source(variable, source);
}

static void print_remote_problem(void *context, const char *storage, const char *reason)
{
    (void)context;
    char shown[1024], why[1024];
    zc_printable(storage, shown, sizeof shown);
    zc_printable(reason, why, sizeof why);
    printf("  %s: IGNORED: %s\n", shown, why);
}

/* Each storage as the layer will use it, or why it will not. */
static void print_remotes(const zc_config *config)
{
    zc_remote_spec *specs = NULL;
    size_t count = 0;
    if (zc_remote_specs_parse(config->remote, &specs, &count, print_remote_problem, NULL) != ZC_OK)
        return;
    for (size_t i = 0; i < count; i++)
        printf("  %s (connect-timeout %u ms, timeout %u ms%s)\n", specs[i].name,
               specs[i].connect_timeout_ms, specs[i].timeout_ms,
               specs[i].kind == ZC_REMOTE_FILE ? ", unused for file://" : "");
    zc_remote_specs_free(specs, count);
}

static void print_settings(const tool_context *tool, const zc_config *config)
{
    printf("%-31s %-32d ", "NEO_CACHE_PERSISTENT", config->persistent);
    print_source("NEO_CACHE_PERSISTENT", config->persistent_source);
    printf("%-31s %-32s ", "NEO_CACHE_DIR", config->dir[0] != '\0' ? config->dir : "(none)");
    if (tool->dir_option != NULL)
        printf("--dir\n");
    else if (config->dir_source == ZC_SOURCE_DEFAULT)
        printf("default ($XDG_CACHE_HOME or $HOME)\n");
    else
        print_source("NEO_CACHE_DIR", config->dir_source);
    print_size_setting("NEO_CACHE_MAX_SIZE", config->max_size, "unlimited",
                       config->max_size_source);
    print_size_setting("NEO_CACHE_MEMORY_SIZE", config->memory_size, "memory tier off",
                       config->memory_size_source);
    printf("%-31s %-32d ", "NEO_CACHE_COMPRESSION_LEVEL", config->compression_level);
    print_source("NEO_CACHE_COMPRESSION_LEVEL", config->compression_level_source);
    printf("%-31s %-32llu ", "NEO_CACHE_WAIT_TIMEOUT_MS",
           (unsigned long long)config->wait_timeout_ms);
    print_source("NEO_CACHE_WAIT_TIMEOUT_MS", config->wait_timeout_source);
    printf("%-31s %-32s ", "NEO_CACHE_REMOTE", config->remote[0] != '\0' ? "(below)" : "(none)");
    print_source("NEO_CACHE_REMOTE", config->remote_source);
    print_remotes(config);
    printf("%-31s %-32s ", "NEO_CACHE_REMOTE_SECRET_FILE",
           config->remote_secret_file[0] != '\0' ? config->remote_secret_file : "(none)");
    print_source("NEO_CACHE_REMOTE_SECRET_FILE", config->remote_secret_file_source);
    if (config->remote[0] != '\0' && config->remote_secret_file[0] == '\0')
        printf("%-31s without a secret, whoever can write to a remote storage chooses the code "
               "run here\n",
               "");
    printf("%-31s %-32s ", "NEO_CACHE_PACKS", config->packs[0] != '\0' ? config->packs : "(none)");
    print_source("NEO_CACHE_PACKS", config->packs_source);
    char admission[64];
    if (config->remote_min_compile_ms == 0)
        snprintf(admission, sizeof admission, "0 (every module)");
    else
        snprintf(admission, sizeof admission, "%llu (faster: local only)",
                 (unsigned long long)config->remote_min_compile_ms);
    printf("%-31s %-32s ", "NEO_CACHE_REMOTE_MIN_COMPILE_MS", admission);
    print_source("NEO_CACHE_REMOTE_MIN_COMPILE_MS", config->remote_min_compile_source);
    printf("%-31s %-32llu ", "NEO_CACHE_LOCK_TIMEOUT_MS",
           (unsigned long long)config->lock_timeout_ms);
    print_source("NEO_CACHE_LOCK_TIMEOUT_MS", config->lock_timeout_source);
    printf("%-31s %-32s ", "NEO_CACHE_RECORD_INPUTS",
           config->record_inputs ? "1 (inputs kept for prewarm)" : "0");
    print_source("NEO_CACHE_RECORD_INPUTS", config->record_inputs_source);
    printf("%-31s %-32s ", "NEO_CACHE_PREFETCH",
           config->prefetch ? "1 (a program's last entries loaded early)" : "0");
    print_source("NEO_CACHE_PREFETCH", config->prefetch_source);
    /* zc_config records no source for these three. */
    printf("%-31s %d\n", "NEO_CACHE_SHARED", config->allow_shared);
    printf("%-31s %d\n", "PrintDebugMessages", config->print_debug_messages);
    printf("%-31s %d\n", "BinaryCacheTrace", config->binary_cache_trace);
}

/* The layer keeps the driver's own cache off in the processes it runs in;
 * entries of the driver's here come from runs without the layer. */
static void print_driver_cache(zc_disk_tier *tier)
{
    printf("driver's own cache: off while the layer runs (it sets NEO_CACHE_PERSISTENT=00 and "
           "hides l0_cache_dir for the driver)\n");
    tool_entry_list list;
    if (tool_list_entries(tier, &list) != ZC_OK)
        return;
    size_t driver_entries = 0;
    for (size_t i = 0; i < list.count; i++)
        driver_entries += !list.items[i].is_zecache;
    tool_free_entries(&list);
    if (driver_entries > 0)
        printf("driver's own entries here: %zu (written by runs without the layer; counted "
               "against NEO_CACHE_MAX_SIZE and evicted with zecache's, never served)\n",
               driver_entries);
}

static int run_config(tool_context *tool, int argc, char **argv)
{
    int parsed = tool_parse_plain(tool, argc, argv, 0);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    zc_config config;
    zc_config_from_env(&config);
    print_settings(tool, &config);
    fflush(stdout); /* before the core's reasons on stderr */
    zc_disk_tier *tier;
    if (tool_open_tier(tool, &config, &tier) != ZC_OK) {
        printf("\ndirectory %s is NOT usable (see the message above)\n", config.dir);
        return TOOL_EXIT_FAILURE;
    }
    printf("\ndirectory %s is usable%s\n", zc_disk_tier_dir(tier),
           zc_disk_tier_is_read_only(tier) ? " read-only (hits are served, nothing is stored)"
                                           : "");
    if (!config.persistent)
        printf("but NEO_CACHE_PERSISTENT=0: the layer keeps compiled modules in memory only\n");
    print_driver_cache(tier);
    zc_disk_tier_close(tier);
    return TOOL_EXIT_OK;
}

const tool_command tool_cmd_config = {
    .name = "config",
    .synopsis = "config",
    .summary = "Show the effective configuration and whether the directory is usable",
    .details = "Each setting as the layer reads it from this environment, with where it came\n"
               "from: the environment, the default, or an invalid value replaced by the\n"
               "default. Then opens the cache directory as the layer would (creating it when\n"
               "missing) and says whether it is usable, and why not.\n"
               "\n"
               "Exit status: 0 usable, 1 not usable.\n",
    .run = run_config,
};
