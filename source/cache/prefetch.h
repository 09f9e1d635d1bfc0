/* Prefetching a program's entries (cache.h, zc_cache_prefetch_start): a
 * background thread loads from the disk tier, in order, the keys the
 * program's last run used, and a lookup that reaches the disk takes its
 * entry from there instead of reading it. The thread uses the disk tier's
 * own load, so an entry is verified exactly as on any disk hit, and it never
 * counts anything: a prefetched entry becomes a disk hit only when the
 * application asks for it. Meanwhile the keys this run used are noted, to
 * be saved as the program's list for its next run. */
#ifndef ZECACHE_PREFETCH_H
#define ZECACHE_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/disk_tier.h"
#include "zecache/key.h"
#include "zecache/status.h"

typedef struct zc_prefetch zc_prefetch;

/* Starts the thread, which reads program's list and loads its entries.
 * Entries waiting to be taken hold at most budget bytes (0: the list is read
 * but nothing is loaded). */
zc_status zc_prefetch_start(zc_disk_tier *disk, const uint8_t program[32], size_t budget,
                            zc_prefetch **out);

/* How the thread loads an entry when not from disk alone (the read-only
 * packs first): ZC_OK with the artifact, verified as a hit verifies it, and
 * in *origin the name of the pack that held it (outliving the prefetch) or
 * NULL for the disk; nothing counted or logged. */
typedef zc_status (*zc_prefetch_load_fn)(void *context, const zc_key *key, zc_artifact **out,
                                         const char **origin);
/* zc_prefetch_start with load (NULL: the disk tier's own) loading entries;
 * disk keeps the lists. */
zc_status zc_prefetch_start_loading(zc_disk_tier *disk, zc_prefetch_load_fn load, void *context,
                                    const uint8_t program[32], size_t budget, zc_prefetch **out);

/* key's prefetched entry: ZC_OK with one reference, waiting while the
 * thread is loading it; ZC_MISS when it is not prefetched (the thread will
 * then not load it either). */
zc_status zc_prefetch_take(zc_prefetch *prefetch, const zc_key *key, zc_artifact **out);
/* The same, with where the thread found it (the load's *origin; NULL on a
 * miss). */
zc_status zc_prefetch_take_from(zc_prefetch *prefetch, const zc_key *key, zc_artifact **out,
                                const char **origin);

/* Whether the thread decodes listed entries for the lookups (the list is
 * read and not empty, and there is a budget). */
bool zc_prefetch_serves(zc_prefetch *prefetch);

/* What loaded entries not taken yet hold (also in the exit log line). */
size_t zc_prefetch_staged_bytes(zc_prefetch *prefetch);

/* Waits until the thread has ended, or waits for entries to be taken. */
void zc_prefetch_wait_idle(zc_prefetch *prefetch);

/* Stops the thread (waiting for the entry it is loading), drops what was
 * not taken and frees prefetch. */
void zc_prefetch_stop(zc_prefetch *prefetch);

/* Notes a key this run used (found or compiled). */
void zc_prefetch_note_use(zc_prefetch *prefetch, const zc_key *key);

/* Saves the keys used, when they differ from the list read, as program's
 * list; only in the process that started the prefetch (not a forked child). */
void zc_prefetch_save(zc_prefetch *prefetch);

#endif
