/* What the entry format and the recorded inputs' container share: headers
 * checksummed by a truncated SHA-256, and zstd frames that declare their
 * content size and carry a content checksum. Internal to local/. */
#ifndef ZECACHE_CHECKED_FRAME_H
#define ZECACHE_CHECKED_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#define ZC_HEADER_CHECKSUM_SIZE 16u

/* The first ZC_HEADER_CHECKSUM_SIZE bytes of the SHA-256 of the header's
 * first length bytes (everything before the checksum field). */
bool zc_header_checksum(const uint8_t *header, size_t length,
                        uint8_t checksum[ZC_HEADER_CHECKSUM_SIZE]);

/* A compression context whose frames declare their content size and carry
 * a content checksum, at level; NULL when it cannot be made. Free with
 * ZSTD_freeCCtx. */
ZSTD_CCtx *zc_checked_frame_context(int level);

#endif
