/* See private_file.h. */
#include "private_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

zc_status zc_private_file_read(const char *path, uint8_t *buffer, size_t capacity, size_t *size,
                               char *reason, size_t reason_size)
{
    *size = 0;
    /* O_NONBLOCK: a FIFO planted under the name must not block the open. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return zc_explain(ZC_ERR_IO, reason, reason_size, "cannot open %s: %s", path,
                          strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IRWXO) != 0) {
        close(fd);
        return zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                          "%s is not a regular file readable only by its owner and group "
                          "(chmod o-rwx it)",
                          path);
    }
    size_t used = 0;
    ssize_t got = 0;
    while (used < capacity &&
           ((got = read(fd, buffer + used, capacity - used)) > 0 || (got < 0 && errno == EINTR)))
        used += got > 0 ? (size_t)got : 0;
    int err = errno;
    close(fd);
    if (got < 0)
        return zc_explain(ZC_ERR_IO, reason, reason_size, "cannot read %s: %s", path,
                          strerror(err));
    while (used > 0 && isspace(buffer[used - 1]))
        used--;
    *size = used;
    return ZC_OK;
}
