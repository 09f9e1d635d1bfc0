/* Parsing and printing shared by every command of the zecache tool, in a
 * library of their own (zecache_tool_support) so tests call them directly. */
#ifndef ZECACHE_TOOL_SUPPORT_H
#define ZECACHE_TOOL_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- tool_units.c ---- */

/* A size: decimal digits with an optional unit K, M, G or T (either case),
 * each a power of 1024: "4096", "500K", "2g". Nothing else: no sign, no
 * spaces, no fraction, no "KB"/"KiB", nothing that overflows 64 bits. */
bool tool_parse_size(const char *text, uint64_t *bytes);

/* A duration: decimal digits with a required unit s, m, h or d (seconds,
 * minutes, hours, days; lower case only, so "M" is never read as months):
 * "30s", "15m", "12h", "7d". At most INT64_MAX seconds. */
bool tool_parse_duration(const char *text, int64_t *seconds);

enum { TOOL_SIZE_TEXT = 32, TOOL_TIME_TEXT = 32 };

/* "512 B", "1.5 KiB", "2.0 GiB". */
void tool_format_size(uint64_t bytes, char text[TOOL_SIZE_TEXT]);
/* Local time, "2024-05-01 13:45:07"; "?" when it cannot be represented. */
void tool_format_local_time(int64_t unix_seconds, char text[TOOL_TIME_TEXT]);

/* ---- tool_json.c ---- */

/* text as a JSON string with its quotes. Control characters and bytes that
 * are not valid UTF-8 (paths may hold any) become \u escapes, the latter
 * read as Latin-1, so the output is always valid JSON. */
void tool_json_string(FILE *out, const char *text);

enum { TOOL_JSON_MAX_DEPTH = 8 };

/* A writer for one indented JSON document. key is the member name inside an
 * object and NULL inside an array. */
typedef struct tool_json {
    FILE *out;
    int depth;
    bool has_items[TOOL_JSON_MAX_DEPTH];
    char closer[TOOL_JSON_MAX_DEPTH];
} tool_json;

void tool_json_begin(tool_json *json, FILE *out); /* the top-level object */
void tool_json_end(tool_json *json);              /* closes it and ends the line */
void tool_json_open_object(tool_json *json, const char *key);
void tool_json_open_array(tool_json *json, const char *key);
void tool_json_close(tool_json *json);
void tool_json_text(tool_json *json, const char *key, const char *value); /* NULL: null */
void tool_json_u64(tool_json *json, const char *key, uint64_t value);
void tool_json_i64(tool_json *json, const char *key, int64_t value);
void tool_json_double(tool_json *json, const char *key, double value); /* not finite: null */
void tool_json_bool(tool_json *json, const char *key, bool value);
void tool_json_null(tool_json *json, const char *key);

#endif
