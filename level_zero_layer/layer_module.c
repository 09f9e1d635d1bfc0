/* zeModuleCreate through the cache: the module description becomes a build
 * request (layer_request.c), which the front end (zecache/frontend.h) keys
 * and looks up; this file only says how Level Zero builds, makes a module
 * from a cached native binary, and calls the driver alone. Whatever goes
 * wrong on the cache's side, the application gets what the driver alone
 * would give it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "faulted_buffer.h"
#include "layer_internal.h"
#include "zecache/log.h"

/* One call of the driver's zeModuleCreate with the application's arguments.
 * The driver writes into the application's own handle pointers, so what the
 * application sees is exactly what the driver wrote. */
typedef struct driver_compile {
    ze_context_handle_t context;
    ze_device_handle_t device;
    const ze_module_desc_t *desc;
    const zc_build_request *request;
    const zcl_device_info *device_info;
    ze_module_handle_t *module;            /* the application's */
    ze_module_build_log_handle_t *app_log; /* the application's, or NULL */
    ze_module_build_log_handle_t own_log;  /* used when the application wants none */
    zcl_image_kernels *image_kernels;      /* a hit must answer for these; owned */
    ze_result_t result;                    /* what the application gets */
} driver_compile;

static ze_module_build_log_handle_t *log_pointer_of(driver_compile *compile)
{
    return compile->app_log != NULL ? compile->app_log : &compile->own_log;
}

static void *native_binary_of(ze_module_handle_t module, size_t *size)
{
    *size = 0;
    if (zcl_layer.next.module_get_native_binary(module, size, NULL) != ZE_RESULT_SUCCESS ||
        *size == 0)
        return NULL;
    uint8_t *binary = malloc(*size);
    if (binary != NULL &&
        zcl_layer.next.module_get_native_binary(module, size, binary) != ZE_RESULT_SUCCESS) {
        free(binary);
        binary = NULL;
    }
    return binary;
}

/* The log's text without its terminating NUL; "" when there is no log. */
static char *build_log_text_of(ze_module_build_log_handle_t build_log, size_t *length)
{
    size_t size = 0;
    *length = 0;
    if (build_log == NULL ||
        zcl_layer.next.build_log_get_string(build_log, &size, NULL) != ZE_RESULT_SUCCESS)
        return NULL;
    char *text = malloc(size + 1);
    if (text == NULL || (size > 0 && zcl_layer.next.build_log_get_string(build_log, &size, text) !=
                                         ZE_RESULT_SUCCESS)) {
        free(text);
        return NULL;
    }
    text[size] = '\0';
    *length = strlen(text);
    return text;
}

/* ZC_ERR_IO when the module's binary or log cannot be read: the module is
 * the application's all the same, but nothing is stored. */
static zc_status capture_artifact(driver_compile *compile, uint64_t compile_ns, zc_artifact **out)
{
    size_t binary_size, log_length;
    ze_module_build_log_handle_t build_log = *log_pointer_of(compile);
    void *binary = native_binary_of(*compile->module, &binary_size);
    char *log = build_log_text_of(build_log, &log_length);
    zc_artifact_meta meta = compile->device_info->meta;
    meta.compile_ns = compile_ns;
    meta.created_unix = (uint64_t)time(NULL);
    zc_status status = ZC_ERR_IO;
    if (binary != NULL && (log != NULL || build_log == NULL)) {
        *out = zc_artifact_create(binary, binary_size, log, log_length, &meta);
        status = *out != NULL ? ZC_OK : ZC_ERR_NOMEM;
    } else {
        zc_log_info("cannot read the native binary or build log of a compiled module");
    }
    free(binary);
    free(log);
    return status;
}

/* zc_frontend_ops.compile: the driver builds with the application's
 * description, always with a build log so a later hit can return its text;
 * a log the application did not ask for is dropped once read. */
static zc_status compile_with_driver(void *context, zc_artifact **out)
{
    driver_compile *compile = context;
    compile->own_log = NULL;
    uint64_t start = zc_artifact_clock_ns();
    compile->result = zcl_layer.next.module_create(compile->context, compile->device, compile->desc,
                                                   compile->module, log_pointer_of(compile));
    uint64_t compile_ns = zc_artifact_clock_ns() - start;
    zc_status status = ZC_ERR_BUILD;
    if (compile->result == ZE_RESULT_SUCCESS)
        status = capture_artifact(compile, compile_ns, out);
    if (compile->app_log == NULL && compile->own_log != NULL)
        zcl_layer.next.build_log_destroy(compile->own_log);
    compile->own_log = NULL;
    return status;
}

/* zc_frontend_ops.build_alone. */
static bool create_alone(void *context)
{
    driver_compile *compile = context;
    compile->result = zcl_layer.next.module_create(compile->context, compile->device, compile->desc,
                                                   compile->module, compile->app_log);
    return compile->result == ZE_RESULT_SUCCESS;
}

/* Remembers what the hit must answer as the compile would: failed lookups
 * (layer_symbol_lookups.c) and image arguments (layer_image_arguments.c).
 * False when memory runs out. */
static bool remember_hit(driver_compile *compile, ze_module_handle_t created,
                         const char *build_flags)
{
    unsigned lookups = zcl_hit_lookup_flags(compile->device_info, build_flags);
    if (lookups != ZCL_HIT_LOOKUPS_AS_NATIVE && !zcl_hit_modules_add(created, lookups))
        return false;
    zcl_image_kernels *kernels = compile->image_kernels;
    compile->image_kernels = NULL; /* taken, even when memory runs out */
    return kernels == NULL || zcl_image_modules_add(created, kernels);
}

/* Hands the application the hit and its build log. */
static zc_hit_outcome give_hit(driver_compile *compile, ze_module_handle_t created,
                               const zc_artifact *artifact, const char *build_flags)
{
    size_t log_size;
    if (!remember_hit(compile, created, build_flags)) {
        zcl_module_destroy(created);
        compile->result = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        return ZC_HIT_REFUSED;
    }
    if (compile->app_log != NULL) {
        const char *log = zc_artifact_build_log(artifact, &log_size);
        ze_module_build_log_handle_t layer_log = zcl_build_log_create(log, log_size);
        if (layer_log == NULL) {
            zcl_module_destroy(created);
            compile->result = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
            return ZC_HIT_REFUSED;
        }
        *compile->app_log = layer_log;
    }
    *compile->module = created;
    compile->result = ZE_RESULT_SUCCESS;
    return ZC_HIT_CREATED;
}

/* zc_frontend_ops.create: a module made from the cached native binary. */
static zc_hit_outcome create_from_artifact(void *context, const zc_artifact *artifact, char *detail,
                                           size_t detail_size)
{
    driver_compile *compile = context;
    size_t binary_size;
    const uint8_t *binary = zc_artifact_binary(artifact, &binary_size);
    ze_module_desc_t native = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                               .format = ZE_MODULE_FORMAT_NATIVE,
                               .inputSize = binary_size,
                               .pInputModule = binary,
                               .pBuildFlags = zcl_native_build_flags(compile->request)};
    ze_module_handle_t created = NULL;
    bool without_ir = zc_intel_binary_without_ir(binary, binary_size);
    zc_faulted_buffer *prepared = zcl_native_check_prepare(compile->device, native.pBuildFlags,
                                                           binary, binary_size, without_ir);
    compile->result =
        zcl_layer.next.module_create(compile->context, compile->device, &native, &created, NULL);
    if (compile->result != ZE_RESULT_SUCCESS) {
        zc_faulted_buffer_free(prepared);
    } else if (!zcl_native_hit_unchanged(compile->device, native.pBuildFlags, created, binary,
                                         binary_size, without_ir, prepared)) {
        zcl_layer.next.module_destroy(created);
        return ZC_HIT_REBUILT;
    }
    zc_hit_outcome outcome = compile->result == ZE_RESULT_SUCCESS
                                 ? give_hit(compile, created, artifact, native.pBuildFlags)
                                 : ZC_HIT_REFUSED;
    snprintf(detail, detail_size, "the driver returned 0x%x", (unsigned)compile->result);
    return outcome;
}

static const zc_frontend_ops module_ops = {compile_with_driver, create_from_artifact, create_alone};

/* Whether the request can go through the cache; if not, why. */
static bool cacheable_request(const ze_module_desc_t *desc, const ze_module_handle_t *module,
                              zcl_request *request, zcl_image_kernels **image_kernels,
                              zc_bypass_reason *reason, char *detail, size_t detail_size)
{
    *reason = ZC_BYPASS_UNSUPPORTED_INPUT;
    if (desc == NULL || module == NULL) {
        snprintf(detail, detail_size, "NULL description or module pointer");
        return false;
    }
    if (!zcl_request_of(desc, request, reason, detail, detail_size))
        return false;
    if (!zcl_layer.build_log_wrapped || !zcl_layer.lookups_wrapped ||
        zcl_layer.next.module_get_native_binary == NULL) {
        *reason = ZC_BYPASS_CACHE_ERROR;
        snprintf(detail, detail_size, "the loader did not give the module functions needed");
        return false;
    }
    *reason = ZC_BYPASS_NOT_CACHEABLE;
    return zcl_hit_reproducible(&request->request, image_kernels, detail, detail_size);
}

/* The device's description and the compiler, or why not. */
static bool describable(ze_device_handle_t device, const zcl_device_info **device_info,
                        const zc_compiler_identity **compiler, zc_bypass_reason *reason,
                        char *detail, size_t detail_size)
{
    *device_info = zcl_device_info_get(device);
    *reason = ZC_BYPASS_CACHE_ERROR;
    snprintf(detail, detail_size, "cannot describe the device or its driver");
    if (*device_info == NULL)
        return false;
    *compiler = zcl_compiler_identity_get();
    *reason = ZC_BYPASS_COMPILER_UNIDENTIFIED;
    snprintf(detail, detail_size, "libigc not found (libigc.so.1, libigc.so.2)");
    return *compiler != NULL;
}

ze_result_t ZE_APICALL zcl_module_create(ze_context_handle_t context, ze_device_handle_t device,
                                         const ze_module_desc_t *desc, ze_module_handle_t *module,
                                         ze_module_build_log_handle_t *build_log)
{
    zc_bypass_reason reason = ZC_BYPASS_CACHE_ERROR;
    char detail[256] = "";
    zcl_request request = {0};
    const zcl_device_info *device_info = NULL;
    const zc_compiler_identity *compiler = NULL;
    zcl_image_kernels *image_kernels = NULL;
    if (!cacheable_request(desc, module, &request, &image_kernels, &reason, detail,
                           sizeof(detail)) ||
        !describable(device, &device_info, &compiler, &reason, detail, sizeof(detail))) {
        zcl_image_kernels_destroy(image_kernels);
        zcl_request_free(&request);
        zc_frontend_bypass(zcl_layer.cache, reason, detail);
        return zcl_layer.next.module_create(context, device, desc, module, build_log);
    }
    driver_compile compile = {.context = context,
                              .device = device,
                              .desc = desc,
                              .request = &request.request,
                              .device_info = device_info,
                              .module = module,
                              .app_log = build_log,
                              .image_kernels = image_kernels,
                              .result = ZE_RESULT_ERROR_UNKNOWN};
    zc_frontend frontend = {.cache = zcl_layer.cache,
                            .config = &zcl_layer.config,
                            .hits_off = &zcl_layer.hits_not_reproduced};
    (void)zc_frontend_build(&frontend, &request.request, &device_info->description, compiler,
                            &module_ops, &compile);
    zcl_image_kernels_destroy(compile.image_kernels); /* unless a hit took them */
    zcl_request_free(&request);
    return compile.result;
}
