/* Result codes shared by every part of the zecache core. */
#ifndef ZECACHE_STATUS_H
#define ZECACHE_STATUS_H

#include <stddef.h>

typedef enum zc_status {
    ZC_OK = 0,
    ZC_MISS,            /* not found, or found but failed verification (a miss) */
    ZC_NOT_CACHEABLE,   /* the key builder refused: the reason says why */
    ZC_ERR_INVALID_ARG, /* a caller passed something impossible */
    ZC_ERR_NOMEM,
    ZC_ERR_IO,        /* a system call failed; errno was logged */
    ZC_ERR_DISABLED,  /* the tier is switched off or unusable */
    ZC_ERR_TOO_LARGE, /* bigger than the configured limits allow */
    ZC_ERR_BUILD,     /* a build callback reported failure */
    ZC_ERR_BUSY,      /* another process held a lock past the deadline: skipped */
    ZC_EXISTS,        /* a store found the entry in place already: nothing written */
} zc_status;

/* A short constant name such as "ZC_MISS", for messages and tests. */
const char *zc_status_name(zc_status status);

/* Writes why into reason (printf-style; nothing when reason is NULL or
 * reason_size is 0) and returns status, so a refusal is one statement:
 * return zc_explain(ZC_MISS, reason, reason_size, "bad magic"); */
zc_status zc_explain(zc_status status, char *reason, size_t reason_size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
