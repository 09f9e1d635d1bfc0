/* config.file's content, fuzzed: first as pure parsing (zc_disk_parse_total),
 * then planted in a real cache before a store. Input: the limit (u64 LE, for
 * the pure part), then the file's bytes. Properties: only exactly 8 bytes
 * of a plausible value are ever trusted; after the store config.file holds
 * exactly 8 bytes, and they are the trusted value plus the new entry, or
 * else the real total. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../source/local/disk_internal.h"
#include "fuzz_check.h"
#include "zecache/disk_maintenance.h"

enum { LIMIT = 1 << 20, PREFIX = 8 };

typedef struct fixture {
    zc_disk_tier *tier;
    char config_path[PATH_MAX];
    char fresh_path[PATH_MAX]; /* the entry each run stores, removed again */
    zc_key fresh_key;
    zc_artifact *fresh;
    uint64_t kept_size;  /* the entry that stays */
    uint64_t fresh_size; /* the one stored each run */
} fixture;

static zc_key key_of(uint8_t seed)
{
    zc_key key = {0};
    for (size_t i = 0; i < ZC_KEY_SIZE; i++)
        key.bytes[i] = (uint8_t)(seed + i * 13);
    return key;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    FUZZ_CHECK(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

static fixture *setup(void)
{
    static fixture f;
    if (f.tier != NULL)
        return &f;
    /* ZC_FUZZ_SCRATCH: where scripts/fuzz.sh wants scratch directories. */
    const char *scratch = getenv("ZC_FUZZ_SCRATCH");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/zc_fuzz_config_XXXXXX",
             scratch != NULL                 ? scratch
             : access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                             : "/tmp");
    char *root = mkdtemp(dir);
    FUZZ_CHECK(root != NULL);
    zc_config config;
    memset(&config, 0, sizeof config);
    config.persistent = true;
    snprintf(config.dir, sizeof config.dir, "%s/cache", root);
    config.max_size = LIMIT;
    config.compression_level = 1;
    FUZZ_CHECK(zc_disk_tier_open(&config, &f.tier) == ZC_OK);
    snprintf(f.config_path, sizeof f.config_path, "%s/%s", config.dir, ZC_CONFIG_FILE_NAME);

    zc_key kept_key = key_of(1);
    zc_artifact *kept = zc_artifact_create("kept binary", 11, "log", 3, NULL);
    FUZZ_CHECK(zc_disk_tier_store(f.tier, &kept_key, kept, NULL) == ZC_OK);
    zc_artifact_unref(kept);
    FUZZ_CHECK(zc_disk_tier_scanned_size(f.tier, &f.kept_size, NULL) == ZC_OK);

    f.fresh_key = key_of(2);
    f.fresh = zc_artifact_create("fresh binary, a little longer", 29, NULL, 0, NULL);
    char rel[ZC_ENTRY_REL_SIZE];
    zc_disk_entry_rel_path(&f.fresh_key, rel);
    snprintf(f.fresh_path, sizeof f.fresh_path, "%s/%s", config.dir, rel);
    FUZZ_CHECK(zc_disk_tier_store(f.tier, &f.fresh_key, f.fresh, NULL) == ZC_OK);
    f.fresh_size = file_size(f.fresh_path);
    FUZZ_CHECK(unlink(f.fresh_path) == 0);
    return &f;
}

static void write_file(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0);
    FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
    close(fd);
}

static void check_pure(const uint8_t *data, size_t size)
{
    uint64_t max_size;
    memcpy(&max_size, data, sizeof max_size);
    const uint8_t *content = data + PREFIX;
    size_t content_size = size - PREFIX;
    uint64_t total = 0;
    zc_status status = zc_disk_parse_total(content, content_size, max_size, &total);
    FUZZ_CHECK(status == ZC_OK || status == ZC_MISS);
    if (status != ZC_OK)
        return;
    uint64_t value;
    FUZZ_CHECK(content_size == sizeof value);
    memcpy(&value, content, sizeof value);
    FUZZ_CHECK(total == value);
    FUZZ_CHECK(total <= UINT64_C(1) << 56);
    FUZZ_CHECK(max_size == 0 || total <= max_size || total - max_size <= max_size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < PREFIX)
        return 0;
    check_pure(data, size);
    fixture *f = setup();
    const uint8_t *content = data + PREFIX;
    size_t content_size = size - PREFIX;
    uint64_t planted = 0;
    bool trusted = zc_disk_parse_total(content, content_size, LIMIT, &planted) == ZC_OK;
    write_file(f->config_path, content, content_size);

    FUZZ_CHECK(zc_disk_tier_store(f->tier, &f->fresh_key, f->fresh, NULL) == ZC_OK);
    FUZZ_CHECK(file_size(f->config_path) == sizeof(uint64_t));
    uint64_t recorded = 0;
    FUZZ_CHECK(zc_disk_tier_recorded_size(f->tier, &recorded) == ZC_OK);
    if (trusted && planted + f->fresh_size <= LIMIT)
        FUZZ_CHECK(recorded == planted + f->fresh_size);
    else
        FUZZ_CHECK(recorded == f->kept_size + f->fresh_size);

    FUZZ_CHECK(unlink(f->fresh_path) == 0);
    return 0;
}
