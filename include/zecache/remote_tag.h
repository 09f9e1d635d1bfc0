/* Signed remote entries. With NEO_CACHE_REMOTE_SECRET_FILE set, every value
 * written to a remote storage is a signed entry (entry.h): its header has
 * ZC_ENTRY_FLAG_SIGNED, and after its frame come
 *
 *   "ZCHMAC1\0"                                          8 bytes
 *   HMAC-SHA-256(secret, every byte before "ZCHMAC1")    32 bytes
 *
 * and a value read from one is used only when it is signed and its tag is
 * right. The entry holds its key, so a tag also binds the value to its key.
 * A signed entry is a valid entry for every reader: one without the secret
 * verifies it as any other, its signature unchecked. */
#ifndef ZECACHE_REMOTE_TAG_H
#define ZECACHE_REMOTE_TAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/bundle.h"
#include "zecache/entry.h"
#include "zecache/status.h"

#define ZC_REMOTE_TAG_MAGIC ZC_ENTRY_SIGNATURE_MAGIC
#define ZC_REMOTE_TAG_SIZE 32
#define ZC_REMOTE_TAG_TRAILER_SIZE ZC_ENTRY_SIGNATURE_SIZE
#define ZC_REMOTE_SECRET_MIN 16
#define ZC_REMOTE_SECRET_MAX 4096

typedef struct zc_remote_secret {
    size_t size;
    uint8_t bytes[ZC_REMOTE_SECRET_MAX];
} zc_remote_secret;

/* Reads the secret: the file's bytes without trailing white space, at least
 * ZC_REMOTE_SECRET_MIN and at most ZC_REMOTE_SECRET_MAX of them. ZC_OK, or
 * ZC_ERR_IO / ZC_ERR_INVALID_ARG with the reason. */
zc_status zc_remote_secret_read(const char *path, zc_remote_secret *secret, char *reason,
                                size_t reason_size);

/* The signer of the secret in NEO_CACHE_REMOTE_SECRET_FILE (secret_file;
 * "" none), for bundles and packs: NULL without a file; NULL with *failed
 * and the reason when it is named but cannot be read. secret holds the key
 * the signer points to. */
const zc_bundle_signer *zc_remote_secret_signer(const char *secret_file, zc_remote_secret *secret,
                                                zc_bundle_signer *signer, bool *failed,
                                                char *reason, size_t reason_size);

/* HMAC-SHA-256 (RFC 2104) over the low-level SHA-256 of sha256.c: OpenSSL's
 * HMAC() goes through EVP, whose first use costs its whole start-up (2.6 to
 * 7 ms measured here), which a remote hit must not pay. */
bool zc_hmac_sha256(const void *key, size_t key_size, const void *data, size_t size,
                    uint8_t tag[ZC_REMOTE_TAG_SIZE]);

/* The public name of the secret's namespace in a shared storage: "s" and
 * the first 8 bytes of HMAC-SHA-256(secret, "zecache key namespace") in hex,
 * and ":". Reveals nothing of the secret. */
void zc_remote_key_namespace(const zc_remote_secret *secret, char out[24]);

/* entry (unsigned, as zc_entry_encode makes it) signed: flagged, followed
 * by its signature, in a new malloc'd buffer. */
zc_status zc_remote_tag_append(const zc_remote_secret *secret, const uint8_t *entry,
                               size_t entry_size, uint8_t **value, size_t *value_size);

/* Any other value (a recorded input kept in Redis: a sealed recipe or
 * SPIR-V, recipe.h) signed the same way: the bytes, then "ZCHMAC1\0" and
 * their HMAC, in a new malloc'd buffer. The sealed container's magic is
 * under the tag, so a signed input never passes for an entry or the
 * other kind. */
zc_status zc_remote_tag_append_bytes(const zc_remote_secret *secret, const uint8_t *data,
                                     size_t size, uint8_t **value, size_t *value_size);

/* The inverse: ZC_OK and *data_size, the bytes before the signature, when
 * value ends with a tag of secret over them; ZC_MISS with the reason
 * otherwise. */
zc_status zc_remote_tag_check_bytes(const zc_remote_secret *secret, const uint8_t *value,
                                    size_t size, size_t *data_size, char *reason,
                                    size_t reason_size);

/* zc_remote_tag_check_bytes's check of a value of size bytes in file fd,
 * read a piece at a time (a value too large to hold before it is known
 * good). secret NULL: ZC_OK. */
zc_status zc_remote_tag_check_fd(const zc_remote_secret *secret, int fd, uint64_t size,
                                 char *reason, size_t reason_size);

/* secret NULL: ZC_OK (the entry is verified as any other). Otherwise ZC_MISS
 * with the reason unless value is a signed entry whose tag matches. */
zc_status zc_remote_tag_check(const zc_remote_secret *secret, const uint8_t *value, size_t size,
                              char *reason, size_t reason_size);

#endif
