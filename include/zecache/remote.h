/* The remote tier: the storages of NEO_CACHE_REMOTE behind the local disk,
 * with what the cache needs of them. Loads verify every value exactly like a
 * disk entry (entry.h) and, with NEO_CACHE_REMOTE_SECRET_FILE, its tag
 * (remote_tag.h); a bad value is a miss, counted as rejected, and remembered
 * so that the compiled result replaces it. A storage whose calls keep
 * failing (ZC_REMOTE_MAX_FAILURES in a row: unreachable, timing out) is left
 * alone for the rest of the process. Nothing here fails a build. */
#ifndef ZECACHE_REMOTE_H
#define ZECACHE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/cache.h"
#include "zecache/config.h"
#include "zecache/key.h"
#include "zecache/status.h"
#include "zecache/storage.h"

#define ZC_REMOTE_MAX_FAILURES 3

typedef struct zc_remote zc_remote;

/* Opens config's storages (nothing is contacted yet). *out is NULL when none
 * is configured or usable, or when the secret file is set but unusable (then
 * no remote is trusted: logged). counters receive remote_* counts. */
zc_status zc_remote_open(const zc_config *config, zc_cache_counters *counters, zc_remote **out);
void zc_remote_close(zc_remote *remote); /* NULL is accepted */

/* Which storages held a bad value for a key: bit i for storage i. */
typedef uint32_t zc_remote_rejects;

/* The first storage, in order, holding a verified value for key: ZC_OK with
 * the artifact and the entry's bytes (for the local disk: malloc'd, the tag
 * cut off), else ZC_MISS. Counts a hit or a miss, rejects and errors. */
zc_status zc_remote_load(zc_remote *remote, const zc_key *key, uint64_t max_payload,
                         zc_artifact **artifact, uint8_t **entry, size_t *entry_size,
                         zc_remote_rejects *rejects);

/* Puts entry (signed when there is a secret) into every writable storage,
 * replacing the value of those in replace. False when a put failed. */
bool zc_remote_store(zc_remote *remote, const zc_key *key, const uint8_t *entry, size_t entry_size,
                     zc_remote_rejects replace);

/* Keeps key's recorded inputs in every writable storage that keeps them
 * (file://, Redis and HTTP: signed when there is a secret), beside the entry a store
 * put there; a storage without the entry (not admitted, evicted) keeps
 * none. Errors are logged, and counted for Redis as its entries' are;
 * nothing fails. */
struct zc_input_blob;
void zc_remote_record(zc_remote *remote, const zc_key *key, const uint8_t *recipe,
                      size_t recipe_size, const struct zc_input_blob *blobs, size_t blob_count);

/* For prewarm: the recorded inputs of the storages that list them (Redis, HTTP;
 * file:// storages are read as directories). Calls each with every recorded
 * key (one may come twice, or from several storages) until it returns
 * false; ZC_ERR_IO or ZC_ERR_DISABLED when a storage failed (the others
 * are still listed; the failed one is not used again by remote). */
typedef zc_storage_recipe_fn zc_remote_recipe_fn;
zc_status zc_remote_list_recipes(zc_remote *remote, zc_remote_recipe_fn each, void *context);

/* A recipe (id: its key's bytes) or SPIR-V (id: its SHA-256) as recorded,
 * from the first storage holding one whose signature verifies (with a
 * secret), the signature cut off; the caller decodes it. ZC_MISS when none:
 * reason is empty when absent, else why one was rejected. */
zc_status zc_remote_read_input(zc_remote *remote, zc_storage_input kind, const uint8_t id[32],
                               uint8_t **value, size_t *size, char *reason, size_t reason_size);

/* Whether a store would reach a storage: one is writable and not given up. */
bool zc_remote_any_writable(zc_remote *remote);

/* Removes key's value from every writable storage in which (bit i for
 * storage i): a bad value that no store will replace. Errors are counted,
 * never fatal. */
void zc_remote_remove(zc_remote *remote, const zc_key *key, zc_remote_rejects which);

/* Cross-node single flight on the first writable storage that has locks. */
typedef struct zc_remote_lock {
    zc_storage *storage; /* NULL: nothing held */
    zc_storage_claim claim;
} zc_remote_lock;

/* READY, CLAIMED or GIVE_UP (also when no storage has locks or the call
 * failed: compile unlocked). Pair with zc_remote_release. */
zc_storage_claim_result zc_remote_claim(zc_remote *remote, const zc_key *key, uint64_t timeout_ms,
                                        zc_remote_lock *claim);
void zc_remote_release(zc_remote *remote, const zc_key *key, zc_remote_lock *claim, bool failed);

#endif
