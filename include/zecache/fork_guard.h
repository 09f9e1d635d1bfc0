/* Process-wide mutexes held across fork(), so that a child never inherits
 * one locked by a thread it does not have (it would wait for it for ever).
 *
 * Only for leaf locks: mutexes that live as long as the process, under
 * which no other lock with a fork handler is taken, and which are never
 * taken under one. Then the order in which prepare handlers run cannot
 * deadlock them against the others. fork() waits for the sections in
 * flight under a guarded lock. */
#ifndef ZECACHE_FORK_GUARD_H
#define ZECACHE_FORK_GUARD_H

#include <pthread.h>
#include <stdatomic.h>

/* Holds mutex across every later fork(): prepare locks it, parent and child
 * unlock it. *guarded (false at first, one per mutex) records that it is:
 * calls after the first cost an atomic load. Call before locking mutex. */
void zc_fork_guard(pthread_mutex_t *mutex, atomic_bool *guarded);

/* zc_fork_guard, then pthread_mutex_lock. */
void zc_fork_guard_lock(pthread_mutex_t *mutex, atomic_bool *guarded);

#endif
