/* The frames of an entry's payload (entry.h), as the two readers share them:
 * zc_entry_decode with the whole entry in memory, and entry_file.h reading
 * each frame from the file straight into the artifact. Internal to local/. */
#ifndef ZECACHE_ENTRY_FRAMES_H
#define ZECACHE_ENTRY_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/entry.h"
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

/* Brings a frame's source into memory before it is decompressed (entry_file.c);
 * false when it cannot. */
typedef bool (*zc_frame_filler)(void *context, zc_payload_frame *frame);

/* The artifact of the entry whose header is header (already checked, its key
 * and payload size too) from the frames filling its compressed bytes exactly,
 * their contents adding up to its payload, located one after the other by
 * locate and, unless fill is NULL, each brought in by fill, decompressed in
 * parallel when there are several. ZC_MISS with a reason when the frames
 * are not that or fail zstd's checks (their content checksums among them);
 * ZC_ERR_IO when fill failed. */
zc_status zc_entry_load_frames(const zc_entry_header *header, zc_frame_locator locate,
                               void *locate_context, zc_frame_filler fill, void *fill_context,
                               zc_artifact **out, char *reason, size_t reason_size);

#endif
