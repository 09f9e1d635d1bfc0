/* Whole positioned reads and writes (whole_io.h). */
#include "whole_io.h"

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

static bool whole_range(int fd, uint8_t *bytes, size_t size, uint64_t offset, bool writing)
{
    while (size > 0) {
        errno = 0;
        ssize_t done = writing ? pwrite(fd, bytes, size, (off_t)offset)
                               : pread(fd, bytes, size, (off_t)offset);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return false;
        bytes += done;
        size -= (size_t)done;
        offset += (uint64_t)done;
    }
    return true;
}

bool zc_pread_whole(int fd, void *bytes, size_t size, uint64_t offset)
{
    return whole_range(fd, bytes, size, offset, false);
}

bool zc_pwrite_whole(int fd, const void *bytes, size_t size, uint64_t offset)
{
    /* pwrite never writes through the pointer: the cast only shares the loop. */
    return whole_range(fd, (uint8_t *)(uintptr_t)bytes, size, offset, true);
}
