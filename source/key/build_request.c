/* Names of what a build request holds, for messages and key traces. */
#include "zecache/build_request.h"

const char *zc_api_name(zc_api api)
{
    static const char *const names[] = {
        [ZC_API_LEVEL_ZERO] = "level-zero", [ZC_API_OPENCL] = "opencl"};
    return (unsigned)api < sizeof names / sizeof names[0] ? names[api] : "unknown";
}
