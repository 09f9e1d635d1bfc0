/* Writes the seed inputs of fuzz_entry, fuzz_entry_frame, fuzz_bundle, fuzz_pack and
 * fuzz_config_file into <corpus dir>/<target>/ (committed in fuzz/corpus;
 * run again only when the entry format changes):
 *   fuzz_make_seeds fuzz/corpus */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../source/common/byte_order.h"
#include "../source/local/checked_frame.h"
#include "../source/local/stored_frame.h"
#include "zecache/bundle.h"
#include "zecache/pack.h"
#include "zecache/entry.h"

static int write_seed(const char *root, const char *target, const char *name, const void *prefix,
                      size_t prefix_size, const void *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *file = fopen(path, "wb");
    if (file == NULL)
        return 1;
    size_t written = fwrite(prefix, 1, prefix_size, file) + fwrite(data, 1, size, file);
    return fclose(file) != 0 || written != prefix_size + size;
}

/* A bundle of the entry twice (the second time under another key, so that
 * one is good and one refused), as zecache export writes them. */
static int bundle_seed(const char *root, const char *name, const zc_key *key, const uint8_t *entry,
                       size_t size)
{
    char *bundle = NULL;
    size_t bundle_size = 0;
    FILE *out = open_memstream(&bundle, &bundle_size);
    if (out == NULL)
        return 1;
    zc_key other = *key;
    other.bytes[0] ^= 1;
    zc_bundle_writer writer;
    int failed = zc_bundle_write_start(&writer, out) != ZC_OK ||
                 zc_bundle_write_entry(&writer, key, entry, size) != ZC_OK ||
                 zc_bundle_write_entry(&writer, &other, entry, size) != ZC_OK ||
                 zc_bundle_write_end(&writer) != ZC_OK;
    zc_bundle_writer_close(&writer);
    fclose(out);
    failed |= write_seed(root, "fuzz_bundle", name, "", 0, bundle, bundle_size);
    free(bundle);
    return failed;
}

/* A pack of the entry and of a copy under another key (refused when
 * served), as zecache pack writes them: in a temporary file, since the
 * writer seeks back to its header. */
static int pack_seed(const char *root, const char *name, const zc_key *key, const uint8_t *entry,
                     size_t size)
{
    FILE *out = tmpfile();
    zc_pack_writer *writer = NULL;
    zc_key other = *key;
    other.bytes[1] ^= 1;
    int failed = out == NULL || zc_pack_write_start(out, NULL, &writer) != ZC_OK ||
                 zc_pack_write_entry(writer, key, entry, size) != ZC_OK ||
                 zc_pack_write_entry(writer, &other, entry, size) != ZC_OK ||
                 zc_pack_write_end(writer, NULL) != ZC_OK;
    zc_pack_writer_free(writer);
    long pack_size = failed ? -1 : (fseek(out, 0, SEEK_END), ftell(out));
    uint8_t *pack = pack_size > 0 ? malloc((size_t)pack_size) : NULL;
    failed = pack == NULL || fseek(out, 0, SEEK_SET) != 0 ||
             fread(pack, 1, (size_t)pack_size, out) != (size_t)pack_size ||
             write_seed(root, "fuzz_pack", name, "", 0, pack, (size_t)pack_size);
    if (out != NULL)
        fclose(out);
    free(pack);
    return failed;
}

/* An entry as zc_entry_encode makes it, and its frame with the sizes the
 * frame fuzzer reads first. */
static int entry_seeds(const char *root, const char *name, const void *binary, size_t binary_size,
                       const char *log, size_t log_size)
{
    zc_key key = {0};
    for (size_t i = 0; i < ZC_KEY_SIZE; i++)
        key.bytes[i] = (uint8_t)(i * 37 + 1); /* the frame fuzzer's template key */
    zc_artifact_meta meta = {.device_name = "Intel(R) Graphics [0xff20]",
                             .driver_version = "1.3.29735",
                             .compile_ns = 123456789,
                             .created_unix = 1700000000};
    zc_artifact *artifact = zc_artifact_create(binary, binary_size, log, log_size, &meta);
    uint8_t *entry;
    size_t size;
    if (artifact == NULL || zc_entry_encode(&key, artifact, 3, &entry, &size) != ZC_OK)
        return 1;
    uint8_t sizes[8];
    zc_put_le32(sizes, (uint32_t)binary_size);
    zc_put_le32(sizes + 4, (uint32_t)log_size);
    int failed = write_seed(root, "fuzz_entry", name, "", 0, entry, size) |
                 write_seed(root, "fuzz_entry_frame", name, sizes, sizeof sizes,
                            entry + ZC_ENTRY_HEADER_SIZE, size - ZC_ENTRY_HEADER_SIZE);
    failed |= bundle_seed(root, name, &key, entry, size) | pack_seed(root, name, &key, entry, size);
    free(entry);
    zc_artifact_unref(artifact);
    return failed;
}

/* An entry whose frame is stored (stored_frame.h), as the writer makes
 * frames of 256 KiB and more that compress poorly, here of a few bytes. */
static int stored_seeds(const char *root, const char *name, const void *binary, size_t binary_size)
{
    enum { OFFSET_COMPRESSED_SIZE = 64, OFFSET_CHECKSUM = 192, ROOM = 64 };
    zc_key key = {0};
    for (size_t i = 0; i < ZC_KEY_SIZE; i++)
        key.bytes[i] = (uint8_t)(i * 37 + 1); /* the frame fuzzer's template key */
    zc_artifact_meta meta = {.device_name = "Intel(R) Graphics [0xff20]",
                             .driver_version = "1.3.29735"};
    zc_artifact *artifact = zc_artifact_create(binary, binary_size, NULL, 0, &meta);
    uint8_t *entry = NULL, *stored = NULL;
    size_t size = 0, frame_size = 0;
    if (artifact != NULL && zc_entry_encode(&key, artifact, 3, &entry, &size) == ZC_OK)
        stored = malloc(size + binary_size + ROOM);
    if (stored != NULL) {
        memcpy(stored, entry, size);
        frame_size = zc_frame_store(binary, binary_size, stored + ZC_ENTRY_HEADER_SIZE,
                                    size - ZC_ENTRY_HEADER_SIZE, binary_size + ROOM);
    }
    uint8_t sizes[8] = {0};
    zc_put_le32(sizes, (uint32_t)binary_size);
    int failed = frame_size == 0;
    if (!failed) {
        zc_put_le64(stored + OFFSET_COMPRESSED_SIZE, frame_size);
        failed = !zc_header_checksum(stored, OFFSET_CHECKSUM, stored + OFFSET_CHECKSUM) ||
                 write_seed(root, "fuzz_entry", name, "", 0, stored,
                            ZC_ENTRY_HEADER_SIZE + frame_size) ||
                 write_seed(root, "fuzz_entry_frame", name, sizes, sizeof sizes,
                            stored + ZC_ENTRY_HEADER_SIZE, frame_size);
    }
    free(stored);
    free(entry);
    zc_artifact_unref(artifact);
    return failed;
}

static int config_file_seeds(const char *root)
{
    uint64_t limit = 1 << 20, plausible = 4096, wrapped = UINT64_MAX - 4000;
    uint8_t nine[9] = {0x10};
    return write_seed(root, "fuzz_config_file", "plausible", &limit, 8, &plausible, 8) |
           write_seed(root, "fuzz_config_file", "wrapped", &limit, 8, &wrapped, 8) |
           write_seed(root, "fuzz_config_file", "empty", &limit, 8, "", 0) |
           write_seed(root, "fuzz_config_file", "long", &limit, 8, nine, sizeof nine);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_make_seeds <corpus dir>\n");
        return 2;
    }
    uint8_t random_bytes[96];
    uint64_t state = 88172645463325252u;
    for (size_t i = 0; i < sizeof random_bytes; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        random_bytes[i] = (uint8_t)state;
    }
    const char *kernel = "kernel void k(global int *a) { a[get_global_id(0)] *= 2; } "
                         "kernel void k(global int *a) { a[get_global_id(0)] *= 2; }";
    const char *log = "warning: unused variable 'x'\n";
    int failed =
        entry_seeds(argv[1], "random_binary", random_bytes, sizeof random_bytes, log, strlen(log)) |
        entry_seeds(argv[1], "text_binary", kernel, strlen(kernel), NULL, 0) |
        entry_seeds(argv[1], "log_only", "", 0, log, strlen(log)) |
        entry_seeds(argv[1], "tiny", "x", 1, "", 0) |
        stored_seeds(argv[1], "stored", random_bytes, sizeof random_bytes) |
        config_file_seeds(argv[1]);
    return failed ? 1 : 0;
}
