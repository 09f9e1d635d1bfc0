/* Recipes (recipe.h): the module description an entry was keyed from, in a
 * form a later process can build from. Parsing trusts nothing: every count
 * and length is bounded by what is left before it is used. */
#include "zecache/recipe.h"

#include <stdlib.h>
#include <string.h>

#include "byte_order.h"
#include "zecache/build_request.h"
#include "zecache/key_files.h"
#include "zecache/sha256.h"

/* ---- writing ---- */

typedef struct writer {
    uint8_t *bytes;
    size_t size, capacity;
    bool failed;
    bool too_large; /* over a bound of the format: a decoder would refuse it */
} writer;

static void put(writer *w, const void *data, size_t size)
{
    if (w->failed || size == 0) /* no bytes: data may be NULL (no flags) */
        return;
    if (w->size + size > w->capacity) {
        size_t capacity = w->capacity > 0 ? w->capacity : 256;
        while (capacity < w->size + size)
            capacity *= 2;
        uint8_t *grown = realloc(w->bytes, capacity);
        if (grown == NULL) {
            w->failed = true;
            return;
        }
        w->bytes = grown;
        w->capacity = capacity;
    }
    memcpy(w->bytes + w->size, data, size);
    w->size += size;
}

static void put_u32(writer *w, uint32_t value)
{
    uint8_t bytes[4];
    zc_put_le32(bytes, value);
    put(w, bytes, sizeof bytes);
}

static void put_u64(writer *w, uint64_t value)
{
    uint8_t bytes[8];
    zc_put_le64(bytes, value);
    put(w, bytes, sizeof bytes);
}

static void put_bounded_text(writer *w, const char *text, size_t bound)
{
    size_t length = text != NULL ? strlen(text) : 0;
    if (length > bound) {
        w->too_large = true;
        return;
    }
    put_u32(w, (uint32_t)length);
    put(w, text, length);
}

static void put_text(writer *w, const char *text)
{
    put_bounded_text(w, text, ZC_RECIPE_MAX_TEXT);
}

static void put_input(writer *w, const zc_recipe_input *input)
{
    put(w, input->spirv_sha256, 32);
    put_u64(w, input->spirv_size);
    put(w, &(uint8_t){input->flags != NULL}, 1);
    put_text(w, input->flags);
    put(w, &(uint8_t){input->has_constants}, 1);
    if (input->constant_count > ZC_RECIPE_MAX_CONSTANTS)
        w->too_large = true;
    put_u32(w, input->constant_count);
    for (uint32_t i = 0; i < input->constant_count; i++) {
        const zc_recipe_constant *constant = &input->constants[i];
        if (constant->width == 0 || constant->width > sizeof constant->value)
            w->failed = true;
        put_u32(w, constant->id);
        put_u32(w, constant->width);
        put(w, constant->value, constant->width <= 8 ? constant->width : 0);
    }
}

static void put_opencl(writer *w, const zc_recipe_opencl *opencl)
{
    put_u32(w, ZC_RECIPE_API_OPENCL);
    put_text(w, opencl->working_dir);
    if (opencl->file_count > ZC_RECIPE_MAX_FILES ||
        opencl->variable_count > ZC_RECIPE_MAX_VARIABLES)
        w->too_large = true;
    put_u32(w, opencl->file_count);
    for (uint32_t i = 0; i < opencl->file_count; i++) {
        const zc_recipe_file *file = &opencl->files[i];
        put_bounded_text(w, file->path, ZC_RECIPE_MAX_PATH);
        put(w, &file->state, 1);
        put_u64(w, file->size);
        put(w, file->sha256, 32);
    }
    put_u32(w, opencl->variable_count);
    for (uint32_t i = 0; i < opencl->variable_count; i++) {
        const zc_recipe_variable *variable = &opencl->variables[i];
        put_bounded_text(w, variable->name, ZC_RECIPE_MAX_PATH);
        put(w, &(uint8_t){variable->value != NULL}, 1);
        put_bounded_text(w, variable->value, ZC_RECIPE_MAX_PATH);
    }
}

zc_status zc_recipe_encode(const zc_recipe *recipe, int compression_level, uint8_t **out,
                           size_t *out_size)
{
    if (recipe->input_count == 0 || recipe->input_count > ZC_RECIPE_MAX_INPUTS)
        return ZC_ERR_INVALID_ARG;
    writer w = {0};
    put_u32(&w, recipe->format);
    put_u32(&w, recipe->program ? 1 : 0);
    put_u32(&w, recipe->input_count);
    put_text(&w, recipe->device_name);
    put_text(&w, recipe->driver_version);
    for (uint32_t i = 0; i < recipe->input_count; i++)
        put_input(&w, &recipe->inputs[i]);
    if (recipe->opencl != NULL)
        put_opencl(&w, recipe->opencl);
    zc_status status = ZC_ERR_NOMEM;
    if (w.too_large || w.size > ZC_RECIPE_MAX_CONTENT)
        status = ZC_ERR_TOO_LARGE;
    else if (!w.failed)
        status = zc_sealed_encode(ZC_RECIPE_MAGIC, recipe->key.bytes, w.bytes, w.size,
                                  compression_level, out, out_size);
    free(w.bytes);
    return status;
}

/* ---- reading ---- */

typedef struct reader {
    const uint8_t *at;
    size_t left;
    const char *problem; /* the first field that did not fit */
    bool inputs_only;    /* texts and constants are checked, not kept */
} reader;

static bool take(reader *r, void *out, size_t size, const char *what)
{
    if (r->problem != NULL)
        return false;
    if (size > r->left) {
        r->problem = what;
        return false;
    }
    if (out != NULL)
        memcpy(out, r->at, size);
    r->at += size;
    r->left -= size;
    return true;
}

static uint32_t take_u32(reader *r, const char *what)
{
    uint8_t bytes[4] = {0};
    take(r, bytes, sizeof bytes, what);
    return zc_get_le32(bytes);
}

static uint64_t take_u64(reader *r, const char *what)
{
    uint8_t bytes[8] = {0};
    take(r, bytes, sizeof bytes, what);
    return zc_get_le64(bytes);
}

static bool take_bool(reader *r, const char *what)
{
    uint8_t value = 0;
    take(r, &value, 1, what);
    if (value > 1 && r->problem == NULL)
        r->problem = what;
    return value == 1;
}

/* A text, or NULL (and r->problem set) when it does not fit; embedded NULs
 * are refused, so the text is exactly what was recorded. */
static char *take_bounded_text(reader *r, const char *what, uint32_t bound)
{
    uint32_t length = take_u32(r, what);
    if (r->problem != NULL || length > bound || length > r->left ||
        memchr(r->at, '\0', length) != NULL) {
        r->problem = r->problem != NULL ? r->problem : what;
        return NULL;
    }
    if (r->inputs_only) {
        take(r, NULL, length, what);
        return NULL;
    }
    char *text = malloc(length + 1);
    if (text == NULL) {
        r->problem = "memory";
        return NULL;
    }
    take(r, text, length, what);
    text[length] = '\0';
    return text;
}

static char *take_text(reader *r, const char *what)
{
    return take_bounded_text(r, what, ZC_RECIPE_MAX_TEXT);
}

static void take_constants(reader *r, zc_recipe_input *input)
{
    input->has_constants = take_bool(r, "constants present");
    input->constant_count = take_u32(r, "constant count");
    /* Each constant takes at least 9 bytes: a count beyond what is left is
     * damage, refused before allocating for it. */
    if (r->problem != NULL || input->constant_count > ZC_RECIPE_MAX_CONSTANTS ||
        input->constant_count > r->left / 9) {
        r->problem = r->problem != NULL ? r->problem : "constant count";
        input->constant_count = 0;
        return;
    }
    zc_recipe_constant dropped;
    if (!r->inputs_only &&
        (input->constants = calloc(input->constant_count + 1, sizeof *input->constants)) == NULL) {
        r->problem = "memory";
        input->constant_count = 0;
        return;
    }
    for (uint32_t i = 0; i < input->constant_count && r->problem == NULL; i++) {
        zc_recipe_constant *constant = r->inputs_only ? &dropped : &input->constants[i];
        constant->id = take_u32(r, "constant id");
        constant->width = take_u32(r, "constant width");
        if (constant->width == 0 || constant->width > sizeof constant->value)
            r->problem = r->problem != NULL ? r->problem : "constant width";
        else
            take(r, constant->value, constant->width, "constant value");
    }
}

static void take_input(reader *r, zc_recipe_input *input)
{
    take(r, input->spirv_sha256, 32, "SPIR-V digest");
    input->spirv_size = take_u64(r, "SPIR-V size");
    if (take_bool(r, "flags present"))
        input->flags = take_text(r, "flags");
    else if (take_u32(r, "flags") != 0 && r->problem == NULL)
        r->problem = "flags"; /* none given: an empty text */
    take_constants(r, input);
}

/* An array of count elements of size bytes each taking at least min_bytes
 * of what is left (so a damaged count is refused before allocating), or
 * NULL with r->problem set; nothing is allocated when inputs_only. */
static void *take_array(reader *r, uint32_t count, uint32_t bound, size_t min_bytes, size_t size,
                        const char *what)
{
    if (r->problem == NULL && (count > bound || count > r->left / min_bytes))
        r->problem = what;
    if (r->problem != NULL || r->inputs_only)
        return NULL;
    void *array = calloc((size_t)count + 1, size);
    if (array == NULL)
        r->problem = "memory";
    return array;
}

static void take_files(reader *r, zc_recipe_opencl *opencl)
{
    uint32_t count = take_u32(r, "file count");
    opencl->files =
        take_array(r, count, ZC_RECIPE_MAX_FILES, 45, sizeof *opencl->files, "file count");
    opencl->file_count = opencl->files != NULL ? count : 0;
    for (uint32_t i = 0; i < count && r->problem == NULL; i++) {
        zc_recipe_file dropped, *file = r->inputs_only ? &dropped : &opencl->files[i];
        file->path = take_bounded_text(r, "file path", ZC_RECIPE_MAX_PATH);
        take(r, &file->state, 1, "file state");
        if (file->state > ZC_KEY_FILE_FOUND && r->problem == NULL)
            r->problem = "file state";
        file->size = take_u64(r, "file size");
        take(r, file->sha256, 32, "file digest");
    }
}

static void take_variables(reader *r, zc_recipe_opencl *opencl)
{
    uint32_t count = take_u32(r, "variable count");
    opencl->variables = take_array(r, count, ZC_RECIPE_MAX_VARIABLES, 9, sizeof *opencl->variables,
                                   "variable count");
    opencl->variable_count = opencl->variables != NULL ? count : 0;
    for (uint32_t i = 0; i < count && r->problem == NULL; i++) {
        zc_recipe_variable dropped, *variable = r->inputs_only ? &dropped : &opencl->variables[i];
        variable->name = take_bounded_text(r, "variable name", ZC_RECIPE_MAX_PATH);
        /* Not set: an empty text, so each recipe has one spelling. */
        if (take_bool(r, "variable set"))
            variable->value = take_bounded_text(r, "variable value", ZC_RECIPE_MAX_PATH);
        else if (take_u32(r, "variable value") != 0 && r->problem == NULL)
            r->problem = "variable value";
    }
}

/* The OpenCL part after the last input, when there is one. */
static void take_opencl(reader *r, zc_recipe *recipe)
{
    if (r->problem != NULL || r->left == 0)
        return;
    if (take_u32(r, "api") != ZC_RECIPE_API_OPENCL ||
        (recipe->format != ZC_OPENCL_BUILD_IL && recipe->format != ZC_OPENCL_BUILD_SOURCE) ||
        recipe->program || recipe->input_count != 1) {
        r->problem = r->problem != NULL ? r->problem : "api";
        return;
    }
    recipe->key.kind = ZC_ENTRY_OPENCL;
    zc_recipe_opencl dropped = {0};
    recipe->opencl = r->inputs_only ? NULL : calloc(1, sizeof *recipe->opencl);
    zc_recipe_opencl *opencl = r->inputs_only ? &dropped : recipe->opencl;
    if (opencl == NULL) {
        r->problem = "memory";
        return;
    }
    opencl->working_dir = take_text(r, "working directory");
    take_files(r, opencl);
    take_variables(r, opencl);
}

static void parse(reader *r, zc_recipe *recipe)
{
    recipe->format = take_u32(r, "format");
    uint32_t program = take_u32(r, "program");
    recipe->program = program == 1;
    recipe->input_count = take_u32(r, "input count");
    if (r->problem == NULL &&
        (program > 1 || recipe->input_count == 0 || recipe->input_count > ZC_RECIPE_MAX_INPUTS))
        r->problem = "input count";
    recipe->device_name = take_text(r, "device name");
    recipe->driver_version = take_text(r, "driver version");
    if (r->problem != NULL) {
        recipe->input_count = 0;
        return;
    }
    recipe->inputs = calloc(recipe->input_count, sizeof *recipe->inputs);
    if (recipe->inputs == NULL) {
        r->problem = "memory";
        recipe->input_count = 0;
        return;
    }
    for (uint32_t i = 0; i < recipe->input_count && r->problem == NULL; i++)
        take_input(r, &recipe->inputs[i]);
    take_opencl(r, recipe);
    if (r->problem == NULL && r->left != 0)
        r->problem = "the end (bytes follow the last input)";
}

static zc_status decode(const void *data, size_t size, const zc_key *expected, bool inputs_only,
                        zc_recipe *out, char *reason, size_t reason_size)
{
    memset(out, 0, sizeof *out);
    uint8_t *content = NULL;
    size_t content_size = 0;
    zc_status status = zc_sealed_decode(
        ZC_RECIPE_MAGIC, data, size, expected != NULL ? expected->bytes : NULL,
        ZC_RECIPE_MAX_CONTENT, &content, &content_size, out->key.bytes, reason, reason_size);
    if (status != ZC_OK)
        return status;
    /* The recipe names its entry's bytes; the kind is its OpenCL part's. */
    out->key.kind = ZC_ENTRY_LEVEL_ZERO;
    reader r = {.at = content, .left = content_size, .inputs_only = inputs_only};
    parse(&r, out);
    free(content);
    if (r.problem == NULL)
        return ZC_OK;
    zc_recipe_free(out);
    return zc_explain(ZC_MISS, reason, reason_size, "recipe damaged at its %s", r.problem);
}

zc_status zc_recipe_decode(const void *data, size_t size, const zc_key *expected, zc_recipe *out,
                           char *reason, size_t reason_size)
{
    return decode(data, size, expected, false, out, reason, reason_size);
}

zc_status zc_recipe_decode_inputs(const void *data, size_t size, const zc_key *expected,
                                  zc_recipe *out, char *reason, size_t reason_size)
{
    return decode(data, size, expected, true, out, reason, reason_size);
}

static void free_opencl(zc_recipe_opencl *opencl)
{
    if (opencl == NULL)
        return;
    for (uint32_t i = 0; opencl->files != NULL && i < opencl->file_count; i++)
        free(opencl->files[i].path);
    for (uint32_t i = 0; opencl->variables != NULL && i < opencl->variable_count; i++) {
        free(opencl->variables[i].name);
        free(opencl->variables[i].value);
    }
    free(opencl->files);
    free(opencl->variables);
    free(opencl->working_dir);
    free(opencl);
}

void zc_recipe_free(zc_recipe *recipe)
{
    free_opencl(recipe->opencl);
    for (uint32_t i = 0; recipe->inputs != NULL && i < recipe->input_count; i++) {
        free(recipe->inputs[i].flags);
        free(recipe->inputs[i].constants);
    }
    free(recipe->inputs);
    free(recipe->device_name);
    free(recipe->driver_version);
    memset(recipe, 0, sizeof *recipe);
}

zc_status zc_spirv_blob_encode(const void *spirv, size_t size, int compression_level,
                               uint8_t sha256[32], uint8_t **out, size_t *out_size)
{
    if (!zc_sha256_digest(spirv, size, sha256))
        return ZC_ERR_NOMEM;
    return zc_sealed_encode(ZC_SPIRV_MAGIC, sha256, spirv, size, compression_level, out, out_size);
}

zc_status zc_spirv_blob_decode(const void *data, size_t size, const uint8_t expected[32],
                               uint8_t **spirv, size_t *spirv_size, char *reason,
                               size_t reason_size)
{
    zc_status status = zc_sealed_decode(ZC_SPIRV_MAGIC, data, size, expected, ZC_SEALED_MAX_CONTENT,
                                        spirv, spirv_size, NULL, reason, reason_size);
    uint8_t digest[32];
    if (status != ZC_OK)
        return status;
    /* The name says which content it must be: a file put in another's
     * place is refused even with a valid container. */
    if (!zc_sha256_digest(*spirv, *spirv_size, digest) || memcmp(digest, expected, 32) != 0) {
        free(*spirv);
        *spirv = NULL;
        return zc_explain(ZC_MISS, reason, reason_size, "SPIR-V does not match its SHA-256");
    }
    return ZC_OK;
}
