/* Identity of a shared library on disk (which file, which build), found
 * without loading it. */
#ifndef ZECACHE_IDENTITY_H
#define ZECACHE_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/status.h"

#define ZC_BUILD_ID_MAX 64
/* Sizes of the name and path fields: Linux's NAME_MAX + 1 and PATH_MAX, which
 * strict C11's <limits.h> does not define. */
#define ZC_LIBRARY_NAME_SIZE 256
#define ZC_LIBRARY_PATH_SIZE 4096

typedef struct zc_library_identity {
    char name[ZC_LIBRARY_NAME_SIZE]; /* the name searched for, e.g. "libigc.so.1" */
    char path[ZC_LIBRARY_PATH_SIZE]; /* where it was found (symlinks resolved) */
    uint8_t build_id[ZC_BUILD_ID_MAX];
    size_t build_id_size; /* 0 when the file has no GNU build-id note */
    uint64_t size;
    int64_t mtime_sec;
    int64_t mtime_nsec;
} zc_library_identity;

/* Searches for a library by file name as the dynamic linker would for the
 * main program's dlopen (the LD_LIBRARY_PATH the program started with,
 * /etc/ld.so.cache, the default directories) and describes it. A name with a '/' is a path. ZC_MISS
 * when not found. */
zc_status zc_library_identity_find(const char *name, zc_library_identity *identity);

/* Describes the library at path (symlinks resolved). */
zc_status zc_library_identity_of_path(const char *path, zc_library_identity *identity);

/* Whether two identities name the same file (path, size, mtime, build-id). */
bool zc_library_identity_equal(const zc_library_identity *a, const zc_library_identity *b);

#endif
