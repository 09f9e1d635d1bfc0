/* Helpers every kind of test file needs: scratch directories, whole files in
 * and out, the test kernels. Header-only, as the other support headers, so a
 * test stays one source file. */
#ifndef ZC_TEST_SUPPORT_H
#define ZC_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static inline int t_remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (type == FTW_DP)
        chmod(path, 0700); /* undo a test's chmod so rmdir works for non-root */
    remove(path);          /* one that cannot go must not keep the rest */
    return 0;
}

/* Removes dir and everything beneath it (a fixture's .fini). */
static inline void t_remove_tree(const char *dir)
{
    nftw(dir, t_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* root: a new directory made from pattern ("/tmp/zc_x_XXXXXX"); cache:
 * root/cache, not created. */
static inline void t_make_scratch(char *root, size_t root_size, const char *pattern, char *cache,
                                  size_t cache_size)
{
    snprintf(root, root_size, "%s", pattern);
    cr_assert_not_null(mkdtemp(root), "mkdtemp %s", pattern);
    snprintf(cache, cache_size, "%s/cache", root);
}

static inline bool t_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The text of path, cut to size - 1 bytes; "" when it cannot be read. */
static inline void t_read_text(const char *path, char *text, size_t size)
{
    FILE *file = fopen(path, "r");
    size_t length = file != NULL ? fread(text, 1, size - 1, file) : 0;
    text[length] = '\0';
    if (file != NULL)
        fclose(file);
}

/* The bytes of path, malloc'd (one spare byte after them). */
static inline uint8_t *t_read_bytes(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    cr_assert_not_null(file, "cannot open %s", path);
    cr_assert_eq(fseek(file, 0, SEEK_END), 0);
    long length = ftell(file);
    cr_assert_geq(length, 0);
    rewind(file);
    uint8_t *data = malloc((size_t)length + 1);
    cr_assert_eq(fread(data, 1, (size_t)length, file), (size_t)length);
    fclose(file);
    *size = (size_t)length;
    return data;
}

static inline void t_write_file(const char *path, const void *bytes, size_t size)
{
    FILE *file = fopen(path, "wb");
    cr_assert_not_null(file, "cannot create %s", path);
    cr_assert_eq(fwrite(bytes, 1, size, file), size);
    cr_assert_eq(fclose(file), 0);
}

#ifdef ZC_KERNEL_DIR
/* ZC_KERNEL_DIR/<name>.spv, malloc'd. */
#define T_SYSTEM_LIB_DIR "/usr/lib/x86_64-linux-gnu"

/* The file name Intel's driver on this machine opens its compiler by: IGC
 * 2.x's libigc.so.2 (current drivers) or IGC 1.x's libigc.so.1 (22.43). */
static inline const char *t_system_igc_name(void)
{
    return t_exists(T_SYSTEM_LIB_DIR "/libigc.so.2") ? "libigc.so.2" : "libigc.so.1";
}

/* A remote secret file, readable by its owner only. */
static inline void t_write_secret(const char *path, const char *text)
{
    t_write_file(path, text, strlen(text));
    cr_assert_eq(chmod(path, 0600), 0);
}

/* Runs a shell command line, its output (cut to size - 1 bytes) in output;
 * returns its exit status (-1 when it did not exit). */
static inline int t_run_capturing(const char *line, char *output, size_t size)
{
    FILE *pipe = popen(line, "r");
    cr_assert_not_null(pipe);
    size_t length = fread(output, 1, size - 1, pipe);
    output[length] = '\0';
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The process's peak resident memory so far, in KiB. */
static inline long t_max_rss_kib(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

static inline void *t_read_kernel(const char *name, size_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.spv", ZC_KERNEL_DIR, name);
    FILE *file = fopen(path, "rb");
    cr_assert_not_null(file, "cannot open %s", path);
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    void *bytes = malloc((size_t)length);
    cr_assert_eq(fread(bytes, 1, (size_t)length, file), (size_t)length);
    fclose(file);
    *size = (size_t)length;
    return bytes;
}
#endif

/* zecache's files other than entries: recorded inputs (NEO_CACHE_RECORD_INPUTS,
 * on by default: a recipe beside its entry and SPIR-V named by its SHA-256),
 * programs' usage lists (NEO_CACHE_PREFETCH, on by default) and the figures
 * zecache stats reads (zecache.accounting). */
static inline bool is_zecache_side_file_name(const char *name)
{
    size_t hex = strspn(name, "0123456789abcdef");
    if (strcmp(name, "zecache.accounting") == 0)
        return true;
    return hex == 64 &&
           (strcmp(name + hex, ".recipe") == 0 || strcmp(name + hex, ".spirv") == 0 ||
            strcmp(name + hex, ".spirv_refs") == 0 || strcmp(name + hex, ".l0_usage") == 0);
}

#endif
