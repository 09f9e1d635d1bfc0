/* The entry decoder on arbitrary bytes: never a crash, never an artifact that
 * disagrees with its header, the same verdict with the expected key as
 * without, and whatever decodes survives a round trip through the encoder. */
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "zecache/entry.h"

static void check_same(const zc_artifact *a, const zc_artifact *b)
{
    size_t a_size, b_size, a_log_size, b_log_size;
    const uint8_t *a_binary = zc_artifact_binary(a, &a_size);
    const uint8_t *b_binary = zc_artifact_binary(b, &b_size);
    const char *a_log = zc_artifact_build_log(a, &a_log_size);
    const char *b_log = zc_artifact_build_log(b, &b_log_size);
    FUZZ_CHECK(a_size == b_size && memcmp(a_binary, b_binary, a_size) == 0);
    FUZZ_CHECK(a_log_size == b_log_size && memcmp(a_log, b_log, a_log_size) == 0);
    FUZZ_CHECK(memcmp(zc_artifact_meta_of(a), zc_artifact_meta_of(b), sizeof(zc_artifact_meta)) ==
               0);
}

static void check_decoded(const uint8_t *data, size_t size, const zc_entry_header *header,
                          const zc_artifact *artifact)
{
    size_t binary_size, log_size;
    zc_artifact_binary(artifact, &binary_size);
    zc_artifact_build_log(artifact, &log_size);
    FUZZ_CHECK(binary_size == header->binary_size && log_size == header->log_size);
    FUZZ_CHECK(header->compressed_size == size - ZC_ENTRY_HEADER_SIZE);

    zc_artifact *again = NULL;
    FUZZ_CHECK(zc_entry_decode(data, size, &header->key, 0, &again, NULL, 0) == ZC_OK);
    check_same(artifact, again);
    zc_artifact_unref(again);
    uint64_t payload = binary_size + log_size;
    if (payload > 1) { /* max_payload 0 means no limit */
        FUZZ_CHECK(zc_entry_decode(data, size, NULL, payload, &again, NULL, 0) == ZC_OK);
        zc_artifact_unref(again);
        FUZZ_CHECK(zc_entry_decode(data, size, NULL, payload - 1, &again, NULL, 0) == ZC_MISS);
        FUZZ_CHECK(again == NULL);
    }

    uint8_t *encoded = NULL;
    size_t encoded_size = 0;
    FUZZ_CHECK(zc_entry_encode(&header->key, artifact, 1, &encoded, &encoded_size) == ZC_OK);
    FUZZ_CHECK(zc_entry_decode(encoded, encoded_size, &header->key, 0, &again, NULL, 0) == ZC_OK);
    check_same(artifact, again);
    zc_artifact_unref(again);
    free(encoded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zc_entry_header header;
    char reason[256] = "";
    zc_status header_status = zc_entry_read_header(data, size, &header, reason, sizeof reason);
    FUZZ_CHECK(header_status == ZC_OK || header_status == ZC_MISS);
    FUZZ_CHECK(header_status == ZC_OK || reason[0] != '\0');

    zc_artifact *artifact = (zc_artifact *)1;
    reason[0] = '\0';
    zc_status status = zc_entry_decode(data, size, NULL, 0, &artifact, reason, sizeof reason);
    FUZZ_CHECK(status == ZC_OK || status == ZC_MISS || status == ZC_ERR_NOMEM);
    FUZZ_CHECK((status == ZC_OK) == (artifact != NULL));
    FUZZ_CHECK(status != ZC_MISS || reason[0] != '\0');
    if (status == ZC_OK) {
        FUZZ_CHECK(header_status == ZC_OK);
        check_decoded(data, size, &header, artifact);
    }
    zc_artifact_unref(artifact);
    return 0;
}
