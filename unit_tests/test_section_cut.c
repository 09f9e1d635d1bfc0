/* zecache/section_cut.h on ELF files laid out as Intel's OpenCL binaries
 * are (22.43's OpenCL ELF: the section table first; 26.x's zebin: the
 * SPIR-V between the code and the metadata, the table last), on random
 * layouts, and on files it must refuse: the whole binary always joins back
 * byte for byte, and the kept one is a file whose every other section holds
 * its own bytes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "section_elf.h"
#include "zecache/section_cut.h"

/* Cuts e's SPIR-V, joins it back, and checks the kept file: the SPIR-V's
 * header says size 0, every other section's header points at its own
 * bytes, and the file is cut bytes shorter, cut a multiple of 16 and at
 * most the SPIR-V's size. */
/* The same whole binary from the restore part's head and the cut bytes
 * kept elsewhere; the whole restore part is no head. */
static void assert_joins_from_head(const zc_section_cut *cut, const elf *e)
{
    size_t cut_size = e->size - cut->kept_size, whole_size = 0;
    cr_assert_eq(cut->head_size + cut_size, cut->restore_size);
    uint8_t *elsewhere = malloc(cut_size), *whole = malloc(e->size);
    memcpy(elsewhere, cut->restore + cut->head_size, cut_size);
    cr_assert(zc_section_cut_head_whole_size(cut->kept_size, cut->restore, cut->head_size, cut_size,
                                             &whole_size));
    cr_assert_eq(whole_size, e->size);
    zc_section_cut_join_head(cut->kept, cut->kept_size, cut->restore, cut->head_size, elsewhere,
                             cut_size, whole);
    cr_assert_eq(memcmp(whole, e->bytes, e->size), 0);
    cr_assert_not(zc_section_cut_head_whole_size(cut->kept_size, cut->restore, cut->restore_size,
                                                 cut_size, &whole_size));
    free(elsewhere);
    free(whole);
}

static size_t cut_and_join(const elf *e)
{
    zc_section_cut cut;
    cr_assert(zc_section_cut_make(e->bytes, e->size, SPIRV, &cut));
    size_t whole_size = 0;
    cr_assert(zc_section_cut_whole_size(cut.kept_size, cut.restore, cut.restore_size, &whole_size));
    cr_assert_eq(whole_size, e->size);
    uint8_t *whole = malloc(whole_size);
    zc_section_cut_join(cut.kept, cut.kept_size, cut.restore, cut.restore_size, whole);
    cr_assert_eq(memcmp(whole, e->bytes, e->size), 0);
    assert_joins_from_head(&cut, e);
    free(whole);

    size_t removed = e->size - cut.kept_size, table_at = get(cut.kept + 40, 8);
    size_t count = get(cut.kept + 60, 2), original_table = get(e->bytes + 40, 8);
    cr_assert_eq(removed % 16, 0);
    cr_assert_gt(removed, 0);
    for (size_t i = 1; i < count; i++) {
        const uint8_t *kept = cut.kept + table_at + i * 64;
        const uint8_t *was = e->bytes + original_table + i * 64;
        uint32_t type = (uint32_t)get(kept + 4, 4);
        size_t offset = get(kept + 24, 8), size = get(kept + 32, 8);
        if (type == SPIRV) {
            cr_assert_eq(size, 0);
            cr_assert_leq(removed, get(was + 32, 8));
            continue;
        }
        cr_assert_eq(size, get(was + 32, 8));
        if (type == SHT_NOBITS)
            continue;
        cr_assert_leq(offset + size, cut.kept_size);
        cr_assert_eq(memcmp(cut.kept + offset, e->bytes + get(was + 24, 8), size), 0);
        size_t align = get(was + 48, 8);
        cr_assert(align <= 1 || offset % align == 0, "section %zu lost its alignment", i);
    }
    zc_section_cut_free(&cut);
    return removed;
}

Test(section_cut, an_opencl_elf_with_its_table_first_joins_back)
{
    spec sections[] = {{0xff000006, 45, 1}, {SPIRV, 4000, 1}, {0xff000005, 3000, 1}, {3, 67, 1}};
    elf e = make_elf(sections, 4, true, 1);
    cr_assert_eq(cut_and_join(&e), 4000 / 16 * 16);
    free(e.bytes);
}

Test(section_cut, a_zebin_with_its_spirv_between_code_and_metadata_joins_back)
{
    spec sections[] = {{1, 2880, 16}, {1, 320, 16},          {1, 9000, 64},
                       {2, 144, 8},   {SPIRV, 5002, 4},      {0xff000014, 45, 1},
                       {7, 3, 4},     {0xff000011, 2026, 1}, {SHT_NOBITS, 512, 64},
                       {3, 219, 1}};
    elf e = make_elf(sections, 10, false, 2);
    /* The largest alignment after the SPIR-V is 64 (the section without
     * bytes counts for nothing). */
    cr_assert_eq(cut_and_join(&e), 5002 / 16 * 16);
    free(e.bytes);
}

Test(section_cut, the_cut_is_a_multiple_of_the_largest_alignment_after_it)
{
    spec sections[] = {{SPIRV, 1000, 4}, {1, 100, 256}};
    elf e = make_elf(sections, 2, true, 3);
    cr_assert_eq(cut_and_join(&e), 768);
    free(e.bytes);
}

static bool cuts(const elf *e)
{
    zc_section_cut cut;
    bool made = zc_section_cut_make(e->bytes, e->size, SPIRV, &cut);
    zc_section_cut_free(&cut);
    return made;
}

Test(section_cut, random_layouts_join_back)
{
    srand(7);
    for (int round = 0; round < 300; round++) {
        spec sections[12];
        size_t count = 1 + (size_t)rand() % 12, spirv_at = (size_t)rand() % count;
        for (size_t i = 0; i < count; i++) {
            static const size_t aligns[] = {0, 1, 4, 8, 16, 64, 4096};
            sections[i] = (spec){.type = rand() % 5 == 0 ? SHT_NOBITS : 1 + (uint32_t)rand() % 3,
                                 .size = (size_t)rand() % 700,
                                 .align = aligns[rand() % 7]};
        }
        sections[spirv_at] = (spec){SPIRV, 16 + (size_t)rand() % 5000, 4};
        bool table_first = rand() % 2;
        size_t align = 16; /* the table's own 8 is below it */
        for (size_t i = spirv_at + 1; i < count; i++)
            if (sections[i].type != SHT_NOBITS && sections[i].align > align)
                align = sections[i].align;
        size_t expected = sections[spirv_at].size / align * align;
        elf e = make_elf(sections, count, table_first, (unsigned)round);
        if (expected == 0)
            cr_assert_not(cuts(&e), "round %d: less than one alignment to cut", round);
        else
            cr_assert_eq(cut_and_join(&e), expected, "round %d", round);
        free(e.bytes);
    }
}

static void assert_refused(const spec *sections, size_t count, const char *why)
{
    elf e = make_elf(sections, count, true, 0);
    cr_assert_not(cuts(&e), "%s", why);
    free(e.bytes);
}

Test(section_cut, files_that_cannot_be_cut_alone_are_refused)
{
    spec two[] = {{SPIRV, 400, 1}, {SPIRV, 400, 1}};
    spec none[] = {{1, 400, 1}};
    spec small[] = {{SPIRV, 15, 1}, {1, 10, 1}};
    spec huge_align[] = {{SPIRV, 40000, 1}, {1, 10, 8192}};
    spec plain[] = {{1, 40, 1}, {SPIRV, 400, 1}, {1, 40, 1}};
    assert_refused(two, 2, "two SPIR-V sections");
    assert_refused(none, 1, "no SPIR-V section");
    assert_refused(small, 2, "fewer than 16 bytes");
    assert_refused(huge_align, 2, "an alignment past 4096");

    elf e = make_elf(plain, 3, false, 0);
    cr_assert(cuts(&e));
    size_t table_at = get(e.bytes + 40, 8);
    uint8_t *third = e.bytes + table_at + 3 * 64;
    size_t third_offset = get(third + 24, 8);
    put(third + 24, e.offset[2] + 8, 8);
    cr_assert_not(cuts(&e), "a section within the SPIR-V's bytes");
    put(third + 24, third_offset, 8);
    put(e.bytes + 40, e.offset[2] + 16, 8);
    cr_assert_not(cuts(&e), "the table within the SPIR-V's bytes");
    put(e.bytes + 40, table_at, 8);
    put(e.bytes + 56, 1, 2);
    cr_assert_not(cuts(&e), "program headers");
    put(e.bytes + 56, 0, 2);
    e.bytes[4] = 1;
    cr_assert_not(cuts(&e), "a 32-bit file");
    e.bytes[4] = 2;
    uint8_t *spirv = e.bytes + table_at + 2 * 64;
    put(spirv + 32, e.size, 8);
    cr_assert_not(cuts(&e), "a section past the end");
    put(spirv + 32, 400, 8);
    cr_assert(cuts(&e));
    for (size_t size = 0; size < table_at + 4 * 64; size++) {
        elf shorter = {.bytes = e.bytes, .size = size};
        cr_assert_not(cuts(&shorter), "cut short at %zu", size);
    }
    free(e.bytes);
}

/* Any restore part that is not one make wrote for the kept size is refused
 * by whole_size, so a join never writes past its output. */
Test(section_cut, a_restore_part_of_another_size_is_refused)
{
    spec sections[] = {{1, 40, 1}, {SPIRV, 400, 1}, {1, 40, 1}};
    elf e = make_elf(sections, 3, false, 5);
    zc_section_cut cut;
    cr_assert(zc_section_cut_make(e.bytes, e.size, SPIRV, &cut));
    size_t whole_size;
    for (size_t size = 0; size < 24 + 64 + 4 * 64; size++)
        cr_assert_not(zc_section_cut_whole_size(cut.kept_size, cut.restore, size, &whole_size),
                      "a restore part cut short at %zu", size);
    /* The kept binary shorter than where the cut bytes go. */
    cr_assert_not(zc_section_cut_whole_size(get(cut.restore, 8) - 1, cut.restore, cut.restore_size,
                                            &whole_size));
    /* The table placed past the whole binary's end. */
    put(cut.restore + 8, e.size - 64 * 4 + 1, 8);
    cr_assert_not(
        zc_section_cut_whole_size(cut.kept_size, cut.restore, cut.restore_size, &whole_size));
    zc_section_cut_free(&cut);
    free(e.bytes);
}

/* Whether any section of some types has bytes: the cut SPIR-V has none
 * left, another section of those types with bytes counts, and a file whose
 * table cannot be read is never called empty. */
Test(section_cut, sections_of_some_types_are_empty_only_when_none_has_bytes)
{
    static const uint32_t ir[] = {0xff000003u, SPIRV};
    spec sections[] = {{0xff000006, 45, 1}, {SPIRV, 4000, 1}, {0xff000005, 3000, 1}, {3, 67, 1}};
    elf e = make_elf(sections, 4, true, 1);
    cr_assert_not(zc_sections_all_empty(e.bytes, e.size, ir, 2));
    cr_assert(zc_sections_all_empty(e.bytes, e.size, ir + 0, 1));
    zc_section_cut cut;
    cr_assert(zc_section_cut_make(e.bytes, e.size, SPIRV, &cut));
    cr_assert(zc_sections_all_empty(cut.kept, cut.kept_size, ir, 2));
    cr_assert_not(zc_sections_all_empty(cut.kept, 63, ir, 2), "no table to read");
    cr_assert_not(zc_sections_all_empty(NULL, 0, ir, 2));
    zc_section_cut_free(&cut);
    free(e.bytes);

    spec with_bitcode[] = {{SPIRV, 4000, 1}, {0xff000003, 200, 1}, {0xff000005, 3000, 1}};
    e = make_elf(with_bitcode, 3, false, 3);
    cr_assert(zc_section_cut_make(e.bytes, e.size, SPIRV, &cut));
    cr_assert_not(zc_sections_all_empty(cut.kept, cut.kept_size, ir, 2), "the bitcode is left");
    zc_section_cut_free(&cut);
    free(e.bytes);
}

/* Intel's intermediate code: LLVM bitcode, SPIR-V or vISA with bytes
 * (22.43's Level Zero native binaries hold none). */
Test(section_cut, an_intel_binary_without_intermediate_code_is_told_apart)
{
    static const uint32_t kinds[] = {0xff000003u, SPIRV, 0xff000015u};
    spec none[] = {{0xff000005, 3000, 1}, {3, 67, 1}};
    elf e = make_elf(none, 2, true, 5);
    cr_assert(zc_intel_binary_without_ir(e.bytes, e.size));
    free(e.bytes);
    for (size_t i = 0; i < 3; i++) {
        spec with[] = {{0xff000005, 3000, 1}, {kinds[i], 100, 1}, {3, 67, 1}};
        e = make_elf(with, 3, false, 6);
        cr_assert_not(zc_intel_binary_without_ir(e.bytes, e.size), "section type %x", kinds[i]);
        free(e.bytes);
        with[1].size = 0;
        e = make_elf(with, 3, false, 6);
        cr_assert(zc_intel_binary_without_ir(e.bytes, e.size), "empty section type %x", kinds[i]);
        free(e.bytes);
    }
    static const uint8_t not_elf[] = "FAKE native";
    cr_assert_not(zc_intel_binary_without_ir(not_elf, sizeof not_elf));
}
