/* See redis_value_file.h. */
#include "redis_value_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "whole_io.h"

void zc_redis_value_file_init(zc_redis_value_file *file, const char *dir, const zc_key *key,
                              uint64_t max_payload, const zc_remote_secret *secret)
{
    *file = (zc_redis_value_file){
        .fd = -1, .dir = dir, .key = key, .max_payload = max_payload, .secret = secret};
}

/* Without a name, so that nothing is left behind whatever happens. */
static int open_unnamed(const char *dir)
{
    const char *tmp = getenv("TMPDIR");
    const char *places[] = {dir, tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp", "/tmp"};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        if (places[i] == NULL || places[i][0] == '\0')
            continue;
        int fd = open(places[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        char path[4200];
        snprintf(path, sizeof path, "%s/.zc_remote_value.XXXXXX", places[i]);
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0) {
            unlink(path);
            return fd;
        }
    }
    return -1;
}

/* The header's bytes kept aside and checked as soon as they are all
 * there, against the whole value's length. */
static bool take_head(zc_redis_value_file *file, uint64_t length, const uint8_t *bytes, size_t size,
                      char *why, size_t why_size)
{
    if (file->received >= sizeof file->head)
        return true;
    size_t missing = sizeof file->head - (size_t)file->received;
    size_t take = size < missing ? size : missing;
    memcpy(file->head + file->received, bytes, take);
    if (take < missing)
        return true;
    zc_entry_header header;
    file->bad_head = zc_entry_check_head(file->head, length, file->key, file->max_payload, &header,
                                         why, why_size) != ZC_OK;
    return !file->bad_head;
}

static bool write_piece(void *context, uint64_t length, const uint8_t *bytes, size_t size,
                        char *why, size_t why_size)
{
    zc_redis_value_file *file = context;
    if (!take_head(file, length, bytes, size, why, why_size))
        return false;
    if (file->fd < 0 && (file->fd = open_unnamed(file->dir)) < 0) {
        snprintf(why, why_size, "no temporary file: %s", strerror(errno));
        return false;
    }
    if (!zc_pwrite_whole(file->fd, bytes, size, file->received)) {
        snprintf(why, why_size, "cannot write the temporary file: %s", strerror(errno));
        return false;
    }
    file->received += size;
    return true;
}

zc_redis_sink zc_redis_value_file_sink(zc_redis_value_file *file)
{
    return (zc_redis_sink){write_piece, file};
}

zc_status zc_redis_value_file_take(zc_redis_value_file *file, uint8_t **value, size_t *size,
                                   char *reason, size_t reason_size)
{
    uint64_t length = file->received;
    zc_status status = zc_remote_tag_check_fd(file->secret, file->fd, length, reason, reason_size);
    if (status == ZC_OK)
        status =
            zc_entry_verify_fd(file->fd, length, file->key, file->max_payload, reason, reason_size);
    if (status != ZC_OK)
        return status;
    uint8_t *bytes = length <= SIZE_MAX ? malloc((size_t)length) : NULL;
    if (bytes == NULL)
        return ZC_ERR_NOMEM;
    if (!zc_pread_whole(file->fd, bytes, (size_t)length, 0)) {
        free(bytes);
        return zc_explain(ZC_MISS, reason, reason_size, "%s", "cannot read the temporary file");
    }
    *value = bytes;
    *size = (size_t)length;
    return ZC_OK;
}

void zc_redis_value_file_close(zc_redis_value_file *file)
{
    if (file->fd >= 0)
        close(file->fd);
    file->fd = -1;
}
