/* The per-hit "loaded unchanged" check, in full once per device and build
 * options of a process, by size after that.
 *
 * Why once is exact enough. Intel's driver replaces a binary it is given
 * by a rebuild from the IR inside it (22.43 and 26.x, Level Zero
 * module_imp.cpp, OpenCL program.cpp) when:
 * - RebuildPrecompiledKernels is set, or the oneAPI PVC workaround
 *   environment is not (26.x): debug keys and environment the driver reads
 *   once, when it is loaded;
 * - a debugger is active (22.43: a source-level debugger wants patchtokens,
 *   not zebin; 26.x: the L1 cache policy a debugger needs differs): the
 *   debugger is set up at the device's creation (ZET_ENABLE_PROGRAM_DEBUGGING,
 *   read at zeInit, and keyed);
 * - the binary's target is not the device exactly ("Invalid target device"),
 *   its L1 cache policy or generator version needs another policy on this
 *   product (26.x), or it holds bindless kernels (26.x OpenCL).
 * The first two are the process's and never change in it. The last depend
 * on the binary, but only through what made it: the compiler and driver
 * (one per process, and in every key), the device (and every device handle
 * is one driver's) and the build options (bindless addressing and the cache
 * policy are options or the compiler's default for the product). So every
 * cached binary for one device and options of a process meets the same
 * decision: the first one's full check decides for all, and the size
 * check of the later ones is a second guard, not the only one. Anything the
 * pairs do not hold (a check that failed, more pairs than slots, options of
 * ZC_LOADED_CHECK_OPTIONS_MAX bytes or more, more
 * binaries than ZC_FRONTEND_MAX_DEVICES) is checked in full.
 *
 * A binary without intermediate code (an OpenCL hit's, its SPIR-V cut out;
 * a 22.43 Level Zero native binary) is checked by size from its first hit.
 * Every rebuild above needs that code: without it both generations refuse
 * the binary (createProgramFromBinary, createFromNativeBinary) or keep its
 * device binary, and answer CL_PROGRAM_BINARIES or zeModuleGetNativeBinary
 * with their copy of the bytes they were given. A full check would compare those bytes with
 * themselves. A process that distrusts (a check failed) still checks it in full. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "faulted_buffer.h"
#include "zecache/frontend_several.h"
#include "zecache/loaded_check.h"
#include "zecache/log.h"

enum { SLOT_FREE, SLOT_WRITING, SLOT_VERIFIED };

/* The options as a slot holds them; NULL when they are too long for one. */
static const char *slot_options(const char *options)
{
    const char *text = options != NULL ? options : "";
    return strlen(text) < ZC_LOADED_CHECK_OPTIONS_MAX ? text : NULL;
}

/* Pairs are told apart by their options' whole text: a hash of it would let
 * two sets of options share one verified pair. */
static bool verified(const zc_loaded_checks *checks, const void *device, const char *options)
{
    for (size_t i = 0; options != NULL && i < ZC_LOADED_CHECK_SLOTS; i++) {
        const zc_loaded_check_slot *slot = &checks->slots[i];
        if (atomic_load_explicit(&slot->state, memory_order_acquire) == SLOT_VERIFIED &&
            slot->device == device && strcmp(slot->options, options) == 0)
            return true;
    }
    return false;
}

/* Marks (device, options) verified in a free slot; none left, or options too
 * long: it stays a full check. Two threads may both mark one pair: a repeat
 * costs a slot only. */
static void mark_verified(zc_loaded_checks *checks, const void *device, const char *options)
{
    if (options == NULL || verified(checks, device, options))
        return;
    for (size_t i = 0; i < ZC_LOADED_CHECK_SLOTS; i++) {
        zc_loaded_check_slot *slot = &checks->slots[i];
        int expected = SLOT_FREE;
        if (atomic_compare_exchange_strong(&slot->state, &expected, SLOT_WRITING)) {
            slot->device = device;
            strcpy(slot->options, options); /* shorter than the slot: slot_options */
            atomic_store_explicit(&slot->state, SLOT_VERIFIED, memory_order_release);
            return;
        }
    }
}

static bool all_verified(const zc_loaded_checks *checks, const zc_loaded_binaries *cached,
                         const char *options)
{
    if (atomic_load(&checks->distrust))
        return false;
    for (size_t i = 0; i < cached->count; i++)
        if (!verified(checks, cached->devices[i], options))
            return false;
    return true;
}

static bool by_size(const zc_loaded_checks *checks, const zc_loaded_binaries *cached,
                    const char *options)
{
    return (cached->without_ir && !atomic_load(&checks->distrust)) ||
           all_verified(checks, cached, options);
}

/* The size check: unknown when the driver cannot tell the sizes. */
typedef enum { SIZES_SAME, SIZES_DIFFER, SIZES_UNKNOWN } sizes_verdict;

static sizes_verdict compare_sizes(const zc_loaded_binaries *cached, const zc_loaded_reader *reader,
                                   void *object)
{
    size_t loaded[ZC_FRONTEND_MAX_DEVICES];
    if (cached->count > ZC_FRONTEND_MAX_DEVICES || !reader->sizes(object, cached->count, loaded))
        return SIZES_UNKNOWN;
    for (size_t i = 0; i < cached->count; i++)
        if (loaded[i] != cached->sizes[i])
            return SIZES_DIFFER;
    return SIZES_SAME;
}

static void distrust(zc_loaded_checks *checks, const char *which)
{
    atomic_store(&checks->distrust, true);
    zc_log_info("the driver did not load a cached binary unchanged (%s check); "
                "every later hit of this process is checked in full",
                which);
}

static bool checked_unchanged(zc_loaded_checks *checks, const zc_loaded_binaries *cached,
                              const zc_loaded_reader *reader, void *object,
                              zc_faulted_buffer *prepared)
{
    const char *options = slot_options(cached->options);
    if (by_size(checks, cached, options)) {
        sizes_verdict sizes = compare_sizes(cached, reader, object);
        if (sizes == SIZES_SAME)
            return true;
        if (sizes == SIZES_DIFFER) {
            distrust(checks, "size");
            return false;
        }
    }
    if (!reader->same(object, cached, prepared)) {
        distrust(checks, "full");
        return false;
    }
    /* A binary without intermediate code cannot show a rebuild: its pass
     * vouches for no other binary of the pair. */
    if (!atomic_load(&checks->distrust) && !cached->without_ir)
        for (size_t i = 0; i < cached->count; i++)
            mark_verified(checks, cached->devices[i], options);
    return true;
}

bool zc_loaded_unchanged(zc_loaded_checks *checks, const zc_loaded_binaries *cached,
                         const zc_loaded_reader *reader, void *object, zc_faulted_buffer *prepared)
{
    bool unchanged = checked_unchanged(checks, cached, reader, object, prepared);
    zc_faulted_buffer_free(prepared);
    return unchanged;
}

bool zc_loaded_check_is_full(zc_loaded_checks *checks, const zc_loaded_binaries *cached)
{
    return !by_size(checks, cached, slot_options(cached->options));
}

zc_faulted_buffer *zc_loaded_check_prepare(zc_loaded_checks *checks,
                                           const zc_loaded_binaries *cached)
{
    if (cached->count != 1 || cached->sizes[0] < ZC_LOADED_CHECK_PREPARE_MIN ||
        !zc_loaded_check_is_full(checks, cached))
        return NULL;
    return zc_faulted_buffer_start(cached->sizes[0]);
}
