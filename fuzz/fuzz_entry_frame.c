/* Past the header checksum, which random bytes never pass: a correctly
 * signed header around fuzzed zstd frames, with fuzzed sizes. Input: binary
 * size (u32 LE), log size (u32 LE), then the frames. Whatever decodes must
 * be exactly what plain zstd makes of the frames, of exactly the sizes the
 * header and the frames declare; the reader of large entries' files
 * (entry_file.h) loads nothing the decoder refuses, and the same bytes. */
#include <openssl/evp.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "../source/common/byte_order.h"
#include "../source/local/entry_file.h"
#include "fuzz_check.h"
#include "zecache/entry.h"

enum {
    OFFSET_BINARY_SIZE = 48,
    OFFSET_LOG_SIZE = 56,
    OFFSET_COMPRESSED_SIZE = 64,
    OFFSET_CHECKSUM = 192,
    PREFIX = 8,
    MAX_PAYLOAD = 1 << 20, /* the limit a tier of 1 MiB passes */
};

/* A valid header to start from: the fields the fuzzer does not choose. */
static const uint8_t *template_header(zc_key *key)
{
    static uint8_t header[ZC_ENTRY_HEADER_SIZE];
    static zc_key template_key;
    static int ready;
    if (!ready) {
        for (size_t i = 0; i < ZC_KEY_SIZE; i++)
            template_key.bytes[i] = (uint8_t)(i * 37 + 1);
        zc_artifact_meta meta = {.device_name = "fuzz device",
                                 .driver_version = "1.0",
                                 .compile_ns = 1,
                                 .created_unix = 2};
        zc_artifact *artifact = zc_artifact_create("x", 1, NULL, 0, &meta);
        uint8_t *entry;
        size_t size;
        FUZZ_CHECK(zc_entry_encode(&template_key, artifact, 1, &entry, &size) == ZC_OK);
        memcpy(header, entry, sizeof header);
        free(entry);
        zc_artifact_unref(artifact);
        ready = 1;
    }
    *key = template_key;
    return header;
}

static void sign(uint8_t *header)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_size = 0;
    FUZZ_CHECK(EVP_Digest(header, OFFSET_CHECKSUM, digest, &digest_size, EVP_sha256(), NULL) == 1);
    memcpy(header + OFFSET_CHECKSUM, digest, 16);
}

/* The content sizes of the frames added up, or ZSTD_CONTENTSIZE_ERROR. */
static unsigned long long content_of_frames(const uint8_t *frames, size_t size)
{
    unsigned long long total = 0;
    while (size > 0) {
        unsigned long long one = ZSTD_getFrameContentSize(frames, size);
        size_t used = ZSTD_findFrameCompressedSize(frames, size);
        if (one == ZSTD_CONTENTSIZE_ERROR || one == ZSTD_CONTENTSIZE_UNKNOWN || ZSTD_isError(used))
            return ZSTD_CONTENTSIZE_ERROR;
        total += one;
        frames += used;
        size -= used;
    }
    return total;
}

static void check_against_zstd(const uint8_t *frame, size_t frame_size, const zc_artifact *artifact)
{
    size_t binary_size, log_size;
    const uint8_t *binary = zc_artifact_binary(artifact, &binary_size);
    const char *log = zc_artifact_build_log(artifact, &log_size);
    size_t total = binary_size + log_size;
    FUZZ_CHECK(content_of_frames(frame, frame_size) == total);
    uint8_t *plain = malloc(total + 1);
    size_t made = ZSTD_decompress(plain, total + 1, frame, frame_size);
    FUZZ_CHECK(!ZSTD_isError(made) && made == total);
    FUZZ_CHECK(memcmp(plain, binary, binary_size) == 0);
    FUZZ_CHECK(memcmp(plain + binary_size, log, log_size) == 0);
    free(plain);
}

static void check_file_reader(const uint8_t *entry, size_t size, const zc_key *key,
                              const zc_artifact *decoded)
{
    int fd = memfd_create("fuzz_entry", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0 && write(fd, entry, size) == (ssize_t)size);
    zc_artifact *loaded = (zc_artifact *)1;
    zc_status status = zc_entry_load_file(zc_fs_ops_default(), fd, size, key, MAX_PAYLOAD, &loaded);
    close(fd);
    FUZZ_CHECK((status == ZC_OK) == (loaded != NULL));
    if (status != ZC_OK)
        return;
    FUZZ_CHECK(decoded != NULL);
    size_t a_size, b_size, a_log, b_log;
    const uint8_t *a = zc_artifact_binary(loaded, &a_size),
                  *b = zc_artifact_binary(decoded, &b_size);
    zc_artifact_build_log(loaded, &a_log);
    zc_artifact_build_log(decoded, &b_log);
    FUZZ_CHECK(a_size == b_size && a_log == b_log && memcmp(a, b, a_size + a_log) == 0);
    zc_artifact_unref(loaded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < PREFIX)
        return 0;
    uint32_t binary_size = zc_get_le32(data), log_size = zc_get_le32(data + 4);
    const uint8_t *frame = data + PREFIX;
    size_t frame_size = size - PREFIX;
    zc_key key;
    uint8_t *entry = malloc(ZC_ENTRY_HEADER_SIZE + frame_size);
    memcpy(entry, template_header(&key), ZC_ENTRY_HEADER_SIZE);
    memcpy(entry + ZC_ENTRY_HEADER_SIZE, frame, frame_size);
    zc_put_le64(entry + OFFSET_BINARY_SIZE, binary_size);
    zc_put_le64(entry + OFFSET_LOG_SIZE, log_size);
    zc_put_le64(entry + OFFSET_COMPRESSED_SIZE, frame_size);
    sign(entry);

    zc_artifact *artifact = NULL;
    char reason[256] = "";
    zc_status status = zc_entry_decode(entry, ZC_ENTRY_HEADER_SIZE + frame_size, &key, MAX_PAYLOAD,
                                       &artifact, reason, sizeof reason);
    FUZZ_CHECK(status == ZC_OK || status == ZC_MISS);
    FUZZ_CHECK((status == ZC_OK) == (artifact != NULL));
    FUZZ_CHECK(status == ZC_OK || reason[0] != '\0');
    if (status == ZC_OK) {
        size_t got_binary, got_log;
        zc_artifact_binary(artifact, &got_binary);
        zc_artifact_build_log(artifact, &got_log);
        FUZZ_CHECK(got_binary == binary_size && got_log == log_size);
        check_against_zstd(frame, frame_size, artifact);
    }
    check_file_reader(entry, ZC_ENTRY_HEADER_SIZE + frame_size, &key, artifact);
    zc_artifact_unref(artifact);
    free(entry);
    return 0;
}
