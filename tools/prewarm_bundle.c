/* prewarm --from FILE: the recorded inputs of an input bundle (zecache
 * record, or an export). The whole bundle is read and its checksum or
 * signature checked before anything is built: a damaged bundle builds
 * nothing, and says why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prewarm_collect.h"
#include "tool_inputs.h"

typedef struct pending_recipes {
    uint8_t **bytes;
    size_t *sizes;
    size_t count;
} pending_recipes;

static bool keep_recipe(pending_recipes *pending, uint8_t *bytes, size_t size)
{
    uint8_t **grown = realloc(pending->bytes, (pending->count + 1) * sizeof *grown);
    if (grown != NULL)
        pending->bytes = grown;
    size_t *sizes =
        grown != NULL ? realloc(pending->sizes, (pending->count + 1) * sizeof *sizes) : NULL;
    if (sizes == NULL)
        return false;
    pending->sizes = sizes;
    pending->bytes[pending->count] = bytes;
    pending->sizes[pending->count++] = size;
    return true;
}

/* Reads every item; ZC_BUNDLE_END only when the whole bundle checked out. */
static zc_bundle_item read_all(zc_bundle_reader *reader, tool_blob_pool *blobs,
                               pending_recipes *pending, char *reason, size_t reason_size)
{
    for (;;) {
        zc_key key;
        uint8_t *bytes = NULL;
        size_t size = 0;
        zc_bundle_item item = zc_bundle_read_next(reader, &key, &bytes, &size, reason, reason_size);
        if (item != ZC_BUNDLE_ENTRY)
            return item;
        zc_bundle_kind kind = zc_bundle_kind_of(bytes, size);
        bool kept = kind == ZC_BUNDLE_KIND_SPIRV ? tool_blob_pool_add(blobs, key.bytes, bytes, size)
                    : kind == ZC_BUNDLE_KIND_RECIPE ? keep_recipe(pending, bytes, size)
                                                    : false; /* entries: native code, not built */
        if (!kept)
            free(bytes);
    }
}

/* A copy of each SPIR-V the recipe names (the list takes them) that the
 * list's pool does not have yet; NULL for the others, and for one the
 * bundle lacks: prewarm_list_add reports it. */
static bool add_recipe(prewarm_list *list, const prewarm_filter *filter, const tool_blob_pool *pool,
                       uint8_t *bytes, size_t size)
{
    zc_recipe recipe;
    char reason[256];
    if (zc_recipe_decode(bytes, size, NULL, &recipe, reason, sizeof reason) != ZC_OK) {
        free(bytes);
        return prewarm_list_problem(list, "a recipe of the bundle", reason);
    }
    uint32_t count = recipe.input_count;
    uint8_t **blobs = calloc(count, sizeof *blobs);
    size_t *sizes = calloc(count, sizeof *sizes);
    bool ok = blobs != NULL && sizes != NULL;
    for (uint32_t i = 0; ok && i < count; i++) {
        long found = tool_blob_pool_find(pool, recipe.inputs[i].spirv_sha256);
        if (found < 0 || tool_blob_pool_find(&list->blobs, recipe.inputs[i].spirv_sha256) >= 0)
            continue;
        blobs[i] = malloc(pool->sizes[found]);
        ok = blobs[i] != NULL;
        if (ok)
            memcpy(blobs[i], pool->bytes[found], pool->sizes[found]);
        sizes[i] = pool->sizes[found];
    }
    zc_recipe_free(&recipe);
    if (!ok) {
        for (uint32_t i = 0; blobs != NULL && i < count; i++)
            free(blobs[i]);
        free(blobs);
        free(sizes);
        free(bytes);
        return false;
    }
    return prewarm_list_add(list, filter, bytes, size, blobs, sizes, count);
}

bool prewarm_collect_bundle(const char *path, const zc_config *config, const prewarm_filter *filter,
                            prewarm_list *list, char *reason, size_t reason_size)
{
    FILE *in = fopen(path, "rb");
    if (in == NULL) {
        snprintf(reason, reason_size, "cannot open %s", path);
        return false;
    }
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    bool failed;
    const zc_bundle_signer *sign =
        tool_bundle_signer(config, &secret, &signer, &failed, reason, reason_size);
    zc_bundle_reader reader = {0};
    tool_blob_pool blobs = {0};
    pending_recipes pending = {0};
    zc_bundle_item item = ZC_BUNDLE_BAD;
    if (!failed && zc_bundle_read_start_signed(&reader, in, sign, reason, reason_size) == ZC_OK)
        item = read_all(&reader, &blobs, &pending, reason, reason_size);
    zc_bundle_reader_close(&reader);
    fclose(in);
    bool ok = item == ZC_BUNDLE_END;
    for (size_t i = 0; i < pending.count; i++) {
        if (ok)
            ok = add_recipe(list, filter, &blobs, pending.bytes[i], pending.sizes[i]);
        else
            free(pending.bytes[i]);
    }
    free(pending.bytes);
    free(pending.sizes);
    tool_blob_pool_free(&blobs);
    if (item != ZC_BUNDLE_END) {
        char why[256];
        snprintf(why, sizeof why, "%s", reason);
        snprintf(reason, reason_size,
                 "%s: refusing a damaged or unusable bundle: %s; nothing built", path, why);
    }
    return ok;
}
