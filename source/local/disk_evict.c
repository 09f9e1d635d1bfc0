/* Removing entries under the lock, keeping config.file exact: eviction of the
 * least recently used entries (mtime, which a hit refreshes), trim by age and
 * size, clear, and removal of one named entry. Every sweep scans, and the
 * scan's real total replaces the recorded one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "disk_internal.h"
#include "zecache/recipe.h"
#include "zecache/log.h"

static void unlink_sidecar(zc_disk_tier *tier, int parent_fd, const char *entry_name,
                           const char *suffix)
{
    char name[NAME_MAX + 1];
    if (!zc_disk_sidecar_name(entry_name, suffix, name, sizeof name))
        return;
    if (tier->ops->unlinkat(parent_fd, name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", name, errno);
}

bool zc_disk_unlink_entry(zc_disk_tier *tier, int parent_fd, const char *name, uint64_t *trace_size)
{
    uint64_t trace;
    if (!zc_disk_trace_size(tier, parent_fd, name, &trace)) {
        zc_disk_log_errno("cannot examine the trace of", name, errno);
        return false; /* removing it would leave config.file unsure */
    }
    if (tier->ops->unlinkat(parent_fd, name, 0) != 0 && errno != ENOENT) {
        zc_disk_log_errno("cannot remove", name, errno);
        return false;
    }
    if (trace_size != NULL)
        *trace_size = trace;
    unlink_sidecar(tier, parent_fd, name, ZC_TRACE_SUFFIX);
    unlink_sidecar(tier, parent_fd, name, ZC_RECIPE_SUFFIX);
    unlink_sidecar(tier, parent_fd, name, ZC_INPUT_SUFFIX);
    return true;
}

static bool unlink_entry_at(zc_disk_tier *tier, const char *rel)
{
    const char *name;
    int parent_fd = zc_disk_open_parent(tier, rel, &name);
    if (parent_fd < 0)
        return errno == ENOENT; /* its directory is gone, so is it */
    bool gone = zc_disk_unlink_entry(tier, parent_fd, name, NULL); /* counted by the scan */
    tier->ops->close(parent_fd);
    return gone;
}

/* ---- the least recently used order ---- */

typedef struct lru_entry {
    char *rel; /* into lru_list.names, fixed up once the scan is over */
    size_t rel_offset;
    uint64_t size;
    struct timespec last_use;
} lru_entry;

typedef struct lru_list {
    zc_disk_tier *tier;
    lru_entry *entries;
    size_t count, capacity;
    char *names;
    size_t names_used, names_capacity;
    uint64_t total;
    time_t now;
    bool out_of_memory;
} lru_list;

static bool grow(void **buffer, size_t *capacity, size_t needed, size_t item_size)
{
    if (needed <= *capacity)
        return true;
    size_t new_capacity = *capacity > 0 ? *capacity * 2 : 256;
    while (new_capacity < needed)
        new_capacity *= 2;
    void *grown = realloc(*buffer, new_capacity * item_size);
    if (grown == NULL)
        return false;
    *buffer = grown;
    *capacity = new_capacity;
    return true;
}

static bool lru_append(lru_list *list, const zc_scan_item *item)
{
    size_t rel_size = strlen(item->rel) + 1;
    if (!grow((void **)&list->entries, &list->capacity, list->count + 1, sizeof(lru_entry)) ||
        !grow((void **)&list->names, &list->names_capacity, list->names_used + rel_size, 1))
        return false;
    memcpy(list->names + list->names_used, item->rel, rel_size);
    list->entries[list->count++] = (lru_entry){.rel_offset = list->names_used,
                                               .size = item->size + item->trace_size,
                                               .last_use = item->mtime};
    list->names_used += rel_size;
    list->total += item->size + item->trace_size;
    return true;
}

/* Our stores write temp files under the lock, so one still there is either
 * being written by a process that does not take it, or left by a crash: only
 * old ones are safe to call orphans. */
static void remove_if_stale_temp(lru_list *list, const zc_scan_item *item)
{
    if (list->now - item->mtime.tv_sec <= ZC_TEMP_MAX_AGE_SEC)
        return;
    if (list->tier->ops->unlinkat(item->dir_fd, item->name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", item->rel, errno);
}

/* A trace (or recipe) is counted with its entry; one whose entry is gone (a store or
 * removal cut short, or the driver evicting the entry) counts nowhere, so an
 * old one is removed. */
static void remove_if_stale_orphan_trace(lru_list *list, const zc_scan_item *item)
{
    char entry[ZC_REL_PATH_SIZE];
    const char *suffix =
        zc_disk_has_suffix(item->name, ZC_RECIPE_SUFFIX) ? ZC_RECIPE_SUFFIX : ZC_TRACE_SUFFIX;
    size_t stem = strlen(item->name) - strlen(suffix);
    struct stat st;
    if (!zc_disk_has_suffix(item->name, suffix) ||
        list->now - item->mtime.tv_sec <= ZC_TEMP_MAX_AGE_SEC ||
        snprintf(entry, sizeof entry, "%.*s%s", (int)stem, item->name, ZC_ENTRY_SUFFIX) >=
            (int)sizeof entry ||
        list->tier->ops->fstatat(item->dir_fd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
        errno != ENOENT)
        return;
    if (list->tier->ops->unlinkat(item->dir_fd, item->name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", item->rel, errno);
}

static int collect_item(void *context, const zc_scan_item *item)
{
    lru_list *list = context;
    if (item->kind == ZC_SCAN_TEMP)
        remove_if_stale_temp(list, item);
    if (item->kind == ZC_SCAN_SIDECAR)
        remove_if_stale_orphan_trace(list, item);
    if (item->kind == ZC_SCAN_LOCK)
        zc_disk_remove_unused_lock(list->tier, item, ZC_TEMP_MAX_AGE_SEC, list->now);
    if (item->kind == ZC_SCAN_MARK)
        zc_disk_remove_stale_mark(list->tier, item, list->now);
    if (item->kind == ZC_SCAN_BLOB)
        list->total += item->size; /* freed by zc_disk_remove_unused_blobs, not by age */
    if (item->kind != ZC_SCAN_ENTRY)
        return 0;
    list->out_of_memory = !lru_append(list, item);
    return list->out_of_memory;
}

static int compare_last_use(const void *a, const void *b)
{
    const lru_entry *x = a, *y = b;
    if (x->last_use.tv_sec != y->last_use.tv_sec)
        return x->last_use.tv_sec < y->last_use.tv_sec ? -1 : 1;
    if (x->last_use.tv_nsec != y->last_use.tv_nsec)
        return x->last_use.tv_nsec < y->last_use.tv_nsec ? -1 : 1;
    return strcmp(x->rel, y->rel); /* deterministic among equal times */
}

static zc_status lru_collect(zc_disk_tier *tier, lru_list *list)
{
    memset(list, 0, sizeof *list);
    list->tier = tier;
    list->now = time(NULL);
    zc_status status = zc_disk_scan(tier, collect_item, list);
    if (status == ZC_OK && list->out_of_memory)
        status = ZC_ERR_NOMEM;
    if (status != ZC_OK)
        return status;
    for (size_t i = 0; i < list->count; i++)
        list->entries[i].rel = list->names + list->entries[i].rel_offset;
    if (list->count > 1) /* entries is NULL when there are none */
        qsort(list->entries, list->count, sizeof *list->entries, compare_last_use);
    return ZC_OK;
}

static void lru_free(lru_list *list)
{
    free(list->entries);
    free(list->names);
}

/* Oldest first, an entry goes while any of these holds. */
typedef struct sweep_policy {
    uint64_t keep_at_most;  /* the total is above this */
    uint64_t free_at_least; /* fewer bytes than this were removed */
    int64_t unused_before;  /* it was last used before this (0: no age bound) */
} sweep_policy;

typedef struct sweep_result {
    uint64_t removed_entries;
    uint64_t removed_bytes;
    uint64_t failed_removals; /* entries the policy wanted gone that stayed */
} sweep_result;

static bool should_remove(const sweep_policy *policy, const lru_entry *entry, uint64_t total,
                          uint64_t removed)
{
    return total > policy->keep_at_most || removed < policy->free_at_least ||
           (policy->unused_before != 0 && entry->last_use.tv_sec < policy->unused_before);
}

static void lru_remove_oldest(zc_disk_tier *tier, const lru_list *list, const sweep_policy *policy,
                              sweep_result *result)
{
    for (size_t i = 0; i < list->count; i++) {
        const lru_entry *entry = &list->entries[i];
        if (!should_remove(policy, entry, list->total - result->removed_bytes,
                           result->removed_bytes))
            break; /* the rest were used more recently */
        if (!unlink_entry_at(tier, entry->rel)) {
            result->failed_removals++;
            continue; /* it still counts; the next one may go */
        }
        result->removed_entries++;
        result->removed_bytes += entry->size;
    }
}

/* Under the lock: scan, remove by policy, and record the real total. */
static zc_status sweep(zc_disk_tier *tier, zc_disk_lock *lock, const sweep_policy *policy,
                       uint64_t incoming, sweep_result *result)
{
    lru_list list;
    zc_status status = lru_collect(tier, &list);
    if (status == ZC_OK) {
        /* The recorded total may have been wrong: with the real one the new
         * entry may fit without removing anything. */
        if (incoming == 0 || list.total > policy->keep_at_most) {
            zc_disk_begin_change(tier, lock);
            lru_remove_oldest(tier, &list, policy, result);
        }
        /* Recorded SPIR-V goes once no remaining recipe names it; a blob
         * still named stays whatever its age. */
        uint64_t total = list.total - result->removed_bytes;
        zc_disk_begin_change(tier, lock);
        status = zc_disk_remove_unused_blobs(tier, &total);
        if (status == ZC_OK)
            status = zc_disk_set_total(tier, lock, total);
        else
            zc_disk_invalidate_total(tier, lock);
    }
    lru_free(&list);
    return status;
}

zc_status zc_disk_make_room(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t incoming)
{
    uint64_t max = tier->max_size;
    if (max == 0 || lock->total + incoming <= max)
        return ZC_OK;
    /* As the driver does, free a third of the limit at once, so that the
     * next stores do not each pay for a scan. */
    sweep_policy policy = {.keep_at_most = max - incoming, .free_at_least = max / 3};
    sweep_result result = {0, 0, 0};
    zc_status status = sweep(tier, lock, &policy, incoming, &result);
    atomic_fetch_add_explicit(&tier->evictions, result.removed_entries, memory_order_relaxed);
    if (result.removed_entries > 0)
        zc_log_info("evicted %llu entries (%llu bytes) from %s",
                    (unsigned long long)result.removed_entries,
                    (unsigned long long)result.removed_bytes, tier->dir);
    if (status == ZC_OK && lock->total + incoming > max) {
        zc_log_info("no room for %llu bytes in %s", (unsigned long long)incoming, tier->dir);
        status = ZC_ERR_IO;
    }
    return status;
}

uint64_t zc_disk_tier_evictions(zc_disk_tier *tier)
{
    return atomic_load_explicit(&tier->evictions, memory_order_relaxed);
}

zc_status zc_disk_tier_trim(zc_disk_tier *tier, uint64_t max_size, int64_t older_than_unix,
                            uint64_t *removed_entries, uint64_t *removed_bytes)
{
    zc_disk_lock lock;
    zc_status status = zc_disk_lock_acquire(tier, false, &lock);
    if (status != ZC_OK)
        return status;
    sweep_policy policy = {.keep_at_most = max_size, .unused_before = older_than_unix};
    sweep_result result = {0, 0, 0};
    status = sweep(tier, &lock, &policy, 0, &result);
    zc_disk_lock_release(tier, &lock);
    if (status == ZC_OK && result.failed_removals > 0)
        status = ZC_ERR_IO; /* not everything the bounds asked for could go */
    if (removed_entries != NULL)
        *removed_entries = result.removed_entries;
    if (removed_bytes != NULL)
        *removed_bytes = result.removed_bytes;
    return status;
}

/* ---- clear ---- */

typedef struct clear_state {
    zc_disk_tier *tier;
    uint64_t remaining; /* entries that could not be removed still count */
    bool incomplete;    /* something could not be removed */
} clear_state;

static int remove_any_item(void *context, const zc_scan_item *item)
{
    clear_state *state = context;
    if (item->kind == ZC_SCAN_LOCK) {
        zc_disk_remove_unused_lock(state->tier, item, 0, 0); /* a held one is a build going on */
        return 0;
    }
    if (state->tier->ops->unlinkat(item->dir_fd, item->name, 0) == 0 || errno == ENOENT)
        return 0;
    zc_disk_log_errno("cannot remove", item->rel, errno);
    if (item->kind == ZC_SCAN_ENTRY)
        state->remaining += item->size + item->trace_size;
    if (item->kind == ZC_SCAN_BLOB)
        state->remaining += item->size;
    state->incomplete = true;
    return 0;
}

zc_status zc_disk_tier_clear(zc_disk_tier *tier)
{
    zc_disk_lock lock;
    zc_status status = zc_disk_lock_acquire(tier, false, &lock);
    if (status != ZC_OK)
        return status;
    clear_state state = {tier, 0, false};
    zc_disk_begin_change(tier, &lock);
    status = zc_disk_scan(tier, remove_any_item, &state);
    zc_status written;
    if (status == ZC_OK)
        written = zc_disk_set_total(tier, &lock, state.remaining);
    else if (zc_disk_scan_total(tier, &state.remaining, NULL) == ZC_OK)
        written = zc_disk_set_total(tier, &lock, state.remaining); /* what a partial clear left */
    else {
        zc_disk_invalidate_total(tier, &lock);
        written = ZC_ERR_IO;
    }
    zc_disk_lock_release(tier, &lock);
    if (status == ZC_OK && written == ZC_OK && state.incomplete)
        return ZC_ERR_IO;
    return status != ZC_OK ? status : written;
}

/* ---- one named entry ---- */

/* Only what a scan would count: a .l0_cache regular file beneath the root. */
static bool removable_entry_path(const char *rel)
{
    return rel[0] != '\0' && rel[0] != '/' && zc_disk_has_suffix(rel, ZC_ENTRY_SUFFIX) &&
           strlen(rel) < ZC_REL_PATH_SIZE;
}

zc_status zc_disk_tier_remove_entry(zc_disk_tier *tier, const char *path)
{
    if (tier == NULL || path == NULL || !removable_entry_path(path))
        return ZC_ERR_INVALID_ARG;
    zc_disk_lock lock;
    zc_status status = zc_disk_lock_acquire(tier, false, &lock);
    if (status != ZC_OK)
        return status;
    const char *name;
    struct stat st;
    uint64_t trace_size = 0;
    int parent_fd = zc_disk_open_parent(tier, path, &name);
    if (parent_fd < 0 || tier->ops->fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        status = errno == ENOENT ? ZC_MISS : ZC_ERR_IO;
    else if (!S_ISREG(st.st_mode))
        status = ZC_ERR_INVALID_ARG;
    else {
        zc_disk_begin_change(tier, &lock);
        if (!zc_disk_unlink_entry(tier, parent_fd, name, &trace_size)) {
            zc_disk_set_total(tier, &lock, lock.total); /* nothing changed */
            status = ZC_ERR_IO;
        }
    }
    if (status == ZC_OK)
        status = zc_disk_account_removed(tier, &lock, (uint64_t)st.st_size + trace_size);
    if (status == ZC_OK)
        status = zc_disk_set_total(tier, &lock, lock.total);
    if (parent_fd >= 0)
        tier->ops->close(parent_fd);
    zc_disk_lock_release(tier, &lock);
    return status;
}
