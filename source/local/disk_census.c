/* The one scan a sweep makes (disk_internal.h, zc_census): every entry with
 * what its going frees (its sidecars, and the SPIR-V blobs only its recipe
 * names), every blob with the number of recipes naming it, and the real
 * total; on the way, what is garbage whatever the policy goes: stale temp
 * files, build locks and marks, orphaned sidecars, damaged recipes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_blob_refs.h"
#include "disk_internal.h"
#include "zecache/log.h"
#include "zecache/recipe.h"

bool zc_disk_grow(void **buffer, size_t *capacity, size_t needed, size_t item_size)
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

/* rel into the census' names; its offset (the buffer moves as it grows). */
static bool keep_name(zc_census *census, const char *rel, size_t *offset)
{
    size_t size = strlen(rel) + 1;
    if (!zc_disk_grow((void **)&census->names, &census->names_capacity, census->names_used + size,
                      1))
        return false;
    memcpy(census->names + census->names_used, rel, size);
    *offset = census->names_used;
    census->names_used += size;
    return true;
}

static bool add_uses(zc_census *census, const zc_recipe *inputs)
{
    if (!zc_disk_grow((void **)&census->uses, &census->use_capacity,
                      census->use_count + inputs->input_count, sizeof *census->uses))
        return false;
    for (uint32_t i = 0; i < inputs->input_count; i++)
        memcpy(census->uses[census->use_count++].sha256, inputs->inputs[i].spirv_sha256, 32);
    return true;
}

static bool add_entry(zc_census *census, const zc_scan_item *item)
{
    zc_recipe inputs;
    uint64_t removed = 0;
    zc_status recipe =
        zc_disk_sweep_recipe(census->tier, item->dir_fd, item->name, &inputs, &removed);
    if (removed > item->trace_size) /* changed since the scan saw it: not by a lock holder */
        removed = item->trace_size;
    /* Out of memory, the sweep stops and removes nothing. A recipe that
     * could be neither read nor removed (zc_disk_sweep_recipe removes one
     * it cannot read) names SPIR-V nobody knows: the sweep removes nothing
     * either, rather than SPIR-V it may name, or every entry (which is what
     * keeping every SPIR-V while evicting came to). */
    if (recipe == ZC_ERR_NOMEM)
        return false;
    if (recipe != ZC_OK && recipe != ZC_MISS) {
        zc_log_info("cannot read or remove the recorded inputs of %s: nothing is evicted until "
                    "one or the other can be done",
                    item->rel);
        census->unsure = true;
    }
    if (!zc_disk_grow((void **)&census->entries, &census->entry_capacity, census->entry_count + 1,
                      sizeof *census->entries)) {
        zc_recipe_free(&inputs);
        return false;
    }
    zc_census_entry *entry = &census->entries[census->entry_count];
    *entry = (zc_census_entry){.size = item->size + item->trace_size - removed,
                               .last_use = item->mtime,
                               .first_use = census->use_count,
                               .recipe = recipe == ZC_OK};
    bool kept = keep_name(census, item->rel, &entry->rel_offset) &&
                (recipe != ZC_OK || add_uses(census, &inputs));
    zc_recipe_free(&inputs);
    if (!kept)
        return false;
    entry->use_count = census->use_count - entry->first_use;
    census->entry_count++;
    census->total += entry->size;
    return true;
}

static bool add_blob(zc_census *census, const zc_scan_item *item)
{
    uint8_t sha256[32];
    if (!zc_disk_parse_blob_name(item->name, sha256)) {
        /* No recipe can name it. */
        if (census->tier->ops->unlinkat(item->dir_fd, item->name, 0) == 0 || errno == ENOENT) {
            zc_disk_accounting_input_removed(census->tier, false, item->size);
            return true;
        }
        zc_disk_log_errno("cannot remove", item->rel, errno);
        census->total += item->size;
        return true;
    }
    if (!zc_disk_grow((void **)&census->blobs, &census->blob_capacity, census->blob_count + 1,
                      sizeof *census->blobs))
        return false;
    zc_census_blob *blob = &census->blobs[census->blob_count];
    *blob = (zc_census_blob){.size = item->size};
    memcpy(blob->sha256, sha256, 32);
    if (!keep_name(census, item->rel, &blob->rel_offset))
        return false;
    census->blob_count++;
    census->total += item->size;
    return true;
}

/* Our stores write temp files under the lock, so one still there is either
 * being written by a process that does not take it, or left by a crash: only
 * old ones are safe to call orphans. */
static void remove_if_stale_temp(zc_census *census, const zc_scan_item *item)
{
    if (census->now - item->mtime.tv_sec <= ZC_TEMP_MAX_AGE_SEC)
        return;
    if (census->tier->ops->unlinkat(item->dir_fd, item->name, 0) != 0 && errno != ENOENT)
        zc_disk_log_errno("cannot remove", item->rel, errno);
}

static int visit(void *context, const zc_scan_item *item)
{
    zc_census *census = context;
    bool stored = true;
    if (item->kind == ZC_SCAN_TEMP)
        remove_if_stale_temp(census, item);
    /* An orphaned recipe that stays (a young foreign one, or one that cannot
     * be removed) names nothing an entry needs: no entry is there to be
     * rebuilt from it. Letting it keep every blob made each eviction count
     * only entry bytes as freed, and so remove every entry. */
    if (item->kind == ZC_SCAN_SIDECAR)
        zc_disk_remove_orphan_sidecar(census->tier, item, census->now);
    if (item->kind == ZC_SCAN_LOCK)
        zc_disk_remove_unused_lock(census->tier, item, ZC_TEMP_MAX_AGE_SEC, census->now);
    if (item->kind == ZC_SCAN_MARK)
        zc_disk_remove_stale_mark(census->tier, item, census->now);
    if (item->kind == ZC_SCAN_REFS)
        zc_blob_refs_remove_orphan(census->tier, item);
    if (item->kind == ZC_SCAN_BLOB)
        stored = add_blob(census, item);
    if (item->kind == ZC_SCAN_ENTRY)
        stored = add_entry(census, item);
    census->out_of_memory = !stored;
    return census->out_of_memory;
}

int zc_disk_compare_times(const struct timespec *x, const struct timespec *y)
{
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? -1 : 1;
    if (x->tv_nsec != y->tv_nsec)
        return x->tv_nsec < y->tv_nsec ? -1 : 1;
    return 0;
}

static int compare_last_use(const void *a, const void *b)
{
    const zc_census_entry *x = a, *y = b;
    int by_time = zc_disk_compare_times(&x->last_use, &y->last_use);
    return by_time != 0 ? by_time : strcmp(x->rel, y->rel); /* deterministic among equal times */
}

static int compare_sha(const void *a, const void *b)
{
    return memcmp(a, b, 32); /* a zc_census_use and a zc_census_blob both start with it */
}

/* Each use points at its blob (none when it is not there), and each blob
 * counts the entries naming it: a recipe naming one SPIR-V twice (a
 * program) counts once. */
static void resolve_uses(zc_census *census)
{
    if (census->blob_count > 1)
        qsort(census->blobs, census->blob_count, sizeof *census->blobs, compare_sha);
    for (size_t i = 0; i < census->entry_count; i++) {
        zc_census_entry *entry = &census->entries[i];
        zc_census_use *uses = census->uses + entry->first_use;
        if (entry->use_count > 1)
            qsort(uses, entry->use_count, sizeof *uses, compare_sha);
        for (size_t j = 0; j < entry->use_count; j++) {
            zc_census_blob *blob = census->blob_count == 0
                                       ? NULL
                                       : bsearch(uses[j].sha256, census->blobs, census->blob_count,
                                                 sizeof *census->blobs, compare_sha);
            bool repeated = j > 0 && memcmp(uses[j].sha256, uses[j - 1].sha256, 32) == 0;
            uses[j].blob = blob == NULL || repeated ? SIZE_MAX : (size_t)(blob - census->blobs);
            if (uses[j].blob != SIZE_MAX)
                blob->users++;
        }
    }
}

zc_status zc_census_take(zc_disk_tier *tier, zc_census *census)
{
    memset(census, 0, sizeof *census);
    census->tier = tier;
    census->now = time(NULL);
    zc_status status = zc_disk_scan(tier, visit, census);
    if (status == ZC_OK && census->out_of_memory)
        status = ZC_ERR_NOMEM;
    if (status != ZC_OK)
        return status;
    for (size_t i = 0; i < census->entry_count; i++)
        census->entries[i].rel = census->names + census->entries[i].rel_offset;
    for (size_t i = 0; i < census->blob_count; i++)
        census->blobs[i].rel = census->names + census->blobs[i].rel_offset;
    if (census->entry_count > 1) /* entries is NULL when there are none */
        qsort(census->entries, census->entry_count, sizeof *census->entries, compare_last_use);
    resolve_uses(census);
    return ZC_OK;
}

void zc_census_free(zc_census *census)
{
    free(census->entries);
    free(census->blobs);
    free(census->uses);
    free(census->names);
    memset(census, 0, sizeof *census);
}

/* The bytes removing blob freed (0 when it stays). */
static uint64_t remove_blob(zc_census *census, zc_census_blob *blob)
{
    const char *name;
    if (blob->gone)
        return 0;
    int parent_fd = zc_disk_open_parent(census->tier, blob->rel, &name);
    if (parent_fd < 0)
        return 0;
    bool gone = census->tier->ops->unlinkat(parent_fd, name, 0) == 0 || errno == ENOENT;
    if (!gone)
        zc_disk_log_errno("cannot remove", blob->rel, errno);
    census->tier->ops->close(parent_fd);
    blob->gone = gone;
    if (gone)
        zc_disk_accounting_input_removed(census->tier, false, blob->size);
    return gone ? blob->size : 0;
}

uint64_t zc_census_remove_unnamed_blobs(zc_census *census)
{
    uint64_t freed = 0;
    for (size_t i = 0; i < census->blob_count; i++)
        if (census->blobs[i].users == 0)
            freed += remove_blob(census, &census->blobs[i]);
    return freed;
}

uint64_t zc_census_release(zc_census *census, size_t index)
{
    const zc_census_entry *entry = &census->entries[index];
    uint64_t freed = 0;
    for (size_t j = 0; j < entry->use_count; j++) {
        size_t blob = census->uses[entry->first_use + j].blob;
        if (blob != SIZE_MAX && --census->blobs[blob].users == 0)
            freed += remove_blob(census, &census->blobs[blob]);
    }
    return freed;
}
