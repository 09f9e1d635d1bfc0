/* The SPIR-V digest memo: it never changes a key, trusts content not
 * pointers, keeps its limits, and holds up under threads. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "zecache/key.h"
#include "../source/key/spirv_digest_memo_internal.h"

#define LARGE_SIZE ((size_t)256 << 10)

TestSuite(spirv_digest_memo, .init = zc_spirv_digest_memo_clear);

/* size bytes (a multiple of 4) that pass the key's SPIR-V header check, the
 * rest filled from seed. */
static uint8_t *make_spirv(size_t size, uint64_t seed)
{
    static const uint32_t header[5] = {0x07230203u, 0x00010000u, 0, 1, 0};
    uint8_t *bytes = malloc(size);
    cr_assert_not_null(bytes);
    memcpy(bytes, header, sizeof header);
    uint64_t state = seed * 0x9e3779b97f4a7c15u + 1;
    for (size_t at = sizeof header; at < size; at += 4) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        uint32_t word = (uint32_t)state;
        memcpy(bytes + at, &word, 4);
    }
    return bytes;
}

/* The digest by OpenSSL directly, as a reference: SHA-256, or above
 * ZC_SPIRV_DIGEST_PIECE bytes that of the tag, the size and the pieces'
 * SHA-256s. */
static void reference_digest(const void *bytes, size_t size, uint8_t digest[ZC_SHA256_SIZE])
{
    if (size <= ZC_SPIRV_DIGEST_PIECE) {
        cr_assert_eq(EVP_Digest(bytes, size, digest, NULL, EVP_sha256(), NULL), 1);
        return;
    }
    size_t pieces = (size + ZC_SPIRV_DIGEST_PIECE - 1) / ZC_SPIRV_DIGEST_PIECE;
    size_t list_size = sizeof ZC_SPIRV_DIGEST_TAG + 8 + pieces * ZC_SHA256_SIZE;
    uint8_t *list = malloc(list_size), *at = list;
    memcpy(at, ZC_SPIRV_DIGEST_TAG, sizeof ZC_SPIRV_DIGEST_TAG);
    at += sizeof ZC_SPIRV_DIGEST_TAG;
    for (int i = 0; i < 8; i++)
        *at++ = (uint8_t)((uint64_t)size >> (8 * i));
    for (size_t begin = 0; begin < size; begin += ZC_SPIRV_DIGEST_PIECE, at += ZC_SHA256_SIZE) {
        size_t piece = size - begin < ZC_SPIRV_DIGEST_PIECE ? size - begin : ZC_SPIRV_DIGEST_PIECE;
        cr_assert_eq(
            EVP_Digest((const uint8_t *)bytes + begin, piece, at, NULL, EVP_sha256(), NULL), 1);
    }
    cr_assert_eq(EVP_Digest(list, list_size, digest, NULL, EVP_sha256(), NULL), 1);
    free(list);
}

static void assert_memo_digest(const void *bytes, size_t size)
{
    uint8_t expected[ZC_SHA256_SIZE], got[ZC_SHA256_SIZE];
    reference_digest(bytes, size, expected);
    cr_assert(zc_spirv_digest(bytes, size, got));
    cr_assert_arr_eq(got, expected, ZC_SHA256_SIZE);
}

static zc_key key_of(const void *bytes, size_t size)
{
    zc_key_builder *builder;
    zc_key key;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, bytes, size, "-O2", NULL), ZC_OK);
    cr_assert_eq(zc_key_finish(builder, &key), ZC_OK);
    zc_key_builder_destroy(builder);
    return key;
}

static zc_spirv_digest_memo_stats stats(void)
{
    zc_spirv_digest_memo_stats now;
    zc_spirv_digest_memo_stats_get(&now);
    return now;
}

/* The trace shows the digest the key was built from. */
static void assert_trace_digest(const void *bytes, size_t size)
{
    uint8_t expected[ZC_SHA256_SIZE];
    reference_digest(bytes, size, expected);
    char line[128];
    int length = snprintf(line, sizeof line, "sha256: ");
    for (int i = 0; i < ZC_SHA256_SIZE; i++)
        length += snprintf(line + length, sizeof line - (size_t)length, "%02x", expected[i]);
    zc_key_builder *builder;
    cr_assert_eq(zc_key_builder_create(true, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_spirv(builder, bytes, size, NULL, NULL), ZC_OK);
    cr_assert_not_null(strstr(zc_key_builder_trace(builder), line));
    zc_key_builder_destroy(builder);
}

Test(spirv_digest_memo, key_is_the_same_hashed_copied_and_recalled)
{
    uint8_t *spirv = make_spirv(LARGE_SIZE, 1);
    zc_key hashed = key_of(spirv, LARGE_SIZE);
    cr_assert_eq(stats().hashed, 1);
    cr_assert_eq(stats().copies, 0);
    zc_key copied = key_of(spirv, LARGE_SIZE);
    cr_assert_eq(stats().hashed, 2);
    cr_assert_eq(stats().copies, 1);
    cr_assert_eq(stats().bytes, LARGE_SIZE);
    zc_key recalled = key_of(spirv, LARGE_SIZE);
    cr_assert_eq(stats().hits, 1);
    cr_assert_eq(stats().hashed, 2);
    cr_assert(zc_key_equal(&hashed, &copied));
    cr_assert(zc_key_equal(&hashed, &recalled));
    assert_trace_digest(spirv, LARGE_SIZE);
    cr_assert_eq(stats().hits, 2);
    zc_spirv_digest_memo_clear();
    zc_key fresh = key_of(spirv, LARGE_SIZE);
    cr_assert_eq(stats().hits, 0);
    cr_assert(zc_key_equal(&hashed, &fresh));
    free(spirv);
}

Test(spirv_digest_memo, same_content_in_another_buffer_is_recalled)
{
    uint8_t *spirv = make_spirv(LARGE_SIZE, 2);
    assert_memo_digest(spirv, LARGE_SIZE);
    assert_memo_digest(spirv, LARGE_SIZE);
    uint8_t *other = malloc(LARGE_SIZE);
    cr_assert_not_null(other);
    memcpy(other, spirv, LARGE_SIZE);
    free(spirv);
    assert_memo_digest(other, LARGE_SIZE);
    cr_assert_eq(stats().hits, 1);
    free(other);
}

/* Changes one byte at offset, then checks the digest follows the content. */
static void assert_change_is_seen(uint8_t *spirv, size_t offset)
{
    uint64_t hits = stats().hits;
    spirv[offset] ^= 0x40;
    assert_memo_digest(spirv, LARGE_SIZE);
    cr_assert_eq(stats().hits, hits, "byte %zu changed, yet recalled", offset);
    spirv[offset] ^= 0x40;
    assert_memo_digest(spirv, LARGE_SIZE);
    cr_assert_eq(stats().hits, hits + 1);
}

Test(spirv_digest_memo, buffer_changed_in_place_is_hashed_again)
{
    uint8_t *spirv = make_spirv(LARGE_SIZE, 3);
    assert_memo_digest(spirv, LARGE_SIZE);
    assert_memo_digest(spirv, LARGE_SIZE);
    cr_assert_eq(stats().copies, 1);
    /* The first and last bytes, and bytes between the fingerprint's samples. */
    size_t offsets[] = {0, 1, LARGE_SIZE / 2 + 3, LARGE_SIZE - 1};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++)
        assert_change_is_seen(spirv, offsets[i]);
    zc_key before = key_of(spirv, LARGE_SIZE);
    spirv[LARGE_SIZE / 3] ^= 1;
    zc_key after = key_of(spirv, LARGE_SIZE);
    cr_assert_not(zc_key_equal(&before, &after));
    free(spirv);
}

Test(spirv_digest_memo, small_and_oversized_inputs_are_not_remembered)
{
    size_t sizes[] = {ZC_SPIRV_DIGEST_MEMO_MIN_SIZE - 4, ZC_SPIRV_DIGEST_MEMO_MAX_INPUT + 4};
    for (size_t i = 0; i < 2; i++) {
        uint8_t *spirv = make_spirv(sizes[i], 4);
        assert_memo_digest(spirv, sizes[i]);
        assert_memo_digest(spirv, sizes[i]);
        assert_memo_digest(spirv, sizes[i]);
        free(spirv);
    }
    zc_spirv_digest_memo_stats now = stats();
    cr_assert_eq(now.entries, 0);
    cr_assert_eq(now.hashed, 0);
    cr_assert_eq(now.hits, 0);
    uint8_t *smallest = make_spirv(ZC_SPIRV_DIGEST_MEMO_MIN_SIZE, 5);
    assert_memo_digest(smallest, ZC_SPIRV_DIGEST_MEMO_MIN_SIZE);
    cr_assert_eq(stats().entries, 1);
    free(smallest);
}

Test(spirv_digest_memo, entry_count_is_bounded)
{
    size_t size = ZC_SPIRV_DIGEST_MEMO_MIN_SIZE;
    uint8_t *spirv = make_spirv(size, 6);
    for (uint32_t i = 0; i < ZC_SPIRV_DIGEST_MEMO_MAX_ENTRIES + 10; i++) {
        memcpy(spirv + size / 2, &i, sizeof i);
        uint8_t digest[ZC_SHA256_SIZE];
        cr_assert(zc_spirv_digest(spirv, size, digest));
    }
    cr_assert_eq(stats().entries, ZC_SPIRV_DIGEST_MEMO_MAX_ENTRIES);
    cr_assert_eq(stats().hashed, ZC_SPIRV_DIGEST_MEMO_MAX_ENTRIES + 10);
    free(spirv);
}

/* Copies of the largest inputs remembered: the budget holds four, so a fifth
 * pushes out the least recently used. */
Test(spirv_digest_memo, copied_bytes_are_bounded_least_recently_used_first)
{
    size_t size = ZC_SPIRV_DIGEST_MEMO_MAX_INPUT;
    enum { CONTENTS = 5 };
    uint8_t *spirv[CONTENTS];
    for (int i = 0; i < CONTENTS; i++) {
        spirv[i] = make_spirv(size, 10 + (uint64_t)i);
        assert_memo_digest(spirv[i], size);
        assert_memo_digest(spirv[i], size);
        zc_spirv_digest_memo_stats now = stats();
        cr_assert_leq(now.bytes, ZC_SPIRV_DIGEST_MEMO_MAX_BYTES);
        cr_assert_eq(now.copies, i < 4 ? (size_t)i + 1 : 4);
    }
    cr_assert_eq(stats().bytes, ZC_SPIRV_DIGEST_MEMO_MAX_BYTES);
    uint64_t hits = stats().hits;
    assert_memo_digest(spirv[CONTENTS - 1], size);
    cr_assert_eq(stats().hits, hits + 1);
    assert_memo_digest(spirv[0], size);
    cr_assert_eq(stats().hits, hits + 1, "the oldest copy was dropped");
    for (int i = 0; i < CONTENTS; i++)
        free(spirv[i]);
}

/* ---- threads ---- */

#define THREADS 8
#define SHARED_CONTENTS 4
#define ROUNDS 40

typedef struct shared_inputs {
    uint8_t *spirv[SHARED_CONTENTS];
    zc_key keys[SHARED_CONTENTS];
} shared_inputs;

typedef struct hammer_job {
    const shared_inputs *shared;
    int index;
    int wrong_keys;
} hammer_job;

/* Each thread keys the shared contents, and a buffer of its own that it
 * rewrites in place every round (hashed, copied, then recalled); thread 0
 * also clears the memo now and then, so entries vanish while others compare
 * against them. */
static void *hammer(void *argument)
{
    hammer_job *job = argument;
    uint8_t *own = make_spirv(LARGE_SIZE, 100 + (uint64_t)job->index);
    for (int round = 0; round < ROUNDS; round++) {
        int which = (round + job->index) % SHARED_CONTENTS;
        zc_key key = key_of(job->shared->spirv[which], LARGE_SIZE);
        job->wrong_keys += !zc_key_equal(&key, &job->shared->keys[which]);
        memcpy(own + LARGE_SIZE / 2, &round, sizeof round);
        zc_key hashed = key_of(own, LARGE_SIZE);
        zc_key copied = key_of(own, LARGE_SIZE);
        zc_key recalled = key_of(own, LARGE_SIZE);
        job->wrong_keys += !zc_key_equal(&hashed, &copied) + !zc_key_equal(&hashed, &recalled);
        if (job->index == 0 && round % 8 == 7)
            zc_spirv_digest_memo_clear();
    }
    /* The last content of its own buffer, checked against a fresh copy. */
    uint8_t *fresh = malloc(LARGE_SIZE);
    if (fresh != NULL) {
        memcpy(fresh, own, LARGE_SIZE);
        zc_key last = key_of(own, LARGE_SIZE);
        zc_spirv_digest_memo_clear();
        zc_key expected = key_of(fresh, LARGE_SIZE);
        job->wrong_keys += !zc_key_equal(&last, &expected);
        free(fresh);
    }
    free(own);
    return NULL;
}

Test(spirv_digest_memo, threads_get_the_right_keys)
{
    shared_inputs shared;
    for (int i = 0; i < SHARED_CONTENTS; i++) {
        shared.spirv[i] = make_spirv(LARGE_SIZE, 50 + (uint64_t)i);
        shared.keys[i] = key_of(shared.spirv[i], LARGE_SIZE);
    }
    zc_spirv_digest_memo_clear();
    hammer_job jobs[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (hammer_job){.shared = &shared, .index = i};
        cr_assert_eq(pthread_create(&threads[i], NULL, hammer, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(pthread_join(threads[i], NULL), 0);
        cr_assert_eq(jobs[i].wrong_keys, 0, "thread %d", i);
    }
    for (int i = 0; i < SHARED_CONTENTS; i++) {
        assert_trace_digest(shared.spirv[i], LARGE_SIZE);
        free(shared.spirv[i]);
    }
    zc_spirv_digest_memo_stats now = stats();
    cr_assert_leq(now.entries, ZC_SPIRV_DIGEST_MEMO_MAX_ENTRIES);
    cr_assert_eq(now.bytes, now.copies * LARGE_SIZE);
}

/* One piece is plain SHA-256; more are digested piecewise, whatever the
 * number of processors. */
Test(spirv_digest_memo, digest_of_one_piece_and_of_several)
{
    const size_t sizes[] = {ZC_SPIRV_DIGEST_PIECE, ZC_SPIRV_DIGEST_PIECE + 4,
                            3 * ZC_SPIRV_DIGEST_PIECE + 1028};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *bytes = make_spirv(sizes[i], 40 + i);
        assert_memo_digest(bytes, sizes[i]);
        free(bytes);
    }
}
