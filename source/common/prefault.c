/* See prefault.h. A 2 MB decompression spent about 6 ms in page faults
 * against 1-2 ms with them made in one call (bench/bench_layer.sh); reading
 * a 50 MB entry into fresh memory is the same (bench/bench_hit_steps.sh). */
#include "prefault.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* Below this, page faults cost less than the extra system call. */
enum { PREFAULT_MIN_BYTES = 256 * 1024 };

void zc_prefault_write(void *buffer, size_t size)
{
    if (size < PREFAULT_MIN_BYTES)
        return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t begin = ((uintptr_t)buffer + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)buffer + size) & ~(page - 1);
    if (end > begin)
        (void)madvise((void *)begin, end - begin, MADV_POPULATE_WRITE);
}
