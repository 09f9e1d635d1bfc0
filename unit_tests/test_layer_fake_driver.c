/* The layer's logic against a fake driver (fake_ze_driver.c), in-process, so
 * it also runs under AddressSanitizer and ThreadSanitizer, which the real
 * driver does not allow (it dlopens with RTLD_DEEPBIND). The test plays the
 * loader: it fills tables from the fake driver and hands them to the hooks. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_ze_driver.h"
#include "test_support.h"
#include "../source/key/compiler_identity_internal.h"
#include "layer_internal.h"
#include "zecache/driver_cache.h"

#define THREADS 16

static fake_driver_counters *counters;
static ze_module_dditable_t app_module;
static ze_module_build_log_dditable_t app_build_log;
static char scratch[64];
static uint8_t spirv[64 * 1024];
static size_t spirv_size;

typedef ze_result_t (*get_table_fn)(ze_api_version_t, void *);

static void *fake_driver(void)
{
    static void *handle;
    if (handle == NULL)
        handle = dlopen(FAKE_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(handle, "%s", dlerror());
    return handle;
}

/* What the loader does for one table: the driver fills it, the layer hooks it. */
static void fill_table(const char *symbol, void *table, zcl_table_hook before, zcl_table_hook after)
{
    get_table_fn get_table = (get_table_fn)dlsym(fake_driver(), symbol);
    cr_assert_not_null(get_table);
    cr_assert_eq(get_table(ZE_API_VERSION_CURRENT, table), ZE_RESULT_SUCCESS);
    before(ZE_API_VERSION_CURRENT, table);
    after(ZE_API_VERSION_CURRENT, table);
}

static void open_cache(void)
{
    zc_config *config = &zcl_layer.config;
    *config = (zc_config){.persistent = true,
                          .max_size = ZC_DEFAULT_MAX_SIZE,
                          .memory_size = ZC_DEFAULT_MEMORY_SIZE,
                          .compression_level = ZC_DEFAULT_COMPRESSION_LEVEL};
    snprintf(config->dir, sizeof(config->dir), "%s", scratch);
    cr_assert_eq(zc_cache_open(config, &zcl_layer.cache), ZC_OK);
    cr_assert_not_null(zc_cache_disk_dir(zcl_layer.cache));
}

static void read_spirv(void)
{
    FILE *file = fopen(ZC_KERNEL_DIR "/e2e_saxpy.spv", "rb");
    cr_assert_not_null(file);
    spirv_size = fread(spirv, 1, sizeof(spirv), file);
    fclose(file);
    cr_assert_gt(spirv_size, 20);
}

static void set_up(void)
{
    fake_driver_get_counters_fn get_counters =
        (fake_driver_get_counters_fn)dlsym(fake_driver(), "fake_driver_get_counters");
    counters = get_counters();
    atomic_store(&counters->compiles, 0);
    atomic_store(&counters->native_creates, 0);
    atomic_store(&counters->native_rejected, 0);
    atomic_store(&counters->reject_native, false);
    atomic_store(&counters->rebuild_native, false);
    atomic_store(&counters->rebuild_native_same_size, false);
    read_spirv();
    snprintf(scratch, sizeof(scratch), "/tmp/zc_layer_test.XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
    zcl_layer = (zcl_state){.options = {.cache = true}};
    open_cache();
    ze_driver_dditable_t driver = {0};
    ze_device_dditable_t device = {0};
    fill_table("zeGetDriverProcAddrTable", &driver, zcl_hook_none, zcl_hook_driver);
    fill_table("zeGetDeviceProcAddrTable", &device, zcl_hook_none, zcl_hook_device);
    app_module = (ze_module_dditable_t){0};
    app_build_log = (ze_module_build_log_dditable_t){0};
    fill_table("zeGetModuleProcAddrTable", &app_module, zcl_hook_module_before_chain,
               zcl_hook_module);
    fill_table("zeGetModuleBuildLogProcAddrTable", &app_build_log, zcl_hook_none,
               zcl_hook_module_build_log);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void tear_down(void)
{
    zc_cache_close(zcl_layer.cache);
    zcl_layer.cache = NULL;
    nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(layer, .init = set_up, .fini = tear_down, .timeout = 60);

/* ---- helpers ---- */

static ze_device_handle_t device_at(int index)
{
    ze_driver_handle_t driver;
    ze_device_handle_t devices[2];
    uint32_t count = 1;
    cr_assert_eq(zcl_layer.next.driver_get(&count, &driver), ZE_RESULT_SUCCESS);
    count = 2;
    cr_assert_eq(zcl_layer.next.device_get(driver, &count, devices), ZE_RESULT_SUCCESS);
    return devices[index];
}

static ze_module_desc_t spirv_desc(const char *flags)
{
    return (ze_module_desc_t){.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                              .format = ZE_MODULE_FORMAT_IL_SPIRV,
                              .inputSize = spirv_size,
                              .pInputModule = spirv,
                              .pBuildFlags = flags};
}

static ze_result_t create(int device, const char *flags, ze_module_handle_t *module,
                          ze_module_build_log_handle_t *build_log)
{
    ze_module_desc_t desc = spirv_desc(flags);
    return app_module.pfnCreate(NULL, device_at(device), &desc, module, build_log);
}

static ze_module_handle_t create_ok(int device, const char *flags)
{
    ze_module_handle_t module = NULL;
    cr_assert_eq(create(device, flags, &module, NULL), ZE_RESULT_SUCCESS);
    cr_assert_not_null(module);
    return module;
}

static void native_binary(ze_module_handle_t module, uint8_t *binary, size_t *size)
{
    size_t needed = 0;
    cr_assert_eq(app_module.pfnGetNativeBinary(module, &needed, NULL), ZE_RESULT_SUCCESS);
    cr_assert_leq(needed, *size);
    cr_assert_eq(app_module.pfnGetNativeBinary(module, &needed, binary), ZE_RESULT_SUCCESS);
    *size = needed;
}

static void log_text(ze_module_build_log_handle_t build_log, char *text, size_t size)
{
    size_t needed = 0;
    cr_assert_eq(app_build_log.pfnGetString(build_log, &needed, NULL), ZE_RESULT_SUCCESS);
    cr_assert_leq(needed, size);
    cr_assert_eq(app_build_log.pfnGetString(build_log, &needed, text), ZE_RESULT_SUCCESS);
}

static zc_cache_stats stats(void)
{
    zc_cache_stats snapshot;
    zc_cache_get_stats(zcl_layer.cache, &snapshot);
    return snapshot;
}

static void destroy(ze_module_handle_t module)
{
    cr_assert_eq(app_module.pfnDestroy(module), ZE_RESULT_SUCCESS);
}

/* ---- lookups ---- */

/* What the application gets from every lookup of module, one code per
 * name, functions then globals. */
static void lookup_codes(ze_module_handle_t module, ze_result_t codes[8])
{
    static const char *const names[] = {"fake_kernel", "fake_function", "fake_global", "absent"};
    for (int i = 0; i < 4; i++) {
        void *function = NULL, *global = NULL;
        size_t size = 0;
        codes[i] = app_module.pfnGetFunctionPointer(module, names[i], &function);
        codes[4 + i] = app_module.pfnGetGlobalPointer(module, names[i], &size, &global);
    }
}

/* A hit is a native module, which Intel's driver from 22.53 on takes to
 * export every symbol: failed lookups answer as the compile's would. */
Test(layer, hits_answer_lookups_as_the_compile_does)
{
    static const char *const flags[] = {NULL, "-library-compilation", "-ze-take-global-address",
                                        "-O2 -library-compilation -ze-take-global-address"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        ze_module_handle_t compiled = create_ok(0, flags[i]);
        ze_module_handle_t hit = create_ok(0, flags[i]);
        ze_result_t expected[8], got[8];
        lookup_codes(compiled, expected);
        lookup_codes(hit, got);
        for (int n = 0; n < 8; n++)
            cr_assert_eq(got[n], expected[n], "flags %s, lookup %d: 0x%x, not 0x%x",
                         flags[i] ? flags[i] : "NULL", n, (unsigned)got[n], (unsigned)expected[n]);
        destroy(hit);
        destroy(compiled);
    }
    /* The control: without the layer's answer the hit's would differ. */
    ze_module_handle_t hit = create_ok(0, NULL);
    void *function = NULL;
    cr_assert_eq(zcl_layer.next.module_get_function_pointer(hit, "absent", &function),
                 ZE_RESULT_ERROR_INVALID_FUNCTION_NAME);
    destroy(hit);
    zc_cache_stats s = stats();
    cr_assert_eq(s.misses, 4);
    cr_assert_eq(s.memory_hits, 5);
}

/* A destroyed hit's handle, reused by the driver for a native module the
 * application made itself, answers as that module. */
Test(layer, a_destroyed_hit_is_forgotten)
{
    ze_module_handle_t compiled = create_ok(0, NULL);
    ze_module_handle_t hit = create_ok(0, NULL);
    unsigned flags;
    cr_assert(zcl_hit_modules_find(hit, &flags));
    destroy(hit);
    cr_assert_not(zcl_hit_modules_find(hit, &flags));
    destroy(compiled);
}

/* A description of the test's SPIR-V followed by OpNops, larger than the
 * kept check buffer; *big is the input to free. */
static ze_module_desc_t huge_spirv_desc(uint8_t **big)
{
    size_t size = (ZCL_SPARE_MAX + (1u << 20)) & ~(size_t)3;
    *big = malloc(size);
    cr_assert_not_null(*big);
    memcpy(*big, spirv, spirv_size);
    const uint32_t nop = 1u << 16; /* OpNop, one word */
    for (size_t at = spirv_size & ~(size_t)3; at + 4 <= size; at += 4)
        memcpy(*big + at, &nop, 4);
    ze_module_desc_t desc = spirv_desc(NULL);
    desc.pInputModule = *big;
    desc.inputSize = size;
    return desc;
}

/* One huge module does not pin its size in the native check's buffer. */
Test(layer, a_huge_hit_keeps_no_buffer_of_its_size)
{
    uint8_t *big;
    ze_module_desc_t desc = huge_spirv_desc(&big);
    ze_module_handle_t modules[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(app_module.pfnCreate(NULL, device_at(0), &desc, &modules[i], NULL),
                     ZE_RESULT_SUCCESS);
    zc_cache_stats s = stats();
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(s.memory_hits, 1, "the huge module was checked as a hit");
    cr_assert_leq(zcl_native_check_spare_size(), ZCL_SPARE_MAX);
    destroy(modules[0]);
    destroy(modules[1]);
    free(big);
}

Test(layer, miss_then_memory_hit_made_from_the_same_native_binary)
{
    uint8_t first[128 * 1024], second[128 * 1024];
    size_t first_size = sizeof(first), second_size = sizeof(second);
    ze_module_handle_t compiled = create_ok(0, NULL);
    ze_module_handle_t cached = create_ok(0, NULL);
    cr_assert_eq(atomic_load(&counters->compiles), 1);
    cr_assert_eq(atomic_load(&counters->native_creates), 1);
    native_binary(compiled, first, &first_size);
    native_binary(cached, second, &second_size);
    cr_assert_eq(first_size, second_size);
    cr_assert_eq(memcmp(first, second, first_size), 0);
    zc_cache_stats s = stats();
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(s.memory_hits, 1);
    cr_assert_eq(s.disk_hits, 0);
    cr_assert_eq(s.stores, 1);
    cr_assert_eq(s.store_errors, 0);
    destroy(compiled);
    destroy(cached);
}

Test(layer, hooking_the_same_tables_twice_keeps_the_drivers_functions)
{
    zcl_hook_module(ZE_API_VERSION_1_0, &app_module);
    zcl_hook_module_build_log(ZE_API_VERSION_1_0, &app_build_log);
    cr_assert_neq((void *)zcl_layer.next.module_create, (void *)zcl_module_create);
    cr_assert_neq((void *)zcl_layer.next.build_log_destroy, (void *)zcl_build_log_destroy);
    ze_module_handle_t compiled = create_ok(0, NULL);
    cr_assert_eq(atomic_load(&counters->compiles), 1);
    destroy(compiled);
}

Test(layer, new_memory_tier_hits_on_disk)
{
    destroy(create_ok(0, "-a"));
    zc_cache_close(zcl_layer.cache);
    open_cache();
    destroy(create_ok(0, "-a"));
    cr_assert_eq(atomic_load(&counters->compiles), 1);
    cr_assert_eq(stats().disk_hits, 1);
    cr_assert_eq(stats().misses, 0);
}

Test(layer, devices_and_flags_are_told_apart)
{
    const char *flags[] = {NULL, "", "-x"};
    for (int round = 0; round < 2; round++)
        for (int device = 0; device < 2; device++)
            for (int i = 0; i < 3; i++)
                destroy(create_ok(device, flags[i]));
    cr_assert_eq(atomic_load(&counters->compiles), 6);
    cr_assert_eq(stats().misses, 6);
    cr_assert_eq(stats().memory_hits, 6);
}

Test(layer, each_device_is_described_once)
{
    destroy(create_ok(0, "-once"));
    destroy(create_ok(1, "-once"));
    int queries = atomic_load(&counters->device_queries);
    for (int i = 0; i < 4; i++)
        destroy(create_ok(i % 2, "-once"));
    cr_assert_eq(atomic_load(&counters->device_queries), queries);
}

/* ---- failures ---- */

Test(layer, failed_build_gives_the_drivers_error_and_log_and_is_not_stored)
{
    for (int attempt = 1; attempt <= 2; attempt++) {
        ze_module_handle_t module = NULL;
        ze_module_build_log_handle_t build_log = NULL;
        char text[128];
        cr_assert_eq(create(0, "-fail", &module, &build_log), ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
        log_text(build_log, text, sizeof(text));
        cr_assert_str_eq(text, "error: asked to fail");
        cr_assert_eq(app_build_log.pfnDestroy(build_log), ZE_RESULT_SUCCESS);
        cr_assert_eq(atomic_load(&counters->compiles), attempt);
    }
    cr_assert_eq(atomic_load(&counters->live_build_logs), 0);
    cr_assert_eq(stats().failed_builds, 2);
    cr_assert_eq(stats().stores, 0);
}

Test(layer, binary_the_driver_refuses_is_compiled_again_and_replaced)
{
    destroy(create_ok(0, "-r"));
    atomic_store(&counters->reject_native, true);
    destroy(create_ok(0, "-r"));
    cr_assert_eq(atomic_load(&counters->native_rejected), 1);
    cr_assert_eq(atomic_load(&counters->compiles), 2);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_REJECTED_BINARY], 1);
    atomic_store(&counters->reject_native, false);
    zc_cache_close(zcl_layer.cache);
    open_cache();
    destroy(create_ok(0, "-r"));
    cr_assert_eq(stats().disk_hits, 1);
    cr_assert_eq(atomic_load(&counters->compiles), 2);
}

static size_t files_ending_in_count;
static const char *files_ending_in_suffix;

static int count_file_ending(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    size_t length = strlen(path), suffix = strlen(files_ending_in_suffix);
    if (flag == FTW_F && length > suffix &&
        strcmp(path + length - suffix, files_ending_in_suffix) == 0)
        files_ending_in_count++;
    return 0;
}

/* How many files in the cache directory end in suffix. */
static size_t files_ending_in(const char *suffix)
{
    files_ending_in_count = 0;
    files_ending_in_suffix = suffix;
    cr_assert_eq(nftw(scratch, count_file_ending, 16, FTW_PHYS), 0);
    return files_ending_in_count;
}

/* A hit the driver refuses is no hit: the compile that replaces it is the
 * lookup's miss, claims no compile time saved, and records the module's
 * inputs as a miss does (here for an entry stored while recording was off). */
Test(layer, a_refused_hit_is_a_miss_and_records_its_inputs)
{
    destroy(create_ok(0, "-r"));
    cr_assert_eq(files_ending_in(".recipe"), 0);
    zc_cache_close(zcl_layer.cache);
    open_cache();
    zcl_layer.config.record_inputs = true;
    atomic_store(&counters->reject_native, true);
    destroy(create_ok(0, "-r"));
    cr_assert_eq(atomic_load(&counters->native_rejected), 1);
    cr_assert_eq(atomic_load(&counters->compiles), 2);
    zc_cache_stats after = stats();
    cr_assert_eq(after.disk_hits, 0);
    cr_assert_eq(after.memory_hits, 0);
    cr_assert_eq(after.misses, 1);
    cr_assert_eq(after.failed_builds, 0);
    cr_assert_eq(after.bypasses[ZC_BYPASS_REJECTED_BINARY], 1);
    cr_assert_eq(after.compile_ns_saved, 0);
    cr_assert_gt(after.compile_ns_spent, 0);
    cr_assert_eq(files_ending_in(".recipe"), 1);
    cr_assert_eq(files_ending_in(".l0_cache"), 1);
    /* The replacement serves the next run. */
    atomic_store(&counters->reject_native, false);
    zc_cache_close(zcl_layer.cache);
    open_cache();
    destroy(create_ok(0, "-r"));
    cr_assert_eq(stats().disk_hits, 1);
    cr_assert_eq(stats().misses, 0);
    cr_assert_eq(atomic_load(&counters->compiles), 2);
}

/* A binary the driver rebuilds is no hit either, and saves nothing. */
Test(layer, a_rebuilt_hit_is_not_counted_as_a_hit)
{
    destroy(create_ok(0, "-b"));
    zc_cache_close(zcl_layer.cache);
    open_cache();
    atomic_store(&counters->rebuild_native, true);
    destroy(create_ok(0, "-b"));
    zc_cache_stats after = stats();
    cr_assert_eq(after.disk_hits, 0);
    cr_assert_eq(after.memory_hits, 0);
    cr_assert_eq(after.misses, 0);
    cr_assert_eq(after.bypasses[ZC_BYPASS_REJECTED_BINARY], 1);
    cr_assert_eq(after.compile_ns_saved, 0);
}

/* A driver that rebuilds native binaries from their IR (a debug key, a
 * debugger) could give other code than the compile that stored them: the
 * application gets the driver's compile, and later modules skip the cache. */
Test(layer, binary_the_driver_rebuilds_is_compiled_instead_and_hits_stop)
{
    uint8_t first[128 * 1024], second[128 * 1024];
    size_t first_size = sizeof(first), second_size = sizeof(second);
    int live = atomic_load(&counters->live_modules);
    ze_module_handle_t compiled = create_ok(0, "-b");
    native_binary(compiled, first, &first_size);
    destroy(compiled);
    atomic_store(&counters->rebuild_native, true);
    ze_module_handle_t again = create_ok(0, "-b");
    cr_assert_eq(atomic_load(&counters->native_creates), 1);
    cr_assert_eq(atomic_load(&counters->compiles), 2);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_REJECTED_BINARY], 1);
    native_binary(again, second, &second_size);
    cr_assert_eq(second_size, first_size);
    cr_assert_eq(memcmp(first, second, first_size), 0);
    destroy(again);
    destroy(create_ok(0, "-b"));
    destroy(create_ok(0, "-other"));
    cr_assert_eq(atomic_load(&counters->native_creates), 1);
    cr_assert_eq(atomic_load(&counters->compiles), 4);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_NOT_CACHEABLE], 2);
    cr_assert_eq(stats().stores, 1);
    cr_assert_eq(atomic_load(&counters->live_modules), live);
}

/* The first hit per device and build flags is checked in full, a later one
 * by the loaded binary's size alone (no copy out of the driver): a rebuild
 * at a later hit is still refused, and the application gets the compile. */
Test(layer, a_later_hit_the_driver_rebuilds_is_refused_by_its_size)
{
    uint8_t first[128 * 1024], second[128 * 1024];
    size_t first_size = sizeof(first), second_size = sizeof(second);
    ze_module_handle_t compiled = create_ok(0, "-b");
    native_binary(compiled, first, &first_size);
    destroy(compiled);
    destroy(create_ok(1, "-b"));
    int copies = atomic_load(&counters->native_binary_copies);
    destroy(create_ok(0, "-b"));
    destroy(create_ok(0, "-b"));
    cr_assert_eq(atomic_load(&counters->native_binary_copies), copies + 1,
                 "the first hit in full, the second by size");
    destroy(create_ok(1, "-b"));
    destroy(create_ok(1, "-b"));
    cr_assert_eq(atomic_load(&counters->native_binary_copies), copies + 2,
                 "the first hit of another device in full");
    atomic_store(&counters->rebuild_native, true);
    ze_module_handle_t again = create_ok(0, "-b");
    cr_assert_eq(atomic_load(&counters->native_binary_copies), copies + 2);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_REJECTED_BINARY], 1);
    cr_assert_eq(stats().memory_hits, 4);
    cr_assert_eq(atomic_load(&counters->native_creates), 5);
    cr_assert_eq(atomic_load(&counters->compiles), 3);
    native_binary(again, second, &second_size);
    cr_assert_eq(second_size, first_size);
    cr_assert_eq(memcmp(first, second, first_size), 0);
    destroy(again);
}

/* A large first hit's check copies the module's binary into a buffer
 * faulted in while the driver made the module: it still compares every
 * byte, so a rebuild of the same size is refused and the application gets
 * the compile. */
Test(layer, a_large_hit_rebuilt_to_the_same_size_is_refused_in_full)
{
    uint8_t *big;
    ze_module_desc_t desc = huge_spirv_desc(&big);
    ze_module_handle_t compiled;
    cr_assert_eq(app_module.pfnCreate(NULL, device_at(0), &desc, &compiled, NULL),
                 ZE_RESULT_SUCCESS);
    destroy(compiled);
    atomic_store(&counters->rebuild_native_same_size, true);
    ze_module_handle_t again;
    cr_assert_eq(app_module.pfnCreate(NULL, device_at(0), &desc, &again, NULL), ZE_RESULT_SUCCESS);
    cr_assert_eq(stats().bypasses[ZC_BYPASS_REJECTED_BINARY], 1);
    cr_assert_eq(stats().memory_hits, 0);
    cr_assert_eq(atomic_load(&counters->native_creates), 1);
    cr_assert_eq(atomic_load(&counters->compiles), 2);
    destroy(again);
    free(big);
}

/* ---- build logs ---- */

Test(layer, hit_returns_a_layer_build_log_with_the_original_text)
{
    char compiled_text[128], cached_text[128];
    ze_module_handle_t module;
    ze_module_build_log_handle_t build_log;
    cr_assert_eq(create(1, "-w", &module, &build_log), ZE_RESULT_SUCCESS);
    log_text(build_log, compiled_text, sizeof(compiled_text));
    cr_assert_str_eq(compiled_text, "warning: flags were given");
    cr_assert_eq(app_build_log.pfnDestroy(build_log), ZE_RESULT_SUCCESS);
    destroy(module);
    cr_assert_eq(atomic_load(&counters->live_build_logs), 0);

    cr_assert_eq(create(1, "-w", &module, &build_log), ZE_RESULT_SUCCESS);
    cr_assert_eq(atomic_load(&counters->compiles), 1);
    /* Made by the layer: the driver has no log alive. */
    cr_assert_eq(atomic_load(&counters->live_build_logs), 0);
    log_text(build_log, cached_text, sizeof(cached_text));
    cr_assert_str_eq(cached_text, compiled_text);
    char short_text[5];
    size_t short_size = sizeof(short_text);
    cr_assert_eq(app_build_log.pfnGetString(build_log, &short_size, short_text), ZE_RESULT_SUCCESS);
    cr_assert_str_eq(short_text, "warn");
    cr_assert_eq(app_build_log.pfnDestroy(build_log), ZE_RESULT_SUCCESS);
    destroy(module);
}

Test(layer, log_not_asked_for_is_not_leaked)
{
    destroy(create_ok(0, "-quiet"));
    cr_assert_eq(atomic_load(&counters->live_build_logs), 0);
    cr_assert_eq(atomic_load(&counters->live_modules), 0);
}

/* Programs that never destroy their logs: every lookup still finds its own
 * log among thousands, destroying some in any order leaves the rest intact,
 * and a driver's handle still goes to the driver. */
Test(layer, many_logs_kept_alive_are_each_found)
{
    enum { LOGS = 20000 };
    static ze_module_build_log_handle_t logs[LOGS];
    char text[32], expected[32];
    for (int i = 0; i < LOGS; i++) {
        int length = snprintf(text, sizeof(text), "log %d", i);
        logs[i] = zcl_build_log_create(text, (size_t)length);
        cr_assert_not_null(logs[i]);
    }
    ze_module_handle_t module = NULL;
    ze_module_build_log_handle_t driver_log = NULL;
    cr_assert_eq(create(0, "-fail", &module, &driver_log), ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < LOGS; i++) {
            if (logs[i] == NULL)
                continue;
            snprintf(expected, sizeof(expected), "log %d", i);
            log_text(logs[i], text, sizeof(text));
            cr_assert_str_eq(text, expected);
        }
        log_text(driver_log, text, sizeof(text));
        cr_assert_str_eq(text, "error: asked to fail");
        /* Destroy two thirds, in an order unrelated to creation. */
        for (int i = 0; round == 0 && i < LOGS; i++) {
            int victim = (int)(((long)i * 7919) % LOGS);
            if (victim % 3 != 0) {
                cr_assert_eq(app_build_log.pfnDestroy(logs[victim]), ZE_RESULT_SUCCESS);
                logs[victim] = NULL;
            }
        }
    }
    for (int i = 0; i < LOGS; i++)
        if (logs[i] != NULL)
            cr_assert_eq(app_build_log.pfnDestroy(logs[i]), ZE_RESULT_SUCCESS);
    cr_assert_eq(app_build_log.pfnDestroy(driver_log), ZE_RESULT_SUCCESS);
    cr_assert_eq(atomic_load(&counters->live_build_logs), 0);
}

/* ---- bypasses ---- */

Test(layer, native_input_and_unknown_extension_go_to_the_driver)
{
    static const char native[] = "NATIVE:prebuilt";
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = ZE_MODULE_FORMAT_NATIVE,
                             .inputSize = sizeof(native),
                             .pInputModule = (const uint8_t *)native};
    ze_module_handle_t module;
    cr_assert_eq(app_module.pfnCreate(NULL, device_at(0), &desc, &module, NULL), ZE_RESULT_SUCCESS);
    destroy(module);
    ze_base_desc_t unknown = {.stype = (ze_structure_type_t)0x7ffe0001};
    desc = spirv_desc(NULL);
    desc.pNext = &unknown;
    cr_assert_eq(app_module.pfnCreate(NULL, device_at(0), &desc, &module, NULL),
                 ZE_RESULT_ERROR_INVALID_ARGUMENT);
    zc_cache_stats s = stats();
    cr_assert_eq(s.bypasses[ZC_BYPASS_NATIVE_INPUT], 1);
    cr_assert_eq(s.bypasses[ZC_BYPASS_UNSUPPORTED_INPUT], 1);
    cr_assert_eq(s.misses + s.memory_hits + s.disk_hits, 0);
    cr_assert_eq(atomic_load(&counters->compiles), 0);
}

/* ---- modules a native binary cannot reproduce ---- */

enum { SPIRV_WORDS = 5 + 2 + 9 + 5 };

/* Header, OpTypeVoid, OpTypeImage (or a second OpTypeVoid), OpFunction. */
static void make_spirv(uint32_t *words, bool with_image, bool byte_swapped)
{
    uint32_t module[SPIRV_WORDS] = {0x07230203,
                                    0x00010000,
                                    0,
                                    10,
                                    0,
                                    (2u << 16) | 19,
                                    1,
                                    (9u << 16) | 25,
                                    2,
                                    1,
                                    1,
                                    0,
                                    0,
                                    0,
                                    0,
                                    0,
                                    (5u << 16) | 54,
                                    1,
                                    3,
                                    0,
                                    4};
    if (!with_image)
        module[7] = (9u << 16) | 1; /* OpUndef-sized filler: not a type */
    for (int i = 0; i < SPIRV_WORDS; i++)
        words[i] = byte_swapped ? __builtin_bswap32(module[i]) : module[i];
}

/* Whether a module of spirv can be a hit, and whether it has image
 * arguments. The fake driver's tables give no kernel or image functions, so
 * a module with images is never a hit here, and says why. */
static bool reproducible(const void *spirv, size_t size, bool *has_images)
{
    char detail[256] = "";
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = ZE_MODULE_FORMAT_IL_SPIRV,
                             .inputSize = size,
                             .pInputModule = spirv};
    zcl_request request;
    zc_bypass_reason reason;
    cr_assert(zcl_request_of(&desc, &request, &reason, detail, sizeof(detail)));
    zcl_image_kernels *kernels = (zcl_image_kernels *)&desc; /* must be overwritten */
    bool result = zcl_hit_reproducible(&request.request, &kernels, detail, sizeof(detail));
    zcl_request_free(&request);
    cr_assert(result || detail[0] != '\0');
    cr_assert(result || kernels == NULL);
    *has_images = kernels != NULL || strstr(detail, "declares image types") != NULL;
    if (*has_images && !result)
        cr_assert_neq(strstr(detail, "kernel and image functions"), NULL, "%s", detail);
    zcl_image_kernels_destroy(kernels);
    return result;
}

Test(layer, image_types_are_found_in_either_byte_order)
{
    uint32_t words[SPIRV_WORDS];
    bool images;
    for (int swapped = 0; swapped < 2; swapped++) {
        make_spirv(words, true, swapped);
        cr_assert_not(reproducible(words, sizeof(words), &images));
        cr_assert(images);
        make_spirv(words, false, swapped);
        cr_assert(reproducible(words, sizeof(words), &images));
        cr_assert_not(images);
    }
    /* Types come before functions: what follows the first one is not read
     * when no image type came before it. */
    uint32_t late[SPIRV_WORDS];
    make_spirv(words, true, false);
    memcpy(late, words, 7 * 4);
    memcpy(late + 7, words + 16, 5 * 4);
    memcpy(late + 12, words + 7, 9 * 4);
    cr_assert(reproducible(late, sizeof(late), &images));
    late[12] = 0;
    cr_assert(reproducible(late, sizeof(late), &images));
    /* What cannot be walked is not cached: bad magic, a zero-length or
     * overlong instruction, a size that is not whole words. */
    make_spirv(words, false, false);
    cr_assert(reproducible(words, sizeof(words), &images));
    cr_assert_not(reproducible(words, sizeof(words) - 1, &images));
    words[0] = 0x12345678;
    cr_assert_not(reproducible(words, sizeof(words), &images));
    make_spirv(words, false, false);
    words[5] = 19; /* length 0 */
    cr_assert_not(reproducible(words, sizeof(words), &images));
    make_spirv(words, false, false);
    words[5] = (200u << 16) | 19;
    cr_assert_not(reproducible(words, sizeof(words), &images));
}

/* Which arguments are images, per kernel, in either byte order: first,
 * after a sampler, after a buffer and a value, two in one kernel, none. */
Test(layer, image_arguments_of_each_kernel)
{
    size_t size;
    uint32_t *spirv = t_read_kernel("e2e_images", &size);
    for (int swapped = 0; swapped < 2; swapped++) {
        zcl_image_kernels kernels = {0};
        cr_assert_eq(zcl_spirv_image_kernels(spirv, size, &kernels), ZCL_SPIRV_IMAGES);
        cr_assert_eq(kernels.count, 4);
        cr_assert_eq(zcl_image_kernels_arguments_of(&kernels, "read_first"), 0x1);
        cr_assert_eq(zcl_image_kernels_arguments_of(&kernels, "sample_second"), 0x2);
        cr_assert_eq(zcl_image_kernels_arguments_of(&kernels, "write_third"), 0x4);
        cr_assert_eq(zcl_image_kernels_arguments_of(&kernels, "volume_and_line"), 0x3);
        cr_assert_eq(zcl_image_kernels_arguments_of(&kernels, "no_image"), 0);
        cr_assert_eq(zcl_image_kernels_arguments_of(&kernels, "absent"), 0);
        zcl_image_kernels_free(&kernels);
        for (size_t i = 0; i < size / 4; i++)
            spirv[i] = __builtin_bswap32(spirv[i]);
    }
    free(spirv);
    spirv = t_read_kernel("e2e_saxpy", &size);
    cr_assert_eq(zcl_spirv_image_kernels(spirv, size, NULL), ZCL_SPIRV_NO_IMAGES);
    free(spirv);
}

static zcl_image_verdict verdict_of(uint32_t layout, uint32_t type, const void *next,
                                    uint32_t build)
{
    ze_image_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_IMAGE_DESC,
                            .pNext = next,
                            .format = {.layout = (ze_image_format_layout_t)layout,
                                       .type = (ze_image_format_type_t)type}};
    return zcl_image_verdict_of(&desc, build);
}

/* What the real drivers cannot both show: the versions where the driver's
 * table changed. The parity test checks every format on each real driver. */
Test(layer, image_verdicts_follow_the_driver_version)
{
    enum { OLD = 24595, THREE_CHANNEL = 31740, DEPTH = 38646 };
    /* 8_8_8, 16_16_16, 32_32_32 (43 to 45) have channel types from 24.45 */
    for (uint32_t layout = 43; layout <= 45; layout++) {
        cr_assert_eq(verdict_of(layout, ZE_IMAGE_FORMAT_TYPE_UINT, NULL, OLD), ZCL_IMAGE_REFUSED);
        cr_assert_eq(verdict_of(layout, ZE_IMAGE_FORMAT_TYPE_UINT, NULL, THREE_CHANNEL),
                     ZCL_IMAGE_ACCEPTED);
    }
    cr_assert_eq(verdict_of(43, ZE_IMAGE_FORMAT_TYPE_FLOAT, NULL, THREE_CHANNEL),
                 ZCL_IMAGE_REFUSED);
    /* A depth-stencil format (26.22 on) is a depth resource: taken. */
    ze_base_desc_t depth = {.stype = (ze_structure_type_t)0x00050005};
    cr_assert_eq(verdict_of(ZE_IMAGE_FORMAT_LAYOUT_Y8, 0, &depth, DEPTH), ZCL_IMAGE_ACCEPTED);
    cr_assert_eq(verdict_of(ZE_IMAGE_FORMAT_LAYOUT_Y8, 0, &depth, THREE_CHANNEL),
                 ZCL_IMAGE_REFUSED);
    /* A GL texture's depth flag is not the layer's to read. */
    ze_base_desc_t gl = {.stype = (ze_structure_type_t)0x00050001};
    cr_assert_eq(verdict_of(ZE_IMAGE_FORMAT_LAYOUT_Y8, 0, &gl, DEPTH), ZCL_IMAGE_UNKNOWN);
    cr_assert_eq(verdict_of(ZE_IMAGE_FORMAT_LAYOUT_8_8_8_8, ZE_IMAGE_FORMAT_TYPE_UNORM, &gl, DEPTH),
                 ZCL_IMAGE_ACCEPTED);
}

static bool program_reproducible(const char *module_flags, const char *first, const char *second)
{
    uint32_t words[SPIRV_WORDS];
    make_spirv(words, false, false);
    const uint8_t *inputs[2] = {(const uint8_t *)words, (const uint8_t *)words};
    size_t sizes[2] = {sizeof(words), sizeof(words)};
    const char *flags[2] = {first, second};
    ze_module_program_exp_desc_t program = {.stype = ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC,
                                            .count = 2,
                                            .inputSizes = sizes,
                                            .pInputModules = inputs,
                                            .pBuildFlags = flags};
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .pNext = &program,
                             .format = ZE_MODULE_FORMAT_IL_SPIRV,
                             .pBuildFlags = module_flags};
    char detail[256] = "";
    zcl_request request;
    zc_bypass_reason reason;
    cr_assert(zcl_request_of(&desc, &request, &reason, detail, sizeof(detail)));
    zcl_image_kernels *kernels;
    bool result = zcl_hit_reproducible(&request.request, &kernels, detail, sizeof(detail));
    zcl_image_kernels_destroy(kernels);
    cr_assert(result || detail[0] != '\0');
    if (result)
        cr_assert_eq(zcl_native_build_flags(&request.request), first);
    zcl_request_free(&request);
    return result;
}

Test(layer, programs_are_cached_only_with_one_flags_string)
{
    cr_assert(program_reproducible(NULL, NULL, NULL));
    cr_assert(program_reproducible(NULL, "-a -b", "-a -b"));
    cr_assert_not(program_reproducible(NULL, "-a", "-b"));
    cr_assert_not(program_reproducible(NULL, NULL, ""));
    cr_assert_not(program_reproducible(NULL, "-a", NULL));
    cr_assert_not(program_reproducible("", NULL, NULL));
    cr_assert_not(program_reproducible("-a", "-a", "-a"));
}

/* The one translation of a module description: everything after reads the
 * request, so every input, its flags (NULL kept apart from "") and its
 * constants must be the application's own, and a program's module flags
 * kept apart from its inputs'. */
Test(layer, a_module_description_is_described_once_as_given)
{
    uint32_t words[SPIRV_WORDS];
    make_spirv(words, false, false);
    uint32_t ids[1] = {7};
    uint64_t value = 9;
    const void *values[1] = {&value};
    ze_module_constants_t constants = {
        .numConstants = 1, .pConstantIds = ids, .pConstantValues = values};
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = ZE_MODULE_FORMAT_IL_SPIRV,
                             .inputSize = sizeof(words),
                             .pInputModule = (const uint8_t *)words,
                             .pBuildFlags = "",
                             .pConstants = &constants};
    zcl_request request;
    zc_bypass_reason reason;
    char detail[128];
    cr_assert(zcl_request_of(&desc, &request, &reason, detail, sizeof(detail)));
    const zc_build_request *made = &request.request;
    cr_assert_eq(made->api, ZC_API_LEVEL_ZERO);
    cr_assert(!made->program);
    cr_assert_eq(made->input_count, 1);
    cr_assert_eq(made->inputs[0].kind, ZC_INPUT_SPIRV);
    cr_assert_eq(made->inputs[0].bytes, (const void *)words);
    cr_assert_eq(made->inputs[0].size, sizeof(words));
    cr_assert_eq(made->inputs[0].flags, desc.pBuildFlags);
    cr_assert(made->inputs[0].has_constants);
    cr_assert_eq(made->inputs[0].constants.count, 1);
    cr_assert_eq(made->inputs[0].constants.ids, ids);
    cr_assert_eq((const void *)made->inputs[0].constants.values, (const void *)values);
    zcl_request_free(&request);

    const uint8_t *inputs[2] = {(const uint8_t *)words, (const uint8_t *)words};
    size_t sizes[2] = {sizeof(words), 8};
    const char *flags[2] = {NULL, "-g"};
    const ze_module_constants_t *input_constants[2] = {NULL, &constants};
    ze_module_program_exp_desc_t program = {.stype = ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC,
                                            .count = 2,
                                            .inputSizes = sizes,
                                            .pInputModules = inputs,
                                            .pBuildFlags = flags,
                                            .pConstants = input_constants};
    desc.pNext = &program;
    desc.pBuildFlags = "-module";
    cr_assert(zcl_request_of(&desc, &request, &reason, detail, sizeof(detail)));
    cr_assert(made->program);
    cr_assert_str_eq(made->program_flags, "-module");
    cr_assert_eq(made->input_count, 2);
    cr_assert_null(made->inputs[0].flags);
    cr_assert_str_eq(made->inputs[1].flags, "-g");
    cr_assert_eq(made->inputs[1].size, 8);
    cr_assert(!made->inputs[0].has_constants);
    cr_assert(made->inputs[1].has_constants);
    zcl_request_free(&request);

    /* Missing arrays: a request without inputs, which the key refuses. */
    program.pInputModules = NULL;
    cr_assert(zcl_request_of(&desc, &request, &reason, detail, sizeof(detail)));
    cr_assert_null(made->inputs);
    cr_assert_eq(made->input_count, 0);
    zcl_request_free(&request);

    desc.pNext = NULL;
    desc.format = ZE_MODULE_FORMAT_NATIVE;
    cr_assert_not(zcl_request_of(&desc, &request, &reason, detail, sizeof(detail)));
    cr_assert_eq(reason, ZC_BYPASS_NATIVE_INPUT);
    desc.format = (ze_module_format_t)7;
    cr_assert_not(zcl_request_of(&desc, &request, &reason, detail, sizeof(detail)));
    cr_assert_eq(reason, ZC_BYPASS_UNSUPPORTED_INPUT);
    cr_assert_str_eq(detail, "unknown module format 7");
}

/* ---- threads ---- */

typedef struct thread_job {
    pthread_barrier_t *start;
    int device;
    const char *flags;
    ze_result_t result;
} thread_job;

static void *create_in_thread(void *context)
{
    thread_job *job = context;
    ze_module_handle_t module = NULL;
    pthread_barrier_wait(job->start);
    ze_module_desc_t desc = spirv_desc(job->flags);
    job->result = app_module.pfnCreate(NULL, device_at(job->device), &desc, &module, NULL);
    if (job->result == ZE_RESULT_SUCCESS)
        job->result = app_module.pfnDestroy(module);
    return NULL;
}

static void run_threads(thread_job *jobs)
{
    pthread_t threads[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        jobs[i].start = &start;
        cr_assert_eq(pthread_create(&threads[i], NULL, create_in_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(jobs[i].result, ZE_RESULT_SUCCESS);
}

Test(layer, sixteen_threads_creating_one_module_compile_once)
{
    thread_job jobs[THREADS];
    for (int i = 0; i < THREADS; i++)
        jobs[i] = (thread_job){.device = 0, .flags = "-same"};
    run_threads(jobs);
    cr_assert_eq(atomic_load(&counters->compiles), 1);
    cr_assert_eq(stats().misses, 1);
    cr_assert_eq(stats().memory_hits, THREADS - 1);
}

Test(layer, threads_on_two_devices_with_two_modules_compile_four_times)
{
    thread_job jobs[THREADS];
    static const char *const flags[] = {"-first", "-second"};
    for (int i = 0; i < THREADS; i++)
        jobs[i] = (thread_job){.device = i % 2, .flags = flags[(i / 2) % 2]};
    run_threads(jobs);
    cr_assert_eq(atomic_load(&counters->compiles), 4);
    cr_assert_eq(stats().misses, 4);
    cr_assert_eq(stats().memory_hits, THREADS - 4);
    cr_assert_eq(atomic_load(&counters->live_modules), 0);
}

/* ---- ZE_ENABLE_LAYERS and the driver's cache ---- */

Test(layer, enable_layers_list_is_parsed)
{
    static const struct {
        const char *list;
        bool cache, validation;
    } cases[] = {
        {NULL, true, false},
        {"", false, false},
        {"cache", true, false},
        {"validation", false, true},
        {" cache , validation ", true, true},
        {"bogus,cache", true, false},
        {"cachex", false, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        zcl_options options;
        zcl_options_parse(cases[i].list, &options);
        cr_assert_eq(options.cache, cases[i].cache, "case %zu", i);
        cr_assert_eq(options.validation, cases[i].validation, "case %zu", i);
    }
}

static void set_or_unset_for_test(const char *name, const char *value)
{
    if (value == NULL)
        unsetenv(name);
    else
        setenv(name, value, 1);
}

static void assert_env_is(const char *name, const char *expected, size_t index)
{
    const char *value = getenv(name);
    if (expected == NULL)
        cr_assert_null(value, "case %zu: %s=%s", index, name, value);
    else
        cr_assert(value != NULL && strcmp(value, expected) == 0, "case %zu: %s=%s, not %s", index,
                  name, value != NULL ? value : "(unset)", expected);
}

static const char *const driver_cache_names[] = {"NEO_CACHE_PERSISTENT", "l0_cache_dir",
                                                 "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT",
                                                 "ZECACHE_ORIGINAL_l0_cache_dir"};

static void unset_driver_cache_names(void)
{
    for (size_t i = 0; i < sizeof(driver_cache_names) / sizeof(driver_cache_names[0]); i++)
        unsetenv(driver_cache_names[i]);
}

/* The environment exactly as it is: the array and every string in it. */
typedef struct environment_snapshot {
    char **array;
    char *entries[256];
    size_t count;
} environment_snapshot;

extern char **environ;

static void snapshot_environment(environment_snapshot *snapshot)
{
    snapshot->array = environ;
    snapshot->count = 0;
    while (environ[snapshot->count] != NULL && snapshot->count < 256) {
        snapshot->entries[snapshot->count] = environ[snapshot->count];
        snapshot->count++;
    }
    cr_assert_null(environ[snapshot->count], "more than 256 variables");
}

static void assert_environment_untouched(const environment_snapshot *before, const char *what)
{
    cr_assert_eq(environ, before->array, "%s: environ replaced", what);
    for (size_t i = 0; i < before->count; i++)
        cr_assert_eq(environ[i], before->entries[i], "%s: variable %zu written", what, i);
    cr_assert_null(environ[before->count], "%s: a variable was added", what);
}

/* Each case: the user's NEO_CACHE_PERSISTENT and l0_cache_dir (NULL: unset),
 * whether ./l0_cache exists, and what the layer leaves in each (NULL: the
 * user's value). Whatever driver is loaded, and whatever its library holds:
 * the fake driver names neither switch. Where no driver generation would
 * cache, not a byte of the environment is written. */
Test(layer, each_switch_that_would_cache_is_hidden_and_only_those)
{
    static const struct {
        const char *persistent, *cache_dir;
        bool l0_cache_here;
        const char *hidden_persistent, *hidden_cache_dir;
    } cases[] = {
        {NULL, NULL, false, "00", NULL}, /* 26.x's default: on */
        {"1", NULL, false, "00", NULL},
        {"0", NULL, true, NULL, "/dev/null/zecache-keeps-the-driver-cache-off"},
        {"0", ".", false, NULL, "/dev/null/zecache-keeps-the-driver-cache-off"},
        {"0", NULL, false, NULL, NULL},  /* switched off by the user */
        {"no", NULL, false, NULL, NULL}, /* atoll: 0 */
        {"0", "/nonexistent/dir", false, NULL, NULL},
        {"0", "/nonexistent/dir", true, NULL, NULL}, /* set: ./l0_cache is not used */
        {"00", NULL, false, NULL, NULL},
    };
    char cwd[PATH_MAX];
    cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
    cr_assert_eq(chdir(scratch), 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unset_driver_cache_names();
        rmdir("l0_cache");
        if (cases[i].l0_cache_here)
            cr_assert_eq(mkdir("l0_cache", 0700), 0);
        set_or_unset_for_test("NEO_CACHE_PERSISTENT", cases[i].persistent);
        set_or_unset_for_test("l0_cache_dir", cases[i].cache_dir);
        environment_snapshot before;
        snapshot_environment(&before);
        (void)zc_driver_cache_hide(ZC_API_LEVEL_ZERO);
        if (cases[i].hidden_persistent == NULL && cases[i].hidden_cache_dir == NULL) {
            char what[32];
            snprintf(what, sizeof(what), "case %zu", i);
            assert_environment_untouched(&before, what);
        }
        assert_env_is("NEO_CACHE_PERSISTENT",
                      cases[i].hidden_persistent ? cases[i].hidden_persistent : cases[i].persistent,
                      i);
        assert_env_is("l0_cache_dir",
                      cases[i].hidden_cache_dir ? cases[i].hidden_cache_dir : cases[i].cache_dir,
                      i);
    }
    rmdir("l0_cache");
    cr_assert_eq(chdir(cwd), 0);
    unset_driver_cache_names();
}

Test(layer, driver_cache_is_hidden_and_the_users_values_come_back)
{
    unset_driver_cache_names();
    setenv("NEO_CACHE_PERSISTENT", "1", 1);
    setenv("l0_cache_dir", scratch, 1);
    (void)zc_driver_cache_hide(ZC_API_LEVEL_ZERO);
    cr_assert_str_eq(getenv("NEO_CACHE_PERSISTENT"), "00");
    cr_assert_str_eq(getenv("l0_cache_dir"), "/dev/null/zecache-keeps-the-driver-cache-off");
    cr_assert_str_eq(getenv("ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT"), "1");
    cr_assert_str_eq(getenv("ZECACHE_ORIGINAL_l0_cache_dir"), scratch);

    zc_driver_cache_restore_user_env(ZC_API_LEVEL_ZERO); /* what a child loading the layer does */
    cr_assert_str_eq(getenv("NEO_CACHE_PERSISTENT"), "1");
    cr_assert_str_eq(getenv("l0_cache_dir"), scratch);
    unset_driver_cache_names();

    /* Unset, the driver's default is on (NEO_CACHE_PERSISTENT) or ./l0_cache. */
    char cwd[PATH_MAX];
    cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
    cr_assert_eq(chdir(scratch), 0);
    cr_assert_eq(mkdir("l0_cache", 0700), 0);
    (void)zc_driver_cache_hide(ZC_API_LEVEL_ZERO);
    cr_assert_str_eq(getenv("NEO_CACHE_PERSISTENT"), "00");
    cr_assert_str_eq(getenv("l0_cache_dir"), "/dev/null/zecache-keeps-the-driver-cache-off");
    zc_driver_cache_restore_user_env(ZC_API_LEVEL_ZERO);
    cr_assert_null(getenv("NEO_CACHE_PERSISTENT"));
    cr_assert_null(getenv("l0_cache_dir"));
    rmdir("l0_cache");
    cr_assert_eq(chdir(cwd), 0);
    unset_driver_cache_names();
}

/* A child that sets the variables itself, to the value the layer would
 * write or to nothing, keeps them. */
Test(layer, a_value_the_child_set_itself_is_kept)
{
    static const struct {
        const char *persistent, *cache_dir; /* the child's; NULL: unset */
    } cases[] = {{"0", NULL}, {"1", "/elsewhere"}, {NULL, ""}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unset_driver_cache_names();
        setenv("NEO_CACHE_PERSISTENT", "1", 1);
        setenv("l0_cache_dir", scratch, 1);
        (void)zc_driver_cache_hide(ZC_API_LEVEL_ZERO);
        set_or_unset_for_test("NEO_CACHE_PERSISTENT", cases[i].persistent);
        set_or_unset_for_test("l0_cache_dir", cases[i].cache_dir);
        zc_driver_cache_restore_user_env(ZC_API_LEVEL_ZERO);
        assert_env_is("NEO_CACHE_PERSISTENT", cases[i].persistent, i);
        assert_env_is("l0_cache_dir", cases[i].cache_dir, i);
    }
    unset_driver_cache_names();
}

/* ---- the compiler's identity ---- */

static zc_status compile_nothing(void *context, zc_artifact **out)
{
    (void)out;
    *(bool *)context = true;
    return ZC_ERR_BUILD;
}

/* Whether the disk tier (through a fresh cache, so not from memory) holds an
 * entry for the module of device 0 keyed with compiler. */
static bool stored_with(const zc_compiler_identity *compiler)
{
    ze_module_desc_t desc = spirv_desc(NULL);
    const zcl_device_info *device = zcl_device_info_get(device_at(0));
    cr_assert_not_null(device);
    zc_key key;
    char *trace = NULL, reason[128];
    zcl_request request;
    zc_bypass_reason bypass;
    cr_assert(zcl_request_of(&desc, &request, &bypass, reason, sizeof(reason)));
    cr_assert_eq(zc_frontend_key(&request.request, &device->description, compiler, false, &key,
                                 &trace, reason, sizeof(reason)),
                 ZC_OK);
    zcl_request_free(&request);
    zc_cache *fresh;
    cr_assert_eq(zc_cache_open(&zcl_layer.config, &fresh), ZC_OK);
    bool compiled = false;
    zc_artifact *artifact = NULL;
    zc_status status =
        zc_cache_get_or_compile(fresh, &key, NULL, compile_nothing, &compiled, &artifact, NULL);
    zc_artifact_unref(artifact);
    zc_cache_close(fresh);
    return status == ZC_OK && !compiled;
}

/* The driver loads another libigc than the one predicted (here: the fake
 * driver dlopens a copy named libigc.so.1 when it compiles). The check after
 * the compile sees it: that compile is stored under the real compiler's key,
 * never the predicted one, and the process serves no more hits. */
/* A stand-in compiler for the fake driver: a copy of libzstd named as this
 * machine's IGC, in scratch. */
static void make_stand_in_compiler(char *path, size_t size)
{
    snprintf(path, size, "%s/%s", scratch, t_system_igc_name());
    char command[256];
    snprintf(command, sizeof(command), "cp /usr/lib/x86_64-linux-gnu/libzstd.so.1 %s", path);
    cr_assert_eq(system(command), 0);
}

Test(layer, compiler_loaded_other_than_predicted_stops_hits_and_keys_the_real_one)
{
    char stand_in[96];
    make_stand_in_compiler(stand_in, sizeof(stand_in));
    zc_compiler_identity_reset(NULL);
    const zc_compiler_identity *first = zcl_compiler_identity_get();
    cr_assert_not_null(first);
    zc_compiler_identity predicted = *first;
    cr_assert_neq(strcmp(predicted.libraries[0].path, stand_in), 0);

    setenv("FAKE_DRIVER_COMPILER", stand_in, 1);
    destroy(create_ok(0, NULL));
    cr_assert(zc_compiler_identity_changed());
    const zc_compiler_identity *loaded = zcl_compiler_identity_get();
    cr_assert_str_eq(loaded->libraries[0].name, t_system_igc_name());
    cr_assert_str_eq(loaded->libraries[0].path, stand_in);
    cr_assert(stored_with(loaded));
    cr_assert(!stored_with(&predicted));

    /* No hits from now on, not even for what this process stored. */
    destroy(create_ok(0, NULL));
    cr_assert_eq(atomic_load(&counters->compiles), 2);
    cr_assert_eq(atomic_load(&counters->native_creates), 0);
    zc_cache_stats s = stats();
    cr_assert_eq(s.memory_hits + s.disk_hits, 0);
    cr_assert_eq(s.misses, 1);
    cr_assert_eq(s.failed_builds, 0); /* the compile worked: only its key was wrong */
    cr_assert_eq(s.bypasses[ZC_BYPASS_COMPILER_CHANGED], 1);
    cr_assert(stored_with(loaded));
    unsetenv("FAKE_DRIVER_COMPILER");
    zc_compiler_identity_reset(NULL);
}

/* When the prediction holds (here it follows an LD_LIBRARY_PATH to the file
 * the driver then loads), the check changes nothing: hits go on. */
Test(layer, compiler_loaded_as_predicted_keeps_hits)
{
    char stand_in[96];
    make_stand_in_compiler(stand_in, sizeof(stand_in));
    zc_library_search in_scratch = {.ld_library_path = scratch};
    setenv("FAKE_DRIVER_COMPILER", stand_in, 1);
    zc_compiler_identity_reset(&in_scratch);
    destroy(create_ok(0, NULL));
    destroy(create_ok(0, NULL));
    cr_assert(!zc_compiler_identity_changed());
    cr_assert_str_eq(zcl_compiler_identity_get()->libraries[0].path, stand_in);
    cr_assert_eq(atomic_load(&counters->compiles), 1);
    cr_assert_eq(stats().memory_hits, 1);
    unsetenv("FAKE_DRIVER_COMPILER");
    zc_compiler_identity_reset(NULL);
}

/* No libigc under any name: nothing to key, so the cache is bypassed with its
 * reason and the driver compiles every time; nothing is stored. */
Test(layer, unidentified_compiler_bypasses_the_cache)
{
    static const char *const no_dirs[] = {NULL};
    zc_library_search nowhere = {.default_dirs = no_dirs};
    zc_compiler_identity_reset(&nowhere);
    destroy(create_ok(0, NULL));
    destroy(create_ok(0, NULL));
    cr_assert_null(zcl_compiler_identity_get());
    cr_assert_eq(atomic_load(&counters->compiles), 2);
    zc_cache_stats s = stats();
    cr_assert_eq(s.bypasses[ZC_BYPASS_COMPILER_UNIDENTIFIED], 2);
    cr_assert_eq(s.misses + s.memory_hits + s.disk_hits + s.stores, 0);
    zc_compiler_identity_reset(NULL);
}

/* A fork while another thread holds one of the layer's process-wide locks
 * (fork_guard.c), here inside a driver call: the fork waits for it, and the
 * child takes the lock itself. The driver call, replaced in the layer's
 * table, pauses 200 ms once; without the lock held across fork(), the child
 * waits for ever for it and is killed by its alarm. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool holding;
    bool forked;       /* the holder lives until then, so that no child sees it ended unjoined */
    atomic_bool armed; /* the next call pauses */
} slow_call = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, false};

static void pause_in_the_driver(void)
{
    if (!atomic_exchange(&slow_call.armed, false))
        return;
    pthread_mutex_lock(&slow_call.lock);
    slow_call.holding = true;
    pthread_cond_broadcast(&slow_call.changed);
    pthread_mutex_unlock(&slow_call.lock);
    usleep(200 * 1000);
}

static ze_result_t ZE_APICALL slow_driver_get(uint32_t *count, ze_driver_handle_t *drivers)
{
    (void)drivers;
    pause_in_the_driver();
    *count = 0;
    return ZE_RESULT_SUCCESS;
}

enum { SLOW_BINARY_SIZE = 16 };

static ze_result_t ZE_APICALL slow_native_binary(ze_module_handle_t module, size_t *size,
                                                 uint8_t *binary)
{
    (void)module;
    if (binary != NULL) {
        pause_in_the_driver();
        memset(binary, 0, SLOW_BINARY_SIZE);
    }
    *size = SLOW_BINARY_SIZE;
    return ZE_RESULT_SUCCESS;
}

static void *run_holder(void *argument)
{
    ((void (*)(void))(uintptr_t)argument)();
    pthread_mutex_lock(&slow_call.lock);
    while (!slow_call.forked)
        pthread_cond_wait(&slow_call.changed, &slow_call.lock);
    pthread_mutex_unlock(&slow_call.lock);
    return NULL;
}

/* The exit code of a child forked while holder's thread pauses in the
 * driver, and that runs child_work under alarm(). */
static int fork_while_in_the_driver(void (*holder)(void), int (*child_work)(void))
{
    slow_call.holding = false;
    slow_call.forked = false;
    atomic_store(&slow_call.armed, true);
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, run_holder, (void *)(uintptr_t)holder), 0);
    pthread_mutex_lock(&slow_call.lock);
    while (!slow_call.holding)
        pthread_cond_wait(&slow_call.changed, &slow_call.lock);
    pthread_mutex_unlock(&slow_call.lock);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        alarm(5);
        _exit(child_work());
    }
    pthread_mutex_lock(&slow_call.lock);
    slow_call.forked = true;
    pthread_cond_broadcast(&slow_call.changed);
    pthread_mutex_unlock(&slow_call.lock);
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    pthread_join(thread, NULL);
    cr_assert(WIFEXITED(status), "child status 0x%x (a hang caught by alarm?)", status);
    return WEXITSTATUS(status);
}

static int unknown_devices[2];

static void describe_an_unknown_device(void)
{
    (void)zcl_device_info_get((ze_device_handle_t)&unknown_devices[0]);
}

static int describe_another_unknown_device(void)
{
    return zcl_device_info_get((ze_device_handle_t)&unknown_devices[1]) == NULL ? 0 : 1;
}

Test(layer, a_child_describes_devices_forked_during_a_device_query)
{
    ze_pfnDriverGet_t driver_get = zcl_layer.next.driver_get;
    zcl_layer.next.driver_get = slow_driver_get;
    int code =
        fork_while_in_the_driver(describe_an_unknown_device, describe_another_unknown_device);
    zcl_layer.next.driver_get = driver_get;
    cr_assert_eq(code, 0);
}

static void check_a_loaded_binary(void)
{
    static const uint8_t zeros[SLOW_BINARY_SIZE];
    (void)zcl_native_loaded_unchanged((ze_module_handle_t)&unknown_devices[0], zeros, sizeof zeros,
                                      NULL);
}

static int read_the_spare_size(void)
{
    return zcl_native_check_spare_size() > 0 ? 0 : 1;
}

Test(layer, a_child_checks_binaries_forked_during_a_check)
{
    ze_pfnModuleGetNativeBinary_t get_native_binary = zcl_layer.next.module_get_native_binary;
    zcl_layer.next.module_get_native_binary = slow_native_binary;
    int code = fork_while_in_the_driver(check_a_loaded_binary, read_the_spare_size);
    zcl_layer.next.module_get_native_binary = get_native_binary;
    cr_assert_eq(code, 0);
}

/* A fork while another thread holds a handle map's mutex must not leave it
 * held in the child: fork waits for it, and the child can use the map. */
static zcl_handle_map held_map = ZCL_HANDLE_MAP_INIT;

static void hold_the_map(void)
{
    pthread_mutex_lock(&held_map.lock);
    pause_in_the_driver();
    pthread_mutex_unlock(&held_map.lock);
}

static int put_in_the_map(void)
{
    return zcl_handle_map_put(&held_map, (void *)0x2000, 2) ? 0 : 1;
}

Test(layer, handle_maps_stay_usable_in_a_forked_child)
{
    cr_assert(zcl_handle_map_put(&held_map, (void *)0x1000, 1));
    cr_assert_eq(fork_while_in_the_driver(hold_the_map, put_in_the_map), 0);
}
