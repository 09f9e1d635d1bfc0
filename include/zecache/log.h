/* Debug output in the form Intel's driver uses, switched by PrintDebugMessages.
 * Messages go to stderr; nothing is printed unless enabled. */
#ifndef ZECACHE_LOG_H
#define ZECACHE_LOG_H

#include <stdbool.h>

void zc_log_set_enabled(bool enabled);
bool zc_log_enabled(void);

/* "PID <pid> [Cache failure]: <what> errno: <err>" */
void zc_log_failure(const char *what, int err);

/* "PID <pid> [Cache]: <printf-formatted text>", for lookups (hit/miss/bypass)
 * and for notices such as a rejected entry. */
void zc_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Every message, printed or not, also goes to capture (NULL: none) as its
 * text without the "PID <pid> [...]: " prefix: zecache remote check shows
 * why a storage failed from what the storage logged. */
typedef void (*zc_log_capture_fn)(void *context, const char *message);
void zc_log_set_capture(zc_log_capture_fn capture, void *context);

#endif
