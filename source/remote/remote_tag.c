/* HMAC tags of remote entries (format in remote_tag.h). */
#include "zecache/remote_tag.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "private_file.h"
#include "zecache/entry.h"
#include "zecache/sha256.h"

enum { HMAC_BLOCK = 64 };

_Static_assert(sizeof ZC_REMOTE_TAG_MAGIC == 8, "magic with its NUL is 8 bytes");
_Static_assert(ZC_SHA256_SIZE == ZC_REMOTE_TAG_SIZE, "the tag is a SHA-256 digest");

static bool hash_padded(const uint8_t block[HMAC_BLOCK], uint8_t pad, const void *data, size_t size,
                        uint8_t digest[ZC_SHA256_SIZE])
{
    uint8_t padded[HMAC_BLOCK];
    for (int i = 0; i < HMAC_BLOCK; i++)
        padded[i] = block[i] ^ pad;
    zc_sha256 *hash = zc_sha256_create();
    bool ok = hash != NULL && zc_sha256_update(hash, padded, sizeof padded) &&
              zc_sha256_update(hash, data, size) && zc_sha256_finish(hash, digest);
    zc_sha256_destroy(hash);
    return ok;
}

/* The key as HMAC pads it: hashed when longer than a block. */
static bool key_block(const void *key, size_t key_size, uint8_t block[HMAC_BLOCK])
{
    memset(block, 0, HMAC_BLOCK);
    if (key_size > HMAC_BLOCK)
        return zc_sha256_digest(key, key_size, block);
    if (key_size > 0)
        memcpy(block, key, key_size);
    return true;
}

bool zc_hmac_sha256(const void *key, size_t key_size, const void *data, size_t size,
                    uint8_t tag[ZC_REMOTE_TAG_SIZE])
{
    uint8_t block[HMAC_BLOCK];
    if (!key_block(key, key_size, block))
        return false;
    uint8_t inner[ZC_SHA256_SIZE];
    return hash_padded(block, 0x36, data, size, inner) &&
           hash_padded(block, 0x5c, inner, sizeof inner, tag);
}

zc_status zc_remote_secret_read(const char *path, zc_remote_secret *secret, char *reason,
                                size_t reason_size)
{
    memset(secret, 0, sizeof *secret);
    uint8_t buffer[ZC_REMOTE_SECRET_MAX + 1];
    size_t size = 0;
    zc_status status =
        zc_private_file_read_trimmed(path, buffer, sizeof buffer, &size, reason, reason_size);
    if (status != ZC_OK)
        return status;
    if (size < ZC_REMOTE_SECRET_MIN || size > ZC_REMOTE_SECRET_MAX) {
        snprintf(reason, reason_size, "%s holds %zu bytes: a secret needs %d to %d", path, size,
                 ZC_REMOTE_SECRET_MIN, ZC_REMOTE_SECRET_MAX);
        return ZC_ERR_INVALID_ARG;
    }
    memcpy(secret->bytes, buffer, size);
    secret->size = size;
    return ZC_OK;
}

zc_status zc_remote_tag_append(const zc_remote_secret *secret, const uint8_t *entry,
                               size_t entry_size, uint8_t **value, size_t *value_size)
{
    if (entry_size < ZC_ENTRY_HEADER_SIZE)
        return ZC_ERR_INVALID_ARG;
    size_t signed_size = entry_size + ZC_REMOTE_TAG_TRAILER_SIZE;
    uint8_t *buffer = malloc(signed_size);
    if (buffer == NULL)
        return ZC_ERR_NOMEM;
    memcpy(buffer, entry, entry_size);
    memcpy(buffer + entry_size, ZC_REMOTE_TAG_MAGIC, 8);
    if (!zc_entry_set_signed(buffer) ||
        !zc_hmac_sha256(secret->bytes, secret->size, buffer, entry_size, buffer + entry_size + 8)) {
        free(buffer);
        return ZC_ERR_NOMEM;
    }
    *value = buffer;
    *value_size = signed_size;
    return ZC_OK;
}

zc_status zc_remote_tag_append_bytes(const zc_remote_secret *secret, const uint8_t *data,
                                     size_t size, uint8_t **value, size_t *value_size)
{
    uint8_t *buffer = malloc(size + ZC_REMOTE_TAG_TRAILER_SIZE);
    if (buffer == NULL)
        return ZC_ERR_NOMEM;
    if (size > 0)
        memcpy(buffer, data, size);
    memcpy(buffer + size, ZC_REMOTE_TAG_MAGIC, 8);
    if (!zc_hmac_sha256(secret->bytes, secret->size, buffer, size, buffer + size + 8)) {
        free(buffer);
        return ZC_ERR_NOMEM;
    }
    *value = buffer;
    *value_size = size + ZC_REMOTE_TAG_TRAILER_SIZE;
    return ZC_OK;
}

/* Compares all bytes whatever the first difference: no timing hint. */
static bool same_tag(const uint8_t *a, const uint8_t *b)
{
    uint8_t difference = 0;
    for (int i = 0; i < ZC_REMOTE_TAG_SIZE; i++)
        difference |= a[i] ^ b[i];
    return difference == 0;
}

/* The HMAC at the end of value (size at least a trailer) against the one
 * secret makes of every byte before the trailer. */
static zc_status check_trailer_tag(const zc_remote_secret *secret, const uint8_t *value,
                                   size_t size, char *reason, size_t reason_size)
{
    uint8_t expected[ZC_REMOTE_TAG_SIZE];
    if (!zc_hmac_sha256(secret->bytes, secret->size, value, size - ZC_REMOTE_TAG_TRAILER_SIZE,
                        expected)) {
        snprintf(reason, reason_size, "cannot compute the tag");
        return ZC_MISS;
    }
    if (!same_tag(expected, value + size - ZC_REMOTE_TAG_SIZE)) {
        snprintf(reason, reason_size, "signed with another secret, or altered");
        return ZC_MISS;
    }
    return ZC_OK;
}

zc_status zc_remote_tag_check(const zc_remote_secret *secret, const uint8_t *value, size_t size,
                              char *reason, size_t reason_size)
{
    if (secret == NULL)
        return ZC_OK;
    zc_entry_header header;
    if (zc_entry_read_header(value, size, &header, reason, reason_size) != ZC_OK)
        return ZC_MISS;
    if ((header.flags & ZC_ENTRY_FLAG_SIGNED) == 0) {
        snprintf(reason, reason_size, "not signed");
        return ZC_MISS;
    }
    return check_trailer_tag(secret, value, size, reason, reason_size);
}

zc_status zc_remote_tag_check_bytes(const zc_remote_secret *secret, const uint8_t *value,
                                    size_t size, size_t *data_size, char *reason,
                                    size_t reason_size)
{
    if (size < ZC_REMOTE_TAG_TRAILER_SIZE ||
        memcmp(value + size - ZC_REMOTE_TAG_TRAILER_SIZE, ZC_REMOTE_TAG_MAGIC, 8) != 0) {
        snprintf(reason, reason_size, "not signed");
        return ZC_MISS;
    }
    zc_status status = check_trailer_tag(secret, value, size, reason, reason_size);
    if (status == ZC_OK)
        *data_size = size - ZC_REMOTE_TAG_TRAILER_SIZE;
    return status;
}

void zc_remote_key_namespace(const zc_remote_secret *secret, char out[24])
{
    static const char label[] = "zecache key namespace";
    uint8_t tag[ZC_REMOTE_TAG_SIZE];
    out[0] = '\0';
    if (!zc_hmac_sha256(secret->bytes, secret->size, label, sizeof label - 1, tag))
        return;
    out[0] = 's';
    for (int i = 0; i < 8; i++)
        snprintf(out + 1 + 2 * i, 3, "%02x", tag[i]);
    out[17] = ':';
    out[18] = '\0';
}

/* The inner hash of HMAC over the first size bytes of fd, read a chunk at
 * a time. */
static bool hash_padded_fd(const uint8_t block[HMAC_BLOCK], int fd, uint64_t size,
                           uint8_t digest[ZC_SHA256_SIZE])
{
    enum { CHUNK = 256 << 10 };
    uint8_t padded[HMAC_BLOCK];
    for (int i = 0; i < HMAC_BLOCK; i++)
        padded[i] = block[i] ^ 0x36;
    zc_sha256 *hash = zc_sha256_create();
    uint8_t *chunk = malloc(CHUNK);
    bool ok = hash != NULL && chunk != NULL && zc_sha256_update(hash, padded, sizeof padded);
    for (uint64_t at = 0; ok && at < size;) {
        size_t take = size - at < CHUNK ? (size_t)(size - at) : CHUNK;
        ssize_t got = pread(fd, chunk, take, (off_t)at);
        ok = (got > 0 || (got < 0 && errno == EINTR)) &&
             (got < 0 || zc_sha256_update(hash, chunk, (size_t)got));
        at += got > 0 ? (uint64_t)got : 0;
    }
    ok = ok && zc_sha256_finish(hash, digest);
    free(chunk);
    zc_sha256_destroy(hash);
    return ok;
}

zc_status zc_remote_tag_check_fd(const zc_remote_secret *secret, int fd, uint64_t size,
                                 char *reason, size_t reason_size)
{
    if (secret == NULL)
        return ZC_OK;
    uint8_t trailer[ZC_REMOTE_TAG_TRAILER_SIZE], block[HMAC_BLOCK], inner[ZC_SHA256_SIZE],
        expected[ZC_REMOTE_TAG_SIZE];
    uint64_t data_size = size - sizeof trailer;
    if (size < sizeof trailer ||
        pread(fd, trailer, sizeof trailer, (off_t)data_size) != (ssize_t)sizeof trailer ||
        memcmp(trailer, ZC_REMOTE_TAG_MAGIC, 8) != 0) {
        snprintf(reason, reason_size, "not signed");
        return ZC_MISS;
    }
    if (!key_block(secret->bytes, secret->size, block) ||
        !hash_padded_fd(block, fd, data_size, inner) ||
        !hash_padded(block, 0x5c, inner, sizeof inner, expected)) {
        snprintf(reason, reason_size, "cannot compute the tag");
        return ZC_MISS;
    }
    if (!same_tag(expected, trailer + 8)) {
        snprintf(reason, reason_size, "signed with another secret, or altered");
        return ZC_MISS;
    }
    return ZC_OK;
}

const zc_bundle_signer *zc_remote_secret_signer(const char *secret_file, zc_remote_secret *secret,
                                                zc_bundle_signer *signer, bool *failed,
                                                char *reason, size_t reason_size)
{
    *failed = false;
    if (secret_file[0] == '\0')
        return NULL;
    if (zc_remote_secret_read(secret_file, secret, reason, reason_size) != ZC_OK) {
        *failed = true;
        return NULL;
    }
    *signer = (zc_bundle_signer){zc_hmac_sha256, secret->bytes, secret->size};
    return signer;
}
