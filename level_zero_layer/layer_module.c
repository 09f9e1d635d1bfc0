/* zeModuleCreate through the cache. SPIR-V modules are looked up by key; a
 * hit becomes a module made from the cached native binary, a miss is the
 * driver's own compile, stored when it succeeds. Whatever goes wrong on the
 * cache's side, the application gets what the driver alone would give it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layer_internal.h"
#include "zecache/log.h"

/* One call of the driver's zeModuleCreate with the application's arguments.
 * The driver writes into the application's own handle pointers, so what the
 * application sees is exactly what the driver wrote. */
typedef struct driver_compile {
    ze_context_handle_t context;
    ze_device_handle_t device;
    const ze_module_desc_t *desc;
    const zcl_device_info *device_info;
    const zc_compiler_identity *compiler;  /* the one the key was made with */
    ze_module_handle_t *module;            /* the application's */
    ze_module_build_log_handle_t *app_log; /* the application's, or NULL */
    ze_module_build_log_handle_t own_log;  /* used when the application wants none */
    zcl_image_kernels *image_kernels;      /* a hit must answer for these; owned */
    bool ran;
    ze_result_t result;
    /* Compiled while the compiler turned out not to be the one keyed: stored
     * under the key of the compiler really loaded, never under the other. */
    zc_artifact *unkeyed;
    const char *outcome; /* for zcl_report_outcome: "present", "built", "failed" */
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

static zc_status capture_artifact(driver_compile *compile, uint64_t compile_ns, zc_artifact **out)
{
    size_t binary_size, log_length;
    ze_module_build_log_handle_t build_log = *log_pointer_of(compile);
    void *binary = native_binary_of(*compile->module, &binary_size);
    char *log = build_log_text_of(build_log, &log_length);
    zc_artifact_meta meta = compile->device_info->meta;
    meta.compile_ns = compile_ns;
    meta.created_unix = (uint64_t)time(NULL);
    zc_status status = ZC_ERR_BUILD;
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

/* The compile step of a lookup: the driver builds with the application's
 * description, always with a build log so a later hit can return its text. */
static zc_status compile_with_driver(void *context, zc_artifact **out)
{
    driver_compile *compile = context;
    compile->ran = true;
    compile->own_log = NULL;
    uint64_t start = zc_artifact_clock_ns();
    compile->result = zcl_layer.next.module_create(compile->context, compile->device, compile->desc,
                                                   compile->module, log_pointer_of(compile));
    uint64_t compile_ns = zc_artifact_clock_ns() - start;
    if (compile->result != ZE_RESULT_SUCCESS)
        return ZC_ERR_BUILD;
    zc_status status = capture_artifact(compile, compile_ns, out);
    /* IGC is surely loaded now: check the prediction the key was made with.
     * ZC_NOT_CACHEABLE keeps the cache from storing under that key. */
    zc_compiler_identity_check_loaded();
    if (status == ZC_OK && zcl_compiler_identity_get() != compile->compiler) {
        compile->unkeyed = *out;
        *out = NULL;
        return ZC_NOT_CACHEABLE;
    }
    return status;
}

/* Stores a compile made under a wrong compiler prediction with the key of
 * the compiler really loaded. */
static void store_under_loaded_compiler(driver_compile *compile)
{
    zc_key key;
    char *trace = NULL;
    char reason[256];
    const zc_compiler_identity *compiler = zcl_compiler_identity_get();
    if (zcl_module_key(compile->desc, compile->device_info, compiler,
                       zcl_layer.config.binary_cache_trace, &key, &trace, reason,
                       sizeof(reason)) == ZC_OK)
        (void)zc_cache_replace(zcl_layer.cache, &key, compile->unkeyed, trace);
    free(trace);
    zc_artifact_unref(compile->unkeyed);
    compile->unkeyed = NULL;
}

/* Ends a driver compile: the application already has the driver's outputs;
 * a log it did not ask for is dropped. */
static ze_result_t finish_compile(driver_compile *compile)
{
    if (compile->app_log == NULL && compile->own_log != NULL)
        zcl_layer.next.build_log_destroy(compile->own_log);
    compile->own_log = NULL;
    return compile->result;
}

typedef enum hit_outcome {
    HIT_CREATED, /* the application has the module */
    HIT_REFUSED, /* the driver returned an error for the binary */
    HIT_REBUILT, /* the driver did not load the binary unchanged */
} hit_outcome;

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

static hit_outcome create_from_artifact(driver_compile *compile, const zc_artifact *artifact,
                                        ze_result_t *result)
{
    size_t binary_size, log_size;
    const uint8_t *binary = zc_artifact_binary(artifact, &binary_size);
    ze_module_desc_t native = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                               .format = ZE_MODULE_FORMAT_NATIVE,
                               .inputSize = binary_size,
                               .pInputModule = binary,
                               .pBuildFlags = zcl_native_build_flags(compile->desc)};
    ze_module_handle_t created = NULL;
    *result =
        zcl_layer.next.module_create(compile->context, compile->device, &native, &created, NULL);
    if (*result != ZE_RESULT_SUCCESS)
        return HIT_REFUSED;
    if (!zcl_native_loaded_unchanged(created, binary, binary_size)) {
        zcl_layer.next.module_destroy(created);
        return HIT_REBUILT;
    }
    if (!remember_hit(compile, created, native.pBuildFlags)) {
        zcl_module_destroy(created);
        *result = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        return HIT_REFUSED;
    }
    if (compile->app_log != NULL) {
        const char *log = zc_artifact_build_log(artifact, &log_size);
        ze_module_build_log_handle_t layer_log = zcl_build_log_create(log, log_size);
        if (layer_log == NULL) {
            zcl_module_destroy(created);
            *result = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
            return HIT_REFUSED;
        }
        *compile->app_log = layer_log;
    }
    *compile->module = created;
    return HIT_CREATED;
}

/* After a compile the cache stored under key: its inputs, recorded only
 * once the entry is stored, so no inputs are kept without the entry they
 * rebuild. */
static void record_compiled(driver_compile *compile, const zc_key *key, const zc_artifact *fresh)
{
    if (zcl_layer.config.record_inputs)
        zcl_record_inputs(compile->desc, compile->device_info, key,
                          zc_artifact_meta_of(fresh)->compile_ns);
}

/* Compiles as usual and puts the result in key's place: when the driver
 * refused a verified entry (say, hardware the key did not tell apart: then
 * the compile is the lookup's miss, counted and recorded as one), and when
 * hits are off because the compiler is not the one predicted. */
static ze_result_t compile_and_replace(driver_compile *compile, const zc_key *key,
                                       const char *trace, bool as_miss)
{
    zc_artifact *fresh = NULL;
    zc_status status = compile_with_driver(compile, &fresh);
    if (as_miss) {
        zc_cache_count_miss(zcl_layer.cache, status, fresh);
        compile->outcome = status == ZC_OK ? "built" : "failed";
    }
    if (status == ZC_OK) {
        (void)zc_cache_replace(zcl_layer.cache, key, fresh, trace);
        if (as_miss)
            record_compiled(compile, key, fresh);
        zc_artifact_unref(fresh);
    }
    return finish_compile(compile);
}

static ze_result_t look_up(driver_compile *compile, const zc_key *key, const char *trace)
{
    zc_artifact *artifact = NULL;
    zc_lookup_outcome lookup = ZC_LOOKUP_COMPILED;
    zc_status status = zc_cache_get_or_compile(zcl_layer.cache, key, trace, compile_with_driver,
                                               compile, &artifact, &lookup);
    if (compile->ran) {
        if (status == ZC_OK)
            record_compiled(compile, key, artifact);
        zc_artifact_unref(artifact);
        compile->outcome = status == ZC_OK ? "built" : "failed";
        return finish_compile(compile);
    }
    if (status != ZC_OK) {
        zc_cache_count_bypass(zcl_layer.cache, ZC_BYPASS_CACHE_ERROR, zc_status_name(status));
        return zcl_layer.next.module_create(compile->context, compile->device, compile->desc,
                                            compile->module, compile->app_log);
    }
    ze_result_t result;
    hit_outcome outcome = create_from_artifact(compile, artifact, &result);
    if (outcome != HIT_CREATED)
        zc_cache_uncount_hit(zcl_layer.cache, lookup, artifact); /* nothing saved */
    zc_artifact_unref(artifact);
    if (outcome == HIT_CREATED) {
        compile->outcome = "present";
        return ZE_RESULT_SUCCESS;
    }
    if (outcome == HIT_REBUILT) {
        /* Whatever made the driver rebuild (a debug key, a debugger) holds
         * for the whole process: later modules go straight to the driver
         * instead of paying for a rebuild and a compile. */
        atomic_store(&zcl_layer.hits_not_reproduced, true);
        zc_cache_count_bypass(zcl_layer.cache, ZC_BYPASS_REJECTED_BINARY,
                              "the driver rebuilt the cached binary instead of loading it; "
                              "compiling, and no more hits in this process");
        return zcl_layer.next.module_create(compile->context, compile->device, compile->desc,
                                            compile->module, compile->app_log);
    }
    char detail[64];
    snprintf(detail, sizeof(detail), "the driver returned 0x%x; compiling", (unsigned)result);
    zc_cache_count_bypass(zcl_layer.cache, ZC_BYPASS_REJECTED_BINARY, detail);
    return compile_and_replace(compile, key, trace, true);
}

/* Whether the request can go through the cache; if not, why. */
static bool cacheable_request(const ze_module_desc_t *desc, const ze_module_handle_t *module,
                              zcl_image_kernels **image_kernels, zc_bypass_reason *reason,
                              char *detail, size_t detail_size)
{
    bool supported;
    *reason = ZC_BYPASS_UNSUPPORTED_INPUT;
    if (desc == NULL || module == NULL) {
        snprintf(detail, detail_size, "NULL description or module pointer");
        return false;
    }
    if (desc->format == ZE_MODULE_FORMAT_NATIVE) {
        *reason = ZC_BYPASS_NATIVE_INPUT;
        snprintf(detail, detail_size, "ZE_MODULE_FORMAT_NATIVE");
        return false;
    }
    if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV) {
        snprintf(detail, detail_size, "unknown module format %u", (unsigned)desc->format);
        return false;
    }
    (void)zcl_module_program_of(desc, &supported);
    if (!supported) {
        snprintf(detail, detail_size, "unknown pNext structure 0x%x",
                 (unsigned)((const ze_base_desc_t *)desc->pNext)->stype);
        return false;
    }
    if (!zcl_layer.build_log_wrapped || !zcl_layer.lookups_wrapped ||
        zcl_layer.next.module_get_native_binary == NULL) {
        *reason = ZC_BYPASS_CACHE_ERROR;
        snprintf(detail, detail_size, "the loader did not give the module functions needed");
        return false;
    }
    *reason = ZC_BYPASS_NOT_CACHEABLE;
    if (atomic_load(&zcl_layer.hits_not_reproduced)) {
        snprintf(detail, detail_size,
                 "the driver does not load cached binaries unchanged in this process");
        return false;
    }
    return zcl_hit_reproducible(desc, image_kernels, detail, detail_size);
}

ze_result_t ZE_APICALL zcl_module_create(ze_context_handle_t context, ze_device_handle_t device,
                                         const ze_module_desc_t *desc, ze_module_handle_t *module,
                                         ze_module_build_log_handle_t *build_log)
{
    zc_bypass_reason reason = ZC_BYPASS_CACHE_ERROR;
    char detail[256] = "";
    zc_key key;
    char *trace = NULL;
    const zcl_device_info *device_info = NULL;
    zcl_image_kernels *image_kernels = NULL;
    bool cacheable =
        cacheable_request(desc, module, &image_kernels, &reason, detail, sizeof(detail));
    if (cacheable) {
        device_info = zcl_device_info_get(device);
        reason = ZC_BYPASS_CACHE_ERROR;
        snprintf(detail, sizeof(detail), "cannot describe the device or its driver");
        cacheable = device_info != NULL;
    }
    const zc_compiler_identity *compiler = NULL;
    if (cacheable) {
        compiler = zcl_compiler_identity_get();
        reason = ZC_BYPASS_COMPILER_UNIDENTIFIED;
        snprintf(detail, sizeof(detail), "libigc not found (libigc.so.1, libigc.so.2)");
        cacheable = compiler != NULL;
    }
    if (cacheable) {
        zc_status status =
            zcl_module_key(desc, device_info, compiler, zcl_layer.config.binary_cache_trace, &key,
                           &trace, detail, sizeof(detail));
        reason = status == ZC_NOT_CACHEABLE ? ZC_BYPASS_NOT_CACHEABLE : ZC_BYPASS_CACHE_ERROR;
        if (status != ZC_OK && status != ZC_NOT_CACHEABLE)
            snprintf(detail, sizeof(detail), "key: %s", zc_status_name(status));
        cacheable = status == ZC_OK;
    }
    if (!cacheable) {
        zcl_image_kernels_destroy(image_kernels);
        zc_cache_count_bypass(zcl_layer.cache, reason, detail);
        zcl_report_outcome("bypass", NULL);
        return zcl_layer.next.module_create(context, device, desc, module, build_log);
    }
    driver_compile compile = {.context = context,
                              .device = device,
                              .desc = desc,
                              .device_info = device_info,
                              .compiler = compiler,
                              .module = module,
                              .app_log = build_log,
                              .image_kernels = image_kernels,
                              .outcome = "uncached"};
    ze_result_t result;
    if (zc_compiler_identity_changed()) {
        zc_cache_count_bypass(zcl_layer.cache, ZC_BYPASS_COMPILER_CHANGED,
                              "the compiler loaded is not the one predicted: no hits, compiling");
        result = compile_and_replace(&compile, &key, trace, false);
    } else {
        result = look_up(&compile, &key, trace);
    }
    zcl_image_kernels_destroy(compile.image_kernels); /* unless a hit took them */
    if (compile.unkeyed != NULL)
        store_under_loaded_compiler(&compile);
    zcl_report_outcome(result == ZE_RESULT_SUCCESS ? compile.outcome : "failed", &key);
    free(trace);
    return result;
}
