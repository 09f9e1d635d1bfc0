/* See faulted_buffer.h. The thread only makes pages present; the buffer is
 * the caller's from the start, and its first use waits for the thread. */
#include "faulted_buffer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct zc_faulted_buffer {
    pthread_t thread;
    bool joined;
    uint8_t *pages;
    size_t size;
};

static void *fault_in(void *context)
{
    zc_faulted_buffer *pending = context;
    if (madvise(pending->pages, pending->size, MADV_POPULATE_WRITE) == 0 || errno != EINVAL)
        return NULL;
    /* A kernel before 5.14: one write per page does the same. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t at = 0; at < pending->size; at += page)
        ((volatile uint8_t *)pending->pages)[at] = 0;
    return NULL;
}

zc_faulted_buffer *zc_faulted_buffer_start(size_t size)
{
    zc_faulted_buffer *pending = size > 0 ? calloc(1, sizeof *pending) : NULL;
    if (pending == NULL)
        return NULL;
    void *pages = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) {
        free(pending);
        return NULL;
    }
    pending->pages = pages;
    pending->size = size;
    if (pthread_create(&pending->thread, NULL, fault_in, pending) != 0) {
        munmap(pages, size);
        free(pending);
        return NULL;
    }
    return pending;
}

uint8_t *zc_faulted_buffer_wait(zc_faulted_buffer *pending, size_t *size)
{
    if (!pending->joined)
        pthread_join(pending->thread, NULL);
    pending->joined = true;
    *size = pending->size;
    return pending->pages;
}

void zc_faulted_buffer_free(zc_faulted_buffer *pending)
{
    if (pending == NULL)
        return;
    size_t size = 0;
    uint8_t *pages = zc_faulted_buffer_wait(pending, &size);
    munmap(pages, size);
    free(pending);
}
