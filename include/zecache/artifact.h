/* An immutable, reference-counted compile result: the native binary, the
 * build log of the compile that produced it, and metadata for inspection.
 * The memory tier hands out references; the disk tier stores and loads it. */
#ifndef ZECACHE_ARTIFACT_H
#define ZECACHE_ARTIFACT_H

#include <stddef.h>
#include <stdint.h>

typedef struct zc_artifact_meta {
    char device_name[64];    /* e.g. "Intel(R) Graphics [0xff20]" */
    char driver_version[32]; /* the driver's version, as text */
    uint64_t compile_ns;     /* how long the original compile took (zc_artifact_clock_ns) */
    uint64_t created_unix;   /* seconds since the epoch when compiled */
} zc_artifact_meta;

typedef struct zc_artifact zc_artifact;

/* The monotonic clock compile times are measured with, in nanoseconds. */
uint64_t zc_artifact_clock_ns(void);

/* Copies binary and log (log may be NULL with log_size 0). The result has one
 * reference. meta may be NULL (all zero). Returns NULL on allocation failure. */
zc_artifact *zc_artifact_create(const void *binary, size_t binary_size, const char *log,
                                size_t log_size, const zc_artifact_meta *meta);

/* An artifact whose binary_size + log_size payload bytes (binary, then log)
 * the caller fills through *payload before sharing any reference, so a
 * decoder can decompress straight into place with no second buffer. */
zc_artifact *zc_artifact_create_unfilled(size_t binary_size, size_t log_size,
                                         const zc_artifact_meta *meta, uint8_t **payload);

/* A new reference; artifact may be const, since a reference changes
 * nothing anyone reads. */
zc_artifact *zc_artifact_ref(const zc_artifact *artifact);
void zc_artifact_unref(zc_artifact *artifact); /* NULL is accepted */

const uint8_t *zc_artifact_binary(const zc_artifact *artifact, size_t *size);
/* The log's bytes; not necessarily NUL-terminated within log_size, but a NUL
 * always follows the last byte. */
const char *zc_artifact_build_log(const zc_artifact *artifact, size_t *size);
const zc_artifact_meta *zc_artifact_meta_of(const zc_artifact *artifact);
/* The binary and the log as one contiguous run of bytes, as entries store it. */
const uint8_t *zc_artifact_payload(const zc_artifact *artifact, size_t *size);

/* Bytes charged against the memory tier's budget for this artifact. */
size_t zc_artifact_footprint(const zc_artifact *artifact);

#endif
