/* The modules the layer made from a cached native binary where the driver
 * would answer a lookup differently had it compiled the SPIR-V, with what it
 * would have known: whether the flags asked for exported functions
 * (-library-compilation) and globals (-ze-take-global-address). Intel's
 * driver from 22.53 on takes a native module to export every symbol, and a
 * SPIR-V one only what its flags ask for (ModuleImp::getFunctionPointer,
 * getGlobalPointer in level_zero/core/source/module/module_imp.cpp).
 *
 * An open-addressing set of module handles under one mutex. Only failed
 * lookups and module destruction consult it, and destruction only while it
 * holds anything, so hits without such lookups pay one insertion. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "layer_internal.h"

typedef struct slot {
    ze_module_handle_t module; /* NULL: empty; TOMBSTONE: removed */
    unsigned flags;
} slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot *slots;
static size_t capacity, used; /* used counts tombstones too */
static atomic_size_t live;

#define TOMBSTONE ((ze_module_handle_t)(uintptr_t)1)
#define MIN_CAPACITY 64u

static size_t slot_of(ze_module_handle_t module, size_t size)
{
    uint64_t h = (uint64_t)(uintptr_t)module * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (size - 1);
}

/* The slot holding module, or else the empty slot where it would go. */
static slot *probe(slot *table, size_t size, ze_module_handle_t module)
{
    slot *reusable = NULL;
    for (size_t i = slot_of(module, size);; i = (i + 1) & (size - 1)) {
        if (table[i].module == module)
            return &table[i];
        if (table[i].module == TOMBSTONE && reusable == NULL)
            reusable = &table[i];
        if (table[i].module == NULL)
            return reusable != NULL ? reusable : &table[i];
    }
}

/* Rehashes into a table at least twice the live count, dropping tombstones. */
static bool grow(void)
{
    size_t size = MIN_CAPACITY;
    while (size < 4 * (atomic_load(&live) + 1))
        size *= 2;
    slot *table = calloc(size, sizeof(*table));
    if (table == NULL)
        return false;
    for (size_t i = 0; i < capacity; i++)
        if (slots[i].module != NULL && slots[i].module != TOMBSTONE)
            *probe(table, size, slots[i].module) = slots[i];
    free(slots);
    slots = table;
    capacity = size;
    used = atomic_load(&live);
    return true;
}

bool zcl_hit_modules_add(ze_module_handle_t module, unsigned flags)
{
    pthread_mutex_lock(&lock);
    bool ok = (used + 1) * 2 <= capacity || grow();
    if (ok) {
        slot *at = probe(slots, capacity, module);
        if (at->module == NULL)
            used++;
        if (at->module != module)
            atomic_fetch_add(&live, 1);
        *at = (slot){module, flags};
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

bool zcl_hit_modules_find(ze_module_handle_t module, unsigned *flags)
{
    if (atomic_load(&live) == 0)
        return false;
    pthread_mutex_lock(&lock);
    slot *at = capacity > 0 ? probe(slots, capacity, module) : NULL;
    bool found = at != NULL && at->module == module;
    if (found)
        *flags = at->flags;
    pthread_mutex_unlock(&lock);
    return found;
}

void zcl_hit_modules_remove(ze_module_handle_t module)
{
    if (atomic_load(&live) == 0)
        return;
    pthread_mutex_lock(&lock);
    slot *at = capacity > 0 ? probe(slots, capacity, module) : NULL;
    if (at != NULL && at->module == module) {
        at->module = TOMBSTONE;
        atomic_fetch_sub(&live, 1);
    }
    pthread_mutex_unlock(&lock);
}
