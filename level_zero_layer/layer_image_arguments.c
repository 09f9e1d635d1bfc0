/* Image arguments of kernels from hits answer as on the driver's compile.
 * Intel's driver refuses, for a module it built from SPIR-V only, an image
 * whose format has no OpenCL channel type (layer_image_formats.c). The layer
 * knows which hit modules have image arguments and where (from their SPIR-V,
 * layer_spirv_images.c), which kernels come from them, and which images the
 * driver would refuse; a set that the driver takes on a hit but would have
 * refused on the compile is answered with the compile's code.
 *
 * The driver's refusal comes after it has copied the image's surface state
 * and before it patches the image's sizes into the kernel's arguments; after
 * the layer's answer the kernel holds both, as a native module's does. A
 * kernel whose argument could not be set is not one the API lets an
 * application launch meaningfully, so nothing it may rely on differs.
 *
 * What is not cached instead, and why, is in zcl_image_hits_possible. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"

/* Hit modules with image arguments: module -> zcl_image_kernels *. */
static zcl_handle_map image_modules = ZCL_HANDLE_MAP_INIT;
/* Their kernels with image arguments: kernel -> mask of argument indices. */
static zcl_handle_map image_kernels = ZCL_HANDLE_MAP_INIT;
/* Images a SPIR-V module's kernel would not take: image -> zcl_image_verdict. */
static zcl_handle_map special_images = ZCL_HANDLE_MAP_INIT;

bool zcl_image_modules_add(ze_module_handle_t module, zcl_image_kernels *kernels)
{
    if (zcl_handle_map_put(&image_modules, module, (uintptr_t)kernels))
        return true;
    zcl_image_kernels_destroy(kernels);
    return false;
}

void zcl_image_modules_remove(ze_module_handle_t module)
{
    uintptr_t value;
    if (!zcl_handle_map_take(&image_modules, module, &value))
        return;
    zcl_image_kernels_destroy((zcl_image_kernels *)value);
}

/* Handles are reused once freed: a new handle replaces whatever a handle of
 * the same value left behind. */
static void remember(zcl_handle_map *map, const void *handle, uintptr_t value, bool keep)
{
    if (!keep || !zcl_handle_map_put(map, handle, value))
        (void)zcl_handle_map_take(map, handle, NULL);
}

ze_result_t ZE_APICALL zcl_kernel_create(ze_module_handle_t module, const ze_kernel_desc_t *desc,
                                         ze_kernel_handle_t *kernel)
{
    ze_result_t result = zcl_layer.next.kernel_create(module, desc, kernel);
    if (result != ZE_RESULT_SUCCESS ||
        (zcl_handle_map_empty(&image_modules) && zcl_handle_map_empty(&image_kernels)))
        return result;
    uintptr_t value;
    uint64_t mask = 0;
    if (zcl_handle_map_get(&image_modules, module, &value) && desc != NULL)
        mask = zcl_image_kernels_arguments_of((const zcl_image_kernels *)value, desc->pKernelName);
    remember(&image_kernels, *kernel, (uintptr_t)mask, mask != 0);
    return result;
}

ze_result_t ZE_APICALL zcl_kernel_destroy(ze_kernel_handle_t kernel)
{
    (void)zcl_handle_map_take(&image_kernels, kernel, NULL);
    return zcl_layer.next.kernel_destroy(kernel);
}

/* Whether the driver's compile would refuse value as argument index. The
 * driver reads an image handle from value whatever size it is told. */
static bool refused_on_compile(ze_kernel_handle_t kernel, uint32_t index, const void *value)
{
    uintptr_t mask, verdict;
    ze_image_handle_t image;
    if (value == NULL || index >= 64 || !zcl_handle_map_get(&image_kernels, kernel, &mask) ||
        !(mask & (1ull << index)))
        return false;
    memcpy(&image, value, sizeof(image));
    return zcl_handle_map_get(&special_images, image, &verdict) && verdict == ZCL_IMAGE_REFUSED;
}

ze_result_t ZE_APICALL zcl_kernel_set_argument_value(ze_kernel_handle_t kernel, uint32_t index,
                                                     size_t size, const void *value)
{
    ze_result_t result = zcl_layer.next.kernel_set_argument_value(kernel, index, size, value);
    if (result == ZE_RESULT_SUCCESS && !zcl_handle_map_empty(&special_images) &&
        refused_on_compile(kernel, index, value))
        return ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT;
    return result;
}

/* Records a new image (or view) with what a SPIR-V module's kernel would
 * make of it. An image the layer cannot judge ends image hits for the
 * process. */
static void record_image(ze_device_handle_t device, const ze_image_desc_t *desc,
                         ze_image_handle_t image)
{
    const zcl_device_info *info = zcl_device_info_get(device);
    zcl_image_verdict verdict = info != NULL
                                    ? zcl_image_verdict_of(desc, info->driver_version & 0xffffu)
                                    : ZCL_IMAGE_UNKNOWN;
    if (verdict == ZCL_IMAGE_UNKNOWN)
        atomic_store(&zcl_layer.image_hits_off, true);
    remember(&special_images, image, verdict, verdict != ZCL_IMAGE_ACCEPTED);
}

ze_result_t ZE_APICALL zcl_image_create(ze_context_handle_t context, ze_device_handle_t device,
                                        const ze_image_desc_t *desc, ze_image_handle_t *image)
{
    ze_result_t result = zcl_layer.next.image_create(context, device, desc, image);
    if (result == ZE_RESULT_SUCCESS)
        record_image(device, desc, *image);
    return result;
}

ze_result_t ZE_APICALL zcl_image_destroy(ze_image_handle_t image)
{
    (void)zcl_handle_map_take(&special_images, image, NULL);
    return zcl_layer.next.image_destroy(image);
}

/* A view has a format of its own, judged as an image's. */
static ze_result_t create_view(zcl_pfn_image_view_create next, ze_context_handle_t context,
                               ze_device_handle_t device, const ze_image_desc_t *desc,
                               ze_image_handle_t image, ze_image_handle_t *view)
{
    ze_result_t result = next(context, device, desc, image, view);
    if (result == ZE_RESULT_SUCCESS)
        record_image(device, desc, *view);
    return result;
}

ze_result_t ZE_APICALL zcl_image_view_create_ext(ze_context_handle_t context,
                                                 ze_device_handle_t device,
                                                 const ze_image_desc_t *desc,
                                                 ze_image_handle_t image, ze_image_handle_t *view)
{
    return create_view(zcl_layer.next.image_view_create_ext, context, device, desc, image, view);
}

ze_result_t ZE_APICALL zcl_image_view_create_exp(ze_context_handle_t context,
                                                 ze_device_handle_t device,
                                                 const ze_image_desc_t *desc,
                                                 ze_image_handle_t image, ze_image_handle_t *view)
{
    return create_view(zcl_layer.next.image_view_create_exp, context, device, desc, image, view);
}

bool zcl_image_hits_possible(char *detail, size_t detail_size)
{
    const char *why = NULL;
    if (!zcl_layer.image_arguments_wrapped)
        why = "the loader did not give the kernel and image functions a hit must answer";
    else if (zcl_layer.launch_with_arguments)
        why = "the loader offers zeCommandListAppendLaunchKernelWithArguments, which sets image "
              "arguments the layer does not see";
    else if (atomic_load(&zcl_layer.image_hits_off))
        why = "an image whose depth flag comes from another API (a GL texture) was created";
    if (why != NULL)
        snprintf(detail, detail_size, "declares image types, and %s", why);
    return why == NULL;
}
