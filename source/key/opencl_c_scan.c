/* Finding #include references in OpenCL C text (opencl_c_scan.h).
 *
 * First a logical copy is made as clang's lexer sees the bytes before it
 * splits tokens: a backslash (or the ??/ trigraph; OpenCL C has trigraphs
 * in clang's non-GNU language modes) followed by optional horizontal white
 * space and a line end joins two lines, as clang accepts it (with a warning
 * for the white space). ??= and %: become '#'. Then every '#' is looked at:
 * white space and block comments may stand between it and the directive's
 * name, and between the name and its operand. A '#' anywhere counts, not
 * only at the start of a line, because what comes before it on its line may
 * be a comment spanning lines; false finds only cost keyed bytes. */
#include "opencl_c_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scanner {
    const char *text;
    size_t size;
    zc_include_fn each;
    void *context;
    char *reason;
    size_t reason_size;
} scanner;

static bool is_horizontal_space(char c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

static bool is_identifier_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || (unsigned char)c >= 0x80;
}

/* The length of a line end at in[i] ("\n", "\r\n" or "\r"), 0 if none. */
static size_t line_end_length(const char *in, size_t size, size_t i)
{
    if (i < size && in[i] == '\n')
        return 1;
    if (i < size && in[i] == '\r')
        return i + 1 < size && in[i + 1] == '\n' ? 2 : 1;
    return 0;
}

/* How many bytes a splice starting at in[i] takes (backslash or ??/,
 * horizontal white space, a line end), 0 when there is none. */
static size_t splice_length(const char *in, size_t size, size_t i)
{
    size_t j;
    if (in[i] == '\\')
        j = i + 1;
    else if (in[i] == '?' && i + 2 < size && in[i + 1] == '?' && in[i + 2] == '/')
        j = i + 3;
    else
        return 0;
    while (j < size && is_horizontal_space(in[j]))
        j++;
    size_t end = line_end_length(in, size, j);
    return end > 0 ? j + end - i : 0;
}

/* The text with splices removed and '#' for its digraph and trigraph. */
char *zc_opencl_c_logical_text(const char *in, size_t size, size_t *out_size)
{
    char *out = malloc(size > 0 ? size : 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < size;) {
        size_t splice = splice_length(in, size, i);
        if (splice > 0) {
            i += splice;
        } else if (i + 2 < size && in[i] == '?' && in[i + 1] == '?' && in[i + 2] == '=') {
            out[n++] = '#';
            i += 3;
        } else if (i + 1 < size && in[i] == '%' && in[i + 1] == ':') {
            out[n++] = '#';
            i += 2;
        } else {
            out[n++] = in[i++];
        }
    }
    *out_size = n;
    return out;
}

/* Past horizontal white space and block comments (which may span lines:
 * the preprocessor sees one space). Stops at anything else, a line end or
 * a line comment included. */
static size_t skip_space(const scanner *s, size_t i)
{
    for (;;) {
        while (i < s->size && is_horizontal_space(s->text[i]))
            i++;
        if (i + 1 < s->size && s->text[i] == '/' && s->text[i + 1] == '*') {
            const char *end = NULL;
            for (size_t j = i + 2; j + 1 < s->size; j++)
                if (s->text[j] == '*' && s->text[j + 1] == '/') {
                    end = s->text + j;
                    break;
                }
            if (end == NULL)
                return s->size;
            i = (size_t)(end - s->text) + 2;
            continue;
        }
        return i;
    }
}

static size_t identifier_end(const scanner *s, size_t i)
{
    while (i < s->size && is_identifier_char(s->text[i]))
        i++;
    return i;
}

static bool word_is(const scanner *s, size_t start, size_t end, const char *word)
{
    size_t length = strlen(word);
    return end - start == length && memcmp(s->text + start, word, length) == 0;
}

/* The operand at i: "name" or <name> on one line, which is passed on. A
 * line end (or end of text, or a line comment) there is an empty directive,
 * an error the compiler reports from the keyed text alone; an unterminated
 * name too. Anything else is a macro to expand: not cacheable. */
static zc_status take_operand(const scanner *s, size_t i, bool next, const char *what)
{
    if (i >= s->size || line_end_length(s->text, s->size, i) > 0 ||
        (i + 1 < s->size && s->text[i] == '/' && s->text[i + 1] == '/'))
        return ZC_OK;
    char open = s->text[i];
    if (open != '"' && open != '<') {
        size_t end = identifier_end(s, i);
        return zc_explain(ZC_NOT_CACHEABLE, s->reason, s->reason_size,
                          "%s names its file through a macro (%.*s): what it includes depends "
                          "on the macros",
                          what, (int)(end > i && end - i < 64 ? end - i : 1), s->text + i);
    }
    char close = open == '"' ? '"' : '>';
    size_t j = i + 1;
    while (j < s->size && s->text[j] != close && line_end_length(s->text, s->size, j) == 0)
        j++;
    if (j >= s->size || s->text[j] != close)
        return ZC_OK;
    zc_include_ref ref = {s->text + i + 1, j - i - 1, open == '<', next};
    if (memchr(ref.name, '\0', ref.length) != NULL)
        return zc_explain(ZC_NOT_CACHEABLE, s->reason, s->reason_size,
                          "%s names a file with a NUL byte", what);
    return s->each(s->context, &ref);
}

/* After '#' at i: a directive that includes a file, or nothing. */
static zc_status directive_at(const scanner *s, size_t i, size_t *resume)
{
    size_t start = skip_space(s, i + 1);
    size_t end = identifier_end(s, start);
    *resume = i + 1;
    bool next = word_is(s, start, end, "include_next");
    if (!next && !word_is(s, start, end, "include") && !word_is(s, start, end, "import") &&
        !word_is(s, start, end, "embed"))
        return ZC_OK;
    *resume = end;
    return take_operand(s, skip_space(s, end), next, "#include");
}

/* At an identifier starting at i: __has_include("name") and friends. A
 * mention without '(' (#ifdef __has_include) tests the feature only. */
static zc_status has_include_at(const scanner *s, size_t i, size_t end)
{
    bool next = word_is(s, i, end, "__has_include_next");
    if (!next && !word_is(s, i, end, "__has_include") && !word_is(s, i, end, "__has_embed"))
        return ZC_OK;
    size_t open = skip_space(s, end);
    if (open >= s->size || s->text[open] != '(')
        return ZC_OK;
    size_t operand = skip_space(s, open + 1);
    if (operand < s->size &&
        (line_end_length(s->text, s->size, operand) > 0 || s->text[operand] == ')'))
        return zc_explain(ZC_NOT_CACHEABLE, s->reason, s->reason_size,
                          "__has_include with no file name");
    return take_operand(s, operand, next, "__has_include");
}

static zc_status scan(const scanner *s)
{
    for (size_t i = 0; i < s->size;) {
        zc_status status = ZC_OK;
        size_t resume = i + 1;
        if (s->text[i] == '#') {
            status = directive_at(s, i, &resume);
        } else if (s->text[i] == '_' && (i == 0 || !is_identifier_char(s->text[i - 1]))) {
            resume = identifier_end(s, i);
            status = has_include_at(s, i, resume);
        }
        if (status != ZC_OK)
            return status;
        i = resume;
    }
    return ZC_OK;
}

zc_status zc_opencl_c_scan(const char *text, size_t size, zc_include_fn each, void *context,
                           char *reason, size_t reason_size)
{
    if ((text == NULL && size > 0) || each == NULL)
        return ZC_ERR_INVALID_ARG;
    scanner s = {NULL, 0, each, context, reason, reason_size};
    char *copy = zc_opencl_c_logical_text(text, size, &s.size);
    if (copy == NULL)
        return ZC_ERR_NOMEM;
    s.text = copy;
    zc_status status = scan(&s);
    free(copy);
    return status;
}
