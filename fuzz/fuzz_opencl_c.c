/* OpenCL C text and build options as zc_key_add_opencl_c reads them, fuzzed
 * through the scanner (opencl_c_scan.h) and the options reader
 * (opencl_c_options.h). Input: a first byte choosing which, then the bytes.
 * Properties: no read outside the input (the sanitizers); every name found
 * lies on one line of the input's logical copy (no line end in it) and is
 * no longer than the input; a refusal says why; the options reader's -I
 * directories are words of the options. Nothing touches the file system. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../source/key/opencl_c_options.h"
#include "../source/key/opencl_c_scan.h"
#include "fuzz_check.h"

typedef struct found {
    size_t size, count;
} found;

static zc_status check_name(void *context, const zc_include_ref *ref)
{
    found *f = context;
    FUZZ_CHECK(ref->length <= f->size);
    FUZZ_CHECK(memchr(ref->name, '\n', ref->length) == NULL);
    FUZZ_CHECK(memchr(ref->name, '\0', ref->length) == NULL);
    f->count++;
    return ZC_OK;
}

static void fuzz_scan(const uint8_t *data, size_t size)
{
    found f = {size, 0};
    char reason[200] = "";
    zc_status status =
        zc_opencl_c_scan((const char *)data, size, check_name, &f, reason, sizeof reason);
    FUZZ_CHECK(status == ZC_OK || status == ZC_NOT_CACHEABLE);
    FUZZ_CHECK(status == ZC_OK || reason[0] != '\0');
}

static void fuzz_options(const uint8_t *data, size_t size)
{
    char *options = malloc(size + 1);
    if (options == NULL)
        return;
    memcpy(options, data, size);
    options[size] = '\0';
    zc_opencl_c_options parsed;
    char reason[200] = "";
    zc_status status = zc_opencl_c_options_parse(options, &parsed, reason, sizeof reason);
    FUZZ_CHECK(status == ZC_OK || status == ZC_NOT_CACHEABLE);
    if (status == ZC_OK) {
        FUZZ_CHECK(parsed.include_dir_count <= ZC_OPENCL_C_INCLUDE_DIRS_MAX);
        for (size_t i = 0; i < parsed.include_dir_count; i++)
            FUZZ_CHECK(strstr(options, parsed.include_dirs[i]) != NULL);
        zc_opencl_c_options_free(&parsed);
    } else {
        FUZZ_CHECK(reason[0] != '\0');
    }
    free(options);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        fuzz_options(data + 1, size - 1);
    else
        fuzz_scan(data + 1, size - 1);
    return 0;
}
