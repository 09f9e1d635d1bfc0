/* Bundles (zecache import's input), fuzzed: the raw bytes read through
 * zc_bundle_read_start / zc_bundle_read_next from a memory stream.
 * Properties: the reader never hands out more bytes than the input holds;
 * it always stops (END or BAD) within the input; a bundle it reads to END
 * is canonical, i.e. writing its entries back gives exactly the input; and
 * every entry it hands out is either refused by zc_entry_decode with a
 * reason or decodes under its record's key. Read with a copy (as a signed
 * import reads), the copy holds exactly the bytes read: a prefix of the
 * input, the whole input when it was read to END. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "zecache/bundle.h"
#include "zecache/entry.h"

enum { MAX_ENTRIES = 64 };

typedef struct read_entry {
    zc_key key;
    uint8_t *bytes;
    size_t size;
} read_entry;

static void check_entry(const read_entry *entry)
{
    zc_artifact *artifact = NULL;
    char reason[256] = "";
    zc_status status = zc_entry_decode(entry->bytes, entry->size, &entry->key, 0, &artifact, reason,
                                       sizeof reason);
    FUZZ_CHECK(status == ZC_OK || status == ZC_MISS);
    FUZZ_CHECK(status == ZC_OK ? artifact != NULL : artifact == NULL && reason[0] != '\0');
    zc_artifact_unref(artifact);
}

/* Writes the entries back and compares with the input. */
static void check_canonical(const uint8_t *data, size_t size, const read_entry *entries,
                            size_t count)
{
    char *written = NULL;
    size_t written_size = 0;
    FILE *out = open_memstream(&written, &written_size);
    FUZZ_CHECK(out != NULL);
    zc_bundle_writer writer;
    FUZZ_CHECK(zc_bundle_write_start(&writer, out) == ZC_OK);
    for (size_t i = 0; i < count; i++)
        FUZZ_CHECK(zc_bundle_write_entry(&writer, &entries[i].key, entries[i].bytes,
                                         entries[i].size) == ZC_OK);
    FUZZ_CHECK(zc_bundle_write_end(&writer) == ZC_OK);
    zc_bundle_writer_close(&writer);
    fclose(out);
    FUZZ_CHECK(written_size == size && memcmp(written, data, size) == 0);
    free(written);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0; /* fmemopen refuses an empty buffer */
    FILE *in = fmemopen((void *)data, size, "rb");
    FUZZ_CHECK(in != NULL);
    char reason[256] = "";
    zc_bundle_reader reader = {0};
    read_entry entries[MAX_ENTRIES];
    size_t count = 0, bytes_handed_out = 0;
    zc_bundle_item item = ZC_BUNDLE_BAD;
    char *copied = NULL;
    size_t copied_size = 0;
    FILE *copy = open_memstream(&copied, &copied_size);
    FUZZ_CHECK(copy != NULL);
    if (zc_bundle_read_start_copying(&reader, in, NULL, copy, reason, sizeof reason) == ZC_OK) {
        while (count < MAX_ENTRIES) {
            read_entry *entry = &entries[count];
            item = zc_bundle_read_next(&reader, &entry->key, &entry->bytes, &entry->size, reason,
                                       sizeof reason);
            if (item != ZC_BUNDLE_ENTRY)
                break;
            FUZZ_CHECK(entry->bytes != NULL && entry->size > 0);
            bytes_handed_out += entry->size;
            FUZZ_CHECK(bytes_handed_out <= size);
            check_entry(entry);
            count++;
        }
        FUZZ_CHECK(reader.entries == count);
        if (item == ZC_BUNDLE_BAD)
            FUZZ_CHECK(reason[0] != '\0');
    } else {
        FUZZ_CHECK(reason[0] != '\0');
    }
    zc_bundle_reader_close(&reader);
    fclose(in);
    FUZZ_CHECK(fclose(copy) == 0);
    FUZZ_CHECK(copied_size <= size && memcmp(copied, data, copied_size) == 0);
    FUZZ_CHECK(item != ZC_BUNDLE_END || copied_size == size);
    free(copied);
    /* Writers write the newest version only: older ones read, not rewritten. */
    if (item == ZC_BUNDLE_END && reader.version == ZC_BUNDLE_FORMAT_VERSION)
        check_canonical(data, size, entries, count);
    for (size_t i = 0; i < count; i++)
        free(entries[i].bytes);
    return 0;
}
