/* Identifies a shared library on disk the way the dynamic loader would find
 * it, without loading it: loading IGC alone costs about 30 ms, and the key
 * only needs to know which file a later dlopen would map. */
#include "zecache/identity.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zecache/log.h"

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

/* The loader skips files built for another machine (e.g. i386 libraries in
 * /usr/lib32), and so must the search. MULTIARCH is Debian's directory name
 * for this machine's libraries. */
#if defined(__x86_64__)
#define NATIVE_ELF_MACHINE EM_X86_64
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define NATIVE_ELF_MACHINE EM_AARCH64
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__i386__)
#define NATIVE_ELF_MACHINE EM_386
#define MULTIARCH "i386-linux-gnu"
#endif

/* ld.so.conf include files nest; a loop must not hang the search. */
#define MAX_CONF_DEPTH 8

/* The parts of an ELF header the build-id search needs, for either class. */
typedef struct elf_info {
    unsigned char elf_class;
    uint16_t machine;
    uint64_t phoff, shoff;
    uint16_t phentsize, phnum, shentsize, shnum;
} elf_info;

typedef struct note_region {
    uint64_t offset, size, align;
} note_region;

static bool read_elf_header(int fd, elf_info *elf)
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
        *elf = (elf_info){ELFCLASS64,     h->e_machine, h->e_phoff,     h->e_shoff,
                          h->e_phentsize, h->e_phnum,   h->e_shentsize, h->e_shnum};
        return true;
    }
    if (elf_class == ELFCLASS32 && got >= (ssize_t)sizeof header.h32) {
        const Elf32_Ehdr *h = &header.h32;
        *elf = (elf_info){ELFCLASS32,     h->e_machine, h->e_phoff,     h->e_shoff,
                          h->e_phentsize, h->e_phnum,   h->e_shentsize, h->e_shnum};
        return true;
    }
    return false;
}

/* Whether one program or section header entry describes notes, and where. */
static bool entry_note_region(const elf_info *elf, bool sections, const unsigned char *entry,
                              note_region *region)
{
    if (elf->elf_class == ELFCLASS64 && sections) {
        Elf64_Shdr s;
        memcpy(&s, entry, sizeof s);
        *region = (note_region){s.sh_offset, s.sh_size, s.sh_addralign};
        return s.sh_type == SHT_NOTE;
    }
    if (elf->elf_class == ELFCLASS64) {
        Elf64_Phdr p;
        memcpy(&p, entry, sizeof p);
        *region = (note_region){p.p_offset, p.p_filesz, p.p_align};
        return p.p_type == PT_NOTE;
    }
    if (sections) {
        Elf32_Shdr s;
        memcpy(&s, entry, sizeof s);
        *region = (note_region){s.sh_offset, s.sh_size, s.sh_addralign};
        return s.sh_type == SHT_NOTE;
    }
    Elf32_Phdr p;
    memcpy(&p, entry, sizeof p);
    *region = (note_region){p.p_offset, p.p_filesz, p.p_align};
    return p.p_type == PT_NOTE;
}

static uint64_t align_up(uint64_t value, uint64_t align)
{
    return (value + align - 1) & ~(align - 1);
}

/* Walks the notes of one region reading only each note's header and name,
 * and the descriptor of the build-id note. Returns the build-id's size, 0 when
 * the region has none, -1 on a read error. */
static long find_build_id_note(int fd, const note_region *region, uint8_t *build_id, size_t max)
{
    /* Notes in 8-aligned regions (GNU property notes) are padded to 8. */
    uint64_t align = region->align == 8 ? 8 : 4;
    uint64_t position = 0;
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
        uint64_t next = align_up(desc_offset + note.header.n_descsz, align);
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
        position = next;
    }
    return 0;
}

/* Looks through the program headers (what a loaded library maps) or, in files
 * that have none, the section headers. */
static long read_build_id_from_table(int fd, const elf_info *elf, bool sections, uint8_t *build_id,
                                     size_t max)
{
    uint64_t table = sections ? elf->shoff : elf->phoff;
    uint16_t entry_size = sections ? elf->shentsize : elf->phentsize;
    uint16_t count = sections ? elf->shnum : elf->phnum;
    size_t needed = elf->elf_class == ELFCLASS64
                        ? (sections ? sizeof(Elf64_Shdr) : sizeof(Elf64_Phdr))
                        : (sections ? sizeof(Elf32_Shdr) : sizeof(Elf32_Phdr));
    if (count > 0 && entry_size < needed)
        return -1;
    for (uint16_t i = 0; i < count; i++) {
        unsigned char entry[sizeof(Elf64_Shdr)];
        if (pread(fd, entry, needed, (off_t)(table + (uint64_t)i * entry_size)) != (ssize_t)needed)
            return -1;
        note_region region;
        if (!entry_note_region(elf, sections, entry, &region))
            continue;
        long found = find_build_id_note(fd, &region, build_id, max);
        if (found != 0)
            return found;
    }
    return 0;
}

static long read_build_id_fd(int fd, const elf_info *elf, uint8_t *build_id, size_t max)
{
    return read_build_id_from_table(fd, elf, elf->phnum == 0, build_id, max);
}

long zc_elf_read_build_id(const char *path, uint8_t *build_id, size_t max)
{
    if (path == NULL || (build_id == NULL && max > 0))
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    elf_info elf;
    long size = read_elf_header(fd, &elf) ? read_build_id_fd(fd, &elf, build_id, max) : -1;
    close(fd);
    return size;
}

static bool elf_is_native(const elf_info *elf)
{
#ifdef NATIVE_ELF_MACHINE
    if (elf->machine != NATIVE_ELF_MACHINE)
        return false;
#endif
    return elf->elf_class == NATIVE_ELF_CLASS;
}

static void set_name(zc_library_identity *identity, const char *name)
{
    memset(identity, 0, sizeof *identity);
    snprintf(identity->name, sizeof identity->name, "%s", name);
}

/* Describes the file at path if it is a library this process could load;
 * identity is written only on success. */
static zc_status describe(const char *path, const char *name, zc_library_identity *identity)
{
    zc_library_identity found;
    set_name(&found, name);
    if (realpath(path, found.path) == NULL)
        return ZC_MISS;
    int fd = open(found.path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ZC_MISS;
    struct stat st;
    elf_info elf;
    long build_id_size = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read_elf_header(fd, &elf) &&
        elf_is_native(&elf))
        build_id_size = read_build_id_fd(fd, &elf, found.build_id, ZC_BUILD_ID_MAX);
    close(fd);
    if (build_id_size < 0)
        return ZC_MISS;
    /* A longer id is cut to ZC_BUILD_ID_MAX: its prefix still names the build. */
    found.build_id_size =
        (size_t)build_id_size < ZC_BUILD_ID_MAX ? (size_t)build_id_size : ZC_BUILD_ID_MAX;
    found.size = (uint64_t)st.st_size;
    found.mtime_sec = st.st_mtim.tv_sec;
    found.mtime_nsec = st.st_mtim.tv_nsec;
    *identity = found;
    return ZC_OK;
}

zc_status zc_library_identity_of_path(const char *path, zc_library_identity *identity)
{
    if (path == NULL || identity == NULL)
        return ZC_ERR_INVALID_ARG;
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    if (strlen(name) > NAME_MAX)
        return ZC_ERR_INVALID_ARG;
    set_name(identity, name);
    return describe(path, name, identity);
}

/* Tries name in the directory given by its first dir_length bytes (an empty
 * directory means the current one, as for the loader). */
static bool try_directory(const char *dir, size_t dir_length, zc_library_identity *identity)
{
    char path[PATH_MAX];
    int length = dir_length == 0
                     ? snprintf(path, sizeof path, "./%s", identity->name)
                     : snprintf(path, sizeof path, "%.*s/%s", (int)dir_length, dir, identity->name);
    if (length < 0 || (size_t)length >= sizeof path)
        return false;
    return describe(path, identity->name, identity) == ZC_OK;
}

/* LD_LIBRARY_PATH separates directories with ':' or ';'; the loader ignores
 * it when empty. */
static bool search_path_list(const char *list, zc_library_identity *identity)
{
    if (list[0] == '\0')
        return false;
    while (list != NULL) {
        size_t length = strcspn(list, ":;");
        if (try_directory(list, length, identity))
            return true;
        list = list[length] ? list + length + 1 : NULL;
    }
    return false;
}

static bool search_conf_file(const char *conf_path, int depth, zc_library_identity *identity);

/* Whether line starts with keyword followed by white space. */
static bool starts_with_keyword(const char *line, const char *keyword)
{
    size_t length = strlen(keyword);
    return strncmp(line, keyword, length) == 0 && (line[length] == ' ' || line[length] == '\t');
}

/* An include pattern relative to a conf file is relative to that file's
 * directory, as ldconfig reads it. */
static bool search_conf_include(const char *conf_path, const char *pattern, int depth,
                                zc_library_identity *identity)
{
    char full[PATH_MAX];
    if (pattern[0] == '/') {
        snprintf(full, sizeof full, "%s", pattern);
    } else {
        char conf_copy[PATH_MAX];
        snprintf(conf_copy, sizeof conf_copy, "%s", conf_path);
        snprintf(full, sizeof full, "%s/%s", dirname(conf_copy), pattern);
    }
    glob_t matches;
    if (glob(full, 0, NULL, &matches) != 0)
        return false;
    bool found = false;
    for (size_t i = 0; i < matches.gl_pathc && !found; i++)
        found = search_conf_file(matches.gl_pathv[i], depth + 1, identity);
    globfree(&matches);
    return found;
}

/* One line of an ld.so.conf file: a directory, `include <globs>`, or
 * `hwcap ...` (obsolete, ignored). */
static bool search_conf_line(const char *conf_path, char *line, int depth,
                             zc_library_identity *identity)
{
    line[strcspn(line, "#\n")] = '\0';
    line += strspn(line, " \t");
    size_t length = strlen(line);
    while (length > 0 && strchr(" \t/", line[length - 1]) != NULL)
        line[--length] = '\0';
    if (length == 0 || starts_with_keyword(line, "hwcap"))
        return false;
    if (!starts_with_keyword(line, "include"))
        return try_directory(line, length, identity);
    char *rest = line + 8;
    for (char *pattern; (pattern = strsep(&rest, " \t")) != NULL;)
        if (pattern[0] != '\0' && search_conf_include(conf_path, pattern, depth, identity))
            return true;
    return false;
}

static bool search_conf_file(const char *conf_path, int depth, zc_library_identity *identity)
{
    if (depth > MAX_CONF_DEPTH)
        return false;
    FILE *conf = fopen(conf_path, "re");
    if (conf == NULL)
        return false;
    char *line = NULL;
    size_t capacity = 0;
    bool found = false;
    while (!found && getline(&line, &capacity, conf) >= 0)
        found = search_conf_line(conf_path, line, depth, identity);
    free(line);
    fclose(conf);
    return found;
}

static bool search_default_dirs(zc_library_identity *identity)
{
    static const char *const dirs[] = {
#ifdef MULTIARCH
        "/lib/" MULTIARCH,
        "/usr/lib/" MULTIARCH,
#endif
        "/lib",
        "/usr/lib",
    };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (try_directory(dirs[i], strlen(dirs[i]), identity))
            return true;
    return false;
}

zc_status zc_library_identity_find_in(const char *name, const char *ld_library_path,
                                      const char *ld_so_conf, zc_library_identity *identity)
{
    if (name == NULL || identity == NULL || name[0] == '\0' || strlen(name) > NAME_MAX)
        return ZC_ERR_INVALID_ARG;
    /* A name with a slash is a path to the loader too. */
    if (strchr(name, '/') != NULL)
        return zc_library_identity_of_path(name, identity);
    set_name(identity, name);
    bool found = (ld_library_path != NULL && search_path_list(ld_library_path, identity)) ||
                 (ld_so_conf != NULL && search_conf_file(ld_so_conf, 0, identity)) ||
                 search_default_dirs(identity);
    if (found)
        return ZC_OK;
    set_name(identity, name);
    zc_log_info("library %s not found", name);
    return ZC_MISS;
}

zc_status zc_library_identity_find(const char *name, zc_library_identity *identity)
{
    /* secure_getenv: the loader ignores LD_LIBRARY_PATH in set-user-ID
     * programs, and so do we. */
    return zc_library_identity_find_in(name, secure_getenv("LD_LIBRARY_PATH"), "/etc/ld.so.conf",
                                       identity);
}
