/* The compiler the driver will load (IGC and its front end), predicted once
 * per process without loading it, and checked against what is really mapped
 * once the driver has compiled. */
#ifndef ZECACHE_COMPILER_IDENTITY_H
#define ZECACHE_COMPILER_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

#include "zecache/identity.h"

/* libigc and libigdfcl, each under its IGC 1.x and 2.x name, and the
 * libraries they load (22.43's OpenCL compiler loads 22 in all). */
#define ZC_COMPILER_LIBRARY_MAX 64

typedef struct zc_compiler_identity {
    /* The candidates that were found, in a fixed order (libigc.so.1,
     * libigdfcl.so.1, libigc.so.2, libigdfcl.so.2), each named by the name
     * the driver opens it by; then, breadth first, every library they need
     * (DT_NEEDED, all the way down: libLLVMSPIRVLib, libopencl-clang,
     * libLLVM, ...), named by its needed name and resolved as the dynamic
     * linker resolves it for the object needing it (the object loaded under
     * that name, else the search of library_search.h), or with no path when
     * it is not found. */
    zc_library_identity libraries[ZC_COMPILER_LIBRARY_MAX];
    size_t count;
} zc_compiler_identity;

/* The compiler identity of this process. The first call predicts it for the
 * driver library at driver_path (the object that dlopens IGC; NULL when
 * unknown), as the dynamic linker will resolve that dlopen; after a check
 * found the prediction wrong, it is what is mapped. NULL when no libigc is
 * found under any of its names: such a compiler is not cached (logged once
 * under PrintDebugMessages). The identity stays valid for the process. */
const zc_compiler_identity *zc_compiler_identity_get(const char *driver_path);

/* Call after the driver compiled successfully. Until IGC is first seen
 * mapped, identifies the compiler again from what is mapped in this process
 * (never loading anything) and compares it with the prediction. Returns true when this call found
 * them different (logged under PrintDebugMessages); from then on zc_compiler_identity_get returns
 * what is mapped. */
bool zc_compiler_identity_check_loaded(void);

/* Whether a check found the prediction wrong: cached entries made under the
 * prediction must not be served in this process. */
bool zc_compiler_identity_changed(void);

#endif
