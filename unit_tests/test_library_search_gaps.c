/* The compiler prediction where the dynamic linker looks beyond what the ELF
 * files say (issue 15): glibc-hwcaps subdirectories of a search directory,
 * glibc-hwcaps entries of ld.so.cache, and the DT_RPATH of the object that
 * loaded the caller. A compiler-like library, libzc_probe.so.1, is placed
 * there; where the process can dlopen it, the prediction must name the file
 * the dynamic linker then really maps. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include "../source/key/ld_cache.h"
#include "../source/key/compiler_identity_internal.h"
#include "../source/key/library_search.h"
#include "zecache/identity.h"

#define PROBE "libzc_probe.so.1"
#define HWCAPS_V2 "glibc-hwcaps/x86-64-v2"

static char temp_dir[] = "/tmp/zc_search_gaps_XXXXXX";

static void make_temp_dir(void)
{
    cr_assert_not_null(mkdtemp(temp_dir));
}

static void remove_temp_dir(void)
{
    t_remove_tree(temp_dir);
}

TestSuite(search_gaps, .init = make_temp_dir, .fini = remove_temp_dir);

static void skip_unless_x86_64_v2(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v2"))
        return;
#endif
    cr_skip_test("this CPU is not x86-64-v2: glibc searches no glibc-hwcaps/x86-64-v2");
}

/* Copies the probe library to temp_dir/relative (parents made); its path. */
static const char *place_probe(const char *relative)
{
    static char paths[4][PATH_MAX];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, PATH_MAX, "%s/%s", temp_dir, relative);
    for (char *slash = strchr(path + strlen(temp_dir) + 1, '/'); slash != NULL;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0700);
        *slash = '/';
    }
    size_t size;
    uint8_t *bytes = t_read_bytes(ZC_PROBE_PATH, &size);
    t_write_file(path, bytes, size);
    free(bytes);
    return path;
}

/* The probe as this process's search predicts it for a dlopen by caller
 * (NULL: the program, from its ELF file alone). */
static void predict(const char *caller, char *path, zc_search_step *step)
{
    char executable[PATH_MAX];
    zc_library_search search = zc_library_search_of_process(caller, executable);
    zc_library_identity identity;
    cr_assert_eq(zc_library_search_find(&search, PROBE, &identity, step), ZC_OK,
                 "%s not predicted for caller %s", PROBE, caller != NULL ? caller : "(none)");
    snprintf(path, PATH_MAX, "%s", identity.path);
}

/* The real path of what a dlopen mapped. */
static void loaded_path(void *handle, char *path)
{
    struct link_map *map = NULL;
    cr_assert_not_null(handle, "dlopen: %s", dlerror());
    cr_assert_eq(dlinfo(handle, RTLD_DI_LINKMAP, &map), 0);
    cr_assert_not_null(realpath(map->l_name, path), "%s", map->l_name);
}

/* The object that defines address, as the layer finds the driver. */
static const char *object_of(const void *address)
{
    Dl_info info;
    cr_assert(dladdr(address, &info) != 0 && info.dli_fname != NULL);
    return info.dli_fname;
}

/* ---- LD_LIBRARY_PATH with hardware capability subdirectories ---- */

/* Run by the next tests in a process started with LD_LIBRARY_PATH set: the
 * prediction, both for a loaded caller (the dynamic linker's directory
 * list) and from the ELF files alone, is the file a dlopen then maps, and
 * ZC_GAPS_EXPECT when given. */
Test(search_gaps, child_predicts_what_dlopen_maps)
{
    const char *expected = getenv("ZC_GAPS_EXPECT");
    if (expected == NULL)
        cr_skip_test("runs as the child of the LD_LIBRARY_PATH tests");
    char from_linker[PATH_MAX], from_elf[PATH_MAX], loaded[PATH_MAX];
    zc_search_step step;
    predict(object_of((const void *)printf), from_linker, &step); /* libc, loaded */
    cr_assert_eq(step, ZC_SEARCH_LINKER_DIRS);
    predict(NULL, from_elf, &step);
    cr_assert_eq(step, ZC_SEARCH_LD_LIBRARY_PATH);
    loaded_path(dlopen(PROBE, RTLD_NOW), loaded);
    cr_assert_str_eq(from_linker, loaded);
    cr_assert_str_eq(from_elf, loaded);
    if (expected[0] != '\0')
        cr_assert_str_eq(loaded, expected);
}

/* Runs the child test with LD_LIBRARY_PATH=dir, expecting expected ("":
 * only that the prediction is what dlopen maps). */
static void run_child(const char *dir, const char *expected)
{
    char command[4 * PATH_MAX], self[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(length, 0);
    self[length] = '\0';
    snprintf(command, sizeof command,
             "env -i ZC_GAPS_EXPECT='%s' LD_LIBRARY_PATH='%s' '%s' "
             "--filter 'search_gaps/child_predicts_what_dlopen_maps' --verbose 2>&1",
             expected, dir, self);
    FILE *pipe = popen(command, "r");
    cr_assert_not_null(pipe);
    char output[8192];
    size_t got = fread(output, 1, sizeof output - 1, pipe);
    output[got] = '\0';
    cr_assert_eq(pclose(pipe), 0, "%s\n%s", command, output);
    cr_assert_null(strstr(output, "Skipping"), "%s", output);
}

/* glibc tries DIR/glibc-hwcaps/x86-64-v2/ (when the CPU has that level)
 * before DIR itself (glibc >= 2.33). */
Test(search_gaps, glibc_hwcaps_subdirectory_of_ld_library_path)
{
    skip_unless_x86_64_v2();
    place_probe("llp/" PROBE);
    const char *hwcaps = place_probe("llp/" HWCAPS_V2 "/" PROBE);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/llp", temp_dir);
    run_child(dir, hwcaps);
}

/* glibc 2.36 also tries the legacy subdirectories (here tls/, which every
 * x86-64 glibc before 2.37 searches); 2.37 and later do not. */
Test(search_gaps, legacy_hwcap_subdirectory_as_this_glibc_treats_it)
{
    const char *plain = place_probe("legacy/" PROBE);
    const char *tls = place_probe("legacy/tls/" PROBE);
    unsigned major = 0, minor = 0;
    cr_assert_eq(sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor), 2);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/legacy", temp_dir);
    run_child(dir, major == 2 && minor < 37 ? tls : plain);
}

/* ---- ld.so.cache with glibc-hwcaps entries ---- */

/* ldconfig lists DIR/glibc-hwcaps/x86-64-v2/ as an entry with a hwcap,
 * before the plain one; ld.so takes it on an x86-64-v2 CPU. */
Test(search_gaps, glibc_hwcaps_entry_of_ld_so_cache)
{
    skip_unless_x86_64_v2();
    place_probe("cached/" PROBE);
    const char *hwcaps = place_probe("cached/" HWCAPS_V2 "/" PROBE);
    char conf[PATH_MAX], cache[PATH_MAX], line[2 * PATH_MAX], command[4 * PATH_MAX];
    snprintf(conf, sizeof conf, "%s/ld.so.conf", temp_dir);
    snprintf(cache, sizeof cache, "%s/ld.so.cache", temp_dir);
    snprintf(line, sizeof line, "%s/cached\n", temp_dir);
    t_write_file(conf, line, strlen(line));
    snprintf(command, sizeof command, "/sbin/ldconfig -X -C '%s' -f '%s' 2>/dev/null", cache, conf);
    cr_assert_eq(system(command), 0, "%s", command);
    /* ldconfig wrote the hwcap entry. */
    snprintf(command, sizeof command, "/sbin/ldconfig -p -C '%s' | grep -c 'hwcap: \"x86-64-v2\"'",
             cache);
    FILE *pipe = popen(command, "r");
    cr_assert(fgets(line, sizeof line, pipe) != NULL && atoi(line) == 1, "%s", command);
    pclose(pipe);
    char path[PATH_MAX];
    cr_assert(zc_ld_cache_lookup_file(cache, PROBE, path, sizeof path));
    cr_assert_str_eq(path, hwcaps);
    static const char *const no_default_dirs[] = {NULL};
    zc_library_search search = {.ld_so_cache = cache, .default_dirs = no_default_dirs};
    zc_library_identity identity;
    zc_search_step step;
    cr_assert_eq(zc_library_search_find(&search, PROBE, &identity, &step), ZC_OK);
    cr_assert_eq(step, ZC_SEARCH_LD_SO_CACHE);
    cr_assert_str_eq(identity.path, hwcaps);
}

/* ---- the loader chain ---- */

/* libzc_chain_b.so, loaded by libzc_chain_a.so (DT_RPATH $ORIGIN), dlopens
 * the probe next to them: glibc finds it in the DT_RPATH of the object that
 * loaded the caller, which neither the caller's nor the program's ELF file
 * shows (the driver loaded by the Level Zero loader). */
Test(search_gaps, rpath_of_the_object_that_loaded_the_caller)
{
    void *chain = dlopen(ZC_CHAIN_A_PATH, RTLD_NOW);
    cr_assert_not_null(chain, "%s", dlerror());
    void *(*chain_dlopen)(const char *) = (void *(*)(const char *))dlsym(chain, "zc_chain_dlopen");
    cr_assert_not_null(chain_dlopen);
    const char *caller = object_of((const void *)chain_dlopen);
    cr_assert_null(strstr(caller, "chain_a"), "%s", caller);
    char predicted[PATH_MAX], loaded[PATH_MAX], expected[PATH_MAX];
    zc_search_step step;
    predict(caller, predicted, &step);
    cr_assert_eq(step, ZC_SEARCH_LINKER_DIRS);
    cr_assert_not_null(realpath(ZC_PROBE_PATH, expected));
    cr_assert_str_eq(predicted, expected);
#if defined(__SANITIZE_ADDRESS__)
    /* ASan's dlopen interceptor calls glibc's from libasan, which glibc then
     * takes for the caller: the real dlopen is not the driver's. */
    return;
#endif
    loaded_path(chain_dlopen(PROBE), loaded);
    cr_assert_str_eq(loaded, predicted);
}

/* A library loaded by a path with another file name (a versioned name, a
 * renamed copy) answers to its DT_SONAME, read from the loaded object: a
 * later dlopen by that name returns it. */
Test(search_gaps, loaded_library_answers_to_its_soname)
{
    const char *renamed = place_probe("renamed/compiler-copy.so");
    const char *names[] = {PROBE};
    zc_library_identity found;
    cr_assert_eq(zc_mapped_libraries(names, 1, &found, 1), 0);
    void *handle = dlopen(renamed, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(handle, "%s", dlerror());
    cr_assert_eq(zc_mapped_libraries(names, 1, &found, 1), 1);
    cr_assert_str_eq(found.path, renamed);
    cr_assert_str_eq(found.name, PROBE);
    void *again = dlopen(PROBE, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_eq(again, handle, "the dynamic linker matches the SONAME too");
    dlclose(again);
    dlclose(handle);
}
