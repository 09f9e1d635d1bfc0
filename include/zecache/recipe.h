/* Recorded inputs: what builds an entry again under another compiler (zecache
 * prewarm). A recipe holds the module description the key was made from,
 * but its SPIR-V by SHA-256 only: each SPIR-V is kept once, in a container
 * of its own, however many recipes use it.
 *
 * A recipe's content (inside a sealed container, sealed.h, magic
 * ZC_RECIPE_MAGIC, id = the entry's key), little-endian:
 *   format u32 (ze_module_format_t), program u32 (1: the module program
 *   extension), input count u32 (1..ZC_RECIPE_MAX_INPUTS),
 *   device name (text), driver version (text), then per input:
 *   SPIR-V SHA-256 (32), SPIR-V size u64, flags present u8, flags (text),
 *   constants present u8, constant count u32 (..ZC_RECIPE_MAX_CONSTANTS),
 *   per constant: id u32, width u32 (1..8), value (width bytes).
 * A text is a u32 length (..ZC_RECIPE_MAX_TEXT) and its bytes, no NUL.
 *
 * A Level Zero recipe ends with its last input (format as zecache 1.x wrote
 * it). An OpenCL recipe (format ZC_OPENCL_BUILD_SOURCE or _IL, one input:
 * the source text or the IL, kept as a SPIR-V blob is) follows it with:
 *   api u32 (ZC_RECIPE_API_OPENCL), working directory (text), file count
 *   u32 (..ZC_RECIPE_MAX_FILES), per file the key read: path (text,
 *   ..ZC_RECIPE_MAX_PATH), state u8 (zc_key_file_state), size u64, SHA-256
 *   (32); variable count u32 (..ZC_RECIPE_MAX_VARIABLES), per variable:
 *   name (text, ..ZC_RECIPE_MAX_PATH), set u8, value (text, same bound).
 * Nothing may follow that. Readers older than the OpenCL part refuse an
 * OpenCL recipe as damaged, which costs only its prewarm. */
#ifndef ZECACHE_RECIPE_H
#define ZECACHE_RECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/key.h"
#include "zecache/sealed.h"
#include "zecache/status.h"

#define ZC_RECIPE_MAGIC "ZCRECIP"  /* with its NUL: 8 bytes */
#define ZC_SPIRV_MAGIC "ZCSPIRV"   /* with its NUL: 8 bytes */
#define ZC_RECIPE_SUFFIX ".recipe" /* beside its entry, counted with it */
#define ZC_SPIRV_SUFFIX ".spirv"   /* <s0>/<s1>/<64 hex of the SHA-256>.spirv */
#define ZC_RECIPE_MAX_INPUTS 256u
#define ZC_RECIPE_MAX_CONSTANTS 1024u /* per input: real programs set a few dozen */
#define ZC_RECIPE_MAX_TEXT 16384u     /* build flags: real ones are well under 1 KiB */
#define ZC_RECIPE_API_OPENCL 1u
#define ZC_RECIPE_MAX_FILES 1024u   /* header candidates an OpenCL C key visited */
#define ZC_RECIPE_MAX_PATH 1024u    /* a path, a variable name or value */
#define ZC_RECIPE_MAX_VARIABLES 32u /* driver build variables (PoCL's) */
/* The largest content the layout above allows, the bound a decoder passes
 * to zc_sealed_decode: a few KB of planted recipe can declare any size, and
 * must be refused before anything is allocated for it (about 8 MiB). */
#define ZC_RECIPE_TEXT_BYTES (4u + ZC_RECIPE_MAX_TEXT)
#define ZC_RECIPE_CONSTANT_BYTES (4u + 4u + 8u)
#define ZC_RECIPE_INPUT_BYTES                                                                      \
    (32u + 8u + 1u + ZC_RECIPE_TEXT_BYTES + 1u + 4u +                                              \
     (uint64_t)ZC_RECIPE_MAX_CONSTANTS * ZC_RECIPE_CONSTANT_BYTES)
#define ZC_RECIPE_FILE_BYTES (4u + ZC_RECIPE_MAX_PATH + 1u + 8u + 32u)
#define ZC_RECIPE_VARIABLE_BYTES (2u * (4u + ZC_RECIPE_MAX_PATH) + 1u)
#define ZC_RECIPE_OPENCL_BYTES                                                                     \
    (4u + ZC_RECIPE_TEXT_BYTES + 4u + (uint64_t)ZC_RECIPE_MAX_FILES * ZC_RECIPE_FILE_BYTES + 4u +  \
     (uint64_t)ZC_RECIPE_MAX_VARIABLES * ZC_RECIPE_VARIABLE_BYTES)
#define ZC_RECIPE_MAX_CONTENT                                                                      \
    (3u * 4u + 2u * ZC_RECIPE_TEXT_BYTES +                                                         \
     (uint64_t)ZC_RECIPE_MAX_INPUTS * ZC_RECIPE_INPUT_BYTES + ZC_RECIPE_OPENCL_BYTES)

typedef struct zc_recipe_constant {
    uint32_t id;
    uint32_t width; /* bytes, as the SPIR-V declares it */
    uint8_t value[8];
} zc_recipe_constant;

typedef struct zc_recipe_input {
    uint8_t spirv_sha256[32];
    uint64_t spirv_size;
    char *flags; /* NULL: none given (distinct from "") */
    bool has_constants;
    uint32_t constant_count;
    zc_recipe_constant *constants;
} zc_recipe_input;

/* A file an OpenCL C key read (zecache/key_files.h), as it was then. */
typedef struct zc_recipe_file {
    char *path;
    uint8_t state; /* a zc_key_file_state */
    uint64_t size;
    uint8_t sha256[32];
} zc_recipe_file;

typedef struct zc_recipe_variable {
    char *name;
    char *value; /* NULL: not set */
} zc_recipe_variable;

/* What an OpenCL build depends on besides its input and options: prewarm
 * builds in that directory with those variables, and only while the files
 * are as they were (else the build has another key). */
typedef struct zc_recipe_opencl {
    char *working_dir;
    uint32_t file_count;
    zc_recipe_file *files;
    uint32_t variable_count;
    zc_recipe_variable *variables;
} zc_recipe_opencl;

typedef struct zc_recipe {
    zc_key key;      /* the entry it was recorded with (kind: OpenCL with opencl) */
    uint32_t format; /* ze_module_format_t, or ZC_OPENCL_BUILD_* with opencl */
    bool program;
    char *device_name;
    char *driver_version;
    uint32_t input_count;
    zc_recipe_input *inputs;
    zc_recipe_opencl *opencl; /* NULL: a Level Zero recipe */
} zc_recipe;

/* The recipe's content in a sealed container (malloc'd); ZC_ERR_TOO_LARGE
 * when a count or text is over its bound above (nothing is recorded). */
zc_status zc_recipe_encode(const zc_recipe *recipe, int compression_level, uint8_t **out,
                           size_t *out_size);
/* Verifies the container (expected key unless NULL) and parses every field
 * with bounds; ZC_MISS with a reason when anything is off. Free with
 * zc_recipe_free. */
zc_status zc_recipe_decode(const void *data, size_t size, const zc_key *expected, zc_recipe *out,
                           char *reason, size_t reason_size);
/* As zc_recipe_decode, with the same checks, but keeps only what eviction
 * needs: the inputs' SPIR-V digests and sizes (texts and constants are
 * checked and dropped, device_name and driver_version are NULL). */
zc_status zc_recipe_decode_inputs(const void *data, size_t size, const zc_key *expected,
                                  zc_recipe *out, char *reason, size_t reason_size);
void zc_recipe_free(zc_recipe *recipe);

/* A SPIR-V module in its container, named by its SHA-256 (*sha256 set). */
zc_status zc_spirv_blob_encode(const void *spirv, size_t size, int compression_level,
                               uint8_t sha256[32], uint8_t **out, size_t *out_size);
/* Verifies the container and that the content's SHA-256 is expected. */
zc_status zc_spirv_blob_decode(const void *data, size_t size, const uint8_t expected[32],
                               uint8_t **spirv, size_t *spirv_size, char *reason,
                               size_t reason_size);

#endif
