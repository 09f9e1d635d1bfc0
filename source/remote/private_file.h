/* A small file that holds a secret (the signing secret, a Redis password, a
 * bearer token, a client key): refused when others can read it, as ssh
 * refuses a private key, since a secret others can read is no secret:
 * whoever holds it chooses the code run on every node, or reads and writes
 * the shared cache. Not installed. */
#ifndef ZECACHE_PRIVATE_FILE_H
#define ZECACHE_PRIVATE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "zecache/status.h"

/* Up to capacity bytes of the regular file at path into buffer, *size of
 * them, as they are; a file longer than capacity reads as capacity bytes
 * (the caller gives one more than it takes, to tell). ZC_OK; ZC_ERR_IO
 * (cannot open or read) or ZC_ERR_INVALID_ARG (not a regular file, or
 * others may read it) with the reason naming path. */
zc_status zc_private_file_read(const char *path, uint8_t *buffer, size_t capacity, size_t *size,
                               char *reason, size_t reason_size);

/* The same, with trailing white space cut (a token or a secret, as an
 * editor leaves it). */
zc_status zc_private_file_read_trimmed(const char *path, uint8_t *buffer, size_t capacity,
                                       size_t *size, char *reason, size_t reason_size);

/* The same checks without reading: ZC_OK, or the reason. */
zc_status zc_private_file_check(const char *path, char *reason, size_t reason_size);

#endif
