/* The cache key: SHA-256 over a record of everything that decides a compile.
 *
 * The record is a sequence of fields, each tag (u32 LE), length (u64 LE),
 * then that many bytes, so no two different inputs give the same stream. It
 * is hashed as it is written, through a small staging buffer that saves one
 * hash call per tiny field; it is never held whole.
 *
 *   FORMAT          u32 ZC_KEY_FORMAT_VERSION (always first)
 *   LIBRARY         library encoding (below), per compiler library found
 *   DRIVER          library encoding, u32 version, uuid[16]
 *   HARDWARE        u32 name length, name, bytes
 *   ENVIRONMENT     u32 count, then ENV_VAR "name=value" x count: the
 *                   driver's settings by name, then the compiler's by name
 *   SETTINGS_FILE   u32 path length, path, u8 present, SHA-256 if present;
 *                   the driver's files, then the compiler's
 *   SPIRV           u64 size, SHA-256 of the SPIR-V bytes    } per input,
 *   BUILD_FLAGS     u8 0 (NULL) | u8 1, the flags' bytes     } in the
 *   SPEC_CONSTANTS  u32 count                                } order added
 *   SPEC_CONSTANT   u32 id, value (declared width) x count   }
 *
 * Tags from 32 on are parts written in files of their own (key_record.h):
 * OpenCL C sources with their headers (opencl_c_key.c), a driver's own
 * compiler (driver_compiler.c).
 *
 * Fields are recorded in the order the caller adds them; the layer adds them
 * as listed, so the parts common to a device come first and a copy of the
 * builder holding them (zc_key_builder_copy) serves all of its keys.
 *
 * Library encoding: u32 name length, name, u8 found, u64 size, i64 mtime
 * seconds, i64 mtime nanoseconds, u32 build-id length, build-id. The path is
 * traced but not keyed, so the same file seen through another directory
 * keeps its entries.
 *
 * The SPIR-V enters as its own digest: as strong as hashing the bytes in
 * place, it is the value the trace shows, and the process remembers it for
 * large inputs that come again (spirv_digest_memo.h). */
#include "zecache/key.h"
#include "zecache/key_files.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byte_order.h"
#include "environment_internal.h"
#include "key_record.h"
#include "zecache/sha256.h"
#include "zecache/spirv.h"
#include "zecache/spirv_digest_memo.h"

_Static_assert(ZC_KEY_SIZE == ZC_SHA256_SIZE, "a key is a SHA-256 digest");

enum record_tag {
    TAG_FORMAT = 1,
    TAG_SPIRV = 2,
    TAG_BUILD_FLAGS = 3,
    TAG_SPEC_CONSTANTS = 4,
    TAG_SPEC_CONSTANT = 5,
    TAG_LIBRARY = 6,
    TAG_DRIVER = 7,
    TAG_HARDWARE = 8,
    TAG_ENVIRONMENT = 9,
    TAG_ENV_VAR = 10,
    TAG_SETTINGS_FILE = 11,
};

#define REASON_SIZE 256
/* Sizes up to which per-part scratch lives on the stack, not the heap. */
#define STACK_CONSTANTS 32
#define LIBRARY_ENCODING_MAX (4 + ZC_LIBRARY_NAME_SIZE + 1 + 8 + 8 + 8 + 4 + ZC_BUILD_ID_MAX)

struct zc_key_builder {
    zc_sha256 *record;
    bool hash_failed;
    bool finished;
    bool refused;
    char reason[REASON_SIZE];
    FILE *trace; /* NULL unless tracing; writes into trace_text */
    char *trace_text;
    size_t trace_size;
    unsigned spirv_inputs;
    bool environment_added;
    /* A copy of a builder that recorded the environment checks at finish
     * that the compiler's variables are still the snapshot's. */
    bool environment_recheck;
    zc_key_files *files; /* read by the key, never copied with it */
    size_t pending_size;
    uint8_t pending[512];
};

/* ---- record writing ---- */

static void record_flush(zc_key_builder *builder)
{
    if (builder->pending_size > 0 &&
        !zc_sha256_update(builder->record, builder->pending, builder->pending_size))
        builder->hash_failed = true;
    builder->pending_size = 0;
}

static void record_bytes(zc_key_builder *builder, const void *bytes, size_t size)
{
    if (size > sizeof builder->pending - builder->pending_size) {
        record_flush(builder);
        if (size > sizeof builder->pending / 2) {
            if (!zc_sha256_update(builder->record, bytes, size))
                builder->hash_failed = true;
            return;
        }
    }
    if (size > 0)
        memcpy(builder->pending + builder->pending_size, bytes, size);
    builder->pending_size += size;
}

static uint8_t *put_bytes(uint8_t *out, const void *bytes, size_t size)
{
    if (size > 0)
        memcpy(out, bytes, size);
    return out + size;
}

static void record_field_start(zc_key_builder *builder, uint32_t tag, uint64_t length)
{
    uint8_t header[12];
    zc_put_le64(zc_put_le32(header, tag), length);
    record_bytes(builder, header, sizeof header);
}

static void record_field(zc_key_builder *builder, uint32_t tag, const void *bytes, size_t size)
{
    record_field_start(builder, tag, size);
    record_bytes(builder, bytes, size);
}

static void record_u32_field(zc_key_builder *builder, uint32_t tag, uint32_t value)
{
    uint8_t bytes[4];
    zc_put_le32(bytes, value);
    record_field(builder, tag, bytes, sizeof bytes);
}

/* ---- trace ---- */

static void trace(zc_key_builder *builder, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void vtrace(zc_key_builder *builder, const char *fmt, va_list args)
{
    if (builder->trace != NULL)
        vfprintf(builder->trace, fmt, args);
}

static void trace(zc_key_builder *builder, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vtrace(builder, fmt, args);
    va_end(args);
}

/* Hex, 32 bytes a line, each line after the first indented. */
static void trace_hex(zc_key_builder *builder, const void *bytes, size_t size)
{
    if (builder->trace == NULL)
        return;
    const uint8_t *byte = bytes;
    for (size_t i = 0; i < size; i++) {
        if (i > 0 && i % 32 == 0)
            fputs("\n  ", builder->trace);
        fprintf(builder->trace, "%02x", byte[i]);
    }
}

/* Text with white space other than ' ', quotes, backslashes and other
 * control bytes escaped, so the trace shows what is keyed. */
static void trace_escaped(zc_key_builder *builder, const char *text, size_t length)
{
    if (builder->trace == NULL)
        return;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\t')
            fputs("\\t", builder->trace);
        else if (c == '\n')
            fputs("\\n", builder->trace);
        else if (c == '"' || c == '\\')
            fprintf(builder->trace, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(builder->trace, "\\x%02x", c);
        else
            fputc(c, builder->trace);
    }
}

/* ---- builder state ---- */

static zc_status refuse(zc_key_builder *builder, zc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Refusal is sticky: a key built from part of the inputs must never be
 * produced. */
static zc_status refuse(zc_key_builder *builder, zc_status status, const char *fmt, ...)
{
    if (!builder->refused) {
        builder->refused = true;
        va_list args;
        va_start(args, fmt);
        vsnprintf(builder->reason, sizeof builder->reason, fmt, args);
        va_end(args);
        trace(builder, "---- refused ----\n%s\n", builder->reason);
    }
    return status;
}

static zc_status check_usable(const zc_key_builder *builder)
{
    if (builder == NULL || builder->finished)
        return ZC_ERR_INVALID_ARG;
    return builder->refused ? ZC_NOT_CACHEABLE : ZC_OK;
}

/* IGC reads its variables once, at its first compile: a key made after
 * they changed is refused, whether the environment was just added or
 * recorded in the builder a copy came from. */
static zc_status refuse_if_compiler_settings_changed(zc_key_builder *builder,
                                                     const zc_environment_part *compiler_part)
{
    if (zc_environment_compiler_unchanged(compiler_part))
        return ZC_OK;
    return refuse(builder, ZC_NOT_CACHEABLE,
                  "IGC_* variables changed since the process's first module (IGC reads them "
                  "once, at its first compile)");
}

zc_status zc_key_builder_create(bool want_trace, zc_key_builder **out)
{
    if (out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    zc_key_builder *builder = calloc(1, sizeof *builder);
    if (builder == NULL)
        return ZC_ERR_NOMEM;
    builder->record = zc_sha256_create();
    if (want_trace)
        builder->trace = open_memstream(&builder->trace_text, &builder->trace_size);
    if (builder->record == NULL || (want_trace && builder->trace == NULL)) {
        zc_key_builder_destroy(builder);
        return ZC_ERR_NOMEM;
    }
    record_u32_field(builder, TAG_FORMAT, ZC_KEY_FORMAT_VERSION);
    trace(builder, "---- format ----\nversion: %d\n", ZC_KEY_FORMAT_VERSION);
    *out = builder;
    return ZC_OK;
}

/* The trace so far goes with the copy, so a traced key reads the same
 * whether its common parts were added to it or copied. */
static bool copy_trace(zc_key_builder *from, zc_key_builder *copy)
{
    if (from->trace == NULL)
        return true;
    copy->trace = open_memstream(&copy->trace_text, &copy->trace_size);
    const char *text = zc_key_builder_trace(from);
    return copy->trace != NULL && text != NULL && fputs(text, copy->trace) >= 0;
}

zc_status zc_key_builder_copy(zc_key_builder *from, zc_key_builder **out)
{
    if (out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    if (from == NULL || from->finished)
        return ZC_ERR_INVALID_ARG;
    zc_key_builder *copy = malloc(sizeof *copy);
    if (copy == NULL)
        return ZC_ERR_NOMEM;
    memcpy(copy, from, offsetof(zc_key_builder, pending) + from->pending_size);
    copy->trace = NULL;
    copy->files = NULL;
    copy->trace_text = NULL;
    copy->trace_size = 0;
    copy->record = zc_sha256_copy(from->record);
    copy->environment_recheck = from->environment_added;
    if (copy->record == NULL || !copy_trace(from, copy)) {
        zc_key_builder_destroy(copy);
        return ZC_ERR_NOMEM;
    }
    *out = copy;
    return ZC_OK;
}

void zc_key_builder_destroy(zc_key_builder *builder)
{
    if (builder == NULL)
        return;
    zc_sha256_destroy(builder->record);
    zc_key_files_destroy(builder->files);
    if (builder->trace != NULL)
        fclose(builder->trace);
    free(builder->trace_text);
    free(builder);
}

zc_key_files *zc_key_builder_files(zc_key_builder *builder)
{
    if (builder->files == NULL)
        builder->files = zc_key_files_create();
    return builder->files;
}

zc_key_files *zc_key_builder_take_files(zc_key_builder *builder)
{
    zc_key_files *files = builder->files;
    builder->files = NULL;
    return files;
}

/* ---- SPIR-V inputs ---- */

/* The flags byte for byte: the driver splits them on single spaces only, so
 * "-a\t-b" is one option to it and "-a  -b" has an empty one; any
 * normalising would give two different compiles one key. */
static zc_status add_build_flags(zc_key_builder *builder, const char *flags)
{
    uint8_t present = flags != NULL;
    size_t length = present ? strlen(flags) : 0;
    record_field_start(builder, TAG_BUILD_FLAGS, 1 + (uint64_t)length);
    record_bytes(builder, &present, 1);
    if (!present) {
        trace(builder, "flags: NULL\n");
        return ZC_OK;
    }
    record_bytes(builder, flags, length);
    trace(builder, "flags: \"");
    trace_escaped(builder, flags, length);
    trace(builder, "\"\n");
    return ZC_OK;
}

typedef struct given_constant {
    uint32_t id;
    const void *value;
} given_constant;

static int compare_given_constants(const void *a, const void *b)
{
    uint32_t left = ((const given_constant *)a)->id;
    uint32_t right = ((const given_constant *)b)->id;
    return (left > right) - (left < right);
}

/* The caller's constants sorted by id, so their order does not matter. */
static zc_status sort_given_constants(zc_key_builder *builder, const zc_spec_constants *given,
                                      given_constant *sorted)
{
    for (uint32_t i = 0; i < given->count; i++) {
        if (given->values[i] == NULL)
            return refuse(builder, ZC_ERR_INVALID_ARG, "spec constant id %u has no value",
                          given->ids[i]);
        sorted[i] = (given_constant){given->ids[i], given->values[i]};
    }
    qsort(sorted, given->count, sizeof *sorted, compare_given_constants);
    for (uint32_t i = 1; i < given->count; i++)
        if (sorted[i].id == sorted[i - 1].id)
            return refuse(builder, ZC_NOT_CACHEABLE, "spec constant id %u is given twice",
                          sorted[i].id);
    return ZC_OK;
}

static zc_status record_spec_constants(zc_key_builder *builder, const given_constant *sorted,
                                       uint32_t count, const zc_spirv_spec_constants *declared)
{
    for (uint32_t i = 0; i < count; i++) {
        uint32_t width = zc_spirv_spec_constant_width(declared, sorted[i].id);
        if (width == 0)
            return refuse(builder, ZC_NOT_CACHEABLE,
                          "spec constant id %u is not declared in SPIR-V input %u", sorted[i].id,
                          builder->spirv_inputs - 1);
        uint8_t id[4];
        zc_put_le32(id, sorted[i].id);
        record_field_start(builder, TAG_SPEC_CONSTANT, 4 + (uint64_t)width);
        record_bytes(builder, id, sizeof id);
        record_bytes(builder, sorted[i].value, width);
        trace(builder, "  id %u width %u value ", sorted[i].id, width);
        trace_hex(builder, sorted[i].value, width);
        trace(builder, "\n");
    }
    return ZC_OK;
}

/* Parsing costs time on every lookup, so it happens only when there are
 * constants to size. Without constants the module is not parsed at all: the
 * header check in zc_key_add_spirv is all the hot path pays. */
static zc_status add_spec_constants(zc_key_builder *builder, const void *spirv, size_t size,
                                    const zc_spec_constants *given)
{
    uint32_t count = given != NULL ? given->count : 0;
    record_u32_field(builder, TAG_SPEC_CONSTANTS, count);
    trace(builder, "spec constants: %u\n", count);
    if (count == 0)
        return ZC_OK;
    if (given->ids == NULL || given->values == NULL)
        return refuse(builder, ZC_ERR_INVALID_ARG, "spec constant ids or values are NULL");
    given_constant stack_sorted[STACK_CONSTANTS];
    given_constant *sorted =
        count <= STACK_CONSTANTS ? stack_sorted : malloc(count * sizeof *sorted);
    if (sorted == NULL)
        return refuse(builder, ZC_ERR_NOMEM, "out of memory for %u spec constants", count);
    zc_status status = sort_given_constants(builder, given, sorted);
    if (status == ZC_OK) {
        zc_spirv_spec_constants declared;
        char reason[REASON_SIZE];
        status = zc_spirv_scan_spec_constants(spirv, size, &declared, reason, sizeof reason);
        if (status == ZC_OK)
            status = record_spec_constants(builder, sorted, count, &declared);
        else
            refuse(builder, status, "SPIR-V input %u: %s", builder->spirv_inputs - 1, reason);
        zc_spirv_spec_constants_free(&declared);
    }
    if (sorted != stack_sorted)
        free(sorted);
    return status;
}

/* A cheap look at the header (five words, the magic number in either byte
 * order): an input that is not SPIR-V is left to the driver uncached, since
 * what the driver makes of it is not something to hand out again. */
bool zc_key_spirv_has_header(const void *spirv, size_t size)
{
    enum { HEADER_WORDS = 5, MAGIC = 0x07230203u, SWAPPED_MAGIC = 0x03022307u };
    if (spirv == NULL || size < HEADER_WORDS * 4 || size % 4 != 0)
        return false;
    uint32_t magic;
    memcpy(&magic, spirv, sizeof magic);
    return magic == MAGIC || magic == SWAPPED_MAGIC;
}

/* The SPIR-V field (its size and digest) and the build flags. */
static zc_status add_spirv_digest(zc_key_builder *builder, size_t spirv_size,
                                  const uint8_t digest[ZC_SHA256_SIZE], const char *build_flags)
{
    uint8_t field[8 + ZC_SHA256_SIZE];
    put_bytes(zc_put_le64(field, spirv_size), digest, ZC_SHA256_SIZE);
    record_field(builder, TAG_SPIRV, field, sizeof field);
    trace(builder, "---- spirv %u ----\nsize: %zu\nsha256: ", builder->spirv_inputs, spirv_size);
    trace_hex(builder, digest, ZC_SHA256_SIZE);
    trace(builder, "\n");
    builder->spirv_inputs++;
    return add_build_flags(builder, build_flags);
}

zc_status zc_key_add_spirv(zc_key_builder *builder, const void *spirv, size_t spirv_size,
                           const char *build_flags, const zc_spec_constants *constants)
{
    zc_status status = check_usable(builder);
    if (status != ZC_OK)
        return status;
    if (spirv == NULL && spirv_size > 0)
        return refuse(builder, ZC_ERR_INVALID_ARG, "SPIR-V input is NULL");
    if (!zc_key_spirv_has_header(spirv, spirv_size))
        return refuse(builder, ZC_NOT_CACHEABLE,
                      "input %u is not SPIR-V (%zu bytes, no SPIR-V header)", builder->spirv_inputs,
                      spirv_size);
    uint8_t digest[ZC_SHA256_SIZE];
    if (!zc_spirv_digest(spirv, spirv_size, digest))
        return refuse(builder, ZC_ERR_NOMEM, "SHA-256 of the SPIR-V failed");
    status = add_spirv_digest(builder, spirv_size, digest, build_flags);
    if (status != ZC_OK)
        return status;
    return add_spec_constants(builder, spirv, spirv_size, constants);
}

zc_status zc_key_add_spirv_digested(zc_key_builder *builder, size_t spirv_size,
                                    const uint8_t digest[ZC_SHA256_SIZE], const char *build_flags)
{
    zc_status status = check_usable(builder);
    if (status != ZC_OK)
        return status;
    status = add_spirv_digest(builder, spirv_size, digest, build_flags);
    if (status != ZC_OK)
        return status;
    return add_spec_constants(builder, NULL, spirv_size, NULL);
}

/* ---- libraries ---- */

static size_t encode_library(const zc_library_identity *library, uint8_t *out)
{
    size_t name_length = strnlen(library->name, sizeof library->name);
    uint8_t *end = zc_put_le32(out, (uint32_t)name_length);
    end = put_bytes(end, library->name, name_length);
    *end++ = library->path[0] != '\0';
    end = zc_put_le64(end, library->size);
    end = zc_put_le64(end, (uint64_t)library->mtime_sec);
    end = zc_put_le64(end, (uint64_t)library->mtime_nsec);
    end = zc_put_le32(end, (uint32_t)library->build_id_size);
    end = put_bytes(end, library->build_id, library->build_id_size);
    return (size_t)(end - out);
}

static void trace_library(zc_key_builder *builder, const zc_library_identity *library)
{
    size_t name_length = strnlen(library->name, sizeof library->name);
    trace(builder, "name: %.*s\n", (int)name_length, library->name);
    if (library->path[0] == '\0') {
        trace(builder, "path: missing\n");
        return;
    }
    trace(builder, "path: %.*s\nbuild-id: ", (int)strnlen(library->path, sizeof library->path),
          library->path);
    trace_hex(builder, library->build_id, library->build_id_size);
    trace(builder, "\nsize: %llu\nmtime: %lld.%09lld\n", (unsigned long long)library->size,
          (long long)library->mtime_sec, (long long)library->mtime_nsec);
}

/* IGC and its front end; their files decide code generation even when the
 * driver's version stays the same. Only libraries that were found are in the
 * identity (a compiler without libigc is never keyed). */
zc_status zc_key_add_compiler_identity(zc_key_builder *builder,
                                       const zc_compiler_identity *compiler)
{
    zc_status status = check_usable(builder);
    if (status != ZC_OK)
        return status;
    if (compiler == NULL || compiler->count == 0 || compiler->count > ZC_COMPILER_LIBRARY_MAX)
        return refuse(builder, ZC_ERR_INVALID_ARG, "the compiler is not identified");
    for (size_t i = 0; i < compiler->count; i++) {
        uint8_t encoded[LIBRARY_ENCODING_MAX];
        record_field(builder, TAG_LIBRARY, encoded,
                     encode_library(&compiler->libraries[i], encoded));
        trace(builder, "---- compiler library ----\n");
        trace_library(builder, &compiler->libraries[i]);
    }
    return ZC_OK;
}

zc_status zc_key_add_driver(zc_key_builder *builder, const zc_library_identity *library,
                            uint32_t driver_version, const uint8_t uuid[16])
{
    zc_status status = check_usable(builder);
    if (status != ZC_OK)
        return status;
    if (library == NULL || uuid == NULL || library->build_id_size > ZC_BUILD_ID_MAX)
        return refuse(builder, ZC_ERR_INVALID_ARG, "driver identity is incomplete");
    uint8_t encoded[LIBRARY_ENCODING_MAX + 4 + 16];
    uint8_t *end = encoded + encode_library(library, encoded);
    end = put_bytes(zc_put_le32(end, driver_version), uuid, 16);
    record_field(builder, TAG_DRIVER, encoded, (size_t)(end - encoded));
    trace(builder, "---- driver ----\n");
    trace_library(builder, library);
    trace(builder, "version: 0x%08x\nuuid: ", driver_version);
    trace_hex(builder, uuid, 16);
    trace(builder, "\n");
    return ZC_OK;
}

/* ---- hardware ---- */

zc_status zc_key_add_hardware(zc_key_builder *builder, const char *name, const void *bytes,
                              size_t size)
{
    zc_status status = check_usable(builder);
    if (status != ZC_OK)
        return status;
    if (name == NULL || (bytes == NULL && size > 0))
        return refuse(builder, ZC_ERR_INVALID_ARG, "hardware part without name or bytes");
    size_t name_length = strlen(name);
    uint8_t name_header[4];
    zc_put_le32(name_header, (uint32_t)name_length);
    record_field_start(builder, TAG_HARDWARE, 4 + (uint64_t)name_length + size);
    record_bytes(builder, name_header, sizeof name_header);
    record_bytes(builder, name, name_length);
    record_bytes(builder, bytes, size);
    trace(builder, "---- hardware: %s ----\nsize: %zu\nbytes: ", name, size);
    trace_hex(builder, bytes, size);
    trace(builder, "\n");
    return ZC_OK;
}

/* ---- driver and compiler environment ---- */

static void record_settings_file(zc_key_builder *builder, const zc_settings_file *file)
{
    size_t path_length = strlen(file->path);
    uint8_t header[4];
    zc_put_le32(header, (uint32_t)path_length);
    uint8_t present = file->present;
    record_field_start(builder, TAG_SETTINGS_FILE,
                       4 + (uint64_t)path_length + 1 + (present ? ZC_SHA256_SIZE : 0));
    record_bytes(builder, header, sizeof header);
    record_bytes(builder, file->path, path_length);
    record_bytes(builder, &present, 1);
    if (present)
        record_bytes(builder, file->sha256, ZC_SHA256_SIZE);
    trace(builder, "settings file %s: ", file->path);
    if (!present)
        trace(builder, "absent");
    trace_hex(builder, file->sha256, present ? ZC_SHA256_SIZE : 0);
    trace(builder, "\n");
}

static void record_variables(zc_key_builder *builder, const zc_environment_part *part)
{
    for (size_t i = 0; i < part->count; i++) {
        record_field(builder, TAG_ENV_VAR, part->variables[i], strlen(part->variables[i]));
        trace(builder, "%s\n", part->variables[i]);
    }
}

zc_status zc_key_add_environment(zc_key_builder *builder)
{
    zc_status status = check_usable(builder);
    if (status != ZC_OK)
        return status;
    const zc_environment_part *parts[] = {zc_environment_driver_part(),
                                          zc_environment_compiler_part()};
    if (parts[0]->failed || parts[1]->failed)
        return refuse(builder, ZC_NOT_CACHEABLE,
                      "the driver's or the compiler's settings could not be read");
    status = refuse_if_compiler_settings_changed(builder, parts[1]);
    if (status != ZC_OK)
        return status;
    builder->environment_added = true;
    size_t count = parts[0]->count + parts[1]->count;
    record_u32_field(builder, TAG_ENVIRONMENT, (uint32_t)count);
    trace(builder, "---- environment ----\nvariables: %zu\n", count);
    for (size_t p = 0; p < 2; p++)
        record_variables(builder, parts[p]);
    for (size_t p = 0; p < 2; p++)
        for (size_t i = 0; i < parts[p]->file_count; i++)
            record_settings_file(builder, &parts[p]->files[i]);
    return ZC_OK;
}

/* ---- parts written in files of their own (key_record.h) ---- */

zc_status zc_key_part_usable(const zc_key_builder *builder)
{
    return check_usable(builder);
}

void zc_key_record_field(zc_key_builder *builder, uint32_t tag, const void *bytes, size_t size)
{
    record_field(builder, tag, bytes, size);
}

void zc_key_record_start(zc_key_builder *builder, uint32_t tag, uint64_t length)
{
    record_field_start(builder, tag, length);
}

void zc_key_record_more(zc_key_builder *builder, const void *bytes, size_t size)
{
    record_bytes(builder, bytes, size);
}

void zc_key_record_library(zc_key_builder *builder, uint32_t tag,
                           const zc_library_identity *library)
{
    uint8_t encoded[LIBRARY_ENCODING_MAX];
    record_field(builder, tag, encoded, encode_library(library, encoded));
    trace_library(builder, library);
}

zc_status zc_key_refuse(zc_key_builder *builder, zc_status status, const char *fmt, ...)
{
    char reason[REASON_SIZE];
    va_list args;
    va_start(args, fmt);
    vsnprintf(reason, sizeof reason, fmt, args);
    va_end(args);
    return refuse(builder, status, "%s", reason);
}

bool zc_key_traced(const zc_key_builder *builder)
{
    return builder->trace != NULL;
}

void zc_key_trace(zc_key_builder *builder, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vtrace(builder, fmt, args);
    va_end(args);
}

void zc_key_trace_hex(zc_key_builder *builder, const void *bytes, size_t size)
{
    trace_hex(builder, bytes, size);
}

void zc_key_trace_escaped(zc_key_builder *builder, const char *text, size_t length)
{
    trace_escaped(builder, text, length);
}

/* ---- result ---- */

zc_status zc_key_finish(zc_key_builder *builder, zc_key *key)
{
    zc_status status = check_usable(builder);
    if (status == ZC_ERR_INVALID_ARG || key == NULL)
        return ZC_ERR_INVALID_ARG;
    if (status == ZC_OK && builder->environment_recheck)
        status = refuse_if_compiler_settings_changed(builder, zc_environment_compiler_part());
    builder->finished = true;
    if (status != ZC_OK)
        return ZC_NOT_CACHEABLE;
    record_flush(builder);
    if (builder->hash_failed || !zc_sha256_finish(builder->record, key->bytes)) {
        refuse(builder, ZC_NOT_CACHEABLE, "SHA-256 of the key record failed");
        return ZC_NOT_CACHEABLE;
    }
    /* The kind is the caller's to set: the bytes name no API. */
    key->kind = ZC_ENTRY_LEVEL_ZERO;
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    trace(builder, "---- key ----\n%s\n", hex);
    return ZC_OK;
}

const char *zc_key_builder_reason(const zc_key_builder *builder)
{
    return builder != NULL && builder->refused ? builder->reason : NULL;
}

const char *zc_key_builder_trace(const zc_key_builder *builder)
{
    if (builder == NULL || builder->trace == NULL)
        return NULL;
    /* open_memstream publishes its buffer only on fflush. */
    if (fflush(builder->trace) != 0)
        return NULL;
    return builder->trace_text;
}
