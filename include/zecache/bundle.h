/* Bundles: many cache entries in one file, to pre-warm a container image or
 * a new machine (`zecache export` / `zecache import`), and the recorded
 * inputs that build them again (`zecache record`, `zecache prewarm --from`).
 *
 * Little-endian, in this order:
 *   header   magic "ZCBUNDLE" (8), format version u32 (1 or 2),
 *            flags u32 (version 1: 0; version 2: ZC_BUNDLE_FLAG_SIGNED or 0)
 *   items    each: key (32), size u64 (1..ZC_BUNDLE_MAX_ENTRY_SIZE), then
 *            the bytes exactly as the cache directory holds them: an entry
 *            (.l0_cache, key = its key), a recipe (.recipe, key = its
 *            entry's key) or a SPIR-V (.spirv, key = its SHA-256); their
 *            magic tells which (zc_bundle_kind_of)
 *   end      32 zero bytes, u64 0, then the number of items u64; version 2
 *            then has a 32-byte tag: the SHA-256 of every byte before it,
 *            or, signed, HMAC-SHA-256(secret, that SHA-256)
 * Nothing may follow the end. The reader trusts nothing: every size is
 * bounded before use, memory grows only with the bytes actually read, and a
 * bundle that ends early or whose end does not count its entries is bad.
 * Entries are not verified here: the disk tier does that on import. */
#ifndef ZECACHE_BUNDLE_H
#define ZECACHE_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zecache/key.h"
#include "zecache/status.h"

#define ZC_BUNDLE_MAGIC "ZCBUNDLE"
#define ZC_BUNDLE_FORMAT_VERSION 2u
#define ZC_BUNDLE_FLAG_SIGNED 1u
#define ZC_BUNDLE_TAG_SIZE 32u
#define ZC_BUNDLE_HEADER_SIZE 16u
/* Above any entry a load accepts (header + zstd bound of the largest payload). */
#define ZC_BUNDLE_MAX_ENTRY_SIZE ((UINT64_C(1) << 30) + (UINT64_C(1) << 24))

typedef enum zc_bundle_kind {
    ZC_BUNDLE_KIND_ENTRY,
    ZC_BUNDLE_KIND_RECIPE,
    ZC_BUNDLE_KIND_SPIRV,
    ZC_BUNDLE_KIND_UNKNOWN,
} zc_bundle_kind;

/* What an item's bytes are, by their magic. */
zc_bundle_kind zc_bundle_kind_of(const uint8_t *bytes, size_t size);

/* Signs a digest (HMAC-SHA-256, remote_tag.h's zc_hmac_sha256): passed in,
 * since this part does not link the remote tier. */
typedef bool (*zc_bundle_sign_fn)(const void *key, size_t key_size, const void *data, size_t size,
                                  uint8_t tag[32]);

typedef struct zc_bundle_signer {
    zc_bundle_sign_fn sign;
    const void *key;
    size_t key_size;
} zc_bundle_signer;

typedef struct zc_bundle_writer {
    FILE *out;
    uint64_t entries; /* items written */
    struct zc_sha256 *digest;
    zc_bundle_signer signer; /* sign NULL: unsigned */
} zc_bundle_writer;

/* ZC_ERR_IO when out fails (errno set by stdio). signer may be NULL
 * (unsigned). Pair with zc_bundle_writer_close. */
zc_status zc_bundle_write_start(zc_bundle_writer *writer, FILE *out);
zc_status zc_bundle_write_start_signed(zc_bundle_writer *writer, FILE *out,
                                       const zc_bundle_signer *signer);
void zc_bundle_writer_close(zc_bundle_writer *writer);
zc_status zc_bundle_write_entry(zc_bundle_writer *writer, const zc_key *key, const void *entry,
                                size_t entry_size);
/* Writes the end and flushes. */
zc_status zc_bundle_write_end(zc_bundle_writer *writer);

typedef struct zc_bundle_reader {
    FILE *in;
    FILE *copy;       /* NULL, or where every byte read from in is written too */
    bool copy_failed; /* writing to copy failed: the reader reports BAD */
    uint64_t entries; /* items read so far */
    uint32_t version;
    bool is_signed;
    struct zc_sha256 *digest; /* version 2: of every byte read */
    zc_bundle_signer signer;
} zc_bundle_reader;

/* ZC_OK, or ZC_MISS with the reason when in does not start with a bundle
 * header of a version this reader knows. With a signer, a bundle must be
 * signed with its key; without one, a signed bundle is refused too (its
 * tag cannot be checked). Pair with zc_bundle_reader_close. */
zc_status zc_bundle_read_start(zc_bundle_reader *reader, FILE *in, char *reason,
                               size_t reason_size);
zc_status zc_bundle_read_start_signed(zc_bundle_reader *reader, FILE *in,
                                      const zc_bundle_signer *signer, char *reason,
                                      size_t reason_size);
/* The same, writing every byte it reads from in (header, items, end, tag)
 * to copy as well: a reader that gets ZC_BUNDLE_END has checked exactly the
 * bytes copy holds, so a file someone else can write is read once, into a
 * copy only this process can write, and imported from that copy. A failed
 * write to copy makes the next item ZC_BUNDLE_BAD. */
zc_status zc_bundle_read_start_copying(zc_bundle_reader *reader, FILE *in,
                                       const zc_bundle_signer *signer, FILE *copy, char *reason,
                                       size_t reason_size);
void zc_bundle_reader_close(zc_bundle_reader *reader);

typedef enum zc_bundle_item {
    ZC_BUNDLE_ENTRY, /* *entry (malloc'd, the caller frees it) holds *entry_size bytes */
    ZC_BUNDLE_END,   /* the end, correct (count, digest or signature), nothing after it */
    ZC_BUNDLE_BAD,   /* truncated or malformed (reason says how): stop reading */
} zc_bundle_item;

zc_bundle_item zc_bundle_read_next(zc_bundle_reader *reader, zc_key *key, uint8_t **entry,
                                   size_t *entry_size, char *reason, size_t reason_size);

#endif
