/* Declarations shared by the files of the disk tier (zc_disk); not installed.
 *
 *   disk_open.c        opening the cache directory and checking it is safe
 *   disk_tier.c        load, store and verify of one entry
 *   disk_files.c       names, whole reads and writes, publishing via temp + rename
 *   disk_accounting.c  the lock and config.file's total
 *   disk_accounting_file.c, _figures.c, _report.c  the figures by kind
 *                      (zecache.accounting) kept beside it, for zecache stats
 *   disk_scan.c        walking the directory (and the public foreach)
 *   disk_evict.c       removal: bad entries, eviction, trim, clear
 *   disk_shard_evict.c eviction from one k0/k1 shard at a time
 *   disk_blob_refs.c   how many recipes name each SPIR-V blob (disk_blob_refs.h)
 *   disk_claim.c       per-key build locks: cross-process single flight
 *   disk_fork.c        fork(): locked sections and build locks around it
 */
#ifndef ZECACHE_DISK_INTERNAL_H
#define ZECACHE_DISK_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "fs_ops.h"
#include "zecache/live_set.h"
#include "disk_raw.h"
#include "zecache/disk_claim.h"
#include "zecache/disk_figures.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_tier.h"

/* The shards' figures during a locked section (disk_accounting_file.c). */
typedef struct zc_disk_accounting {
    int fd;     /* ZC_ACCOUNTING_FILE_NAME when a regular file we may write; else -1 */
    bool known; /* shards is exact: the file was valid, and every change since counted */
    bool empty; /* the file was empty when opened */
    zc_disk_figures shards;
    dev_t root_dev; /* the root's identity: what is in it the file does not count */
    ino_t root_ino;
} zc_disk_accounting;

struct zc_disk_tier {
    const zc_fs_ops *ops;
    int dir_fd; /* the cache root, kept open: every path is resolved beneath it */
    char dir[PATH_MAX];
    uint64_t max_size; /* 0: no limit */
    int compression_level;
    /* Serialises this process's locked sections; flock on config.file
     * serialises them with other processes (ours and the driver). Held
     * across fork() (disk_fork.c): taken through zc_disk_section_enter. */
    pthread_mutex_t mutex;
    atomic_uint_least64_t evictions;    /* entries this tier's stores evicted */
    atomic_uint_least64_t dirents_read; /* directory entries scans listed: the work eviction does */
    /* Modes for what the tier creates (the umask applies on top): 0700 and
     * 0600, or with NEO_CACHE_SHARED=1 02775 and 0664, never world-writable. */
    mode_t dir_mode, file_mode;
    /* The directory could not be written when opened: loads serve hits, and
     * stores, claims and removals are skipped (disk_open.c). */
    bool read_only;
    atomic_bool read_only_reported; /* the first skipped store was counted */
    uint64_t lock_timeout_ms;       /* NEO_CACHE_LOCK_TIMEOUT_MS; 0: no deadline */
    /* A wait for config.file's (or the stats file's) lock timed out: until a
     * later attempt finds it free, attempts try once instead of waiting, so a
     * process beside a stuck holder pays one deadline in all. */
    atomic_bool config_lock_stuck, stats_lock_stuck;
    atomic_uint_least64_t lock_timeouts; /* operations skipped at a lock's deadline */
    zc_live_link live;                   /* the open tiers, for fork() (disk_fork.c) */
    zc_disk_accounting accounting;       /* valid in a section holding config.file's lock */
};

/* fs_ops.c: the openat fallback for kernels without openat2, exposed so the
 * tests can check it refuses symlinks as openat2 does. */
int zc_fs_openat_by_components(int dirfd, const char *path, int flags, mode_t mode);
/* ops->close(fd) that leaves errno as it was, for clean-up on error paths. */
void zc_disk_close_keeping_errno(const zc_fs_ops *ops, int fd);

/* ---- disk_files.c ---- */

#define ZC_ENTRY_NAME_SIZE (2 * ZC_KEY_SIZE + sizeof ZC_ENTRY_SUFFIX) /* with NUL */
#define ZC_ENTRY_DIR_SIZE 4                                           /* "k0/k1" */
#define ZC_ENTRY_REL_SIZE (ZC_ENTRY_DIR_SIZE + ZC_ENTRY_NAME_SIZE)
#define ZC_REL_PATH_SIZE (ZC_ENTRY_DIR_SIZE + NAME_MAX + 1) /* any scanned file */
#define ZC_INPUT_SUFFIX ".input" /* the driver's BinaryCacheTrace input copy */

void zc_disk_entry_dir(const zc_key *key, char dir[ZC_ENTRY_DIR_SIZE]);
void zc_disk_entry_name(const zc_key *key, char name[ZC_ENTRY_NAME_SIZE]);
void zc_disk_entry_rel_path(const zc_key *key, char rel[ZC_ENTRY_REL_SIZE]);
/* True for "<64 hex>.l0_cache" and "<64 hex>.cl_cache"; sets key, its kind
 * the suffix's. */
bool zc_disk_parse_entry_name(const char *name, zc_key *key);
bool zc_disk_has_suffix(const char *name, const char *suffix);
/* Ends in ".l0_cache" or ".cl_cache" (the driver's own entries too): what
 * config.file counts. */
bool zc_disk_is_entry_file_name(const char *name);
/* name with its ".l0_cache" (or ".cl_cache") replaced by suffix; false if
 * it does not fit. */
bool zc_disk_sidecar_name(const char *entry_name, const char *suffix, char *out, size_t out_size);
/* The size of entry_name's .trace and .recipe in parent_fd (0 when there are
 * none): our sidecars count against NEO_CACHE_MAX_SIZE with their entry.
 * False (errno set) when it cannot be known. */
bool zc_disk_trace_size(zc_disk_tier *tier, int parent_fd, const char *entry_name, uint64_t *size);

/* Loops over short transfers and EINTR. read_exact: ZC_MISS on early end of
 * file, ZC_ERR_IO on an error. */
zc_status zc_disk_write_all(const zc_fs_ops *ops, int fd, const void *data, size_t size);
zc_status zc_disk_pwrite_all(const zc_fs_ops *ops, int fd, const void *data, size_t size,
                             off_t offset);
zc_status zc_disk_read_exact(const zc_fs_ops *ops, int fd, void *data, size_t size);
/* Reads up to size bytes from offset 0, stopping early only at end of file. */
zc_status zc_disk_pread_upto(const zc_fs_ops *ops, int fd, void *data, size_t size, size_t *done);

/* Opens rel_dir ("" is the root) beneath the root, creating missing levels
 * (tier->dir_mode) when create. Returns the fd or -1 with errno. */
int zc_disk_open_dir(zc_disk_tier *tier, const char *rel_dir, bool create);
/* Opens the directory holding rel; *name points at rel's last component. */
int zc_disk_open_parent(zc_disk_tier *tier, const char *rel, const char **name);
/* Writes data to a new temp file in the root and renames it to name in
 * parent_fd; on any failure the temp file is removed. */
zc_status zc_disk_publish(zc_disk_tier *tier, const void *data, size_t size, int parent_fd,
                          const char *name);
void zc_disk_log_errno(const char *action, const char *path, int err);
/* name in dir_fd, whole, into a new buffer (one spare byte): ZC_MISS when
 * absent, ZC_ERR_IO when it is no regular file of at most max_size bytes or
 * cannot be read. */
zc_status zc_disk_read_small_file(zc_disk_tier *tier, int dir_fd, const char *name,
                                  uint64_t max_size, uint8_t **data, size_t *size);

/* ---- disk_accounting.c ---- */

/* flock(fd, operation) retrying EINTR, within the tier's lock deadline:
 * polls LOCK_NB with short sleeps, or tries once while *stuck. ZC_ERR_BUSY
 * at the deadline (counted, logged, *stuck set), ZC_ERR_IO on an error. */
zc_status zc_disk_flock_within_deadline(zc_disk_tier *tier, int fd, int operation,
                                        atomic_bool *stuck, const char *name);

/* Held across a store, a removal or a sweep. total is exact for as long as
 * the lock is held: it is config.file's value when that was plausible, else
 * the result of a scan. */
typedef struct zc_disk_lock {
    int fd; /* config.file, flock'ed */
    uint64_t total;
    bool file_oversized; /* config.file had more than 8 bytes: truncate on write */
} zc_disk_lock;

/* A NULL tier is ZC_ERR_INVALID_ARG, so the public calls that only lock
 * need no check of their own. */
zc_status zc_disk_lock_acquire(zc_disk_tier *tier, bool rescan, zc_disk_lock *lock);
void zc_disk_lock_release(zc_disk_tier *tier, zc_disk_lock *lock);
/* Writes total to config.file. On failure config.file is cut to 0 bytes, so
 * the next lock holder rescans instead of trusting a torn value. */
zc_status zc_disk_set_total(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t total);
/* Cuts config.file to 0 bytes when the total is unknown. */
void zc_disk_invalidate_total(zc_disk_tier *tier, zc_disk_lock *lock);
/* Called just before every change to the entries: marks config.file invalid
 * until the new total is written, so that a process killed in between
 * leaves it to be rebuilt by the next lock holder's scan instead of
 * plausible and wrong. */
void zc_disk_begin_change(zc_disk_tier *tier, zc_disk_lock *lock);
/* Subtracts a removed entry; rescans if the total was smaller than it. When
 * that rescan fails, config.file is invalidated and ZC_ERR_IO returned: the
 * total is unknown, and must not be written. */
zc_status zc_disk_account_removed(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t size);
/* config.file's bytes as a total: ZC_MISS unless exactly 8 bytes holding a
 * value plausible under max_size (0: no limit). Pure, for the fuzzer. */
zc_status zc_disk_parse_total(const void *bytes, size_t size, uint64_t max_size, uint64_t *total);
/* config.file's value: ZC_MISS when missing, not 8 bytes, or implausible. */
zc_status zc_disk_read_total(zc_disk_tier *tier, int fd, uint64_t *total, bool *oversized);

/* ---- disk_accounting_file.c ---- */

/* With config.file's lock taken: reads the figures (accounting.known when
 * valid). With it released: closes the file. */
void zc_disk_accounting_open(zc_disk_tier *tier);
/* With the lock's total known: an empty file where nothing is counted (a
 * new cache) starts the figures at zero; when the total had to be rebuilt
 * by a scan (a crash, a hand), the figures are not trusted either. */
void zc_disk_accounting_settle(zc_disk_tier *tier, uint64_t total, bool total_rebuilt);
void zc_disk_accounting_close(zc_disk_tier *tier);
/* Before a change (zc_disk_begin_change): marks the file as a change under
 * way, so that a process killed before the commit leaves it to be rebuilt. */
void zc_disk_accounting_changing(zc_disk_tier *tier);
/* With config.file's new total written: the figures, when still known. */
void zc_disk_accounting_commit(zc_disk_tier *tier);
/* A change whose figures are not counted (a sweep, a clear, a failure): the
 * file stays marked, for the next zecache stats to rebuild. */
void zc_disk_accounting_forget(zc_disk_tier *tier);
/* Replaces the file (whatever is there) with these shard figures. */
zc_status zc_disk_accounting_publish(zc_disk_tier *tier, const zc_disk_figures *shards);

/* ---- disk_accounting_report.c ---- */

/* Under the lock: the file rewritten from one scan, whose figures of the
 * whole directory *figures (NULL: not wanted) gets. */
zc_status zc_disk_accounting_rebuild(zc_disk_tier *tier, zc_disk_figures *figures);

/* ---- disk_accounting_figures.c ---- */

/* The figures of the entry name in dir_fd with its sidecars, as a scan
 * counts them; false (errno set) when it cannot be examined. */
bool zc_disk_measure_entry(zc_disk_tier *tier, int dir_fd, const char *name,
                           zc_disk_figures *figures);
void zc_disk_figures_add(zc_disk_figures *to, const zc_disk_figures *figures);
/* False when figures is not within from (which is then unchanged). */
bool zc_disk_figures_subtract(zc_disk_figures *from, const zc_disk_figures *figures);
/* In a locked section, around zc_disk_unlink_entry: what the entry name in
 * parent_fd counts, when it is in a shard and the figures are known (else
 * false); after it went, zc_disk_accounting_removed subtracts it. */
bool zc_disk_accounting_removing(zc_disk_tier *tier, int parent_fd, const char *name,
                                 zc_disk_figures *gone);
void zc_disk_accounting_removed(zc_disk_tier *tier, const zc_disk_figures *gone);
/* In a locked section: the entry name in parent_fd (a shard) was stored. */
void zc_disk_accounting_entry_added(zc_disk_tier *tier, int parent_fd, const char *name);
/* In a locked section: a recipe of recipe_bytes (0: none) and blobs SPIR-V
 * modules of blob_bytes were recorded. */
void zc_disk_accounting_inputs_added(zc_disk_tier *tier, uint64_t recipe_bytes, uint64_t blobs,
                                     uint64_t blob_bytes);
/* In a locked section: a recipe (its entry stays) or a SPIR-V blob of size
 * bytes went. */
void zc_disk_accounting_input_removed(zc_disk_tier *tier, bool recipe, uint64_t size);
struct zc_census;
/* A sweep's scan (zc_census_take): what its shards hold must be what the
 * figures say, else something changed behind the lock holders' backs (a
 * hand, a crash) and the figures are dropped, for zecache stats to rebuild. */
void zc_disk_accounting_check_census(zc_disk_tier *tier, const struct zc_census *census);

/* ---- disk_scan.c ---- */

typedef enum zc_scan_kind {
    ZC_SCAN_ENTRY,   /* *.l0_cache and *.cl_cache, counted in config.file */
    ZC_SCAN_SIDECAR, /* *.trace, *.recipe, *.input */
    ZC_SCAN_BLOB,    /* *.spirv: recorded SPIR-V shared by recipes, counted in config.file */
    ZC_SCAN_TEMP,    /* ZC_TEMP_PREFIX* in the root */
    ZC_SCAN_LOCK,    /* *.lock: build locks (disk_claim.c), never counted */
    ZC_SCAN_MARK,    /* *.failed: not-stored marks (disk_claim.c), empty, never counted */
    ZC_SCAN_USAGE,   /* *.l0_usage in the root: programs' usage lists, never counted */
    ZC_SCAN_REFS,    /* *.spirv_refs: a blob's count of recipes (disk_blob_refs.h), never counted */
} zc_scan_kind;

typedef struct zc_scan_item {
    zc_scan_kind kind;
    int dir_fd;          /* the directory holding it, valid during the visit */
    const char *name;    /* within dir_fd */
    const char *rel;     /* relative to the root */
    uint64_t size;       /* entries, temps and sidecars */
    uint64_t trace_size; /* entries: their .trace's and .recipe's size, counted with them */
    struct timespec mtime;
} zc_scan_item;

/* Returns nonzero to stop the scan (which then returns ZC_OK). */
typedef int (*zc_scan_fn)(void *context, const zc_scan_item *item);

/* Visits the root and up to two levels of one-hex-digit subdirectories,
 * never through a symlink. Visitors may unlink the item they are given. */
zc_status zc_disk_scan(zc_disk_tier *tier, zc_scan_fn visit, void *context);
/* The same for the root's files alone: no subdirectory is opened. */
zc_status zc_disk_scan_root(zc_disk_tier *tier, zc_scan_fn visit, void *context);
/* What config.file must hold: every entry with the .trace and .recipe
 * beside it, and every SPIR-V blob. A sidecar whose entry is gone counts
 * nowhere: the repairing scans remove it. */
zc_status zc_disk_scan_total(zc_disk_tier *tier, uint64_t *total, uint64_t *entries);
/* Under the lock, the repairing step: zc_disk_scan_total that also removes
 * orphaned sidecars (zc_disk_remove_orphan_sidecar), so the total it
 * returns is that of everything the tier counts. */
zc_status zc_disk_rescan_total(zc_disk_tier *tier, uint64_t *total, uint64_t *entries);

typedef enum zc_orphan {
    ZC_ORPHAN_NONE,    /* not a .trace or .recipe, or its entry is beside it */
    ZC_ORPHAN_REMOVED, /* an orphan, now gone */
    ZC_ORPHAN_KEPT,    /* an orphan that stays: another writer's young trace, or unremovable */
} zc_orphan;
/* Under the lock: removes a .trace or .recipe whose entry is gone, at once
 * when it is ours (named after a zecache key), after ZC_TEMP_MAX_AGE_SEC
 * otherwise. */
zc_orphan zc_disk_remove_orphan_sidecar(zc_disk_tier *tier, const zc_scan_item *item, time_t now);

/* ---- disk_evict.c ---- */

/* In parent_fd: unlinks name and its sidecars. True when name is gone;
 * *trace_size (NULL: not wanted) is then the size of the trace removed with
 * it, which config.file counted with it. */
bool zc_disk_unlink_entry(zc_disk_tier *tier, int parent_fd, const char *name,
                          uint64_t *trace_size);
/* Under the lock: evicts least recently used entries when incoming bytes do
 * not fit: first from shard ("k0/k1", the incoming entry's; NULL: none) and
 * the few after it, then, when that was not enough, by a full sweep that
 * repairs the total from a scan. ZC_ERR_IO if still no room. */
zc_status zc_disk_make_room(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t incoming,
                            const char *shard);
/* zc_disk_make_room whose shard pass keeps the entry named spared (NULL:
 * none) in shard: the one a recording at the limit adds its recipe to. */
zc_status zc_disk_make_room_sparing(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t incoming,
                                    const char *shard, const char *spared);

/* ---- disk_shard_evict.c ---- */

enum {
    ZC_SHARD_COUNT = 256,      /* k0/k1: two levels of one hex digit */
    ZC_SHARD_VISITS_MAX = 4,   /* shards one store may list before the full sweep */
    ZC_SPARE_ENTRIES_MAX = 32, /* entries one store may evict beyond its need */
};
/* Under the lock, incoming <= max_size: removes the least recently used
 * entries of first_shard (but not spared, when not NULL) with the blobs
 * only their recipes named, then of the shards after it (at most
 * ZC_SHARD_VISITS_MAX), until incoming fits with a third of a shard's share
 * to spare, or ZC_SPARE_ENTRIES_MAX entries more than it needed. ZC_OK when it fits, ZC_MISS when
 * the shards could not free enough, ZC_ERR_IO when the total became unknown. */
zc_status zc_disk_evict_from_shards(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t incoming,
                                    const char *first_shard, const char *spared);

/* ---- disk_census.c ---- */

typedef struct zc_census_entry {
    const char *rel; /* into zc_census.names, set once the scan is over */
    size_t rel_offset;
    uint64_t size; /* the entry, its .trace and its .recipe */
    struct timespec last_use;
    size_t first_use, use_count; /* its recipe's blobs, in zc_census.uses */
    bool recipe;                 /* a recipe that reads is beside it */
} zc_census_entry;

typedef struct zc_census_use {
    uint8_t sha256[32]; /* first: sorted and searched as a digest */
    size_t blob;        /* index in zc_census.blobs; SIZE_MAX: not there, or named twice */
} zc_census_use;

typedef struct zc_census_blob {
    uint8_t sha256[32]; /* first, as in zc_census_use */
    const char *rel;
    size_t rel_offset;
    uint64_t size;
    uint32_t users; /* entries whose recipe names it and that are still there */
    bool gone;
} zc_census_blob;

/* What a sweep knows of the directory, from one scan under the lock. */
typedef struct zc_census {
    zc_disk_tier *tier;
    time_t now;
    zc_census_entry *entries; /* least recently used first */
    size_t entry_count, entry_capacity;
    zc_census_blob *blobs; /* by digest */
    size_t blob_count, blob_capacity;
    zc_census_use *uses;
    size_t use_count, use_capacity;
    char *names;
    size_t names_used, names_capacity;
    uint64_t total; /* what config.file must hold once the scan is over */
    bool out_of_memory;
    bool unsure; /* a recipe could be neither read nor removed: what it names is unknown */
} zc_census;

/* Grows *buffer to hold needed items of item_size (doubling); false when
 * out of memory, *buffer then unchanged. */
bool zc_disk_grow(void **buffer, size_t *capacity, size_t needed, size_t item_size);
/* Orders two last-use times, older first. */
int zc_disk_compare_times(const struct timespec *x, const struct timespec *y);

/* Under the lock, after zc_disk_begin_change: scans, removing garbage
 * (stale temp files, locks and marks, orphaned sidecars, damaged recipes). */
zc_status zc_census_take(zc_disk_tier *tier, zc_census *census);
void zc_census_free(zc_census *census);
/* Removes the blobs no recipe names; the bytes freed. */
uint64_t zc_census_remove_unnamed_blobs(zc_census *census);
/* After entries[index] was removed: removes the blobs no other entry's
 * recipe names; the bytes freed. */
uint64_t zc_census_release(zc_census *census, size_t index);

/* ---- disk_recipes.c ---- */

struct zc_recipe;
/* Under the lock, for a sweep: the inputs the recipe beside entry_name in
 * dir_fd names (zc_recipe_decode_inputs; free with zc_recipe_free). ZC_MISS
 * when there is none, or it was damaged (it does not verify, or is larger
 * than any recipe) and is now removed: *removed_size is then its size (its
 * entry stays, without its inputs). ZC_ERR_IO or ZC_ERR_NOMEM when it could
 * not be read or removed. */
zc_status zc_disk_sweep_recipe(zc_disk_tier *tier, int dir_fd, const char *entry_name,
                               struct zc_recipe *inputs, uint64_t *removed_size);
/* True for "<64 hex>.spirv"; sets sha256. */
bool zc_disk_parse_blob_name(const char *name, uint8_t sha256[32]);
#define ZC_BLOB_NAME_SIZE (2 * 32 + sizeof ZC_SPIRV_SUFFIX) /* with NUL */
/* Where the blob of this SHA-256 is: "s0/s1" and "<64 hex>.spirv" (name
 * holds ZC_BLOB_NAME_SIZE). */
void zc_disk_blob_place(const uint8_t sha256[32], char dir[ZC_ENTRY_DIR_SIZE], char *name);

/* ---- disk_claim.c ---- */

/* Removes a build lock file that no process holds and, when min_age_sec > 0,
 * that was last changed at least min_age_sec before now (a sweep passes
 * ZC_TEMP_MAX_AGE_SEC, clear 0). One still held stays: its holder removes it
 * on release. */
void zc_disk_remove_unused_lock(zc_disk_tier *tier, const zc_scan_item *item, int64_t min_age_sec,
                                time_t now);
/* Removes a not-stored mark past ZC_FAILED_MARK_MAX_AGE_SEC (a sweep). */
void zc_disk_remove_stale_mark(zc_disk_tier *tier, const zc_scan_item *item, time_t now);

/* ---- disk_fork.c ---- */

/* Every open tier takes part in fork() from zc_disk_tier_open to close. */
void zc_disk_fork_track_tier(zc_disk_tier *tier);
void zc_disk_fork_untrack_tier(zc_disk_tier *tier);
/* A locked section: tier->mutex, which fork() waits for. Whatever holds a
 * lock on config.file or the stats file is open only inside one. */
void zc_disk_section_enter(zc_disk_tier *tier);
void zc_disk_section_leave(zc_disk_tier *tier);
/* For the descriptors that hold or may come to hold a build lock: opened
 * and closed as one step with respect to fork(), whose child closes its
 * copies. openat fails with ENOMEM when there is no memory to track it. */
int zc_disk_fork_openat(const zc_fs_ops *ops, int dir_fd, const char *name, int flags, mode_t mode);
void zc_disk_fork_close(const zc_fs_ops *ops, int fd);

#endif
