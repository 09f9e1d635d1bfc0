/* The environment snapshot as the key builder and the tests see it. Not
 * installed: the layer only asks for the snapshot to be taken
 * (zecache/environment.h). */
#ifndef ZECACHE_ENVIRONMENT_INTERNAL_H
#define ZECACHE_ENVIRONMENT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "zecache/environment.h"
#include "zecache/sha256.h"

#define ZC_ENVIRONMENT_MAX_FILES 2

/* A settings file the reader opens by this path: present (with the SHA-256
 * of its bytes) when it could be opened. */
typedef struct zc_settings_file {
    const char *path;
    bool present;
    uint8_t sha256[ZC_SHA256_SIZE];
    struct stat seen; /* when present: the file hashed, to tell whether it changed since */
} zc_settings_file;

/* One part of the snapshot (the driver's or the compiler's). */
typedef struct zc_environment_part {
    bool failed;      /* out of memory or a read error: nothing can be keyed */
    char **variables; /* "NAME=value", sorted by name */
    size_t count;
    zc_settings_file files[ZC_ENVIRONMENT_MAX_FILES];
    size_t file_count;
} zc_environment_part;

/* The parts, each taken on first use and then kept for the process. */
const zc_environment_part *zc_environment_driver_part(void);
const zc_environment_part *zc_environment_compiler_part(void);

/* Whether the IGC_* variables are still those of the compiler's part. IGC
 * reads them just before its first compile, which may come after the first
 * key (when the process's first modules are hits): a module keyed after
 * they changed could be compiled with values the key does not have. */
bool zc_environment_compiler_unchanged(const zc_environment_part *part);

/* ---- for tests ---- */

/* Whether the driver can read the environment entry "NAME=value" as a
 * setting that changes its compiles; debug_keys_read says whether
 * NEOReadDebugKeys is on. */
bool zc_environment_is_driver_setting(const char *entry, bool debug_keys_read);
/* Whether NEOReadDebugKeys's value (NULL: unset) switches debug keys on. */
bool zc_environment_debug_keys_on(const char *value);
/* Drops both parts, so the next use takes them again. Not thread-safe. */
void zc_environment_forget(void);

#endif
