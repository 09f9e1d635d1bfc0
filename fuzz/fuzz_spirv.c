/* The SPIR-V spec-constant scanner on arbitrary modules, and the key builder
 * fed the constants the scan found. Properties: what a scan lists is sorted,
 * unique and of widths 1, 2, 4 or 8, and zc_spirv_spec_constant_width agrees
 * with it; the key builder accepts exactly the declared ids and reads no
 * more than each one's width (every value lives in a buffer of exactly that
 * many bytes, so AddressSanitizer sees any over-read); an undeclared id, or
 * any id for a module the scan refuses, is not cacheable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "zecache/key.h"
#include "zecache/spirv.h"

enum { MAX_CONSTANTS = 64 };

static zc_status key_with_constants(const uint8_t *data, size_t size, const uint32_t *ids,
                                    const void *const *values, uint32_t count)
{
    zc_key_builder *builder = NULL;
    FUZZ_CHECK(zc_key_builder_create(true, &builder) == ZC_OK);
    zc_spec_constants constants = {.count = count, .ids = ids, .values = values};
    zc_status status = zc_key_add_spirv(builder, data, size, "-cl-fast-relaxed-math", &constants);
    zc_key key;
    if (status == ZC_OK)
        FUZZ_CHECK(zc_key_finish(builder, &key) == ZC_OK);
    else
        FUZZ_CHECK(zc_key_builder_reason(builder) != NULL);
    zc_key_builder_destroy(builder);
    return status;
}

static void check_declared(const uint8_t *data, size_t size, const zc_spirv_spec_constants *found)
{
    uint32_t count = found->count < MAX_CONSTANTS ? (uint32_t)found->count : MAX_CONSTANTS;
    uint32_t ids[MAX_CONSTANTS + 1];
    void *values[MAX_CONSTANTS + 1];
    uint32_t undeclared = 0;
    for (uint32_t i = 0; i < count; i++) {
        const zc_spec_constant_decl *decl = &found->decls[i];
        ids[i] = decl->spec_id;
        values[i] = malloc(decl->width); /* exactly the width: ASan sees any over-read */
        memset(values[i], 0xA5 ^ (int)i, decl->width);
        if (decl->spec_id == undeclared)
            undeclared++; /* the sorted list: the first gap */
    }
    FUZZ_CHECK(key_with_constants(data, size, ids, (const void *const *)values, count) == ZC_OK);
    if (found->count <= MAX_CONSTANTS) { /* undeclared is then really not declared */
        uint64_t wide = 0;
        ids[count] = undeclared;
        values[count] = &wide;
        FUZZ_CHECK(key_with_constants(data, size, ids, (const void *const *)values, count + 1) ==
                   ZC_NOT_CACHEABLE);
    }
    for (uint32_t i = 0; i < count; i++)
        free(values[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zc_spirv_spec_constants found;
    char reason[256] = "";
    zc_status status = zc_spirv_scan_spec_constants(data, size, &found, reason, sizeof reason);
    FUZZ_CHECK(status == ZC_OK || status == ZC_NOT_CACHEABLE);
    if (status != ZC_OK) {
        FUZZ_CHECK(reason[0] != '\0');
        uint32_t id = 0;
        uint64_t value = 0;
        const void *values[1] = {&value};
        FUZZ_CHECK(key_with_constants(data, size, &id, values, 1) == ZC_NOT_CACHEABLE);
        return 0;
    }
    for (size_t i = 0; i < found.count; i++) {
        uint32_t width = found.decls[i].width;
        FUZZ_CHECK(width == 1 || width == 2 || width == 4 || width == 8);
        FUZZ_CHECK(i == 0 || found.decls[i - 1].spec_id < found.decls[i].spec_id);
        FUZZ_CHECK(zc_spirv_spec_constant_width(&found, found.decls[i].spec_id) == width);
    }
    check_declared(data, size, &found);
    zc_spirv_spec_constants_free(&found);
    return 0;
}
