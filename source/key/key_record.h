/* The key builder's record and trace, for the parts of the key written in
 * files of their own (OpenCL C with its headers, a driver's compiler).
 * Internal to the core; key.c documents the record's encoding. */
#ifndef ZECACHE_KEY_RECORD_H
#define ZECACHE_KEY_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/key.h"

/* Tags of those parts, apart from key.c's own (which stay below 32). */
enum zc_key_part_tag {
    ZC_KEY_TAG_OPENCL_C = 32,       /* u64 size, SHA-256 of the source */
    ZC_KEY_TAG_OPENCL_C_OPTIONS,    /* u8 0 (NULL) | u8 1, the options' bytes */
    ZC_KEY_TAG_OPENCL_C_CWD,        /* the working directory (-g records it) */
    ZC_KEY_TAG_OPENCL_C_LOOKUP,     /* u8 angled, u8 every candidate, u32 length, name,
                                       the includer's directory */
    ZC_KEY_TAG_OPENCL_C_CANDIDATE,  /* u8 state, u64 size, SHA-256 (found),
                                       the path tried */
    ZC_KEY_TAG_OPENCL_C_DRIVER,     /* u8 zc_opencl_c_driver: whose search */
    ZC_KEY_TAG_DRIVER_LIBRARY = 40, /* a library of a driver's compiler */
    ZC_KEY_TAG_DRIVER_FILE,         /* u64 size, i64 mtime s, i64 ns, path */
    ZC_KEY_TAG_DRIVER_VARIABLE,     /* name=value */
};

/* ZC_OK when parts may be added; else what every adder returns. */
zc_status zc_key_part_usable(const zc_key_builder *builder);
/* The builder's list of files read, made at first use; NULL when out of
 * memory. */
struct zc_key_files *zc_key_builder_files(zc_key_builder *builder);
/* One field: tag, length, bytes; or its start, then its bytes in pieces
 * adding up to length. */
void zc_key_record_field(zc_key_builder *builder, uint32_t tag, const void *bytes, size_t size);
void zc_key_record_start(zc_key_builder *builder, uint32_t tag, uint64_t length);
void zc_key_record_more(zc_key_builder *builder, const void *bytes, size_t size);
/* The library encoding of key.c (zc_key_add_compiler_identity's), traced. */
void zc_key_record_library(zc_key_builder *builder, uint32_t tag,
                           const zc_library_identity *library);

/* Refuses the builder for good with the reason (as key.c's own parts do). */
zc_status zc_key_refuse(zc_key_builder *builder, zc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

bool zc_key_traced(const zc_key_builder *builder);
void zc_key_trace(zc_key_builder *builder, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void zc_key_trace_hex(zc_key_builder *builder, const void *bytes, size_t size);
void zc_key_trace_escaped(zc_key_builder *builder, const char *text, size_t length);

#endif
