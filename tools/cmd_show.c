/* zecache show KEY-PREFIX: everything known about one entry. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"
#include "zecache/build_request.h"
#include "zecache/disk_recipes.h"
#include "zecache/recipe.h"
#include "tool_support.h"
#include "zecache/disk_maintenance.h"

/* A trace is a few KiB; anything far larger is not one of ours. */
enum { TRACE_MAX_SIZE = 16 << 20 };

static bool read_exact(int fd, char *data, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t got = read(fd, data + done, size - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return false;
        done += (size_t)got;
    }
    return true;
}

/* Reads a whole regular file of at most limit bytes, NUL-terminated. */
static bool read_whole_file(const char *path, uint64_t limit, char **data, size_t *size)
{
    *data = NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= limit;
    if (ok) {
        *size = (size_t)st.st_size;
        *data = malloc(*size + 1);
        ok = *data != NULL && read_exact(fd, *data, *size);
    }
    close(fd);
    if (!ok) {
        free(*data);
        *data = NULL;
        return false;
    }
    (*data)[*size] = '\0';
    return true;
}

static void print_header_fields(const tool_entry *entry)
{
    const zc_entry_header *header = &entry->header;
    char hex[ZC_KEY_HEX_SIZE], created[TOOL_TIME_TEXT];
    zc_key_to_hex(&header->key, hex);
    tool_format_local_time((int64_t)header->meta.created_unix, created);
    uint64_t uncompressed = header->binary_size + header->log_size;
    printf("%-16s %s\n", "key", hex);
    printf("%-16s %u\n", "format version", header->format_version);
    char text[4 * sizeof header->meta.device_name];
    printf("%-16s %s\n", "device", tool_escape_line(header->meta.device_name, text, sizeof text));
    printf("%-16s %s\n", "driver version",
           tool_escape_line(header->meta.driver_version, text, sizeof text));
    printf("%-16s %llu bytes\n", "binary", (unsigned long long)header->binary_size);
    printf("%-16s %llu bytes\n", "build log", (unsigned long long)header->log_size);
    printf("%-16s %llu bytes", "compressed", (unsigned long long)header->compressed_size);
    if (header->compressed_size > 0)
        printf(" (ratio %.2fx)", (double)uncompressed / (double)header->compressed_size);
    printf("\n%-16s %.3f ms\n", "compile time", (double)header->meta.compile_ns / 1e6);
    printf("%-16s %s (%llu)\n", "created", created, (unsigned long long)header->meta.created_unix);
}

static void print_file_fields(const char *dir, const tool_entry *entry)
{
    char size[TOOL_SIZE_TEXT], last_use[TOOL_TIME_TEXT], text[4 * PATH_MAX];
    tool_format_size(entry->file_size, size);
    tool_format_local_time(entry->last_use_sec, last_use);
    printf("%-16s %s\n", "name", tool_escape_line(tool_entry_name(entry), text, sizeof text));
    printf("%-16s %s/", "path", dir);
    printf("%s\n", tool_escape_line(entry->path, text, sizeof text));
    printf("%-16s %s\n", "kind",
           entry->is_zecache ? "zecache entry" : "the driver's own entry (no zecache header)");
    printf("%-16s %s\n", "api", entry->api == ZC_ENTRY_OPENCL ? "OpenCL" : "Level Zero");
    printf("%-16s %s (%llu bytes)\n", "file size", size, (unsigned long long)entry->file_size);
    printf("%-16s %s (%lld)\n", "last use", last_use, (long long)entry->last_use_sec);
}

static void print_log_of(const zc_artifact *artifact)
{
    size_t log_size;
    const char *log = zc_artifact_build_log(artifact, &log_size);
    if (log != NULL && log_size > 0) {
        printf("---- build log ----\n");
        tool_print_text(stdout, log, log_size, true);
        printf("%s", log[log_size - 1] != '\n' ? "\n" : "");
    }
}

/* The build log needs the payload: decoded (and so verified) once more. */
static void print_build_log(const char *dir, const tool_entry *entry)
{
    char path[PATH_MAX], *data;
    size_t size;
    snprintf(path, sizeof path, "%s/%s", dir, entry->path);
    zc_artifact *artifact = NULL;
    if (!read_whole_file(path, entry->file_size, &data, &size))
        return;
    if (zc_entry_decode(data, size, &entry->key, 0, &artifact, NULL, 0) == ZC_OK)
        print_log_of(artifact);
    zc_artifact_unref(artifact);
    free(data);
}

static void print_trace(const char *dir, const tool_entry *entry)
{
    char path[PATH_MAX], *data;
    size_t size;
    int stem = (int)(strlen(entry->path) - strlen(ZC_ENTRY_SUFFIX)); /* either API's */
    snprintf(path, sizeof path, "%s/%.*s%s", dir, stem, entry->path, ZC_TRACE_SUFFIX);
    if (!read_whole_file(path, TRACE_MAX_SIZE, &data, &size))
        return;
    printf("---- trace (%s) ----\n", path);
    tool_print_text(stdout, data, size, true);
    printf("%s", size > 0 && data[size - 1] != '\n' ? "\n" : "");
    free(data);
}

/* "" when every SPIR-V the recipe names is there and verifies, else why. */
static void check_inputs(zc_disk_tier *tier, const zc_recipe *recipe, char *problem, size_t size)
{
    problem[0] = '\0';
    for (uint32_t i = 0; i < recipe->input_count && problem[0] == '\0'; i++) {
        uint8_t *blob = NULL, *spirv = NULL;
        size_t blob_size = 0, spirv_size = 0;
        char why[200] = "the file is missing";
        if (zc_disk_tier_read_blob(tier, recipe->inputs[i].spirv_sha256, &blob, &blob_size) !=
                ZC_OK ||
            zc_spirv_blob_decode(blob, blob_size, recipe->inputs[i].spirv_sha256, &spirv,
                                 &spirv_size, why, sizeof why) != ZC_OK)
            snprintf(problem, size, "SPIR-V input %u: %s", i, why);
        free(blob);
        free(spirv);
    }
}

/* Whether `zecache prewarm` can build this entry again. */
static void print_recorded_inputs(zc_disk_tier *tier, const tool_entry *entry)
{
    uint8_t *bytes = NULL;
    size_t size = 0;
    zc_recipe recipe;
    char reason[256] = "", text[512];
    if (zc_disk_tier_read_recipe(tier, &entry->key, &bytes, &size) != ZC_OK) {
        printf("%-16s none (prewarm cannot rebuild it)\n", "recorded inputs");
        return;
    }
    zc_status status = zc_recipe_decode(bytes, size, &entry->key, &recipe, reason, sizeof reason);
    free(bytes);
    if (status == ZC_OK)
        check_inputs(tier, &recipe, reason, sizeof reason);
    if (status != ZC_OK || reason[0] != '\0') {
        printf("%-16s DAMAGED: %s\n", "recorded inputs",
               tool_escape_line(reason, text, sizeof text));
    } else {
        uint64_t spirv_bytes = 0;
        for (uint32_t i = 0; i < recipe.input_count; i++)
            spirv_bytes += recipe.inputs[i].spirv_size;
        const char *kind = recipe.opencl == NULL                     ? "SPIR-V"
                           : recipe.format == ZC_OPENCL_BUILD_SOURCE ? "OpenCL C"
                                                                     : "OpenCL IL";
        printf("%-16s yes: %u %s input%s (%llu bytes)%s, for %s\n", "recorded inputs",
               recipe.input_count, kind, recipe.input_count == 1 ? "" : "s",
               (unsigned long long)spirv_bytes, recipe.program ? " as a program" : "",
               tool_escape_line(recipe.device_name, text, sizeof text));
    }
    if (status == ZC_OK)
        zc_recipe_free(&recipe);
}

static void print_verification(bool verified, const char *reason)
{
    printf("%-16s %s%s\n", "verification", verified ? "ok" : "FAILED: ", verified ? "" : reason);
}

static void show_entry(void *context, const tool_entry *entry)
{
    zc_disk_tier *tier = context;
    const char *dir = zc_disk_tier_dir(tier);
    print_file_fields(dir, entry);
    if (!entry->is_zecache)
        return;
    if (entry->header_ok)
        print_header_fields(entry);
    else
        printf("%-16s %s\n", "header", entry->header_problem);
    char reason[256];
    bool verified =
        zc_disk_tier_verify_entry(tier, entry->path, NULL, reason, sizeof reason) == ZC_OK;
    print_verification(verified, reason);
    print_recorded_inputs(tier, entry);
    if (verified)
        print_build_log(dir, entry);
    print_trace(dir, entry);
}

typedef void (*show_fn)(void *context, const tool_entry *entry);

/* Exit status: 0 shown, 1 no match, 2 ambiguous (candidates listed). Frees
 * the list. */
static int show_matching(tool_context *tool, tool_entry_list list, const char *prefix, show_fn show,
                         void *context)
{
    size_t matches = 0, match = 0;
    char text[4 * PATH_MAX];
    for (size_t i = 0; i < list.count; i++)
        if (strncasecmp(tool_entry_name(&list.items[i]), prefix, strlen(prefix)) == 0)
            match = i, matches++;
    int exit_status = TOOL_EXIT_OK;
    if (matches == 0) {
        exit_status = tool_fail(tool, "no entry starts with '%s'", prefix);
    } else if (matches > 1) {
        tool_fail(tool, "'%s' is ambiguous: %zu entries start with it:", prefix, matches);
        for (size_t i = 0; i < list.count; i++)
            if (strncasecmp(tool_entry_name(&list.items[i]), prefix, strlen(prefix)) == 0)
                fprintf(stderr, "  %s\n", tool_escape_line(list.items[i].path, text, sizeof text));
        exit_status = TOOL_EXIT_USAGE;
    } else {
        show(context, &list.items[match]);
    }
    tool_free_entries(&list);
    return exit_status;
}

static int show_in_directory(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                             void *args)
{
    (void)config;
    tool_entry_list list;
    zc_status status = tool_list_entries(tier, &list);
    if (status != ZC_OK)
        return tool_fail(tool, "cannot scan the cache (%s)", zc_status_name(status));
    return show_matching(tool, list, args, show_entry, tier);
}

/* ---- an entry of a pack ---- */

typedef struct pack_place {
    const char *file;
    const zc_pack *pack;
} pack_place;

static void show_pack_entry(void *context, const tool_entry *entry)
{
    const pack_place *place = context;
    char size[TOOL_SIZE_TEXT], made[TOOL_TIME_TEXT], text[4 * PATH_MAX];
    tool_format_size(entry->file_size, size);
    tool_format_local_time(entry->last_use_sec, made);
    printf("%-16s %s\n", "name", entry->path);
    printf("%-16s %s\n", "pack", tool_escape_line(place->file, text, sizeof text));
    printf("%-16s %s\n", "api", entry->api == ZC_ENTRY_OPENCL ? "OpenCL" : "Level Zero");
    printf("%-16s %s (%llu bytes)\n", "size", size, (unsigned long long)entry->file_size);
    printf("%-16s %s (%lld)\n", "pack made", made, (long long)entry->last_use_sec);
    if (entry->header_ok)
        print_header_fields(entry);
    else
        printf("%-16s %s\n", "header", entry->header_problem);
    char reason[256] = "";
    zc_artifact *artifact = NULL;
    bool verified =
        tool_check_pack_entry(place->pack, entry, &artifact, reason, sizeof reason) == ZC_OK;
    print_verification(verified, reason);
    if (verified)
        print_log_of(artifact);
    zc_artifact_unref(artifact);
}

static int show_in_pack(tool_context *tool, const char *file, const char *prefix)
{
    zc_pack *pack = NULL;
    tool_entry_list list;
    int exit_status = tool_read_pack(tool, file, &pack, &list);
    if (exit_status != TOOL_EXIT_OK)
        return exit_status;
    pack_place place = {file, pack};
    exit_status = show_matching(tool, list, prefix, show_pack_entry, &place);
    zc_pack_close(pack);
    return exit_status;
}

static int run_show(tool_context *tool, int argc, char **argv)
{
    static const struct option options[] = {
        TOOL_COMMON_OPTIONS, {"pack", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0}};
    const char *pack = NULL;
    int option;
    while ((option = tool_next_option(tool, argc, argv, options)) == 'p')
        pack = optarg;
    int parsed = tool_end_options(tool, option, argc, argv, 1);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    const char *prefix = argv[optind];
    if (prefix[0] == '\0' || strchr(prefix, '/') != NULL)
        return tool_usage_error(tool, "'%s' is not a key prefix", prefix);
    if (pack != NULL)
        return show_in_pack(tool, pack, prefix);
    return tool_with_tier(tool, show_in_directory, (void *)prefix);
}

const tool_command tool_cmd_show = {
    .name = "show",
    .synopsis = "show [--pack FILE] KEY-PREFIX",
    .summary = "Show everything known about one entry",
    .details = "KEY-PREFIX is the start of the entry's key (hex, either case), or of the file\n"
               "name of one of the driver's own entries. Shows the file, every header field,\n"
               "the result of a full verification (as a load does it), the build log, and the\n"
               "key's trace when BinaryCacheTrace=1 wrote one beside the entry.\n"
               "\n"
               "  --pack FILE  an entry of the pack FILE (zecache pack) instead: its header,\n"
               "               its verification as a process serving it does it, its log\n"
               "\n"
               "Exit status: 0 shown (even when the entry fails verification), 1 no entry\n"
               "matches, 2 several entries match (they are listed).\n",
    .run = run_show,
};
