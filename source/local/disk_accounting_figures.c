/* The figures one entry adds (zecache/disk_figures.h), measured as a scan
 * counts them, and their upkeep in a locked section: added after a store,
 * subtracted around a removal, recorded inputs added. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_internal.h"
#include "zecache/entry.h"
#include "zecache/recipe.h"

/* Only our own entries' headers are read: the driver's are of its format.
 * A header that does not check counts as unreadable; one that could not be
 * read (an I/O error) leaves the figures unknown: false. */
static bool measure_header(zc_disk_tier *tier, int dir_fd, const char *name, uint64_t size,
                           zc_disk_figures *figures)
{
    zc_key key;
    if (!zc_disk_parse_entry_name(name, &key)) {
        figures->foreign_entries = 1;
        return true;
    }
    uint8_t head[ZC_ENTRY_HEADER_SIZE];
    size_t got = 0;
    zc_entry_header header;
    int fd = tier->ops->openat(dir_fd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool read = zc_disk_pread_upto(tier->ops, fd, head, sizeof head, &got) == ZC_OK;
    if (read && got == sizeof head &&
        zc_entry_check_head(head, size, NULL, 0, &header, NULL, 0) == ZC_OK) {
        figures->readable_bytes = size;
        figures->uncompressed_bytes = header.binary_size + header.log_size;
    }
    zc_disk_close_keeping_errno(tier->ops, fd);
    return read;
}

bool zc_disk_measure_entry(zc_disk_tier *tier, int dir_fd, const char *name,
                           zc_disk_figures *figures)
{
    memset(figures, 0, sizeof *figures);
    struct stat st, recipe;
    char recipe_name[ZC_REL_PATH_SIZE];
    uint64_t sidecars;
    if (tier->ops->fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT; /* gone: counts nothing */
    if (!S_ISREG(st.st_mode))
        return true; /* no entry: counts nothing */
    if (!zc_disk_trace_size(tier, dir_fd, name, &sidecars))
        return false;
    uint64_t size = (uint64_t)st.st_size;
    if (zc_disk_sidecar_name(name, ZC_RECIPE_SUFFIX, recipe_name, sizeof recipe_name) &&
        tier->ops->fstatat(dir_fd, recipe_name, &recipe, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(recipe.st_mode)) {
        figures->counted.recipes = 1;
        figures->counted.recipe_bytes = (uint64_t)recipe.st_size;
    }
    figures->counted.entries = 1;
    figures->counted.total = size + sidecars;
    figures->counted.entry_bytes = size + sidecars - figures->counted.recipe_bytes;
    figures->file_bytes = size;
    figures->opencl_entries = zc_disk_has_suffix(name, ZC_ENTRY_SUFFIX_OPENCL) ? 1 : 0;
    return measure_header(tier, dir_fd, name, size, figures);
}

enum { FIGURE_COUNT = sizeof(zc_disk_figures) / sizeof(uint64_t) };
_Static_assert(sizeof(zc_disk_figures) == ZC_ACCOUNTING_FIGURE_COUNT * sizeof(uint64_t),
               "the figures are u64 fields alone");

/* The figures as one array: the struct holds u64 fields and nothing else. */
static uint64_t *fields_of(zc_disk_figures *figures)
{
    return (uint64_t *)(void *)figures;
}

void zc_disk_figures_add(zc_disk_figures *to, const zc_disk_figures *figures)
{
    zc_disk_figures copy = *figures;
    for (size_t i = 0; i < FIGURE_COUNT; i++)
        fields_of(to)[i] += fields_of(&copy)[i];
}

bool zc_disk_figures_subtract(zc_disk_figures *from, const zc_disk_figures *figures)
{
    zc_disk_figures copy = *figures;
    for (size_t i = 0; i < FIGURE_COUNT; i++)
        if (fields_of(&copy)[i] > fields_of(from)[i])
            return false;
    for (size_t i = 0; i < FIGURE_COUNT; i++)
        fields_of(from)[i] -= fields_of(&copy)[i];
    return true;
}

/* The accounting file counts the shards; the root holds the driver's flat
 * files, which it writes without us. */
static bool in_shard(zc_disk_tier *tier, int parent_fd)
{
    struct stat st;
    if (tier->ops->fstat(parent_fd, &st) != 0) {
        zc_disk_accounting_forget(tier);
        return false;
    }
    return st.st_dev != tier->accounting.root_dev || st.st_ino != tier->accounting.root_ino;
}

bool zc_disk_accounting_removing(zc_disk_tier *tier, int parent_fd, const char *name,
                                 zc_disk_figures *gone)
{
    if (!tier->accounting.known || !in_shard(tier, parent_fd))
        return false;
    if (zc_disk_measure_entry(tier, parent_fd, name, gone))
        return true;
    zc_disk_accounting_forget(tier);
    return false;
}

void zc_disk_accounting_removed(zc_disk_tier *tier, const zc_disk_figures *gone)
{
    if (tier->accounting.known && !zc_disk_figures_subtract(&tier->accounting.shards, gone))
        zc_disk_accounting_forget(tier);
}

void zc_disk_accounting_entry_added(zc_disk_tier *tier, int parent_fd, const char *name)
{
    zc_disk_figures added;
    if (!tier->accounting.known || !in_shard(tier, parent_fd))
        return;
    if (zc_disk_measure_entry(tier, parent_fd, name, &added))
        zc_disk_figures_add(&tier->accounting.shards, &added);
    else
        zc_disk_accounting_forget(tier);
}

void zc_disk_accounting_inputs_added(zc_disk_tier *tier, uint64_t recipe_bytes, uint64_t blobs,
                                     uint64_t blob_bytes)
{
    zc_disk_usage *counted = &tier->accounting.shards.counted;
    if (!tier->accounting.known)
        return;
    counted->recipes += recipe_bytes > 0 ? 1 : 0;
    counted->recipe_bytes += recipe_bytes;
    counted->blobs += blobs;
    counted->blob_bytes += blob_bytes;
    counted->total += recipe_bytes + blob_bytes;
}

void zc_disk_accounting_input_removed(zc_disk_tier *tier, bool recipe, uint64_t size)
{
    zc_disk_figures gone;
    memset(&gone, 0, sizeof gone);
    gone.counted.recipes = recipe ? 1 : 0;
    gone.counted.recipe_bytes = recipe ? size : 0;
    gone.counted.blobs = recipe ? 0 : 1;
    gone.counted.blob_bytes = recipe ? 0 : size;
    gone.counted.total = size;
    zc_disk_accounting_removed(tier, &gone);
}

/* The census holds the names once its scan is over (zc_census_entry.rel). */
static bool in_shard_rel(const char *rel)
{
    return strchr(rel, '/') != NULL;
}

void zc_disk_accounting_check_census(zc_disk_tier *tier, const zc_census *census)
{
    const zc_disk_usage *kept = &tier->accounting.shards.counted;
    uint64_t entries = 0, recipes = 0, blobs = 0, bytes = 0;
    if (!tier->accounting.known)
        return;
    for (size_t i = 0; i < census->entry_count; i++)
        if (in_shard_rel(census->entries[i].rel)) {
            entries++;
            recipes += census->entries[i].recipe;
            bytes += census->entries[i].size;
        }
    for (size_t i = 0; i < census->blob_count; i++)
        if (in_shard_rel(census->blobs[i].rel)) {
            blobs++;
            bytes += census->blobs[i].size;
        }
    /* Recipes too: one planted by hand with no bytes changes no total. */
    if (census->out_of_memory || entries != kept->entries || recipes != kept->recipes ||
        blobs != kept->blobs || bytes != kept->total)
        zc_disk_accounting_forget(tier);
}
