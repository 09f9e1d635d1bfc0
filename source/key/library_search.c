/* The dynamic linker's search for a library that an object dlopens by file
 * name, as glibc's _dl_map_object does it, without loading anything: loading
 * IGC costs about 30 ms, and the key only needs to know which file a later
 * dlopen by the driver will map.
 *
 * The directories: when the caller is loaded in this process (the layer's
 * driver) and the search asks for it, glibc's own list (linker_dirs.c), which
 * includes the DT_RPATH of the objects between the caller and the main
 * program (the Level Zero loader); otherwise read from the ELF files of the
 * caller and the main program, which cannot show that chain. Either way each
 * directory is tried with the glibc-hwcaps and legacy hwcap subdirectories
 * glibc tries (hwcaps.c), and ld.so.cache is read as ld.so picks among its
 * hwcap entries (ld_cache.c).
 *
 * Left out: objects already loaded under that name (compiler_identity.c
 * looks for those first), ld.so's own command-line options (--library-path,
 * --inhibit-cache, --glibc-hwcaps-*), and architectures other than x86-64
 * for hardware capabilities; the check after the first compile
 * (compiler_identity.c) catches a library loaded from elsewhere. */
#include "library_search.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "elf_file.h"
#include "hwcaps.h"
#include "ld_cache.h"
#include "linker_dirs.h"

/* Debian's directory name for this machine's libraries, which its ld.so
 * also gives $LIB. */
#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__i386__)
#define MULTIARCH "i386-linux-gnu"
#endif

#ifdef MULTIARCH
#define DST_LIB "lib/" MULTIARCH
#else
#define DST_LIB "lib"
#endif

static const char *const system_default_dirs[] = {
#ifdef MULTIARCH
    "/lib/" MULTIARCH,
    "/usr/lib/" MULTIARCH,
#endif
    "/lib",
    "/usr/lib",
    NULL,
};

/* One search: the name, where the result goes, and the hardware
 * capabilities of this process. */
typedef struct search_state {
    const char *name;
    zc_library_identity *identity;
    const zc_hwcaps *hwcaps;
} search_state;

static bool try_path(const char *path, search_state *state)
{
    return zc_library_identity_describe(path, state->name, state->identity) == ZC_OK;
}

/* Tries name in a directory given by its first length bytes (an empty
 * directory means the current one, as for the loader), in each hardware
 * capability subdirectory glibc tries first (open_path), then in itself. */
/* Whether dir has the first directory of subdir ("glibc-hwcaps/x86-64-v3/":
 * glibc-hwcaps; "tls/haswell/": tls). Most directories have none of them,
 * and one look per first directory spares a failed open per subdirectory
 * under it. seen remembers the answer per first directory for one call. */
typedef struct first_dirs {
    char names[ZC_HWCAPS_SUBDIRS_MAX][ZC_HWCAPS_SUBDIR_SIZE];
    bool present[ZC_HWCAPS_SUBDIRS_MAX];
    size_t count;
} first_dirs;

static bool has_first_dir(const char *dir, size_t length, const char *subdir, first_dirs *seen)
{
    size_t first = strcspn(subdir, "/");
    if (subdir[first] == '\0')
        return true; /* "": the directory itself */
    for (size_t i = 0; i < seen->count; i++)
        if (strncmp(seen->names[i], subdir, first) == 0 && seen->names[i][first] == '\0')
            return seen->present[i];
    char path[PATH_MAX];
    int written = snprintf(path, sizeof path, "%.*s/%.*s", (int)length, dir, (int)first, subdir);
    bool present = written <= 0 || (size_t)written >= sizeof path || access(path, F_OK) == 0;
    if (seen->count < ZC_HWCAPS_SUBDIRS_MAX && first < ZC_HWCAPS_SUBDIR_SIZE) {
        snprintf(seen->names[seen->count], ZC_HWCAPS_SUBDIR_SIZE, "%.*s", (int)first, subdir);
        seen->present[seen->count++] = present;
    }
    return present;
}

static bool try_directory(const char *dir, size_t length, search_state *state)
{
    if (length == 0)
        dir = ".", length = 1;
    first_dirs seen;
    seen.count = 0;
    for (size_t i = 0; i < state->hwcaps->subdir_count; i++) {
        if (!has_first_dir(dir, length, state->hwcaps->subdirs[i], &seen))
            continue;
        char path[PATH_MAX];
        int written = snprintf(path, sizeof path, "%.*s/%s%s", (int)length, dir,
                               state->hwcaps->subdirs[i], state->name);
        if (written > 0 && (size_t)written < sizeof path && try_path(path, state))
            return true;
    }
    return false;
}

/* The length of the dynamic string token at text ("$ORIGIN" or "${ORIGIN}"
 * for token "ORIGIN"), 0 when it is not that token. */
static size_t token_length(const char *text, const char *token)
{
    size_t length = strlen(token);
    if (text[1] == '{')
        return strncmp(text + 2, token, length) == 0 && text[2 + length] == '}' ? length + 3 : 0;
    if (strncmp(text + 1, token, length) != 0)
        return 0;
    char next = text[1 + length];
    bool ends = !(next == '_' || (next >= 'A' && next <= 'Z') || (next >= 'a' && next <= 'z') ||
                  (next >= '0' && next <= '9'));
    return ends ? length + 1 : 0;
}

/* The value of the dynamic string token at text, with its length in *used;
 * NULL when text is no known token or its value is unknown (the loader then
 * drops the whole directory). */
static const char *token_value(const char *text, const char *origin, size_t *used)
{
    const char *platform = zc_hwcaps_of_process()->platform;
    if ((*used = token_length(text, "ORIGIN")) != 0)
        return origin;
    if ((*used = token_length(text, "LIB")) != 0)
        return DST_LIB;
    if ((*used = token_length(text, "PLATFORM")) != 0)
        return platform;
    *used = 1;
    return "$"; /* not a token: kept as it is */
}

/* Expands $ORIGIN, $LIB and $PLATFORM in one directory of a DT_RPATH or
 * DT_RUNPATH list; false when the result is unusable. */
static bool expand_directory(const char *dir, size_t length, const char *origin, char *out,
                             size_t out_size)
{
    size_t used_out = 0;
    for (size_t i = 0; i < length;) {
        const char *piece = dir + i;
        size_t piece_length = 1, consumed = 1;
        if (dir[i] == '$') {
            piece = token_value(dir + i, origin, &consumed);
            if (piece == NULL || i + consumed > length)
                return false;
            piece_length = strlen(piece);
        }
        if (used_out + piece_length >= out_size)
            return false;
        memcpy(out + used_out, piece, piece_length);
        used_out += piece_length;
        i += consumed;
    }
    out[used_out] = '\0';
    return true;
}

/* A ':'-separated DT_RPATH/DT_RUNPATH of the object whose directory is origin. */
static bool search_dynamic_list(const char *list, const char *origin, search_state *state)
{
    while (list != NULL) {
        size_t length = strcspn(list, ":");
        char dir[PATH_MAX];
        if (length > 0 && expand_directory(list, length, origin, dir, sizeof dir) &&
            try_directory(dir, strlen(dir), state))
            return true;
        list = list[length] ? list + length + 1 : NULL;
    }
    return false;
}

/* LD_LIBRARY_PATH separates directories with ':' or ';'; the loader ignores
 * it when empty and reads an empty element as the current directory. */
static bool search_ld_library_path(const char *list, search_state *state)
{
    if (list == NULL || list[0] == '\0')
        return false;
    while (list != NULL) {
        size_t length = strcspn(list, ":;");
        if (try_directory(list, length, state))
            return true;
        list = list[length] ? list + length + 1 : NULL;
    }
    return false;
}

/* $ORIGIN of an object: the directory of the path it was loaded from, not
 * resolved through symlinks (as glibc computes it). */
static void origin_of(const char *path, char *origin, size_t size)
{
    const char *slash = path != NULL ? strrchr(path, '/') : NULL;
    if (slash == NULL) {
        origin[0] = '\0';
        return;
    }
    size_t length = slash == path ? 1 : (size_t)(slash - path);
    snprintf(origin, size, "%.*s", (int)length, path);
}

static bool search_default_dirs(const char *const *dirs, search_state *state)
{
    for (size_t i = 0; dirs[i] != NULL; i++)
        if (try_directory(dirs[i], strlen(dirs[i]), state))
            return true;
    return false;
}

/* Whether path is inside one of dirs (glibc compares with each default
 * directory and its '/' as a prefix). */
static bool inside_one_of(const char *path, const char *const *dirs)
{
    for (size_t i = 0; dirs[i] != NULL; i++) {
        size_t length = strlen(dirs[i]);
        if (strncmp(path, dirs[i], length) == 0 && path[length] == '/')
            return true;
    }
    return false;
}

/* ld.so.cache; for a caller with DF_1_NODEFLIB (excluded not NULL) its entry
 * is not used when it is inside a default directory. */
static bool search_cache(const char *cache, const char *const *excluded, search_state *state)
{
    char path[PATH_MAX];
    return cache != NULL && zc_ld_cache_lookup_file(cache, state->name, path, sizeof path) &&
           !(excluded != NULL && inside_one_of(path, excluded)) && try_path(path, state);
}

typedef struct object_paths {
    zc_elf_dynamic dynamic;
    char origin[PATH_MAX];
    bool known;
} object_paths;

static void read_object(const char *path, object_paths *object)
{
    object->known = path != NULL && zc_elf_read_dynamic(path, &object->dynamic);
    origin_of(path, object->origin, sizeof object->origin);
}

static const char *const *default_dirs_of(const zc_library_search *search)
{
    return search->default_dirs != NULL ? search->default_dirs : system_default_dirs;
}

/* Steps in order, read from the ELF files, each returning whether it found
 * the library. */
static bool run_steps(const zc_library_search *search, const object_paths *caller,
                      const object_paths *executable, search_state *state, zc_search_step *step)
{
    const zc_elf_dynamic *c = &caller->dynamic, *e = &executable->dynamic;
    bool caller_rpath = caller->known && !c->has_runpath && c->has_rpath;
    bool defaults = !(caller->known && c->nodeflib);
    const char *const *dirs = default_dirs_of(search);
    if (caller_rpath && search_dynamic_list(c->rpath, caller->origin, state))
        return *step = ZC_SEARCH_CALLER_RPATH, true;
    if (!(caller->known && c->has_runpath) && executable->known && !e->has_runpath &&
        e->has_rpath && search_dynamic_list(e->rpath, executable->origin, state))
        return *step = ZC_SEARCH_EXECUTABLE_RPATH, true;
    const char *ld_library_path = search->ld_library_path;
    if (ld_library_path == NULL && search->initial_ld_library_path)
        ld_library_path = zc_initial_ld_library_path();
    if (search_ld_library_path(ld_library_path, state))
        return *step = ZC_SEARCH_LD_LIBRARY_PATH, true;
    if (caller->known && c->has_runpath && search_dynamic_list(c->runpath, caller->origin, state))
        return *step = ZC_SEARCH_CALLER_RUNPATH, true;
    if (search_cache(search->ld_so_cache, defaults ? NULL : dirs, state))
        return *step = ZC_SEARCH_LD_SO_CACHE, true;
    if (defaults && search_default_dirs(dirs, state))
        return *step = ZC_SEARCH_DEFAULT_DIRS, true;
    return false;
}

static bool valid_name(const char *name)
{
    return name != NULL && name[0] != '\0' && strchr(name, '/') == NULL && strlen(name) <= NAME_MAX;
}

/* glibc's directories for a loaded caller, with ld.so.cache at its place. */
static bool run_linker_dirs(const zc_library_search *search, const zc_linker_dirs *dirs,
                            search_state *state, zc_search_step *step)
{
    const char *const *excluded = dirs->nodeflib ? default_dirs_of(search) : NULL;
    for (size_t i = 0; i <= dirs->count; i++) {
        if (i == dirs->cache_at && search_cache(search->ld_so_cache, excluded, state))
            return *step = ZC_SEARCH_LD_SO_CACHE, true;
        const char *dir = i < dirs->count ? zc_linker_dir(dirs, i) : NULL;
        if (dir != NULL && try_directory(dir, strlen(dir), state))
            return *step = i < dirs->cache_at ? ZC_SEARCH_LINKER_DIRS : ZC_SEARCH_DEFAULT_DIRS,
                   true;
    }
    return false;
}

/* Searches each name in the order of the ELF files of the caller and the
 * program. */
static zc_status find_each_by_elf(const zc_library_search *search, const char *const *names,
                                  size_t count, zc_library_identity *identities,
                                  zc_search_step *steps, bool *found)
{
    /* Two dynamic sections and origins, read once for all names: too large
     * for the stack of every thread the application might call from. */
    object_paths *objects = malloc(2 * sizeof *objects);
    if (objects == NULL)
        return ZC_ERR_NOMEM;
    read_object(search->caller, &objects[0]);
    read_object(search->executable, &objects[1]);
    for (size_t i = 0; i < count; i++) {
        zc_search_step step;
        search_state state = {names[i], &identities[i], zc_hwcaps_of_process()};
        found[i] = run_steps(search, &objects[0], &objects[1], &state, &step);
        if (found[i] && steps != NULL)
            steps[i] = step;
    }
    free(objects);
    return ZC_OK;
}

zc_status zc_library_search_find_each(const zc_library_search *search, const char *const *names,
                                      size_t count, zc_library_identity *identities,
                                      zc_search_step *steps, bool *found)
{
    if (search == NULL || names == NULL || identities == NULL || found == NULL)
        return ZC_ERR_INVALID_ARG;
    for (size_t i = 0; i < count; i++)
        if (!valid_name(names[i]))
            return ZC_ERR_INVALID_ARG;
    zc_linker_dirs dirs;
    zc_status status = search->ask_dynamic_linker
                           ? zc_linker_dirs_of(search->caller, default_dirs_of(search), &dirs)
                           : ZC_MISS;
    if (status == ZC_OK) {
        for (size_t i = 0; i < count; i++) {
            zc_search_step step;
            search_state state = {names[i], &identities[i], zc_hwcaps_of_process()};
            found[i] = run_linker_dirs(search, &dirs, &state, &step);
            if (found[i] && steps != NULL)
                steps[i] = step;
        }
        zc_linker_dirs_free(&dirs);
        return ZC_OK;
    }
    /* Not loaded (or an unexpected listing): the ELF files. */
    return status == ZC_MISS ? find_each_by_elf(search, names, count, identities, steps, found)
                             : status;
}

zc_status zc_library_search_find(const zc_library_search *search, const char *name,
                                 zc_library_identity *identity, zc_search_step *step)
{
    bool found = false;
    zc_status status = zc_library_search_find_each(search, &name, 1, identity, step, &found);
    if (status != ZC_OK)
        return status;
    return found ? ZC_OK : ZC_MISS;
}

/* /proc/self/environ holds the environment the program started with. */
#define ENVIRON_MAX (16 << 20)
#define LD_LIBRARY_PATH_PREFIX "LD_LIBRARY_PATH="

static char *read_initial_environment(size_t *size)
{
    int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t capacity = 64 * 1024, used = 0;
    char *text = malloc(capacity + 1);
    ssize_t got = 1;
    while (text != NULL && got > 0) {
        if (used == capacity) {
            char *larger = capacity < ENVIRON_MAX ? realloc(text, 2 * capacity + 1) : NULL;
            if (larger == NULL) {
                free(text);
                text = NULL;
                break;
            }
            text = larger;
            capacity *= 2;
        }
        got = read(fd, text + used, capacity - used);
        used += got > 0 ? (size_t)got : 0;
    }
    close(fd);
    if (text == NULL || got < 0) {
        free(text);
        return NULL;
    }
    text[used] = '\0';
    *size = used;
    return text;
}

static const char *initial_ld_library_path_value;
static pthread_once_t initial_ld_library_path_once = PTHREAD_ONCE_INIT;

/* LD_LIBRARY_PATH as the dynamic linker uses it: the value the program
 * started with (ld.so reads it once, a later setenv changes nothing), none
 * in set-user-ID programs. Without /proc: the current value. Kept for the
 * process: it cannot change. */
static void find_initial_ld_library_path(void)
{
    if (getauxval(AT_SECURE) != 0)
        return;
    size_t size;
    char *environment = read_initial_environment(&size);
    if (environment == NULL) {
        const char *now = getenv("LD_LIBRARY_PATH");
        initial_ld_library_path_value = now != NULL ? strdup(now) : NULL;
        return;
    }
    size_t prefix = strlen(LD_LIBRARY_PATH_PREFIX);
    for (size_t at = 0; at < size; at += strlen(environment + at) + 1) {
        if (strncmp(environment + at, LD_LIBRARY_PATH_PREFIX, prefix) == 0) {
            initial_ld_library_path_value = strdup(environment + at + prefix);
            break;
        }
    }
    free(environment);
}

const char *zc_initial_ld_library_path(void)
{
    pthread_once(&initial_ld_library_path_once, find_initial_ld_library_path);
    return initial_ld_library_path_value;
}

zc_library_search zc_library_search_of_process(const char *caller, char *executable)
{
    ssize_t length = readlink("/proc/self/exe", executable, PATH_MAX - 1);
    executable[length > 0 ? length : 0] = '\0';
    return (zc_library_search){.caller = caller,
                               .executable = length > 0 ? executable : NULL,
                               .initial_ld_library_path = true,
                               .ld_so_cache = "/etc/ld.so.cache",
                               .ask_dynamic_linker = true};
}
