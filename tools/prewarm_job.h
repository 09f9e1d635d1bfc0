/* The jobs `zecache prewarm` hands its build helpers (zecache-build), on
 * the helper's standard input, one after another:
 *   job id u32, recipe size u64, the sealed recipe (recipe.h), then for
 *   each of its inputs: blob size u64, the sealed SPIR-V
 * and the answer, one line per job on the helper's standard output:
 *   "<job id> <outcome> <64 hex key or -> <message>\n"
 * outcome: built (compiled and stored), present (already in the cache),
 * failed (message says why). Little-endian; sizes are bounded by the
 * sealed format's limit before anything is read. */
#ifndef ZECACHE_PREWARM_JOB_H
#define ZECACHE_PREWARM_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zecache/recipe.h"

/* A job's recipe with its SPIR-V, decoded and verified. */
typedef struct prewarm_job {
    uint32_t id;
    zc_recipe recipe;
    uint8_t **spirv;  /* recipe.input_count modules */
    uint32_t decoded; /* of them, how many were decoded (not the previous job's) */
} prewarm_job;

/* Writes job id with the sealed recipe and blobs; false when out fails. */
bool prewarm_job_write(FILE *out, uint32_t id, const uint8_t *recipe, size_t recipe_size,
                       uint8_t *const *blobs, const size_t *blob_sizes, uint32_t blob_count);

typedef enum prewarm_job_read {
    PREWARM_JOB_READY,   /* *job holds it */
    PREWARM_JOB_END,     /* the input ended between jobs */
    PREWARM_JOB_BAD,     /* damaged or cut short: reason; job->id is valid if it was read */
    PREWARM_JOB_UNREADY, /* read but not verified: reason (id valid) */
} prewarm_job_read;

/* previous (NULL: none) is the job read before, not freed yet: a SPIR-V it
 * has decoded (same SHA-256 and size) is taken from it instead of decoded
 * again, so that jobs of one module's SPIR-V, handed out one after another,
 * decode it once. */
prewarm_job_read prewarm_job_read_next(FILE *in, prewarm_job *previous, prewarm_job *job,
                                       char *reason, size_t reason_size);
void prewarm_job_free(prewarm_job *job);

#endif
