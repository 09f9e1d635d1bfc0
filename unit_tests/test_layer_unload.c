/* The layer library itself (libze_cache_layer.so.1) loaded, used from threads
 * and unloaded while those threads are still alive, as a loader that
 * dlcloses its layers before the application's threads end would do.
 *
 * Each thread that loaded an entry from disk holds a per-thread zstd context
 * whose destructor is code in the layer; it runs when the thread exits, after
 * the dlclose. The layer is linked -z nodelete so that code stays mapped:
 * without it, the first of these threads to exit jumps into an unmapped page
 * and the process dies. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <level_zero/ze_ddi.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fake_ze_driver.h"
#include "test_support.h"

#define USING_THREADS 8

typedef ze_result_t (*get_table_fn)(ze_api_version_t, void *);

static ze_module_dditable_t module_table;
static ze_device_handle_t device;
static void *spirv;
static size_t spirv_size;
static sem_t created, gate;

/* What the loader does for one table: the driver fills it, the layer hooks it. */
static void fill_table(void *driver, void *layer, const char *symbol, void *table)
{
    get_table_fn driver_get = (get_table_fn)dlsym(driver, symbol);
    get_table_fn layer_get = (get_table_fn)dlsym(layer, symbol);
    cr_assert(driver_get != NULL && layer_get != NULL, "%s", symbol);
    cr_assert_eq(driver_get(ZE_API_VERSION_CURRENT, table), ZE_RESULT_SUCCESS);
    cr_assert_eq(layer_get(ZE_API_VERSION_CURRENT, table), ZE_RESULT_SUCCESS);
}

static ze_result_t create_and_destroy(void)
{
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = ZE_MODULE_FORMAT_IL_SPIRV,
                             .inputSize = spirv_size,
                             .pInputModule = spirv};
    ze_module_handle_t module = NULL;
    ze_result_t result = module_table.pfnCreate(NULL, device, &desc, &module, NULL);
    if (result == ZE_RESULT_SUCCESS)
        result = module_table.pfnDestroy(module);
    return result;
}

/* Loads the module from disk (its thread's zstd context is made here), then
 * stays alive until the layer is gone. */
static void *using_thread(void *result)
{
    *(ze_result_t *)result = create_and_destroy();
    sem_post(&created);
    while (sem_wait(&gate) != 0)
        continue;
    return NULL;
}

static void *later_thread(void *unused)
{
    return unused;
}

Test(layer_unload, threads_that_used_the_layer_exit_after_it_is_unloaded, .timeout = 120)
{
    char scratch[] = "/tmp/zc_unload_test.XXXXXX";
    cr_assert_not_null(mkdtemp(scratch));
    /* Read by the layer's constructor: a disk tier here and no memory tier,
     * so every create after the first decodes an entry. */
    setenv("NEO_CACHE_DIR", scratch, 1);
    setenv("NEO_CACHE_MEMORY_SIZE", "0", 1);
    unsetenv("ZE_ENABLE_LAYERS");
    spirv = t_read_kernel("e2e_saxpy", &spirv_size);

    void *driver = dlopen(FAKE_DRIVER_PATH, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(driver, "%s", dlerror());
    void *layer = dlopen(ZC_LAYER_PATH, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(layer, "%s", dlerror());
    fake_driver_counters *counters =
        ((fake_driver_get_counters_fn)dlsym(driver, "fake_driver_get_counters"))();

    ze_driver_dditable_t driver_table = {0};
    ze_device_dditable_t device_table = {0};
    ze_module_build_log_dditable_t build_log_table = {0};
    fill_table(driver, layer, "zeGetDriverProcAddrTable", &driver_table);
    fill_table(driver, layer, "zeGetDeviceProcAddrTable", &device_table);
    fill_table(driver, layer, "zeGetModuleProcAddrTable", &module_table);
    fill_table(driver, layer, "zeGetModuleBuildLogProcAddrTable", &build_log_table);
    ze_driver_handle_t driver_handle;
    uint32_t count = 1;
    cr_assert_eq(driver_table.pfnGet(&count, &driver_handle), ZE_RESULT_SUCCESS);
    count = 1;
    cr_assert_eq(device_table.pfnGet(driver_handle, &count, &device), ZE_RESULT_SUCCESS);

    cr_assert_eq(create_and_destroy(), ZE_RESULT_SUCCESS); /* compiled and stored */
    cr_assert_eq(sem_init(&created, 0, 0), 0);
    cr_assert_eq(sem_init(&gate, 0, 0), 0);
    pthread_t using[USING_THREADS];
    ze_result_t results[USING_THREADS];
    int started = 0;
    /* One at a time, so each thread decodes the entry itself rather than
     * waiting for another's load. No assertion until every thread is released:
     * a failing one must not leave the others blocked. */
    for (; started < USING_THREADS; started++) {
        if (pthread_create(&using[started], NULL, using_thread, &results[started]) != 0)
            break;
        while (sem_wait(&created) != 0)
            continue;
    }
    int compiles = atomic_load(&counters->compiles);
    int native_creates = atomic_load(&counters->native_creates);

    int unloaded = dlclose(layer);
    for (int i = 0; i < started; i++)
        sem_post(&gate);
    for (int i = 0; i < started; i++) {
        pthread_t later; /* threads come and go while the others exit */
        cr_assert_eq(pthread_create(&later, NULL, later_thread, NULL), 0);
        pthread_join(using[i], NULL);
        cr_assert_eq(pthread_join(later, NULL), 0);
    }
    cr_assert_eq(started, USING_THREADS);
    for (int i = 0; i < USING_THREADS; i++)
        cr_assert_eq(results[i], ZE_RESULT_SUCCESS, "thread %d", i);
    cr_assert_eq(compiles, 1);
    cr_assert_eq(native_creates, USING_THREADS, "every thread loaded the entry from disk");
    cr_assert_eq(unloaded, 0);
    /* Still here: no thread ran unmapped code. The layer stays loaded. */
    void *again = dlopen(ZC_LAYER_PATH, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(again, "the layer was unmapped by dlclose");
    dlclose(again);
    sem_destroy(&created);
    sem_destroy(&gate);
    free(spirv);
    t_remove_tree(scratch);
}
