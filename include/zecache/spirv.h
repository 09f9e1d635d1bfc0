/* What the cache needs to know about a SPIR-V module: the byte width of each
 * specialization constant, found by parsing with SPIRV-Tools. */
#ifndef ZECACHE_SPIRV_H
#define ZECACHE_SPIRV_H

#include <stddef.h>
#include <stdint.h>

#include "zecache/status.h"

typedef struct zc_spec_constant_decl {
    uint32_t spec_id; /* the SpecId decoration */
    uint32_t width;   /* bytes: 1 for bool, else the scalar type's width / 8 */
} zc_spec_constant_decl;

typedef struct zc_spirv_spec_constants {
    zc_spec_constant_decl *decls; /* sorted by spec_id, no duplicates */
    size_t count;
} zc_spirv_spec_constants;

/* Parses spirv and lists its specialization constants. Returns
 * ZC_NOT_CACHEABLE with a message in reason (reason_size bytes) for invalid
 * SPIR-V or a SpecId that is declared twice or on something that is not a
 * scalar OpSpecConstant*. Free the result with zc_spirv_spec_constants_free. */
zc_status zc_spirv_scan_spec_constants(const void *spirv, size_t size, zc_spirv_spec_constants *out,
                                       char *reason, size_t reason_size);
void zc_spirv_spec_constants_free(zc_spirv_spec_constants *constants);

/* The width of spec_id, or 0 when the module does not declare it. */
uint32_t zc_spirv_spec_constant_width(const zc_spirv_spec_constants *constants, uint32_t spec_id);

#endif
