/* What an OpenCL C program's build options tell the key about the files
 * the compile reads: the -I directories, in order, and the options that
 * read files the key cannot follow. Internal to the core. */
#ifndef ZECACHE_OPENCL_C_OPTIONS_H
#define ZECACHE_OPENCL_C_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "zecache/status.h"

/* More -I directories than this: not cacheable. */
#define ZC_OPENCL_C_INCLUDE_DIRS_MAX 64

typedef struct zc_opencl_c_options {
    /* Each -I directory as given (relative ones are the working
     * directory's), in order; malloc'd. */
    char *include_dirs[ZC_OPENCL_C_INCLUDE_DIRS_MAX];
    size_t include_dir_count;
    /* Debug information asked for (-g...): it records the working
     * directory, so the key holds it. */
    bool debug_info;
} zc_opencl_c_options;

/* Reads options (NULL: none). Drivers split options differently (on white
 * space alone, or as a shell would, with quotes and backslashes): both
 * splits are read, and the options are not cacheable (ZC_NOT_CACHEABLE,
 * reason names the option) when either finds an option that reads a file
 * the key cannot see, or when the two give different -I directories.
 * ZC_ERR_NOMEM. On success the caller frees with zc_opencl_c_options_free. */
zc_status zc_opencl_c_options_parse(const char *options, zc_opencl_c_options *out, char *reason,
                                    size_t reason_size);
void zc_opencl_c_options_free(zc_opencl_c_options *options);

#endif
