/* See redis_reply_shape.h. The check reads the buffered bytes from the
 * reply's first byte each time more arrive: shapes are shallow and bounded,
 * so a reply's scan costs at most its bounded number of lines. */
#include "redis_reply_shape.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum {
    T_STATUS = 1,
    T_ERROR = 2,
    T_INTEGER = 4,
    T_NIL = 8,
    T_BULK = 16,
    T_ARRAY = 32,
};

/* What one element may be: its types, a bulk string's largest length, an
 * array's element count and the shapes of its first and other elements. */
typedef struct shape {
    unsigned types;
    uint64_t max_bulk;
    long long min_elements, max_elements;
    const struct shape *first, *rest;
} shape;

static const shape simple = {T_STATUS | T_ERROR | T_INTEGER | T_NIL, 0, 0, 0, NULL, NULL};
static const shape word = {
    T_STATUS | T_ERROR | T_INTEGER | T_NIL | T_BULK, ZC_REDIS_MAX_WORD, 0, 0, NULL, NULL};
static const shape cursor = {T_BULK, ZC_REDIS_MAX_CURSOR, 0, 0, NULL, NULL};
static const shape name = {T_BULK, ZC_REDIS_MAX_SCAN_NAME, 0, 0, NULL, NULL};
static const shape names = {T_ARRAY, 0, 0, ZC_REDIS_MAX_SCAN_NAMES, &name, &name};
static const shape scan = {T_ARRAY | T_ERROR, 0, 2, 2, &cursor, &names};
/* CLUSTER SLOTS: a range is two integers then nodes; a node is its endpoint
 * (nil when unknown), port, id and metadata (Redis 7: an array of names and
 * values), or more fields of those kinds from a later server. */
static const shape node_detail = {T_BULK | T_INTEGER, ZC_REDIS_MAX_NODE_FIELD, 0, 0, NULL, NULL};
static const shape node_field = {
    T_BULK | T_INTEGER | T_ARRAY, ZC_REDIS_MAX_NODE_FIELD, 0, 8, &node_detail, &node_detail};
static const shape endpoint = {T_BULK | T_NIL, ZC_REDIS_MAX_NODE_FIELD, 0, 0, NULL, NULL};
static const shape range_field = {T_INTEGER | T_ARRAY, 0, 2, 8, &endpoint, &node_field};
static const shape slot_bound = {T_INTEGER, 0, 0, 0, NULL, NULL};
static const shape range = {T_ARRAY, 0, 3, 2 + ZC_REDIS_MAX_SLOT_NODES, &slot_bound, &range_field};
static const shape slots = {T_ARRAY | T_ERROR, 0, 0, ZC_REDIS_MAX_SLOT_RANGES, &range, &range};

typedef struct reader {
    const char *bytes;
    size_t size, at;
    zc_redis_reply_check *check;
} reader;

__attribute__((format(printf, 2, 3))) static zc_redis_verdict refuse(reader *r, const char *format,
                                                                     ...)
{
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(r->check->why, sizeof r->check->why, format, arguments);
    va_end(arguments);
    return ZC_REDIS_REFUSED;
}

static unsigned type_of(char byte)
{
    switch (byte) {
    case '+':
        return T_STATUS;
    case '-':
        return T_ERROR;
    case ':':
        return T_INTEGER;
    case '$':
        return T_BULK;
    case '*':
        return T_ARRAY;
    default:
        return 0;
    }
}

static const char *type_name(unsigned type)
{
    return type == T_STATUS    ? "status"
           : type == T_ERROR   ? "error"
           : type == T_INTEGER ? "integer"
           : type == T_NIL     ? "nil"
           : type == T_BULK    ? "bulk string"
                               : "array";
}

/* The line at r->at without its type byte and CRLF; r->at moves past it. */
static zc_redis_verdict read_line(reader *r, const char **text, size_t *length)
{
    size_t left = r->size - r->at;
    const char *start = r->bytes + r->at;
    const char *end = memchr(start, '\n', left < ZC_REDIS_MAX_LINE ? left : ZC_REDIS_MAX_LINE);
    if (end == NULL)
        return left >= ZC_REDIS_MAX_LINE
                   ? refuse(r, "a line of more than %d bytes", ZC_REDIS_MAX_LINE)
                   : ZC_REDIS_INCOMPLETE;
    if (end - start < 2 || end[-1] != '\r')
        return refuse(r, "%s", "a line not ended by CRLF");
    *text = start + 1;
    *length = (size_t)(end - start) - 2;
    r->at += (size_t)(end - start) + 1;
    return ZC_REDIS_COMPLETE;
}

/* -1, or a decimal of at most 18 digits. */
static bool parse_length(const char *text, size_t length, long long *out)
{
    if (length == 2 && text[0] == '-' && text[1] == '1') {
        *out = -1;
        return true;
    }
    if (length == 0 || length > 18)
        return false;
    long long value = 0;
    for (size_t i = 0; i < length; i++) {
        if (text[i] < '0' || text[i] > '9')
            return false;
        value = value * 10 + (text[i] - '0');
    }
    *out = value;
    return true;
}

static zc_redis_verdict element(reader *r, const shape *s, bool top);

static zc_redis_verdict bulk(reader *r, const shape *s, long long length, bool top,
                             size_t header_end)
{
    zc_redis_reply_check *check = r->check;
    uint64_t announced = (uint64_t)length;
    bool streams = top && check->kind == ZC_REDIS_REPLY_VALUE && check->in_memory_max != 0 &&
                   announced > check->in_memory_max;
    if (announced > s->max_bulk)
        return refuse(r, "a bulk string of %lld bytes, over %llu", length,
                      (unsigned long long)s->max_bulk);
    if (streams) {
        check->size = header_end;
        check->bulk_length = announced;
        return ZC_REDIS_STREAM;
    }
    if (r->size - r->at < announced + 2)
        return ZC_REDIS_INCOMPLETE;
    if (memcmp(r->bytes + r->at + announced, "\r\n", 2) != 0)
        return refuse(r, "%s", "a bulk string not ended by CRLF");
    r->at += announced + 2;
    return ZC_REDIS_COMPLETE;
}

static zc_redis_verdict array(reader *r, const shape *s, long long count)
{
    if (count < s->min_elements || count > s->max_elements)
        return refuse(r, "an array of %lld elements, expected %lld to %lld", count, s->min_elements,
                      s->max_elements);
    for (long long i = 0; i < count; i++) {
        zc_redis_verdict verdict = element(r, i == 0 ? s->first : s->rest, false);
        if (verdict != ZC_REDIS_COMPLETE)
            return verdict;
    }
    return ZC_REDIS_COMPLETE;
}

static zc_redis_verdict element(reader *r, const shape *s, bool top)
{
    if (r->at >= r->size)
        return ZC_REDIS_INCOMPLETE;
    unsigned type = type_of(r->bytes[r->at]);
    if (type == 0)
        return refuse(r, "a reply starting with byte 0x%02x", (unsigned char)r->bytes[r->at]);
    /* "$-1" and "*-1" are nil: known once their line is read. */
    bool may_be_nil = (type == T_BULK || type == T_ARRAY) && (s->types & T_NIL) != 0;
    if ((s->types & type) == 0 && !may_be_nil)
        return refuse(r, "a%s %s reply", type == T_ERROR || type == T_INTEGER ? "n" : "",
                      type_name(type));
    const char *text = NULL;
    size_t length = 0;
    zc_redis_verdict verdict = read_line(r, &text, &length);
    if (verdict != ZC_REDIS_COMPLETE || (type != T_BULK && type != T_ARRAY))
        return verdict;
    long long count;
    if (!parse_length(text, length, &count))
        return refuse(r, "a %s with a bad length", type_name(type));
    if (count == -1)
        return (s->types & T_NIL) != 0 ? ZC_REDIS_COMPLETE : refuse(r, "%s", "a nil reply");
    if ((s->types & type) == 0)
        return refuse(r, "a%s %s reply", type == T_ARRAY ? "n" : "", type_name(type));
    return type == T_BULK ? bulk(r, s, count, top, r->at) : array(r, s, count);
}

zc_redis_verdict zc_redis_reply_check_bytes(zc_redis_reply_check *check, const char *bytes,
                                            size_t size)
{
    shape value = {T_BULK | T_NIL | T_ERROR, check->max_value, 0, 0, NULL, NULL};
    const shape *shapes[] = {&simple, &word, &value, &scan, &slots};
    reader r = {bytes, size, 0, check};
    check->why[0] = '\0';
    zc_redis_verdict verdict = element(&r, shapes[check->kind], true);
    if (verdict == ZC_REDIS_COMPLETE)
        check->size = r.at;
    return verdict;
}
