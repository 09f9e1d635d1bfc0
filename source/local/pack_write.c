/* See pack.h: the writer. Entries are streamed to the file as they come;
 * their index records are kept in memory (88 bytes each) and written, sorted,
 * after them, then the header is written over its placeholder. */
#include "zecache/pack.h"

#include <stdlib.h>
#include <string.h>

#include "byte_order.h"
#include "pack_internal.h"
#include "zecache/sha256.h"

struct zc_pack_writer {
    FILE *out;
    zc_bundle_signer signer; /* sign NULL: unsigned */
    uint64_t offset;         /* where the next entry goes */
    uint8_t *records;
    uint64_t count, capacity;
};

zc_status zc_pack_write_start(FILE *out, const zc_bundle_signer *signer, zc_pack_writer **writer)
{
    zc_pack_writer *made = calloc(1, sizeof *made);
    if (made == NULL)
        return ZC_ERR_NOMEM;
    made->out = out;
    if (signer != NULL)
        made->signer = *signer;
    made->offset = ZC_PACK_HEADER_SIZE;
    static const uint8_t placeholder[ZC_PACK_HEADER_SIZE];
    if (fwrite(placeholder, 1, sizeof placeholder, out) != sizeof placeholder) {
        free(made);
        return ZC_ERR_IO;
    }
    *writer = made;
    return ZC_OK;
}

static bool grow_records(zc_pack_writer *writer)
{
    if (writer->count < writer->capacity)
        return true;
    uint64_t capacity = writer->capacity == 0 ? 256 : writer->capacity * 2;
    uint8_t *records = realloc(writer->records, capacity * ZC_PACK_RECORD_SIZE);
    if (records == NULL)
        return false;
    writer->records = records;
    writer->capacity = capacity;
    return true;
}

zc_status zc_pack_write_entry(zc_pack_writer *writer, const zc_key *key, const void *entry,
                              size_t entry_size)
{
    if (!grow_records(writer))
        return ZC_ERR_NOMEM;
    uint8_t digest[ZC_SHA256_SIZE];
    if (!zc_sha256_digest(entry, entry_size, digest))
        return ZC_ERR_NOMEM;
    if (fwrite(entry, 1, entry_size, writer->out) != entry_size)
        return ZC_ERR_IO;
    zc_pack_record_put(writer->records + writer->count * ZC_PACK_RECORD_SIZE, key, writer->offset,
                       entry_size, digest);
    writer->count++;
    writer->offset += entry_size;
    return ZC_OK;
}

static int compare_records(const void *a, const void *b)
{
    return zc_pack_record_compare(a, b);
}

/* Keeps one record of each key (a key's entries are alike: keys are exact);
 * the bytes of the others stay in the file, named by no record. */
static uint64_t drop_duplicates(uint8_t *records, uint64_t count)
{
    uint64_t kept = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint8_t *record = records + i * ZC_PACK_RECORD_SIZE;
        if (kept > 0 && zc_pack_record_same_key(records + (kept - 1) * ZC_PACK_RECORD_SIZE, record))
            continue;
        memmove(records + kept * ZC_PACK_RECORD_SIZE, record, ZC_PACK_RECORD_SIZE);
        kept++;
    }
    return count - kept;
}

zc_status zc_pack_write_end(zc_pack_writer *writer, uint64_t *duplicates)
{
    if (writer->count > 0) /* records is NULL in a pack of nothing, which qsort may not take */
        qsort(writer->records, (size_t)writer->count, ZC_PACK_RECORD_SIZE, compare_records);
    uint64_t dropped = drop_duplicates(writer->records, writer->count);
    writer->count -= dropped;
    if (duplicates != NULL)
        *duplicates = dropped;
    uint8_t header[ZC_PACK_HEADER_SIZE];
    uint64_t index_size = writer->count * ZC_PACK_RECORD_SIZE;
    zc_pack_header_put(header, writer->signer.sign != NULL ? ZC_PACK_FLAG_SIGNED : 0, writer->count,
                       writer->offset, writer->offset + index_size + ZC_PACK_TAG_SIZE);
    uint8_t tag[ZC_PACK_TAG_SIZE];
    const zc_bundle_signer *signer = writer->signer.sign != NULL ? &writer->signer : NULL;
    if (!zc_pack_tag(header, writer->records, index_size, signer, tag))
        return ZC_ERR_NOMEM;
    FILE *out = writer->out;
    bool written = (index_size == 0 || fwrite(writer->records, 1, index_size, out) == index_size) &&
                   fwrite(tag, 1, sizeof tag, out) == sizeof tag && fseek(out, 0, SEEK_SET) == 0 &&
                   fwrite(header, 1, sizeof header, out) == sizeof header && fflush(out) == 0;
    return written ? ZC_OK : ZC_ERR_IO;
}

void zc_pack_writer_free(zc_pack_writer *writer)
{
    if (writer == NULL)
        return;
    free(writer->records);
    free(writer);
}
