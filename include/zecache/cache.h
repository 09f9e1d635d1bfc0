/* The cache as the layer and the tool see it: the memory tier in front of the
 * disk tier, with the caller's compile step behind both, and counters of what
 * happened. It knows nothing about how keys are made. */
#ifndef ZECACHE_CACHE_H
#define ZECACHE_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/config.h"
#include "zecache/key.h"
#include "zecache/status.h"

/* Why a module went straight to the driver without the cache. */
typedef enum zc_bypass_reason {
    ZC_BYPASS_NATIVE_INPUT,          /* the input is already a native binary */
    ZC_BYPASS_UNSUPPORTED_INPUT,     /* an unknown format or pNext structure, or bad arguments */
    ZC_BYPASS_NOT_CACHEABLE,         /* the key builder refused the input */
    ZC_BYPASS_CACHE_ERROR,           /* a cache-side failure (allocation, device queries) */
    ZC_BYPASS_REJECTED_BINARY,       /* the driver refused a cached binary: not a hit; compiled
                                        again (a miss when the cache stored that compile) */
    ZC_BYPASS_COMPILER_UNIDENTIFIED, /* no libigc found under any name: nothing to key */
    ZC_BYPASS_COMPILER_CHANGED,      /* the compiler loaded is not the one predicted: no hits in
                                        this process, compiled and stored under the real one */
    ZC_BYPASS_REASON_COUNT,
} zc_bypass_reason;

/* A short name such as "not-cacheable", for messages and statistics. */
const char *zc_bypass_reason_name(zc_bypass_reason reason);

/* Live counters, updated without locks by every thread. */
typedef struct zc_cache_counters {
    atomic_uint_least64_t memory_hits; /* includes threads that waited for another's build */
    atomic_uint_least64_t disk_hits;
    atomic_uint_least64_t misses;        /* compiles run by the cache */
    atomic_uint_least64_t failed_builds; /* of those, how many failed (never stored) */
    atomic_uint_least64_t bypasses[ZC_BYPASS_REASON_COUNT];
    atomic_uint_least64_t stores;           /* entries written to the disk tier */
    atomic_uint_least64_t store_errors;     /* disk stores that failed (the app did not) */
    atomic_uint_least64_t compile_ns_spent; /* by the misses that succeeded */
    atomic_uint_least64_t compile_ns_saved; /* sum of the original compile times of hits */
    /* The remote tier (remote.h): lookups a remote served, lookups that asked
     * the remotes and got nothing usable, values put, failed calls, and bad
     * or unsigned values ignored. */
    atomic_uint_least64_t remote_hits, remote_misses, remote_stores, remote_errors, remote_rejected;
    /* Compiled modules kept out of the writable remote storages because their
     * compile took less than NEO_CACHE_REMOTE_MIN_COMPILE_MS (one per module,
     * whatever the number of storages). */
    atomic_uint_least64_t remote_not_admitted;
    /* Of the disk hits, those served by a read-only pack (NEO_CACHE_PACKS);
     * and entries of packs that did not verify, and packs refused (a miss). */
    atomic_uint_least64_t pack_hits, pack_rejected;
} zc_cache_counters;

/* A snapshot of the counters in plain integers. */
typedef struct zc_cache_stats {
    uint64_t memory_hits, disk_hits, misses, failed_builds;
    uint64_t bypasses[ZC_BYPASS_REASON_COUNT];
    uint64_t stores, store_errors;
    uint64_t evictions;        /* entries the disk tier evicted to make room */
    uint64_t memory_evictions; /* artifacts the memory tier dropped for its budget */
    uint64_t lock_timeouts;    /* disk operations skipped: another process held a lock */
    uint64_t compile_ns_spent, compile_ns_saved;
    uint64_t remote_hits, remote_misses, remote_stores, remote_errors, remote_rejected;
    uint64_t remote_not_admitted; /* compiled faster than NEO_CACHE_REMOTE_MIN_COMPILE_MS */
    uint64_t pack_hits, pack_rejected;
} zc_cache_stats;

typedef struct zc_cache zc_cache;

/* Opens the memory tier (config->memory_size bytes), when
 * config->persistent the disk tier at config->dir, and the remote storages
 * of config->remote (remote.h). A disk tier that cannot be opened leaves a
 * memory-only cache (logged), not an error; so do unusable remotes.
 * ZC_ERR_NOMEM is the only failure. */
zc_status zc_cache_open(const zc_config *config, zc_cache **out);
void zc_cache_close(zc_cache *cache); /* NULL is accepted */

/* The disk tier's directory, or NULL when the cache is memory-only. */
const char *zc_cache_disk_dir(const zc_cache *cache);

/* Produces the artifact for the key being looked up. On ZC_OK *out holds one
 * reference, which the cache takes over. ZC_NOT_CACHEABLE: the compile worked
 * but its result does not belong under this key (the caller keeps it); it is
 * returned unchanged, never stored, and not counted as a failed build. Any
 * other status is a failed compile: returned unchanged, never stored. */
typedef zc_status (*zc_compile_fn)(void *context, zc_artifact **out);

typedef enum zc_lookup_outcome {
    ZC_LOOKUP_MEMORY_HIT, /* in memory, or built by another thread this one waited for */
    ZC_LOOKUP_DISK_HIT,
    ZC_LOOKUP_REMOTE_HIT, /* from a remote storage (then copied to disk and memory) */
    ZC_LOOKUP_COMPILED,   /* compile ran in this call (successfully or not) */
} zc_lookup_outcome;

/* Returns key's artifact: from memory, else from disk, else from the remote
 * storages in order, else from compile(context), whose result is stored on
 * disk (with trace beside it when trace is not NULL) and in every writable
 * remote, and kept in memory. A result whose compile_ns is below
 * config->remote_min_compile_ms is not admitted to the remotes: it stays in
 * memory and on disk, counted as remote_not_admitted, a bad value seen in a
 * remote for its key is removed, and a cross-node build lock held for it is
 * released as "nothing stored", so other nodes waiting on it compile at once. Threads asking for
 * the same key at once share one disk load or compile. Counts the outcome and logs one line per
 * lookup under PrintDebugMessages. outcome may be NULL. */
zc_status zc_cache_get_or_compile(zc_cache *cache, const zc_key *key, const char *trace,
                                  zc_compile_fn compile, void *context, zc_artifact **out,
                                  zc_lookup_outcome *outcome);

/* Starts loading, in a background thread, the entries that the last run of
 * program (any text naming it: the layer gives the executable and its first
 * argument) used, in the order it first used them, so that lookups reaching
 * the disk find them loaded (and verified) already; and starts noting this
 * run's keys for zc_cache_prefetch_save. A prefetched entry counts as a disk
 * hit when it is asked for, and not at all otherwise. At most once per
 * cache: ZC_ERR_DISABLED when it ran already, with no disk tier, or with
 * NEO_CACHE_PREFETCH=0. */
zc_status zc_cache_prefetch_start(zc_cache *cache, const char *program);

/* Waits until the prefetch has loaded what it will (for tests and
 * benchmarks: lookups never need to). */
void zc_cache_prefetch_wait(zc_cache *cache);

/* Saves the keys this process used as its program's list for the next run
 * (only when they changed). For the end of the process. */
void zc_cache_prefetch_save(zc_cache *cache);

/* Does now, on the calling thread, the set-up its first disk hit would pay
 * for (the thread's decompression context), so that an application can have
 * it done before it times anything; nothing when the prefetch decodes the
 * program's entries instead (its thread has read a list). Never fails: the
 * hit path does whatever is left undone. */
void zc_cache_prepare_thread(zc_cache *cache);

/* Replaces key's artifact in every tier, for when the driver refused a cached
 * binary and a fresh compile succeeded. A fresh compile below
 * remote_min_compile_ms is not admitted: the remotes' value is removed
 * instead of replaced. */
zc_status zc_cache_replace(zc_cache *cache, const zc_key *key, zc_artifact *artifact,
                           const char *trace);

/* For a build that needs several keys at once (an OpenCL build for several
 * devices): look every key up first, then either count them all as hits or
 * have the driver build and store what was missing. */

/* key's artifact from memory, the packs, disk or the remotes, as
 * zc_cache_get_or_compile finds it, but with no compile behind them:
 * ZC_MISS when none holds it. Counts and logs nothing (zc_cache_count_hit,
 * zc_cache_store do). */
zc_status zc_cache_lookup(zc_cache *cache, const zc_key *key, zc_artifact **out,
                          zc_lookup_outcome *outcome);

/* Counts and logs a hit zc_cache_lookup found (outcome as it gave it), as
 * zc_cache_get_or_compile counts its own. */
void zc_cache_count_hit(zc_cache *cache, const zc_key *key, zc_lookup_outcome outcome,
                        const zc_artifact *artifact);

/* Counts a miss the caller compiled (its compile time spent) and keeps
 * artifact under key in memory, on disk (trace beside it when not NULL) and
 * in every writable remote that admits it, as zc_cache_get_or_compile stores
 * a compile; an entry in place on disk is kept. */
zc_status zc_cache_store(zc_cache *cache, const zc_key *key, zc_artifact *artifact,
                         const char *trace);

/* Keeps what builds key's entry again (recipe.h) beside it on disk: each
 * input's SPIR-V (spirv[i], recipe->inputs[i].spirv_size bytes) once per
 * content, its SHA-256 written into the recipe. For after a compile
 * succeeded and was stored; ZC_MISS when the entry is not on disk (then
 * nothing is kept), ZC_EXISTS when its inputs are there already,
 * ZC_ERR_DISABLED without a disk tier. Never affects the module. */
struct zc_recipe;
zc_status zc_cache_record_inputs(zc_cache *cache, const zc_key *key, struct zc_recipe *recipe,
                                 const void *const *spirv);

/* Takes back the count of a lookup's hit (outcome as zc_cache_get_or_compile
 * gave it, artifact what it returned) and the compile time it claimed saved:
 * for when the driver refused the binary. Nothing for ZC_LOOKUP_COMPILED. */
void zc_cache_uncount_hit(zc_cache *cache, zc_lookup_outcome outcome, const zc_artifact *artifact);

/* Counts a compile the caller ran for the cache (one that replaces a refused
 * hit) as a lookup's own: a miss, failed unless status is ZC_OK or
 * ZC_NOT_CACHEABLE, its compile time spent when fresh is not NULL. */
void zc_cache_count_miss(zc_cache *cache, zc_status status, const zc_artifact *fresh);

/* Counts a module that bypassed the cache and logs the reason (detail may be
 * NULL) under PrintDebugMessages. cache may be NULL (nothing is counted). */
void zc_cache_count_bypass(zc_cache *cache, zc_bypass_reason reason, const char *detail);

/* The live counters, e.g. for a tool that persists them. */
zc_cache_counters *zc_cache_counters_of(zc_cache *cache);
void zc_cache_get_stats(zc_cache *cache, zc_cache_stats *stats);

/* Adds what the counters gained since the last merge to the stats file of
 * the disk tier (zecache/stats.h). Called after every disk store, and by the
 * layer at exit; a merge that fails keeps its delta for the next one. */
zc_status zc_cache_merge_stats(zc_cache *cache);

/* For a forked child: zeroes the counters and forgets the parent's merges,
 * so the child adds only what it does itself. */
void zc_cache_reset_counters(zc_cache *cache);

#endif
