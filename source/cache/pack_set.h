/* The read-only packs of NEO_CACHE_PACKS (pack.h), consulted before the disk
 * tier: each opened and checked once, when the cache opens; a pack that does
 * not open is logged, counted and left out. Internal to cache/. */
#ifndef ZECACHE_PACK_SET_H
#define ZECACHE_PACK_SET_H

#include "zecache/artifact.h"
#include "zecache/cache.h"
#include "zecache/config.h"
#include "zecache/key.h"

typedef struct zc_pack_set zc_pack_set;

/* NULL when NEO_CACHE_PACKS names no pack that opens. Signed packs need
 * NEO_CACHE_REMOTE_SECRET_FILE; with it, only packs signed with its secret
 * are used. counters outlives the set. */
zc_pack_set *zc_pack_set_open(const zc_config *config, zc_cache_counters *counters);
void zc_pack_set_close(zc_pack_set *packs); /* NULL accepted */

/* The key's artifact from the first pack that holds it and whose entry
 * verifies, with that pack's path in *pack_name: ZC_OK. An entry that does
 * not verify is logged, counted in pack_rejected and passed over: ZC_MISS
 * when no pack serves it. */
zc_status zc_pack_set_load(zc_pack_set *packs, const zc_key *key, uint64_t max_payload,
                           zc_artifact **out, const char **pack_name);
/* The same, with nothing counted or logged: for the prefetch thread, whose
 * loads count only when a lookup takes them (the lookup of an entry it
 * passed over finds it bad again, and counts that). */
zc_status zc_pack_set_peek(zc_pack_set *packs, const zc_key *key, uint64_t max_payload,
                           zc_artifact **out, const char **pack_name);

#endif
