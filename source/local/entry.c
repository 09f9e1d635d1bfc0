/* The on-disk entry format (see entry.h): encoding, and the verification that
 * stands between the disk and the driver. Every field is checked before a byte
 * of payload is trusted; anything unexpected is a miss with a reason. */
#include "zecache/entry.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "byte_order.h"
#include "checked_frame.h"
#include "entry_frames.h"
#include "parallel.h"
#include "prefault.h"
#include "stored_frame.h"
#include "zecache/sha256.h"

enum {
    OFFSET_MAGIC = 0,
    OFFSET_VERSION = 8,
    OFFSET_HEADER_SIZE = 12,
    OFFSET_KEY = 16,
    OFFSET_BINARY_SIZE = 48,
    OFFSET_LOG_SIZE = 56,
    OFFSET_COMPRESSED_SIZE = 64,
    OFFSET_COMPILE_NS = 72,
    OFFSET_CREATED = 80,
    OFFSET_FLAGS = 88,
    OFFSET_KIND = 92,
    OFFSET_DEVICE_NAME = 96,
    OFFSET_DRIVER_VERSION = 160,
    OFFSET_CHECKSUM = 192,
    MAGIC_SIZE = 8,
    CHECKSUM_SIZE = ZC_HEADER_CHECKSUM_SIZE,
    /* The zstd frame header descriptor follows the 4-byte magic number. */
    ZSTD_DESCRIPTOR_OFFSET = 4,
    ZSTD_CHECKSUM_FLAG = 0x04,
    /* Reserved and "unused" descriptor bits: zstd ignores the unused one, so
     * without this check a flipped bit there would go unnoticed. */
    ZSTD_DESCRIPTOR_SPARE_BITS = 0x18,
};

_Static_assert(OFFSET_CHECKSUM + CHECKSUM_SIZE == ZC_ENTRY_HEADER_SIZE, "header layout");
_Static_assert(OFFSET_DRIVER_VERSION - OFFSET_DEVICE_NAME ==
                   sizeof(((zc_artifact_meta *)0)->device_name),
               "device name field");
_Static_assert(OFFSET_CHECKSUM - OFFSET_DRIVER_VERSION ==
                   sizeof(((zc_artifact_meta *)0)->driver_version),
               "driver version field");
_Static_assert(sizeof ZC_ENTRY_MAGIC == MAGIC_SIZE, "magic with its NUL");

/* The first CHECKSUM_SIZE bytes of the SHA-256 of the header before it. */
static bool header_checksum(const uint8_t *header, uint8_t checksum[CHECKSUM_SIZE])
{
    return zc_header_checksum(header, OFFSET_CHECKSUM, checksum);
}

static void put_text_field(uint8_t *field, size_t field_size, const char *text)
{
    size_t length = strnlen(text, field_size - 1);
    memset(field, 0, field_size);
    memcpy(field, text, length);
}

/* NUL-padded: the text, then only NULs, and at least one of them. */
static bool text_field_valid(const uint8_t *field, size_t field_size)
{
    size_t length = strnlen((const char *)field, field_size);
    if (length == field_size)
        return false;
    for (size_t i = length; i < field_size; i++)
        if (field[i] != 0)
            return false;
    return true;
}

static bool write_header(uint8_t *header, const zc_key *key, uint64_t binary_size,
                         uint64_t log_size, uint64_t compressed_size, const zc_artifact_meta *meta)
{
    memset(header, 0, ZC_ENTRY_HEADER_SIZE);
    memcpy(header + OFFSET_MAGIC, ZC_ENTRY_MAGIC, MAGIC_SIZE);
    zc_put_le32(header + OFFSET_VERSION, ZC_ENTRY_FORMAT_VERSION);
    zc_put_le32(header + OFFSET_HEADER_SIZE, ZC_ENTRY_HEADER_SIZE);
    memcpy(header + OFFSET_KEY, key->bytes, ZC_KEY_SIZE);
    zc_put_le32(header + OFFSET_KIND, key->kind);
    zc_put_le64(header + OFFSET_BINARY_SIZE, binary_size);
    zc_put_le64(header + OFFSET_LOG_SIZE, log_size);
    zc_put_le64(header + OFFSET_COMPRESSED_SIZE, compressed_size);
    zc_put_le64(header + OFFSET_COMPILE_NS, meta->compile_ns);
    zc_put_le64(header + OFFSET_CREATED, meta->created_unix);
    put_text_field(header + OFFSET_DEVICE_NAME, sizeof meta->device_name, meta->device_name);
    put_text_field(header + OFFSET_DRIVER_VERSION, sizeof meta->driver_version,
                   meta->driver_version);
    return header_checksum(header, header + OFFSET_CHECKSUM);
}

/* Payloads over ZC_ENTRY_FRAME_BYTES are split into frames of about that
 * size, each a zstd frame of its own, so a load decompresses them in
 * parallel (a hit on a 5.5 MB binary spent 4 ms in zstd on one core). */
#define FRAME_BYTES ZC_ENTRY_FRAME_BYTES
/* No reader takes more frames than a payload of the format's largest size
 * has in this layout (with room for another split), whatever it is sent. */
#define MAX_FRAMES ((size_t)(ZC_ENTRY_MAX_PAYLOAD / (FRAME_BYTES / 2)))

static size_t frame_count_of(size_t payload_size)
{
    return payload_size <= FRAME_BYTES ? 1 : (payload_size + FRAME_BYTES - 1) / FRAME_BYTES;
}

/* Where frame index of frames starts in the payload (frames is at most
 * ZC_ENTRY_MAX_PAYLOAD / FRAME_BYTES + 1, so the product fits in 64 bits). */
static size_t frame_begin(size_t payload_size, size_t frames, size_t index)
{
    return (size_t)((uint64_t)payload_size * index / frames);
}

/* The frames of payload, one after the other in dst, each compressed or,
 * when it compresses poorly, stored (stored_frame.h); 0 when compression
 * fails. */
static size_t compress_payload(const uint8_t *payload, size_t payload_size, uint8_t *dst,
                               size_t dst_capacity, int level)
{
    ZSTD_CCtx *cctx = zc_checked_frame_context(level);
    if (cctx == NULL)
        return 0;
    size_t result = 0;
    size_t frames = frame_count_of(payload_size), written = 0;
    for (size_t i = 0; i < frames && !ZSTD_isError(result); i++) {
        size_t begin = frame_begin(payload_size, frames, i);
        size_t size = frame_begin(payload_size, frames, i + 1) - begin;
        result = ZSTD_compress2(cctx, dst + written, dst_capacity - written, payload + begin, size);
        if (!ZSTD_isError(result) && zc_frame_better_stored(size, result)) {
            size_t stored = zc_frame_store(payload + begin, size, dst + written, result,
                                           dst_capacity - written);
            result = stored != 0 ? stored : result;
        }
        written += ZSTD_isError(result) ? 0 : result;
    }
    ZSTD_freeCCtx(cctx);
    return ZSTD_isError(result) ? 0 : written;
}

static const zc_artifact_meta *meta_or_zero(const zc_artifact *artifact)
{
    static const zc_artifact_meta zero_meta;
    const zc_artifact_meta *meta = zc_artifact_meta_of(artifact);
    return meta != NULL ? meta : &zero_meta;
}

zc_status zc_entry_encode(const zc_key *key, const zc_artifact *artifact, int compression_level,
                          uint8_t **out, size_t *out_size)
{
    if (key == NULL || artifact == NULL || out == NULL || out_size == NULL ||
        key->kind >= ZC_ENTRY_KIND_COUNT)
        return ZC_ERR_INVALID_ARG;
    size_t binary_size = 0, log_size = 0, payload_size = 0;
    zc_artifact_binary(artifact, &binary_size);
    zc_artifact_build_log(artifact, &log_size);
    const uint8_t *payload = zc_artifact_payload(artifact, &payload_size);
    if (binary_size > ZC_ENTRY_MAX_PAYLOAD || log_size > ZC_ENTRY_MAX_PAYLOAD - binary_size)
        return ZC_ERR_TOO_LARGE;
    size_t bound = ZSTD_compressBound(payload_size);
    uint8_t *entry = malloc(ZC_ENTRY_HEADER_SIZE + bound);
    size_t compressed_size = 0;
    if (entry != NULL)
        compressed_size = compress_payload(payload, payload_size, entry + ZC_ENTRY_HEADER_SIZE,
                                           bound, compression_level);
    if (compressed_size == 0 ||
        !write_header(entry, key, binary_size, log_size, compressed_size, meta_or_zero(artifact))) {
        free(entry);
        return ZC_ERR_NOMEM;
    }
    size_t entry_size = ZC_ENTRY_HEADER_SIZE + compressed_size;
    uint8_t *shrunk = realloc(entry, entry_size);
    *out = shrunk != NULL ? shrunk : entry;
    *out_size = entry_size;
    return ZC_OK;
}

/* Checks in the order that gives the most useful reason: a file that is not
 * an entry at all, then one from another format version, then corruption.
 * data holds the whole entry of size bytes, or with only_head its first
 * ZC_ENTRY_HEADER_SIZE (its signature's magic then unchecked). */
static zc_status parse_header(const void *data, size_t size, bool only_head,
                              zc_entry_header *header, char *reason, size_t reason_size)
{
    const uint8_t *bytes = data;
    if (data == NULL || size < ZC_ENTRY_HEADER_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "file of %zu bytes is shorter than a header", size);
    if (memcmp(bytes + OFFSET_MAGIC, ZC_ENTRY_MAGIC, MAGIC_SIZE) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "bad magic: not a zecache entry");
    uint32_t version = zc_get_le32(bytes + OFFSET_VERSION);
    if (version != ZC_ENTRY_FORMAT_VERSION)
        return zc_explain(ZC_MISS, reason, reason_size, "format version %u, expected %u", version,
                          ZC_ENTRY_FORMAT_VERSION);
    uint32_t header_size = zc_get_le32(bytes + OFFSET_HEADER_SIZE);
    if (header_size != ZC_ENTRY_HEADER_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size, "header size %u, expected %u", header_size,
                          ZC_ENTRY_HEADER_SIZE);
    uint8_t checksum[CHECKSUM_SIZE];
    if (!header_checksum(bytes, checksum))
        return zc_explain(ZC_MISS, reason, reason_size, "cannot compute the header checksum");
    if (memcmp(checksum, bytes + OFFSET_CHECKSUM, CHECKSUM_SIZE) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "header checksum mismatch");
    uint32_t flags = zc_get_le32(bytes + OFFSET_FLAGS);
    uint32_t kind = zc_get_le32(bytes + OFFSET_KIND);
    if ((flags & ~ZC_ENTRY_FLAG_SIGNED) != 0 || kind >= ZC_ENTRY_KIND_COUNT)
        return zc_explain(ZC_MISS, reason, reason_size, "unknown flags 0x%x / kind 0x%x", flags,
                          kind);
    size_t signature = (flags & ZC_ENTRY_FLAG_SIGNED) != 0 ? ZC_ENTRY_SIGNATURE_SIZE : 0;
    if (size < ZC_ENTRY_HEADER_SIZE + signature ||
        (signature != 0 && !only_head &&
         memcmp(bytes + size - signature, ZC_ENTRY_SIGNATURE_MAGIC, 8) != 0))
        return zc_explain(ZC_MISS, reason, reason_size, "signed, but no signature at the end");
    if (!text_field_valid(bytes + OFFSET_DEVICE_NAME, sizeof header->meta.device_name) ||
        !text_field_valid(bytes + OFFSET_DRIVER_VERSION, sizeof header->meta.driver_version))
        return zc_explain(ZC_MISS, reason, reason_size,
                          "device name or driver version not NUL-padded");
    uint64_t compressed_size = zc_get_le64(bytes + OFFSET_COMPRESSED_SIZE);
    if (compressed_size != size - ZC_ENTRY_HEADER_SIZE - signature)
        return zc_explain(
            ZC_MISS, reason, reason_size, "compressed size %llu but %zu bytes follow the header",
            (unsigned long long)compressed_size, size - ZC_ENTRY_HEADER_SIZE - signature);

    if (header != NULL) {
        memset(header, 0, sizeof *header);
        header->format_version = version;
        memcpy(header->key.bytes, bytes + OFFSET_KEY, ZC_KEY_SIZE);
        header->key.kind = (uint8_t)kind;
        header->binary_size = zc_get_le64(bytes + OFFSET_BINARY_SIZE);
        header->log_size = zc_get_le64(bytes + OFFSET_LOG_SIZE);
        header->compressed_size = compressed_size;
        header->flags = flags;
        header->meta.compile_ns = zc_get_le64(bytes + OFFSET_COMPILE_NS);
        header->meta.created_unix = zc_get_le64(bytes + OFFSET_CREATED);
        memcpy(header->meta.device_name, bytes + OFFSET_DEVICE_NAME,
               sizeof header->meta.device_name);
        memcpy(header->meta.driver_version, bytes + OFFSET_DRIVER_VERSION,
               sizeof header->meta.driver_version);
    }
    return ZC_OK;
}

static zc_status check_payload_size(const zc_entry_header *header, uint64_t max_payload,
                                    char *reason, size_t reason_size)
{
    uint64_t limit = ZC_ENTRY_MAX_PAYLOAD;
    if (max_payload != 0 && max_payload < limit)
        limit = max_payload;
    if (header->binary_size > limit || header->log_size > limit - header->binary_size)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "payload of %llu + %llu bytes exceeds the limit %llu",
                          (unsigned long long)header->binary_size,
                          (unsigned long long)header->log_size, (unsigned long long)limit);
    return ZC_OK;
}

zc_entry_kind zc_entry_claimed_kind(const uint8_t *entry, size_t size)
{
    if (size < ZC_ENTRY_HEADER_SIZE ||
        memcmp(entry + OFFSET_MAGIC, ZC_ENTRY_MAGIC, MAGIC_SIZE) != 0)
        return ZC_ENTRY_LEVEL_ZERO;
    uint32_t kind = zc_get_le32(entry + OFFSET_KIND);
    return kind < ZC_ENTRY_KIND_COUNT ? (zc_entry_kind)kind : ZC_ENTRY_LEVEL_ZERO;
}

zc_status zc_entry_read_header(const void *data, size_t size, zc_entry_header *header, char *reason,
                               size_t reason_size)
{
    return parse_header(data, size, false, header, reason, reason_size);
}

zc_status zc_entry_check_head(const uint8_t head[ZC_ENTRY_HEADER_SIZE], uint64_t size,
                              const zc_key *expected, uint64_t max_payload, zc_entry_header *header,
                              char *reason, size_t reason_size)
{
    if (size > SIZE_MAX)
        return zc_explain(ZC_MISS, reason, reason_size, "%s", "larger than memory");
    zc_status status = parse_header(head, (size_t)size, true, header, reason, reason_size);
    if (status == ZC_OK && expected != NULL && !zc_key_equal(&header->key, expected))
        status = zc_explain(ZC_MISS, reason, reason_size, "%s", "the header names another key");
    if (status == ZC_OK)
        status = check_payload_size(header, max_payload, reason, reason_size);
    return status;
}

const char *zc_frame_head_fault(const uint8_t *head, size_t size, unsigned long long *content_size)
{
    if (size <= ZSTD_DESCRIPTOR_OFFSET || zc_get_le32(head) != ZSTD_MAGICNUMBER)
        return "is not a zstd frame";
    if (!(head[ZSTD_DESCRIPTOR_OFFSET] & ZSTD_CHECKSUM_FLAG))
        return "has no content checksum";
    if (head[ZSTD_DESCRIPTOR_OFFSET] & ZSTD_DESCRIPTOR_SPARE_BITS)
        return "has spare header bits set";
    *content_size = ZSTD_getFrameContentSize(head, size);
    if (*content_size == ZSTD_CONTENTSIZE_ERROR || *content_size == ZSTD_CONTENTSIZE_UNKNOWN)
        return "has an invalid header or lacks a content size";
    return NULL;
}

/* zc_frame_locator of an entry in memory: a frame must declare its content
 * size and carry a content checksum, which decompression then verifies. */
static zc_status locate_in_memory(void *context, uint64_t at, uint64_t left, size_t index,
                                  zc_payload_frame *frame, char *reason, size_t reason_size)
{
    const uint8_t *source = (const uint8_t *)context + at;
    unsigned long long content_size = 0;
    size_t compressed = 0;
    const char *wrong = zc_frame_head_fault(source, (size_t)left, &content_size);
    if (wrong == NULL &&
        ZSTD_isError(compressed = ZSTD_findFrameCompressedSize(source, (size_t)left)))
        wrong = "is cut short or damaged";
    if (wrong != NULL)
        return zc_explain(ZC_MISS, reason, reason_size, "zstd frame %zu %s", index, wrong);
    frame->source = source;
    frame->source_size = compressed;
    frame->target_size = (size_t)content_size;
    return ZC_OK;
}

/* The frames filling source_size compressed bytes exactly, their contents
 * adding up to payload_size, located one after the other by locate;
 * *frames is malloc'd (also on failure). */
static zc_status find_frames(zc_frame_locator locate, void *context, uint64_t source_size,
                             uint64_t payload_size, zc_payload_frame **frames, size_t *count,
                             char *reason, size_t reason_size)
{
    size_t capacity = frame_count_of((size_t)payload_size);
    *frames = malloc(capacity * sizeof **frames);
    *count = 0;
    if (*frames == NULL)
        return ZC_ERR_NOMEM;
    uint64_t content = 0;
    for (uint64_t at = 0; at < source_size;) {
        if (*count == MAX_FRAMES)
            return zc_explain(ZC_MISS, reason, reason_size, "more than %zu zstd frames",
                              (size_t)MAX_FRAMES);
        if (*count == capacity) {
            zc_payload_frame *larger = realloc(*frames, 2 * capacity * sizeof **frames);
            if (larger == NULL)
                return ZC_ERR_NOMEM;
            *frames = larger;
            capacity *= 2;
        }
        zc_payload_frame *frame = &(*frames)[*count];
        *frame = (zc_payload_frame){.source_offset = at};
        zc_status status =
            locate(context, at, source_size - at, *count, frame, reason, reason_size);
        if (status != ZC_OK)
            return status;
        if (frame->target_size > payload_size - content)
            return zc_explain(ZC_MISS, reason, reason_size,
                              "zstd content size over the header's %llu bytes",
                              (unsigned long long)payload_size);
        frame->target_offset = (size_t)content;
        content += frame->target_size;
        at += frame->source_size;
        (*count)++;
    }
    if (*count == 0 || content != payload_size)
        return zc_explain(ZC_MISS, reason, reason_size, "zstd content size %llu, header says %llu",
                          (unsigned long long)content, (unsigned long long)payload_size);
    return ZC_OK;
}

/* One decompression context per thread, freed when the thread ends: loads run
 * in parallel without a lock, and a context is costly to create per call.
 * The key is never deleted, so a shared object holding this code must stay
 * mapped until every thread has ended (the layer is linked -z nodelete). */
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;
static pthread_key_t dctx_key;
static bool dctx_key_ready;

static void free_dctx(void *dctx)
{
    ZSTD_freeDCtx(dctx);
}

static void create_dctx_key(void)
{
    dctx_key_ready = pthread_key_create(&dctx_key, free_dctx) == 0;
}

static ZSTD_DCtx *thread_dctx(void)
{
    pthread_once(&dctx_once, create_dctx_key);
    if (!dctx_key_ready)
        return NULL;
    ZSTD_DCtx *dctx = pthread_getspecific(dctx_key);
    if (dctx == NULL) {
        dctx = ZSTD_createDCtx();
        if (dctx != NULL && pthread_setspecific(dctx_key, dctx) != 0) {
            ZSTD_freeDCtx(dctx);
            dctx = NULL;
        }
    }
    return dctx;
}

/* A round trip of a small entry: decoding it makes the thread's context and
 * faults in its tables and the decoder's code (SHA-256's too), which the
 * thread's first hit would otherwise pay for: 30-40 us on the 2-core test
 * machine. The bytes mix literals and matches, as native code does. */
void zc_entry_prepare_thread(void)
{
    enum { PROBE_BYTES = 4096 };
    uint8_t binary[PROBE_BYTES];
    for (size_t i = 0; i < PROBE_BYTES; i++)
        binary[i] = (uint8_t)((i % 64 < 32 ? i * 2654435761u : i / 64) >> 3);
    zc_artifact_meta meta = {0};
    zc_artifact *artifact = zc_artifact_create(binary, sizeof binary, "", 0, &meta);
    zc_key key = {0};
    uint8_t *entry = NULL;
    size_t entry_size = 0;
    zc_artifact *decoded = NULL;
    if (artifact != NULL && zc_entry_encode(&key, artifact, 1, &entry, &entry_size) == ZC_OK)
        (void)zc_entry_decode(entry, entry_size, &key, 0, &decoded, NULL, 0);
    zc_artifact_unref(decoded);
    zc_artifact_unref(artifact);
    free(entry);
}

/* Decompression writes every byte of a fresh payload: its pages are faulted
 * in at once (prefault.h), but only for frames whose size is plausible for
 * their compressed size (native binaries compress 5-12x, stored frames 1x):
 * a hostile header claiming a gigabyte must not make us commit one before
 * zstd finds the lie. */
enum { PREFAULT_MAX_RATIO = 64 };

static void prefault(uint8_t *target, size_t target_size, size_t source_size)
{
    if (target_size / PREFAULT_MAX_RATIO <= source_size)
        zc_prefault_write(target, target_size);
}

/* zstd's result for one frame: 0 when it filled its target exactly. */
static size_t decompress_frame(ZSTD_DCtx *dctx, zc_payload_frame *frame)
{
    prefault(frame->target, frame->target_size, frame->source_size);
    size_t result = ZSTD_decompressDCtx(dctx, frame->target, frame->target_size, frame->source,
                                        frame->source_size);
    if (ZSTD_isError(result))
        return result;
    return result == frame->target_size ? 0 : (size_t)-ZSTD_error_corruption_detected;
}

typedef struct frames_job {
    zc_payload_frame *frames;
    size_t *results;
    zc_frame_filler fill;
    void *fill_context;
} frames_job;

/* Not a zstd error code: the frame's source could not be brought in. */
#define FILL_FAILED ((size_t)-1)

/* A helper thread's frame: a context of its own, freed at once (the
 * thread's end would free a per-thread one too, but it would be made
 * anew for every load). */
static void decompress_task(void *context, size_t index)
{
    frames_job *job = context;
    zc_payload_frame *frame = &job->frames[index];
    if (job->fill != NULL && !job->fill(job->fill_context, frame)) {
        job->results[index] = FILL_FAILED;
        return;
    }
    ZSTD_DCtx *shared = thread_dctx();
    ZSTD_DCtx *dctx = shared != NULL ? shared : ZSTD_createDCtx();
    job->results[index] =
        dctx != NULL ? decompress_frame(dctx, frame) : (size_t)-ZSTD_error_memory_allocation;
    if (shared == NULL)
        ZSTD_freeDCtx(dctx);
}

/* Decompresses every frame into payload, in parallel when there are several,
 * each first filled by fill unless it is NULL. */
static zc_status decompress_frames(zc_payload_frame *frames, size_t count, uint8_t *payload,
                                   zc_frame_filler fill, void *fill_context, char *reason,
                                   size_t reason_size)
{
    size_t *results = malloc(count * sizeof *results);
    if (results == NULL)
        return ZC_ERR_NOMEM;
    for (size_t i = 0; i < count; i++)
        frames[i].target = payload + frames[i].target_offset;
    frames_job job = {frames, results, fill, fill_context};
    if (count == 1)
        decompress_task(&job, 0);
    else
        zc_parallel_for(count, decompress_task, &job);
    zc_status status = ZC_OK;
    for (size_t i = 0; i < count && status == ZC_OK; i++)
        if (results[i] == FILL_FAILED)
            status = zc_explain(ZC_ERR_IO, reason, reason_size, "frame %zu cannot be read", i);
        else if (results[i] != 0)
            status = zc_explain(ZC_MISS, reason, reason_size, "zstd, frame %zu: %s", i,
                                ZSTD_getErrorName(results[i]));
    free(results);
    return status;
}

zc_status zc_entry_decode(const void *data, size_t size, const zc_key *expected,
                          uint64_t max_payload, zc_artifact **out, char *reason, size_t reason_size)
{
    if (out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    zc_entry_header header;
    zc_status status = zc_entry_read_header(data, size, &header, reason, reason_size);
    if (status != ZC_OK)
        return status;
    if (expected != NULL && !zc_key_equal(expected, &header.key))
        return zc_explain(ZC_MISS, reason, reason_size, "entry holds another key");
    status = check_payload_size(&header, max_payload, reason, reason_size);
    if (status != ZC_OK)
        return status;
    return zc_entry_load_frames(&header, locate_in_memory, (uint8_t *)data + ZC_ENTRY_HEADER_SIZE,
                                NULL, NULL, out, reason, reason_size);
}

zc_status zc_entry_load_frames(const zc_entry_header *header, zc_frame_locator locate,
                               void *locate_context, zc_frame_filler fill, void *fill_context,
                               zc_artifact **out, char *reason, size_t reason_size)
{
    zc_payload_frame *frames = NULL;
    size_t frame_count = 0;
    zc_status status = find_frames(locate, locate_context, header->compressed_size,
                                   header->binary_size + header->log_size, &frames, &frame_count,
                                   reason, reason_size);
    /* Decompressed straight into the artifact: no second buffer, no copy. It is
     * handed out only once every frame's content checksum has verified it. */
    uint8_t *payload = NULL;
    zc_artifact *artifact = NULL;
    if (status == ZC_OK) {
        artifact = zc_artifact_create_unfilled((size_t)header->binary_size,
                                               (size_t)header->log_size, &header->meta, &payload);
        status = artifact != NULL ? ZC_OK : ZC_ERR_NOMEM;
    }
    if (status == ZC_OK)
        status = decompress_frames(frames, frame_count, payload, fill, fill_context, reason,
                                   reason_size);
    free(frames);
    if (status != ZC_OK) {
        zc_artifact_unref(artifact);
        return status;
    }
    *out = artifact;
    return ZC_OK;
}

uint64_t zc_entry_size_bound(uint64_t max_payload)
{
    if (max_payload == 0 || max_payload > ZC_ENTRY_MAX_PAYLOAD)
        max_payload = ZC_ENTRY_MAX_PAYLOAD;
    return ZC_ENTRY_HEADER_SIZE + ZSTD_COMPRESSBOUND(max_payload) + ZC_ENTRY_SIGNATURE_SIZE;
}

bool zc_entry_set_signed(uint8_t *entry)
{
    zc_put_le32(entry + OFFSET_FLAGS, zc_get_le32(entry + OFFSET_FLAGS) | ZC_ENTRY_FLAG_SIGNED);
    return header_checksum(entry, entry + OFFSET_CHECKSUM);
}
