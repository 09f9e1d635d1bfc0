/* JSON output: string escaping and a small writer for indented documents. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "tool_support.h"

static void put_escaped_byte(FILE *out, unsigned char byte)
{
    switch (byte) {
    case '"':
        fputs("\\\"", out);
        break;
    case '\\':
        fputs("\\\\", out);
        break;
    case '\n':
        fputs("\\n", out);
        break;
    case '\t':
        fputs("\\t", out);
        break;
    case '\r':
        fputs("\\r", out);
        break;
    default:
        if (byte < 0x20 || byte >= 0x7F)
            fprintf(out, "\\u%04x", byte);
        else
            fputc(byte, out);
    }
}

void tool_json_string(FILE *out, const char *text)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + strlen(text);
    fputc('"', out);
    while (p < end) {
        size_t length = *p >= 0x80 ? tool_utf8_sequence_length(p, (size_t)(end - p)) : 0;
        if (length == 2 && p[0] == 0xC2 && p[1] <= 0x9F) { /* C1 controls: for terminals */
            fprintf(out, "\\u%04x", p[1]);
            p += 2;
        } else if (length > 0) {
            fwrite(p, 1, length, out);
            p += length;
        } else {
            put_escaped_byte(out, *p++);
        }
    }
    fputc('"', out);
}

/* ---- the writer ---- */

static void indent(const tool_json *json)
{
    for (int i = 0; i < json->depth; i++)
        fputs("  ", json->out);
}

/* Separator, indentation and member name before a value. */
static void begin_value(tool_json *json, const char *key)
{
    fputs(json->has_items[json->depth] ? ",\n" : "\n", json->out);
    json->has_items[json->depth] = true;
    indent(json);
    if (key != NULL) {
        tool_json_string(json->out, key);
        fputs(": ", json->out);
    }
}

static void open_container(tool_json *json, char opener, char closer)
{
    fputc(opener, json->out);
    if (json->depth + 1 < TOOL_JSON_MAX_DEPTH)
        json->depth++;
    json->has_items[json->depth] = false;
    json->closer[json->depth] = closer;
}

void tool_json_begin(tool_json *json, FILE *out)
{
    memset(json, 0, sizeof *json);
    json->out = out;
    open_container(json, '{', '}');
}

void tool_json_end(tool_json *json)
{
    tool_json_close(json);
    fputc('\n', json->out);
}

void tool_json_open_object(tool_json *json, const char *key)
{
    begin_value(json, key);
    open_container(json, '{', '}');
}

void tool_json_open_array(tool_json *json, const char *key)
{
    begin_value(json, key);
    open_container(json, '[', ']');
}

void tool_json_close(tool_json *json)
{
    char closer = json->closer[json->depth];
    bool had_items = json->has_items[json->depth];
    if (json->depth > 0)
        json->depth--;
    if (had_items) {
        fputc('\n', json->out);
        indent(json);
    }
    fputc(closer, json->out);
}

void tool_json_text(tool_json *json, const char *key, const char *value)
{
    begin_value(json, key);
    if (value != NULL)
        tool_json_string(json->out, value);
    else
        fputs("null", json->out);
}

void tool_json_u64(tool_json *json, const char *key, uint64_t value)
{
    begin_value(json, key);
    fprintf(json->out, "%" PRIu64, value);
}

void tool_json_i64(tool_json *json, const char *key, int64_t value)
{
    begin_value(json, key);
    fprintf(json->out, "%" PRId64, value);
}

void tool_json_double(tool_json *json, const char *key, double value)
{
    begin_value(json, key);
    if (isfinite(value))
        fprintf(json->out, "%.6g", value);
    else
        fputs("null", json->out);
}

void tool_json_bool(tool_json *json, const char *key, bool value)
{
    begin_value(json, key);
    fputs(value ? "true" : "false", json->out);
}

void tool_json_null(tool_json *json, const char *key)
{
    begin_value(json, key);
    fputs("null", json->out);
}
