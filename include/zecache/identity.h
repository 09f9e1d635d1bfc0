/* Identity of a shared library on disk, found without loading it. */
#ifndef ZECACHE_IDENTITY_H
#define ZECACHE_IDENTITY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/status.h"

#define ZC_BUILD_ID_MAX 64

typedef struct zc_library_identity {
    char name[NAME_MAX + 1]; /* the name searched for, e.g. "libigc.so.1" */
    char path[PATH_MAX];     /* where it was found (symlinks resolved) */
    uint8_t build_id[ZC_BUILD_ID_MAX];
    size_t build_id_size; /* 0 when the file has no GNU build-id note */
    uint64_t size;
    int64_t mtime_sec;
    int64_t mtime_nsec;
} zc_library_identity;

/* Searches for a library by file name as the dynamic loader would
 * (LD_LIBRARY_PATH, the directories of /etc/ld.so.conf, the default
 * directories) and describes it. ZC_MISS when not found. */
zc_status zc_library_identity_find(const char *name, zc_library_identity *identity);

/* The same search with its inputs explicit (for tests): ld_library_path is
 * LD_LIBRARY_PATH's value and ld_so_conf the file read as /etc/ld.so.conf;
 * either may be NULL (not searched). The default directories come last. */
zc_status zc_library_identity_find_in(const char *name, const char *ld_library_path,
                                      const char *ld_so_conf, zc_library_identity *identity);

/* Describes the library at path (symlinks resolved). */
zc_status zc_library_identity_of_path(const char *path, zc_library_identity *identity);

/* Reads the GNU build-id note of an ELF file into build_id (up to max bytes).
 * Returns the note's size, 0 when there is none, or -1 when the file is not a
 * readable ELF file. */
long zc_elf_read_build_id(const char *path, uint8_t *build_id, size_t max);

#endif
