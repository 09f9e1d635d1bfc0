/* The recorded inputs' container (sealed.h): the entry format's checks
 * (header checksum, one zstd frame with content size and checksum) on a
 * simpler layout, since inputs are small and have no build log. */
#include "zecache/sealed.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "byte_order.h"
#include "checked_frame.h"
#include "zecache/sha256.h"

enum {
    OFFSET_VERSION = 8,
    OFFSET_HEADER_SIZE = 12,
    OFFSET_ID = 16,
    OFFSET_CONTENT_SIZE = 48,
    OFFSET_COMPRESSED_SIZE = 56,
    OFFSET_CHECKSUM = 64,
    CHECKSUM_SIZE = ZC_HEADER_CHECKSUM_SIZE,
    ZSTD_DESCRIPTOR_OFFSET = 4,
    ZSTD_CHECKSUM_FLAG = 0x04,
};

_Static_assert(OFFSET_CHECKSUM + CHECKSUM_SIZE == ZC_SEALED_HEADER_SIZE, "header layout");

static bool header_checksum(const uint8_t *header, uint8_t checksum[CHECKSUM_SIZE])
{
    return zc_header_checksum(header, OFFSET_CHECKSUM, checksum);
}

static size_t compress_frame(const void *content, size_t size, uint8_t *dst, size_t capacity,
                             int level)
{
    ZSTD_CCtx *cctx = zc_checked_frame_context(level);
    if (cctx == NULL)
        return 0;
    size_t result = ZSTD_compress2(cctx, dst, capacity, content, size);
    ZSTD_freeCCtx(cctx);
    return ZSTD_isError(result) ? 0 : result;
}

zc_status zc_sealed_encode(const char magic[ZC_SEALED_MAGIC_SIZE],
                           const uint8_t id[ZC_SEALED_ID_SIZE], const void *content, size_t size,
                           int compression_level, uint8_t **out, size_t *out_size)
{
    if (size > ZC_SEALED_MAX_CONTENT)
        return ZC_ERR_TOO_LARGE;
    size_t bound = ZSTD_compressBound(size);
    uint8_t *sealed = malloc(ZC_SEALED_HEADER_SIZE + bound);
    if (sealed == NULL)
        return ZC_ERR_NOMEM;
    size_t compressed =
        compress_frame(content, size, sealed + ZC_SEALED_HEADER_SIZE, bound, compression_level);
    memset(sealed, 0, ZC_SEALED_HEADER_SIZE);
    memcpy(sealed, magic, ZC_SEALED_MAGIC_SIZE);
    zc_put_le32(sealed + OFFSET_VERSION, ZC_SEALED_FORMAT_VERSION);
    zc_put_le32(sealed + OFFSET_HEADER_SIZE, ZC_SEALED_HEADER_SIZE);
    memcpy(sealed + OFFSET_ID, id, ZC_SEALED_ID_SIZE);
    zc_put_le64(sealed + OFFSET_CONTENT_SIZE, size);
    zc_put_le64(sealed + OFFSET_COMPRESSED_SIZE, compressed);
    if (compressed == 0 || !header_checksum(sealed, sealed + OFFSET_CHECKSUM)) {
        free(sealed);
        return ZC_ERR_NOMEM;
    }
    *out = sealed;
    *out_size = ZC_SEALED_HEADER_SIZE + compressed;
    return ZC_OK;
}

static zc_status check_header(const char *magic, const uint8_t *bytes, size_t size,
                              const uint8_t *expected_id, uint64_t max_content, char *reason,
                              size_t reason_size)
{
    uint8_t checksum[CHECKSUM_SIZE];
    if (size < ZC_SEALED_HEADER_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size, "%zu bytes, shorter than a header", size);
    if (memcmp(bytes, magic, ZC_SEALED_MAGIC_SIZE) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "bad magic: not a %.7s file", magic);
    if (zc_get_le32(bytes + OFFSET_VERSION) != ZC_SEALED_FORMAT_VERSION ||
        zc_get_le32(bytes + OFFSET_HEADER_SIZE) != ZC_SEALED_HEADER_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size, "format version %u, expected %u",
                          zc_get_le32(bytes + OFFSET_VERSION), ZC_SEALED_FORMAT_VERSION);
    if (!header_checksum(bytes, checksum) ||
        memcmp(checksum, bytes + OFFSET_CHECKSUM, CHECKSUM_SIZE) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "header checksum mismatch");
    if (expected_id != NULL && memcmp(bytes + OFFSET_ID, expected_id, ZC_SEALED_ID_SIZE) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "holds another key or digest");
    if (zc_get_le64(bytes + OFFSET_COMPRESSED_SIZE) != size - ZC_SEALED_HEADER_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size, "compressed size %llu but %zu bytes follow",
                          (unsigned long long)zc_get_le64(bytes + OFFSET_COMPRESSED_SIZE),
                          size - ZC_SEALED_HEADER_SIZE);
    if (zc_get_le64(bytes + OFFSET_CONTENT_SIZE) > max_content ||
        zc_get_le64(bytes + OFFSET_CONTENT_SIZE) > ZC_SEALED_MAX_CONTENT)
        return zc_explain(ZC_MISS, reason, reason_size, "content size over the limit");
    return ZC_OK;
}

/* The frame must declare its size and carry a checksum, which zstd then
 * verifies while decompressing. */
static zc_status decompress_frame(const uint8_t *frame, size_t frame_size, size_t content_size,
                                  uint8_t **content, char *reason, size_t reason_size)
{
    if (frame_size <= ZSTD_DESCRIPTOR_OFFSET ||
        !(frame[ZSTD_DESCRIPTOR_OFFSET] & ZSTD_CHECKSUM_FLAG) ||
        ZSTD_getFrameContentSize(frame, frame_size) != content_size ||
        ZSTD_findFrameCompressedSize(frame, frame_size) != frame_size)
        return zc_explain(ZC_MISS, reason, reason_size, "zstd frame damaged or of another size");
    uint8_t *out = malloc(content_size + 1);
    if (out == NULL)
        return ZC_ERR_NOMEM;
    size_t done = ZSTD_decompress(out, content_size + 1, frame, frame_size);
    if (ZSTD_isError(done) || done != content_size) {
        free(out);
        return zc_explain(ZC_MISS, reason, reason_size, "zstd: %s",
                          ZSTD_isError(done) ? ZSTD_getErrorName(done) : "short content");
    }
    *content = out;
    return ZC_OK;
}

zc_status zc_sealed_decode(const char magic[ZC_SEALED_MAGIC_SIZE], const void *data, size_t size,
                           const uint8_t *expected_id, uint64_t max_content, uint8_t **content,
                           size_t *content_size, uint8_t id[ZC_SEALED_ID_SIZE], char *reason,
                           size_t reason_size)
{
    const uint8_t *bytes = data;
    zc_status status =
        check_header(magic, bytes, size, expected_id, max_content, reason, reason_size);
    if (status != ZC_OK)
        return status;
    size_t declared = (size_t)zc_get_le64(bytes + OFFSET_CONTENT_SIZE);
    status = decompress_frame(bytes + ZC_SEALED_HEADER_SIZE, size - ZC_SEALED_HEADER_SIZE, declared,
                              content, reason, reason_size);
    if (status != ZC_OK)
        return status;
    *content_size = declared;
    if (id != NULL)
        memcpy(id, bytes + OFFSET_ID, ZC_SEALED_ID_SIZE);
    return ZC_OK;
}

bool zc_sealed_declared_size(const void *data, size_t size, uint64_t *content_size)
{
    if (data == NULL || size < ZC_SEALED_HEADER_SIZE)
        return false;
    *content_size = zc_get_le64((const uint8_t *)data + OFFSET_CONTENT_SIZE);
    return true;
}
