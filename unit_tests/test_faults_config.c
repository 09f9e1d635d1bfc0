/* config.file in every bad state: garbage, huge, plausible but wrong,
 * unreadable, unopenable, a symlink, a directory, a FIFO. Loads always work;
 * stores either work with config.file exact afterwards, or fail cleanly
 * (ZC_ERR_IO, nothing left behind, nothing outside touched). Missing, empty,
 * short, long, wrapped and far-too-large values are covered by
 * test_disk_tier.c. */
#include <criterion/criterion.h>

#include "../source/local/fs_ops.h"
#include "fault_test_support.h"
#include "zecache/disk_claim.h"
#include "zecache/disk_maintenance.h"

TestSuite(fault_config, .init = ft_make_root, .fini = ft_remove_root);

enum { LIMIT = 64 << 10 };

static void write_config(const void *bytes, size_t size)
{
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    unlink(path);
    ft_write_file(path, bytes, size);
}

/* Stores keys 1..3, plants config.file content, stores key 4: afterwards
 * config.file is exact and everything loads. */
static void assert_store_repairs(const void *bytes, size_t size)
{
    zc_disk_tier *tier = ft_open(LIMIT, NULL);
    for (uint64_t n = 1; n <= 3; n++)
        ft_store(tier, n);
    write_config(bytes, size);
    uint64_t recorded;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_MISS);
    ft_store(tier, 4);
    cr_assert_eq(ft_assert_exact_and_clean("after the store").entries, 4);
    for (uint64_t n = 1; n <= 4; n++)
        ft_assert_hit(tier, n);
    zc_disk_tier_close(tier);
}

Test(fault_config, random_garbage_is_rebuilt_by_the_next_store)
{
    uint8_t garbage[8];
    uint64_t state = 12345;
    for (int round = 0; round < 8; round++) {
        for (size_t i = 0; i < sizeof garbage; i++)
            garbage[i] = (uint8_t)(fc_mix(state++) >> 17);
        garbage[7] |= 0x01; /* far above any plausible total */
        assert_store_repairs(garbage, sizeof garbage);
        ft_remove_root();
        ft_make_root();
    }
}

Test(fault_config, text_instead_of_a_binary_value_is_rebuilt_by_the_next_store)
{
    assert_store_repairs("12345678", 8); /* eight ASCII digits: about 4e18, implausible */
}

Test(fault_config, huge_file_is_cut_back_to_eight_exact_bytes)
{
    size_t size = 1 << 20;
    uint8_t *huge = malloc(size);
    for (size_t i = 0; i < size; i++)
        huge[i] = (uint8_t)fc_mix(i);
    assert_store_repairs(huge, size);
    struct stat st;
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 8);
    free(huge);
}

/* A plausible value cannot be told from the truth without a scan, and a
 * store does not scan unless it must make room: the first store that needs
 * room rescans. Until then the real total may exceed the limit by at most
 * the amount the value was too small. Returns how many stores it took. */
static uint64_t stores_until_exact(uint64_t planted)
{
    zc_disk_tier *tier = ft_open(LIMIT, NULL);
    for (uint64_t n = 1; n <= 3; n++)
        ft_store(tier, n);
    uint64_t real = ft_take_census().total;
    uint64_t undercount = planted < real ? real - planted : 0;
    write_config(&planted, sizeof planted);
    uint64_t recorded;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(recorded, planted);
    uint64_t stores = 0;
    for (uint64_t n = 4;; n++) {
        ft_store(tier, n);
        stores++;
        ft_census census = ft_take_census();
        cr_assert_leq(census.total, LIMIT + undercount);
        cr_assert(ft_config_value(&recorded));
        if (recorded == census.total)
            break;
        cr_assert_lt(n, 500, "a store must need room");
    }
    ft_assert_exact_and_clean("once repaired");
    cr_log_info("planted %llu (real %llu): exact after %llu stores", (unsigned long long)planted,
                (unsigned long long)real, (unsigned long long)stores);
    zc_disk_tier_close(tier);
    return stores;
}

Test(fault_config, plausible_too_small_value_is_repaired_by_the_first_store_needing_room)
{
    cr_assert_gt(stores_until_exact(0), 1);
}

Test(fault_config, plausible_too_large_value_is_repaired_by_the_next_store)
{
    cr_assert_eq(stores_until_exact(LIMIT + LIMIT / 2), 1);
}

/* ---- config.file that cannot be read or opened (root ignores chmod 000,
 * so the faults come through zc_fs_ops) ---- */

Test(fault_config, unreadable_config_file_is_rescanned_and_stores_stay_exact)
{
    zc_disk_tier *tier = ft_open(LIMIT, &ft_faulty_ops);
    ft_store(tier, 1);
    ft_start_plan((ft_fault_plan){.config_read_error = EIO});
    ft_store(tier, 2);
    ft_store(tier, 3);
    uint64_t recorded;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_ERR_IO);
    ft_start_plan((ft_fault_plan){0});
    cr_assert_eq(ft_assert_exact_and_clean("after stores with an unreadable config.file").entries,
                 3);
    for (uint64_t n = 1; n <= 3; n++)
        ft_assert_hit(tier, n);
    zc_disk_tier_close(tier);
}

Test(fault_config, unopenable_config_file_fails_stores_cleanly_and_loads_hit)
{
    zc_disk_tier *tier = ft_open(LIMIT, &ft_faulty_ops);
    ft_store(tier, 1);
    ft_start_plan((ft_fault_plan){.config_open_error = EACCES});
    cr_assert_eq(ft_try_store(tier, 2, "trace"), ZC_ERR_IO);
    ft_assert_hit(tier, 1);
    ft_assert_miss(tier, 2);
    uint64_t entries = 0, trimmed = 0;
    cr_assert_eq(zc_disk_tier_trim(tier, 0, 0, &entries, &trimmed), ZC_ERR_IO);
    cr_assert_eq(entries, 0);
    cr_assert_eq(zc_disk_tier_clear(tier), ZC_ERR_IO);
    ft_assert_hit(tier, 1);
    ft_start_plan((ft_fault_plan){0});
    cr_assert_eq(ft_assert_exact_and_clean("after refused stores").entries, 1);
    ft_store(tier, 2);
    ft_assert_exact_and_clean("after a store");
    zc_disk_tier_close(tier);
}

/* config.file that cannot be created at open time: an error that says the
 * directory is read-only (EROFS, EACCES, EPERM) opens it read-only, which
 * loads from and never writes to; any other error disables it. */
Test(fault_config, open_fails_cleanly_when_config_file_cannot_be_created)
{
    cr_assert_eq(mkdir(ft_cache, 0700), 0);
    zc_config config = ft_config(ft_cache, LIMIT);
    zc_disk_tier *tier = (zc_disk_tier *)1;
    ft_start_plan((ft_fault_plan){.config_open_error = EIO});
    cr_assert_eq(zc_disk_tier_open_with_ops(&config, &ft_faulty_ops, &tier), ZC_ERR_DISABLED);
    cr_assert_null(tier);
    const int read_only_errors[] = {EROFS, EACCES, EPERM};
    for (size_t i = 0; i < sizeof read_only_errors / sizeof read_only_errors[0]; i++) {
        ft_start_plan((ft_fault_plan){0});
        zc_disk_tier *writer = ft_open(LIMIT, &ft_faulty_ops);
        ft_store(writer, 1);
        zc_disk_tier_close(writer);
        ft_census before = ft_take_census();
        ft_start_plan((ft_fault_plan){.config_open_error = read_only_errors[i]});
        cr_assert_eq(zc_disk_tier_open_with_ops(&config, &ft_faulty_ops, &tier), ZC_OK, "%s",
                     strerror(read_only_errors[i]));
        ft_assert_hit(tier, 1);
        cr_assert_eq(ft_try_store(tier, 2, NULL), ZC_ERR_IO, "the first skip is reported");
        cr_assert_eq(ft_try_store(tier, 3, NULL), ZC_ERR_DISABLED, "the later ones are quiet");
        zc_disk_claim claim;
        zc_disk_claim_result result;
        zc_key key = fc_key(4);
        cr_assert_eq(zc_disk_tier_claim(tier, &key, 60000, &result, &claim), ZC_ERR_DISABLED);
        cr_assert_eq(result, ZC_DISK_TIMED_OUT);
        zc_disk_tier_release(tier, &claim);
        zc_disk_tier_close(tier);
        ft_census after = ft_take_census();
        cr_assert_eq(after.entries, before.entries);
        cr_assert_eq(after.total, before.total);
    }
    ft_start_plan((ft_fault_plan){0});
}

/* ---- config.file that is not a regular file ---- */

typedef void (*plant_fn)(const char *path);

static char outside[PATH_MAX];
static const uint64_t outside_value = 77;

static void plant_symlink_outside(const char *path)
{
    snprintf(outside, sizeof outside, "%s/outside_config", ft_root);
    ft_write_file(outside, &outside_value, sizeof outside_value);
    cr_assert_eq(symlink(outside, path), 0);
}

static void plant_dangling_symlink(const char *path)
{
    snprintf(outside, sizeof outside, "%s/no_such_config", ft_root);
    cr_assert_eq(symlink(outside, path), 0);
}

static void plant_directory(const char *path)
{
    cr_assert_eq(mkdir(path, 0700), 0);
    outside[0] = '\0';
}

static void assert_outside_untouched(void)
{
    if (outside[0] == '\0')
        return;
    struct stat st;
    if (strstr(outside, "no_such") != NULL) {
        cr_assert_neq(lstat(outside, &st), 0, "nothing is created through the symlink");
        return;
    }
    uint64_t value = 0;
    int fd = open(outside, O_RDONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(read(fd, &value, sizeof value), (ssize_t)sizeof value);
    cr_assert_eq(fstat(fd, &st), 0);
    close(fd);
    cr_assert_eq(value, outside_value);
    cr_assert_eq(st.st_size, 8);
}

/* Planted before the tier opens: refused at open (with a message saying
 * why), so the cache is off rather than writing through a link. */
static void assert_refused_at_open(plant_fn plant)
{
    cr_assert_eq(mkdir(ft_cache, 0700), 0);
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    plant(path);
    zc_config config = ft_config(ft_cache, LIMIT);
    zc_disk_tier *tier = (zc_disk_tier *)1;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_ERR_DISABLED);
    cr_assert_null(tier);
    assert_outside_untouched();
}

/* Planted while the tier is open: loads hit, every locked operation fails
 * cleanly, nothing is written through it. */
static void assert_stores_fail_cleanly(plant_fn plant)
{
    zc_disk_tier *tier = ft_open(LIMIT, NULL);
    ft_store(tier, 1);
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    cr_assert_eq(unlink(path), 0);
    plant(path);
    cr_assert_eq(ft_try_store(tier, 2, "trace"), ZC_ERR_IO);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_ERR_IO);
    cr_assert_eq(zc_disk_tier_clear(tier), ZC_ERR_IO);
    uint64_t recorded;
    cr_assert_neq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    ft_assert_hit(tier, 1);
    ft_assert_miss(tier, 2);
    ft_census census = ft_take_census();
    cr_assert_eq(census.entries, 1);
    cr_assert_eq(census.temps, 0);
    cr_assert_eq(census.traces, 0);
    assert_outside_untouched();
    zc_disk_tier_close(tier);
}

Test(fault_config, symlink_to_a_file_outside_is_refused_at_open)
{
    assert_refused_at_open(plant_symlink_outside);
}

Test(fault_config, symlink_to_a_file_outside_fails_stores_and_is_not_written)
{
    assert_stores_fail_cleanly(plant_symlink_outside);
}

Test(fault_config, dangling_symlink_is_refused_at_open)
{
    assert_refused_at_open(plant_dangling_symlink);
}

Test(fault_config, dangling_symlink_fails_stores_and_creates_nothing)
{
    assert_stores_fail_cleanly(plant_dangling_symlink);
}

Test(fault_config, directory_is_refused_at_open)
{
    assert_refused_at_open(plant_directory);
}

Test(fault_config, directory_fails_stores_cleanly)
{
    assert_stores_fail_cleanly(plant_directory);
}

/* A FIFO opens without blocking (O_RDWR), locks, but cannot be read or
 * written at an offset: stores fail cleanly, nothing hangs. */
Test(fault_config, fifo_fails_stores_cleanly_without_hanging, .timeout = 20)
{
    zc_disk_tier *tier = ft_open(LIMIT, NULL);
    ft_store(tier, 1);
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_eq(ft_try_store(tier, 2, "trace"), ZC_ERR_IO);
    ft_assert_hit(tier, 1);
    ft_assert_miss(tier, 2);
    ft_census census = ft_take_census();
    cr_assert_eq(census.entries, 1);
    cr_assert_eq(census.temps, 0);
    cr_assert_eq(census.traces, 0);
    zc_disk_tier_close(tier);
}

/* Before the fix, repair wrote 8 bytes but left a longer file as long as it
 * was, so config.file stayed invalid after a "successful" repair. */
Test(fault_config, repair_cuts_a_too_long_config_file_back_to_eight_bytes)
{
    zc_disk_tier *tier = ft_open(LIMIT, NULL);
    ft_store(tier, 1);
    ft_store(tier, 2);
    uint8_t long_file[4096];
    memset(long_file, 0x5A, sizeof long_file);
    write_config(long_file, sizeof long_file);
    uint64_t repaired = 0, recorded = 0;
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, &repaired), ZC_OK);
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(recorded, repaired);
    cr_assert_eq(ft_assert_exact_and_clean("after the repair").total, repaired);
    zc_disk_tier_close(tier);
}

/* What a writer killed in the middle of a change leaves: the right old total
 * and a ninth byte marking it invalid. The next store rebuilds it. */
Test(fault_config, change_marker_left_by_a_killed_writer_is_rebuilt_by_the_next_store)
{
    zc_disk_tier *tier = ft_open(LIMIT, NULL);
    ft_store(tier, 1);
    uint64_t recorded = 0;
    cr_assert(ft_config_value(&recorded));
    uint8_t marked[9] = {0};
    memcpy(marked, &recorded, 8);
    write_config(marked, sizeof marked);
    ft_store(tier, 2); /* as if the killed writer had stored it */
    write_config(marked, sizeof marked);
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_MISS);
    ft_store(tier, 3);
    cr_assert_eq(ft_assert_exact_and_clean("after the next store").entries, 3);
    zc_disk_tier_close(tier);
}
