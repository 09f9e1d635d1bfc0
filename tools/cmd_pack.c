/* zecache pack [--list|--verify] FILE: the cache directory's verified entries, Level Zero and
 * OpenCL, in one read-only pack (pack.h) for NEO_CACHE_PACKS, signed when
 * NEO_CACHE_REMOTE_SECRET_FILE is set. Written to a temporary file beside
 * FILE and renamed over it: a process that maps FILE meanwhile keeps the old
 * pack whole. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"
#include "tool_inputs.h"
#include "zecache/disk_maintenance.h"
#include "zecache/entry.h"
#include "zecache/pack.h"
#include "zecache/remote_tag.h"

enum { REASON_SIZE = 512 };

typedef struct pack_tally {
    uint64_t kept, bad, driver_entries;
} pack_tally;

/* False when the pack cannot be written; a bad entry is reported and left
 * out. */
static bool pack_one(zc_disk_tier *tier, const tool_entry *entry, zc_pack_writer *writer,
                     pack_tally *tally)
{
    uint8_t *bytes;
    size_t size;
    if (!tool_read_verified(tier, entry, &bytes, &size, &tally->bad, &tally->driver_entries))
        return true;
    zc_status status = zc_pack_write_entry(writer, &entry->key, bytes, size);
    free(bytes);
    tally->kept += status == ZC_OK;
    return status == ZC_OK;
}

static bool write_pack(zc_disk_tier *tier, const tool_entry_list *list, FILE *out,
                       const zc_bundle_signer *signer, pack_tally *tally)
{
    zc_pack_writer *writer = NULL;
    bool written = zc_pack_write_start(out, signer, &writer) == ZC_OK;
    for (size_t i = 0; written && i < list->count; i++)
        written = pack_one(tier, &list->items[i], writer, tally);
    written = written && zc_pack_write_end(writer, NULL) == ZC_OK;
    zc_pack_writer_free(writer);
    return written;
}

/* The temporary file, written whole and closed: false with errno set. */
static bool write_temporary(zc_disk_tier *tier, const tool_entry_list *list, const char *temporary,
                            const zc_bundle_signer *signer, pack_tally *tally)
{
    FILE *out = fopen(temporary, "wbx");
    if (out == NULL)
        return false;
    bool written = write_pack(tier, list, out, signer, tally) && fsync(fileno(out)) == 0;
    int saved = errno;
    written = fclose(out) == 0 && written;
    errno = written ? errno : saved;
    return written;
}

static int pack_entries(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                        void *context)
{
    const char *file = context;
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    bool failed;
    char reason[REASON_SIZE];
    const zc_bundle_signer *sign =
        tool_bundle_signer(config, &secret, &signer, &failed, reason, sizeof reason);
    if (failed)
        return tool_fail(tool, "NEO_CACHE_REMOTE_SECRET_FILE: %s", reason);
    tool_entry_list list;
    zc_status status = tool_list_entries(tier, &list);
    if (status != ZC_OK)
        return tool_fail(tool, "cannot scan the cache (%s)", zc_status_name(status));
    char temporary[PATH_MAX];
    snprintf(temporary, sizeof temporary, "%s.tmp.%ld", file, (long)getpid());
    pack_tally tally = {0};
    bool written =
        write_temporary(tier, &list, temporary, sign, &tally) && rename(temporary, file) == 0;
    tool_free_entries(&list);
    if (!written) {
        int saved = errno;
        unlink(temporary);
        return tool_fail(tool, "cannot write %s: %s", file, strerror(saved));
    }
    fprintf(stderr, "packed %llu entries%s, skipped %llu bad", (unsigned long long)tally.kept,
            sign != NULL ? " (signed)" : "", (unsigned long long)tally.bad);
    if (tally.driver_entries > 0)
        fprintf(stderr, "; %llu of the driver's own entries not packed",
                (unsigned long long)tally.driver_entries);
    fprintf(stderr, "\n");
    return tally.bad == 0 ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

/* ---- reading a pack: --list and --verify ---- */

static int open_pack(const tool_context *tool, const char *file, zc_pack **pack)
{
    zc_config config;
    zc_config_from_env(&config);
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    bool failed;
    char reason[REASON_SIZE];
    const zc_bundle_signer *verifier =
        tool_bundle_signer(&config, &secret, &signer, &failed, reason, sizeof reason);
    if (failed)
        return tool_fail(tool, "NEO_CACHE_REMOTE_SECRET_FILE: %s", reason);
    if (zc_pack_open(file, verifier, pack, reason, sizeof reason) != ZC_OK)
        return tool_fail(tool, "%s: %s", file, reason);
    return TOOL_EXIT_OK;
}

static void entry_at(const zc_pack *pack, uint64_t index, zc_key *key, const uint8_t **entry,
                     size_t *size, char hex[ZC_KEY_HEX_SIZE])
{
    zc_pack_entry_at(pack, index, key, entry, size);
    zc_key_to_hex(key, hex);
}

/* One line per entry, in key order: key, kind, size, binary size, device and
 * driver as its header (checked) records them. */
static bool list_entry(const zc_pack *pack, uint64_t index)
{
    zc_key key;
    const uint8_t *entry;
    size_t size;
    char hex[ZC_KEY_HEX_SIZE], reason[REASON_SIZE];
    entry_at(pack, index, &key, &entry, &size, hex);
    zc_entry_header header;
    if (zc_entry_read_header(entry, size, &header, reason, sizeof reason) != ZC_OK) {
        printf("%s  %-10s  bad: %s\n", hex, zc_entry_kind_name(key.kind), reason);
        return false;
    }
    printf("%s  %-10s  %10zu B  binary %10llu B  %s  %s\n", hex, zc_entry_kind_name(key.kind), size,
           (unsigned long long)header.binary_size, header.meta.device_name,
           header.meta.driver_version);
    return true;
}

/* Checked as a process serving it checks it. */
static bool verify_entry(const zc_pack *pack, uint64_t index)
{
    zc_key key;
    const uint8_t *entry;
    size_t size;
    char hex[ZC_KEY_HEX_SIZE], reason[REASON_SIZE] = "";
    entry_at(pack, index, &key, &entry, &size, hex);
    zc_artifact *artifact = NULL;
    zc_status status = zc_pack_find(pack, &key, &entry, &size, reason, sizeof reason);
    if (status == ZC_OK)
        status = zc_entry_decode(entry, size, &key, 0, &artifact, reason, sizeof reason);
    zc_artifact_unref(artifact);
    if (status != ZC_OK)
        printf("bad      %s: %s\n", hex, reason);
    return status == ZC_OK;
}

static int read_pack(const tool_context *tool, const char *file,
                     bool (*each)(const zc_pack *, uint64_t))
{
    zc_pack *pack = NULL;
    int exit_status = open_pack(tool, file, &pack);
    if (exit_status != TOOL_EXIT_OK)
        return exit_status;
    uint64_t count = zc_pack_entry_count(pack), bad = 0;
    for (uint64_t i = 0; i < count; i++)
        bad += !each(pack, i);
    zc_pack_close(pack);
    if (each == verify_entry)
        printf("checked %llu entries: %llu bad\n", (unsigned long long)count,
               (unsigned long long)bad);
    return bad == 0 ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

static int run_pack(tool_context *tool, int argc, char **argv)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS,
                                            {"list", no_argument, NULL, 'l'},
                                            {"verify", no_argument, NULL, 'v'},
                                            {NULL, 0, NULL, 0}};
    int option, mode = 0;
    while ((option = tool_next_option(tool, argc, argv, options)) == 'l' || option == 'v')
        mode = option;
    int parsed = tool_end_options(tool, option, argc, argv, 1);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    if (mode == 'l')
        return read_pack(tool, argv[optind], list_entry);
    if (mode == 'v')
        return read_pack(tool, argv[optind], verify_entry);
    return tool_with_tier(tool, pack_entries, argv[optind]);
}

const tool_command tool_cmd_pack = {
    .name = "pack",
    .synopsis = "pack [--list|--verify] FILE",
    .summary = "Write every verified entry to one read-only pack, or read one",
    .details = "Writes the cache's entries, Level Zero and OpenCL, each verified as a load\n"
               "would verify it, to the pack FILE (replaced whole, by a rename), for\n"
               "NEO_CACHE_PACKS: a process maps each pack once and serves its entries from\n"
               "the mapping, before the cache directory. With NEO_CACHE_REMOTE_SECRET_FILE\n"
               "set the pack is signed, and only readers with that secret use it. Bad\n"
               "entries are reported and left out; the driver's own entries are not packed.\n"
               "\n"
               "  --list     list the pack's entries: key, kind, size, binary size, device\n"
               "             and driver version\n"
               "  --verify   check the pack and every entry in it as a process serving it\n"
               "             would, and list the bad ones with the reason\n"
               "\n"
               "Exit status: 0 every entry was packed (listed, verified), 1 some were bad or\n"
               "FILE could not be written (opened).\n",
    .run = run_pack,
};
