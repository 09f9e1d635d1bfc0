/* Persistent counters: what every process that used a cache directory did,
 * summed in the text file `stats` at the cache root. Each process adds its
 * own counters once, at exit, under flock on that file -- not on config.file,
 * so adding them never waits behind a store.
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
#include "zecache/status.h"

#define ZC_STATS_FILE_NAME "stats"
#define ZC_STATS_FORMAT_VERSION 1

/* The same counters the cache keeps in a process, so the layer passes its
 * zc_cache_get_stats snapshot straight to zc_stats_merge. */
typedef zc_cache_stats zc_stats_counters;

/* Adds delta to cache_dir's stats file (created 0600 when missing,
 * 0664 less the umask, as the disk tier's files, when the
 * directory is group-writable).
 * Counters saturate at UINT64_MAX. Nothing is written when delta is all
 * zero. ZC_ERR_IO when the file cannot be opened, locked or written. */
zc_status zc_stats_merge(const char *cache_dir, const zc_stats_counters *delta);

/* The summed counters: ZC_OK (all zero when the file does not exist),
 * ZC_MISS when the file is garbage (all zero, reason logged), ZC_ERR_IO when
 * it cannot be read. */
zc_status zc_stats_read(const char *cache_dir, zc_stats_counters *counters);

/* Sets every counter to zero. */
zc_status zc_stats_zero(const char *cache_dir);

/* Calls visit with every counter's name in the stats file (the same names
 * `zecache stats --json` uses) and its value, in file order. */
typedef void (*zc_stats_visit_fn)(void *context, const char *name, uint64_t value);
void zc_stats_foreach(const zc_stats_counters *counters, zc_stats_visit_fn visit, void *context);

#endif
