/* The files a key read (an OpenCL C source's headers and the paths where
 * they were looked for), each as it was: absent, not a file, or its size and
 * SHA-256. Handed on with the key, so a check after the compile reads those
 * files again without computing the key again. */
#ifndef ZECACHE_KEY_FILES_H
#define ZECACHE_KEY_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/sha256.h"
#include "zecache/status.h"

typedef enum zc_key_file_state {
    ZC_KEY_FILE_ABSENT = 0,
    ZC_KEY_FILE_NOT_A_FILE = 1, /* a directory: a compiler looks further */
    ZC_KEY_FILE_FOUND = 2,
} zc_key_file_state;

typedef struct zc_key_files zc_key_files;

/* Looks at path: its state and, when found, its bytes (malloc'd, *size of
 * them, a NUL after) if it holds at most max_size bytes. ZC_NOT_CACHEABLE
 * with *why when it exists but cannot be read, is neither a regular file
 * nor a directory, is larger than max_size or changed size while read;
 * ZC_ERR_NOMEM. */
zc_status zc_key_file_read(const char *path, uint64_t max_size, zc_key_file_state *state,
                           char **content, uint64_t *size, const char **why);

/* A new empty list; NULL when out of memory. */
zc_key_files *zc_key_files_create(void);
/* Adds a path as seen (digest only for ZC_KEY_FILE_FOUND); false when out
 * of memory. */
bool zc_key_files_add(zc_key_files *files, const char *path, zc_key_file_state state, uint64_t size,
                      const uint8_t digest[ZC_SHA256_SIZE]);
/* How many files were seen (0 for NULL), and the i-th of them: its path,
 * with its state, size and digest as seen (digest all zero unless found):
 * what a recipe keeps, for a later check. */
size_t zc_key_files_count(const zc_key_files *files);
const char *zc_key_files_at(const zc_key_files *files, size_t i, zc_key_file_state *state,
                            uint64_t *size, uint8_t digest[ZC_SHA256_SIZE]);
/* Whether every file is still as it was seen. */
bool zc_key_files_unchanged(const zc_key_files *files);
/* The path of the first file not as it was seen; NULL when none. */
const char *zc_key_files_first_changed(const zc_key_files *files);
void zc_key_files_destroy(zc_key_files *files);

#endif
