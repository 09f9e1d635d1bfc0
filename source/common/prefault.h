/* Faulting in fresh memory a hit is about to fill, with one call instead of
 * one page fault per page. */
#ifndef ZECACHE_PREFAULT_H
#define ZECACHE_PREFAULT_H

#include <stddef.h>

/* Makes the whole pages of buffer resident and writable when it is large
 * enough for this to pay (below, it does nothing); without
 * MADV_POPULATE_WRITE pages fault as usual. The caller vouches that size is
 * what it will write: a lying header must not make us commit memory. */
void zc_prefault_write(void *buffer, size_t size);

#endif
