/* SHA-256: the one implementation zecache hashes with (cache keys, SPIR-V
 * digests, entry header checksums). */
#ifndef ZECACHE_SHA256_H
#define ZECACHE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZC_SHA256_SIZE 32

/* A running hash, started when created. */
typedef struct zc_sha256 zc_sha256;

/* NULL when out of memory. */
zc_sha256 *zc_sha256_create(void);
void zc_sha256_destroy(zc_sha256 *hash);
/* A hash that continues from where hash is now; NULL when memory runs out. */
zc_sha256 *zc_sha256_copy(const zc_sha256 *hash);
bool zc_sha256_update(zc_sha256 *hash, const void *bytes, size_t size);
/* Writes the digest; the hash is then spent. */
bool zc_sha256_finish(zc_sha256 *hash, uint8_t digest[ZC_SHA256_SIZE]);

/* The digest of bytes in one call. */
bool zc_sha256_digest(const void *bytes, size_t size, uint8_t digest[ZC_SHA256_SIZE]);

#endif
