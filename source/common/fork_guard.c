/* The leaf locks held across fork() (fork_guard.h). One set of handlers for
 * all of them: prepare takes the guard's own lock, then each mutex in the
 * order they were guarded; parent and child release them. */
#include "zecache/fork_guard.h"

#include <errno.h>
#include <stddef.h>

#include "zecache/log.h"

/* The process-wide locks of the core and the layer, and the layer's handle
 * maps, with room to spare. */
#define MAX_GUARDED 32

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *held[MAX_GUARDED];
static size_t held_count;

static void lock_guarded(void)
{
    pthread_mutex_lock(&guard_lock);
    for (size_t i = 0; i < held_count; i++)
        pthread_mutex_lock(held[i]);
}

static void unlock_guarded(void)
{
    for (size_t i = held_count; i > 0; i--)
        pthread_mutex_unlock(held[i - 1]);
    pthread_mutex_unlock(&guard_lock);
}

static void register_fork_handlers(void)
{
    if (pthread_atfork(lock_guarded, unlock_guarded, unlock_guarded) != 0)
        zc_log_failure("registering fork handlers", ENOMEM);
}

void zc_fork_guard(pthread_mutex_t *mutex, atomic_bool *guarded)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (atomic_load_explicit(guarded, memory_order_acquire))
        return;
    pthread_once(&once, register_fork_handlers);
    pthread_mutex_lock(&guard_lock);
    if (!atomic_load_explicit(guarded, memory_order_relaxed)) { /* else another thread did */
        if (held_count < MAX_GUARDED)
            held[held_count++] = mutex;
        else
            zc_log_failure("guarding a lock across fork()", ENOSPC);
        atomic_store_explicit(guarded, true, memory_order_release);
    }
    pthread_mutex_unlock(&guard_lock);
}

void zc_fork_guard_lock(pthread_mutex_t *mutex, atomic_bool *guarded)
{
    zc_fork_guard(mutex, guarded);
    pthread_mutex_lock(mutex);
}
