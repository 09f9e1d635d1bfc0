/* What the pack's reader and writer share: the header, the index records
 * and the tag (pack.h has the format). Internal to local/. */
#ifndef ZECACHE_PACK_INTERNAL_H
#define ZECACHE_PACK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/pack.h"

void zc_pack_header_put(uint8_t header[ZC_PACK_HEADER_SIZE], uint32_t flags, uint64_t count,
                        uint64_t index_offset, uint64_t file_size);

void zc_pack_record_put(uint8_t *record, const zc_key *key, uint64_t offset, uint64_t size,
                        const uint8_t digest[32]);

/* Orders records by key bytes, then kind; 0 for the same key. */
int zc_pack_record_compare(const uint8_t *a, const uint8_t *b);
int zc_pack_record_compare_key(const uint8_t *record, const zc_key *key);
bool zc_pack_record_same_key(const uint8_t *a, const uint8_t *b);

/* The tag over the header and the index (signer NULL: plain SHA-256). */
bool zc_pack_tag(const uint8_t header[ZC_PACK_HEADER_SIZE], const uint8_t *index,
                 uint64_t index_size, const zc_bundle_signer *signer,
                 uint8_t tag[ZC_PACK_TAG_SIZE]);

#endif
