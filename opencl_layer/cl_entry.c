/* What an OpenCL entry holds besides the build log: the driver's binary
 * (CL_PROGRAM_BINARIES), then each kernel's CL_KERNEL_ATTRIBUTES as the
 * build answered them, since PoCL 3.1 answers "" for every kernel of a
 * program made from a binary ("__attribute__((reqd_work_group_size(8, 1,
 * 1)))" after a build from source):
 *
 *   "ZCCL1\0\0\0", u64 binary size, the binary,
 *   u32 kernel count, then per kernel: u32 name length, the name,
 *   u32 attributes length, the attributes (no NUL)
 *
 * An executable whose binary carries the SPIR-V it was built from (Intel's,
 * both generations: an ELF section of type ZC_INTEL_SPIRV_SECTION) is stored as the
 * binary without the SPIR-V's bytes, which is what a hit hands the driver,
 * and what joins them back (zecache/section_cut.h):
 *
 *   "ZCCL2\0\0\0", u64 size, the binary without them, u64 size, the
 *   restore part, then the kernels as above
 *
 * and, when the SPIR-V is the IL the program was created from (its bytes
 * begin with all that were cut), without those bytes a second time: a hit's
 * program has the same IL (the key holds its digest), so the driver gives
 * them back (CL_PROGRAM_IL) when the whole binary is wanted, and a hit
 * reads half of what it did for a large IL:
 *
 *   "ZCCL3\0\0\0", u64 size, the binary without them, u64 size, the
 *   restore part's head, u64 how many bytes of the IL were cut, then the
 *   kernels as above
 *
 * little-endian; every length is checked against what is left, so a bad
 * entry is refused, never overrun. */
#include <stdlib.h>
#include <string.h>

#include "byte_order.h"
#include "cl_layer_internal.h"
#include "zecache/section_cut.h"

#define MAGIC "ZCCL1\0\0\0"
#define MAGIC_CUT "ZCCL2\0\0\0"
#define MAGIC_CUT_IL "ZCCL3\0\0\0"
#define MAGIC_SIZE 8
#define NAMES_MAX ((size_t)1 << 20)

/* The answer of kernel (malloc'd, without NUL) to CL_KERNEL_ATTRIBUTES. */
static char *attributes_of(cl_kernel kernel, size_t *length)
{
    size_t size = 0;
    *length = 0;
    if (zcc_layer.next.clGetKernelInfo(kernel, CL_KERNEL_ATTRIBUTES, 0, NULL, &size) != CL_SUCCESS)
        return NULL;
    char *text = calloc(1, size + 1);
    if (text != NULL && zcc_layer.next.clGetKernelInfo(kernel, CL_KERNEL_ATTRIBUTES, size, text,
                                                       NULL) != CL_SUCCESS) {
        free(text);
        return NULL;
    }
    if (text != NULL)
        *length = strlen(text);
    return text;
}

/* The ";"-separated kernel names of a built program (malloc'd). */
static char *kernel_names_of(cl_program program)
{
    size_t size = 0;
    if (zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &size) !=
            CL_SUCCESS ||
        size > NAMES_MAX)
        return NULL;
    char *names = calloc(1, size + 1);
    if (names != NULL && zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, size,
                                                         names, NULL) != CL_SUCCESS) {
        free(names);
        return NULL;
    }
    return names;
}

/* Appends bytes to a growing buffer; false when memory runs out. */
typedef struct buffer {
    uint8_t *bytes;
    size_t size, capacity;
} buffer;

static bool append(buffer *to, const void *bytes, size_t size)
{
    if (to->size + size > to->capacity) {
        size_t capacity = 2 * (to->size + size) + 64;
        uint8_t *grown = realloc(to->bytes, capacity);
        if (grown == NULL)
            return false;
        to->bytes = grown;
        to->capacity = capacity;
    }
    memcpy(to->bytes + to->size, bytes, size);
    to->size += size;
    return true;
}

static bool append_text(buffer *to, const char *text, size_t length)
{
    uint8_t prefix[4];
    zc_put_le32(prefix, (uint32_t)length);
    return append(to, prefix, sizeof(prefix)) && append(to, text, length);
}

/* Each kernel's name and attributes, from the kernels of program; none
 * for NULL (a compiled object). */
static bool append_kernels(buffer *to, cl_program program)
{
    if (program == NULL)
        return append(to, (const uint8_t[4]){0}, 4);
    char *names = kernel_names_of(program);
    if (names == NULL)
        return false;
    uint32_t count = 0;
    size_t count_at = to->size;
    uint8_t prefix[4] = {0};
    bool ok = append(to, prefix, sizeof(prefix));
    for (char *name = names; ok && *name != '\0'; name += strcspn(name, ";")) {
        name += *name == ';';
        size_t name_length = strcspn(name, ";");
        char saved = name[name_length];
        name[name_length] = '\0';
        cl_int status = CL_SUCCESS;
        cl_kernel kernel = zcc_layer.next.clCreateKernel(program, name, &status);
        size_t length = 0;
        char *attributes = kernel != NULL ? attributes_of(kernel, &length) : NULL;
        ok = attributes != NULL && append_text(to, name, name_length) &&
             append_text(to, attributes, length);
        count++;
        free(attributes);
        if (kernel != NULL)
            zcc_layer.next.clReleaseKernel(kernel);
        name[name_length] = saved;
    }
    zc_put_le32(to->bytes + count_at, count);
    free(names);
    return ok;
}

static bool append_part(buffer *to, const void *bytes, size_t size)
{
    uint8_t prefix[8];
    zc_put_le64(prefix, size);
    return append(to, prefix, sizeof(prefix)) && append(to, bytes, size);
}

/* How many cut bytes program's IL gives back: all, when the driver's IL
 * of it begins with them; else 0. */
static size_t cut_from_il(cl_program program, const zc_section_cut *cut)
{
    size_t cut_size = cut->restore_size - cut->head_size, il_size = 0;
    uint8_t *il = zcc_il_of(program, &il_size);
    bool from_il = il != NULL && il_size >= cut_size &&
                   memcmp(il, cut->restore + cut->head_size, cut_size) == 0;
    free(il);
    return from_il ? cut_size : 0;
}

static bool append_cut(buffer *to, const zc_section_cut *cut, size_t from_il)
{
    uint8_t il_size[8];
    zc_put_le64(il_size, from_il);
    if (from_il == 0)
        return append(to, MAGIC_CUT, MAGIC_SIZE) && append_part(to, cut->kept, cut->kept_size) &&
               append_part(to, cut->restore, cut->restore_size);
    return append(to, MAGIC_CUT_IL, MAGIC_SIZE) && append_part(to, cut->kept, cut->kept_size) &&
           append_part(to, cut->restore, cut->head_size) && append(to, il_size, sizeof(il_size));
}

zc_artifact *zcc_entry_create(cl_program program, const unsigned char *binary, size_t size,
                              const char *log, size_t log_length, const zc_artifact_meta *meta)
{
    /* A compiled object's SPIR-V is all it holds. */
    zc_section_cut cut = {0};
    bool is_cut =
        program != NULL && zc_section_cut_make(binary, size, ZC_INTEL_SPIRV_SECTION, &cut);
    buffer entry = {0};
    bool ok = is_cut ? append_cut(&entry, &cut, cut_from_il(program, &cut))
                     : append(&entry, MAGIC, MAGIC_SIZE) && append_part(&entry, binary, size);
    zc_section_cut_free(&cut);
    ok = ok && append_kernels(&entry, program);
    zc_artifact *artifact =
        ok ? zc_artifact_create(entry.bytes, entry.size, log, log_length, meta) : NULL;
    free(entry.bytes);
    return artifact;
}

/* The next u64-length-prefixed part of *at (within *left); false past the
 * end. */
static bool next_part(const uint8_t **at, size_t *left, const uint8_t **part, size_t *size)
{
    if (*left < 8 || zc_get_le64(*at) > *left - 8)
        return false;
    *size = (size_t)zc_get_le64(*at);
    *part = *at + 8;
    *at += 8 + *size;
    *left -= 8 + *size;
    return true;
}

/* The restore part of a cut entry, and the whole binary's size. */
static bool read_restore(const uint8_t **at, size_t *left, bool from_il, zcc_entry *entry)
{
    if (!next_part(at, left, &entry->restore, &entry->restore_size))
        return false;
    if (!from_il)
        return zc_section_cut_whole_size(entry->binary_size, entry->restore, entry->restore_size,
                                         &entry->whole_size);
    if (*left < 8)
        return false;
    entry->cut_from_il = (size_t)zc_get_le64(*at);
    *at += 8;
    *left -= 8;
    return entry->cut_from_il > 0 &&
           zc_section_cut_head_whole_size(entry->binary_size, entry->restore, entry->restore_size,
                                          entry->cut_from_il, &entry->whole_size);
}

bool zcc_entry_read(const zc_artifact *artifact, zcc_entry *entry)
{
    size_t left;
    const uint8_t *at = zc_artifact_binary(artifact, &left);
    *entry = (zcc_entry){0};
    if (left < MAGIC_SIZE)
        return false;
    bool from_il = memcmp(at, MAGIC_CUT_IL, MAGIC_SIZE) == 0;
    bool is_cut = from_il || memcmp(at, MAGIC_CUT, MAGIC_SIZE) == 0;
    if (!is_cut && memcmp(at, MAGIC, MAGIC_SIZE) != 0)
        return false;
    at += MAGIC_SIZE;
    left -= MAGIC_SIZE;
    if (!next_part(&at, &left, &entry->binary, &entry->binary_size) || entry->binary_size == 0)
        return false;
    entry->whole_size = entry->binary_size;
    if (is_cut && !read_restore(&at, &left, from_il, entry))
        return false;
    entry->kernels = at;
    entry->kernels_size = left;
    return left >= 4;
}

bool zcc_entry_whole(const zcc_entry *entry, cl_program il_of, uint8_t *out)
{
    if (entry->restore == NULL) {
        memcpy(out, entry->binary, entry->binary_size);
        return true;
    }
    if (entry->cut_from_il == 0) {
        zc_section_cut_join(entry->binary, entry->binary_size, entry->restore, entry->restore_size,
                            out);
        return true;
    }
    size_t il_size = 0;
    uint8_t *il = il_of != NULL ? zcc_il_of(il_of, &il_size) : NULL;
    bool joined = il != NULL && il_size >= entry->cut_from_il;
    if (joined)
        zc_section_cut_join_head(entry->binary, entry->binary_size, entry->restore,
                                 entry->restore_size, il, entry->cut_from_il, out);
    free(il);
    return joined;
}

bool zcc_entry_without_ir(const zcc_entry *entry)
{
    return entry->restore != NULL && zc_intel_binary_without_ir(entry->binary, entry->binary_size);
}

const uint8_t *zcc_entry_whole_binary(const zcc_entry *entry, cl_program il_of, uint8_t **held)
{
    *held = NULL;
    if (entry->restore == NULL)
        return entry->binary;
    *held = malloc(entry->whole_size);
    if (*held != NULL && !zcc_entry_whole(entry, il_of, *held)) {
        free(*held);
        *held = NULL;
    }
    return *held;
}

/* The next length-prefixed text of *at (within *left); false past the end. */
static bool next_text(const uint8_t **at, size_t *left, const char **text, size_t *length)
{
    if (*left < 4 || zc_get_le32(*at) > *left - 4)
        return false;
    *length = zc_get_le32(*at);
    *text = (const char *)*at + 4;
    *at += 4 + *length;
    *left -= 4 + *length;
    return true;
}

bool zcc_entry_kernel_attributes(const uint8_t *kernels, size_t size, const char *name,
                                 const char **attributes, size_t *length)
{
    if (size < 4)
        return false;
    uint32_t count = zc_get_le32(kernels);
    const uint8_t *at = kernels + 4;
    size_t left = size - 4, name_length = strlen(name);
    for (uint32_t i = 0; i < count; i++) {
        const char *kernel;
        size_t kernel_length;
        if (!next_text(&at, &left, &kernel, &kernel_length) ||
            !next_text(&at, &left, attributes, length))
            return false;
        if (kernel_length == name_length && memcmp(kernel, name, name_length) == 0)
            return true;
    }
    return false;
}
