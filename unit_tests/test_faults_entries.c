/* Bad files where an entry should be, through zc_disk_tier_load: every bit
 * flip at every byte, every truncation, future formats, other keys, empty
 * files, directories, symlinks, FIFOs, device nodes and hostile zstd frames.
 * Each must be a miss (or, for a flip zstd provably ignores, a hit with the
 * very same bytes), a regular file must be removed, anything else left alone
 * and never followed, and config.file must stay exact.
 * test_disk_tier.c already covers one payload flip, one header flip, a cut
 * to half, version 2, another key, huge sizes, an oversized file and
 * symlinks to files and directories outside: not repeated here. */
#include <criterion/criterion.h>
#include <sys/sysmacros.h>
#include <zstd.h>

#include "disk_test_support.h"
#include "fault_test_support.h"
#include "zecache/disk_maintenance.h"

TestSuite(fault_entries, .init = ft_make_root, .fini = ft_remove_root);

enum { VICTIM = 1, BYSTANDER = 2 };

/* A key whose artifact is small, so that every bit of its entry can be
 * flipped in a few seconds. */
static uint64_t small_key(void)
{
    for (uint64_t n = 100;; n++)
        if (fc_binary_size(n, FT_MAX_BINARY) < 160)
            return n;
}

static uint64_t entry_size_of(uint64_t n)
{
    size_t size;
    free(ft_encode(n, &size));
    return size;
}

/* ---- every bit, every length ---- */

Test(fault_entries, every_bit_flip_at_every_byte_is_a_miss_or_the_same_bytes)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    uint64_t n = small_key();
    ft_store(tier, BYSTANDER);
    ft_store(tier, n);
    char path[PATH_MAX];
    ft_entry_path(path, n, ZC_ENTRY_SUFFIX);
    size_t size;
    uint8_t *original = ft_read_file(path, &size);
    uint8_t *damaged = malloc(size);
    uint64_t bystander_size = entry_size_of(BYSTANDER);
    long misses = 0, same_bytes = 0;
    for (size_t byte = 0; byte < size; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(damaged, original, size);
            damaged[byte] ^= (uint8_t)(1u << bit);
            ft_write_file(path, damaged, size); /* same size: config.file stays exact */
            if (ft_try_load(tier, n) == ZC_OK) {
                /* Only a flip zstd ignores: ft_try_load checked the bytes. */
                cr_assert_geq(byte, ZC_ENTRY_HEADER_SIZE, "header byte %zu bit %d", byte, bit);
                cr_assert(t_exists(path));
                same_bytes++;
                continue;
            }
            misses++;
            cr_assert(!t_exists(path), "byte %zu bit %d: the bad entry is removed", byte, bit);
            uint64_t recorded = 0;
            cr_assert(ft_config_value(&recorded));
            cr_assert_eq(recorded, bystander_size, "byte %zu bit %d", byte, bit);
            ft_store(tier, n);
        }
    }
    cr_log_info("%zu-byte entry: %ld flips missed, %ld decoded to the same bytes", size, misses,
                same_bytes);
    cr_assert_lt(same_bytes, 8);
    ft_assert_hit(tier, n);
    ft_assert_hit(tier, BYSTANDER);
    cr_assert_eq(ft_assert_exact_and_clean("after all flips").entries, 2);
    free(original);
    free(damaged);
    zc_disk_tier_close(tier);
}

/* A file changed behind the tier's back changes the real total: repair
 * first, so what is checked is the removal's own arithmetic. */
static void plant_and_repair(zc_disk_tier *tier, const char *path, const void *bytes, size_t size)
{
    ft_write_file(path, bytes, size);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
}

Test(fault_entries, every_truncation_and_extension_is_a_miss_and_removed)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    ft_store(tier, BYSTANDER);
    ft_store(tier, VICTIM);
    char path[PATH_MAX];
    ft_entry_path(path, VICTIM, ZC_ENTRY_SUFFIX);
    size_t size;
    uint8_t *original = ft_read_file(path, &size);
    uint8_t *longer = malloc(2 * size);
    memcpy(longer, original, size);
    memcpy(longer + size, original, size);
    uint64_t bystander_size = entry_size_of(BYSTANDER);
    /* Every length short of the whole, then a few bytes more, then the
     * frame twice over. */
    size_t lengths = 0;
    for (size_t length = 0; length <= 2 * size; length += length < size + 16 ? 1 : size - 16) {
        if (length == size)
            continue;
        plant_and_repair(tier, path, longer, length);
        ft_assert_miss(tier, VICTIM);
        cr_assert(!t_exists(path), "length %zu of %zu", length, size);
        uint64_t recorded = 0;
        cr_assert(ft_config_value(&recorded));
        cr_assert_eq(recorded, bystander_size, "length %zu of %zu", length, size);
        lengths++;
    }
    cr_log_info("%zu lengths of a %zu-byte entry", lengths, size);
    ft_store(tier, VICTIM);
    ft_assert_hit(tier, VICTIM);
    ft_assert_hit(tier, BYSTANDER);
    ft_assert_exact_and_clean("after all truncations");
    free(original);
    free(longer);
    zc_disk_tier_close(tier);
}

/* ---- whole files of the wrong kind ---- */

typedef void (*plant_fn)(const char *path, const uint8_t *entry, size_t entry_size);

typedef enum expectation {
    REMOVED,       /* a regular file: removed; a later store works */
    KEPT_REPLACED, /* not followed, left in place; a store replaces it */
    KEPT_BLOCKING, /* not followed, left in place; stores fail cleanly */
} expectation;

/* Plants a bad file in place of VICTIM's entry, with BYSTANDER's entry
 * beside it, and checks the load, what is left, accounting and what a store
 * of VICTIM then does. others_left: files the plant leaves that are neither
 * entries nor config.file. */
static void check_planted(plant_fn plant, expectation expected, uint64_t others_left)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    ft_store(tier, BYSTANDER);
    size_t entry_size;
    uint8_t *entry = ft_encode(VICTIM, &entry_size);
    char path[PATH_MAX];
    ft_entry_path(path, VICTIM, ZC_ENTRY_SUFFIX);
    ft_make_entry_dirs(VICTIM);
    plant(path, entry, entry_size);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);

    ft_assert_miss(tier, VICTIM);
    ft_assert_miss(tier, VICTIM); /* and again, with the same result */
    cr_assert_eq(t_exists(path), expected != REMOVED);
    ft_census census = ft_take_census();
    uint64_t recorded = 0;
    cr_assert(ft_config_value(&recorded));
    cr_assert_eq(recorded, census.total);
    cr_assert_eq(census.temps, 0);
    ft_assert_hit(tier, BYSTANDER);

    zc_status stored = ft_try_store(tier, VICTIM, "trace");
    cr_assert_eq(stored, expected == KEPT_BLOCKING ? ZC_ERR_IO : ZC_OK);
    if (expected == KEPT_BLOCKING)
        ft_assert_miss(tier, VICTIM);
    else
        ft_assert_hit(tier, VICTIM);
    census = ft_take_census();
    cr_assert(ft_config_value(&recorded));
    cr_assert_eq(recorded, census.total);
    cr_assert_eq(census.temps, 0);
    cr_assert_eq(census.entries, expected == KEPT_BLOCKING ? 1 : 2);
    cr_assert_eq(census.others, others_left, "e.g. %s", census.other);
    free(entry);
    zc_disk_tier_close(tier);
}

static void plant_empty_file(const char *path, const uint8_t *entry, size_t entry_size)
{
    (void)entry, (void)entry_size;
    ft_write_file(path, "", 0);
}

Test(fault_entries, zero_length_entry_is_a_miss_and_removed)
{
    check_planted(plant_empty_file, REMOVED, 0);
}

static void set_version(uint8_t *entry, uint32_t version)
{
    zc_put_le32(entry + T_OFFSET_VERSION, version);
    t_resign_header(entry);
}

static void plant_version_3(const char *path, const uint8_t *entry, size_t entry_size)
{
    uint8_t *copy = malloc(entry_size);
    memcpy(copy, entry, entry_size);
    set_version(copy, 3);
    ft_write_file(path, copy, entry_size);
    free(copy);
}

/* A future format with a longer header: what the version number says comes
 * before anything the header size or checksum would say. */
static void plant_future_longer_header(const char *path, const uint8_t *entry, size_t entry_size)
{
    enum { EXTRA = 48 };
    uint8_t *copy = calloc(1, entry_size + EXTRA);
    memcpy(copy, entry, ZC_ENTRY_HEADER_SIZE);
    memcpy(copy + ZC_ENTRY_HEADER_SIZE + EXTRA, entry + ZC_ENTRY_HEADER_SIZE,
           entry_size - ZC_ENTRY_HEADER_SIZE);
    zc_put_le32(copy + T_OFFSET_HEADER_SIZE, ZC_ENTRY_HEADER_SIZE + EXTRA);
    set_version(copy, ZC_ENTRY_FORMAT_VERSION + 1);
    ft_write_file(path, copy, entry_size + EXTRA);
    free(copy);
}

static void plant_version_max(const char *path, const uint8_t *entry, size_t entry_size)
{
    uint8_t *copy = malloc(entry_size);
    memcpy(copy, entry, entry_size);
    set_version(copy, UINT32_MAX);
    ft_write_file(path, copy, entry_size);
    free(copy);
}

Test(fault_entries, future_format_version_is_a_miss_and_removed)
{
    check_planted(plant_version_3, REMOVED, 0);
}

Test(fault_entries, future_format_with_a_longer_header_is_a_miss_and_removed)
{
    check_planted(plant_future_longer_header, REMOVED, 0);
}

Test(fault_entries, highest_format_version_is_a_miss_and_removed)
{
    check_planted(plant_version_max, REMOVED, 0);
}

/* Another key's entry hard-linked under this key's name: only the link goes,
 * the other key's entry still loads. */
static void plant_hard_link_to_bystander(const char *path, const uint8_t *entry, size_t entry_size)
{
    (void)entry, (void)entry_size;
    char bystander[PATH_MAX];
    ft_entry_path(bystander, BYSTANDER, ZC_ENTRY_SUFFIX);
    cr_assert_eq(link(bystander, path), 0);
}

Test(fault_entries, hard_link_to_another_keys_entry_is_a_miss_and_unlinked)
{
    check_planted(plant_hard_link_to_bystander, REMOVED, 0);
}

static void plant_directory(const char *path, const uint8_t *entry, size_t entry_size)
{
    cr_assert_eq(mkdir(path, 0700), 0);
    char inside[PATH_MAX + 16];
    snprintf(inside, sizeof inside, "%s/inside", path);
    ft_write_file(inside, entry, entry_size);
}

Test(fault_entries, directory_in_place_of_an_entry_is_a_miss_and_left_alone)
{
    check_planted(plant_directory, KEPT_BLOCKING, 2);
    char path[PATH_MAX], inside[PATH_MAX + 16];
    ft_entry_path(path, VICTIM, ZC_ENTRY_SUFFIX);
    snprintf(inside, sizeof inside, "%s/inside", path);
    cr_assert(t_exists(inside), "nothing inside it is touched");
}

static void plant_fifo(const char *path, const uint8_t *entry, size_t entry_size)
{
    (void)entry, (void)entry_size;
    cr_assert_eq(mkfifo(path, 0600), 0);
}

/* O_NONBLOCK: opening a FIFO with no writer must not hang the load. */
Test(fault_entries, fifo_in_place_of_an_entry_is_a_miss_without_blocking, .timeout = 20)
{
    check_planted(plant_fifo, REMOVED, 0);
}

static void plant_zero_device(const char *path, const uint8_t *entry, size_t entry_size)
{
    (void)entry, (void)entry_size;
    if (mknod(path, S_IFCHR | 0600, makedev(1, 5)) != 0) { /* /dev/zero */
        ft_remove_root();
        cr_skip_test("mknod needs CAP_MKNOD");
    }
}

Test(fault_entries, device_node_in_place_of_an_entry_is_a_miss_and_not_read, .timeout = 20)
{
    check_planted(plant_zero_device, REMOVED, 0);
}

/* ---- symlinks in place of an entry (one to a file outside is covered by
 * test_disk_tier.c): never followed, never deleted through ---- */

static char outside_target[PATH_MAX];

static void plant_symlink_to(const char *path, const char *target)
{
    snprintf(outside_target, sizeof outside_target, "%s", target);
    cr_assert_eq(symlink(target, path), 0);
}

static void plant_dangling_symlink(const char *path, const uint8_t *entry, size_t entry_size)
{
    (void)entry, (void)entry_size;
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s/nowhere.l0_cache", ft_root);
    plant_symlink_to(path, target);
}

Test(fault_entries, dangling_symlink_is_a_miss_and_replaced_by_a_store)
{
    check_planted(plant_dangling_symlink, KEPT_REPLACED, 0);
    cr_assert(!t_exists(outside_target), "nothing is created through the link");
}

/* A valid entry of this very key inside the cache, under another name: a
 * relative link that stays beneath the root is refused all the same. */
static void plant_symlink_inside(const char *path, const uint8_t *entry, size_t entry_size)
{
    char target[PATH_MAX];
    ft_path(target, "elsewhere.bin");
    ft_write_file(target, entry, entry_size);
    cr_assert_eq(symlink("../../elsewhere.bin", path), 0);
    snprintf(outside_target, sizeof outside_target, "%s", target);
}

Test(fault_entries, symlink_to_a_valid_entry_inside_the_cache_is_not_followed)
{
    size_t entry_size;
    uint8_t *entry = ft_encode(VICTIM, &entry_size);
    check_planted(plant_symlink_inside, KEPT_REPLACED, 1);
    size_t size;
    uint8_t *kept = ft_read_file(outside_target, &size);
    cr_assert_eq(size, entry_size);
    cr_assert_arr_eq(kept, entry, size, "the link's target is untouched");
    free(kept);
    free(entry);
}

static void plant_symlink_to_dev_zero(const char *path, const uint8_t *entry, size_t entry_size)
{
    (void)entry, (void)entry_size;
    plant_symlink_to(path, "/dev/zero");
}

Test(fault_entries, symlink_to_a_device_is_not_followed, .timeout = 20)
{
    check_planted(plant_symlink_to_dev_zero, KEPT_REPLACED, 0);
    struct stat st;
    cr_assert_eq(stat("/dev/zero", &st), 0);
    cr_assert(S_ISCHR(st.st_mode), "/dev/zero is still a device");
}

static void plant_symlink_to_directory(const char *path, const uint8_t *entry, size_t entry_size)
{
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s/outside_dir", ft_root);
    cr_assert_eq(mkdir(target, 0700), 0);
    char inside[PATH_MAX + 16];
    snprintf(inside, sizeof inside, "%s/keep", target);
    ft_write_file(inside, entry, entry_size);
    plant_symlink_to(path, target);
}

Test(fault_entries, symlink_to_a_directory_outside_is_not_followed)
{
    check_planted(plant_symlink_to_directory, KEPT_REPLACED, 0);
    char inside[PATH_MAX + 16];
    snprintf(inside, sizeof inside, "%s/keep", outside_target);
    cr_assert(t_exists(inside));
}

/* The second level directory (k1) a symlink to a directory outside that
 * holds a valid entry for the key: not followed by loads, stores or scans. */
Test(fault_entries, symlinked_second_level_directory_is_not_followed)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    ft_store(tier, BYSTANDER);
    char path[PATH_MAX], outside[PATH_MAX + 80], hex[ZC_KEY_HEX_SIZE];
    zc_key key = fc_key(VICTIM);
    zc_key_to_hex(&key, hex);
    ft_entry_path(path, VICTIM, ZC_ENTRY_SUFFIX);
    *strrchr(path, '/') = '\0'; /* .../k0/k1 */
    char *k1 = strrchr(path, '/');
    *k1 = '\0';
    mkdir(path, 0700);
    *k1 = '/';
    snprintf(outside, sizeof outside, "%s/outside_k1", ft_root);
    cr_assert_eq(mkdir(outside, 0700), 0);
    cr_assert_eq(symlink(outside, path), 0);
    snprintf(outside, sizeof outside, "%s/outside_k1/%s%s", ft_root, hex, ZC_ENTRY_SUFFIX);
    size_t entry_size;
    uint8_t *entry = ft_encode(VICTIM, &entry_size);
    ft_write_file(outside, entry, entry_size);

    ft_assert_miss(tier, VICTIM);
    cr_assert(t_exists(outside));
    cr_assert_eq(ft_try_store(tier, VICTIM, NULL), ZC_ERR_IO);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    ft_census census = ft_take_census();
    cr_assert_eq(census.entries, 1, "the entry beyond the link is not counted");
    cr_assert_eq(census.temps, 0);
    size_t size;
    uint8_t *kept = ft_read_file(outside, &size);
    cr_assert_eq(size, entry_size);
    cr_assert_arr_eq(kept, entry, size);
    free(kept);
    free(entry);
    zc_disk_tier_close(tier);
}

/* A regular file where the k0 directory should be: loads miss, stores of
 * keys under it fail cleanly, the file is not touched, others work. */
Test(fault_entries, file_in_place_of_a_level_directory_blocks_only_its_keys)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    ft_store(tier, BYSTANDER);
    char path[PATH_MAX];
    ft_entry_path(path, VICTIM, ZC_ENTRY_SUFFIX);
    *strrchr(path, '/') = '\0';
    *strrchr(path, '/') = '\0'; /* .../k0 */
    cr_assert(!t_exists(path), "the test needs keys under different k0");
    ft_write_file(path, "not a directory", 15);
    ft_assert_miss(tier, VICTIM);
    cr_assert_eq(ft_try_store(tier, VICTIM, NULL), ZC_ERR_IO);
    size_t size;
    uint8_t *kept = ft_read_file(path, &size);
    cr_assert_eq(size, 15);
    free(kept);
    ft_assert_hit(tier, BYSTANDER);
    ft_census census = ft_take_census();
    uint64_t recorded;
    cr_assert(ft_config_value(&recorded));
    cr_assert_eq(recorded, census.total);
    cr_assert_eq(census.temps, 0);
    cr_assert_eq(census.others, 1);
    zc_disk_tier_close(tier);
}

/* ---- hostile frames: a correct, signed header around a frame that lies ---- */

typedef struct frame_spec {
    int content_size_flag; /* 0: the frame declares no content size */
    long declared_delta;   /* added to the frame's declared content size */
    long header_delta;     /* added to the header's binary size */
} frame_spec;

/* VICTIM's payload (binary || log), under 256 bytes so the frame declares
 * its content size in one byte, right after the frame header descriptor. */
static uint8_t *small_payload(size_t *binary_size, size_t *size)
{
    zc_artifact *artifact = fc_artifact(VICTIM, FT_MAX_BINARY);
    size_t log_size;
    const uint8_t *binary = zc_artifact_binary(artifact, binary_size);
    const char *log = zc_artifact_build_log(artifact, &log_size);
    *binary_size = *binary_size > 150 ? 150 : *binary_size;
    *size = *binary_size + log_size;
    uint8_t *payload = malloc(*size);
    memcpy(payload, binary, *binary_size);
    memcpy(payload + *binary_size, log, log_size);
    zc_artifact_unref(artifact);
    cr_assert_lt(*size, 256);
    return payload;
}

static size_t compress_with(const uint8_t *payload, size_t size, int content_size_flag,
                            uint8_t *frame, size_t capacity)
{
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    cr_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)));
    cr_assert(
        !ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, content_size_flag)));
    size_t frame_size = ZSTD_compress2(cctx, frame, capacity, payload, size);
    cr_assert(!ZSTD_isError(frame_size));
    ZSTD_freeCCtx(cctx);
    return frame_size;
}

/* Writes an entry for VICTIM with a header signed over the given sizes. */
static void plant_hostile_frame(const char *path, const frame_spec *spec)
{
    size_t binary_size, payload_size;
    uint8_t *payload = small_payload(&binary_size, &payload_size);
    uint8_t frame[1024];
    size_t frame_size =
        compress_with(payload, payload_size, spec->content_size_flag, frame, sizeof frame);
    if (spec->content_size_flag) {
        /* Single segment, one-byte content size at offset 5. */
        cr_assert_eq(frame[4] & 0xC0, 0);
        cr_assert(frame[4] & 0x20);
        cr_assert_eq(frame[5], payload_size);
        frame[5] = (uint8_t)((long)frame[5] + spec->declared_delta);
    }
    size_t template_size;
    uint8_t *entry = ft_encode(VICTIM, &template_size);
    uint8_t *bytes = malloc(ZC_ENTRY_HEADER_SIZE + frame_size);
    memcpy(bytes, entry, ZC_ENTRY_HEADER_SIZE);
    memcpy(bytes + ZC_ENTRY_HEADER_SIZE, frame, frame_size);
    zc_put_le64(bytes + T_OFFSET_BINARY_SIZE, (uint64_t)((long)binary_size + spec->header_delta));
    zc_put_le64(bytes + T_OFFSET_COMPRESSED_SIZE, frame_size);
    t_resign_header(bytes);
    ft_write_file(path, bytes, ZC_ENTRY_HEADER_SIZE + frame_size);
    free(bytes);
    free(entry);
    free(payload);
}

static frame_spec current_spec;

static void plant_current_spec(const char *path, const uint8_t *entry, size_t entry_size)
{
    (void)entry, (void)entry_size;
    plant_hostile_frame(path, &current_spec);
}

/* The control: the same construction with nothing changed decodes, so each
 * hostile variant below fails for its lie alone. */
Test(fault_entries, honest_handmade_frame_decodes)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    char path[PATH_MAX];
    ft_entry_path(path, VICTIM, ZC_ENTRY_SUFFIX);
    ft_make_entry_dirs(VICTIM);
    plant_hostile_frame(path, &(frame_spec){.content_size_flag = 1});
    zc_key key = fc_key(VICTIM);
    zc_artifact *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, &key, &loaded), ZC_OK);
    size_t size, full_size = fc_binary_size(VICTIM, FT_MAX_BINARY);
    zc_artifact_binary(loaded, &size);
    cr_assert_eq(size, full_size > 150 ? 150 : full_size);
    zc_artifact_unref(loaded);
    zc_disk_tier_close(tier);
}

Test(fault_entries, frame_without_content_size_is_a_miss_and_removed)
{
    current_spec = (frame_spec){.content_size_flag = 0};
    check_planted(plant_current_spec, REMOVED, 0);
}

Test(fault_entries, frame_declaring_more_than_the_header_is_a_miss_and_removed)
{
    current_spec = (frame_spec){.content_size_flag = 1, .declared_delta = 20};
    check_planted(plant_current_spec, REMOVED, 0);
}

/* Header and frame agree on more bytes than the blocks hold. */
Test(fault_entries, frame_holding_less_than_both_declare_is_a_miss_and_removed)
{
    current_spec = (frame_spec){.content_size_flag = 1, .declared_delta = 20, .header_delta = 20};
    check_planted(plant_current_spec, REMOVED, 0);
}

/* Header and frame agree on fewer bytes than the blocks expand to. */
Test(fault_entries, frame_expanding_beyond_both_declare_is_a_miss_and_removed)
{
    current_spec = (frame_spec){.content_size_flag = 1, .declared_delta = -20, .header_delta = -20};
    check_planted(plant_current_spec, REMOVED, 0);
}

/* A genuine, checksummed frame that expands past the tier's size limit (a
 * zip bomb): refused before anything is allocated for it. */
static void plant_bomb(const char *path, const uint8_t *entry, size_t entry_size)
{
    (void)entry, (void)entry_size;
    size_t bomb_size = 4 << 20;
    uint8_t *zeros = calloc(1, bomb_size);
    zc_artifact *artifact = zc_artifact_create(zeros, bomb_size, NULL, 0, NULL);
    zc_key key = fc_key(VICTIM);
    uint8_t *bytes;
    size_t size;
    cr_assert_eq(zc_entry_encode(&key, artifact, 3, &bytes, &size), ZC_OK);
    cr_assert_lt(size, 1 << 10, "4 MiB of zeros compress to almost nothing");
    ft_write_file(path, bytes, size);
    free(bytes);
    zc_artifact_unref(artifact);
    free(zeros);
}

/* Refused, but not removed: it is a sound entry, which a process with a
 * larger NEO_CACHE_MAX_SIZE stores and loads (see disk_tier.c). */
Test(fault_entries, zip_bomb_above_the_size_limit_is_a_miss_and_kept_for_larger_limits)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    char path[PATH_MAX];
    ft_entry_path(path, VICTIM, ZC_ENTRY_SUFFIX);
    ft_make_entry_dirs(VICTIM);
    plant_bomb(path, NULL, 0);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    ft_assert_miss(tier, VICTIM);
    ft_assert_miss(tier, VICTIM);
    cr_assert(t_exists(path));
    ft_assert_exact_and_clean("after refusing the bomb");
    zc_disk_tier *larger = ft_open(8 << 20, NULL);
    zc_key key = fc_key(VICTIM);
    zc_artifact *loaded = NULL;
    cr_assert_eq(zc_disk_tier_load(larger, &key, &loaded), ZC_OK);
    size_t size;
    zc_artifact_binary(loaded, &size);
    cr_assert_eq(size, 4 << 20);
    zc_artifact_unref(loaded);
    zc_disk_tier_close(larger);
    zc_disk_tier_close(tier);
}

/* Header and a matching frame header claim the whole 1 GiB cap, the blocks
 * hold a few bytes: a miss, with no crash (the cap bounds what a load may
 * allocate; see RELIABILITY.md). */
Test(fault_entries, header_and_frame_claiming_the_whole_cap_are_a_miss)
{
    zc_disk_tier *tier = ft_open(0, NULL);
    char path[PATH_MAX];
    ft_entry_path(path, VICTIM, ZC_ENTRY_SUFFIX);
    ft_make_entry_dirs(VICTIM);
    /* A frame header by hand: descriptor 0xA4 = 4-byte content size, single
     * segment, checksum; then one raw last block of 4 bytes and a checksum. */
    uint8_t frame[] = {0x28, 0xB5, 0x2F, 0xFD, 0xA4, 0,   0,   0, 0x40, /* 1 GiB */
                       0x21, 0x00, 0x00, 'b',  'o',  'm', 'b', 0, 0,    0, 0};
    size_t template_size;
    uint8_t *bytes = ft_encode(VICTIM, &template_size);
    bytes = realloc(bytes, ZC_ENTRY_HEADER_SIZE + sizeof frame);
    memcpy(bytes + ZC_ENTRY_HEADER_SIZE, frame, sizeof frame);
    zc_put_le64(bytes + T_OFFSET_BINARY_SIZE, ZC_ENTRY_MAX_PAYLOAD);
    zc_put_le64(bytes + T_OFFSET_LOG_SIZE, 0);
    zc_put_le64(bytes + T_OFFSET_COMPRESSED_SIZE, sizeof frame);
    t_resign_header(bytes);
    cr_assert_eq(ZSTD_getFrameContentSize(frame, sizeof frame), ZC_ENTRY_MAX_PAYLOAD);
    ft_write_file(path, bytes, ZC_ENTRY_HEADER_SIZE + sizeof frame);
    char reason[256];
    zc_artifact *out = NULL;
    zc_key key = fc_key(VICTIM);
    cr_assert_eq(zc_entry_decode(bytes, ZC_ENTRY_HEADER_SIZE + sizeof frame, &key, 0, &out, reason,
                                 sizeof reason),
                 ZC_MISS);
    cr_log_info("1 GiB claim: %s", reason);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);
    ft_assert_miss(tier, VICTIM);
    cr_assert(!t_exists(path));
    ft_assert_exact_and_clean("after the 1 GiB claim");
    free(bytes);
    zc_disk_tier_close(tier);
}
