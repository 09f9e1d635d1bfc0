/* Build logs the layer makes for cache hits: the text of the original
 * compile's log. The handles are this file's own objects, so the two build
 * log functions are wrapped and recognise them through a registry; any other
 * handle goes to the driver.
 *
 * The registry is a hash set of handle addresses (open addressing, linear
 * probing), so a lookup costs the same however many logs a program keeps
 * without destroying them. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"
#include "zecache/fork_guard.h"

typedef struct layer_build_log {
    size_t size; /* without the terminating NUL */
    char text[];
} layer_build_log;

enum { REGISTRY_MIN_CAPACITY = 16 };

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static layer_build_log **registry; /* capacity slots, NULL = empty; at most half full */
static size_t registry_capacity, registry_count;
/* Held across fork(): a child forked while another thread was in the
 * registry would otherwise wait for ever at its next build log. */
static atomic_bool registry_lock_guarded;

/* Addresses from malloc share their low bits: mix them all in. */
static size_t slot_of(const void *handle, size_t capacity)
{
    uint64_t bits = (uint64_t)(uintptr_t)handle * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(bits >> 32) & (capacity - 1);
}

/* The slot holding handle, or the empty slot where it would go. */
static size_t probe(layer_build_log *const *slots, size_t capacity, const void *handle)
{
    size_t slot = slot_of(handle, capacity);
    while (slots[slot] != NULL && (const void *)slots[slot] != handle)
        slot = (slot + 1) & (capacity - 1);
    return slot;
}

static bool registry_grow(void)
{
    size_t capacity = registry_capacity == 0 ? REGISTRY_MIN_CAPACITY : registry_capacity * 2;
    layer_build_log **slots = calloc(capacity, sizeof(*slots));
    if (slots == NULL)
        return false;
    for (size_t i = 0; i < registry_capacity; i++)
        if (registry[i] != NULL)
            slots[probe(slots, capacity, registry[i])] = registry[i];
    free(registry);
    registry = slots;
    registry_capacity = capacity;
    return true;
}

static bool registry_add(layer_build_log *log)
{
    if (2 * (registry_count + 1) > registry_capacity && !registry_grow())
        return false;
    registry[probe(registry, registry_capacity, log)] = log;
    registry_count++;
    return true;
}

/* Empties slot, then moves back every entry after it in the same run that
 * would otherwise be cut off from its home slot (no tombstones). */
static void registry_remove_at(size_t slot)
{
    size_t mask = registry_capacity - 1;
    registry[slot] = NULL;
    registry_count--;
    for (size_t next = (slot + 1) & mask; registry[next] != NULL; next = (next + 1) & mask) {
        size_t home = slot_of(registry[next], registry_capacity);
        /* Stays if its home lies cyclically in (slot, next]. */
        if (((next - home) & mask) < ((next - slot) & mask))
            continue;
        registry[slot] = registry[next];
        registry[next] = NULL;
        slot = next;
    }
}

ze_module_build_log_handle_t zcl_build_log_create(const char *text, size_t size)
{
    layer_build_log *log = malloc(sizeof(*log) + size + 1);
    if (log == NULL)
        return NULL;
    log->size = size;
    if (size > 0)
        memcpy(log->text, text, size);
    log->text[size] = '\0';
    zc_fork_guard_lock(&registry_lock, &registry_lock_guarded);
    bool added = registry_add(log);
    pthread_mutex_unlock(&registry_lock);
    if (!added) {
        free(log);
        return NULL;
    }
    return (ze_module_build_log_handle_t)log;
}

/* Finds handle among the registered logs; with unlink, also removes it. */
static layer_build_log *find_registered(ze_module_build_log_handle_t handle, bool unlink)
{
    layer_build_log *found = NULL;
    zc_fork_guard_lock(&registry_lock, &registry_lock_guarded);
    if (registry_count > 0) {
        size_t slot = probe(registry, registry_capacity, handle);
        found = registry[slot];
        if (found != NULL && unlink)
            registry_remove_at(slot);
    }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

static ze_result_t copy_text(const layer_build_log *log, size_t *size, char *text)
{
    if (size == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    size_t needed = log->size + 1;
    if (text == NULL) {
        *size = needed;
        return ZE_RESULT_SUCCESS;
    }
    /* A short buffer gets what fits, still NUL-terminated. */
    size_t copied = *size < needed ? *size : needed;
    if (copied > 0) {
        memcpy(text, log->text, copied);
        text[copied - 1] = '\0';
    }
    *size = copied;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zcl_build_log_get_string(ze_module_build_log_handle_t build_log,
                                                size_t *size, char *text)
{
    /* The text stays valid while the caller holds the handle: destroying it
     * at the same time as reading it is the caller's error, as with drivers. */
    const layer_build_log *log = find_registered(build_log, false);
    if (log != NULL)
        return copy_text(log, size, text);
    return zcl_layer.next.build_log_get_string(build_log, size, text);
}

ze_result_t ZE_APICALL zcl_build_log_destroy(ze_module_build_log_handle_t build_log)
{
    layer_build_log *log = find_registered(build_log, true);
    if (log == NULL)
        return zcl_layer.next.build_log_destroy(build_log);
    free(log);
    return ZE_RESULT_SUCCESS;
}
