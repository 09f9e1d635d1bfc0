/* The entry format: round trips, and every way a damaged or foreign entry
 * must come out as a miss with a reason. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "disk_test_support.h"
#include "zecache/entry.h"

typedef struct encoded {
    zc_key key;
    zc_artifact *artifact;
    uint8_t *bytes;
    size_t size;
} encoded;

static encoded encode(size_t binary_size, uint64_t seed)
{
    encoded e = {.key = t_key(seed), .artifact = t_artifact(binary_size, seed)};
    cr_assert_eq(zc_entry_encode(&e.key, e.artifact, 3, &e.bytes, &e.size), ZC_OK);
    return e;
}

static void release(encoded *e)
{
    zc_artifact_unref(e->artifact);
    free(e->bytes);
}

/* Decodes with e's key and no payload limit; asserts a miss with a reason
 * containing expected_reason (NULL: any reason). */
static void assert_miss(const uint8_t *bytes, size_t size, const zc_key *key, uint64_t max_payload,
                        const char *expected_reason)
{
    char reason[256] = "";
    zc_artifact *out = (zc_artifact *)1;
    zc_status status = zc_entry_decode(bytes, size, key, max_payload, &out, reason, sizeof reason);
    cr_assert_eq(status, ZC_MISS, "got %s", zc_status_name(status));
    cr_assert_null(out);
    cr_assert_neq(reason[0], '\0', "a miss says why");
    if (expected_reason != NULL)
        cr_assert_not_null(strstr(reason, expected_reason), "reason \"%s\" lacks \"%s\"", reason,
                           expected_reason);
}

Test(entry, round_trip_keeps_binary_log_and_meta)
{
    encoded e = encode(3000, 1);
    zc_artifact *out = NULL;
    char reason[256];
    cr_assert_eq(zc_entry_decode(e.bytes, e.size, &e.key, 0, &out, reason, sizeof reason), ZC_OK);
    t_assert_same_artifact(out, e.artifact);
    zc_artifact_unref(out);
    release(&e);
}

Test(entry, round_trip_without_log_and_without_expected_key)
{
    zc_key key = t_key(2);
    uint8_t binary[5] = {1, 2, 3, 4, 5};
    zc_artifact *artifact = zc_artifact_create(binary, sizeof binary, NULL, 0, NULL);
    uint8_t *bytes;
    size_t size;
    cr_assert_eq(zc_entry_encode(&key, artifact, 1, &bytes, &size), ZC_OK);
    zc_artifact *out = NULL;
    cr_assert_eq(zc_entry_decode(bytes, size, NULL, 0, &out, NULL, 0), ZC_OK);
    t_assert_same_artifact(out, artifact);
    zc_artifact_unref(out);
    zc_artifact_unref(artifact);
    free(bytes);
}

Test(entry, header_fields_match_the_documented_layout)
{
    encoded e = encode(1000, 3);
    zc_entry_header header;
    cr_assert_eq(zc_entry_read_header(e.bytes, e.size, &header, NULL, 0), ZC_OK);
    cr_assert_arr_eq(e.bytes, "ZECACHE\0", 8);
    cr_assert_eq(header.format_version, ZC_ENTRY_FORMAT_VERSION);
    cr_assert(zc_key_equal(&header.key, &e.key));
    cr_assert_arr_eq(e.bytes + T_OFFSET_KEY, e.key.bytes, ZC_KEY_SIZE);
    cr_assert_eq(header.binary_size, 1000);
    cr_assert_eq(header.log_size, strlen("build log of artifact 3"));
    cr_assert_eq(header.compressed_size, e.size - ZC_ENTRY_HEADER_SIZE);
    cr_assert_eq(header.flags, 0);
    cr_assert_str_eq(header.meta.device_name, "Intel(R) Graphics [0xff20]");
    cr_assert_str_eq(header.meta.driver_version, "1.3.29735");
    cr_assert_eq(header.meta.compile_ns, 123456789);
    cr_assert_eq(header.meta.created_unix, 1700000000);
    release(&e);
}

Test(entry, payload_is_compressed)
{
    zc_key key = t_key(4);
    uint8_t *zeros = calloc(1, 65536);
    zc_artifact *artifact = zc_artifact_create(zeros, 65536, "ok", 2, NULL);
    uint8_t *bytes;
    size_t size;
    cr_assert_eq(zc_entry_encode(&key, artifact, 3, &bytes, &size), ZC_OK);
    cr_assert_lt(size, ZC_ENTRY_HEADER_SIZE + 1024);
    zc_artifact_unref(artifact);
    free(zeros);
    free(bytes);
}

/* Returns how many flips decoded anyway; each of those must have decoded to
 * exactly the original artifact. */
static int flip_every_bit(const uint8_t *bytes, size_t size, const zc_key *key,
                          const zc_artifact *original)
{
    int decoded = 0;
    uint8_t *copy = malloc(size);
    for (size_t byte = 0; byte < size; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(copy, bytes, size);
            copy[byte] ^= (uint8_t)(1u << bit);
            zc_artifact *out = NULL;
            char reason[256] = "";
            zc_status status = zc_entry_decode(copy, size, key, 0, &out, reason, sizeof reason);
            if (status == ZC_OK) {
                cr_assert_geq(byte, ZC_ENTRY_HEADER_SIZE, "header byte %zu bit %d", byte, bit);
                t_assert_same_artifact(out, original);
                zc_artifact_unref(out);
                decoded++;
                continue;
            }
            cr_assert_eq(status, ZC_MISS, "byte %zu bit %d: %s", byte, bit, zc_status_name(status));
            cr_assert_null(out);
            cr_assert_neq(reason[0], '\0');
        }
    }
    free(copy);
    return decoded;
}

/* Raw zstd blocks (random bytes): every flip changes what is verified. */
Test(entry, every_single_bit_flip_is_a_miss)
{
    encoded e = encode(48, 5);
    cr_assert_eq(flip_every_bit(e.bytes, e.size, &e.key, e.artifact), 0);
    release(&e);
}

/* A compressed block has a few encoding bits that do not change the output
 * (the content checksum proves it unchanged): such a flip may decode, but
 * only ever to the original bytes. */
Test(entry, bit_flips_in_a_compressed_block_never_change_the_output)
{
    zc_key key = t_key(6);
    const char *text = "kernel kernel kernel kernel kernel kernel kernel kernel kernel";
    zc_artifact *artifact =
        zc_artifact_create(text, strlen(text), "warning: warning: warning:", 26, NULL);
    uint8_t *bytes;
    size_t size;
    cr_assert_eq(zc_entry_encode(&key, artifact, 3, &bytes, &size), ZC_OK);
    cr_assert_lt(size, ZC_ENTRY_HEADER_SIZE + strlen(text), "the block is compressed");
    int decoded = flip_every_bit(bytes, size, &key, artifact);
    cr_log_info("%d of %zu flips decoded to the original", decoded, 8 * size);
    cr_assert_lt(decoded, 8);
    free(bytes);
    zc_artifact_unref(artifact);
}

Test(entry, every_truncation_and_an_extension_is_a_miss)
{
    encoded e = encode(200, 6);
    for (size_t length = 0; length < e.size; length++)
        assert_miss(e.bytes, length, &e.key, 0, NULL);
    uint8_t *longer = malloc(e.size + 1);
    memcpy(longer, e.bytes, e.size);
    longer[e.size] = 0;
    assert_miss(longer, e.size + 1, &e.key, 0, "compressed size");
    free(longer);
    release(&e);
}

Test(entry, wrong_version_is_a_miss)
{
    encoded e = encode(100, 7);
    zc_put_le32(e.bytes + T_OFFSET_VERSION, ZC_ENTRY_FORMAT_VERSION + 1);
    assert_miss(e.bytes, e.size, &e.key, 0, "format version 2");
    t_resign_header(e.bytes);
    assert_miss(e.bytes, e.size, &e.key, 0, "format version 2");
    release(&e);
}

Test(entry, wrong_header_size_is_a_miss)
{
    encoded e = encode(100, 8);
    zc_put_le32(e.bytes + T_OFFSET_HEADER_SIZE, ZC_ENTRY_HEADER_SIZE + 8);
    t_resign_header(e.bytes);
    assert_miss(e.bytes, e.size, &e.key, 0, "header size");
    release(&e);
}

Test(entry, wrong_key_is_a_miss)
{
    encoded e = encode(100, 9);
    zc_key other = t_key(10);
    assert_miss(e.bytes, e.size, &other, 0, "another key");
    release(&e);
}

Test(entry, unknown_flags_or_reserved_bits_are_a_miss)
{
    encoded e = encode(100, 11);
    zc_put_le32(e.bytes + T_OFFSET_FLAGS, 2); /* bit 0 is ZC_ENTRY_FLAG_SIGNED */
    t_resign_header(e.bytes);
    assert_miss(e.bytes, e.size, &e.key, 0, "flags");
    release(&e);
    /* Flagged as signed without a signature after the frame. */
    e = encode(100, 11);
    zc_put_le32(e.bytes + T_OFFSET_FLAGS, ZC_ENTRY_FLAG_SIGNED);
    t_resign_header(e.bytes);
    assert_miss(e.bytes, e.size, &e.key, 0, "no signature");
    release(&e);
    static const uint32_t bad_kinds[] = {0x80000000u, ZC_ENTRY_KIND_COUNT};
    for (size_t i = 0; i < sizeof bad_kinds / sizeof bad_kinds[0]; i++) {
        e = encode(100, 11);
        zc_put_le32(e.bytes + T_OFFSET_KIND, bad_kinds[i]);
        t_resign_header(e.bytes);
        assert_miss(e.bytes, e.size, &e.key, 0, "kind 0x");
        release(&e);
    }
}

/* The kind goes in the header, at the offset "reserved" (0) held before
 * OpenCL; a Level Zero key never takes an OpenCL entry with the same bytes,
 * nor the other way round. */
Test(entry, the_kind_is_in_the_header_and_checked)
{
    encoded l0 = encode(100, 13);
    cr_assert_eq(zc_get_le32(l0.bytes + T_OFFSET_KIND), 0);
    zc_key opencl_key = l0.key;
    opencl_key.kind = ZC_ENTRY_OPENCL;
    uint8_t *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(zc_entry_encode(&opencl_key, l0.artifact, 3, &bytes, &size), ZC_OK);
    cr_assert_eq(size, l0.size);
    cr_assert_eq(zc_get_le32(bytes + T_OFFSET_KIND), ZC_ENTRY_OPENCL);
    cr_assert_eq(zc_entry_claimed_kind(bytes, size), ZC_ENTRY_OPENCL);
    cr_assert_eq(zc_entry_claimed_kind(l0.bytes, l0.size), ZC_ENTRY_LEVEL_ZERO);
    zc_entry_header header;
    cr_assert_eq(zc_entry_read_header(bytes, size, &header, NULL, 0), ZC_OK);
    cr_assert(zc_key_equal(&header.key, &opencl_key));
    assert_miss(bytes, size, &l0.key, 0, "another key");
    assert_miss(l0.bytes, l0.size, &opencl_key, 0, "another key");
    zc_artifact *artifact = NULL;
    cr_assert_eq(zc_entry_decode(bytes, size, &opencl_key, 0, &artifact, NULL, 0), ZC_OK);
    t_assert_same_artifact(artifact, l0.artifact);
    zc_artifact_unref(artifact);
    free(bytes);
    bytes = NULL;
    zc_key bad = l0.key;
    bad.kind = ZC_ENTRY_KIND_COUNT;
    cr_assert_eq(zc_entry_encode(&bad, l0.artifact, 3, &bytes, &size), ZC_ERR_INVALID_ARG);
    free(bytes);
    release(&l0);
}

Test(entry, unterminated_device_name_is_a_miss)
{
    encoded e = encode(100, 12);
    memset(e.bytes + T_OFFSET_DEVICE_NAME, 'x', 64);
    t_resign_header(e.bytes);
    assert_miss(e.bytes, e.size, &e.key, 0, "NUL-padded");
    release(&e);
}

Test(entry, header_claiming_huge_sizes_is_a_miss)
{
    encoded e = encode(100, 13);
    zc_put_le64(e.bytes + T_OFFSET_BINARY_SIZE, UINT64_MAX - 10);
    t_resign_header(e.bytes);
    assert_miss(e.bytes, e.size, &e.key, 0, "exceeds the limit");
    release(&e);
    e = encode(100, 13);
    /* Each size below the cap, their sum above it (and no wrap-around). */
    zc_put_le64(e.bytes + T_OFFSET_BINARY_SIZE, ZC_ENTRY_MAX_PAYLOAD);
    zc_put_le64(e.bytes + T_OFFSET_LOG_SIZE, UINT64_MAX);
    t_resign_header(e.bytes);
    assert_miss(e.bytes, e.size, &e.key, 0, "exceeds the limit");
    release(&e);
}

Test(entry, sizes_disagreeing_with_the_frame_are_a_miss)
{
    encoded e = encode(100, 14);
    zc_put_le64(e.bytes + T_OFFSET_BINARY_SIZE, 99);
    t_resign_header(e.bytes);
    assert_miss(e.bytes, e.size, &e.key, 0, "content size");
    release(&e);
}

Test(entry, payload_above_max_payload_is_a_miss)
{
    encoded e = encode(1000, 15);
    uint64_t payload = 1000 + strlen("build log of artifact 15");
    assert_miss(e.bytes, e.size, &e.key, payload - 1, "exceeds the limit");
    zc_artifact *out = NULL;
    cr_assert_eq(zc_entry_decode(e.bytes, e.size, &e.key, payload, &out, NULL, 0), ZC_OK);
    zc_artifact_unref(out);
    release(&e);
}

/* Builds an entry around frame, with a correct header for it. */
static uint8_t *entry_with_frame(const encoded *e, const void *frame, size_t frame_size)
{
    uint8_t *bytes = malloc(ZC_ENTRY_HEADER_SIZE + frame_size);
    memcpy(bytes, e->bytes, ZC_ENTRY_HEADER_SIZE);
    memcpy(bytes + ZC_ENTRY_HEADER_SIZE, frame, frame_size);
    zc_put_le64(bytes + T_OFFSET_COMPRESSED_SIZE, frame_size);
    t_resign_header(bytes);
    return bytes;
}

static size_t compress_payload_of(const encoded *e, int checksum, void *dst, size_t capacity)
{
    size_t binary_size, log_size;
    const uint8_t *binary = zc_artifact_binary(e->artifact, &binary_size);
    const char *log = zc_artifact_build_log(e->artifact, &log_size);
    uint8_t *payload = malloc(binary_size + log_size);
    memcpy(payload, binary, binary_size);
    memcpy(payload + binary_size, log, log_size);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, checksum);
    size_t size = ZSTD_compress2(cctx, dst, capacity, payload, binary_size + log_size);
    cr_assert(!ZSTD_isError(size));
    ZSTD_freeCCtx(cctx);
    free(payload);
    return size;
}

Test(entry, frame_without_checksum_is_a_miss)
{
    encoded e = encode(300, 16);
    uint8_t frame[1024];
    size_t frame_size = compress_payload_of(&e, 0, frame, sizeof frame);
    uint8_t *bytes = entry_with_frame(&e, frame, frame_size);
    assert_miss(bytes, ZC_ENTRY_HEADER_SIZE + frame_size, &e.key, 0, "no content checksum");
    free(bytes);
    /* The same frame with the checksum decodes: only the flag made it fail. */
    frame_size = compress_payload_of(&e, 1, frame, sizeof frame);
    bytes = entry_with_frame(&e, frame, frame_size);
    zc_artifact *out = NULL;
    cr_assert_eq(
        zc_entry_decode(bytes, ZC_ENTRY_HEADER_SIZE + frame_size, &e.key, 0, &out, NULL, 0), ZC_OK);
    t_assert_same_artifact(out, e.artifact);
    zc_artifact_unref(out);
    free(bytes);
    release(&e);
}

/* Frames must add up to the payload: two copies of a whole one hold twice
 * as much. */
Test(entry, frames_holding_more_than_the_payload_are_a_miss)
{
    encoded e = encode(300, 17);
    size_t frame_size = e.size - ZC_ENTRY_HEADER_SIZE;
    uint8_t *frames = malloc(2 * frame_size);
    memcpy(frames, e.bytes + ZC_ENTRY_HEADER_SIZE, frame_size);
    memcpy(frames + frame_size, e.bytes + ZC_ENTRY_HEADER_SIZE, frame_size);
    uint8_t *bytes = entry_with_frame(&e, frames, 2 * frame_size);
    assert_miss(bytes, ZC_ENTRY_HEADER_SIZE + 2 * frame_size, &e.key, 0, "content size");
    free(bytes);
    free(frames);
    release(&e);
}

/* The compressed sizes of the frames of e, in order; their count. */
static size_t frames_of(const encoded *e, size_t *sizes, size_t max)
{
    size_t count = 0;
    for (size_t at = ZC_ENTRY_HEADER_SIZE; at < e->size && count < max; count++) {
        sizes[count] = ZSTD_findFrameCompressedSize(e->bytes + at, e->size - at);
        cr_assert_not(ZSTD_isError(sizes[count]));
        at += sizes[count];
    }
    return count;
}

/* Payloads over ZC_ENTRY_FRAME_BYTES are split into frames of about that
 * size, decompressed in parallel; smaller ones are one frame, as before. */
Test(entry, large_payloads_are_frames_of_about_the_frame_size)
{
    const size_t log = strlen("build log of artifact 30");
    const struct {
        size_t binary, frames;
    } cases[] = {{ZC_ENTRY_FRAME_BYTES - log, 1},
                 {ZC_ENTRY_FRAME_BYTES - log + 1, 2},
                 {3 * ZC_ENTRY_FRAME_BYTES + 5, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        encoded e = encode(cases[c].binary, 30);
        size_t sizes[8];
        cr_assert_eq(frames_of(&e, sizes, 8), cases[c].frames, "binary of %zu bytes",
                     cases[c].binary);
        zc_artifact *out = NULL;
        cr_assert_eq(zc_entry_decode(e.bytes, e.size, &e.key, 0, &out, NULL, 0), ZC_OK);
        size_t expected_size, got_size;
        const uint8_t *expected = zc_artifact_payload(e.artifact, &expected_size);
        const uint8_t *got = zc_artifact_payload(out, &got_size);
        cr_assert_eq(got_size, expected_size);
        cr_assert_eq(memcmp(got, expected, got_size), 0);
        zc_artifact_unref(out);
        release(&e);
    }
}

/* Every frame is checked: damage in one of several, or a frame missing,
 * is a miss that names it. */
Test(entry, a_damaged_or_missing_frame_of_several_is_a_miss)
{
    encoded e = encode(3 * ZC_ENTRY_FRAME_BYTES + 5, 31);
    size_t sizes[8];
    cr_assert_eq(frames_of(&e, sizes, 8), 4);
    size_t second = ZC_ENTRY_HEADER_SIZE + sizes[0];
    e.bytes[second + sizes[1] / 2] ^= 0x20;
    assert_miss(e.bytes, e.size, &e.key, 0, "frame 1");
    e.bytes[second + sizes[1] / 2] ^= 0x20;
    size_t without_last = e.size - sizes[3];
    zc_put_le64(e.bytes + T_OFFSET_COMPRESSED_SIZE, without_last - ZC_ENTRY_HEADER_SIZE);
    t_resign_header(e.bytes);
    assert_miss(e.bytes, without_last, &e.key, 0, "content size");
    release(&e);
}

Test(entry, foreign_file_is_a_miss)
{
    uint8_t elf[512] = {0x7f, 'E', 'L', 'F'};
    zc_key key = t_key(18);
    assert_miss(elf, sizeof elf, &key, 0, "bad magic");
    zc_entry_header header;
    char reason[128];
    cr_assert_eq(zc_entry_read_header(elf, sizeof elf, &header, reason, sizeof reason), ZC_MISS);
}
