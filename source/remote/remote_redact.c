/* See remote_redact.h. */
#include "remote_redact.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *zc_remote_last_at(const char *text, size_t *length)
{
    const char *last = NULL;
    for (const char *at = text; *at != '\0'; at++) {
        if (*at == '@') {
            last = at;
            *length = 1;
        } else if (strncasecmp(at, "%40", 3) == 0) {
            last = at;
            *length = 3;
        }
    }
    return last;
}

/* What out holds so far, and its end. */
typedef struct text_out {
    char *bytes;
    size_t size, used;
} text_out;

static void put(text_out *out, const char *text, size_t length)
{
    if (out->used + 1 >= out->size)
        return;
    size_t room = out->size - 1 - out->used;
    if (length > room)
        length = room;
    memcpy(out->bytes + out->used, text, length);
    out->used += length;
    out->bytes[out->used] = '\0';
}

/* Attributes whose values say nothing secret: paths of files, numbers,
 * names of shards and seed nodes. Any other's value might be one ("token=",
 * "password="), whatever its name. */
static bool value_is_shown(const char *name, size_t length)
{
    static const char *const shown[] = {"connect-timeout", "timeout",       "operation-timeout",
                                        "shards",          "seeds",         "read-only",
                                        "cluster",         "ca-file",       "cert-file",
                                        "key-file",        "password-file", "bearer-token-file"};
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
        if (strlen(shown[i]) == length && strncmp(shown[i], name, length) == 0)
            return true;
    return false;
}

/* One NAME=VALUE of piece (of length), its value masked unless shown. */
static void put_setting(text_out *out, const char *piece, size_t length, bool is_option)
{
    const char *equals = memchr(piece, '=', length);
    size_t name_length = equals != NULL ? (size_t)(equals - piece) : length;
    bool shown = is_option ? name_length == 2 && strncmp(piece, "db", 2) == 0
                           : value_is_shown(piece, name_length);
    if (equals == NULL || shown) {
        put(out, piece, length);
        return;
    }
    put(out, piece, name_length);
    put(out, "=***", 4);
}

/* The URL's rest after its user information, then the attributes. */
static void put_rest(text_out *out, const char *rest)
{
    size_t url_length = strcspn(rest, "|");
    const char *query = memchr(rest, '?', url_length);
    put(out, rest, query != NULL ? (size_t)(query - rest) + 1 : url_length);
    for (const char *at = query != NULL ? query + 1 : rest + url_length; at < rest + url_length;) {
        size_t length = strcspn(at, "&|");
        put_setting(out, at, length, true);
        at += length;
        if (*at == '&')
            put(out, at++, 1);
    }
    for (const char *at = rest + url_length; *at == '|';) {
        put(out, at++, 1);
        size_t length = strcspn(at, "|");
        put_setting(out, at, length, false);
        at += length;
    }
}

void zc_remote_redact(const char *item, char *out, size_t out_size)
{
    if (out_size == 0)
        return;
    text_out text = {out, out_size, 0};
    out[0] = '\0';
    const char *scheme_end = strstr(item, "://");
    const char *start = scheme_end != NULL ? scheme_end + 3 : item;
    size_t at_length = 0;
    const char *at = zc_remote_last_at(start, &at_length);
    put(&text, item, (size_t)(start - item));
    if (at != NULL) {
        put(&text, "***@", 4);
        start = at + at_length;
    }
    put_rest(&text, start);
}
