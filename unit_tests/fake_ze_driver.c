/* A fake Level Zero driver for the layer's unit tests: a shared library that
 * exports the table functions as a driver does (so the layer identifies it as
 * the driver library), with two devices, a "compiler" that takes a while and
 * can be told to fail, and counters of every call that matters. The tests
 * open it with dlopen and act as the loader. */
#include <level_zero/ze_ddi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_ze_driver.h"

#define FAKE_NATIVE_MAGIC "NATIVE:"
#define FAKE_DEVICE_COUNT 2

typedef struct fake_device {
    int index;
} fake_device;

/* Symbols as Intel's driver from 22.53 on answers them: a compiled module
 * exports functions and globals to lookups only with -library-compilation
 * and -ze-take-global-address, a native one always. Every module has the
 * kernel "fake_kernel" (not a symbol), the function "fake_function" and the
 * global "fake_global". */
typedef struct fake_module {
    bool exports_functions, exports_globals;
    size_t size;
    uint8_t binary[];
} fake_module;

typedef struct fake_build_log {
    char text[64];
} fake_build_log;

static fake_driver_counters counters;
static int driver_object;
static fake_device devices[FAKE_DEVICE_COUNT] = {{0}, {1}};

ZE_DLLEXPORT fake_driver_counters *fake_driver_get_counters(void)
{
    return &counters;
}

static ze_result_t fake_driver_get(uint32_t *count, ze_driver_handle_t *drivers)
{
    if (drivers != NULL && *count > 0)
        drivers[0] = (ze_driver_handle_t)&driver_object;
    *count = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_driver_get_properties(ze_driver_handle_t driver,
                                              ze_driver_properties_t *properties)
{
    (void)driver;
    properties->driverVersion = 0x010f98d2; /* 1.15.39122: 26.27 */
    /* Like Intel's driver: a UUID that differs in every process. */
    memset(properties->uuid.id, 0, sizeof(properties->uuid.id));
    uintptr_t per_process = (uintptr_t)&properties ^ (uintptr_t)time(NULL);
    memcpy(properties->uuid.id + 4, &per_process, sizeof(per_process));
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_driver_get_extension_properties(ze_driver_handle_t driver, uint32_t *count,
                                                        ze_driver_extension_properties_t *ext)
{
    (void)driver;
    (void)ext;
    *count = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_device_get(ze_driver_handle_t driver, uint32_t *count,
                                   ze_device_handle_t *handles)
{
    (void)driver;
    for (uint32_t i = 0; handles != NULL && i < *count && i < FAKE_DEVICE_COUNT; i++)
        handles[i] = (ze_device_handle_t)&devices[i];
    *count = FAKE_DEVICE_COUNT;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_device_get_sub_devices(ze_device_handle_t device, uint32_t *count,
                                               ze_device_handle_t *handles)
{
    (void)device;
    (void)handles;
    *count = 0;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_device_get_properties(ze_device_handle_t device,
                                              ze_device_properties_t *properties)
{
    const fake_device *fake = (const fake_device *)device;
    atomic_fetch_add(&counters.device_queries, 1);
    properties->type = ZE_DEVICE_TYPE_GPU;
    properties->vendorId = 0x8086;
    properties->deviceId = 0x1000u + (uint32_t)fake->index;
    snprintf(properties->name, sizeof(properties->name), "Fake GPU %d", fake->index);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_device_get_module_properties(ze_device_handle_t device,
                                                     ze_device_module_properties_t *properties)
{
    (void)device;
    properties->spirvVersionSupported = 0x10000;
    properties->maxArgumentsSize = 2048;
    return ZE_RESULT_SUCCESS;
}

static ze_module_build_log_handle_t new_build_log(const char *text)
{
    fake_build_log *log = calloc(1, sizeof(*log));
    snprintf(log->text, sizeof(log->text), "%s", text);
    atomic_fetch_add(&counters.live_build_logs, 1);
    return (ze_module_build_log_handle_t)log;
}

static fake_module *new_module(const void *a, size_t a_size, const void *b, size_t b_size)
{
    fake_module *module = malloc(sizeof(*module) + a_size + b_size);
    module->exports_functions = module->exports_globals = true;
    module->size = a_size + b_size;
    memcpy(module->binary, a, a_size);
    memcpy(module->binary + a_size, b, b_size);
    atomic_fetch_add(&counters.live_modules, 1);
    return module;
}

static ze_result_t create_native(const ze_module_desc_t *desc, ze_module_handle_t *module)
{
    size_t magic = strlen(FAKE_NATIVE_MAGIC);
    if (atomic_load(&counters.reject_native) || desc->inputSize < magic ||
        memcmp(desc->pInputModule, FAKE_NATIVE_MAGIC, magic) != 0) {
        atomic_fetch_add(&counters.native_rejected, 1);
        return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    atomic_fetch_add(&counters.native_creates, 1);
    const uint8_t *input = desc->pInputModule;
    if (atomic_load(&counters.rebuild_native_same_size)) {
        uint8_t last = (uint8_t)(input[desc->inputSize - 1] ^ 0x5a);
        *module = (ze_module_handle_t)new_module(input, desc->inputSize - 1, &last, 1);
        return ZE_RESULT_SUCCESS;
    }
    const char *rebuilt = atomic_load(&counters.rebuild_native) ? "R" : "";
    *module = (ze_module_handle_t)new_module(input, desc->inputSize, rebuilt, strlen(rebuilt));
    return ZE_RESULT_SUCCESS;
}

/* "Compiles" for 20 ms, so threads asking at once really overlap. The
 * native binary names the device and holds the input and the flags. */
static ze_result_t compile(ze_device_handle_t device, const ze_module_desc_t *desc,
                           ze_module_handle_t *module, ze_module_build_log_handle_t *build_log)
{
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    /* Like Intel's driver, load "the compiler" (a file the test names) when
     * compiling and keep it loaded. */
    const char *compiler = getenv("FAKE_DRIVER_COMPILER");
    if (compiler != NULL && dlopen(compiler, RTLD_NOW | RTLD_LOCAL) == NULL)
        return ZE_RESULT_ERROR_UNINITIALIZED;
    atomic_fetch_add(&counters.compiles, 1);
    const char *flags = desc->pBuildFlags != NULL ? desc->pBuildFlags : "(null)";
    if (strstr(flags, "-fail") != NULL) {
        if (build_log != NULL)
            *build_log = new_build_log("error: asked to fail");
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    char header[64];
    int header_size = snprintf(header, sizeof(header), "%sdevice%d:%s:", FAKE_NATIVE_MAGIC,
                               ((const fake_device *)device)->index, flags);
    fake_module *compiled =
        new_module(header, (size_t)header_size, desc->pInputModule, desc->inputSize);
    compiled->exports_functions = strstr(flags, "-library-compilation") != NULL;
    compiled->exports_globals = strstr(flags, "-ze-take-global-address") != NULL;
    *module = (ze_module_handle_t)compiled;
    if (build_log != NULL)
        *build_log = new_build_log(strlen(flags) > 0 ? "warning: flags were given" : "");
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_module_create(ze_context_handle_t context, ze_device_handle_t device,
                                      const ze_module_desc_t *desc, ze_module_handle_t *module,
                                      ze_module_build_log_handle_t *build_log)
{
    (void)context;
    if (desc->format == ZE_MODULE_FORMAT_NATIVE)
        return create_native(desc, module);
    if (desc->pNext != NULL)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    return compile(device, desc, module, build_log);
}

static ze_result_t fake_module_destroy(ze_module_handle_t module)
{
    atomic_fetch_sub(&counters.live_modules, 1);
    free(module);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_module_get_native_binary(ze_module_handle_t module, size_t *size,
                                                 uint8_t *binary)
{
    const fake_module *fake = (const fake_module *)module;
    if (binary != NULL)
        atomic_fetch_add(&counters.native_binary_copies, 1);
    if (binary != NULL)
        memcpy(binary, fake->binary, *size < fake->size ? *size : fake->size);
    *size = fake->size;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_module_get_kernel_names(ze_module_handle_t module, uint32_t *count,
                                                const char **names)
{
    (void)module;
    if (names != NULL && *count >= 1)
        names[0] = "fake_kernel";
    *count = 1;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_module_get_function_pointer(ze_module_handle_t module, const char *name,
                                                    void **function)
{
    const fake_module *fake = (const fake_module *)module;
    if (strcmp(name, "fake_function") == 0 || strcmp(name, "fake_kernel") == 0) {
        *function = (void *)fake->binary;
        return ZE_RESULT_SUCCESS;
    }
    return fake->exports_functions ? ZE_RESULT_ERROR_INVALID_FUNCTION_NAME
                                   : ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

static ze_result_t fake_module_get_global_pointer(ze_module_handle_t module, const char *name,
                                                  size_t *size, void **pointer)
{
    const fake_module *fake = (const fake_module *)module;
    if (strcmp(name, "fake_global") == 0) {
        *size = 4;
        *pointer = (void *)fake->binary;
        return ZE_RESULT_SUCCESS;
    }
    if (strcmp(name, "fake_function") == 0) /* code, not a global */
        return ZE_RESULT_ERROR_INVALID_GLOBAL_NAME;
    return fake->exports_globals ? ZE_RESULT_ERROR_INVALID_GLOBAL_NAME
                                 : ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

static ze_result_t fake_build_log_destroy(ze_module_build_log_handle_t build_log)
{
    atomic_fetch_sub(&counters.live_build_logs, 1);
    free(build_log);
    return ZE_RESULT_SUCCESS;
}

static ze_result_t fake_build_log_get_string(ze_module_build_log_handle_t build_log, size_t *size,
                                             char *text)
{
    const fake_build_log *log = (const fake_build_log *)build_log;
    if (text != NULL)
        snprintf(text, *size, "%s", log->text);
    *size = strlen(log->text) + 1;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t version,
                                                             ze_driver_dditable_t *table)
{
    (void)version;
    table->pfnGet = fake_driver_get;
    table->pfnGetProperties = fake_driver_get_properties;
    table->pfnGetExtensionProperties = fake_driver_get_extension_properties;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t version,
                                                             ze_device_dditable_t *table)
{
    (void)version;
    table->pfnGet = fake_device_get;
    table->pfnGetSubDevices = fake_device_get_sub_devices;
    table->pfnGetProperties = fake_device_get_properties;
    table->pfnGetModuleProperties = fake_device_get_module_properties;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetModuleProcAddrTable(ze_api_version_t version,
                                                             ze_module_dditable_t *table)
{
    (void)version;
    table->pfnCreate = fake_module_create;
    table->pfnDestroy = fake_module_destroy;
    table->pfnGetNativeBinary = fake_module_get_native_binary;
    table->pfnGetKernelNames = fake_module_get_kernel_names;
    table->pfnGetFunctionPointer = fake_module_get_function_pointer;
    table->pfnGetGlobalPointer = fake_module_get_global_pointer;
    return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL
zeGetModuleBuildLogProcAddrTable(ze_api_version_t version, ze_module_build_log_dditable_t *table)
{
    (void)version;
    table->pfnDestroy = fake_build_log_destroy;
    table->pfnGetString = fake_build_log_get_string;
    return ZE_RESULT_SUCCESS;
}
