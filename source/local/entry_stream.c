/* Verifying an entry held in a file without holding it (entry.h,
 * zc_entry_verify_fd): a value too large to keep in memory before it is
 * known good (a remote's, redis_connection.h) is written to a temporary
 * file and checked here piece by piece. Memory is bounded by the read and
 * decompression buffers and by the frames' window, capped at
 * 2^WINDOW_LOG_MAX: the writer's frames hold ZC_ENTRY_FRAME_BYTES each, far
 * below it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "entry_frames.h"
#include "whole_io.h"
#include "zecache/entry.h"

enum {
    CHUNK = 256 << 10,
    WINDOW_LOG_MAX = 24, /* 16 MiB */
    MAX_FRAMES = 1 << 20,
    FRAME_HEADER_MAX = 18, /* zstd's ZSTD_FRAMEHEADERSIZE_MAX, an experimental name */
};

typedef struct stream {
    int fd;
    uint64_t at, end;          /* the compressed bytes still to read */
    uint64_t payload, content; /* the header's payload, the frames' so far */
    ZSTD_DCtx *dctx;
    uint8_t *in, *out;
    char *reason;
    size_t reason_size;
} stream;

static zc_status wrong(stream *s, size_t frame, const char *what)
{
    return zc_explain(ZC_MISS, s->reason, s->reason_size, "zstd frame %zu %s", frame, what);
}

/* A frame's header, as every reader wants it (zc_frame_head_fault), its
 * content size within what the payload has left. */
static zc_status check_frame_header(stream *s, size_t frame, uint64_t *content_size)
{
    uint8_t head[FRAME_HEADER_MAX];
    size_t size = s->end - s->at < sizeof head ? (size_t)(s->end - s->at) : sizeof head;
    if (!zc_pread_whole(s->fd, head, size, s->at))
        return wrong(s, frame, "cannot be read");
    unsigned long long declared = 0;
    const char *fault = zc_frame_head_fault(head, size, &declared);
    if (fault != NULL)
        return wrong(s, frame, fault);
    if (declared > s->payload - s->content)
        return zc_explain(ZC_MISS, s->reason, s->reason_size,
                          "zstd content size over the header's %llu bytes",
                          (unsigned long long)s->payload);
    *content_size = declared;
    return ZC_OK;
}

/* Decompresses one frame into nothing, its content counted; zstd checks
 * its content checksum at its end. */
static zc_status pass_frame(stream *s, size_t frame, uint64_t content_size)
{
    uint64_t produced = 0;
    size_t left = 1;
    while (left != 0) {
        if (s->at >= s->end)
            return wrong(s, frame, "is cut short or damaged");
        size_t take = s->end - s->at < CHUNK ? (size_t)(s->end - s->at) : CHUNK;
        if (!zc_pread_whole(s->fd, s->in, take, s->at))
            return wrong(s, frame, "cannot be read");
        ZSTD_inBuffer input = {s->in, take, 0};
        for (;;) {
            ZSTD_outBuffer output = {s->out, CHUNK, 0};
            left = ZSTD_decompressStream(s->dctx, &output, &input);
            if (ZSTD_isError(left))
                return zc_explain(ZC_MISS, s->reason, s->reason_size, "zstd frame %zu: %s", frame,
                                  ZSTD_getErrorName(left));
            produced += output.pos;
            if (produced > content_size)
                return wrong(s, frame, "holds more than its content size");
            /* Done, or all input taken and nothing left to flush. */
            if (left == 0 || (input.pos == input.size && output.pos < CHUNK))
                break;
        }
        s->at += input.pos;
    }
    if (produced != content_size)
        return wrong(s, frame, "holds less than its content size");
    return ZC_OK;
}

static zc_status pass_frames(stream *s)
{
    size_t frame = 0;
    for (; s->at < s->end; frame++) {
        uint64_t content_size = 0;
        zc_status status = frame == MAX_FRAMES ? zc_explain(ZC_MISS, s->reason, s->reason_size,
                                                            "more than %d zstd frames", MAX_FRAMES)
                                               : check_frame_header(s, frame, &content_size);
        if (status == ZC_OK)
            status = pass_frame(s, frame, content_size);
        if (status != ZC_OK)
            return status;
        s->content += content_size;
    }
    if (frame == 0 || s->content != s->payload)
        return zc_explain(ZC_MISS, s->reason, s->reason_size,
                          "zstd content size %llu, header says %llu",
                          (unsigned long long)s->content, (unsigned long long)s->payload);
    return ZC_OK;
}

/* The header, and a signed entry's signature magic at the end. */
static zc_status check_header(stream *s, uint64_t size, const zc_key *expected,
                              uint64_t max_payload, zc_entry_header *header)
{
    uint8_t head[ZC_ENTRY_HEADER_SIZE], magic[8];
    if (size < sizeof head || !zc_pread_whole(s->fd, head, sizeof head, 0))
        return zc_explain(ZC_MISS, s->reason, s->reason_size, "%s", "shorter than a header");
    zc_status status =
        zc_entry_check_head(head, size, expected, max_payload, header, s->reason, s->reason_size);
    bool signed_entry = (header->flags & ZC_ENTRY_FLAG_SIGNED) != 0;
    if (status == ZC_OK && signed_entry &&
        (!zc_pread_whole(s->fd, magic, sizeof magic, size - ZC_ENTRY_SIGNATURE_SIZE) ||
         memcmp(magic, ZC_ENTRY_SIGNATURE_MAGIC, sizeof magic) != 0))
        status = zc_explain(ZC_MISS, s->reason, s->reason_size, "%s",
                            "signed, but no signature at the end");
    return status;
}

zc_status zc_entry_verify_fd(int fd, uint64_t size, const zc_key *expected, uint64_t max_payload,
                             char *reason, size_t reason_size)
{
    stream s = {.fd = fd, .reason = reason, .reason_size = reason_size};
    zc_entry_header header = {0};
    zc_status status = check_header(&s, size, expected, max_payload, &header);
    if (status != ZC_OK)
        return status;
    s.at = ZC_ENTRY_HEADER_SIZE;
    s.end = ZC_ENTRY_HEADER_SIZE + header.compressed_size;
    s.payload = header.binary_size + header.log_size;
    s.dctx = ZSTD_createDCtx();
    s.in = malloc(CHUNK);
    s.out = malloc(CHUNK);
    if (s.dctx == NULL || s.in == NULL || s.out == NULL ||
        ZSTD_isError(ZSTD_DCtx_setParameter(s.dctx, ZSTD_d_windowLogMax, WINDOW_LOG_MAX)))
        status = ZC_ERR_NOMEM;
    else
        status = pass_frames(&s);
    ZSTD_freeDCtx(s.dctx);
    free(s.in);
    free(s.out);
    return status;
}
