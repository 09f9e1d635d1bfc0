/* clCompileProgram through the cache: a compile is keyed as a build of the
 * same source or IL with the compile's format (its options mean other
 * things: -create-library belongs to links, a compile links nothing), plus
 * each header given by name (input_headers) as its name and text. The entry
 * is the driver's compiled object (CL_PROGRAM_BINARIES of a program of
 * binary type CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT); a hit is a compiled
 * object the layer creates from it, which both drivers link as it is.
 *
 * Which the compiler takes when a name is both given and a file need not be
 * known: the key holds the headers given and every file candidate of each
 * name (source/key/opencl_c_key.c), so whichever is taken, a change of
 * either is a miss. What the key cannot
 * follow is a header given by name that includes others, whose directory
 * each front end places differently: such a compile goes to the driver
 * alone. */
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"

/* The source of a header program (malloc'd, NUL-terminated); NULL when it
 * has none. */
static char *source_of(cl_program program, size_t *length)
{
    size_t size = 0;
    if (program == NULL ||
        zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_SOURCE, 0, NULL, &size) != CL_SUCCESS ||
        size <= 1)
        return NULL;
    char *text = calloc(1, size + 1);
    if (text != NULL && zcc_layer.next.clGetProgramInfo(program, CL_PROGRAM_SOURCE, size, text,
                                                        NULL) != CL_SUCCESS) {
        free(text);
        return NULL;
    }
    if (text != NULL)
        *length = strlen(text);
    return text;
}

/* Whether text may include another file: it names "include" (#include,
 * __has_include), or splices lines (a backslash or its trigraph), which
 * could spell the name across lines. */
static bool may_include(const char *text)
{
    return strstr(text, "include") != NULL || strchr(text, '\\') != NULL ||
           strstr(text, "?\?/") != NULL;
}

/* The headers as the key holds them, or in args->bypass why they cannot be
 * keyed; false when memory runs out. */
static bool gather_headers(zcc_compile_args *args)
{
    if (args->num_input_headers == 0)
        return true;
    if (args->input_headers == NULL || args->header_include_names == NULL) {
        args->bypass = "input headers the driver answers with an error";
        return true;
    }
    zc_named_header *headers = calloc(args->num_input_headers, sizeof(*headers));
    if (headers == NULL)
        return false;
    args->headers = headers;
    for (cl_uint i = 0; i < args->num_input_headers && args->bypass == NULL; i++) {
        size_t size = 0;
        char *text = source_of(args->input_headers[i], &size);
        headers[i] = (zc_named_header){args->header_include_names[i], text, size};
        args->header_count = i + 1;
        if (text == NULL || headers[i].name == NULL)
            args->bypass = "an input header not made from source, or without a name";
        else if (zcc_unkeyable_reason(args->input_headers[i]) != NULL)
            args->bypass = "an input header whose source holds a NUL byte (the driver "
                           "compiles all of it, CL_PROGRAM_SOURCE ends there)";
        else if (may_include(text))
            args->bypass = "an input header that may include others (where each driver "
                           "looks for those is not keyed)";
    }
    return true;
}

static void free_headers(zcc_compile_args *args)
{
    for (uint32_t i = 0; i < args->header_count; i++)
        free((char *)args->headers[i].text);
    free((zc_named_header *)args->headers);
}

cl_int CL_API_CALL zcc_compile_program(cl_program program, cl_uint num_devices,
                                       const cl_device_id *device_list, const char *options,
                                       cl_uint num_input_headers, const cl_program *input_headers,
                                       const char **header_include_names, zcc_notify notify,
                                       void *user_data)
{
    zcc_compile_args args = {.num_input_headers = num_input_headers,
                             .input_headers = input_headers,
                             .header_include_names = header_include_names};
    if (!gather_headers(&args))
        args.bypass = "out of memory for the input headers";
    cl_int result =
        zcc_build_run(program, num_devices, device_list, options, notify, user_data, &args);
    free_headers(&args);
    return result;
}
