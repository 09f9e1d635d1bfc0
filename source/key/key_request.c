/* A build request's inputs in the key, in a fixed order. Level Zero's
 * layout is the one keys had before requests existed: changing a byte of it
 * would make every existing cache miss. */
#include <stdlib.h>
#include <string.h>

#include "byte_order.h"
#include "key_record.h"
#include "opencl_c_macros.h"
#include "zecache/key_request.h"

/* A compiled object is keyed by its bytes: the driver made it, from inputs
 * keyed when it was compiled. Its flags (the link's options) byte for byte,
 * with whether any were given. */
static zc_status add_object(zc_key_builder *builder, const zc_build_input *input)
{
    if (input->has_constants)
        return ZC_NOT_CACHEABLE;
    zc_status status = zc_key_add_hardware(builder, "object", input->bytes, input->size);
    uint8_t given = input->flags != NULL;
    if (status == ZC_OK)
        status = zc_key_add_hardware(builder, "object flags given", &given, sizeof given);
    if (status == ZC_OK && given)
        status = zc_key_add_hardware(builder, "object flags", input->flags, strlen(input->flags));
    return status;
}

/* Refuses a header whose text names a macro the driver expands anew at
 * each compile, as a source's or a header file's (opencl_c_key.c). */
static zc_status refuse_unkeyable_macro(zc_key_builder *builder, const zc_named_header *header)
{
    const char *macro = NULL;
    if (zc_opencl_c_unkeyable_macro(header->text, header->size, &macro) != ZC_OK)
        return zc_key_refuse(builder, ZC_ERR_NOMEM, "out of memory scanning a header");
    if (macro == NULL)
        return ZC_OK;
    return zc_key_refuse(builder, ZC_NOT_CACHEABLE,
                         "OpenCL C: a header given by name names %s, which the driver expands "
                         "anew at each build: not cached",
                         macro);
}

/* Each header by its name and text, in the order given: the compiler's
 * first match of a name wins. */
static zc_status add_headers(zc_key_builder *builder, const zc_build_request *request)
{
    zc_status status = ZC_OK;
    if (request->header_count > 0 && request->headers == NULL)
        return ZC_NOT_CACHEABLE;
    for (uint32_t i = 0; i < request->header_count && status == ZC_OK; i++) {
        const zc_named_header *header = &request->headers[i];
        if (header->name == NULL || header->text == NULL)
            return ZC_NOT_CACHEABLE;
        status = refuse_unkeyable_macro(builder, header);
        if (status == ZC_OK)
            status =
                zc_key_add_hardware(builder, "header name", header->name, strlen(header->name));
        if (status == ZC_OK)
            status = zc_key_add_hardware(builder, "header text", header->text, header->size);
    }
    return status;
}

static zc_status add_input(zc_key_builder *builder, const zc_build_input *input,
                           zc_opencl_c_driver request_driver)
{
    if (input->kind == ZC_INPUT_SPIRV && input->spirv_digest != NULL && !input->has_constants)
        return zc_key_add_spirv_digested(builder, input->size, input->spirv_digest, input->flags);
    if (input->bytes == NULL || input->size == 0)
        return ZC_NOT_CACHEABLE;
    if (input->kind == ZC_INPUT_SPIRV)
        return zc_key_add_spirv(builder, input->bytes, input->size, input->flags,
                                input->has_constants ? &input->constants : NULL);
    if (input->kind == ZC_INPUT_OBJECT)
        return add_object(builder, input);
    /* OpenCL C has no specialization constants: a request that gives some
     * is not one the driver builds as keyed. */
    if (input->kind != ZC_INPUT_OPENCL_C || input->has_constants)
        return ZC_NOT_CACHEABLE;
    return zc_key_add_opencl_c(builder, input->bytes, input->size, input->flags, request_driver);
}

/* The API beside the inputs, for every API but Level Zero (whose keys
 * predate it): the same SPIR-V built through two APIs, or made into
 * something else (a compiled object, a linked program), never shares an
 * entry. */
static zc_status add_api(zc_key_builder *builder, const zc_build_request *request)
{
    if (request->api == ZC_API_LEVEL_ZERO)
        return ZC_OK;
    const char *name = zc_api_name(request->api);
    zc_status status = zc_key_add_hardware(builder, "API", name, strlen(name));
    uint8_t format[4];
    zc_put_le32(format, request->format);
    if (status == ZC_OK)
        status = zc_key_add_hardware(builder, "API format", format, sizeof format);
    return status;
}

zc_status zc_key_add_request(zc_key_builder *builder, const zc_build_request *request,
                             zc_opencl_c_driver driver)
{
    if (request->input_count == 0 || request->inputs == NULL)
        return ZC_NOT_CACHEABLE;
    zc_status status = add_api(builder, request);
    /* The driver links the inputs of a program: keep it apart from a plain
     * module with the same single input. The count in native order, as the
     * Level Zero layer has always keyed it. */
    if (status == ZC_OK && request->program)
        status = zc_key_add_hardware(builder, "module program extension: input count",
                                     &request->input_count, sizeof(request->input_count));
    for (uint32_t i = 0; i < request->input_count && status == ZC_OK; i++)
        status = add_input(builder, &request->inputs[i], driver);
    if (status == ZC_OK && request->header_count > 0)
        status = add_headers(builder, request);
    return status;
}
