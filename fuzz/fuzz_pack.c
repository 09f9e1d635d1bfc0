/* Packs (NEO_CACHE_PACKS), fuzzed: the raw bytes as a pack file opened by
 * zc_pack_open. Properties: opening refuses with a reason or accepts; an
 * accepted pack finds, for every record's key, bytes no larger than the
 * file, and each is either refused by zc_entry_decode with a reason or
 * decodes under that key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "zecache/entry.h"
#include "zecache/pack.h"

static char path[64];

static void write_input(const uint8_t *data, size_t size)
{
    if (path[0] == '\0') {
        snprintf(path, sizeof path, "/tmp/zc_fuzz_pack.XXXXXX");
        int fd = mkstemp(path);
        FUZZ_CHECK(fd >= 0);
        close(fd);
    }
    FILE *out = fopen(path, "wb");
    FUZZ_CHECK(out != NULL && fwrite(data, 1, size, out) == size && fclose(out) == 0);
}

static void check_record(const zc_pack *pack, uint64_t index, size_t size)
{
    zc_key key;
    uint8_t *entry = NULL;
    size_t entry_size;
    zc_pack_key_at(pack, index, &key);
    FUZZ_CHECK(zc_pack_find(pack, &key, &entry, &entry_size, NULL, 0) == ZC_OK);
    FUZZ_CHECK(entry_size <= size);
    zc_artifact *artifact = NULL;
    char reason[256] = "";
    zc_status status =
        zc_entry_decode(entry, entry_size, &key, 0, &artifact, reason, sizeof reason);
    FUZZ_CHECK(status == ZC_OK ? artifact != NULL : status == ZC_MISS && reason[0] != '\0');
    zc_artifact_unref(artifact);
    free(entry);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_input(data, size);
    zc_pack *pack = NULL;
    char reason[256] = "";
    zc_status status = zc_pack_open(path, NULL, &pack, reason, sizeof reason);
    FUZZ_CHECK(status == ZC_OK ? pack != NULL : pack == NULL && reason[0] != '\0');
    if (status != ZC_OK)
        return 0;
    FUZZ_CHECK(zc_pack_entry_count(pack) * ZC_PACK_RECORD_SIZE <= size);
    for (uint64_t i = 0; i < zc_pack_entry_count(pack); i++)
        check_record(pack, i, size);
    zc_pack_close(pack);
    return 0;
}
