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
    /* Nothing larger than a valid entry (signed, at worst) is ever read. */
    uint64_t max_value = zc_entry_size_bound(config != NULL ? config->max_size : 0);
    return zc_storage_redis_open(spec, (size_t)max_value, out);
}

void zc_storage_close(zc_storage *storage)
{
    if (storage != NULL)
        storage->ops->close(storage);
}
