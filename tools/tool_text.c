/* Text from cache entries (device names, driver versions, build logs, traces,
 * file names) printed for a terminal: a planted entry must not be able to
 * send escape sequences, so control characters and bytes that are not valid
 * UTF-8 are shown as escapes instead. */
#include <stdio.h>
#include <string.h>

#include "tool_support.h"

size_t tool_utf8_sequence_length(const unsigned char *p, size_t available)
{
    size_t length;
    uint32_t code_point, smallest;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) {
        length = 2, code_point = p[0] & 0x1Fu, smallest = 0x80;
    } else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        length = 3, code_point = p[0] & 0x0Fu, smallest = 0x800;
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        length = 4, code_point = p[0] & 0x07u, smallest = 0x10000;
    } else {
        return 0;
    }
    if (length > available)
        return 0;
    for (size_t i = 1; i < length; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        code_point = (code_point << 6) | (p[i] & 0x3Fu);
    }
    if (code_point < smallest || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF))
        return 0;
    return length;
}

enum { PIECE_SIZE = 8 };

/* The next piece of text at p as it is to be shown: the bytes themselves, or
 * an escape. Returns how many bytes of p it stands for. */
static size_t next_piece(const unsigned char *p, size_t available, bool multiline,
                         char piece[PIECE_SIZE])
{
    size_t length = p[0] >= 0x80 ? tool_utf8_sequence_length(p, available) : 0;
    if (length == 2 && p[0] == 0xC2 && p[1] <= 0x9F) { /* U+0080..U+009F: C1 controls */
        snprintf(piece, PIECE_SIZE, "\\u%04x", p[1]);
        return 2;
    }
    if (length > 0) {
        memcpy(piece, p, length);
        piece[length] = '\0';
        return length;
    }
    bool shown = (p[0] >= 0x20 && p[0] < 0x7F) || (multiline && (p[0] == '\n' || p[0] == '\t'));
    if (shown)
        snprintf(piece, PIECE_SIZE, "%c", p[0]);
    else
        snprintf(piece, PIECE_SIZE, "\\x%02x", p[0]);
    return 1;
}

void tool_print_text(FILE *out, const char *text, size_t size, bool multiline)
{
    const unsigned char *p = (const unsigned char *)text;
    char piece[PIECE_SIZE];
    for (size_t done = 0; done < size;) {
        done += next_piece(p + done, size - done, multiline, piece);
        fputs(piece, out);
    }
}

const char *tool_escape_line(const char *text, char *out, size_t out_size)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t size = strlen(text), used = 0;
    char piece[PIECE_SIZE];
    out[0] = '\0';
    for (size_t done = 0; done < size;) {
        done += next_piece(p + done, size - done, false, piece);
        size_t length = strlen(piece);
        if (used + length >= out_size)
            break; /* cut, but never inside an escape or a character */
        memcpy(out + used, piece, length + 1);
        used += length;
    }
    return out;
}
