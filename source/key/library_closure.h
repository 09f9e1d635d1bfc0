/* Where the dynamic linker finds a library another object needs, for the
 * identities that key every library a compiler loads (compiler_identity.c,
 * driver_compiler.c). Internal to the core. */
#ifndef ZECACHE_LIBRARY_CLOSURE_H
#define ZECACHE_LIBRARY_CLOSURE_H

#include <limits.h>
#include <stdbool.h>

#include "library_search.h"

/* Where the object named name (a DT_NEEDED entry of the object at
 * needed_by) is: the object loaded under that name in this process (the
 * dynamic linker matches loaded names and sonames before any search; nothing
 * is loaded), else where search (NULL: this process's) finds it for
 * needed_by. False when neither knows. */
bool zc_library_resolve_needed(const char *name, const char *needed_by,
                               const zc_library_search *search, char path[PATH_MAX]);

#endif
