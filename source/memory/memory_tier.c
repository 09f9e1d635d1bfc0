/* The memory tier: chained hash buckets indexed by the key's first 8 bytes
 * (keys are SHA-256, so those bytes are already uniform), a doubly linked LRU
 * list through the same entries, and a list of builds in flight. One mutex
 * guards all of it. Nothing slow happens while it is held: builds, table
 * growth allocations and the last unref of artifacts all happen outside it. */
#include "memory_tier_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zecache/live_set.h"
#include "zecache/log.h"

#define INITIAL_BUCKETS 64

typedef struct entry {
    zc_key key;
    zc_artifact *artifact; /* the map's own reference */
    size_t footprint;
    struct entry *bucket_next;
    struct entry *newer; /* toward the most recently used end */
    struct entry *older;
} entry;

/* One build in progress for a key and the threads waiting for it. It has its
 * own condition variable so a finished build wakes only its own waiters. */
typedef struct flight {
    zc_key key;
    struct flight *next;
    pthread_cond_t finished; /* signalled whenever building turns false */
    size_t waiters;
    bool building;
    pthread_t builder; /* the thread building, while building */
    bool done;
    zc_artifact *result; /* a reference held for the waiters once done */
} flight;

struct zc_memory_tier {
    pthread_mutex_t lock;
    size_t budget; /* never changes after creation, so read without the lock */
    bool wait_bounded;
    uint64_t wait_timeout_ms; /* when wait_bounded */
    entry **buckets;
    size_t bucket_count; /* a power of two */
    entry *most_recent;
    entry *least_recent;
    size_t entries;
    size_t bytes;
    uint64_t evictions;
    /* Builds in progress: at most one per thread, so a short list. */
    flight *flights;
    zc_live_link live; /* every tier, for fork(): see below */
};

/* What to release once the lock is dropped. */
typedef struct deferred {
    entry *removed; /* chained through bucket_next */
    zc_artifact *replaced;
} deferred;

static void release_deferred(deferred *later)
{
    while (later->removed != NULL) {
        entry *next = later->removed->bucket_next;
        zc_artifact_unref(later->removed->artifact);
        free(later->removed);
        later->removed = next;
    }
    zc_artifact_unref(later->replaced);
    later->replaced = NULL;
}

static size_t bucket_index(const zc_key *key, size_t bucket_count)
{
    uint64_t prefix;
    memcpy(&prefix, key->bytes, sizeof(prefix));
    return (size_t)prefix & (bucket_count - 1);
}

/* The link that points at key's entry, or the NULL link ending its chain. */
static entry **find_slot(zc_memory_tier *tier, const zc_key *key)
{
    entry **slot = &tier->buckets[bucket_index(key, tier->bucket_count)];
    while (*slot != NULL && !zc_key_equal(&(*slot)->key, key))
        slot = &(*slot)->bucket_next;
    return slot;
}

static void lru_unlink(zc_memory_tier *tier, entry *e)
{
    if (e->newer != NULL)
        e->newer->older = e->older;
    else
        tier->most_recent = e->older;
    if (e->older != NULL)
        e->older->newer = e->newer;
    else
        tier->least_recent = e->newer;
}

static void lru_push_most_recent(zc_memory_tier *tier, entry *e)
{
    e->newer = NULL;
    e->older = tier->most_recent;
    if (tier->most_recent != NULL)
        tier->most_recent->newer = e;
    else
        tier->least_recent = e;
    tier->most_recent = e;
}

static void remove_entry_locked(zc_memory_tier *tier, entry **slot, deferred *later)
{
    entry *e = *slot;
    *slot = e->bucket_next;
    lru_unlink(tier, e);
    tier->entries--;
    tier->bytes -= e->footprint;
    e->bucket_next = later->removed;
    later->removed = e;
}

static void evict_locked(zc_memory_tier *tier, deferred *later)
{
    while (tier->bytes > tier->budget) {
        remove_entry_locked(tier, find_slot(tier, &tier->least_recent->key), later);
        tier->evictions++;
    }
}

/* A new reference to key's artifact, made most recently used, or NULL. */
static zc_artifact *lookup_locked(zc_memory_tier *tier, const zc_key *key)
{
    entry *e = *find_slot(tier, key);
    if (e == NULL)
        return NULL;
    if (tier->most_recent != e) {
        lru_unlink(tier, e);
        lru_push_most_recent(tier, e);
    }
    return zc_artifact_ref(e->artifact);
}

/* Hands the map the reference `artifact`, which must fit the budget. Uses
 * *spare (and clears it) when the key is new. Returns the bucket count the
 * table should grow to, or 0. */
static size_t insert_locked(zc_memory_tier *tier, const zc_key *key, zc_artifact *artifact,
                            entry **spare, deferred *later)
{
    entry **slot = find_slot(tier, key);
    entry *e = *slot;
    if (e != NULL) {
        later->replaced = e->artifact;
        tier->bytes -= e->footprint;
        lru_unlink(tier, e);
    } else {
        e = *spare;
        *spare = NULL;
        e->key = *key;
        e->bucket_next = NULL;
        *slot = e;
        tier->entries++;
    }
    e->artifact = artifact;
    e->footprint = zc_artifact_footprint(artifact);
    tier->bytes += e->footprint;
    lru_push_most_recent(tier, e);
    evict_locked(tier, later);
    return tier->entries > tier->bucket_count ? tier->bucket_count * 2 : 0;
}

/* Doubles the table. The array is allocated before taking the lock; only the
 * pointer moves (amortised O(1) per insert) happen under it. */
static void grow(zc_memory_tier *tier, size_t wanted)
{
    entry **fresh = calloc(wanted, sizeof(*fresh));
    if (fresh == NULL)
        return; /* longer chains, still correct */
    entry **unused = fresh;
    pthread_mutex_lock(&tier->lock);
    if (tier->bucket_count < wanted) {
        for (size_t i = 0; i < tier->bucket_count; i++) {
            while (tier->buckets[i] != NULL) {
                entry *e = tier->buckets[i];
                tier->buckets[i] = e->bucket_next;
                size_t target = bucket_index(&e->key, wanted);
                e->bucket_next = fresh[target];
                fresh[target] = e;
            }
        }
        unused = tier->buckets;
        tier->buckets = fresh;
        tier->bucket_count = wanted;
    }
    pthread_mutex_unlock(&tier->lock);
    free(unused);
}

/* ---- fork() ----
 * A child has only the thread that forked: builds in flight in the parent
 * never finish there (a child asking for such a key would wait for ever), and
 * a lock held by another thread at the fork would never be released. So
 * every tier's lock is taken around fork(), and the child forgets the
 * flights. Their memory is left to whoever holds them: the forking thread
 * may itself be inside a build, whose flight then belongs to no list. */
static void register_fork_handlers(void);
static zc_live_set live_tiers = ZC_LIVE_SET_INIT(register_fork_handlers);

static zc_memory_tier *tier_of(zc_live_link *link)
{
    return ZC_LIVE_OWNER(link, zc_memory_tier, live);
}

static void lock_every_tier(void)
{
    pthread_mutex_lock(&live_tiers.lock);
    for (zc_live_link *link = live_tiers.head; link != NULL; link = link->next)
        pthread_mutex_lock(&tier_of(link)->lock);
}

static void unlock_every_tier(void)
{
    for (zc_live_link *link = live_tiers.head; link != NULL; link = link->next)
        pthread_mutex_unlock(&tier_of(link)->lock);
    pthread_mutex_unlock(&live_tiers.lock);
}

static void forget_flights_in_child(void)
{
    for (zc_live_link *link = live_tiers.head; link != NULL; link = link->next)
        tier_of(link)->flights = NULL;
    unlock_every_tier();
}

static void register_fork_handlers(void)
{
    if (pthread_atfork(lock_every_tier, unlock_every_tier, forget_flights_in_child) != 0)
        zc_log_failure("memory tier: registering fork handlers", ENOMEM);
}

zc_status zc_memory_tier_create(size_t budget_bytes, zc_memory_tier **out)
{
    if (out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    zc_memory_tier *tier = calloc(1, sizeof(*tier));
    if (tier == NULL)
        return ZC_ERR_NOMEM;
    tier->buckets = calloc(INITIAL_BUCKETS, sizeof(*tier->buckets));
    if (tier->buckets == NULL || pthread_mutex_init(&tier->lock, NULL) != 0) {
        free(tier->buckets);
        free(tier);
        return ZC_ERR_NOMEM;
    }
    tier->bucket_count = INITIAL_BUCKETS;
    tier->budget = budget_bytes;
    zc_live_set_add(&live_tiers, &tier->live);
    *out = tier;
    return ZC_OK;
}

void zc_memory_tier_destroy(zc_memory_tier *tier)
{
    if (tier == NULL)
        return;
    zc_live_set_remove(&live_tiers, &tier->live);
    for (entry *e = tier->most_recent; e != NULL;) {
        entry *older = e->older;
        zc_artifact_unref(e->artifact);
        free(e);
        e = older;
    }
    free(tier->buckets);
    pthread_mutex_destroy(&tier->lock);
    free(tier);
}

zc_status zc_memory_tier_get(zc_memory_tier *tier, const zc_key *key, zc_artifact **out)
{
    if (tier == NULL || key == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    pthread_mutex_lock(&tier->lock);
    *out = lookup_locked(tier, key);
    pthread_mutex_unlock(&tier->lock);
    return *out != NULL ? ZC_OK : ZC_MISS;
}

/* A replacement that cannot be kept still retires the value it replaces. */
static void forget(zc_memory_tier *tier, const zc_key *key)
{
    deferred later = {0};
    pthread_mutex_lock(&tier->lock);
    entry **slot = find_slot(tier, key);
    if (*slot != NULL)
        remove_entry_locked(tier, slot, &later);
    pthread_mutex_unlock(&tier->lock);
    release_deferred(&later);
}

zc_status zc_memory_tier_put(zc_memory_tier *tier, const zc_key *key, zc_artifact *artifact)
{
    if (tier == NULL || key == NULL || artifact == NULL)
        return ZC_ERR_INVALID_ARG;
    if (zc_artifact_footprint(artifact) > tier->budget) {
        forget(tier, key);
        return ZC_ERR_TOO_LARGE;
    }
    entry *spare = malloc(sizeof(*spare));
    if (spare == NULL)
        return ZC_ERR_NOMEM;
    deferred later = {0};
    pthread_mutex_lock(&tier->lock);
    size_t wanted = insert_locked(tier, key, zc_artifact_ref(artifact), &spare, &later);
    pthread_mutex_unlock(&tier->lock);
    free(spare);
    release_deferred(&later);
    if (wanted != 0)
        grow(tier, wanted);
    return ZC_OK;
}

static flight *flight_new(void)
{
    flight *f = calloc(1, sizeof(*f));
    pthread_condattr_t monotonic;
    bool ready = f != NULL && pthread_condattr_init(&monotonic) == 0;
    if (ready) {
        ready = pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC) == 0 &&
                pthread_cond_init(&f->finished, &monotonic) == 0;
        pthread_condattr_destroy(&monotonic);
    }
    if (!ready) {
        free(f);
        f = NULL;
    }
    return f;
}

static void flight_free(flight *f)
{
    if (f == NULL)
        return;
    zc_artifact_unref(f->result);
    pthread_cond_destroy(&f->finished);
    free(f);
}

static flight *find_flight_locked(zc_memory_tier *tier, const zc_key *key)
{
    flight *f = tier->flights;
    while (f != NULL && !zc_key_equal(&f->key, key))
        f = f->next;
    return f;
}

/* A flight a forked child forgot is in no list. */
static void unlink_flight_locked(zc_memory_tier *tier, flight *f)
{
    flight **link = &tier->flights;
    while (*link != NULL && *link != f)
        link = &(*link)->next;
    if (*link != NULL)
        *link = f->next;
}

/* Either the artifact (a new reference in *out) or key's flight, started with
 * *spare when there is none. Returns with the lock held, or on allocation
 * failure without it and with NULL. */
static flight *hit_or_join_locked(zc_memory_tier *tier, const zc_key *key, flight **spare,
                                  zc_artifact **out)
{
    for (;;) {
        *out = lookup_locked(tier, key);
        if (*out != NULL)
            return NULL;
        flight *f = find_flight_locked(tier, key);
        if (f != NULL)
            return f;
        if (*spare != NULL) {
            f = *spare;
            *spare = NULL;
            f->key = *key;
            f->next = tier->flights;
            tier->flights = f;
            return f;
        }
        /* No allocation under the lock: make one and look again. */
        pthread_mutex_unlock(&tier->lock);
        *spare = flight_new();
        if (*spare == NULL)
            return NULL;
        pthread_mutex_lock(&tier->lock);
    }
}

typedef enum turn {
    TURN_BUILD,  /* this thread builds for the flight */
    TURN_WAITED, /* another thread built it: *out holds the result */
    TURN_APART,  /* this thread builds apart: the key's build is its own
                    (asked for from inside it, e.g. by a driver callback), or
                    the wait for another thread's passed its deadline */
} turn;

static turn take_turn_locked(flight *f)
{
    f->building = true;
    f->builder = pthread_self();
    return TURN_BUILD;
}

static struct timespec deadline_after(uint64_t milliseconds)
{
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    uint64_t nanoseconds = (uint64_t)at.tv_nsec + (milliseconds % 1000) * 1000000;
    at.tv_sec += (time_t)(milliseconds / 1000 + nanoseconds / 1000000000);
    at.tv_nsec = (long)(nanoseconds % 1000000000);
    return at;
}

/* Waits while f builds; false when the tier's deadline passed first. */
static bool wait_for_build_locked(zc_memory_tier *tier, flight *f)
{
    struct timespec deadline = deadline_after(tier->wait_timeout_ms);
    while (f->building) {
        if (!tier->wait_bounded)
            pthread_cond_wait(&f->finished, &tier->lock);
        else if (pthread_cond_timedwait(&f->finished, &tier->lock, &deadline) == ETIMEDOUT &&
                 f->building)
            return false;
    }
    return true;
}

/* Builds when the flight is idle (new, or its last build failed); otherwise
 * waits for the flight's build and puts a new reference to its result in
 * *out. Never waits for a build of its own thread, which would be forever. */
static turn await_turn_locked(zc_memory_tier *tier, flight *f, zc_artifact **out)
{
    if (!f->building)
        return take_turn_locked(f);
    if (pthread_equal(f->builder, pthread_self()))
        return TURN_APART;
    f->waiters++;
    bool finished = wait_for_build_locked(tier, f);
    f->waiters--;
    if (!finished)
        return TURN_APART;
    if (!f->done)
        return take_turn_locked(f); /* the build failed: this waiter retries */
    *out = zc_artifact_ref(f->result);
    return TURN_WAITED;
}

/* A failed build leaves the flight to one waiter, or ends it if none wait. */
static void abandon_flight(zc_memory_tier *tier, flight *f)
{
    pthread_mutex_lock(&tier->lock);
    f->building = false;
    bool orphan = f->waiters == 0;
    if (orphan)
        unlink_flight_locked(tier, f);
    else
        pthread_cond_signal(&f->finished);
    pthread_mutex_unlock(&tier->lock);
    if (orphan)
        flight_free(f);
}

/* Stores the artifact (if it fits) and hands it to the flight's waiters in the
 * same critical section, so a newcomer finds either the entry or the flight. */
static void complete_flight(zc_memory_tier *tier, flight *f, zc_artifact *artifact)
{
    entry *spare = NULL;
    if (zc_artifact_footprint(artifact) <= tier->budget) {
        spare = malloc(sizeof(*spare));
        if (spare == NULL)
            zc_log_failure("memory tier: allocating an entry", ENOMEM);
    }
    deferred later = {0};
    size_t wanted = 0;
    pthread_mutex_lock(&tier->lock);
    if (spare != NULL)
        wanted = insert_locked(tier, &f->key, zc_artifact_ref(artifact), &spare, &later);
    unlink_flight_locked(tier, f);
    f->building = false;
    f->done = true;
    bool orphan = f->waiters == 0;
    if (!orphan) {
        f->result = zc_artifact_ref(artifact);
        pthread_cond_broadcast(&f->finished);
    }
    pthread_mutex_unlock(&tier->lock);
    if (orphan)
        flight_free(f);
    free(spare);
    release_deferred(&later);
    if (wanted != 0)
        grow(tier, wanted);
}

static zc_status build_for_flight(zc_memory_tier *tier, flight *f, zc_build_fn build, void *context,
                                  zc_artifact **out)
{
    zc_artifact *artifact = NULL;
    zc_status status = build(context, &artifact);
    if (status == ZC_OK && artifact == NULL)
        status = ZC_ERR_BUILD;
    if (status != ZC_OK) {
        abandon_flight(tier, f);
        return status;
    }
    complete_flight(tier, f, artifact);
    *out = artifact;
    return ZC_OK;
}

void zc_memory_tier_set_wait_timeout(zc_memory_tier *tier, uint64_t milliseconds)
{
    if (tier == NULL)
        return;
    pthread_mutex_lock(&tier->lock);
    tier->wait_bounded = true;
    tier->wait_timeout_ms = milliseconds;
    pthread_mutex_unlock(&tier->lock);
}

zc_status zc_memory_tier_get_or_build(zc_memory_tier *tier, const zc_key *key, zc_build_fn build,
                                      void *context, zc_artifact **out, zc_memory_outcome *outcome)
{
    if (tier == NULL || key == NULL || build == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    flight *spare = NULL;
    pthread_mutex_lock(&tier->lock);
    flight *f = hit_or_join_locked(tier, key, &spare, out);
    if (f == NULL && *out == NULL)
        return ZC_ERR_NOMEM; /* the lock was already dropped */
    turn next = f != NULL ? await_turn_locked(tier, f, out) : TURN_WAITED;
    /* The last waiter out of a finished flight frees it; nobody else can
     * reach it once it left the list. */
    bool last_out = f != NULL && next == TURN_WAITED && f->waiters == 0;
    pthread_mutex_unlock(&tier->lock);
    flight_free(spare);
    if (last_out)
        flight_free(f);
    zc_memory_outcome result = f == NULL ? ZC_MEMORY_HIT : ZC_MEMORY_WAITED;
    zc_status status = ZC_OK;
    if (next == TURN_BUILD) {
        result = ZC_MEMORY_BUILT;
        status = build_for_flight(tier, f, build, context, out);
    } else if (next == TURN_APART) {
        result = ZC_MEMORY_BUILT;
        status = build(context, out);
        if (status == ZC_OK && *out == NULL)
            status = ZC_ERR_BUILD;
    }
    if (outcome != NULL)
        *outcome = result;
    return status;
}

size_t zc_memory_tier_waiting(zc_memory_tier *tier, const zc_key *key)
{
    if (tier == NULL || key == NULL)
        return 0;
    pthread_mutex_lock(&tier->lock);
    flight *f = find_flight_locked(tier, key);
    size_t waiters = f != NULL ? f->waiters : 0;
    pthread_mutex_unlock(&tier->lock);
    return waiters;
}

void zc_memory_tier_get_stats(zc_memory_tier *tier, zc_memory_tier_stats *stats)
{
    if (stats == NULL)
        return;
    memset(stats, 0, sizeof(*stats));
    if (tier == NULL)
        return;
    pthread_mutex_lock(&tier->lock);
    stats->entries = tier->entries;
    stats->bytes = tier->bytes;
    stats->budget = tier->budget;
    stats->evictions = tier->evictions;
    pthread_mutex_unlock(&tier->lock);
}
