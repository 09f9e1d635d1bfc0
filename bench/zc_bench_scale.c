/* zc_bench_scale: how the disk tier's costs grow with the number of entries
 * in one directory, for bench/bench_scale.sh.
 *
 *   zc_bench_scale fill DIR N SIZE   N entries of SIZE-byte binaries, each with
 *                                    a recipe; every 4 recipes share one
 *                                    SPIR-V blob (recorded inputs, as the
 *                                    layer keeps them by default)
 *   zc_bench_scale hits DIR N        per-hit cost of zc_disk_tier_load over
 *                                    the N filled keys in random order, beside
 *                                    a plain open+read of the same files
 *   zc_bench_scale evict DIR SIZE    one store that needs room, with the
 *                                    limit set to what DIR holds: the time of
 *                                    that store (scan, eviction, blob census)
 *                                    and what the eviction kept
 *   zc_bench_scale stores DIR SIZE K K stores in a row with the limit set to
 *                                    what DIR holds: max and median time of
 *                                    those that evicted and of the others, and
 *                                    the directory entries one store listed
 *   zc_bench_scale records DIR SIZE K the same, each store followed by the
 *                                    recording of its inputs (as fill's)
 *
 * Keys, binaries and SPIR-V come from a fixed seed, so "hits" finds what
 * "fill" wrote. The binaries compress about as native code does (to a third
 * or so), not to nothing. A benchmark, not a test: it checks that each hit
 * returns the filled bytes, never how fast anything is. */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zecache/artifact.h"
#include "zecache/config.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_recipes.h"
#include "zecache/disk_tier.h"
#include "zecache/recipe.h"

enum { SHARING = 4, SPIRV_SIZE = 16 * 1024, HIT_SAMPLES = 2000 };

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "zc_bench_scale: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: the same stream on every machine. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static zc_key key_of(uint64_t index)
{
    uint64_t state = index * 7919u + 1;
    zc_key key = {0};
    for (size_t i = 0; i < sizeof key.bytes; i += 8) {
        uint64_t word = next_random(&state);
        memcpy(key.bytes + i, &word, 8);
    }
    return key;
}

/* Bytes of which about a third are random: compresses as code does. */
static void fill_bytes(uint8_t *bytes, size_t size, uint64_t seed)
{
    uint64_t state = seed;
    for (size_t i = 0; i < size; i++)
        bytes[i] = (i / 64) % 3 == 0 ? (uint8_t)next_random(&state) : (uint8_t)(i >> 6);
}

static zc_disk_tier *open_tier(const char *dir, uint64_t max_size)
{
    zc_config config;
    memset(&config, 0, sizeof config);
    config.persistent = true;
    snprintf(config.dir, sizeof config.dir, "%s", dir);
    config.dir_from_env = true;
    config.max_size = max_size;
    config.compression_level = ZC_DEFAULT_COMPRESSION_LEVEL;
    config.lock_timeout_ms = 0;
    zc_disk_tier *tier = NULL;
    if (zc_disk_tier_open(&config, &tier) != ZC_OK)
        die("cannot open a disk tier in", dir);
    return tier;
}

static zc_status store_one(zc_disk_tier *tier, uint64_t index, uint8_t *binary, size_t size)
{
    zc_key key = key_of(index);
    fill_bytes(binary, size, index);
    zc_artifact *artifact = zc_artifact_create(binary, size, NULL, 0, NULL);
    if (artifact == NULL)
        die("out of memory", NULL);
    zc_status status = zc_disk_tier_store(tier, &key, artifact, NULL);
    zc_artifact_unref(artifact);
    return status;
}

static zc_status record_one(zc_disk_tier *tier, uint64_t index)
{
    uint8_t spirv[SPIRV_SIZE];
    fill_bytes(spirv, sizeof spirv, UINT64_C(1) << 40 | index / SHARING);
    zc_input_blob blob;
    uint8_t *blob_bytes = NULL, *recipe_bytes = NULL;
    size_t recipe_size = 0;
    zc_recipe_input input = {.spirv_size = sizeof spirv};
    zc_recipe recipe = {.key = key_of(index),
                        .format = 1,
                        .device_name = "bench",
                        .driver_version = "1",
                        .input_count = 1,
                        .inputs = &input};
    if (zc_spirv_blob_encode(spirv, sizeof spirv, 1, blob.sha256, &blob_bytes, &blob.size) != ZC_OK)
        die("cannot encode a SPIR-V blob", NULL);
    memcpy(input.spirv_sha256, blob.sha256, 32);
    blob.bytes = blob_bytes;
    if (zc_recipe_encode(&recipe, 1, &recipe_bytes, &recipe_size) != ZC_OK)
        die("cannot encode a recipe", NULL);
    zc_status status = zc_disk_tier_record(tier, &recipe.key, recipe_bytes, recipe_size, &blob, 1);
    free(blob_bytes);
    free(recipe_bytes);
    return status;
}

static int fill(const char *dir, uint64_t count, size_t size)
{
    zc_disk_tier *tier = open_tier(dir, 0);
    uint8_t *binary = malloc(size);
    if (binary == NULL)
        die("out of memory", NULL);
    uint64_t start = now_ns();
    for (uint64_t i = 0; i < count; i++) {
        zc_status status = store_one(tier, i, binary, size);
        if (status != ZC_OK && status != ZC_EXISTS)
            die("cannot store", zc_status_name(status));
        status = record_one(tier, i);
        if (status != ZC_OK && status != ZC_EXISTS)
            die("cannot record inputs", zc_status_name(status));
    }
    printf("fill %llu entries of %zu bytes: %.3f s\n", (unsigned long long)count, size,
           (double)(now_ns() - start) / 1e9);
    free(binary);
    zc_disk_tier_close(tier);
    return 0;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double median_us(uint64_t *samples, size_t count)
{
    qsort(samples, count, sizeof *samples, compare_u64);
    return (double)samples[count / 2] / 1000.0;
}

/* The floor of a hit: open and read the entry's file, nothing checked. */
static uint64_t raw_read_ns(const char *dir, const zc_key *key, uint8_t *buffer, size_t capacity)
{
    char hex[ZC_KEY_HEX_SIZE], path[PATH_MAX];
    zc_key_to_hex(key, hex);
    snprintf(path, sizeof path, "%s/%c/%c/%s%s", dir, hex[0], hex[1], hex, ZC_ENTRY_SUFFIX);
    uint64_t start = now_ns();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die("cannot open", path);
    while (read(fd, buffer, capacity) > 0)
        ;
    close(fd);
    return now_ns() - start;
}

static int hits(const char *dir, uint64_t count)
{
    zc_disk_tier *tier = open_tier(dir, 0);
    static uint64_t load[HIT_SAMPLES], raw[HIT_SAMPLES];
    static uint8_t buffer[1 << 20];
    uint64_t state = 42;
    for (size_t i = 0; i < HIT_SAMPLES; i++) {
        zc_key key = key_of(next_random(&state) % count);
        zc_artifact *artifact = NULL;
        uint64_t start = now_ns();
        zc_status status = zc_disk_tier_load(tier, &key, &artifact);
        load[i] = now_ns() - start;
        if (status != ZC_OK)
            die("a filled key missed", zc_status_name(status));
        zc_artifact_unref(artifact);
        /* Another key: the one just loaded would be read from warm caches. */
        zc_key other = key_of(next_random(&state) % count);
        raw[i] = raw_read_ns(dir, &other, buffer, sizeof buffer);
    }
    double hit = median_us(load, HIT_SAMPLES), floor = median_us(raw, HIT_SAMPLES);
    printf("hits over %llu entries: %.1f us per hit, raw open+read %.1f us, ratio %.2f\n",
           (unsigned long long)count, hit, floor, hit / floor);
    zc_disk_tier_close(tier);
    return 0;
}

static int evict(const char *dir, size_t size)
{
    uint64_t before = 0, entries_before = 0, after = 0, entries_after = 0;
    zc_disk_tier *probe = open_tier(dir, 0);
    if (zc_disk_tier_repair_accounting(probe, &before) != ZC_OK ||
        zc_disk_tier_scanned_size(probe, &before, &entries_before) != ZC_OK)
        die("cannot measure", dir);
    zc_disk_tier_close(probe);
    zc_disk_tier *tier = open_tier(dir, before);
    uint8_t *binary = malloc(size);
    if (binary == NULL)
        die("out of memory", NULL);
    uint64_t start = now_ns();
    zc_status status = store_one(tier, UINT64_C(1) << 50, binary, size);
    uint64_t took = now_ns() - start;
    if (status != ZC_OK)
        die("the store that needed room failed", zc_status_name(status));
    if (zc_disk_tier_scanned_size(tier, &after, &entries_after) != ZC_OK)
        die("cannot measure", dir);
    printf("evict at the limit (%llu bytes, %llu entries): one store took %.1f ms, evicted %llu "
           "entries, kept %llu entries, %.1f%% of the limit\n",
           (unsigned long long)before, (unsigned long long)entries_before, (double)took / 1e6,
           (unsigned long long)zc_disk_tier_evictions(tier), (unsigned long long)entries_after,
           100.0 * (double)after / (double)before);
    free(binary);
    zc_disk_tier_close(tier);
    return 0;
}

typedef struct store_times {
    uint64_t *ns;
    size_t count;
} store_times;

static void print_times(const char *what, store_times *times)
{
    if (times->count == 0) {
        printf("  %s: none\n", what);
        return;
    }
    double median = median_us(times->ns, times->count) / 1000.0; /* sorts */
    printf("  %s: %zu, max %.1f ms, median %.2f ms\n", what, times->count,
           (double)times->ns[times->count - 1] / 1e6, median);
}

/* The stores that evicted apart from the others: a store's own write can
 * meet the file system's write-back, whatever eviction does. Recording:
 * each store is followed by the recording of its inputs (every 4 sharing
 * new SPIR-V, as fill's), timed as one. */
static int stores(const char *dir, size_t size, uint64_t count, bool recording)
{
    uint64_t limit = 0;
    zc_disk_tier *probe = open_tier(dir, 0);
    if (zc_disk_tier_repair_accounting(probe, &limit) != ZC_OK)
        die("cannot measure", dir);
    zc_disk_tier_close(probe);
    zc_disk_tier *tier = open_tier(dir, limit);
    uint8_t *binary = malloc(size);
    store_times evicting = {calloc(count, sizeof(uint64_t)), 0};
    store_times plain = {calloc(count, sizeof(uint64_t)), 0};
    uint64_t most_listed = 0;
    if (binary == NULL || evicting.ns == NULL || plain.ns == NULL)
        die("out of memory", NULL);
    for (uint64_t i = 0; i < count; i++) {
        uint64_t listed = zc_disk_tier_dirents_read(tier), evicted = zc_disk_tier_evictions(tier);
        uint64_t index = (UINT64_C(1) << (recording ? 52 : 51)) + i;
        uint64_t start = now_ns();
        zc_status status = store_one(tier, index, binary, size);
        if (status == ZC_OK && recording)
            status = record_one(tier, index);
        uint64_t took = now_ns() - start;
        if (status != ZC_OK)
            die("a store at the limit failed", zc_status_name(status));
        listed = zc_disk_tier_dirents_read(tier) - listed;
        most_listed = listed > most_listed ? listed : most_listed;
        store_times *times = zc_disk_tier_evictions(tier) != evicted ? &evicting : &plain;
        times->ns[times->count++] = took;
    }
    printf("%llu %s at the limit (%llu bytes): evicted %llu entries, at most %llu directory "
           "entries listed by one store\n",
           (unsigned long long)count, recording ? "recording stores" : "stores",
           (unsigned long long)limit, (unsigned long long)zc_disk_tier_evictions(tier),
           (unsigned long long)most_listed);
    print_times("stores that evicted", &evicting);
    print_times("stores that did not", &plain);
    free(evicting.ns);
    free(plain.ns);
    free(binary);
    zc_disk_tier_close(tier);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "fill") == 0)
        return fill(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
    if (argc == 4 && strcmp(argv[1], "hits") == 0)
        return hits(argv[2], strtoull(argv[3], NULL, 10));
    if (argc == 4 && strcmp(argv[1], "evict") == 0)
        return evict(argv[2], strtoull(argv[3], NULL, 10));
    if (argc == 5 && strcmp(argv[1], "stores") == 0)
        return stores(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), false);
    if (argc == 5 && strcmp(argv[1], "records") == 0)
        return stores(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), true);
    fprintf(stderr, "usage: zc_bench_scale fill DIR N SIZE | hits DIR N | evict DIR SIZE | "
                    "stores DIR SIZE K | records DIR SIZE K\n");
    return 2;
}
