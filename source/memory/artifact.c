/* One allocation per artifact: the header, then the binary, the log and a NUL,
 * so a reference is a single pointer and freeing it is a single free(). */
#include "zecache/artifact.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "monotonic_clock.h"

struct zc_artifact {
    atomic_size_t references;
    size_t binary_size;
    size_t log_size;
    size_t footprint;
    zc_artifact_meta meta;
    uint8_t bytes[]; /* binary_size bytes of binary, log_size of log, one NUL */
};

/* The allocation's size, or 0 when it would not fit in a size_t. */
static size_t allocation_size(size_t binary_size, size_t log_size)
{
    size_t fixed = sizeof(struct zc_artifact) + 1;
    if (binary_size > SIZE_MAX - fixed || log_size > SIZE_MAX - fixed - binary_size)
        return 0;
    return fixed + binary_size + log_size;
}

zc_artifact *zc_artifact_create_unfilled(size_t binary_size, size_t log_size,
                                         const zc_artifact_meta *meta, uint8_t **payload)
{
    size_t size = allocation_size(binary_size, log_size);
    if (size == 0)
        return NULL;
    zc_artifact *artifact = malloc(size);
    if (artifact == NULL)
        return NULL;
    atomic_init(&artifact->references, 1);
    artifact->binary_size = binary_size;
    artifact->log_size = log_size;
    artifact->footprint = size;
    if (meta != NULL)
        artifact->meta = *meta;
    else
        memset(&artifact->meta, 0, sizeof(artifact->meta));
    artifact->bytes[binary_size + log_size] = '\0';
    *payload = artifact->bytes;
    return artifact;
}

zc_artifact *zc_artifact_create(const void *binary, size_t binary_size, const char *log,
                                size_t log_size, const zc_artifact_meta *meta)
{
    if ((binary == NULL && binary_size != 0) || (log == NULL && log_size != 0))
        return NULL;
    uint8_t *payload;
    zc_artifact *artifact = zc_artifact_create_unfilled(binary_size, log_size, meta, &payload);
    if (artifact == NULL)
        return NULL;
    if (binary_size != 0)
        memcpy(payload, binary, binary_size);
    if (log_size != 0)
        memcpy(payload + binary_size, log, log_size);
    return artifact;
}

zc_artifact *zc_artifact_ref(const zc_artifact *artifact)
{
    /* The count is the one part of an artifact that changes after it is
     * shared. Relaxed is enough: whoever hands out a reference already
     * holds one. */
    zc_artifact *shared = (zc_artifact *)artifact;
    if (shared != NULL)
        atomic_fetch_add_explicit(&shared->references, 1, memory_order_relaxed);
    return shared;
}

void zc_artifact_unref(zc_artifact *artifact)
{
    if (artifact == NULL)
        return;
    /* Release so every holder's reads happen before the free; acquire in the
     * last holder so the free happens after all of them. */
    if (atomic_fetch_sub_explicit(&artifact->references, 1, memory_order_acq_rel) == 1)
        free(artifact);
}

const uint8_t *zc_artifact_binary(const zc_artifact *artifact, size_t *size)
{
    if (size != NULL)
        *size = artifact->binary_size;
    return artifact->bytes;
}

const char *zc_artifact_build_log(const zc_artifact *artifact, size_t *size)
{
    if (size != NULL)
        *size = artifact->log_size;
    return (const char *)artifact->bytes + artifact->binary_size;
}

const zc_artifact_meta *zc_artifact_meta_of(const zc_artifact *artifact)
{
    return &artifact->meta;
}

const uint8_t *zc_artifact_payload(const zc_artifact *artifact, size_t *size)
{
    *size = artifact->binary_size + artifact->log_size;
    return artifact->bytes;
}

size_t zc_artifact_footprint(const zc_artifact *artifact)
{
    return artifact->footprint;
}

uint64_t zc_artifact_clock_ns(void)
{
    return zc_monotonic_ns();
}
