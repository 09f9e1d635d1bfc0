/* The bounds of zc_key_add_opencl_c's header search (key.h), for the tests.
 * Internal to the core. */
#ifndef ZECACHE_OPENCL_C_KEY_H
#define ZECACHE_OPENCL_C_KEY_H

/* Distinct header files found, at most. */
#define ZC_OPENCL_C_HEADERS_MAX 256
/* Their bytes together, at most. */
#define ZC_OPENCL_C_HEADER_BYTES_MAX ((uint64_t)32 << 20)
/* Distinct names looked up (a name per includer directory), at most. */
#define ZC_OPENCL_C_LOOKUPS_MAX 2048

#endif
