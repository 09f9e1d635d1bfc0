/* Result codes shared by every part of the zecache core. */
#ifndef ZECACHE_STATUS_H
#define ZECACHE_STATUS_H

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
} zc_status;

/* A short constant name such as "ZC_MISS", for messages and tests. */
const char *zc_status_name(zc_status status);

#endif
