/* Redis Cluster's hash slot of a key name: CRC16 (XMODEM) of the name, or of
 * its hash tag (the bytes between the first '{' and the next '}', when not
 * empty), modulo 16384, as the Cluster specification defines it. Keys whose
 * tags are equal share a slot, which a script touching several needs. Not
 * installed: redis_cluster.c's. */
#ifndef ZECACHE_REDIS_KEY_SLOT_H
#define ZECACHE_REDIS_KEY_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define ZC_REDIS_SLOTS 16384

uint16_t zc_redis_key_slot(const char *name, size_t length);

#endif
