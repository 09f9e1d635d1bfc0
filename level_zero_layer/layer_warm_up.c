/* What a process pays once for the cache, paid when the application creates
 * its first context instead of inside its first zeModuleCreate: which driver
 * and compiler libraries the keys name (files found and read), the devices'
 * properties, the thread's decompression context and the native check's
 * buffer. Every module needs a context, so a process that creates modules
 * always passes here first; one that only queries devices pays nothing.
 *
 * Only what does not depend on the moment is done here. The compiler's
 * environment (IGC_* variables, read by IGC at its first compile) is still
 * taken at the first module: an application may set it after this call.
 * Everything done here is also done lazily by the hit path, so a failure
 * here changes nothing but when the work is done. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "layer_internal.h"

/* The native check's buffer is made this large up front: larger than the
 * native binaries of most single kernels, small enough to keep for the
 * process. */
enum { WARM_UP_SPARE_BYTES = 256 * 1024, WARM_UP_MAX_DEVICES = 64 };

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

/* What names this program for its usage list: the executable and its first
 * argument (the script, for an interpreter). Empty when unknown. */
static void program_name(char *name, size_t size)
{
    char arguments[4096];
    ssize_t length = readlink("/proc/self/exe", name, size - 1);
    int fd = length > 0 ? open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC) : -1;
    ssize_t got = fd >= 0 ? read(fd, arguments, sizeof arguments - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (length <= 0 || got < 0) {
        name[0] = '\0';
        return;
    }
    arguments[got] = '\0';
    /* NUL-separated: argv[1] follows argv[0]'s NUL, when there is one. */
    size_t first_end = strlen(arguments);
    const char *first = (ssize_t)first_end < got ? arguments + first_end + 1 : "";
    snprintf(name + length, size - (size_t)length, "\n%s", first);
}

static void start_prefetch(void)
{
    char name[PATH_MAX + 4096];
    program_name(name, sizeof name);
    if (name[0] != '\0')
        (void)zc_cache_prefetch_start(zcl_layer.cache, name);
}

static void warm_up(void)
{
    if (zcl_compiler_identity_get() == NULL)
        return; /* no hits in this process: nothing to prepare */
    /* First, so the loading thread starts while the rest is done here. */
    start_prefetch();
    describe_devices(atomic_load(&warm_up_driver));
    zc_cache_prepare_thread(zcl_layer.cache);
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
