/* The Redis storage under test, opened from a NEO_CACHE_REMOTE URL
 * (test_storage_redis.c, test_redis_hostile.c). Header-only, as the other
 * support headers. */
#ifndef ZC_REDIS_STORAGE_SUPPORT_H
#define ZC_REDIS_STORAGE_SUPPORT_H

#include <criterion/criterion.h>

#include "zecache/remote_spec.h"
#include "zecache/storage.h"

/* The Redis storage a NEO_CACHE_REMOTE URL describes, taking entries of
 * payloads up to 1 MiB. */
static inline zc_storage *t_open_redis_storage(const char *url)
{
    zc_remote_spec spec;
    char reason[256] = "";
    cr_assert_eq(zc_remote_spec_parse(url, &spec, reason, sizeof reason), ZC_OK, "%s", reason);
    zc_storage *storage = NULL;
    cr_assert_eq(zc_storage_redis_open(&spec, 1 << 20, NULL, &storage), ZC_OK);
    zc_remote_spec_free(&spec);
    return storage;
}

#endif
