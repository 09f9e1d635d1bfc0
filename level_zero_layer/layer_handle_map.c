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

#define MAX_MAPS 8

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static zcl_handle_map *maps[MAX_MAPS];
static size_t map_count;

static void lock_maps(void)
{
    pthread_mutex_lock(&maps_lock);
    for (size_t i = 0; i < map_count; i++)
        pthread_mutex_lock(&maps[i]->lock);
}

static void unlock_maps(void)
{
    for (size_t i = map_count; i-- > 0;)
        pthread_mutex_unlock(&maps[i]->lock);
    pthread_mutex_unlock(&maps_lock);
}

static void register_fork_handlers(void)
{
    (void)pthread_atfork(lock_maps, unlock_maps, unlock_maps);
}

/* Called before the map's first entry: from then on forks lock it. */
static void take_part_in_forks(zcl_handle_map *map)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handlers);
    pthread_mutex_lock(&maps_lock);
    bool known = false;
    for (size_t i = 0; i < map_count && !known; i++)
        known = maps[i] == map;
    if (!known && map_count < MAX_MAPS)
        maps[map_count++] = map;
    pthread_mutex_unlock(&maps_lock);
    atomic_store(&map->in_forks, true);
}

bool zcl_handle_map_put(zcl_handle_map *map, const void *handle, uintptr_t value)
{
    if (!atomic_load(&map->in_forks))
        take_part_in_forks(map);
    pthread_mutex_lock(&map->lock);
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
