#include "zecache/log.h"

#include "zecache/printable.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_bool log_enabled;

typedef struct capture {
    zc_log_capture_fn capture;
    void *context;
} capture;
static _Atomic(capture *) log_capture;

void zc_log_set_capture(zc_log_capture_fn capture_fn, void *context)
{
    /* Set by a tool before it starts anything: one static slot suffices. */
    static capture slot;
    slot = (capture){capture_fn, context};
    atomic_store(&log_capture, capture_fn != NULL ? &slot : NULL);
}

static void capture_message(const char *text)
{
    capture *to = atomic_load(&log_capture);
    if (to != NULL)
        to->capture(to->context, text);
}

void zc_log_set_enabled(bool enabled)
{
    atomic_store_explicit(&log_enabled, enabled, memory_order_relaxed);
}

bool zc_log_enabled(void)
{
    return atomic_load_explicit(&log_enabled, memory_order_relaxed);
}

/* One fprintf per message, so lines from several threads do not interleave
 * (stdio locks the stream for the duration of each call). Messages quote
 * what servers and files supplied: their control bytes are escaped here,
 * where every message passes, so that none reaches a terminal raw. */
void zc_log_failure(const char *what, int err)
{
    char shown[1024];
    if (atomic_load_explicit(&log_capture, memory_order_relaxed) != NULL) {
        char text[1024];
        snprintf(text, sizeof text, "%s: %s", what, strerror(err));
        zc_printable(text, shown, sizeof shown);
        capture_message(shown);
    }
    if (!zc_log_enabled())
        return;
    zc_printable(what, shown, sizeof shown);
    fprintf(stderr, "PID %ld [Cache failure]: %s errno: %d\n", (long)getpid(), shown, err);
}

void zc_log_info(const char *fmt, ...)
{
    if (!zc_log_enabled() && atomic_load_explicit(&log_capture, memory_order_relaxed) == NULL)
        return;
    char text[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    char shown[1024];
    zc_printable(text, shown, sizeof shown);
    capture_message(shown);
    if (!zc_log_enabled())
        return;
    fprintf(stderr, "PID %ld [Cache]: %s\n", (long)getpid(), shown);
}
