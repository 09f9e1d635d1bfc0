/* One storage of entries, as the cache's lookup walks them: get, put,
 * remove, lock-and-wait, close, and a name for messages. Values are entry
 * files as the disk tier writes them (entry.h), optionally followed by an
 * HMAC tag (remote_tag.h); a storage never interprets them, the caller
 * verifies everything it gets. One file per backend:
 *
 *   storage_file.c    the disk tier's layout and format in a directory
 *                     (file:///PATH: NFS, a read-only image), through the
 *                     disk tier's own code
 *   storage_pack.c    a read-only pack (file:///PATH.zcp or .pack, pack.h),
 *                     through the pack reader NEO_CACHE_PACKS uses
 *   storage_redis.c   Redis through hiredis: one string value per entry,
 *                     per recipe and per distinct SPIR-V (a recorded input
 *                     over ZC_REDIS_IN_MEMORY_MAX, 16 MiB, is not read), on
 *                     one server, shards, or a Redis Cluster (redis_cluster.c)
 *   storage_http.c    http:// and https:// through libcurl: the disk tier's
 *                     entry layout under the URL's path (GET, HEAD, PUT,
 *                     DELETE), recorded inputs beside it, listed with
 *                     WebDAV's PROPFIND; no cross-node lock
 *
 * Every call is bounded: backends with a network use connect and command
 * timeouts. Errors are returned as ZC_ERR_IO (logged), never retried here. */
#ifndef ZECACHE_STORAGE_H
#define ZECACHE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zecache/config.h"
#include "zecache/key.h"
#include "zecache/remote_spec.h"
#include "zecache/status.h"

typedef enum zc_storage_claim_result {
    ZC_STORAGE_CLAIMED, /* this process holds the key's build lock: compile, put, release */
    ZC_STORAGE_READY,   /* the entry appeared meanwhile: get it */
    ZC_STORAGE_GIVE_UP, /* the wait timed out, or the holder's build or store failed:
                           compile without the lock */
} zc_storage_claim_result;

/* A claim's token: 32 hex digits, and with a secret a proof of it (Redis:
 * redis_lock_token.h). */
#define ZC_STORAGE_TOKEN_SIZE 128

/* What a claim holds: a random token only its taker knows. */
typedef struct zc_storage_claim {
    bool held;
    char token[ZC_STORAGE_TOKEN_SIZE];
    /* The process that took it: a child of fork() holds a copy of the token
     * but not the claim, and its release leaves the parent's lock alone. */
    pid_t owner;
} zc_storage_claim;

typedef struct zc_storage zc_storage;
struct zc_input_blob; /* disk_recipes.h */

typedef enum zc_storage_input { ZC_STORAGE_RECIPE, ZC_STORAGE_SPIRV } zc_storage_input;
typedef bool (*zc_storage_recipe_fn)(void *context, const zc_key *key);

typedef struct zc_storage_ops {
    /* ZC_OK with a malloc'd copy of key's value, ZC_MISS when there is none,
     * ZC_ERR_IO when the storage failed. */
    zc_status (*get)(zc_storage *storage, const zc_key *key, uint8_t **value, size_t *size);
    /* Stores key's value; replace overwrites one already there (a bad one),
     * otherwise an existing value may be kept. */
    zc_status (*put)(zc_storage *storage, const zc_key *key, const uint8_t *value, size_t size,
                     bool replace);
    zc_status (*remove)(zc_storage *storage, const zc_key *key);
    /* Cross-node single flight; NULL when the backend has none. Waits up to
     * timeout_ms while another holds the lock. ZC_ERR_IO: compile unlocked. */
    zc_status (*claim)(zc_storage *storage, const zc_key *key, uint64_t timeout_ms,
                       zc_storage_claim_result *result, zc_storage_claim *claim);
    /* Lets go of a claim; failed says no entry is coming (the build or the
     * store failed, or the module was not admitted), so waiters stop waiting
     * and compile at once. Nothing held is fine. */
    void (*release)(zc_storage *storage, const zc_key *key, zc_storage_claim *claim, bool failed);
    /* Keeps key's recorded inputs (disk_recipes.h) beside its value: ZC_MISS
     * (nothing written) when the value is not there (not admitted, evicted).
     * NULL when the backend keeps none. */
    zc_status (*record)(zc_storage *storage, const zc_key *key, const uint8_t *recipe,
                        size_t recipe_size, const struct zc_input_blob *blobs, size_t blob_count);
    /* record takes the recipe and blobs signed as entries are when there is
     * a secret (Redis, whose readers check them as remote values); false:
     * as the disk tier writes them (file://, read by the disk tier's code). */
    bool record_signed;
    /* A recorded input as record stored it: the recipe of the key whose
     * bytes id holds, or the SPIR-V whose SHA-256 id is. ZC_MISS when
     * absent; NULL when inputs are found otherwise (file://: the disk
     * tier's layout). */
    zc_status (*get_input)(zc_storage *storage, zc_storage_input kind, const uint8_t id[32],
                           uint8_t **value, size_t *size);
    /* Calls each with every key whose recipe the storage holds (a key may
     * come twice), until it returns false. NULL as get_input. */
    zc_status (*list_recipes)(zc_storage *storage, zc_storage_recipe_fn each, void *context);
    void (*close)(zc_storage *storage);
} zc_storage_ops;

struct zc_storage {
    const zc_storage_ops *ops;
    const char *name; /* the URL, password masked */
    bool read_only;
    /* get hands out only values the storage itself authenticated with the
     * secret (a signed pack): no tag of their own is asked of them. */
    bool authenticates;
};

/* Opens the storage a parsed NEO_CACHE_REMOTE item describes. config gives
 * the limits a file storage applies (max size, compression level is unused).
 * Nothing is contacted yet: network backends connect on first use.
 * ZC_ERR_DISABLED (logged) when a file storage's directory is unusable. */
zc_status zc_storage_open(const zc_remote_spec *spec, const zc_config *config, zc_storage **out);
void zc_storage_close(zc_storage *storage); /* NULL is accepted */

/* The backends' constructors (zc_storage_open picks one). */
zc_status zc_storage_file_open(const zc_remote_spec *spec, const zc_config *config,
                               zc_storage **out);
/* A file:// item naming a pack (its path ends in .zcp or .pack), and its
 * constructor: ZC_ERR_DISABLED (logged) when the pack does not open. */
bool zc_storage_is_pack(const zc_remote_spec *spec);
zc_status zc_storage_pack_open(const zc_remote_spec *spec, zc_storage **out);
/* max_payload: the largest payload an entry may hold (0: the format's
 * limit); a value larger than such an entry is refused as soon as its size
 * is announced, and one too large to hold is received into a temporary file
 * in temp_dir (NULL or "": TMPDIR or /tmp) and verified there first. */
zc_status zc_storage_redis_open(const zc_remote_spec *spec, uint64_t max_payload,
                                const char *temp_dir, zc_storage **out);
/* max_payload and temp_dir as for Redis. ZC_ERR_DISABLED (logged) when
 * libcurl cannot be loaded. */
zc_status zc_storage_http_open(const zc_remote_spec *spec, uint64_t max_payload,
                               const char *temp_dir, zc_storage **out);

/* Why the calling thread's last failed storage call failed, in the
 * server's or the transport's words ("HTTP 403 Forbidden", "SSL certificate
 * problem: ..."), for zecache remote check; "" when no backend said. */
const char *zc_storage_last_problem(void);
void zc_storage_clear_problem(void);
/* For backends: records the problem (printf-style) for the calling thread. */
void zc_storage_note_problem(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* zecache remote check on a Redis Cluster: with the slot map read afresh,
 * each master serving slots (up to max) by name, with a key whose entry it
 * holds, so that a probe under each key reaches each master. ZC_ERR_IO when
 * no node answered, ZC_ERR_DISABLED when some slot is served by no master,
 * ZC_ERR_INVALID_ARG for a storage of no cluster. */
typedef struct zc_storage_cluster_master {
    char name[320];
    zc_key probe;
} zc_storage_cluster_master;
zc_status zc_storage_redis_cluster_masters(zc_storage *storage, zc_storage_cluster_master *masters,
                                           size_t max, size_t *count);

/* Redis keys, documented in README: entries under ZC_REDIS_ENTRY_PREFIX<64 hex>,
 * build locks under ZC_REDIS_LOCK_PREFIX<64 hex>, recorded inputs under
 * ZC_REDIS_RECIPE_PREFIX<64 hex of the entry's key> and
 * ZC_REDIS_SPIRV_PREFIX<64 hex of the SPIR-V's SHA-256>; with a secret, its
 * key namespace (remote_spec.h) follows ZC_REDIS_ENTRY_PREFIX in all. On a
 * Redis Cluster (|cluster) each <64 hex> is a hash tag, {<64 hex>}, so that
 * an entry, its lock and its recipe share a slot; the layout for single
 * servers and shards is unchanged. */
#define ZC_REDIS_ENTRY_PREFIX "zecache:v1:"
#define ZC_REDIS_LOCK_INFIX "lock:"
#define ZC_REDIS_LOCK_PREFIX ZC_REDIS_ENTRY_PREFIX ZC_REDIS_LOCK_INFIX
#define ZC_REDIS_RECIPE_INFIX "recipe:"
#define ZC_REDIS_SPIRV_INFIX "spirv:"
#define ZC_REDIS_RECIPE_PREFIX ZC_REDIS_ENTRY_PREFIX ZC_REDIS_RECIPE_INFIX
#define ZC_REDIS_SPIRV_PREFIX ZC_REDIS_ENTRY_PREFIX ZC_REDIS_SPIRV_INFIX
/* The value a holder whose build or store failed leaves in its lock, for
 * ZC_REDIS_FAILED_MARK_MS, so waiters compile at once. */
#define ZC_REDIS_FAILED_MARK "failed"
#define ZC_REDIS_FAILED_MARK_MS 5000

#endif
