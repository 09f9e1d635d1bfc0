/* SHA-256 through OpenSSL's low-level interface, not EVP.
 *
 * The first EVP digest in a process costs OpenSSL's whole start-up: the
 * configuration file, the error strings and the provider name tables, about
 * 1.6 ms on the reference machine and paid by the first zeModuleCreate. A
 * private library context does not avoid it (EVP_DigestInit_ex asks the
 * ENGINE table, which loads the configuration into the default context), and
 * skipping the configuration (OPENSSL_INIT_NO_LOAD_CONFIG) would change
 * process-wide state the application may rely on. SHA256_Init and friends
 * touch none of that (30 us for the first digest) and run the same
 * CPU-specific code. They are deprecated in OpenSSL 3 but kept: hence the
 * suppression, confined to this file.
 *
 * They come from libcrypto's static archive (CMakeLists.txt): dlopening the
 * shared library from the layer, inside zeInit, cost 0.7 ms (Debian 12) to
 * 1.2 ms (Debian 13) of relocations, more than every hit of a typical
 * program together. The layer exports none of their symbols
 * (level_zero_layer/exports.map), so an application's own libcrypto is
 * untouched. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "zecache/sha256.h"

#include <stdlib.h>

#include <openssl/sha.h>

_Static_assert(SHA256_DIGEST_LENGTH == ZC_SHA256_SIZE, "SHA-256 digest size");

struct zc_sha256 {
    SHA256_CTX context;
};

zc_sha256 *zc_sha256_create(void)
{
    zc_sha256 *hash = malloc(sizeof *hash);
    if (hash != NULL && SHA256_Init(&hash->context) != 1) {
        free(hash);
        return NULL;
    }
    return hash;
}

zc_sha256 *zc_sha256_copy(const zc_sha256 *hash)
{
    zc_sha256 *copy = malloc(sizeof *copy);
    if (copy != NULL)
        *copy = *hash;
    return copy;
}

void zc_sha256_destroy(zc_sha256 *hash)
{
    free(hash);
}

bool zc_sha256_update(zc_sha256 *hash, const void *bytes, size_t size)
{
    return size == 0 || SHA256_Update(&hash->context, bytes, size) == 1;
}

bool zc_sha256_finish(zc_sha256 *hash, uint8_t digest[ZC_SHA256_SIZE])
{
    return SHA256_Final(digest, &hash->context) == 1;
}

bool zc_sha256_digest(const void *bytes, size_t size, uint8_t digest[ZC_SHA256_SIZE])
{
    SHA256_CTX context;
    return SHA256_Init(&context) == 1 && (size == 0 || SHA256_Update(&context, bytes, size) == 1) &&
           SHA256_Final(digest, &context) == 1;
}
