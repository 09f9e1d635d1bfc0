/* The entries of a cache directory with their headers, for ls, show and
 * stats. Only the header is read: the payload is verify's business. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"
#include "zecache/disk_maintenance.h"

typedef struct entry_collector {
    tool_entry_list *list;
    size_t capacity;
    bool out_of_memory;
} entry_collector;

static bool reserve_one(entry_collector *collector)
{
    tool_entry_list *list = collector->list;
    if (list->count < collector->capacity)
        return true;
    size_t capacity = collector->capacity == 0 ? 64 : 2 * collector->capacity;
    tool_entry *items = realloc(list->items, capacity * sizeof *items);
    if (items == NULL)
        return false;
    list->items = items;
    collector->capacity = capacity;
    return true;
}

static int collect_entry(void *context, const zc_disk_entry_info *info)
{
    entry_collector *collector = context;
    char *path = strdup(info->path);
    if (path == NULL || !reserve_one(collector)) {
        free(path);
        collector->out_of_memory = true;
        return 1;
    }
    tool_entry *entry = &collector->list->items[collector->list->count++];
    memset(entry, 0, sizeof *entry);
    entry->path = path;
    entry->file_size = info->file_size;
    entry->last_use_sec = info->last_use_sec;
    entry->last_use_nsec = info->last_use_nsec;
    entry->is_zecache = info->is_zecache;
    entry->key = info->key;
    size_t length = strlen(path), suffix = strlen(ZC_ENTRY_SUFFIX_OPENCL);
    entry->api = length >= suffix && strcmp(path + length - suffix, ZC_ENTRY_SUFFIX_OPENCL) == 0
                     ? ZC_ENTRY_OPENCL
                     : ZC_ENTRY_LEVEL_ZERO;
    return 0;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(((const tool_entry *)a)->path, ((const tool_entry *)b)->path);
}

/* zc_entry_read_header needs the entry's size for its compressed-size check
 * but reads only the header: mapping the file touches one page. Entries are
 * replaced by rename, never shrunk in place, so the mapping stays valid. */
static zc_status read_header_mapped(int fd, uint64_t size, tool_entry *entry)
{
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        snprintf(entry->header_problem, sizeof entry->header_problem, "cannot map: %s",
                 strerror(errno));
        return ZC_ERR_IO;
    }
    zc_status status = zc_entry_read_header(map, (size_t)size, &entry->header,
                                            entry->header_problem, sizeof entry->header_problem);
    munmap(map, (size_t)size);
    return status;
}

static zc_status read_header_short(int fd, uint64_t size, tool_entry *entry)
{
    unsigned char bytes[ZC_ENTRY_HEADER_SIZE];
    ssize_t got = pread(fd, bytes, (size_t)size, 0);
    return zc_entry_read_header(bytes, got > 0 ? (size_t)got : 0, &entry->header,
                                entry->header_problem, sizeof entry->header_problem);
}

static void read_header(const char *dir, tool_entry *entry)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, entry->path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(entry->header_problem, sizeof entry->header_problem, "cannot open: %s",
                 strerror(errno));
    } else {
        uint64_t size = (uint64_t)st.st_size;
        zc_status status = size < ZC_ENTRY_HEADER_SIZE ? read_header_short(fd, size, entry)
                                                       : read_header_mapped(fd, size, entry);
        entry->header_ok = status == ZC_OK;
    }
    if (fd >= 0)
        close(fd);
}

zc_status tool_list_entries(zc_disk_tier *tier, tool_entry_list *list)
{
    memset(list, 0, sizeof *list);
    entry_collector collector = {.list = list};
    zc_status status = zc_disk_tier_foreach(tier, collect_entry, &collector);
    if (status == ZC_OK && collector.out_of_memory)
        status = ZC_ERR_NOMEM;
    if (status != ZC_OK) {
        tool_free_entries(list);
        return status;
    }
    if (list->count > 0)
        qsort(list->items, list->count, sizeof list->items[0], compare_paths);
    for (size_t i = 0; i < list->count; i++)
        if (list->items[i].is_zecache)
            read_header(zc_disk_tier_dir(tier), &list->items[i]);
    return ZC_OK;
}

void tool_free_entries(tool_entry_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i].path);
    free(list->items);
    memset(list, 0, sizeof *list);
}

const char *tool_entry_name(const tool_entry *entry)
{
    const char *slash = strrchr(entry->path, '/');
    return slash != NULL ? slash + 1 : entry->path;
}

const char *tool_entry_api_short(const tool_entry *entry)
{
    return entry->api == ZC_ENTRY_OPENCL ? "CL" : "L0";
}

bool tool_read_verified(zc_disk_tier *tier, const tool_entry *entry, uint8_t **bytes, size_t *size,
                        uint64_t *bad, uint64_t *drivers)
{
    if (!entry->is_zecache) {
        ++*drivers;
        return false;
    }
    char reason[256];
    if (zc_disk_tier_read_entry(tier, entry->path, bytes, size, reason, sizeof reason) == ZC_OK)
        return true;
    fprintf(stderr, "skipped  %s: %s\n", entry->path, reason);
    ++*bad;
    return false;
}
