/* Finding the macros a key cannot hold (opencl_c_macros.h) as clang's lexer
 * sees tokens, with the include scan's reading (opencl_c_scan.c): comments,
 * string or character literals and header names hide them where that
 * reading is sure; an identifier anywhere else counts, under #if 0 too. */
#include "opencl_c_macros.h"

#include <string.h>

#include "opencl_c_scan.h"

static const char *const unkeyable[] = {
    "__TIME__",      "__DATE__",      "__TIMESTAMP__",  "__FILE__",
    "__FILE_NAME__", "__BASE_FILE__", "__builtin_FILE", "__builtin_FILE_NAME",
};

/* Stops the scan at an unkeyable name, kept in *context, or at a word
 * that begins one: token pasting (a##b) can build the name from pieces the
 * text names apart, the first of them a prefix of it. */
static zc_status find_unkeyable(void *context, const char *word, size_t length)
{
    const char **found = context;
    if (word[0] != '_')
        return ZC_OK;
    for (size_t i = 0; i < sizeof unkeyable / sizeof unkeyable[0]; i++)
        if (strlen(unkeyable[i]) >= length && memcmp(word, unkeyable[i], length) == 0) {
            *found = unkeyable[i];
            return ZC_NOT_CACHEABLE;
        }
    return ZC_OK;
}

zc_status zc_opencl_c_unkeyable_macro(const char *text, size_t size, const char **macro)
{
    *macro = NULL;
    zc_status status = zc_opencl_c_scan_words(text, size, find_unkeyable, macro);
    return *macro != NULL ? ZC_OK : status;
}
