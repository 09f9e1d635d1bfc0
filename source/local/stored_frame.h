/* A zstd frame whose blocks are stored, not compressed: decoding it is a copy
 * and zstd's content checksum, several times faster than decoding a
 * compressed frame of the same content. Internal to local/. */
#ifndef ZECACHE_STORED_FRAME_H
#define ZECACHE_STORED_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a frame of content_size bytes that compressed to compressed_size
 * is kept better stored: when compression saves less than it costs a hit. */
bool zc_frame_better_stored(size_t content_size, size_t compressed_size);

/* Rewrites the checked frame (zc_checked_frame_context) of content at
 * frame, compressed_size bytes, as a stored frame of the same content and
 * the same content checksum, in place: frame has room for capacity bytes.
 * Returns the stored frame's size, or 0 (frame untouched) when it does not
 * fit or the compressed frame carries no checksum. */
size_t zc_frame_store(const uint8_t *content, size_t content_size, uint8_t *frame,
                      size_t compressed_size, size_t capacity);

#endif
