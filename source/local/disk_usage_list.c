/* Programs' usage lists on the disk tier (disk_usage_list.h). */
#include "zecache/disk_usage_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_internal.h"
#include "zecache/log.h"
#include "zecache/sealed.h"

enum { USAGE_NAME_SIZE = 2 * 32 + sizeof ZC_USAGE_SUFFIX };

static void usage_name_of(const uint8_t program[32], char name[USAGE_NAME_SIZE])
{
    zc_key id;
    memcpy(id.bytes, program, sizeof id.bytes);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&id, hex);
    snprintf(name, USAGE_NAME_SIZE, "%s%s", hex, ZC_USAGE_SUFFIX);
}

zc_status zc_disk_tier_read_usage(zc_disk_tier *tier, const uint8_t program[32], zc_key *keys,
                                  size_t *count)
{
    *count = 0;
    if (tier == NULL)
        return ZC_ERR_INVALID_ARG;
    char name[USAGE_NAME_SIZE];
    usage_name_of(program, name);
    uint8_t *data = NULL, *content = NULL;
    size_t size = 0, content_size = 0;
    uint64_t largest = ZC_SEALED_HEADER_SIZE + 2 * (uint64_t)ZC_USAGE_LIST_MAX * ZC_KEY_SIZE;
    zc_status status = zc_disk_read_small_file(tier, tier->dir_fd, name, largest, &data, &size);
    if (status != ZC_OK)
        return status == ZC_ERR_NOMEM ? status : ZC_MISS;
    char reason[160] = "";
    /* Bounded before decompressing: a planted list of a few KB could
     * otherwise declare hundreds of MB, allocated inside zeInit. */
    status = zc_sealed_decode(ZC_USAGE_MAGIC, data, size, program,
                              (uint64_t)ZC_USAGE_LIST_MAX * ZC_KEY_SIZE, &content, &content_size,
                              NULL, reason, sizeof reason);
    if (status == ZC_OK && content_size % ZC_KEY_SIZE != 0)
        status = zc_explain(ZC_MISS, reason, sizeof reason, "%zu bytes are no list of keys",
                            content_size);
    if (status == ZC_OK) {
        *count = content_size / ZC_KEY_SIZE;
        memcpy(keys, content, content_size);
    } else {
        zc_log_info("ignoring usage list %s: %s", name, reason);
        status = ZC_MISS;
    }
    free(content);
    free(data);
    return status;
}

zc_status zc_disk_tier_write_usage(zc_disk_tier *tier, const uint8_t program[32],
                                   const zc_key *keys, size_t count)
{
    if (tier == NULL || count > ZC_USAGE_LIST_MAX)
        return ZC_ERR_INVALID_ARG;
    if (tier->read_only)
        return ZC_ERR_DISABLED;
    uint8_t *sealed = NULL;
    size_t sealed_size = 0;
    /* Keys do not compress: the fastest level. */
    zc_status status = zc_sealed_encode(ZC_USAGE_MAGIC, program, keys, count * ZC_KEY_SIZE, 1,
                                        &sealed, &sealed_size);
    if (status != ZC_OK)
        return status;
    char name[USAGE_NAME_SIZE];
    usage_name_of(program, name);
    status = zc_disk_publish(tier, sealed, sealed_size, tier->dir_fd, name);
    free(sealed);
    return status;
}
