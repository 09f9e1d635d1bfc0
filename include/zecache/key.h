/* The cache key: SHA-256 over a canonical, versioned, length-prefixed record
 * of everything that decides a compile's result. */
#ifndef ZECACHE_KEY_H
#define ZECACHE_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/compiler_identity.h"
#include "zecache/identity.h"
#include "zecache/sha256.h"
#include "zecache/status.h"

#define ZC_KEY_SIZE 32
#define ZC_KEY_HEX_SIZE 65 /* 64 hex digits and a NUL */
/* 2: flags byte for byte; driver settings and settings files keyed.
 * 3: the parts common to a device's keys (compiler, driver, hardware,
 *    environment) come before the inputs, so they can be hashed once. */
#define ZC_KEY_FORMAT_VERSION 3

/* Which API's entry a key names. The kind is not hashed (the request's own
 * parts make the keys of the two APIs differ): it travels with the key so
 * every tier finds the entry under the name its API's driver would give it,
 * <64 hex>.l0_cache or <64 hex>.cl_cache, and is checked against the kind
 * the entry's header records. 0 is Level Zero: a zeroed key, a key
 * zc_key_from_hex parses and one zc_key_finish makes are Level Zero's. */
typedef enum zc_entry_kind {
    ZC_ENTRY_LEVEL_ZERO = 0,
    ZC_ENTRY_OPENCL = 1,
    ZC_ENTRY_KIND_COUNT,
} zc_entry_kind;

typedef struct zc_key {
    uint8_t bytes[ZC_KEY_SIZE];
    uint8_t kind; /* a zc_entry_kind */
} zc_key;

/* ".l0_cache" / ".cl_cache"; NULL for an unknown kind. */
const char *zc_entry_kind_suffix(zc_entry_kind kind);
/* "level-zero" / "opencl", for listings and messages; "unknown" otherwise. */
const char *zc_entry_kind_name(zc_entry_kind kind);

void zc_key_to_hex(const zc_key *key, char hex[ZC_KEY_HEX_SIZE]);
/* Accepts exactly 64 hex digits (either case). */
bool zc_key_from_hex(const char *hex, zc_key *key);
/* Same bytes and same kind. */
bool zc_key_equal(const zc_key *a, const zc_key *b);

/* Specialization constants as Level Zero passes them: ids and pointers to
 * values whose width only the SPIR-V declaration tells. */
typedef struct zc_spec_constants {
    uint32_t count;
    const uint32_t *ids;
    const void *const *values;
} zc_spec_constants;

typedef struct zc_key_builder zc_key_builder;

/* want_trace: also keep a readable trace of every part (BinaryCacheTrace). */
zc_status zc_key_builder_create(bool want_trace, zc_key_builder **out);
void zc_key_builder_destroy(zc_key_builder *builder);
/* A builder that continues from where from is now, so parts common to many
 * keys (the compiler, the driver, the hardware, the environment) are hashed
 * once. from is left as it was, but a traced one has its trace flushed: copy
 * a traced builder from one thread at a time. A refusal is copied with the
 * rest; a copy of a builder that recorded the environment checks again, at
 * zc_key_finish, that the IGC_* variables are still the snapshot's. */
zc_status zc_key_builder_copy(zc_key_builder *from, zc_key_builder **out);

/* Parts are recorded in the order added; callers add them in a fixed order.
 * Every function returns ZC_NOT_CACHEABLE (with zc_key_builder_reason) when the
 * input cannot be keyed safely; after that the builder stays refused. */

/* One SPIR-V input with its build flags (byte for byte, as the driver
 * splits them on single spaces; NULL and "" are distinct) and its
 * specialization constants (sorted by id, each value read
 * at the width its SPIR-V declaration gives; unknown or duplicate ids and
 * invalid SPIR-V are not cacheable). constants may be NULL. An input without a
 * SPIR-V header (five words, the magic number) is not cacheable either. */
zc_status zc_key_add_spirv(zc_key_builder *builder, const void *spirv, size_t spirv_size,
                           const char *build_flags, const zc_spec_constants *constants);
/* Whether size bytes at spirv have a SPIR-V header (five words, the magic
 * number in either order), which zc_key_add_spirv requires. */
bool zc_key_spirv_has_header(const void *spirv, size_t size);
/* zc_key_add_spirv of SPIR-V whose digest (zc_spirv_digest) is known (its header
 * checked), with no specialization constants: the same key, the bytes not
 * needed. */
zc_status zc_key_add_spirv_digested(zc_key_builder *builder, size_t spirv_size,
                                    const uint8_t digest[ZC_SHA256_SIZE], const char *build_flags);

/* Whose front end compiles OpenCL C: where it looks for headers. */
typedef enum zc_opencl_c_driver {
    ZC_OPENCL_C_ANY_DRIVER, /* unknown: every place either looks is keyed */
    ZC_OPENCL_C_IGC,        /* Intel's: -I directories, then the working directory */
    ZC_OPENCL_C_POCL,       /* PoCL's: the working directory (its -I.), then -I */
} zc_opencl_c_driver;

/* One OpenCL C source (size bytes, no NUL needed) with its build options
 * byte for byte (NULL and "" distinct), and every header it can include,
 * found as driver's front end finds them; ZC_NOT_CACHEABLE (with the
 * reason) when what it includes cannot be resolved exactly, or when it
 * names a macro whose expansion the key cannot hold (__TIME__, __FILE__).
 * The files looked at are kept with the builder (zc_key_builder_take_files). */
zc_status zc_key_add_opencl_c(zc_key_builder *builder, const char *source, size_t size,
                              const char *options, zc_opencl_c_driver driver);
/* How many OpenCL C sources this process keyed (for the tests). */
uint64_t zc_key_opencl_c_count(void);

/* The compiler's identity (IGC and its front end, see compiler_identity.h).
 * NULL or an empty identity is ZC_ERR_INVALID_ARG: an unidentified compiler
 * is never keyed. */
zc_status zc_key_add_compiler_identity(zc_key_builder *builder,
                                       const zc_compiler_identity *compiler);

/* The driver: its library's identity plus version and UUID from the API. */
zc_status zc_key_add_driver(zc_key_builder *builder, const zc_library_identity *library,
                            uint32_t driver_version, const uint8_t uuid[16]);

/* Hardware description bytes (device properties, IP version, ...). name says
 * what they are, for the trace; several may be added. */
zc_status zc_key_add_hardware(zc_key_builder *builder, const char *name, const void *bytes,
                              size_t size);

/* The process's snapshot of what the driver and the compiler read from the
 * environment (zecache/environment.h): the driver's settings, the IGC_*
 * variables, each as name=value sorted by name, and the settings files they
 * read. Not cacheable when the snapshot could not be taken. */
zc_status zc_key_add_environment(zc_key_builder *builder);

/* The variables names[0..count), which a driver reads at every build, as
 * this process has them now: name=value, or the name alone when unset. Not
 * cacheable when one differs from the first value this process was seen to
 * have for it (PoCL 3.1 keeps the first value it reads; 6.0 reads again). */
zc_status zc_key_add_build_variables(zc_key_builder *builder, const char *const *names,
                                     size_t count);

/* Finishes the record and writes the key, of kind ZC_ENTRY_LEVEL_ZERO (an
 * OpenCL caller sets key->kind after). Fails with ZC_NOT_CACHEABLE if any
 * part was refused. */
zc_status zc_key_finish(zc_key_builder *builder, zc_key *key);

/* Why the builder refused, or NULL if it did not. */
const char *zc_key_builder_reason(const zc_key_builder *builder);
/* The readable trace (one "---- part ----" section per part), or NULL when
 * tracing was not requested. Valid until the builder is destroyed. */
const char *zc_key_builder_trace(const zc_key_builder *builder);
/* The files the key read (zecache/key_files.h), handed to the caller, who
 * destroys them; NULL when it read none. */
struct zc_key_files *zc_key_builder_take_files(zc_key_builder *builder);

#endif
