/* See pack.h: the reader. The header, the index and the tag are read once,
 * into memory, and trusted only after the header, every record's bounds, the
 * index's order and the tag check; a lookup is then a binary search of that
 * index and one pread of the entry. The file is not mapped: a pack cut in
 * place while open (`cp` over it truncates it first) would raise SIGBUS in
 * the application at the next touch of a page past the new end, and a layer
 * cannot own the process's SIGBUS handler; a short read is a miss instead,
 * and the entry's bytes are copied out once, as its decoding reads them. */
#include "zecache/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_order.h"
#include "pack_internal.h"
#include "whole_io.h"
#include "zecache/entry.h"
#include "zecache/sha256.h"

struct zc_pack {
    int fd; /* kept open: one open per process, however many entries it serves */
    uint64_t file_size;
    bool is_signed;
    uint64_t count, index_offset;
    uint8_t header[ZC_PACK_HEADER_SIZE];
    uint8_t *index; /* the records, then the tag */
};

enum { RECORD_OFFSET = 40, RECORD_SIZE = 48, RECORD_DIGEST = 56 };

static zc_status check_header(const uint8_t *header, uint64_t size, zc_pack *pack, char *reason,
                              size_t reason_size)
{
    if (memcmp(header, ZC_PACK_MAGIC, 8) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "not a zecache pack");
    if (zc_get_le32(header + 8) != ZC_PACK_FORMAT_VERSION)
        return zc_explain(ZC_MISS, reason, reason_size, "pack format version %u, not %u",
                          zc_get_le32(header + 8), ZC_PACK_FORMAT_VERSION);
    uint32_t flags = zc_get_le32(header + 12);
    if ((flags & ~ZC_PACK_FLAG_SIGNED) != 0 || zc_get_le64(header + 40) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "unknown flags in the pack's header");
    pack->is_signed = flags & ZC_PACK_FLAG_SIGNED;
    uint64_t count = zc_get_le64(header + 16), index_offset = zc_get_le64(header + 24);
    uint64_t room = size - ZC_PACK_HEADER_SIZE - ZC_PACK_TAG_SIZE;
    if (zc_get_le64(header + 32) != size || count > room / ZC_PACK_RECORD_SIZE ||
        index_offset < ZC_PACK_HEADER_SIZE ||
        index_offset != size - ZC_PACK_TAG_SIZE - count * ZC_PACK_RECORD_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "the pack's header does not match its size (cut or grown)");
    pack->count = count;
    pack->index_offset = index_offset;
    return ZC_OK;
}

/* Records [first, end) within the entries' part, with room for an entry's
 * header, in strictly increasing key order. */
static zc_status check_records(const zc_pack *pack, uint64_t first, uint64_t end, char *reason,
                               size_t reason_size)
{
    for (uint64_t i = first; i < end; i++) {
        const uint8_t *record = pack->index + i * ZC_PACK_RECORD_SIZE;
        uint64_t offset = zc_get_le64(record + RECORD_OFFSET);
        uint64_t size = zc_get_le64(record + RECORD_SIZE);
        if (offset < ZC_PACK_HEADER_SIZE || size < ZC_ENTRY_HEADER_SIZE ||
            offset > pack->index_offset || size > pack->index_offset - offset)
            return zc_explain(ZC_MISS, reason, reason_size,
                              "record %llu points outside the pack's entries",
                              (unsigned long long)i);
        if (i > 0 && zc_pack_record_compare(record - ZC_PACK_RECORD_SIZE, record) >= 0)
            return zc_explain(ZC_MISS, reason, reason_size, "the pack's index is out of order");
    }
    return ZC_OK;
}

static zc_status check_tag(const zc_pack *pack, const zc_bundle_signer *verifier, char *reason,
                           size_t reason_size)
{
    uint64_t index_size = pack->count * ZC_PACK_RECORD_SIZE;
    uint8_t tag[ZC_PACK_TAG_SIZE];
    if (!zc_pack_tag(pack->header, pack->index, index_size, verifier, tag))
        return ZC_ERR_NOMEM;
    const uint8_t *stored = pack->index + index_size;
    uint8_t difference = 0;
    for (size_t i = 0; i < sizeof tag; i++)
        difference |= (uint8_t)(tag[i] ^ stored[i]);
    if (difference == 0)
        return ZC_OK;
    return zc_explain(ZC_MISS, reason, reason_size,
                      verifier != NULL ? "the pack's signature does not match (another secret, "
                                         "or the pack was changed)"
                                       : "the pack's checksum does not match: damaged");
}

enum { RECORDS_PER_READ = 1024 };

/* Room for the records before end and the tag after them: the index grows
 * (doubling) only as its records are read. */
static bool make_room(zc_pack *pack, uint64_t end, uint64_t *capacity)
{
    if (pack->index != NULL && end <= *capacity)
        return true;
    uint64_t wanted = *capacity * 2 > end ? *capacity * 2 : end;
    wanted = wanted < pack->count ? wanted : pack->count;
    uint8_t *index =
        realloc(pack->index, (size_t)(wanted * ZC_PACK_RECORD_SIZE + ZC_PACK_TAG_SIZE));
    if (index == NULL)
        return false;
    pack->index = index;
    *capacity = wanted;
    return true;
}

/* The header, then the index a part at a time, each part's records checked
 * before the next is read: a damaged or planted index (a sparse file
 * declaring gigabytes of records) is refused at its first bad record, having
 * cost no more memory than the records read. Then the tag. */
static zc_status read_index(zc_pack *pack, char *reason, size_t reason_size)
{
    if (!zc_pread_whole(pack->fd, pack->header, ZC_PACK_HEADER_SIZE, 0))
        return zc_explain(ZC_MISS, reason, reason_size, "not a zecache pack (cut)");
    zc_status status = check_header(pack->header, pack->file_size, pack, reason, reason_size);
    uint64_t capacity = 0;
    for (uint64_t first = 0; status == ZC_OK && first <= pack->count; first += RECORDS_PER_READ) {
        uint64_t end =
            pack->count - first > RECORDS_PER_READ ? first + RECORDS_PER_READ : pack->count;
        if (!make_room(pack, end, &capacity))
            return ZC_ERR_NOMEM;
        uint64_t at = first * ZC_PACK_RECORD_SIZE;
        /* The last part takes the tag with it. */
        size_t size = (size_t)((end - first) * ZC_PACK_RECORD_SIZE) +
                      (end == pack->count ? ZC_PACK_TAG_SIZE : 0);
        if (!zc_pread_whole(pack->fd, pack->index + at, size, pack->index_offset + at))
            return zc_explain(ZC_MISS, reason, reason_size, "the pack's index cannot be read: %s",
                              errno != 0 ? strerror(errno) : "cut");
        status = check_records(pack, first, end, reason, reason_size);
        if (end == pack->count)
            break;
    }
    return status;
}

/* O_NONBLOCK: a FIFO planted at the pack's name opens without a writer (and
 * is then refused); reads of a regular file ignore it. */
static zc_status open_file(const char *path, zc_pack *pack, char *reason, size_t reason_size)
{
    pack->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (pack->fd < 0)
        return zc_explain(ZC_ERR_IO, reason, reason_size, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(pack->fd, &st) != 0 || !S_ISREG(st.st_mode))
        return zc_explain(ZC_ERR_IO, reason, reason_size, "not a regular file");
    if ((uint64_t)st.st_size < ZC_PACK_HEADER_SIZE + ZC_PACK_TAG_SIZE ||
        (uint64_t)st.st_size > SIZE_MAX)
        return zc_explain(ZC_MISS, reason, reason_size, "not a zecache pack (%lld bytes)",
                          (long long)st.st_size);
    pack->file_size = (uint64_t)st.st_size;
    return ZC_OK;
}

zc_status zc_pack_open(const char *path, const zc_bundle_signer *verifier, zc_pack **out,
                       char *reason, size_t reason_size)
{
    zc_pack *pack = calloc(1, sizeof *pack);
    if (pack == NULL)
        return ZC_ERR_NOMEM;
    pack->fd = -1;
    zc_status status = open_file(path, pack, reason, reason_size);
    if (status == ZC_OK)
        status = read_index(pack, reason, reason_size);
    if (status == ZC_OK && pack->is_signed != (verifier != NULL))
        status = zc_explain(ZC_MISS, reason, reason_size,
                            pack->is_signed
                                ? "a signed pack, and no NEO_CACHE_REMOTE_SECRET_FILE to check it"
                                : "an unsigned pack, and NEO_CACHE_REMOTE_SECRET_FILE asks for "
                                  "signed ones");
    if (status == ZC_OK)
        status = check_tag(pack, verifier, reason, reason_size);
    if (status != ZC_OK) {
        zc_pack_close(pack);
        return status;
    }
    *out = pack;
    return ZC_OK;
}

void zc_pack_close(zc_pack *pack)
{
    if (pack == NULL)
        return;
    if (pack->fd >= 0)
        close(pack->fd);
    free(pack->index);
    free(pack);
}

uint64_t zc_pack_entry_count(const zc_pack *pack)
{
    return pack->count;
}

void zc_pack_key_at(const zc_pack *pack, uint64_t index, zc_key *key)
{
    const uint8_t *record = pack->index + index * ZC_PACK_RECORD_SIZE;
    memcpy(key->bytes, record, ZC_KEY_SIZE);
    key->kind = record[ZC_KEY_SIZE];
}

static const uint8_t *find_record(const zc_pack *pack, const zc_key *key)
{
    uint64_t low = 0, high = pack->count;
    while (low < high) {
        uint64_t middle = low + (high - low) / 2;
        const uint8_t *record = pack->index + middle * ZC_PACK_RECORD_SIZE;
        int order = zc_pack_record_compare_key(record, key);
        if (order == 0)
            return record;
        if (order < 0)
            low = middle + 1;
        else
            high = middle;
    }
    return NULL;
}

/* The record's bytes as the file holds them now: a file cut since it was
 * opened gives a short read, a miss. */
static zc_status read_entry(const zc_pack *pack, const uint8_t *record, uint8_t **entry,
                            size_t *entry_size, char *reason, size_t reason_size)
{
    size_t size = (size_t)zc_get_le64(record + RECORD_SIZE);
    uint8_t *bytes = malloc(size);
    if (bytes == NULL)
        return ZC_ERR_NOMEM;
    if (!zc_pread_whole(pack->fd, bytes, size, zc_get_le64(record + RECORD_OFFSET))) {
        int error = errno;
        free(bytes);
        return zc_explain(ZC_MISS, reason, reason_size, "the entry cannot be read: %s",
                          error != 0 ? strerror(error) : "the pack was cut since it was opened");
    }
    *entry = bytes;
    *entry_size = size;
    return ZC_OK;
}

static zc_status check_digest(const uint8_t *record, const uint8_t *bytes, size_t size,
                              char *reason, size_t reason_size)
{
    uint8_t digest[ZC_SHA256_SIZE];
    if (!zc_sha256_digest(bytes, size, digest))
        return ZC_ERR_NOMEM;
    if (memcmp(digest, record + RECORD_DIGEST, sizeof digest) != 0)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "the entry's bytes do not match the signed pack's index");
    return ZC_OK;
}

zc_status zc_pack_find(const zc_pack *pack, const zc_key *key, uint8_t **entry, size_t *entry_size,
                       char *reason, size_t reason_size)
{
    const uint8_t *record = find_record(pack, key);
    if (record == NULL)
        return ZC_MISS;
    uint8_t *bytes = NULL;
    size_t size = 0;
    zc_status status = read_entry(pack, record, &bytes, &size, reason, reason_size);
    if (status == ZC_OK && pack->is_signed)
        status = check_digest(record, bytes, size, reason, reason_size);
    if (status != ZC_OK) {
        free(bytes);
        return status;
    }
    *entry = bytes;
    *entry_size = size;
    return ZC_OK;
}
