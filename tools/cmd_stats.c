/* zecache stats, zecache zero-stats: what is in the cache and what every
 * process that used it did (the persistent counters of zecache/stats.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tool.h"
#include "tool_support.h"
#include "zecache/stats.h"
#include "zecache/disk_figures.h"
#include "zecache/disk_maintenance.h"

typedef struct cache_summary {
    uint64_t entries, bytes, driver_entries;
    uint64_t opencl_entries; /* .cl_cache files; the rest are Level Zero's */
    /* zecache entries whose header reads: the compression ratio's base */
    uint64_t readable_bytes, uncompressed_bytes;
    bool recorded_valid;
    uint64_t recorded_bytes; /* config.file */
    /* What counts against the limit (what config.file should hold): entries
     * with their traces, and recorded inputs (recipes and SPIR-V). */
    zc_disk_usage counted;
} cache_summary;

typedef struct stats_report {
    const char *dir;
    uint64_t max_size; /* 0: unlimited */
    cache_summary summary;
    zc_stats_counters counters;
    bool counters_valid;
} stats_report;

static void summarize(const tool_entry_list *list, cache_summary *summary)
{
    for (size_t i = 0; i < list->count; i++) {
        const tool_entry *entry = &list->items[i];
        summary->entries++;
        summary->bytes += entry->file_size;
        if (!entry->is_zecache)
            summary->driver_entries++;
        if (entry->api == ZC_ENTRY_OPENCL)
            summary->opencl_entries++;
        if (entry->header_ok) {
            summary->readable_bytes += entry->file_size;
            summary->uncompressed_bytes += entry->header.binary_size + entry->header.log_size;
        }
    }
}

static double compression_ratio(const cache_summary *summary)
{
    if (summary->readable_bytes == 0)
        return NAN;
    return (double)summary->uncompressed_bytes / (double)summary->readable_bytes;
}

static double percent_full(const stats_report *report)
{
    if (report->max_size == 0)
        return NAN;
    return 100.0 * (double)report->summary.counted.total / (double)report->max_size;
}

static uint64_t total_bypasses(const zc_stats_counters *counters)
{
    uint64_t total = 0;
    for (int i = 0; i < ZC_BYPASS_REASON_COUNT; i++)
        total += counters->bypasses[i];
    return total;
}

/* ---- text ---- */

static void print_size_line(const char *label, uint64_t bytes)
{
    char size[TOOL_SIZE_TEXT];
    tool_format_size(bytes, size);
    printf("%-19s %s (%llu bytes)", label, size, (unsigned long long)bytes);
}

static void print_contents(const stats_report *report)
{
    const cache_summary *summary = &report->summary;
    printf("%-19s %s\n", "cache directory", report->dir);
    printf("%-19s %llu", "entries", (unsigned long long)summary->entries);
    if (summary->driver_entries > 0)
        printf(" (%llu of them the driver's own)", (unsigned long long)summary->driver_entries);
    putchar('\n');
    printf("%-19s Level Zero %llu, OpenCL %llu\n", "entries by API",
           (unsigned long long)(summary->entries - summary->opencl_entries),
           (unsigned long long)summary->opencl_entries);
    const zc_disk_usage *counted = &summary->counted;
    print_size_line("entries' size", counted->entry_bytes);
    putchar('\n');
    print_size_line("recorded inputs", counted->recipe_bytes + counted->blob_bytes);
    printf(": %llu recipes, %llu SPIR-V modules\n", (unsigned long long)counted->recipes,
           (unsigned long long)counted->blobs);
    print_size_line("counted size", counted->total);
    printf(", against the size limit\n");
    if (summary->recorded_valid && summary->recorded_bytes != counted->total)
        printf("%-19s records %llu bytes (see 'zecache verify')\n", "config.file",
               (unsigned long long)summary->recorded_bytes);
    print_size_line("uncompressed", summary->uncompressed_bytes);
    double ratio = compression_ratio(summary);
    if (isfinite(ratio))
        printf(", compression ratio %.2fx", ratio);
    putchar('\n');
    char limit[TOOL_SIZE_TEXT];
    tool_format_size(report->max_size, limit);
    if (report->max_size != 0)
        printf("%-19s %s, %.1f%% full\n", "size limit", limit, percent_full(report));
    else
        printf("%-19s unlimited\n", "size limit");
}

static void print_bypasses(const zc_stats_counters *counters)
{
    printf("%-19s %llu", "bypasses", (unsigned long long)total_bypasses(counters));
    const char *separator = " (";
    for (int i = 0; i < ZC_BYPASS_REASON_COUNT; i++) {
        if (counters->bypasses[i] == 0)
            continue;
        printf("%s%s %llu", separator, zc_bypass_reason_name((zc_bypass_reason)i),
               (unsigned long long)counters->bypasses[i]);
        separator = ", ";
    }
    printf("%s\n", separator[0] == ',' ? ")" : "");
}

static void print_counters(const zc_stats_counters *counters)
{
    uint64_t hits = counters->memory_hits + counters->disk_hits + counters->remote_hits;
    printf("%-19s %llu from memory, %llu from disk", "hits",
           (unsigned long long)counters->memory_hits, (unsigned long long)counters->disk_hits);
    if (counters->remote_hits > 0)
        printf(", %llu from remote storages", (unsigned long long)counters->remote_hits);
    if (hits + counters->misses > 0)
        printf(" (hit rate %.1f%%)", 100.0 * (double)hits / (double)(hits + counters->misses));
    printf("\n%-19s %llu (%llu failed to build)\n", "misses", (unsigned long long)counters->misses,
           (unsigned long long)counters->failed_builds);
    print_bypasses(counters);
    printf("%-19s %llu (%llu failed)\n", "stores", (unsigned long long)counters->stores,
           (unsigned long long)counters->store_errors);
    printf("%-19s %llu (stores and removals skipped: another process held the lock)\n",
           "lock timeouts", (unsigned long long)counters->lock_timeouts);
    printf("%-19s %llu from disk, %llu from memory\n", "evictions",
           (unsigned long long)counters->evictions, (unsigned long long)counters->memory_evictions);
    printf("%-19s %llu hits, %llu misses, %llu stores, %llu errors, %llu rejected\n", "remote",
           (unsigned long long)counters->remote_hits, (unsigned long long)counters->remote_misses,
           (unsigned long long)counters->remote_stores, (unsigned long long)counters->remote_errors,
           (unsigned long long)counters->remote_rejected);
    printf("%-19s %llu not admitted (compiled faster than NEO_CACHE_REMOTE_MIN_COMPILE_MS: "
           "kept local)\n",
           "remote admission", (unsigned long long)counters->remote_not_admitted);
    printf("%-19s %.3f s saved, %.3f s spent compiling\n", "compile time",
           (double)counters->compile_ns_saved / 1e9, (double)counters->compile_ns_spent / 1e9);
}

/* ---- JSON ---- */

static void json_counter(void *context, const char *name, uint64_t value)
{
    tool_json_u64(context, name, value);
}

static void print_json(const stats_report *report)
{
    const cache_summary *summary = &report->summary;
    tool_json json;
    tool_json_begin(&json, stdout);
    tool_json_text(&json, "dir", report->dir);
    tool_json_u64(&json, "entries", summary->entries);
    tool_json_u64(&json, "driver_entries", summary->driver_entries);
    tool_json_u64(&json, "level_zero_entries", summary->entries - summary->opencl_entries);
    tool_json_u64(&json, "opencl_entries", summary->opencl_entries);
    tool_json_u64(&json, "bytes", summary->bytes);
    tool_json_u64(&json, "bytes_uncompressed", summary->uncompressed_bytes);
    tool_json_u64(&json, "entry_bytes", summary->counted.entry_bytes);
    tool_json_u64(&json, "recipes", summary->counted.recipes);
    tool_json_u64(&json, "spirv_modules", summary->counted.blobs);
    tool_json_u64(&json, "input_bytes",
                  summary->counted.recipe_bytes + summary->counted.blob_bytes);
    tool_json_u64(&json, "counted_bytes", summary->counted.total);
    tool_json_double(&json, "compression_ratio", compression_ratio(summary));
    tool_json_u64(&json, "max_size", report->max_size);
    tool_json_double(&json, "percent_full", percent_full(report));
    if (summary->recorded_valid)
        tool_json_u64(&json, "recorded_bytes", summary->recorded_bytes);
    else
        tool_json_null(&json, "recorded_bytes");
    tool_json_bool(&json, "counters_valid", report->counters_valid);
    tool_json_open_object(&json, "counters");
    zc_stats_foreach(&report->counters, json_counter, &json);
    tool_json_close(&json);
    tool_json_end(&json);
}

/* ---- the commands ---- */

/* --scan: every entry's header read, and the accounting file rewritten. */
static zc_status gather_by_scan(const tool_context *tool, zc_disk_tier *tier,
                                cache_summary *summary)
{
    tool_entry_list list;
    zc_status status = tool_list_entries(tier, &list);
    if (status != ZC_OK)
        return status;
    summarize(&list, summary);
    tool_free_entries(&list);
    summary->recorded_valid = zc_disk_tier_recorded_size(tier, &summary->recorded_bytes) == ZC_OK;
    if (zc_disk_tier_scanned_usage(tier, &summary->counted) != ZC_OK)
        summary->counted = (zc_disk_usage){
            .entries = summary->entries, .entry_bytes = summary->bytes, .total = summary->bytes};
    zc_disk_figures figures;
    zc_status repaired = zc_disk_tier_rebuild_figures(tier, &figures);
    if (repaired != ZC_OK && repaired != ZC_ERR_DISABLED)
        tool_fail(tool, "cannot rewrite %s (%s)", ZC_ACCOUNTING_FILE_NAME,
                  zc_status_name(repaired));
    return ZC_OK;
}

/* By default: from the accounting file and the root's listing. */
static zc_status gather_accounted(zc_disk_tier *tier, cache_summary *summary)
{
    zc_disk_figures figures;
    bool rebuilt;
    zc_status status = zc_disk_tier_figures(tier, &figures, &summary->recorded_bytes,
                                            &summary->recorded_valid, &rebuilt);
    if (status != ZC_OK)
        return status;
    if (rebuilt)
        fprintf(stderr, "zecache: %s was missing or did not add up: counted by a scan\n",
                ZC_ACCOUNTING_FILE_NAME);
    summary->entries = figures.counted.entries;
    summary->bytes = figures.file_bytes;
    summary->driver_entries = figures.foreign_entries;
    summary->opencl_entries = figures.opencl_entries;
    summary->readable_bytes = figures.readable_bytes;
    summary->uncompressed_bytes = figures.uncompressed_bytes;
    summary->counted = figures.counted;
    return ZC_OK;
}

static zc_status gather(const tool_context *tool, zc_disk_tier *tier, bool scan,
                        stats_report *report)
{
    zc_status status = scan ? gather_by_scan(tool, tier, &report->summary)
                            : gather_accounted(tier, &report->summary);
    if (status != ZC_OK)
        return status;
    zc_status counters = zc_stats_read(tier, &report->counters);
    report->counters_valid = counters == ZC_OK;
    if (counters == ZC_MISS)
        tool_fail(tool, "the stats file is malformed: counters shown as zero (the next update "
                        "rewrites it)");
    else if (counters != ZC_OK)
        tool_fail(tool, "cannot read the stats file (%s)", zc_status_name(counters));
    return ZC_OK;
}

typedef struct stats_options {
    bool json, scan;
} stats_options;

static int report_stats(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                        void *context)
{
    const stats_options *options = context;
    stats_report report = {.dir = zc_disk_tier_dir(tier), .max_size = config->max_size};
    zc_status status = gather(tool, tier, options->scan, &report);
    if (status != ZC_OK)
        return tool_fail(tool, "cannot scan the cache (%s)", zc_status_name(status));
    if (options->json)
        print_json(&report);
    else {
        print_contents(&report);
        print_counters(&report.counters);
    }
    return TOOL_EXIT_OK;
}

static int run_stats(tool_context *tool, int argc, char **argv)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS,
                                            {"json", no_argument, NULL, 'j'},
                                            {"scan", no_argument, NULL, 's'},
                                            {NULL, 0, NULL, 0}};
    stats_options chosen = {false, false};
    int option;
    while ((option = tool_next_option(tool, argc, argv, options)) == 'j' || option == 's') {
        chosen.json |= option == 'j';
        chosen.scan |= option == 's';
    }
    int parsed = tool_end_options(tool, option, argc, argv, 0);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    return tool_with_tier(tool, report_stats, &chosen);
}

static int zero_stats(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                      void *context)
{
    (void)config;
    (void)context;
    zc_status status = zc_stats_zero(tier);
    if (status != ZC_OK)
        return tool_fail(tool, "cannot write the stats file (%s)", zc_status_name(status));
    printf("statistics zeroed\n");
    return TOOL_EXIT_OK;
}

static int run_zero_stats(tool_context *tool, int argc, char **argv)
{
    int parsed = tool_parse_plain(tool, argc, argv, 0);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    return tool_with_tier(tool, zero_stats, NULL);
}

const tool_command tool_cmd_stats = {
    .name = "stats",
    .synopsis = "stats [--json] [--scan]",
    .summary = "Show the cache's contents and the counters of every process that used it",
    .details = "Entries and their bytes (with their traces), the recorded inputs' bytes\n"
               "(recipes and SPIR-V, NEO_CACHE_RECORD_INPUTS), their total, which is what the\n"
               "size limit (NEO_CACHE_MAX_SIZE) applies to and config.file accounts, bytes\n"
               "uncompressed and the compression ratio, the limit and how full the cache is\n"
               "(of that total), then the persistent counters: hits from memory and from\n"
               "disk, misses, bypasses by reason, stores, evictions, lock timeouts, the remote\n"
               "storages' hits, misses, stores, errors and rejected values, modules not\n"
               "admitted to them (compiled faster than NEO_CACHE_REMOTE_MIN_COMPILE_MS) and\n"
               "compile time saved. Each process using the layer adds its counters to the\n"
               "file 'stats' in the cache directory at every store and when it exits.\n"
               "The contents come from the file zecache.accounting, which every store and\n"
               "removal keeps up to date, and one listing of the directory's root (the\n"
               "driver's own files); when it is missing or does not add up to config.file\n"
               "they are counted by a scan, which rewrites it.\n"
               "\n"
               "  --scan   count by reading every entry's header, as a scan of the whole\n"
               "           directory, and rewrite zecache.accounting from it\n"
               "  --json   one JSON object: entries, driver_entries, level_zero_entries,\n"
               "           opencl_entries, bytes (the .l0_cache and .cl_cache files),\n"
               "           bytes_uncompressed, entry_bytes (with traces), recipes,\n"
               "           spirv_modules, input_bytes, counted_bytes (the total against the\n"
               "           limit), compression_ratio, max_size, percent_full, recorded_bytes\n"
               "           (config.file), counters_valid and counters {name: value}\n",
    .run = run_stats,
};

const tool_command tool_cmd_zero_stats = {
    .name = "zero-stats",
    .synopsis = "zero-stats",
    .summary = "Set the persistent counters to zero (the entries stay)",
    .details = "",
    .run = run_zero_stats,
};
