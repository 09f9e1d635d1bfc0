/* The container of recorded inputs (recipe.h): a fixed, checksummed header
 * and one zstd frame with its content size and content checksum, as entries
 * have (entry.h), so a damaged file is refused before any byte is used.
 *
 * Header, little-endian, ZC_SEALED_HEADER_SIZE bytes:
 *   0  magic                  8: ZC_RECIPE_MAGIC or ZC_SPIRV_MAGIC
 *   8  format version (u32)   = ZC_SEALED_FORMAT_VERSION
 *  12  header size (u32)      = ZC_SEALED_HEADER_SIZE
 *  16  id                     32: a recipe's entry key, a SPIR-V's SHA-256
 *  48  content size (u64)
 *  56  compressed size (u64)  = file size - header size
 *  64  header checksum        16: first 16 bytes of SHA-256 of bytes 0..63
 */
#ifndef ZECACHE_SEALED_H
#define ZECACHE_SEALED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/status.h"

#define ZC_SEALED_FORMAT_VERSION 1u
#define ZC_SEALED_HEADER_SIZE 80u
#define ZC_SEALED_MAGIC_SIZE 8u
#define ZC_SEALED_ID_SIZE 32u
/* No recorded input is larger: SPIR-V modules are far smaller. */
#define ZC_SEALED_MAX_CONTENT (UINT64_C(1) << 28)

/* content into a new malloc'd container. */
zc_status zc_sealed_encode(const char magic[ZC_SEALED_MAGIC_SIZE],
                           const uint8_t id[ZC_SEALED_ID_SIZE], const void *content, size_t size,
                           int compression_level, uint8_t **out, size_t *out_size);

/* Checks everything (magic, version, sizes, header checksum, id when
 * expected_id is not NULL, a declared content size of at most max_content
 * (and ZC_SEALED_MAX_CONTENT), zstd frame and content checksum) and returns
 * the content (malloc'd) and its id. The size is checked before anything is
 * allocated: a small file cannot make the reader allocate more than
 * max_content. ZC_MISS with a reason when anything is off. */
zc_status zc_sealed_decode(const char magic[ZC_SEALED_MAGIC_SIZE], const void *data, size_t size,
                           const uint8_t *expected_id, uint64_t max_content, uint8_t **content,
                           size_t *content_size, uint8_t id[ZC_SEALED_ID_SIZE], char *reason,
                           size_t reason_size);

/* The content size data's header declares, none of it checked yet (as
 * zc_sealed_decode does): for refusing a container of another size than the
 * one expected before decompressing anything. False when data is shorter
 * than a header. */
bool zc_sealed_declared_size(const void *data, size_t size, uint64_t *content_size);

#endif
