/* file:///PATH.zcp or file:///PATH.pack: a read-only pack (pack.h) as a
 * storage, read by the pack reader NEO_CACHE_PACKS uses: opened and checked
 * once, when the storage opens; every get one binary search and one pread.
 * Nothing is ever written: the storage is read-only whatever the item says,
 * so a store skips it as it skips any |read-only storage. With a secret, the
 * pack must be signed with it (its tag and each entry's SHA-256 in the index
 * vouch for the entries, which carry no tag of their own); without one, it
 * must be unsigned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/log.h"
#include "zecache/pack.h"
#include "zecache/remote_tag.h"
#include "zecache/storage.h"

typedef struct pack_storage {
    zc_storage base;
    zc_pack *pack;
    char name[sizeof(((zc_remote_spec *)0)->name)];
} pack_storage;

/* An entry that cannot be read (the pack was cut since it was opened) or
 * that does not match its signed record fails like an unreachable server:
 * counted in remote_errors, and a pack failing every time is left alone. */
static zc_status pack_get(zc_storage *storage, const zc_key *key, uint8_t **value, size_t *size)
{
    pack_storage *packed = (pack_storage *)storage;
    char reason[256] = "";
    zc_status status = zc_pack_find(packed->pack, key, value, size, reason, sizeof reason);
    if (status != ZC_MISS || reason[0] == '\0')
        return status;
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    zc_storage_note_problem("%s", reason);
    zc_log_info("remote %s: entry %s: %s", packed->name, hex, reason);
    return ZC_ERR_IO;
}

static zc_status pack_refuse_put(zc_storage *storage, const zc_key *key, const uint8_t *value,
                                 size_t size, bool replace)
{
    (void)storage, (void)key, (void)value, (void)size, (void)replace;
    return ZC_ERR_DISABLED; /* never called: the storage is read-only */
}

static zc_status pack_refuse_remove(zc_storage *storage, const zc_key *key)
{
    (void)storage, (void)key;
    return ZC_ERR_DISABLED;
}

static void pack_close(zc_storage *storage)
{
    pack_storage *packed = (pack_storage *)storage;
    zc_pack_close(packed->pack);
    free(packed);
}

static const zc_storage_ops pack_ops = {
    .get = pack_get,
    .put = pack_refuse_put,
    .remove = pack_refuse_remove,
    .close = pack_close,
};

bool zc_storage_is_pack(const zc_remote_spec *spec)
{
    if (spec->kind != ZC_REMOTE_FILE)
        return false;
    const char *path = spec->servers[0].path;
    size_t length = strlen(path);
    return (length > 4 && strcmp(path + length - 4, ".zcp") == 0) ||
           (length > 5 && strcmp(path + length - 5, ".pack") == 0);
}

zc_status zc_storage_pack_open(const zc_remote_spec *spec, zc_storage **out)
{
    pack_storage *packed = calloc(1, sizeof *packed);
    if (packed == NULL)
        return ZC_ERR_NOMEM;
    zc_bundle_signer signer = {zc_hmac_sha256, NULL, 0};
    if (spec->secret != NULL)
        signer.key = spec->secret->bytes, signer.key_size = spec->secret->size;
    char reason[256] = "";
    zc_status status = zc_pack_open(spec->servers[0].path, spec->secret != NULL ? &signer : NULL,
                                    &packed->pack, reason, sizeof reason);
    if (status != ZC_OK) {
        zc_log_info("remote %s: %s", spec->name, reason);
        free(packed);
        return status == ZC_ERR_NOMEM ? status : ZC_ERR_DISABLED;
    }
    snprintf(packed->name, sizeof packed->name, "%s", spec->name);
    packed->base = (zc_storage){
        .ops = &pack_ops, .name = packed->name, .read_only = true, .authenticates = true};
    *out = &packed->base;
    return ZC_OK;
}
