/* zecache/section_cut.h on raw bytes: as a binary to cut, and (after an
 * 8-byte kept size) as a restore part. A cut is made only when it joins
 * back to exactly the input and keeps less; a restore part is accepted only
 * when joining it writes no byte past the size it promised (ASan sees it). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "zecache/section_cut.h"

static void check_cut(const uint8_t *data, size_t size)
{
    zc_section_cut cut;
    if (!zc_section_cut_make(data, size, 0xff000009u, &cut))
        return;
    size_t whole_size = 0;
    FUZZ_CHECK(cut.kept_size < size);
    FUZZ_CHECK(
        zc_section_cut_whole_size(cut.kept_size, cut.restore, cut.restore_size, &whole_size));
    FUZZ_CHECK(whole_size == size);
    uint8_t *whole = malloc(size);
    zc_section_cut_join(cut.kept, cut.kept_size, cut.restore, cut.restore_size, whole);
    FUZZ_CHECK(memcmp(whole, data, size) == 0);
    free(whole);
    zc_section_cut_free(&cut);
}

static void check_restore(const uint8_t *data, size_t size)
{
    if (size < 8)
        return;
    size_t kept_size = (size_t)(data[0] | data[1] << 8) % 4096;
    uint8_t *kept = calloc(1, kept_size + 1), *whole = NULL;
    size_t whole_size = 0;
    if (zc_section_cut_whole_size(kept_size, data + 8, size - 8, &whole_size)) {
        FUZZ_CHECK(whole_size >= kept_size);
        whole = malloc(whole_size + 1);
        zc_section_cut_join(kept, kept_size, data + 8, size - 8, whole);
    }
    free(whole);
    free(kept);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_cut(data, size);
    check_restore(data, size);
    return 0;
}
