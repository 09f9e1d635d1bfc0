/* zecache prewarm: builds every recorded input (NEO_CACHE_RECORD_INPUTS)
 * whose entry under the compiler, driver settings and device of now is
 * missing, through the real loader and driver with the layer enabled, so
 * the keys, the single flights and the stores are the application's own:
 * Level Zero modules by zecache-build, OpenCL programs by zecache-build-cl. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prewarm_collect.h"
#include "prewarm_run.h"
#include "tool.h"
#include "tool_support.h"
#include "zecache/remote_spec.h"

#define DEFAULT_JOBS 1
#define MAX_KEYS 100000

typedef struct prewarm_args {
    unsigned jobs;
    const char *from; /* an input bundle (zecache record), or NULL: the cache */
    prewarm_filter filter;
    zc_key *keys;
} prewarm_args;

/* "-j N" and "-jN" as "--jobs": the common parser knows long options. */
static void spell_jobs_long(int argc, char **argv, char *spelled)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return;
        if (strcmp(argv[i], "-j") == 0) {
            argv[i] = (char *)"--jobs";
        } else if (strncmp(argv[i], "-j", 2) == 0) {
            snprintf(spelled, 64, "--jobs=%s", argv[i] + 2);
            argv[i] = spelled;
        }
    }
}

static bool read_keys(const char *path, prewarm_args *args)
{
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return false;
    char line[256];
    args->keys = calloc(MAX_KEYS, sizeof *args->keys);
    size_t count = 0;
    bool ok = args->keys != NULL;
    while (ok && fgets(line, sizeof line, file) != NULL) {
        line[strcspn(line, " \t\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        ok = count < MAX_KEYS && zc_key_from_hex(line, &args->keys[count++]);
    }
    fclose(file);
    args->filter.keys = args->keys;
    args->filter.key_count = count;
    return ok;
}

static int parse_args(tool_context *tool, int argc, char **argv, prewarm_args *args)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS,
                                            {"jobs", required_argument, NULL, 'j'},
                                            {"from", required_argument, NULL, 'f'},
                                            {"used-within", required_argument, NULL, 'u'},
                                            {"device", required_argument, NULL, 'd'},
                                            {"keys", required_argument, NULL, 'k'},
                                            {NULL, 0, NULL, 0}};
    uint64_t number;
    int64_t seconds;
    int option;
    while ((option = tool_next_option(tool, argc, argv, options)) >= 0) {
        if (option == 'j' && (!zc_config_parse_u64(optarg, &number) || number < 1 || number > 64))
            return tool_usage_error(tool, "bad number of jobs '%s' (1 to 64)", optarg);
        if (option == 'j')
            args->jobs = (unsigned)number;
        if (option == 'f')
            args->from = optarg;
        if (option == 'u' && !tool_parse_duration(optarg, &seconds))
            return tool_usage_error(tool, "bad duration '%s' (with s, m, h or d: 7d)", optarg);
        if (option == 'u')
            args->filter.used_since_unix = (int64_t)time(NULL) - seconds;
        if (option == 'd')
            args->filter.device = optarg;
        if (option == 'k' && !read_keys(optarg, args))
            return tool_usage_error(tool, "cannot read keys from '%s' (64 hex digits a line)",
                                    optarg);
    }
    return tool_end_options(tool, option, argc, argv, 0);
}

static void print_summary(const prewarm_list *list, const prewarm_result *result, unsigned jobs)
{
    printf("prewarm: %zu recorded modules: %llu built, %llu already present, %llu failed, "
           "in %.1f s (%u jobs)\n",
           list->count, (unsigned long long)result->built, (unsigned long long)result->present,
           (unsigned long long)(result->failed + list->problem_count), result->seconds, jobs);
    if (list->without_inputs > 0)
        printf("  %zu entries have no recorded inputs (stored with NEO_CACHE_RECORD_INPUTS=0, or "
               "before it)\n",
               list->without_inputs);
    for (size_t i = 0; i < list->problem_count; i++)
        printf("  failed %s (damaged recorded inputs: not built)\n", list->problems[i]);
    for (uint64_t i = 0; i < result->failed; i++)
        printf("  failed %s\n", result->failures[i]);
    if (result->interrupted)
        printf("  interrupted: what was built is stored; run prewarm again to build the rest\n");
}

/* The file:// storages of NEO_CACHE_REMOTE keep recorded inputs beside
 * their entries (disk_recipes.h): on a cluster sharing one, any node's
 * prewarm builds what every node recorded. */
static bool collect_file_storages(const tool_context *tool, const zc_config *config,
                                  const prewarm_filter *filter, prewarm_list *list, char *reason,
                                  size_t reason_size)
{
    zc_remote_spec *specs = NULL;
    size_t count = 0;
    if (config->remote[0] == '\0' ||
        zc_remote_specs_parse(config->remote, &specs, &count, NULL, NULL) != ZC_OK)
        return true; /* none, or the layer ignores them too */
    bool ok = true;
    for (size_t i = 0; ok && i < count; i++) {
        if (specs[i].kind != ZC_REMOTE_FILE)
            continue;
        zc_config shared = *config;
        snprintf(shared.dir, sizeof shared.dir, "%s", specs[i].servers[0].path);
        shared.allow_shared = true;
        zc_disk_tier *tier = NULL;
        if (tool_open_tier(tool, &shared, &tier) != ZC_OK)
            continue; /* said why; the others still count */
        ok = prewarm_collect_cache(tier, filter, list, reason, reason_size);
        zc_disk_tier_close(tier);
    }
    zc_remote_specs_free(specs, count);
    return ok;
}
static bool collect(tool_context *tool, const prewarm_args *args, prewarm_list *list)
{
    zc_config config;
    zc_disk_tier *tier = NULL;
    char reason[PATH_MAX + 512];
    if (args->from != NULL) {
        zc_config_from_env(&config);
        bool read =
            prewarm_collect_bundle(args->from, &config, &args->filter, list, reason, sizeof reason);
        if (!read)
            tool_fail(tool, "%s", reason);
        return read;
    }
    if (tool_open_configured_tier(tool, &config, &tier) != ZC_OK)
        return false;
    bool ok = prewarm_collect_cache(tier, &args->filter, list, reason, sizeof reason);
    zc_disk_tier_close(tier);
    if (ok)
        ok = collect_file_storages(tool, &config, &args->filter, list, reason, sizeof reason);
    if (ok)
        ok = prewarm_collect_remote(&config, &args->filter, list, reason, sizeof reason);
    if (!ok)
        tool_fail(tool, "%s", reason);
    return ok;
}

/* Adds part's outcome to total (taking its failures); false when out of
 * memory. */
static bool add_result(prewarm_result *total, prewarm_result *part)
{
    char **grown = realloc(total->failures, (total->failed + part->failed + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    total->failures = grown;
    for (uint64_t i = 0; i < part->failed; i++)
        total->failures[total->failed + i] = part->failures[i];
    free(part->failures);
    total->built += part->built;
    total->present += part->present;
    total->failed += part->failed;
    total->interrupted = total->interrupted || part->interrupted;
    total->seconds += part->seconds;
    memset(part, 0, sizeof *part);
    return true;
}

/* Whether two items go to the same helpers: one API and, for OpenCL, one
 * set of recorded build variables (PoCL reads them when it starts). */
static bool same_group(const prewarm_item *a, const prewarm_item *b)
{
    return a->opencl == b->opencl &&
           (!a->opencl || strcmp(a->build_variables, b->build_variables) == 0);
}

/* The items of list->items[first]'s group (marked done), by its API's
 * helper beside the tool: zecache-build or zecache-build-cl. */
static bool run_group(const prewarm_list *list, size_t first, bool *done, unsigned jobs,
                      prewarm_result *total, char *reason, size_t reason_size)
{
    const char *helper = list->items[first].opencl ? "zecache-build-cl" : "zecache-build";
    prewarm_list view = {.items = calloc(list->count + 1, sizeof *view.items)};
    char path[PATH_MAX];
    prewarm_result part = {0};
    for (size_t i = first; view.items != NULL && i < list->count; i++)
        if (!done[i] && same_group(&list->items[first], &list->items[i])) {
            done[i] = true;
            view.items[view.count++] = list->items[i]; /* shared, not copied */
        }
    bool ran = view.items != NULL;
    if (!ran)
        snprintf(reason, reason_size, "out of memory");
    else if (!tool_sibling_path(helper, path))
        ran = false, snprintf(reason, reason_size, "cannot find %s beside this tool", helper);
    else if (!total->interrupted)
        ran =
            prewarm_run(&view, jobs, path, &part, reason, reason_size) && add_result(total, &part);
    prewarm_result_free(&part);
    free(view.items);
    return ran;
}

/* Every item, group after group. */
static bool run_groups(const prewarm_list *list, unsigned jobs, prewarm_result *result,
                       char *reason, size_t reason_size)
{
    bool *done = calloc(list->count + 1, sizeof *done);
    bool ran = done != NULL;
    if (!ran)
        snprintf(reason, reason_size, "out of memory");
    for (size_t i = 0; ran && i < list->count; i++)
        if (!done[i])
            ran = run_group(list, i, done, jobs, result, reason, reason_size);
    free(done);
    return ran;
}

static int prewarm(tool_context *tool, const prewarm_args *args)
{
    char reason[PATH_MAX + 64];
    prewarm_list list = {0};
    prewarm_result result = {0};
    int status = tool_enable_layer(tool);
    if (status != TOOL_EXIT_OK)
        return status;
    if (!collect(tool, args, &list)) {
        prewarm_list_free(&list);
        return TOOL_EXIT_FAILURE;
    }
    bool ran = run_groups(&list, args->jobs, &result, reason, sizeof reason);
    if (!ran)
        status = tool_fail(tool, "%s", reason);
    else
        print_summary(&list, &result, args->jobs);
    if (ran && (result.failed > 0 || list.problem_count > 0 || result.interrupted))
        status = TOOL_EXIT_FAILURE;
    prewarm_result_free(&result);
    prewarm_list_free(&list);
    return status;
}

static int run_prewarm(tool_context *tool, int argc, char **argv)
{
    prewarm_args args = {.jobs = DEFAULT_JOBS};
    char spelled[64];
    spell_jobs_long(argc, argv, spelled);
    int parsed = parse_args(tool, argc, argv, &args);
    int status = parsed == TOOL_OPTIONS_DONE ? prewarm(tool, &args) : parsed;
    free(args.keys);
    return status;
}

const tool_command tool_cmd_prewarm = {
    .name = "prewarm",
    .synopsis = "prewarm [-j N] [--from FILE] [--used-within DURATION] [--device TEXT] "
                "[--keys FILE]",
    .summary = "Build every recorded module missing under the compiler installed now",
    .details = "After a driver or compiler upgrade, builds each module whose inputs the cache\n"
               "recorded (NEO_CACHE_RECORD_INPUTS=1, the default) through the real loader and\n"
               "driver with the layer enabled, so the next start of every program is warm.\n"
               "Modules already cached under the compiler of now are skipped, so a second run\n"
               "(after Ctrl-C, or on another node sharing the remote storages) builds only the\n"
               "rest. Failed builds are never stored.\n"
               "\n"
               "  -j, --jobs N            builds at once (default 1)\n"
               "  --from FILE             the inputs of an input bundle (zecache record) instead\n"
               "                          of the cache's own; a damaged bundle, or one whose\n"
               "                          signature does not match NEO_CACHE_REMOTE_SECRET_FILE,\n"
               "                          is refused whole\n"
               "  --used-within DURATION  only entries used in the last DURATION (7d)\n"
               "  --device TEXT           only modules recorded for a device whose name has TEXT\n"
               "  --keys FILE             only the entries whose keys FILE lists (one a line)\n"
               "\n"
               "A progress line with an estimate on a terminal, one line per module otherwise;\n"
               "then a summary. Exit status: 0 all built or present, 1 some failed or damaged\n"
               "inputs were found, or interrupted.\n",
    .run = run_prewarm,
};
