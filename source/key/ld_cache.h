/* Looking a library up in ld.so.cache, the file ldconfig writes and the
 * dynamic linker reads before the default directories. Internal to the core. */
#ifndef ZECACHE_LD_CACHE_H
#define ZECACHE_LD_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Finds name in the bytes of a cache file in glibc's new format
 * ("glibc-ld.so.cache1.1"), old format ("ld.so-1.7.0") or both, as ld.so
 * does: among the entries for name whose flags are this process's ABI, the
 * one of the best active glibc-hwcaps subdirectory, else the first one with
 * no hwcap or a legacy hwcap this glibc accepts (hwcaps.h). Writes its path
 * (NUL-terminated) to path. false when there is no such entry, the path does
 * not fit, or the data is not a well-formed cache of this machine's byte
 * order. Any bytes may be given. */
bool zc_ld_cache_lookup(const uint8_t *data, size_t size, const char *name, char *path,
                        size_t path_size);

/* The same for the cache file at cache_path (usually "/etc/ld.so.cache"). */
bool zc_ld_cache_lookup_file(const char *cache_path, const char *name, char *path,
                             size_t path_size);

#endif
