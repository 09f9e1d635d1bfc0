/* Raw access to a disk tier's files, for what keeps the disk tier's layout
 * elsewhere: a file:// remote storage, and the local copy of a remote hit
 * (the bytes that verified, signature included). Not installed. */
#ifndef ZECACHE_DISK_RAW_H
#define ZECACHE_DISK_RAW_H

#include <stddef.h>
#include <stdint.h>

#include "zecache/config.h"
#include "zecache/disk_tier.h"

/* For storages keeping the disk tier's layout (a file:// remote storage):
 * key's file as it is, unverified, when no larger than an entry may be
 * (ZC_MISS when absent or too large, ZC_ERR_IO when unreadable);
 * and data stored as key's file like an entry (skipped, ZC_EXISTS, when one
 * exists). */
zc_status zc_disk_tier_read_raw(zc_disk_tier *tier, const zc_key *key, uint8_t **data,
                                size_t *size);
zc_status zc_disk_tier_store_raw(zc_disk_tier *tier, const zc_key *key, const uint8_t *data,
                                 size_t size);

/* Opens an existing directory for reading only (a read-only file:// storage):
 * no directory or config.file is created, stores fail. */
zc_status zc_disk_tier_open_read_only(const zc_config *config, zc_disk_tier **out);

#endif
