/* Eviction from one shard (one k0/k1 directory of the 256) at a time, so
 * that a store at the limit lists one directory, not the whole cache: the
 * entries' keys are hashes, so every shard holds about 1/256 of them and of
 * their bytes, and its oldest entries are about the cache's oldest. A
 * blob goes with the last recipe naming it, by its count
 * (disk_blob_refs.c). What a shard pass cannot do (blobs of unknown count,
 * the driver's flat files in the root, a shard too small to free enough)
 * is left to the full sweep (disk_evict.c), which zc_disk_make_room falls
 * back to. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_blob_refs.h"
#include "disk_internal.h"
#include "zecache/log.h"
#include "zecache/recipe.h"

typedef struct shard_file {
    struct timespec last_use;
    uint64_t size; /* with its .trace and .recipe, as config.file counts it */
    char name[NAME_MAX + 1];
} shard_file;

typedef struct shard_list {
    shard_file *files;
    size_t count, capacity;
} shard_list;

static bool add_shard_file(zc_disk_tier *tier, shard_list *list, int dir_fd, const char *name)
{
    struct stat st;
    uint64_t trace_size;
    if (!zc_disk_is_entry_file_name(name) ||
        tier->ops->fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        !zc_disk_trace_size(tier, dir_fd, name, &trace_size))
        return true; /* gone, or not ours to count: the full sweep decides */
    if (!zc_disk_grow((void **)&list->files, &list->capacity, list->count + 1, sizeof *list->files))
        return false;
    shard_file *file = &list->files[list->count++];
    file->last_use = st.st_mtim;
    file->size = (uint64_t)st.st_size + trace_size;
    snprintf(file->name, sizeof file->name, "%s", name);
    return true;
}

/* Takes ownership of fd. */
static bool list_shard(zc_disk_tier *tier, int fd, shard_list *list)
{
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        tier->ops->close(fd);
        return false;
    }
    bool ok = true;
    for (struct dirent *dirent; ok && (dirent = readdir(dir)) != NULL;) {
        atomic_fetch_add_explicit(&tier->dirents_read, 1, memory_order_relaxed);
        ok = add_shard_file(tier, list, dirfd(dir), dirent->d_name);
    }
    closedir(dir);
    return ok;
}

static int oldest_first(const void *a, const void *b)
{
    const shard_file *x = a, *y = b;
    int by_time = zc_disk_compare_times(&x->last_use, &y->last_use);
    return by_time != 0 ? by_time : strcmp(x->name, y->name);
}

/* How far one store evicts: to need_at_most (incoming fits), then on to
 * keep_at_most (room to spare) but by at most spare_entries more entries,
 * so that what one store pays under the lock does not grow with the cache
 * (a shard's share of a large cache holds hundreds of entries). */
typedef struct evict_goal {
    uint64_t need_at_most, keep_at_most;
    uint64_t spare_entries; /* left to remove beyond the need */
    const char *spared;     /* the entry a recording adds to (NULL: none), in the first shard */
} evict_goal;

static bool goal_open(const zc_disk_lock *lock, const evict_goal *goal)
{
    return lock->total > goal->need_at_most ||
           (lock->total > goal->keep_at_most && goal->spare_entries > 0);
}

/* Removes file (in fd) and the blobs only its recipe named: ZC_MISS when it
 * stays, ZC_ERR_IO when the total became unknown. */
static zc_status remove_entry(zc_disk_tier *tier, zc_disk_lock *lock, int fd,
                              const shard_file *file)
{
    zc_recipe inputs;
    uint64_t damaged = 0; /* a recipe removed as damaged, counted in file->size */
    zc_status recipe = zc_disk_sweep_recipe(tier, fd, file->name, &inputs, &damaged);
    uint64_t trace_size; /* already in file->size, from the listing */
    zc_status status = ZC_MISS;
    if (zc_disk_unlink_entry(tier, fd, file->name, &trace_size))
        status = zc_disk_account_removed(tier, lock, file->size);
    else if (damaged > 0 && zc_disk_account_removed(tier, lock, damaged) != ZC_OK)
        status = ZC_ERR_IO;
    /* Its recipe is gone: one user less for what it named. One that could
     * not be read leaves its blobs counted one too many, for the sweep. */
    if (status == ZC_OK && recipe == ZC_OK)
        status = zc_blob_refs_release(tier, lock, &inputs);
    zc_recipe_free(&inputs);
    return status;
}

/* Removes shard's least recently used entries until goal is met; the
 * entries removed, or -1 when the total became unknown. */
static int64_t evict_from_shard(zc_disk_tier *tier, zc_disk_lock *lock, const char *shard,
                                evict_goal *goal)
{
    int fd = zc_disk_open_dir(tier, shard, false);
    if (fd < 0)
        return 0; /* no such shard yet: nothing to free there */
    shard_list list = {NULL, 0, 0};
    int dir_fd = tier->ops->openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    int64_t removed = 0;
    if (dir_fd >= 0 && list_shard(tier, dir_fd, &list) && list.count > 0) {
        qsort(list.files, list.count, sizeof *list.files, oldest_first);
        zc_disk_begin_change(tier, lock);
        for (size_t i = 0; i < list.count && goal_open(lock, goal) && removed >= 0; i++) {
            bool beyond_need = lock->total <= goal->need_at_most;
            if (goal->spared != NULL && strcmp(list.files[i].name, goal->spared) == 0)
                continue;
            zc_status status = remove_entry(tier, lock, fd, &list.files[i]);
            if (status == ZC_MISS)
                continue; /* it still counts; the next one may go */
            goal->spare_entries -= beyond_need ? 1 : 0;
            removed = status == ZC_OK ? removed + 1 : -1;
        }
        if (removed >= 0)
            zc_disk_set_total(tier, lock, lock->total);
    }
    free(list.files);
    tier->ops->close(fd);
    return removed;
}

static void shard_name(unsigned index, char shard[ZC_ENTRY_DIR_SIZE])
{
    static const char hex[] = "0123456789abcdef";
    shard[0] = hex[(index / 16) % 16];
    shard[1] = '/';
    shard[2] = hex[index % 16];
    shard[3] = '\0';
}

static unsigned shard_index(const char *shard)
{
    unsigned index = 0;
    for (int i = 0; i < 3; i += 2) {
        char c = shard[i];
        unsigned digit = c >= 'a' ? (unsigned)(c - 'a' + 10) : (unsigned)(c - '0');
        index = index * 16 + (digit & 15);
    }
    return index;
}

zc_status zc_disk_evict_from_shards(zc_disk_tier *tier, zc_disk_lock *lock, uint64_t incoming,
                                    const char *first_shard, const char *spared)
{
    /* Freeing a third of a shard's share beyond the need, as the driver
     * frees a third of the limit, so the next stores do not each evict. */
    uint64_t spare = tier->max_size / (3 * ZC_SHARD_COUNT);
    uint64_t need_at_most = tier->max_size - incoming;
    evict_goal goal = {need_at_most, need_at_most > spare ? need_at_most - spare : 0,
                       ZC_SPARE_ENTRIES_MAX, spared};
    unsigned first = shard_index(first_shard);
    uint64_t evicted = 0;
    for (unsigned visit = 0; visit < ZC_SHARD_VISITS_MAX && goal_open(lock, &goal); visit++) {
        char shard[ZC_ENTRY_DIR_SIZE];
        shard_name((first + visit) % ZC_SHARD_COUNT, shard);
        int64_t removed = evict_from_shard(tier, lock, shard, &goal);
        goal.spared = NULL; /* it is in the first shard */
        if (removed < 0)
            return ZC_ERR_IO;
        evicted += (uint64_t)removed;
    }
    atomic_fetch_add_explicit(&tier->evictions, evicted, memory_order_relaxed);
    if (evicted > 0)
        zc_log_info("evicted %llu entries from the shards from %s on in %s",
                    (unsigned long long)evicted, first_shard, tier->dir);
    return lock->total + incoming <= tier->max_size ? ZC_OK : ZC_MISS;
}

uint64_t zc_disk_tier_dirents_read(zc_disk_tier *tier)
{
    return atomic_load_explicit(&tier->dirents_read, memory_order_relaxed);
}
