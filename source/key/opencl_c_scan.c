/* Finding #include references in OpenCL C text (opencl_c_scan.h).
 *
 * First a logical copy is made as clang's lexer sees the bytes before it
 * splits tokens: a backslash (or the ??/ trigraph; OpenCL C has trigraphs
 * in clang's non-GNU language modes) followed by optional horizontal white
 * space and a line end joins two lines, as clang accepts it (with a warning
 * for the white space). ??= and %: become '#'. Then the copy is walked past
 * comments and string or character literals as clang lexes them
 * (opencl_c_lex.c), and every '#' is looked at: white space and block
 * comments may stand between it and the directive's name, and between the
 * name and its operand; after the operand the walk goes on past its closing
 * character, so a quote or "//" in a header name starts nothing. A '#'
 * anywhere counts, not only at the start of a line (false finds only cost
 * keyed bytes). Where the reading of comments and literals could differ
 * from clang's, nothing is skipped and comments and literals are scanned as
 * code, which finds more, never less: a text with a trigraph (clang reads
 * them in some language modes only, and ??/ or ??' move where a literal or
 * comment ends), or what C++ for OpenCL lexes another way (see
 * zc_opencl_c_walk), or a backslash in a header name (clang skips escapes
 * there). One walk reads the text and keeps the names it finds; when it
 * meets such a place, a second walk reads it all again as code. The names
 * are passed on once the reading is over, so each is passed once. */
#include "opencl_c_scan.h"

#include "opencl_c_lex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scanner {
    const char *text;
    size_t size;
    zc_include_fn each; /* or NULL: words only */
    zc_word_fn word;    /* or NULL */
    void *context;
    char *reason;
    size_t reason_size;
    zc_lex_walk *walk;
    /* The names found, passed to each after the walk. */
    zc_include_ref *found;
    size_t found_count, found_capacity;
} scanner;

static bool is_horizontal_space(char c)
{
    return c == ' ' || c == '\t' || c == '\v' || c == '\f';
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

/* The bytes that may begin a splice ('\\', "??/"), a trigraph or a digraph. */
static const bool begins_a_change[256] = {['\\'] = true, ['?'] = true, [':'] = true};

/* The text with splices removed and '#' for its digraph and trigraph. */
char *zc_opencl_c_logical_text(const char *in, size_t size, size_t *out_size)
{
    char *out = malloc(size > 0 ? size : 1);
    if (out == NULL)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < size;) {
        /* Bytes that begin no splice, trigraph or digraph go as they are. */
        size_t run = 0;
        while (i + run < size && !begins_a_change[(unsigned char)in[i + run]])
            run++;
        memcpy(out + n, in + i, run);
        n += run;
        i += run;
        if (i == size)
            break;
        size_t splice = splice_length(in, size, i);
        if (splice > 0) {
            i += splice;
        } else if (i + 2 < size && in[i] == '?' && in[i + 1] == '?' && in[i + 2] == '=') {
            out[n++] = '#';
            i += 3;
        } else if (in[i] == ':' && n > 0 && out[n - 1] == '%') {
            out[n - 1] = '#'; /* clang reads %: across a splice too */
            i++;
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
    while (i < s->size && zc_opencl_c_is_identifier_char(s->text[i]))
        i++;
    return i;
}

static bool word_is(const scanner *s, size_t start, size_t end, const char *word)
{
    size_t length = strlen(word);
    return end - start == length && memcmp(s->text + start, word, length) == 0;
}

/* A header name's operand that may end elsewhere for clang: a backslash in
 * it (clang skips escapes in header names). */
static zc_status unless_unsure(const scanner *s, size_t open, size_t close)
{
    if (!s->walk->skip_hidden || memchr(s->text + open, '\\', close - open) == NULL)
        return ZC_OK;
    s->walk->unsure = true;
    return ZC_NOT_CACHEABLE;
}

/* Where the header name opened at i ends: its closing character, a line
 * end or the end of text; with escaped, a backslash takes the next
 * character with it, as clang reads a name. */
static size_t name_end(const scanner *s, size_t i, bool escaped)
{
    char close = s->text[i] == '"' ? '"' : '>';
    size_t j = i + 1;
    while (j < s->size && s->text[j] != close && line_end_length(s->text, s->size, j) == 0)
        j += escaped && s->text[j] == '\\' && j + 1 < s->size &&
                     line_end_length(s->text, s->size, j + 1) == 0
                 ? 2
                 : 1;
    return j;
}

static zc_status keep_name(scanner *s, size_t open, size_t close, bool next, const char *what)
{
    zc_include_ref ref = {s->text + open + 1, close - open - 1, s->text[open] == '<', next};
    if (memchr(ref.name, '\0', ref.length) != NULL)
        return zc_explain(ZC_NOT_CACHEABLE, s->reason, s->reason_size,
                          "%s names a file with a NUL byte", what);
    if (s->found_count == s->found_capacity) {
        size_t capacity = 2 * s->found_capacity + 8;
        zc_include_ref *grown = realloc(s->found, capacity * sizeof(*grown));
        if (grown == NULL)
            return ZC_ERR_NOMEM;
        s->found = grown;
        s->found_capacity = capacity;
    }
    s->found[s->found_count++] = ref;
    return ZC_OK;
}

/* The operand at i: "name" or <name> on one line, which is passed on;
 * *resume is where the walk goes on (past its closing character). A line
 * end (or end of text, or a line comment) there is an empty directive, an
 * error the compiler reports from the keyed text alone; an unterminated
 * name too (a lone '<' is a token, a lone '"' a literal to the line end).
 * Anything else is a macro to expand: not cacheable (when looking for
 * includes). */
static zc_status take_operand(scanner *s, size_t i, bool next, const char *what, size_t *resume)
{
    *resume = i;
    if (i >= s->size || line_end_length(s->text, s->size, i) > 0 ||
        (i + 1 < s->size && s->text[i] == '/' && s->text[i + 1] == '/'))
        return ZC_OK;
    char open = s->text[i];
    if (open != '"' && open != '<') {
        size_t end = identifier_end(s, i);
        if (s->each == NULL)
            return ZC_OK;
        return zc_explain(ZC_NOT_CACHEABLE, s->reason, s->reason_size,
                          "%s names its file through a macro (%.*s): what it includes depends "
                          "on the macros",
                          what, (int)(end > i && end - i < 64 ? end - i : 1), s->text + i);
    }
    size_t j = name_end(s, i, false);
    if (j >= s->size || line_end_length(s->text, s->size, j) > 0) {
        *resume = open == '"' ? j : i + 1;
        return ZC_OK;
    }
    *resume = j + 1;
    zc_status status = unless_unsure(s, i, j);
    if (status == ZC_OK && s->each != NULL)
        status = keep_name(s, i, j, next, what);
    size_t escaped = name_end(s, i, true);
    if (status == ZC_OK && s->each != NULL && escaped != j && escaped < s->size &&
        line_end_length(s->text, s->size, escaped) == 0)
        status = keep_name(s, i, escaped, next, what); /* clang's reading */
    return status;
}

/* After '#' at i: a directive that includes a file, or nothing. */
static zc_status directive_at(scanner *s, size_t i, size_t *resume)
{
    size_t start = skip_space(s, i + 1);
    size_t end = identifier_end(s, start);
    *resume = i + 1;
    bool next = word_is(s, start, end, "include_next");
    if (!next && !word_is(s, start, end, "include") && !word_is(s, start, end, "import") &&
        !word_is(s, start, end, "embed"))
        return ZC_OK;
    return take_operand(s, skip_space(s, end), next, "#include", resume);
}

/* Whether the name at i is the operand of defined, #ifdef or #ifndef (a
 * feature test); elsewhere a bare __has_include may be a macro's body that
 * clang expands into a real test (#define H __has_include). */
static bool tests_the_feature(const scanner *s, size_t i)
{
    while (i > 0 && (is_horizontal_space(s->text[i - 1]) || s->text[i - 1] == '('))
        i--;
    size_t start = i;
    while (start > 0 && zc_opencl_c_is_identifier_char(s->text[start - 1]))
        start--;
    return word_is(s, start, i, "defined") || word_is(s, start, i, "ifdef") ||
           word_is(s, start, i, "ifndef") || word_is(s, start, i, "elifdef") ||
           word_is(s, start, i, "elifndef");
}

/* Whether [i, end) begins __has_include or __has_embed: token pasting
 * (a##b) can complete it. */
static bool begins_a_test(const scanner *s, size_t i, size_t end)
{
    return s->text[i] == '_' && (strncmp(s->text + i, "__has_include_next", end - i) == 0 ||
                                 strncmp(s->text + i, "__has_embed", end - i) == 0);
}

/* At an identifier [i, end) that begins with '_' (the walk visits no
 * other): __has_include("name") and friends. A mention without '('
 * (#ifdef __has_include) tests the feature only. */
static zc_status has_include_at(scanner *s, size_t i, size_t end, size_t *resume)
{
    *resume = end;
    bool next = word_is(s, i, end, "__has_include_next");
    if (!next && !word_is(s, i, end, "__has_include") && !word_is(s, i, end, "__has_embed"))
        return s->each == NULL || !begins_a_test(s, i, end)
                   ? ZC_OK
                   : zc_explain(ZC_NOT_CACHEABLE, s->reason, s->reason_size,
                                "%.*s may make __has_include through a macro (token pasting)",
                                (int)(end - i), s->text + i);
    size_t open = skip_space(s, end);
    if (open >= s->size || s->text[open] != '(')
        return s->each == NULL || tests_the_feature(s, i)
                   ? ZC_OK
                   : zc_explain(ZC_NOT_CACHEABLE, s->reason, s->reason_size,
                                "__has_include named through a macro");
    size_t operand = skip_space(s, open + 1);
    if (s->each != NULL && operand < s->size &&
        (line_end_length(s->text, s->size, operand) > 0 || s->text[operand] == ')'))
        return zc_explain(ZC_NOT_CACHEABLE, s->reason, s->reason_size,
                          "__has_include with no file name");
    zc_status status = take_operand(s, operand, next, "__has_include", resume);
    if (*resume == operand)
        *resume = end;
    return status;
}

static zc_status visit(void *context, size_t at, size_t end, size_t *resume)
{
    scanner *s = context;
    if (s->text[at] == '#')
        return directive_at(s, at, resume);
    if (s->word != NULL) {
        zc_status status = s->word(s->context, s->text + at, end - at);
        if (status != ZC_OK)
            return status;
    }
    return has_include_at(s, at, end, resume);
}

static bool has_pair(const char *text, size_t size, char first, char second)
{
    for (const char *at = text, *end = text + size;
         (at = memchr(at, first, (size_t)(end - at))) != NULL && end - at > 1; at++)
        if (at[1] == second)
            return true;
    return false;
}

static bool has_splice(const char *text, size_t size)
{
    for (const char *at = text, *end = text + size;
         (at = memchr(at, '\\', (size_t)(end - at))) != NULL; at++)
        if (splice_length(text, size, (size_t)(at - text)) > 0)
            return true;
    return false;
}

/* Whether text is its own logical text: what zc_opencl_c_logical_text
 * rewrites is a splice ('\\' at a line end), or needs "??" or "%:", which
 * most sources do not have. */
static bool is_logical(const char *text, size_t size)
{
    return size == 0 || (!has_splice(text, size) && !has_pair(text, size, '?', '?') &&
                         !has_pair(text, size, '%', ':'));
}

/* Walks the logical text past comments and literals, and again as code
 * when that reading is not sure; then passes the names found on. */
static zc_status scan(scanner *s, const char *text, size_t size)
{
    char *copy = NULL;
    s->text = text;
    s->size = size;
    if (!is_logical(text, size) &&
        (s->text = copy = zc_opencl_c_logical_text(text, size, &s->size)) == NULL)
        return ZC_ERR_NOMEM;
    zc_lex_walk walk = {s->text, s->size, !zc_opencl_c_has_trigraph(text, size), visit, s, false};
    s->walk = &walk;
    zc_status status = zc_opencl_c_walk(&walk);
    if (walk.unsure) {
        s->found_count = 0;
        walk.skip_hidden = false;
        status = zc_opencl_c_walk(&walk);
    }
    for (size_t i = 0; status == ZC_OK && i < s->found_count; i++)
        status = s->each(s->context, &s->found[i]);
    free(s->found);
    free(copy);
    return status;
}

zc_status zc_opencl_c_scan_all(const char *text, size_t size, zc_include_fn each, zc_word_fn word,
                               void *context, char *reason, size_t reason_size)
{
    if ((text == NULL && size > 0) || each == NULL)
        return ZC_ERR_INVALID_ARG;
    scanner s = {.each = each,
                 .word = word,
                 .context = context,
                 .reason = reason,
                 .reason_size = reason_size};
    return scan(&s, text, size);
}

zc_status zc_opencl_c_scan(const char *text, size_t size, zc_include_fn each, void *context,
                           char *reason, size_t reason_size)
{
    return zc_opencl_c_scan_all(text, size, each, NULL, context, reason, reason_size);
}

zc_status zc_opencl_c_scan_words(const char *text, size_t size, zc_word_fn word, void *context)
{
    if ((text == NULL && size > 0) || word == NULL)
        return ZC_ERR_INVALID_ARG;
    char reason[8];
    scanner s = {.word = word, .context = context, .reason = reason, .reason_size = sizeof reason};
    return scan(&s, text, size);
}
