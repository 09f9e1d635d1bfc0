/* What the layer's files share. Nothing here is exported from the library:
 * its version script exports only the ProcAddrTable functions and
 * zelLoaderGetVersion. */
#ifndef ZECACHE_LAYER_INTERNAL_H
#define ZECACHE_LAYER_INTERNAL_H

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/cache.h"
#include "zecache/compiler_identity.h"
#include "zecache/build_request.h"
#include "zecache/config.h"
#include "zecache/frontend.h"
#include "zecache/frontend_device.h"
#include "zecache/identity.h"
#include "zecache/key.h"
#include "zecache/loaded_check.h"
#include "zecache/section_cut.h"

/* ---- layer_config.c: ZE_ENABLE_LAYERS ---- */

typedef struct zcl_options {
    bool cache;      /* "cache": the compiler cache */
    bool validation; /* "validation": chain to the system's validation layer */
} zcl_options;

/* Parses a comma-separated list; NULL (unset) means "cache". Unknown names
 * are reported under PrintDebugMessages and ignored. */
void zcl_options_parse(const char *list, zcl_options *options);

/* ---- layer_chain.c: the system's validation layer ---- */

/* Opens the real validation layer from the loader's directory. */
bool zcl_chain_open(void);
/* A function of the chained layer, or NULL when none is chained. */
void *zcl_chain_symbol(const char *name);

/* ---- layer_state.c: what the constructor and the loader set up ---- */

/* zeImageViewCreateExt (API 1.5; loader 1.8's headers lack it) and
 * zeImageViewCreateExp. */
typedef ze_result_t(ZE_APICALL *zcl_pfn_image_view_create)(ze_context_handle_t, ze_device_handle_t,
                                                           const ze_image_desc_t *,
                                                           ze_image_handle_t, ze_image_handle_t *);

/* The functions below this layer (the chained layer, the loader or the
 * driver), saved from the tables the loader passes. */
typedef struct zcl_next {
    ze_pfnDriverGet_t driver_get;
    ze_pfnDriverGetProperties_t driver_get_properties;
    ze_pfnDriverGetExtensionProperties_t driver_get_extension_properties;
    ze_pfnDeviceGet_t device_get;
    ze_pfnDeviceGetSubDevices_t device_get_sub_devices;
    ze_pfnDeviceGetProperties_t device_get_properties;
    ze_pfnDeviceGetModuleProperties_t device_get_module_properties;
    ze_pfnModuleCreate_t module_create;
    ze_pfnModuleDestroy_t module_destroy;
    ze_pfnModuleGetNativeBinary_t module_get_native_binary;
    ze_pfnModuleGetFunctionPointer_t module_get_function_pointer;
    ze_pfnModuleGetGlobalPointer_t module_get_global_pointer;
    ze_pfnModuleGetKernelNames_t module_get_kernel_names;
    ze_pfnKernelCreate_t kernel_create;
    ze_pfnKernelDestroy_t kernel_destroy;
    ze_pfnKernelSetArgumentValue_t kernel_set_argument_value;
    ze_pfnImageCreate_t image_create;
    ze_pfnImageDestroy_t image_destroy;
    zcl_pfn_image_view_create image_view_create_ext;
    zcl_pfn_image_view_create image_view_create_exp;
    ze_pfnContextCreate_t context_create;
    ze_pfnContextCreateEx_t context_create_ex;
    ze_pfnModuleBuildLogDestroy_t build_log_destroy;
    ze_pfnModuleBuildLogGetString_t build_log_get_string;
    /* zeModuleCreate as the loader gave it, before any chained layer: its
     * library is the driver's (or the loader's, when it routes). */
    void *loader_module_create;
} zcl_next;

typedef struct zcl_state {
    zcl_options options;
    zc_config config;
    zc_cache *cache; /* NULL when the cache is off or could not start */
    zcl_next next;
    /* The layer may hand out its own build logs only once the loader has let
     * it wrap the build log functions that will be given them. */
    bool build_log_wrapped;
    /* Likewise for the lookups a hit may have to answer (layer_symbol_lookups.c). */
    bool lookups_wrapped;
    /* Likewise for image arguments (layer_image_arguments.c). */
    bool image_arguments_wrapped;
    /* The loader offers zeCommandListAppendLaunchKernelWithArguments (API
     * 1.14), which sets arguments without zeKernelSetArgumentValue. */
    bool launch_with_arguments;
    /* Set once an image the layer cannot judge was created. */
    atomic_bool image_hits_off;
    /* Set once the driver did not load a cached binary unchanged (see
     * zecache/frontend.h): no more hits in this process. */
    atomic_bool hits_not_reproduced;
    /* Which hits' "loaded unchanged" check may be the size alone. */
    zc_loaded_checks hit_checks;
} zcl_state;

extern zcl_state zcl_layer;

/* ---- layer_hooks.c: what the layer does to each table ---- */

typedef void (*zcl_table_hook)(ze_api_version_t version, void *table);
void zcl_hook_none(ze_api_version_t version, void *table);
void zcl_hook_driver(ze_api_version_t version, void *table);
void zcl_hook_device(ze_api_version_t version, void *table);
void zcl_hook_context(ze_api_version_t version, void *table);
void zcl_hook_module_before_chain(ze_api_version_t version, void *table);
void zcl_hook_module(ze_api_version_t version, void *table);
void zcl_hook_module_build_log(ze_api_version_t version, void *table);
void zcl_hook_kernel(ze_api_version_t version, void *table);
void zcl_hook_image(ze_api_version_t version, void *table);
void zcl_hook_image_exp(ze_api_version_t version, void *table);
void zcl_hook_command_list(ze_api_version_t version, void *table);

/* ---- layer_driver_identity.c ---- */

#define ZCL_MAX_DRIVER_LIBRARIES 8

typedef struct zcl_driver_libraries {
    zc_library_identity identities[ZCL_MAX_DRIVER_LIBRARIES];
    size_t count;
    /* The driver library as it was loaded (not resolved through symlinks):
     * the object that dlopens the compiler, whose $ORIGIN is this path's
     * directory. Empty when the loader routes between several drivers. */
    char loaded_path[ZC_LIBRARY_PATH_SIZE];
} zcl_driver_libraries;

/* The driver libraries behind zeModuleCreate, found once per process.
 * NULL when none could be identified. */
const zcl_driver_libraries *zcl_driver_libraries_get(void);
/* Whether the object loaded from path is a Level Zero driver (it defines the
 * table functions, and is neither the loader nor a layer). */
bool zcl_is_driver_library(const char *path);

/* The compiler the driver compiles with (zc_compiler_identity_get for the
 * driver library). NULL when it cannot be identified. */
const zc_compiler_identity *zcl_compiler_identity_get(void);

/* ---- layer_device_info.c: per-device key parts, found once ---- */

typedef struct zcl_device_info {
    ze_device_handle_t device;
    uint32_t driver_version;
    uint8_t driver_uuid[16]; /* zero: see query_driver */
    uint8_t properties[512]; /* serialised ze_device_properties_t */
    size_t properties_size;
    uint8_t module_properties[64]; /* serialised ze_device_module_properties_t */
    size_t module_properties_size;
    bool has_ip_version;
    uint32_t ip_version;
    zc_artifact_meta meta; /* device name and driver version for entries */
    /* The device for the front end's key, pointing into this record. */
    zc_device_part hardware[3];
    zc_device_description description;
} zcl_device_info;

/* The device's description, queried on first use and kept for the process.
 * NULL when a query failed. */
const zcl_device_info *zcl_device_info_get(ze_device_handle_t device);

/* ---- layer_handle_map.c: a word per Level Zero handle ---- */

typedef struct zcl_handle_slot zcl_handle_slot;
typedef struct zcl_handle_map {
    pthread_mutex_t lock;
    zcl_handle_slot *slots;
    size_t capacity, used; /* used counts removed slots too */
    atomic_size_t live;
    atomic_bool in_forks; /* locked across fork() (layer_handle_map.c) */
} zcl_handle_map;
/* clang-format off */
#define ZCL_HANDLE_MAP_INIT {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, false}
/* clang-format on */

/* Puts or replaces handle's value; false when memory runs out. */
bool zcl_handle_map_put(zcl_handle_map *map, const void *handle, uintptr_t value);
/* Whether handle is there; its value goes to *value (value may be NULL for
 * take, which also removes it). */
bool zcl_handle_map_get(zcl_handle_map *map, const void *handle, uintptr_t *value);
bool zcl_handle_map_take(zcl_handle_map *map, const void *handle, uintptr_t *value);
/* One atomic load: whether the map holds nothing. */
bool zcl_handle_map_empty(zcl_handle_map *map);

/* ---- layer_spirv_images.c: which kernel arguments are images ---- */

typedef struct zcl_image_kernel {
    char *name;
    uint64_t image_arguments; /* bit i: argument i is an image */
} zcl_image_kernel;

typedef struct zcl_image_kernels {
    size_t count;
    zcl_image_kernel *kernels; /* only kernels with image arguments */
} zcl_image_kernels;

typedef enum zcl_spirv_images {
    ZCL_SPIRV_NO_IMAGES,              /* no image type declared */
    ZCL_SPIRV_IMAGES,                 /* kernels were added */
    ZCL_SPIRV_UNREADABLE,             /* not a module the walk can read */
    ZCL_SPIRV_IMAGE_ARGUMENT_TOO_FAR, /* an image argument after the 64th */
    ZCL_SPIRV_NO_MEMORY,
} zcl_spirv_images;

/* Adds the kernels of spirv with image arguments to kernels (which may be
 * NULL to only ask). */
zcl_spirv_images zcl_spirv_image_kernels(const void *spirv, size_t size,
                                         zcl_image_kernels *kernels);
/* The image-argument mask of the kernel called name; 0 when it has none. */
uint64_t zcl_image_kernels_arguments_of(const zcl_image_kernels *kernels, const char *name);
/* Frees what kernels holds (not kernels itself). */
void zcl_image_kernels_free(zcl_image_kernels *kernels);
/* Frees kernels (malloc'd) with what it holds; NULL does nothing. */
void zcl_image_kernels_destroy(zcl_image_kernels *kernels);

/* ---- layer_request.c: the module description as a build request ---- */

/* A request and what it points to; not to be copied once made. */
typedef struct zcl_request {
    zc_build_request request;
    zc_build_input single;  /* a plain module's input */
    zc_build_input *inputs; /* a program's, malloc'd */
} zcl_request;

/* Describes desc (not NULL) once, for everything after. False, with the
 * bypass reason and detail, for a description the cache does not take (a
 * native binary, an unknown format or pNext structure, no memory). Free
 * with zcl_request_free, whatever it returned. */
bool zcl_request_of(const ze_module_desc_t *desc, zcl_request *out, zc_bypass_reason *reason,
                    char *detail, size_t detail_size);
void zcl_request_free(zcl_request *request);

/* ---- layer_module.c ---- */

/* layer_module_parity.c: false, with the reason in detail, for a module
 * whose hit (a module made from its native binary) the application could
 * tell apart from the driver's compile. *kernels is NULL, or (malloc'd) the
 * kernels with image arguments a hit must answer for. */
bool zcl_hit_reproducible(const zc_build_request *request, zcl_image_kernels **kernels,
                          char *detail, size_t detail_size);
/* The kernels with image arguments of every SPIR-V input of request, added
 * to kernels (NULL: only ask). */
zcl_spirv_images zcl_module_image_kernels(const zc_build_request *request,
                                          zcl_image_kernels *kernels);
/* The build flags a hit passes with the native binary (the driver reads
 * some, e.g. -zet-profile-flags, when it loads one). */
const char *zcl_native_build_flags(const zc_build_request *request);

/* layer_native_check.c: whether module, made from binary, gives back exactly
 * binary (the driver did not rebuild it from its IR). */
/* prepared (NULL, or from zcl_native_check_prepare) is the buffer to copy
 * the module's binary into when it is large enough; it stays the caller's. */
bool zcl_native_loaded_unchanged(ze_module_handle_t module, const uint8_t *binary, size_t size,
                                 zc_faulted_buffer *prepared);
/* The same for a hit on device with build_flags: in full or by its size,
 * as zecache/loaded_check.h decides (without_ir: binary holds no
 * intermediate code, zc_intel_binary_without_ir; 22.43's native binaries
 * hold none). Frees prepared. */
bool zcl_native_hit_unchanged(ze_device_handle_t device, const char *build_flags,
                              ze_module_handle_t module, const uint8_t *binary, size_t size,
                              bool without_ir, zc_faulted_buffer *prepared);
/* The buffer zecache/loaded_check.h prepares for the check of a hit of
 * binary on device with build_flags, started before the driver's create;
 * NULL when the kept buffer holds it or none is needed or to be had. */
zc_faulted_buffer *zcl_native_check_prepare(ze_device_handle_t device, const char *build_flags,
                                            const uint8_t *binary, size_t size, bool without_ir);
/* The largest binary whose comparison buffer is kept for the process. */
#define ZCL_SPARE_MAX ((size_t)8 << 20)
/* The size of the buffer kept (for tests). */
size_t zcl_native_check_spare_size(void);
/* Makes the buffer kept at least size bytes (at most ZCL_SPARE_MAX) now,
 * before the first hit needs it. */
void zcl_native_check_reserve(size_t size);

/* ---- layer_warm_up.c: the process's one-time costs, at its first context ---- */

ze_result_t ZE_APICALL zcl_context_create(ze_driver_handle_t driver, const ze_context_desc_t *desc,
                                          ze_context_handle_t *context);
ze_result_t ZE_APICALL zcl_context_create_ex(ze_driver_handle_t driver,
                                             const ze_context_desc_t *desc, uint32_t device_count,
                                             ze_device_handle_t *devices,
                                             ze_context_handle_t *context);

ze_result_t ZE_APICALL zcl_module_create(ze_context_handle_t context, ze_device_handle_t device,
                                         const ze_module_desc_t *desc, ze_module_handle_t *module,
                                         ze_module_build_log_handle_t *build_log);

/* ---- layer_hit_modules.c, layer_symbol_lookups.c: hits that answer
 * lookups as the driver's compile would ---- */

#define ZCL_HIT_EXPORTS_FUNCTIONS 1u /* -library-compilation */
#define ZCL_HIT_EXPORTS_GLOBALS 2u   /* -ze-take-global-address */
/* Both: the driver answers for a native module as for a compiled one. */
#define ZCL_HIT_LOOKUPS_AS_NATIVE (ZCL_HIT_EXPORTS_FUNCTIONS | ZCL_HIT_EXPORTS_GLOBALS)

/* What a hit for device, created with build_flags, exports to lookups on
 * the driver's SPIR-V path. */
unsigned zcl_hit_lookup_flags(const zcl_device_info *device, const char *build_flags);
/* Remembers a hit whose lookups need answering (false: out of memory). */
bool zcl_hit_modules_add(ze_module_handle_t module, unsigned flags);
bool zcl_hit_modules_find(ze_module_handle_t module, unsigned *flags);
void zcl_hit_modules_remove(ze_module_handle_t module);

ze_result_t ZE_APICALL zcl_module_get_function_pointer(ze_module_handle_t module, const char *name,
                                                       void **function);
ze_result_t ZE_APICALL zcl_module_get_global_pointer(ze_module_handle_t module, const char *name,
                                                     size_t *size, void **pointer);
ze_result_t ZE_APICALL zcl_module_destroy(ze_module_handle_t module);

/* ---- layer_image_formats.c ---- */

typedef enum zcl_image_verdict {
    ZCL_IMAGE_ACCEPTED, /* a SPIR-V module's kernel takes it */
    ZCL_IMAGE_REFUSED,  /* ... refuses it: UNSUPPORTED_IMAGE_FORMAT */
    ZCL_IMAGE_UNKNOWN,  /* depends on what the layer cannot see */
} zcl_image_verdict;

/* What the driver of build driver_build (its version's low 16 bits) makes
 * of an image created with desc as a SPIR-V module's kernel argument. */
zcl_image_verdict zcl_image_verdict_of(const ze_image_desc_t *desc, uint32_t driver_build);

/* ---- layer_image_arguments.c ---- */

/* Remembers a hit module with image arguments, taking kernels (malloc'd);
 * false (kernels freed) when memory runs out. */
bool zcl_image_modules_add(ze_module_handle_t module, zcl_image_kernels *kernels);
void zcl_image_modules_remove(ze_module_handle_t module);
/* Whether a module with image arguments may be a hit in this process; if
 * not, why, in detail. */
bool zcl_image_hits_possible(char *detail, size_t detail_size);

ze_result_t ZE_APICALL zcl_kernel_create(ze_module_handle_t module, const ze_kernel_desc_t *desc,
                                         ze_kernel_handle_t *kernel);
ze_result_t ZE_APICALL zcl_kernel_destroy(ze_kernel_handle_t kernel);
ze_result_t ZE_APICALL zcl_kernel_set_argument_value(ze_kernel_handle_t kernel, uint32_t index,
                                                     size_t size, const void *value);
ze_result_t ZE_APICALL zcl_image_create(ze_context_handle_t context, ze_device_handle_t device,
                                        const ze_image_desc_t *desc, ze_image_handle_t *image);
ze_result_t ZE_APICALL zcl_image_destroy(ze_image_handle_t image);
ze_result_t ZE_APICALL zcl_image_view_create_ext(ze_context_handle_t context,
                                                 ze_device_handle_t device,
                                                 const ze_image_desc_t *desc,
                                                 ze_image_handle_t image, ze_image_handle_t *view);
ze_result_t ZE_APICALL zcl_image_view_create_exp(ze_context_handle_t context,
                                                 ze_device_handle_t device,
                                                 const ze_image_desc_t *desc,
                                                 ze_image_handle_t image, ze_image_handle_t *view);

/* ---- layer_build_log.c ---- */

/* A build log handle made by the layer, holding a copy of text. NULL when
 * memory runs out. */
ze_module_build_log_handle_t zcl_build_log_create(const char *text, size_t size);
ze_result_t ZE_APICALL zcl_build_log_get_string(ze_module_build_log_handle_t build_log,
                                                size_t *size, char *text);
ze_result_t ZE_APICALL zcl_build_log_destroy(ze_module_build_log_handle_t build_log);

#endif
