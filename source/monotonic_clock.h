/* CLOCK_MONOTONIC in nanoseconds: deadlines and compile times. Not installed. */
#ifndef ZECACHE_MONOTONIC_CLOCK_H
#define ZECACHE_MONOTONIC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t zc_monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * UINT64_C(1000000000) + (uint64_t)now.tv_nsec;
}

#endif
