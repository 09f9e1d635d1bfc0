/* The remote tier (remote.h): the list of storages with their health, the
 * secret, and verification of what they return. */
#include "zecache/remote.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zecache/disk_recipes.h"
#include "zecache/entry.h"
#include "zecache/log.h"
#include "zecache/remote_tag.h"

typedef struct remote_storage {
    zc_storage *storage;
    atomic_int failures_in_a_row;
    atomic_bool given_up;
} remote_storage;

struct zc_remote {
    size_t count;
    remote_storage storages[ZC_REMOTE_MAX_STORAGES];
    zc_remote_secret *secret; /* NULL: entries are checked for integrity only */
    zc_cache_counters *counters;
};

static void count(atomic_uint_least64_t *counter)
{
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static void complain(void *context, const char *storage, const char *reason)
{
    (void)context;
    char what[1024];
    snprintf(what, sizeof what, "NEO_CACHE_REMOTE: ignored \"%.400s\": %.500s", storage, reason);
    zc_log_failure(what, EINVAL);
}

static zc_status read_secret(const zc_config *config, zc_remote *remote)
{
    if (config->remote_secret_file[0] == '\0')
        return ZC_OK;
    remote->secret = malloc(sizeof *remote->secret);
    if (remote->secret == NULL)
        return ZC_ERR_NOMEM;
    char reason[PATH_MAX + 128];
    zc_status status =
        zc_remote_secret_read(config->remote_secret_file, remote->secret, reason, sizeof reason);
    if (status != ZC_OK) {
        char what[sizeof reason + 96];
        snprintf(what, sizeof what, "NEO_CACHE_REMOTE_SECRET_FILE: %s: remote storages not used",
                 reason);
        zc_log_failure(what, 0);
    }
    return status;
}

static void open_storages(const zc_config *config, zc_remote *remote)
{
    zc_remote_spec *specs = NULL;
    size_t spec_count = 0;
    if (zc_remote_specs_parse(config->remote, &specs, &spec_count, complain, NULL) != ZC_OK)
        return;
    for (size_t i = 0; i < spec_count; i++) {
        zc_storage *storage = NULL;
        if (remote->secret != NULL)
            zc_remote_key_namespace(remote->secret, specs[i].key_namespace);
        specs[i].secret = remote->secret;
        if (zc_storage_open(&specs[i], config, &storage) != ZC_OK) {
            zc_log_info("remote %s: not usable, left out", specs[i].name);
            continue;
        }
        remote_storage *slot = &remote->storages[remote->count++];
        slot->storage = storage;
        atomic_init(&slot->failures_in_a_row, 0);
        atomic_init(&slot->given_up, false);
    }
    zc_remote_specs_free(specs, spec_count);
}

zc_status zc_remote_open(const zc_config *config, zc_cache_counters *counters, zc_remote **out)
{
    if (config == NULL || counters == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    if (config->remote[0] == '\0')
        return ZC_OK;
    zc_remote *remote = calloc(1, sizeof *remote);
    if (remote == NULL)
        return ZC_ERR_NOMEM;
    remote->counters = counters;
    zc_status status = read_secret(config, remote);
    if (status == ZC_OK)
        open_storages(config, remote);
    if (status != ZC_OK || remote->count == 0) {
        zc_remote_close(remote);
        return status == ZC_ERR_NOMEM ? status : ZC_OK;
    }
    *out = remote;
    return ZC_OK;
}

void zc_remote_close(zc_remote *remote)
{
    if (remote == NULL)
        return;
    for (size_t i = 0; i < remote->count; i++)
        zc_storage_close(remote->storages[i].storage);
    free(remote->secret);
    free(remote);
}

/* ---- health ---- */

static bool usable(remote_storage *slot)
{
    return !atomic_load_explicit(&slot->given_up, memory_order_relaxed);
}

/* ZC_ERR_IO means the storage could not be reached or did not answer in
 * time: ZC_REMOTE_MAX_FAILURES of those in a row and it is left alone. A
 * refusal (an error reply) is counted but says the server is there. */
static void note_result(zc_remote *remote, remote_storage *slot, zc_status status)
{
    if (status == ZC_OK || status == ZC_MISS) {
        atomic_store_explicit(&slot->failures_in_a_row, 0, memory_order_relaxed);
        return;
    }
    count(&remote->counters->remote_errors);
    if (status != ZC_ERR_IO)
        return;
    if (atomic_fetch_add(&slot->failures_in_a_row, 1) + 1 == ZC_REMOTE_MAX_FAILURES &&
        !atomic_exchange(&slot->given_up, true))
        zc_log_info("remote %s: %d failures in a row: not used again by this process",
                    slot->storage->name, ZC_REMOTE_MAX_FAILURES);
}

/* ---- load ---- */

static bool verify_value(zc_remote *remote, remote_storage *slot, const zc_key *key,
                         uint64_t max_payload, const uint8_t *value, size_t size,
                         zc_artifact **artifact, size_t *entry_size)
{
    char reason[256] = "";
    *entry_size = size; /* a signature is part of the entry */
    const zc_remote_secret *secret = slot->storage->authenticates ? NULL : remote->secret;
    zc_status status = zc_remote_tag_check(secret, value, size, reason, sizeof reason);
    if (status == ZC_OK)
        status = zc_entry_decode(value, size, key, max_payload, artifact, reason, sizeof reason);
    if (status == ZC_OK)
        return true;
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    zc_log_info("remote %s: rejected %s: %s", slot->storage->name, hex, reason);
    count(&remote->counters->remote_rejected);
    return false;
}

zc_status zc_remote_load(zc_remote *remote, const zc_key *key, uint64_t max_payload,
                         zc_artifact **artifact, uint8_t **entry, size_t *entry_size,
                         zc_remote_rejects *rejects)
{
    *artifact = NULL;
    *entry = NULL;
    for (size_t i = 0; i < remote->count; i++) {
        remote_storage *slot = &remote->storages[i];
        if (!usable(slot))
            continue;
        uint8_t *value = NULL;
        size_t size = 0;
        zc_status status = slot->storage->ops->get(slot->storage, key, &value, &size);
        note_result(remote, slot, status);
        if (status != ZC_OK)
            continue;
        if (verify_value(remote, slot, key, max_payload, value, size, artifact, entry_size)) {
            count(&remote->counters->remote_hits);
            *entry = value;
            return ZC_OK;
        }
        *rejects |= (zc_remote_rejects)1 << i;
        free(value);
    }
    count(&remote->counters->remote_misses);
    return ZC_MISS;
}

/* ---- store ---- */

static bool writable(remote_storage *slot)
{
    return usable(slot) && !slot->storage->read_only;
}

/* The recorded inputs as a storage with record_signed takes them: signed
 * when there is a secret, as its readers check every value they get. */
typedef struct signed_inputs {
    uint8_t *recipe;
    size_t recipe_size;
    zc_input_blob *blobs;
} signed_inputs;

static void free_signed(signed_inputs *inputs, size_t blob_count)
{
    for (size_t i = 0; inputs->blobs != NULL && i < blob_count; i++)
        free((void *)inputs->blobs[i].bytes);
    free(inputs->blobs);
    free(inputs->recipe);
}

static zc_status sign_inputs(const zc_remote_secret *secret, const uint8_t *recipe,
                             size_t recipe_size, const zc_input_blob *blobs, size_t blob_count,
                             signed_inputs *out)
{
    *out = (signed_inputs){NULL, 0, calloc(blob_count + 1, sizeof *out->blobs)};
    zc_status status = out->blobs != NULL ? ZC_OK : ZC_ERR_NOMEM;
    for (size_t i = 0; i < blob_count && status == ZC_OK; i++) {
        uint8_t *bytes = NULL;
        memcpy(out->blobs[i].sha256, blobs[i].sha256, 32);
        status = zc_remote_tag_append_bytes(secret, blobs[i].bytes, blobs[i].size, &bytes,
                                            &out->blobs[i].size);
        out->blobs[i].bytes = bytes;
    }
    if (status == ZC_OK)
        status = zc_remote_tag_append_bytes(secret, recipe, recipe_size, &out->recipe,
                                            &out->recipe_size);
    if (status != ZC_OK)
        free_signed(out, blob_count);
    return status;
}

static zc_status record_in(zc_remote *remote, remote_storage *slot, const zc_key *key,
                           const signed_inputs *inputs, size_t blob_count)
{
    zc_status status = slot->storage->ops->record(slot->storage, key, inputs->recipe,
                                                  inputs->recipe_size, inputs->blobs, blob_count);
    /* A network storage's failures count as its entries' do, and towards
     * leaving it alone; the disk tier's code reports its own. */
    if (slot->storage->ops->record_signed)
        note_result(remote, slot, status);
    return status;
}

void zc_remote_record(zc_remote *remote, const zc_key *key, const uint8_t *recipe,
                      size_t recipe_size, const zc_input_blob *blobs, size_t blob_count)
{
    signed_inputs plain = {(uint8_t *)recipe, recipe_size, (zc_input_blob *)blobs};
    signed_inputs with_tags = {NULL, 0, NULL};
    bool signing_failed =
        remote != NULL && remote->secret != NULL &&
        sign_inputs(remote->secret, recipe, recipe_size, blobs, blob_count, &with_tags) != ZC_OK;
    for (size_t i = 0; remote != NULL && i < remote->count; i++) {
        remote_storage *slot = &remote->storages[i];
        bool wants_tags = slot->storage->ops->record_signed && remote->secret != NULL;
        if (!writable(slot) || slot->storage->ops->record == NULL || (wants_tags && signing_failed))
            continue;
        zc_status status =
            record_in(remote, slot, key, wants_tags ? &with_tags : &plain, blob_count);
        if (status != ZC_OK && status != ZC_EXISTS && status != ZC_MISS)
            zc_log_info("remote %s: recorded inputs not kept (%s)", slot->storage->name,
                        zc_status_name(status));
    }
    if (with_tags.blobs != NULL)
        free_signed(&with_tags, blob_count);
}

/* A storage that fails leaves the others listed: the first failure is
 * returned once all were tried. One whose listing failed is not used again:
 * it may have named up to a listing's bound of keys before it was stopped
 * (a cursor that never ends), and reading a recipe for each of them, however
 * slowly the server answers, is what stopping the listing was for. */
zc_status zc_remote_list_recipes(zc_remote *remote, zc_remote_recipe_fn each, void *context)
{
    zc_status first_failure = ZC_OK;
    for (size_t i = 0; i < remote->count; i++) {
        remote_storage *slot = &remote->storages[i];
        if (!usable(slot) || slot->storage->ops->list_recipes == NULL)
            continue;
        zc_status status = slot->storage->ops->list_recipes(slot->storage, each, context);
        note_result(remote, slot, status);
        if (status == ZC_OK)
            continue;
        if (!atomic_exchange(&slot->given_up, true))
            zc_log_info("remote %s: its listing failed: not used again by this process",
                        slot->storage->name);
        if (first_failure == ZC_OK)
            first_failure = status;
    }
    return first_failure;
}

/* The first storage holding the input, its signature checked and cut off. */
zc_status zc_remote_read_input(zc_remote *remote, zc_storage_input kind, const uint8_t id[32],
                               uint8_t **value, size_t *size, char *reason, size_t reason_size)
{
    *value = NULL;
    reason[0] = '\0';
    for (size_t i = 0; i < remote->count; i++) {
        remote_storage *slot = &remote->storages[i];
        if (!usable(slot) || slot->storage->ops->get_input == NULL)
            continue;
        zc_status status = slot->storage->ops->get_input(slot->storage, kind, id, value, size);
        note_result(remote, slot, status);
        if (status != ZC_OK)
            continue;
        if (remote->secret == NULL || zc_remote_tag_check_bytes(remote->secret, *value, *size, size,
                                                                reason, reason_size) == ZC_OK)
            return ZC_OK;
        count(&remote->counters->remote_rejected);
        free(*value);
        *value = NULL;
    }
    return ZC_MISS;
}

bool zc_remote_store(zc_remote *remote, const zc_key *key, const uint8_t *entry, size_t entry_size,
                     zc_remote_rejects replace)
{
    const uint8_t *value = entry;
    size_t value_size = entry_size;
    uint8_t *signed_value = NULL;
    if (remote->secret != NULL) {
        if (zc_remote_tag_append(remote->secret, entry, entry_size, &signed_value, &value_size) !=
            ZC_OK)
            return false;
        value = signed_value;
    }
    bool all_stored = true;
    for (size_t i = 0; i < remote->count; i++) {
        remote_storage *slot = &remote->storages[i];
        if (!writable(slot))
            continue;
        bool replace_it = (replace >> i) & 1;
        zc_status status =
            slot->storage->ops->put(slot->storage, key, value, value_size, replace_it);
        note_result(remote, slot, status);
        if (status == ZC_OK)
            count(&remote->counters->remote_stores);
        else
            all_stored = false;
    }
    free(signed_value);
    return all_stored;
}

bool zc_remote_any_writable(zc_remote *remote)
{
    for (size_t i = 0; i < remote->count; i++)
        if (writable(&remote->storages[i]))
            return true;
    return false;
}

void zc_remote_remove(zc_remote *remote, const zc_key *key, zc_remote_rejects which)
{
    for (size_t i = 0; i < remote->count; i++) {
        remote_storage *slot = &remote->storages[i];
        if (((which >> i) & 1) == 0 || !writable(slot))
            continue;
        note_result(remote, slot, slot->storage->ops->remove(slot->storage, key));
    }
}

/* ---- cross-node single flight ---- */

zc_storage_claim_result zc_remote_claim(zc_remote *remote, const zc_key *key, uint64_t timeout_ms,
                                        zc_remote_lock *claim)
{
    *claim = (zc_remote_lock){.storage = NULL};
    for (size_t i = 0; i < remote->count; i++) {
        remote_storage *slot = &remote->storages[i];
        if (!writable(slot) || slot->storage->ops->claim == NULL)
            continue;
        zc_storage_claim_result result = ZC_STORAGE_GIVE_UP;
        zc_status status =
            slot->storage->ops->claim(slot->storage, key, timeout_ms, &result, &claim->claim);
        note_result(remote, slot, status);
        if (status != ZC_OK)
            return ZC_STORAGE_GIVE_UP;
        if (result == ZC_STORAGE_CLAIMED)
            claim->storage = slot->storage;
        return result;
    }
    return ZC_STORAGE_GIVE_UP;
}

void zc_remote_release(zc_remote *remote, const zc_key *key, zc_remote_lock *claim, bool failed)
{
    (void)remote;
    if (claim->storage != NULL)
        claim->storage->ops->release(claim->storage, key, &claim->claim, failed);
    claim->storage = NULL;
}
