/* See pack_set.h. */
#include "pack_set.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/entry.h"
#include "zecache/log.h"
#include "zecache/pack.h"
#include "zecache/remote_tag.h"

enum { MAX_PACKS = 16, REASON_SIZE = 256 };

struct zc_pack_set {
    zc_pack *packs[MAX_PACKS];
    char *names[MAX_PACKS];
    size_t count;
    zc_cache_counters *counters;
};

static void reject(zc_pack_set *set, const char *path, const char *reason)
{
    atomic_fetch_add_explicit(&set->counters->pack_rejected, 1, memory_order_relaxed);
    zc_log_info("pack %s: %s; not used", path, reason);
}

static void add_pack(zc_pack_set *set, const char *path, const zc_bundle_signer *verifier)
{
    char reason[REASON_SIZE] = "";
    if (set->count == MAX_PACKS) {
        reject(set, path, "more than 16 packs in NEO_CACHE_PACKS");
        return;
    }
    zc_pack *pack = NULL;
    zc_status status = zc_pack_open(path, verifier, &pack, reason, sizeof reason);
    char *name = status == ZC_OK ? strdup(path) : NULL;
    if (name == NULL) {
        reject(set, path, status == ZC_OK ? "out of memory" : reason);
        zc_pack_close(pack);
        return;
    }
    set->packs[set->count] = pack;
    set->names[set->count++] = name;
}

zc_pack_set *zc_pack_set_open(const zc_config *config, zc_cache_counters *counters)
{
    if (config->packs[0] == '\0')
        return NULL;
    zc_pack_set *set = calloc(1, sizeof *set);
    char *paths = strdup(config->packs);
    zc_remote_secret secret;
    zc_bundle_signer signer;
    bool unusable = false;
    char reason[REASON_SIZE];
    const zc_bundle_signer *verifier =
        set != NULL && paths != NULL
            ? zc_remote_secret_signer(config->remote_secret_file, &secret, &signer, &unusable,
                                      reason, sizeof reason)
            : NULL;
    if (unusable) /* as no remote is used */
        zc_log_info("packs: NEO_CACHE_REMOTE_SECRET_FILE: %s; no pack used", reason);
    if (set != NULL && paths != NULL && !unusable) {
        set->counters = counters;
        char *rest = paths;
        for (char *path = strsep(&rest, ":"); path != NULL; path = strsep(&rest, ":"))
            if (path[0] != '\0')
                add_pack(set, path, verifier);
    }
    memset(&secret, 0, sizeof secret);
    free(paths);
    if (set != NULL && set->count == 0) {
        free(set);
        return NULL;
    }
    return set;
}

void zc_pack_set_close(zc_pack_set *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->count; i++) {
        zc_pack_close(set->packs[i]);
        free(set->names[i]);
    }
    free(set);
}

static zc_status load(zc_pack_set *set, const zc_key *key, uint64_t max_payload, zc_artifact **out,
                      const char **pack_name, bool report)
{
    for (size_t i = 0; i < set->count; i++) {
        uint8_t *entry = NULL;
        size_t size;
        char reason[REASON_SIZE] = "";
        zc_status status = zc_pack_find(set->packs[i], key, &entry, &size, reason, sizeof reason);
        if (status == ZC_OK)
            status = zc_entry_decode(entry, size, key, max_payload, out, reason, sizeof reason);
        free(entry);
        if (status == ZC_OK) {
            *pack_name = set->names[i];
            return ZC_OK;
        }
        if (report && reason[0] != '\0') {
            char hex[ZC_KEY_HEX_SIZE];
            zc_key_to_hex(key, hex);
            atomic_fetch_add_explicit(&set->counters->pack_rejected, 1, memory_order_relaxed);
            zc_log_info("pack %s: entry %s: %s; passed over", set->names[i], hex, reason);
        }
    }
    return ZC_MISS;
}

zc_status zc_pack_set_load(zc_pack_set *set, const zc_key *key, uint64_t max_payload,
                           zc_artifact **out, const char **pack_name)
{
    return load(set, key, max_payload, out, pack_name, true);
}

zc_status zc_pack_set_peek(zc_pack_set *set, const zc_key *key, uint64_t max_payload,
                           zc_artifact **out, const char **pack_name)
{
    return load(set, key, max_payload, out, pack_name, false);
}
