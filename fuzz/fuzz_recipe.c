/* Past the container's checksums, which random bytes never pass: the input
 * is a recipe's content, sealed here, then read as prewarm and a sweep read
 * recipes (zc_recipe_decode, zc_recipe_decode_inputs). A refusal has a
 * reason and is the same for both readers; an accepted recipe keeps to the
 * format's bounds, has an OpenCL part only on an OpenCL build of one input,
 * and is written back byte for byte as its content (the format has one
 * spelling of each recipe). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "zecache/build_request.h"
#include "zecache/recipe.h"

static void check_bounds(const zc_recipe *recipe)
{
    FUZZ_CHECK(recipe->input_count >= 1 && recipe->input_count <= ZC_RECIPE_MAX_INPUTS);
    for (uint32_t i = 0; i < recipe->input_count; i++)
        FUZZ_CHECK(recipe->inputs[i].constant_count <= ZC_RECIPE_MAX_CONSTANTS);
    if (recipe->opencl == NULL) {
        FUZZ_CHECK(recipe->key.kind == ZC_ENTRY_LEVEL_ZERO);
        return;
    }
    FUZZ_CHECK(recipe->key.kind == ZC_ENTRY_OPENCL && recipe->input_count == 1 && !recipe->program);
    FUZZ_CHECK(recipe->format == ZC_OPENCL_BUILD_SOURCE || recipe->format == ZC_OPENCL_BUILD_IL);
    FUZZ_CHECK(recipe->opencl->file_count <= ZC_RECIPE_MAX_FILES);
    FUZZ_CHECK(recipe->opencl->variable_count <= ZC_RECIPE_MAX_VARIABLES);
    for (uint32_t i = 0; i < recipe->opencl->file_count; i++)
        FUZZ_CHECK(strlen(recipe->opencl->files[i].path) <= ZC_RECIPE_MAX_PATH);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t id[32] = {1, 2, 3};
    uint8_t *sealed = NULL, *again = NULL, *content = NULL;
    size_t sealed_size = 0, again_size = 0, content_size = 0;
    if (zc_sealed_encode(ZC_RECIPE_MAGIC, id, data, size, 1, &sealed, &sealed_size) != ZC_OK)
        return 0;
    zc_recipe recipe, inputs;
    char reason[256] = "", inputs_reason[256] = "";
    zc_status status = zc_recipe_decode(sealed, sealed_size, NULL, &recipe, reason, sizeof reason);
    zc_status inputs_status = zc_recipe_decode_inputs(sealed, sealed_size, NULL, &inputs,
                                                      inputs_reason, sizeof inputs_reason);
    free(sealed);
    if (status == ZC_ERR_NOMEM || inputs_status == ZC_ERR_NOMEM)
        return 0;
    FUZZ_CHECK(status == inputs_status);
    if (status != ZC_OK) {
        FUZZ_CHECK(status == ZC_MISS && reason[0] != '\0');
        FUZZ_CHECK(strcmp(reason, inputs_reason) == 0);
        return 0;
    }
    check_bounds(&recipe);
    FUZZ_CHECK(inputs.input_count == recipe.input_count && inputs.opencl == NULL);
    FUZZ_CHECK(zc_recipe_encode(&recipe, 1, &again, &again_size) == ZC_OK);
    FUZZ_CHECK(zc_sealed_decode(ZC_RECIPE_MAGIC, again, again_size, id, ZC_RECIPE_MAX_CONTENT,
                                &content, &content_size, NULL, reason, sizeof reason) == ZC_OK);
    FUZZ_CHECK(content_size == size && memcmp(content, data, size) == 0);
    free(again);
    free(content);
    zc_recipe_free(&recipe);
    zc_recipe_free(&inputs);
    return 0;
}
