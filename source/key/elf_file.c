/* ELF header, build-id note and dynamic section, read with pread from files
 * that may be anything: every offset and size taken from the file is checked
 * against what was read before it is used. */
#include "elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ELF_DATA ELFDATA2LSB
#else
#define NATIVE_ELF_DATA ELFDATA2MSB
#endif

#if defined(__LP64__)
#define NATIVE_ELF_CLASS ELFCLASS64
#else
#define NATIVE_ELF_CLASS ELFCLASS32
#endif

#if defined(__x86_64__)
#define NATIVE_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_ELF_MACHINE EM_AARCH64
#elif defined(__i386__)
#define NATIVE_ELF_MACHINE EM_386
#endif

/* One program or section header, whichever the class. */
typedef struct table_entry {
    uint32_t type;
    uint64_t offset, vaddr, size, align;
} table_entry;

bool zc_elf_read_header(int fd, zc_elf_header *elf)
{
    union {
        unsigned char ident[EI_NIDENT];
        Elf32_Ehdr h32;
        Elf64_Ehdr h64;
    } header;
    ssize_t got = pread(fd, &header, sizeof header, 0);
    if (got < EI_NIDENT || memcmp(header.ident, ELFMAG, SELFMAG) != 0 ||
        header.ident[EI_DATA] != NATIVE_ELF_DATA)
        return false;
    unsigned char elf_class = header.ident[EI_CLASS];
    if (elf_class == ELFCLASS64 && got >= (ssize_t)sizeof header.h64) {
        const Elf64_Ehdr *h = &header.h64;
        *elf = (zc_elf_header){ELFCLASS64,     h->e_machine, h->e_phoff,     h->e_shoff,
                               h->e_phentsize, h->e_phnum,   h->e_shentsize, h->e_shnum};
        return true;
    }
    if (elf_class == ELFCLASS32 && got >= (ssize_t)sizeof header.h32) {
        const Elf32_Ehdr *h = &header.h32;
        *elf = (zc_elf_header){ELFCLASS32,     h->e_machine, h->e_phoff,     h->e_shoff,
                               h->e_phentsize, h->e_phnum,   h->e_shentsize, h->e_shnum};
        return true;
    }
    return false;
}

bool zc_elf_is_native(const zc_elf_header *elf)
{
#ifdef NATIVE_ELF_MACHINE
    if (elf->machine != NATIVE_ELF_MACHINE)
        return false;
#endif
    return elf->elf_class == NATIVE_ELF_CLASS;
}

static table_entry entry_of_section(const zc_elf_header *elf, const unsigned char *raw)
{
    if (elf->elf_class == ELFCLASS64) {
        Elf64_Shdr s;
        memcpy(&s, raw, sizeof s);
        return (table_entry){s.sh_type, s.sh_offset, s.sh_addr, s.sh_size, s.sh_addralign};
    }
    Elf32_Shdr s;
    memcpy(&s, raw, sizeof s);
    return (table_entry){s.sh_type, s.sh_offset, s.sh_addr, s.sh_size, s.sh_addralign};
}

static table_entry entry_of_segment(const zc_elf_header *elf, const unsigned char *raw)
{
    if (elf->elf_class == ELFCLASS64) {
        Elf64_Phdr p;
        memcpy(&p, raw, sizeof p);
        return (table_entry){p.p_type, p.p_offset, p.p_vaddr, p.p_filesz, p.p_align};
    }
    Elf32_Phdr p;
    memcpy(&p, raw, sizeof p);
    return (table_entry){p.p_type, p.p_offset, p.p_vaddr, p.p_filesz, p.p_align};
}

/* Reads entry index of the program header table (or, with sections, of the
 * section header table). */
static bool read_table_entry(int fd, const zc_elf_header *elf, bool sections, uint16_t index,
                             table_entry *entry)
{
    uint64_t table = sections ? elf->shoff : elf->phoff;
    uint16_t entry_size = sections ? elf->shentsize : elf->phentsize;
    size_t needed = elf->elf_class == ELFCLASS64
                        ? (sections ? sizeof(Elf64_Shdr) : sizeof(Elf64_Phdr))
                        : (sections ? sizeof(Elf32_Shdr) : sizeof(Elf32_Phdr));
    unsigned char raw[sizeof(Elf64_Shdr)];
    if (entry_size < needed || table > INT64_MAX - (uint64_t)index * entry_size ||
        pread(fd, raw, needed, (off_t)(table + (uint64_t)index * entry_size)) != (ssize_t)needed)
        return false;
    *entry = sections ? entry_of_section(elf, raw) : entry_of_segment(elf, raw);
    return true;
}

static uint64_t align_up(uint64_t value, uint64_t align)
{
    return (value + align - 1) & ~(align - 1);
}

/* Walks the notes of one region reading only each note's header and name,
 * and the descriptor of the build-id note. Returns the build-id's size, 0 when
 * the region has none, -1 on a read error. */
static long find_build_id_note(int fd, const table_entry *region, uint8_t *build_id, size_t max)
{
    /* Notes in 8-aligned regions (GNU property notes) are padded to 8. */
    uint64_t align = region->align == 8 ? 8 : 4;
    uint64_t position = 0;
    if (region->offset > INT64_MAX - region->size)
        return 0;
    while (position + sizeof(Elf64_Nhdr) <= region->size) {
        struct {
            Elf64_Nhdr header;
            char name[4];
        } note;
        ssize_t got = pread(fd, &note, sizeof note, (off_t)(region->offset + position));
        if (got < (ssize_t)sizeof note.header)
            return -1;
        uint64_t desc_offset =
            align_up(position + sizeof note.header + note.header.n_namesz, align);
        if (desc_offset + note.header.n_descsz > region->size)
            return 0;
        if (note.header.n_type == NT_GNU_BUILD_ID && note.header.n_namesz == 4 &&
            got == (ssize_t)sizeof note && memcmp(note.name, "GNU", 4) == 0) {
            size_t wanted = note.header.n_descsz < max ? note.header.n_descsz : max;
            if (pread(fd, build_id, wanted, (off_t)(region->offset + desc_offset)) !=
                (ssize_t)wanted)
                return -1;
            return (long)note.header.n_descsz;
        }
        position = align_up(desc_offset + note.header.n_descsz, align);
    }
    return 0;
}

/* The program headers (what a loaded library maps) or, in files that have
 * none, the section headers. */
long zc_elf_read_build_id_fd(int fd, const zc_elf_header *elf, uint8_t *build_id, size_t max)
{
    bool sections = elf->phnum == 0;
    uint16_t count = sections ? elf->shnum : elf->phnum;
    for (uint16_t i = 0; i < count; i++) {
        table_entry entry;
        if (!read_table_entry(fd, elf, sections, i, &entry))
            return -1;
        if (entry.type != (sections ? SHT_NOTE : PT_NOTE))
            continue;
        long found = find_build_id_note(fd, &entry, build_id, max);
        if (found != 0)
            return found;
    }
    return 0;
}

long zc_elf_read_build_id(const char *path, uint8_t *build_id, size_t max)
{
    if (path == NULL || (build_id == NULL && max > 0))
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    zc_elf_header elf;
    long size =
        zc_elf_read_header(fd, &elf) ? zc_elf_read_build_id_fd(fd, &elf, build_id, max) : -1;
    close(fd);
    return size;
}

/* ---- dynamic section ---- */

/* Where the dynamic section's strings are and which of them are wanted. */
typedef struct dynamic_refs {
    uint64_t strtab_vaddr, strsz;
    bool has_strtab;
    bool has[3];
    uint64_t offset[3]; /* soname, rpath, runpath: offsets into the string table */
} dynamic_refs;

enum { REF_SONAME, REF_RPATH, REF_RUNPATH };

static void note_dynamic_entry(int64_t tag, uint64_t value, dynamic_refs *refs, bool *nodeflib)
{
    int ref = tag == DT_SONAME    ? REF_SONAME
              : tag == DT_RPATH   ? REF_RPATH
              : tag == DT_RUNPATH ? REF_RUNPATH
                                  : -1;
    if (ref >= 0) {
        refs->has[ref] = true;
        refs->offset[ref] = value;
    } else if (tag == DT_STRTAB) {
        refs->has_strtab = true;
        refs->strtab_vaddr = value;
    } else if (tag == DT_STRSZ) {
        refs->strsz = value;
    } else if (tag == DT_FLAGS_1) {
        *nodeflib = (value & DF_1_NODEFLIB) != 0;
    }
}

/* One entry of the PT_DYNAMIC segment at byte at of it: false at a read
 * error. */
static bool read_dynamic_entry(int fd, const zc_elf_header *elf, const table_entry *segment,
                               uint64_t at, int64_t *tag, uint64_t *value)
{
    size_t entry_size = elf->elf_class == ELFCLASS64 ? sizeof(Elf64_Dyn) : sizeof(Elf32_Dyn);
    unsigned char raw[sizeof(Elf64_Dyn)];
    if (pread(fd, raw, entry_size, (off_t)(segment->offset + at)) != (ssize_t)entry_size)
        return false;
    if (elf->elf_class == ELFCLASS64) {
        Elf64_Dyn d;
        memcpy(&d, raw, sizeof d);
        *tag = d.d_tag;
        *value = d.d_un.d_val;
    } else {
        Elf32_Dyn d;
        memcpy(&d, raw, sizeof d);
        *tag = d.d_tag;
        *value = d.d_un.d_val;
    }
    return true;
}

/* Calls each with the entries of the PT_DYNAMIC segment up to DT_NULL,
 * until it returns false; false then, or at a read error. */
typedef bool (*dynamic_entry_fn)(void *context, int64_t tag, uint64_t value);

static bool each_dynamic_entry(int fd, const zc_elf_header *elf, const table_entry *segment,
                               dynamic_entry_fn each, void *context)
{
    size_t entry_size = elf->elf_class == ELFCLASS64 ? sizeof(Elf64_Dyn) : sizeof(Elf32_Dyn);
    if (segment->offset > INT64_MAX - segment->size)
        return false;
    for (uint64_t at = 0; at + entry_size <= segment->size; at += entry_size) {
        int64_t tag;
        uint64_t value;
        if (!read_dynamic_entry(fd, elf, segment, at, &tag, &value))
            return false;
        if (tag == DT_NULL)
            break;
        if (!each(context, tag, value))
            return false;
    }
    return true;
}

typedef struct noted_refs {
    dynamic_refs *refs;
    bool *nodeflib;
} noted_refs;

static bool note_entry(void *context, int64_t tag, uint64_t value)
{
    noted_refs *noted = context;
    note_dynamic_entry(tag, value, noted->refs, noted->nodeflib);
    return true;
}

static bool file_offset_of(int fd, const zc_elf_header *elf, uint64_t vaddr, uint64_t *offset);

/* The PT_DYNAMIC segment, what it names and the file offset of its string
 * table: false at a read error; *strings false when there is no segment or
 * no string table (nothing named). */
static bool read_dynamic_refs(int fd, const zc_elf_header *elf, table_entry *segment,
                              dynamic_refs *refs, bool *nodeflib, uint64_t *strtab, bool *strings)
{
    *strings = false;
    for (uint16_t i = 0; i < elf->phnum; i++) {
        if (!read_table_entry(fd, elf, false, i, segment))
            return false;
        if (segment->type != PT_DYNAMIC)
            continue;
        noted_refs noted = {refs, nodeflib};
        if (!each_dynamic_entry(fd, elf, segment, note_entry, &noted))
            return false;
        *strings = refs->has_strtab && file_offset_of(fd, elf, refs->strtab_vaddr, strtab);
        return true;
    }
    return true;
}

/* The file offset of a virtual address, through the PT_LOAD segment holding
 * it; false when no segment of the file holds it. */
static bool file_offset_of(int fd, const zc_elf_header *elf, uint64_t vaddr, uint64_t *offset)
{
    for (uint16_t i = 0; i < elf->phnum; i++) {
        table_entry entry;
        if (!read_table_entry(fd, elf, false, i, &entry))
            return false;
        if (entry.type == PT_LOAD && vaddr >= entry.vaddr && vaddr - entry.vaddr < entry.size &&
            entry.offset <= INT64_MAX - (vaddr - entry.vaddr)) {
            *offset = entry.offset + (vaddr - entry.vaddr);
            return true;
        }
    }
    return false;
}

/* Copies the NUL-terminated string at offset of the string table into out;
 * false when it does not end within the table or within out. */
static bool read_dynamic_string(int fd, uint64_t strtab, uint64_t strsz, uint64_t offset,
                                char out[ZC_ELF_STRING_MAX])
{
    if (offset >= strsz || strtab > INT64_MAX - offset)
        return false;
    uint64_t available = strsz - offset;
    size_t wanted = available < ZC_ELF_STRING_MAX ? (size_t)available : ZC_ELF_STRING_MAX;
    ssize_t got = pread(fd, out, wanted, (off_t)(strtab + offset));
    if (got <= 0)
        return false;
    return memchr(out, '\0', (size_t)got) != NULL;
}

static bool read_dynamic_fd(int fd, const zc_elf_header *elf, zc_elf_dynamic *dynamic)
{
    table_entry segment;
    dynamic_refs refs = {0};
    uint64_t strtab = 0;
    bool strings;
    if (!read_dynamic_refs(fd, elf, &segment, &refs, &dynamic->nodeflib, &strtab, &strings))
        return false;
    char *out[3] = {dynamic->soname, dynamic->rpath, dynamic->runpath};
    bool *has[3] = {&dynamic->has_soname, &dynamic->has_rpath, &dynamic->has_runpath};
    for (int ref = 0; strings && ref < 3; ref++)
        *has[ref] = refs.has[ref] &&
                    read_dynamic_string(fd, strtab, refs.strsz, refs.offset[ref], out[ref]);
    return true;
}

bool zc_elf_read_dynamic(const char *path, zc_elf_dynamic *dynamic)
{
    memset(dynamic, 0, sizeof *dynamic);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    zc_elf_header elf;
    bool read = zc_elf_read_header(fd, &elf) && zc_elf_is_native(&elf) &&
                read_dynamic_fd(fd, &elf, dynamic);
    close(fd);
    if (!read)
        memset(dynamic, 0, sizeof *dynamic);
    return read;
}

/* ---- needed libraries ---- */

typedef struct needed_names {
    int fd;
    uint64_t strtab, strsz;
    zc_elf_needed_fn each;
    void *context;
} needed_names;

static bool pass_needed(void *context, int64_t tag, uint64_t value)
{
    needed_names *needed = context;
    char name[ZC_ELF_STRING_MAX];
    return tag != DT_NEEDED ||
           (read_dynamic_string(needed->fd, needed->strtab, needed->strsz, value, name) &&
            needed->each(needed->context, name));
}

static bool read_needed_fd(int fd, const zc_elf_header *elf, zc_elf_needed_fn each, void *context)
{
    table_entry segment;
    dynamic_refs refs = {0};
    bool nodeflib = false, strings;
    needed_names needed = {fd, 0, 0, each, context};
    if (!read_dynamic_refs(fd, elf, &segment, &refs, &nodeflib, &needed.strtab, &strings))
        return false;
    needed.strsz = refs.strsz;
    return !strings || each_dynamic_entry(fd, elf, &segment, pass_needed, &needed);
}

bool zc_elf_read_needed(const char *path, zc_elf_needed_fn each, void *context)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    zc_elf_header elf;
    bool read = zc_elf_read_header(fd, &elf) && zc_elf_is_native(&elf) &&
                read_needed_fd(fd, &elf, each, context);
    close(fd);
    return read;
}
