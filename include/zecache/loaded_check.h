/* Whether the driver loaded a cached binary as it is, checked in full (the
 * binary copied back out of the driver and compared) at the first hit per
 * device and build options of a process, and by the loaded binary's size,
 * which needs no copy, after that. A check that ever fails makes every
 * later hit of the process a full check. Why once is enough:
 * loaded_check.c. A layer supplies the reads; the policy is the same for
 * every API. */
#ifndef ZECACHE_LOADED_CHECK_H
#define ZECACHE_LOADED_CHECK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* (device, build options) pairs whose full check passed; a process rarely
 * has more, and the ones beyond are checked in full every time. */
#define ZC_LOADED_CHECK_SLOTS 64

/* Options this long or longer never get a slot: they are checked in full. */
#define ZC_LOADED_CHECK_OPTIONS_MAX 512
typedef struct zc_loaded_check_slot {
    atomic_int state; /* free, being written, verified */
    const void *device;
    char options[ZC_LOADED_CHECK_OPTIONS_MAX]; /* NUL-terminated; NULL options are "" */
} zc_loaded_check_slot;

/* One per layer and process, zero-initialised. */
typedef struct zc_loaded_checks {
    atomic_bool distrust; /* a check failed: every hit is checked in full */
    zc_loaded_check_slot slots[ZC_LOADED_CHECK_SLOTS];
} zc_loaded_checks;

/* The binaries the layer handed the driver for one object, one per device. */
typedef struct zc_loaded_binaries {
    size_t count;
    const void *const *devices; /* the API's device handles (they imply the driver) */
    const char *options;        /* the build options given with them; NULL: none */
    const size_t *sizes;
    const uint8_t *const *binaries;
    /* None holds intermediate code the driver could build it again from:
     * the driver keeps such a binary as given or refuses it, so its
     * binaries query answers a copy of these bytes and the size check is
     * the whole check (loaded_check.c). */
    bool without_ir;
} zc_loaded_binaries;

typedef struct zc_faulted_buffer zc_faulted_buffer;

/* What the layer reads back of the driver's object made from them. */
typedef struct zc_loaded_reader {
    /* The sizes of the binaries the driver holds, without copying them;
     * false when it cannot tell. */
    bool (*sizes)(void *object, size_t count, size_t *sizes);
    /* Whether the driver holds exactly the binaries: copied out (into
     * prepared when it is not NULL: zc_loaded_check_prepare's), compared. */
    bool (*same)(void *object, const zc_loaded_binaries *cached, zc_faulted_buffer *prepared);
} zc_loaded_reader;

/* Whether object (the driver's, made from cached) holds the binaries
 * unchanged, by the full or the size check as checks says; a failure is
 * logged (PrintDebugMessages) and makes every later check a full one.
 * prepared (NULL, or zc_loaded_check_prepare's for cached) is freed. */
bool zc_loaded_unchanged(zc_loaded_checks *checks, const zc_loaded_binaries *cached,
                         const zc_loaded_reader *reader, void *object, zc_faulted_buffer *prepared);
/* Whether the check of a hit on cached would be a full one now: a hint, for
 * preparing what a full check needs while the driver creates the object;
 * zc_loaded_unchanged decides. */
bool zc_loaded_check_is_full(zc_loaded_checks *checks, const zc_loaded_binaries *cached);
/* A single binary from this size on whose check will be in full gets its
 * buffer faulted in on another thread while the driver makes the object: a
 * fresh 50 MB buffer's page faults cost 11-22 ms, the thread 0.05. */
#define ZC_LOADED_CHECK_PREPARE_MIN ((size_t)1 << 20)
/* That buffer (source/common/faulted_buffer.h), the size of cached's one
 * binary, started before the driver makes the object; NULL when the check
 * would not be full, the binary is smaller or there are several, or no
 * buffer is to be had. The layer's full read copies into it. */
zc_faulted_buffer *zc_loaded_check_prepare(zc_loaded_checks *checks,
                                           const zc_loaded_binaries *cached);

#endif
