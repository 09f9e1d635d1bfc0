/* A small file holding a secret (the signing secret, a bearer token), read
 * only when no one but its owner and group can read it, as ssh refuses a
 * private key others can read: whoever holds the secret chooses the code
 * run on every node, or reads and writes the shared cache. Not installed. */
#ifndef ZECACHE_PRIVATE_FILE_H
#define ZECACHE_PRIVATE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "zecache/status.h"

/* Reads at most capacity bytes of path into buffer and cuts trailing white
 * space: ZC_OK with *size. A caller that reads capacity bytes (*size ==
 * capacity before the cut is not told apart) gives one byte more than it
 * takes, so a longer file shows as too long. ZC_ERR_IO (cannot open or
 * read) or ZC_ERR_INVALID_ARG (not a regular file, or others may read it),
 * with the reason naming path. */
zc_status zc_private_file_read(const char *path, uint8_t *buffer, size_t capacity, size_t *size,
                               char *reason, size_t reason_size);

#endif
