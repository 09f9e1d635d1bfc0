/* Which arguments of which kernels of a SPIR-V module are images. The
 * driver's kernel arguments are the entry point's OpFunctionParameters in
 * order, so a parameter whose type is an OpTypeImage is an image argument.
 *
 * Modules without images must pay nothing new for this: types come before
 * the first function, so a module that has declared no image type by then is
 * answered there by a scan that allocates nothing. Only modules with images
 * are walked to the end. */
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"

#define SPIRV_MAGIC 0x07230203u
#define SPIRV_HEADER_WORDS 5u
#define OP_ENTRY_POINT 15u
#define OP_TYPE_IMAGE 25u
#define OP_FUNCTION 54u
#define OP_FUNCTION_PARAMETER 55u
#define MAX_IMAGE_ARGUMENT 64u

typedef struct spirv_words {
    const uint8_t *bytes;
    size_t count;
    bool swapped;
} spirv_words;

static uint32_t word_at(const spirv_words *words, size_t index)
{
    uint32_t word;
    memcpy(&word, words->bytes + index * 4, sizeof(word));
    if (words->swapped)
        word = (word >> 24) | ((word >> 8) & 0xff00u) | ((word << 8) & 0xff0000u) | (word << 24);
    return word;
}

static bool open_words(const void *spirv, size_t size, spirv_words *words)
{
    *words = (spirv_words){spirv, size / 4, false};
    if (spirv == NULL || size % 4 != 0 || words->count < SPIRV_HEADER_WORDS)
        return false;
    if (word_at(words, 0) == SPIRV_MAGIC)
        return true;
    words->swapped = true;
    return word_at(words, 0) == SPIRV_MAGIC;
}

/* A growable list of ids with one mask each: image types (mask unused),
 * functions (their image parameters), entry points (their function). */
typedef struct id_list {
    uint32_t *ids;
    uint64_t *masks;
    char **names;
    size_t count, capacity;
} id_list;

static bool id_list_add(id_list *list, uint32_t id, char *name)
{
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 16;
        uint32_t *ids = realloc(list->ids, capacity * sizeof(*ids));
        if (ids != NULL)
            list->ids = ids;
        uint64_t *masks = ids != NULL ? realloc(list->masks, capacity * sizeof(*masks)) : NULL;
        if (masks != NULL)
            list->masks = masks;
        char **names = masks != NULL ? realloc(list->names, capacity * sizeof(*names)) : NULL;
        if (names == NULL)
            return false;
        list->names = names;
        list->capacity = capacity;
    }
    list->ids[list->count] = id;
    list->masks[list->count] = 0;
    list->names[list->count++] = name;
    return true;
}

static bool id_list_has(const id_list *list, uint32_t id)
{
    for (size_t i = 0; i < list->count; i++)
        if (list->ids[i] == id)
            return true;
    return false;
}

static void id_list_free(id_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->names[i]);
    free(list->ids);
    free(list->masks);
    free(list->names);
}

typedef struct image_walk {
    id_list image_types, functions, entry_points;
    bool too_far;    /* an image parameter past MAX_IMAGE_ARGUMENT */
    unsigned params; /* parameters of the current function so far */
} image_walk;

/* The name of an OpEntryPoint at word at, length words long; NULL when it is
 * not a terminated string. */
static char *entry_point_name(const spirv_words *words, size_t at, uint32_t length)
{
    size_t capacity = (length - 3) * 4;
    char *name = malloc(capacity + 1);
    if (name == NULL)
        return NULL;
    for (uint32_t i = 3; i < length; i++) {
        uint32_t word = word_at(words, at + i);
        for (int b = 0; b < 4; b++)
            name[(i - 3) * 4 + b] = (char)(word >> (8 * b));
    }
    name[capacity] = '\0';
    if (strlen(name) == capacity) {
        free(name);
        return NULL;
    }
    return name;
}

static zcl_spirv_images visit(image_walk *walk, const spirv_words *words, size_t at,
                              uint32_t opcode, uint32_t length)
{
    if (opcode == OP_TYPE_IMAGE && length >= 2)
        return id_list_add(&walk->image_types, word_at(words, at + 1), NULL) ? ZCL_SPIRV_IMAGES
                                                                             : ZCL_SPIRV_NO_MEMORY;
    if (opcode == OP_ENTRY_POINT && length >= 4) {
        char *name = entry_point_name(words, at, length);
        if (name == NULL)
            return ZCL_SPIRV_UNREADABLE;
        if (!id_list_add(&walk->entry_points, word_at(words, at + 2), name)) {
            free(name);
            return ZCL_SPIRV_NO_MEMORY;
        }
    } else if (opcode == OP_FUNCTION && length >= 3) {
        walk->params = 0;
        if (!id_list_add(&walk->functions, word_at(words, at + 2), NULL))
            return ZCL_SPIRV_NO_MEMORY;
    } else if (opcode == OP_FUNCTION_PARAMETER && length >= 3 && walk->functions.count > 0) {
        unsigned index = walk->params++;
        if (id_list_has(&walk->image_types, word_at(words, at + 1))) {
            if (index >= MAX_IMAGE_ARGUMENT)
                walk->too_far = true;
            else
                walk->functions.masks[walk->functions.count - 1] |= 1ull << index;
        }
    }
    return ZCL_SPIRV_IMAGES;
}

/* Whether an image type comes before the first function: the whole answer
 * for a module without images, found without allocating anything. */
static zcl_spirv_images scan_types(const spirv_words *words)
{
    for (size_t at = SPIRV_HEADER_WORDS; at < words->count;) {
        uint32_t word = word_at(words, at);
        uint32_t length = word >> 16, opcode = word & 0xffffu;
        if (length == 0 || length > words->count - at)
            return ZCL_SPIRV_UNREADABLE;
        if (opcode == OP_TYPE_IMAGE)
            return ZCL_SPIRV_IMAGES;
        if (opcode == OP_FUNCTION)
            break;
        at += length;
    }
    return ZCL_SPIRV_NO_IMAGES;
}

/* Walks every instruction; stops at the first function when no image type
 * was declared before it. */
static zcl_spirv_images walk_module(const spirv_words *words, image_walk *walk)
{
    for (size_t at = SPIRV_HEADER_WORDS; at < words->count;) {
        uint32_t word = word_at(words, at);
        uint32_t length = word >> 16, opcode = word & 0xffffu;
        if (length == 0 || length > words->count - at)
            return ZCL_SPIRV_UNREADABLE;
        if (opcode == OP_FUNCTION && walk->image_types.count == 0)
            return ZCL_SPIRV_NO_IMAGES;
        zcl_spirv_images status = visit(walk, words, at, opcode, length);
        if (status == ZCL_SPIRV_UNREADABLE || status == ZCL_SPIRV_NO_MEMORY)
            return status;
        at += length;
    }
    return walk->image_types.count == 0 ? ZCL_SPIRV_NO_IMAGES : ZCL_SPIRV_IMAGES;
}

static uint64_t mask_of_function(const id_list *functions, uint32_t id)
{
    for (size_t i = 0; i < functions->count; i++)
        if (functions->ids[i] == id)
            return functions->masks[i];
    return 0;
}

/* Moves the entry points with image arguments into kernels. */
static zcl_spirv_images collect_kernels(image_walk *walk, zcl_image_kernels *kernels)
{
    for (size_t i = 0; i < walk->entry_points.count; i++) {
        uint64_t mask = mask_of_function(&walk->functions, walk->entry_points.ids[i]);
        if (mask == 0)
            continue;
        zcl_image_kernel *grown =
            realloc(kernels->kernels, (kernels->count + 1) * sizeof(*kernels->kernels));
        if (grown == NULL)
            return ZCL_SPIRV_NO_MEMORY;
        kernels->kernels = grown;
        grown[kernels->count++] = (zcl_image_kernel){walk->entry_points.names[i], mask};
        walk->entry_points.names[i] = NULL;
    }
    return ZCL_SPIRV_IMAGES;
}

zcl_spirv_images zcl_spirv_image_kernels(const void *spirv, size_t size, zcl_image_kernels *kernels)
{
    spirv_words words;
    if (!open_words(spirv, size, &words))
        return ZCL_SPIRV_UNREADABLE;
    zcl_spirv_images status = scan_types(&words);
    if (status != ZCL_SPIRV_IMAGES)
        return status;
    image_walk walk = {0};
    status = walk_module(&words, &walk);
    if (status == ZCL_SPIRV_IMAGES && walk.too_far)
        status = ZCL_SPIRV_IMAGE_ARGUMENT_TOO_FAR;
    if (status == ZCL_SPIRV_IMAGES && kernels != NULL)
        status = collect_kernels(&walk, kernels);
    id_list_free(&walk.image_types);
    id_list_free(&walk.functions);
    id_list_free(&walk.entry_points);
    return status;
}

uint64_t zcl_image_kernels_arguments_of(const zcl_image_kernels *kernels, const char *name)
{
    for (size_t i = 0; name != NULL && i < kernels->count; i++)
        if (strcmp(kernels->kernels[i].name, name) == 0)
            return kernels->kernels[i].image_arguments;
    return 0;
}

void zcl_image_kernels_free(zcl_image_kernels *kernels)
{
    for (size_t i = 0; kernels != NULL && i < kernels->count; i++)
        free(kernels->kernels[i].name);
    if (kernels != NULL)
        free(kernels->kernels);
}

void zcl_image_kernels_destroy(zcl_image_kernels *kernels)
{
    zcl_image_kernels_free(kernels);
    free(kernels);
}
