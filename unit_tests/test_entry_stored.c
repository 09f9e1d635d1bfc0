/* Stored frames (source/local/stored_frame.c): frames of a payload that
 * compresses poorly are written stored, decode to the same bytes through any
 * zstd reader, and any damage to them is a miss, never other bytes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "disk_test_support.h"
#include "zecache/disk_tier.h"
#include "zecache/entry.h"

enum { BINARY_SIZE = 3 * ZC_ENTRY_FRAME_BYTES + 5 };

/* Whether the frame at frame begins with a stored block: a single-segment
 * header with a 4-byte content size (9 bytes), then a block header whose
 * bits 1-2 are its type, 0 for stored. */
static bool first_block_stored(const uint8_t *frame)
{
    return frame[4] == 0xA4 && ((frame[9] >> 1) & 3) == 0;
}

/* binary_size bytes drawn from 16 values (compresses about 2x: stored), or
 * runs of a counter (compresses far more: kept compressed). */
static zc_artifact *artifact_of(size_t binary_size, bool poorly_compressible)
{
    uint8_t *binary = malloc(binary_size);
    cr_assert_not_null(binary);
    t_fill_random(binary, binary_size, 5);
    for (size_t i = 0; i < binary_size; i++)
        binary[i] = poorly_compressible ? (uint8_t)(binary[i] & 0x0f) : (uint8_t)(i / 256);
    zc_artifact_meta meta = t_meta();
    zc_artifact *artifact = zc_artifact_create(binary, binary_size, "log", 3, &meta);
    free(binary);
    cr_assert_not_null(artifact);
    return artifact;
}

static void assert_decodes_to(const uint8_t *entry, size_t size, const zc_key *key,
                              const zc_artifact *expected)
{
    zc_artifact *out = NULL;
    char reason[256] = "";
    cr_assert_eq(zc_entry_decode(entry, size, key, 0, &out, reason, sizeof reason), ZC_OK, "%s",
                 reason);
    t_assert_same_artifact(out, expected);
    zc_artifact_unref(out);
}

/* The entry of a poorly compressible payload of BINARY_SIZE: four frames. */
typedef struct stored_entry {
    zc_key key;
    zc_artifact *artifact;
    uint8_t *bytes;
    size_t size;
    size_t offsets[4];
} stored_entry;

static stored_entry encode_stored(uint64_t seed)
{
    stored_entry e = {.key = t_key(seed), .artifact = artifact_of(BINARY_SIZE, true)};
    cr_assert_eq(zc_entry_encode(&e.key, e.artifact, 3, &e.bytes, &e.size), ZC_OK);
    cr_assert_eq(t_frame_offsets(e.bytes, e.size, e.offsets, 4), 4);
    return e;
}

static void release(stored_entry *e)
{
    free(e->bytes);
    zc_artifact_unref(e->artifact);
}

Test(entry_stored, poorly_compressible_frames_are_stored_and_read_by_any_zstd_reader)
{
    stored_entry e = encode_stored(1);
    for (size_t i = 0; i < 4; i++)
        cr_assert(first_block_stored(e.bytes + e.offsets[i]), "frame %zu is stored", i);
    cr_assert_gt(e.size, BINARY_SIZE);
    assert_decodes_to(e.bytes, e.size, &e.key, e.artifact);
    /* One call of plain zstd over all frames gives the payload. */
    size_t payload_size = 0;
    const uint8_t *payload = zc_artifact_payload(e.artifact, &payload_size);
    uint8_t *plain = malloc(payload_size);
    size_t got = ZSTD_decompress(plain, payload_size, e.bytes + ZC_ENTRY_HEADER_SIZE,
                                 e.size - ZC_ENTRY_HEADER_SIZE);
    cr_assert_eq(got, payload_size, "%s", ZSTD_isError(got) ? ZSTD_getErrorName(got) : "");
    cr_assert_eq(memcmp(plain, payload, payload_size), 0);
    free(plain);
    release(&e);
}

Test(entry_stored, compressible_and_small_payloads_stay_compressed)
{
    zc_key key = t_key(2);
    const struct {
        size_t binary_size;
        bool poorly_compressible;
    } cases[] = {{BINARY_SIZE, false}, {64 * 1024, true}};
    for (size_t c = 0; c < 2; c++) {
        zc_artifact *artifact = artifact_of(cases[c].binary_size, cases[c].poorly_compressible);
        uint8_t *entry = NULL;
        size_t size = 0;
        cr_assert_eq(zc_entry_encode(&key, artifact, 3, &entry, &size), ZC_OK);
        cr_assert_not(first_block_stored(entry + ZC_ENTRY_HEADER_SIZE), "case %zu", c);
        cr_assert_lt(size, cases[c].binary_size * 3 / 4, "case %zu", c);
        assert_decodes_to(entry, size, &key, artifact);
        free(entry);
        zc_artifact_unref(artifact);
    }
}

/* A flip in each part of a stored frame: its header, a block header, the
 * stored bytes of the first and a later block, the checksum. */
Test(entry_stored, damage_anywhere_in_a_stored_frame_is_a_miss)
{
    stored_entry e = encode_stored(3);
    size_t second = e.offsets[1], second_end = e.offsets[2];
    const size_t places[] = {second + 5,      second + 9,     second + 12,   second + 12 + 131072,
                             second + 100000, second_end - 4, second_end - 1};
    for (size_t p = 0; p < sizeof places / sizeof places[0]; p++) {
        for (int bit = 0; bit < 8; bit += 3) {
            e.bytes[places[p]] ^= (uint8_t)(1u << bit);
            zc_artifact *out = (zc_artifact *)1;
            char reason[256] = "";
            cr_assert_eq(zc_entry_decode(e.bytes, e.size, &e.key, 0, &out, reason, sizeof reason),
                         ZC_MISS, "byte %zu bit %d", places[p], bit);
            cr_assert_null(out);
            cr_assert_neq(reason[0], '\0');
            e.bytes[places[p]] ^= (uint8_t)(1u << bit);
        }
    }
    assert_decodes_to(e.bytes, e.size, &e.key, e.artifact);
    release(&e);
}

/* Through the disk tier: a hit, and once damaged a miss whose file is
 * removed. */
Test(entry_stored, damaged_stored_entry_on_disk_is_a_miss_and_removed)
{
    char dir[] = "/tmp/zc_entry_stored.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    zc_config config = t_disk_config(dir, 1 << 30, 3);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    zc_key key = t_key(4);
    zc_artifact *artifact = artifact_of(BINARY_SIZE, true);
    cr_assert_eq(zc_disk_tier_store(tier, &key, artifact, NULL), ZC_OK);
    zc_artifact *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_OK);
    t_assert_same_artifact(loaded, artifact);
    zc_artifact_unref(loaded);
    char command[PATH_MAX + 160];
    snprintf(command, sizeof command,
             "f=$(find '%s' -name '*.l0_cache'); printf '\\377' | "
             "dd of=\"$f\" bs=1 seek=300000 conv=notrunc status=none",
             dir);
    cr_assert_eq(system(command), 0);
    loaded = (zc_artifact *)1;
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_MISS);
    cr_assert_null(loaded);
    cr_assert_eq(t_count_entries(dir), 0);
    zc_disk_tier_close(tier);
    zc_artifact_unref(artifact);
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    cr_assert_eq(system(command), 0);
}
