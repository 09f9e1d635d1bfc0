/* The reply shapes each Redis command of the storage accepts, checked on the
 * raw RESP bytes before hiredis builds anything of them: hiredis allocates a
 * reply's objects (an array's element table, a bulk string's copy) as it
 * parses, so a reply it is never given cannot cost memory. A reply is
 * refused at the first byte that does not fit its command's shape (a type
 * the command never answers, an array or bulk length past the shape's
 * bound, a line without end), so that what is buffered for one reply is
 * bounded by its shape. Not installed: redis_connection.c's. */
#ifndef ZECACHE_REDIS_REPLY_SHAPE_H
#define ZECACHE_REDIS_REPLY_SHAPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum zc_redis_reply_kind {
    ZC_REDIS_REPLY_SIMPLE, /* status, error, integer or nil: AUTH, SELECT, SET, DEL, EXISTS */
    ZC_REDIS_REPLY_WORD,   /* those, or a bulk string of a few bytes: EVAL's answers */
    ZC_REDIS_REPLY_VALUE,  /* a bulk string up to the value limit, nil or error: GET */
    ZC_REDIS_REPLY_SCAN,   /* [cursor, [key names]], bounded, or an error: SCAN */
    ZC_REDIS_REPLY_SLOTS,  /* [[first, last, node, replicas...]...] or an error: CLUSTER SLOTS */
} zc_redis_reply_kind;

/* The bounds of the shapes: a status or error line, EVAL's word, a SCAN
 * cursor (Redis's are decimal 64-bit numbers), one SCAN batch (asked for
 * 256; Redis may return somewhat more, never this many) and one key name
 * in it (ours are about 110 bytes). */
#define ZC_REDIS_MAX_LINE 4096
#define ZC_REDIS_MAX_WORD 128
#define ZC_REDIS_MAX_CURSOR 32
#define ZC_REDIS_MAX_SCAN_NAMES 16384
#define ZC_REDIS_MAX_SCAN_NAME 512
/* CLUSTER SLOTS: at most one range per slot, each served by a master and up
 * to 15 replicas, each node [endpoint, port, id, metadata] in a few short
 * strings (a host name is at most 255 bytes). */
#define ZC_REDIS_MAX_SLOT_RANGES 16384
#define ZC_REDIS_MAX_SLOT_NODES 16
#define ZC_REDIS_MAX_NODE_FIELD 255

typedef enum zc_redis_verdict {
    ZC_REDIS_INCOMPLETE, /* fits so far: read more */
    ZC_REDIS_COMPLETE,   /* a whole reply of the right shape is buffered */
    ZC_REDIS_STREAM,     /* a VALUE bulk string over in_memory_max: stream it */
    ZC_REDIS_REFUSED,    /* does not fit: why says how */
} zc_redis_verdict;

typedef struct zc_redis_reply_check {
    zc_redis_reply_kind kind;
    uint64_t max_value;     /* VALUE: the largest bulk string taken at all */
    uint64_t in_memory_max; /* VALUE: larger ones are streamed (0: none is) */
    /* Out: a whole reply's size, or for ZC_REDIS_STREAM the size of the
     * bulk header ("$<length>\r\n") and the announced length. */
    size_t size;
    uint64_t bulk_length;
    char why[128];
} zc_redis_reply_check;

/* Checks the size buffered bytes of one reply against check->kind. */
zc_redis_verdict zc_redis_reply_check_bytes(zc_redis_reply_check *check, const char *bytes,
                                            size_t size);

#endif
