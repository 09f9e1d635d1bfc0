/* Positioned reads and writes of a whole range, through short transfers
 * and EINTR: for files of one's own (temporary files, a value being
 * received), not the cache directory, whose I/O goes through zc_fs_ops. */
#ifndef ZECACHE_WHOLE_IO_H
#define ZECACHE_WHOLE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* False on an error or an early end of file (errno set by the failing call,
 * 0 at end of file). */
bool zc_pread_whole(int fd, void *bytes, size_t size, uint64_t offset);
bool zc_pwrite_whole(int fd, const void *bytes, size_t size, uint64_t offset);

#endif
