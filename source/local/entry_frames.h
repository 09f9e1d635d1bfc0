/* The frames of an entry's payload (entry.h), as the two readers share them:
 * zc_entry_decode with the whole entry in memory, and entry_file.h reading
 * each frame from the file straight into the artifact. Internal to local/. */
#ifndef ZECACHE_ENTRY_FRAMES_H
#define ZECACHE_ENTRY_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/status.h"

/* One frame of the payload: where it is among the entry's compressed bytes
 * and where its content goes. */
typedef struct zc_payload_frame {
    const uint8_t *source; /* its bytes in memory, once they are there */
    uint64_t source_offset;
    size_t source_size;
    uint8_t *target; /* set once the payload is allocated */
    size_t target_offset, target_size;
} zc_payload_frame;

/* The zstd frame header at head (size bytes of it or more) is one every
 * reader takes: zstd's magic, a content checksum, no spare descriptor bits,
 * a declared content size (*content_size). NULL if so, else what is wrong. */
const char *zc_frame_head_fault(const uint8_t *head, size_t size, unsigned long long *content_size);

/* Sets frame's source_size and target_size from the frame that begins at
 * offset at of the compressed bytes (left of them from there on); ZC_MISS
 * with a reason when there is none. */
typedef zc_status (*zc_frame_locator)(void *context, uint64_t at, uint64_t left, size_t index,
                                      zc_payload_frame *frame, char *reason, size_t reason_size);

/* The frames filling source_size compressed bytes exactly, their contents
 * adding up to payload_size, located one after the other by locate;
 * *frames is malloc'd (also on failure). */
zc_status zc_entry_find_frames(zc_frame_locator locate, void *context, uint64_t source_size,
                               uint64_t payload_size, zc_payload_frame **frames, size_t *count,
                               char *reason, size_t reason_size);

/* Brings a frame's source into memory before it is decompressed (entry_file.c);
 * false when it cannot. */
typedef bool (*zc_frame_filler)(void *context, zc_payload_frame *frame);

/* Decompresses every frame into payload, in parallel when there are several,
 * each first filled by fill when it is not NULL; ZC_MISS with a reason when
 * a frame fails zstd's checks (its content checksum among them), ZC_ERR_IO
 * when fill failed. */
zc_status zc_entry_decompress_frames(zc_payload_frame *frames, size_t count, uint8_t *payload,
                                     zc_frame_filler fill, void *fill_context, char *reason,
                                     size_t reason_size);

#endif
