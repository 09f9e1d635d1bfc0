/* Recorded inputs in bundles (tool_inputs.h). */
#include "tool_inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/disk_recipes.h"
#include "zecache/recipe.h"
#include "zecache/sealed.h"

bool tool_blob_pool_add(tool_blob_pool *pool, const uint8_t sha256[32], uint8_t *bytes, size_t size)
{
    if (pool->count == pool->capacity) {
        size_t capacity = pool->capacity > 0 ? 2 * pool->capacity : 32;
        void *sha = realloc(pool->sha256, capacity * 32);
        if (sha != NULL)
            pool->sha256 = sha;
        void *all = sha != NULL ? realloc(pool->bytes, capacity * sizeof *pool->bytes) : NULL;
        if (all != NULL)
            pool->bytes = all;
        void *sizes = all != NULL ? realloc(pool->sizes, capacity * sizeof *pool->sizes) : NULL;
        if (sizes != NULL)
            pool->sizes = sizes;
        void *spirv_sizes =
            sizes != NULL ? realloc(pool->spirv_sizes, capacity * sizeof *pool->spirv_sizes) : NULL;
        if (spirv_sizes == NULL)
            return false;
        pool->spirv_sizes = spirv_sizes;
        pool->capacity = capacity;
    }
    memcpy(pool->sha256[pool->count], sha256, 32);
    pool->bytes[pool->count] = bytes;
    pool->spirv_sizes[pool->count] = 0;
    pool->sizes[pool->count++] = size;
    return true;
}

long tool_blob_pool_find(const tool_blob_pool *pool, const uint8_t sha256[32])
{
    for (size_t i = 0; i < pool->count; i++)
        if (memcmp(pool->sha256[i], sha256, 32) == 0)
            return (long)i;
    return -1;
}

void tool_blob_pool_free(tool_blob_pool *pool)
{
    for (size_t i = 0; i < pool->count; i++)
        free(pool->bytes[i]);
    free(pool->sha256);
    free(pool->bytes);
    free(pool->sizes);
    free(pool->spirv_sizes);
    memset(pool, 0, sizeof *pool);
}

/* A SPIR-V that did not verify stays in the pool with this size, so that no
 * later recipe naming it has it read and decoded again. */
#define REFUSED_SIZE UINT64_MAX

/* Reads and verifies SPIR-V input i of recipe, and writes it: only when its
 * container declares the size the recipe does (so that no recipe has more
 * decompressed than it declares), and once. */
static tool_inputs_written write_blob(zc_disk_tier *tier, const zc_recipe_input *input, uint32_t i,
                                      zc_bundle_writer *writer, tool_blob_pool *written,
                                      char *problem, size_t problem_size)
{
    uint8_t *blob = NULL, *spirv = NULL;
    size_t size = 0, spirv_size = 0;
    uint64_t declared = 0;
    char why[200] = "the file is missing";
    zc_key as_key = {0};
    memcpy(as_key.bytes, input->spirv_sha256, 32);
    bool read = zc_disk_tier_read_blob(tier, input->spirv_sha256, &blob, &size) == ZC_OK;
    bool sized =
        read && zc_sealed_declared_size(blob, size, &declared) && declared == input->spirv_size;
    if (read && !sized)
        snprintf(why, sizeof why, "holds %llu bytes, not the %llu its recipe declares",
                 (unsigned long long)declared, (unsigned long long)input->spirv_size);
    bool good = sized && zc_spirv_blob_decode(blob, size, input->spirv_sha256, &spirv, &spirv_size,
                                              why, sizeof why) == ZC_OK;
    free(spirv);
    zc_status status = good ? zc_bundle_write_entry(writer, &as_key, blob, size) : ZC_OK;
    free(blob);
    /* Remembered once decoded, good or not; one of another size may yet be
     * right for a recipe declaring that size. */
    if (status != ZC_OK || (sized && !tool_blob_pool_add(written, input->spirv_sha256, NULL, 0)))
        return TOOL_INPUTS_FAILED;
    if (sized)
        written->spirv_sizes[written->count - 1] = good ? declared : REFUSED_SIZE;
    if (good)
        return TOOL_INPUTS_WRITTEN;
    snprintf(problem, problem_size, "SPIR-V input %u: %s", i, why);
    return TOOL_INPUTS_DAMAGED;
}

/* Writes each SPIR-V of recipe not written yet. */
static tool_inputs_written write_blobs(zc_disk_tier *tier, const zc_recipe *recipe,
                                       zc_bundle_writer *writer, tool_blob_pool *written,
                                       char *problem, size_t problem_size)
{
    for (uint32_t i = 0; i < recipe->input_count; i++) {
        const zc_recipe_input *input = &recipe->inputs[i];
        long found = tool_blob_pool_find(written, input->spirv_sha256);
        if (found >= 0 && written->spirv_sizes[found] == REFUSED_SIZE) {
            snprintf(problem, problem_size, "SPIR-V input %u does not verify", i);
            return TOOL_INPUTS_DAMAGED;
        }
        if (found >= 0 && written->spirv_sizes[found] != input->spirv_size) {
            snprintf(problem, problem_size,
                     "SPIR-V input %u holds %llu bytes, not the %llu its recipe declares", i,
                     (unsigned long long)written->spirv_sizes[found],
                     (unsigned long long)input->spirv_size);
            return TOOL_INPUTS_DAMAGED;
        }
        tool_inputs_written result =
            found >= 0 ? TOOL_INPUTS_WRITTEN
                       : write_blob(tier, input, i, writer, written, problem, problem_size);
        if (result != TOOL_INPUTS_WRITTEN)
            return result;
    }
    return TOOL_INPUTS_WRITTEN;
}

tool_inputs_written tool_write_inputs(zc_disk_tier *tier, const zc_key *key,
                                      zc_bundle_writer *writer, tool_blob_pool *written,
                                      char *problem, size_t problem_size)
{
    uint8_t *bytes = NULL;
    size_t size = 0;
    zc_recipe recipe;
    if (zc_disk_tier_read_recipe(tier, key, &bytes, &size) != ZC_OK)
        return TOOL_INPUTS_NONE;
    if (zc_recipe_decode(bytes, size, key, &recipe, problem, problem_size) != ZC_OK) {
        free(bytes);
        return TOOL_INPUTS_DAMAGED;
    }
    tool_inputs_written result = write_blobs(tier, &recipe, writer, written, problem, problem_size);
    if (result == TOOL_INPUTS_WRITTEN && zc_bundle_write_entry(writer, key, bytes, size) != ZC_OK)
        result = TOOL_INPUTS_FAILED;
    zc_recipe_free(&recipe);
    free(bytes);
    return result;
}

const zc_bundle_signer *tool_bundle_signer(const zc_config *config, zc_remote_secret *secret,
                                           zc_bundle_signer *signer, bool *failed, char *reason,
                                           size_t reason_size)
{
    return zc_remote_secret_signer(config->remote_secret_file, secret, signer, failed, reason,
                                   reason_size);
}
