/* zecache trim, zecache clear: removal under the same lock and with the same
 * bookkeeping as the layer's own eviction, so they are safe while processes
 * use the cache. */
#include <stdio.h>
#include <time.h>

#include "tool.h"
#include "tool_support.h"
#include "zecache/disk_maintenance.h"

static void print_removed(uint64_t entries, uint64_t bytes)
{
    char size[TOOL_SIZE_TEXT];
    tool_format_size(bytes, size);
    printf("removed %llu entries (%s)", (unsigned long long)entries, size);
}

static void print_remaining(zc_disk_tier *tier)
{
    uint64_t bytes, entries;
    if (zc_disk_tier_scanned_size(tier, &bytes, &entries) != ZC_OK) {
        printf("\n");
        return;
    }
    char size[TOOL_SIZE_TEXT];
    tool_format_size(bytes, size);
    printf("; %llu entries (%s) remain\n", (unsigned long long)entries, size);
}

typedef struct trim_args {
    bool has_max_size, has_age;
    uint64_t max_size;
    int64_t age_seconds;
} trim_args;

static int parse_trim_args(tool_context *tool, int argc, char **argv, trim_args *args)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS,
                                            {"max-size", required_argument, NULL, 's'},
                                            {"older-than", required_argument, NULL, 'a'},
                                            {NULL, 0, NULL, 0}};
    int option;
    while ((option = tool_next_option(tool, argc, argv, options)) >= 0) {
        if (option == 's' && !(args->has_max_size = tool_parse_size(optarg, &args->max_size)))
            return tool_usage_error(tool, "bad size '%s' (bytes, or with K, M, G or T: 500M)",
                                    optarg);
        if (option == 'a' && !(args->has_age = tool_parse_duration(optarg, &args->age_seconds)))
            return tool_usage_error(tool, "bad duration '%s' (with s, m, h or d: 7d)", optarg);
    }
    return tool_end_options(tool, option, argc, argv, 0);
}

/* The cutoff for zc_disk_tier_trim: 0 (no age bound) also when the age
 * reaches before 1970, since nothing was used that long ago. */
static int64_t unused_since(const trim_args *args)
{
    int64_t now = (int64_t)time(NULL);
    if (!args->has_age || args->age_seconds >= now)
        return 0;
    return now - args->age_seconds;
}

static int trim_tier(tool_context *tool, const zc_config *config, zc_disk_tier *tier, void *context)
{
    const trim_args *args = context;
    uint64_t max_size = args->has_max_size ? args->max_size : config->max_size;
    if (!args->has_max_size && config->max_size == 0)
        max_size = UINT64_MAX; /* NEO_CACHE_MAX_SIZE=0: unlimited */
    uint64_t entries = 0, bytes = 0;
    zc_status status = zc_disk_tier_trim(tier, max_size, unused_since(args), &entries, &bytes);
    print_removed(entries, bytes);
    print_remaining(tier);
    if (status != ZC_OK)
        return tool_fail(tool, "trim failed (%s)", zc_status_name(status));
    return TOOL_EXIT_OK;
}

static int run_trim(tool_context *tool, int argc, char **argv)
{
    trim_args args = {.has_max_size = false, .has_age = false};
    int parsed = parse_trim_args(tool, argc, argv, &args);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    return tool_with_tier(tool, trim_tier, &args);
}

static int clear_tier(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                      void *context)
{
    (void)config;
    (void)context;
    uint64_t before_bytes = 0, before_entries = 0;
    zc_disk_tier_scanned_size(tier, &before_bytes, &before_entries);
    zc_status status = zc_disk_tier_clear(tier);
    uint64_t after_bytes = 0, after_entries = 0;
    zc_disk_tier_scanned_size(tier, &after_bytes, &after_entries);
    /* Stores by others during the clear may leave more than there was. */
    print_removed(before_entries > after_entries ? before_entries - after_entries : 0,
                  before_bytes > after_bytes ? before_bytes - after_bytes : 0);
    print_remaining(tier);
    if (status != ZC_OK)
        return tool_fail(tool, "clear failed (%s)", zc_status_name(status));
    return TOOL_EXIT_OK;
}

static int run_clear(tool_context *tool, int argc, char **argv)
{
    int parsed = tool_parse_plain(tool, argc, argv, 0);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    return tool_with_tier(tool, clear_tier, NULL);
}

const tool_command tool_cmd_trim = {
    .name = "trim",
    .synopsis = "trim [--max-size SIZE] [--older-than DURATION]",
    .summary = "Evict entries as the layer would",
    .details = "Removes entries unused for longer than DURATION, then least recently used\n"
               "ones until the cache is at most SIZE (recorded inputs count: an entry takes its\n"
               "recipe with it, and the SPIR-V no remaining recipe names); also removes stale\n"
               "temporary files, the usage lists last used before every entry kept, and\n"
               "rewrites config.file with the real total. Without --max-size the limit is\n"
               "NEO_CACHE_MAX_SIZE (default 1 GiB; 0 means unlimited).\n"
               "\n"
               "  --max-size SIZE         bytes, or a number with K, M, G or T (powers of\n"
               "                          1024, either case): 4096, 500K, 500M, 2G\n"
               "  --older-than DURATION   a number with s, m, h or d (seconds, minutes, hours,\n"
               "                          days): 30s, 15m, 12h, 7d\n",
    .run = run_trim,
};

const tool_command tool_cmd_clear = {
    .name = "clear",
    .synopsis = "clear",
    .summary = "Remove every entry (safe while others use the cache)",
    .details = "Removes every entry, trace and stale temporary file under the lock that stores\n"
               "take, and sets config.file to 0. The persistent counters stay (zero-stats).\n",
    .run = run_clear,
};
