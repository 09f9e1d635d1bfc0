/* Which modules a hit cannot reproduce. A hit is a module the driver makes
 * from a cached native binary (ZE_MODULE_FORMAT_NATIVE); Intel's driver
 * treats such a module differently from one it built from SPIR-V in a few
 * places (level_zero_layer/README.md, "A hit behaves like a miss", lists
 * them with the driver code they come from). Modules where that difference
 * can reach the application are not cached. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"

/* NULL, "" and other strings are all different flags to the driver. */
static bool same_flags(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool program_reproducible(const zc_build_request *request, char *detail, size_t detail_size)
{
    /* Driver 22.43 ignores these flags for a program, newer drivers read
     * them: the key cannot say which, so such programs are not cached. */
    if (request->program_flags != NULL) {
        snprintf(detail, detail_size,
                 "program extension with build flags on the module description");
        return false;
    }
    /* A native module takes one flags string; the driver reads some flags
     * of every input of a program (-zet-profile-flags: the last input's). */
    for (uint32_t i = 1; i < request->input_count; i++) {
        if (!same_flags(request->inputs[0].flags, request->inputs[i].flags)) {
            snprintf(detail, detail_size,
                     "program extension inputs with different build flags: a module made "
                     "from a native binary takes one flags string");
            return false;
        }
    }
    return true;
}

zcl_spirv_images zcl_module_image_kernels(const zc_build_request *request,
                                          zcl_image_kernels *kernels)
{
    zcl_spirv_images found = ZCL_SPIRV_NO_IMAGES;
    for (uint32_t i = 0; i < request->input_count; i++) {
        zcl_spirv_images status =
            zcl_spirv_image_kernels(request->inputs[i].bytes, request->inputs[i].size, kernels);
        if (status != ZCL_SPIRV_NO_IMAGES && status != ZCL_SPIRV_IMAGES)
            return status;
        if (status == ZCL_SPIRV_IMAGES)
            found = status;
    }
    return found;
}

/* Modules with image arguments are hits only where every way to set an
 * image argument answers as on the compile (layer_image_arguments.c). Their
 * kernels are found here, once, for the hit to remember. */
static bool images_reproducible(const zc_build_request *request, zcl_image_kernels **kernels,
                                char *detail, size_t detail_size)
{
    zcl_image_kernels found = {0};
    zcl_spirv_images images = zcl_module_image_kernels(request, &found);
    if (images == ZCL_SPIRV_IMAGES && zcl_image_hits_possible(detail, detail_size)) {
        *kernels = malloc(sizeof(found));
        if (*kernels != NULL) {
            **kernels = found;
            return true;
        }
        images = ZCL_SPIRV_NO_MEMORY;
    }
    zcl_image_kernels_free(&found);
    switch (images) {
    case ZCL_SPIRV_NO_IMAGES:
        return true;
    case ZCL_SPIRV_IMAGES:
        return false; /* detail says why */
    case ZCL_SPIRV_IMAGE_ARGUMENT_TOO_FAR:
        snprintf(detail, detail_size, "an image argument after the 64th");
        return false;
    case ZCL_SPIRV_NO_MEMORY:
        snprintf(detail, detail_size, "out of memory finding image arguments");
        return false;
    default:
        snprintf(detail, detail_size, "SPIR-V the layer cannot walk to find image arguments");
        return false;
    }
}

bool zcl_hit_reproducible(const zc_build_request *request, zcl_image_kernels **kernels,
                          char *detail, size_t detail_size)
{
    *kernels = NULL;
    if (request->inputs == NULL)
        return true; /* the key refuses these */
    if (request->program && !program_reproducible(request, detail, detail_size))
        return false;
    return images_reproducible(request, kernels, detail, detail_size);
}

const char *zcl_native_build_flags(const zc_build_request *request)
{
    /* zcl_hit_reproducible let through only programs whose inputs all have
     * the same flags. */
    return request->input_count > 0 ? request->inputs[0].flags : NULL;
}
