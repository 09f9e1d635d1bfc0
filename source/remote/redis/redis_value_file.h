/* A remote entry too large to hold before it is known good
 * (redis_connection.h's ZC_REDIS_IN_MEMORY_MAX): a temporary file without a
 * name receives it as it arrives, its header checked from its first bytes
 * (a key, sizes or a payload that do not fit refuse it there and then),
 * and it is verified whole in the file (tag, entry, reading a piece at a
 * time) before it is read into memory, where a verified entry is one the
 * driver needs anyway. Not installed: storage_redis.c's. */
#ifndef ZECACHE_REDIS_VALUE_FILE_H
#define ZECACHE_REDIS_VALUE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_connection.h"
#include "zecache/entry.h"
#include "zecache/key.h"
#include "zecache/remote_tag.h"
#include "zecache/status.h"

typedef struct zc_redis_value_file {
    int fd; /* -1 until the first bytes */
    const char *dir;
    const zc_key *key;
    uint64_t max_payload;
    const zc_remote_secret *secret;
    uint64_t received;
    bool bad_head; /* refused for its header: a bad value, not a failure */
    uint8_t head[ZC_ENTRY_HEADER_SIZE];
} zc_redis_value_file;

/* The file is made in dir (the cache directory), else in TMPDIR or /tmp. */
void zc_redis_value_file_init(zc_redis_value_file *file, const char *dir, const zc_key *key,
                              uint64_t max_payload, const zc_remote_secret *secret);
zc_redis_sink zc_redis_value_file_sink(zc_redis_value_file *file);

/* The whole value received, verified and read into a new malloc'd buffer:
 * ZC_OK; ZC_MISS with the reason when it does not verify. */
zc_status zc_redis_value_file_take(zc_redis_value_file *file, uint8_t **value, size_t *size,
                                   char *reason, size_t reason_size);
void zc_redis_value_file_close(zc_redis_value_file *file);

#endif
