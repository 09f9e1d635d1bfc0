/* Picking a storage backend for a parsed NEO_CACHE_REMOTE item. */
#include "zecache/storage.h"

#include <stdarg.h>
#include <stdio.h>

#include "zecache/entry.h"
#include "zecache/printable.h"

/* Per thread: storages are shared by threads, and the check reads the
 * problem of the call it just made. */
static _Thread_local char last_problem[512];

zc_status zc_storage_open(const zc_remote_spec *spec, const zc_config *config, zc_storage **out)
{
    if (spec == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    if (zc_storage_is_pack(spec))
        return zc_storage_pack_open(spec, out);
    if (spec->kind == ZC_REMOTE_FILE)
        return zc_storage_file_open(spec, config, out);
    if (spec->kind == ZC_REMOTE_HTTP || spec->kind == ZC_REMOTE_HTTPS)
        return zc_storage_http_open(spec, config != NULL ? config->max_size : 0,
                                    config != NULL ? config->dir : NULL, out);
    return zc_storage_redis_open(spec, config != NULL ? config->max_size : 0,
                                 config != NULL ? config->dir : NULL, out);
}

void zc_storage_close(zc_storage *storage)
{
    if (storage != NULL)
        storage->ops->close(storage);
}

const char *zc_storage_last_problem(void)
{
    return last_problem;
}

void zc_storage_clear_problem(void)
{
    last_problem[0] = '\0';
}

void zc_storage_note_problem(const char *format, ...)
{
    char text[sizeof last_problem];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    zc_printable(text, last_problem, sizeof last_problem); /* servers' words are in it */
}
