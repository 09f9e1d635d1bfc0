/* Makes the layer appear in zelLoaderGetVersions. */
#include <level_zero/loader/ze_loader.h>
#include <stdio.h>

#include "layer_internal.h"

ZE_DLLEXPORT ze_result_t ZE_APICALL zelLoaderGetVersion(zel_component_version_t *version)
{
    if (version == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    snprintf(version->component_name, sizeof(version->component_name), "%s", "zecache layer");
    version->spec_version = ZE_API_VERSION_CURRENT;
    version->component_lib_version =
        (zel_version_t){ZCL_VERSION_MAJOR, ZCL_VERSION_MINOR, ZCL_VERSION_PATCH};
    return ZE_RESULT_SUCCESS;
}
