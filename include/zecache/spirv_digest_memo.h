/* The digest of a SPIR-V input, remembered per process: an application that
 * creates the same large module again, from any buffer, gets the digest
 * without hashing megabytes again.
 *
 * An input is matched by size and a fingerprint of sampled words, then
 * confirmed by comparing every byte with a private copy, so a buffer reused
 * with other content is hashed anew. Only content seen a second time is
 * copied: a module created once per process costs no copy. Least recently
 * used entries go first when a limit is reached. */
#ifndef ZECACHE_SPIRV_DIGEST_MEMO_H
#define ZECACHE_SPIRV_DIGEST_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/sha256.h"

/* Below this, hashing costs about what a lookup and a comparison do. */
#define ZC_SPIRV_DIGEST_MEMO_MIN_SIZE ((size_t)64 << 10)
/* Bytes held in copies, all entries together. */
#define ZC_SPIRV_DIGEST_MEMO_MAX_BYTES ((size_t)64 << 20)
/* The largest input remembered, so that one input cannot push out all others. */
#define ZC_SPIRV_DIGEST_MEMO_MAX_INPUT (ZC_SPIRV_DIGEST_MEMO_MAX_BYTES / 4)
/* Entries, with or without a copy. */
#define ZC_SPIRV_DIGEST_MEMO_MAX_ENTRIES 1024

/* Inputs over this many bytes are digested in pieces of this size: the
 * digest is then SHA-256(ZC_SPIRV_DIGEST_TAG with its NUL, the size as a
 * little-endian u64, the SHA-256 of each piece in order), the pieces hashed in
 * parallel. Smaller inputs: their SHA-256. */
#define ZC_SPIRV_DIGEST_PIECE ((size_t)1 << 20)
#define ZC_SPIRV_DIGEST_TAG "zecache-spirv-pieces"

/* The digest of size bytes at spirv: from the memo when the same content of
 * ZC_SPIRV_DIGEST_MEMO_MIN_SIZE..MAX_INPUT bytes was hashed before, else hashed
 * (and remembered). False only when hashing fails. Thread-safe. */
bool zc_spirv_digest(const void *spirv, size_t size, uint8_t digest[ZC_SHA256_SIZE]);

#endif
