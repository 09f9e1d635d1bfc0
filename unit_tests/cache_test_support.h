/* The cache as the tests drive it: a node's cache, a lookup whose artifact
 * must be exactly the one expected, and the counters. Header-only, as the other support
 * headers. */
#ifndef ZC_CACHE_TEST_SUPPORT_H
#define ZC_CACHE_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/cache.h"

/* Looks key up with compile(context) for a miss; the artifact must be
 * byte for byte expected. Returns the outcome. */
static inline zc_lookup_outcome t_lookup_expecting(zc_cache *cache, const zc_key *key,
                                                   zc_compile_fn compile, void *context,
                                                   const zc_artifact *expected)
{
    zc_artifact *artifact = NULL;
    zc_lookup_outcome outcome;
    cr_assert_eq(zc_cache_get_or_compile(cache, key, NULL, compile, context, &artifact, &outcome),
                 ZC_OK);
    t_assert_same_artifact(artifact, expected);
    zc_artifact_unref(artifact);
    return outcome;
}

/* Node index of the tests that simulate nodes: a persistent cache on
 * scratch/node<index>, 4 MiB in memory, with NEO_CACHE_REMOTE=remote and
 * the signing secret given (NULL: none) in a file of its own. */
static inline zc_cache *t_open_node(const char *scratch, int index, const char *remote,
                                    const char *secret, uint64_t wait_timeout_ms)
{
    zc_config config = t_disk_config("", ZC_DEFAULT_MAX_SIZE, 3);
    snprintf(config.dir, sizeof config.dir, "%s/node%d", scratch, index);
    config.memory_size = 4 << 20;
    config.wait_timeout_ms = wait_timeout_ms;
    cr_assert_lt(strlen(remote), sizeof config.remote);
    memcpy(config.remote, remote, strlen(remote) + 1);
    if (secret != NULL) {
        snprintf(config.remote_secret_file, sizeof config.remote_secret_file, "%s/secret-%d",
                 scratch, index);
        t_write_secret(config.remote_secret_file, secret);
    }
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    return cache;
}

static inline zc_cache_stats t_cache_stats(zc_cache *cache)
{
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    return stats;
}

#endif
