#include <criterion/criterion.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../source/memory/memory_tier_internal.h"

/* Distinct keys whose first 8 bytes (the hash) differ too. */
static zc_key key_of(uint32_t n)
{
    zc_key key = {0};
    for (size_t i = 0; i < ZC_KEY_SIZE; i++)
        key.bytes[i] = (uint8_t)(i * 13);
    memcpy(key.bytes, &n, sizeof(n));
    memcpy(key.bytes + ZC_KEY_SIZE - sizeof(n), &n, sizeof(n));
    return key;
}

/* An artifact whose binary is `size` copies of the byte `fill`. */
static zc_artifact *artifact_of(size_t size, uint8_t fill)
{
    uint8_t bytes[1024];
    cr_assert_leq(size, sizeof(bytes));
    memset(bytes, fill, size);
    zc_artifact *artifact = zc_artifact_create(bytes, size, "log", 3, NULL);
    cr_assert_not_null(artifact);
    return artifact;
}

static size_t footprint_of_size(size_t size)
{
    zc_artifact *artifact = artifact_of(size, 0);
    size_t footprint = zc_artifact_footprint(artifact);
    zc_artifact_unref(artifact);
    return footprint;
}

static zc_memory_tier *tier_with_budget(size_t budget)
{
    zc_memory_tier *tier = NULL;
    cr_assert_eq(zc_memory_tier_create(budget, &tier), ZC_OK);
    cr_assert_not_null(tier);
    return tier;
}

static zc_memory_tier_stats stats_of(zc_memory_tier *tier)
{
    zc_memory_tier_stats stats;
    zc_memory_tier_get_stats(tier, &stats);
    return stats;
}

/* Puts and drops the caller's reference: the tier keeps its own. */
static void put_new(zc_memory_tier *tier, uint32_t key_number, size_t size, uint8_t fill)
{
    zc_key key = key_of(key_number);
    zc_artifact *artifact = artifact_of(size, fill);
    cr_assert_eq(zc_memory_tier_put(tier, &key, artifact), ZC_OK);
    zc_artifact_unref(artifact);
}

static bool is_present(zc_memory_tier *tier, uint32_t key_number)
{
    zc_key key = key_of(key_number);
    zc_artifact *artifact = NULL;
    zc_status status = zc_memory_tier_get(tier, &key, &artifact);
    cr_assert(status == ZC_OK || status == ZC_MISS);
    cr_assert_eq(artifact != NULL, status == ZC_OK);
    zc_artifact_unref(artifact);
    return status == ZC_OK;
}

Test(memory_tier, rejects_null_arguments)
{
    cr_assert_eq(zc_memory_tier_create(10, NULL), ZC_ERR_INVALID_ARG);
    zc_memory_tier *tier = tier_with_budget(10);
    zc_key key = key_of(1);
    zc_artifact *artifact = NULL;
    cr_assert_eq(zc_memory_tier_get(tier, NULL, &artifact), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_memory_tier_get(tier, &key, NULL), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_memory_tier_put(tier, &key, NULL), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_memory_tier_get_or_build(tier, &key, NULL, NULL, &artifact, NULL),
                 ZC_ERR_INVALID_ARG);
    zc_memory_tier_destroy(tier);
    zc_memory_tier_destroy(NULL);
}

Test(memory_tier, put_then_get_returns_the_same_artifact)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    zc_key key = key_of(7);
    zc_artifact *artifact = artifact_of(100, 0xab);
    cr_assert_eq(zc_memory_tier_put(tier, &key, artifact), ZC_OK);

    zc_artifact *found = NULL;
    cr_assert_eq(zc_memory_tier_get(tier, &key, &found), ZC_OK);
    cr_assert_eq(found, artifact);
    size_t size = 0;
    const uint8_t *bytes = zc_artifact_binary(found, &size);
    cr_assert_eq(size, 100);
    for (size_t i = 0; i < size; i++)
        cr_assert_eq(bytes[i], 0xab);

    zc_memory_tier_stats stats = stats_of(tier);
    cr_assert_eq(stats.entries, 1);
    cr_assert_eq(stats.bytes, zc_artifact_footprint(artifact));
    cr_assert_eq(stats.budget, 1 << 20);
    cr_assert_eq(stats.evictions, 0);
    zc_artifact_unref(found);
    zc_artifact_unref(artifact);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, absent_key_is_a_miss)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    put_new(tier, 1, 10, 1);
    zc_key absent = key_of(2);
    zc_artifact *found = artifact_of(1, 0); /* must be overwritten with NULL */
    zc_artifact *sentinel = found;
    cr_assert_eq(zc_memory_tier_get(tier, &absent, &found), ZC_MISS);
    cr_assert_null(found);
    zc_artifact_unref(sentinel);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, keys_sharing_the_hash_prefix_stay_distinct)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    zc_key first = key_of(5);
    zc_key second = first;
    second.bytes[ZC_KEY_SIZE - 1] ^= 0x80;
    zc_artifact *a = artifact_of(10, 1);
    zc_artifact *b = artifact_of(10, 2);
    cr_assert_eq(zc_memory_tier_put(tier, &first, a), ZC_OK);
    cr_assert_eq(zc_memory_tier_put(tier, &second, b), ZC_OK);
    zc_artifact *found = NULL;
    cr_assert_eq(zc_memory_tier_get(tier, &first, &found), ZC_OK);
    cr_assert_eq(found, a);
    zc_artifact_unref(found);
    cr_assert_eq(zc_memory_tier_get(tier, &second, &found), ZC_OK);
    cr_assert_eq(found, b);
    zc_artifact_unref(found);
    cr_assert_eq(stats_of(tier).entries, 2);
    zc_artifact_unref(a);
    zc_artifact_unref(b);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, eviction_removes_the_least_recently_used)
{
    size_t footprint = footprint_of_size(50);
    zc_memory_tier *tier = tier_with_budget(3 * footprint);
    put_new(tier, 1, 50, 1);
    put_new(tier, 2, 50, 2);
    put_new(tier, 3, 50, 3);
    cr_assert(is_present(tier, 1)); /* 1 is now newer than 2 and 3 */
    put_new(tier, 4, 50, 4);        /* evicts 2 */
    zc_memory_tier_stats stats = stats_of(tier);
    cr_assert_eq(stats.entries, 3);
    cr_assert_eq(stats.bytes, 3 * footprint);
    cr_assert_eq(stats.evictions, 1);
    cr_assert_not(is_present(tier, 2));
    /* Recency is now 3, 4, 1 (oldest first), from the lookups above. */
    cr_assert(is_present(tier, 3));
    cr_assert(is_present(tier, 4));
    cr_assert(is_present(tier, 1));
    put_new(tier, 5, 50, 5); /* evicts 3 */
    cr_assert_not(is_present(tier, 3));
    cr_assert(is_present(tier, 4));
    cr_assert(is_present(tier, 1));
    cr_assert(is_present(tier, 5));
    cr_assert_eq(stats_of(tier).evictions, 2);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, one_big_entry_evicts_several_small_ones)
{
    size_t small = footprint_of_size(10);
    size_t big = footprint_of_size(10 + 2 * small);
    zc_memory_tier *tier = tier_with_budget(big + small - 1); /* big and no small one */
    put_new(tier, 1, 10, 1);
    put_new(tier, 2, 10, 2);
    put_new(tier, 3, 10, 3);
    put_new(tier, 4, 10 + 2 * small, 4); /* needs room of three small ones */
    zc_memory_tier_stats stats = stats_of(tier);
    cr_assert_eq(stats.entries, 1);
    cr_assert_eq(stats.bytes, big);
    cr_assert_eq(stats.evictions, 3);
    cr_assert(is_present(tier, 4));
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, artifact_larger_than_the_budget_is_not_kept)
{
    size_t footprint = footprint_of_size(100);
    zc_memory_tier *tier = tier_with_budget(footprint - 1);
    put_new(tier, 1, 99, 1); /* exactly the budget: kept */
    cr_assert(is_present(tier, 1));
    zc_key key = key_of(2);
    zc_artifact *big = artifact_of(100, 2);
    cr_assert_eq(zc_memory_tier_put(tier, &key, big), ZC_ERR_TOO_LARGE);
    cr_assert_not(is_present(tier, 2));
    cr_assert(is_present(tier, 1)); /* nothing was evicted for it */
    zc_memory_tier_stats stats = stats_of(tier);
    cr_assert_eq(stats.entries, 1);
    cr_assert_eq(stats.bytes, footprint - 1);
    cr_assert_eq(stats.evictions, 0);
    zc_artifact_unref(big);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, oversized_replacement_retires_the_old_value)
{
    size_t footprint = footprint_of_size(100);
    zc_memory_tier *tier = tier_with_budget(footprint - 1);
    put_new(tier, 1, 10, 1);
    zc_key key = key_of(1);
    zc_artifact *big = artifact_of(100, 2);
    cr_assert_eq(zc_memory_tier_put(tier, &key, big), ZC_ERR_TOO_LARGE);
    cr_assert_not(is_present(tier, 1));
    cr_assert_eq(stats_of(tier).entries, 0);
    cr_assert_eq(stats_of(tier).bytes, 0);
    zc_artifact_unref(big);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, budget_zero_keeps_nothing)
{
    zc_memory_tier *tier = tier_with_budget(0);
    zc_key key = key_of(1);
    zc_artifact *artifact = artifact_of(0, 0);
    cr_assert_eq(zc_memory_tier_put(tier, &key, artifact), ZC_ERR_TOO_LARGE);
    cr_assert_not(is_present(tier, 1));
    zc_memory_tier_stats stats = stats_of(tier);
    cr_assert_eq(stats.entries, 0);
    cr_assert_eq(stats.bytes, 0);
    cr_assert_eq(stats.budget, 0);
    zc_artifact_unref(artifact);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, replacing_a_key_swaps_the_artifact_and_the_bytes)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    zc_key key = key_of(9);
    zc_artifact *old_artifact = artifact_of(10, 1);
    zc_artifact *new_artifact = artifact_of(300, 2);
    cr_assert_eq(zc_memory_tier_put(tier, &key, old_artifact), ZC_OK);
    cr_assert_eq(zc_memory_tier_put(tier, &key, new_artifact), ZC_OK);
    zc_artifact *found = NULL;
    cr_assert_eq(zc_memory_tier_get(tier, &key, &found), ZC_OK);
    cr_assert_eq(found, new_artifact);
    zc_memory_tier_stats stats = stats_of(tier);
    cr_assert_eq(stats.entries, 1);
    cr_assert_eq(stats.bytes, zc_artifact_footprint(new_artifact));
    cr_assert_eq(stats.evictions, 0);
    /* The replaced artifact is still ours to read. */
    size_t size = 0;
    cr_assert_eq(zc_artifact_binary(old_artifact, &size)[9], 1);
    zc_artifact_unref(found);
    zc_artifact_unref(old_artifact);
    zc_artifact_unref(new_artifact);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, many_entries_survive_table_growth)
{
    enum { COUNT = 3000 };
    zc_memory_tier *tier = tier_with_budget(SIZE_MAX);
    for (uint32_t i = 0; i < COUNT; i++)
        put_new(tier, i, i % 32, (uint8_t)i);
    cr_assert_eq(stats_of(tier).entries, COUNT);
    for (uint32_t i = 0; i < COUNT; i++) {
        zc_key key = key_of(i);
        zc_artifact *found = NULL;
        cr_assert_eq(zc_memory_tier_get(tier, &key, &found), ZC_OK, "key %u", i);
        size_t size = 0;
        const uint8_t *bytes = zc_artifact_binary(found, &size);
        cr_assert_eq(size, i % 32);
        if (size > 0)
            cr_assert_eq(bytes[0], (uint8_t)i);
        zc_artifact_unref(found);
    }
    zc_memory_tier_destroy(tier);
}

/* A plain LRU list, oldest first, to check the tier against. */
typedef struct lru_model {
    uint32_t keys[64];
    size_t footprints[64];
    size_t count;
    size_t bytes;
    uint64_t evictions;
} lru_model;

static void model_remove_at(lru_model *model, size_t index)
{
    model->bytes -= model->footprints[index];
    memmove(&model->keys[index], &model->keys[index + 1],
            (model->count - index - 1) * sizeof(model->keys[0]));
    memmove(&model->footprints[index], &model->footprints[index + 1],
            (model->count - index - 1) * sizeof(model->footprints[0]));
    model->count--;
}

/* Moves key to the newest end; returns whether it was there. */
static bool model_touch(lru_model *model, uint32_t key)
{
    for (size_t i = 0; i < model->count; i++) {
        if (model->keys[i] == key) {
            size_t footprint = model->footprints[i];
            model_remove_at(model, i);
            model->keys[model->count] = key;
            model->footprints[model->count++] = footprint;
            model->bytes += footprint;
            return true;
        }
    }
    return false;
}

static void model_put(lru_model *model, uint32_t key, size_t footprint, size_t budget)
{
    if (model_touch(model, key))
        model_remove_at(model, model->count - 1);
    model->keys[model->count] = key;
    model->footprints[model->count++] = footprint;
    model->bytes += footprint;
    while (model->bytes > budget) {
        model_remove_at(model, 0);
        model->evictions++;
    }
}

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

Test(memory_tier, accounting_matches_an_lru_model)
{
    const size_t budget = 12 * footprint_of_size(200);
    zc_memory_tier *tier = tier_with_budget(budget);
    lru_model model = {0};
    uint32_t random = 12345;
    for (int step = 0; step < 4000; step++) {
        uint32_t key_number = next_random(&random) % 48;
        if (next_random(&random) % 3 == 0) {
            cr_assert_eq(is_present(tier, key_number), model_touch(&model, key_number),
                         "step %d key %u", step, key_number);
        } else {
            size_t size = 1 + next_random(&random) % 400;
            put_new(tier, key_number, size, (uint8_t)key_number);
            model_put(&model, key_number, footprint_of_size(size), budget);
        }
        zc_memory_tier_stats stats = stats_of(tier);
        cr_assert_eq(stats.entries, model.count, "step %d", step);
        cr_assert_eq(stats.bytes, model.bytes, "step %d", step);
        cr_assert_eq(stats.evictions, model.evictions, "step %d", step);
    }
    cr_assert_gt(model.evictions, 100); /* the run did exercise eviction */
    for (uint32_t key_number = 0; key_number < 48; key_number++) {
        bool in_model = false;
        for (size_t i = 0; i < model.count; i++)
            in_model = in_model || model.keys[i] == key_number;
        cr_assert_eq(is_present(tier, key_number), in_model, "key %u", key_number);
    }
    zc_memory_tier_destroy(tier);
}

/* ---- get_or_build ---- */

/* A build function's plan: it counts its calls, optionally fails the first
 * ones, and before finishing waits until every other thread of the test is
 * queued on the flight, so the outcomes do not depend on timing. */
typedef struct build_plan {
    zc_memory_tier *tier;
    zc_key key;
    uint8_t tag;      /* first binary byte: which key's build made it */
    unsigned threads; /* threads asking for this key */
    unsigned failing; /* this many first calls fail */
    atomic_uint calls;
    atomic_uint *started; /* shared by plans whose builds must overlap */
    unsigned overlapping; /* how many builds must be running at once */
} build_plan;

static void sleep_a_millisecond(void)
{
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
    nanosleep(&pause, NULL);
}

/* A bound so a broken tier fails the test instead of hanging it. */
static bool poll_until(bool (*ready)(build_plan *, unsigned), build_plan *plan, unsigned call)
{
    for (int tries = 0; tries < 60000; tries++) {
        if (ready(plan, call))
            return true;
        sleep_a_millisecond();
    }
    return false;
}

/* Each failed build hands the flight to one waiter, so call n has n fewer
 * (a lone thread retrying after a failure has none). */
static bool others_waiting(build_plan *plan, unsigned call)
{
    size_t expected = plan->threads > call ? plan->threads - call : 0;
    return zc_memory_tier_waiting(plan->tier, &plan->key) == expected;
}

static bool all_overlapping_started(build_plan *plan, unsigned call)
{
    (void)call;
    return atomic_load(plan->started) == plan->overlapping;
}

static zc_status counted_build(void *context, zc_artifact **out)
{
    build_plan *plan = context;
    unsigned call = atomic_fetch_add(&plan->calls, 1) + 1;
    if (plan->started != NULL) {
        atomic_fetch_add(plan->started, 1);
        if (!poll_until(all_overlapping_started, plan, call))
            return ZC_ERR_IO;
    }
    if (!poll_until(others_waiting, plan, call))
        return ZC_ERR_IO;
    if (call <= plan->failing)
        return ZC_ERR_BUILD;
    uint8_t binary[2] = {plan->tag, (uint8_t)call};
    *out = zc_artifact_create(binary, sizeof(binary), NULL, 0, NULL);
    return *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

static build_plan plan_for(zc_memory_tier *tier, uint32_t key_number, unsigned threads)
{
    build_plan plan = {
        .tier = tier, .key = key_of(key_number), .tag = (uint8_t)key_number, .threads = threads};
    atomic_init(&plan.calls, 0);
    return plan;
}

static uint8_t made_by_call(const zc_artifact *artifact)
{
    return zc_artifact_binary(artifact, NULL)[1];
}

Test(memory_tier, get_or_build_builds_a_missing_key_once)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    build_plan plan = plan_for(tier, 3, 1);
    zc_artifact *first = NULL;
    zc_memory_outcome outcome = ZC_MEMORY_HIT;
    cr_assert_eq(
        zc_memory_tier_get_or_build(tier, &plan.key, counted_build, &plan, &first, &outcome),
        ZC_OK);
    cr_assert_eq(outcome, ZC_MEMORY_BUILT);
    zc_artifact *second = NULL;
    cr_assert_eq(
        zc_memory_tier_get_or_build(tier, &plan.key, counted_build, &plan, &second, &outcome),
        ZC_OK);
    cr_assert_eq(outcome, ZC_MEMORY_HIT);
    cr_assert_eq(second, first);
    cr_assert_eq(atomic_load(&plan.calls), 1);
    cr_assert_eq(stats_of(tier).entries, 1);
    cr_assert_eq(zc_memory_tier_waiting(tier, &plan.key), 0);
    zc_artifact_unref(first);
    zc_artifact_unref(second);
    zc_memory_tier_destroy(tier);
}

/* A build that asks for its own key from inside (a driver's callback
 * building the same source) builds it apart: waiting would be forever. */
static zc_status nested_build(void *context, zc_artifact **out)
{
    build_plan *plan = context;
    unsigned call = atomic_fetch_add(&plan->calls, 1) + 1;
    if (call == 1) {
        zc_artifact *inner = NULL;
        zc_memory_outcome outcome = ZC_MEMORY_HIT;
        zc_status status = zc_memory_tier_get_or_build(plan->tier, &plan->key, nested_build, plan,
                                                       &inner, &outcome);
        if (status != ZC_OK || outcome != ZC_MEMORY_BUILT || made_by_call(inner) != 2)
            status = ZC_ERR_IO;
        zc_artifact_unref(inner);
        if (status != ZC_OK)
            return status;
    }
    uint8_t binary[2] = {plan->tag, (uint8_t)call};
    *out = zc_artifact_create(binary, sizeof(binary), NULL, 0, NULL);
    return *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

Test(memory_tier, get_or_build_inside_its_own_build_builds_apart, .timeout = 30)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    build_plan plan = plan_for(tier, 5, 1);
    zc_artifact *outer = NULL;
    zc_memory_outcome outcome = ZC_MEMORY_HIT;
    cr_assert_eq(
        zc_memory_tier_get_or_build(tier, &plan.key, nested_build, &plan, &outer, &outcome), ZC_OK);
    cr_assert_eq(outcome, ZC_MEMORY_BUILT);
    cr_assert_eq(made_by_call(outer), 1);
    cr_assert_eq(atomic_load(&plan.calls), 2);
    cr_assert_eq(stats_of(tier).entries, 1);
    cr_assert_eq(zc_memory_tier_waiting(tier, &plan.key), 0);
    zc_artifact_unref(outer);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, get_or_build_returns_a_put_artifact_without_building)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    build_plan plan = plan_for(tier, 3, 1);
    zc_artifact *artifact = artifact_of(5, 5);
    cr_assert_eq(zc_memory_tier_put(tier, &plan.key, artifact), ZC_OK);
    zc_artifact *found = NULL;
    cr_assert_eq(zc_memory_tier_get_or_build(tier, &plan.key, counted_build, &plan, &found, NULL),
                 ZC_OK);
    cr_assert_eq(found, artifact);
    cr_assert_eq(atomic_load(&plan.calls), 0);
    zc_artifact_unref(found);
    zc_artifact_unref(artifact);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, failed_build_is_returned_and_not_cached)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    build_plan plan = plan_for(tier, 3, 1);
    plan.failing = 1;
    zc_artifact *artifact = NULL;
    zc_memory_outcome outcome = ZC_MEMORY_HIT;
    cr_assert_eq(
        zc_memory_tier_get_or_build(tier, &plan.key, counted_build, &plan, &artifact, &outcome),
        ZC_ERR_BUILD);
    cr_assert_null(artifact);
    cr_assert_eq(outcome, ZC_MEMORY_BUILT);
    cr_assert_eq(stats_of(tier).entries, 0);
    cr_assert_eq(
        zc_memory_tier_get_or_build(tier, &plan.key, counted_build, &plan, &artifact, &outcome),
        ZC_OK);
    cr_assert_eq(outcome, ZC_MEMORY_BUILT);
    cr_assert_eq(made_by_call(artifact), 2);
    cr_assert_eq(atomic_load(&plan.calls), 2);
    zc_artifact_unref(artifact);
    zc_memory_tier_destroy(tier);
}

static zc_status build_without_result(void *context, zc_artifact **out)
{
    (void)context;
    (void)out;
    return ZC_OK;
}

Test(memory_tier, build_claiming_success_without_an_artifact_is_a_failure)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    zc_key key = key_of(1);
    zc_artifact *artifact = NULL;
    cr_assert_eq(
        zc_memory_tier_get_or_build(tier, &key, build_without_result, NULL, &artifact, NULL),
        ZC_ERR_BUILD);
    cr_assert_null(artifact);
    zc_memory_tier_destroy(tier);
}

enum { THREADS = 16 };

typedef struct worker {
    build_plan *plan;
    pthread_barrier_t *start;
    zc_status status;
    zc_artifact *artifact;
    zc_memory_outcome outcome;
} worker;

static void *ask_for_key(void *argument)
{
    worker *self = argument;
    pthread_barrier_wait(self->start);
    self->status = zc_memory_tier_get_or_build(self->plan->tier, &self->plan->key, counted_build,
                                               self->plan, &self->artifact, &self->outcome);
    return NULL;
}

/* Runs THREADS workers, worker i asking with plans[i % plan_count]. */
static void run_workers(worker workers[THREADS], build_plan *plans, size_t plan_count)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    pthread_t threads[THREADS];
    for (size_t i = 0; i < THREADS; i++) {
        workers[i] = (worker){.plan = &plans[i % plan_count], .start = &start};
        cr_assert_eq(pthread_create(&threads[i], NULL, ask_for_key, &workers[i]), 0);
    }
    for (size_t i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
}

typedef struct tally {
    unsigned built, waited, hit, failed;
    zc_artifact *shared; /* the artifact every successful worker got */
    bool all_same;
} tally;

static tally tally_of(worker *workers, size_t count, size_t stride)
{
    tally result = {.all_same = true};
    for (size_t i = 0; i < count; i += stride) {
        if (workers[i].status != ZC_OK) {
            cr_assert_eq(workers[i].status, ZC_ERR_BUILD);
            cr_assert_eq(workers[i].outcome, ZC_MEMORY_BUILT);
            cr_assert_null(workers[i].artifact);
            result.failed++;
            continue;
        }
        result.built += workers[i].outcome == ZC_MEMORY_BUILT;
        result.waited += workers[i].outcome == ZC_MEMORY_WAITED;
        result.hit += workers[i].outcome == ZC_MEMORY_HIT;
        if (result.shared == NULL)
            result.shared = workers[i].artifact;
        result.all_same = result.all_same && workers[i].artifact == result.shared;
    }
    return result;
}

static void unref_all(worker *workers)
{
    for (size_t i = 0; i < THREADS; i++)
        zc_artifact_unref(workers[i].artifact);
}

static void check_single_flight(size_t budget)
{
    zc_memory_tier *tier = tier_with_budget(budget);
    build_plan plan = plan_for(tier, 11, THREADS);
    worker workers[THREADS];
    run_workers(workers, &plan, 1);
    cr_assert_eq(atomic_load(&plan.calls), 1);
    tally result = tally_of(workers, THREADS, 1);
    cr_assert_eq(result.failed, 0);
    cr_assert_eq(result.built, 1);
    cr_assert_eq(result.waited, THREADS - 1);
    cr_assert_eq(result.hit, 0);
    cr_assert(result.all_same);
    cr_assert_eq(made_by_call(result.shared), 1);
    cr_assert_eq(stats_of(tier).entries, budget == 0 ? 0 : 1);
    cr_assert_eq(zc_memory_tier_waiting(tier, &plan.key), 0);
    unref_all(workers);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, single_flight_builds_once_for_16_threads)
{
    check_single_flight(1 << 20);
}

Test(memory_tier, single_flight_works_with_budget_zero)
{
    check_single_flight(0);
}

Test(memory_tier, failed_flight_is_rebuilt_by_exactly_one_waiter)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    build_plan plan = plan_for(tier, 12, THREADS);
    plan.failing = 1;
    worker workers[THREADS];
    run_workers(workers, &plan, 1);
    cr_assert_eq(atomic_load(&plan.calls), 2);
    tally result = tally_of(workers, THREADS, 1);
    cr_assert_eq(result.failed, 1);
    cr_assert_eq(result.built, 1);
    cr_assert_eq(result.waited, THREADS - 2);
    cr_assert_eq(result.hit, 0);
    cr_assert(result.all_same);
    cr_assert_eq(made_by_call(result.shared), 2);
    cr_assert_eq(stats_of(tier).entries, 1);
    unref_all(workers);
    zc_memory_tier_destroy(tier);
}

Test(memory_tier, different_keys_build_concurrently_once_each)
{
    enum { KEYS = 4 };
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    atomic_uint started;
    atomic_init(&started, 0);
    build_plan plans[KEYS];
    for (uint32_t k = 0; k < KEYS; k++) {
        plans[k] = plan_for(tier, 20 + k, THREADS / KEYS);
        /* Every build waits for all KEYS builds to run: a tier that
         * serialised builds of different keys would fail here. */
        plans[k].started = &started;
        plans[k].overlapping = KEYS;
    }
    worker workers[THREADS];
    run_workers(workers, plans, KEYS);
    for (size_t k = 0; k < KEYS; k++) {
        cr_assert_eq(atomic_load(&plans[k].calls), 1, "key %zu", k);
        tally result = tally_of(workers + k, THREADS - k, KEYS);
        cr_assert_eq(result.failed, 0);
        cr_assert_eq(result.built, 1);
        cr_assert_eq(result.waited, THREADS / KEYS - 1);
        cr_assert(result.all_same);
        cr_assert_eq(zc_artifact_binary(result.shared, NULL)[0], plans[k].tag);
    }
    cr_assert_eq(stats_of(tier).entries, KEYS);
    unref_all(workers);
    zc_memory_tier_destroy(tier);
}

/* ---- everything at once, for the sanitizers ---- */

typedef struct mixer {
    zc_memory_tier *tier;
    uint32_t seed;
    unsigned wrong; /* artifacts whose bytes did not match their key */
} mixer;

static zc_status build_for_tag(void *context, zc_artifact **out)
{
    uint8_t tag = *(const uint8_t *)context;
    uint8_t binary[64];
    memset(binary, tag, sizeof(binary));
    *out = zc_artifact_create(binary, sizeof(binary), NULL, 0, NULL);
    return *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
}

static void check_tag(mixer *self, const zc_artifact *artifact, uint8_t tag)
{
    size_t size = 0;
    const uint8_t *bytes = zc_artifact_binary(artifact, &size);
    if (size != 64 || bytes[0] != tag || bytes[63] != tag)
        self->wrong++;
}

static void *mix_operations(void *argument)
{
    mixer *self = argument;
    for (int step = 0; step < 3000; step++) {
        uint8_t tag = (uint8_t)(next_random(&self->seed) % 32);
        zc_key key = key_of(tag);
        zc_artifact *artifact = NULL;
        switch (next_random(&self->seed) % 3) {
        case 0:
            if (zc_memory_tier_get_or_build(self->tier, &key, build_for_tag, &tag, &artifact,
                                            NULL) != ZC_OK)
                self->wrong++;
            break;
        case 1:
            if (zc_memory_tier_get(self->tier, &key, &artifact) == ZC_ERR_INVALID_ARG)
                self->wrong++;
            break;
        default:
            if (build_for_tag(&tag, &artifact) != ZC_OK ||
                zc_memory_tier_put(self->tier, &key, artifact) != ZC_OK)
                self->wrong++;
        }
        if (artifact != NULL)
            check_tag(self, artifact, tag);
        zc_artifact_unref(artifact);
    }
    return NULL;
}

Test(memory_tier, concurrent_mixed_operations_keep_the_accounting)
{
    enum { MIXERS = 4 };
    uint8_t tag = 0;
    zc_artifact *probe = NULL;
    cr_assert_eq(build_for_tag(&tag, &probe), ZC_OK);
    size_t footprint = zc_artifact_footprint(probe);
    zc_artifact_unref(probe);

    zc_memory_tier *tier = tier_with_budget(8 * footprint);
    mixer mixers[MIXERS];
    pthread_t threads[MIXERS];
    for (uint32_t i = 0; i < MIXERS; i++) {
        mixers[i] = (mixer){.tier = tier, .seed = 77 + i};
        cr_assert_eq(pthread_create(&threads[i], NULL, mix_operations, &mixers[i]), 0);
    }
    for (size_t i = 0; i < MIXERS; i++) {
        pthread_join(threads[i], NULL);
        cr_assert_eq(mixers[i].wrong, 0, "mixer %zu", i);
    }
    zc_memory_tier_stats stats = stats_of(tier);
    cr_assert_eq(stats.entries, 8);
    cr_assert_eq(stats.bytes, 8 * footprint);
    cr_assert_gt(stats.evictions, 0);
    zc_memory_tier_destroy(tier);
}

/* ---- fork() while a build is in flight ---- */

typedef struct held_build {
    int started[2], release[2]; /* pipes: the build says it started, then waits */
} held_build;

static zc_status build_held_open(void *context, zc_artifact **out)
{
    held_build *held = context;
    char byte = 1;
    cr_assert_eq(write(held->started[1], &byte, 1), 1);
    cr_assert_eq(read(held->release[0], &byte, 1), 1);
    *out = artifact_of(64, 1);
    return ZC_OK;
}

static zc_status build_at_once(void *context, zc_artifact **out)
{
    (void)context;
    *out = artifact_of(64, 2);
    return ZC_OK;
}

typedef struct build_thread {
    zc_memory_tier *tier;
    held_build *held;
} build_thread;

static void *run_held_build(void *context)
{
    build_thread *thread = context;
    zc_key key = key_of(900);
    zc_artifact *artifact = NULL;
    cr_assert_eq(zc_memory_tier_get_or_build(thread->tier, &key, build_held_open, thread->held,
                                             &artifact, NULL),
                 ZC_OK);
    zc_artifact_unref(artifact);
    return NULL;
}

/* A thread building key 900, held open until finish_held_build. */
static pthread_t start_held_build(build_thread *thread)
{
    cr_assert_eq(pipe(thread->held->started), 0);
    cr_assert_eq(pipe(thread->held->release), 0);
    pthread_t builder;
    cr_assert_eq(pthread_create(&builder, NULL, run_held_build, thread), 0);
    char byte;
    cr_assert_eq(read(thread->held->started[0], &byte, 1), 1);
    return builder;
}

/* Lets the held build finish, which still lands. */
static void finish_held_build(build_thread *thread, pthread_t builder)
{
    char byte = 1;
    cr_assert_eq(write(thread->held->release[1], &byte, 1), 1);
    pthread_join(builder, NULL);
    cr_assert(is_present(thread->tier, 900), "the held build lands");
    for (int i = 0; i < 2; i++) {
        close(thread->held->started[i]);
        close(thread->held->release[i]);
    }
}

/* A thread waits for another's build until the tier's deadline, then
 * builds the key apart; the held build still lands. */
Test(memory_tier, a_wait_past_its_deadline_builds_apart, .timeout = 30)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    zc_memory_tier_set_wait_timeout(tier, 50);
    held_build held;
    build_thread thread = {tier, &held};
    pthread_t builder = start_held_build(&thread);

    zc_key key = key_of(900);
    zc_artifact *artifact = NULL;
    zc_memory_outcome outcome = ZC_MEMORY_HIT;
    cr_assert_eq(zc_memory_tier_get_or_build(tier, &key, build_at_once, NULL, &artifact, &outcome),
                 ZC_OK);
    cr_assert_eq(outcome, ZC_MEMORY_BUILT);
    cr_assert_eq(zc_artifact_binary(artifact, NULL)[0], 2, "built apart, not the held build's");
    zc_artifact_unref(artifact);

    finish_held_build(&thread, builder);
    zc_memory_tier_destroy(tier);
}

/* The child has no thread to finish the parent's build: it builds the key
 * itself instead of waiting for ever (SIGALRM ends a child that waits). */
Test(memory_tier, a_forked_child_does_not_wait_for_the_parents_build)
{
    zc_memory_tier *tier = tier_with_budget(1 << 20);
    held_build held;
    build_thread thread = {tier, &held};
    pthread_t builder = start_held_build(&thread);

    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        alarm(5);
        zc_key key = key_of(900);
        zc_artifact *artifact = NULL;
        zc_memory_outcome outcome;
        zc_status status =
            zc_memory_tier_get_or_build(tier, &key, build_at_once, NULL, &artifact, &outcome);
        _exit(status == ZC_OK && outcome == ZC_MEMORY_BUILT ? 0 : 4);
    }
    int wstatus;
    cr_assert_eq(waitpid(child, &wstatus, 0), child);
    cr_assert(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0, "child status 0x%x", wstatus);

    finish_held_build(&thread, builder);
    zc_memory_tier_destroy(tier);
}
