/* The disk tier's maintenance (disk_tier.h), for the zecache tool and the
 * tests: scanning and verifying entries, removing, trimming and clearing
 * under the lock, the size accounting, and importing encoded entries. */
#ifndef ZECACHE_DISK_MAINTENANCE_H
#define ZECACHE_DISK_MAINTENANCE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/disk_tier.h"
#include "zecache/entry.h"
#include "zecache/key.h"
#include "zecache/status.h"

/* key's entry relative to the cache directory: <k0>/<k1>/<64 hex> and the
 * suffix of the key's kind (disk_tier.h). */
#define ZC_DISK_ENTRY_PATH_SIZE (4 + 2 * ZC_KEY_SIZE + sizeof ZC_ENTRY_SUFFIX)
void zc_disk_tier_entry_path(const zc_key *key, char path[ZC_DISK_ENTRY_PATH_SIZE]);

/* One .l0_cache or .cl_cache file found by a scan. */
typedef struct zc_disk_entry_info {
    char path[PATH_MAX]; /* relative to the cache directory */
    uint64_t file_size;
    uint64_t trace_size;  /* its .trace, counted with it (0: none) */
    int64_t last_use_sec; /* mtime: refreshed by hits */
    int64_t last_use_nsec;
    bool is_zecache; /* named <64 hex>.l0_cache or .cl_cache (else the driver's own) */
    zc_key key;      /* valid when is_zecache; its kind the suffix's */
} zc_disk_entry_info;

/* Calls visit for every .l0_cache and .cl_cache file (root and two levels of hex
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
 * (UINT64_MAX: no size bound), each with its sidecars and the SPIR-V only
 * its recipe named; removes SPIR-V no recipe names, stale temp files,
 * orphaned sidecars and the usage lists last used before every entry kept
 * (disk_usage_list.h), and rewrites config.file with the real total.
 * Reports what was removed (*removed_bytes: everything counted that went). */
zc_status zc_disk_tier_trim(zc_disk_tier *tier, uint64_t max_size, int64_t older_than_unix,
                            uint64_t *removed_entries, uint64_t *removed_bytes);

/* Under the lock: removes every entry, trace and usage list (disk_usage_list.h),
 * sets config.file to 0. */
zc_status zc_disk_tier_clear(zc_disk_tier *tier);

/* config.file's value (ZC_MISS when missing or malformed), and the real total
 * found by scanning; repair rewrites config.file with the real total, and
 * zecache.accounting (disk_figures.h) from a scan. */
zc_status zc_disk_tier_recorded_size(zc_disk_tier *tier, uint64_t *size);
zc_status zc_disk_tier_scanned_size(zc_disk_tier *tier, uint64_t *size, uint64_t *entries);
zc_status zc_disk_tier_repair_accounting(zc_disk_tier *tier, uint64_t *size);

/* What counts against the size limit, by kind, from a scan without the lock
 * (a snapshot; a recipe or trace whose entry is gone counts nowhere). */
typedef struct zc_disk_usage {
    uint64_t entries, entry_bytes;  /* .l0_cache and .cl_cache files, with their .trace */
    uint64_t recipes, recipe_bytes; /* recorded inputs: recipes beside their entries */
    uint64_t blobs, blob_bytes;     /* recorded inputs: SPIR-V, once per content */
    uint64_t total;                 /* all of them: what config.file accounts */
} zc_disk_usage;
zc_status zc_disk_tier_scanned_usage(zc_disk_tier *tier, zc_disk_usage *usage);

/* Stores an encoded entry (the bytes of an entry file, e.g. from a bundle)
 * as zc_disk_tier_store does, after verifying it as a load would: ZC_MISS
 * with the reason when it does not verify for key; otherwise reason gets the
 * status name. reason may be NULL. */
zc_status zc_disk_tier_store_entry(zc_disk_tier *tier, const zc_key *key, const void *entry,
                                   size_t entry_size, char *reason, size_t reason_size);

#endif
