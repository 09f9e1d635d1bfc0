/* Helpers shared by the disk tier's tests: deterministic keys and
 * artifacts, and the raw header fields the tests tamper with. */
#ifndef ZC_DISK_TEST_SUPPORT_H
#define ZC_DISK_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../source/common/byte_order.h"
#include "zecache/artifact.h"
#include "zecache/config.h"
#include "zecache/disk_recipes.h"
#include "zecache/entry.h"
#include "zecache/key.h"
#include "zecache/recipe.h"

/* Header offsets, as entry.h documents them. */
enum {
    T_OFFSET_VERSION = 8,
    T_OFFSET_HEADER_SIZE = 12,
    T_OFFSET_KEY = 16,
    T_OFFSET_BINARY_SIZE = 48,
    T_OFFSET_LOG_SIZE = 56,
    T_OFFSET_COMPRESSED_SIZE = 64,
    T_OFFSET_FLAGS = 88,
    T_OFFSET_KIND = 92,
    T_OFFSET_DEVICE_NAME = 96,
    T_OFFSET_CHECKSUM = 192,
};

static inline uint64_t t_next_random(uint64_t *state)
{
    /* xorshift64*: deterministic, incompressible enough for zstd. */
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * UINT64_C(2685821657736338717);
}

static inline zc_key t_key(uint64_t seed)
{
    zc_key key = {0};
    uint64_t state = seed * UINT64_C(0x9E3779B97F4A7C15) + 1;
    for (size_t i = 0; i < ZC_KEY_SIZE; i++)
        key.bytes[i] = (uint8_t)t_next_random(&state);
    return key;
}

static inline void t_fill_random(uint8_t *bytes, size_t size, uint64_t seed)
{
    uint64_t state = seed * UINT64_C(0xD1B54A32D192ED03) + 7;
    for (size_t i = 0; i < size; i++)
        bytes[i] = (uint8_t)(t_next_random(&state) >> 56);
}

static inline zc_artifact_meta t_meta(void)
{
    zc_artifact_meta meta;
    memset(&meta, 0, sizeof meta);
    snprintf(meta.device_name, sizeof meta.device_name, "Intel(R) Graphics [0xff20]");
    snprintf(meta.driver_version, sizeof meta.driver_version, "1.3.29735");
    meta.compile_ns = 123456789;
    meta.created_unix = 1700000000;
    return meta;
}

/* An artifact of binary_size incompressible bytes and a short text log. */
static inline zc_artifact *t_artifact(size_t binary_size, uint64_t seed)
{
    uint8_t *binary = malloc(binary_size + 1);
    cr_assert_not_null(binary);
    t_fill_random(binary, binary_size, seed);
    char log[64];
    int log_size =
        snprintf(log, sizeof log, "build log of artifact %llu", (unsigned long long)seed);
    zc_artifact_meta meta = t_meta();
    zc_artifact *artifact = zc_artifact_create(binary, binary_size, log, (size_t)log_size, &meta);
    free(binary);
    cr_assert_not_null(artifact);
    return artifact;
}

/* Same bytes, log and description; usable where cr_assert is not (a forked
 * worker's threads). */
static inline bool t_same_artifact(const zc_artifact *actual, const zc_artifact *expected)
{
    if (actual == NULL || expected == NULL)
        return false;
    size_t actual_size, expected_size, actual_log_size, expected_log_size;
    const uint8_t *actual_binary = zc_artifact_binary(actual, &actual_size);
    const uint8_t *expected_binary = zc_artifact_binary(expected, &expected_size);
    const char *actual_log = zc_artifact_build_log(actual, &actual_log_size);
    const char *expected_log = zc_artifact_build_log(expected, &expected_log_size);
    const zc_artifact_meta *a = zc_artifact_meta_of(actual), *e = zc_artifact_meta_of(expected);
    return actual_size == expected_size &&
           memcmp(actual_binary, expected_binary, expected_size) == 0 &&
           actual_log_size == expected_log_size &&
           memcmp(actual_log, expected_log, expected_log_size) == 0 &&
           strcmp(a->device_name, e->device_name) == 0 &&
           strcmp(a->driver_version, e->driver_version) == 0 && a->compile_ns == e->compile_ns &&
           a->created_unix == e->created_unix;
}

static inline void t_assert_same_artifact(const zc_artifact *actual, const zc_artifact *expected)
{
    cr_assert(t_same_artifact(actual, expected), "the artifact differs from the one expected");
}

/* Recomputes the header checksum after a deliberate edit, so the test
 * reaches the check behind it. */
static inline void t_resign_header(uint8_t *entry)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_size = 0;
    cr_assert_eq(EVP_Digest(entry, T_OFFSET_CHECKSUM, digest, &digest_size, EVP_sha256(), NULL), 1);
    memcpy(entry + T_OFFSET_CHECKSUM, digest, 16);
}

/* A zc_compile_fn that counts its calls and makes t_artifact(size, seed). */
typedef struct t_counted_compile {
    int calls;
    uint64_t seed;
    size_t size;
} t_counted_compile;

static inline zc_status t_compile_counted(void *context, zc_artifact **out)
{
    t_counted_compile *compile = context;
    compile->calls++;
    *out = t_artifact(compile->size, compile->seed);
    return ZC_OK;
}

/* A configuration that uses dir as the disk tier. */
static inline zc_config t_disk_config(const char *dir, uint64_t max_size, int compression_level)
{
    zc_config config;
    memset(&config, 0, sizeof config);
    config.persistent = true;
    snprintf(config.dir, sizeof config.dir, "%s", dir);
    config.max_size = max_size;
    config.compression_level = compression_level;
    return config;
}

/* Records key's recipe naming one SPIR-V of spirv_size random bytes made
 * from spirv_seed (the same seed: the same blob, shared). */
static inline zc_status t_record_inputs(zc_disk_tier *tier, const zc_key *key, uint64_t spirv_seed,
                                        size_t spirv_size)
{
    uint8_t *spirv = malloc(spirv_size);
    cr_assert_not_null(spirv);
    t_fill_random(spirv, spirv_size, spirv_seed);
    zc_recipe_input input = {.spirv_size = spirv_size, .flags = (char *)"-g"};
    zc_recipe recipe = {.key = *key,
                        .device_name = (char *)"Intel(R) Graphics [0xff20]",
                        .driver_version = (char *)"1.3.24595",
                        .input_count = 1,
                        .inputs = &input};
    uint8_t *blob_bytes = NULL, *bytes = NULL;
    size_t bytes_size = 0;
    zc_input_blob blob;
    cr_assert_eq(
        zc_spirv_blob_encode(spirv, spirv_size, 3, input.spirv_sha256, &blob_bytes, &blob.size),
        ZC_OK);
    memcpy(blob.sha256, input.spirv_sha256, 32);
    blob.bytes = blob_bytes;
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, &bytes_size), ZC_OK);
    zc_status status = zc_disk_tier_record(tier, key, bytes, bytes_size, &blob, 1);
    free(bytes);
    free(blob_bytes);
    free(spirv);
    return status;
}

/* The offsets of the entry's frames (the first at ZC_ENTRY_HEADER_SIZE), at
 * most max of them; their count. */
static inline size_t t_frame_offsets(const uint8_t *entry, size_t size, size_t *offsets, size_t max)
{
    size_t count = 0;
    for (size_t at = ZC_ENTRY_HEADER_SIZE; at < size && count < max; count++) {
        offsets[count] = at;
        size_t frame = ZSTD_findFrameCompressedSize(entry + at, size - at);
        cr_assert_not(ZSTD_isError(frame));
        at += frame;
    }
    return count;
}

/* How many files whose names end in suffix lie below dir (0 when it does
 * not exist). */
static inline size_t t_count_files_ending(const char *dir, const char *suffix)
{
    char command[PATH_MAX + 128];
    snprintf(command, sizeof command, "find '%s' -name '*%s' 2>/dev/null | wc -l", dir, suffix);
    FILE *pipe = popen(command, "r");
    cr_assert_not_null(pipe);
    unsigned long count = 0;
    cr_assert_eq(fscanf(pipe, "%lu", &count), 1);
    pclose(pipe);
    return count;
}

/* How many .l0_cache files lie below dir (0 when it does not exist). */
static inline size_t t_count_entries(const char *dir)
{
    return t_count_files_ending(dir, ".l0_cache");
}

#endif
