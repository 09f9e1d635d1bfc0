/* CLOCK_MONOTONIC in nanoseconds (deadlines and compile times), and polling
 * against a deadline with a pause that doubles. Not installed. */
#ifndef ZECACHE_MONOTONIC_CLOCK_H
#define ZECACHE_MONOTONIC_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t zc_monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * UINT64_C(1000000000) + (uint64_t)now.tv_nsec;
}

/* A deadline and the pause before the next poll, which doubles up to a cap:
 * the first polls come quickly, a long wait costs few. */
typedef struct zc_backoff {
    uint64_t deadline_ns;
    uint64_t pause_ns;
    uint64_t max_pause_ns;
} zc_backoff;

static inline zc_backoff zc_backoff_start(uint64_t timeout_ms, uint64_t first_pause_ns,
                                          uint64_t max_pause_ns)
{
    const uint64_t max_ms = UINT64_C(1) << 40; /* about 35 years: no overflow below */
    uint64_t timeout_ns = (timeout_ms < max_ms ? timeout_ms : max_ms) * UINT64_C(1000000);
    return (zc_backoff){zc_monotonic_ns() + timeout_ns, first_pause_ns, max_pause_ns};
}

/* Sleeps until the next poll, never past the deadline; false, without
 * sleeping, once the deadline has passed. */
static inline bool zc_backoff_sleep(zc_backoff *backoff)
{
    uint64_t now = zc_monotonic_ns();
    if (now >= backoff->deadline_ns)
        return false;
    uint64_t pause_ns = backoff->pause_ns;
    if (pause_ns > backoff->deadline_ns - now)
        pause_ns = backoff->deadline_ns - now;
    struct timespec pause = {(time_t)(pause_ns / 1000000000), (long)(pause_ns % 1000000000)};
    nanosleep(&pause, NULL);
    backoff->pause_ns = backoff->pause_ns * 2 < backoff->max_pause_ns ? backoff->pause_ns * 2
                                                                      : backoff->max_pause_ns;
    return true;
}

#endif
