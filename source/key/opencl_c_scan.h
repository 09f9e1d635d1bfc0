/* The names OpenCL C text can include, found without preprocessing it:
 * every #include, #include_next, #import and #embed (also spelt with the
 * %: digraph or the ??= trigraph, comments between the parts, lines spliced
 * with a backslash, or ??/) and every __has_include, __has_include_next and
 * __has_embed with a name outside comments and string or character
 * literals, wherever they are: in inactive #if blocks too, since reading
 * the text as the preprocessor does would need the macros and the options;
 * in comments and literals too where clang's reading of those could differ
 * (opencl_c_scan.c). So it may find more than the compiler reads, never
 * less. Internal to the core. */
#ifndef ZECACHE_OPENCL_C_SCAN_H
#define ZECACHE_OPENCL_C_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include "zecache/status.h"

typedef struct zc_include_ref {
    const char *name; /* into the scanner's own copy, valid during the call */
    size_t length;
    bool angled; /* <name>: not searched in the includer's directory */
    bool next;   /* #include_next, __has_include_next: the search goes on past a match */
} zc_include_ref;

/* Returns ZC_OK to go on; anything else stops the scan and is returned. */
typedef zc_status (*zc_include_fn)(void *context, const zc_include_ref *ref);

/* Calls each for every reference in text (size bytes, NULs allowed), in
 * order, once text was read through. ZC_NOT_CACHEABLE with the reason when a directive's operand is
 * not a literal name (#include MACRO: what it names depends on the macros), or a name holds a NUL;
 * ZC_ERR_NOMEM. */
zc_status zc_opencl_c_scan(const char *text, size_t size, zc_include_fn each, void *context,
                           char *reason, size_t reason_size);

typedef zc_status (*zc_word_fn)(void *context, const char *word, size_t length);

/* Calls word for every identifier that begins with '_' (every macro a key
 * cannot hold does: opencl_c_macros.h) in text that the include
 * scan reads as code: outside comments, literals and header names, or
 * everywhere where that reading is not sure (then a word before the place
 * that makes it unsure is passed twice). ZC_ERR_NOMEM, or the first status
 * other than ZC_OK word returns. */
zc_status zc_opencl_c_scan_words(const char *text, size_t size, zc_word_fn word, void *context);

/* Both in one reading of text: word (NULL: none) for every word as
 * zc_opencl_c_scan_words, then, when every word gave ZC_OK and no operand
 * was refused, each for every reference as zc_opencl_c_scan. */
zc_status zc_opencl_c_scan_all(const char *text, size_t size, zc_include_fn each, zc_word_fn word,
                               void *context, char *reason, size_t reason_size);

/* The text as clang's lexer reads it before it splits tokens (splices
 * joined, '#' for its digraph and trigraph), malloc'd, *out_size bytes;
 * NULL when out of memory. */
char *zc_opencl_c_logical_text(const char *text, size_t size, size_t *out_size);

#endif
