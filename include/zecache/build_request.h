/* A build request, described once: what an API call (Level Zero's
 * zeModuleCreate, OpenCL's clBuildProgram, clCompileProgram, clLinkProgram)
 * asks the driver to build, made by the layer from the call's arguments and
 * handed unchanged to everything after it: the key (key_request.h), the
 * parity checks, the recording of inputs and the log lines. It points into
 * the application's memory: valid for the call only. */
#ifndef ZECACHE_BUILD_REQUEST_H
#define ZECACHE_BUILD_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/key.h"

typedef enum zc_api {
    ZC_API_LEVEL_ZERO, /* zeModuleCreate */
    ZC_API_OPENCL,     /* clBuildProgram, clCompileProgram, clLinkProgram */
} zc_api;

/* "level-zero" or "opencl", for messages. */
const char *zc_api_name(zc_api api);

/* OpenCL's format values (zc_build_request.format): what the call makes,
 * from what. Level Zero's are its ze_module_format_t. */
#define ZC_OPENCL_BUILD_IL 1u       /* clBuildProgram, clCreateProgramWithIL */
#define ZC_OPENCL_BUILD_SOURCE 2u   /* clBuildProgram, clCreateProgramWithSource */
#define ZC_OPENCL_COMPILE_IL 3u     /* clCompileProgram, clCreateProgramWithIL */
#define ZC_OPENCL_COMPILE_SOURCE 4u /* clCompileProgram, clCreateProgramWithSource */
#define ZC_OPENCL_LINK 5u           /* clLinkProgram */

typedef enum zc_input_kind {
    ZC_INPUT_SPIRV,    /* SPIR-V words */
    ZC_INPUT_OPENCL_C, /* OpenCL C source text (size bytes, no NUL needed) */
    ZC_INPUT_OBJECT,   /* a driver's compiled object (clLinkProgram), its bytes */
} zc_input_kind;

/* A header given to the compile by name (clCompileProgram's input_headers),
 * which the compiler finds by that name. */
typedef struct zc_named_header {
    const char *name;
    const char *text;
    size_t size;
} zc_named_header;

typedef struct zc_build_input {
    zc_input_kind kind;
    const void *bytes;
    size_t size;
    const char *flags; /* byte for byte: NULL (none given) and "" are distinct */
    /* Specialization constants (SPIR-V only). has_constants false: none
     * were given, which is distinct from a list of none. */
    bool has_constants;
    zc_spec_constants constants;
    /* SPIR-V given without constants: its zc_spirv_digest when the caller
     * made it from the bytes before (then the key needs no bytes; bytes may
     * be NULL until something else needs them); else NULL. */
    const uint8_t *spirv_digest;
} zc_build_input;

typedef struct zc_build_request {
    zc_api api;
    uint32_t format; /* the API's format value (see above) */
    /* Several inputs the driver links into one program (Level Zero's
     * module program extension, clLinkProgram), even when there is one. */
    bool program;
    /* Flags given for a program as a whole besides each input's own (Level
     * Zero: the module description's pBuildFlags beside the program
     * extension); NULL when none. Not keyed: a layer refuses what it cannot
     * reproduce. */
    const char *program_flags;
    uint32_t input_count;
    /* input_count inputs; NULL when the API's arrays were missing (such a
     * request is not cacheable). */
    const zc_build_input *inputs;
    /* Headers given by name (OpenCL C only); keyed after the inputs. */
    uint32_t header_count;
    const zc_named_header *headers;
} zc_build_request;

#endif
