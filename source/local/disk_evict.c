/* Removing entries under the lock, keeping config.file exact: eviction of the
 * least recently used entries (mtime, which a hit refreshes), trim by age and
 * size, clear, and removal of one named entry. Every sweep scans
 * (disk_census.c), and the scan's real total replaces the recorded one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "disk_blob_refs.h"
#include "disk_internal.h"
#include "zecache/disk_usage_list.h"
#include "zecache/log.h"
#include "zecache/recipe.h"

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
    zc_disk_figures gone;
    bool counted = zc_disk_accounting_removing(tier, parent_fd, name, &gone);
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
    if (counted)
        zc_disk_accounting_removed(tier, &gone);
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

/* ---- sweeps ---- */

/* Oldest first, an entry goes while any of these holds. */
typedef struct sweep_policy {
    uint64_t keep_at_most;  /* the total is above this */
    uint64_t free_at_least; /* fewer bytes than this were freed */
    int64_t unused_before;  /* it was last used before this (0: no age bound) */
} sweep_policy;

typedef struct sweep_result {
    uint64_t removed_entries;
    uint64_t removed_bytes;   /* entries, their sidecars, and blobs no recipe names any more */
    uint64_t failed_removals; /* entries the policy wanted gone that stayed */
    /* The least recently used entry kept (none: every entry went), which
     * usage lists last used before it are not worth keeping for. */
    const zc_census_entry *oldest_kept;
} sweep_result;

static bool should_remove(const sweep_policy *policy, const zc_census_entry *entry, uint64_t total,
                          uint64_t removed)
{
    return total > policy->keep_at_most || removed < policy->free_at_least ||
           (policy->unused_before != 0 && entry->last_use.tv_sec < policy->unused_before);
}

/* Oldest first, each entry's going counted as what it really frees: itself,
 * its sidecars, and the blobs that only its recipe named. */
static void remove_oldest(zc_census *census, const sweep_policy *policy, sweep_result *result)
{
    for (size_t i = 0; i < census->entry_count; i++) {
        const zc_census_entry *entry = &census->entries[i];
        if (!should_remove(policy, entry, census->total - result->removed_bytes,
                           result->removed_bytes)) {
            result->oldest_kept = result->oldest_kept != NULL ? result->oldest_kept : entry;
            break; /* the rest were used more recently */
        }
        if (!unlink_entry_at(census->tier, entry->rel)) {
            result->failed_removals++;
            result->oldest_kept = result->oldest_kept != NULL ? result->oldest_kept : entry;
            continue; /* it still counts; the next one may go */
        }
        result->removed_entries++;
        result->removed_bytes += entry->size + zc_census_release(census, i);
    }
}

/* Under the lock: scan, remove by policy, and record the real total. */
static zc_status sweep(zc_disk_tier *tier, zc_disk_lock *lock, const sweep_policy *policy,
                       uint64_t incoming, sweep_result *result)
{
    zc_census census;
    /* The scan itself removes garbage that may be counted. */
    zc_disk_begin_change(tier, lock);
    zc_status status = zc_census_take(tier, &census);
    if (status == ZC_OK)
        zc_disk_accounting_check_census(tier, &census);
    if (status == ZC_OK && census.unsure) {
        /* The total is still known: only what to remove is not. */
        status = zc_disk_set_total(tier, lock, census.total);
        status = status == ZC_OK ? ZC_ERR_IO : status;
    } else if (status == ZC_OK) {
        /* SPIR-V no recipe names goes first, at every sweep. */
        result->removed_bytes = zc_census_remove_unnamed_blobs(&census);
        result->oldest_kept = census.entry_count > 0 ? &census.entries[0] : NULL;
        /* The recorded total may have been wrong: with the real one the new
         * entry may fit without removing anything. */
        if (incoming == 0 || census.total - result->removed_bytes > policy->keep_at_most) {
            result->oldest_kept = NULL;
            remove_oldest(&census, policy, result);
        }
        zc_blob_refs_rebuild(&census); /* what shard passes go by, exact again */
        zc_disk_prune_usage_lists(
            tier, result->oldest_kept != NULL ? result->oldest_kept->last_use.tv_sec : INT64_MAX);
        status = zc_disk_set_total(tier, lock, census.total - result->removed_bytes);
    } else
        zc_disk_invalidate_total(tier, lock);
    zc_census_free(&census);
    return status;
}

zc_status zc_disk_make_room(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t incoming,
                            const char *shard)
{
    return zc_disk_make_room_sparing(tier, lock, incoming, shard, NULL);
}

zc_status zc_disk_make_room_sparing(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t incoming,
                                    const char *shard, const char *spared)
{
    uint64_t max = tier->max_size;
    if (max == 0 || lock->total + incoming <= max)
        return ZC_OK;
    if (shard != NULL && incoming <= max) {
        zc_status status = zc_disk_evict_from_shards(tier, lock, incoming, shard, spared);
        if (status != ZC_MISS)
            return status;
    }
    /* As the driver does, free a third of the limit at once, so that the
     * next stores do not each pay for a scan; counted in what really goes
     * (blobs too), so that two thirds stay whatever the mix. */
    sweep_policy policy = {.keep_at_most = max - incoming, .free_at_least = max / 3};
    sweep_result result = {0, 0, 0, NULL};
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
    sweep_result result = {0, 0, 0, NULL};
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
    bool blobs;         /* the second pass: recorded SPIR-V only */
} clear_state;

static int remove_any_item(void *context, const zc_scan_item *item)
{
    clear_state *state = context;
    if ((item->kind == ZC_SCAN_BLOB) != state->blobs)
        return 0;
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
    clear_state state = {tier, 0, false, false};
    zc_disk_begin_change(tier, &lock);
    zc_disk_accounting_forget(tier);
    /* Recorded SPIR-V goes last: a clear cut short (a crash, a full disk)
     * then never leaves a recipe naming SPIR-V that is gone. */
    status = zc_disk_scan(tier, remove_any_item, &state);
    state.blobs = true;
    if (status == ZC_OK)
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

/* Only what a scan would count: a .l0_cache or .cl_cache regular file
 * beneath the root. */
static bool removable_entry_path(const char *rel)
{
    return rel[0] != '\0' && rel[0] != '/' && zc_disk_is_entry_file_name(rel) &&
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
