/* See pack_internal.h. */
#include "pack_internal.h"

#include <string.h>

#include "byte_order.h"
#include "zecache/sha256.h"

enum { RECORD_KIND = 32, RECORD_OFFSET = 40, RECORD_SIZE = 48, RECORD_DIGEST = 56 };

void zc_pack_header_put(uint8_t header[ZC_PACK_HEADER_SIZE], uint32_t flags, uint64_t count,
                        uint64_t index_offset, uint64_t file_size)
{
    memset(header, 0, ZC_PACK_HEADER_SIZE);
    memcpy(header, ZC_PACK_MAGIC, 8);
    zc_put_le32(header + 8, ZC_PACK_FORMAT_VERSION);
    zc_put_le32(header + 12, flags);
    zc_put_le64(header + 16, count);
    zc_put_le64(header + 24, index_offset);
    zc_put_le64(header + 32, file_size);
}

void zc_pack_record_put(uint8_t *record, const zc_key *key, uint64_t offset, uint64_t size,
                        const uint8_t digest[32])
{
    memset(record, 0, ZC_PACK_RECORD_SIZE);
    memcpy(record, key->bytes, ZC_KEY_SIZE);
    record[RECORD_KIND] = key->kind;
    zc_put_le64(record + RECORD_OFFSET, offset);
    zc_put_le64(record + RECORD_SIZE, size);
    memcpy(record + RECORD_DIGEST, digest, 32);
}

static int compare_key_parts(const uint8_t *bytes, uint8_t kind, const uint8_t *other_bytes,
                             uint8_t other_kind)
{
    int order = memcmp(bytes, other_bytes, ZC_KEY_SIZE);
    return order != 0 ? order : (int)kind - (int)other_kind;
}

int zc_pack_record_compare(const uint8_t *a, const uint8_t *b)
{
    return compare_key_parts(a, a[RECORD_KIND], b, b[RECORD_KIND]);
}

int zc_pack_record_compare_key(const uint8_t *record, const zc_key *key)
{
    return compare_key_parts(record, record[RECORD_KIND], key->bytes, key->kind);
}

bool zc_pack_record_same_key(const uint8_t *a, const uint8_t *b)
{
    return zc_pack_record_compare(a, b) == 0;
}

bool zc_pack_tag(const uint8_t header[ZC_PACK_HEADER_SIZE], const uint8_t *index,
                 uint64_t index_size, const zc_bundle_signer *signer, uint8_t tag[ZC_PACK_TAG_SIZE])
{
    zc_sha256 *hash = zc_sha256_create();
    uint8_t digest[ZC_SHA256_SIZE];
    bool done = hash != NULL && zc_sha256_update(hash, header, ZC_PACK_HEADER_SIZE) &&
                zc_sha256_update(hash, index, (size_t)index_size) && zc_sha256_finish(hash, digest);
    zc_sha256_destroy(hash);
    if (!done)
        return false;
    if (signer == NULL) {
        memcpy(tag, digest, ZC_PACK_TAG_SIZE);
        return true;
    }
    return signer->sign(signer->key, signer->key_size, digest, sizeof digest, tag);
}
