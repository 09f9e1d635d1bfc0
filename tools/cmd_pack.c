/* zecache pack [--from BUNDLE] FILE: the cache directory's (or an export
 * bundle's) verified entries, Level Zero and OpenCL, in one read-only pack
 * (pack.h) for NEO_CACHE_PACKS, signed when
 * NEO_CACHE_REMOTE_SECRET_FILE is set. Written to a temporary file beside
 * FILE and renamed over it: a process that has FILE open keeps the old
 * pack whole. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"
#include "tool_inputs.h"
#include "zecache/disk_maintenance.h"
#include "zecache/bundle.h"
#include "zecache/entry.h"
#include "zecache/pack.h"
#include "zecache/remote_tag.h"

enum { REASON_SIZE = 512 };

typedef struct pack_tally {
    uint64_t kept, bad, driver_entries, inputs;
} pack_tally;

/* Writes every good entry of a source to writer: false when the pack
 * cannot be made (the source failed, or writing did; errno or problem says
 * why). */
typedef bool (*pack_filler)(void *source, zc_pack_writer *writer, pack_tally *tally, char *problem,
                            size_t problem_size);

/* The temporary file, written whole and closed: false with errno set or
 * problem filled in. */
static bool write_temporary(pack_filler fill, void *source, const char *temporary,
                            const zc_bundle_signer *signer, pack_tally *tally, char *problem,
                            size_t problem_size)
{
    FILE *out = fopen(temporary, "wbx");
    if (out == NULL)
        return false;
    zc_pack_writer *writer = NULL;
    bool written = zc_pack_write_start(out, signer, &writer) == ZC_OK &&
                   fill(source, writer, tally, problem, problem_size) &&
                   zc_pack_write_end(writer, NULL) == ZC_OK && fsync(fileno(out)) == 0;
    zc_pack_writer_free(writer);
    int saved = errno;
    written = fclose(out) == 0 && written;
    errno = written ? errno : saved;
    return written;
}

/* Writes the pack beside file and renames it over file, signed when
 * NEO_CACHE_REMOTE_SECRET_FILE is set: a process reading file meanwhile
 * keeps the old pack whole, and a source that fails leaves file as it was. */
static int pack_into(tool_context *tool, const char *file, pack_filler fill, void *source,
                     pack_tally *tally)
{
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    const zc_bundle_signer *sign;
    int exit_status = tool_secret_signer(tool, &secret, &signer, &sign);
    if (exit_status != TOOL_EXIT_OK)
        return exit_status;
    char temporary[PATH_MAX], reason[REASON_SIZE] = "";
    snprintf(temporary, sizeof temporary, "%s.tmp.%ld", file, (long)getpid());
    errno = 0;
    bool written = write_temporary(fill, source, temporary, sign, tally, reason, sizeof reason) &&
                   rename(temporary, file) == 0;
    if (!written) {
        int saved = errno;
        unlink(temporary);
        if (reason[0] != '\0')
            return tool_fail(tool, "%s", reason);
        return tool_fail(tool, "cannot write %s: %s", file, strerror(saved));
    }
    fprintf(stderr, "packed %llu entries%s, skipped %llu bad", (unsigned long long)tally->kept,
            sign != NULL ? " (signed)" : "", (unsigned long long)tally->bad);
    if (tally->driver_entries > 0)
        fprintf(stderr, "; %llu of the driver's own entries not packed",
                (unsigned long long)tally->driver_entries);
    if (tally->inputs > 0)
        fprintf(stderr, "; %llu recorded inputs not packed (a pack holds entries only)",
                (unsigned long long)tally->inputs);
    fprintf(stderr, "\n");
    return tally->bad == 0 ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

/* ---- from the cache directory ---- */

typedef struct directory_source {
    zc_disk_tier *tier;
    const tool_entry_list *list;
} directory_source;

static bool fill_from_directory(void *context, zc_pack_writer *writer, pack_tally *tally,
                                char *problem, size_t problem_size)
{
    (void)problem, (void)problem_size;
    const directory_source *source = context;
    for (size_t i = 0; i < source->list->count; i++) {
        const tool_entry *entry = &source->list->items[i];
        uint8_t *bytes;
        size_t size;
        if (!tool_read_verified(source->tier, entry, &bytes, &size, &tally->bad,
                                &tally->driver_entries))
            continue;
        zc_status status = zc_pack_write_entry(writer, &entry->key, bytes, size);
        free(bytes);
        if (status != ZC_OK)
            return false;
        tally->kept++;
    }
    return true;
}

static int pack_directory(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                          void *context)
{
    (void)config;
    tool_entry_list list;
    zc_status status = tool_list_entries(tier, &list);
    if (status != ZC_OK)
        return tool_fail(tool, "cannot scan the cache (%s)", zc_status_name(status));
    directory_source source = {tier, &list};
    pack_tally tally = {0};
    int exit_status = pack_into(tool, context, fill_from_directory, &source, &tally);
    tool_free_entries(&list);
    return exit_status;
}

/* ---- from an export bundle ---- */

/* An entry of the bundle, checked as a load checks it: written, or reported
 * and left out. False when writing failed. */
static bool pack_bundle_entry(zc_pack_writer *writer, const zc_key *key, const uint8_t *bytes,
                              size_t size, pack_tally *tally)
{
    char hex[ZC_KEY_HEX_SIZE], reason[REASON_SIZE] = "";
    zc_artifact *artifact = NULL;
    zc_status status = zc_entry_decode(bytes, size, key, 0, &artifact, reason, sizeof reason);
    zc_artifact_unref(artifact);
    if (status == ZC_OK) {
        tally->kept++;
        return zc_pack_write_entry(writer, key, bytes, size) == ZC_OK;
    }
    zc_key_to_hex(key, hex);
    fprintf(stderr, "skipped  %s: %s\n", hex, reason);
    tally->bad++;
    return status != ZC_ERR_NOMEM;
}

typedef struct bundle_source {
    zc_bundle_reader reader;
    const char *name;
} bundle_source;

/* A bundle that is cut, malformed or (with a secret) not signed with it
 * makes no pack: its end, read last, is what vouches for its items. */
static bool fill_from_bundle(void *context, zc_pack_writer *writer, pack_tally *tally,
                             char *problem, size_t problem_size)
{
    bundle_source *source = context;
    for (;;) {
        zc_key key;
        uint8_t *bytes = NULL;
        size_t size = 0;
        char reason[REASON_SIZE] = "";
        zc_bundle_item item =
            zc_bundle_read_next(&source->reader, &key, &bytes, &size, reason, sizeof reason);
        if (item == ZC_BUNDLE_BAD)
            snprintf(problem, problem_size, "%s: %s; no pack made", source->name, reason);
        if (item != ZC_BUNDLE_ENTRY)
            return item == ZC_BUNDLE_END;
        bool going = true;
        if (zc_bundle_kind_of(bytes, size) == ZC_BUNDLE_KIND_ENTRY)
            going = pack_bundle_entry(writer, &key, bytes, size, tally);
        else
            tally->inputs++;
        free(bytes);
        if (!going)
            return false;
    }
}

static int pack_bundle(tool_context *tool, const char *file, const char *bundle)
{
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    const zc_bundle_signer *verifier;
    int exit_status = tool_secret_signer(tool, &secret, &signer, &verifier);
    if (exit_status != TOOL_EXIT_OK)
        return exit_status;
    char reason[REASON_SIZE] = "";
    FILE *in = fopen(bundle, "rb");
    if (in == NULL)
        return tool_fail(tool, "cannot open %s: %s", bundle, strerror(errno));
    bundle_source source = {.name = bundle};
    pack_tally tally = {0};
    exit_status =
        zc_bundle_read_start_signed(&source.reader, in, verifier, reason, sizeof reason) == ZC_OK
            ? pack_into(tool, file, fill_from_bundle, &source, &tally)
            : tool_fail(tool, "%s: %s; no pack made", bundle, reason);
    zc_bundle_reader_close(&source.reader);
    fclose(in);
    return exit_status;
}

static int run_pack(tool_context *tool, int argc, char **argv)
{
    static const struct option options[] = {TOOL_COMMON_OPTIONS,
                                            {"list", no_argument, NULL, 'l'},
                                            {"verify", no_argument, NULL, 'v'},
                                            {"from", required_argument, NULL, 'f'},
                                            {NULL, 0, NULL, 0}};
    int option, mode = 0;
    const char *bundle = NULL;
    while ((option = tool_next_option(tool, argc, argv, options)) == 'l' || option == 'v' ||
           option == 'f') {
        mode = mode == 0 || mode == option ? option : '?';
        bundle = option == 'f' ? optarg : bundle;
    }
    int parsed = tool_end_options(tool, option, argc, argv, 1);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    const char *file = argv[optind];
    switch (mode) {
    case 'l':
        return tool_ls_pack(tool, file);
    case 'v':
        return tool_verify_pack(tool, file);
    case 'f':
        return pack_bundle(tool, file, bundle);
    case 0:
        return tool_with_tier(tool, pack_directory, (void *)file);
    default:
        return tool_usage_error(tool, "--list, --verify and --from exclude one another");
    }
}

const tool_command tool_cmd_pack = {
    .name = "pack",
    .synopsis = "pack [--from BUNDLE | --list | --verify] FILE",
    .summary = "Write every verified entry to one read-only pack, or read one",
    .details = "Writes the cache's entries, Level Zero and OpenCL, each verified as a load\n"
               "would verify it, to the pack FILE (replaced whole, by a rename), for\n"
               "NEO_CACHE_PACKS: a process opens each pack once and serves its entries from\n"
               "it, before the cache directory. With NEO_CACHE_REMOTE_SECRET_FILE\n"
               "set the pack is signed, and only readers with that secret use it. Bad\n"
               "entries are reported and left out; the driver's own entries are not packed.\n"
               "\n"
               "  --from BUNDLE  the entries of the export bundle BUNDLE (zecache export)\n"
               "                 instead of the cache directory's, each verified; with\n"
               "                 NEO_CACHE_REMOTE_SECRET_FILE set it must be signed with that\n"
               "                 secret. A cut or malformed bundle makes no pack. For a\n"
               "                 recording (zecache record), build it first:\n"
               "                 NEO_CACHE_DIR=$(mktemp -d) zecache prewarm --from REC, then\n"
               "                 zecache pack FILE with that NEO_CACHE_DIR\n"
               "  --list         the same as zecache ls --pack FILE\n"
               "  --verify       the same as zecache verify --pack FILE\n"
               "\n"
               "Exit status: 0 every entry was packed (listed, verified), 1 some were bad or\n"
               "FILE could not be written (opened).\n",
    .run = run_pack,
};
