/* Macros whose expansion a key cannot hold: the time of the compile
 * (__TIME__, __DATE__, __TIMESTAMP__) and the name the compiler gives the
 * file (__FILE__ and its kin: Intel's front end names a program's source by
 * a per-process count of builds, PoCL by a random temporary file). Internal
 * to the core. */
#ifndef ZECACHE_OPENCL_C_MACROS_H
#define ZECACHE_OPENCL_C_MACROS_H

#include <stddef.h>

#include "zecache/status.h"

/* Sets *macro to the first such macro named in text (size bytes, as given)
 * outside comments and literals as zc_opencl_c_scan reads them, inactive
 * #if blocks included; NULL when none is. ZC_ERR_NOMEM. */
zc_status zc_opencl_c_unkeyable_macro(const char *text, size_t size, const char **macro);

/* The macro a word of text (length bytes) names or may become: the word
 * itself, or the beginning of one, since token pasting (a##b) can build the
 * name from pieces the text names apart. NULL when it names none. */
const char *zc_opencl_c_unkeyable_word(const char *word, size_t length);

#endif
