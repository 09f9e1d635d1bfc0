/* The SPIR-V digest memo's state, for the tests; not installed. */
#ifndef ZECACHE_SPIRV_DIGEST_MEMO_INTERNAL_H
#define ZECACHE_SPIRV_DIGEST_MEMO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zecache/spirv_digest_memo.h"

typedef struct zc_spirv_digest_memo_stats {
    uint64_t hits;   /* digests confirmed against a copy */
    uint64_t hashed; /* inputs of a remembered size that were hashed */
    size_t entries;  /* contents remembered */
    size_t copies;   /* of them, with a copy (seen twice) */
    size_t bytes;    /* held in copies */
} zc_spirv_digest_memo_stats;

void zc_spirv_digest_memo_stats_get(zc_spirv_digest_memo_stats *stats);
/* Forgets every entry and zeroes the counters. */
void zc_spirv_digest_memo_clear(void);

#endif
