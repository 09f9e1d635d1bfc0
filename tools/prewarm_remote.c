/* Collecting prewarm's work from Redis (prewarm_collect.h): the recipes
 * the nodes of a cluster recorded there, each verified (signature with the
 * secret, container checksums, the SPIR-V's digest) before any build, so a
 * damaged one is reported by key with its reason and the rest goes on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prewarm_collect.h"
#include "zecache/remote.h"

typedef struct key_set {
    zc_key *keys;
    size_t count, capacity;
    bool out_of_memory;
} key_set;

static bool add_key(void *context, const zc_key *key)
{
    key_set *set = context;
    if (set->count == set->capacity) {
        size_t capacity = set->capacity > 0 ? 2 * set->capacity : 256;
        zc_key *grown = realloc(set->keys, capacity * sizeof *grown);
        if (grown == NULL) {
            set->out_of_memory = true;
            return false;
        }
        set->keys = grown;
        set->capacity = capacity;
    }
    set->keys[set->count++] = *key;
    return true;
}

static int compare_keys(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(zc_key));
}

/* SCAN may name a key twice: each recorded key is built once. */
static void sort_unique(key_set *set)
{
    if (set->count < 2)
        return;
    qsort(set->keys, set->count, sizeof *set->keys, compare_keys);
    size_t kept = 1;
    for (size_t i = 1; i < set->count; i++)
        if (!zc_key_equal(&set->keys[i], &set->keys[kept - 1]))
            set->keys[kept++] = set->keys[i];
    set->count = kept;
}

static void free_blobs(uint8_t **blobs, size_t *sizes, uint32_t count)
{
    for (uint32_t i = 0; blobs != NULL && i < count; i++)
        free(blobs[i]);
    free(blobs);
    free(sizes);
}

/* The SPIR-V recipe names; an absent one stays NULL (prewarm_list_add says
 * so), a rejected one sets reason. False when out of memory. */
static bool read_blobs(zc_remote *remote, const zc_recipe *recipe, uint8_t ***blobs, size_t **sizes,
                       char *reason, size_t reason_size)
{
    *blobs = calloc(recipe->input_count, sizeof **blobs);
    *sizes = calloc(recipe->input_count, sizeof **sizes);
    if (*blobs == NULL || *sizes == NULL)
        return false;
    for (uint32_t i = 0; i < recipe->input_count && reason[0] == '\0'; i++) {
        char why[200] = "";
        if (zc_remote_read_input(remote, ZC_STORAGE_SPIRV, recipe->inputs[i].spirv_sha256,
                                 &(*blobs)[i], &(*sizes)[i], why, sizeof why) != ZC_OK &&
            why[0] != '\0')
            snprintf(reason, reason_size, "SPIR-V input %u: %s", i, why);
    }
    return true;
}

/* The recipe's SPIR-V read and the whole given to prewarm_list_add. */
static bool add_with_blobs(zc_remote *remote, const prewarm_filter *filter, prewarm_list *list,
                           const char *hex, uint8_t *bytes, size_t size, zc_recipe *recipe)
{
    uint8_t **blobs = NULL;
    size_t *sizes = NULL;
    char reason[256] = "";
    uint32_t count = recipe->input_count;
    bool read = read_blobs(remote, recipe, &blobs, &sizes, reason, sizeof reason);
    zc_recipe_free(recipe);
    if (read && reason[0] == '\0')
        return prewarm_list_add(list, filter, bytes, size, blobs, sizes, count);
    free_blobs(blobs, sizes, count);
    free(bytes);
    return read && prewarm_list_problem(list, hex, reason);
}

/* False when out of memory. */
static bool collect_key(zc_remote *remote, const prewarm_filter *filter, prewarm_list *list,
                        const zc_key *key)
{
    if (prewarm_list_has(list, key))
        return true; /* a directory had it */
    char hex[ZC_KEY_HEX_SIZE], reason[256] = "";
    zc_key_to_hex(key, hex);
    uint8_t *bytes = NULL;
    size_t size = 0;
    if (zc_remote_read_input(remote, ZC_STORAGE_RECIPE, key->bytes, &bytes, &size, reason,
                             sizeof reason) != ZC_OK)
        return reason[0] == '\0' || prewarm_list_problem(list, hex, reason); /* empty: evicted */
    zc_recipe recipe;
    if (zc_recipe_decode(bytes, size, key, &recipe, reason, sizeof reason) != ZC_OK) {
        free(bytes);
        return prewarm_list_problem(list, hex, reason);
    }
    if (!prewarm_filter_wants(filter, &recipe)) {
        zc_recipe_free(&recipe);
        free(bytes);
        return true;
    }
    return add_with_blobs(remote, filter, list, hex, bytes, size, &recipe);
}

static bool collect_keys(zc_remote *remote, const prewarm_filter *filter, prewarm_list *list,
                         char *reason, size_t reason_size)
{
    key_set set = {0};
    zc_status status = zc_remote_list_recipes(remote, add_key, &set);
    bool ok = !set.out_of_memory;
    if (ok && status != ZC_OK)
        ok = prewarm_list_problem(list, "remote", "cannot list the recorded inputs in Redis");
    sort_unique(&set);
    for (size_t i = 0; ok && i < set.count; i++)
        ok = collect_key(remote, filter, list, &set.keys[i]);
    free(set.keys);
    if (!ok)
        snprintf(reason, reason_size, "out of memory");
    return ok;
}

bool prewarm_collect_remote(const zc_config *config, const prewarm_filter *filter,
                            prewarm_list *list, char *reason, size_t reason_size)
{
    zc_cache_counters *counters = calloc(1, sizeof *counters);
    zc_remote *remote = NULL;
    bool ok = counters != NULL && zc_remote_open(config, counters, &remote) != ZC_ERR_NOMEM;
    if (!ok)
        snprintf(reason, reason_size, "out of memory");
    if (ok && remote != NULL)
        ok = collect_keys(remote, filter, list, reason, reason_size);
    zc_remote_close(remote);
    free(counters);
    return ok;
}
