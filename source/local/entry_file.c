/* See entry_file.h. The frames are found by their headers and their blocks'
 * headers alone (RFC 8878, 3.1.1.2): a read of a few bytes per 128 KiB
 * block, about 0.5 ms for 50 MB, against the 10-20 ms a buffer of the whole
 * file cost in page faults and copies. zstd then checks each frame as
 * zc_entry_decode does, its content checksum among it. */
#include "entry_file.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "entry_frames.h"
#include "zecache/entry.h"

enum {
    FRAME_HEAD_MAX = 18, /* zstd's ZSTD_FRAMEHEADERSIZE_MAX, an experimental name */
    DESCRIPTOR_OFFSET = 4,
    BLOCK_HEADER_SIZE = 3,
    BLOCK_CONTENT_MAX = 128 << 10,
    BLOCK_TYPE_RLE = 1,
    BLOCK_TYPE_RESERVED = 3,
    FRAME_CHECKSUM_SIZE = 4,
    /* The writer's blocks hold up to 128 KiB; a frame of far more, smaller
     * blocks is left to the whole-file reader, so that the reads here stay
     * few whatever the file says. */
    BYTES_PER_BLOCK_MIN = 4 << 10,
};

typedef struct frame_source {
    const zc_fs_ops *ops;
    int fd;
} frame_source;

/* ZC_MISS when the file ends first. */
static zc_status read_at(const frame_source *file, void *buffer, size_t size, uint64_t offset)
{
    uint8_t *bytes = buffer;
    for (size_t done = 0; done < size;) {
        ssize_t got = file->ops->pread(file->fd, bytes + done, size - done, (off_t)(offset + done));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? ZC_ERR_IO : ZC_MISS;
        done += (size_t)got;
    }
    return ZC_OK;
}

/* A frame header's size from its descriptor (RFC 8878, 3.1.1.1.1). */
static size_t frame_head_size(uint8_t descriptor)
{
    static const uint8_t dictionary_id_sizes[4] = {0, 1, 2, 4};
    bool single_segment = (descriptor & 0x20) != 0;
    unsigned content_size_flag = descriptor >> 6;
    size_t content_size_bytes =
        content_size_flag == 0 ? (single_segment ? 1 : 0) : (size_t)1 << content_size_flag;
    return DESCRIPTOR_OFFSET + 1 + (single_segment ? 0 : 1) + dictionary_id_sizes[descriptor & 3] +
           content_size_bytes;
}

/* The bytes the block with this header takes after it. */
static bool block_extent(const uint8_t header[BLOCK_HEADER_SIZE], size_t *extent, bool *last)
{
    uint32_t bits = (uint32_t)header[0] | (uint32_t)header[1] << 8 | (uint32_t)header[2] << 16;
    unsigned type = (bits >> 1) & 3;
    size_t size = bits >> 3;
    *last = (bits & 1) != 0;
    *extent = type == BLOCK_TYPE_RLE ? 1 : size;
    return type != BLOCK_TYPE_RESERVED && size <= BLOCK_CONTENT_MAX;
}

/* zc_frame_locator of an entry file: context is the frame_source. ZC_MISS
 * carries no reason here: the whole-file reader finds it. */
static zc_status locate_in_file(void *context, uint64_t at, uint64_t left, size_t index,
                                zc_payload_frame *frame, char *reason, size_t reason_size)
{
    (void)index, (void)reason, (void)reason_size;
    const frame_source *file = context;
    uint64_t start = ZC_ENTRY_HEADER_SIZE + at;
    uint8_t head[FRAME_HEAD_MAX + BLOCK_HEADER_SIZE];
    size_t head_read = left < sizeof head ? (size_t)left : sizeof head;
    zc_status status = read_at(file, head, head_read, start);
    unsigned long long content_size = 0;
    if (status != ZC_OK || zc_frame_head_fault(head, head_read, &content_size) != NULL)
        return status != ZC_OK ? status : ZC_MISS;
    uint64_t end = frame_head_size(head[DESCRIPTOR_OFFSET]);
    if (end + BLOCK_HEADER_SIZE > head_read)
        return ZC_MISS;
    uint8_t block[BLOCK_HEADER_SIZE] = {head[end], head[end + 1], head[end + 2]};
    uint64_t blocks_max = content_size / BYTES_PER_BLOCK_MIN + 2;
    for (uint64_t blocks = 1;; blocks++) {
        size_t extent = 0;
        bool last = false;
        if (blocks > blocks_max || !block_extent(block, &extent, &last))
            return ZC_MISS;
        end += BLOCK_HEADER_SIZE + extent;
        if (last)
            break;
        if (end + BLOCK_HEADER_SIZE > left)
            return ZC_MISS;
        if ((status = read_at(file, block, sizeof block, start + end)) != ZC_OK)
            return status;
    }
    end += FRAME_CHECKSUM_SIZE;
    if (end > left || content_size > SIZE_MAX)
        return ZC_MISS;
    frame->source_size = (size_t)end;
    frame->target_size = (size_t)content_size;
    return ZC_OK;
}

/* Each thread reads its frames into a buffer of its own, kept for its next
 * frame (and, on the thread that loads, its next load), freed when it ends. */
typedef struct frame_buffer {
    size_t capacity;
    uint8_t bytes[];
} frame_buffer;

static pthread_once_t buffer_once = PTHREAD_ONCE_INIT;
static pthread_key_t buffer_key;
static bool buffer_key_ready;

static void create_buffer_key(void)
{
    buffer_key_ready = pthread_key_create(&buffer_key, free) == 0;
}

static uint8_t *thread_buffer(size_t size)
{
    pthread_once(&buffer_once, create_buffer_key);
    if (!buffer_key_ready)
        return NULL;
    frame_buffer *buffer = pthread_getspecific(buffer_key);
    if (buffer != NULL && buffer->capacity >= size)
        return buffer->bytes;
    free(buffer);
    buffer = malloc(sizeof *buffer + size);
    if (buffer != NULL)
        buffer->capacity = size;
    if (pthread_setspecific(buffer_key, buffer) != 0) {
        free(buffer);
        return NULL;
    }
    return buffer != NULL ? buffer->bytes : NULL;
}

/* zc_frame_filler: the frame's bytes into the thread's buffer. */
static bool fill_from_file(void *context, zc_payload_frame *frame)
{
    const frame_source *file = context;
    uint8_t *buffer = thread_buffer(frame->source_size);
    if (buffer == NULL || read_at(file, buffer, frame->source_size,
                                  ZC_ENTRY_HEADER_SIZE + frame->source_offset) != ZC_OK)
        return false;
    frame->source = buffer;
    return true;
}

zc_status zc_entry_load_file(const zc_fs_ops *ops, int fd, uint64_t size, const zc_key *expected,
                             uint64_t max_payload, zc_artifact **out)
{
    *out = NULL;
    frame_source file = {ops, fd};
    uint8_t head[ZC_ENTRY_HEADER_SIZE];
    zc_entry_header header = {0};
    zc_status status = size < sizeof head ? ZC_MISS : read_at(&file, head, sizeof head, 0);
    if (status == ZC_OK)
        status = zc_entry_check_head(head, size, expected, max_payload, &header, NULL, 0);
    /* A signed entry's signature magic is the whole-file reader's to check. */
    if (status != ZC_OK || (header.flags & ZC_ENTRY_FLAG_SIGNED) != 0)
        return status != ZC_OK ? status : ZC_MISS;
    return zc_entry_load_frames(&header, locate_in_file, &file, fill_from_file, &file, out, NULL,
                                0);
}
