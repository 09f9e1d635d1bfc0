/* A non-IGC driver's compiler, identified by its files (driver_compiler.h).
 *
 * The libraries: the one dladdr names for the address given, then, breadth
 * first, each DT_NEEDED name of each (read from the file, elf_file.h),
 * resolved to the object the dynamic linker loaded under that name in this
 * process (dlopen RTLD_NOLOAD matches loaded objects by name and soname
 * before any search, so nothing is loaded), else where library_search.h
 * says the linker would find it for that object. Each path once.
 *
 * PoCL's files: its device modules and the files its compiler reads are
 * found relative to the library, as PoCL finds them: <libdir>/pocl/ (the
 * device modules, whose own needed libraries join the closure when they are
 * loaded), <libdir>/../../share/pocl/ (kernel library bitcode and the
 * headers its front end includes), and the resource directory of the clang
 * it links (<the real directory of libclang-cpp>/clang/: the compiler's
 * builtin headers). Every entry beneath them, to ZC_WALK_DEPTH levels, is
 * keyed by its path, type, size and mtime, in name order; a directory
 * missing is keyed as missing. Not keyed: the linker PoCL runs to make a
 * kernel's shared object when it is enqueued (the program binary cached is
 * made before that and holds bitcode).
 *
 * PoCL's variables: POCL_* as the process has them when identified (PoCL
 * reads them when it starts), but for those that only log, trace, pause or
 * steer PoCL's own kernel cache (not_code_variables). */
#include "zecache/driver_compiler.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "byte_order.h"
#include "elf_file.h"
#include "key_record.h"
#include "library_closure.h"
#include "library_search.h"

extern char **environ;

#define ZC_WALK_DEPTH 6

typedef struct driver_file {
    char *path;
    uint8_t type; /* 0 missing, 1 regular file, 2 directory, 3 other */
    uint64_t size;
    int64_t mtime_sec, mtime_nsec;
} driver_file;

struct zc_driver_compiler {
    char path[PATH_MAX];
    bool pocl;
    zc_library_identity *libraries;
    size_t library_count;
    driver_file *files;
    size_t file_count;
    char **variables;
    size_t variable_count;
    size_t budget; /* ZC_DRIVER_COMPILER_FILES_MAX less what is kept */
    char *reason;
    size_t reason_size;
};

static const char *const not_code_variables[] = {
    "POCL_DEBUG",
    "POCL_DEBUG_LLVM_PASSES",
    "POCL_KERNEL_CACHE",
    "POCL_CACHE_DIR",
    "POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES",
    "POCL_TRACING",
    "POCL_TRACING_FILTER",
    "POCL_TRACING_OPT",
    "POCL_STARTUP_DELAY",
    "POCL_VECTORIZER_REMARKS",
};

/* Read by PoCL at every build (3.1 and 6.0: pocl_build.c, pocl_llvm_build.cc,
 * pocl_llvm_wg.cc, common_driver.c, llvmopencl/'s passes and linker.cpp),
 * not when it starts; POCL_WORK_GROUP_METHOD at both. */
static const char *const pocl_build_variables[] = {
    "POCL_EXTRA_BUILD_FLAGS",
    "POCL_IGNORE_CL_STD",
    "POCL_BUILDING",
    "POCL_LLVM_VERIFY",
    "POCL_LLVM_ALWAYS_INLINE",
    "POCL_LLVM_MOVE_NONKERNELS",
    "POCL_WORK_GROUP_METHOD",
    "POCL_FULL_REPLICATION_THRESHOLD",
    "POCL_WILOOPS_MAX_UNROLL_COUNT",
    "POCL_FORCE_PARALLEL_OUTER_LOOP",
    "POCL_BINARY_SPECIALIZE_WG",
    "POCL_BITCODE_FINALIZER",
};

static bool spend(zc_driver_compiler *c)
{
    if (c->budget == 0)
        return false;
    c->budget--;
    return true;
}

/* ---- libraries ---- */

static bool has_library(const zc_driver_compiler *c, const char *path)
{
    for (size_t i = 0; i < c->library_count; i++)
        if (strcmp(c->libraries[i].path, path) == 0)
            return true;
    return false;
}

/* Adds the library at path (symlinks resolved in the identity) as name. */
static zc_status add_library(zc_driver_compiler *c, const char *path, const char *name)
{
    zc_library_identity identity;
    if (zc_library_identity_describe(path, name, &identity) != ZC_OK)
        return zc_explain(ZC_NOT_CACHEABLE, c->reason, c->reason_size,
                          "the driver's library %s cannot be read", path);
    if (has_library(c, identity.path))
        return ZC_OK;
    if (!spend(c))
        return zc_explain(ZC_NOT_CACHEABLE, c->reason, c->reason_size,
                          "the driver needs more files than the bound");
    zc_library_identity *grown =
        realloc(c->libraries, (c->library_count + 1) * sizeof *c->libraries);
    if (grown == NULL)
        return ZC_ERR_NOMEM;
    c->libraries = grown;
    c->libraries[c->library_count++] = identity;
    return ZC_OK;
}

typedef struct needed_walk {
    zc_driver_compiler *compiler;
    const char *needed_by;
    zc_status status;
} needed_walk;

static bool on_needed(void *context, const char *name)
{
    needed_walk *walk = context;
    char path[PATH_MAX];
    if (!zc_library_resolve_needed(name, walk->needed_by, NULL, path))
        walk->status =
            zc_explain(ZC_NOT_CACHEABLE, walk->compiler->reason, walk->compiler->reason_size,
                       "%s, needed by %s, is not found", name, walk->needed_by);
    else
        walk->status = add_library(walk->compiler, path, name);
    return walk->status == ZC_OK;
}

/* The closure of the libraries from index first on: each one's needed
 * libraries are appended, so the loop reaches them in turn. */
static zc_status close_libraries(zc_driver_compiler *c, size_t first)
{
    for (size_t i = first; i < c->library_count; i++) {
        char needed_by[PATH_MAX];
        snprintf(needed_by, sizeof needed_by, "%s", c->libraries[i].path);
        needed_walk walk = {c, needed_by, ZC_OK};
        if (!zc_elf_read_needed(needed_by, on_needed, &walk))
            return walk.status != ZC_OK
                       ? walk.status
                       : zc_explain(ZC_NOT_CACHEABLE, c->reason, c->reason_size,
                                    "%s has no readable dynamic section", needed_by);
    }
    return ZC_OK;
}

/* ---- files ---- */

static zc_status add_file(zc_driver_compiler *c, const char *path, const struct stat *st)
{
    if (!spend(c))
        return zc_explain(ZC_NOT_CACHEABLE, c->reason, c->reason_size,
                          "the driver needs more files than the bound");
    driver_file *grown = realloc(c->files, (c->file_count + 1) * sizeof *c->files);
    if (grown == NULL)
        return ZC_ERR_NOMEM;
    c->files = grown;
    driver_file *f = &c->files[c->file_count];
    *f = (driver_file){.path = strdup(path)};
    if (f->path == NULL)
        return ZC_ERR_NOMEM;
    c->file_count++;
    if (st != NULL) {
        f->type = S_ISREG(st->st_mode) ? 1 : S_ISDIR(st->st_mode) ? 2 : 3;
        f->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
        f->mtime_sec = st->st_mtim.tv_sec;
        f->mtime_nsec = st->st_mtim.tv_nsec;
    }
    return ZC_OK;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir but . and .., sorted; NULL with *count 0 when it cannot
 * be read. */
static char **sorted_names(const char *dir, size_t *count)
{
    *count = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        return NULL;
    char **names = NULL;
    size_t capacity = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (*count == capacity) {
            capacity = capacity > 0 ? 2 * capacity : 32;
            char **grown = realloc(names, capacity * sizeof *names);
            if (grown == NULL)
                break;
            names = grown;
        }
        if ((names[*count] = strdup(e->d_name)) == NULL)
            break;
        (*count)++;
    }
    closedir(d);
    if (names != NULL)
        qsort(names, *count, sizeof *names, compare_names);
    return names;
}

static zc_status walk_tree(zc_driver_compiler *c, const char *dir, int depth);

/* Keys path (following symlinks, as the driver opens it) and what is
 * beneath it. */
static zc_status walk_path(zc_driver_compiler *c, const char *path, int depth)
{
    struct stat st;
    bool present = stat(path, &st) == 0;
    zc_status status = add_file(c, path, present ? &st : NULL);
    if (status == ZC_OK && present && S_ISDIR(st.st_mode) && depth < ZC_WALK_DEPTH)
        status = walk_tree(c, path, depth + 1);
    return status;
}

static zc_status walk_tree(zc_driver_compiler *c, const char *dir, int depth)
{
    size_t count;
    char **names = sorted_names(dir, &count);
    zc_status status = ZC_OK;
    for (size_t i = 0; i < count; i++) {
        char path[PATH_MAX];
        if (status == ZC_OK && snprintf(path, sizeof path, "%s/%s", dir, names[i]) < PATH_MAX)
            status = walk_path(c, path, depth);
        free(names[i]);
    }
    free(names);
    return status;
}

/* The device modules PoCL loaded from dir join the library closure. */
static zc_status add_loaded_modules(zc_driver_compiler *c, const char *dir)
{
    size_t count;
    char **names = sorted_names(dir, &count);
    zc_status status = ZC_OK;
    for (size_t i = 0; i < count; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) < PATH_MAX) {
            void *handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
            if (handle != NULL) {
                dlclose(handle);
                if (status == ZC_OK)
                    status = add_library(c, path, names[i]);
            }
        }
        free(names[i]);
    }
    free(names);
    return status;
}

/* The resource directory of the clang in the closure, "" when none. */
static void clang_resource_dir(const zc_driver_compiler *c, char out[PATH_MAX])
{
    out[0] = '\0';
    for (size_t i = 0; i < c->library_count; i++) {
        if (strncmp(c->libraries[i].name, "libclang-cpp.so", 15) != 0)
            continue;
        const char *slash = strrchr(c->libraries[i].path, '/');
        if (slash != NULL)
            snprintf(out, PATH_MAX, "%.*s/clang", (int)(slash - c->libraries[i].path),
                     c->libraries[i].path);
        return;
    }
}

static zc_status add_pocl_files(zc_driver_compiler *c)
{
    char libdir[PATH_MAX], dirs[3][PATH_MAX];
    const char *slash = strrchr(c->path, '/');
    snprintf(libdir, sizeof libdir, "%.*s", (int)(slash - c->path), c->path);
    snprintf(dirs[0], PATH_MAX, "%.4000s/pocl", libdir);
    snprintf(dirs[1], PATH_MAX, "%.4000s/../../share/pocl", libdir);
    zc_status status = add_loaded_modules(c, dirs[0]);
    if (status == ZC_OK)
        status = close_libraries(c, 0);
    clang_resource_dir(c, dirs[2]);
    for (size_t i = 0; status == ZC_OK && i < 3; i++)
        if (dirs[i][0] != '\0')
            status = walk_path(c, dirs[i], 0);
    return status;
}

/* ---- variables ---- */

static bool keyed_variable(const char *entry)
{
    if (strncmp(entry, "POCL_", 5) != 0)
        return false;
    size_t name_length = strcspn(entry, "=");
    for (size_t i = 0; i < sizeof not_code_variables / sizeof not_code_variables[0]; i++)
        if (strlen(not_code_variables[i]) == name_length &&
            strncmp(entry, not_code_variables[i], name_length) == 0)
            return false;
    return true;
}

static zc_status add_pocl_variables(zc_driver_compiler *c)
{
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (!keyed_variable(*e))
            continue;
        if (!spend(c))
            return zc_explain(ZC_NOT_CACHEABLE, c->reason, c->reason_size,
                              "too many POCL_ variables");
        char **grown = realloc(c->variables, (c->variable_count + 1) * sizeof *c->variables);
        if (grown == NULL)
            return ZC_ERR_NOMEM;
        c->variables = grown;
        if ((c->variables[c->variable_count] = strdup(*e)) == NULL)
            return ZC_ERR_NOMEM;
        c->variable_count++;
    }
    if (c->variable_count > 1)
        qsort(c->variables, c->variable_count, sizeof *c->variables, compare_names);
    return ZC_OK;
}

/* ---- the identity ---- */

static zc_status identify(zc_driver_compiler *c, const void *address)
{
    Dl_info info;
    if (address == NULL || dladdr(address, &info) == 0 || info.dli_fname == NULL ||
        realpath(info.dli_fname, c->path) == NULL)
        return zc_explain(ZC_NOT_CACHEABLE, c->reason, c->reason_size,
                          "the driver's function is in no loaded library");
    const char *slash = strrchr(info.dli_fname, '/');
    const char *name = slash != NULL ? slash + 1 : info.dli_fname;
    c->pocl = strncmp(name, "libpocl.so", 10) == 0;
    zc_status status = add_library(c, c->path, name);
    if (status == ZC_OK)
        status = close_libraries(c, 0);
    if (status == ZC_OK && c->pocl)
        status = add_pocl_files(c);
    if (status == ZC_OK && c->pocl)
        status = add_pocl_variables(c);
    return status;
}

zc_status zc_driver_compiler_identify(const void *address, zc_driver_compiler **out, char *reason,
                                      size_t reason_size)
{
    if (out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    zc_driver_compiler *c = calloc(1, sizeof *c);
    if (c == NULL)
        return ZC_ERR_NOMEM;
    c->budget = ZC_DRIVER_COMPILER_FILES_MAX;
    c->reason = reason;
    c->reason_size = reason_size;
    zc_status status = identify(c, address);
    c->reason = NULL;
    if (status != ZC_OK) {
        if (status == ZC_ERR_NOMEM && reason != NULL && reason_size > 0)
            snprintf(reason, reason_size, "out of memory identifying the driver");
        zc_driver_compiler_destroy(c);
        return status;
    }
    *out = c;
    return ZC_OK;
}

void zc_driver_compiler_destroy(zc_driver_compiler *compiler)
{
    if (compiler == NULL)
        return;
    for (size_t i = 0; i < compiler->file_count; i++)
        free(compiler->files[i].path);
    for (size_t i = 0; i < compiler->variable_count; i++)
        free(compiler->variables[i]);
    free(compiler->files);
    free(compiler->variables);
    free(compiler->libraries);
    free(compiler);
}

const char *zc_driver_compiler_path(const zc_driver_compiler *compiler)
{
    return compiler != NULL ? compiler->path : NULL;
}

bool zc_driver_compiler_is_pocl(const zc_driver_compiler *compiler)
{
    return compiler != NULL && compiler->pocl;
}

const char *const *zc_pocl_build_variables(size_t *count)
{
    *count = sizeof pocl_build_variables / sizeof pocl_build_variables[0];
    return pocl_build_variables;
}

static void record_file(zc_key_builder *builder, const driver_file *f)
{
    static const char *const types[] = {"missing", "file", "directory", "other"};
    uint8_t head[1 + 8 + 8 + 8];
    head[0] = f->type;
    zc_put_le64(zc_put_le64(zc_put_le64(head + 1, f->size), (uint64_t)f->mtime_sec),
                (uint64_t)f->mtime_nsec);
    size_t length = strlen(f->path);
    zc_key_record_start(builder, ZC_KEY_TAG_DRIVER_FILE, sizeof head + (uint64_t)length);
    zc_key_record_more(builder, head, sizeof head);
    zc_key_record_more(builder, f->path, length);
    zc_key_trace(builder, "%s: %s %llu bytes mtime %lld.%09lld\n", f->path, types[f->type],
                 (unsigned long long)f->size, (long long)f->mtime_sec, (long long)f->mtime_nsec);
}

zc_status zc_key_add_driver_compiler(zc_key_builder *builder, const zc_driver_compiler *compiler)
{
    zc_status status = zc_key_part_usable(builder);
    if (status != ZC_OK)
        return status;
    if (compiler == NULL)
        return zc_key_refuse(builder, ZC_ERR_INVALID_ARG,
                             "the driver's compiler is not identified");
    for (size_t i = 0; i < compiler->library_count; i++) {
        zc_key_trace(builder, "---- driver compiler library ----\n");
        zc_key_record_library(builder, ZC_KEY_TAG_DRIVER_LIBRARY, &compiler->libraries[i]);
    }
    if (compiler->file_count > 0)
        zc_key_trace(builder, "---- driver compiler files ----\n");
    for (size_t i = 0; i < compiler->file_count; i++)
        record_file(builder, &compiler->files[i]);
    if (compiler->variable_count > 0)
        zc_key_trace(builder, "---- driver compiler variables ----\n");
    for (size_t i = 0; i < compiler->variable_count; i++) {
        zc_key_record_field(builder, ZC_KEY_TAG_DRIVER_VARIABLE, compiler->variables[i],
                            strlen(compiler->variables[i]));
        zc_key_trace(builder, "%s\n", compiler->variables[i]);
    }
    return ZC_OK;
}
