/* See pack.h: the reader. The file is mapped once and trusted only after
 * its header, every record's bounds, the index's order and the tag check;
 * a lookup is then a binary search of the mapped index. */
#include "zecache/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_order.h"
#include "pack_internal.h"
#include "zecache/entry.h"
#include "zecache/sha256.h"

struct zc_pack {
    const uint8_t *map;
    size_t map_size;
    bool is_signed;
    uint64_t count;
    const uint8_t *index; /* inside map */
};

enum { RECORD_OFFSET = 40, RECORD_SIZE = 48, RECORD_DIGEST = 56 };

static zc_status check_header(const uint8_t *map, size_t size, const zc_bundle_signer *verifier,
                              zc_pack *pack, char *reason, size_t reason_size)
{
    if (size < ZC_PACK_HEADER_SIZE + ZC_PACK_TAG_SIZE || memcmp(map, ZC_PACK_MAGIC, 8) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "not a zecache pack");
    if (zc_get_le32(map + 8) != ZC_PACK_FORMAT_VERSION)
        return zc_explain(ZC_MISS, reason, reason_size, "pack format version %u, not %u",
                          zc_get_le32(map + 8), ZC_PACK_FORMAT_VERSION);
    uint32_t flags = zc_get_le32(map + 12);
    if ((flags & ~ZC_PACK_FLAG_SIGNED) != 0 || zc_get_le64(map + 40) != 0)
        return zc_explain(ZC_MISS, reason, reason_size, "unknown flags in the pack's header");
    pack->is_signed = flags & ZC_PACK_FLAG_SIGNED;
    if (pack->is_signed && verifier == NULL)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "a signed pack, and no NEO_CACHE_REMOTE_SECRET_FILE to check it");
    if (!pack->is_signed && verifier != NULL)
        return zc_explain(
            ZC_MISS, reason, reason_size,
            "an unsigned pack, and NEO_CACHE_REMOTE_SECRET_FILE asks for signed ones");
    uint64_t count = zc_get_le64(map + 16), index_offset = zc_get_le64(map + 24);
    uint64_t room = size - ZC_PACK_HEADER_SIZE - ZC_PACK_TAG_SIZE;
    if (zc_get_le64(map + 32) != size || count > room / ZC_PACK_RECORD_SIZE ||
        index_offset < ZC_PACK_HEADER_SIZE ||
        index_offset != size - ZC_PACK_TAG_SIZE - count * ZC_PACK_RECORD_SIZE)
        return zc_explain(ZC_MISS, reason, reason_size,
                          "the pack's header does not match its size (cut or grown)");
    pack->count = count;
    pack->index = map + index_offset;
    return ZC_OK;
}

/* Every record within the entries' part, with room for an entry's header,
 * in strictly increasing key order. */
static zc_status check_records(const zc_pack *pack, uint64_t index_offset, char *reason,
                               size_t reason_size)
{
    for (uint64_t i = 0; i < pack->count; i++) {
        const uint8_t *record = pack->index + i * ZC_PACK_RECORD_SIZE;
        uint64_t offset = zc_get_le64(record + RECORD_OFFSET);
        uint64_t size = zc_get_le64(record + RECORD_SIZE);
        if (offset < ZC_PACK_HEADER_SIZE || size < ZC_ENTRY_HEADER_SIZE || offset > index_offset ||
            size > index_offset - offset)
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
    if (!zc_pack_tag(pack->map, pack->index, index_size, verifier, tag))
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

static zc_status map_file(const char *path, const uint8_t **map, size_t *size, char *reason,
                          size_t reason_size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return zc_explain(ZC_ERR_IO, reason, reason_size, "cannot open: %s", strerror(errno));
    struct stat st;
    zc_status status = ZC_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        status = zc_explain(ZC_ERR_IO, reason, reason_size, "not a regular file");
    else if ((uint64_t)st.st_size < ZC_PACK_HEADER_SIZE + ZC_PACK_TAG_SIZE ||
             (uint64_t)st.st_size > SIZE_MAX)
        status = zc_explain(ZC_MISS, reason, reason_size, "not a zecache pack (%lld bytes)",
                            (long long)st.st_size);
    void *mapped = MAP_FAILED;
    if (status == ZC_OK) {
        mapped = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapped == MAP_FAILED)
            status = zc_explain(ZC_ERR_IO, reason, reason_size, "cannot map: %s", strerror(errno));
    }
    close(fd);
    if (status == ZC_OK) {
        *map = mapped;
        *size = (size_t)st.st_size;
    }
    return status;
}

zc_status zc_pack_open(const char *path, const zc_bundle_signer *verifier, zc_pack **out,
                       char *reason, size_t reason_size)
{
    zc_pack *pack = calloc(1, sizeof *pack);
    if (pack == NULL)
        return ZC_ERR_NOMEM;
    zc_status status = map_file(path, &pack->map, &pack->map_size, reason, reason_size);
    if (status == ZC_OK)
        status = check_header(pack->map, pack->map_size, verifier, pack, reason, reason_size);
    if (status == ZC_OK)
        status = check_records(pack, (uint64_t)(pack->index - pack->map), reason, reason_size);
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
    if (pack->map != NULL)
        munmap((void *)pack->map, pack->map_size);
    free(pack);
}

uint64_t zc_pack_entry_count(const zc_pack *pack)
{
    return pack->count;
}

void zc_pack_entry_at(const zc_pack *pack, uint64_t index, zc_key *key, const uint8_t **entry,
                      size_t *entry_size)
{
    const uint8_t *record = pack->index + index * ZC_PACK_RECORD_SIZE;
    memcpy(key->bytes, record, ZC_KEY_SIZE);
    key->kind = record[ZC_KEY_SIZE];
    *entry = pack->map + zc_get_le64(record + RECORD_OFFSET);
    *entry_size = (size_t)zc_get_le64(record + RECORD_SIZE);
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

zc_status zc_pack_find(const zc_pack *pack, const zc_key *key, const uint8_t **entry,
                       size_t *entry_size, char *reason, size_t reason_size)
{
    const uint8_t *record = find_record(pack, key);
    if (record == NULL)
        return ZC_MISS;
    const uint8_t *bytes = pack->map + zc_get_le64(record + RECORD_OFFSET);
    size_t size = (size_t)zc_get_le64(record + RECORD_SIZE);
    if (pack->is_signed) {
        uint8_t digest[ZC_SHA256_SIZE];
        if (!zc_sha256_digest(bytes, size, digest))
            return ZC_ERR_NOMEM;
        if (memcmp(digest, record + RECORD_DIGEST, sizeof digest) != 0)
            return zc_explain(ZC_MISS, reason, reason_size,
                              "the entry's bytes do not match the signed pack's index");
    }
    *entry = bytes;
    *entry_size = size;
    return ZC_OK;
}
