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
 * ld.so takes, among the entries whose key equals the name, the first one
 * whose flags match its ABI and whose hwcap it supports. Entries for one name
 * are adjacent, so a scan in file order finds the same entry as its binary
 * search. Entries with a hwcap (glibc-hwcaps subdirectories, legacy hardware
 * capabilities) are skipped: which of them ld.so would take depends on the
 * CPU, and the check after the first compile (compiler_identity.c) catches
 * a library loaded from one of them.
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
 * an entry holds its hwcap (0: none). */
typedef struct cache_table {
    const uint8_t *entries, *strings;
    size_t strings_size;
    uint32_t count;
    size_t entry_size, hwcap_at;
} cache_table;

static bool table_lookup(const cache_table *table, const char *name, char *path, size_t path_size)
{
    for (uint32_t i = 0; i < table->count; i++) {
        const uint8_t *entry = table->entries + (size_t)i * table->entry_size;
        const char *key = string_at(table->strings, table->strings_size, read_u32(entry + 4));
        if (key == NULL || strcmp(key, name) != 0 || !abi_matches((int32_t)read_u32(entry)) ||
            (table->hwcap_at != 0 && read_u64(entry + table->hwcap_at) != 0))
            continue;
        const char *value = string_at(table->strings, table->strings_size, read_u32(entry + 8));
        if (value == NULL || value[0] != '/' || strlen(value) >= path_size)
            continue; /* ld.so checks the value's bounds too and goes on */
        memcpy(path, value, strlen(value) + 1);
        return true;
    }
    return false;
}

/* A new-format cache at data: its table, or false when it is not one. */
static bool new_format_table(const uint8_t *data, size_t size, cache_table *table)
{
    if (size < HEADER_SIZE || memcmp(data, MAGIC, MAGIC_SIZE) != 0 || data[28] != NATIVE_ORDER_FLAG)
        return false;
    uint32_t count = read_u32(data + 20);
    if (count > (size - HEADER_SIZE) / ENTRY_SIZE)
        return false;
    *table = (cache_table){data + HEADER_SIZE, data, size, count, ENTRY_SIZE, 16};
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
    if (new_format_table(data + end, size - end, table))
        return true;
    *table =
        (cache_table){data + OLD_HEADER_SIZE, data + end, size - end, count, OLD_ENTRY_SIZE, 0};
    return true;
}

bool zc_ld_cache_lookup(const uint8_t *data, size_t size, const char *name, char *path,
                        size_t path_size)
{
    cache_table table;
    if (data == NULL || name == NULL || path == NULL || path_size == 0 ||
        !(new_format_table(data, size, &table) || old_format_table(data, size, &table)))
        return false;
    return table_lookup(&table, name, path, path_size);
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
