/* Whether the driver loaded a cached native binary as it is. A driver that
 * rebuilds it from the IR inside instead (RebuildPrecompiledKernels, a
 * debugger, newer drivers' cache-policy and workaround checks) can give other
 * code than the compile that stored it: the module's own native binary then
 * differs from the one it was made from.
 *
 * The driver copies the whole binary out, so the comparison needs a buffer
 * that large. A fresh multi-megabyte malloc costs more in page faults than the
 * copy and the compare (measured on a 2 MB memory hit: +70% with a new buffer
 * each time, a few percent with a reused one), so one buffer, as large as the
 * largest binary compared up to ZCL_SPARE_MAX, is kept for the process; a
 * larger binary, or a thread that finds the buffer busy, uses one of its own
 * for that comparison only, so one huge module does not pin its size in
 * memory for the life of the process.
 *
 * The full comparison runs at the first hit per device and build flags of a
 * process, the size alone after that (zecache/loaded_check.h says when and
 * why that is enough). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "layer_internal.h"
#include "faulted_buffer.h"
#include "zecache/fork_guard.h"

static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *spare;
static size_t spare_size;
/* Held across fork(): a fork waits for a comparison under way, else a child
 * forked meanwhile would never have the buffer again, and would wait for
 * ever to reserve it. */
static atomic_bool spare_lock_guarded;

/* A buffer of size bytes with its pages already present: the driver's copy
 * into a fresh buffer would otherwise take one fault per page, which cost
 * more than the copy and the compare together (a 5.5 MB module on 26.27:
 * 2.7 ms for the first check, 0.8 ms once the pages were there). */
static uint8_t *map_populated(size_t size)
{
    void *pages =
        mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return pages != MAP_FAILED ? pages : NULL;
}

/* Grows the spare buffer (with spare_lock held) to at least size: to twice
 * its size when that is more, so that modules of growing sizes, as a process
 * creates them, do not each pay for a new mapping (12-17 us at 10-40 KB). */
static void grow_spare(size_t size)
{
    if (spare_size >= size)
        return;
    size_t grown = spare_size * 2 > size ? spare_size * 2 : size;
    if (grown > ZCL_SPARE_MAX)
        grown = ZCL_SPARE_MAX;
    if (spare != NULL)
        munmap(spare, spare_size);
    spare = map_populated(grown);
    spare_size = spare != NULL ? grown : 0;
}

/* The spare buffer grown to size, or NULL (then the caller allocates). */
static uint8_t *take_spare(size_t size)
{
    zc_fork_guard(&spare_lock, &spare_lock_guarded);
    if (size == 0 || size > ZCL_SPARE_MAX || pthread_mutex_trylock(&spare_lock) != 0)
        return NULL;
    grow_spare(size);
    if (spare == NULL) {
        pthread_mutex_unlock(&spare_lock);
        return NULL;
    }
    return spare;
}

void zcl_native_check_reserve(size_t size)
{
    zc_fork_guard_lock(&spare_lock, &spare_lock_guarded);
    grow_spare(size < ZCL_SPARE_MAX ? size : ZCL_SPARE_MAX);
    pthread_mutex_unlock(&spare_lock);
}

size_t zcl_native_check_spare_size(void)
{
    zc_fork_guard_lock(&spare_lock, &spare_lock_guarded);
    size_t size = spare_size;
    pthread_mutex_unlock(&spare_lock);
    return size;
}

/* The buffer the driver copies the module's binary into: the one faulted
 * in during the create, the kept one, or a new one. */
typedef struct check_buffer {
    uint8_t *bytes;
    enum { BUFFER_PREPARED, BUFFER_SPARE, BUFFER_OWN } kind;
} check_buffer;

static check_buffer buffer_for(size_t size, zc_faulted_buffer *prepared)
{
    size_t prepared_size = 0;
    uint8_t *bytes = prepared != NULL ? zc_faulted_buffer_wait(prepared, &prepared_size) : NULL;
    if (bytes != NULL && prepared_size >= size)
        return (check_buffer){bytes, BUFFER_PREPARED};
    bytes = take_spare(size);
    if (bytes != NULL)
        return (check_buffer){bytes, BUFFER_SPARE};
    return (check_buffer){malloc(size > 0 ? size : 1), BUFFER_OWN};
}

static void buffer_done(check_buffer buffer)
{
    if (buffer.kind == BUFFER_SPARE)
        pthread_mutex_unlock(&spare_lock);
    else if (buffer.kind == BUFFER_OWN)
        free(buffer.bytes);
}

bool zcl_native_loaded_unchanged(ze_module_handle_t module, const uint8_t *binary, size_t size,
                                 zc_faulted_buffer *prepared)
{
    size_t loaded_size = 0;
    if (zcl_layer.next.module_get_native_binary(module, &loaded_size, NULL) != ZE_RESULT_SUCCESS ||
        loaded_size != size)
        return false;
    check_buffer buffer = buffer_for(size, prepared);
    bool same = buffer.bytes != NULL &&
                zcl_layer.next.module_get_native_binary(module, &loaded_size, buffer.bytes) ==
                    ZE_RESULT_SUCCESS &&
                loaded_size == size && memcmp(buffer.bytes, binary, size) == 0;
    buffer_done(buffer);
    return same;
}

static bool loaded_sizes(void *module, size_t count, size_t *sizes)
{
    return count == 1 &&
           zcl_layer.next.module_get_native_binary(module, &sizes[0], NULL) == ZE_RESULT_SUCCESS;
}

static bool loaded_same(void *module, const zc_loaded_binaries *cached, zc_faulted_buffer *prepared)
{
    return cached->count == 1 &&
           zcl_native_loaded_unchanged(module, cached->binaries[0], cached->sizes[0], prepared);
}

static const zc_loaded_reader module_reader = {loaded_sizes, loaded_same};

static zc_loaded_binaries one_binary(const void *const *device, const char *build_flags,
                                     const size_t *size, const uint8_t *const *binary,
                                     bool without_ir)
{
    return (zc_loaded_binaries){.count = 1,
                                .devices = device,
                                .options = build_flags,
                                .sizes = size,
                                .binaries = binary,
                                .without_ir = without_ir};
}

zc_faulted_buffer *zcl_native_check_prepare(ze_device_handle_t device, const char *build_flags,
                                            const uint8_t *binary, size_t size, bool without_ir)
{
    const void *devices[] = {device};
    zc_loaded_binaries cached = one_binary(devices, build_flags, &size, &binary, without_ir);
    return size > zcl_native_check_spare_size()
               ? zc_loaded_check_prepare(&zcl_layer.hit_checks, &cached)
               : NULL;
}

bool zcl_native_hit_unchanged(ze_device_handle_t device, const char *build_flags,
                              ze_module_handle_t module, const uint8_t *binary, size_t size,
                              bool without_ir, zc_faulted_buffer *prepared)
{
    const void *devices[] = {device};
    zc_loaded_binaries cached = one_binary(devices, build_flags, &size, &binary, without_ir);
    return zc_loaded_unchanged(&zcl_layer.hit_checks, &cached, &module_reader, module, prepared);
}
