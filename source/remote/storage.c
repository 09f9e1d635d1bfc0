/* Picking a storage backend for a parsed NEO_CACHE_REMOTE item. */
#include "zecache/storage.h"

#include "zecache/entry.h"

zc_status zc_storage_open(const zc_remote_spec *spec, const zc_config *config, zc_storage **out)
{
    if (spec == NULL || out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = NULL;
    if (spec->kind == ZC_REMOTE_FILE)
        return zc_storage_file_open(spec, config, out);
    return zc_storage_redis_open(spec, config != NULL ? config->max_size : 0,
                                 config != NULL ? config->dir : NULL, out);
}

void zc_storage_close(zc_storage *storage)
{
    if (storage != NULL)
        storage->ops->close(storage);
}
