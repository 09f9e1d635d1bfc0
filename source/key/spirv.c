/* Finds the byte width of each specialization constant a SPIR-V module
 * declares, because Level Zero passes spec constant values by pointer with no
 * size: the key must read exactly as many bytes as the driver will. */
#include "zecache/spirv.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spirv-tools/libspirv.h>

/* Opcode and decoration numbers from the SPIR-V specification (the
 * SPIRV-Headers package is not installed, and these never change). */
enum {
    SPV_OP_TYPE_BOOL = 20,
    SPV_OP_TYPE_INT = 21,
    SPV_OP_TYPE_FLOAT = 22,
    SPV_OP_SPEC_CONSTANT_TRUE = 48,
    SPV_OP_SPEC_CONSTANT_FALSE = 49,
    SPV_OP_SPEC_CONSTANT = 50,
    SPV_OP_FUNCTION = 54,
    SPV_OP_DECORATE = 71,
    SPV_DECORATION_SPEC_ID = 1,
    SPV_HEADER_WORDS = 5,
};

/* A scalar type, a spec constant or a SpecId decoration: an id and what the
 * scan learnt about it. */
typedef struct id_value {
    uint32_t id;
    uint32_t value;
} id_value;

typedef struct id_value_list {
    id_value *items;
    size_t count;
    size_t capacity;
} id_value_list;

/* Type widths use 0 for "not a supported scalar", so bool needs its own mark
 * to tell OpSpecConstantTrue's legal type from an integer's. */
#define BOOL_TYPE_MARK UINT32_MAX

typedef struct scan_state {
    id_value_list types;     /* type id -> width in bytes, BOOL_TYPE_MARK or 0 */
    id_value_list constants; /* spec constant id -> width in bytes or 0 */
    id_value_list spec_ids;  /* decorated id -> SpecId */
    bool out_of_memory;
    bool byte_swapped;      /* the module's words are in the other byte order */
    size_t words_parsed;    /* header and instructions so far */
    size_t functions_start; /* word index of the first OpFunction, 0 if none */
} scan_state;

static bool list_push(id_value_list *list, uint32_t id, uint32_t value)
{
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 16;
        id_value *items = realloc(list->items, capacity * sizeof *items);
        if (items == NULL)
            return false;
        list->items = items;
        list->capacity = capacity;
    }
    list->items[list->count++] = (id_value){id, value};
    return true;
}

static int compare_ids(const void *a, const void *b)
{
    uint32_t left = ((const id_value *)a)->id;
    uint32_t right = ((const id_value *)b)->id;
    return (left > right) - (left < right);
}

static const id_value *list_find(const id_value_list *sorted, uint32_t id)
{
    if (sorted->count == 0)
        return NULL;
    id_value probe = {id, 0};
    return bsearch(&probe, sorted->items, sorted->count, sizeof probe, compare_ids);
}

/* Types come before the constants that use them, and there are few scalar
 * types, so a linear search in declaration order is enough. */
static uint32_t type_width(const scan_state *state, uint32_t type_id)
{
    for (size_t i = 0; i < state->types.count; i++)
        if (state->types.items[i].id == type_id)
            return state->types.items[i].value;
    return 0;
}

static uint32_t bytes_of_bits(uint32_t bits)
{
    return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? bits / 8 : 0;
}

/* The width the driver reads for a spec constant, or 0 when its type makes
 * the declaration one we will not guess about. */
static uint32_t constant_width(const scan_state *state, uint16_t opcode, uint32_t type_id)
{
    uint32_t width = type_width(state, type_id);
    bool boolean = opcode != SPV_OP_SPEC_CONSTANT;
    if (boolean)
        return width == BOOL_TYPE_MARK ? 1 : 0;
    return width == BOOL_TYPE_MARK ? 0 : width;
}

static bool record_instruction(scan_state *state, const spv_parsed_instruction_t *inst)
{
    const uint32_t *words = inst->words;
    switch (inst->opcode) {
    case SPV_OP_TYPE_BOOL:
        return list_push(&state->types, inst->result_id, BOOL_TYPE_MARK);
    case SPV_OP_TYPE_INT:
    case SPV_OP_TYPE_FLOAT:
        return list_push(&state->types, inst->result_id,
                         inst->num_words > 2 ? bytes_of_bits(words[2]) : 0);
    case SPV_OP_SPEC_CONSTANT_TRUE:
    case SPV_OP_SPEC_CONSTANT_FALSE:
    case SPV_OP_SPEC_CONSTANT:
        return list_push(&state->constants, inst->result_id,
                         constant_width(state, inst->opcode, inst->type_id));
    case SPV_OP_DECORATE:
        if (inst->num_words > 3 && words[2] == SPV_DECORATION_SPEC_ID)
            return list_push(&state->spec_ids, words[1], words[3]);
        return true;
    default:
        return true;
    }
}

static spv_result_t on_header(void *user_data, spv_endianness_t endian, uint32_t magic,
                              uint32_t version, uint32_t generator, uint32_t id_bound,
                              uint32_t reserved)
{
    (void)magic, (void)version, (void)generator, (void)id_bound, (void)reserved;
    scan_state *state = user_data;
    spv_endianness_t host =
        __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? SPV_ENDIANNESS_LITTLE : SPV_ENDIANNESS_BIG;
    state->byte_swapped = endian != host;
    state->words_parsed = SPV_HEADER_WORDS;
    return SPV_SUCCESS;
}

/* Everything a width depends on is declared before the first function, and
 * function bodies are most of a module: the full parse stops there (see
 * check_function_section for the rest). */
static spv_result_t on_instruction(void *user_data, const spv_parsed_instruction_t *inst)
{
    scan_state *state = user_data;
    if (inst->opcode == SPV_OP_FUNCTION) {
        state->functions_start = state->words_parsed;
        return SPV_REQUESTED_TERMINATION;
    }
    state->words_parsed += inst->num_words;
    if (record_instruction(state, inst))
        return SPV_SUCCESS;
    state->out_of_memory = true;
    return SPV_ERROR_OUT_OF_MEMORY;
}

static uint32_t word_at(const uint32_t *words, size_t index, bool byte_swapped)
{
    return byte_swapped ? __builtin_bswap32(words[index]) : words[index];
}

/* A valid module declares no spec constant and no SpecId among its
 * functions. An invalid one might, and the driver might still read it, so
 * rather than miss a declaration this walks the remaining instructions by
 * their word counts alone (several times faster than parsing them) and
 * refuses any such instruction. */
static zc_status check_function_section(const uint32_t *words, size_t count, size_t start,
                                        bool byte_swapped, char *reason, size_t reason_size)
{
    for (size_t at = start; at < count;) {
        uint32_t word = word_at(words, at, byte_swapped);
        uint32_t opcode = word & 0xffff, length = word >> 16;
        if (length == 0 || length > count - at) {
            return zc_explain(ZC_NOT_CACHEABLE, reason, reason_size,
                              "invalid SPIR-V: bad instruction length at word %zu", at);
        }
        bool spec_id = opcode == SPV_OP_DECORATE && length > 2 &&
                       word_at(words, at + 2, byte_swapped) == SPV_DECORATION_SPEC_ID;
        bool spec_constant = opcode >= SPV_OP_SPEC_CONSTANT_TRUE && opcode <= SPV_OP_SPEC_CONSTANT;
        if (spec_id || spec_constant) {
            return zc_explain(ZC_NOT_CACHEABLE, reason, reason_size,
                              "invalid SPIR-V: spec constant declared among functions at word %zu",
                              at);
        }
        at += length;
    }
    return ZC_OK;
}

/* Creating a context builds SPIRV-Tools' grammar tables: do it once. The
 * parser only reads the context, so threads can share it. */
static spv_context shared_context;
static pthread_once_t shared_context_once = PTHREAD_ONCE_INIT;

static void create_shared_context(void)
{
    shared_context = spvContextCreate(SPV_ENV_UNIVERSAL_1_6);
}

/* spvBinaryParse reads 32-bit words; an unaligned buffer gets an aligned
 * copy (*copy, to be freed by the caller). */
static const uint32_t *aligned_words(const void *spirv, size_t size, uint32_t **copy)
{
    *copy = NULL;
    if ((uintptr_t)spirv % _Alignof(uint32_t) == 0)
        return spirv;
    *copy = malloc(size ? size : 1);
    if (*copy != NULL)
        memcpy(*copy, spirv, size);
    return *copy;
}

static zc_status parse_words(const uint32_t *words, size_t count, scan_state *state, char *reason,
                             size_t reason_size)
{
    spv_diagnostic diagnostic = NULL;
    spv_result_t result =
        spvBinaryParse(shared_context, state, words, count, on_header, on_instruction, &diagnostic);
    zc_status status = ZC_OK;
    if (state->out_of_memory) {
        status = ZC_ERR_NOMEM;
    } else if (result != SPV_SUCCESS && result != SPV_REQUESTED_TERMINATION) {
        status = zc_explain(ZC_NOT_CACHEABLE, reason, reason_size, "invalid SPIR-V: %s",
                            diagnostic && diagnostic->error ? diagnostic->error : "parse failed");
    } else if (state->functions_start > 0) {
        status = check_function_section(words, count, state->functions_start, state->byte_swapped,
                                        reason, reason_size);
    }
    spvDiagnosticDestroy(diagnostic);
    return status;
}

static zc_status parse_module(const void *spirv, size_t size, scan_state *state, char *reason,
                              size_t reason_size)
{
    if (spirv == NULL || size == 0 || size % 4 != 0) {
        return zc_explain(ZC_NOT_CACHEABLE, reason, reason_size,
                          "SPIR-V size %zu is not a positive multiple of 4", size);
    }
    pthread_once(&shared_context_once, create_shared_context);
    if (shared_context == NULL) {
        return zc_explain(ZC_ERR_NOMEM, reason, reason_size,
                          "SPIRV-Tools context could not be created");
    }
    uint32_t *copy;
    const uint32_t *words = aligned_words(spirv, size, &copy);
    if (words == NULL)
        return ZC_ERR_NOMEM;
    zc_status status = parse_words(words, size / 4, state, reason, reason_size);
    free(copy);
    return status;
}

/* Each SpecId must name exactly one scalar spec constant and each spec
 * constant must carry at most one SpecId, or the driver's reading is
 * ambiguous. */
static zc_status find_decls(scan_state *state, zc_spec_constant_decl *decls, char *reason,
                            size_t reason_size)
{
    id_value_list *spec_ids = &state->spec_ids;
    qsort(state->constants.items, state->constants.count, sizeof(id_value), compare_ids);
    qsort(spec_ids->items, spec_ids->count, sizeof(id_value), compare_ids);
    for (size_t i = 0; i < spec_ids->count; i++) {
        uint32_t target = spec_ids->items[i].id;
        uint32_t spec_id = spec_ids->items[i].value;
        if (i > 0 && spec_ids->items[i - 1].id == target) {
            return zc_explain(ZC_NOT_CACHEABLE, reason, reason_size,
                              "%%%u has two SpecId decorations", target);
        }
        const id_value *constant = list_find(&state->constants, target);
        if (constant == NULL || constant->value == 0) {
            return zc_explain(ZC_NOT_CACHEABLE, reason, reason_size,
                              "SpecId %u decorates %%%u, which is not a spec constant of type bool "
                              "or of an 8/16/32/64-bit int or float",
                              spec_id, target);
        }
        decls[i] = (zc_spec_constant_decl){.spec_id = spec_id, .width = constant->value};
    }
    return ZC_OK;
}

static int compare_decls(const void *a, const void *b)
{
    uint32_t left = ((const zc_spec_constant_decl *)a)->spec_id;
    uint32_t right = ((const zc_spec_constant_decl *)b)->spec_id;
    return (left > right) - (left < right);
}

static zc_status sort_unique_decls(zc_spec_constant_decl *decls, size_t count, char *reason,
                                   size_t reason_size)
{
    qsort(decls, count, sizeof *decls, compare_decls);
    for (size_t i = 1; i < count; i++) {
        if (decls[i].spec_id == decls[i - 1].spec_id) {
            return zc_explain(ZC_NOT_CACHEABLE, reason, reason_size, "SpecId %u is declared twice",
                              decls[i].spec_id);
        }
    }
    return ZC_OK;
}

static zc_status collect_decls(scan_state *state, zc_spirv_spec_constants *out, char *reason,
                               size_t reason_size)
{
    size_t count = state->spec_ids.count;
    zc_spec_constant_decl *decls = malloc((count ? count : 1) * sizeof *decls);
    if (decls == NULL)
        return ZC_ERR_NOMEM;
    zc_status status = find_decls(state, decls, reason, reason_size);
    if (status == ZC_OK)
        status = sort_unique_decls(decls, count, reason, reason_size);
    if (status != ZC_OK) {
        free(decls);
        return status;
    }
    out->decls = decls;
    out->count = count;
    return ZC_OK;
}

zc_status zc_spirv_scan_spec_constants(const void *spirv, size_t size, zc_spirv_spec_constants *out,
                                       char *reason, size_t reason_size)
{
    if (out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = (zc_spirv_spec_constants){0};
    scan_state state = {0};
    zc_status status = parse_module(spirv, size, &state, reason, reason_size);
    if (status == ZC_OK)
        status = collect_decls(&state, out, reason, reason_size);
    free(state.types.items);
    free(state.constants.items);
    free(state.spec_ids.items);
    return status;
}

void zc_spirv_spec_constants_free(zc_spirv_spec_constants *constants)
{
    if (constants == NULL)
        return;
    free(constants->decls);
    *constants = (zc_spirv_spec_constants){0};
}

uint32_t zc_spirv_spec_constant_width(const zc_spirv_spec_constants *constants, uint32_t spec_id)
{
    if (constants == NULL || constants->count == 0)
        return 0;
    zc_spec_constant_decl probe = {.spec_id = spec_id};
    const zc_spec_constant_decl *found =
        bsearch(&probe, constants->decls, constants->count, sizeof probe, compare_decls);
    return found ? found->width : 0;
}
