/* Walking OpenCL C text as clang's lexer reads it, past comments and
 * string or character literals, for the scans that look for names in it
 * (opencl_c_scan.c, opencl_c_macros.c). Internal to the core. */
#ifndef ZECACHE_OPENCL_C_LEX_H
#define ZECACHE_OPENCL_C_LEX_H

#include <stdbool.h>
#include <stddef.h>

#include "zecache/status.h"

/* Called at a '#' (end == at + 1) or an identifier [at, end) that begins
 * with '_' (every name the scans look for does: the reserved __ names)
 * outside comments and literals; sets *resume (> at) to go on from, or
 * returns anything but ZC_OK to stop the walk with it. */
typedef zc_status (*zc_lex_fn)(void *context, size_t at, size_t end, size_t *resume);

typedef struct zc_lex_walk {
    const char *text; /* logical text (zc_opencl_c_logical_text) */
    size_t size;
    bool skip_hidden; /* false: comments and literals are read as code */
    zc_lex_fn visit;
    void *context;
    bool unsure; /* set when a reading could differ from clang's: see below */
} zc_lex_walk;

/* Whether the original text holds a trigraph (??= ??/ ??' ??( ??) ??! ??<
 * ??> ??-): clang reads it in some language modes and not in others, so
 * where comments and literals end is not known. */
bool zc_opencl_c_has_trigraph(const char *text, size_t size);

/* Visits walk->text. With skip_hidden, stops with ZC_NOT_CACHEABLE and
 * walk->unsure when it meets what another language mode could lex another
 * way (a quote after an identifier or number: C++ digit separators and raw
 * strings; a backslash outside a literal); the caller then walks again
 * without skipping. */
zc_status zc_opencl_c_walk(zc_lex_walk *walk);

/* What each byte can begin for the walk: bits of ZC_OPENCL_C_*. */
extern const unsigned char zc_opencl_c_char_class[256];
#define ZC_OPENCL_C_IDENTIFIER 1 /* a letter, digit, '_', '$' or a byte >= 0x80 */
#define ZC_OPENCL_C_MARK 2       /* '#', or what may begin a comment or literal */

static inline bool zc_opencl_c_is_identifier_char(char c)
{
    return (zc_opencl_c_char_class[(unsigned char)c] & ZC_OPENCL_C_IDENTIFIER) != 0;
}

#endif
