#include "zecache/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_bool log_enabled;

void zc_log_set_enabled(bool enabled)
{
    atomic_store_explicit(&log_enabled, enabled, memory_order_relaxed);
}

bool zc_log_enabled(void)
{
    return atomic_load_explicit(&log_enabled, memory_order_relaxed);
}

/* One fprintf per message, so lines from several threads do not interleave
 * (stdio locks the stream for the duration of each call). */
void zc_log_failure(const char *what, int err)
{
    if (!zc_log_enabled())
        return;
    fprintf(stderr, "PID %ld [Cache failure]: %s errno: %d\n", (long)getpid(), what, err);
}

void zc_log_info(const char *fmt, ...)
{
    if (!zc_log_enabled())
        return;
    char text[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    fprintf(stderr, "PID %ld [Cache]: %s\n", (long)getpid(), text);
}
