/* Packs: read-only files of cache entries, shipped the way Mesa ships
 * read-only Fossilize databases (`zecache pack`, NEO_CACHE_PACKS). A process
 * opens each pack once, keeps its index in memory and reads each entry it
 * serves with one pread; nothing is ever written to a pack after it is made.
 *
 * Little-endian, in this order:
 *   header   magic "ZCPACK\0\1" (8), format version u32 (1), flags u32
 *            (ZC_PACK_FLAG_SIGNED or 0), entry count u64, index offset u64,
 *            file size u64, 8 zero bytes                      48 bytes
 *   entries  each exactly as the cache directory holds it (.l0_cache or
 *            .cl_cache: entry.h), one after another
 *   index    one record per entry, sorted by key bytes then kind, no key
 *            twice: key (32), kind u8, 7 zero bytes, offset u64, size u64,
 *            SHA-256 of the entry's bytes (32)                88 bytes each
 *   tag      SHA-256 of the header and the index, or, signed,
 *            HMAC-SHA-256(secret, that SHA-256)                32 bytes
 * Opening checks the header, the bounds of every record, the order and the
 * tag (so the index is what its maker wrote); an entry is checked when it is
 * served, by the entry's own header checksum, key and zstd content checksum
 * (zc_entry_decode), and in a signed pack also against the SHA-256 its
 * record holds, which the tag covers. */
#ifndef ZECACHE_PACK_H
#define ZECACHE_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zecache/bundle.h"
#include "zecache/key.h"
#include "zecache/status.h"

#define ZC_PACK_MAGIC "ZCPACK\0\1"
#define ZC_PACK_FORMAT_VERSION 1u
#define ZC_PACK_FLAG_SIGNED 1u
#define ZC_PACK_HEADER_SIZE 48u
#define ZC_PACK_RECORD_SIZE 88u
#define ZC_PACK_TAG_SIZE 32u

/* ---- writing ---- */

typedef struct zc_pack_writer zc_pack_writer;

/* Starts a pack on out, which must be seekable (the header is written last).
 * signer NULL: unsigned. ZC_ERR_NOMEM or ZC_ERR_IO. */
zc_status zc_pack_write_start(FILE *out, const zc_bundle_signer *signer, zc_pack_writer **writer);

/* Appends an entry (its bytes as the cache directory holds them). */
zc_status zc_pack_write_entry(zc_pack_writer *writer, const zc_key *key, const void *entry,
                              size_t entry_size);

/* Writes the index, the tag and the header, and flushes. A key given more
 * than once is indexed once; *duplicates (unless NULL) counts the others. */
zc_status zc_pack_write_end(zc_pack_writer *writer, uint64_t *duplicates);

/* Frees the writer (NULL accepted); out stays open. */
void zc_pack_writer_free(zc_pack_writer *writer);

/* ---- reading ---- */

typedef struct zc_pack zc_pack;

/* Opens the pack at path, reads its index and checks it. With verifier (the same secret's
 * signer), only a pack signed with that secret opens; without, only an
 * unsigned one (a signed pack's tag cannot be checked without the secret).
 * ZC_MISS with a reason for a pack that does not check, ZC_ERR_IO when it
 * cannot be opened, ZC_ERR_NOMEM. The file stays open until zc_pack_close. */
zc_status zc_pack_open(const char *path, const zc_bundle_signer *verifier, zc_pack **pack,
                       char *reason, size_t reason_size);
void zc_pack_close(zc_pack *pack); /* NULL accepted */

uint64_t zc_pack_entry_count(const zc_pack *pack);

/* The bytes of the entry of key, read from the file (malloc'd; the caller
 * frees them): ZC_OK, ZC_MISS when the pack has no such key, or ZC_MISS with
 * a reason when they cannot be read (the file was cut since it was opened)
 * or, in a signed pack, do not match their record. The caller decodes them
 * (zc_entry_decode), which checks the rest. Thread-safe. */
zc_status zc_pack_find(const zc_pack *pack, const zc_key *key, uint8_t **entry, size_t *entry_size,
                       char *reason, size_t reason_size);

/* The key of the index'th entry, in key order: for listings. */
void zc_pack_key_at(const zc_pack *pack, uint64_t index, zc_key *key);

#endif
