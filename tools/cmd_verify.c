/* zecache verify [--fix]: every entry checked as a load checks it, and
 * config.file checked against the real total. */
#include <stdio.h>
#include <string.h> /* memcmp */

#include "tool.h"
#include "tool_support.h"
#include "zecache/disk_figures.h"
#include "zecache/disk_maintenance.h"

typedef struct verify_tally {
    uint64_t checked, bad, removed, driver_entries;
    bool failed; /* something could not be checked or fixed */
} verify_tally;

static void verify_one(const tool_context *tool, zc_disk_tier *tier, const tool_entry *entry,
                       bool fix, verify_tally *tally)
{
    if (!entry->is_zecache) {
        tally->driver_entries++; /* no header to check them by */
        return;
    }
    tally->checked++;
    char reason[256];
    if (zc_disk_tier_verify_entry(tier, entry->path, NULL, reason, sizeof reason) == ZC_OK)
        return;
    tally->bad++;
    char path[4 * PATH_MAX];
    tool_escape_line(entry->path, path, sizeof path);
    printf("bad      %s: %s\n", path, reason);
    if (!fix)
        return;
    /* Checked again under the lock: a good entry may have replaced it. */
    bool removed = false;
    zc_status status = zc_disk_tier_remove_if_bad(tier, entry->path, &removed);
    if (status == ZC_OK && !removed) {
        tally->bad--;
        printf("replaced %s: the entry there now verifies, kept\n", path);
    } else if (status == ZC_OK || status == ZC_MISS) { /* ZC_MISS: someone else removed it */
        tally->removed++;
        printf("removed  %s\n", path);
    } else {
        tally->failed = true;
        tool_fail(tool, "cannot remove %s (%s)", path, zc_status_name(status));
    }
}

/* True when config.file agrees with the entries (an empty or missing one
 * agrees with an empty cache: nothing was stored yet). */
static bool check_accounting(const tool_context *tool, zc_disk_tier *tier, bool fix,
                             verify_tally *tally)
{
    uint64_t scanned, recorded;
    if (zc_disk_tier_scanned_size(tier, &scanned, NULL) != ZC_OK) {
        tally->failed = true;
        tool_fail(tool, "cannot scan the cache");
        return false;
    }
    zc_status status = zc_disk_tier_recorded_size(tier, &recorded);
    if (status == ZC_OK ? recorded == scanned : scanned == 0)
        return true;
    if (status == ZC_OK)
        printf("config.file records %llu bytes but the entries total %llu bytes\n",
               (unsigned long long)recorded, (unsigned long long)scanned);
    else
        printf("config.file holds no valid total; the entries total %llu bytes\n",
               (unsigned long long)scanned);
    if (fix) {
        status = zc_disk_tier_repair_accounting(tier, &recorded);
        if (status == ZC_OK)
            printf("config.file repaired: %llu bytes\n", (unsigned long long)recorded);
        else
            tally->failed = true;
    }
    return false;
}

/* zecache.accounting, when it adds up to config.file, against a scan. One
 * that does not add up (or is missing or damaged) is no error: zecache stats
 * sees that, and rebuilds it; so does --fix's repair of config.file. */
static bool check_figures(const tool_context *tool, zc_disk_tier *tier, bool fix,
                          verify_tally *tally)
{
    zc_disk_figures accounted, scanned;
    bool usable = zc_disk_tier_accounted_figures(tier, &accounted, NULL, 0) == ZC_OK;
    if (zc_disk_tier_scanned_figures(tier, &scanned) != ZC_OK) {
        tally->failed = true;
        tool_fail(tool, "cannot scan the cache");
        return false;
    }
    if (!usable)
        return true;
    bool agrees = memcmp(&accounted, &scanned, sizeof scanned) == 0;
    if (!agrees)
        printf("%s counts %llu entries, %llu bytes, %llu uncompressed; a scan %llu, %llu, "
               "%llu\n",
               ZC_ACCOUNTING_FILE_NAME, (unsigned long long)accounted.counted.entries,
               (unsigned long long)accounted.counted.total,
               (unsigned long long)accounted.uncompressed_bytes,
               (unsigned long long)scanned.counted.entries,
               (unsigned long long)scanned.counted.total,
               (unsigned long long)scanned.uncompressed_bytes);
    if (fix && !agrees) {
        if (zc_disk_tier_rebuild_figures(tier, &scanned) == ZC_OK)
            printf("%s rewritten from a scan\n", ZC_ACCOUNTING_FILE_NAME);
        else
            tally->failed = true;
    }
    return agrees || !usable;
}

static int verify_cache(tool_context *tool, const zc_config *config, zc_disk_tier *tier, void *args)
{
    (void)config;
    bool fix = *(const bool *)args;
    tool_entry_list list;
    zc_status status = tool_list_entries(tier, &list);
    if (status != ZC_OK)
        return tool_fail(tool, "cannot scan the cache (%s)", zc_status_name(status));
    verify_tally tally = {0};
    for (size_t i = 0; i < list.count; i++)
        verify_one(tool, tier, &list.items[i], fix, &tally);
    tool_free_entries(&list);
    bool figures_ok = check_figures(tool, tier, fix, &tally);
    bool accounting_ok = check_accounting(tool, tier, fix, &tally) && figures_ok;
    printf("checked %llu entries: %llu bad", (unsigned long long)tally.checked,
           (unsigned long long)tally.bad);
    if (fix)
        printf(", %llu removed", (unsigned long long)tally.removed);
    if (tally.driver_entries > 0)
        printf("; %llu of the driver's own entries not checked",
               (unsigned long long)tally.driver_entries);
    printf("\n");
    bool clean = tally.bad == 0 && accounting_ok && !tally.failed;
    return clean ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

/* A pack is read-only: its bad entries are listed, never removed. */
int tool_verify_pack(tool_context *tool, const char *file)
{
    zc_pack *pack = NULL;
    tool_entry_list list;
    int exit_status = tool_read_pack(tool, file, &pack, &list);
    if (exit_status != TOOL_EXIT_OK)
        return exit_status;
    uint64_t bad = 0;
    for (size_t i = 0; i < list.count; i++) {
        char reason[256] = "";
        if (tool_check_pack_entry(pack, &list.items[i], NULL, reason, sizeof reason) == ZC_OK)
            continue;
        bad++;
        printf("bad      %s: %s\n", list.items[i].path, reason);
    }
    printf("checked %zu entries: %llu bad\n", list.count, (unsigned long long)bad);
    tool_free_entries(&list);
    zc_pack_close(pack);
    return bad == 0 ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

static int run_verify(tool_context *tool, int argc, char **argv)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS,
                                            {"fix", no_argument, NULL, 'f'},
                                            {"pack", required_argument, NULL, 'p'},
                                            {NULL, 0, NULL, 0}};
    bool fix = false;
    const char *pack = NULL;
    int option;
    while ((option = tool_next_option(tool, argc, argv, options)) == 'f' || option == 'p') {
        fix = fix || option == 'f';
        pack = option == 'p' ? optarg : pack;
    }
    int parsed = tool_end_options(tool, option, argc, argv, 0);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    if (pack != NULL && fix)
        return tool_usage_error(tool, "--fix and --pack: a pack is read-only (make it again)");
    if (pack != NULL)
        return tool_verify_pack(tool, pack);
    return tool_with_tier(tool, verify_cache, &fix);
}

const tool_command tool_cmd_verify = {
    .name = "verify",
    .synopsis = "verify [--fix | --pack FILE]",
    .summary = "Check every entry completely, as a load would",
    .details = "Reads every entry and checks its header, key, sizes and zstd checksum; lists\n"
               "each bad one with the reason. Also reports when config.file (the total size\n"
               "the layer and the driver keep) disagrees with the entries actually there,\n"
               "and when zecache.accounting (the totals by kind zecache stats shows) does.\n"
               "The driver's own entries have no header and are only counted.\n"
               "\n"
               "  --fix        remove the bad entries and rewrite config.file with the real\n"
               "               total, and zecache.accounting from a scan\n"
               "  --pack FILE  check the pack FILE (zecache pack) and every entry in it instead,\n"
               "               as a process serving it would; nothing is changed\n"
               "\n"
               "Exit status: 0 everything is fine, 1 problems were found (also when --fix\n"
               "repaired them) or something could not be checked.\n",
    .run = run_verify,
};
