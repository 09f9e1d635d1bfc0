/* The disk tier: zstd-compressed entries at <dir>/<k0>/<k1>/<64 hex>.l0_cache,
 * with config.file at the root holding the total size of all .l0_cache files
 * (and of our .trace files beside them, counted with their entry) as one
 * native size_t, as Intel's driver keeps it. Stores are atomic (temp file + rename) under flock on
 * config.file; loads take no lock and never return unverified bytes. */
#ifndef ZECACHE_DISK_TIER_H
#define ZECACHE_DISK_TIER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/config.h"
#include "zecache/entry.h"
#include "zecache/key.h"
#include "zecache/status.h"

#define ZC_CONFIG_FILE_NAME "config.file"
#define ZC_ENTRY_SUFFIX ".l0_cache"
#define ZC_TRACE_SUFFIX ".trace"
#define ZC_TEMP_PREFIX ".zc_tmp."
#define ZC_TEMP_MAX_AGE_SEC 300

typedef struct zc_disk_tier zc_disk_tier;

/* Opens config->dir, creating it when missing (0700; with
 * config->allow_shared 02775 less the umask, see disk_open.c for what each
 * mode accepts). ZC_ERR_DISABLED when
 * persistence is off or the directory is unusable (with a message under
 * PrintDebugMessages). A directory that cannot be written opens read-only:
 * loads work, the first store returns ZC_ERR_IO (reported once) and the
 * later ones ZC_ERR_DISABLED, claims ZC_ERR_DISABLED at once. */
zc_status zc_disk_tier_open(const zc_config *config, zc_disk_tier **out);
void zc_disk_tier_close(zc_disk_tier *tier);
const char *zc_disk_tier_dir(const zc_disk_tier *tier);
/* True when the directory could not be written when opened. */
bool zc_disk_tier_is_read_only(const zc_disk_tier *tier);

/* Loads and fully verifies key's entry. ZC_MISS when absent or bad; a bad
 * entry is removed and the reason logged. A hit refreshes the entry's
 * recency (its mtime), which works on noatime mounts. */
zc_status zc_disk_tier_load(zc_disk_tier *tier, const zc_key *key, zc_artifact **out);

/* Stores key's artifact (skipped, ZC_EXISTS, when it already exists), evicting
 * least recently used entries first when the size limit needs it. trace, when
 * not NULL, is written beside the entry as <hex>.trace. */
zc_status zc_disk_tier_store(zc_disk_tier *tier, const zc_key *key, const zc_artifact *artifact,
                             const char *trace);

/* For storages keeping the disk tier's layout (a file:// remote storage):
 * key's file as it is, unverified, when no larger than an entry may be plus
 * trailer bytes (ZC_MISS when absent or too large, ZC_ERR_IO when unreadable);
 * and data stored as key's file like an entry (skipped, ZC_EXISTS, when one
 * exists). */
zc_status zc_disk_tier_read_raw(zc_disk_tier *tier, const zc_key *key, uint64_t trailer,
                                uint8_t **data, size_t *size);
zc_status zc_disk_tier_store_raw(zc_disk_tier *tier, const zc_key *key, const uint8_t *data,
                                 size_t size);

/* Opens an existing directory for reading only (a read-only file:// storage):
 * no directory or config.file is created, stores fail. */
zc_status zc_disk_tier_open_read_only(const zc_config *config, zc_disk_tier **out);

/* Stores an encoded entry (the bytes of an entry file, e.g. from a bundle)
 * as zc_disk_tier_store does, after verifying it as a load would: ZC_MISS
 * with the reason when it does not verify for key; otherwise reason gets the
 * status name. reason may be NULL. */
zc_status zc_disk_tier_store_entry(zc_disk_tier *tier, const zc_key *key, const void *entry,
                                   size_t entry_size, char *reason, size_t reason_size);

/* Cross-process single flight for one key: a build lock, <hex>.lock beside
 * where the entry goes, held with flock. Only the lock holder unlinks it
 * (while still holding it), so lock files do not pile up; one left by a
 * killed process is unlocked (the kernel drops the flock), so the next
 * claimant takes it over and a trim, eviction or clear removes it. */
#define ZC_LOCK_SUFFIX ".lock"
/* <hex>.failed: left by a holder whose build or store failed, so that the
 * processes waiting for it compile at once, together, instead of taking the
 * lock and compiling one after another. Empty; its mtime is its age: younger
 * than ZC_FAILED_MARK_MAX_AGE_SEC it sends claimants straight to compiling,
 * older it is ignored, and removed by the next holder or sweep. */
#define ZC_FAILED_SUFFIX ".failed"
#define ZC_FAILED_MARK_MAX_AGE_SEC 30

typedef enum zc_disk_claim_result {
    ZC_DISK_CLAIMED,    /* this process holds the lock: compile, store, then release */
    ZC_DISK_READY,      /* the entry exists (another process stored it): load it */
    ZC_DISK_TIMED_OUT,  /* another process still held the lock at the timeout: compile
                           without it (a store of an existing key is skipped) */
    ZC_DISK_NOT_STORED, /* a holder just failed to build or store it (a fresh
                           ZC_FAILED_SUFFIX mark): compile now, without the lock */
} zc_disk_claim_result;

typedef struct zc_disk_claim {
    int lock_fd; /* -1 when nothing is held */
    int dir_fd;  /* the entry's k0/k1 directory; -1 when not open */
    char lock_name[2 * ZC_KEY_SIZE + sizeof ZC_LOCK_SUFFIX];
} zc_disk_claim;

/* Claims key's build, waiting up to timeout_ms (0: one attempt) while another
 * process holds it, and returning READY as soon as its entry appears. A
 * holder that dies releases the lock with it, so waiters never deadlock.
 * ZC_ERR_IO when no lock can be taken (e.g. a read-only directory): the
 * caller compiles uncoordinated. Always pair with zc_disk_tier_release. */
zc_status zc_disk_tier_claim(zc_disk_tier *tier, const zc_key *key, uint64_t timeout_ms,
                             zc_disk_claim_result *result, zc_disk_claim *claim);
/* Releases what claim holds (nothing is fine) and removes the lock file. */
void zc_disk_tier_release(zc_disk_tier *tier, zc_disk_claim *claim);
/* For a holder whose build or store failed, before it releases: leaves the
 * key's ZC_FAILED_SUFFIX mark, so its waiters compile at once, together.
 * Does nothing unless claim holds the lock. */
void zc_disk_tier_mark_not_stored(zc_disk_tier *tier, const zc_disk_claim *claim);

/* How many entries this tier's stores have evicted to make room. */
uint64_t zc_disk_tier_evictions(zc_disk_tier *tier);

/* How many operations this tier skipped (ZC_ERR_BUSY) because another process
 * held config.file's or the stats file's lock past NEO_CACHE_LOCK_TIMEOUT_MS.
 * After one such timeout, later operations try the lock once instead of
 * waiting, until they find it free. */
uint64_t zc_disk_tier_lock_timeouts(zc_disk_tier *tier);

/* One .l0_cache file found by a scan. */
typedef struct zc_disk_entry_info {
    char path[PATH_MAX]; /* relative to the cache directory */
    uint64_t file_size;
    uint64_t trace_size;  /* its .trace, counted with it (0: none) */
    int64_t last_use_sec; /* mtime: refreshed by hits */
    int64_t last_use_nsec;
    bool is_zecache; /* named <64 hex>.l0_cache (else the driver's own) */
    zc_key key;      /* valid when is_zecache */
} zc_disk_entry_info;

/* Calls visit for every .l0_cache file (root and two levels of hex
 * subdirectories; symlinks are skipped). visit returns nonzero to stop. */
typedef int (*zc_disk_entry_visit_fn)(void *context, const zc_disk_entry_info *info);
zc_status zc_disk_tier_foreach(zc_disk_tier *tier, zc_disk_entry_visit_fn visit, void *context);

/* Reads and fully verifies the entry at path (relative), as a load would,
 * without changing anything. ZC_OK, or ZC_MISS with the reason. */
zc_status zc_disk_tier_verify_entry(zc_disk_tier *tier, const char *path, zc_entry_header *header,
                                    char *reason, size_t reason_size);

/* The verified bytes of the entry at path (relative), as verify checks them:
 * ZC_OK with *entry malloc'd (the caller frees it), or ZC_MISS with the
 * reason. Changes nothing. */
zc_status zc_disk_tier_read_entry(zc_disk_tier *tier, const char *path, uint8_t **entry,
                                  size_t *entry_size, char *reason, size_t reason_size);

/* For a caller that found the entry at path bad (zc_disk_tier_verify_entry)
 * without the lock: under the lock, verifies it again and removes it (and
 * its trace) only if it is still bad and still the file just verified, so a
 * good entry stored in its place meanwhile stays. *removed says whether it
 * went; ZC_MISS when it is gone already. */
zc_status zc_disk_tier_remove_if_bad(zc_disk_tier *tier, const char *path, bool *removed);

/* Removes one entry (and its trace) under the lock, keeping config.file exact. */
zc_status zc_disk_tier_remove_entry(zc_disk_tier *tier, const char *path);

/* Under the lock: removes entries unused since older_than_unix (0: none by age),
 * then least recently used ones until the total is at most max_size
 * (UINT64_MAX: no size bound), removes stale temp files, and rewrites
 * config.file with the real total. Reports what was removed. */
zc_status zc_disk_tier_trim(zc_disk_tier *tier, uint64_t max_size, int64_t older_than_unix,
                            uint64_t *removed_entries, uint64_t *removed_bytes);

/* Under the lock: removes every entry and trace, sets config.file to 0. */
zc_status zc_disk_tier_clear(zc_disk_tier *tier);

/* config.file's value (ZC_MISS when missing or malformed), and the real total
 * found by scanning; repair rewrites config.file with the real total. */
zc_status zc_disk_tier_recorded_size(zc_disk_tier *tier, uint64_t *size);
zc_status zc_disk_tier_scanned_size(zc_disk_tier *tier, uint64_t *size, uint64_t *entries);
zc_status zc_disk_tier_repair_accounting(zc_disk_tier *tier, uint64_t *size);

#endif
