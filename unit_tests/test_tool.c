/* The zecache command-line tool: its parsers and JSON writer called directly,
 * the stats file through its API, and the tool itself run as a program
 * against scratch cache directories filled through the core API (entries of
 * real ELF bytes) and damaged by hand. JSON output is read by Python's json
 * module. Criterion runs every test in its own process, so setenv stays in
 * the test that calls it. */
#include <criterion/criterion.h>
#include <openssl/crypto.h>
#include <zstd.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "disk_test_support.h"
#include "pretend_device.h"
#include "test_support.h"
#include "tool_support.h"
#include "zecache/bundle.h"
#include "zecache/disk_tier.h"
#include "zecache/disk_usage_list.h"
#include "zecache/stats.h"

#define ELF_SOURCE "/bin/ls"
#define LOG_TEXT "build log\n"
#define LAYER_FILE ZC_LAYER_BUILD_DIR "/libze_validation_layer.so.1"

static char scratch[128];
static char cache_dir[192]; /* scratch + "/cache": short, so every path built from it fits */

typedef struct tool_run {
    int status; /* exit code, or 128 + signal */
    char *out;
    char *err;
} tool_run;

static tool_run run;

/* ---- scratch directories ---- */

static void clear_run(void)
{
    free(run.out);
    free(run.err);
    memset(&run, 0, sizeof run);
}

static void scratch_create(void)
{
    static const char *const settings[] = {"NEO_CACHE_PERSISTENT", "NEO_CACHE_DIR",
                                           "NEO_CACHE_MAX_SIZE",   "NEO_CACHE_MEMORY_SIZE",
                                           "NEO_CACHE_SHARED",     "PrintDebugMessages",
                                           "BinaryCacheTrace",     "XDG_CACHE_HOME",
                                           "ZECACHE_LAYER_DIR",    "NEO_CACHE_COMPRESSION_LEVEL"};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        unsetenv(settings[i]);
    t_make_scratch(scratch, sizeof scratch, "/tmp/zc_tool.XXXXXX", cache_dir, sizeof cache_dir);
    setenv("HOME", scratch, 1);
}

static void scratch_remove(void)
{
    clear_run();
    t_remove_tree(scratch);
}

static const char *in_scratch(const char *name)
{
    static char paths[4][PATH_MAX];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, PATH_MAX, "%s/%s", scratch, name);
    return path;
}

/* ---- files ---- */

/* The whole stream, NUL-terminated; *size (if not NULL) without the NUL. */
static char *read_stream(FILE *stream, size_t *size)
{
    char *text = NULL;
    size_t length = 0, capacity = 0, got;
    do {
        if (length + 4096 + 1 > capacity) {
            capacity = 2 * (length + 4096 + 1);
            text = realloc(text, capacity);
            cr_assert_not_null(text);
        }
        got = fread(text + length, 1, capacity - length - 1, stream);
        length += got;
    } while (got > 0);
    text[length] = '\0';
    if (size != NULL)
        *size = length;
    return text;
}

static char *read_text(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    char *text = read_stream(file, size);
    fclose(file);
    return text;
}

static void write_text(const char *path, const char *text)
{
    t_write_file(path, text, strlen(text));
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "no %s", path);
    return (uint64_t)st.st_size;
}

/* ---- running the tool ---- */

static int run_command(const char *command)
{
    clear_run();
    FILE *pipe = popen(command, "r");
    cr_assert_not_null(pipe);
    run.out = read_stream(pipe, NULL);
    int status = pclose(pipe);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    run.err = read_text(in_scratch("stderr"), NULL);
    cr_assert_not_null(run.err);
    return run.status;
}

/* Runs a shell command with its standard error in the scratch directory. */
static int run_command_with_stderr(const char *command)
{
    char full[8192 + PATH_MAX + 16];
    snprintf(full, sizeof full, "%s 2>'%s'", command, in_scratch("stderr"));
    return run_command(full);
}

/* Runs the tool with arguments (shell words, printf-formatted); fills run. */
static int tool(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int tool(const char *format, ...)
{
    char args[4096], command[8192];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    snprintf(command, sizeof command, "'%s' %s 2>'%s'", ZC_TOOL_PATH, args, in_scratch("stderr"));
    return run_command(command);
}

/* The same with --dir naming the scratch cache. */
static int tool_in_cache(const char *format, ...) __attribute__((format(printf, 1, 2)));
static int tool_in_cache(const char *format, ...)
{
    char args[4096];
    va_list list;
    va_start(list, format);
    vsnprintf(args, sizeof args, format, list);
    va_end(list);
    return tool("--dir '%s' %s", cache_dir, args);
}

/* What Python prints for expr over d = the JSON document text (asserted to
 * parse). The expression goes through the environment: no shell quoting. */
static const char *json_eval(const char *text, const char *expr)
{
    static char results[4][4096];
    static int next;
    char *result = results[next++ % 4];
    write_text(in_scratch("doc.json"), text);
    setenv("ZC_JSON_EXPR", expr, 1);
    char command[PATH_MAX + 256];
    snprintf(command, sizeof command,
             "python3 -c 'import json, os, sys; d = json.load(open(sys.argv[1])); "
             "print(eval(os.environ[\"ZC_JSON_EXPR\"]))' '%s'",
             in_scratch("doc.json"));
    FILE *pipe = popen(command, "r");
    cr_assert_not_null(pipe);
    size_t length = fread(result, 1, sizeof results[0] - 1, pipe);
    cr_assert_eq(pclose(pipe), 0, "not JSON, or no %s, in:\n%s", expr, text);
    result[length] = '\0';
    if (length > 0 && result[length - 1] == '\n')
        result[length - 1] = '\0';
    return result;
}

static uint64_t json_u64(const char *text, const char *expr)
{
    return strtoull(json_eval(text, expr), NULL, 10);
}

static int count_of(const char *text, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle))
        count++;
    return count;
}

static int line_count(const char *text)
{
    return count_of(text, "\n");
}

/* ---- filling a cache through the core ---- */

static zc_disk_tier *open_cache(uint64_t max_size)
{
    zc_config config = t_disk_config(cache_dir, max_size, 3);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    return tier;
}

static const char *entry_rel(const zc_key *key)
{
    static char paths[4][128];
    static int next;
    char *path = paths[next++ % 4], hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(path, 128, "%c/%c/%s%s", hex[0], hex[1], hex,
             zc_entry_kind_suffix((zc_entry_kind)key->kind));
    return path;
}

static const char *entry_path(const zc_key *key)
{
    static char paths[4][PATH_MAX];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, PATH_MAX, "%s/%s", cache_dir, entry_rel(key));
    return path;
}

/* Stores binary_size bytes of a real ELF file, from offset, with LOG_TEXT as
 * its build log; returns the entry's size on disk. */
static uint64_t store_entry(zc_disk_tier *tier, const zc_key *key, size_t offset,
                            size_t binary_size, const char *trace)
{
    size_t elf_size;
    char *elf = read_text(ELF_SOURCE, &elf_size);
    cr_assert_not_null(elf);
    cr_assert_leq(offset + binary_size, elf_size);
    zc_artifact_meta meta = t_meta();
    zc_artifact *artifact =
        zc_artifact_create(elf + offset, binary_size, LOG_TEXT, strlen(LOG_TEXT), &meta);
    free(elf);
    cr_assert_not_null(artifact);
    cr_assert_eq(zc_disk_tier_store(tier, key, artifact, trace), ZC_OK);
    zc_artifact_unref(artifact);
    return file_size(entry_path(key));
}

/* A key whose hex starts with the given digits (then the seed's bytes). */
static zc_key key_with_prefix(uint8_t first, uint8_t second, uint64_t seed)
{
    zc_key key = t_key(seed);
    key.bytes[0] = first;
    key.bytes[1] = second;
    return key;
}

static void set_last_use(const zc_key *key, time_t when)
{
    struct timespec times[2] = {{.tv_sec = when}, {.tv_sec = when}};
    cr_assert_eq(utimensat(AT_FDCWD, entry_path(key), times, 0), 0);
}

/* config.file's value: exactly 8 bytes. */
static uint64_t recorded_total(void)
{
    size_t size;
    char *bytes = read_text(in_scratch("cache/" ZC_CONFIG_FILE_NAME), &size);
    cr_assert_not_null(bytes);
    cr_assert_eq(size, sizeof(uint64_t));
    uint64_t total;
    memcpy(&total, bytes, sizeof total);
    free(bytes);
    return total;
}

static void set_recorded_total(uint64_t total)
{
    t_write_file(in_scratch("cache/" ZC_CONFIG_FILE_NAME), &total, sizeof total);
}

static uint64_t scanned_bytes, scanned_entries;

static int add_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    size_t length = strlen(path);
    if (flag == FTW_F && length > 9 && strcmp(path + length - 9, ".l0_cache") == 0) {
        scanned_bytes += (uint64_t)st->st_size;
        scanned_entries++;
    }
    return 0;
}

/* The real total of the .l0_cache files, counted here independently. */
static uint64_t scanned_total(uint64_t *entries)
{
    scanned_bytes = scanned_entries = 0;
    nftw(cache_dir, add_entry, 16, FTW_PHYS);
    if (entries != NULL)
        *entries = scanned_entries;
    return scanned_bytes;
}

/* One of the driver's own entries (16 hex digits, no zecache header). */
static uint64_t add_driver_entry(void)
{
    char bytes[100];
    memset(bytes, 'd', sizeof bytes);
    t_write_file(in_scratch("cache/0123456789abcdef.l0_cache"), bytes, sizeof bytes);
    return sizeof bytes;
}

/* ================================================================ */
/* Sizes, durations and JSON, called directly                        */
/* ================================================================ */

Test(units, sizes_accept_bytes_and_powers_of_1024)
{
    static const struct {
        const char *text;
        uint64_t bytes;
    } cases[] = {
        {"0", 0},
        {"4096", 4096},
        {"500K", 500 * UINT64_C(1024)},
        {"500k", 500 * UINT64_C(1024)},
        {"500M", 500 * (UINT64_C(1) << 20)},
        {"2G", UINT64_C(2) << 30},
        {"2g", UINT64_C(2) << 30},
        {"3T", UINT64_C(3) << 40},
        {"18446744073709551615", UINT64_MAX},
        {"16777215T", UINT64_C(16777215) << 40},
        {"007", 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t bytes = 1;
        cr_assert(tool_parse_size(cases[i].text, &bytes), "rejected %s", cases[i].text);
        cr_assert_eq(bytes, cases[i].bytes, "%s", cases[i].text);
    }
}

Test(units, sizes_reject_everything_else)
{
    static const char *const cases[] = {
        "",
        "K",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1.5G",
        "1KB",
        "1KiB",
        "1X",
        "1 K",
        "0x10",
        "1GG",
        "18446744073709551616",
        "16777216T",
        "1e3",
        "99999999999999999999K",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t bytes = 77;
        cr_assert_not(tool_parse_size(cases[i], &bytes), "accepted \"%s\"", cases[i]);
        cr_assert_eq(bytes, 77, "changed the result for \"%s\"", cases[i]);
    }
    cr_assert_not(tool_parse_size(NULL, NULL));
}

Test(units, durations_need_a_unit)
{
    static const struct {
        const char *text;
        int64_t seconds;
    } cases[] = {
        {"0s", 0},
        {"30s", 30},
        {"15m", 900},
        {"12h", 43200},
        {"7d", 604800},
        {"9223372036854775807s", INT64_MAX},
        {"106751991167300d", INT64_C(106751991167300) * 86400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t seconds = -1;
        cr_assert(tool_parse_duration(cases[i].text, &seconds), "rejected %s", cases[i].text);
        cr_assert_eq(seconds, cases[i].seconds, "%s", cases[i].text);
    }
}

Test(units, durations_reject_everything_else)
{
    static const char *const cases[] = {
        "",
        "30",
        "s",
        "1S",
        "1M",
        "1H",
        "1D",
        "1w",
        "-1d",
        "+1d",
        "1.5h",
        "1d ",
        " 1d",
        "1dd",
        "1 d",
        "9223372036854775808s",
        "106751991167301d",
        "18446744073709551616s",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t seconds = 77;
        cr_assert_not(tool_parse_duration(cases[i], &seconds), "accepted \"%s\"", cases[i]);
        cr_assert_eq(seconds, 77, "changed the result for \"%s\"", cases[i]);
    }
}

Test(units, sizes_print_in_binary_units)
{
    static const struct {
        uint64_t bytes;
        const char *text;
    } cases[] = {
        {0, "0 B"},
        {1023, "1023 B"},
        {1024, "1.0 KiB"},
        {1536, "1.5 KiB"},
        {UINT64_C(1) << 30, "1.0 GiB"},
        {UINT64_MAX, "16.0 EiB"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[TOOL_SIZE_TEXT];
        tool_format_size(cases[i].bytes, text);
        cr_assert_str_eq(text, cases[i].text);
    }
}

static char *json_string_of(const char *text)
{
    char *buffer = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buffer, &size);
    cr_assert_not_null(out);
    tool_json_string(out, text);
    fclose(out);
    return buffer;
}

Test(json, strings_escape_quotes_controls_and_invalid_utf8)
{
    static const struct {
        const char *text, *json;
    } cases[] = {
        {"plain", "\"plain\""},
        {"a\"b\\c", "\"a\\\"b\\\\c\""},
        {"l1\nl2\tx\r\x01\x1f\x7f", "\"l1\\nl2\\tx\\r\\u0001\\u001f\\u007f\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
         "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
        {"\xff", "\"\\u00ff\""},
        {"\xc0\xaf", "\"\\u00c0\\u00af\""},                       /* overlong '/' */
        {"\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\""},            /* a surrogate */
        {"\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\""}, /* past U+10FFFF */
        {"x\xc3", "\"x\\u00c3\""},                                /* cut off */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *json = json_string_of(cases[i].text);
        cr_assert_str_eq(json, cases[i].json, "case %zu", i);
        free(json);
    }
}

Test(json, writer_nests_and_separates, .init = scratch_create, .fini = scratch_remove)
{
    char *buffer = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buffer, &size);
    tool_json json;
    tool_json_begin(&json, out);
    tool_json_u64(&json, "n", UINT64_MAX);
    tool_json_open_array(&json, "list");
    tool_json_i64(&json, NULL, -3);
    tool_json_open_object(&json, NULL);
    tool_json_text(&json, "s", "\xff");
    tool_json_close(&json);
    tool_json_close(&json);
    tool_json_open_array(&json, "empty");
    tool_json_close(&json);
    tool_json_double(&json, "nan", 0.0 / 0.0);
    tool_json_double(&json, "half", 0.5);
    tool_json_bool(&json, "yes", true);
    tool_json_null(&json, "nothing");
    tool_json_text(&json, "none", NULL);
    tool_json_end(&json);
    fclose(out);
    cr_assert_str_eq(buffer, "{\n"
                             "  \"n\": 18446744073709551615,\n"
                             "  \"list\": [\n"
                             "    -3,\n"
                             "    {\n"
                             "      \"s\": \"\\u00ff\"\n"
                             "    }\n"
                             "  ],\n"
                             "  \"empty\": [],\n"
                             "  \"nan\": null,\n"
                             "  \"half\": 0.5,\n"
                             "  \"yes\": true,\n"
                             "  \"nothing\": null,\n"
                             "  \"none\": null\n"
                             "}\n");
    cr_assert_str_eq(json_eval(buffer, "d['list'][1]['s'] == '\\xff' and d['n'] == 2**64 - 1"),
                     "True");
    free(buffer);
}

/* ================================================================ */
/* The stats file, through its API                                   */
/* ================================================================ */

TestSuite(stats_file, .init = scratch_create, .fini = scratch_remove);

static zc_stats_counters sample_delta(void)
{
    zc_stats_counters delta;
    memset(&delta, 0, sizeof delta);
    delta.memory_hits = 2;
    delta.disk_hits = 3;
    delta.misses = 5;
    delta.failed_builds = 1;
    delta.stores = 4;
    delta.store_errors = 1;
    delta.evictions = 6;
    delta.compile_ns_spent = 7000;
    delta.compile_ns_saved = 9000;
    delta.bypasses[ZC_BYPASS_NOT_CACHEABLE] = 8;
    delta.bypasses[ZC_BYPASS_REJECTED_BINARY] = 1;
    delta.remote_hits = 11;
    delta.remote_misses = 12;
    delta.remote_stores = 13;
    delta.remote_errors = 14;
    delta.remote_rejected = 15;
    delta.remote_not_admitted = 16;
    delta.pack_hits = 17;
    delta.pack_rejected = 18;
    return delta;
}

enum { STATS_TEST_LOCK_TIMEOUT_MS = 120000 };

static const char *stats_path(void)
{
    return in_scratch(ZC_STATS_FILE_NAME);
}

/* The stats file is reached through a disk tier on scratch, opened once per
 * test (each test runs in a process of its own). The lock's deadline is far
 * above the default: eight sanitized processes merging 320 times on a loaded
 * machine can wait past 2 s for their turn, and a merge skipped on a timeout
 * (which is right in a real process) is not what these tests look for. */
static zc_disk_tier *stats_tier(void)
{
    static zc_disk_tier *tier;
    if (tier == NULL) {
        zc_config config = t_disk_config(scratch, 0, 1);
        config.lock_timeout_ms = STATS_TEST_LOCK_TIMEOUT_MS;
        cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    }
    return tier;
}

Test(stats_file, merges_add_up_exactly)
{
    zc_stats_counters delta = sample_delta(), total;
    cr_assert_eq(zc_stats_merge(stats_tier(), &delta), ZC_OK);
    cr_assert_eq(zc_stats_merge(stats_tier(), &delta), ZC_OK);
    cr_assert_eq(zc_stats_read(stats_tier(), &total), ZC_OK);
    cr_assert_eq(total.memory_hits, 4);
    cr_assert_eq(total.disk_hits, 6);
    cr_assert_eq(total.misses, 10);
    cr_assert_eq(total.failed_builds, 2);
    cr_assert_eq(total.stores, 8);
    cr_assert_eq(total.store_errors, 2);
    cr_assert_eq(total.evictions, 12);
    cr_assert_eq(total.compile_ns_spent, 14000);
    cr_assert_eq(total.compile_ns_saved, 18000);
    cr_assert_eq(total.bypasses[ZC_BYPASS_NOT_CACHEABLE], 16);
    cr_assert_eq(total.bypasses[ZC_BYPASS_REJECTED_BINARY], 2);
    cr_assert_eq(total.bypasses[ZC_BYPASS_NATIVE_INPUT], 0);
    cr_assert_eq(total.remote_hits, 22);
    cr_assert_eq(total.remote_misses, 24);
    cr_assert_eq(total.remote_stores, 26);
    cr_assert_eq(total.remote_errors, 28);
    cr_assert_eq(total.remote_rejected, 30);
    cr_assert_eq(total.remote_not_admitted, 32);
    cr_assert_eq(total.pack_hits, 34);
    cr_assert_eq(total.pack_rejected, 36);
    char *text = read_text(stats_path(), NULL);
    cr_assert_str_eq(text, "zecache-stats 1\n"
                           "memory_hits 4\n"
                           "disk_hits 6\n"
                           "misses 10\n"
                           "failed_builds 2\n"
                           "stores 8\n"
                           "store_errors 2\n"
                           "evictions 12\n"
                           "memory_evictions 0\n"
                           "lock_timeouts 0\n"
                           "compile_ns_spent 14000\n"
                           "compile_ns_saved 18000\n"
                           "remote_hits 22\n"
                           "remote_misses 24\n"
                           "remote_stores 26\n"
                           "remote_errors 28\n"
                           "remote_rejected 30\n"
                           "remote_not_admitted 32\n"
                           "pack_hits 34\n"
                           "pack_rejected 36\n"
                           "bypass.native-input 0\n"
                           "bypass.unsupported-input 0\n"
                           "bypass.not-cacheable 16\n"
                           "bypass.cache-error 0\n"
                           "bypass.rejected-binary 2\n"
                           "bypass.compiler-unidentified 0\n"
                           "bypass.compiler-changed 0\n"
                           "end\n");
    free(text);
    struct stat st;
    cr_assert_eq(stat(stats_path(), &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
}

Test(stats_file, a_missing_file_reads_as_zero_and_zero_deltas_write_nothing)
{
    zc_stats_counters counters = sample_delta(), zero;
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(zc_stats_read(stats_tier(), &counters), ZC_OK);
    cr_assert_arr_eq(&counters, &zero, sizeof zero);
    cr_assert_eq(zc_stats_merge(stats_tier(), &zero), ZC_OK);
    cr_assert_not(t_exists(stats_path()));
}

Test(stats_file, garbage_reads_as_zero_and_the_next_merge_replaces_it)
{
    static const char *const garbage[] = {
        "",                                   /* an empty file is a fresh one: zero, but OK */
        "hello\n",                            /* no header */
        "zecache-stats 2\nmisses 1\nend\n",   /* another version */
        "zecache-stats 1\nmisses 1\n",        /* cut off before "end" */
        "zecache-stats 1\nmisses one\nend\n", /* not a number */
        "zecache-stats 1\nmisses -1\nend\n",
        "zecache-stats 1\nmisses\nend\n",
        "zecache-stats 1\nmisses 99999999999999999999\nend\n",
    };
    zc_stats_counters zero, counters, delta = sample_delta();
    memset(&zero, 0, sizeof zero);
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        write_text(stats_path(), garbage[i]);
        cr_assert_eq(zc_stats_read(stats_tier(), &counters), i == 0 ? ZC_OK : ZC_MISS, "case %zu",
                     i);
        cr_assert_arr_eq(&counters, &zero, sizeof zero, "case %zu", i);
        cr_assert_eq(zc_stats_merge(stats_tier(), &delta), ZC_OK);
        cr_assert_eq(zc_stats_read(stats_tier(), &counters), ZC_OK);
        cr_assert_arr_eq(&counters, &delta, sizeof delta, "case %zu", i);
    }
}

Test(stats_file, symlinks_and_fifos_are_not_followed_or_waited_for)
{
    zc_stats_counters counters, delta = sample_delta();
    write_text(in_scratch("elsewhere"), "zecache-stats 1\nmisses 3\nend\n");
    cr_assert_eq(symlink(in_scratch("elsewhere"), stats_path()), 0);
    cr_assert_eq(zc_stats_read(stats_tier(), &counters), ZC_ERR_IO);
    cr_assert_eq(zc_stats_merge(stats_tier(), &delta), ZC_ERR_IO);
    cr_assert_eq(unlink(stats_path()), 0);
    cr_assert_eq(mkfifo(stats_path(), 0600), 0);
    cr_assert_eq(zc_stats_read(stats_tier(), &counters), ZC_MISS);
    cr_assert_eq(counters.misses, 0);
    cr_assert_eq(zc_stats_merge(stats_tier(), &delta), ZC_ERR_IO);
}

Test(stats_file, unknown_names_and_text_after_the_end_are_ignored)
{
    write_text(stats_path(), "zecache-stats 1\nmisses 3\nfuture_counter 9\nbypass.x 4\n"
                             "disk_hits 2\nend\nleft over from a longer file\n");
    zc_stats_counters counters;
    cr_assert_eq(zc_stats_read(stats_tier(), &counters), ZC_OK);
    cr_assert_eq(counters.misses, 3);
    cr_assert_eq(counters.disk_hits, 2);
    cr_assert_eq(counters.memory_hits, 0);
}

Test(stats_file, oversized_files_are_garbage)
{
    size_t size = 65 * 1024;
    char *big = malloc(size + 1);
    memset(big, '\n', size);
    memcpy(big, "zecache-stats 1\nmisses 3\n", 25);
    memcpy(big + size - 4, "end\n", 4);
    big[size] = '\0';
    write_text(stats_path(), big);
    free(big);
    zc_stats_counters counters;
    cr_assert_eq(zc_stats_read(stats_tier(), &counters), ZC_MISS);
    cr_assert_eq(counters.misses, 0);
}

Test(stats_file, counters_saturate)
{
    zc_stats_counters delta;
    memset(&delta, 0, sizeof delta);
    delta.misses = UINT64_MAX - 1;
    cr_assert_eq(zc_stats_merge(stats_tier(), &delta), ZC_OK);
    delta.misses = 5;
    cr_assert_eq(zc_stats_merge(stats_tier(), &delta), ZC_OK);
    zc_stats_counters total;
    cr_assert_eq(zc_stats_read(stats_tier(), &total), ZC_OK);
    cr_assert_eq(total.misses, UINT64_MAX);
}

Test(stats_file, zero_resets_every_counter)
{
    zc_stats_counters delta = sample_delta(), zero, total;
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(zc_stats_merge(stats_tier(), &delta), ZC_OK);
    cr_assert_eq(zc_stats_zero(stats_tier()), ZC_OK);
    cr_assert_eq(zc_stats_read(stats_tier(), &total), ZC_OK);
    cr_assert_arr_eq(&total, &zero, sizeof zero);
}

Test(stats_file, concurrent_processes_lose_no_update)
{
    enum { PROCESSES = 8, MERGES = 40 };
    for (int p = 0; p < PROCESSES; p++) {
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            zc_stats_counters one;
            memset(&one, 0, sizeof one);
            one.disk_hits = 1;
            one.bypasses[ZC_BYPASS_CACHE_ERROR] = 2;
            for (int i = 0; i < MERGES; i++)
                if (zc_stats_merge(stats_tier(), &one) != ZC_OK)
                    _exit(1);
            _exit(0);
        }
    }
    for (int p = 0; p < PROCESSES; p++) {
        int status;
        cr_assert_gt(wait(&status), 0);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    zc_stats_counters total;
    cr_assert_eq(zc_stats_read(stats_tier(), &total), ZC_OK);
    cr_assert_eq(total.disk_hits, PROCESSES * MERGES);
    cr_assert_eq(total.bypasses[ZC_BYPASS_CACHE_ERROR], 2 * PROCESSES * MERGES);
}

static zc_status compile_for_stats(void *context, zc_artifact **out)
{
    *out = t_artifact(1000, *(const uint64_t *)context);
    return ZC_OK;
}

/* Counters are merged at every store, not only at exit: a process killed
 * after 7 stores (and some hits after them) has its 7 stores and misses in
 * the stats file. Hits after the last store are what a crash may lose. */
Test(stats_file, a_killed_process_has_its_stores_counted)
{
    enum { STORES = 7 };
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        zc_config config = t_disk_config(scratch, 0, 1);
        config.memory_size = 1 << 20;
        zc_cache *cache = NULL;
        if (zc_cache_open(&config, &cache) != ZC_OK)
            _exit(3);
        for (uint64_t seed = 1; seed <= 2 * STORES; seed++) {
            uint64_t key_seed = (seed + 1) / 2; /* each key twice: a miss, then a hit */
            zc_key key = t_key(key_seed);
            zc_artifact *artifact = NULL;
            if (zc_cache_get_or_compile(cache, &key, NULL, compile_for_stats, &key_seed, &artifact,
                                        NULL) != ZC_OK)
                _exit(4);
            zc_artifact_unref(artifact);
        }
        (void)!write(ready[1], "x", 1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char byte;
    cr_assert_eq(read(ready[0], &byte, 1), 1, "the child stored its entries");
    close(ready[0]);
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    zc_stats_counters total;
    cr_assert_eq(zc_stats_read(stats_tier(), &total), ZC_OK);
    cr_assert_eq(total.stores, STORES);
    cr_assert_eq(total.misses, STORES);
    cr_assert_eq(total.store_errors, 0);
    /* Each store merged the hits before it: all but the last key's. */
    cr_assert_eq(total.memory_hits, STORES - 1);
}

static void print_counter(void *context, const char *name, uint64_t value)
{
    fprintf(context, "%s=%llu;", name, (unsigned long long)value);
}

Test(stats_file, foreach_names_every_counter_in_file_order)
{
    zc_stats_counters delta = sample_delta();
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    zc_stats_foreach(&delta, print_counter, out);
    fclose(out);
    cr_assert_str_eq(text, "memory_hits=2;disk_hits=3;misses=5;failed_builds=1;stores=4;"
                           "store_errors=1;evictions=6;memory_evictions=0;lock_timeouts=0;"
                           "compile_ns_spent=7000;"
                           "compile_ns_saved=9000;remote_hits=11;remote_misses=12;remote_stores=13;"
                           "remote_errors=14;remote_rejected=15;remote_not_admitted=16;"
                           "pack_hits=17;pack_rejected=18;"
                           "bypass.native-input=0;"
                           "bypass.unsupported-input=0;bypass.not-cacheable=8;"
                           "bypass.cache-error=0;bypass.rejected-binary=1;"
                           "bypass.compiler-unidentified=0;bypass.compiler-changed=0;");
    free(text);
}

/* ================================================================ */
/* The tool, run as a program                                        */
/* ================================================================ */

TestSuite(tool, .init = scratch_create, .fini = scratch_remove, .timeout = 120);

/* The output line that starts with start (without its newline). */
static const char *line_starting(const char *text, const char *start)
{
    static char line[1024];
    size_t start_length = strlen(start);
    for (const char *at = text; at != NULL && *at != '\0';
         at = strchr(at, '\n'), at = at ? at + 1 : NULL) {
        if (strncmp(at, start, start_length) == 0) {
            size_t length = strcspn(at, "\n");
            snprintf(line, sizeof line, "%.*s", (int)length, at);
            return line;
        }
    }
    cr_assert_fail("no line starts with \"%s\" in:\n%s", start, text);
    return NULL;
}

static bool ends_with(const char *text, const char *end)
{
    size_t length = strlen(text), end_length = strlen(end);
    return length >= end_length && strcmp(text + length - end_length, end) == 0;
}

static const char *hex_of(const zc_key *key)
{
    static char hexes[4][ZC_KEY_HEX_SIZE];
    static int next;
    char *hex = hexes[next++ % 4];
    zc_key_to_hex(key, hex);
    return hex;
}

Test(tool, version_and_help)
{
    cr_assert_eq(tool("--version"), 0);
    cr_assert_eq(strncmp(run.out, "zecache " ZC_TOOL_VERSION "\nbuild: ",
                         strlen("zecache " ZC_TOOL_VERSION "\nbuild: ")),
                 0, "%s", run.out);
    /* The libraries the process runs with, as they report themselves. */
    char line[128];
    snprintf(line, sizeof line, "\nzstd %s\n", ZSTD_versionString());
    cr_assert_not_null(strstr(run.out, line), "%s", run.out);
    snprintf(line, sizeof line, "\nlibcrypto: %s (linked in)\n", OpenSSL_version(OPENSSL_VERSION));
    cr_assert_not_null(strstr(run.out, line), "%s", run.out);
    cr_assert_not_null(strstr(run.out, "\nhiredis "), "%s", run.out);
    cr_assert_not_null(strstr(run.out, "\nlibssl.so.3: OpenSSL "), "%s", run.out);
    cr_assert_not_null(strstr(run.out, "\nlibcurl.so.4: libcurl/"), "%s", run.out);
    cr_assert_eq(tool("--help"), 0);
    static const char *const commands[] = {"exec",   "stats", "zero-stats", "ls",     "show",
                                           "verify", "trim",  "clear",      "config", "help"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char line[32];
        snprintf(line, sizeof line, "\n  %-12s ", commands[i]);
        cr_assert_not_null(strstr(run.out, line), "%s missing from:\n%s", commands[i], run.out);
    }
    cr_assert_eq(tool("help ls"), 0);
    char *help = strdup(run.out);
    cr_assert_not_null(strstr(
        help, "Usage: zecache [--dir DIR] ls [--json] [--sort=last-use|size] [--pack FILE]\n"));
    cr_assert_eq(tool("ls --help"), 0);
    cr_assert_str_eq(run.out, help);
    free(help);
    cr_assert_eq(tool("trim --help"), 0);
    cr_assert_not_null(strstr(run.out, "500K, 500M, 2G"));
    cr_assert_eq(tool("help"), 0);
    cr_assert_not_null(strstr(run.out, "Commands:\n"));
}

Test(tool, bad_usage_exits_2)
{
    static const char *const cases[] = {
        "",
        "bogus",
        "--bogus",
        "--dir",
        "--dir ''",
        "ls --bogus",
        "ls extra",
        "ls --sort=name",
        "ls --sort",
        "stats --json extra",
        "trim --max-size 1.5G",
        "trim --max-size",
        "trim --older-than 7",
        "trim --older-than 1w",
        "show",
        "show a b",
        "show ''",
        "verify --fix=yes",
        "help bogus",
        "exec",
        "zero-stats now",
        "clear all",
        "config x",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(tool_in_cache("%s", cases[i]), 2, "\"%s\": %d\n%s", cases[i], run.status,
                     run.err);
        cr_assert_str_eq(run.out, "", "\"%s\"", cases[i]);
        cr_assert_not_null(strstr(run.err, "zecache"), "\"%s\"", cases[i]);
        cr_assert_not_null(strstr(run.err, "Try 'zecache "), "\"%s\": %s", cases[i], run.err);
    }
}

Test(tool, stats_counts_entries_bytes_and_ratio)
{
    setenv("NEO_CACHE_MAX_SIZE", "10000000", 1);
    zc_disk_tier *tier = open_cache(0);
    static const size_t binary_sizes[] = {20000, 40000, 60000};
    uint64_t bytes = 0, uncompressed = 0;
    for (size_t i = 0; i < 3; i++) {
        zc_key key = t_key(i);
        bytes += store_entry(tier, &key, 1000 * i, binary_sizes[i], NULL);
        uncompressed += binary_sizes[i] + strlen(LOG_TEXT);
    }
    zc_disk_tier_close(tier);
    uint64_t driver_bytes = add_driver_entry();

    cr_assert_eq(tool_in_cache("stats --json"), 0, "%s", run.err);
    cr_assert_str_eq(json_eval(run.out, "d['dir']"), cache_dir);
    cr_assert_eq(json_u64(run.out, "d['entries']"), 4);
    cr_assert_eq(json_u64(run.out, "d['driver_entries']"), 1);
    cr_assert_eq(json_u64(run.out, "d['bytes']"), bytes + driver_bytes);
    cr_assert_eq(json_u64(run.out, "d['bytes_uncompressed']"), uncompressed);
    cr_assert_eq(json_u64(run.out, "d['recorded_bytes']"), bytes); /* the stores' config.file */
    cr_assert_eq(json_u64(run.out, "d['max_size']"), 10000000);
    char check[256];
    snprintf(check, sizeof check, "abs(d['compression_ratio'] - %llu / %llu) < 1e-4",
             (unsigned long long)uncompressed, (unsigned long long)bytes);
    cr_assert_str_eq(json_eval(run.out, check), "True");
    cr_assert_str_eq(json_eval(run.out, "d['compression_ratio'] > 1.5"), "True"); /* ELF bytes */
    snprintf(check, sizeof check, "abs(d['percent_full'] - %llu / 1e5) < 1e-3",
             (unsigned long long)(bytes + driver_bytes));
    cr_assert_str_eq(json_eval(run.out, check), "True");
    cr_assert_str_eq(json_eval(run.out, "d['counters_valid']"), "True");
    cr_assert_str_eq(json_eval(run.out, "sum(d['counters'].values())"), "0");
    cr_assert_str_eq(json_eval(run.out, "len(d['counters'])"), "26");

    cr_assert_eq(tool_in_cache("stats"), 0);
    cr_assert_str_eq(line_starting(run.out, "entries"),
                     "entries             4 (1 of them the driver's own)");
    char limit_line[128];
    snprintf(limit_line, sizeof limit_line, "size limit          9.5 MiB, %.1f%% full",
             (double)(bytes + driver_bytes) / 1e5);
    cr_assert_str_eq(line_starting(run.out, "size limit"), limit_line);
}

/* Every file counted against the limit, by kind: an independent walk. */
typedef struct counted_files {
    uint64_t entry_bytes, recipes, recipe_bytes, blobs, blob_bytes;
} counted_files;

static counted_files counted_walk;

static int add_counted(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F)
        return 0;
    if (ends_with(path, ".l0_cache") || ends_with(path, ".trace"))
        counted_walk.entry_bytes += (uint64_t)st->st_size;
    if (ends_with(path, ".recipe")) {
        counted_walk.recipes++;
        counted_walk.recipe_bytes += (uint64_t)st->st_size;
    }
    if (ends_with(path, ".spirv")) {
        counted_walk.blobs++;
        counted_walk.blob_bytes += (uint64_t)st->st_size;
    }
    return 0;
}

static void expect_size_line(const char *label, uint64_t bytes, const char *rest)
{
    char size[TOOL_SIZE_TEXT], expected[256];
    tool_format_size(bytes, size);
    snprintf(expected, sizeof expected, "%-19s %s (%llu bytes)%s", label, size,
             (unsigned long long)bytes, rest);
    cr_assert_str_eq(line_starting(run.out, label), expected);
}

/* Recorded inputs count against the limit: stats shows them, and the
 * total config.file accounts, and how full the cache is of that total. */
Test(tool, stats_shows_entries_recorded_inputs_and_their_total_against_the_limit)
{
    setenv("NEO_CACHE_MAX_SIZE", "10000000", 1);
    zc_disk_tier *tier = open_cache(0);
    for (uint64_t i = 0; i < 3; i++) {
        zc_key key = t_key(700 + i);
        store_entry(tier, &key, 1000 * i, 20000, i == 0 ? "trace text\n" : NULL);
        /* Two recipes share one SPIR-V. */
        cr_assert_eq(t_record_inputs(tier, &key, i < 2 ? 7 : 8, i < 2 ? 50000 : 30000), ZC_OK);
    }
    zc_disk_tier_close(tier);
    memset(&counted_walk, 0, sizeof counted_walk);
    cr_assert_eq(nftw(cache_dir, add_counted, 16, FTW_PHYS), 0);
    const counted_files *files = &counted_walk;
    uint64_t inputs = files->recipe_bytes + files->blob_bytes;
    uint64_t total = files->entry_bytes + inputs;
    cr_assert_eq(files->recipes, 3);
    cr_assert_eq(files->blobs, 2);
    cr_assert_eq(recorded_total(), total);

    cr_assert_eq(tool_in_cache("stats"), 0, "%s", run.err);
    expect_size_line("entries' size", files->entry_bytes, "");
    expect_size_line("recorded inputs", inputs, ": 3 recipes, 2 SPIR-V modules");
    expect_size_line("counted size", total, ", against the size limit");
    cr_assert_null(strstr(run.out, "config.file"), "config.file agrees: %s", run.out);
    char limit_line[128];
    snprintf(limit_line, sizeof limit_line, "size limit          9.5 MiB, %.1f%% full",
             (double)total / 1e5);
    cr_assert_str_eq(line_starting(run.out, "size limit"), limit_line);

    cr_assert_eq(tool_in_cache("stats --json"), 0, "%s", run.err);
    cr_assert_eq(json_u64(run.out, "d['entry_bytes']"), files->entry_bytes);
    cr_assert_eq(json_u64(run.out, "d['recipes']"), 3);
    cr_assert_eq(json_u64(run.out, "d['spirv_modules']"), 2);
    cr_assert_eq(json_u64(run.out, "d['input_bytes']"), inputs);
    cr_assert_eq(json_u64(run.out, "d['counted_bytes']"), total);
    char check[128];
    snprintf(check, sizeof check, "abs(d['percent_full'] - %llu / 1e5) < 1e-9",
             (unsigned long long)total);
    cr_assert_str_eq(json_eval(run.out, check), "True");
}

/* By default stats answers from zecache.accounting, which the stores kept:
 * the same text and JSON as --scan, which reads every entry. */
Test(tool, stats_from_zecache_accounting_prints_what_stats_scan_does)
{
    setenv("NEO_CACHE_MAX_SIZE", "10000000", 1);
    zc_disk_tier *tier = open_cache(0);
    for (uint64_t i = 0; i < 3; i++) {
        zc_key key = t_key(800 + i);
        store_entry(tier, &key, 1000 * i, 20000 + 5000 * i, i == 1 ? "trace text\n" : NULL);
        cr_assert_eq(t_record_inputs(tier, &key, i < 2 ? 7 : 8, 30000), ZC_OK);
    }
    zc_disk_tier_close(tier);
    static const char *const forms[] = {"stats --json", "stats"};
    for (size_t f = 0; f < 2; f++) {
        char command[64];
        cr_assert_eq(tool_in_cache(forms[f]), 0, "%s", run.err);
        cr_assert_null(strstr(run.err, "zecache.accounting"), "kept by the stores: %s", run.err);
        char *kept = strdup(run.out);
        snprintf(command, sizeof command, "%s --scan", forms[f]);
        cr_assert_eq(tool_in_cache(command), 0, "%s", run.err);
        cr_assert_str_eq(kept, run.out);
        free(kept);
    }
    cr_assert_str_eq(line_starting(run.out, "entries"), "entries             3");
}

Test(tool, stats_shows_and_zero_stats_resets_the_persistent_counters)
{
    zc_disk_tier *tier = open_cache(0);
    zc_stats_counters delta = sample_delta();
    cr_assert_eq(zc_stats_merge(tier, &delta), ZC_OK);
    zc_disk_tier_close(tier);
    cr_assert_eq(tool_in_cache("stats --json"), 0, "%s", run.err);
    cr_assert_eq(json_u64(run.out, "d['counters']['memory_hits']"), 2);
    cr_assert_eq(json_u64(run.out, "d['counters']['disk_hits']"), 3);
    cr_assert_eq(json_u64(run.out, "d['counters']['misses']"), 5);
    cr_assert_eq(json_u64(run.out, "d['counters']['stores']"), 4);
    cr_assert_eq(json_u64(run.out, "d['counters']['evictions']"), 6);
    cr_assert_eq(json_u64(run.out, "d['counters']['compile_ns_saved']"), 9000);
    cr_assert_eq(json_u64(run.out, "d['counters']['bypass.not-cacheable']"), 8);
    cr_assert_eq(json_u64(run.out, "d['counters']['bypass.rejected-binary']"), 1);
    cr_assert_eq(json_u64(run.out, "d['counters']['remote_hits']"), 11);
    cr_assert_eq(json_u64(run.out, "d['counters']['remote_rejected']"), 15);
    cr_assert_eq(json_u64(run.out, "d['counters']['remote_not_admitted']"), 16);
    cr_assert_eq(tool_in_cache("stats"), 0);
    /* Remote hits count as hits: (2 + 3 + 11) of (2 + 3 + 11 + 5). */
    cr_assert_str_eq(line_starting(run.out, "hits"), "hits                2 from memory, 3 from "
                                                     "disk, 11 from remote storages (hit rate "
                                                     "76.2%)");
    cr_assert_str_eq(line_starting(run.out, "remote"), "remote              11 hits, 12 misses, "
                                                       "13 stores, 14 errors, 15 rejected");
    cr_assert_str_eq(line_starting(run.out, "remote admission"),
                     "remote admission    16 not admitted (compiled faster than "
                     "NEO_CACHE_REMOTE_MIN_COMPILE_MS: kept local)");
    cr_assert_str_eq(line_starting(run.out, "bypasses"),
                     "bypasses            9 (not-cacheable 8, rejected-binary 1)");

    cr_assert_eq(tool_in_cache("zero-stats"), 0);
    cr_assert_str_eq(run.out, "statistics zeroed\n");
    cr_assert_eq(tool_in_cache("stats --json"), 0);
    cr_assert_str_eq(json_eval(run.out, "sum(d['counters'].values())"), "0");
}

Test(tool, stats_tolerates_a_garbage_stats_file)
{
    zc_disk_tier_close(open_cache(0));
    write_text(in_scratch("cache/" ZC_STATS_FILE_NAME), "\x01\x02 not stats at all");
    cr_assert_eq(tool_in_cache("stats --json"), 0);
    cr_assert_str_eq(json_eval(run.out, "d['counters_valid']"), "False");
    cr_assert_str_eq(json_eval(run.out, "sum(d['counters'].values())"), "0");
    cr_assert_not_null(strstr(run.err, "malformed"), "%s", run.err);
}

/* Three entries and one of the driver's: k0 biggest and most recently used
 * of ours, k1 smallest and least recently used. */
static void fill_for_listing(zc_key keys[3], uint64_t sizes[3])
{
    static const size_t binary_sizes[] = {90000, 30000, 60000};
    time_t now = time(NULL);
    static const int ages[] = {100, 300, 200};
    zc_disk_tier *tier = open_cache(0);
    for (int i = 0; i < 3; i++) {
        keys[i] = t_key(10 + i);
        sizes[i] = store_entry(tier, &keys[i], 0, binary_sizes[i], NULL);
        set_last_use(&keys[i], now - ages[i]);
    }
    zc_disk_tier_close(tier);
    add_driver_entry();
}

Test(tool, ls_lists_every_entry_with_its_header)
{
    zc_key keys[3];
    uint64_t sizes[3];
    fill_for_listing(keys, sizes);
    cr_assert_eq(tool_in_cache("ls"), 0, "%s", run.err);
    cr_assert_eq(line_count(run.out), 5, "%s", run.out);
    cr_assert_not_null(strstr(run.out, "KEY           DEVICE"));
    for (int i = 0; i < 3; i++) {
        char start[16];
        snprintf(start, sizeof start, "%.12s  ", hex_of(&keys[i]));
        const char *line = line_starting(run.out, start);
        cr_assert_not_null(strstr(line, "  Intel(R) Graphics [0xff20]  "), "%s", line);
        cr_assert_not_null(strstr(line, "  1.3.29735  "), "%s", line);
    }
    cr_assert_not_null(strstr(line_starting(run.out, "0123456789ab  "), "(driver's own entry)"));

    cr_assert_eq(tool_in_cache("ls --json"), 0);
    cr_assert_eq(json_u64(run.out, "len(d['entries'])"), 4);
    cr_assert_str_eq(json_eval(run.out, "[e['path'] for e in d['entries'] if e['driver_entry']]"),
                     "['0123456789abcdef.l0_cache']");
    cr_assert_str_eq(json_eval(run.out, "[e['key'] for e in d['entries'] if e['driver_entry']]"),
                     "[None]");
    char expr[512];
    snprintf(expr, sizeof expr,
             "[(e['compressed_bytes'], e['uncompressed_bytes'], e['binary_bytes'], "
             "e['device'], e['driver_version'], e['compile_ns'], e['created_unix'], "
             "e['header_ok'], e['problem']) for e in d['entries'] if e['key'] == '%s']",
             hex_of(&keys[0]));
    char expected[256];
    snprintf(expected, sizeof expected,
             "[(%llu, 90010, 90000, 'Intel(R) Graphics [0xff20]', '1.3.29735', 123456789, "
             "1700000000, True, None)]",
             (unsigned long long)sizes[0]);
    cr_assert_str_eq(json_eval(run.out, expr), expected);
}

static void assert_order(const char *options, const char *first, const char *second,
                         const char *third, const char *fourth)
{
    cr_assert_eq(tool_in_cache("ls --json %s", options), 0, "%s", run.err);
    char expected[1024];
    snprintf(expected, sizeof expected, "%s,%s,%s,%s", first, second, third, fourth);
    cr_assert_str_eq(json_eval(run.out, "','.join(e['path'] for e in d['entries'])"), expected,
                     "%s", options);
}

Test(tool, ls_sorts_by_last_use_or_size)
{
    zc_key keys[3];
    uint64_t sizes[3];
    fill_for_listing(keys, sizes);
    cr_assert_gt(sizes[0], sizes[2]);
    cr_assert_gt(sizes[2], sizes[1]);
    const char *driver = "0123456789abcdef.l0_cache"; /* 100 bytes, used just now */
    char k0[128], k1[128], k2[128];
    snprintf(k0, sizeof k0, "%s", entry_rel(&keys[0]));
    snprintf(k1, sizeof k1, "%s", entry_rel(&keys[1]));
    snprintf(k2, sizeof k2, "%s", entry_rel(&keys[2]));
    assert_order("--sort=size", k0, k2, k1, driver);
    assert_order("--sort=last-use", k1, k2, k0, driver);
    assert_order("--sort last-use", k1, k2, k0, driver);
}

Test(tool, show_prints_one_entry_with_its_log_and_trace)
{
    zc_disk_tier *tier = open_cache(0);
    zc_key a = key_with_prefix(0xab, 0xcd, 1), b = key_with_prefix(0xab, 0xce, 2);
    store_entry(tier, &a, 0, 20000, "---- spirv ----\nsha256 0123\n");
    store_entry(tier, &b, 0, 20000, NULL);
    zc_disk_tier_close(tier);
    add_driver_entry();

    cr_assert_eq(tool_in_cache("show abcd"), 0, "%s", run.err);
    char expected[PATH_MAX + 64];
    snprintf(expected, sizeof expected, "path             %s/%s", cache_dir, entry_rel(&a));
    cr_assert_str_eq(line_starting(run.out, "path "), expected);
    snprintf(expected, sizeof expected, "key              %s", hex_of(&a));
    cr_assert_str_eq(line_starting(run.out, "key "), expected);
    cr_assert_str_eq(line_starting(run.out, "kind "), "kind             zecache entry");
    cr_assert_str_eq(line_starting(run.out, "device "),
                     "device           Intel(R) Graphics [0xff20]");
    cr_assert_str_eq(line_starting(run.out, "binary "), "binary           20000 bytes");
    cr_assert_str_eq(line_starting(run.out, "build log "), "build log        10 bytes");
    cr_assert_str_eq(line_starting(run.out, "compile time "), "compile time     123.457 ms");
    cr_assert_str_eq(line_starting(run.out, "verification "), "verification     ok");
    cr_assert_not_null(strstr(run.out, "\n---- build log ----\n" LOG_TEXT));
    cr_assert_not_null(strstr(run.out, ".trace) ----\n---- spirv ----\nsha256 0123\n"));

    cr_assert_eq(tool_in_cache("show ABCD"), 0); /* either case */
    cr_assert_eq(tool_in_cache("show abce"), 0);
    cr_assert_null(strstr(run.out, "---- trace")); /* b has none */
    cr_assert_eq(tool_in_cache("show 0123"), 0);
    cr_assert_str_eq(line_starting(run.out, "kind "),
                     "kind             the driver's own entry (no zecache header)");
}

/* ls, show and stats tell the two APIs' entries apart, the driver's own
 * .cl_cache files too. */
Test(tool, ls_show_and_stats_tell_the_apis_apart)
{
    zc_disk_tier *tier = open_cache(0);
    zc_key l0 = key_with_prefix(0x11, 0x22, 1), cl = key_with_prefix(0x33, 0x44, 2);
    cl.kind = ZC_ENTRY_OPENCL;
    store_entry(tier, &l0, 0, 20000, NULL);
    store_entry(tier, &cl, 1000, 20000, "---- opencl c ----\n");
    zc_disk_tier_close(tier);
    char bytes[100];
    memset(bytes, 'd', sizeof bytes);
    t_write_file(in_scratch("cache/0123456789abcdef.cl_cache"), bytes, sizeof bytes);

    cr_assert_eq(tool_in_cache("ls --json"), 0, "%s", run.err);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "[('0123456789abcdef.cl_cache', 'opencl', None), ('%s', 'level-zero', '%s'), "
             "('%s', 'opencl', '%s')]",
             entry_rel(&l0), hex_of(&l0), entry_rel(&cl), hex_of(&cl));
    cr_assert_str_eq(json_eval(run.out, "[(e['path'], e['api'], e['key']) for e in d['entries']]"),
                     expected);
    cr_assert_str_eq(json_eval(run.out, "[e['header_ok'] for e in d['entries']]"),
                     "[False, True, True]");
    cr_assert_eq(tool_in_cache("ls"), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "LAST USE             API\n"), "%s", run.out);
    cr_assert_eq(count_of(run.out, "  CL\n"), 2, "%s", run.out);
    cr_assert_eq(count_of(run.out, "  L0\n"), 1, "%s", run.out);

    cr_assert_eq(tool_in_cache("show 3344"), 0, "%s", run.err);
    cr_assert_str_eq(line_starting(run.out, "api "), "api              OpenCL");
    cr_assert_str_eq(line_starting(run.out, "verification "), "verification     ok");
    cr_assert_not_null(strstr(run.out, "\n---- build log ----\n" LOG_TEXT));
    cr_assert_not_null(strstr(run.out, ".trace) ----\n---- opencl c ----\n"), "%s", run.out);
    cr_assert_eq(tool_in_cache("show 1122"), 0, "%s", run.err);
    cr_assert_str_eq(line_starting(run.out, "api "), "api              Level Zero");

    cr_assert_eq(tool_in_cache("stats --json"), 0, "%s", run.err);
    cr_assert_eq(json_u64(run.out, "d['entries']"), 3);
    cr_assert_eq(json_u64(run.out, "d['driver_entries']"), 1);
    cr_assert_eq(json_u64(run.out, "d['level_zero_entries']"), 1);
    cr_assert_eq(json_u64(run.out, "d['opencl_entries']"), 2);
    cr_assert_eq(tool_in_cache("stats"), 0, "%s", run.err);
    cr_assert_str_eq(line_starting(run.out, "entries by API"),
                     "entries by API      Level Zero 1, OpenCL 2");
    /* The planted file is not in config.file: only the count matters here. */
    tool_in_cache("verify");
    cr_assert_not_null(
        strstr(run.out, "checked 2 entries: 0 bad; 1 of the driver's own entries not checked"),
        "%s", run.out);
}

Test(tool, show_refuses_ambiguous_and_unknown_prefixes)
{
    zc_disk_tier *tier = open_cache(0);
    zc_key a = key_with_prefix(0xab, 0xcd, 1), b = key_with_prefix(0xab, 0xce, 2);
    store_entry(tier, &a, 0, 20000, NULL);
    store_entry(tier, &b, 0, 20000, NULL);
    zc_disk_tier_close(tier);
    cr_assert_eq(tool_in_cache("show abc"), 2);
    cr_assert_str_eq(run.out, "");
    cr_assert_not_null(strstr(run.err, "ambiguous"));
    cr_assert_not_null(strstr(run.err, entry_rel(&a)));
    cr_assert_not_null(strstr(run.err, entry_rel(&b)));
    cr_assert_eq(tool_in_cache("show abd"), 1);
    cr_assert_str_eq(run.out, "");
    cr_assert_not_null(strstr(run.err, "no entry starts with 'abd'"));
}

Test(tool, show_reports_a_failed_verification)
{
    zc_disk_tier *tier = open_cache(0);
    zc_key a = key_with_prefix(0xab, 0xcd, 1);
    store_entry(tier, &a, 0, 20000, NULL);
    zc_disk_tier_close(tier);
    size_t size;
    char *bytes = read_text(entry_path(&a), &size);
    bytes[size - 1] ^= 0x40;
    t_write_file(entry_path(&a), bytes, size);
    free(bytes);
    cr_assert_eq(tool_in_cache("show ab"), 0);
    cr_assert(strncmp(line_starting(run.out, "verification "), "verification     FAILED: ", 25) ==
              0);
    cr_assert_null(strstr(run.out, "---- build log"));
}

/* ---- verify ---- */

static void damage_byte(const zc_key *key, long offset)
{
    size_t size;
    char *bytes = read_text(entry_path(key), &size);
    cr_assert_not_null(bytes);
    size_t at = offset >= 0 ? (size_t)offset : size - (size_t)-offset;
    bytes[at] ^= 0x01;
    t_write_file(entry_path(key), bytes, size);
    free(bytes);
}

Test(tool, verify_finds_each_damaged_entry_and_fix_removes_them)
{
    zc_disk_tier *tier = open_cache(0);
    zc_key keys[6];
    for (int i = 0; i < 6; i++) {
        keys[i] = t_key(100 + i);
        store_entry(tier, &keys[i], 500 * (size_t)i, 20000, NULL);
    }
    zc_disk_tier_close(tier);
    cr_assert_eq(tool_in_cache("verify"), 0, "%s%s", run.out, run.err);
    cr_assert_str_eq(run.out, "checked 6 entries: 0 bad\n");

    damage_byte(&keys[0], -1); /* payload: zstd checksum */
    cr_assert_eq(truncate(entry_path(&keys[1]), (off_t)file_size(entry_path(&keys[1])) - 10), 0);
    cr_assert_eq(rename(entry_path(&keys[3]), entry_path(&keys[2])), 0); /* another key's */
    damage_byte(&keys[4], 100); /* device name: header checksum */
    uint64_t recorded = recorded_total(), real = scanned_total(NULL);

    cr_assert_eq(tool_in_cache("verify"), 1);
    cr_assert_eq(count_of(run.out, "bad      "), 4, "%s", run.out);
    char line[256];
    for (int i = 0; i < 5; i++) {
        if (i == 3)
            continue;
        snprintf(line, sizeof line, "bad      %s: ", entry_rel(&keys[i]));
        cr_assert_not_null(line_starting(run.out, line));
    }
    snprintf(line, sizeof line, "bad      %s: ", entry_rel(&keys[2]));
    cr_assert(ends_with(line_starting(run.out, line), "entry holds another key"));
    snprintf(line, sizeof line, "bad      %s: ", entry_rel(&keys[4]));
    cr_assert(ends_with(line_starting(run.out, line), "header checksum mismatch"));
    snprintf(line, sizeof line, "config.file records %llu bytes but the entries total %llu bytes",
             (unsigned long long)recorded, (unsigned long long)real);
    cr_assert_not_null(line_starting(run.out, line));
    cr_assert(ends_with(run.out, "checked 5 entries: 4 bad\n"), "%s", run.out);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(t_exists(entry_path(&keys[i])), i != 3, "verify alone removed %d", i);

    cr_assert_eq(tool_in_cache("verify --fix"), 1);
    cr_assert_eq(count_of(run.out, "removed  "), 4, "%s", run.out);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(t_exists(entry_path(&keys[i])), i == 5, "entry %d", i);
    cr_assert(ends_with(run.out, "checked 5 entries: 4 bad, 4 removed\n"), "%s", run.out);
    cr_assert_eq(recorded_total(), scanned_total(NULL));
    cr_assert_eq(recorded_total(), file_size(entry_path(&keys[5])));

    cr_assert_eq(tool_in_cache("verify"), 0, "%s", run.out);
    cr_assert_str_eq(run.out, "checked 1 entries: 0 bad\n");
}

Test(tool, verify_reports_and_fix_repairs_a_wrong_config_file)
{
    zc_disk_tier *tier = open_cache(0);
    for (int i = 0; i < 2; i++) {
        zc_key key = t_key(200 + i);
        store_entry(tier, &key, 0, 30000, NULL);
    }
    zc_disk_tier_close(tier);
    uint64_t real = scanned_total(NULL);
    set_recorded_total(real + 1000);
    cr_assert_eq(tool_in_cache("verify"), 1);
    char line[256];
    snprintf(line, sizeof line,
             "config.file records %llu bytes but the entries total %llu bytes\n"
             "checked 2 entries: 0 bad\n",
             (unsigned long long)(real + 1000), (unsigned long long)real);
    cr_assert_str_eq(run.out, line);
    cr_assert_eq(recorded_total(), real + 1000);
    cr_assert_eq(tool_in_cache("verify --fix"), 1);
    snprintf(line, sizeof line, "config.file repaired: %llu bytes", (unsigned long long)real);
    cr_assert_not_null(line_starting(run.out, line));
    cr_assert_eq(recorded_total(), real);
    cr_assert_eq(tool_in_cache("verify"), 0);
}

Test(tool, verify_counts_driver_entries_without_checking_them)
{
    zc_disk_tier *tier = open_cache(0);
    zc_key key = t_key(300);
    store_entry(tier, &key, 0, 30000, NULL);
    zc_disk_tier_close(tier);
    add_driver_entry();
    set_recorded_total(scanned_total(NULL));
    cr_assert_eq(tool_in_cache("verify"), 0, "%s", run.out);
    cr_assert_str_eq(run.out,
                     "checked 1 entries: 0 bad; 1 of the driver's own entries not checked\n");
}

/* ---- trim and clear ---- */

/* count entries, k0 least recently used; returns their sizes. */
static void fill_by_age(zc_key *keys, uint64_t *sizes, int count, const int *ages)
{
    zc_disk_tier *tier = open_cache(0);
    time_t now = time(NULL);
    for (int i = 0; i < count; i++) {
        keys[i] = t_key(400 + (uint64_t)i);
        sizes[i] = store_entry(tier, &keys[i], 700 * (size_t)i, 20000 + 5000 * (size_t)i, NULL);
        set_last_use(&keys[i], now - ages[i]);
    }
    zc_disk_tier_close(tier);
}

Test(tool, trim_evicts_least_recently_used_down_to_the_size)
{
    static const int ages[] = {500, 400, 300, 200, 100};
    zc_key keys[5];
    uint64_t sizes[5];
    fill_by_age(keys, sizes, 5, ages);
    uint64_t target = sizes[3] + sizes[4];
    cr_assert_eq(tool_in_cache("trim --max-size %llu", (unsigned long long)target), 0, "%s",
                 run.err);
    cr_assert(strncmp(run.out, "removed 3 entries (", 19) == 0, "%s", run.out);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(t_exists(entry_path(&keys[i])), i >= 3, "entry %d", i);
    cr_assert_eq(scanned_total(NULL), target);
    cr_assert_eq(recorded_total(), target);

    cr_assert_eq(tool_in_cache("trim --max-size 1K"), 0);
    uint64_t entries;
    cr_assert_eq(scanned_total(&entries), 0);
    cr_assert_eq(entries, 0);
    cr_assert_eq(recorded_total(), 0);
}

Test(tool, trim_without_a_size_uses_the_configured_limit)
{
    static const int ages[] = {300, 200, 100};
    zc_key keys[3];
    uint64_t sizes[3];
    fill_by_age(keys, sizes, 3, ages);
    char limit[32];
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)(sizes[1] + sizes[2]));
    setenv("NEO_CACHE_MAX_SIZE", limit, 1);
    cr_assert_eq(tool_in_cache("trim"), 0, "%s", run.err);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(t_exists(entry_path(&keys[i])), i >= 1, "entry %d", i);
    setenv("NEO_CACHE_MAX_SIZE", "0", 1); /* unlimited: nothing goes */
    cr_assert_eq(tool_in_cache("trim"), 0);
    cr_assert_eq(scanned_total(NULL), sizes[1] + sizes[2]);
}

Test(tool, trim_older_than_removes_only_entries_unused_that_long)
{
    static const int ages[] = {3 * 86400, 3 * 86400, 86400, 0};
    zc_key keys[4];
    uint64_t sizes[4];
    fill_by_age(keys, sizes, 4, ages);
    cr_assert_eq(tool_in_cache("trim --older-than 2d"), 0, "%s", run.err);
    cr_assert(strncmp(run.out, "removed 2 entries (", 19) == 0, "%s", run.out);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(t_exists(entry_path(&keys[i])), i >= 2, "entry %d", i);
    cr_assert_eq(tool_in_cache("trim --older-than 1000000d"), 0); /* before 1970: none */
    cr_assert(t_exists(entry_path(&keys[2])));
    cr_assert_eq(tool_in_cache("trim --older-than 12h"), 0);
    cr_assert_not(t_exists(entry_path(&keys[2])));
    cr_assert(t_exists(entry_path(&keys[3])));
    cr_assert_eq(recorded_total(), sizes[3]);
}

static int count_usage_lists(void)
{
    DIR *dir = opendir(cache_dir);
    cr_assert_not_null(dir);
    int count = 0;
    for (struct dirent *dirent; (dirent = readdir(dir)) != NULL;)
        count += ends_with(dirent->d_name, ZC_USAGE_SUFFIX);
    closedir(dir);
    return count;
}

/* One usage list per argument set: trimming to nothing leaves none. */
Test(tool, trim_to_zero_removes_every_usage_list)
{
    zc_disk_tier *tier = open_cache(0);
    zc_key keys[2] = {t_key(1), t_key(2)};
    store_entry(tier, &keys[0], 0, 20000, NULL);
    for (uint64_t i = 0; i < 25; i++) {
        zc_key program = t_key(800 + i);
        cr_assert_eq(zc_disk_tier_write_usage(tier, program.bytes, keys, 2), ZC_OK);
    }
    zc_disk_tier_close(tier);
    cr_assert_eq(count_usage_lists(), 25);
    cr_assert_eq(tool_in_cache("trim --max-size 0"), 0, "%s", run.err);
    cr_assert(strncmp(run.out, "removed 1 entries (", 19) == 0, "%s", run.out);
    cr_assert_eq(count_usage_lists(), 0);
    cr_assert_eq(recorded_total(), 0);
}

Test(tool, clear_removes_every_entry_and_keeps_the_counters)
{
    zc_disk_tier *tier = open_cache(0);
    zc_key keys[3];
    for (int i = 0; i < 3; i++) {
        keys[i] = t_key(500 + (uint64_t)i);
        store_entry(tier, &keys[i], 0, 20000, i == 0 ? "trace text\n" : NULL);
    }
    zc_stats_counters delta = sample_delta();
    cr_assert_eq(zc_stats_merge(tier, &delta), ZC_OK);
    zc_disk_tier_close(tier);
    add_driver_entry();
    char trace[PATH_MAX];
    snprintf(trace, sizeof trace, "%.*s.trace", (int)(strlen(entry_path(&keys[0])) - 9),
             entry_path(&keys[0]));
    cr_assert(t_exists(trace));

    cr_assert_eq(tool_in_cache("clear"), 0, "%s", run.err);
    cr_assert(strncmp(run.out, "removed 4 entries (", 19) == 0, "%s", run.out);
    cr_assert(ends_with(run.out, "; 0 entries (0 B) remain\n"), "%s", run.out);
    uint64_t entries;
    cr_assert_eq(scanned_total(&entries), 0);
    cr_assert_eq(entries, 0);
    cr_assert_eq(recorded_total(), 0);
    cr_assert_not(t_exists(trace));
    cr_assert_eq(tool_in_cache("stats --json"), 0);
    cr_assert_eq(json_u64(run.out, "d['entries']"), 0);
    cr_assert_eq(json_u64(run.out, "d['counters']['misses']"), 5);
}

/* ---- config ---- */

/* ---- export and import ---- */

/* Stores count entries of real ELF bytes (keys seed..seed+count-1). */
/* Odd keys are OpenCL's (.cl_cache): bundles carry both kinds. */
static void fill_for_export(zc_key *keys, uint64_t *sizes, int count, uint64_t seed)
{
    zc_disk_tier *tier = open_cache(0);
    for (int i = 0; i < count; i++) {
        keys[i] = t_key(seed + (uint64_t)i);
        keys[i].kind = i % 2 != 0 ? ZC_ENTRY_OPENCL : ZC_ENTRY_LEVEL_ZERO;
        sizes[i] = store_entry(tier, &keys[i], 700 * (size_t)i, 15000, NULL);
    }
    zc_disk_tier_close(tier);
}

/* in_scratch(name) in a buffer of its own: in_scratch's are reused. */
static const char *scratch_path(char path[PATH_MAX], const char *name)
{
    snprintf(path, PATH_MAX, "%s", in_scratch(name));
    return path;
}

/* The entry file of key under dir, whole. */
static char *entry_bytes_in(const char *dir, const zc_key *key, size_t *size)
{
    char path[PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s", dir, entry_rel(key));
    return read_text(path, size);
}

static void assert_same_entry_files(const char *other, const zc_key *key)
{
    size_t size, other_size;
    char *bytes = entry_bytes_in(cache_dir, key, &size);
    char *copy = entry_bytes_in(other, key, &other_size);
    cr_assert_not_null(bytes);
    cr_assert_not_null(copy, "%s not imported", entry_rel(key));
    cr_assert_eq(other_size, size);
    cr_assert_arr_eq(copy, bytes, size, "%s differs", entry_rel(key));
    free(bytes);
    free(copy);
}

/* Where each record of a bundle starts: offsets[i] is entry i's record,
 * offsets[count] the end marker. Reads the format independently of the core. */
static int bundle_records(const char *bundle, size_t bundle_size, size_t *offsets, int max)
{
    size_t at = ZC_BUNDLE_HEADER_SIZE;
    int count = 0;
    while (at + 40 <= bundle_size && count <= max) {
        uint64_t size = 0;
        for (int i = 7; i >= 0; i--)
            size = size << 8 | (uint8_t)bundle[at + 32 + (size_t)i];
        offsets[count] = at;
        if (size == 0)
            return count;
        count++;
        at += 40 + size;
    }
    cr_assert_fail("no end marker");
    return -1;
}

/* Exports count fresh entries (keys seed...) to the scratch bundle.zcb and
 * returns its bytes, with where each record starts (bundle_records). */
static char *exported_bundle(int count, uint64_t seed, char bundle[PATH_MAX], size_t *bundle_size,
                             size_t *offsets)
{
    zc_key keys[8];
    uint64_t sizes[8];
    cr_assert_leq(count, 8);
    fill_for_export(keys, sizes, count, seed);
    scratch_path(bundle, "bundle.zcb");
    cr_assert_eq(tool_in_cache("export '%s'", bundle), 0, "%s", run.err);
    char *bytes = read_text(bundle, bundle_size);
    cr_assert_not_null(bytes);
    cr_assert_eq(bundle_records(bytes, *bundle_size, offsets, count), count);
    return bytes;
}

Test(tool, export_then_import_copies_every_entry_byte_for_byte)
{
    zc_key keys[4];
    uint64_t sizes[4];
    fill_for_export(keys, sizes, 4, 900);
    add_driver_entry();
    char bundle_path[PATH_MAX];
    const char *bundle = scratch_path(bundle_path, "bundle.zcb");
    cr_assert_eq(tool_in_cache("export '%s'", bundle), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.err, "exported 4 entries, skipped 0 bad; 1 of the driver's own "
                                       "entries not exported"),
                       "%s", run.err);
    char other_path[PATH_MAX];
    const char *other = scratch_path(other_path, "other");
    cr_assert_eq(tool("--dir '%s' import '%s'", other, bundle), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.err, "imported 4 entries, 0 bad, 0 too large; 0 evicted"), "%s",
                       run.err);
    for (int i = 0; i < 4; i++)
        assert_same_entry_files(other, &keys[i]);
    cr_assert_eq(tool("--dir '%s' verify", other), 0, "%s", run.out);
    cr_assert_str_eq(run.out, "checked 4 entries: 0 bad\n");

    /* Through pipes, into a third cache; importing again changes nothing. */
    char third_path[PATH_MAX];
    const char *third = scratch_path(third_path, "third");
    char command[4 * PATH_MAX];
    snprintf(command, sizeof command,
             "'%s' --dir '%s' export - 2>/dev/null | '%s' --dir '%s' import - 2>'%s'", ZC_TOOL_PATH,
             cache_dir, ZC_TOOL_PATH, third, in_scratch("stderr"));
    cr_assert_eq(run_command(command), 0, "%s", run.err);
    for (int i = 0; i < 4; i++)
        assert_same_entry_files(third, &keys[i]);
    cr_assert_eq(tool("--dir '%s' import '%s'", third, bundle), 0, "%s", run.err);
    cr_assert_eq(tool("--dir '%s' stats --json", third), 0);
    cr_assert_eq(json_u64(run.out, "d['entries']"), 4, "%s", run.out);
}

Test(tool, export_leaves_out_bad_entries_and_says_which)
{
    zc_key keys[3];
    uint64_t sizes[3];
    fill_for_export(keys, sizes, 3, 920);
    damage_byte(&keys[1], -1);
    char bundle_path[PATH_MAX];
    const char *bundle = scratch_path(bundle_path, "bundle.zcb");
    cr_assert_eq(tool_in_cache("export '%s'", bundle), 1);
    char line[256];
    snprintf(line, sizeof line, "skipped  %s: ", entry_rel(&keys[1]));
    cr_assert_not_null(line_starting(run.err, line), "%s", run.err);
    cr_assert_not_null(strstr(run.err, "exported 2 entries, skipped 1 bad"), "%s", run.err);
    char other_path[PATH_MAX];
    const char *other = scratch_path(other_path, "other");
    cr_assert_eq(tool("--dir '%s' import '%s'", other, bundle), 0, "%s", run.err);
    assert_same_entry_files(other, &keys[0]);
    assert_same_entry_files(other, &keys[2]);
    size_t size;
    cr_assert_null(entry_bytes_in(other, &keys[1], &size));
}

/* Every way an entry inside a bundle can be bad, each reported with its key
 * while the good ones around it are imported. */
Test(tool, import_reports_bad_entries_and_keeps_the_good_ones)
{
    char bundle[PATH_MAX];
    size_t bundle_size, offsets[6];
    char *bytes = exported_bundle(5, 940, bundle, &bundle_size, offsets);
    /* Records are in path order: find which key each holds. */
    zc_key in_order[5];
    for (int i = 0; i < 5; i++)
        memcpy(in_order[i].bytes, bytes + offsets[i], ZC_KEY_SIZE);
    in_order[1].bytes[0] ^= 0x01;         /* where the damaged record would put it */
    bytes[offsets[0] + 40 + 100] ^= 0x40; /* device name: header checksum */
    bytes[offsets[1]] ^= 0x01;            /* the record's key is not the entry's */
    bytes[offsets[3] - 2] ^= 0x10;        /* payload: zstd checksum (end of entry 2) */
    t_write_file(bundle, bytes, bundle_size);
    free(bytes);
    char other_path[PATH_MAX];
    const char *other = scratch_path(other_path, "other");
    cr_assert_eq(tool("--dir '%s' import '%s'", other, bundle), 1);
    cr_assert_eq(count_of(run.err, "bad      "), 3, "%s", run.err);
    cr_assert_not_null(strstr(run.err, "imported 2 entries, 3 bad"), "%s", run.err);
    size_t size;
    for (int i = 0; i < 5; i++) {
        char *copy = entry_bytes_in(other, &in_order[i], &size);
        cr_assert_eq(copy != NULL, i == 3 || i == 4, "entry %d", i);
        free(copy);
    }
    assert_same_entry_files(other, &in_order[3]);
    assert_same_entry_files(other, &in_order[4]);
    char line[256];
    for (int i = 0; i < 3; i++) {
        char hex[ZC_KEY_HEX_SIZE];
        zc_key_to_hex(&in_order[i], hex);
        snprintf(line, sizeof line, "bad      %s: ", hex);
        cr_assert_not_null(line_starting(run.err, line), "%s", run.err);
    }
    cr_assert_not_null(strstr(run.err, "header checksum mismatch"), "%s", run.err);
    cr_assert_not_null(strstr(run.err, "entry holds another key"), "%s", run.err);
}

/* A bundle cut anywhere: what came before the cut is imported, and the
 * import fails saying where the bundle ended. */
Test(tool, a_truncated_bundle_fails_after_importing_what_precedes_the_cut)
{
    char bundle[PATH_MAX];
    size_t bundle_size, offsets[4];
    char *bytes = exported_bundle(3, 960, bundle, &bundle_size, offsets);
    const struct {
        size_t length;
        int imported;
        const char *says;
    } cuts[] = {
        {0, 0, "not a zecache bundle"},
        {10, 0, "not a zecache bundle"},
        {ZC_BUNDLE_HEADER_SIZE, 0, "bundle ends before entry 1"},
        {offsets[1] + 20, 1, "bundle ends before entry 2"},
        {offsets[1] + 100, 1, "bundle ends inside entry 2"},
        {offsets[3], 3, "bundle ends before entry 4 or its end marker"},
        {bundle_size - ZC_BUNDLE_TAG_SIZE - 1, 3, "bundle ends inside its end marker"},
        {bundle_size - 1, 3, "bundle ends inside its checksum"},
    };
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        char name[64], other[PATH_MAX];
        snprintf(name, sizeof name, "cut%zu", c);
        scratch_path(other, name);
        t_write_file(bundle, bytes, cuts[c].length);
        cr_assert_eq(tool("--dir '%s' import '%s'", other, bundle), 1, "cut %zu", c);
        cr_assert_not_null(strstr(run.err, cuts[c].says), "cut %zu: %s", c, run.err);
        tool("--dir '%s' stats --json", other);
        cr_assert_eq(json_u64(run.out, "d['entries']"), (uint64_t)cuts[c].imported, "cut %zu", c);
    }
    /* Bytes after the end, and an end that miscounts, are malformed too. */
    char *longer = malloc(bundle_size + 1);
    memcpy(longer, bytes, bundle_size);
    longer[bundle_size] = 'x';
    t_write_file(bundle, longer, bundle_size + 1);
    char long_path[PATH_MAX], miscount_path[PATH_MAX];
    cr_assert_eq(tool("--dir '%s' import '%s'", scratch_path(long_path, "long"), bundle), 1);
    cr_assert_not_null(strstr(run.err, "bytes follow the end"), "%s", run.err);
    bytes[bundle_size - ZC_BUNDLE_TAG_SIZE - 8] = 7;
    t_write_file(bundle, bytes, bundle_size);
    cr_assert_eq(tool("--dir '%s' import '%s'", scratch_path(miscount_path, "miscount"), bundle),
                 1);
    cr_assert_not_null(strstr(run.err, "bundle says it holds 7 entries, not 3"), "%s", run.err);
    free(longer);
    free(bytes);
}

Test(tool, import_stays_within_the_size_limit)
{
    zc_key keys[6];
    uint64_t sizes[6];
    fill_for_export(keys, sizes, 6, 980);
    char bundle_path[PATH_MAX];
    const char *bundle = scratch_path(bundle_path, "bundle.zcb");
    cr_assert_eq(tool_in_cache("export '%s'", bundle), 0, "%s", run.err);
    /* Room for about three of the six, and for the largest payload (a load
     * refuses a payload above the limit, so a store never keeps one). */
    uint64_t limit = sizes[0] + sizes[1] + sizes[2];
    if (limit < 16000)
        limit = 16000;
    cr_assert_gt(sizes[0] + sizes[1] + sizes[2] + sizes[3] + sizes[4] + sizes[5], limit);
    char other_path[PATH_MAX];
    const char *other = scratch_path(other_path, "other");
    char setting[64];
    snprintf(setting, sizeof setting, "%llu", (unsigned long long)limit);
    setenv("NEO_CACHE_MAX_SIZE", setting, 1);
    cr_assert_eq(tool("--dir '%s' import '%s'", other, bundle), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.err, "imported 6 entries, 0 bad, 0 too large"), "%s", run.err);
    char *import_report = strdup(run.err);
    cr_assert_eq(tool("--dir '%s' stats --json", other), 0);
    uint64_t bytes = json_u64(run.out, "d['bytes']");
    uint64_t entries = json_u64(run.out, "d['entries']");
    cr_assert_leq(bytes, limit);
    cr_assert_geq(entries, 2);
    cr_assert_lt(entries, 6);
    char says[64];
    snprintf(says, sizeof says, "%llu evicted to make room", (unsigned long long)(6 - entries));
    cr_assert_not_null(strstr(import_report, says), "%s: %s", says, import_report);
    free(import_report);
    /* An entry larger than the whole limit is skipped and said so. */
    setenv("NEO_CACHE_MAX_SIZE", "4096", 1);
    char tiny[PATH_MAX];
    cr_assert_eq(tool("--dir '%s' import '%s'", scratch_path(tiny, "tiny"), bundle), 0, "%s",
                 run.err);
    cr_assert_not_null(strstr(run.err, "imported 0 entries, 0 bad, 6 too large"), "%s", run.err);
}

Test(tool, config_shows_values_and_where_they_came_from)
{
    setenv("NEO_CACHE_MAX_SIZE", "abc", 1);
    setenv("NEO_CACHE_COMPRESSION_LEVEL", "5", 1);
    cr_assert_eq(tool_in_cache("config"), 0, "%s", run.err);
    const char *line = line_starting(run.out, "NEO_CACHE_MAX_SIZE ");
    cr_assert_not_null(strstr(line, " 1073741824 (1.0 GiB) "), "%s", line);
    cr_assert(ends_with(line, " invalid NEO_CACHE_MAX_SIZE=\"abc\": default used"), "%s", line);
    line = line_starting(run.out, "NEO_CACHE_COMPRESSION_LEVEL ");
    cr_assert_not_null(strstr(line, " 5 "), "%s", line);
    cr_assert(ends_with(line, " environment"), "%s", line);
    line = line_starting(run.out, "NEO_CACHE_MEMORY_SIZE ");
    cr_assert(ends_with(line, " default"), "%s", line);
    line = line_starting(run.out, "NEO_CACHE_REMOTE_MIN_COMPILE_MS ");
    cr_assert_str_eq(line, "NEO_CACHE_REMOTE_MIN_COMPILE_MS 0 (every module)                 "
                           "default");
    setenv("NEO_CACHE_REMOTE_MIN_COMPILE_MS", "250", 1);
    cr_assert_eq(tool_in_cache("config"), 0, "%s", run.err);
    line = line_starting(run.out, "NEO_CACHE_REMOTE_MIN_COMPILE_MS ");
    cr_assert_str_eq(line, "NEO_CACHE_REMOTE_MIN_COMPILE_MS 250 (faster: local only)         "
                           "environment");
    setenv("NEO_CACHE_REMOTE_MIN_COMPILE_MS", "-1", 1);
    cr_assert_eq(tool_in_cache("config"), 0, "%s", run.err);
    line = line_starting(run.out, "NEO_CACHE_REMOTE_MIN_COMPILE_MS ");
    cr_assert_str_eq(line, "NEO_CACHE_REMOTE_MIN_COMPILE_MS 0 (every module)                 "
                           "invalid NEO_CACHE_REMOTE_MIN_COMPILE_MS=\"-1\": default used");
    line = line_starting(run.out, "NEO_CACHE_DIR ");
    cr_assert_not_null(strstr(line, cache_dir), "%s", line);
    cr_assert(ends_with(line, " --dir"), "%s", line);
    char expected[PATH_MAX + 32];
    snprintf(expected, sizeof expected, "directory %s is usable", cache_dir);
    cr_assert_not_null(line_starting(run.out, expected));
}

/* How a user sees that the driver's own cache stays off, and what it left. */
Test(tool, config_says_the_drivers_cache_is_off_and_counts_its_entries)
{
    cr_assert_eq(tool_in_cache("config"), 0, "%s", run.err);
    cr_assert_not_null(line_starting(run.out, "driver's own cache: off while the layer runs"), "%s",
                       run.out);
    cr_assert_null(strstr(run.out, "driver's own entries"), "%s", run.out);
    add_driver_entry();
    cr_assert_eq(tool_in_cache("config"), 0, "%s", run.err);
    cr_assert_not_null(line_starting(run.out, "driver's own entries here: 1 "), "%s", run.out);
}

Test(tool, config_reads_the_directory_as_the_layer_does)
{
    setenv("NEO_CACHE_DIR", cache_dir, 1);
    cr_assert_eq(tool("config"), 0, "%s", run.err);
    const char *line = line_starting(run.out, "NEO_CACHE_DIR ");
    cr_assert_not_null(strstr(line, cache_dir), "%s", line);
    cr_assert(ends_with(line, " environment"), "%s", line);
    unsetenv("NEO_CACHE_DIR");
    setenv("XDG_CACHE_HOME", scratch, 1);
    cr_assert_eq(tool("config"), 0, "%s", run.err);
    line = line_starting(run.out, "NEO_CACHE_DIR ");
    cr_assert_not_null(strstr(line, in_scratch("neo_compiler_cache")), "%s", line);
    cr_assert(ends_with(line, " default ($XDG_CACHE_HOME or $HOME)"), "%s", line);
}

Test(tool, an_unusable_directory_is_explained)
{
    write_text(cache_dir, "a file, not a directory");
    cr_assert_eq(tool_in_cache("config"), 1);
    char expected[PATH_MAX + 64];
    snprintf(expected, sizeof expected, "directory %s is NOT usable", cache_dir);
    cr_assert_not_null(line_starting(run.out, expected));
    cr_assert_not_null(strstr(run.err, "is not a directory"), "%s", run.err);
    static const char *const commands[] = {"stats", "ls",         "verify", "trim",
                                           "clear", "zero-stats", "show ab"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        cr_assert_eq(tool_in_cache("%s", commands[i]), 1, "%s", commands[i]);
        cr_assert_not_null(strstr(run.err, "cannot use the cache directory"), "%s", commands[i]);
    }
}

/* As a user who may only read root's cache: config says it is read-only,
 * export works, import fails at its first store. */
Test(tool, a_read_only_directory_is_usable_for_reading)
{
    if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
        scratch_remove();
        cr_skip_test("needs root and setpriv to run the tool as nobody");
    }
    zc_disk_tier *tier = open_cache(0);
    zc_key key = t_key(650);
    store_entry(tier, &key, 0, 20000, NULL);
    zc_disk_tier_close(tier);
    char command[PATH_MAX + 64];
    snprintf(command, sizeof command, "chmod -R a+rX '%s'", scratch);
    cr_assert_eq(system(command), 0);
    char bundle[PATH_MAX];
    scratch_path(bundle, "bundle.zcb");
    cr_assert_eq(tool_in_cache("export '%s'", bundle), 0, "%s", run.err);
    cr_assert_eq(chmod(bundle, 0644), 0);
    const char *as_nobody = "/usr/bin/setpriv --reuid=nobody --regid=nogroup --clear-groups";
    char args[8192];
    snprintf(args, sizeof args, "%s '%s' --dir '%s' config", as_nobody, ZC_TOOL_PATH, cache_dir);
    cr_assert_eq(run_command_with_stderr(args), 0, "%s", run.err);
    char expected[PATH_MAX + 64];
    snprintf(expected, sizeof expected, "directory %s is usable read-only", cache_dir);
    cr_assert_not_null(line_starting(run.out, expected), "%s", run.out);
    snprintf(args, sizeof args, "%s '%s' --dir '%s' export - >/dev/null", as_nobody, ZC_TOOL_PATH,
             cache_dir);
    cr_assert_eq(run_command_with_stderr(args), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.err, "exported 1 entries"), "%s", run.err);
    snprintf(args, sizeof args, "%s '%s' --dir '%s' import '%s'", as_nobody, ZC_TOOL_PATH,
             cache_dir, bundle);
    cr_assert_eq(run_command_with_stderr(args), 1, "%s", run.err);
    cr_assert_not_null(strstr(run.err, "cannot store"), "%s", run.err);
}

Test(tool, the_tool_still_manages_a_directory_the_layer_does_not_use)
{
    setenv("NEO_CACHE_PERSISTENT", "0", 1);
    zc_disk_tier *tier = open_cache(0);
    zc_key key = t_key(600);
    store_entry(tier, &key, 0, 20000, NULL);
    zc_disk_tier_close(tier);
    cr_assert_eq(tool_in_cache("stats --json"), 0);
    cr_assert_eq(json_u64(run.out, "d['entries']"), 1);
    cr_assert_eq(tool_in_cache("config"), 0);
    cr_assert_not_null(strstr(run.out, "NEO_CACHE_PERSISTENT=0"));
}

/* ---- exec ---- */

Test(tool, exec_sets_the_layer_environment_and_passes_the_exit_status)
{
    setenv("ZECACHE_LAYER_DIR", "/opt/zc/layers", 1);
    setenv("LD_LIBRARY_PATH", "/old/lib", 1);
    setenv("NEO_CACHE_MAX_SIZE", "12345", 1);
    static const char *const forms[] = {"exec -- sh", "exec sh"};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(tool_in_cache("%s -c 'echo \"$LD_LIBRARY_PATH|${ZEL_LIBRARY_PATH-unset}|"
                                   "$ZE_ENABLE_VALIDATION_LAYER|$NEO_CACHE_DIR|"
                                   "$NEO_CACHE_MAX_SIZE\"; exit 7'",
                                   forms[i]),
                     7, "%s", run.err);
        char expected[PATH_MAX + 128];
        snprintf(expected, sizeof expected, "/opt/zc/layers:/old/lib|unset|1|%s|12345\n",
                 cache_dir);
        cr_assert_str_eq(run.out, expected);
    }
    unsetenv("LD_LIBRARY_PATH");
    cr_assert_eq(tool("exec sh -c 'echo \"$LD_LIBRARY_PATH\"'"), 0);
    cr_assert_str_eq(run.out, "/opt/zc/layers\n");
    setenv("ZEL_LIBRARY_PATH", "/opt/other/layers", 1);
    cr_assert_eq(tool("exec -- sh -c 'exit 0'"), 125);
    cr_assert_not_null(strstr(run.err, "ZEL_LIBRARY_PATH=/opt/other/layers is set"), "%s", run.err);
    unsetenv("ZEL_LIBRARY_PATH");
}

/* The OpenCL layer comes first in OPENCL_LAYERS, and only once. */
Test(tool, exec_enables_the_opencl_layer)
{
    setenv("ZECACHE_LAYER_DIR", "/opt/zc/layers", 1);
    unsetenv("OPENCL_LAYERS");
    cr_assert_eq(tool("exec sh -c 'echo \"$OPENCL_LAYERS\"'"), 0, "%s", run.err);
    cr_assert_str_eq(run.out, "/opt/zc/layers/libzecache_opencl_layer.so.1\n");
    setenv("OPENCL_LAYERS", "/other/libtrace.so", 1);
    cr_assert_eq(tool("exec sh -c 'echo \"$OPENCL_LAYERS\"'"), 0, "%s", run.err);
    cr_assert_str_eq(run.out, "/opt/zc/layers/libzecache_opencl_layer.so.1:/other/libtrace.so\n");
    setenv("OPENCL_LAYERS", "/other/libtrace.so:/opt/zc/layers/libzecache_opencl_layer.so.1", 1);
    cr_assert_eq(tool("exec sh -c 'echo \"$OPENCL_LAYERS\"'"), 0, "%s", run.err);
    cr_assert_str_eq(run.out, "/other/libtrace.so:/opt/zc/layers/libzecache_opencl_layer.so.1\n");
    setenv("OPENCL_LAYERS", "/opt/zc/layers/libzecache_opencl_layer.so.10", 1);
    cr_assert_eq(tool("exec sh -c 'echo \"$OPENCL_LAYERS\"'"), 0, "%s", run.err);
    cr_assert_str_eq(run.out, "/opt/zc/layers/libzecache_opencl_layer.so.1:"
                              "/opt/zc/layers/libzecache_opencl_layer.so.10\n");
    unsetenv("OPENCL_LAYERS");
}

Test(tool, exec_reports_programs_it_cannot_run_like_a_shell)
{
    setenv("ZECACHE_LAYER_DIR", "/opt/zc/layers", 1);
    cr_assert_eq(tool("exec -- /nonexistent/program"), 127);
    cr_assert_not_null(strstr(run.err, "/nonexistent/program: command not found"), "%s", run.err);
    cr_assert_eq(tool("exec -- no-such-program-zecache-test"), 127);
    write_text(in_scratch("not_executable"), "#!/bin/sh\n");
    cr_assert_eq(tool("exec -- '%s'", in_scratch("not_executable")), 126);
    cr_assert_eq(tool("exec -- '%s'", scratch), 126); /* a directory */
}

Test(tool, exec_finds_the_layer_beside_the_tool)
{
    unsetenv("LD_LIBRARY_PATH");
    int status = tool("exec -- sh -c 'echo \"${LD_LIBRARY_PATH%%%%:*}\"'");
    if (t_exists(LAYER_FILE)) {
        char layer_dir[PATH_MAX], expected[PATH_MAX + 2];
        cr_assert_not_null(realpath(ZC_LAYER_BUILD_DIR, layer_dir));
        snprintf(expected, sizeof expected, "%s\n", layer_dir);
        cr_assert_eq(status, 0, "%s", run.err);
        cr_assert_str_eq(run.out, expected);
    } else {
        cr_assert_eq(status, 125);
        cr_assert_not_null(strstr(run.err, "cannot find the zecache layer"), "%s", run.err);
    }
}

/* ---- text from entries is escaped ---- */

/* No byte that a terminal would act on: C0 controls but newline and tab,
 * DEL, C1 controls (as UTF-8 or raw), and no invalid UTF-8. */
static void assert_terminal_safe(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; p[i] != '\0'; i++) {
        cr_assert(p[i] >= 0x20 || p[i] == '\n' || p[i] == '\t', "raw 0x%02x at %zu: %s", p[i], i,
                  text);
        cr_assert_neq(p[i], 0x7F, "raw DEL at %zu", i);
        cr_assert_neq(p[i], 0xFF, "raw invalid UTF-8 at %zu", i);
        cr_assert(!(p[i] == 0xC2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F), "raw C1 at %zu", i);
        cr_assert(p[i] < 0x80 || p[i] >= 0xC0 || (i > 0 && p[i - 1] >= 0x80),
                  "stray continuation byte 0x%02x at %zu", p[i], i);
    }
}

#define PLANTED_DEVICE                                                                             \
    "\x1b[31mred\x1b[0m \xc2\x9b"                                                                  \
    "2J"
#define PLANTED_DRIVER "\x1b]0;t\x07\xff\x7f"
static const char planted_log[] = "one\n\x1b[2Jcleared\ttab\n\xc3\xa9t\xc3\xa9\0nul\x9b\xc3";

static void plant_hostile_entry(char hex[ZC_KEY_HEX_SIZE])
{
    zc_disk_tier *tier = open_cache(0);
    zc_key key = t_key(900);
    zc_artifact_meta meta = t_meta();
    snprintf(meta.device_name, sizeof meta.device_name, "%s", PLANTED_DEVICE);
    snprintf(meta.driver_version, sizeof meta.driver_version, "%s", PLANTED_DRIVER);
    uint8_t binary[100] = {1, 2, 3};
    zc_artifact *artifact =
        zc_artifact_create(binary, sizeof binary, planted_log, sizeof planted_log - 1, &meta);
    cr_assert_eq(zc_disk_tier_store(tier, &key, artifact, "trace \x1b[5mblink\n"), ZC_OK);
    zc_artifact_unref(artifact);
    zc_disk_tier_close(tier);
    zc_key_to_hex(&key, hex);
}

Test(tool, ls_and_show_escape_what_entries_hold)
{
    char hex[ZC_KEY_HEX_SIZE];
    plant_hostile_entry(hex);
    cr_assert_eq(tool_in_cache("ls"), 0, "%s", run.err);
    assert_terminal_safe(run.out);
    cr_assert_not_null(strstr(run.out, "\\x1b[31mred\\x1b[0m \\u009b2J"), "%s", run.out);
    cr_assert_not_null(strstr(run.out, "\\x1b]0;t\\x07   "), "%s", run.out); /* cut to fit */

    cr_assert_eq(tool_in_cache("show %.12s", hex), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "driver version   \\x1b]0;t\\x07\\xff\\x7f\n"), "%s",
                       run.out);
    assert_terminal_safe(run.out);
    cr_assert_not_null(strstr(run.out, "device           \\x1b[31mred\\x1b[0m \\u009b2J\n"), "%s",
                       run.out);
    cr_assert_not_null(
        strstr(run.out, "one\n\\x1b[2Jcleared\ttab\n\xc3\xa9t\xc3\xa9\\x00nul\\x9b\\xc3"), "%s",
        run.out);
    cr_assert_not_null(strstr(run.out, "trace \\x1b[5mblink\n"), "%s", run.out);

    /* JSON escapes them its own way, and the strings read back unchanged. */
    cr_assert_eq(tool_in_cache("ls --json"), 0, "%s", run.err);
    assert_terminal_safe(run.out);
    setenv("ZC_PLANTED_DEVICE", PLANTED_DEVICE, 1);
    cr_assert_str_eq(json_eval(run.out, "d['entries'][0]['device'].encode('utf-8') == "
                                        "os.environb[b'ZC_PLANTED_DEVICE']"),
                     "True");
}

/* ---- exec with the real driver (plain builds with the layer) ---- */

#ifdef ZC_PROBE_PATH
TestSuite(exec_e2e, .init = scratch_create, .fini = scratch_remove, .timeout = 300);

#define PROBE_KERNEL ZC_KERNEL_DIR "/e2e_vector_add.spv"

/* ze_probe through `zecache exec`, in the scratch directory (the driver
 * writes an .aub file into the current directory). */
static int probe_through_tool_with(const char *probe_options)
{
    char command[4 * PATH_MAX];
    snprintf(command, sizeof command,
             "cd '%s' && '%s' --dir '%s' exec -- '%s' %s --spirv '%s' 2>'%s'", scratch,
             ZC_TOOL_PATH, cache_dir, ZC_PROBE_PATH, probe_options, PROBE_KERNEL,
             in_scratch("stderr"));
    return run_command(command);
}

static int probe_through_tool(void)
{
    return probe_through_tool_with("");
}

static void run_probe_twice(void)
{
    if (!t_exists(LAYER_FILE)) {
        scratch_remove(); /* a skipped test's fini does not run */
        cr_skip_test("the layer is not built (%s)", LAYER_FILE);
    }
    zc_pretend_device_setenv();
    setenv("PrintDebugMessages", "1", 1);
    cr_assert_eq(probe_through_tool(), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0"), "%s", run.out);
    cr_assert_eq(count_of(run.err, "[Cache]: miss "), 1, "%s", run.err);
    cr_assert_eq(tool_in_cache("stats --json"), 0);
    cr_assert_eq(json_u64(run.out, "d['entries']"), 1);
    cr_assert_eq(probe_through_tool(), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0"), "%s", run.out);
    cr_assert_eq(count_of(run.err, "[Cache]: hit disk "), 1, "%s", run.err);
    cr_assert_eq(count_of(run.err, "[Cache]: miss "), 0, "%s", run.err);
}

Test(exec_e2e, the_second_run_hits_the_disk_tier)
{
    run_probe_twice();
}

/* Loaders from 1.15 open every layer from ZEL_LIBRARY_PATH alone when it is
 * set: the layer must come in without taking the tracing layer away. */
Test(exec_e2e, the_tracing_layer_loads_beside_the_cache_layer)
{
    if (!t_exists(LAYER_FILE)) {
        scratch_remove();
        cr_skip_test("the layer is not built (%s)", LAYER_FILE);
    }
    zc_pretend_device_setenv();
    setenv("ZE_ENABLE_TRACING_LAYER", "1", 1);
    cr_assert_eq(probe_through_tool_with("--layers"), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "layer libze_validation_layer.so.1\n"), "%s", run.out);
    cr_assert_not_null(strstr(run.out, "layer libze_tracing_layer.so.1"), "%s", run.out);
    cr_assert_not_null(strstr(run.out, "result 0x0"), "%s", run.out);
    unsetenv("ZE_ENABLE_TRACING_LAYER");
}

/* Needs the layer to call zc_stats_merge at exit. */
Test(exec_e2e, both_runs_land_in_the_persistent_counters)
{
    run_probe_twice();
    cr_assert_eq(tool_in_cache("stats --json"), 0);
    cr_assert_eq(json_u64(run.out, "d['counters']['misses']"), 1, "%s", run.out);
    cr_assert_eq(json_u64(run.out, "d['counters']['disk_hits']"), 1, "%s", run.out);
    cr_assert_eq(json_u64(run.out, "d['counters']['stores']"), 1, "%s", run.out);
    cr_assert_gt(json_u64(run.out, "d['counters']['compile_ns_saved']"), 0, "%s", run.out);
}
/* A cache exported after one run pre-warms another directory: the probe
 * there hits and compiles nothing. */
Test(exec_e2e, an_imported_bundle_serves_hits_on_a_new_machine)
{
    run_probe_twice();
    char bundle[PATH_MAX], other[sizeof cache_dir];
    scratch_path(bundle, "bundle.zcb");
    snprintf(other, sizeof other, "%s/other", scratch);
    cr_assert_eq(tool_in_cache("export '%s'", bundle), 0, "%s", run.err);
    cr_assert_eq(tool("--dir '%s' import '%s'", other, bundle), 0, "%s", run.err);
    snprintf(cache_dir, sizeof cache_dir, "%s", other);
    cr_assert_eq(probe_through_tool(), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0"), "%s", run.out);
    cr_assert_eq(count_of(run.err, "[Cache]: hit disk "), 1, "%s", run.err);
    cr_assert_eq(count_of(run.err, "[Cache]: miss "), 0, "%s", run.err);
}

/* A pack made from one run's cache serves a new, empty cache directory: the
 * probe there hits the pack and compiles nothing; the pack replaced by a
 * damaged copy, the probe compiles and gives the same result. */
Test(exec_e2e, a_pack_serves_hits_to_an_empty_directory)
{
    run_probe_twice();
    char pack[PATH_MAX], other[sizeof cache_dir];
    scratch_path(pack, "entries.zcp");
    snprintf(other, sizeof other, "%s/other", scratch);
    cr_assert_eq(tool_in_cache("pack '%s'", pack), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.err, "packed 1 entries, skipped 0 bad"), "%s", run.err);
    cr_assert_eq(tool("pack --verify '%s'", pack), 0, "%s", run.err);
    cr_assert_str_eq(run.out, "checked 1 entries: 0 bad\n");
    cr_assert_eq(tool("pack --list '%s'", pack), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "  L0\n"), "%s", run.out);
    cr_assert_eq(count_of(run.out, "\n"), 2, "%s", run.out); /* the columns' names, the entry */
    snprintf(cache_dir, sizeof cache_dir, "%s", other);
    setenv("NEO_CACHE_PACKS", pack, 1);
    cr_assert_eq(probe_through_tool(), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0"), "%s", run.out);
    cr_assert_eq(count_of(run.err, ", from the pack "), 1, "%s", run.err);
    cr_assert_eq(count_of(run.err, "[Cache]: miss "), 0, "%s", run.err);
    cr_assert_eq(tool_in_cache("stats --json"), 0);
    cr_assert_eq(json_u64(run.out, "d['counters']['pack_hits']"), 1, "%s", run.out);
    cr_assert_eq(tool_in_cache("config"), 0);
    cr_assert_not_null(strstr(run.out, pack), "%s", run.out);

    size_t size;
    uint8_t *bytes = t_read_bytes(pack, &size);
    cr_assert_not_null(bytes);
    bytes[size - 1] ^= 1; /* the tag */
    t_write_file(pack, bytes, size);
    free(bytes);
    snprintf(cache_dir, sizeof cache_dir, "%s/third", scratch);
    cr_assert_eq(probe_through_tool(), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0"), "%s", run.out);
    cr_assert_eq(count_of(run.err, "[Cache]: miss "), 1, "%s", run.err);
    cr_assert_not_null(strstr(run.err, "checksum does not match"), "%s", run.err);
    unsetenv("NEO_CACHE_PACKS");
    cr_assert_eq(tool("pack --verify '%s'", pack), 1);
    cr_assert_not_null(strstr(run.err, "checksum does not match"), "%s", run.err);
}

enum { TEAM_GID = 47101, USER_A_UID = 47201, USER_B_UID = 47301 };

/* The build tree may sit in a directory other users cannot enter (a clone
 * in /root, or in a 0700 home): they are given copies of what they run, laid
 * out as in the build (bin/ beside layers/, where `zecache exec` looks). */
static char given_tool[PATH_MAX], given_probe[PATH_MAX], given_kernel[PATH_MAX];

static void give_other_users_what_they_run(void)
{
    char command[6 * PATH_MAX];
    snprintf(command, sizeof command,
             "mkdir -m 755 '%s/given' '%s/given/bin' && cp '%s' '%s' '%s/given/bin/' && "
             "cp -a '%s' '%s/given/layers' && cp '%s' '%s/given/' && chmod -R a+rX '%s/given' "
             "2>'%s'",
             scratch, scratch, ZC_TOOL_PATH, ZC_PROBE_PATH, scratch, ZC_LAYER_BUILD_DIR, scratch,
             PROBE_KERNEL, scratch, scratch, in_scratch("stderr"));
    cr_assert_eq(run_command(command), 0, "%s", run.err);
    snprintf(given_tool, sizeof given_tool, "%s/given/bin/%s", scratch,
             strrchr(ZC_TOOL_PATH, '/') + 1);
    snprintf(given_probe, sizeof given_probe, "%s/given/bin/%s", scratch,
             strrchr(ZC_PROBE_PATH, '/') + 1);
    snprintf(given_kernel, sizeof given_kernel, "%s/given/%s", scratch,
             strrchr(PROBE_KERNEL, '/') + 1);
}

/* ze_probe through `zecache exec` as a made-up user of the team group with
 * umask 007 and NEO_CACHE_SHARED=1, in a working directory of its own. */
static int probe_as_user(uid_t uid)
{
    char work[PATH_MAX], name[32];
    snprintf(name, sizeof name, "work-%u", (unsigned)uid);
    scratch_path(work, name);
    if (!t_exists(work)) {
        cr_assert_eq(mkdir(work, 0700), 0);
        cr_assert_eq(chown(work, uid, uid), 0);
    }
    char command[6 * PATH_MAX];
    snprintf(command, sizeof command,
             "cd '%s' && NEO_CACHE_SHARED=1 '%s' --dir '%s' exec -- '%s' --spirv '%s' 2>'%s/err'",
             work, given_tool, cache_dir, given_probe, given_kernel, work);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        int out = open(in_scratch("out"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0 || dup2(out, 1) < 0)
            _exit(101);
        gid_t team = TEAM_GID;
        if (setgroups(1, &team) != 0 || setgid(uid) != 0 || setuid(uid) != 0)
            _exit(100);
        umask(007);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    clear_run();
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    run.out = read_text(in_scratch("out"), NULL);
    char err[PATH_MAX + 8];
    snprintf(err, sizeof err, "%s/err", work);
    run.err = read_text(err, NULL);
    return run.status;
}

/* The documented set-up (mkdir -m 2770, chgrp team, umask 007,
 * NEO_CACHE_SHARED=1): user B's run hits what user A's stored. */
Test(exec_e2e, two_users_of_one_group_share_a_cache_directory)
{
    if (geteuid() != 0) {
        scratch_remove();
        cr_skip_test("needs root to run as two other users");
    }
    if (!t_exists(LAYER_FILE)) {
        scratch_remove();
        cr_skip_test("the layer is not built (%s)", LAYER_FILE);
    }
    cr_assert_eq(chmod(scratch, 0755), 0);
    give_other_users_what_they_run();
    cr_assert_eq(mkdir(cache_dir, 02770), 0);
    cr_assert_eq(chown(cache_dir, 0, TEAM_GID), 0);
    cr_assert_eq(chmod(cache_dir, 02770), 0);
    zc_pretend_device_setenv();
    setenv("PrintDebugMessages", "1", 1);
    int a = probe_as_user(USER_A_UID);
    if (a == 100) {
        scratch_remove();
        cr_skip_test("cannot switch to other users here");
    }
    cr_assert_eq(a, 0, "exit %d: %s", a, run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0"), "%s", run.out);
    cr_assert_eq(count_of(run.err, "[Cache]: miss "), 1, "%s", run.err);
    cr_assert_eq(probe_as_user(USER_B_UID), 0, "%s", run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0"), "%s", run.out);
    cr_assert_eq(count_of(run.err, "[Cache]: hit disk "), 1, "%s", run.err);
    cr_assert_eq(count_of(run.err, "[Cache]: miss "), 0, "%s", run.err);
    /* root is not in the team: the tool (and a tier) would refuse the
     * directory, so the stats file is read as text. */
    char stats_file[PATH_MAX];
    snprintf(stats_file, sizeof stats_file, "%s/%s", cache_dir, ZC_STATS_FILE_NAME);
    char *stats_text = read_text(stats_file, NULL);
    cr_assert_not_null(stats_text);
    cr_assert_not_null(strstr(stats_text, "\nmisses 1\n"), "%s", stats_text);
    cr_assert_not_null(strstr(stats_text, "\ndisk_hits 1\n"), "both users' counters: %s",
                       stats_text);
    free(stats_text);
    char command[2 * PATH_MAX + 64];
    snprintf(command, sizeof command, "find '%s' -perm -o+w 2>'%s' | wc -l", cache_dir,
             in_scratch("stderr"));
    cr_assert_eq(run_command(command), 0);
    cr_assert_str_eq(run.out, "0\n", "nothing is world-writable");
}

#else
Test(exec_e2e, the_second_run_hits_the_disk_tier)
{
    cr_skip_test("ze_probe and the layer are built only without sanitizers");
}
#endif

/* With NEO_CACHE_REMOTE_SECRET_FILE set, a bundle is signed, and on import
 * nothing of it is stored unless its signature holds: entries verify
 * themselves, but only the signature says who made them. */
Test(tool, a_signed_bundle_whose_signature_fails_imports_nothing)
{
    char secret[PATH_MAX];
    t_write_secret(scratch_path(secret, "secret"), "a secret of sixteen bytes or more");
    cr_assert_eq(setenv("NEO_CACHE_REMOTE_SECRET_FILE", secret, 1), 0);
    char bundle[PATH_MAX];
    size_t bundle_size, offsets[4];
    char *bytes = exported_bundle(3, 970, bundle, &bundle_size, offsets);
    bytes[bundle_size - 1] ^= 0x01; /* the signature */
    t_write_file(bundle, bytes, bundle_size);
    char forged[PATH_MAX], intact[PATH_MAX];
    cr_assert_eq(tool("--dir '%s' import '%s'", scratch_path(forged, "forged"), bundle), 1);
    cr_assert_not_null(strstr(run.err, "nothing imported"), "%s", run.err);
    tool("--dir '%s' stats --json", forged);
    cr_assert_eq(json_u64(run.out, "d['entries']"), 0);
    bytes[bundle_size - 1] ^= 0x01;
    t_write_file(bundle, bytes, bundle_size);
    cr_assert_eq(tool("--dir '%s' import '%s'", scratch_path(intact, "intact"), bundle), 0, "%s",
                 run.err);
    tool("--dir '%s' stats --json", intact);
    cr_assert_eq(json_u64(run.out, "d['entries']"), 3);
    unsetenv("NEO_CACHE_REMOTE_SECRET_FILE");
    free(bytes);
}
