/* Collecting prewarm's work (prewarm_collect.h). Everything is verified
 * here, before any build, so that damaged inputs are reported by key with
 * their reason and the rest goes on. */
#include "prewarm_collect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/disk_maintenance.h"
#include "zecache/disk_recipes.h"

bool prewarm_list_problem(prewarm_list *list, const char *what, const char *reason)
{
    char **grown = realloc(list->problems, (list->problem_count + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    list->problems = grown;
    size_t size = strlen(what) + strlen(reason) + 3;
    char *text = malloc(size);
    if (text == NULL)
        return false;
    snprintf(text, size, "%s: %s", what, reason);
    list->problems[list->problem_count++] = text;
    return true;
}

static void free_buffers(uint8_t *recipe, uint8_t **blobs, size_t *sizes, uint32_t count)
{
    for (uint32_t i = 0; blobs != NULL && i < count; i++)
        free(blobs[i]);
    free(blobs);
    free(sizes);
    free(recipe);
}

bool prewarm_filter_wants(const prewarm_filter *filter, const zc_recipe *recipe)
{
    if (filter->device != NULL && strstr(recipe->device_name, filter->device) == NULL)
        return false;
    /* A key listed in a file says no API: its bytes tell the entry. */
    for (size_t i = 0; filter->keys != NULL && i < filter->key_count; i++)
        if (memcmp(filter->keys[i].bytes, recipe->key.bytes, ZC_KEY_SIZE) == 0)
            return true;
    return filter->keys == NULL;
}

/* Input i's SPIR-V in the list's pool, decoded and verified once however
 * many recipes name it: blob (taken; NULL when the caller left it to the
 * pool) is decoded only when the pool lacks its SHA-256, and only when its
 * container declares the size the recipe does, so that no recipe has more
 * decompressed than it declares. One that does not verify stays in the pool
 * as refused (bytes NULL), not to be decoded again. The pool's index; -1
 * with reason for a missing, refused or other-sized SPIR-V; -2 when out of
 * memory. */
static long pooled_blob(prewarm_list *list, const zc_recipe_input *input, uint32_t i, uint8_t *blob,
                        size_t size, char *reason, size_t reason_size)
{
    tool_blob_pool *pool = &list->blobs;
    long found = tool_blob_pool_find(pool, input->spirv_sha256);
    uint64_t declared = 0;
    if (found >= 0 || blob == NULL) {
        free(blob);
        if (found < 0)
            (void)zc_explain(ZC_MISS, reason, reason_size, "SPIR-V input %u is missing", i);
        else if (pool->spirv_sizes[found] != input->spirv_size)
            (void)zc_explain(ZC_MISS, reason, reason_size, "SPIR-V input %u has another size", i);
        else if (pool->bytes[found] == NULL)
            (void)zc_explain(ZC_MISS, reason, reason_size, "SPIR-V input %u does not verify", i);
        return found >= 0 && pool->spirv_sizes[found] == input->spirv_size &&
                       pool->bytes[found] != NULL
                   ? found
                   : -1;
    }
    if (!zc_sealed_declared_size(blob, size, &declared) || declared != input->spirv_size) {
        free(blob);
        (void)zc_explain(ZC_MISS, reason, reason_size,
                         "SPIR-V input %u holds %llu bytes, not the %llu its recipe declares", i,
                         (unsigned long long)declared, (unsigned long long)input->spirv_size);
        return -1;
    }
    uint8_t *spirv = NULL;
    size_t spirv_size = 0;
    char why[200] = "";
    list->spirv_decodes++;
    zc_status status =
        zc_spirv_blob_decode(blob, size, input->spirv_sha256, &spirv, &spirv_size, why, sizeof why);
    free(spirv);
    if (status != ZC_OK) {
        free(blob);
        blob = NULL;
        size = 0;
    }
    if (!tool_blob_pool_add(pool, input->spirv_sha256, blob, size)) {
        free(blob);
        return -2;
    }
    pool->spirv_sizes[pool->count - 1] = input->spirv_size;
    if (status == ZC_OK)
        return (long)pool->count - 1;
    (void)zc_explain(ZC_MISS, reason, reason_size, "SPIR-V input %u: %s", i, why);
    return -1;
}

/* Puts blobs (taken, each freed or the pool's) in the list's pool, leaving
 * in blobs and sizes the pool's: 0, -1 with reason when one is not usable,
 * -2 when out of memory. */
static int pool_blobs(prewarm_list *list, const zc_recipe *recipe, uint8_t **blobs, size_t *sizes,
                      uint32_t count, char *reason, size_t reason_size)
{
    long result = 0;
    if (count != recipe->input_count) {
        (void)zc_explain(ZC_MISS, reason, reason_size, "%u SPIR-V inputs for %u in its recipe",
                         count, recipe->input_count);
        result = -1;
    }
    for (uint32_t i = 0; i < count; i++) {
        long found = -1;
        if (result >= 0)
            found =
                pooled_blob(list, &recipe->inputs[i], i, blobs[i], sizes[i], reason, reason_size);
        else
            free(blobs[i]);
        blobs[i] = found >= 0 ? list->blobs.bytes[found] : NULL;
        sizes[i] = found >= 0 ? list->blobs.sizes[found] : 0;
        if (result >= 0 && found < 0)
            result = found;
    }
    return (int)result;
}

/* An OpenCL recipe's build variables as one text (prewarm_item); NULL
 * when out of memory. */
static char *variables_text(const zc_recipe_opencl *opencl)
{
    size_t size = 1;
    for (uint32_t i = 0; i < opencl->variable_count; i++) {
        const zc_recipe_variable *variable = &opencl->variables[i];
        size += strlen(variable->name) + 2 + (variable->value ? strlen(variable->value) : 0);
    }
    char *text = malloc(size);
    size_t used = 0;
    for (uint32_t i = 0; text != NULL && i < opencl->variable_count; i++) {
        const zc_recipe_variable *variable = &opencl->variables[i];
        used += (size_t)snprintf(text + used, size - used, "%s%s%s\n", variable->name,
                                 variable->value != NULL ? "=" : "",
                                 variable->value != NULL ? variable->value : "");
    }
    if (text != NULL)
        text[used] = '\0';
    return text;
}

static bool append(prewarm_list *list, const zc_recipe *recipe, uint8_t *bytes, size_t size,
                   uint8_t **blobs, size_t *sizes, uint32_t count)
{
    if (list->count == list->capacity) {
        size_t capacity = list->capacity > 0 ? 2 * list->capacity : 64;
        prewarm_item *grown = realloc(list->items, capacity * sizeof *grown);
        if (grown == NULL)
            return false;
        list->items = grown;
        list->capacity = capacity;
    }
    char *device = strdup(recipe->device_name);
    char *variables = recipe->opencl != NULL ? variables_text(recipe->opencl) : NULL;
    if (device == NULL || (recipe->opencl != NULL && variables == NULL)) {
        free(device);
        free(variables);
        return false;
    }
    list->items[list->count++] = (prewarm_item){
        recipe->key, recipe->opencl != NULL, variables, device, bytes, size, blobs, sizes, count};
    return true;
}

bool prewarm_list_add(prewarm_list *list, const prewarm_filter *filter, uint8_t *recipe_bytes,
                      size_t recipe_size, uint8_t **blobs, size_t *blob_sizes, uint32_t count)
{
    zc_recipe recipe;
    char reason[256] = "";
    zc_status status =
        zc_recipe_decode(recipe_bytes, recipe_size, NULL, &recipe, reason, sizeof reason);
    bool ok = true;
    if (status != ZC_OK) {
        ok = prewarm_list_problem(list, "recorded inputs", reason);
    } else if (prewarm_filter_wants(filter, &recipe)) {
        char hex[ZC_KEY_HEX_SIZE];
        zc_key_to_hex(&recipe.key, hex);
        int pooled = pool_blobs(list, &recipe, blobs, blob_sizes, count, reason, sizeof reason);
        if (pooled == -1)
            ok = prewarm_list_problem(list, hex, reason);
        else if (pooled == 0 &&
                 (ok = append(list, &recipe, recipe_bytes, recipe_size, blobs, blob_sizes, count)))
            recipe_bytes = NULL, blobs = NULL, blob_sizes = NULL; /* taken */
        ok = ok && pooled != -2;
        count = 0; /* each blob is the pool's or freed */
    }
    if (status == ZC_OK)
        zc_recipe_free(&recipe);
    free_buffers(recipe_bytes, blobs, blob_sizes, count);
    return ok;
}

typedef struct cache_walk {
    zc_disk_tier *tier;
    const prewarm_filter *filter;
    prewarm_list *list;
    bool out_of_memory;
    bool skip_listed; /* not the first directory: skip keys already listed */
} cache_walk;

/* The blobs a recipe names, as stored (verified by prewarm_list_add), but
 * for those the list's pool has already (left NULL). */
static bool read_blobs(zc_disk_tier *tier, const prewarm_list *list, const zc_recipe *recipe,
                       uint8_t ***blobs, size_t **sizes)
{
    *blobs = calloc(recipe->input_count, sizeof **blobs);
    *sizes = calloc(recipe->input_count, sizeof **sizes);
    if (*blobs == NULL || *sizes == NULL)
        return false;
    for (uint32_t i = 0; i < recipe->input_count; i++)
        if (tool_blob_pool_find(&list->blobs, recipe->inputs[i].spirv_sha256) >= 0 ||
            zc_disk_tier_read_blob(tier, recipe->inputs[i].spirv_sha256, &(*blobs)[i],
                                   &(*sizes)[i]) != ZC_OK)
            (*blobs)[i] = NULL;
    return true;
}

bool prewarm_list_has(const prewarm_list *list, const zc_key *key)
{
    /* By the bytes: a key listed by a storage says no API (Redis's names). */
    for (size_t i = 0; i < list->count; i++)
        if (memcmp(list->items[i].recorded_key.bytes, key->bytes, ZC_KEY_SIZE) == 0)
            return true;
    return false;
}

static int collect_entry(void *context, const zc_disk_entry_info *info)
{
    cache_walk *walk = context;
    if (!info->is_zecache || info->last_use_sec < walk->filter->used_since_unix)
        return 0;
    /* Another directory (a file:// storage) may hold the same entry. */
    if (walk->skip_listed && prewarm_list_has(walk->list, &info->key))
        return 0;
    uint8_t *bytes = NULL, **blobs = NULL;
    size_t size = 0, *sizes = NULL;
    zc_recipe recipe;
    char reason[256] = "", hex[ZC_KEY_HEX_SIZE];
    if (zc_disk_tier_read_recipe(walk->tier, &info->key, &bytes, &size) != ZC_OK) {
        walk->list->without_inputs++;
        return 0;
    }
    zc_key_to_hex(&info->key, hex);
    if (zc_recipe_decode(bytes, size, &info->key, &recipe, reason, sizeof reason) != ZC_OK) {
        free(bytes);
        walk->out_of_memory = !prewarm_list_problem(walk->list, hex, reason);
        return walk->out_of_memory;
    }
    uint32_t count = recipe.input_count;
    bool read = prewarm_filter_wants(walk->filter, &recipe) &&
                read_blobs(walk->tier, walk->list, &recipe, &blobs, &sizes);
    zc_recipe_free(&recipe);
    if (read)
        walk->out_of_memory =
            !prewarm_list_add(walk->list, walk->filter, bytes, size, blobs, sizes, count);
    else
        free_buffers(bytes, blobs, sizes, count);
    return walk->out_of_memory;
}

bool prewarm_collect_cache(zc_disk_tier *tier, const prewarm_filter *filter, prewarm_list *list,
                           char *reason, size_t reason_size)
{
    cache_walk walk = {tier, filter, list, false, list->count > 0 || list->problem_count > 0};
    zc_status status = zc_disk_tier_foreach(tier, collect_entry, &walk);
    if (status != ZC_OK || walk.out_of_memory)
        snprintf(reason, reason_size, "%s",
                 walk.out_of_memory ? "out of memory" : "cannot read the cache directory");
    return status == ZC_OK && !walk.out_of_memory;
}

void prewarm_list_free(prewarm_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        prewarm_item *item = &list->items[i];
        free(item->device_name);
        free(item->build_variables);
        free_buffers(item->recipe, item->blobs, item->blob_sizes, 0); /* blobs: the pool's */
    }
    tool_blob_pool_free(&list->blobs);
    for (size_t i = 0; i < list->problem_count; i++)
        free(list->problems[i]);
    free(list->items);
    free(list->problems);
    memset(list, 0, sizeof *list);
}
