/* Prefetching a program's entries (NEO_CACHE_PREFETCH, cache.h): a run
 * saves the keys it used; the next run of the same program loads them in
 * the background and its lookups take them from there, as disk hits, with
 * the same bytes, counted only when asked for. A damaged list, entries gone
 * or damaged since, another program's list, a fork while loading: each is
 * still the answer a plain disk lookup gives. Written for both Criterion
 * and the plain runner (TSan). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../source/cache/prefetch.h"
#include "parallel.h"
#include "disk_test_support.h"
#include "zecache/cache.h"
#include "zecache/disk_tier.h"
#include "zecache/disk_usage_list.h"
#include "zecache/pack.h"
#include "zecache/sealed.h"
#include "zecache/sha256.h"
#include "zecache/stats.h"
#include "test_support.h"

enum { KEY_COUNT = 6, ARTIFACT_SIZE = 6000, MANY_KEYS = 200 };

static char scratch[64];
static char packs[PATH_MAX]; /* NEO_CACHE_PACKS of the caches opened next: "" none */

static void scratch_create(void)
{
    unsetenv("PrintDebugMessages");
    packs[0] = '\0';
    snprintf(scratch, sizeof scratch, "/tmp/zc_prefetch_XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
}

static void scratch_remove(void)
{
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    cr_assert_eq(system(command), 0);
}

static zc_cache *open_cache_with_memory(bool prefetch, uint64_t memory_size)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/cache", scratch);
    zc_config config = t_disk_config(dir, ZC_DEFAULT_MAX_SIZE, 3);
    config.memory_size = memory_size;
    config.lock_timeout_ms = ZC_DEFAULT_LOCK_TIMEOUT_MS;
    config.prefetch = prefetch;
    snprintf(config.packs, sizeof config.packs, "%s", packs);
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    return cache;
}

static zc_cache *open_cache(bool prefetch)
{
    return open_cache_with_memory(prefetch, 64 << 20);
}

/* A cache whose prefetch of program's list has loaded what it will. */
static zc_cache *open_prefetched(const char *program, uint64_t memory_size)
{
    zc_cache *cache = open_cache_with_memory(true, memory_size);
    cr_assert_eq(zc_cache_prefetch_start(cache, program), ZC_OK);
    zc_cache_prefetch_wait(cache);
    return cache;
}

typedef struct counted_compile {
    uint64_t seed;
    atomic_int calls;
} counted_compile;

static zc_status compile_counted(void *context, zc_artifact **out)
{
    counted_compile *compile = context;
    atomic_fetch_add(&compile->calls, 1);
    *out = t_artifact(ARTIFACT_SIZE, compile->seed);
    return *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

/* Looks up key (module seed) and checks the bytes; returns the outcome. */
static zc_lookup_outcome look_up(zc_cache *cache, uint64_t seed, atomic_int *compiles)
{
    counted_compile compile = {.seed = seed};
    zc_key key = t_key(seed);
    zc_artifact *artifact = NULL;
    zc_lookup_outcome outcome;
    cr_assert_eq(
        zc_cache_get_or_compile(cache, &key, NULL, compile_counted, &compile, &artifact, &outcome),
        ZC_OK);
    zc_artifact *expected = t_artifact(ARTIFACT_SIZE, seed);
    size_t size, expected_size;
    const uint8_t *bytes = zc_artifact_binary(artifact, &size);
    const uint8_t *expected_bytes = zc_artifact_binary(expected, &expected_size);
    cr_assert_eq(size, expected_size);
    cr_assert_eq(memcmp(bytes, expected_bytes, size), 0, "module %llu: other bytes",
                 (unsigned long long)seed);
    zc_artifact_unref(expected);
    zc_artifact_unref(artifact);
    if (compiles != NULL)
        atomic_fetch_add(compiles, atomic_load(&compile.calls));
    return outcome;
}

/* A first run of program: modules 1..count compiled, stored, listed. */
static void first_run(const char *program, uint64_t count)
{
    zc_cache *cache = open_cache(true);
    cr_assert_eq(zc_cache_prefetch_start(cache, program), ZC_OK);
    for (uint64_t seed = 1; seed <= count; seed++)
        cr_assert_eq(look_up(cache, seed, NULL), ZC_LOOKUP_COMPILED);
    zc_cache_prefetch_save(cache);
    zc_cache_close(cache);
}

static void entry_path(uint64_t seed, char *path, size_t size)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key key = t_key(seed);
    zc_key_to_hex(&key, hex);
    snprintf(path, size, "%s/cache/%c/%c/%s.l0_cache", scratch, hex[0], hex[1], hex);
}

static void remove_entry(uint64_t seed)
{
    char path[256];
    entry_path(seed, path, sizeof path);
    cr_assert_eq(unlink(path), 0, "%s: %s", path, strerror(errno));
}

/* The one .l0_usage file's path; false when there is none. */
static bool usage_list_path(char *path, size_t size)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/cache", scratch);
    DIR *stream = opendir(dir);
    cr_assert_not_null(stream);
    bool found = false;
    for (struct dirent *entry; (entry = readdir(stream)) != NULL && !found;) {
        size_t length = strlen(entry->d_name);
        if (length > 9 && strcmp(entry->d_name + length - 9, ZC_USAGE_SUFFIX) == 0) {
            snprintf(path, size, "%s/%s", dir, entry->d_name);
            found = true;
        }
    }
    closedir(stream);
    return found;
}

static uint64_t disk_hits(zc_cache *cache)
{
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    return stats.disk_hits;
}

Test(prefetch, next_run_takes_listed_entries_as_disk_hits, .init = scratch_create,
     .fini = scratch_remove)
{
    first_run("program-a", KEY_COUNT);
    char path[256];
    cr_assert(usage_list_path(path, sizeof path), "the first run saved no list");

    zc_cache *cache = open_prefetched("program-a", 64 << 20);
    /* Loaded already: taken from the prefetch even with the files gone. */
    for (uint64_t seed = 1; seed <= KEY_COUNT; seed++)
        remove_entry(seed);
    atomic_int compiles = 0;
    for (uint64_t seed = 1; seed <= KEY_COUNT - 1; seed++)
        cr_assert_eq(look_up(cache, seed, &compiles), ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(atomic_load(&compiles), 0);
    cr_assert_eq(disk_hits(cache), KEY_COUNT - 1,
                 "a prefetched entry not asked for is not counted");
    /* A second lookup is a memory hit, as after any disk hit. */
    cr_assert_eq(look_up(cache, 1, NULL), ZC_LOOKUP_MEMORY_HIT);
    zc_cache_close(cache);
}

/* The cache's disk tier alone, for the prefetch's own functions; program's
 * id into id, as zc_cache_prefetch_start makes it. */
static zc_disk_tier *open_disk(const char *program, uint8_t id[ZC_SHA256_SIZE])
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/cache", scratch);
    zc_config config = t_disk_config(dir, ZC_DEFAULT_MAX_SIZE, 3);
    zc_disk_tier *disk = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &disk), ZC_OK);
    cr_assert(zc_sha256_digest(program, strlen(program), id));
    return disk;
}

/* Whether program's prefetch, with budget, decodes the lookups' entries
 * (zc_cache_prepare_thread then leaves the calling thread alone). */
static bool serves(const char *program, size_t budget)
{
    uint8_t id[ZC_SHA256_SIZE];
    zc_disk_tier *disk = open_disk(program, id);
    zc_prefetch *prefetch = NULL;
    cr_assert_eq(zc_prefetch_start(disk, id, budget, &prefetch), ZC_OK);
    zc_prefetch_wait_idle(prefetch);
    bool result = zc_prefetch_serves(prefetch);
    zc_prefetch_stop(prefetch);
    zc_disk_tier_close(disk);
    return result;
}

Test(prefetch, serves_only_with_a_list_read_and_a_budget, .init = scratch_create,
     .fini = scratch_remove)
{
    cr_assert_not(serves("program-a", 1 << 20), "no list yet");
    first_run("program-a", KEY_COUNT);
    cr_assert(serves("program-a", 1 << 20));
    cr_assert_not(serves("program-a", 0));
    cr_assert_not(serves("program-b", 1 << 20));
}

/* Lookups made before the thread has read its list load their entries
 * themselves: the thread must not load them again, to hold memory nobody
 * takes. Started and asked at once, many rounds: some lookups come first. */
Test(prefetch, entries_looked_up_before_the_list_is_read_are_not_loaded_again,
     .init = scratch_create, .fini = scratch_remove)
{
    first_run("program-a", KEY_COUNT);
    uint8_t id[ZC_SHA256_SIZE];
    zc_disk_tier *disk = open_disk("program-a", id);
    for (int round = 0; round < 20; round++) {
        zc_prefetch *prefetch = NULL;
        cr_assert_eq(zc_prefetch_start(disk, id, 1 << 20, &prefetch), ZC_OK);
        for (uint64_t seed = 1; seed <= KEY_COUNT; seed++) {
            zc_key key = t_key(seed);
            zc_artifact *artifact = NULL;
            if (zc_prefetch_take(prefetch, &key, &artifact) != ZC_OK)
                cr_assert_eq(zc_disk_tier_load(disk, &key, &artifact), ZC_OK);
            zc_artifact_unref(artifact);
            zc_prefetch_note_use(prefetch, &key);
        }
        zc_prefetch_wait_idle(prefetch);
        cr_assert_eq(zc_prefetch_staged_bytes(prefetch), 0, "round %d", round);
        zc_prefetch_stop(prefetch);
    }
    zc_disk_tier_close(disk);
}

Test(prefetch, off_reads_the_disk_at_each_lookup, .init = scratch_create, .fini = scratch_remove)
{
    first_run("program-a", KEY_COUNT);
    zc_cache *cache = open_cache(false);
    cr_assert_eq(zc_cache_prefetch_start(cache, "program-a"), ZC_ERR_DISABLED);
    remove_entry(1);
    atomic_int compiles = 0;
    cr_assert_eq(look_up(cache, 1, &compiles), ZC_LOOKUP_COMPILED);
    cr_assert_eq(look_up(cache, 2, &compiles), ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(atomic_load(&compiles), 1);
    zc_cache_close(cache);
}

Test(prefetch, another_programs_list_is_not_used, .init = scratch_create, .fini = scratch_remove)
{
    first_run("program-a", KEY_COUNT);
    zc_cache *cache = open_prefetched("program-b", 64 << 20);
    remove_entry(1);
    atomic_int compiles = 0;
    cr_assert_eq(look_up(cache, 1, &compiles), ZC_LOOKUP_COMPILED);
    cr_assert_eq(atomic_load(&compiles), 1);
    zc_cache_close(cache);
}

/* The list renamed to another program's name names the other program in
 * its sealed header: refused. */
Test(prefetch, list_under_another_programs_name_is_refused, .init = scratch_create,
     .fini = scratch_remove)
{
    first_run("program-a", KEY_COUNT);
    zc_cache *cache = open_cache(true);
    cr_assert_eq(zc_cache_prefetch_start(cache, "program-b"), ZC_OK);
    zc_cache_prefetch_save(cache); /* nothing used: nothing written */
    zc_cache_close(cache);
    char path_a[256], path_b[300];
    cr_assert(usage_list_path(path_a, sizeof path_a));
    uint8_t id[32];
    cr_assert(zc_sha256_digest("program-b", strlen("program-b"), id));
    zc_key as_key = {0};
    memcpy(as_key.bytes, id, sizeof id);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&as_key, hex);
    snprintf(path_b, sizeof path_b, "%s/cache/%s%s", scratch, hex, ZC_USAGE_SUFFIX);
    cr_assert_eq(rename(path_a, path_b), 0);

    cache = open_prefetched("program-b", 64 << 20);
    remove_entry(1);
    cr_assert_eq(look_up(cache, 1, NULL), ZC_LOOKUP_COMPILED);
    zc_cache_close(cache);
}

/* Every byte of the list flipped in turn, and the list cut: each damaged
 * list is ignored and every lookup still gives the right bytes. */
Test(prefetch, damaged_list_is_ignored, .init = scratch_create, .fini = scratch_remove)
{
    first_run("program-a", 2);
    char path[256];
    cr_assert(usage_list_path(path, sizeof path));
    size_t size;
    uint8_t *good = t_read_bytes(path, &size);
    for (size_t at = 0; at <= size; at++) {
        FILE *file = fopen(path, "wb");
        cr_assert_not_null(file);
        if (at < size) {
            good[at] ^= 0x20;
            cr_assert_eq(fwrite(good, 1, size, file), size);
            good[at] ^= 0x20;
        } else {
            cr_assert_eq(fwrite(good, 1, size / 2, file), size / 2);
        }
        fclose(file);
        zc_cache *cache = open_prefetched("program-a", 64 << 20);
        remove_entry(1);
        cr_assert_eq(look_up(cache, 1, NULL), ZC_LOOKUP_COMPILED, "byte %zu flipped: used", at);
        cr_assert_eq(look_up(cache, 2, NULL), ZC_LOOKUP_DISK_HIT);
        zc_cache_close(cache); /* not saved: the list stays damaged for the next round */
    }
    free(good);
}

/* A list declaring more keys than a list may hold (a few hundred bytes of
 * file, as zstd packs repeated keys) is refused before its content is
 * decompressed, so a planted list cannot make every process allocate what
 * it declares. */
Test(prefetch, list_declaring_too_many_keys_is_refused, .init = scratch_create,
     .fini = scratch_remove)
{
    first_run("program-a", 1);
    char path[256];
    cr_assert(usage_list_path(path, sizeof path));
    uint8_t id[32];
    cr_assert(zc_sha256_digest("program-a", strlen("program-a"), id));
    size_t content_size = (ZC_USAGE_LIST_MAX + 1) * ZC_KEY_SIZE;
    zc_key *keys = calloc(ZC_USAGE_LIST_MAX + 1, sizeof *keys);
    cr_assert_not_null(keys);
    for (size_t i = 0; i <= ZC_USAGE_LIST_MAX; i++)
        keys[i] = t_key(1);
    uint8_t *sealed = NULL;
    size_t sealed_size = 0;
    cr_assert_eq(zc_sealed_encode(ZC_USAGE_MAGIC, id, keys, content_size, 3, &sealed, &sealed_size),
                 ZC_OK);
    free(keys);
    FILE *file = fopen(path, "wb");
    cr_assert_not_null(file);
    cr_assert_eq(fwrite(sealed, 1, sealed_size, file), sealed_size);
    fclose(file);
    free(sealed);

    zc_cache *cache = open_prefetched("program-a", 64 << 20);
    remove_entry(1);
    cr_assert_eq(look_up(cache, 1, NULL), ZC_LOOKUP_COMPILED, "the oversized list was used");
    zc_cache_close(cache);
}

/* Entries loaded ahead hold at most a quarter of the memory budget: here,
 * room for one. The thread waits with one loaded; once the files are gone,
 * only that one is a hit, and the thread, going on after it was taken,
 * finds the next one gone too. */
Test(prefetch, entries_loaded_ahead_stay_within_the_budget, .init = scratch_create,
     .fini = scratch_remove)
{
    first_run("program-a", KEY_COUNT);
    zc_cache *cache = open_prefetched("program-a", 4 * (ARTIFACT_SIZE - 1000));
    for (uint64_t seed = 1; seed <= KEY_COUNT; seed++)
        remove_entry(seed);
    atomic_int compiles = 0;
    cr_assert_eq(look_up(cache, 1, &compiles), ZC_LOOKUP_DISK_HIT);
    for (uint64_t seed = 2; seed <= KEY_COUNT; seed++)
        cr_assert_eq(look_up(cache, seed, &compiles), ZC_LOOKUP_COMPILED, "module %llu",
                     (unsigned long long)seed);
    cr_assert_eq(atomic_load(&compiles), KEY_COUNT - 1);
    zc_cache_close(cache);
}

/* An entry damaged after the list was saved: the prefetch's load refuses
 * it as any disk load does, and the lookup compiles. */
Test(prefetch, entry_damaged_since_is_compiled_again, .init = scratch_create,
     .fini = scratch_remove)
{
    first_run("program-a", KEY_COUNT);
    char path[256];
    entry_path(3, path, sizeof path);
    FILE *file = fopen(path, "r+b");
    cr_assert_not_null(file);
    fseek(file, -5, SEEK_END);
    fputc(0x5a, file);
    fclose(file);
    zc_cache *cache = open_cache(true);
    cr_assert_eq(zc_cache_prefetch_start(cache, "program-a"), ZC_OK);
    atomic_int compiles = 0;
    for (uint64_t seed = 1; seed <= KEY_COUNT; seed++)
        cr_assert_eq(look_up(cache, seed, &compiles),
                     seed == 3 ? ZC_LOOKUP_COMPILED : ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(atomic_load(&compiles), 1);
    zc_cache_close(cache);
}

/* The list follows the last run: a run that used other modules replaces it. */
Test(prefetch, list_follows_the_last_run, .init = scratch_create, .fini = scratch_remove)
{
    first_run("program-a", KEY_COUNT);
    zc_cache *cache = open_cache(true);
    cr_assert_eq(zc_cache_prefetch_start(cache, "program-a"), ZC_OK);
    cr_assert_eq(look_up(cache, 100, NULL), ZC_LOOKUP_COMPILED);
    cr_assert_eq(look_up(cache, 2, NULL), ZC_LOOKUP_DISK_HIT);
    zc_cache_prefetch_save(cache);
    zc_cache_close(cache);
    zc_key listed[ZC_USAGE_LIST_MAX];
    size_t count = 0;
    zc_config config;
    memset(&config, 0, sizeof config);
    snprintf(config.dir, sizeof config.dir, "%s/cache", scratch);
    config.persistent = true;
    zc_disk_tier *disk = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &disk), ZC_OK);
    uint8_t id[32];
    cr_assert(zc_sha256_digest("program-a", strlen("program-a"), id));
    cr_assert_eq(zc_disk_tier_read_usage(disk, id, listed, &count), ZC_OK);
    zc_disk_tier_close(disk);
    cr_assert_eq(count, 2);
    zc_key first = t_key(100), second = t_key(2);
    cr_assert(zc_key_equal(&listed[0], &first), "in the order of first use");
    cr_assert(zc_key_equal(&listed[1], &second));
}

/* Forked while the thread loads: the child has no thread, and its lookups
 * of entries being loaded in the parent do not wait for it. */
Test(prefetch, child_forked_while_loading_looks_up_alone, .init = scratch_create,
     .fini = scratch_remove, .timeout = 120)
{
#if defined(__SANITIZE_ADDRESS__)
    /* GCC 12's AddressSanitizer does not hold its allocator across fork():
     * a child forked while the loading thread is in malloc can hang there
     * (seen once in CI). glibc's malloc does; the plain and TSan trees run
     * this test. */
    cr_skip_test("fork() with a thread in malloc is not safe under this AddressSanitizer");
#endif
    first_run("program-a", MANY_KEYS);
    for (int round = 0; round < 5; round++) {
        zc_cache *cache = open_cache(true);
        cr_assert_eq(zc_cache_prefetch_start(cache, "program-a"), ZC_OK);
        pid_t child = fork();
        cr_assert_neq(child, -1);
        if (child == 0) {
            for (uint64_t seed = MANY_KEYS; seed >= 1; seed--)
                if (look_up(cache, seed, NULL) != ZC_LOOKUP_DISK_HIT)
                    _exit(2);
            _exit(0);
        }
        int status = 0;
        cr_assert_eq(waitpid(child, &status, 0), child);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
        zc_cache_prefetch_wait(cache);
        zc_cache_close(cache);
    }
}

/* Modules 1..count moved from the directory into one pack (packs names it). */
static void move_into_a_pack(uint64_t count)
{
    snprintf(packs, sizeof packs, "%s/modules.zcp", scratch);
    FILE *out = fopen(packs, "wb");
    cr_assert_not_null(out);
    zc_pack_writer *writer = NULL;
    cr_assert_eq(zc_pack_write_start(out, NULL, &writer), ZC_OK);
    for (uint64_t seed = 1; seed <= count; seed++) {
        char path[256];
        entry_path(seed, path, sizeof path);
        size_t size;
        uint8_t *entry = t_read_bytes(path, &size);
        cr_assert_not_null(entry);
        zc_key key = t_key(seed);
        cr_assert_eq(zc_pack_write_entry(writer, &key, entry, size), ZC_OK);
        free(entry);
        remove_entry(seed);
    }
    cr_assert_eq(zc_pack_write_end(writer, NULL), ZC_OK);
    zc_pack_writer_free(writer);
    cr_assert_eq(fclose(out), 0);
}

/* The thread loads from a pack (NEO_CACHE_PACKS) as a lookup would, while
 * the program looks the same modules up: each a pack hit with its bytes,
 * nothing compiled. */
Test(prefetch, listed_entries_in_a_pack_are_loaded_from_it, .init = scratch_create,
     .fini = scratch_remove)
{
    first_run("program-p", KEY_COUNT);
    move_into_a_pack(KEY_COUNT);
    zc_cache *cache = open_cache(true);
    cr_assert_eq(zc_cache_prefetch_start(cache, "program-p"), ZC_OK);
    atomic_int compiles = 0;
    for (uint64_t seed = 1; seed <= KEY_COUNT; seed++)
        cr_assert_eq(look_up(cache, seed, &compiles), ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(atomic_load(&compiles), 0);
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    cr_assert_eq(stats.pack_hits, KEY_COUNT);
    cr_assert_eq(stats.pack_rejected, 0);
    zc_cache_close(cache);
}

/* What the threads of one zc_parallel_for were, seen from the load below. */
typedef struct fan_out {
    atomic_int pieces_elsewhere;
    pthread_t loader;
    atomic_bool waited_out; /* piece 0 waited for a second thread in vain */
} fan_out;

/* Piece 0 waits (up to a second) for another piece to run, so that a
 * helper thread, where there is one, surely takes a piece. */
static void fan_out_piece(void *context, size_t index)
{
    fan_out *seen = context;
    if (!pthread_equal(pthread_self(), seen->loader))
        atomic_fetch_add(&seen->pieces_elsewhere, 1);
    for (int i = 0; index == 0 && i < 1000 && atomic_load(&seen->pieces_elsewhere) == 0; i++)
        usleep(1000);
}

static zc_status fanning_load(void *context, const zc_key *key, zc_artifact **out,
                              const char **origin)
{
    (void)key, (void)origin, (void)out;
    fan_out *seen = context;
    seen->loader = pthread_self();
    zc_parallel_for(8, fan_out_piece, seen);
    return ZC_MISS;
}

/* The prefetch works beside the application: a job it splits (decoding a
 * large entry) stays on its own thread and leaves the other cores to the
 * application, while the same job on another thread does use helpers. */
Test(prefetch, the_thread_keeps_its_work_to_itself, .init = scratch_create, .fini = scratch_remove)
{
    first_run("program-a", 1);
    uint8_t id[ZC_SHA256_SIZE];
    zc_disk_tier *disk = open_disk("program-a", id);
    fan_out seen = {0};
    zc_prefetch *prefetch = NULL;
    cr_assert_eq(zc_prefetch_start_loading(disk, fanning_load, &seen, id, 1 << 20, &prefetch),
                 ZC_OK);
    zc_prefetch_wait_idle(prefetch);
    zc_prefetch_stop(prefetch);
    zc_disk_tier_close(disk);
    cr_assert_eq(atomic_load(&seen.pieces_elsewhere), 0);
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        return;
    seen = (fan_out){.loader = pthread_self()};
    zc_parallel_for(8, fan_out_piece, &seen);
    cr_assert_gt(atomic_load(&seen.pieces_elsewhere), 0, "a helper where nothing keeps it out");
}
