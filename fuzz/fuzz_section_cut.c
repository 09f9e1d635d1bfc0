/* zecache/section_cut.h on raw bytes: as a binary to cut, and (after an
 * 8-byte kept size and, for a head, cut size) as a restore part or its
 * head. A cut is made only when it joins back to exactly the input, keeps
 * less, and joins back from its head too; a restore part or head is
 * accepted only when joining it writes no byte past the size it promised
 * and reads none past what it was given (ASan sees it). */
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
    memset(whole, 0, size);
    size_t cut_size = size - cut.kept_size;
    FUZZ_CHECK(cut.head_size + cut_size == cut.restore_size);
    FUZZ_CHECK(zc_section_cut_head_whole_size(cut.kept_size, cut.restore, cut.head_size, cut_size,
                                              &whole_size));
    zc_section_cut_join_head(cut.kept, cut.kept_size, cut.restore, cut.head_size,
                             cut.restore + cut.head_size, cut_size, whole);
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
    whole = NULL;
    size_t cut_size = (size_t)(data[2] | data[3] << 8) % 4096;
    uint8_t *cut = calloc(1, cut_size + 1);
    if (zc_section_cut_head_whole_size(kept_size, data + 8, size - 8, cut_size, &whole_size)) {
        FUZZ_CHECK(whole_size == kept_size + cut_size);
        whole = malloc(whole_size + 1);
        zc_section_cut_join_head(kept, kept_size, data + 8, size - 8, cut, cut_size, whole);
    }
    free(whole);
    free(cut);
    free(kept);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_cut(data, size);
    check_restore(data, size);
    return 0;
}
