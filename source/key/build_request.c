/* Names of what a build request holds, for messages and key traces. */
#include "zecache/build_request.h"

const char *zc_api_name(zc_api api)
{
    switch (api) {
    case ZC_API_LEVEL_ZERO:
        return "level-zero";
    case ZC_API_OPENCL:
        return "opencl";
    }
    return "unknown";
}
