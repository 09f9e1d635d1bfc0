/* zecache ls: one line (or JSON object) per entry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "tool_support.h"

typedef enum ls_order {
    LS_BY_PATH,
    LS_BY_LAST_USE, /* least recently used first: the order eviction takes */
    LS_BY_SIZE,     /* largest first */
} ls_order;

enum { KEY_PREFIX_DIGITS = 12 };

static int compare_paths(const tool_entry *a, const tool_entry *b)
{
    return strcmp(a->path, b->path);
}

static int compare_last_use(const void *left, const void *right)
{
    const tool_entry *a = left, *b = right;
    if (a->last_use_sec != b->last_use_sec)
        return a->last_use_sec < b->last_use_sec ? -1 : 1;
    if (a->last_use_nsec != b->last_use_nsec)
        return a->last_use_nsec < b->last_use_nsec ? -1 : 1;
    return compare_paths(a, b);
}

static int compare_size(const void *left, const void *right)
{
    const tool_entry *a = left, *b = right;
    if (a->file_size != b->file_size)
        return a->file_size > b->file_size ? -1 : 1;
    return compare_paths(a, b);
}

static void sort_entries(tool_entry_list *list, ls_order order)
{
    if (order == LS_BY_LAST_USE && list->count > 0)
        qsort(list->items, list->count, sizeof list->items[0], compare_last_use);
    else if (order == LS_BY_SIZE && list->count > 0)
        qsort(list->items, list->count, sizeof list->items[0], compare_size);
    /* LS_BY_PATH: tool_list_entries' order */
}

/* ---- text ---- */

/* Names and header strings come from files anyone with write access to the
 * directory may have planted: escaped (tool_escape_line). */
static void print_entry_line(const tool_entry *entry)
{
    const char *device = entry->is_zecache ? "(bad header)" : "(driver's own entry)";
    const char *driver = "-";
    char compressed[TOOL_SIZE_TEXT], uncompressed[TOOL_SIZE_TEXT] = "-", last_use[TOOL_TIME_TEXT];
    /* Sized to the columns, so that a cut never falls inside an escape. */
    char name[12 + 1], device_text[28 + 1], driver_text[14 + 1];
    tool_format_size(entry->file_size, compressed);
    tool_format_local_time(entry->last_use_sec, last_use);
    if (entry->header_ok) {
        device = tool_escape_line(entry->header.meta.device_name, device_text, sizeof device_text);
        driver =
            tool_escape_line(entry->header.meta.driver_version, driver_text, sizeof driver_text);
        tool_format_size(entry->header.binary_size + entry->header.log_size, uncompressed);
    }
    printf("%-12.12s  %-28.28s  %-14.14s  %10s  %12s  %-19s  %s\n",
           tool_escape_line(tool_entry_name(entry), name, sizeof name), device, driver, compressed,
           uncompressed, last_use, tool_entry_api_short(entry));
}

static void print_text(const tool_entry_list *list)
{
    printf("%-12s  %-28s  %-14s  %10s  %12s  %-19s  %s\n", "KEY", "DEVICE", "DRIVER", "COMPRESSED",
           "UNCOMPRESSED", "LAST USE", "API");
    for (size_t i = 0; i < list->count; i++)
        print_entry_line(&list->items[i]);
}

/* ---- JSON ---- */

static void print_entry_json(tool_json *json, const tool_entry *entry)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&entry->key, hex);
    tool_json_open_object(json, NULL);
    tool_json_text(json, "key", entry->is_zecache ? hex : NULL);
    tool_json_text(json, "path", entry->path);
    tool_json_text(json, "api", zc_entry_kind_name(entry->api));
    tool_json_bool(json, "driver_entry", !entry->is_zecache);
    tool_json_bool(json, "header_ok", entry->header_ok);
    tool_json_text(json, "problem",
                   entry->is_zecache && !entry->header_ok ? entry->header_problem : NULL);
    tool_json_u64(json, "compressed_bytes", entry->file_size);
    tool_json_i64(json, "last_use_unix", entry->last_use_sec);
    if (entry->header_ok) {
        const zc_entry_header *header = &entry->header;
        tool_json_u64(json, "uncompressed_bytes", header->binary_size + header->log_size);
        tool_json_u64(json, "binary_bytes", header->binary_size);
        tool_json_u64(json, "log_bytes", header->log_size);
        tool_json_text(json, "device", header->meta.device_name);
        tool_json_text(json, "driver_version", header->meta.driver_version);
        tool_json_u64(json, "compile_ns", header->meta.compile_ns);
        tool_json_u64(json, "created_unix", header->meta.created_unix);
    }
    tool_json_close(json);
}

/* place_kind: "dir" or "pack". */
static void print_json(const char *place_kind, const char *place, const tool_entry_list *list)
{
    tool_json json;
    tool_json_begin(&json, stdout);
    tool_json_text(&json, place_kind, place);
    tool_json_open_array(&json, "entries");
    for (size_t i = 0; i < list->count; i++)
        print_entry_json(&json, &list->items[i]);
    tool_json_close(&json);
    tool_json_end(&json);
}

/* ---- the command ---- */

typedef struct ls_args {
    bool json;
    ls_order order;
    const char *pack; /* NULL: the cache directory */
} ls_args;

static int parse_ls_args(tool_context *tool, int argc, char **argv, ls_args *args)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS,
                                            {"json", no_argument, NULL, 'j'},
                                            {"sort", required_argument, NULL, 's'},
                                            {"pack", required_argument, NULL, 'p'},
                                            {NULL, 0, NULL, 0}};
    int option;
    while ((option = tool_next_option(tool, argc, argv, options)) >= 0) {
        if (option == 'j')
            args->json = true;
        else if (option == 'p')
            args->pack = optarg;
        else if (strcmp(optarg, "last-use") == 0)
            args->order = LS_BY_LAST_USE;
        else if (strcmp(optarg, "size") == 0)
            args->order = LS_BY_SIZE;
        else
            return tool_usage_error(tool, "unknown sort order '%s' (last-use or size)", optarg);
    }
    return tool_end_options(tool, option, argc, argv, 0);
}

/* Prints the list and frees it. */
static void print_list(const ls_args *args, const char *place_kind, const char *place,
                       tool_entry_list *list)
{
    sort_entries(list, args->order);
    if (args->json)
        print_json(place_kind, place, list);
    else
        print_text(list);
    tool_free_entries(list);
}

static int list_entries(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                        void *context)
{
    (void)config;
    const ls_args *args = context;
    tool_entry_list list;
    zc_status status = tool_list_entries(tier, &list);
    if (status != ZC_OK)
        return tool_fail(tool, "cannot scan the cache (%s)", zc_status_name(status));
    print_list(args, "dir", zc_disk_tier_dir(tier), &list);
    return TOOL_EXIT_OK;
}

static int list_pack(tool_context *tool, const ls_args *args)
{
    zc_pack *pack = NULL;
    tool_entry_list list;
    int exit_status = tool_read_pack(tool, args->pack, &pack, &list);
    if (exit_status != TOOL_EXIT_OK)
        return exit_status;
    zc_pack_close(pack);
    print_list(args, "pack", args->pack, &list);
    return TOOL_EXIT_OK;
}

int tool_ls_pack(tool_context *tool, const char *file)
{
    ls_args args = {.json = false, .order = LS_BY_PATH, .pack = file};
    return list_pack(tool, &args);
}

static int run_ls(tool_context *tool, int argc, char **argv)
{
    ls_args args = {.json = false, .order = LS_BY_PATH, .pack = NULL};
    int parsed = parse_ls_args(tool, argc, argv, &args);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    if (args.pack != NULL)
        return list_pack(tool, &args);
    return tool_with_tier(tool, list_entries, &args);
}

const tool_command tool_cmd_ls = {
    .name = "ls",
    .synopsis = "ls [--json] [--sort=last-use|size] [--pack FILE]",
    .summary = "List the entries",
    .details = "One line per entry: the key's first 12 hex digits, device, driver version,\n"
               "size on disk (compressed) and uncompressed, and last use (local time; a hit\n"
               "refreshes it). Entries of Intel's driver in the same directory are listed by\n"
               "their file name as \"(driver's own entry)\": they have no zecache header.\n"
               "\n"
               "  --json             {\"dir\": ..., \"entries\": [{key, path, driver_entry,\n"
               "                     header_ok, problem, compressed_bytes, last_use_unix,\n"
               "                     uncompressed_bytes, binary_bytes, log_bytes, device,\n"
               "                     driver_version, compile_ns, created_unix}, ...]}\n"
               "  --sort=last-use    least recently used first (the order trim evicts in)\n"
               "  --sort=size        largest first\n"
               "  --pack FILE        the entries of the pack FILE instead (zecache pack), opened\n"
               "                     as a process serving it opens it; JSON names it as \"pack\";\n"
               "                     last use is when FILE was made\n"
               "Without --sort, entries come in key order.\n",
    .run = run_ls,
};
