/* What the small Level Zero programs (ze_sample, ze_bench, the tests'
 * ze_probe) all do the same way: start on the first device of the first
 * driver, read an input file, time a call. */
#ifndef ZE_COMMON_H
#define ZE_COMMON_H

#include <level_zero/ze_api.h>
#include <stddef.h>

typedef struct ze_common_device {
    ze_driver_handle_t driver;
    ze_device_handle_t device;
    ze_context_handle_t context;
} ze_common_device;

/* zeInit, then the first driver, its first device and a context on it. */
ze_result_t ze_common_open(ze_common_device *l0);

/* The whole file, malloc'd; NULL when it cannot be read or is empty. */
void *ze_common_read_file(const char *path, size_t *size);

/* CLOCK_MONOTONIC in milliseconds. */
double ze_common_now_ms(void);

#endif
