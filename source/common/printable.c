/* See printable.h. */
#include "zecache/printable.h"

#include <stdbool.h>
#include <stdio.h>

static bool is_control(unsigned char byte)
{
    return byte < 0x20 || byte == 0x7f;
}

/* U+0080 to U+009F: CSI (U+009B) starts an escape sequence in terminals
 * that take 8-bit controls. */
static bool is_c1_control(const unsigned char *at)
{
    return at[0] == 0xc2 && at[1] >= 0x80 && at[1] <= 0x9f;
}

void zc_printable(const char *text, char *out, size_t out_size)
{
    if (out_size == 0)
        return;
    size_t used = 0;
    for (const unsigned char *at = (const unsigned char *)text; *at != '\0'; at++) {
        size_t escapes = is_control(*at) ? 1 : is_c1_control(at) ? 2 : 0;
        size_t needed = escapes > 0 ? 4 * escapes : 1;
        if (used + needed >= out_size)
            break;
        if (escapes == 0) {
            out[used++] = (char)*at;
            continue;
        }
        for (size_t i = 0; i < escapes; i++, used += 4)
            snprintf(out + used, 5, "\\x%02x", at[i]);
        at += escapes - 1;
    }
    out[used] = '\0';
}
