/* The cache's entry points for a build that needs several keys at once: a
 * lookup that never compiles, a hit counted once the caller uses it, and a
 * store of what the caller compiled, which single-key lookups then find. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "cache_test_support.h"

typedef struct scratch_cache {
    char root[64], dir[96];
    zc_cache *cache;
} scratch_cache;

static zc_cache *open_at(const char *dir)
{
    zc_config config = t_disk_config(dir, ZC_DEFAULT_MAX_SIZE, 3);
    config.memory_size = 4 << 20;
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    return cache;
}

static scratch_cache open_scratch(void)
{
    scratch_cache scratch;
    t_make_scratch(scratch.root, sizeof scratch.root, "/tmp/zc-lookup-XXXXXX", scratch.dir,
                   sizeof scratch.dir);
    scratch.cache = open_at(scratch.dir);
    return scratch;
}

static void close_scratch(scratch_cache *scratch)
{
    zc_cache_close(scratch->cache);
    t_remove_tree(scratch->root);
}

/* zc_cache_lookup finds exactly expected, from where; returns it (the
 * caller unrefs it). */
static zc_artifact *assert_found(zc_cache *cache, const zc_key *key, const zc_artifact *expected,
                                 zc_lookup_outcome where)
{
    zc_artifact *found = NULL;
    zc_lookup_outcome outcome;
    cr_assert_eq(zc_cache_lookup(cache, key, &found, &outcome), ZC_OK);
    cr_assert_eq(outcome, where);
    t_assert_same_artifact(found, expected);
    return found;
}

static int compiles;

static zc_status compile_never(void *context, zc_artifact **out)
{
    (void)context;
    (void)out;
    compiles++;
    return ZC_ERR_BUILD;
}

static zc_status compile_copy(void *context, zc_artifact **out)
{
    compiles++;
    *out = zc_artifact_ref(context);
    return ZC_OK;
}

Test(cache_lookup, a_miss_compiles_nothing_counts_nothing_and_keeps_nothing)
{
    scratch_cache scratch = open_scratch();
    zc_key key = t_key(1);
    zc_artifact *artifact = NULL;
    zc_lookup_outcome outcome;
    cr_assert_eq(zc_cache_lookup(scratch.cache, &key, &artifact, &outcome), ZC_MISS);
    cr_assert_null(artifact);
    zc_cache_stats stats = t_cache_stats(scratch.cache);
    cr_assert_eq(stats.misses + stats.memory_hits + stats.disk_hits + stats.stores, 0);
    /* A lookup that compiles afterwards still compiles: nothing was kept. */
    zc_artifact *expected = t_artifact(100, 1);
    compiles = 0;
    cr_assert_eq(t_lookup_expecting(scratch.cache, &key, compile_copy, expected, expected),
                 ZC_LOOKUP_COMPILED);
    cr_assert_eq(compiles, 1);
    zc_artifact_unref(expected);
    close_scratch(&scratch);
}

Test(cache_lookup, a_store_is_found_by_every_kind_of_lookup)
{
    scratch_cache scratch = open_scratch();
    zc_key key = t_key(2);
    zc_artifact *expected = t_artifact(300, 2);
    cr_assert_eq(zc_cache_store(scratch.cache, &key, expected, NULL), ZC_OK);
    zc_cache_stats stats = t_cache_stats(scratch.cache);
    cr_assert_eq(stats.misses, 1);
    cr_assert_eq(stats.stores, 1);
    cr_assert_eq(stats.compile_ns_spent, zc_artifact_meta_of(expected)->compile_ns);

    zc_artifact_unref(assert_found(scratch.cache, &key, expected, ZC_LOOKUP_MEMORY_HIT));
    compiles = 0;
    cr_assert_eq(t_lookup_expecting(scratch.cache, &key, compile_never, NULL, expected),
                 ZC_LOOKUP_MEMORY_HIT);
    cr_assert_eq(compiles, 0);

    /* Another process: from disk, for both kinds of lookup. */
    zc_cache *other = open_at(scratch.dir);
    zc_artifact_unref(assert_found(other, &key, expected, ZC_LOOKUP_DISK_HIT));
    zc_cache_close(other);
    other = open_at(scratch.dir);
    cr_assert_eq(t_lookup_expecting(other, &key, compile_never, NULL, expected),
                 ZC_LOOKUP_DISK_HIT);
    cr_assert_eq(compiles, 0);
    zc_cache_close(other);
    zc_artifact_unref(expected);
    close_scratch(&scratch);
}

Test(cache_lookup, hits_count_only_when_the_caller_counts_them)
{
    scratch_cache scratch = open_scratch();
    zc_key key = t_key(3);
    zc_artifact *expected = t_artifact(200, 3);
    cr_assert_eq(zc_cache_store(scratch.cache, &key, expected, NULL), ZC_OK);
    zc_cache_close(scratch.cache);
    scratch.cache = open_at(scratch.dir);

    zc_artifact *found = assert_found(scratch.cache, &key, expected, ZC_LOOKUP_DISK_HIT);
    zc_cache_stats stats = t_cache_stats(scratch.cache);
    cr_assert_eq(stats.disk_hits + stats.memory_hits + stats.misses, 0);
    zc_cache_count_hit(scratch.cache, &key, ZC_LOOKUP_DISK_HIT, found);
    stats = t_cache_stats(scratch.cache);
    cr_assert_eq(stats.disk_hits, 1);
    cr_assert_eq(stats.memory_hits + stats.misses, 0);
    cr_assert_eq(stats.compile_ns_saved, zc_artifact_meta_of(expected)->compile_ns);
    zc_artifact_unref(found);

    /* Found again in memory: a memory hit once counted. */
    found = assert_found(scratch.cache, &key, expected, ZC_LOOKUP_MEMORY_HIT);
    zc_cache_count_hit(scratch.cache, &key, ZC_LOOKUP_MEMORY_HIT, found);
    cr_assert_eq(t_cache_stats(scratch.cache).memory_hits, 1);
    zc_artifact_unref(found);
    zc_artifact_unref(expected);
    close_scratch(&scratch);
}

Test(cache_lookup, a_store_keeps_an_entry_in_place)
{
    scratch_cache scratch = open_scratch();
    zc_key key = t_key(4);
    zc_artifact *first = t_artifact(120, 4), *second = t_artifact(130, 5);
    cr_assert_eq(zc_cache_store(scratch.cache, &key, first, NULL), ZC_OK);
    zc_cache *other = open_at(scratch.dir);
    cr_assert_eq(zc_cache_store(other, &key, second, NULL), ZC_OK);
    zc_cache_stats stats = t_cache_stats(other);
    cr_assert_eq(stats.stores, 0);
    cr_assert_eq(stats.store_errors, 0);
    zc_cache_close(other);
    other = open_at(scratch.dir);
    zc_artifact_unref(assert_found(other, &key, first, ZC_LOOKUP_DISK_HIT));
    zc_cache_close(other);
    zc_artifact_unref(first);
    zc_artifact_unref(second);
    close_scratch(&scratch);
}

Test(cache_lookup, bad_arguments_are_refused)
{
    zc_key key = t_key(6);
    zc_artifact *found = NULL;
    zc_lookup_outcome outcome;
    cr_assert_eq(zc_cache_lookup(NULL, &key, &found, &outcome), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_cache_store(NULL, &key, NULL, NULL), ZC_ERR_INVALID_ARG);
    zc_cache_count_hit(NULL, &key, ZC_LOOKUP_DISK_HIT, NULL);
}
