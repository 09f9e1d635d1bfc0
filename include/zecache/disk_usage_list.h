/* The keys a program used, in the order it first used them, kept in the
 * cache directory so that its next run can load them before it asks
 * (cache.h, zc_cache_prefetch_start). One file per program, in the root:
 * <64 hex of the program's SHA-256 id>.l0_usage, a sealed container
 * (sealed.h, magic ZC_USAGE_MAGIC, id = the program's id) holding the keys,
 * ZC_USAGE_RECORD_SIZE bytes each: the key's 32, then its kind (key.h; a
 * list with another kind is ignored). The magic was "ZCUSAGE" for lists of
 * 32-byte records, before OpenCL: such a list is ignored, costing a
 * prefetch. The list is a hint: a damaged, missing or stale one costs
 * a prefetch, never a result, since every key it names is still looked up
 * and verified as any other. The files are not counted in config.file (a
 * program's file holds at most ZC_USAGE_LIST_MAX keys, 32 KiB), but their
 * number is bounded: a program's identity includes its arguments, so each
 * new argument set makes a new list. At most ZC_USAGE_LISTS_KEPT lists stay
 * (the most recently used: written, or read by a run), and a sweep
 * (eviction, trim) removes those last used before the least recently used
 * entry it keeps (all of them when it keeps none): the entries such a list
 * names were evicted before it, or are kept for other programs. clear
 * removes them all. */
#ifndef ZECACHE_DISK_USAGE_LIST_H
#define ZECACHE_DISK_USAGE_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "zecache/disk_tier.h"
#include "zecache/key.h"
#include "zecache/status.h"

#define ZC_USAGE_MAGIC "ZCUSAG2" /* with its NUL: 8 bytes */
#define ZC_USAGE_RECORD_SIZE (ZC_KEY_SIZE + 1)
#define ZC_USAGE_SUFFIX ".l0_usage"
#define ZC_USAGE_LIST_MAX 1024u
#define ZC_USAGE_LISTS_KEPT 64u

/* program's list into keys (at most ZC_USAGE_LIST_MAX): ZC_MISS when there
 * is none, or it does not verify (logged under PrintDebugMessages). */
zc_status zc_disk_tier_read_usage(zc_disk_tier *tier, const uint8_t program[32], zc_key *keys,
                                  size_t *count);

/* Replaces program's list (temp file and rename). ZC_ERR_DISABLED in a
 * read-only directory. */
zc_status zc_disk_tier_write_usage(zc_disk_tier *tier, const uint8_t program[32],
                                   const zc_key *keys, size_t count);

/* Removes the lists last used (mtime) before unused_before (INT64_MAX:
 * all, 0: none by age) and all but the ZC_USAGE_LISTS_KEPT most recently
 * used. Without the lock: a list is a hint, and one removed while another
 * process writes it costs that program one prefetch. */
void zc_disk_prune_usage_lists(zc_disk_tier *tier, int64_t unused_before);

#endif
