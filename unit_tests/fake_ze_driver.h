/* The counters of the fake driver (fake_ze_driver.c), read by the tests
 * through fake_driver_get_counters(). */
#ifndef ZECACHE_FAKE_ZE_DRIVER_H
#define ZECACHE_FAKE_ZE_DRIVER_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct fake_driver_counters {
    atomic_int compiles;        /* SPIR-V modules built */
    atomic_int native_creates;  /* modules made from native binaries */
    atomic_int native_rejected; /* native binaries refused */
    atomic_int device_queries;  /* zeDeviceGetProperties calls */
    atomic_int live_modules;
    atomic_int live_build_logs;
    atomic_int native_binary_copies; /* zeModuleGetNativeBinary calls given a buffer */
    atomic_bool reject_native;       /* set by tests: refuse every native binary */
    /* Set by tests: make modules from native binaries as a driver that
     * rebuilds them from their IR does (their native binary differs). */
    atomic_bool rebuild_native;
    /* Set by tests: the same, but the rebuild has the size of the binary it
     * was made from (its last byte differs). */
    atomic_bool rebuild_native_same_size;
} fake_driver_counters;

typedef fake_driver_counters *(*fake_driver_get_counters_fn)(void);

#endif
