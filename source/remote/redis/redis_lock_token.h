/* The value of a Redis build lock (storage_redis.c): a random nonce only its
 * taker knows, which also lets only the taker release it. With a signing
 * secret, the nonce is followed by "." and the hex HMAC-SHA-256, under the
 * secret, of the lock's name and the nonce: proof that a node with the
 * secret took it, for that very key. A node with the secret waits only on
 * locks that carry it, so that a party with write access to Redis but
 * without the secret cannot make its misses wait (README, Trust). Not
 * installed. */
#ifndef ZECACHE_REDIS_LOCK_TOKEN_H
#define ZECACHE_REDIS_LOCK_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

#include "zecache/remote_tag.h"
#include "zecache/storage.h"

#define ZC_REDIS_LOCK_NONCE_HEX 32
/* nonce, ".", 64 hex of the tag: the longest lock value a node takes */
#define ZC_REDIS_LOCK_TOKEN_MAX (ZC_REDIS_LOCK_NONCE_HEX + 1 + 2 * ZC_REMOTE_TAG_SIZE)

/* A new token for the lock called lock_name: signed when secret is not
 * NULL. */
void zc_redis_lock_token_make(const zc_remote_secret *secret, const char *lock_name,
                              char token[ZC_STORAGE_TOKEN_SIZE]);

/* Whether value (size bytes, as Redis holds it) is a token secret signed
 * for lock_name. */
bool zc_redis_lock_token_proven(const zc_remote_secret *secret, const char *lock_name,
                                const char *value, size_t size);

#endif
