/* The "loaded unchanged" policy (zecache/loaded_check.h) against a reader
 * that counts its reads: in full at the first hit per device and options,
 * by size after that, in full for every hit once a check failed. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "zecache/loaded_check.h"

/* What the driver holds for one object, and what was read of it. */
typedef struct driver_object {
    size_t loaded_size;
    bool loaded_same;
    bool sizes_unknown;
    atomic_int size_reads;
    atomic_int full_reads;
} driver_object;

static bool read_sizes(void *object, size_t count, size_t *sizes)
{
    driver_object *driver = object;
    atomic_fetch_add(&driver->size_reads, 1);
    for (size_t i = 0; i < count; i++)
        sizes[i] = driver->loaded_size;
    return !driver->sizes_unknown;
}

static bool read_same(void *object, const zc_loaded_binaries *cached, zc_faulted_buffer *prepared)
{
    (void)prepared;
    driver_object *driver = object;
    atomic_fetch_add(&driver->full_reads, 1);
    return driver->loaded_same && driver->loaded_size == cached->sizes[0];
}

static const zc_loaded_reader reader = {read_sizes, read_same};
static const uint8_t binary[] = "native";
static const int device_a = 1, device_b = 2;

static bool hit_of(zc_loaded_checks *checks, driver_object *driver, const void *device,
                   const char *options, bool without_ir)
{
    const void *devices[] = {device, device};
    size_t sizes[] = {sizeof(binary), sizeof(binary)};
    const uint8_t *binaries[] = {binary, binary};
    zc_loaded_binaries cached = {.count = 1,
                                 .devices = devices,
                                 .options = options,
                                 .sizes = sizes,
                                 .binaries = binaries,
                                 .without_ir = without_ir};
    return zc_loaded_unchanged(checks, &cached, &reader, driver, NULL);
}

static bool hit(zc_loaded_checks *checks, driver_object *driver, const void *device,
                const char *options)
{
    return hit_of(checks, driver, device, options, false);
}

static driver_object unchanged(void)
{
    return (driver_object){.loaded_size = sizeof(binary), .loaded_same = true};
}

Test(loaded_check, the_first_hit_in_full_then_by_size)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    for (int i = 0; i < 3; i++)
        cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert_eq(atomic_load(&driver.full_reads), 1);
    cr_assert_eq(atomic_load(&driver.size_reads), 2);
}

Test(loaded_check, another_device_or_other_options_are_checked_in_full_first)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert(hit(&checks, &driver, &device_b, "-O2"));
    cr_assert(hit(&checks, &driver, &device_a, "-g"));
    cr_assert(hit(&checks, &driver, &device_a, NULL));
    cr_assert(hit(&checks, &driver, &device_a, ""));
    cr_assert_eq(atomic_load(&driver.full_reads), 4, "NULL options are empty ones");
    cr_assert_eq(atomic_load(&driver.size_reads), 1);
}

/* Pairs are told apart by the options' whole text, not by a hash of it:
 * options that differ only in their last byte are two pairs, and options
 * too long for a slot are checked in full at every hit. */
Test(loaded_check, options_are_compared_whole_and_long_ones_are_always_full)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    char first[ZC_LOADED_CHECK_OPTIONS_MAX - 1], second[sizeof first];
    memset(first, 'D', sizeof first - 1);
    first[sizeof first - 1] = '\0';
    memcpy(second, first, sizeof first);
    second[sizeof second - 2] = 'E';
    cr_assert(hit(&checks, &driver, &device_a, first));
    cr_assert(hit(&checks, &driver, &device_a, second));
    cr_assert(hit(&checks, &driver, &device_a, first));
    cr_assert_eq(atomic_load(&driver.full_reads), 2, "two pairs, each in full once");
    char too_long[ZC_LOADED_CHECK_OPTIONS_MAX + 1];
    memset(too_long, 'L', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = '\0';
    for (int i = 0; i < 3; i++)
        cr_assert(hit(&checks, &driver, &device_a, too_long));
    cr_assert_eq(atomic_load(&driver.full_reads), 5, "options too long for a slot: always full");
}

/* The hint a layer prepares a full check's buffer by follows the policy. */
Test(loaded_check, the_hint_says_full_until_the_pair_is_verified)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    const void *devices[] = {&device_a};
    size_t sizes[] = {sizeof(binary)};
    const uint8_t *binaries[] = {binary};
    zc_loaded_binaries cached = {
        .count = 1, .devices = devices, .options = "-O2", .sizes = sizes, .binaries = binaries};
    cr_assert(zc_loaded_check_is_full(&checks, &cached));
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert_not(zc_loaded_check_is_full(&checks, &cached));
    atomic_store(&checks.distrust, true);
    cr_assert(zc_loaded_check_is_full(&checks, &cached));
    cr_assert_eq(atomic_load(&driver.size_reads), 0, "the hint reads nothing of the driver");
}

Test(loaded_check, a_later_hit_of_another_size_is_refused_and_all_are_full_after)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    driver_object rebuilt = unchanged();
    rebuilt.loaded_size++;
    cr_assert_not(hit(&checks, &rebuilt, &device_a, "-O2"));
    cr_assert_eq(atomic_load(&rebuilt.full_reads), 0, "the size caught it");
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert_eq(atomic_load(&driver.full_reads), 3);
    cr_assert_eq(atomic_load(&driver.size_reads), 0);
}

Test(loaded_check, a_failed_full_check_makes_every_later_check_full)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    driver_object rebuilt = unchanged();
    rebuilt.loaded_same = false; /* same size, other bytes */
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert_not(hit(&checks, &rebuilt, &device_b, "-O2"));
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert(hit(&checks, &driver, &device_b, "-O2"));
    cr_assert(hit(&checks, &driver, &device_b, "-O2"));
    cr_assert_eq(atomic_load(&driver.full_reads), 4);
    cr_assert_eq(atomic_load(&driver.size_reads), 0);
}

Test(loaded_check, sizes_the_driver_cannot_tell_mean_a_full_check)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    driver.sizes_unknown = true;
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert_eq(atomic_load(&driver.full_reads), 2);
    driver.sizes_unknown = false;
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    cr_assert_eq(atomic_load(&driver.full_reads), 2, "not a failure: sizes again");
}

Test(loaded_check, pairs_beyond_the_slots_are_checked_in_full)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    int devices[ZC_LOADED_CHECK_SLOTS + 1];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i <= ZC_LOADED_CHECK_SLOTS; i++)
            cr_assert(hit(&checks, &driver, &devices[i], "-O2"));
    cr_assert_eq(atomic_load(&driver.full_reads), ZC_LOADED_CHECK_SLOTS + 2);
    cr_assert_eq(atomic_load(&driver.size_reads), ZC_LOADED_CHECK_SLOTS);
}

Test(loaded_check, every_binary_of_several_devices_counts)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    cr_assert(hit(&checks, &driver, &device_a, "-O2"));
    const void *devices[] = {&device_a, &device_b};
    size_t sizes[] = {sizeof(binary), sizeof(binary)};
    const uint8_t *binaries[] = {binary, binary};
    zc_loaded_binaries both = {
        .count = 2, .devices = devices, .options = "-O2", .sizes = sizes, .binaries = binaries};
    cr_assert(zc_loaded_unchanged(&checks, &both, &reader, &driver, NULL));
    cr_assert(zc_loaded_unchanged(&checks, &both, &reader, &driver, NULL));
    cr_assert_eq(atomic_load(&driver.full_reads), 2, "device b's first in full, with a's");
    cr_assert_eq(atomic_load(&driver.size_reads), 1);
}

/* Threads hitting two pairs at once: every hit passes, and the pairs are
 * verified once each, give or take a race to the first check. */
#define THREADS 8
#define HITS 200

typedef struct hitter {
    zc_loaded_checks *checks;
    driver_object *driver;
    const void *device;
    atomic_int passed;
} hitter;

static void *hit_many(void *argument)
{
    hitter *work = argument;
    for (int i = 0; i < HITS; i++)
        if (hit(work->checks, work->driver, work->device, "-O2"))
            atomic_fetch_add(&work->passed, 1);
    return NULL;
}

Test(loaded_check, threads_share_the_pairs_verified)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    pthread_t threads[THREADS];
    hitter work[THREADS];
    for (int i = 0; i < THREADS; i++) {
        work[i] = (hitter){&checks, &driver, i % 2 ? &device_a : &device_b, 0};
        cr_assert_eq(pthread_create(&threads[i], NULL, hit_many, &work[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        cr_assert_eq(atomic_load(&work[i].passed), HITS);
    }
    cr_assert_leq(atomic_load(&driver.full_reads), THREADS);
    cr_assert_eq(atomic_load(&driver.full_reads) + atomic_load(&driver.size_reads), THREADS * HITS);
}

/* Without intermediate code the driver cannot rebuild: by size from the
 * first hit, in full where the size is unknown or the process distrusts,
 * and never vouching for the pair. */
Test(loaded_check, a_binary_without_intermediate_code_is_checked_by_size)
{
    zc_loaded_checks checks = {0};
    driver_object driver = unchanged();
    cr_assert(hit_of(&checks, &driver, &device_a, "", true));
    cr_assert_eq(driver.full_reads, 0);
    cr_assert_eq(driver.size_reads, 1);
    driver.sizes_unknown = true;
    cr_assert(hit_of(&checks, &driver, &device_a, "", true));
    cr_assert_eq(driver.full_reads, 1, "sizes unknown: in full");
    driver.sizes_unknown = false;
    cr_assert(hit(&checks, &driver, &device_a, ""));
    cr_assert_eq(driver.full_reads, 2, "the pair was not verified by it");
    driver.loaded_size++;
    cr_assert_not(hit_of(&checks, &driver, &device_b, "", true));
    cr_assert(atomic_load(&checks.distrust));
    driver.loaded_size--;
    cr_assert(hit_of(&checks, &driver, &device_b, "", true));
    cr_assert_eq(driver.full_reads, 3, "a distrusting process checks it in full");
}
