/* Runs independent pieces of one job on this thread and up to a few others,
 * for the work a hit pays per byte (decompressing a large entry). A helper
 * thread is created per call: only jobs of a millisecond or more use it. */
#ifndef ZECACHE_PARALLEL_H
#define ZECACHE_PARALLEL_H

#include <stdbool.h>
#include <stddef.h>

/* At most this many threads work on one job (the caller included). */
#define ZC_PARALLEL_MAX_THREADS 4

/* Runs task(context, i) for every i in [0, count), each exactly once, on
 * the calling thread and up to ZC_PARALLEL_MAX_THREADS - 1 more (no more
 * than the processors online, nor than count). Returns when all are done.
 * Where a thread cannot be created, the threads there are do the rest. */
void zc_parallel_for(size_t count, void (*task)(void *context, size_t index), void *context);

/* Makes every later zc_parallel_for of the calling thread run on it alone.
 * For threads that work beside the application (the prefetch): they may
 * take one core, never the application's too. */
void zc_parallel_keep_to_this_thread(void);

#endif
