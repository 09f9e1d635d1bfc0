/* See stored_frame.h. zstd has no level that stores blocks, so the frame is
 * written here (RFC 8878, 3.1.1): any zstd reader decodes it. Its content
 * checksum is the compressed frame's own (the low 32 bits of the content's
 * XXH64, whatever the blocks), so no hash is computed here. */
#include "stored_frame.h"

#include <string.h>
#include <zstd.h>

#include "byte_order.h"

enum {
    /* Frame header descriptor: a 4-byte content size (flag 2 in bits 7-6),
     * single segment (bit 5, so no window descriptor), a content checksum
     * (bit 2), no dictionary. */
    DESCRIPTOR = (2u << 6) | (1u << 5) | (1u << 2),
    HEADER_SIZE = 4 + 1 + 4,
    BLOCK_HEADER_SIZE = 3,
    BLOCK_MAX = 128 * 1024,
    CHECKSUM_SIZE = 4,
    /* Measured (BUILD.md "Where a hit's time goes"): zstd's decoder costs
     * several times a copy per output byte, and binaries of real code
     * compress 5-12x; a frame that compresses less is mostly constant data,
     * cheaper to read stored. Small frames stay compressed: their decoding
     * costs microseconds, and stored they would fill the disk budget. */
    MIN_SAVING_RATIO = 4,
    MIN_STORED_CONTENT = 256 * 1024,
};

bool zc_frame_better_stored(size_t content_size, size_t compressed_size)
{
    return content_size >= MIN_STORED_CONTENT && compressed_size > content_size / MIN_SAVING_RATIO;
}

static size_t stored_size_of(size_t content_size)
{
    size_t blocks = content_size == 0 ? 1 : (content_size + BLOCK_MAX - 1) / BLOCK_MAX;
    return HEADER_SIZE + blocks * BLOCK_HEADER_SIZE + content_size + CHECKSUM_SIZE;
}

static void put_le24(uint8_t *at, uint32_t value)
{
    at[0] = (uint8_t)value;
    at[1] = (uint8_t)(value >> 8);
    at[2] = (uint8_t)(value >> 16);
}

size_t zc_frame_store(const uint8_t *content, size_t content_size, uint8_t *frame,
                      size_t compressed_size, size_t capacity)
{
    enum { DESCRIPTOR_OFFSET = 4, CHECKSUM_FLAG = 1u << 2 };
    size_t size = stored_size_of(content_size);
    if (content_size > UINT32_MAX || size > capacity || compressed_size < HEADER_SIZE ||
        !(frame[DESCRIPTOR_OFFSET] & CHECKSUM_FLAG))
        return 0;
    uint8_t checksum[CHECKSUM_SIZE];
    memcpy(checksum, frame + compressed_size - CHECKSUM_SIZE, CHECKSUM_SIZE);
    zc_put_le32(frame, ZSTD_MAGICNUMBER);
    frame[DESCRIPTOR_OFFSET] = DESCRIPTOR;
    zc_put_le32(frame + DESCRIPTOR_OFFSET + 1, (uint32_t)content_size);
    size_t at = HEADER_SIZE, done = 0;
    do {
        size_t block = content_size - done < BLOCK_MAX ? content_size - done : BLOCK_MAX;
        bool last = done + block == content_size;
        /* Bit 0: last block; bits 1-2: type 0, stored; bits 3-23: size. */
        put_le24(frame + at, (uint32_t)(block << 3) | (last ? 1u : 0u));
        memcpy(frame + at + BLOCK_HEADER_SIZE, content + done, block);
        at += BLOCK_HEADER_SIZE + block;
        done += block;
    } while (done < content_size);
    memcpy(frame + at, checksum, CHECKSUM_SIZE);
    return at + CHECKSUM_SIZE;
}
