/* ld.so.cache contents, fuzzed through zc_ld_cache_lookup. Input: the
 * file's bytes. Properties: no read outside the input (the sanitizers); a
 * lookup that succeeds returns an absolute path that is a NUL-terminated
 * string inside the input and fits the buffer. */
#include <stdint.h>
#include <string.h>

#include "../source/key/ld_cache.h"
#include "fuzz_check.h"

static void check_lookup(const uint8_t *data, size_t size, const char *name, size_t path_size)
{
    char path[256];
    memset(path, 0x55, sizeof path);
    if (!zc_ld_cache_lookup(data, size, name, path, path_size))
        return;
    size_t length = strnlen(path, path_size);
    FUZZ_CHECK(length < path_size && path[0] == '/');
    FUZZ_CHECK(length + 1 <= size && memmem(data, size, path, length + 1) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_lookup(data, size, "libigc.so.1", 256);
    check_lookup(data, size, "libc.so.6", 256);
    check_lookup(data, size, "libzc_found.so.1", 16);
    return 0;
}
