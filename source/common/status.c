#include "zecache/status.h"

#include <stdarg.h>
#include <stdio.h>

const char *zc_status_name(zc_status status)
{
    switch (status) {
    case ZC_OK:
        return "ZC_OK";
    case ZC_MISS:
        return "ZC_MISS";
    case ZC_NOT_CACHEABLE:
        return "ZC_NOT_CACHEABLE";
    case ZC_ERR_INVALID_ARG:
        return "ZC_ERR_INVALID_ARG";
    case ZC_ERR_NOMEM:
        return "ZC_ERR_NOMEM";
    case ZC_ERR_IO:
        return "ZC_ERR_IO";
    case ZC_ERR_DISABLED:
        return "ZC_ERR_DISABLED";
    case ZC_ERR_TOO_LARGE:
        return "ZC_ERR_TOO_LARGE";
    case ZC_ERR_BUILD:
        return "ZC_ERR_BUILD";
    case ZC_ERR_BUSY:
        return "ZC_ERR_BUSY";
    case ZC_EXISTS:
        return "ZC_EXISTS";
    }
    return "ZC_UNKNOWN_STATUS";
}

zc_status zc_explain(zc_status status, char *reason, size_t reason_size, const char *fmt, ...)
{
    if (reason != NULL && reason_size > 0) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(reason, reason_size, fmt, args);
        va_end(args);
    }
    return status;
}
