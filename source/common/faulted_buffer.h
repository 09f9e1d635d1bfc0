/* A fresh buffer that another thread faults in while the caller waits on
 * something else (the driver making a module from a cached binary), so that
 * a copy into it later takes no page faults on the caller's path: 50 MB of
 * fresh pages cost 11-22 ms of one core on the 2-core machine. */
#ifndef ZECACHE_FAULTED_BUFFER_H
#define ZECACHE_FAULTED_BUFFER_H

#include <stddef.h>
#include <stdint.h>

typedef struct zc_faulted_buffer zc_faulted_buffer;

/* Starts faulting in a new buffer of size bytes. NULL when size is 0 or no
 * mapping or thread is to be had: the caller then does without. */
zc_faulted_buffer *zc_faulted_buffer_start(size_t size);
/* Waits for the pages; the buffer (*size bytes, writable) is pending's until
 * zc_faulted_buffer_free. */
uint8_t *zc_faulted_buffer_wait(zc_faulted_buffer *pending, size_t *size);
/* Waits if need be and unmaps. NULL is accepted. */
void zc_faulted_buffer_free(zc_faulted_buffer *pending);

#endif
