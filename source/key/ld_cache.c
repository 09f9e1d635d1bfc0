/* glibc's ld.so.cache. The new format (the default of ldconfig since glibc
 * 2.32, the only one with a hwcap field):
 *
 *   header   char magic[17] "glibc-ld.so.cache", char version[3] "1.1",
 *            u32 nlibs, u32 len_strings, u8 flags (byte order: 2 little,
 *            3 big), u8 padding[3], u32 extension_offset, u32 unused[3]
 *   entries  nlibs x { i32 flags, u32 key, u32 value, u32 osversion,
 *            u64 hwcap }, sorted by name as ld.so's binary search expects
 *   strings  key (the soname) and value (the path) are offsets from the
 *            start of the file
 *
 * ld.so takes, among the entries whose key equals the name and whose flags
 * match its ABI, as its search_cache does (entries for one name are
 * adjacent, so a scan in file order sees them in the order of its binary
 * search): the glibc-hwcaps entries first (hwcap = DL_CACHE_HWCAP_EXTENSION,
 * the ISA level the library needs in bits 32-41, and in the low 32 bits an
 * index into the extension section's array of subdirectory names), the one
 * whose subdirectory is active with the best priority; else the first plain
 * entry, or one with a legacy hwcap that this glibc accepts (hwcaps.c).
 *
 *   extension  at extension_offset (from the start of the file): u32 magic
 *            0xeaa42174, u32 count, count x { u32 tag, u32 flags, u32 offset,
 *            u32 size }; tag 1 is the glibc-hwcaps names, u32 string offsets
 *            from the start of the file
 *
 * The old format (ldconfig -c old, and -c compat, which puts a new-format
 * cache right after it), which ld.so still reads (elf/dl-cache.c):
 *
 *   header   char magic[11] "ld.so-1.7.0", u32 nlibs (at offset 12)
 *   entries  nlibs x { i32 flags, u32 key, u32 value }
 *   strings  key and value are offsets from the end of the entries
 *
 * ld.so uses the new-format cache after the old entries when there is one,
 * its offsets counted from its own start; else the old entries. */
#include "ld_cache.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwcaps.h"

#define MAGIC "glibc-ld.so.cache1.1"
#define MAGIC_SIZE 20
#define HEADER_SIZE 48
#define ENTRY_SIZE 24
#define OLD_MAGIC "ld.so-1.7.0"
#define OLD_MAGIC_SIZE 11
#define OLD_HEADER_SIZE 16
#define OLD_ENTRY_SIZE 12
/* Far more than any real cache (a full desktop system has about 100 KB). */
#define MAX_CACHE_SIZE (64 << 20)

/* The glibc-hwcaps extension (sysdeps/generic/dl-cache.h). */
#define HWCAP_EXTENSION (1ull << 62)
#define ISA_LEVEL_MASK 0x3ff
#define EXTENSION_MAGIC ((uint32_t)-358342284)
#define EXTENSION_TAG_GLIBC_HWCAPS 1

#define FLAG_ELF 0x0001
#define FLAG_ELF_LIBC6 0x0003
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ORDER_FLAG 2
#else
#define NATIVE_ORDER_FLAG 3
#endif

/* The ABI flags ld.so accepts (sysdeps/.../dl-cache.h: _DL_CACHE_DEFAULT_ID,
 * and plain FLAG_ELF). */
#if defined(__x86_64__) && defined(__LP64__)
#define NATIVE_ABI_FLAGS (FLAG_ELF_LIBC6 | 0x0300) /* FLAG_X8664_LIB64 */
#elif defined(__aarch64__)
#define NATIVE_ABI_FLAGS (FLAG_ELF_LIBC6 | 0x0a00) /* FLAG_AARCH64_LIB64 */
#elif defined(__i386__)
#define NATIVE_ABI_FLAGS FLAG_ELF_LIBC6
#endif

static uint32_t read_u32(const uint8_t *at)
{
    uint32_t value;
    memcpy(&value, at, sizeof value);
    return value;
}

static uint64_t read_u64(const uint8_t *at)
{
    uint64_t value;
    memcpy(&value, at, sizeof value);
    return value;
}

/* The NUL-terminated string at offset, or NULL when it does not end inside
 * the file. */
static const char *string_at(const uint8_t *data, size_t size, uint32_t offset)
{
    if (offset >= size || memchr(data + offset, '\0', size - offset) == NULL)
        return NULL;
    return (const char *)data + offset;
}

static bool abi_matches(int32_t flags)
{
#ifdef NATIVE_ABI_FLAGS
    return flags == FLAG_ELF || flags == NATIVE_ABI_FLAGS;
#else
    (void)flags;
    return false; /* unknown ABI: never guess */
#endif
}

/* One table of entries: count entries of entry_size bytes at entries, their
 * strings at offsets from strings (size bytes from there on); hwcap_at: where
 * an entry holds its hwcap (0: none); hwcap_names: the glibc-hwcaps
 * extension's hwcap_name_count string offsets, counted from the start of the
 * file as ld.so counts them (file_size bytes). */
typedef struct cache_table {
    const uint8_t *entries, *strings;
    size_t strings_size;
    uint32_t count;
    size_t entry_size, hwcap_at;
    const uint8_t *file, *hwcap_names;
    size_t file_size;
    uint32_t hwcap_name_count;
} cache_table;

/* A glibc-hwcaps entry: only DL_CACHE_HWCAP_EXTENSION set in the upper half,
 * besides the ISA level bits. */
static bool is_hwcaps_extension(uint64_t hwcap)
{
    return ((hwcap >> 32) & ~(uint64_t)ISA_LEVEL_MASK) == (HWCAP_EXTENSION >> 32);
}

/* dl_cache_hwcap_isa_level_compatible (x86; elsewhere every level is). */
static bool isa_level_compatible(const zc_hwcaps *hwcaps, uint64_t hwcap)
{
#if defined(__x86_64__)
    uint64_t level = (hwcap >> 32) & ISA_LEVEL_MASK;
    return level < 32 && ((1u << level) & hwcaps->isa_levels) == (1u << level);
#else
    (void)hwcaps;
    (void)hwcap;
    return true;
#endif
}

/* The priority of a glibc-hwcaps entry's subdirectory (the low half of its
 * hwcap indexes the extension's names), 0 when not active here. */
static uint32_t entry_priority(const cache_table *table, const zc_hwcaps *hwcaps, uint64_t hwcap)
{
    uint32_t index = (uint32_t)hwcap;
    if (index >= table->hwcap_name_count)
        return 0;
    const char *name =
        string_at(table->file, table->file_size, read_u32(table->hwcap_names + (size_t)index * 4));
    return name != NULL ? zc_hwcaps_priority(hwcaps, name) : 0;
}

/* The value of an entry, NULL when ld.so could not use it. */
static const char *entry_path(const cache_table *table, const uint8_t *entry, size_t path_size)
{
    const char *value = string_at(table->strings, table->strings_size, read_u32(entry + 8));
    if (value == NULL || value[0] != '/' || strlen(value) >= path_size)
        return NULL; /* ld.so checks the value's bounds too and goes on */
    return value;
}

/* elf/dl-cache.c search_cache over the entries for name, in file order:
 * among glibc-hwcaps entries (ldconfig lists them first) the active
 * subdirectory of the best priority; else the first entry without a hwcap,
 * or with a legacy one this glibc accepts. */
static const char *table_lookup(const cache_table *table, const char *name, size_t path_size)
{
    const zc_hwcaps *hwcaps = zc_hwcaps_of_process();
    const char *best = NULL;
    uint32_t best_priority = 0;
    for (uint32_t i = 0; i < table->count; i++) {
        const uint8_t *entry = table->entries + (size_t)i * table->entry_size;
        const char *key = string_at(table->strings, table->strings_size, read_u32(entry + 4));
        int32_t flags = (int32_t)read_u32(entry);
        const char *value = entry_path(table, entry, path_size);
        if (key == NULL || strcmp(key, name) != 0 || !abi_matches(flags) || value == NULL)
            continue;
        uint64_t hwcap = table->hwcap_at != 0 ? read_u64(entry + table->hwcap_at) : 0;
        bool named = hwcap != 0 && is_hwcaps_extension(hwcap);
        if (named && !isa_level_compatible(hwcaps, hwcap))
            continue;
        if (!named && best != NULL)
            break;
        if (!named && hwcap != 0 && !zc_hwcaps_legacy_entry_accepted(hwcaps, hwcap))
            continue;
        if (named) {
            uint32_t priority = entry_priority(table, hwcaps, hwcap);
            if (priority == 0 || (best != NULL && priority >= best_priority))
                continue;
            best_priority = priority;
        }
        best = value;
        if (!named && flags == NATIVE_ABI_FLAGS)
            break;
    }
    return best;
}

/* The glibc-hwcaps extension section of a new-format cache whose header is
 * at header, as cache_extension_load finds it; none when absent or
 * malformed (ld.so then gives every glibc-hwcaps entry priority 0). */
static void find_hwcap_names(const uint8_t *header, cache_table *table)
{
    uint32_t offset = read_u32(header + 32);
    size_t size = table->file_size;
    if (offset == 0 || offset % 4 != 0 || (size_t)offset + 8 > size ||
        read_u32(table->file + offset) != EXTENSION_MAGIC)
        return;
    uint32_t count = read_u32(table->file + offset + 4);
    if (count > (size - offset - 8) / 16)
        return;
    const uint8_t *names = NULL;
    uint32_t name_bytes = 0;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *section = table->file + offset + 8 + (size_t)i * 16;
        uint32_t at = read_u32(section + 8), length = read_u32(section + 12);
        if ((uint64_t)at + length > size)
            return;
        if (read_u32(section) == EXTENSION_TAG_GLIBC_HWCAPS)
            names = table->file + at, name_bytes = length;
    }
    if (names != NULL && name_bytes != 0 && (names - table->file) % 4 == 0 && name_bytes % 4 == 0)
        table->hwcap_names = names, table->hwcap_name_count = name_bytes / 4;
}

/* A new-format cache at data, in a file that starts at file: its table, or
 * false when it is not one. */
static bool new_format_table(const uint8_t *data, size_t size, const uint8_t *file,
                             size_t file_size, cache_table *table)
{
    if (size < HEADER_SIZE || memcmp(data, MAGIC, MAGIC_SIZE) != 0 || data[28] != NATIVE_ORDER_FLAG)
        return false;
    uint32_t count = read_u32(data + 20);
    if (count > (size - HEADER_SIZE) / ENTRY_SIZE)
        return false;
    *table = (cache_table){.entries = data + HEADER_SIZE,
                           .strings = data,
                           .strings_size = size,
                           .count = count,
                           .entry_size = ENTRY_SIZE,
                           .hwcap_at = 16,
                           .file = file,
                           .file_size = file_size};
    find_hwcap_names(data, table);
    return true;
}

/* An old-format cache: its own table, or the new-format cache after it. */
static bool old_format_table(const uint8_t *data, size_t size, cache_table *table)
{
    if (size < OLD_HEADER_SIZE || memcmp(data, OLD_MAGIC, OLD_MAGIC_SIZE) != 0)
        return false;
    uint32_t count = read_u32(data + 12);
    if (count > (size - OLD_HEADER_SIZE) / OLD_ENTRY_SIZE)
        return false;
    size_t end = OLD_HEADER_SIZE + (size_t)count * OLD_ENTRY_SIZE;
    if (new_format_table(data + end, size - end, data, size, table))
        return true;
    *table = (cache_table){.entries = data + OLD_HEADER_SIZE,
                           .strings = data + end,
                           .strings_size = size - end,
                           .count = count,
                           .entry_size = OLD_ENTRY_SIZE};
    return true;
}

bool zc_ld_cache_lookup(const uint8_t *data, size_t size, const char *name, char *path,
                        size_t path_size)
{
    cache_table table;
    if (data == NULL || name == NULL || path == NULL || path_size == 0 ||
        !(new_format_table(data, size, data, size, &table) || old_format_table(data, size, &table)))
        return false;
    const char *found = table_lookup(&table, name, path_size);
    if (found == NULL)
        return false;
    memcpy(path, found, strlen(found) + 1);
    return true;
}

/* Read, not mapped: the file is small (tens of KB) and unmapping costs more
 * than reading in a process with many threads. */
bool zc_ld_cache_lookup_file(const char *cache_path, const char *name, char *path, size_t path_size)
{
    int fd = open(cache_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    uint8_t *data = NULL;
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        st.st_size <= MAX_CACHE_SIZE && (data = malloc((size_t)st.st_size)) != NULL)
        got = pread(fd, data, (size_t)st.st_size, 0);
    close(fd);
    bool found = got == st.st_size && zc_ld_cache_lookup(data, (size_t)got, name, path, path_size);
    free(data);
    return found;
}
