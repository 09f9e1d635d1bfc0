/* Parsing and printing shared by every command of the zecache tool, in a
 * library of their own (zecache_tool_support) so tests call them directly. */
#ifndef ZECACHE_TOOL_SUPPORT_H
#define ZECACHE_TOOL_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
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

/* ---- tool_text.c ---- */

/* Length of the valid UTF-8 sequence of two or more bytes at p (of which
 * available can be read), else 0: overlong forms, surrogates and code points
 * past U+10FFFF are invalid. */
size_t tool_utf8_sequence_length(const unsigned char *p, size_t available);

/* Writes size bytes of text (from an entry: it may hold anything) for a
 * terminal: control characters, C1 controls included, and bytes that are not
 * valid UTF-8 become \xNN or \uNNNN; with multiline, newlines and tabs stay. */
void tool_print_text(FILE *out, const char *text, size_t size, bool multiline);
/* The same for one line, into out (cut to fit, never inside an escape);
 * returns out. */
const char *tool_escape_line(const char *text, char *out, size_t out_size);

/* ---- tool_json.c ---- */

/* text as a JSON string with its quotes. Control characters (C1 included,
 * so a terminal showing the output acts on none) and bytes that are not
 * valid UTF-8 (paths may hold any) become \u escapes, the latter read as
 * Latin-1, so the output is always valid JSON. */
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
