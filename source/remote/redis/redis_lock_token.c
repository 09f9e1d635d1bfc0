/* See redis_lock_token.h. */
#include "redis_lock_token.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static void hex_of(const uint8_t *bytes, size_t size, char *out)
{
    for (size_t i = 0; i < size; i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
}

static void nonce_make(char nonce[ZC_REDIS_LOCK_NONCE_HEX + 1])
{
    uint8_t random[ZC_REDIS_LOCK_NONCE_HEX / 2];
    if (getrandom(random, sizeof random, GRND_NONBLOCK) != (ssize_t)sizeof random) {
        /* Early at boot: not secret, only unlikely to repeat; the tag, not
         * the nonce, is the proof. */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t mix =
            (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^ (uint64_t)(uintptr_t)nonce;
        for (size_t i = 0; i < sizeof random; i++)
            random[i] = (uint8_t)(mix >> (8 * (i % 8))) ^ (uint8_t)i;
    }
    hex_of(random, sizeof random, nonce);
}

/* The tag's hex over "zecache lock", the lock's name and the nonce, each
 * ended by a NUL so that no two pairs make the same bytes. */
static bool tag_hex(const zc_remote_secret *secret, const char *lock_name, const char *nonce,
                    char out[2 * ZC_REMOTE_TAG_SIZE + 1])
{
    static const char purpose[] = "zecache lock";
    char data[sizeof purpose + 512 + ZC_REDIS_LOCK_NONCE_HEX + 1];
    size_t name_size = strlen(lock_name) + 1;
    if (name_size > 512)
        return false;
    memcpy(data, purpose, sizeof purpose);
    memcpy(data + sizeof purpose, lock_name, name_size);
    memcpy(data + sizeof purpose + name_size, nonce, ZC_REDIS_LOCK_NONCE_HEX);
    uint8_t tag[ZC_REMOTE_TAG_SIZE];
    if (!zc_hmac_sha256(secret->bytes, secret->size, data,
                        sizeof purpose + name_size + ZC_REDIS_LOCK_NONCE_HEX, tag))
        return false;
    hex_of(tag, sizeof tag, out);
    return true;
}

void zc_redis_lock_token_make(const zc_remote_secret *secret, const char *lock_name,
                              char token[ZC_STORAGE_TOKEN_SIZE])
{
    char nonce[ZC_REDIS_LOCK_NONCE_HEX + 1];
    nonce_make(nonce);
    char tag[2 * ZC_REMOTE_TAG_SIZE + 1];
    if (secret != NULL && tag_hex(secret, lock_name, nonce, tag))
        snprintf(token, ZC_STORAGE_TOKEN_SIZE, "%s.%s", nonce, tag);
    else
        snprintf(token, ZC_STORAGE_TOKEN_SIZE, "%s", nonce);
}

bool zc_redis_lock_token_proven(const zc_remote_secret *secret, const char *lock_name,
                                const char *value, size_t size)
{
    if (size != ZC_REDIS_LOCK_TOKEN_MAX || value[ZC_REDIS_LOCK_NONCE_HEX] != '.')
        return false;
    char nonce[ZC_REDIS_LOCK_NONCE_HEX + 1];
    memcpy(nonce, value, ZC_REDIS_LOCK_NONCE_HEX);
    nonce[ZC_REDIS_LOCK_NONCE_HEX] = '\0';
    char tag[2 * ZC_REMOTE_TAG_SIZE + 1];
    if (!tag_hex(secret, lock_name, nonce, tag))
        return false;
    /* Compared in constant time: the value is the other party's. */
    unsigned char differ = 0;
    for (size_t i = 0; i < 2 * ZC_REMOTE_TAG_SIZE; i++)
        differ |= (unsigned char)(tag[i] ^ value[ZC_REDIS_LOCK_NONCE_HEX + 1 + i]);
    return differ == 0;
}
