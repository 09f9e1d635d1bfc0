/* The prewarm job stream (prewarm_job.h), written by `zecache prewarm` and
 * read by its build helper, which trusts it no more than a file: every
 * size is bounded and every container verified before use. */
#include "prewarm_job.h"

#include <stdlib.h>
#include <string.h>

static bool write_u32(FILE *out, uint32_t value)
{
    uint8_t bytes[4] = {(uint8_t)value, (uint8_t)(value >> 8), (uint8_t)(value >> 16),
                        (uint8_t)(value >> 24)};
    return fwrite(bytes, 1, 4, out) == 4;
}

static bool write_sized(FILE *out, const uint8_t *data, size_t size)
{
    uint8_t bytes[8];
    for (int i = 0; i < 8; i++)
        bytes[i] = (uint8_t)((uint64_t)size >> (8 * i));
    return fwrite(bytes, 1, 8, out) == 8 && fwrite(data, 1, size, out) == size;
}

bool prewarm_job_write(FILE *out, uint32_t id, const uint8_t *recipe, size_t recipe_size,
                       uint8_t *const *blobs, const size_t *blob_sizes, uint32_t blob_count)
{
    bool ok = write_u32(out, id) && write_sized(out, recipe, recipe_size);
    for (uint32_t i = 0; ok && i < blob_count; i++)
        ok = write_sized(out, blobs[i], blob_sizes[i]);
    return ok && fflush(out) == 0;
}

static uint8_t *read_sized(FILE *in, size_t *size)
{
    uint8_t bytes[8];
    if (fread(bytes, 1, 8, in) != 8)
        return NULL;
    uint64_t value = 0;
    for (int i = 0; i < 8; i++)
        value |= (uint64_t)bytes[i] << (8 * i);
    if (value == 0 || value > ZC_SEALED_MAX_CONTENT + ZC_SEALED_HEADER_SIZE)
        return NULL;
    uint8_t *data = malloc((size_t)value);
    if (data != NULL && fread(data, 1, (size_t)value, in) != value) {
        free(data);
        data = NULL;
    }
    *size = (size_t)value;
    return data;
}

/* previous's decoded SPIR-V of that SHA-256 and size, taken from it; NULL
 * when it has none. */
static uint8_t *take_decoded(prewarm_job *previous, const zc_recipe_input *input)
{
    for (uint32_t j = 0;
         previous != NULL && previous->spirv != NULL && j < previous->recipe.input_count; j++) {
        const zc_recipe_input *had = &previous->recipe.inputs[j];
        uint8_t *spirv = previous->spirv[j];
        if (spirv != NULL && had->spirv_size == input->spirv_size &&
            memcmp(had->spirv_sha256, input->spirv_sha256, 32) == 0) {
            previous->spirv[j] = NULL;
            return spirv;
        }
    }
    return NULL;
}

/* Decodes one input's blob, never past the size its recipe declares. */
static bool decode_input(const uint8_t *blob, size_t size, const zc_recipe_input *input, uint32_t i,
                         uint8_t **spirv, char *reason, size_t reason_size)
{
    uint64_t declared = 0;
    size_t spirv_size = 0;
    if (!zc_sealed_declared_size(blob, size, &declared) || declared != input->spirv_size) {
        snprintf(reason, reason_size, "SPIR-V input %u is not of the size its recipe declares", i);
        return false;
    }
    return zc_spirv_blob_decode(blob, size, input->spirv_sha256, spirv, &spirv_size, reason,
                                reason_size) == ZC_OK &&
           spirv_size == input->spirv_size;
}

static prewarm_job_read read_inputs(FILE *in, prewarm_job *previous, prewarm_job *job, char *reason,
                                    size_t reason_size)
{
    job->spirv = calloc(job->recipe.input_count, sizeof *job->spirv);
    if (job->spirv == NULL)
        return PREWARM_JOB_BAD;
    prewarm_job_read result = PREWARM_JOB_READY;
    for (uint32_t i = 0; i < job->recipe.input_count; i++) {
        size_t size = 0;
        uint8_t *blob = read_sized(in, &size);
        if (blob == NULL) {
            snprintf(reason, reason_size, "job stream cut short");
            return PREWARM_JOB_BAD;
        }
        const zc_recipe_input *input = &job->recipe.inputs[i];
        if (result == PREWARM_JOB_READY &&
            (job->spirv[i] = take_decoded(previous, input)) == NULL) {
            job->decoded++;
            if (!decode_input(blob, size, input, i, &job->spirv[i], reason, reason_size))
                result = PREWARM_JOB_UNREADY;
        }
        free(blob);
    }
    return result;
}

prewarm_job_read prewarm_job_read_next(FILE *in, prewarm_job *previous, prewarm_job *job,
                                       char *reason, size_t reason_size)
{
    memset(job, 0, sizeof *job);
    uint8_t id[4];
    size_t got = fread(id, 1, 4, in);
    if (got == 0 && feof(in))
        return PREWARM_JOB_END;
    if (got != 4) {
        snprintf(reason, reason_size, "job stream cut short");
        return PREWARM_JOB_BAD;
    }
    job->id =
        (uint32_t)id[0] | (uint32_t)id[1] << 8 | (uint32_t)id[2] << 16 | (uint32_t)id[3] << 24;
    size_t size = 0;
    uint8_t *recipe = read_sized(in, &size);
    if (recipe == NULL) {
        snprintf(reason, reason_size, "job stream cut short");
        return PREWARM_JOB_BAD;
    }
    zc_status status = zc_recipe_decode(recipe, size, NULL, &job->recipe, reason, reason_size);
    free(recipe);
    /* Without a recipe the number of blobs that follow is unknown. */
    return status == ZC_OK ? read_inputs(in, previous, job, reason, reason_size) : PREWARM_JOB_BAD;
}

void prewarm_job_free(prewarm_job *job)
{
    for (uint32_t i = 0; job->spirv != NULL && i < job->recipe.input_count; i++)
        free(job->spirv[i]);
    free(job->spirv);
    zc_recipe_free(&job->recipe);
    memset(job, 0, sizeof *job);
}
