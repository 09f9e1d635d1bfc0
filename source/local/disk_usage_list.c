/* Programs' usage lists on the disk tier (disk_usage_list.h). */
#include "zecache/disk_usage_list.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_internal.h"
#include "zecache/log.h"
#include "zecache/sealed.h"

enum { USAGE_NAME_SIZE = 2 * 32 + sizeof ZC_USAGE_SUFFIX };

static void usage_name_of(const uint8_t program[32], char name[USAGE_NAME_SIZE])
{
    zc_key id = {0};
    memcpy(id.bytes, program, sizeof id.bytes);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&id, hex);
    snprintf(name, USAGE_NAME_SIZE, "%s%s", hex, ZC_USAGE_SUFFIX);
}

/* A list unchanged by a run is not written again: its use is marked as a
 * hit marks an entry's, at most hourly, so that the lists of programs in use
 * outlive the others (zc_disk_prune_usage_lists). */
static void mark_use(zc_disk_tier *tier, const char *name)
{
    enum { MARK_INTERVAL_SEC = 3600 };
    struct stat st;
    if (tier->read_only)
        return;
    int fd = tier->ops->openat(tier->dir_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (tier->ops->fstat(fd, &st) == 0 && time(NULL) - st.st_mtim.tv_sec >= MARK_INTERVAL_SEC &&
        tier->ops->futimens(fd, NULL) != 0)
        zc_disk_log_errno("cannot mark the use of", name, errno);
    tier->ops->close(fd);
}

/* The records of a list as keys; false when one names no known kind. */
static bool keys_of_records(const uint8_t *records, size_t count, zc_key *keys)
{
    for (size_t i = 0; i < count; i++) {
        const uint8_t *record = records + i * ZC_USAGE_RECORD_SIZE;
        memcpy(keys[i].bytes, record, ZC_KEY_SIZE);
        keys[i].kind = record[ZC_KEY_SIZE];
        if (keys[i].kind >= ZC_ENTRY_KIND_COUNT)
            return false;
    }
    return true;
}

zc_status zc_disk_tier_read_usage(zc_disk_tier *tier, const uint8_t program[32], zc_key *keys,
                                  size_t *count)
{
    *count = 0;
    if (tier == NULL)
        return ZC_ERR_INVALID_ARG;
    char name[USAGE_NAME_SIZE];
    usage_name_of(program, name);
    uint8_t *data = NULL, *content = NULL;
    size_t size = 0, content_size = 0;
    uint64_t largest =
        ZC_SEALED_HEADER_SIZE + 2 * (uint64_t)ZC_USAGE_LIST_MAX * ZC_USAGE_RECORD_SIZE;
    zc_status status = zc_disk_read_small_file(tier, tier->dir_fd, name, largest, &data, &size);
    if (status != ZC_OK)
        return status == ZC_ERR_NOMEM ? status : ZC_MISS;
    char reason[160] = "";
    /* Bounded before decompressing: a planted list of a few KB could
     * otherwise declare hundreds of MB, allocated inside zeInit. */
    status = zc_sealed_decode(ZC_USAGE_MAGIC, data, size, program,
                              (uint64_t)ZC_USAGE_LIST_MAX * ZC_USAGE_RECORD_SIZE, &content,
                              &content_size, NULL, reason, sizeof reason);
    if (status == ZC_OK && (content_size % ZC_USAGE_RECORD_SIZE != 0 ||
                            !keys_of_records(content, content_size / ZC_USAGE_RECORD_SIZE, keys)))
        status = zc_explain(ZC_MISS, reason, sizeof reason, "%zu bytes are no list of keys",
                            content_size);
    if (status == ZC_OK) {
        *count = content_size / ZC_USAGE_RECORD_SIZE;
        mark_use(tier, name);
    } else {
        zc_log_info("ignoring usage list %s: %s", name, reason);
        status = ZC_MISS;
    }
    free(content);
    free(data);
    return status;
}

zc_status zc_disk_tier_write_usage(zc_disk_tier *tier, const uint8_t program[32],
                                   const zc_key *keys, size_t count)
{
    if (tier == NULL || count > ZC_USAGE_LIST_MAX)
        return ZC_ERR_INVALID_ARG;
    if (tier->read_only)
        return ZC_ERR_DISABLED;
    uint8_t *records = malloc(count * ZC_USAGE_RECORD_SIZE + 1);
    if (records == NULL)
        return ZC_ERR_NOMEM;
    for (size_t i = 0; i < count; i++) {
        memcpy(records + i * ZC_USAGE_RECORD_SIZE, keys[i].bytes, ZC_KEY_SIZE);
        records[i * ZC_USAGE_RECORD_SIZE + ZC_KEY_SIZE] = keys[i].kind;
    }
    uint8_t *sealed = NULL;
    size_t sealed_size = 0;
    /* Keys do not compress: the fastest level. */
    zc_status status = zc_sealed_encode(ZC_USAGE_MAGIC, program, records,
                                        count * ZC_USAGE_RECORD_SIZE, 1, &sealed, &sealed_size);
    free(records);
    if (status != ZC_OK)
        return status;
    char name[USAGE_NAME_SIZE];
    usage_name_of(program, name);
    status = zc_disk_publish(tier, sealed, sealed_size, tier->dir_fd, name);
    free(sealed);
    if (status == ZC_OK)
        zc_disk_prune_usage_lists(tier, 0);
    return status;
}

/* ---- keeping them bounded ---- */

typedef struct usage_file {
    struct timespec last_use;
    char name[NAME_MAX + 1];
} usage_file;

typedef struct usage_files {
    usage_file *files;
    size_t count, capacity;
} usage_files;

static bool add_usage_file(usage_files *list, int dir_fd, const char *name, const zc_fs_ops *ops)
{
    struct stat st;
    if (!zc_disk_has_suffix(name, ZC_USAGE_SUFFIX) ||
        ops->fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return true;
    if (list->count == list->capacity) {
        size_t capacity = list->capacity > 0 ? 2 * list->capacity : 2 * ZC_USAGE_LISTS_KEPT;
        usage_file *grown = realloc(list->files, capacity * sizeof *grown);
        if (grown == NULL)
            return false;
        list->files = grown;
        list->capacity = capacity;
    }
    usage_file *file = &list->files[list->count++];
    file->last_use = st.st_mtim;
    snprintf(file->name, sizeof file->name, "%s", name);
    return true;
}

/* Only the root holds lists: a look there, not a scan of the tier. */
static bool list_usage_files(zc_disk_tier *tier, usage_files *list)
{
    int fd = tier->ops->openat(tier->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (dir == NULL) {
        if (fd >= 0)
            tier->ops->close(fd);
        return false;
    }
    bool ok = true;
    for (struct dirent *dirent; ok && (dirent = readdir(dir)) != NULL;)
        ok = add_usage_file(list, dirfd(dir), dirent->d_name, tier->ops);
    closedir(dir);
    return ok;
}

static int newest_first(const void *a, const void *b)
{
    const usage_file *x = a, *y = b;
    if (x->last_use.tv_sec != y->last_use.tv_sec)
        return x->last_use.tv_sec > y->last_use.tv_sec ? -1 : 1;
    if (x->last_use.tv_nsec != y->last_use.tv_nsec)
        return x->last_use.tv_nsec > y->last_use.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

void zc_disk_prune_usage_lists(zc_disk_tier *tier, int64_t unused_before)
{
    usage_files list = {NULL, 0, 0};
    if (list_usage_files(tier, &list)) {
        if (list.count > 1)
            qsort(list.files, list.count, sizeof *list.files, newest_first);
        for (size_t i = 0; i < list.count; i++) {
            if (i < ZC_USAGE_LISTS_KEPT && list.files[i].last_use.tv_sec >= unused_before)
                continue;
            if (tier->ops->unlinkat(tier->dir_fd, list.files[i].name, 0) != 0 && errno != ENOENT)
                zc_disk_log_errno("cannot remove", list.files[i].name, errno);
        }
    }
    free(list.files);
}
