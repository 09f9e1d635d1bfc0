/* Describing a library file: where it is, its size, mtime and GNU build-id. */
#include "zecache/identity.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_file.h"
#include "library_search.h"

_Static_assert(ZC_LIBRARY_NAME_SIZE == NAME_MAX + 1, "a file name fits the name field");
_Static_assert(ZC_LIBRARY_PATH_SIZE == PATH_MAX, "a path fits the path field");

static void set_name(zc_library_identity *identity, const char *name)
{
    memset(identity, 0, sizeof *identity);
    snprintf(identity->name, sizeof identity->name, "%s", name);
}

zc_status zc_library_identity_describe(const char *path, const char *name,
                                       zc_library_identity *identity)
{
    zc_library_identity found;
    set_name(&found, name);
    if (realpath(path, found.path) == NULL)
        return ZC_MISS;
    int fd = open(found.path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ZC_MISS;
    struct stat st;
    zc_elf_header elf;
    long build_id_size = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && zc_elf_read_header(fd, &elf) &&
        zc_elf_is_native(&elf))
        build_id_size = zc_elf_read_build_id_fd(fd, &elf, found.build_id, ZC_BUILD_ID_MAX);
    close(fd);
    if (build_id_size < 0)
        return ZC_MISS;
    /* A longer id is cut to ZC_BUILD_ID_MAX: its prefix still names the build. */
    found.build_id_size =
        (size_t)build_id_size < ZC_BUILD_ID_MAX ? (size_t)build_id_size : ZC_BUILD_ID_MAX;
    found.size = (uint64_t)st.st_size;
    found.mtime_sec = st.st_mtim.tv_sec;
    found.mtime_nsec = st.st_mtim.tv_nsec;
    *identity = found;
    return ZC_OK;
}

zc_status zc_library_identity_of_path(const char *path, zc_library_identity *identity)
{
    if (path == NULL || identity == NULL)
        return ZC_ERR_INVALID_ARG;
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (strlen(name) > NAME_MAX)
        return ZC_ERR_INVALID_ARG;
    set_name(identity, name);
    return zc_library_identity_describe(path, name, identity);
}

zc_status zc_library_identity_find(const char *name, zc_library_identity *identity)
{
    if (name == NULL || identity == NULL || name[0] == '\0' || strlen(name) > NAME_MAX)
        return ZC_ERR_INVALID_ARG;
    if (strchr(name, '/') != NULL)
        return zc_library_identity_of_path(name, identity);
    char executable[PATH_MAX];
    zc_library_search search = zc_library_search_of_process(NULL, executable);
    set_name(identity, name);
    zc_status status = zc_library_search_find(&search, name, identity, NULL);
    if (status != ZC_OK)
        set_name(identity, name);
    return status;
}

bool zc_library_identity_equal(const zc_library_identity *a, const zc_library_identity *b)
{
    return strcmp(a->path, b->path) == 0 && a->size == b->size && a->mtime_sec == b->mtime_sec &&
           a->mtime_nsec == b->mtime_nsec && a->build_id_size == b->build_id_size &&
           memcmp(a->build_id, b->build_id, a->build_id_size) == 0;
}
