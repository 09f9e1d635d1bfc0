/* zc_parallel_for: tasks are claimed from a shared counter, so a thread
 * that starts late, or not at all, only takes fewer of them. */
#include "parallel.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

typedef struct job {
    void (*task)(void *context, size_t index);
    void *context;
    size_t count;
    atomic_size_t next;
} job;

static void *run_tasks(void *argument)
{
    job *work = argument;
    for (size_t i; (i = atomic_fetch_add(&work->next, 1)) < work->count;)
        work->task(work->context, i);
    return NULL;
}

static _Thread_local bool kept_to_this_thread;

void zc_parallel_keep_to_this_thread(void)
{
    kept_to_this_thread = true;
}

static size_t helper_count(size_t count)
{
    if (kept_to_this_thread)
        return 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = online > 1 ? (size_t)online : 1;
    if (threads > ZC_PARALLEL_MAX_THREADS)
        threads = ZC_PARALLEL_MAX_THREADS;
    if (threads > count)
        threads = count;
    return threads > 0 ? threads - 1 : 0;
}

void zc_parallel_for(size_t count, void (*task)(void *context, size_t index), void *context)
{
    job work = {.task = task, .context = context, .count = count};
    atomic_init(&work.next, 0);
    pthread_t helpers[ZC_PARALLEL_MAX_THREADS - 1];
    size_t started = 0, wanted = helper_count(count);
    while (started < wanted && pthread_create(&helpers[started], NULL, run_tasks, &work) == 0)
        started++;
    run_tasks(&work);
    for (size_t i = 0; i < started; i++)
        pthread_join(helpers[i], NULL);
}
