/* Cutting one section's bytes out of an ELF binary, and joining them back.
 *
 * The kept binary is the whole one without bytes [at, at + cut) of the
 * section, whose header says size 0; every section and the section table
 * after the cut moved back by cut bytes, the ELF header's e_shoff with it.
 * Rather than undoing those edits field by field, the join puts the cut
 * bytes back and then writes the whole binary's own ELF header and section
 * table over the edited ones, so a join can only give what the cut was made
 * from; make checks that it does before it answers.
 *
 * restore: u64 at, u64 the whole binary's e_shoff, u32 header size,
 * u32 table size, the header, the table, the cut bytes; little-endian. Its
 * head is all but the cut bytes, for a caller that has them elsewhere. */
#include <elf.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "byte_order.h"
#include "zecache/section_cut.h"

/* Fields are read at <elf.h>'s offsets, byte by byte: the binaries are
 * little-endian whatever the host. */
#define ELF_HEADER_SIZE sizeof(Elf64_Ehdr)
#define SECTION_HEADER_SIZE sizeof(Elf64_Shdr)
#define EHDR(field) offsetof(Elf64_Ehdr, field)
#define SHDR(field) offsetof(Elf64_Shdr, field)
#define RESTORE_FIXED 24
#define ALIGN_MAX 4096

/* The parts of a section header the cut reads or edits. */
typedef struct section {
    uint32_t type;
    uint64_t offset, size, align;
} section;

static section section_at(const uint8_t *header)
{
    return (section){.type = zc_get_le32(header + SHDR(sh_type)),
                     .offset = zc_get_le64(header + SHDR(sh_offset)),
                     .size = zc_get_le64(header + SHDR(sh_size)),
                     .align = zc_get_le64(header + SHDR(sh_addralign))};
}

/* What make reads of the whole binary, checked to lie within it. */
typedef struct layout {
    uint64_t table_at;
    size_t count;
    size_t target; /* the index of the section cut */
    uint64_t at, end, cut;
} layout;

static bool table_of(const uint8_t *binary, size_t size, layout *out)
{
    if (size < ELF_HEADER_SIZE || memcmp(binary, ELFMAG, SELFMAG) != 0 ||
        binary[EI_CLASS] != ELFCLASS64 || binary[EI_DATA] != ELFDATA2LSB ||
        zc_get_le16(binary + EHDR(e_phnum)) != 0 ||
        zc_get_le16(binary + EHDR(e_shentsize)) != SECTION_HEADER_SIZE)
        return false;
    out->table_at = zc_get_le64(binary + EHDR(e_shoff));
    out->count = zc_get_le16(binary + EHDR(e_shnum));
    return out->count != 0 && out->table_at >= ELF_HEADER_SIZE && out->table_at <= size &&
           out->count <= (size - out->table_at) / SECTION_HEADER_SIZE;
}

/* The one section of type, its bytes within the binary; false when there
 * are none or several. */
static bool target_of(const uint8_t *binary, size_t size, uint32_t type, layout *out)
{
    bool found = false;
    for (size_t i = 0; i < out->count; i++) {
        section s = section_at(binary + out->table_at + i * SECTION_HEADER_SIZE);
        if (s.type != type)
            continue;
        if (found || s.offset > size || s.size > size - s.offset)
            return false;
        if (s.offset < ELF_HEADER_SIZE)
            return false;
        found = true;
        out->target = i;
        out->at = s.offset;
        out->end = s.offset + s.size;
    }
    return found;
}

/* Whether [begin, begin + length) overlaps the target's bytes; an empty
 * range overlaps when it lies strictly inside them. */
static bool inside(const layout *l, uint64_t begin, uint64_t length)
{
    return begin < l->end && (length == 0 ? begin > l->at : begin + length > l->at);
}

/* How many bytes to cut: the target's size rounded down to the largest
 * alignment of anything after it (at least 16); 0 when it cannot be cut. */
static uint64_t cut_size(const uint8_t *binary, const layout *l)
{
    uint64_t align = 16;
    for (size_t i = 0; i < l->count; i++) {
        section s = section_at(binary + l->table_at + i * SECTION_HEADER_SIZE);
        if (i == l->target || s.type == SHT_NOBITS)
            continue;
        if (inside(l, s.offset, s.size) || s.align > ALIGN_MAX)
            return 0;
        if (s.offset >= l->end && s.align > align)
            align = s.align;
    }
    if (inside(l, l->table_at, l->count * SECTION_HEADER_SIZE) || (align & (align - 1)) != 0)
        return 0;
    return (l->end - l->at) / align * align;
}

static uint64_t moved(const layout *l, uint64_t offset)
{
    return offset >= l->end ? offset - l->cut : offset;
}

/* The kept binary: the cut bytes gone, the target empty, what followed it
 * moved back (a section without bytes too, so none points past the end). */
static uint8_t *kept_of(const uint8_t *binary, size_t size, const layout *l)
{
    size_t kept_size = size - (size_t)l->cut;
    uint8_t *kept = malloc(kept_size);
    if (kept == NULL)
        return NULL;
    memcpy(kept, binary, (size_t)l->at);
    memcpy(kept + l->at, binary + l->at + l->cut, size - (size_t)(l->at + l->cut));
    uint64_t table_at = moved(l, l->table_at);
    zc_put_le64(kept + EHDR(e_shoff), table_at);
    for (size_t i = 0; i < l->count; i++) {
        uint8_t *header = kept + table_at + i * SECTION_HEADER_SIZE;
        section s = section_at(header);
        if (i == l->target)
            zc_put_le64(header + SHDR(sh_size), 0);
        else
            zc_put_le64(header + SHDR(sh_offset), moved(l, s.offset));
    }
    return kept;
}

static uint8_t *restore_of(const uint8_t *binary, const layout *l, size_t *restore_size)
{
    size_t table_size = l->count * SECTION_HEADER_SIZE;
    *restore_size = RESTORE_FIXED + ELF_HEADER_SIZE + table_size + (size_t)l->cut;
    uint8_t *restore = malloc(*restore_size);
    if (restore == NULL)
        return NULL;
    uint8_t *at = zc_put_le64(restore, l->at);
    at = zc_put_le64(at, l->table_at);
    at = zc_put_le32(at, (uint32_t)ELF_HEADER_SIZE);
    at = zc_put_le32(at, (uint32_t)table_size);
    memcpy(at, binary, ELF_HEADER_SIZE);
    memcpy(at + ELF_HEADER_SIZE, binary + l->table_at, table_size);
    memcpy(at + ELF_HEADER_SIZE + table_size, binary + l->at, (size_t)l->cut);
    return restore;
}

/* Whether the cut joins back to exactly binary. */
static bool joins_back(const zc_section_cut *cut, const uint8_t *binary, size_t size)
{
    size_t whole_size = 0;
    if (!zc_section_cut_whole_size(cut->kept_size, cut->restore, cut->restore_size, &whole_size) ||
        whole_size != size)
        return false;
    uint8_t *whole = malloc(size);
    if (whole == NULL)
        return false;
    zc_section_cut_join(cut->kept, cut->kept_size, cut->restore, cut->restore_size, whole);
    bool same = memcmp(whole, binary, size) == 0;
    free(whole);
    return same;
}

bool zc_section_cut_make(const uint8_t *binary, size_t size, uint32_t section_type,
                         zc_section_cut *cut)
{
    *cut = (zc_section_cut){0};
    layout l = {0};
    if (binary == NULL || !table_of(binary, size, &l) ||
        !target_of(binary, size, section_type, &l) || (l.cut = cut_size(binary, &l)) == 0)
        return false;
    cut->kept = kept_of(binary, size, &l);
    cut->kept_size = size - (size_t)l.cut;
    cut->restore = cut->kept != NULL ? restore_of(binary, &l, &cut->restore_size) : NULL;
    if (cut->restore != NULL && joins_back(cut, binary, size)) {
        cut->head_size = cut->restore_size - (size_t)l.cut;
        return true;
    }
    zc_section_cut_free(cut);
    return false;
}

void zc_section_cut_free(zc_section_cut *cut)
{
    free(cut->kept);
    free(cut->restore);
    *cut = (zc_section_cut){0};
}

static bool type_among(uint32_t type, const uint32_t *types, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (types[i] == type)
            return true;
    return false;
}

bool zc_sections_all_empty(const uint8_t *binary, size_t size, const uint32_t *types, size_t count)
{
    layout l = {0};
    if (binary == NULL || !table_of(binary, size, &l))
        return false;
    for (size_t i = 0; i < l.count; i++) {
        section s = section_at(binary + l.table_at + i * SECTION_HEADER_SIZE);
        if (s.size != 0 && type_among(s.type, types, count))
            return false;
    }
    return true;
}

/* restore's parts, checked against each other and kept_size. */
typedef struct restore_parts {
    uint64_t at, table_at;
    size_t header_size, table_size, cut_size, whole_size;
    const uint8_t *header, *table, *cut;
} restore_parts;

/* The cut bytes are restore's last (CUT_IN_RESTORE), or cut_size bytes
 * kept elsewhere (restore is then its head alone). */
#define CUT_IN_RESTORE SIZE_MAX

static bool parts_of(size_t kept_size, const uint8_t *restore, size_t restore_size, size_t cut_size,
                     restore_parts *p)
{
    if (restore == NULL || restore_size < RESTORE_FIXED)
        return false;
    p->at = zc_get_le64(restore);
    p->table_at = zc_get_le64(restore + 8);
    p->header_size = zc_get_le32(restore + 16);
    p->table_size = zc_get_le32(restore + 20);
    size_t left = restore_size - RESTORE_FIXED;
    if (p->header_size > left || p->table_size > left - p->header_size)
        return false;
    size_t after = left - p->header_size - p->table_size;
    if (cut_size != CUT_IN_RESTORE && after != 0)
        return false;
    p->cut_size = cut_size == CUT_IN_RESTORE ? after : cut_size;
    p->header = restore + RESTORE_FIXED;
    p->table = p->header + p->header_size;
    p->cut = cut_size == CUT_IN_RESTORE ? p->table + p->table_size : NULL;
    if (p->at > kept_size || p->cut_size > SIZE_MAX - kept_size)
        return false;
    p->whole_size = kept_size + p->cut_size;
    return p->header_size <= p->whole_size && p->table_at <= p->whole_size &&
           p->table_size <= p->whole_size - p->table_at;
}

static void join_parts(const uint8_t *kept, size_t kept_size, const restore_parts *p,
                       const uint8_t *cut, uint8_t *out)
{
    memcpy(out, kept, (size_t)p->at);
    memcpy(out + p->at, cut, p->cut_size);
    memcpy(out + p->at + p->cut_size, kept + p->at, kept_size - (size_t)p->at);
    memcpy(out, p->header, p->header_size);
    memcpy(out + p->table_at, p->table, p->table_size);
}

bool zc_section_cut_whole_size(size_t kept_size, const uint8_t *restore, size_t restore_size,
                               size_t *whole_size)
{
    restore_parts p;
    if (!parts_of(kept_size, restore, restore_size, CUT_IN_RESTORE, &p))
        return false;
    *whole_size = p.whole_size;
    return true;
}

void zc_section_cut_join(const uint8_t *kept, size_t kept_size, const uint8_t *restore,
                         size_t restore_size, uint8_t *out)
{
    restore_parts p;
    if (parts_of(kept_size, restore, restore_size, CUT_IN_RESTORE, &p))
        join_parts(kept, kept_size, &p, p.cut, out);
}

bool zc_section_cut_head_whole_size(size_t kept_size, const uint8_t *head, size_t head_size,
                                    size_t cut_size, size_t *whole_size)
{
    restore_parts p;
    if (cut_size == CUT_IN_RESTORE || !parts_of(kept_size, head, head_size, cut_size, &p))
        return false;
    *whole_size = p.whole_size;
    return true;
}

void zc_section_cut_join_head(const uint8_t *kept, size_t kept_size, const uint8_t *head,
                              size_t head_size, const uint8_t *cut, size_t cut_size, uint8_t *out)
{
    restore_parts p;
    if (cut_size != CUT_IN_RESTORE && parts_of(kept_size, head, head_size, cut_size, &p))
        join_parts(kept, kept_size, &p, cut, out);
}

bool zc_intel_binary_without_ir(const uint8_t *binary, size_t size)
{
    /* LLVM bitcode (OpenCL ELF), SPIR-V (both formats), vISA (zebin, 26.x). */
    static const uint32_t ir_sections[] = {0xff000003u, ZC_INTEL_SPIRV_SECTION, 0xff000015u};
    return zc_sections_all_empty(binary, size, ir_sections,
                                 sizeof(ir_sections) / sizeof(ir_sections[0]));
}
