/* HMAC-SHA-256 tags of remote entries: the construction against OpenSSL's own
 * HMAC(), and what a check accepts and refuses. */
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/entry.h"
#include "zecache/remote_tag.h"

static void secret_of(const char *text, zc_remote_secret *secret)
{
    memset(secret, 0, sizeof *secret);
    secret->size = strlen(text);
    memcpy(secret->bytes, text, secret->size);
}

/* Key lengths below, at and above the block size (hashed first), data of
 * several sizes including none. */
Test(remote_tag, hmac_matches_openssl)
{
    static uint8_t data[5000], key[200];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 7 + 3);
    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (uint8_t)(i * 13 + 1);
    const size_t key_sizes[] = {0, 1, 16, 63, 64, 65, 200};
    const size_t data_sizes[] = {0, 1, 55, 64, 1000, 5000};
    for (size_t k = 0; k < sizeof key_sizes / sizeof key_sizes[0]; k++) {
        for (size_t d = 0; d < sizeof data_sizes / sizeof data_sizes[0]; d++) {
            uint8_t ours[ZC_REMOTE_TAG_SIZE], theirs[EVP_MAX_MD_SIZE];
            unsigned theirs_size = 0;
            cr_assert(zc_hmac_sha256(key, key_sizes[k], data, data_sizes[d], ours));
            cr_assert_not_null(HMAC(EVP_sha256(), key, (int)key_sizes[k], data, data_sizes[d],
                                    theirs, &theirs_size));
            cr_assert_eq(theirs_size, ZC_REMOTE_TAG_SIZE);
            cr_assert_arr_eq(ours, theirs, ZC_REMOTE_TAG_SIZE, "key %zu data %zu", key_sizes[k],
                             data_sizes[d]);
        }
    }
}

/* A signed value is an entry in the one entry format: flagged, with its
 * signature after the frame. It checks only with its secret, and decodes as
 * any entry, for readers with or without the secret. */
Test(remote_tag, signed_value_checks_only_with_its_secret)
{
    zc_remote_secret secret, other;
    secret_of("0123456789abcdef-one", &secret);
    secret_of("0123456789abcdef-two", &other);
    zc_key key = t_key(11);
    zc_artifact *artifact = t_artifact(3000, 11), *decoded = NULL;
    uint8_t *entry, *value;
    size_t entry_size, value_size;
    char reason[128];
    cr_assert_eq(zc_entry_encode(&key, artifact, 3, &entry, &entry_size), ZC_OK);
    cr_assert_eq(zc_remote_tag_append(&secret, entry, entry_size, &value, &value_size), ZC_OK);
    cr_assert_eq(value_size, entry_size + ZC_REMOTE_TAG_TRAILER_SIZE);
    zc_entry_header header;
    cr_assert_eq(zc_entry_read_header(value, value_size, &header, reason, sizeof reason), ZC_OK,
                 "%s", reason);
    cr_assert_eq(header.flags, ZC_ENTRY_FLAG_SIGNED);
    cr_assert_eq(zc_remote_tag_check(&secret, value, value_size, reason, sizeof reason), ZC_OK);
    cr_assert_eq(zc_entry_decode(value, value_size, &key, 0, &decoded, reason, sizeof reason),
                 ZC_OK, "%s", reason);
    t_assert_same_artifact(decoded, artifact);
    zc_artifact_unref(decoded);
    cr_assert_eq(zc_remote_tag_check(NULL, value, value_size, reason, sizeof reason), ZC_OK);
    cr_assert_eq(zc_remote_tag_check(&other, value, value_size, reason, sizeof reason), ZC_MISS);
    cr_assert_not_null(strstr(reason, "another secret"), "%s", reason);
    /* Every single-byte change anywhere: refused with the secret. */
    for (size_t i = 0; i < value_size; i++) {
        value[i] ^= 0x01;
        zc_status status = zc_remote_tag_check(&secret, value, value_size, reason, sizeof reason);
        value[i] ^= 0x01;
        cr_assert_eq(status, ZC_MISS, "byte %zu flipped and still accepted", i);
    }
    /* Truncated by any amount: refused. */
    for (size_t cut = 1; cut < value_size; cut++)
        cr_assert_eq(zc_remote_tag_check(&secret, value, value_size - cut, reason, sizeof reason),
                     ZC_MISS, "cut by %zu and still accepted", cut);
    /* An unsigned entry: refused with a secret, accepted without one. */
    cr_assert_eq(zc_remote_tag_check(&secret, entry, entry_size, reason, sizeof reason), ZC_MISS);
    cr_assert_not_null(strstr(reason, "not signed"));
    cr_assert_eq(zc_remote_tag_check(NULL, entry, entry_size, reason, sizeof reason), ZC_OK);
    free(value);
    free(entry);
    zc_artifact_unref(artifact);
}

Test(remote_tag, secret_file)
{
    char dir[] = "/tmp/zc_secret_XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/secret", dir);
    zc_remote_secret secret;
    char reason[256];
    t_write_secret(path, "a long enough secret\n\n");
    /* As ssh with a private key: others may not read it; the group may (a
     * team's nodes). */
    cr_assert_eq(chmod(path, 0644), 0);
    cr_assert_eq(zc_remote_secret_read(path, &secret, reason, sizeof reason), ZC_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(reason, "readable only by its owner and group"), "%s", reason);
    cr_assert_eq(chmod(path, 0604), 0);
    cr_assert_eq(zc_remote_secret_read(path, &secret, reason, sizeof reason), ZC_ERR_INVALID_ARG);
    cr_assert_eq(chmod(path, 0640), 0);
    cr_assert_eq(zc_remote_secret_read(path, &secret, reason, sizeof reason), ZC_OK);
    cr_assert_eq(secret.size, 20, "trailing white space is not part of it");
    cr_assert_arr_eq(secret.bytes, "a long enough secret", 20);
    t_write_file(path, "short\n", 6);
    cr_assert_eq(zc_remote_secret_read(path, &secret, reason, sizeof reason), ZC_ERR_INVALID_ARG);
    cr_assert_not_null(strstr(reason, "needs"));
    t_write_file(path, "", 0);
    cr_assert_eq(zc_remote_secret_read(path, &secret, reason, sizeof reason), ZC_ERR_INVALID_ARG);
    char *big = malloc(ZC_REMOTE_SECRET_MAX + 10);
    memset(big, 'x', ZC_REMOTE_SECRET_MAX + 10);
    t_write_file(path, big, ZC_REMOTE_SECRET_MAX + 10);
    free(big);
    cr_assert_eq(zc_remote_secret_read(path, &secret, reason, sizeof reason), ZC_ERR_INVALID_ARG);
    snprintf(path, sizeof path, "%s/missing", dir);
    cr_assert_eq(zc_remote_secret_read(path, &secret, reason, sizeof reason), ZC_ERR_IO);
    cr_assert_not_null(strstr(reason, "cannot open"));
    t_remove_tree(dir);
}

/* Recorded inputs kept in Redis: any bytes, signed as entries are. */
Test(remote_tag, signed_bytes_check_only_with_their_secret)
{
    zc_remote_secret secret, other;
    secret_of("the secret of sixteen bytes", &secret);
    secret_of("another secret, long enough", &other);
    const uint8_t data[] = "a sealed recipe, say";
    uint8_t *value = NULL;
    size_t size = 0, data_size = 0;
    char reason[128] = "";
    cr_assert_eq(zc_remote_tag_append_bytes(&secret, data, sizeof data, &value, &size), ZC_OK);
    cr_assert_eq(size, sizeof data + ZC_REMOTE_TAG_TRAILER_SIZE);
    cr_assert_eq(zc_remote_tag_check_bytes(&secret, value, size, &data_size, reason, sizeof reason),
                 ZC_OK, "%s", reason);
    cr_assert_eq(data_size, sizeof data);
    cr_assert_arr_eq(value, data, sizeof data);
    cr_assert_eq(zc_remote_tag_check_bytes(&other, value, size, &data_size, reason, sizeof reason),
                 ZC_MISS);
    cr_assert_str_eq(reason, "signed with another secret, or altered");
    value[0] ^= 1;
    cr_assert_eq(zc_remote_tag_check_bytes(&secret, value, size, &data_size, reason, sizeof reason),
                 ZC_MISS);
    cr_assert_eq(
        zc_remote_tag_check_bytes(&secret, data, sizeof data, &data_size, reason, sizeof reason),
        ZC_MISS);
    cr_assert_str_eq(reason, "not signed");
    free(value);
}
