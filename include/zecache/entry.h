/* The on-disk entry format: a fixed, checksummed header followed by zstd
 * frames (each with content size and content checksum) holding the native
 * binary and then the build log: one frame up to ZC_ENTRY_FRAME_BYTES of
 * payload, else frames of about that size, which a load decompresses in
 * parallel. Readers take any number of frames whose contents add up to the
 * payload. A frame of 256 KiB or more that compresses less than 4x is
 * written stored (zstd stored blocks, the same content checksum:
 * source/local/stored_frame.h), so that a hit on it is a copy, not a decode;
 * it is a plain zstd frame, read like any other.
 *
 * Header, little-endian, ZC_ENTRY_HEADER_SIZE bytes:
 *   0  magic "ZECACHE\0"          8
 *   8  format version (u32)        = ZC_ENTRY_FORMAT_VERSION
 *  12  header size (u32)           = ZC_ENTRY_HEADER_SIZE
 *  16  key                         32
 *  48  binary size (u64)
 *  56  build log size (u64)
 *  64  compressed size (u64)       = file size - header size
 *  72  compile time, ns (u64)
 *  80  created, unix seconds (u64)
 *  88  flags (u32)                 0, or ZC_ENTRY_FLAG_SIGNED
 *  92  kind (u32)                  the key's (key.h): 0 Level Zero, 1 OpenCL;
 *                                 any other value is not an entry (0 was
 *                                 "reserved" before OpenCL, so every older
 *                                 entry reads as Level Zero's)
 *  96  device name                 64, NUL-padded
 * 160  driver version              32, NUL-padded
 * 192  header checksum             16: first 16 bytes of SHA-256 of bytes 0..191
 *
 * A signed entry (written for remote storages with a secret, remote_tag.h)
 * has ZC_ENTRY_FLAG_SIGNED and ends, after the frame, with
 * ZC_ENTRY_SIGNATURE_MAGIC and HMAC-SHA-256(secret, every byte before the
 * magic): one format in every directory and storage. A reader without the
 * secret verifies it as any entry, its signature unchecked; a reader with
 * the secret checks the signature first.
 */
#ifndef ZECACHE_ENTRY_H
#define ZECACHE_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/key.h"
#include "zecache/status.h"

#define ZC_ENTRY_MAGIC "ZECACHE"
#define ZC_ENTRY_FORMAT_VERSION 1u
#define ZC_ENTRY_HEADER_SIZE 208u
#define ZC_ENTRY_FLAG_SIGNED 1u
#define ZC_ENTRY_SIGNATURE_MAGIC "ZCHMAC1" /* with its NUL: 8 bytes */
#define ZC_ENTRY_SIGNATURE_SIZE (8u + 32u)
/* No entry holds more than this (binary + log), whatever its header says, so a
 * corrupt or hostile header cannot make a load allocate without bound. */
#define ZC_ENTRY_MAX_PAYLOAD (UINT64_C(1) << 30)
/* Payload per frame written: frames of 512 KiB cost about 3% in size against
 * one frame (26.27 binaries), and let a 1 MB binary decode on two cores. */
#define ZC_ENTRY_FRAME_BYTES ((size_t)512 << 10)

typedef struct zc_entry_header {
    uint32_t format_version;
    zc_key key; /* with its kind */
    uint64_t binary_size;
    uint64_t log_size;
    uint64_t compressed_size;
    uint32_t flags;
    zc_artifact_meta meta;
} zc_entry_header;

/* Serialises key (its kind with it) and artifact into a new malloc'd buffer. */
zc_status zc_entry_encode(const zc_key *key, const zc_artifact *artifact, int compression_level,
                          uint8_t **out, size_t *out_size);

/* Parses and checks the header alone (magic, version, header size, checksum,
 * flags, reserved, and compressed size against size). ZC_MISS with a reason
 * when it does not verify. */
zc_status zc_entry_read_header(const void *data, size_t size, zc_entry_header *header, char *reason,
                               size_t reason_size);

/* The header of an entry of size bytes from its first ZC_ENTRY_HEADER_SIZE
 * alone, as a value arrives: checked as above (but for the signature's
 * magic at the end), its key (and kind) against expected unless NULL and its payload
 * against max_payload unless 0. ZC_MISS with a reason otherwise. */
zc_status zc_entry_check_head(const uint8_t head[ZC_ENTRY_HEADER_SIZE], uint64_t size,
                              const zc_key *expected, uint64_t max_payload, zc_entry_header *header,
                              char *reason, size_t reason_size);

/* Verifies the entry of size bytes in file fd as zc_entry_decode does
 * (header, key, payload limit, frames, content sizes and checksums),
 * reading and decompressing it piece by piece into buffers of a bounded
 * size, whatever its size; the signature's tag is not checked
 * (remote_tag.h). ZC_MISS with a reason when it does not verify or cannot
 * be read. entry_stream.c. */
zc_status zc_entry_verify_fd(int fd, uint64_t size, const zc_key *expected, uint64_t max_payload,
                             char *reason, size_t reason_size);

/* Verifies everything (header as above, expected key unless NULL, payload no
 * larger than max_payload unless 0, frame content size equal to the header's,
 * zstd content checksum present and correct) and returns the artifact.
 * ZC_MISS with a reason for any mismatch; nothing unverified is returned. */
zc_status zc_entry_decode(const void *data, size_t size, const zc_key *expected,
                          uint64_t max_payload, zc_artifact **out, char *reason,
                          size_t reason_size);

/* Encodes and decodes a small entry on the calling thread: its decompression
 * context is made, and the decoder's and SHA-256's code and tables are
 * faulted in, which the thread's first real entry would otherwise pay for. */
void zc_entry_prepare_thread(void);

/* The kind the header of the size bytes at entry claims, unverified (a
 * load checks it with the rest): Level Zero when they are no entry or the
 * kind is unknown. */
zc_entry_kind zc_entry_claimed_kind(const uint8_t *entry, size_t size);

/* Sets ZC_ENTRY_FLAG_SIGNED (and the header checksum) in an encoded entry
 * of at least a header's size; the caller appends the signature. */
bool zc_entry_set_signed(uint8_t *entry);

/* The size of the largest entry whose payload is at most max_payload (0: the
 * format's ZC_ENTRY_MAX_PAYLOAD), however badly it compresses, signature
 * included: what a reader may refuse beyond without looking. */
uint64_t zc_entry_size_bound(uint64_t max_payload);

#endif
