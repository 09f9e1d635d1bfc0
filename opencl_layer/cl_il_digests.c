/* The digest of a large IL, made at clCreateProgramWithIL from the
 * application's buffer, which is in memory then, and kept with the program:
 * the program's IL cannot change after it is created, so its builds are
 * keyed from the digest without reading megabytes of IL back out of the
 * driver (a fresh copy, its page faults and hashing it again). Small IL is
 * read back as before: that costs less than the record. */
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/spirv_digest_memo.h"

typedef struct il_digest {
    cl_program program; /* first, as zcc_program_list wants */
    size_t size;
    uint8_t digest[ZC_SHA256_SIZE];
} il_digest;

static zcc_program_table table = ZCC_PROGRAM_TABLE_INIT;

void zcc_il_digest_note(cl_program program, const void *il, size_t length)
{
    /* With hits off for the process, no build is keyed. */
    if (program == NULL || length < ZCC_IL_DIGEST_MIN_SIZE ||
        atomic_load(&zcc_layer.hits_not_reproduced) || !zc_key_spirv_has_header(il, length))
        return;
    il_digest *record = malloc(sizeof(*record));
    if (record == NULL)
        return;
    *record = (il_digest){.program = program, .size = length};
    if (!zc_spirv_digest(il, length, record->digest)) {
        free(record);
        return;
    }
    zcc_program_table_lock(&table);
    free(zcc_program_list_take(&table.list, program));
    if (!zcc_program_list_add(&table.list, record))
        free(record); /* then the build reads the IL back */
    zcc_program_table_unlock(&table);
}

bool zcc_il_digest_of(cl_program program, size_t *size, uint8_t digest[ZC_SHA256_SIZE])
{
    if (zcc_program_table_empty(&table))
        return false;
    zcc_program_table_lock(&table);
    const il_digest *record = zcc_program_list_find(&table.list, program);
    if (record != NULL) {
        *size = record->size;
        memcpy(digest, record->digest, ZC_SHA256_SIZE);
    }
    zcc_program_table_unlock(&table);
    return record != NULL;
}

void zcc_il_digest_forget(cl_program program)
{
    free(zcc_program_table_take(&table, program));
}

bool zcc_il_digests_none(void)
{
    return zcc_program_table_empty(&table);
}
