/* The parts of compiler_identity.c that tests drive with their own inputs. */
#ifndef ZECACHE_COMPILER_IDENTITY_INTERNAL_H
#define ZECACHE_COMPILER_IDENTITY_INTERNAL_H

#include "library_search.h"
#include "zecache/compiler_identity.h"

/* The objects mapped in this process whose file name or DT_SONAME is one of
 * names[0..count), at most max of them, each identified under the name it
 * matched. */
size_t zc_mapped_libraries(const char *const *names, size_t count, zc_library_identity *out,
                           size_t max);

/* Predicts the compiler identity with search. ZC_MISS when no libigc is found
 * under any name. */
zc_status zc_compiler_identity_predict(const zc_library_search *search,
                                       zc_compiler_identity *identity);

/* The identity to key with, given the prediction and the compiler libraries
 * mapped: each mapped library replaces (or joins) the predicted one of its
 * name. Returns whether anything mapped differs from the prediction. */
bool zc_compiler_identity_merge(const zc_compiler_identity *predicted,
                                const zc_library_identity *mapped, size_t mapped_count,
                                zc_compiler_identity *merged);

/* Forgets the prediction and any check, as in a new process (for tests that
 * run several cases in one process). The next prediction uses search (copied;
 * its strings must stay valid) or, when NULL, the process's own. */
void zc_compiler_identity_reset(const zc_library_search *search);

#endif
