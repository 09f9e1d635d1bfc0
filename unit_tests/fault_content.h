/* The artifact every fault test and fault_worker stores under key number n:
 * derived from n alone, so whoever loads an entry, in whatever process, can
 * check it byte for byte. No test framework here: fault_worker includes it. */
#ifndef ZC_FAULT_CONTENT_H
#define ZC_FAULT_CONTENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/artifact.h"
#include "zecache/key.h"

static inline uint64_t fc_mix(uint64_t x)
{
    /* splitmix64's finaliser: every input bit reaches every output bit. */
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

/* Set by the model test, which drives both kinds: fc_key then gives odd
 * numbers the OpenCL kind. Other tests keep Level Zero's names. */
static bool fc_mixed_kinds;

static inline zc_key fc_key(uint64_t n)
{
    zc_key key = {0};
    key.kind = fc_mixed_kinds && (n & 1) != 0 ? ZC_ENTRY_OPENCL : ZC_ENTRY_LEVEL_ZERO;
    for (size_t i = 0; i < ZC_KEY_SIZE; i += 8) {
        uint64_t word = fc_mix(n * 4 + i / 8 + UINT64_C(0xFA17));
        memcpy(key.bytes + i, &word, 8);
    }
    return key;
}

/* The key number of key among 0..count-1, or -1. */
static inline long fc_key_number(const zc_key *key, uint64_t count)
{
    for (uint64_t n = 0; n < count; n++) {
        zc_key candidate = fc_key(n);
        if (zc_key_equal(&candidate, key))
            return (long)n;
    }
    return -1;
}

/* From 64 bytes to about max_binary, half random and half a repeated
 * pattern, so entries are of many sizes and zstd has work to do. */
static inline size_t fc_binary_size(uint64_t n, size_t max_binary)
{
    return 64 + (size_t)(fc_mix(n ^ UINT64_C(0x5A5A)) % (max_binary - 63));
}

static inline void fc_fill(uint8_t *binary, size_t size, uint64_t n)
{
    uint64_t state = fc_mix(n);
    for (size_t i = 0; i < size; i++) {
        if (i % 8 == 0)
            state = fc_mix(state);
        binary[i] = i % 128 < 64 ? (uint8_t)(state >> (8 * (i % 8))) : (uint8_t)(i * 7 + n);
    }
}

static inline int fc_log(uint64_t n, char *log, size_t log_size)
{
    return snprintf(log, log_size, "build log of fault artifact %llu", (unsigned long long)n);
}

static inline zc_artifact_meta fc_meta(uint64_t n)
{
    zc_artifact_meta meta;
    memset(&meta, 0, sizeof meta);
    snprintf(meta.device_name, sizeof meta.device_name, "fault device %llu",
             (unsigned long long)(n % 7));
    snprintf(meta.driver_version, sizeof meta.driver_version, "1.2.%llu",
             (unsigned long long)(n % 5));
    meta.compile_ns = n * 1000 + 17;
    meta.created_unix = 1700000000 + n;
    return meta;
}

/* NULL only when out of memory. */
static inline zc_artifact *fc_artifact(uint64_t n, size_t max_binary)
{
    size_t size = fc_binary_size(n, max_binary);
    uint8_t *binary = malloc(size);
    if (binary == NULL)
        return NULL;
    fc_fill(binary, size, n);
    char log[64];
    int log_size = fc_log(n, log, sizeof log);
    zc_artifact_meta meta = fc_meta(n);
    zc_artifact *artifact = zc_artifact_create(binary, size, log, (size_t)log_size, &meta);
    free(binary);
    return artifact;
}

/* True when artifact is exactly key number n's: binary, log and metadata. */
static inline bool fc_artifact_matches(const zc_artifact *artifact, uint64_t n, size_t max_binary)
{
    zc_artifact *expected = fc_artifact(n, max_binary);
    if (expected == NULL)
        return false;
    size_t size, expected_size, log_size, expected_log_size;
    const uint8_t *binary = zc_artifact_binary(artifact, &size);
    const uint8_t *expected_binary = zc_artifact_binary(expected, &expected_size);
    const char *log = zc_artifact_build_log(artifact, &log_size);
    const char *expected_log = zc_artifact_build_log(expected, &expected_log_size);
    const zc_artifact_meta *meta = zc_artifact_meta_of(artifact);
    const zc_artifact_meta *expected_meta = zc_artifact_meta_of(expected);
    bool same = size == expected_size && memcmp(binary, expected_binary, size) == 0 &&
                log_size == expected_log_size && memcmp(log, expected_log, log_size) == 0 &&
                strcmp(meta->device_name, expected_meta->device_name) == 0 &&
                strcmp(meta->driver_version, expected_meta->driver_version) == 0 &&
                meta->compile_ns == expected_meta->compile_ns &&
                meta->created_unix == expected_meta->created_unix;
    zc_artifact_unref(expected);
    return same;
}

#endif
