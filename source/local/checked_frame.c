/* See checked_frame.h. */
#include "checked_frame.h"

#include <string.h>

#include "zecache/sha256.h"

bool zc_header_checksum(const uint8_t *header, size_t length,
                        uint8_t checksum[ZC_HEADER_CHECKSUM_SIZE])
{
    uint8_t digest[ZC_SHA256_SIZE];
    if (!zc_sha256_digest(header, length, digest))
        return false;
    memcpy(checksum, digest, ZC_HEADER_CHECKSUM_SIZE);
    return true;
}

ZSTD_CCtx *zc_checked_frame_context(int level)
{
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (cctx == NULL)
        return NULL;
    size_t result = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(result))
        result = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(result))
        result = ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    if (ZSTD_isError(result)) {
        ZSTD_freeCCtx(cctx);
        return NULL;
    }
    return cctx;
}
