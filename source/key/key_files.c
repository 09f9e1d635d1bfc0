/* The files a key read, and reading them again (zecache/key_files.h). */
#include "zecache/key_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct seen_file {
    char *path;
    zc_key_file_state state;
    uint64_t size;
    uint8_t digest[ZC_SHA256_SIZE];
} seen_file;

struct zc_key_files {
    seen_file *files;
    size_t count, capacity;
};

/* The whole file, which must be size bytes long. */
static zc_status read_whole(int fd, uint64_t size, char **content, const char **why)
{
    char *bytes = malloc((size_t)size + 1);
    if (bytes == NULL)
        return ZC_ERR_NOMEM;
    size_t done = 0;
    for (;;) {
        ssize_t got = read(fd, bytes + done, (size_t)size + 1 - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += (size_t)got;
        if (done > size)
            break;
    }
    if (done != size) {
        free(bytes);
        *why = "a header changed size while it was read";
        return ZC_NOT_CACHEABLE;
    }
    bytes[size] = '\0';
    *content = bytes;
    return ZC_OK;
}

zc_status zc_key_file_read(const char *path, uint64_t max_size, zc_key_file_state *state,
                           char **content, uint64_t *size, const char **why)
{
    *content = NULL;
    *size = 0;
    *state = ZC_KEY_FILE_ABSENT;
    /* O_NONBLOCK: a FIFO planted under a header's name must not hang us. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG))
        return ZC_OK;
    if (fd < 0 && errno == EISDIR) {
        *state = ZC_KEY_FILE_NOT_A_FILE;
        return ZC_OK;
    }
    struct stat st;
    zc_status status = ZC_OK;
    *why = "a header it can include cannot be read";
    if (fd < 0 || fstat(fd, &st) != 0)
        status = ZC_NOT_CACHEABLE;
    else if (S_ISDIR(st.st_mode))
        *state = ZC_KEY_FILE_NOT_A_FILE;
    else if (!S_ISREG(st.st_mode))
        *why = "a header it can include is not a regular file", status = ZC_NOT_CACHEABLE;
    else if ((uint64_t)st.st_size > max_size)
        *why = "its headers are larger than the bound", status = ZC_NOT_CACHEABLE;
    else if ((status = read_whole(fd, (uint64_t)st.st_size, content, why)) == ZC_OK) {
        *state = ZC_KEY_FILE_FOUND;
        *size = (uint64_t)st.st_size;
    }
    if (fd >= 0)
        close(fd);
    return status;
}

zc_key_files *zc_key_files_create(void)
{
    return calloc(1, sizeof(zc_key_files));
}

bool zc_key_files_add(zc_key_files *files, const char *path, zc_key_file_state state, uint64_t size,
                      const uint8_t digest[ZC_SHA256_SIZE])
{
    if (files->count == files->capacity) {
        size_t grown = files->capacity == 0 ? 16 : files->capacity * 2;
        seen_file *bigger = realloc(files->files, grown * sizeof *bigger);
        if (bigger == NULL)
            return false;
        files->files = bigger;
        files->capacity = grown;
    }
    seen_file *seen = &files->files[files->count];
    *seen = (seen_file){strdup(path), state, size, {0}};
    if (seen->path == NULL)
        return false;
    if (state == ZC_KEY_FILE_FOUND)
        memcpy(seen->digest, digest, ZC_SHA256_SIZE);
    files->count++;
    return true;
}

static bool still_as_seen(const seen_file *seen)
{
    zc_key_file_state state;
    char *content = NULL;
    uint64_t size = 0;
    const char *why = NULL;
    uint64_t max_size = seen->state == ZC_KEY_FILE_FOUND ? seen->size : 0;
    zc_status status = zc_key_file_read(seen->path, max_size, &state, &content, &size, &why);
    uint8_t digest[ZC_SHA256_SIZE];
    bool same = status == ZC_OK && state == seen->state &&
                (state != ZC_KEY_FILE_FOUND ||
                 (size == seen->size && zc_sha256_digest(content, (size_t)size, digest) &&
                  memcmp(digest, seen->digest, ZC_SHA256_SIZE) == 0));
    free(content);
    return same;
}

size_t zc_key_files_count(const zc_key_files *files)
{
    return files != NULL ? files->count : 0;
}

const char *zc_key_files_at(const zc_key_files *files, size_t i, zc_key_file_state *state,
                            uint64_t *size, uint8_t digest[ZC_SHA256_SIZE])
{
    const seen_file *seen = &files->files[i];
    *state = seen->state;
    *size = seen->size;
    memcpy(digest, seen->digest, ZC_SHA256_SIZE);
    return seen->path;
}

const char *zc_key_files_first_changed(const zc_key_files *files)
{
    for (size_t i = 0; files != NULL && i < files->count; i++)
        if (!still_as_seen(&files->files[i]))
            return files->files[i].path;
    return NULL;
}

bool zc_key_files_unchanged(const zc_key_files *files)
{
    return zc_key_files_first_changed(files) == NULL;
}

void zc_key_files_destroy(zc_key_files *files)
{
    if (files == NULL)
        return;
    for (size_t i = 0; i < files->count; i++)
        free(files->files[i].path);
    free(files->files);
    free(files);
}
