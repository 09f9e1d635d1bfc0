/* Finding the macros a key cannot hold (opencl_c_macros.h) as clang's lexer
 * sees tokens: comments and string or character literals (which end at a
 * line end when unterminated, as in inactive blocks) hide them; an
 * identifier anywhere else counts, under #if 0 too. */
#include "opencl_c_macros.h"

#include <stdbool.h>
#include <string.h>

static const char *const unkeyable[] = {
    "__TIME__",      "__DATE__",      "__TIMESTAMP__",  "__FILE__",
    "__FILE_NAME__", "__BASE_FILE__", "__builtin_FILE", "__builtin_FILE_NAME",
};

static bool is_identifier_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || (unsigned char)c >= 0x80;
}

static const char *unkeyable_name(const char *word, size_t length)
{
    for (size_t i = 0; i < sizeof unkeyable / sizeof unkeyable[0]; i++)
        if (strlen(unkeyable[i]) == length && memcmp(word, unkeyable[i], length) == 0)
            return unkeyable[i];
    return NULL;
}

/* Past a comment or literal starting at i; i itself when none starts. */
static size_t skip_hidden(const char *text, size_t size, size_t i)
{
    if (i + 1 < size && text[i] == '/' && text[i + 1] == '/') {
        const char *end = memchr(text + i, '\n', size - i);
        return end == NULL ? size : (size_t)(end - text);
    }
    if (i + 1 < size && text[i] == '/' && text[i + 1] == '*') {
        for (size_t j = i + 2; j + 1 < size; j++)
            if (text[j] == '*' && text[j + 1] == '/')
                return j + 2;
        return size;
    }
    if (text[i] != '"' && text[i] != '\'')
        return i;
    size_t j = i + 1;
    while (j < size && text[j] != text[i] && text[j] != '\n' && text[j] != '\r')
        j += text[j] == '\\' && j + 1 < size ? 2 : 1;
    return j < size && text[j] == text[i] ? j + 1 : j;
}

const char *zc_opencl_c_unkeyable_macro(const char *text, size_t size)
{
    for (size_t i = 0; i < size;) {
        size_t past = skip_hidden(text, size, i);
        if (past != i) {
            i = past;
            continue;
        }
        if (!is_identifier_char(text[i])) {
            i++;
            continue;
        }
        size_t end = i;
        while (end < size && is_identifier_char(text[end]))
            end++;
        const char *name = text[i] == '_' ? unkeyable_name(text + i, end - i) : NULL;
        if (name != NULL)
            return name;
        i = end;
    }
    return NULL;
}
