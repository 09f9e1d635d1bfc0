/* Bundles of entries (see bundle.h): written and read through stdio, so the
 * tool can use pipes, and read in bounded chunks, so a size field claiming
 * a gigabyte costs memory only for the bytes that are really there. */
#include "zecache/bundle.h"

#include <stdlib.h>
#include <string.h>

#include "byte_order.h"
#include "zecache/entry.h"
#include "zecache/recipe.h"
#include "zecache/sha256.h"

enum {
    RECORD_HEAD_SIZE = ZC_KEY_SIZE + 8,
    READ_CHUNK = 1 << 20,
};

zc_bundle_kind zc_bundle_kind_of(const uint8_t *bytes, size_t size)
{
    if (size >= 8 && memcmp(bytes, ZC_ENTRY_MAGIC, 8) == 0)
        return ZC_BUNDLE_KIND_ENTRY;
    if (size >= 8 && memcmp(bytes, ZC_RECIPE_MAGIC, 8) == 0)
        return ZC_BUNDLE_KIND_RECIPE;
    if (size >= 8 && memcmp(bytes, ZC_SPIRV_MAGIC, 8) == 0)
        return ZC_BUNDLE_KIND_SPIRV;
    return ZC_BUNDLE_KIND_UNKNOWN;
}

static zc_status write_bytes(zc_bundle_writer *writer, const void *bytes, size_t size)
{
    if (!zc_sha256_update(writer->digest, bytes, size))
        return ZC_ERR_NOMEM;
    return fwrite(bytes, 1, size, writer->out) == size ? ZC_OK : ZC_ERR_IO;
}

zc_status zc_bundle_write_start_signed(zc_bundle_writer *writer, FILE *out,
                                       const zc_bundle_signer *signer)
{
    if (writer == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    *writer = (zc_bundle_writer){.out = out, .digest = zc_sha256_create()};
    if (signer != NULL)
        writer->signer = *signer;
    if (writer->digest == NULL)
        return ZC_ERR_NOMEM;
    uint8_t header[ZC_BUNDLE_HEADER_SIZE] = {0};
    memcpy(header, ZC_BUNDLE_MAGIC, 8);
    zc_put_le32(header + 8, ZC_BUNDLE_FORMAT_VERSION);
    zc_put_le32(header + 12, writer->signer.sign != NULL ? ZC_BUNDLE_FLAG_SIGNED : 0);
    return write_bytes(writer, header, sizeof header);
}

zc_status zc_bundle_write_start(zc_bundle_writer *writer, FILE *out)
{
    return zc_bundle_write_start_signed(writer, out, NULL);
}

void zc_bundle_writer_close(zc_bundle_writer *writer)
{
    zc_sha256_destroy(writer->digest);
    writer->digest = NULL;
}

/* The end's tag: the digest of everything before it, or its signature. */
static bool finish_tag(struct zc_sha256 *digest, const zc_bundle_signer *signer,
                       uint8_t tag[ZC_BUNDLE_TAG_SIZE])
{
    uint8_t sum[ZC_SHA256_SIZE];
    if (!zc_sha256_finish(digest, sum))
        return false;
    if (signer->sign == NULL) {
        memcpy(tag, sum, ZC_BUNDLE_TAG_SIZE);
        return true;
    }
    return signer->sign(signer->key, signer->key_size, sum, sizeof sum, tag);
}

static zc_status write_record_head(zc_bundle_writer *writer, const uint8_t *key, uint64_t size)
{
    uint8_t head[RECORD_HEAD_SIZE];
    memcpy(head, key, ZC_KEY_SIZE);
    zc_put_le64(head + ZC_KEY_SIZE, size);
    return write_bytes(writer, head, sizeof head);
}

zc_status zc_bundle_write_entry(zc_bundle_writer *writer, const zc_key *key, const void *entry,
                                size_t entry_size)
{
    if (writer == NULL || key == NULL || entry == NULL || entry_size == 0 ||
        entry_size > ZC_BUNDLE_MAX_ENTRY_SIZE)
        return ZC_ERR_INVALID_ARG;
    zc_status status = write_record_head(writer, key->bytes, entry_size);
    if (status == ZC_OK)
        status = write_bytes(writer, entry, entry_size);
    if (status == ZC_OK)
        writer->entries++;
    return status;
}

zc_status zc_bundle_write_end(zc_bundle_writer *writer)
{
    if (writer == NULL)
        return ZC_ERR_INVALID_ARG;
    static const uint8_t no_key[ZC_KEY_SIZE];
    uint8_t count[8];
    zc_put_le64(count, writer->entries);
    uint8_t tag[ZC_BUNDLE_TAG_SIZE];
    zc_status status = write_record_head(writer, no_key, 0);
    if (status == ZC_OK)
        status = write_bytes(writer, count, sizeof count);
    if (status == ZC_OK && !finish_tag(writer->digest, &writer->signer, tag))
        status = ZC_ERR_NOMEM;
    if (status == ZC_OK && fwrite(tag, 1, sizeof tag, writer->out) != sizeof tag)
        status = ZC_ERR_IO;
    if (status == ZC_OK && fflush(writer->out) != 0)
        status = ZC_ERR_IO;
    return status;
}

/* Bytes read, also written to the copy; fewer than size only at the end of
 * the input or on an error (of the copy too: then copy_failed). */
static size_t read_unhashed(zc_bundle_reader *reader, void *bytes, size_t size)
{
    size_t got = fread(bytes, 1, size, reader->in);
    if (reader->copy != NULL && got > 0 && fwrite(bytes, 1, got, reader->copy) != got) {
        reader->copy_failed = true;
        return 0;
    }
    return got;
}

/* Version 2 hashes every byte before its tag. */
static size_t read_bytes(zc_bundle_reader *reader, void *bytes, size_t size)
{
    size_t got = read_unhashed(reader, bytes, size);
    if (reader->digest != NULL)
        zc_sha256_update(reader->digest, bytes, got);
    return got;
}

static zc_status check_header(zc_bundle_reader *reader, const uint8_t *header, char *reason,
                              size_t reason_size)
{
    uint32_t version = zc_get_le32(header + 8), flags = zc_get_le32(header + 12);
    if (version < 1 || version > ZC_BUNDLE_FORMAT_VERSION ||
        (flags & ~(version == 2 ? ZC_BUNDLE_FLAG_SIGNED : 0)) != 0)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "bundle format version %u (flags 0x%x) is not supported", version, flags);
    reader->version = version;
    reader->is_signed = (flags & ZC_BUNDLE_FLAG_SIGNED) != 0;
    if (reader->is_signed && reader->signer.sign == NULL)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "the bundle is signed: set NEO_CACHE_REMOTE_SECRET_FILE to the secret "
                          "it was signed with to check it");
    if (!reader->is_signed && reader->signer.sign != NULL)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "the bundle is not signed, and NEO_CACHE_REMOTE_SECRET_FILE asks for "
                          "signed ones");
    if (version == 2 && (reader->digest = zc_sha256_create()) == NULL)
        return ZC_ERR_NOMEM;
    return version == 2 && !zc_sha256_update(reader->digest, header, ZC_BUNDLE_HEADER_SIZE)
               ? ZC_ERR_NOMEM
               : ZC_OK;
}

zc_status zc_bundle_read_start_copying(zc_bundle_reader *reader, FILE *in,
                                       const zc_bundle_signer *signer, FILE *copy, char *reason,
                                       size_t reason_size)
{
    if (reader == NULL || in == NULL)
        return ZC_ERR_INVALID_ARG;
    *reader = (zc_bundle_reader){.in = in, .copy = copy};
    if (signer != NULL)
        reader->signer = *signer;
    uint8_t header[ZC_BUNDLE_HEADER_SIZE];
    if (read_bytes(reader, header, sizeof header) != sizeof header ||
        memcmp(header, ZC_BUNDLE_MAGIC, 8) != 0) {
        return zc_explain(ZC_MISS, reason, reason_size, "%s",
                          reader->copy_failed ? "cannot copy the bundle" : "not a zecache bundle");
    }
    return check_header(reader, header, reason, reason_size);
}

zc_status zc_bundle_read_start_signed(zc_bundle_reader *reader, FILE *in,
                                      const zc_bundle_signer *signer, char *reason,
                                      size_t reason_size)
{
    return zc_bundle_read_start_copying(reader, in, signer, NULL, reason, reason_size);
}

zc_status zc_bundle_read_start(zc_bundle_reader *reader, FILE *in, char *reason, size_t reason_size)
{
    return zc_bundle_read_start_signed(reader, in, NULL, reason, reason_size);
}

void zc_bundle_reader_close(zc_bundle_reader *reader)
{
    zc_sha256_destroy(reader->digest);
    reader->digest = NULL;
}

/* Version 2's tag after the count: read without hashing, then compared. */
static zc_bundle_item check_tag(zc_bundle_reader *reader, char *reason, size_t reason_size)
{
    uint8_t tag[ZC_BUNDLE_TAG_SIZE], expected[ZC_BUNDLE_TAG_SIZE];
    if (read_unhashed(reader, tag, sizeof tag) != sizeof tag) {
        (void)zc_explain(ZC_MISS, reason, reason_size, "bundle ends inside its checksum");
        return ZC_BUNDLE_BAD;
    }
    bool computed = finish_tag(reader->digest, &reader->signer, expected);
    zc_sha256_destroy(reader->digest);
    reader->digest = NULL;
    if (!computed || memcmp(tag, expected, sizeof tag) != 0) {
        (void)zc_explain(ZC_MISS, reason, reason_size, "%s",
                         reader->is_signed ? "the bundle's signature does not match: damaged, "
                                             "or signed with another secret"
                                           : "the bundle's checksum does not match: damaged");
        return ZC_BUNDLE_BAD;
    }
    return ZC_BUNDLE_END;
}

/* The entry's bytes, growing the buffer only as they arrive. */
static bool read_entry_bytes(zc_bundle_reader *reader, uint64_t size, uint8_t **entry)
{
    uint8_t *buffer = NULL;
    size_t done = 0;
    while (done < size) {
        size_t chunk = size - done < READ_CHUNK ? (size_t)(size - done) : READ_CHUNK;
        uint8_t *grown = realloc(buffer, done + chunk);
        if (grown == NULL)
            break;
        buffer = grown;
        size_t got = read_bytes(reader, buffer + done, chunk);
        done += got;
        if (got < chunk)
            break;
    }
    if (done < size) {
        free(buffer);
        return false;
    }
    *entry = buffer;
    return true;
}

static zc_bundle_item read_end(zc_bundle_reader *reader, const uint8_t *head, char *reason,
                               size_t reason_size)
{
    static const uint8_t no_key[ZC_KEY_SIZE];
    uint8_t count[8], extra;
    if (memcmp(head, no_key, ZC_KEY_SIZE) != 0) {
        (void)zc_explain(ZC_MISS, reason, reason_size, "entry %llu has no bytes",
                         (unsigned long long)reader->entries + 1);
        return ZC_BUNDLE_BAD;
    }
    if (read_bytes(reader, count, sizeof count) != sizeof count) {
        (void)zc_explain(ZC_MISS, reason, reason_size, "bundle ends inside its end marker");
        return ZC_BUNDLE_BAD;
    }
    if (zc_get_le64(count) != reader->entries) {
        (void)zc_explain(
            ZC_MISS, reason, reason_size, "bundle says it holds %llu entries, not %llu",
            (unsigned long long)zc_get_le64(count), (unsigned long long)reader->entries);
        return ZC_BUNDLE_BAD;
    }
    if (reader->version == 2 && check_tag(reader, reason, reason_size) != ZC_BUNDLE_END)
        return ZC_BUNDLE_BAD;
    if (read_bytes(reader, &extra, 1) != 0) {
        (void)zc_explain(ZC_MISS, reason, reason_size, "bytes follow the end of the bundle");
        return ZC_BUNDLE_BAD;
    }
    return ZC_BUNDLE_END;
}

static zc_bundle_item read_item(zc_bundle_reader *reader, zc_key *key, uint8_t **entry,
                                size_t *entry_size, char *reason, size_t reason_size)
{
    unsigned long long number = (unsigned long long)reader->entries + 1;
    uint8_t head[RECORD_HEAD_SIZE];
    if (read_bytes(reader, head, sizeof head) != sizeof head) {
        (void)zc_explain(ZC_MISS, reason, reason_size,
                         "bundle ends before entry %llu or its end marker", number);
        return ZC_BUNDLE_BAD;
    }
    uint64_t size = zc_get_le64(head + ZC_KEY_SIZE);
    if (size == 0)
        return read_end(reader, head, reason, reason_size);
    if (size > ZC_BUNDLE_MAX_ENTRY_SIZE) {
        (void)zc_explain(ZC_MISS, reason, reason_size,
                         "entry %llu claims more bytes than any entry holds", number);
        return ZC_BUNDLE_BAD;
    }
    if (!read_entry_bytes(reader, size, entry)) {
        (void)zc_explain(ZC_MISS, reason, reason_size, "bundle ends inside entry %llu", number);
        return ZC_BUNDLE_BAD;
    }
    memcpy(key->bytes, head, ZC_KEY_SIZE);
    /* An item is named by its key's bytes; an entry's kind is in its header
     * (checked with the rest when it is imported). */
    key->kind = (uint8_t)zc_entry_claimed_kind(*entry, (size_t)size);
    *entry_size = (size_t)size;
    reader->entries++;
    return ZC_BUNDLE_ENTRY;
}

zc_bundle_item zc_bundle_read_next(zc_bundle_reader *reader, zc_key *key, uint8_t **entry,
                                   size_t *entry_size, char *reason, size_t reason_size)
{
    if (reader == NULL || key == NULL || entry == NULL || entry_size == NULL)
        return ZC_BUNDLE_BAD;
    *entry = NULL;
    *entry_size = 0;
    zc_bundle_item item = read_item(reader, key, entry, entry_size, reason, reason_size);
    if (!reader->copy_failed)
        return item;
    free(*entry);
    *entry = NULL;
    *entry_size = 0;
    (void)zc_explain(ZC_MISS, reason, reason_size, "cannot copy the bundle");
    return ZC_BUNDLE_BAD;
}
