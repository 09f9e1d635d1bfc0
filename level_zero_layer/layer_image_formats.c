/* Whether Intel's driver refuses an image as the argument of a kernel whose
 * module it built from SPIR-V. KernelImp::setArgImage (level_zero/core/
 * source/kernel/kernel_imp.cpp, 22.43 to 26.27) returns
 * ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT when the module isSPIRv() and the
 * image's format has no OpenCL channel type (getClChannelDataType in
 * image/image_format_desc_helper.cpp); for a module made from a native
 * binary it takes the image. The table below is that function's, with the
 * versions where it changed; from 26.22 a depth resource takes
 * CL_UNORM_INT24 instead (ImageImp::overrideChannelTypeForDepthInt24Image). */
#include "layer_internal.h"

/* 24.45.31740 (intel/compute-runtime 23335548f7) mapped the three-channel
 * layouts 8_8_8, 16_16_16 and 32_32_32 (API 1.12) as their four-channel
 * twins; earlier drivers index past their format table for them. */
#define THREE_CHANNEL_FIRST_BUILD 31740u
#define LAYOUT_8_8_8 43u
#define LAYOUT_16_16_16 44u
#define LAYOUT_32_32_32 45u

/* Driver-internal descriptions (image/internal_core_image_ext.h, 26.22 on):
 * a depth-stencil format is a depth resource; a GL texture brings its own
 * resource description, whose depth flag the layer cannot read. */
#define STYPE_EXTERNAL_GL_TEXTURE 0x00050001u
#define STYPE_DEPTH_STENCIL_FORMAT 0x00050005u
#define DEPTH_RESOURCE_FIRST_BUILD 38646u /* 26.22.38646, 74183cbf64 */

static bool is_one_of(uint32_t value, uint32_t a, uint32_t b, uint32_t c)
{
    return value == a || value == b || value == c;
}

static uint32_t layout_family(uint32_t layout, uint32_t driver_build)
{
    bool three_channel = driver_build >= THREE_CHANNEL_FIRST_BUILD;
    if (layout == LAYOUT_8_8_8 && three_channel)
        return ZE_IMAGE_FORMAT_LAYOUT_8;
    if (layout == LAYOUT_16_16_16 && three_channel)
        return ZE_IMAGE_FORMAT_LAYOUT_16;
    if (layout == LAYOUT_32_32_32 && three_channel)
        return ZE_IMAGE_FORMAT_LAYOUT_32;
    if (is_one_of(layout, ZE_IMAGE_FORMAT_LAYOUT_8, ZE_IMAGE_FORMAT_LAYOUT_8_8,
                  ZE_IMAGE_FORMAT_LAYOUT_8_8_8_8))
        return ZE_IMAGE_FORMAT_LAYOUT_8;
    if (is_one_of(layout, ZE_IMAGE_FORMAT_LAYOUT_16, ZE_IMAGE_FORMAT_LAYOUT_16_16,
                  ZE_IMAGE_FORMAT_LAYOUT_16_16_16_16))
        return ZE_IMAGE_FORMAT_LAYOUT_16;
    if (is_one_of(layout, ZE_IMAGE_FORMAT_LAYOUT_32, ZE_IMAGE_FORMAT_LAYOUT_32_32,
                  ZE_IMAGE_FORMAT_LAYOUT_32_32_32_32))
        return ZE_IMAGE_FORMAT_LAYOUT_32;
    return layout;
}

/* getClChannelDataType(format) != CL_INVALID_VALUE. */
static bool has_cl_channel_type(const ze_image_format_t *format, uint32_t driver_build)
{
    uint32_t type = format->type;
    bool integer = type == ZE_IMAGE_FORMAT_TYPE_UINT || type == ZE_IMAGE_FORMAT_TYPE_SINT;
    bool normalized = type == ZE_IMAGE_FORMAT_TYPE_UNORM || type == ZE_IMAGE_FORMAT_TYPE_SNORM;
    switch (layout_family(format->layout, driver_build)) {
    case ZE_IMAGE_FORMAT_LAYOUT_8:
        return integer || normalized;
    case ZE_IMAGE_FORMAT_LAYOUT_16:
        return true; /* any other type is CL_HALF_FLOAT */
    case ZE_IMAGE_FORMAT_LAYOUT_32:
        return integer || type == ZE_IMAGE_FORMAT_TYPE_FLOAT;
    case ZE_IMAGE_FORMAT_LAYOUT_10_10_10_2:
    case ZE_IMAGE_FORMAT_LAYOUT_5_6_5:
    case ZE_IMAGE_FORMAT_LAYOUT_5_5_5_1:
    case ZE_IMAGE_FORMAT_LAYOUT_NV12:
    case ZE_IMAGE_FORMAT_LAYOUT_YUYV:
    case ZE_IMAGE_FORMAT_LAYOUT_VYUY:
    case ZE_IMAGE_FORMAT_LAYOUT_YVYU:
    case ZE_IMAGE_FORMAT_LAYOUT_UYVY:
        return type == ZE_IMAGE_FORMAT_TYPE_UNORM;
    default:
        return false;
    }
}

zcl_image_verdict zcl_image_verdict_of(const ze_image_desc_t *desc, uint32_t driver_build)
{
    bool gl_texture = false;
    const ze_base_desc_t *next = driver_build >= DEPTH_RESOURCE_FIRST_BUILD ? desc->pNext : NULL;
    for (; next != NULL; next = next->pNext) {
        if ((uint32_t)next->stype == STYPE_DEPTH_STENCIL_FORMAT)
            return ZCL_IMAGE_ACCEPTED;
        gl_texture |= (uint32_t)next->stype == STYPE_EXTERNAL_GL_TEXTURE;
    }
    if (has_cl_channel_type(&desc->format, driver_build))
        return ZCL_IMAGE_ACCEPTED;
    return gl_texture ? ZCL_IMAGE_UNKNOWN : ZCL_IMAGE_REFUSED;
}
