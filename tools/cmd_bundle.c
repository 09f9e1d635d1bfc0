/* zecache export FILE / zecache import FILE: the cache's verified entries in
 * one bundle file (zecache/bundle.h), to pre-warm a container image or a new
 * machine. "-" is standard output or input. Problems go to standard error,
 * so an export to standard output stays a clean bundle. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"
#include "tool_inputs.h"
#include "zecache/bundle.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_recipes.h"
#include "zecache/recipe.h"
#include "zecache/sealed.h"

enum { REASON_SIZE = 256 };

typedef struct bundle_tally {
    uint64_t kept, bad, too_large, driver_entries;
    uint64_t inputs, bad_inputs; /* entries' recorded inputs carried, and left out */
    tool_blob_pool blobs;        /* SPIR-V written (export) or read (import) */
    tool_blob_pool verified;     /* import: SHA-256s of those decoded and verified (no bytes) */
} bundle_tally;

static bool is_stdio(const char *file)
{
    return strcmp(file, "-") == 0;
}

static FILE *open_bundle(const tool_context *tool, const char *file, bool output)
{
    if (is_stdio(file))
        return output ? stdout : stdin;
    FILE *stream = fopen(file, output ? "wb" : "rb");
    if (stream == NULL)
        tool_fail(tool, "cannot open %s: %s", file, strerror(errno));
    return stream;
}

/* False when the bundle could not be written (fatal); a bad entry is only
 * reported and left out. */
static bool export_one(zc_disk_tier *tier, const tool_entry *entry, zc_bundle_writer *writer,
                       bundle_tally *tally)
{
    uint8_t *bytes;
    size_t size;
    if (!tool_read_verified(tier, entry, &bytes, &size, &tally->bad, &tally->driver_entries))
        return true;
    zc_status status = zc_bundle_write_entry(writer, &entry->key, bytes, size);
    free(bytes);
    if (status != ZC_OK)
        return false;
    tally->kept++;
    char reason[REASON_SIZE];
    tool_inputs_written inputs =
        tool_write_inputs(tier, &entry->key, writer, &tally->blobs, reason, sizeof reason);
    tally->inputs += inputs == TOOL_INPUTS_WRITTEN;
    if (inputs == TOOL_INPUTS_DAMAGED) {
        tally->bad_inputs++;
        fprintf(stderr, "skipped  the recorded inputs of %s: %s\n", entry->path, reason);
    }
    return inputs != TOOL_INPUTS_FAILED;
}

/* The writer, signed when NEO_CACHE_REMOTE_SECRET_FILE is set. */
static bool start_writer(const tool_context *tool, zc_bundle_writer *writer, FILE *out)
{
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    const zc_bundle_signer *sign;
    return tool_secret_signer(tool, &secret, &signer, &sign) == TOOL_EXIT_OK &&
           zc_bundle_write_start_signed(writer, out, sign) == ZC_OK;
}

static int export_entries(const tool_context *tool, zc_disk_tier *tier, FILE *out, const char *file)
{
    tool_entry_list list;
    zc_status status = tool_list_entries(tier, &list);
    if (status != ZC_OK)
        return tool_fail(tool, "cannot scan the cache (%s)", zc_status_name(status));
    bundle_tally tally = {0};
    zc_bundle_writer writer = {0};
    bool written = start_writer(tool, &writer, out);
    for (size_t i = 0; written && i < list.count; i++)
        written = export_one(tier, &list.items[i], &writer, &tally);
    tool_free_entries(&list);
    tool_blob_pool_free(&tally.blobs);
    written = written && zc_bundle_write_end(&writer) == ZC_OK;
    zc_bundle_writer_close(&writer);
    if (!written)
        return tool_fail(tool, "cannot write %s: %s", is_stdio(file) ? "the bundle" : file,
                         strerror(errno));
    fprintf(stderr, "exported %llu entries, skipped %llu bad", (unsigned long long)tally.kept,
            (unsigned long long)tally.bad);
    if (tally.driver_entries > 0)
        fprintf(stderr, "; %llu of the driver's own entries not exported",
                (unsigned long long)tally.driver_entries);
    if (tally.inputs > 0 || tally.bad_inputs > 0)
        fprintf(stderr, "; recorded inputs of %llu, %llu left out as damaged",
                (unsigned long long)tally.inputs, (unsigned long long)tally.bad_inputs);
    fprintf(stderr, "\n");
    return tally.bad == 0 && tally.bad_inputs == 0 ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

/* Opens the operand and the cache, runs the command, closes both. */
typedef struct bundle_job {
    const char *file;
    bool output;
    int (*run)(const tool_context *, zc_disk_tier *, FILE *, const char *);
} bundle_job;

static int run_bundle_job(tool_context *tool, const zc_config *config, zc_disk_tier *tier,
                          void *context)
{
    (void)config;
    const bundle_job *job = context;
    FILE *stream = open_bundle(tool, job->file, job->output);
    int exit_status = stream != NULL ? job->run(tool, tier, stream, job->file) : TOOL_EXIT_FAILURE;
    if (stream != NULL && !is_stdio(job->file) && fclose(stream) != 0 && job->output)
        exit_status = tool_fail(tool, "cannot write %s: %s", job->file, strerror(errno));
    return exit_status;
}

static int with_bundle_and_tier(tool_context *tool, int argc, char **argv, bool output,
                                int (*run)(const tool_context *, zc_disk_tier *, FILE *,
                                           const char *))
{
    int parsed = tool_parse_plain(tool, argc, argv, 1);
    if (parsed != TOOL_OPTIONS_DONE)
        return parsed;
    bundle_job job = {argv[optind], output, run};
    return tool_with_tier(tool, run_bundle_job, &job);
}

static int run_export(tool_context *tool, int argc, char **argv)
{
    return with_bundle_and_tier(tool, argc, argv, true, export_entries);
}

/* False when importing cannot go on (the cache cannot be written). */
static bool import_one(const tool_context *tool, zc_disk_tier *tier, const zc_key *key,
                       const uint8_t *bytes, size_t size, bundle_tally *tally)
{
    char hex[ZC_KEY_HEX_SIZE], reason[REASON_SIZE];
    zc_key_to_hex(key, hex);
    zc_status status = zc_disk_tier_store_entry(tier, key, bytes, size, reason, sizeof reason);
    switch (status) {
    case ZC_OK:
    case ZC_EXISTS: /* imported before, or stored by a run */
        tally->kept++;
        return true;
    case ZC_MISS:
        tally->bad++;
        fprintf(stderr, "bad      %s: %s\n", hex, reason);
        return true;
    case ZC_ERR_TOO_LARGE:
        tally->too_large++;
        fprintf(stderr, "skipped  %s: larger than the cache size limit\n", hex);
        return true;
    default:
        tool_fail(tool, "cannot store %s (%s)", hex, zc_status_name(status));
        return false;
    }
}

/* The pool's SPIR-V at index, decoded and verified the first time a recipe
 * names it with the size its container declares, never again: one named by
 * no recipe is never decompressed, and one that does not verify loses its
 * bytes, so that the next recipe naming it is refused at once. */
static zc_status verify_blob(bundle_tally *tally, size_t index, uint32_t input, char *reason,
                             size_t reason_size)
{
    tool_blob_pool *pool = &tally->blobs;
    if (pool->bytes[index] == NULL)
        return zc_explain(ZC_MISS, reason, reason_size, "SPIR-V input %u does not verify", input);
    if (tool_blob_pool_find(&tally->verified, pool->sha256[index]) >= 0)
        return ZC_OK;
    uint8_t *spirv = NULL;
    size_t spirv_size = 0;
    char why[REASON_SIZE] = "";
    zc_status status =
        zc_spirv_blob_decode(pool->bytes[index], pool->sizes[index], pool->sha256[index], &spirv,
                             &spirv_size, why, sizeof why);
    free(spirv);
    if (status != ZC_OK) {
        free(pool->bytes[index]);
        pool->bytes[index] = NULL;
        return zc_explain(ZC_MISS, reason, reason_size, "SPIR-V input %u: %s", input, why);
    }
    if (!tool_blob_pool_add(&tally->verified, pool->sha256[index], NULL, 0))
        return zc_explain(ZC_ERR_NOMEM, reason, reason_size, "no memory");
    return ZC_OK;
}

/* A recipe arrives after the SPIR-V it names (tool_inputs.h): recorded
 * beside its entry, imported just before it. */
static void import_recipe(zc_disk_tier *tier, const zc_key *key, const uint8_t *bytes, size_t size,
                          bundle_tally *tally)
{
    char hex[ZC_KEY_HEX_SIZE], reason[REASON_SIZE] = "";
    zc_key_to_hex(key, hex);
    zc_recipe recipe;
    zc_input_blob blobs[ZC_RECIPE_MAX_INPUTS];
    zc_status decoded = zc_recipe_decode(bytes, size, key, &recipe, reason, sizeof reason);
    zc_status status = decoded;
    for (uint32_t i = 0; status == ZC_OK && i < recipe.input_count; i++) {
        long found = tool_blob_pool_find(&tally->blobs, recipe.inputs[i].spirv_sha256);
        if (found < 0)
            status = zc_explain(ZC_MISS, reason, sizeof reason, "SPIR-V input %u is not there", i);
        else if (tally->blobs.spirv_sizes[found] != recipe.inputs[i].spirv_size)
            status = zc_explain(ZC_MISS, reason, sizeof reason,
                                "SPIR-V input %u holds %llu bytes, not the %llu it declares", i,
                                (unsigned long long)tally->blobs.spirv_sizes[found],
                                (unsigned long long)recipe.inputs[i].spirv_size);
        else
            status = verify_blob(tally, (size_t)found, i, reason, sizeof reason);
        if (status == ZC_OK)
            blobs[i] = (zc_input_blob){.bytes = tally->blobs.bytes[found],
                                       .size = tally->blobs.sizes[found]};
        if (status == ZC_OK)
            memcpy(blobs[i].sha256, recipe.inputs[i].spirv_sha256, 32);
    }
    if (status == ZC_OK) {
        /* The recipe's key has the kind its content says (an OpenCL part):
         * the bundle's names the bytes only. */
        status = zc_disk_tier_record(tier, &recipe.key, bytes, size, blobs, recipe.input_count);
        if (status != ZC_OK && status != ZC_EXISTS)
            snprintf(reason, sizeof reason, "%s", zc_status_name(status));
    }
    if (decoded == ZC_OK)
        zc_recipe_free(&recipe);
    if (status == ZC_OK || status == ZC_EXISTS) {
        tally->inputs++;
    } else {
        tally->bad_inputs++;
        fprintf(stderr, "bad      the recorded inputs of %s: %s\n", hex, reason);
    }
}

/* Keeps a SPIR-V container, with the size it declares, for the recipes that
 * follow (verify_blob decodes it when one names it); one the bundle gave
 * already is not kept again. */
static void keep_blob(const zc_key *sha, uint8_t *bytes, size_t size, bundle_tally *tally)
{
    uint64_t declared = 0;
    char hex[ZC_KEY_HEX_SIZE];
    if (tool_blob_pool_find(&tally->blobs, sha->bytes) >= 0) {
        free(bytes);
        return;
    }
    bool sealed = zc_sealed_declared_size(bytes, size, &declared);
    if (sealed && tool_blob_pool_add(&tally->blobs, sha->bytes, bytes, size)) {
        tally->blobs.spirv_sizes[tally->blobs.count - 1] = declared;
        return;
    }
    free(bytes);
    zc_key_to_hex(sha, hex);
    fprintf(stderr, "bad      SPIR-V %s: %s\n", hex,
            sealed ? "no memory" : "not a SPIR-V container");
}

/* The reader, requiring a signature when NEO_CACHE_REMOTE_SECRET_FILE is set;
 * copying what it reads to copy unless NULL. */
static zc_status start_reader(zc_bundle_reader *reader, FILE *in, FILE *copy, char *reason,
                              size_t reason_size)
{
    zc_config config;
    zc_config_from_env(&config);
    static zc_remote_secret secret;
    zc_bundle_signer signer;
    bool failed;
    const zc_bundle_signer *sign =
        tool_bundle_signer(&config, &secret, &signer, &failed, reason, reason_size);
    return failed ? ZC_ERR_INVALID_ARG
                  : zc_bundle_read_start_copying(reader, in, sign, copy, reason, reason_size);
}

/* A file with no name in $TMPDIR (else /tmp): no other process can open it,
 * let alone write it. NULL when there is none to be had. */
static FILE *private_file(void)
{
    const char *dir = getenv("TMPDIR");
    int fd =
        open(dir != NULL && dir[0] != '\0' ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    FILE *file = fd >= 0 ? fdopen(fd, "w+b") : NULL;
    if (file == NULL && fd >= 0)
        close(fd);
    return file != NULL ? file : tmpfile();
}

/* Reads the bundle in once, through its end, into a private copy: its
 * signature covers every byte and comes last, and whoever can write the file
 * could change it between two reads, so what is imported is that copy, whose
 * bytes are exactly those checked. The copy, at its start, or NULL. */
static FILE *checked_copy(FILE *in, char *reason, size_t reason_size)
{
    FILE *copy = private_file();
    if (copy == NULL) {
        snprintf(reason, reason_size, "cannot make a private copy of it: %s", strerror(errno));
        return NULL;
    }
    zc_bundle_reader reader = {0};
    zc_status status = start_reader(&reader, in, copy, reason, reason_size);
    zc_bundle_item item = ZC_BUNDLE_BAD;
    while (status == ZC_OK) {
        zc_key key;
        uint8_t *bytes = NULL;
        size_t size = 0;
        item = zc_bundle_read_next(&reader, &key, &bytes, &size, reason, reason_size);
        free(bytes);
        if (item != ZC_BUNDLE_ENTRY)
            break;
    }
    zc_bundle_reader_close(&reader);
    bool checked = status == ZC_OK && item == ZC_BUNDLE_END;
    if (checked && (fflush(copy) != 0 || fseek(copy, 0, SEEK_SET) != 0)) {
        snprintf(reason, reason_size, "cannot make a private copy of it: %s", strerror(errno));
        checked = false;
    }
    if (checked)
        return copy;
    fclose(copy);
    return NULL;
}

static int import_checked_entries(const tool_context *tool, zc_disk_tier *tier, FILE *in,
                                  const char *file)
{
    char reason[REASON_SIZE];
    zc_bundle_reader reader = {0};
    if (start_reader(&reader, in, NULL, reason, sizeof reason) != ZC_OK) {
        zc_bundle_reader_close(&reader);
        return tool_fail(tool, "%s: %s", is_stdio(file) ? "standard input" : file, reason);
    }
    bundle_tally tally = {0};
    uint64_t evictions_before = zc_disk_tier_evictions(tier);
    zc_bundle_item item = ZC_BUNDLE_ENTRY;
    bool going = true;
    while (going) {
        zc_key key;
        uint8_t *bytes;
        size_t size;
        item = zc_bundle_read_next(&reader, &key, &bytes, &size, reason, sizeof reason);
        if (item != ZC_BUNDLE_ENTRY)
            break;
        zc_bundle_kind kind = zc_bundle_kind_of(bytes, size);
        if (kind == ZC_BUNDLE_KIND_SPIRV) {
            keep_blob(&key, bytes, size, &tally); /* takes bytes */
            continue;
        }
        if (kind == ZC_BUNDLE_KIND_RECIPE)
            import_recipe(tier, &key, bytes, size, &tally);
        else
            going = import_one(tool, tier, &key, bytes, size, &tally);
        free(bytes);
    }
    zc_bundle_reader_close(&reader);
    tool_blob_pool_free(&tally.blobs);
    tool_blob_pool_free(&tally.verified);
    if (item == ZC_BUNDLE_BAD)
        tool_fail(tool, "%s: %s", is_stdio(file) ? "standard input" : file, reason);
    fprintf(stderr,
            "imported %llu entries, %llu bad, %llu too large; %llu evicted to make room; "
            "recorded inputs of %llu, %llu bad\n",
            (unsigned long long)tally.kept, (unsigned long long)tally.bad,
            (unsigned long long)tally.too_large,
            (unsigned long long)(zc_disk_tier_evictions(tier) - evictions_before),
            (unsigned long long)tally.inputs, (unsigned long long)tally.bad_inputs);
    bool clean = going && item == ZC_BUNDLE_END && tally.bad == 0 && tally.bad_inputs == 0;
    return clean ? TOOL_EXIT_OK : TOOL_EXIT_FAILURE;
}

/* Entries verify themselves, so a damaged bundle without a signature still
 * gives its good entries. With NEO_CACHE_REMOTE_SECRET_FILE set a bundle's
 * signature says who made it, and nothing of it is stored unless it holds. */
static bool signature_required(void)
{
    zc_config config;
    zc_config_from_env(&config);
    return config.remote_secret_file[0] != '\0';
}

static int import_entries(const tool_context *tool, zc_disk_tier *tier, FILE *in, const char *file)
{
    if (!signature_required())
        return import_checked_entries(tool, tier, in, file);
    char reason[REASON_SIZE];
    FILE *copy = checked_copy(in, reason, sizeof reason);
    if (copy == NULL)
        return tool_fail(tool, "%s: %s; nothing imported", is_stdio(file) ? "standard input" : file,
                         reason);
    int result = import_checked_entries(tool, tier, copy, file);
    fclose(copy);
    return result;
}

static int run_import(tool_context *tool, int argc, char **argv)
{
    return with_bundle_and_tier(tool, argc, argv, false, import_entries);
}

const tool_command tool_cmd_export = {
    .name = "export",
    .synopsis = "export FILE",
    .summary = "Write every verified entry to one bundle file",
    .details = "Writes the cache's entries, each verified as a load would verify it, to FILE\n"
               "(- for standard output): a bundle for 'zecache import', e.g. to pre-warm a\n"
               "container image or a new machine. Bad entries are reported and left out;\n"
               "the driver's own entries are not exported.\n"
               "\n"
               "Exit status: 0 every entry was exported, 1 some were bad or FILE could not\n"
               "be written.\n",
    .run = run_export,
};

const tool_command tool_cmd_import = {
    .name = "import",
    .synopsis = "import FILE",
    .summary = "Add the entries of a bundle file to the cache",
    .details = "Reads a bundle written by 'zecache export' from FILE (- for standard input)\n"
               "and stores each entry that verifies as a load would, as the layer stores\n"
               "(atomically, under the cache's lock, evicting the least recently used\n"
               "entries to stay within NEO_CACHE_MAX_SIZE). Entries already present are kept\n"
               "as they are. Bad entries are reported and left out; entries larger than the\n"
               "size limit are reported and skipped.\n"
               "\n"
               "With NEO_CACHE_REMOTE_SECRET_FILE set, the bundle must be signed with that\n"
               "secret: it is read once into a private temporary file (in $TMPDIR, else\n"
               "/tmp), and nothing of it is stored unless its signature holds.\n"
               "\n"
               "Exit status: 0 the whole bundle was read and every entry was good, 1 some\n"
               "were bad, the bundle is truncated or malformed, or the cache cannot be\n"
               "written.\n",
    .run = run_import,
};
