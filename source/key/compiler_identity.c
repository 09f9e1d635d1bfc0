/* Which compiler the driver compiles with. The key needs it before the
 * driver has loaded IGC (loading it ourselves costs about 30 ms on every
 * hit), so it is predicted from the dynamic linker's search for the driver's
 * dlopen (library_search.c). Once the driver has compiled, IGC is surely
 * mapped and the prediction is checked: a wrong one stops hits for the rest
 * of the process and new entries are keyed with what is really loaded.
 *
 * Intel's driver dlopens IGC_LIBRARY_NAME and FCL_LIBRARY_NAME (from IGC's
 * igc.opencl.h: libigc.so.1 / libigdfcl.so.1 for IGC 1.x, .so.2 for IGC 2.x)
 * from its own library (shared/source/os_interface/linux/os_library_linux.cpp
 * in intel/compute-runtime; LD_DEBUG=files shows "libigc.so.1 dynamically
 * loaded by libze_intel_gpu.so.1"). Which of the two names a driver build
 * uses is not known here, so every name found is keyed. */
#include "zecache/compiler_identity.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler_identity_internal.h"
#include "elf_file.h"
#include "library_closure.h"
#include "zecache/fork_guard.h"
#include "zecache/log.h"

#define COMPILER_NAMES 4

static const char *const compiler_names[COMPILER_NAMES] = {"libigc.so.1", "libigdfcl.so.1",
                                                           "libigc.so.2", "libigdfcl.so.2"};

/* ---- what is mapped ---- */

typedef struct mapped_scan {
    const char *const *names;
    size_t count;
    zc_library_identity *out;
    size_t max, found;
} mapped_scan;

/* The DT_SONAME of a loaded object, from its dynamic section in memory:
 * reading each object's file instead cost 0.6 ms in a process with 80 of
 * them. glibc adds the load address to DT_STRTAB in place where the dynamic
 * section is writable (x86-64, aarch64) and leaves it a virtual address
 * where it is not; a value below the load address is the latter. */
static const char *loaded_soname(const struct dl_phdr_info *info)
{
    const ElfW(Dyn) *dynamic = NULL;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum && dynamic == NULL; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    uintptr_t strtab = 0, soname = 0;
    bool has_soname = false;
    for (; dynamic != NULL && dynamic->d_tag != DT_NULL; dynamic++) {
        if (dynamic->d_tag == DT_STRTAB)
            strtab = (uintptr_t)dynamic->d_un.d_ptr;
        else if (dynamic->d_tag == DT_SONAME)
            soname = (uintptr_t)dynamic->d_un.d_val, has_soname = true;
    }
    if (!has_soname || strtab == 0)
        return NULL;
    if (strtab < (uintptr_t)info->dlpi_addr)
        strtab += (uintptr_t)info->dlpi_addr;
    return (const char *)(strtab + soname);
}

/* The index of the name an object answers to: its file name, or (for files
 * named otherwise, e.g. opened by a full versioned path) its DT_SONAME,
 * which is what the dynamic linker matches a later dlopen against. */
static int matching_name(const mapped_scan *scan, const struct dl_phdr_info *info)
{
    const char *slash = strrchr(info->dlpi_name, '/');
    const char *base = slash != NULL ? slash + 1 : info->dlpi_name;
    for (size_t i = 0; i < scan->count; i++)
        if (strcmp(base, scan->names[i]) == 0)
            return (int)i;
    const char *soname = loaded_soname(info);
    for (size_t i = 0; soname != NULL && i < scan->count; i++)
        if (strcmp(soname, scan->names[i]) == 0)
            return (int)i;
    return -1;
}

static int visit_mapped(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    mapped_scan *scan = context;
    if (info->dlpi_name == NULL || info->dlpi_name[0] != '/' || scan->found == scan->max)
        return 0;
    int index = matching_name(scan, info);
    if (index >= 0 && zc_library_identity_describe(info->dlpi_name, scan->names[index],
                                                   &scan->out[scan->found]) == ZC_OK)
        scan->found++;
    return 0;
}

size_t zc_mapped_libraries(const char *const *names, size_t count, zc_library_identity *out,
                           size_t max)
{
    mapped_scan scan = {names, count, out, max, 0};
    dl_iterate_phdr(visit_mapped, &scan);
    return scan.found;
}

/* ---- prediction ---- */

static const zc_library_identity *identity_named(const zc_library_identity *list, size_t count,
                                                 const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(list[i].name, name) == 0)
            return &list[i];
    return NULL;
}

/* The version suffix of a library name: "1" for "libigc.so.1". */
static const char *version_of(const char *name)
{
    const char *so = strstr(name, ".so.");
    return so != NULL ? so + 4 : "";
}

/* The version of the compiler libraries loaded, NULL when none is. */
static const char *generation_loaded(const zc_library_identity *mapped, size_t count)
{
    return count > 0 ? version_of(mapped[0].name) : NULL;
}

static bool has_library(const zc_compiler_identity *identity, const char *stem)
{
    for (size_t i = 0; i < identity->count; i++)
        if (strncmp(identity->libraries[i].name, stem, strlen(stem)) == 0)
            return true;
    return false;
}

typedef struct library_lists {
    zc_library_identity mapped[COMPILER_NAMES];
    zc_library_identity searched[COMPILER_NAMES];
} library_lists;

/* ---- the libraries they load ---- */

typedef struct needed_walk {
    zc_compiler_identity *identity;
    const zc_library_search *search;
    const char *needed_by;
    bool full;
} needed_walk;

static bool in_identity(const zc_compiler_identity *identity, const char *name, const char *path)
{
    for (size_t i = 0; i < identity->count; i++)
        if (strcmp(identity->libraries[i].name, name) == 0 ||
            (path != NULL && strcmp(identity->libraries[i].path, path) == 0))
            return true;
    return false;
}

/* A name the dynamic linker already loaded for an earlier object is that
 * object again; one it cannot find is keyed as missing (loading the
 * compiler then fails for the driver too). */
static bool on_needed(void *context, const char *name)
{
    needed_walk *walk = context;
    zc_compiler_identity *identity = walk->identity;
    char path[ZC_LIBRARY_PATH_SIZE];
    if (in_identity(identity, name, NULL))
        return true;
    bool found = zc_library_resolve_needed(name, walk->needed_by, walk->search, path);
    if (found && in_identity(identity, name, path))
        return true;
    if (identity->count == ZC_COMPILER_LIBRARY_MAX) {
        walk->full = true;
        return false;
    }
    zc_library_identity *slot = &identity->libraries[identity->count++];
    if (!found || zc_library_identity_describe(path, name, slot) != ZC_OK) {
        memset(slot, 0, sizeof *slot);
        snprintf(slot->name, sizeof slot->name, "%s", name);
    }
    return true;
}

/* Adds what the compiler libraries need, all the way down (DT_NEEDED), each
 * resolved for the object that needs it: a front end or SPIR-V reader is a
 * package of its own, upgraded without IGC. */
static zc_status add_needed(const zc_library_search *search, zc_compiler_identity *identity)
{
    for (size_t i = 0; i < identity->count; i++) {
        if (identity->libraries[i].path[0] == '\0')
            continue;
        char needed_by[ZC_LIBRARY_PATH_SIZE];
        snprintf(needed_by, sizeof needed_by, "%s", identity->libraries[i].path);
        needed_walk walk = {identity, search, needed_by, false};
        (void)zc_elf_read_needed(needed_by, on_needed, &walk);
        if (walk.full) {
            zc_log_info("the compiler loads more than %d libraries: not caching",
                        ZC_COMPILER_LIBRARY_MAX);
            return ZC_MISS;
        }
    }
    return ZC_OK;
}

zc_status zc_compiler_identity_predict(const zc_library_search *search,
                                       zc_compiler_identity *identity)
{
    /* 36 KB: not on the stack of the application's thread. */
    library_lists *lists = malloc(sizeof *lists);
    if (lists == NULL)
        return ZC_ERR_NOMEM;
    zc_library_identity *mapped = lists->mapped, *searched = lists->searched;
    size_t mapped_count =
        zc_mapped_libraries(compiler_names, COMPILER_NAMES, mapped, COMPILER_NAMES);
    /* Only what is not loaded yet is searched, and a search that finds
     * nothing looks everywhere. A loaded library is what dlopen returns and
     * what the driver compiles with; once one is loaded, the driver is of
     * its generation and opens only that generation's names (libigdfcl.so.2
     * beside libigc.so.2), so the other generation's files are not read.
     * Drivers 22.43 and 26.27 load libigc at zeInit, so hits see it. */
    const char *generation = generation_loaded(mapped, mapped_count);
    const char *unloaded[COMPILER_NAMES];
    size_t unloaded_count = 0;
    for (size_t i = 0; i < COMPILER_NAMES; i++)
        if (identity_named(mapped, mapped_count, compiler_names[i]) == NULL &&
            (generation == NULL || strcmp(version_of(compiler_names[i]), generation) == 0))
            unloaded[unloaded_count++] = compiler_names[i];
    bool unloaded_found[COMPILER_NAMES] = {false};
    if (zc_library_search_find_each(search, unloaded, unloaded_count, searched, NULL,
                                    unloaded_found) != ZC_OK)
        memset(unloaded_found, 0, sizeof unloaded_found);
    /* Back to each name's own slot, from the end: slot j <= i is read
     * before slot i is written. */
    bool found[COMPILER_NAMES] = {false};
    for (size_t i = COMPILER_NAMES, j = unloaded_count; i-- > 0;) {
        if (j > 0 && unloaded[j - 1] == compiler_names[i]) {
            j--;
            found[i] = unloaded_found[j];
            searched[i] = searched[j];
        }
    }
    identity->count = 0;
    for (size_t i = 0; i < COMPILER_NAMES; i++) {
        /* A library already loaded under the name is what dlopen returns. */
        const zc_library_identity *loaded = identity_named(mapped, mapped_count, compiler_names[i]);
        if (loaded != NULL || found[i])
            identity->libraries[identity->count++] = loaded != NULL ? *loaded : searched[i];
    }
    free(lists);
    /* A library is missing only when none of its names is found. */
    if (!has_library(identity, "libigdfcl.so."))
        zc_log_info("compiler library libigdfcl not found (libigdfcl.so.1, libigdfcl.so.2): "
                    "keyed without it");
    if (has_library(identity, "libigc.so."))
        return add_needed(search, identity);
    zc_log_info("compiler library libigc not found (libigc.so.1, libigc.so.2): not caching");
    return ZC_MISS;
}

bool zc_compiler_identity_merge(const zc_compiler_identity *predicted,
                                const zc_library_identity *mapped, size_t mapped_count,
                                zc_compiler_identity *merged)
{
    *merged = *predicted;
    bool differs = false;
    for (size_t i = 0; i < mapped_count; i++) {
        zc_library_identity *slot = NULL;
        for (size_t j = 0; j < merged->count && slot == NULL; j++)
            if (strcmp(merged->libraries[j].name, mapped[i].name) == 0)
                slot = &merged->libraries[j];
        if (slot != NULL && zc_library_identity_equal(slot, &mapped[i]))
            continue;
        zc_log_info("compiler library %s is %s, not %s as predicted: no hits in this process",
                    mapped[i].name, mapped[i].path, slot != NULL ? slot->path : "none");
        differs = true;
        if (slot == NULL && merged->count < ZC_COMPILER_LIBRARY_MAX)
            slot = &merged->libraries[merged->count++];
        if (slot != NULL)
            *slot = mapped[i];
    }
    return differs;
}

/* ---- this process ---- */

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held across fork(): a fork waits for the first module's prediction (it
 * reads and hashes the compiler's libraries), else a child forked meanwhile
 * would wait for ever at its first key. */
static atomic_bool state_lock_guarded;
static bool predicted_once;
static zc_compiler_identity predicted, loaded;
static _Atomic(const zc_compiler_identity *) current;
static atomic_bool unidentified, checked, changed;
static bool search_overridden;
static zc_library_search search_override;
/* The search of the prediction, again for the check. */
static zc_library_search search_used;
static char executable[ZC_LIBRARY_PATH_SIZE], caller[ZC_LIBRARY_PATH_SIZE];

static void predict_once(const char *driver_path)
{
    snprintf(caller, sizeof caller, "%s", driver_path != NULL ? driver_path : "");
    search_used =
        search_overridden
            ? search_override
            : zc_library_search_of_process(driver_path != NULL ? caller : NULL, executable);
    if (zc_compiler_identity_predict(&search_used, &predicted) == ZC_OK)
        atomic_store_explicit(&current, &predicted, memory_order_release);
    else
        atomic_store(&unidentified, true);
}

const zc_compiler_identity *zc_compiler_identity_get(const char *driver_path)
{
    const zc_compiler_identity *identity = atomic_load_explicit(&current, memory_order_acquire);
    if (identity != NULL || atomic_load(&unidentified))
        return identity;
    zc_fork_guard_lock(&state_lock, &state_lock_guarded);
    if (!predicted_once) {
        predicted_once = true;
        predict_once(driver_path);
    }
    pthread_mutex_unlock(&state_lock);
    return atomic_load_explicit(&current, memory_order_acquire);
}

bool zc_compiler_identity_check_loaded(void)
{
    const zc_compiler_identity *identity = atomic_load_explicit(&current, memory_order_acquire);
    if (identity == NULL || atomic_load(&checked))
        return false;
    /* Not on the stack of the application's thread: 290 KB. */
    zc_compiler_identity *now = malloc(sizeof *now);
    if (now == NULL)
        return false; /* checked after a later compile */
    now->count =
        zc_mapped_libraries(compiler_names, COMPILER_NAMES, now->libraries, COMPILER_NAMES);
    if (identity_named(now->libraries, now->count, "libigc.so.1") == NULL &&
        identity_named(now->libraries, now->count, "libigc.so.2") == NULL) {
        free(now);
        return false; /* not loaded yet: check after a later compile */
    }
    /* Identified again, now that the compiler is loaded: its libraries and
     * everything they needed are what the dynamic linker really took. */
    bool differs = false;
    zc_fork_guard_lock(&state_lock, &state_lock_guarded);
    if (!atomic_load(&checked) && zc_compiler_identity_predict(&search_used, now) == ZC_OK) {
        atomic_store(&checked, true);
        differs = zc_compiler_identity_merge(&predicted, now->libraries, now->count, &loaded);
        if (differs) {
            atomic_store_explicit(&current, &loaded, memory_order_release);
            atomic_store(&changed, true);
        }
    }
    pthread_mutex_unlock(&state_lock);
    free(now);
    return differs;
}

bool zc_compiler_identity_changed(void)
{
    return atomic_load(&changed);
}

void zc_compiler_identity_reset(const zc_library_search *search)
{
    zc_fork_guard_lock(&state_lock, &state_lock_guarded);
    search_overridden = search != NULL;
    if (search != NULL)
        search_override = *search;
    predicted_once = false;
    atomic_store(&current, NULL);
    atomic_store(&unidentified, false);
    atomic_store(&checked, false);
    atomic_store(&changed, false);
    pthread_mutex_unlock(&state_lock);
}
