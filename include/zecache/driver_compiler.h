/* What decides the code an OpenCL driver makes when its compiler is not IGC
 * (PoCL: clang and LLVM inside the driver, compiling for the host CPU), and
 * the host CPU such a driver compiles for. For the key's common parts of a
 * device (key.h), in place of zc_key_add_compiler_identity.
 *
 * The driver's compiler is identified by files, never by loading anything:
 *   - the library holding the driver's entry points (found with dladdr from
 *     one of its functions) and every library it needs (DT_NEEDED, all the
 *     way down), each resolved as the dynamic linker of this process
 *     resolved it (the object it loaded under that name; else the search
 *     library_search.h predicts), keyed as the compiler's libraries are
 *     (name, size, mtime, build-id);
 *   - for PoCL (a library named libpocl.so*), its device modules and the
 *     files its compiler reads: <libdir>/pocl/, <libdir>/../../share/pocl/
 *     (kernel library bitcode, the headers its front end includes) and the
 *     resource directory of the clang it links (builtin headers), every
 *     file's path, type, size and mtime, recursively; and the POCL_*
 *     variables that change code (all but those listed in
 *     driver_compiler.c as only logging, tracing or caching);
 *   - the closure and the files are bounded (ZC_DRIVER_COMPILER_FILES_MAX):
 *     beyond the bound the driver is not cacheable.
 * A driver that is neither IGC-based nor PoCL is identified by its library
 * closure alone: its own data files and variables, if any, are not seen (a
 * limit for the README). */
#ifndef ZECACHE_DRIVER_COMPILER_H
#define ZECACHE_DRIVER_COMPILER_H

#include <stdbool.h>
#include <stddef.h>

#include "zecache/key.h"
#include "zecache/status.h"

/* Libraries plus data files, at most. */
#define ZC_DRIVER_COMPILER_FILES_MAX 4096

typedef struct zc_driver_compiler zc_driver_compiler;

/* Identifies the driver whose code holds address (e.g. the driver's
 * clBuildProgram from its ICD dispatch table). Reads the files once: keep
 * the result for the process, as the driver reads its settings once.
 * ZC_NOT_CACHEABLE with a reason (reason may be NULL) when address is in no
 * loaded library, a needed library cannot be found or read, or a bound is
 * passed; ZC_ERR_NOMEM. */
zc_status zc_driver_compiler_identify(const void *address, zc_driver_compiler **out, char *reason,
                                      size_t reason_size);
void zc_driver_compiler_destroy(zc_driver_compiler *compiler); /* NULL is accepted */

/* The driver library's path (symlinks resolved), e.g.
 * "/usr/lib/x86_64-linux-gnu/libpocl.so.2.10.0". */
const char *zc_driver_compiler_path(const zc_driver_compiler *compiler);
/* Whether it is PoCL (its directories and POCL_* variables are keyed). */
bool zc_driver_compiler_is_pocl(const zc_driver_compiler *compiler);

/* The variables PoCL reads at every build, not once (count written): the
 * key has their values at each build (zc_key_add_build_variables). */
const char *const *zc_pocl_build_variables(size_t *count);

/* Adds the identity: every library, then every data file, then the
 * variables, in a fixed order (ZC_ERR_INVALID_ARG for NULL). */
zc_status zc_key_add_driver_compiler(zc_key_builder *builder, const zc_driver_compiler *compiler);

/* Adds the host CPU as a compiler targeting it sees it, as a hardware part
 * named "host cpu": on x86-64 the CPUID vendor, brand string, family, model
 * and stepping, the feature leaves (1, 7 subleaves 0 and 1, 0xd subleaf 1,
 * 0x80000001) and XCR0 (which register state the OS enables), with the bits
 * that differ between cores of one machine (APIC ids, core counts) masked
 * out; elsewhere AT_HWCAP, AT_HWCAP2, AT_PLATFORM and
 * /proc/cpuinfo's lines naming the model and features. ZC_NOT_CACHEABLE
 * when it cannot be read. */
zc_status zc_key_add_host_cpu(zc_key_builder *builder);

#endif
