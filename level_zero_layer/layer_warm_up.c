/* What a process pays once for the cache, paid when the application creates
 * its first context instead of inside its first zeModuleCreate: which driver
 * and compiler libraries the keys name (files found and read), the devices'
 * properties, the thread's decompression context and the native check's
 * buffer. Every module needs a context, so a process that creates modules
 * always passes here first; one that only queries devices pays nothing.
 *
 * Only what does not depend on the moment is final here. The compiler's
 * environment (IGC_* variables, read by IGC at its first compile) is only
 * proposed: the first module keeps it when the variables are the same, and
 * takes it again when the application set them after this call. Everything
 * done here is also done lazily by the hit path, so a failure here changes
 * nothing but when the work is done. */
#include "layer_internal.h"
#include "zecache/environment.h"

/* The native check's buffer is made this large up front: larger than the
 * native binaries of most single kernels (2-15 KB for the held-out and the
 * repository's small ones). Each page costs a fault here, in every process:
 * 256 KiB took 90 us of zeContextCreate on 26.27, 64 KiB about 25 us; a
 * larger module grows the buffer by doubling when it comes. */
enum { WARM_UP_SPARE_BYTES = 64 * 1024, WARM_UP_MAX_DEVICES = 64 };

static pthread_once_t warm_up_once = PTHREAD_ONCE_INIT;
/* The driver of the context that started the warm-up. */
static _Atomic(ze_driver_handle_t) warm_up_driver;

static void describe_devices(ze_driver_handle_t driver)
{
    ze_device_handle_t devices[WARM_UP_MAX_DEVICES] = {NULL};
    uint32_t count = 0;
    /* Asked for more devices than it has, driver 22.43 leaves the count as
     * it was: ask how many first. */
    if (zcl_layer.next.device_get == NULL ||
        zcl_layer.next.device_get(driver, &count, NULL) != ZE_RESULT_SUCCESS)
        return;
    if (count > WARM_UP_MAX_DEVICES)
        count = WARM_UP_MAX_DEVICES;
    if (zcl_layer.next.device_get(driver, &count, devices) != ZE_RESULT_SUCCESS)
        return;
    for (uint32_t i = 0; i < count && i < WARM_UP_MAX_DEVICES && devices[i] != NULL; i++)
        (void)zcl_device_info_get(devices[i]);
}

static void warm_up(void)
{
    if (zcl_compiler_identity_get() == NULL)
        return; /* no hits in this process: nothing to prepare */
    describe_devices(atomic_load(&warm_up_driver));
    zc_cache_prepare_thread(zcl_layer.cache);
    zc_environment_propose_compiler_part();
    zcl_native_check_reserve(WARM_UP_SPARE_BYTES);
}

static void warm_up_once_for(ze_driver_handle_t driver)
{
    if (zcl_layer.cache == NULL)
        return;
    ze_driver_handle_t none = NULL;
    atomic_compare_exchange_strong(&warm_up_driver, &none, driver);
    pthread_once(&warm_up_once, warm_up);
}

ze_result_t ZE_APICALL zcl_context_create(ze_driver_handle_t driver, const ze_context_desc_t *desc,
                                          ze_context_handle_t *context)
{
    ze_result_t result = zcl_layer.next.context_create(driver, desc, context);
    if (result == ZE_RESULT_SUCCESS)
        warm_up_once_for(driver);
    return result;
}

ze_result_t ZE_APICALL zcl_context_create_ex(ze_driver_handle_t driver,
                                             const ze_context_desc_t *desc, uint32_t device_count,
                                             ze_device_handle_t *devices,
                                             ze_context_handle_t *context)
{
    ze_result_t result =
        zcl_layer.next.context_create_ex(driver, desc, device_count, devices, context);
    if (result == ZE_RESULT_SUCCESS)
        warm_up_once_for(driver);
    return result;
}
