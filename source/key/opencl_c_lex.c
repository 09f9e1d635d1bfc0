/* Walking OpenCL C text past comments and literals (opencl_c_lex.h), as
 * clang's lexer does on the logical text: a line comment ends at the line
 * end (splices are already joined, so a backslash at its end swallowed the
 * next line), a block comment at the next star-slash or the end of text; a
 * string or character literal at the next unescaped same quote or the line
 * end, whichever comes first (clang ends an unterminated one there, in
 * skipped #if blocks too); encoding prefixes (L u U u8) change nothing.
 * Where C and C++ for OpenCL lex apart (digit separators, raw strings) the
 * walk gives up, so that the caller reads everything as code instead. */
#include "opencl_c_lex.h"

#include <string.h>

#define ID ZC_OPENCL_C_IDENTIFIER
#define ID4 ID, ID, ID, ID
#define ID16 ID4, ID4, ID4, ID4
#define MARK ZC_OPENCL_C_MARK
const unsigned char zc_opencl_c_char_class[256] = {
    ['#'] = MARK, ['/'] = MARK, ['"'] = MARK, ['\''] = MARK, ['\\'] = MARK, ['$'] = ID,
    ['_'] = ID,   ['0'] = ID,   ['1'] = ID,   ['2'] = ID,    ['3'] = ID,    ['4'] = ID,
    ['5'] = ID,   ['6'] = ID,   ['7'] = ID,   ['8'] = ID,    ['9'] = ID,    ['a'] = ID,
    ['b'] = ID,   ['c'] = ID,   ['d'] = ID,   ['e'] = ID,    ['f'] = ID,    ['g'] = ID,
    ['h'] = ID,   ['i'] = ID,   ['j'] = ID,   ['k'] = ID,    ['l'] = ID,    ['m'] = ID,
    ['n'] = ID,   ['o'] = ID,   ['p'] = ID,   ['q'] = ID,    ['r'] = ID,    ['s'] = ID,
    ['t'] = ID,   ['u'] = ID,   ['v'] = ID,   ['w'] = ID,    ['x'] = ID,    ['y'] = ID,
    ['z'] = ID,   ['A'] = ID,   ['B'] = ID,   ['C'] = ID,    ['D'] = ID,    ['E'] = ID,
    ['F'] = ID,   ['G'] = ID,   ['H'] = ID,   ['I'] = ID,    ['J'] = ID,    ['K'] = ID,
    ['L'] = ID,   ['M'] = ID,   ['N'] = ID,   ['O'] = ID,    ['P'] = ID,    ['Q'] = ID,
    ['R'] = ID,   ['S'] = ID,   ['T'] = ID,   ['U'] = ID,    ['V'] = ID,    ['W'] = ID,
    ['X'] = ID,   ['Y'] = ID,   ['Z'] = ID,   [0x80] = ID16, ID16,          ID16,
    ID16,         ID16,         ID16,         ID16,          ID16,
};

bool zc_opencl_c_has_trigraph(const char *text, size_t size)
{
    if (size < 3)
        return false;
    for (const char *at = text, *end = text + size;
         (at = memchr(at, '?', (size_t)(end - at))) != NULL && end - at > 2; at++)
        if (at[1] == '?' && at[2] != '\0' && strchr("=/'()!<>-", at[2]) != NULL)
            return true;
    return false;
}

static bool is_line_end(char c)
{
    return c == '\n' || c == '\r';
}

/* Whether the identifier or number that ends just before at is exactly one
 * of words (space separated); false when at follows no identifier char. */
static bool word_before_is(const char *text, size_t at, const char *words)
{
    size_t start = at;
    while (start > 0 && at - start < 4 && zc_opencl_c_is_identifier_char(text[start - 1]))
        start--;
    if (start > 0 && zc_opencl_c_is_identifier_char(text[start - 1]))
        return false;
    size_t length = at - start;
    for (const char *w = words; *w != '\0';) {
        size_t word_length = strcspn(w, " ");
        if (word_length == length && memcmp(w, text + start, length) == 0)
            return true;
        w += word_length + (w[word_length] == ' ');
    }
    return false;
}

/* A quote C and C++ for OpenCL may lex apart: after a number or an
 * identifier other than an encoding prefix (a digit separator in C++), or
 * a raw string's prefix. */
static bool quote_is_unsure(const char *text, size_t at)
{
    if (at == 0 || !zc_opencl_c_is_identifier_char(text[at - 1]))
        return false;
    if (text[at] == '\'')
        return !word_before_is(text, at, "L u U u8");
    return word_before_is(text, at, "R LR uR UR u8R");
}

static size_t literal_end(const char *text, size_t size, size_t at)
{
    size_t j = at + 1;
    while (j < size && text[j] != text[at] && !is_line_end(text[j]))
        j += text[j] == '\\' && j + 1 < size && !is_line_end(text[j + 1]) ? 2 : 1;
    return j < size && text[j] == text[at] ? j + 1 : j;
}

/* Past the comment or literal at at; at when none starts there. */
static size_t hidden_end(const char *text, size_t size, size_t at)
{
    if (at + 1 < size && text[at] == '/' && text[at + 1] == '/') {
        size_t j = at + 2;
        while (j < size && !is_line_end(text[j]))
            j++;
        return j;
    }
    if (at + 1 < size && text[at] == '/' && text[at + 1] == '*') {
        for (size_t j = at + 2; j + 1 < size; j++)
            if (text[j] == '*' && text[j + 1] == '/')
                return j + 2;
        return size;
    }
    if (text[at] == '"' || text[at] == '\'')
        return literal_end(text, size, at);
    return at;
}

static zc_status give_up(zc_lex_walk *walk)
{
    walk->unsure = true;
    return ZC_NOT_CACHEABLE;
}

zc_status zc_opencl_c_walk(zc_lex_walk *walk)
{
    const char *text = walk->text;
    walk->unsure = false;
    for (size_t i = 0; i < walk->size;) {
        /* Most bytes begin nothing the walk looks at. */
        if (zc_opencl_c_char_class[(unsigned char)text[i]] == 0) {
            i++;
            continue;
        }
        if (walk->skip_hidden) {
            if ((text[i] == '"' || text[i] == '\'') && quote_is_unsure(text, i))
                return give_up(walk);
            if (text[i] == '\\')
                return give_up(walk); /* in a header name, where escapes may count */
            size_t past = hidden_end(text, walk->size, i);
            if (past != i) {
                i = past;
                continue;
            }
        }
        size_t end = i + 1;
        if (text[i] != '#' && zc_opencl_c_is_identifier_char(text[i]))
            while (end < walk->size && zc_opencl_c_is_identifier_char(text[end]))
                end++;
        else if (text[i] != '#') {
            i++;
            continue;
        }
        if (text[i] != '#' && text[i] != '_') {
            i = end;
            continue;
        }
        size_t resume = end;
        zc_status status = walk->visit(walk->context, i, end, &resume);
        if (status != ZC_OK)
            return status;
        i = resume > i ? resume : end;
    }
    return ZC_OK;
}
