/* Text for a message that a terminal shows as it is: whatever a server,
 * a file or the environment supplied may hold escape sequences that would
 * rewrite the screen, hide a line or set the window title. */
#ifndef ZECACHE_PRINTABLE_H
#define ZECACHE_PRINTABLE_H

#include <stddef.h>

/* text with each control byte (C0, DEL, and the C1 controls as UTF-8
 * encodes them) written as \xNN, into out (always terminated, cut to
 * out_size - 1 bytes, never inside an escape). The rest, UTF-8 included,
 * stays as it is. out may not overlap text. */
void zc_printable(const char *text, char *out, size_t out_size);

#endif
