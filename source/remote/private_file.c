/* See private_file.h. */
#include "private_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file opened, after the checks: its descriptor, or -1 with the reason. */
static int open_private(const char *path, zc_status *status, char *reason, size_t reason_size)
{
    /* O_NONBLOCK: a FIFO planted under the name must not block the open. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *status =
            zc_explain(ZC_ERR_IO, reason, reason_size, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IRWXO) != 0) {
        *status = zc_explain(ZC_ERR_INVALID_ARG, reason, reason_size,
                             "%s is not a regular file readable only by its owner and group "
                             "(chmod o-rwx it)",
                             path);
        close(fd);
        return -1;
    }
    return fd;
}

zc_status zc_private_file_read(const char *path, uint8_t *buffer, size_t capacity, size_t *size,
                               char *reason, size_t reason_size)
{
    zc_status status = ZC_OK;
    int fd = open_private(path, &status, reason, reason_size);
    if (fd < 0)
        return status;
    *size = 0;
    ssize_t got = 0;
    while (*size < capacity &&
           ((got = read(fd, buffer + *size, capacity - *size)) > 0 || (got < 0 && errno == EINTR)))
        *size += got > 0 ? (size_t)got : 0;
    int err = errno;
    close(fd);
    if (got < 0)
        return zc_explain(ZC_ERR_IO, reason, reason_size, "cannot read %s: %s", path,
                          strerror(err));
    return ZC_OK;
}

zc_status zc_private_file_read_trimmed(const char *path, uint8_t *buffer, size_t capacity,
                                       size_t *size, char *reason, size_t reason_size)
{
    zc_status status = zc_private_file_read(path, buffer, capacity, size, reason, reason_size);
    while (status == ZC_OK && *size > 0 && isspace(buffer[*size - 1]))
        (*size)--;
    return status;
}

zc_status zc_private_file_check(const char *path, char *reason, size_t reason_size)
{
    zc_status status = ZC_OK;
    int fd = open_private(path, &status, reason, reason_size);
    if (fd >= 0)
        close(fd);
    return status;
}
