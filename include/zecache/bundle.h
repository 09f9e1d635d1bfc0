/* Bundles: many cache entries in one file, to pre-warm a container image or
 * a new machine (`zecache export` / `zecache import`).
 *
 * Little-endian, in this order:
 *   header   magic "ZCBUNDLE" (8), format version u32 = ZC_BUNDLE_FORMAT_VERSION,
 *            reserved u32 = 0
 *   entries  each: key (32), entry size u64 (1..ZC_BUNDLE_MAX_ENTRY_SIZE),
 *            then the entry's bytes exactly as its .l0_cache file holds them
 *   end      32 zero bytes, u64 0, then the number of entries u64
 * Nothing may follow the end. The reader trusts nothing: every size is
 * bounded before use, memory grows only with the bytes actually read, and a
 * bundle that ends early or whose end does not count its entries is bad.
 * Entries are not verified here: the disk tier does that on import. */
#ifndef ZECACHE_BUNDLE_H
#define ZECACHE_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zecache/key.h"
#include "zecache/status.h"

#define ZC_BUNDLE_MAGIC "ZCBUNDLE"
#define ZC_BUNDLE_FORMAT_VERSION 1u
#define ZC_BUNDLE_HEADER_SIZE 16u
/* Above any entry a load accepts (header + zstd bound of the largest payload). */
#define ZC_BUNDLE_MAX_ENTRY_SIZE ((UINT64_C(1) << 30) + (UINT64_C(1) << 24))

typedef struct zc_bundle_writer {
    FILE *out;
    uint64_t entries;
} zc_bundle_writer;

/* ZC_ERR_IO when out fails (errno set by stdio). */
zc_status zc_bundle_write_start(zc_bundle_writer *writer, FILE *out);
zc_status zc_bundle_write_entry(zc_bundle_writer *writer, const zc_key *key, const void *entry,
                                size_t entry_size);
/* Writes the end and flushes. */
zc_status zc_bundle_write_end(zc_bundle_writer *writer);

typedef struct zc_bundle_reader {
    FILE *in;
    uint64_t entries; /* read so far */
} zc_bundle_reader;

/* ZC_OK, or ZC_MISS with the reason when in does not start with a bundle
 * header of this version. */
zc_status zc_bundle_read_start(zc_bundle_reader *reader, FILE *in, char *reason,
                               size_t reason_size);

typedef enum zc_bundle_item {
    ZC_BUNDLE_ENTRY, /* *entry (malloc'd, the caller frees it) holds *entry_size bytes */
    ZC_BUNDLE_END,   /* the end, correct, and nothing after it */
    ZC_BUNDLE_BAD,   /* truncated or malformed (reason says how): stop reading */
} zc_bundle_item;

zc_bundle_item zc_bundle_read_next(zc_bundle_reader *reader, zc_key *key, uint8_t **entry,
                                   size_t *entry_size, char *reason, size_t reason_size);

#endif
