/* Build locks of the disk tier (disk_tier.h): one compile per key across
 * the processes sharing a cache directory. */
#ifndef ZECACHE_DISK_CLAIM_H
#define ZECACHE_DISK_CLAIM_H

#include <stdint.h>
#include <sys/types.h>

#include "zecache/disk_tier.h"
#include "zecache/key.h"
#include "zecache/status.h"

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
    /* The process that took it: in a child of fork() the claim is not held
     * (the child closed its copy of the lock), and its release leaves the
     * parent's lock file alone. */
    pid_t owner;
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

#endif
