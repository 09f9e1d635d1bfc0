/* zc_bench_core: what the core costs on the hit path, next to what the same
 * work costs with nothing of zecache in it, measured in one run so the ratios
 * hold even on a noisy shared machine.
 *
 *   1. key hashing of a large buffer vs memcpy and a page-cache read of it;
 *   2. the full key of a typical module (what every zeModuleCreate pays);
 *   3. disk-tier store and load of real native binaries (about 2 KB, 200 KB
 *      and 2 MB, made by ocloc at build time) vs reading the raw binary and
 *      vs zstd decompression of the same frame alone.
 *
 * Every figure is the median of several repetitions timed with
 * CLOCK_MONOTONIC. A benchmark, not a test: it checks that loads return the
 * stored bytes, never how fast anything is.
 *
 * Usage: zc_bench_core [native-dir]   (default: the build's ocloc output) */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <zstd.h>

#include "zecache/artifact.h"
#include "zecache/config.h"
#include "zecache/disk_tier.h"
#include "zecache/entry.h"
#include "zecache/identity.h"
#include "zecache/key.h"

#define HASH_INPUT_SIZE ((size_t)64 << 20)
#define HASH_REPS 9
#define MODULE_KEY_REPS 501
#define NS_PER_US 1000.0
#define NS_PER_MS 1000000.0
/* zeDriverGetProperties' driverVersion on this driver (1.3.24595). */
#define DRIVER_VERSION ((1u << 24) | (3u << 16) | 24595u)

/* ---- small helpers ---- */

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "zc_bench_core: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        die("out of memory", NULL);
    return p;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Formats a path into out (PATH_MAX bytes); a path that does not fit is fatal. */
static void format_path(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void format_path(char *out, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    int length = vsnprintf(out, PATH_MAX, fmt, args);
    va_end(args);
    if (length < 0 || length >= PATH_MAX)
        die("path too long", fmt);
}

static uint8_t *read_whole_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        die("cannot open", path);
    struct stat st;
    if (fstat(fileno(file), &st) != 0)
        die("cannot stat", path);
    *size = (size_t)st.st_size;
    uint8_t *data = xmalloc(*size);
    if (fread(data, 1, *size, file) != *size)
        die("cannot read", path);
    fclose(file);
    return data;
}

static void write_whole_file(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    if (file == NULL || fwrite(data, 1, size, file) != size || fclose(file) != 0)
        die("cannot write", path);
}

/* Reads path into buffer (at least its size) with open/read/close, as a
 * cache without compression or checks would. */
static bool read_into(const char *path, uint8_t *buffer, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t done = 0;
    while (done < size) {
        ssize_t got = read(fd, buffer + done, size - done);
        if (got <= 0)
            break;
        done += (size_t)got;
    }
    close(fd);
    return done == size;
}

/* ---- timing ---- */

/* One timed repetition; rep counts from 0. Returns false on failure. */
typedef bool (*bench_fn)(void *context, unsigned rep);

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_ns(bench_fn fn, void *context, unsigned reps, const char *what)
{
    double *samples = xmalloc(reps * sizeof *samples);
    for (unsigned rep = 0; rep < reps; rep++) {
        uint64_t start = now_ns();
        if (!fn(context, rep))
            die("failed", what);
        samples[rep] = (double)(now_ns() - start);
    }
    qsort(samples, reps, sizeof *samples, compare_doubles);
    double median =
        reps % 2 ? samples[reps / 2] : (samples[reps / 2 - 1] + samples[reps / 2]) / 2.0;
    free(samples);
    return median;
}

/* ---- the machine ---- */

static void print_cpu_model(void)
{
    FILE *cpuinfo = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (cpuinfo != NULL && fgets(line, sizeof line, cpuinfo) != NULL) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
            printf("cpu:      %s", colon + 2);
            break;
        }
    }
    if (cpuinfo != NULL)
        fclose(cpuinfo);
}

static void print_machine(const char *work_dir)
{
    printf("zc_bench_core\n");
    print_cpu_model();
    printf("cores:    %ld online\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("zstd:     %s (disk tier at level %d)\n", ZSTD_versionString(),
           ZC_DEFAULT_COMPRESSION_LEVEL);
    printf("openssl:  %s\n", OpenSSL_version(OPENSSL_VERSION));
    printf("work dir: %s\n", work_dir);
    printf("figures:  median of N repetitions, CLOCK_MONOTONIC; GB = 10^9 bytes\n\n");
}

/* ---- 1. key hashing of a large buffer ---- */

typedef struct hash_bench {
    const uint8_t *input;
    uint8_t *copy;
    size_t size;
    char path[PATH_MAX];
} hash_bench;

static bool time_key_hash(void *context, unsigned rep)
{
    (void)rep;
    hash_bench *bench = context;
    zc_key_builder *builder;
    zc_key key;
    if (zc_key_builder_create(false, &builder) != ZC_OK)
        return false;
    bool ok = zc_key_add_spirv(builder, bench->input, bench->size, NULL, NULL) == ZC_OK &&
              zc_key_finish(builder, &key) == ZC_OK;
    zc_key_builder_destroy(builder);
    return ok;
}

static bool time_memcpy(void *context, unsigned rep)
{
    hash_bench *bench = context;
    memcpy(bench->copy, bench->input, bench->size);
    /* Keeps the copy observable so it cannot be dropped. */
    return bench->copy[rep % bench->size] == bench->input[rep % bench->size];
}

static bool time_page_cache_read(void *context, unsigned rep)
{
    (void)rep;
    hash_bench *bench = context;
    return read_into(bench->path, bench->copy, bench->size);
}

static void print_throughput_row(const char *name, double ns, size_t bytes, double key_ns)
{
    printf("  %-34s %9.2f %9.2f %12.2f\n", name, ns / NS_PER_MS, (double)bytes / ns, key_ns / ns);
}

static void bench_key_hashing(const uint8_t *seed, size_t seed_size, const char *seed_name,
                              const char *work_dir)
{
    hash_bench bench = {.size = HASH_INPUT_SIZE};
    uint8_t *input = xmalloc(bench.size);
    for (size_t at = 0; at < bench.size; at += seed_size)
        memcpy(input + at, seed, at + seed_size <= bench.size ? seed_size : bench.size - at);
    bench.input = input;
    bench.copy = xmalloc(bench.size);
    format_path(bench.path, "%s/hash-input.bin", work_dir);
    write_whole_file(bench.path, input, bench.size);
    read_into(bench.path, bench.copy, bench.size); /* in the page cache from here on */

    double key_ns = median_ns(time_key_hash, &bench, HASH_REPS, "key hashing");
    double copy_ns = median_ns(time_memcpy, &bench, HASH_REPS, "memcpy");
    double read_ns = median_ns(time_page_cache_read, &bench, HASH_REPS, "page-cache read");

    printf("1. key hashing: %zu MiB (%s repeated), N=%d\n", bench.size >> 20, seed_name, HASH_REPS);
    printf("  %-34s %9s %9s %12s\n", "", "ms", "GB/s", "key time /");
    print_throughput_row("zc_key_builder (add_spirv+finish)", key_ns, bench.size, key_ns);
    print_throughput_row("memcpy", copy_ns, bench.size, key_ns);
    print_throughput_row("open+read+close (page cache)", read_ns, bench.size, key_ns);
    printf("\n");
    free(bench.copy);
    free(input);
}

/* ---- 2. the key of a typical module ---- */

/* The parts the layer adds on every zeModuleCreate, with the real sizes of
 * ze_device_properties_t (368), ze_device_module_properties_t (64) and the
 * IP version (4). */
typedef struct module_key_bench {
    const uint8_t *spirv;
    size_t spirv_size;
    zc_library_identity driver;
    uint8_t uuid[16];
    uint8_t device_properties[368];
    uint8_t module_properties[64];
    uint32_t ip_version;
} module_key_bench;

static zc_status add_module_parts(const module_key_bench *bench, zc_key_builder *builder)
{
    zc_status status =
        zc_key_add_spirv(builder, bench->spirv, bench->spirv_size, "-ze-opt-level=2", NULL);
    if (status == ZC_OK)
        status = zc_key_add_compiler_identity(builder, zc_compiler_identity_get(NULL));
    if (status == ZC_OK)
        status = zc_key_add_driver(builder, &bench->driver, DRIVER_VERSION, bench->uuid);
    if (status == ZC_OK)
        status = zc_key_add_hardware(builder, "device properties", bench->device_properties,
                                     sizeof bench->device_properties);
    if (status == ZC_OK)
        status = zc_key_add_hardware(builder, "device module properties", bench->module_properties,
                                     sizeof bench->module_properties);
    if (status == ZC_OK)
        status = zc_key_add_hardware(builder, "device IP version", &bench->ip_version,
                                     sizeof bench->ip_version);
    if (status == ZC_OK)
        status = zc_key_add_environment(builder);
    return status;
}

static bool time_module_key(void *context, unsigned rep)
{
    (void)rep;
    zc_key_builder *builder;
    zc_key key;
    if (zc_key_builder_create(false, &builder) != ZC_OK)
        return false;
    bool ok = add_module_parts(context, builder) == ZC_OK && zc_key_finish(builder, &key) == ZC_OK;
    zc_key_builder_destroy(builder);
    return ok;
}

static void bench_module_key(const uint8_t *spirv, size_t spirv_size)
{
    module_key_bench bench = {.spirv = spirv, .spirv_size = spirv_size, .ip_version = 0x03000000};
    memset(bench.device_properties, 0x5a, sizeof bench.device_properties);
    memset(bench.module_properties, 0xa5, sizeof bench.module_properties);
    /* The layer finds the driver library once per process, not per key. */
    if (zc_library_identity_find("libze_intel_gpu.so.1", &bench.driver) != ZC_OK)
        snprintf(bench.driver.name, sizeof bench.driver.name, "libze_intel_gpu.so.1");

    double first_ns = median_ns(time_module_key, &bench, 1, "first module key");
    double warm_ns = median_ns(time_module_key, &bench, MODULE_KEY_REPS, "module key");
    printf("2. full key of a typical module: %zu B SPIR-V + flags + compiler identity + driver\n"
           "   + 3 hardware parts (436 B) + driver and compiler environment\n",
           spirv_size);
    printf("  %-34s %9.1f us  (includes finding libigc and the environment snapshot)\n",
           "first key in the process", first_ns / NS_PER_US);
    printf("  %-34s %9.1f us  N=%d\n\n", "every later key", warm_ns / NS_PER_US, MODULE_KEY_REPS);
}

/* ---- 3. disk tier ---- */

typedef struct entry_bench {
    const char *name; /* the kernel file it came from */
    unsigned reps;
    uint8_t *binary;
    size_t binary_size;
    zc_artifact *artifact;
    zc_key key;       /* the entry every load reads */
    uint8_t *encoded; /* the same entry in memory, as the store writes it */
    size_t encoded_size;
    char raw_path[PATH_MAX];
    uint8_t *scratch; /* binary_size bytes, for the floors */
    ZSTD_DCtx *dctx;
    zc_disk_tier *tier;
} entry_bench;

/* Each store needs a key not yet on disk (a store of a present key is
 * skipped); the last four bytes tell the repetitions apart. */
static zc_key store_key(const entry_bench *bench, unsigned rep)
{
    zc_key key = bench->key;
    for (int i = 0; i < 4; i++)
        key.bytes[ZC_KEY_SIZE - 1 - i] = (uint8_t)((rep + 1) >> (8 * i));
    return key;
}

static bool time_store(void *context, unsigned rep)
{
    entry_bench *bench = context;
    zc_key key = store_key(bench, rep);
    return zc_disk_tier_store(bench->tier, &key, bench->artifact, NULL) == ZC_OK;
}

static bool time_load(void *context, unsigned rep)
{
    (void)rep;
    entry_bench *bench = context;
    zc_artifact *loaded = NULL;
    zc_status status = zc_disk_tier_load(bench->tier, &bench->key, &loaded);
    zc_artifact_unref(loaded);
    return status == ZC_OK;
}

static bool time_decode(void *context, unsigned rep)
{
    (void)rep;
    entry_bench *bench = context;
    zc_artifact *decoded = NULL;
    char reason[128];
    zc_status status = zc_entry_decode(bench->encoded, bench->encoded_size, &bench->key, 0,
                                       &decoded, reason, sizeof reason);
    zc_artifact_unref(decoded);
    return status == ZC_OK;
}

/* A cache without compression or checks: open, size, allocate, read. */
static bool time_raw_read(void *context, unsigned rep)
{
    (void)rep;
    entry_bench *bench = context;
    uint8_t *buffer = malloc(bench->binary_size);
    bool ok = buffer != NULL && read_into(bench->raw_path, buffer, bench->binary_size);
    free(buffer);
    return ok;
}

static bool time_zstd_alone(void *context, unsigned rep)
{
    (void)rep;
    entry_bench *bench = context;
    size_t result = ZSTD_decompressDCtx(bench->dctx, bench->scratch, bench->binary_size,
                                        bench->encoded + ZC_ENTRY_HEADER_SIZE,
                                        bench->encoded_size - ZC_ENTRY_HEADER_SIZE);
    return !ZSTD_isError(result) && result == bench->binary_size;
}

static void check_load_returns_stored_bytes(entry_bench *bench)
{
    zc_artifact *loaded = NULL;
    if (zc_disk_tier_load(bench->tier, &bench->key, &loaded) != ZC_OK)
        die("the stored entry does not load", bench->name);
    size_t size;
    const uint8_t *binary = zc_artifact_binary(loaded, &size);
    if (size != bench->binary_size || memcmp(binary, bench->binary, size) != 0)
        die("the loaded binary differs from the stored one", bench->name);
    zc_artifact_unref(loaded);
}

static void prepare_entry(entry_bench *bench, unsigned index, const char *native_dir,
                          const char *work_dir)
{
    char path[PATH_MAX];
    format_path(path, "%s/%s.bin", native_dir, bench->name);
    bench->binary = read_whole_file(path, &bench->binary_size);
    zc_artifact_meta meta = {.device_name = "Intel(R) Graphics [0xff20]",
                             .driver_version = "1.3.24595",
                             .compile_ns = 100000000u,
                             .created_unix = (uint64_t)time(NULL)};
    bench->artifact = zc_artifact_create(bench->binary, bench->binary_size, NULL, 0, &meta);
    if (bench->artifact == NULL)
        die("out of memory", NULL);
    memset(&bench->key, 0, sizeof bench->key);
    bench->key.bytes[0] = (uint8_t)(0x11 * (index + 1));
    if (zc_entry_encode(&bench->key, bench->artifact, ZC_DEFAULT_COMPRESSION_LEVEL, &bench->encoded,
                        &bench->encoded_size) != ZC_OK)
        die("cannot encode", bench->name);
    format_path(bench->raw_path, "%s/raw-%s.bin", work_dir, bench->name);
    write_whole_file(bench->raw_path, bench->binary, bench->binary_size);
    bench->scratch = xmalloc(bench->binary_size);
    if (zc_disk_tier_store(bench->tier, &bench->key, bench->artifact, NULL) != ZC_OK)
        die("cannot store", bench->name);
    check_load_returns_stored_bytes(bench);
}

static void release_entry(entry_bench *bench)
{
    zc_artifact_unref(bench->artifact);
    free(bench->binary);
    free(bench->encoded);
    free(bench->scratch);
}

static void print_entry_header(void)
{
    printf("3. disk tier, per entry (IGC native binaries for tgllp, via ocloc), times in us\n");
    printf("  %-13s %9s %8s %6s %3s | %8s %8s %8s | %8s %8s | %8s %9s\n", "kernel", "native B",
           "file B", "ratio", "N", "store", "load", "decode", "raw read", "zstd", "load/raw",
           "load/zstd");
}

static void bench_entry(entry_bench *bench)
{
    double store_ns = median_ns(time_store, bench, bench->reps, "store");
    double load_ns = median_ns(time_load, bench, bench->reps, "load");
    double decode_ns = median_ns(time_decode, bench, bench->reps, "decode");
    double raw_ns = median_ns(time_raw_read, bench, bench->reps, "raw read");
    double zstd_ns = median_ns(time_zstd_alone, bench, bench->reps, "zstd");
    printf("  %-13s %9zu %8zu %5.1fx %3u | %8.1f %8.1f %8.1f | %8.1f %8.1f | %7.2fx %8.2fx\n",
           bench->name, bench->binary_size, bench->encoded_size,
           (double)bench->binary_size / (double)bench->encoded_size, bench->reps,
           store_ns / NS_PER_US, load_ns / NS_PER_US, decode_ns / NS_PER_US, raw_ns / NS_PER_US,
           zstd_ns / NS_PER_US, load_ns / raw_ns, load_ns / zstd_ns);
}

static void print_entry_legend(void)
{
    printf("  store: zc_disk_tier_store of a new key (compress, temp file, rename, config.file\n"
           "         under flock); load: zc_disk_tier_load, warm page cache (read, verify,\n"
           "         decompress, futimens); decode: zc_entry_decode of the entry in memory;\n"
           "         raw read: malloc + open + read + close of the uncompressed binary;\n"
           "         zstd: ZSTD_decompressDCtx of the same frame, context reused.\n");
}

static zc_disk_tier *open_tier(const char *work_dir)
{
    zc_config config;
    memset(&config, 0, sizeof config);
    config.persistent = true;
    format_path(config.dir, "%s/cache", work_dir);
    config.dir_from_env = true;
    config.max_size = ZC_DEFAULT_MAX_SIZE;
    config.compression_level = ZC_DEFAULT_COMPRESSION_LEVEL;
    zc_disk_tier *tier = NULL;
    if (zc_disk_tier_open(&config, &tier) != ZC_OK)
        die("cannot open a disk tier in", config.dir);
    return tier;
}

static void bench_disk_tier(const char *native_dir, const char *work_dir)
{
    entry_bench benches[] = {
        {.name = "saxpy", .reps = 301},
        {.name = "mixed_one", .reps = 101},
        {.name = "mixed_ten", .reps = 21},
    };
    zc_disk_tier *tier = open_tier(work_dir);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    if (dctx == NULL)
        die("out of memory", NULL);
    print_entry_header();
    for (unsigned i = 0; i < sizeof benches / sizeof benches[0]; i++) {
        benches[i].tier = tier;
        benches[i].dctx = dctx;
        prepare_entry(&benches[i], i, native_dir, work_dir);
        bench_entry(&benches[i]);
        release_entry(&benches[i]);
    }
    print_entry_legend();
    ZSTD_freeDCtx(dctx);
    zc_disk_tier_close(tier);
}

/* ---- the run ---- */

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    const char *native_dir = argc > 1 ? argv[1] : ZC_BENCH_NATIVE_DIR;
    const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    char work_dir[PATH_MAX];
    format_path(work_dir, "%s/zc_bench.XXXXXX", tmp);
    if (mkdtemp(work_dir) == NULL)
        die("cannot create a directory under", tmp);
    print_machine(work_dir);

    char path[PATH_MAX];
    size_t seed_size, spirv_size;
    format_path(path, "%s/mixed_ten.spv", native_dir);
    uint8_t *seed = read_whole_file(path, &seed_size);
    format_path(path, "%s/saxpy.spv", native_dir);
    uint8_t *spirv = read_whole_file(path, &spirv_size);

    bench_key_hashing(seed, seed_size, "mixed_ten.cl SPIR-V", work_dir);
    bench_module_key(spirv, spirv_size);
    bench_disk_tier(native_dir, work_dir);

    free(seed);
    free(spirv);
    nftw(work_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
