/* The cache as the tests drive it: a lookup whose artifact must be exactly
 * the one expected, and the counters. Header-only, as the other support
 * headers. */
#ifndef ZC_CACHE_TEST_SUPPORT_H
#define ZC_CACHE_TEST_SUPPORT_H

#include <criterion/criterion.h>

#include "disk_test_support.h"
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

static inline zc_cache_stats t_cache_stats(zc_cache *cache)
{
    zc_cache_stats stats;
    zc_cache_get_stats(cache, &stats);
    return stats;
}

#endif
