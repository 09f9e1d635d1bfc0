/* Which modules a hit cannot reproduce. A hit is a module the driver makes
 * from a cached native binary (ZE_MODULE_FORMAT_NATIVE); Intel's driver
 * treats such a module differently from one it built from SPIR-V in a few
 * places (level_zero_layer/README.md, "A hit behaves like a miss", lists
 * them with the driver code they come from). Modules where that difference
 * can reach the application are not cached. */
#include <stdio.h>
#include <string.h>

#include "layer_internal.h"

#define SPIRV_MAGIC 0x07230203u
#define SPIRV_HEADER_WORDS 5u
#define SPIRV_OP_TYPE_IMAGE 25u
#define SPIRV_OP_FUNCTION 54u

static uint32_t swap_word(uint32_t word)
{
    return (word >> 24) | ((word >> 8) & 0xff00u) | ((word << 8) & 0xff0000u) | (word << 24);
}

static uint32_t word_at(const uint8_t *bytes, size_t index, bool swapped)
{
    uint32_t word;
    memcpy(&word, bytes + index * 4, sizeof(word));
    return swapped ? swap_word(word) : word;
}

/* Whether spirv declares an image type; also true when it cannot be walked,
 * since then nothing is known. Types come before the first function, so the
 * walk stops there. */
static bool may_declare_images(const void *spirv, size_t size)
{
    const uint8_t *bytes = spirv;
    size_t count = size / 4;
    if (spirv == NULL || size % 4 != 0 || count < SPIRV_HEADER_WORDS)
        return true;
    bool swapped = word_at(bytes, 0, false) != SPIRV_MAGIC;
    if (swapped && word_at(bytes, 0, true) != SPIRV_MAGIC)
        return true;
    for (size_t at = SPIRV_HEADER_WORDS; at < count;) {
        uint32_t word = word_at(bytes, at, swapped);
        uint32_t length = word >> 16, opcode = word & 0xffffu;
        if (length == 0 || length > count - at)
            return true;
        if (opcode == SPIRV_OP_TYPE_IMAGE)
            return true;
        if (opcode == SPIRV_OP_FUNCTION)
            return false;
        at += length;
    }
    return false;
}

/* NULL, "" and other strings are all different flags to the driver. */
static bool same_flags(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool program_reproducible(const ze_module_desc_t *desc,
                                 const ze_module_program_exp_desc_t *program, char *detail,
                                 size_t detail_size)
{
    /* Driver 22.43 ignores these flags for a program, newer drivers read
     * them: the key cannot say which, so such programs are not cached. */
    if (desc->pBuildFlags != NULL) {
        snprintf(detail, detail_size,
                 "program extension with build flags on the module description");
        return false;
    }
    /* A native module takes one flags string; the driver reads some flags
     * of every input of a program (-zet-profile-flags: the last input's). */
    for (uint32_t i = 1; program->pBuildFlags != NULL && i < program->count; i++) {
        if (!same_flags(program->pBuildFlags[0], program->pBuildFlags[i])) {
            snprintf(detail, detail_size,
                     "program extension inputs with different build flags: a module made "
                     "from a native binary takes one flags string");
            return false;
        }
    }
    for (uint32_t i = 0; i < program->count; i++) {
        if (may_declare_images(program->pInputModules[i], program->inputSizes[i])) {
            snprintf(detail, detail_size,
                     "input %u declares image types: the driver checks image formats only for "
                     "modules built from SPIR-V",
                     i);
            return false;
        }
    }
    return true;
}

bool zcl_hit_reproducible(const ze_module_desc_t *desc, char *detail, size_t detail_size)
{
    bool supported;
    const ze_module_program_exp_desc_t *program = zcl_module_program_of(desc, &supported);
    if (program != NULL && (program->pInputModules == NULL || program->inputSizes == NULL))
        return true; /* the key builder refuses these */
    if (program != NULL)
        return program_reproducible(desc, program, detail, detail_size);
    /* zeKernelSetArgumentValue refuses image formats without an OpenCL
     * channel type (Y8, 32-bit UNORM, ...) only for modules built from
     * SPIR-V (KernelImp::setArgImage, isSPIRv()). */
    if (may_declare_images(desc->pInputModule, desc->inputSize)) {
        snprintf(detail, detail_size,
                 "declares image types: the driver checks image formats only for modules built "
                 "from SPIR-V");
        return false;
    }
    return true;
}

const char *zcl_native_build_flags(const ze_module_desc_t *desc)
{
    bool supported;
    const ze_module_program_exp_desc_t *program = zcl_module_program_of(desc, &supported);
    if (program == NULL)
        return desc->pBuildFlags;
    /* zcl_hit_reproducible let through only programs whose inputs all have
     * the same flags. */
    return program->pBuildFlags != NULL ? program->pBuildFlags[0] : NULL;
}
