/* Configuration from the environment, with the semantics of Intel's driver
 * cache (NEO_CACHE_*) plus zecache's own NEO_CACHE_* extensions. */
#ifndef ZECACHE_CONFIG_H
#define ZECACHE_CONFIG_H

#include <limits.h>
#include <linux/limits.h> /* PATH_MAX without _GNU_SOURCE */
#include <stdbool.h>
#include <stdint.h>

#include "zecache/status.h"

#define ZC_DEFAULT_MAX_SIZE (UINT64_C(1) << 30)
#define ZC_DEFAULT_MEMORY_SIZE (UINT64_C(256) << 20)
#define ZC_DEFAULT_COMPRESSION_LEVEL 3
#define ZC_DEFAULT_WAIT_TIMEOUT_MS 30000
#define ZC_MAX_WAIT_TIMEOUT_MS (UINT64_C(24) * 3600 * 1000)
#define ZC_REMOTE_TEXT_MAX 4096
#define ZC_DEFAULT_LOCK_TIMEOUT_MS 2000
/* 0: every compiled module is admitted to the remote storages (see
 * remote_min_compile_ms). */
#define ZC_DEFAULT_REMOTE_MIN_COMPILE_MS 0
/* On: recording costs a small fraction of the compile it follows and keeps
 * the SPIR-V once per distinct content, and only inputs recorded before an
 * upgrade can be rebuilt after it (zecache prewarm). */
#define ZC_DEFAULT_RECORD_INPUTS true
/* On: a warm process finds most entries loaded before it asks, and a wrong
 * list costs background reads and memory, never a result. */
#define ZC_DEFAULT_PREFETCH true

typedef enum zc_config_source {
    ZC_SOURCE_DEFAULT = 0,
    ZC_SOURCE_ENV,     /* taken from the environment variable */
    ZC_SOURCE_INVALID, /* the variable was set but invalid: default used */
} zc_config_source;

typedef struct zc_config {
    bool persistent;           /* NEO_CACHE_PERSISTENT, default 1 */
    char dir[PATH_MAX];        /* resolved cache directory; "" when none */
    bool dir_from_env;         /* NEO_CACHE_DIR was given */
    uint64_t max_size;         /* NEO_CACHE_MAX_SIZE bytes, 0 = unlimited */
    uint64_t memory_size;      /* NEO_CACHE_MEMORY_SIZE: memory tier budget, 0 = off */
    int compression_level;     /* NEO_CACHE_COMPRESSION_LEVEL, 1..19 */
    bool print_debug_messages; /* PrintDebugMessages */
    bool binary_cache_trace;   /* BinaryCacheTrace */
    bool allow_shared;         /* NEO_CACHE_SHARED=1: accept a directory that other
                                  users own or that group/others may write */
    uint64_t wait_timeout_ms;  /* NEO_CACHE_WAIT_TIMEOUT_MS: how long a process waits for
                                  another compiling the same key, 0 = not at all */
    zc_config_source wait_timeout_source;
    char remote[ZC_REMOTE_TEXT_MAX];   /* NEO_CACHE_REMOTE as given ("" none); parsed by
                                          remote_spec.h when the cache opens */
    char remote_secret_file[PATH_MAX]; /* NEO_CACHE_REMOTE_SECRET_FILE ("" none) */
    zc_config_source remote_source, remote_secret_file_source;
    char packs[ZC_REMOTE_TEXT_MAX]; /* NEO_CACHE_PACKS: read-only packs, PATH[:PATH...] (pack.h) */
    zc_config_source packs_source;
    uint64_t lock_timeout_ms; /* NEO_CACHE_LOCK_TIMEOUT_MS: how long a store (or removal)
                                 waits for config.file's lock before skipping, 0 = no limit */
    zc_config_source lock_timeout_source;
    uint64_t remote_min_compile_ms; /* NEO_CACHE_REMOTE_MIN_COMPILE_MS: admission to the remote
                                       storages. A module whose measured compile took less is
                                       stored in memory and on the local disk only; 0 = every
                                       module. At most ZC_MAX_WAIT_TIMEOUT_MS. */
    zc_config_source remote_min_compile_source;
    bool record_inputs; /* NEO_CACHE_RECORD_INPUTS: keep what rebuilds each new entry (its
                           SPIR-V, flags, constants, device) beside it, recipe.h */
    zc_config_source record_inputs_source;
    bool prefetch; /* NEO_CACHE_PREFETCH: load the entries a program's last run used, in
                      the background, from zeInit on (cache.h) */
    zc_config_source prefetch_source;
    zc_config_source persistent_source, dir_source, max_size_source, memory_size_source,
        compression_level_source;
} zc_config;

/* Reads the environment. Never fails: invalid values are reported under
 * PrintDebugMessages and replaced by their documented default. Also switches
 * zc_log on or off to match PrintDebugMessages. */
void zc_config_from_env(zc_config *config);

/* Parses a non-negative decimal integer that fits in uint64_t, with optional
 * surrounding white space. Returns false for empty strings, signs, garbage,
 * trailing text and overflow. */
bool zc_config_parse_u64(const char *text, uint64_t *value);

/* Parses the decimal digits at the start of *text and moves *text past them.
 * Returns false, leaving *text alone, when there are none or they overflow
 * uint64_t. The building block of zc_config_parse_u64 and of numbers with a
 * unit suffix (the tool's sizes and durations). */
bool zc_config_parse_digits(const char **text, uint64_t *value);

#endif
