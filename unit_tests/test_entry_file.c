/* Large entries loaded frame by frame from their files (source/local/
 * entry_file.c): the same bytes as the whole file would give, without ever
 * holding the whole file; damage anywhere a miss whose file is removed; a
 * failed read a miss that leaves the entry for the next load. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../source/local/fs_ops.h"
#include "disk_test_support.h"
#include "zecache/disk_tier.h"
#include "zecache/entry.h"

#define FRAME ZC_ENTRY_FRAME_BYTES

/* Three frames of poorly compressible bytes (written stored), one of runs
 * of a counter, one of zeros (compressed, with blocks of one repeated
 * byte), and a bit more: six frames of every kind of block. */
enum { BINARY_SIZE = 5 * FRAME + 1000 };

/* ---- a file system that counts reads and fails one pread on demand ---- */

static atomic_size_t largest_transfer, preads, failing_pread;

static void note_transfer(size_t count)
{
    size_t seen = atomic_load(&largest_transfer);
    while (count > seen && !atomic_compare_exchange_weak(&largest_transfer, &seen, count)) {
    }
}

static ssize_t counted_read(int fd, void *buffer, size_t count)
{
    note_transfer(count);
    return read(fd, buffer, count);
}

static ssize_t counted_pread(int fd, void *buffer, size_t count, off_t offset)
{
    note_transfer(count);
    if (atomic_fetch_add(&preads, 1) + 1 == atomic_load(&failing_pread)) {
        errno = EIO;
        return -1;
    }
    return pread(fd, buffer, count, offset);
}

static void reset_counts(size_t fail_at)
{
    atomic_store(&largest_transfer, 0);
    atomic_store(&preads, 0);
    atomic_store(&failing_pread, fail_at);
}

/* ---- the entry ---- */

static char dir[PATH_MAX];
static char entry_path[PATH_MAX];
static zc_disk_tier *tier;
static zc_artifact *stored;
static uint8_t *good;
static size_t good_size;
static const zc_key key = {.bytes = {7, 7, 7}};

static zc_artifact *mixed_artifact(void)
{
    uint8_t *binary = malloc(BINARY_SIZE);
    cr_assert_not_null(binary);
    t_fill_random(binary, BINARY_SIZE, 11);
    for (size_t i = 0; i < BINARY_SIZE; i++)
        binary[i] = i < 3 * FRAME   ? (uint8_t)(binary[i] & 0x0f)
                    : i < 4 * FRAME ? (uint8_t)(i / 256)
                    : i < 5 * FRAME ? 0
                                    : binary[i];
    zc_artifact_meta meta = t_meta();
    zc_artifact *artifact = zc_artifact_create(binary, BINARY_SIZE, "the log", 7, &meta);
    free(binary);
    cr_assert_not_null(artifact);
    return artifact;
}

static void read_file(const char *path, uint8_t **bytes, size_t *size)
{
    FILE *file = fopen(path, "rb");
    cr_assert_not_null(file);
    cr_assert_eq(fseek(file, 0, SEEK_END), 0);
    *size = (size_t)ftell(file);
    rewind(file);
    *bytes = malloc(*size);
    cr_assert_eq(fread(*bytes, 1, *size, file), *size);
    fclose(file);
}

/* The entry's file replaced by size bytes of bytes. */
static void plant(const uint8_t *bytes, size_t size)
{
    int fd = open(entry_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, bytes, size), (ssize_t)size);
    close(fd);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/zc_entry_file.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    static zc_fs_ops ops;
    ops = *zc_fs_ops_default();
    ops.read = counted_read;
    ops.pread = counted_pread;
    zc_config config = t_disk_config(dir, 1 << 30, 3);
    cr_assert_eq(zc_disk_tier_open_with_ops(&config, &ops, &tier), ZC_OK);
    stored = mixed_artifact();
    cr_assert_eq(zc_disk_tier_store(tier, &key, stored, NULL), ZC_OK);
    char command[PATH_MAX + 64];
    snprintf(command, sizeof command, "find '%s' -name '*.l0_cache'", dir);
    FILE *pipe = popen(command, "r");
    cr_assert_not_null(pipe);
    cr_assert_not_null(fgets(entry_path, sizeof entry_path, pipe));
    pclose(pipe);
    entry_path[strcspn(entry_path, "\n")] = '\0';
    read_file(entry_path, &good, &good_size);
    cr_assert_gt(good_size, 2 * FRAME);
}

static void teardown(void)
{
    zc_disk_tier_close(tier);
    zc_artifact_unref(stored);
    free(good);
    char command[PATH_MAX + 16];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    cr_assert_eq(system(command), 0);
}

TestSuite(entry_file, .init = setup, .fini = teardown);

static zc_status load(void)
{
    zc_artifact *loaded = (zc_artifact *)1;
    zc_status status = zc_disk_tier_load(tier, &key, &loaded);
    if (status == ZC_OK)
        t_assert_same_artifact(loaded, stored);
    else
        cr_assert_null(loaded);
    zc_artifact_unref(status == ZC_OK ? loaded : NULL);
    return status;
}

Test(entry_file, a_large_entry_is_read_a_frame_at_a_time_into_the_same_bytes)
{
    reset_counts(0);
    cr_assert_eq(load(), ZC_OK);
    /* A frame and its headers at most, never the whole file. */
    cr_assert_leq(atomic_load(&largest_transfer), FRAME + 1024, "a read of %zu bytes",
                  atomic_load(&largest_transfer));
    cr_assert_geq(atomic_load(&preads), 6);
}

Test(entry_file, damage_anywhere_in_a_large_entry_is_a_miss_and_removed)
{
    size_t offsets[16];
    size_t frames = t_frame_offsets(good, good_size, offsets, 16);
    cr_assert_geq(frames, 6);
    uint8_t *bad = malloc(good_size + 1);
    size_t places[16 * 6 + 2], count = 0;
    for (size_t f = 0; f < frames; f++) {
        size_t end = f + 1 < frames ? offsets[f + 1] : good_size;
        /* Magic, descriptor, content size, first block header, a byte
         * inside, the checksum. */
        size_t at[] = {offsets[f],     offsets[f] + 4,         offsets[f] + 6,
                       offsets[f] + 9, (offsets[f] + end) / 2, end - 2};
        for (size_t i = 0; i < 6; i++)
            places[count++] = at[i];
    }
    places[count++] = 20;  /* the key, in the header */
    places[count++] = 200; /* the header checksum */
    for (size_t p = 0; p < count; p++) {
        for (int bit = 0; bit < 8; bit += 7) {
            memcpy(bad, good, good_size);
            bad[places[p]] ^= (uint8_t)(1u << bit);
            plant(bad, good_size);
            cr_assert_eq(load(), ZC_MISS, "byte %zu bit %d", places[p], bit);
            cr_assert_eq(t_count_entries(dir), 0, "byte %zu bit %d: not removed", places[p], bit);
        }
    }
    const size_t lengths[] = {offsets[1], offsets[2] + 100, good_size - 1, good_size + 1};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        memcpy(bad, good, good_size);
        bad[good_size] = 0;
        plant(bad, lengths[i]);
        cr_assert_eq(load(), ZC_MISS, "%zu bytes", lengths[i]);
        cr_assert_eq(t_count_entries(dir), 0, "%zu bytes: not removed", lengths[i]);
    }
    plant(good, good_size);
    cr_assert_eq(load(), ZC_OK);
    free(bad);
}

Test(entry_file, a_failed_read_is_a_miss_that_leaves_the_entry)
{
    reset_counts(0);
    cr_assert_eq(load(), ZC_OK);
    size_t calls = atomic_load(&preads);
    cr_assert_geq(calls, 6);
    for (size_t n = 1; n <= calls; n++) {
        reset_counts(n);
        cr_assert_eq(load(), ZC_MISS, "EIO on pread %zu", n);
        cr_assert_eq(t_count_entries(dir), 1, "EIO on pread %zu: removed", n);
    }
    reset_counts(0);
    cr_assert_eq(load(), ZC_OK);
}
