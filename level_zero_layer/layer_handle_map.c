/* A map from Level Zero handles to one word each: an open-addressing table
 * under one mutex. The count of live entries is read without the lock, so a
 * map that holds nothing costs its callers one atomic load: the layer keeps
 * one per kind of handle it must answer for (hit modules, their kernels,
 * images), and most processes never put anything in most of them.
 *
 * A fork while another thread holds a map's mutex would leave it held in the
 * child forever: every map in use is locked across fork(). */
#include <stdlib.h>

#include "layer_internal.h"
#include "zecache/fork_guard.h"

struct zcl_handle_slot {
    const void *handle; /* NULL: empty; TOMBSTONE: removed */
    uintptr_t value;
};

#define TOMBSTONE ((const void *)(uintptr_t)1)
#define MIN_CAPACITY 64u

static size_t slot_of(const void *handle, size_t size)
{
    uint64_t h = (uint64_t)(uintptr_t)handle * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (size - 1);
}

/* The slot holding handle, or else the empty slot where it would go. */
static zcl_handle_slot *probe(zcl_handle_slot *table, size_t size, const void *handle)
{
    zcl_handle_slot *reusable = NULL;
    for (size_t i = slot_of(handle, size);; i = (i + 1) & (size - 1)) {
        if (table[i].handle == handle)
            return &table[i];
        if (table[i].handle == TOMBSTONE && reusable == NULL)
            reusable = &table[i];
        if (table[i].handle == NULL)
            return reusable != NULL ? reusable : &table[i];
    }
}

/* Rehashes into a table at least four times the live count, dropping
 * tombstones. */
static bool grow(zcl_handle_map *map)
{
    size_t size = MIN_CAPACITY;
    while (size < 4 * (atomic_load(&map->live) + 1))
        size *= 2;
    zcl_handle_slot *table = calloc(size, sizeof(*table));
    if (table == NULL)
        return false;
    for (size_t i = 0; i < map->capacity; i++)
        if (map->slots[i].handle != NULL && map->slots[i].handle != TOMBSTONE)
            *probe(table, size, map->slots[i].handle) = map->slots[i];
    free(map->slots);
    map->slots = table;
    map->capacity = size;
    map->used = atomic_load(&map->live);
    return true;
}

bool zcl_handle_map_put(zcl_handle_map *map, const void *handle, uintptr_t value)
{
    /* Before the map's first entry: from then on forks lock it. */
    zc_fork_guard_lock(&map->lock, &map->in_forks);
    bool ok = (map->used + 1) * 2 <= map->capacity || grow(map);
    if (ok) {
        zcl_handle_slot *at = probe(map->slots, map->capacity, handle);
        if (at->handle == NULL)
            map->used++;
        if (at->handle != handle)
            atomic_fetch_add(&map->live, 1);
        *at = (zcl_handle_slot){handle, value};
    }
    pthread_mutex_unlock(&map->lock);
    return ok;
}

/* Finds handle; with take, also removes it. */
static bool find(zcl_handle_map *map, const void *handle, uintptr_t *value, bool take)
{
    if (atomic_load(&map->live) == 0)
        return false;
    pthread_mutex_lock(&map->lock);
    zcl_handle_slot *at = map->capacity > 0 ? probe(map->slots, map->capacity, handle) : NULL;
    bool found = at != NULL && at->handle == handle;
    if (found && value != NULL)
        *value = at->value;
    if (found && take) {
        at->handle = TOMBSTONE;
        atomic_fetch_sub(&map->live, 1);
    }
    pthread_mutex_unlock(&map->lock);
    return found;
}

bool zcl_handle_map_get(zcl_handle_map *map, const void *handle, uintptr_t *value)
{
    return find(map, handle, value, false);
}

bool zcl_handle_map_take(zcl_handle_map *map, const void *handle, uintptr_t *value)
{
    return find(map, handle, value, true);
}

bool zcl_handle_map_empty(zcl_handle_map *map)
{
    return atomic_load(&map->live) == 0;
}
