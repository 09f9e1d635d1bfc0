/* Prefetching a program's entries (prefetch.h). In the layer the object
 * lives for the process (the thread may still be loading at exit); a cache
 * that is closed stops the thread first. */
#include "prefetch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parallel.h"
#include "zecache/disk_usage_list.h"
#include "zecache/log.h"

typedef enum slot_state {
    SLOT_QUEUED,  /* not loaded yet */
    SLOT_LOADING, /* the thread is loading it: a taker waits */
    SLOT_READY,   /* loaded, waiting to be taken */
    SLOT_DONE,    /* taken, failed, or left to the taker's own load */
} slot_state;

typedef struct prefetch_slot {
    zc_key key;
    slot_state state;
    zc_artifact *artifact; /* SLOT_READY */
    const char *origin;    /* SLOT_READY: the load's, NULL for the disk */
} prefetch_slot;

struct zc_prefetch {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    zc_disk_tier *disk;
    zc_prefetch_load_fn load; /* NULL: the disk tier's own */
    void *load_context;
    uint8_t program[32];
    pid_t owner; /* the process that read the list: only it saves */
    size_t budget, staged_bytes;
    bool abandoned; /* a forked child: the thread does not exist there */
    bool idle;      /* the thread has ended, or waits for room */
    bool running;   /* the thread has not ended */
    bool list_read; /* the thread has published the slots */
    prefetch_slot slots[ZC_USAGE_LIST_MAX];
    size_t slot_count;
    /* Where the application's lookups are in the list: the thread loads from
     * there on, so that a run asking in another order (or skipping modules)
     * still finds the thread ahead of it. */
    size_t follow;
    /* For the line logged at exit: lookups that found their entry loaded,
     * that waited for it, and that loaded it themselves (not reached yet). */
    size_t found_ready, found_loading, found_queued;
    zc_key used[ZC_USAGE_LIST_MAX];
    size_t used_count;
};

/* The one prefetch of the process, for the fork handlers. */
static zc_prefetch *active;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void lock_for_fork(void)
{
    if (active != NULL)
        pthread_mutex_lock(&active->lock);
}

static void unlock_in_parent(void)
{
    if (active != NULL)
        pthread_mutex_unlock(&active->lock);
}

/* The child has no loading thread: what it was loading, the child loads
 * itself. The condition variable is made anew: a copy may count a waiter
 * (the thread, waiting for room) that the child does not have, and a
 * broadcast would wait for it. */
static void abandon_in_child(void)
{
    if (active == NULL)
        return;
    active->abandoned = true;
    for (size_t i = 0; i < active->slot_count; i++)
        if (active->slots[i].state == SLOT_LOADING || active->slots[i].state == SLOT_QUEUED)
            active->slots[i].state = SLOT_DONE;
    pthread_cond_init(&active->changed, NULL);
    pthread_mutex_unlock(&active->lock);
}

static void register_fork_handlers(void)
{
    pthread_atfork(lock_for_fork, unlock_in_parent, abandon_in_child);
}

/* The first queued slot from where the application is, wrapping around. */
static bool next_queued(const zc_prefetch *prefetch, size_t *index)
{
    for (size_t i = 0; i < prefetch->slot_count; i++) {
        size_t at = (prefetch->follow + i) % prefetch->slot_count;
        if (prefetch->slots[at].state == SLOT_QUEUED) {
            *index = at;
            return true;
        }
    }
    return false;
}

/* Claims the next queued slot, waiting while the entries not taken yet hold
 * the budget; false when no slot is left. */
static bool claim_next(zc_prefetch *prefetch, size_t *index)
{
    for (;;) {
        if (prefetch->abandoned || prefetch->budget == 0 || !next_queued(prefetch, index))
            return false;
        if (prefetch->staged_bytes < prefetch->budget) {
            prefetch->slots[*index].state = SLOT_LOADING;
            prefetch->idle = false;
            return true;
        }
        prefetch->idle = true;
        pthread_cond_broadcast(&prefetch->changed);
        pthread_cond_wait(&prefetch->changed, &prefetch->lock);
    }
}

static bool used_already(const zc_prefetch *prefetch, const zc_key *key)
{
    for (size_t i = 0; i < prefetch->used_count; i++)
        if (zc_key_equal(&prefetch->used[i], key))
            return true;
    return false;
}

/* Under the lock. */
static void note_used(zc_prefetch *prefetch, const zc_key *key)
{
    if (!used_already(prefetch, key) && prefetch->used_count < ZC_USAGE_LIST_MAX)
        prefetch->used[prefetch->used_count++] = *key;
}

/* The list is read here, not by zc_prefetch_start, so that the reading is
 * off the application's path too (the constructor's, inside zeInit). Until
 * its slots are published, lookups find none and load for themselves; keys
 * looked up before then were loaded by their lookups, and loading them again
 * would hold memory nobody takes. */
static void read_list(zc_prefetch *prefetch)
{
    zc_key *listed = malloc(ZC_USAGE_LIST_MAX * sizeof *listed);
    size_t count = 0;
    if (listed == NULL ||
        zc_disk_tier_read_usage(prefetch->disk, prefetch->program, listed, &count) != ZC_OK)
        count = 0;
    pthread_mutex_lock(&prefetch->lock);
    for (size_t i = 0; i < count; i++)
        prefetch->slots[i] =
            (prefetch_slot){.key = listed[i],
                            .state = used_already(prefetch, &listed[i]) ? SLOT_DONE : SLOT_QUEUED};
    prefetch->slot_count = prefetch->abandoned ? 0 : count;
    prefetch->list_read = true;
    pthread_mutex_unlock(&prefetch->lock);
    free(listed);
    zc_log_info("prefetch: %zu entries listed from this program's last run", count);
}

static void *load_listed(void *context)
{
    zc_prefetch *prefetch = context;
    size_t index;
    zc_parallel_keep_to_this_thread();
    read_list(prefetch);
    pthread_mutex_lock(&prefetch->lock);
    while (claim_next(prefetch, &index)) {
        zc_key key = prefetch->slots[index].key;
        pthread_mutex_unlock(&prefetch->lock);
        zc_artifact *artifact = NULL;
        const char *origin = NULL;
        zc_status status = prefetch->load != NULL
                               ? prefetch->load(prefetch->load_context, &key, &artifact, &origin)
                               : zc_disk_tier_load_leaving_bad(prefetch->disk, &key, &artifact);
        pthread_mutex_lock(&prefetch->lock);
        prefetch_slot *slot = &prefetch->slots[index];
        if (status == ZC_OK && slot->state == SLOT_LOADING) {
            slot->state = SLOT_READY;
            slot->artifact = artifact;
            slot->origin = origin;
            prefetch->staged_bytes += zc_artifact_footprint(artifact);
        } else {
            slot->state = SLOT_DONE;
            zc_artifact_unref(artifact);
        }
        pthread_cond_broadcast(&prefetch->changed);
    }
    prefetch->idle = true;
    prefetch->running = false;
    pthread_cond_broadcast(&prefetch->changed);
    pthread_mutex_unlock(&prefetch->lock);
    return NULL;
}

static bool start_thread(zc_prefetch *prefetch)
{
    pthread_attr_t attributes;
    pthread_t thread;
    if (pthread_attr_init(&attributes) != 0)
        return false;
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    bool started = pthread_create(&thread, &attributes, load_listed, prefetch) == 0;
    pthread_attr_destroy(&attributes);
    return started;
}

zc_status zc_prefetch_start(zc_disk_tier *disk, const uint8_t program[32], size_t budget,
                            zc_prefetch **out)
{
    return zc_prefetch_start_loading(disk, NULL, NULL, program, budget, out);
}

zc_status zc_prefetch_start_loading(zc_disk_tier *disk, zc_prefetch_load_fn load, void *context,
                                    const uint8_t program[32], size_t budget, zc_prefetch **out)
{
    *out = NULL;
    if (disk == NULL || active != NULL)
        return ZC_ERR_INVALID_ARG;
    zc_prefetch *prefetch = calloc(1, sizeof *prefetch);
    if (prefetch == NULL)
        return ZC_ERR_NOMEM;
    pthread_mutex_init(&prefetch->lock, NULL);
    pthread_cond_init(&prefetch->changed, NULL);
    prefetch->disk = disk;
    prefetch->load = load;
    prefetch->load_context = context;
    memcpy(prefetch->program, program, sizeof prefetch->program);
    prefetch->owner = getpid();
    prefetch->budget = budget;
    pthread_once(&fork_handlers_once, register_fork_handlers);
    active = prefetch;
    /* Set before the thread exists: from then on it owns them, under lock.
     * With no budget it only reads the list, which lookups then skip. */
    prefetch->running = true;
    prefetch->idle = false;
    if (prefetch->running && !start_thread(prefetch)) {
        prefetch->running = false;
        prefetch->idle = true;
    }
    *out = prefetch;
    return ZC_OK;
}

static prefetch_slot *slot_of(zc_prefetch *prefetch, const zc_key *key)
{
    for (size_t i = 0; i < prefetch->slot_count; i++)
        if (zc_key_equal(&prefetch->slots[i].key, key))
            return &prefetch->slots[i];
    return NULL;
}

zc_status zc_prefetch_take(zc_prefetch *prefetch, const zc_key *key, zc_artifact **out)
{
    const char *origin;
    return zc_prefetch_take_from(prefetch, key, out, &origin);
}

zc_status zc_prefetch_take_from(zc_prefetch *prefetch, const zc_key *key, zc_artifact **out,
                                const char **origin)
{
    *out = NULL;
    *origin = NULL;
    if (prefetch == NULL)
        return ZC_MISS;
    pthread_mutex_lock(&prefetch->lock);
    if (!prefetch->list_read)
        note_used(prefetch, key); /* its lookup loads it; read_list skips it */
    prefetch_slot *slot = slot_of(prefetch, key);
    if (slot != NULL)
        prefetch->follow = (size_t)(slot - prefetch->slots) + 1;
    if (slot != NULL && slot->state == SLOT_READY)
        prefetch->found_ready++;
    else if (slot != NULL && slot->state == SLOT_LOADING)
        prefetch->found_loading++;
    else if (slot != NULL && slot->state == SLOT_QUEUED)
        prefetch->found_queued++;
    while (slot != NULL && slot->state == SLOT_LOADING)
        pthread_cond_wait(&prefetch->changed, &prefetch->lock);
    zc_status status = ZC_MISS;
    if (slot != NULL && slot->state == SLOT_READY) {
        *out = slot->artifact;
        *origin = slot->origin;
        slot->artifact = NULL;
        prefetch->staged_bytes -= zc_artifact_footprint(*out);
        status = ZC_OK;
        pthread_cond_broadcast(&prefetch->changed);
    }
    if (slot != NULL)
        slot->state = SLOT_DONE;
    pthread_mutex_unlock(&prefetch->lock);
    return status;
}

bool zc_prefetch_serves(zc_prefetch *prefetch)
{
    if (prefetch == NULL)
        return false;
    pthread_mutex_lock(&prefetch->lock);
    bool serves = prefetch->slot_count > 0 && prefetch->budget > 0 && !prefetch->abandoned;
    pthread_mutex_unlock(&prefetch->lock);
    return serves;
}

size_t zc_prefetch_staged_bytes(zc_prefetch *prefetch)
{
    if (prefetch == NULL)
        return 0;
    pthread_mutex_lock(&prefetch->lock);
    size_t bytes = prefetch->staged_bytes;
    pthread_mutex_unlock(&prefetch->lock);
    return bytes;
}

void zc_prefetch_wait_idle(zc_prefetch *prefetch)
{
    if (prefetch == NULL)
        return;
    pthread_mutex_lock(&prefetch->lock);
    while (!prefetch->idle && !prefetch->abandoned)
        pthread_cond_wait(&prefetch->changed, &prefetch->lock);
    pthread_mutex_unlock(&prefetch->lock);
}

void zc_prefetch_stop(zc_prefetch *prefetch)
{
    if (prefetch == NULL)
        return;
    pthread_mutex_lock(&prefetch->lock);
    prefetch->abandoned = true;
    pthread_cond_broadcast(&prefetch->changed);
    while (prefetch->running && prefetch->owner == getpid())
        pthread_cond_wait(&prefetch->changed, &prefetch->lock);
    for (size_t i = 0; i < prefetch->slot_count; i++)
        zc_artifact_unref(prefetch->slots[i].artifact);
    pthread_mutex_unlock(&prefetch->lock);
    if (active == prefetch)
        active = NULL;
    pthread_cond_destroy(&prefetch->changed);
    pthread_mutex_destroy(&prefetch->lock);
    free(prefetch);
}

void zc_prefetch_note_use(zc_prefetch *prefetch, const zc_key *key)
{
    if (prefetch == NULL)
        return;
    pthread_mutex_lock(&prefetch->lock);
    note_used(prefetch, key);
    pthread_mutex_unlock(&prefetch->lock);
}

static bool same_as_listed(const zc_prefetch *prefetch)
{
    if (prefetch->used_count != prefetch->slot_count)
        return false;
    for (size_t i = 0; i < prefetch->used_count; i++)
        if (!zc_key_equal(&prefetch->used[i], &prefetch->slots[i].key))
            return false;
    return true;
}

void zc_prefetch_save(zc_prefetch *prefetch)
{
    if (prefetch == NULL || prefetch->owner != getpid())
        return;
    /* At exit: written under the lock, since later uses (other threads may
     * still run) would change the list while it is written. */
    pthread_mutex_lock(&prefetch->lock);
    zc_log_info("prefetch: of %zu entries listed, %zu were loaded when asked for, %zu were being "
                "loaded, %zu were not reached yet; %zu bytes were loaded and never taken",
                prefetch->slot_count, prefetch->found_ready, prefetch->found_loading,
                prefetch->found_queued, prefetch->staged_bytes);
    size_t count = prefetch->used_count;
    if (count > 0 && !same_as_listed(prefetch) &&
        zc_disk_tier_write_usage(prefetch->disk, prefetch->program, prefetch->used, count) == ZC_OK)
        zc_log_info("prefetch: %zu entries listed for this program's next run", count);
    pthread_mutex_unlock(&prefetch->lock);
}
