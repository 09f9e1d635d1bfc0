/* The memory tier in front of the disk tier, then the remote storages, with
 * the caller's compile behind them all. The disk and remote loads run inside
 * the memory tier's single flight, so threads that want the same key at once
 * cost one load or one compile; a miss then claims the key's build lock on
 * disk (processes of this node) and in Redis (other nodes), so processes
 * that want it at once cost one compile in all. */
#include "zecache/cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/disk_tier.h"
#include "disk_raw.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_claim.h"
#include "zecache/disk_recipes.h"
#include "zecache/entry.h"
#include "zecache/log.h"
#include "zecache/memory_tier.h"
#include "zecache/recipe.h"
#include "zecache/remote.h"
#include "zecache/stats.h"
#include "pack_set.h"
#include "prefetch.h"
#include "zecache/sha256.h"

struct zc_cache {
    zc_memory_tier *memory;
    zc_disk_tier *disk;             /* NULL: memory only */
    zc_remote *remote;              /* NULL: no remote storages */
    zc_pack_set *packs;             /* NULL: no NEO_CACHE_PACKS */
    uint64_t max_payload;           /* what a remote entry may hold: NEO_CACHE_MAX_SIZE */
    int compression_level;          /* for entries encoded for the remotes */
    uint64_t wait_timeout_ms;       /* for another process compiling the same key; 0: no waiting */
    uint64_t remote_min_compile_ns; /* admission: faster compiles stay out of the remotes */
    zc_cache_counters counters;
    bool prefetch_on;       /* NEO_CACHE_PREFETCH */
    size_t prefetch_budget; /* what prefetched entries not taken yet may hold */
    zc_prefetch *prefetch;  /* NULL until zc_cache_prefetch_start */
    /* Serialises merges into the stats file, and guards merged: what the
     * counters were at the last merge that succeeded. */
    pthread_mutex_t merge_mutex;
    zc_cache_stats merged;
};

static const char *const bypass_reason_names[ZC_BYPASS_REASON_COUNT] = {
    [ZC_BYPASS_NATIVE_INPUT] = "native-input",
    [ZC_BYPASS_UNSUPPORTED_INPUT] = "unsupported-input",
    [ZC_BYPASS_NOT_CACHEABLE] = "not-cacheable",
    [ZC_BYPASS_CACHE_ERROR] = "cache-error",
    [ZC_BYPASS_REJECTED_BINARY] = "rejected-binary",
    [ZC_BYPASS_COMPILER_UNIDENTIFIED] = "compiler-unidentified",
    [ZC_BYPASS_COMPILER_CHANGED] = "compiler-changed",
};

const char *zc_bypass_reason_name(zc_bypass_reason reason)
{
    if ((unsigned)reason >= ZC_BYPASS_REASON_COUNT)
        return "unknown";
    return bypass_reason_names[reason];
}

static void counter_add(atomic_uint_least64_t *counter, uint64_t amount)
{
    atomic_fetch_add_explicit(counter, amount, memory_order_relaxed);
}

static uint64_t counter_read(atomic_uint_least64_t *counter)
{
    return atomic_load_explicit(counter, memory_order_relaxed);
}

zc_status zc_cache_open(const zc_config *config, zc_cache **out)
{
    if (config == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    zc_cache *cache = calloc(1, sizeof(*cache));
    if (cache == NULL)
        return ZC_ERR_NOMEM;
    if (pthread_mutex_init(&cache->merge_mutex, NULL) != 0) {
        free(cache);
        return ZC_ERR_NOMEM;
    }
    zc_status status = zc_memory_tier_create((size_t)config->memory_size, &cache->memory);
    if (status != ZC_OK) {
        pthread_mutex_destroy(&cache->merge_mutex);
        free(cache);
        return status;
    }
    /* Threads of one process always share one build of a key; 0 only stops
     * the waits for other processes. */
    if (config->wait_timeout_ms > 0)
        zc_memory_tier_set_wait_timeout(cache->memory, config->wait_timeout_ms);
    /* A disk tier that cannot be opened (unusable directory, persistence off)
     * leaves a memory-only cache: the application must not notice. */
    if (config->persistent && zc_disk_tier_open(config, &cache->disk) != ZC_OK)
        cache->disk = NULL;
    if (zc_remote_open(config, &cache->counters, &cache->remote) != ZC_OK)
        cache->remote = NULL;
    cache->packs = zc_pack_set_open(config, &cache->counters);
    cache->max_payload = config->max_size;
    cache->compression_level = config->compression_level;
    cache->prefetch_on = config->prefetch;
    /* A quarter of the memory tier's: entries a run never asks for (its
     * program changed) are held until exit, and a thread that has filled it
     * goes on as the application takes what it loaded. */
    cache->prefetch_budget = (size_t)(config->memory_size / 4);
    cache->wait_timeout_ms = config->wait_timeout_ms;
    /* At most 24 h in milliseconds (config.c): the product fits. */
    cache->remote_min_compile_ns = config->remote_min_compile_ms * UINT64_C(1000000);
    *out = cache;
    return ZC_OK;
}

void zc_cache_close(zc_cache *cache)
{
    if (cache == NULL)
        return;
    zc_prefetch_stop(cache->prefetch);
    zc_remote_close(cache->remote);
    zc_pack_set_close(cache->packs);
    zc_disk_tier_close(cache->disk);
    zc_memory_tier_destroy(cache->memory);
    pthread_mutex_destroy(&cache->merge_mutex);
    free(cache);
}

const char *zc_cache_disk_dir(const zc_cache *cache)
{
    return cache->disk != NULL ? zc_disk_tier_dir(cache->disk) : NULL;
}

/* An entry another process stored first is in place, but this one stored
 * nothing: neither a store nor an error. A read-only directory counts its
 * first skip only. */
static void count_disk_store(zc_cache *cache, zc_status status)
{
    if (status == ZC_OK)
        counter_add(&cache->counters.stores, 1);
    else if (status != ZC_EXISTS && status != ZC_ERR_DISABLED)
        counter_add(&cache->counters.store_errors, 1);
}

/* Persisting the counters at every store (not only at exit) means a crash
 * loses at most the hits since the last store: a hit does no I/O for them,
 * and a store does file I/O anyway. */
static bool store_on_disk(zc_cache *cache, const zc_key *key, const zc_artifact *artifact,
                          const char *trace)
{
    if (cache->disk == NULL)
        return false;
    zc_status status = zc_disk_tier_store(cache->disk, key, artifact, trace);
    count_disk_store(cache, status);
    zc_cache_merge_stats(cache);
    return status == ZC_OK || status == ZC_EXISTS;
}

typedef struct lookup_context {
    zc_cache *cache;
    const zc_key *key;
    const char *trace;
    zc_compile_fn compile;
    void *compile_context;
    zc_lookup_outcome outcome; /* set only when this thread ran the build */
    zc_remote_rejects rejects; /* remotes that held a bad value: replaced by the store */
    bool remote_store_failed;
    bool not_admitted;     /* compiled too fast for the remotes: not stored there */
    bool stored;           /* its result went to disk */
    const char *pack_name; /* the pack that served it, NULL otherwise */
} lookup_context;

/* Loaded by the prefetch thread from a pack or the disk: a disk hit, and a
 * pack hit when a pack held it. */
static bool take_prefetched(lookup_context *lookup, zc_artifact **out)
{
    if (zc_prefetch_take_from(lookup->cache->prefetch, lookup->key, out, &lookup->pack_name) !=
        ZC_OK)
        return false;
    lookup->outcome = ZC_LOOKUP_DISK_HIT;
    return true;
}

static bool load_from_disk(lookup_context *lookup, zc_artifact **out)
{
    if (zc_disk_tier_load(lookup->cache->disk, lookup->key, out) != ZC_OK)
        return false;
    lookup->outcome = ZC_LOOKUP_DISK_HIT;
    return true;
}

/* A remote hit is copied to the local disk as the bytes that verified: no
 * second compression. */
static bool load_from_pack(lookup_context *lookup, zc_artifact **out)
{
    zc_cache *cache = lookup->cache;
    if (zc_pack_set_load(cache->packs, lookup->key, cache->max_payload, out, &lookup->pack_name) !=
        ZC_OK)
        return false;
    lookup->outcome = ZC_LOOKUP_DISK_HIT;
    return true;
}

static bool load_from_remote(lookup_context *lookup, zc_artifact **out)
{
    zc_cache *cache = lookup->cache;
    if (cache->remote == NULL)
        return false;
    uint8_t *entry = NULL;
    size_t entry_size = 0;
    if (zc_remote_load(cache->remote, lookup->key, cache->max_payload, out, &entry, &entry_size,
                       &lookup->rejects) != ZC_OK)
        return false;
    if (cache->disk != NULL) {
        zc_status status = zc_disk_tier_store_raw(cache->disk, lookup->key, entry, entry_size);
        lookup->stored = status == ZC_OK || status == ZC_EXISTS;
        count_disk_store(cache, status);
        zc_cache_merge_stats(cache); /* as after every store */
    }
    free(entry);
    lookup->outcome = ZC_LOOKUP_REMOTE_HIT;
    return true;
}

/* Admission (NEO_CACHE_REMOTE_MIN_COMPILE_MS): a module that compiled faster
 * than the threshold costs any node little to compile again, so it stays in
 * memory and on the local disk and takes no room in the remote storages
 * (which evict, e.g. Redis with allkeys-lru) from costly ones. A bad value
 * seen there for it would otherwise stay and be rejected by every node:
 * removed. The measured time is the artifact's own: the compile that just
 * ran, or for a replacement the fresh compile. */
static bool admitted_remotely(lookup_context *lookup, const zc_artifact *artifact)
{
    zc_cache *cache = lookup->cache;
    if (zc_artifact_meta_of(artifact)->compile_ns >= cache->remote_min_compile_ns)
        return true;
    lookup->not_admitted = true;
    counter_add(&cache->counters.remote_not_admitted, 1);
    if (lookup->rejects != 0)
        zc_remote_remove(cache->remote, lookup->key, lookup->rejects);
    return false;
}

static void store_remotely(lookup_context *lookup, const zc_artifact *artifact)
{
    zc_cache *cache = lookup->cache;
    uint8_t *entry = NULL;
    size_t entry_size = 0;
    /* Read-only storages only (or all given up): nothing to store, nothing
     * kept out by admission. */
    if (cache->remote == NULL || !zc_remote_any_writable(cache->remote) ||
        !admitted_remotely(lookup, artifact))
        return;
    if (zc_entry_encode(lookup->key, artifact, cache->compression_level, &entry, &entry_size) !=
            ZC_OK ||
        !zc_remote_store(cache->remote, lookup->key, entry, entry_size, lookup->rejects))
        lookup->remote_store_failed = true;
    free(entry);
}

static zc_status compile_and_store(lookup_context *lookup, zc_artifact **out)
{
    zc_cache *cache = lookup->cache;
    lookup->outcome = ZC_LOOKUP_COMPILED;
    counter_add(&cache->counters.misses, 1);
    zc_status status = lookup->compile(lookup->compile_context, out);
    if (status != ZC_OK) {
        if (status != ZC_NOT_CACHEABLE)
            counter_add(&cache->counters.failed_builds, 1);
        return status;
    }
    counter_add(&cache->counters.compile_ns_spent, zc_artifact_meta_of(*out)->compile_ns);
    lookup->stored = store_on_disk(cache, lookup->key, *out, lookup->trace);
    store_remotely(lookup, *out);
    return ZC_OK;
}

/* Other nodes: the first to miss takes the key's Redis lock and compiles,
 * the others wait for its entry. A holder whose build or remote store failed,
 * or whose module was not admitted to the remotes, says so on release (the
 * lock's "failed" mark), so waiters compile at once instead of waiting for an
 * entry that will never come, or taking the lock one after another. */
static zc_status compile_unless_another_node_does(lookup_context *lookup, zc_artifact **out)
{
    zc_cache *cache = lookup->cache;
    /* A bad value already seen there would read as ready: nothing to wait for. */
    if (cache->remote == NULL || cache->wait_timeout_ms == 0 || lookup->rejects != 0)
        return compile_and_store(lookup, out);
    zc_remote_lock claim;
    zc_storage_claim_result claimed =
        zc_remote_claim(cache->remote, lookup->key, cache->wait_timeout_ms, &claim);
    zc_status status = ZC_OK;
    if (claimed != ZC_STORAGE_READY || !load_from_remote(lookup, out))
        status = compile_and_store(lookup, out);
    zc_remote_release(cache->remote, lookup->key, &claim,
                      status != ZC_OK || lookup->remote_store_failed || lookup->not_admitted);
    return status;
}

/* The ranks of a parallel job start together and miss on the same keys: one
 * process compiles each, the others wait for its entry. A lock that cannot
 * be had (or a wait that timed out) means compiling here, as without it. */
static zc_status compile_unless_another_process_does(lookup_context *lookup, zc_artifact **out)
{
    zc_cache *cache = lookup->cache;
    zc_disk_claim claim;
    zc_disk_claim_result claimed = ZC_DISK_TIMED_OUT;
    if (zc_disk_tier_claim(cache->disk, lookup->key, cache->wait_timeout_ms, &claimed, &claim) !=
        ZC_OK)
        claimed = ZC_DISK_TIMED_OUT;
    zc_status status = ZC_OK;
    /* A ready entry that fails to load (corrupt, evicted) is compiled again. */
    if (claimed != ZC_DISK_READY || !load_from_disk(lookup, out))
        status = compile_unless_another_node_does(lookup, out);
    /* Waiters would otherwise take the lock and compile one after another. */
    if (claimed == ZC_DISK_CLAIMED && !lookup->stored)
        zc_disk_tier_mark_not_stored(cache->disk, &claim);
    zc_disk_tier_release(cache->disk, &claim); /* after the store: waiters then find it */
    return status;
}

/* What the tiers behind memory hold for the key; false when none has it. */
static bool find_stored(lookup_context *lookup, zc_artifact **out)
{
    zc_cache *cache = lookup->cache;
    if (take_prefetched(lookup, out))
        return true;
    /* Packs first: their index is in memory, so a miss costs no system call. */
    if (cache->packs != NULL && load_from_pack(lookup, out))
        return true;
    if (cache->disk != NULL && load_from_disk(lookup, out))
        return true;
    return load_from_remote(lookup, out);
}

static zc_status find_or_compile(lookup_context *lookup, zc_artifact **out)
{
    zc_cache *cache = lookup->cache;
    if (find_stored(lookup, out))
        return ZC_OK;
    if (cache->disk == NULL || cache->wait_timeout_ms == 0)
        return compile_unless_another_node_does(lookup, out);
    return compile_unless_another_process_does(lookup, out);
}

static zc_status load_or_compile(void *context, zc_artifact **out)
{
    lookup_context *lookup = context;
    zc_status status = lookup->compile != NULL    ? find_or_compile(lookup, out)
                       : find_stored(lookup, out) ? ZC_OK
                                                  : ZC_MISS;
    if (status == ZC_OK)
        zc_prefetch_note_use(lookup->cache->prefetch, lookup->key);
    return status;
}

static void log_not_admitted(const zc_cache *cache, const char *what, const char *hex,
                             const zc_artifact *artifact)
{
    zc_log_info("%s %s: compiled in %.3f ms, under NEO_CACHE_REMOTE_MIN_COMPILE_MS=%llu: "
                "not admitted to the remote storages",
                what, hex, (double)zc_artifact_meta_of(artifact)->compile_ns / 1e6,
                (unsigned long long)(cache->remote_min_compile_ns / 1000000));
}

static void count_and_log_lookup(zc_cache *cache, const lookup_context *lookup,
                                 zc_lookup_outcome outcome, zc_status status,
                                 const zc_artifact *artifact)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(lookup->key, hex);
    if (outcome == ZC_LOOKUP_COMPILED) {
        if (status == ZC_OK && lookup->not_admitted)
            log_not_admitted(cache, "miss", hex, artifact);
        else
            zc_log_info("miss %s: compiled%s", hex,
                        status == ZC_OK              ? ""
                        : status == ZC_NOT_CACHEABLE ? ", not stored under this key"
                                                     : ", build failed");
        return;
    }
    uint64_t saved_ns = zc_artifact_meta_of(artifact)->compile_ns;
    counter_add(&cache->counters.compile_ns_saved, saved_ns);
    if (outcome == ZC_LOOKUP_DISK_HIT) {
        counter_add(&cache->counters.disk_hits, 1);
        counter_add(&cache->counters.pack_hits, lookup->pack_name != NULL);
        zc_log_info("hit disk %s: saved %.3f ms%s%s", hex, (double)saved_ns / 1e6,
                    lookup->pack_name != NULL ? ", from the pack " : "",
                    lookup->pack_name != NULL ? lookup->pack_name : "");
    } else if (outcome == ZC_LOOKUP_REMOTE_HIT) {
        zc_log_info("hit remote %s: saved %.3f ms", hex, (double)saved_ns / 1e6);
    } else {
        counter_add(&cache->counters.memory_hits, 1);
        zc_log_info("hit memory %s: saved %.3f ms", hex, (double)saved_ns / 1e6);
    }
}

zc_status zc_cache_get_or_compile(zc_cache *cache, const zc_key *key, const char *trace,
                                  zc_compile_fn compile, void *context, zc_artifact **out,
                                  zc_lookup_outcome *outcome)
{
    if (cache == NULL || key == NULL || compile == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    lookup_context lookup = {.cache = cache,
                             .key = key,
                             .trace = trace,
                             .compile = compile,
                             .compile_context = context,
                             .outcome = ZC_LOOKUP_MEMORY_HIT};
    zc_memory_outcome memory_outcome = ZC_MEMORY_HIT;
    zc_status status = zc_memory_tier_get_or_build(cache->memory, key, load_or_compile, &lookup,
                                                   out, &memory_outcome);
    /* Only the thread that ran the build knows whether it came from disk or a
     * compile; a thread that found it in memory or waited reports a memory hit. */
    zc_lookup_outcome result =
        memory_outcome == ZC_MEMORY_BUILT ? lookup.outcome : ZC_LOOKUP_MEMORY_HIT;
    if (status == ZC_OK || result == ZC_LOOKUP_COMPILED)
        count_and_log_lookup(cache, &lookup, result, status, status == ZC_OK ? *out : NULL);
    if (outcome != NULL)
        *outcome = result;
    return status;
}

/* The prefetch thread's load: the packs first, as a lookup goes. */
static zc_status prefetch_load(void *context, const zc_key *key, zc_artifact **out,
                               const char **origin)
{
    zc_cache *cache = context;
    *origin = NULL;
    if (cache->packs != NULL &&
        zc_pack_set_peek(cache->packs, key, cache->max_payload, out, origin) == ZC_OK)
        return ZC_OK;
    return zc_disk_tier_load_leaving_bad(cache->disk, key, out);
}

zc_status zc_cache_prefetch_start(zc_cache *cache, const char *program)
{
    if (cache == NULL || program == NULL)
        return ZC_ERR_INVALID_ARG;
    if (cache->disk == NULL || !cache->prefetch_on || cache->prefetch != NULL)
        return ZC_ERR_DISABLED;
    uint8_t id[ZC_SHA256_SIZE];
    if (!zc_sha256_digest(program, strlen(program), id))
        return ZC_ERR_NOMEM;
    return zc_prefetch_start_loading(cache->disk, prefetch_load, cache, id, cache->prefetch_budget,
                                     &cache->prefetch);
}

void zc_cache_prefetch_wait(zc_cache *cache)
{
    if (cache != NULL)
        zc_prefetch_wait_idle(cache->prefetch);
}

void zc_cache_prefetch_save(zc_cache *cache)
{
    if (cache != NULL)
        zc_prefetch_save(cache->prefetch);
}

void zc_cache_prepare_thread(zc_cache *cache)
{
    /* The prefetch thread decodes this program's entries: this one then has
     * none to decode, and the round trip (95 us on 26.27, its encoder's
     * first run the most of it) would be spent for nothing. */
    if (cache != NULL && zc_cache_disk_dir(cache) != NULL && !zc_prefetch_serves(cache->prefetch))
        zc_entry_prepare_thread();
}

/* Keeps artifact in every tier; when replacing, over what they held (the
 * disk store skips keys that exist, so the old entry goes first). */
static zc_status put_in_every_tier(zc_cache *cache, const zc_key *key, zc_artifact *artifact,
                                   const char *trace, bool replacing)
{
    zc_status status = zc_memory_tier_put(cache->memory, key, artifact);
    if (cache->disk != NULL) {
        char path[ZC_DISK_ENTRY_PATH_SIZE];
        zc_disk_tier_entry_path(key, path);
        if (replacing)
            (void)zc_disk_tier_remove_entry(cache->disk, path);
        store_on_disk(cache, key, artifact, trace);
    }
    if (cache->remote != NULL) {
        /* Replacing, every writable remote gets the fresh compile over what
         * it held, or loses what it held when the fresh compile is not
         * admitted. */
        lookup_context lookup = {
            .cache = cache, .key = key, .rejects = replacing ? ~(zc_remote_rejects)0 : 0};
        store_remotely(&lookup, artifact);
        if (lookup.not_admitted) {
            char hex[ZC_KEY_HEX_SIZE];
            zc_key_to_hex(key, hex);
            log_not_admitted(cache, replacing ? "replaced" : "stored", hex, artifact);
        }
    }
    return status;
}

zc_status zc_cache_replace(zc_cache *cache, const zc_key *key, zc_artifact *artifact,
                           const char *trace)
{
    if (cache == NULL || key == NULL || artifact == NULL)
        return ZC_ERR_INVALID_ARG;
    return put_in_every_tier(cache, key, artifact, trace, true);
}

zc_status zc_cache_lookup(zc_cache *cache, const zc_key *key, zc_artifact **out,
                          zc_lookup_outcome *outcome)
{
    if (cache == NULL || key == NULL || out == NULL || outcome == NULL)
        return ZC_ERR_INVALID_ARG;
    /* No compile: find_stored alone runs inside the memory tier's single
     * flight, and a ZC_MISS there is a failed build, which it keeps nothing
     * of. */
    lookup_context lookup = {.cache = cache, .key = key, .outcome = ZC_LOOKUP_MEMORY_HIT};
    zc_memory_outcome memory_outcome = ZC_MEMORY_HIT;
    zc_status status = zc_memory_tier_get_or_build(cache->memory, key, load_or_compile, &lookup,
                                                   out, &memory_outcome);
    *outcome = memory_outcome == ZC_MEMORY_BUILT ? lookup.outcome : ZC_LOOKUP_MEMORY_HIT;
    return status;
}

void zc_cache_count_hit(zc_cache *cache, const zc_key *key, zc_lookup_outcome outcome,
                        const zc_artifact *artifact)
{
    if (cache == NULL || key == NULL || artifact == NULL || outcome == ZC_LOOKUP_COMPILED)
        return;
    lookup_context lookup = {.cache = cache, .key = key};
    count_and_log_lookup(cache, &lookup, outcome, ZC_OK, artifact);
}

zc_status zc_cache_store(zc_cache *cache, const zc_key *key, zc_artifact *artifact,
                         const char *trace)
{
    if (cache == NULL || key == NULL || artifact == NULL)
        return ZC_ERR_INVALID_ARG;
    zc_cache_count_miss(cache, ZC_OK, artifact);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    zc_log_info("miss %s: compiled by the caller", hex);
    return put_in_every_tier(cache, key, artifact, trace, false);
}

static void free_blobs(zc_input_blob *blobs, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        free((void *)blobs[i].bytes);
    free(blobs);
}

zc_status zc_cache_record_inputs(zc_cache *cache, const zc_key *key, zc_recipe *recipe,
                                 const void *const *spirv)
{
    if (cache == NULL || key == NULL || recipe == NULL || spirv == NULL)
        return ZC_ERR_INVALID_ARG;
    if (cache->disk == NULL)
        return ZC_ERR_DISABLED;
    /* Compressed before the lock is taken, as entries are. */
    zc_input_blob *blobs = calloc(recipe->input_count + 1, sizeof *blobs);
    zc_status status = blobs != NULL ? ZC_OK : ZC_ERR_NOMEM;
    for (uint32_t i = 0; i < recipe->input_count && status == ZC_OK; i++) {
        uint8_t *bytes = NULL;
        status =
            zc_spirv_blob_encode(spirv[i], recipe->inputs[i].spirv_size, cache->compression_level,
                                 blobs[i].sha256, &bytes, &blobs[i].size);
        blobs[i].bytes = bytes;
        memcpy(recipe->inputs[i].spirv_sha256, blobs[i].sha256, 32);
    }
    uint8_t *encoded = NULL;
    size_t encoded_size = 0;
    recipe->key = *key;
    if (status == ZC_OK)
        status = zc_recipe_encode(recipe, cache->compression_level, &encoded, &encoded_size);
    if (status == ZC_OK) {
        zc_remote_record(cache->remote, key, encoded, encoded_size, blobs, recipe->input_count);
        status = zc_disk_tier_record(cache->disk, key, encoded, encoded_size, blobs,
                                     recipe->input_count);
    }
    free(encoded);
    if (blobs != NULL)
        free_blobs(blobs, recipe->input_count);
    return status;
}

/* Subtracts amount from a counter that counted it. When a merge already
 * took it into the stats file, the file keeps it, but merged follows the
 * counter down so that no later difference wraps. Under merge_mutex. */
static void take_back(atomic_uint_least64_t *counter, uint64_t *merged, uint64_t amount)
{
    uint64_t now = atomic_fetch_sub_explicit(counter, amount, memory_order_relaxed) - amount;
    if (*merged > now)
        *merged = now;
}

void zc_cache_uncount_hit(zc_cache *cache, zc_lookup_outcome outcome, const zc_artifact *artifact)
{
    if (cache == NULL || artifact == NULL || outcome == ZC_LOOKUP_COMPILED)
        return;
    zc_cache_counters *counters = &cache->counters;
    zc_cache_stats *merged = &cache->merged;
    pthread_mutex_lock(&cache->merge_mutex);
    if (outcome == ZC_LOOKUP_DISK_HIT)
        take_back(&counters->disk_hits, &merged->disk_hits, 1);
    else if (outcome == ZC_LOOKUP_REMOTE_HIT)
        take_back(&counters->remote_hits, &merged->remote_hits, 1);
    else
        take_back(&counters->memory_hits, &merged->memory_hits, 1);
    take_back(&counters->compile_ns_saved, &merged->compile_ns_saved,
              zc_artifact_meta_of(artifact)->compile_ns);
    pthread_mutex_unlock(&cache->merge_mutex);
}

void zc_cache_count_miss(zc_cache *cache, zc_status status, const zc_artifact *fresh)
{
    if (cache == NULL)
        return;
    counter_add(&cache->counters.misses, 1);
    if (status != ZC_OK && status != ZC_NOT_CACHEABLE)
        counter_add(&cache->counters.failed_builds, 1);
    if (fresh != NULL)
        counter_add(&cache->counters.compile_ns_spent, zc_artifact_meta_of(fresh)->compile_ns);
}

void zc_cache_count_bypass(zc_cache *cache, zc_bypass_reason reason, const char *detail)
{
    if ((unsigned)reason >= ZC_BYPASS_REASON_COUNT)
        return;
    if (cache != NULL)
        counter_add(&cache->counters.bypasses[reason], 1);
    zc_log_info("bypass %s%s%s", zc_bypass_reason_name(reason), detail != NULL ? ": " : "",
                detail != NULL ? detail : "");
}

zc_cache_counters *zc_cache_counters_of(zc_cache *cache)
{
    return &cache->counters;
}

zc_status zc_cache_merge_stats(zc_cache *cache)
{
    if (cache == NULL || cache->disk == NULL)
        return ZC_OK;
    pthread_mutex_lock(&cache->merge_mutex);
    zc_cache_stats now, delta;
    zc_cache_get_stats(cache, &now);
    zc_stats_difference(&now, &cache->merged, &delta);
    zc_status status = zc_stats_merge(cache->disk, &delta);
    if (status == ZC_OK)
        cache->merged = now; /* else the delta waits for the next merge */
    pthread_mutex_unlock(&cache->merge_mutex);
    return status;
}

/* Every counter of zc_cache_counters is zeroed below. */
_Static_assert(sizeof(zc_cache_counters) ==
                   (16 + ZC_BYPASS_REASON_COUNT) * sizeof(atomic_uint_least64_t),
               "zc_cache_reset_counters zeroes every counter");

void zc_cache_reset_counters(zc_cache *cache)
{
    zc_cache_counters *counters = &cache->counters;
    atomic_store(&counters->memory_hits, 0);
    atomic_store(&counters->disk_hits, 0);
    atomic_store(&counters->misses, 0);
    atomic_store(&counters->failed_builds, 0);
    for (int i = 0; i < ZC_BYPASS_REASON_COUNT; i++)
        atomic_store(&counters->bypasses[i], 0);
    atomic_store(&counters->stores, 0);
    atomic_store(&counters->store_errors, 0);
    atomic_store(&counters->remote_hits, 0);
    atomic_store(&counters->remote_misses, 0);
    atomic_store(&counters->remote_stores, 0);
    atomic_store(&counters->remote_errors, 0);
    atomic_store(&counters->remote_rejected, 0);
    atomic_store(&counters->remote_not_admitted, 0);
    atomic_store(&counters->pack_hits, 0);
    atomic_store(&counters->pack_rejected, 0);
    atomic_store(&counters->compile_ns_spent, 0);
    atomic_store(&counters->compile_ns_saved, 0);
    /* In a forked child the mutex may have been held by a thread that does
     * not exist here: only this thread runs, so a fresh one is safe. */
    pthread_mutex_init(&cache->merge_mutex, NULL);
    zc_cache_get_stats(cache, &cache->merged); /* the tiers' own counts stay the parent's */
}

void zc_cache_get_stats(zc_cache *cache, zc_cache_stats *stats)
{
    zc_cache_counters *counters = &cache->counters;
    *stats = (zc_cache_stats){
        .memory_hits = counter_read(&counters->memory_hits),
        .disk_hits = counter_read(&counters->disk_hits),
        .misses = counter_read(&counters->misses),
        .failed_builds = counter_read(&counters->failed_builds),
        .stores = counter_read(&counters->stores),
        .store_errors = counter_read(&counters->store_errors),
        .compile_ns_spent = counter_read(&counters->compile_ns_spent),
        .compile_ns_saved = counter_read(&counters->compile_ns_saved),
        .remote_hits = counter_read(&counters->remote_hits),
        .remote_misses = counter_read(&counters->remote_misses),
        .remote_stores = counter_read(&counters->remote_stores),
        .remote_errors = counter_read(&counters->remote_errors),
        .remote_rejected = counter_read(&counters->remote_rejected),
        .remote_not_admitted = counter_read(&counters->remote_not_admitted),
        .pack_hits = counter_read(&counters->pack_hits),
        .pack_rejected = counter_read(&counters->pack_rejected),
    };
    for (int i = 0; i < ZC_BYPASS_REASON_COUNT; i++)
        stats->bypasses[i] = counter_read(&counters->bypasses[i]);
    zc_memory_tier_stats memory_stats;
    zc_memory_tier_get_stats(cache->memory, &memory_stats);
    stats->memory_evictions = memory_stats.evictions;
    stats->evictions = cache->disk != NULL ? zc_disk_tier_evictions(cache->disk) : 0;
    stats->lock_timeouts = cache->disk != NULL ? zc_disk_tier_lock_timeouts(cache->disk) : 0;
}
