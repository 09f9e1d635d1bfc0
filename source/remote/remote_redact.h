/* A NEO_CACHE_REMOTE item as messages show it, whatever it holds: parsed or
 * not, no password, token or key text. Not installed: remote_spec.c's. */
#ifndef ZECACHE_REMOTE_REDACT_H
#define ZECACHE_REMOTE_REDACT_H

#include <stddef.h>

/* Where the user information of item's URL ends: its last '@' or "%40"
 * (percent-decoding makes one of the other), wherever it is, since a
 * password that holds '/', '?' or '|' unencoded moves the parser's
 * boundaries; NULL when there is none. *length is 1 or 3. */
const char *zc_remote_last_at(const char *text, size_t *length);

/* item into out (cut to out_size): everything from the scheme to the last
 * '@' as "***"; the values of '?' options but db, and of attributes whose
 * values are no paths or numbers, as "***". */
void zc_remote_redact(const char *item, char *out, size_t out_size);

#endif
