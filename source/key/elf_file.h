/* Reading the few parts of an ELF file that identify a library and steer the
 * dynamic linker's search: its header, GNU build-id note and dynamic section.
 * Files are read with pread, never mapped or loaded; every offset and size in
 * a file is bounds-checked, so any file can be given. Internal to the core. */
#ifndef ZECACHE_ELF_FILE_H
#define ZECACHE_ELF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest DT_RPATH / DT_RUNPATH / DT_SONAME string kept; longer ones are
 * treated as absent (no real library has one). */
#define ZC_ELF_STRING_MAX 4096

/* The parts of an ELF header the readers need, for either class. */
typedef struct zc_elf_header {
    unsigned char elf_class;
    uint16_t machine;
    uint64_t phoff, shoff;
    uint16_t phentsize, phnum, shentsize, shnum;
} zc_elf_header;

/* What the dynamic linker reads from a library's dynamic section. */
typedef struct zc_elf_dynamic {
    bool has_soname, has_rpath, has_runpath;
    bool nodeflib; /* DF_1_NODEFLIB: no ld.so.cache, no default directories */
    char soname[ZC_ELF_STRING_MAX];
    char rpath[ZC_ELF_STRING_MAX];
    char runpath[ZC_ELF_STRING_MAX];
} zc_elf_dynamic;

/* Reads the header of the ELF file open at fd; false when it is not ELF of
 * this machine's byte order. */
bool zc_elf_read_header(int fd, zc_elf_header *header);

/* Whether a library with this header could be loaded by this process (same
 * class and machine), as the loader skips e.g. i386 files in /usr/lib32. */
bool zc_elf_is_native(const zc_elf_header *header);

/* The GNU build-id of the file at fd, up to max bytes into build_id. Returns
 * the note's size, 0 when there is none, -1 on a read error. */
long zc_elf_read_build_id_fd(int fd, const zc_elf_header *header, uint8_t *build_id, size_t max);

/* The same for a path; -1 also when the file is not a readable ELF file. */
long zc_elf_read_build_id(const char *path, uint8_t *build_id, size_t max);

/* The dynamic section of the file at path. false when the file is not a
 * native ELF file or its dynamic section cannot be read; a file without one
 * gives an empty description. */
bool zc_elf_read_dynamic(const char *path, zc_elf_dynamic *dynamic);

/* Calls each with every DT_NEEDED name of the file at path, in order,
 * until it returns false. False when each did, or the file is not a native
 * ELF file or its dynamic section (or a name) cannot be read. */
typedef bool (*zc_elf_needed_fn)(void *context, const char *name);
bool zc_elf_read_needed(const char *path, zc_elf_needed_fn each, void *context);

#endif
