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

const char *zc_opencl_c_unkeyable_word(const char *word, size_t length)
{
    if (length == 0 || word[0] != '_')
        return NULL;
    for (size_t i = 0; i < sizeof unkeyable / sizeof unkeyable[0]; i++)
        if (strlen(unkeyable[i]) >= length && memcmp(word, unkeyable[i], length) == 0)
            return unkeyable[i];
    return NULL;
}

/* Stops the scan at an unkeyable name, kept in *context. */
static zc_status find_unkeyable(void *context, const char *word, size_t length)
{
    const char **found = context;
    *found = zc_opencl_c_unkeyable_word(word, length);
    return *found != NULL ? ZC_NOT_CACHEABLE : ZC_OK;
}

zc_status zc_opencl_c_unkeyable_macro(const char *text, size_t size, const char **macro)
{
    *macro = NULL;
    zc_status status = zc_opencl_c_scan_words(text, size, find_unkeyable, macro);
    return *macro != NULL ? ZC_OK : status;
}
