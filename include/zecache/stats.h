/* Persistent counters: what every process that used a cache directory did,
 * summed in the text file `stats` at the cache root. A process adds what its
 * counters gained since its last merge after every disk store and at exit
 * (zc_cache_merge_stats), under flock on that file -- not on config.file, so
 * adding them never waits behind a store. A crash loses only the hits since
 * the last store.
 *
 * Format, one counter per line, decimal:
 *   zecache-stats 1
 *   memory_hits 12
 *   ...
 *   bypass.not-cacheable 2
 *   end
 * Unknown names are ignored. A file without the first or the last line, with
 * a line that does not parse, or larger than any real one, is garbage: it
 * reads as all zero (logged), and the next merge rewrites it. Text after
 * "end" is ignored, so a rewrite that shrank the file and was cut off before
 * truncating it still reads correctly. */
#ifndef ZECACHE_STATS_H
#define ZECACHE_STATS_H

#include <stdint.h>

#include "zecache/cache.h"
#include "zecache/disk_tier.h"
#include "zecache/status.h"

#define ZC_STATS_FILE_NAME "stats"
#define ZC_STATS_FORMAT_VERSION 1

/* The same counters the cache keeps in a process, so the layer passes its
 * zc_cache_get_stats snapshot straight to zc_stats_merge. */
typedef zc_cache_stats zc_stats_counters;

/* Adds delta to the stats file in tier's directory (created with the tier's
 * file mode when missing: 0600, or 0664 less the umask in a shared
 * directory), through the tier's zc_fs_ops. Counters saturate at
 * UINT64_MAX. Nothing is written when delta is all zero. ZC_ERR_DISABLED
 * for a read-only directory, ZC_ERR_BUSY when another process held the
 * file's lock past NEO_CACHE_LOCK_TIMEOUT_MS, ZC_ERR_IO when it cannot be
 * opened, locked or written. */
zc_status zc_stats_merge(zc_disk_tier *tier, const zc_stats_counters *delta);

/* The summed counters: ZC_OK (all zero when the file does not exist),
 * ZC_MISS when the file is garbage (all zero, reason logged), ZC_ERR_IO when
 * it cannot be read. */
zc_status zc_stats_read(zc_disk_tier *tier, zc_stats_counters *counters);

/* Sets every counter to zero. */
zc_status zc_stats_zero(zc_disk_tier *tier);

/* difference = now - before, counter by counter. */
void zc_stats_difference(const zc_stats_counters *now, const zc_stats_counters *before,
                         zc_stats_counters *difference);

/* Calls visit with every counter's name in the stats file (the same names
 * `zecache stats --json` uses) and its value, in file order. */
typedef void (*zc_stats_visit_fn)(void *context, const char *name, uint64_t value);
void zc_stats_foreach(const zc_stats_counters *counters, zc_stats_visit_fn visit, void *context);

#endif
