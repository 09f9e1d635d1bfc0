/* The disk tier: zstd-compressed entries at <dir>/<k0>/<k1>/<64 hex>.l0_cache
 * (Level Zero) or .cl_cache (OpenCL; the key's kind says which, key.h),
 * with config.file at the root holding the total size of all .l0_cache and
 * .cl_cache files (and of our .trace files beside them, counted with their
 * entry) as one native size_t, as Intel's driver keeps it for both. Stores are atomic (temp file +
 * rename) under flock on config.file; loads take no lock and never return
 * unverified bytes.
 *
 * This header is the cache's path: open, load, store. Build locks are in
 * disk_claim.h, the tool's maintenance (scans, verify, trim, clear, import)
 * in disk_maintenance.h. */
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
#define ZC_ENTRY_SUFFIX ".l0_cache"        /* Level Zero's entries */
#define ZC_ENTRY_SUFFIX_OPENCL ".cl_cache" /* OpenCL's: the same length */
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
/* The same, but a bad entry is left in place (and the reason unlogged): for
 * a background reader, since removing takes the tier's lock, which a fork
 * must not find held by a thread the child does not have. */
zc_status zc_disk_tier_load_leaving_bad(zc_disk_tier *tier, const zc_key *key, zc_artifact **out);

/* Stores key's artifact (skipped, ZC_EXISTS, when it already exists), evicting
 * least recently used entries first when the size limit needs it. trace, when
 * not NULL, is written beside the entry as <hex>.trace. */
zc_status zc_disk_tier_store(zc_disk_tier *tier, const zc_key *key, const zc_artifact *artifact,
                             const char *trace);

/* How many entries this tier's stores have evicted to make room. */
uint64_t zc_disk_tier_evictions(zc_disk_tier *tier);

/* How many directory entries this tier's scans and evictions have listed:
 * the work eviction does under the lock, for tests and benchmarks. */
uint64_t zc_disk_tier_dirents_read(zc_disk_tier *tier);

/* How many operations this tier skipped (ZC_ERR_BUSY) because another process
 * held config.file's or the stats file's lock past NEO_CACHE_LOCK_TIMEOUT_MS.
 * After one such timeout, later operations try the lock once instead of
 * waiting, until they find it free. */
uint64_t zc_disk_tier_lock_timeouts(zc_disk_tier *tier);

#endif
