/* Library identity: the loader's search order, without loading, and ELF
 * build-ids as readelf reports them. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elf.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include "../source/key/compiler_identity_internal.h"
#include "../source/key/elf_file.h"
#include "../source/key/ld_cache.h"
#include "../source/key/library_search.h"
#include "zecache/identity.h"

#define SYSTEM_LIB_DIR T_SYSTEM_LIB_DIR
#define SAMPLE_LIB SYSTEM_LIB_DIR "/libzstd.so.1"

static char temp_dir[] = "/tmp/zc_identity_XXXXXX";

static void make_temp_dir(void)
{
    cr_assert_not_null(mkdtemp(temp_dir));
}

static void remove_temp_dir(void)
{
    t_remove_tree(temp_dir);
}

TestSuite(identity, .init = make_temp_dir, .fini = remove_temp_dir);

static void temp_path(char *out, const char *relative)
{
    snprintf(out, PATH_MAX, "%s/%s", temp_dir, relative);
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    cr_assert_not_null(in, "cannot open %s", from);
    FILE *out = fopen(to, "wb");
    cr_assert_not_null(out, "cannot create %s", to);
    char buffer[65536];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, in)) > 0)
        cr_assert_eq(fwrite(buffer, 1, got, out), got);
    fclose(in);
    cr_assert_eq(fclose(out), 0);
}

/* The build-id as `readelf -n` prints it; returns its size in bytes. */
static size_t readelf_build_id(const char *path, uint8_t *out)
{
    char command[PATH_MAX + 32];
    snprintf(command, sizeof command, "readelf -n '%s'", path);
    FILE *pipe = popen(command, "r");
    cr_assert_not_null(pipe);
    char line[1024];
    size_t size = 0;
    while (fgets(line, sizeof line, pipe) != NULL) {
        const char *hex = strstr(line, "Build ID: ");
        if (hex == NULL)
            continue;
        hex += strlen("Build ID: ");
        unsigned byte;
        while (sscanf(hex, "%2x", &byte) == 1) {
            out[size++] = (uint8_t)byte;
            hex += 2;
        }
    }
    pclose(pipe);
    cr_assert_gt(size, 0, "readelf found no build-id in %s", path);
    return size;
}

static void assert_identity_of(const zc_library_identity *identity, const char *name,
                               const char *file)
{
    char resolved[PATH_MAX];
    cr_assert_not_null(realpath(file, resolved));
    cr_assert_str_eq(identity->name, name);
    cr_assert_str_eq(identity->path, resolved);
    struct stat st;
    cr_assert_eq(stat(resolved, &st), 0);
    cr_assert_eq(identity->size, (uint64_t)st.st_size);
    cr_assert_eq(identity->mtime_sec, st.st_mtim.tv_sec);
    cr_assert_eq(identity->mtime_nsec, st.st_mtim.tv_nsec);
    uint8_t expected[ZC_BUILD_ID_MAX];
    size_t expected_size = readelf_build_id(resolved, expected);
    cr_assert_eq(identity->build_id_size, expected_size);
    cr_assert_arr_eq(identity->build_id, expected, expected_size);
}

/* ---- synthetic ELF files ---- */

static uint64_t align_up(uint64_t value, uint64_t align)
{
    return (value + align - 1) & ~(align - 1);
}

/* Appends one note at out + *used, laid out as readelf expects. */
static void put_note(uint8_t *out, size_t *used, const char *name, uint32_t type, const void *desc,
                     uint32_t desc_size, uint64_t align)
{
    Elf64_Nhdr header = {(uint32_t)strlen(name) + 1, desc_size, type};
    memcpy(out + *used, &header, sizeof header);
    memcpy(out + *used + sizeof header, name, header.n_namesz);
    size_t desc_offset = align_up(*used + sizeof header + header.n_namesz, align);
    memcpy(out + desc_offset, desc, desc_size);
    *used = align_up(desc_offset + desc_size, align);
}

/* A minimal ELF64 file whose notes sit in one PT_NOTE segment or, with
 * in_sections, one SHT_NOTE section (and no program headers). */
static void write_elf(const char *path, uint16_t machine, bool in_sections, uint64_t align,
                      const uint8_t *notes, size_t notes_size)
{
    uint8_t file[1024] = {0};
    const uint64_t notes_offset = 256;
    Elf64_Ehdr header = {
        .e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT},
        .e_type = in_sections ? ET_REL : ET_DYN,
        .e_machine = machine,
        .e_version = EV_CURRENT,
        .e_ehsize = sizeof(Elf64_Ehdr),
    };
    if (in_sections) {
        header.e_shoff = sizeof header;
        header.e_shentsize = sizeof(Elf64_Shdr);
        header.e_shnum = 2;
        Elf64_Shdr note = {.sh_type = SHT_NOTE,
                           .sh_offset = notes_offset,
                           .sh_size = notes_size,
                           .sh_addralign = align};
        memcpy(file + sizeof header + sizeof(Elf64_Shdr), &note, sizeof note);
    } else if (notes_size > 0) {
        header.e_phoff = sizeof header;
        header.e_phentsize = sizeof(Elf64_Phdr);
        header.e_phnum = 1;
        Elf64_Phdr note = {
            .p_type = PT_NOTE, .p_offset = notes_offset, .p_filesz = notes_size, .p_align = align};
        memcpy(file + sizeof header, &note, sizeof note);
    }
    memcpy(file, &header, sizeof header);
    if (notes_size > 0)
        memcpy(file + notes_offset, notes, notes_size);
    t_write_file(path, file, notes_offset + notes_size);
}

static const uint8_t sample_id[20] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                      11, 12, 13, 14, 15, 16, 17, 18, 19, 20};

/* ---- zc_elf_read_build_id ---- */

Test(identity, build_id_of_a_system_library_matches_readelf)
{
    uint8_t expected[ZC_BUILD_ID_MAX], found[ZC_BUILD_ID_MAX];
    size_t expected_size = readelf_build_id(SAMPLE_LIB, expected);
    cr_assert_eq(zc_elf_read_build_id(SAMPLE_LIB, found, sizeof found), (long)expected_size);
    cr_assert_arr_eq(found, expected, expected_size);
}

Test(identity, build_id_of_this_test_matches_readelf)
{
    char self[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(length, 0);
    self[length] = '\0';
    uint8_t expected[ZC_BUILD_ID_MAX], found[ZC_BUILD_ID_MAX];
    size_t expected_size = readelf_build_id(self, expected);
    cr_assert_eq(zc_elf_read_build_id(self, found, sizeof found), (long)expected_size);
    cr_assert_arr_eq(found, expected, expected_size);
}

Test(identity, build_id_after_another_note_in_a_section)
{
    uint8_t notes[128];
    size_t used = 0;
    put_note(notes, &used, "Xen", NT_GNU_BUILD_ID, "skipped!", 8, 4);
    put_note(notes, &used, "GNU", NT_GNU_ABI_TAG, "\0\0\0\0\3\0\0\0\2\0\0\0\0\0\0\0", 16, 4);
    put_note(notes, &used, "GNU", NT_GNU_BUILD_ID, sample_id, 16, 4);
    char path[PATH_MAX];
    temp_path(path, "sections.o");
    write_elf(path, EM_X86_64, true, 4, notes, used);
    uint8_t found[ZC_BUILD_ID_MAX];
    cr_assert_eq(zc_elf_read_build_id(path, found, sizeof found), 16);
    cr_assert_arr_eq(found, sample_id, 16);
}

Test(identity, build_id_in_an_eight_aligned_segment)
{
    uint8_t notes[128];
    size_t used = 0;
    put_note(notes, &used, "GNU", NT_GNU_PROPERTY_TYPE_0, "\1\0\0\xc0\4\0\0\0\3\0\0\0", 12, 8);
    put_note(notes, &used, "GNU", NT_GNU_BUILD_ID, sample_id, 20, 8);
    char path[PATH_MAX];
    temp_path(path, "aligned.so");
    write_elf(path, EM_X86_64, false, 8, notes, used);
    uint8_t found[ZC_BUILD_ID_MAX];
    cr_assert_eq(zc_elf_read_build_id(path, found, sizeof found), 20);
    cr_assert_arr_eq(found, sample_id, 20);
}

Test(identity, build_id_is_cut_to_the_buffer)
{
    uint8_t notes[64];
    size_t used = 0;
    put_note(notes, &used, "GNU", NT_GNU_BUILD_ID, sample_id, 20, 4);
    char path[PATH_MAX];
    temp_path(path, "cut.so");
    write_elf(path, EM_X86_64, false, 4, notes, used);
    uint8_t found[8];
    memset(found, 0xee, sizeof found);
    cr_assert_eq(zc_elf_read_build_id(path, found, 4), 20);
    cr_assert_arr_eq(found, sample_id, 4);
    const uint8_t untouched[4] = {0xee, 0xee, 0xee, 0xee};
    cr_assert_arr_eq(found + 4, untouched, 4);
}

Test(identity, elf_without_notes_has_no_build_id)
{
    char path[PATH_MAX];
    temp_path(path, "plain.so");
    write_elf(path, EM_X86_64, false, 4, NULL, 0);
    uint8_t found[ZC_BUILD_ID_MAX];
    cr_assert_eq(zc_elf_read_build_id(path, found, sizeof found), 0);
}

Test(identity, note_larger_than_its_segment_is_ignored)
{
    uint8_t notes[64];
    size_t used = 0;
    put_note(notes, &used, "GNU", NT_GNU_BUILD_ID, sample_id, 20, 4);
    Elf64_Nhdr *header = (Elf64_Nhdr *)notes;
    header->n_descsz = 0x7ffffff0;
    char path[PATH_MAX];
    temp_path(path, "broken.so");
    write_elf(path, EM_X86_64, false, 4, notes, used);
    uint8_t found[ZC_BUILD_ID_MAX];
    cr_assert_eq(zc_elf_read_build_id(path, found, sizeof found), 0);
}

Test(identity, files_that_are_not_elf)
{
    char text[PATH_MAX], empty[PATH_MAX], missing[PATH_MAX];
    temp_path(text, "text.so");
    temp_path(empty, "empty.so");
    temp_path(missing, "missing.so");
    t_write_file(text, "this is not an ELF file, just text", 34);
    t_write_file(empty, "", 0);
    uint8_t found[ZC_BUILD_ID_MAX];
    cr_assert_eq(zc_elf_read_build_id(text, found, sizeof found), -1);
    cr_assert_eq(zc_elf_read_build_id(empty, found, sizeof found), -1);
    cr_assert_eq(zc_elf_read_build_id(missing, found, sizeof found), -1);
    cr_assert_eq(zc_elf_read_build_id(temp_dir, found, sizeof found), -1);
    cr_assert_eq(zc_elf_read_build_id(NULL, found, sizeof found), -1);
}

/* ---- synthetic libraries with a dynamic section ---- */

typedef struct dyn_spec {
    const char *soname, *rpath, *runpath, *needed;
    bool nodeflib;
    uint8_t id_byte; /* tells copies apart through their build-id */
} dyn_spec;

/* A minimal loadable-looking ELF64 shared object: one PT_LOAD over the whole
 * file, a PT_DYNAMIC and a PT_NOTE with a build-id, as ldconfig and the
 * search read them. */
static void write_library(const char *path, const dyn_spec *spec)
{
    enum { PH_OFF = 64, NOTE_OFF = 256, DYN_OFF = 512, STR_OFF = 1024, SIZE = 2048 };
    uint8_t file[SIZE] = {0};
    char strings[512] = "";
    size_t strings_used = 1;
    Elf64_Dyn dyn[8];
    int n = 0;
    const char *values[4] = {spec->soname, spec->rpath, spec->runpath, spec->needed};
    const int64_t tags[4] = {DT_SONAME, DT_RPATH, DT_RUNPATH, DT_NEEDED};
    for (int i = 0; i < 4; i++) {
        if (values[i] == NULL)
            continue;
        dyn[n++] = (Elf64_Dyn){tags[i], {strings_used}};
        memcpy(strings + strings_used, values[i], strlen(values[i]) + 1);
        strings_used += strlen(values[i]) + 1;
    }
    dyn[n++] = (Elf64_Dyn){DT_STRTAB, {STR_OFF + 0x1000}};
    dyn[n++] = (Elf64_Dyn){DT_STRSZ, {strings_used}};
    if (spec->nodeflib)
        dyn[n++] = (Elf64_Dyn){DT_FLAGS_1, {DF_1_NODEFLIB}};
    dyn[n++] = (Elf64_Dyn){DT_NULL, {0}};
    Elf64_Ehdr header = {
        .e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT},
        .e_type = ET_DYN,
        .e_machine = EM_X86_64,
        .e_version = EV_CURRENT,
        .e_phoff = PH_OFF,
        .e_ehsize = sizeof(Elf64_Ehdr),
        .e_phentsize = sizeof(Elf64_Phdr),
        .e_phnum = 3,
    };
    uint8_t notes[64];
    size_t notes_used = 0;
    uint8_t id[20];
    memcpy(id, sample_id, sizeof id);
    id[0] = spec->id_byte;
    put_note(notes, &notes_used, "GNU", NT_GNU_BUILD_ID, id, 20, 4);
    Elf64_Phdr phdrs[3] = {
        {.p_type = PT_LOAD,
         .p_flags = PF_R,
         .p_offset = 0,
         .p_vaddr = 0x1000,
         .p_filesz = SIZE,
         .p_memsz = SIZE,
         .p_align = 0x1000},
        {.p_type = PT_DYNAMIC,
         .p_flags = PF_R,
         .p_offset = DYN_OFF,
         .p_vaddr = DYN_OFF + 0x1000,
         .p_filesz = (uint64_t)n * sizeof(Elf64_Dyn),
         .p_memsz = (uint64_t)n * sizeof(Elf64_Dyn),
         .p_align = 8},
        {.p_type = PT_NOTE,
         .p_flags = PF_R,
         .p_offset = NOTE_OFF,
         .p_vaddr = NOTE_OFF + 0x1000,
         .p_filesz = notes_used,
         .p_memsz = notes_used,
         .p_align = 4},
    };
    memcpy(file, &header, sizeof header);
    memcpy(file + PH_OFF, phdrs, sizeof phdrs);
    memcpy(file + NOTE_OFF, notes, notes_used);
    memcpy(file + DYN_OFF, dyn, (size_t)n * sizeof(Elf64_Dyn));
    memcpy(file + STR_OFF, strings, strings_used);
    t_write_file(path, file, SIZE);
}

/* temp_dir/relative, with its parent directories made. */
static const char *make_path(const char *relative)
{
    static char paths[8][PATH_MAX];
    static int next;
    char *path = paths[next++ % 8];
    temp_path(path, relative);
    for (char *slash = strchr(path + strlen(temp_dir) + 1, '/'); slash != NULL;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0700);
        *slash = '/';
    }
    return path;
}

/* A library called libzc_found.so.1 in temp_dir/dir, told apart by id. */
static void library_in(const char *dir, uint8_t id)
{
    char relative[PATH_MAX];
    snprintf(relative, sizeof relative, "%s/libzc_found.so.1", dir);
    write_library(make_path(relative), &(dyn_spec){.soname = "libzc_found.so.1", .id_byte = id});
}

static const char *const no_default_dirs[] = {NULL};

/* Searches libzc_found.so.1 and returns the build-id byte that tells which
 * copy was found (0 when none), with the step. */
static uint8_t found_copy(const zc_library_search *search, zc_search_step *step)
{
    zc_library_identity identity;
    zc_status status = zc_library_search_find(search, "libzc_found.so.1", &identity, step);
    if (status == ZC_MISS)
        return 0;
    cr_assert_eq(status, ZC_OK);
    cr_assert_str_eq(identity.name, "libzc_found.so.1");
    cr_assert_eq(identity.build_id_size, 20);
    return identity.build_id[0];
}

/* ---- zc_elf_read_dynamic ---- */

Test(identity, dynamic_section_of_a_synthetic_library)
{
    const char *path = make_path("dyn/libzc_dyn.so.1");
    write_library(path, &(dyn_spec){"libzc_dyn.so.1", "$ORIGIN/r", "/run:/x", NULL, true, 1});
    zc_elf_dynamic dynamic;
    cr_assert(zc_elf_read_dynamic(path, &dynamic));
    cr_assert(dynamic.has_soname && dynamic.has_rpath && dynamic.has_runpath && dynamic.nodeflib);
    cr_assert_str_eq(dynamic.soname, "libzc_dyn.so.1");
    cr_assert_str_eq(dynamic.rpath, "$ORIGIN/r");
    cr_assert_str_eq(dynamic.runpath, "/run:/x");
    write_library(path, &(dyn_spec){.soname = "libzc_dyn.so.1"});
    cr_assert(zc_elf_read_dynamic(path, &dynamic));
    cr_assert(dynamic.has_soname && !dynamic.has_rpath && !dynamic.has_runpath &&
              !dynamic.nodeflib);
}

/* What readelf -d says of real libraries and of this test. */
Test(identity, dynamic_section_matches_readelf)
{
    zc_elf_dynamic dynamic;
    cr_assert(zc_elf_read_dynamic(SAMPLE_LIB, &dynamic));
    cr_assert(dynamic.has_soname);
    cr_assert_str_eq(dynamic.soname, "libzstd.so.1");
    cr_assert(!dynamic.has_rpath && !dynamic.has_runpath);
    cr_assert(zc_elf_read_dynamic(SYSTEM_LIB_DIR "/libze_intel_gpu.so.1", &dynamic));
    cr_assert_str_eq(dynamic.soname, "libze_intel_gpu.so.1");
    cr_assert(!dynamic.has_rpath && !dynamic.has_runpath && !dynamic.nodeflib);
    char path[PATH_MAX];
    temp_path(path, "text.so");
    t_write_file(path, "text", 4);
    cr_assert(!zc_elf_read_dynamic(path, &dynamic));
}

/* Every truncation of a real library's header area reads or fails, never
 * more. */
Test(identity, truncated_libraries_are_read_safely)
{
    const char *source = make_path("trunc/full.so");
    write_library(source, &(dyn_spec){"libzc_t.so.1", "/r", "/u", NULL, false, 3});
    size_t size;
    uint8_t *bytes = t_read_bytes(source, &size);
    const char *cut = make_path("trunc/cut.so");
    for (size_t length = 0; length < size; length += 7) {
        t_write_file(cut, bytes, length);
        zc_elf_dynamic dynamic;
        if (zc_elf_read_dynamic(cut, &dynamic) && dynamic.has_soname)
            cr_assert_str_eq(dynamic.soname, "libzc_t.so.1");
        uint8_t id[ZC_BUILD_ID_MAX];
        long id_size = zc_elf_read_build_id(cut, id, sizeof id);
        cr_assert(id_size == -1 || id_size == 0 || id_size == 20);
    }
    free(bytes);
}

/* ---- the search order ---- */

/* A search by temp_dir/app/libcaller.so (with caller's dynamic section) in
 * the program temp_dir/bin/program (with program's), LD_LIBRARY_PATH
 * temp_dir/llp holding copy 4, and no default directories. */
static zc_library_search search_from(const dyn_spec *caller, const dyn_spec *program)
{
    static char llp[PATH_MAX];
    const char *caller_path = make_path("app/libcaller.so");
    const char *program_path = make_path("bin/program");
    write_library(caller_path, caller);
    write_library(program_path, program);
    library_in("llp", 4);
    temp_path(llp, "llp");
    return (zc_library_search){.caller = caller_path,
                               .executable = program_path,
                               .ld_library_path = llp,
                               .default_dirs = no_default_dirs};
}

Test(identity, caller_rpath_comes_before_ld_library_path)
{
    zc_library_search search =
        search_from(&(dyn_spec){.soname = "libcaller.so", .rpath = "$ORIGIN/rp"}, &(dyn_spec){0});
    library_in("app/rp", 1);
    zc_search_step step;
    cr_assert_eq(found_copy(&search, &step), 1);
    cr_assert_eq(step, ZC_SEARCH_CALLER_RPATH);
}

/* With DT_RUNPATH, DT_RPATH is ignored (the caller's and the program's) and
 * LD_LIBRARY_PATH comes first. */
Test(identity, runpath_disables_rpath_and_follows_ld_library_path)
{
    zc_library_search search =
        search_from(&(dyn_spec){.rpath = "$ORIGIN/rp", .runpath = "${ORIGIN}/run"},
                    &(dyn_spec){.rpath = "$ORIGIN/rp"});
    library_in("app/rp", 1);
    library_in("bin/rp", 2);
    library_in("app/run", 3);
    zc_search_step step;
    cr_assert_eq(found_copy(&search, &step), 4);
    cr_assert_eq(step, ZC_SEARCH_LD_LIBRARY_PATH);
    search.ld_library_path = NULL;
    cr_assert_eq(found_copy(&search, &step), 3);
    cr_assert_eq(step, ZC_SEARCH_CALLER_RUNPATH);
}

Test(identity, program_rpath_follows_the_callers)
{
    zc_library_search search = search_from(&(dyn_spec){.rpath = "$ORIGIN/rp"},
                                           &(dyn_spec){.rpath = "/nonexistent:$ORIGIN/../$LIB"});
    library_in("lib/x86_64-linux-gnu", 2);
    zc_search_step step;
    cr_assert_eq(found_copy(&search, &step), 2);
    cr_assert_eq(step, ZC_SEARCH_EXECUTABLE_RPATH);
    library_in("app/rp", 1);
    cr_assert_eq(found_copy(&search, &step), 1);
    cr_assert_eq(step, ZC_SEARCH_CALLER_RPATH);
}

/* $ORIGIN (also as ${ORIGIN}) is the directory of the caller's path as
 * loaded, here through a symlink; "$ORIGINX" is no token; $PLATFORM is
 * AT_PLATFORM; an unknown token is kept as text. */
Test(identity, dynamic_string_tokens)
{
    const char *caller = make_path("real/libcaller.so");
    char real_dir[PATH_MAX], link_dir[PATH_MAX], via_link[PATH_MAX + 16];
    temp_path(real_dir, "real");
    temp_path(link_dir, "link");
    cr_assert_eq(symlink(real_dir, link_dir), 0);
    snprintf(via_link, sizeof via_link, "%s/libcaller.so", link_dir);
    write_library(caller, &(dyn_spec){.runpath = "$ORIGINX:$ORIGIN/../plat/$PLATFORM:/x/$FOO"});
    library_in("plat/x86_64", 5);
    zc_library_search search = {.caller = via_link, .default_dirs = no_default_dirs};
    zc_search_step step;
    cr_assert_eq(found_copy(&search, &step), 5);
    cr_assert_eq(step, ZC_SEARCH_CALLER_RUNPATH);
    library_in("$FOO", 6);
    char runpath[PATH_MAX];
    snprintf(runpath, sizeof runpath, "%s/$FOO", temp_dir);
    write_library(caller, &(dyn_spec){.runpath = runpath});
    cr_assert_eq(found_copy(&search, &step), 6);
}

Test(identity, ld_library_path_lists)
{
    library_in("second", 2);
    char list[3 * PATH_MAX];
    snprintf(list, sizeof list, "/nonexistent;%s/first:%s/second", temp_dir, temp_dir);
    zc_library_search search = {.ld_library_path = list, .default_dirs = no_default_dirs};
    cr_assert_eq(found_copy(&search, NULL), 2);
    /* An empty element is the current directory; an empty list is ignored. */
    library_in("cwd", 3);
    char cwd[PATH_MAX];
    temp_path(cwd, "cwd");
    cr_assert_eq(chdir(cwd), 0);
    search.ld_library_path = "/nonexistent::/x";
    cr_assert_eq(found_copy(&search, NULL), 3);
    search.ld_library_path = "";
    cr_assert_eq(found_copy(&search, NULL), 0);
}

Test(identity, candidates_the_loader_would_reject_are_skipped)
{
    char path[PATH_MAX], list[3 * PATH_MAX + 32];
    t_write_file(make_path("text/libzc_found.so.1"), "INPUT(-lzstd)\n", 14);
    write_elf(make_path("foreign/libzc_found.so.1"), EM_AARCH64, false, 4, NULL, 0);
    library_in("good", 7);
    temp_path(path, "");
    snprintf(list, sizeof list, "%stext:%sforeign:%sgood", path, path, path);
    zc_library_search search = {.ld_library_path = list, .default_dirs = no_default_dirs};
    cr_assert_eq(found_copy(&search, NULL), 7);
}

Test(identity, default_directories_come_last)
{
    library_in("default", 8);
    char dir[PATH_MAX];
    temp_path(dir, "default");
    const char *dirs[] = {"/nonexistent", dir, NULL};
    zc_library_search search = {.default_dirs = dirs};
    zc_search_step step;
    cr_assert_eq(found_copy(&search, &step), 8);
    cr_assert_eq(step, ZC_SEARCH_DEFAULT_DIRS);
    /* DF_1_NODEFLIB: neither the cache nor the default directories. */
    const char *caller = make_path("app/libcaller.so");
    write_library(caller, &(dyn_spec){.nodeflib = true});
    search.caller = caller;
    cr_assert_eq(found_copy(&search, &step), 0);
}

/* ---- ld.so.cache, as glibc's own ldconfig writes it ---- */

/* Writes conf listing the dirs (under temp_dir) and builds cache from it with
 * ldconfig, without touching links or the system's cache. */
/* A cache of the given dirs in ldconfig's format ("new", "old", "compat"). */
static void ldconfig_cache_as(const char *format, const char *cache, const char *const *dirs)
{
    char conf[PATH_MAX], text[4 * PATH_MAX] = "", command[3 * PATH_MAX];
    temp_path(conf, "ld.so.conf");
    for (size_t i = 0; dirs[i] != NULL; i++) {
        size_t used = strlen(text);
        snprintf(text + used, sizeof text - used, "%s/%s\n", temp_dir, dirs[i]);
    }
    t_write_file(conf, text, strlen(text));
    snprintf(command, sizeof command, "/sbin/ldconfig -X -c %s -C '%s' -f '%s' 2>/dev/null", format,
             cache, conf);
    cr_assert_eq(system(command), 0, "%s", command);
}

static void ldconfig_cache(const char *cache, const char *const *dirs)
{
    ldconfig_cache_as("new", cache, dirs);
}

/* ld.so still reads the old format ("ld.so-1.7.0"), alone or followed by a
 * new-format cache (compat): each finds what the new format does. */
Test(identity, old_and_compat_ld_so_caches_are_read_as_ld_so_does)
{
    library_in("o1", 1);
    library_in("o2", 2);
    static const char *const formats[] = {"old", "compat", "new"};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        char cache[PATH_MAX], path[PATH_MAX], expected[PATH_MAX];
        temp_path(cache, formats[f]);
        ldconfig_cache_as(formats[f], cache, (const char *const[]){"o2", "o1", NULL});
        uint8_t head[12];
        FILE *file = fopen(cache, "rb");
        cr_assert(file != NULL && fread(head, 1, sizeof head, file) == sizeof head);
        fclose(file);
        cr_assert_eq(memcmp(head, "ld.so-1.7.0", 11) == 0, strcmp(formats[f], "new") != 0,
                     "%s: not the format asked for", formats[f]);
        cr_assert(zc_ld_cache_lookup_file(cache, "libzc_found.so.1", path, sizeof path), "%s",
                  formats[f]);
        snprintf(expected, sizeof expected, "%s/o2/libzc_found.so.1", temp_dir);
        cr_assert_str_eq(path, expected, "%s", formats[f]);
        cr_assert(!zc_ld_cache_lookup_file(cache, "libzc_absent.so.1", path, sizeof path));
    }
}

Test(identity, ld_so_cache_written_by_ldconfig)
{
    library_in("c1", 1);
    library_in("c2", 2);
    library_in("default", 3);
    char cache[PATH_MAX], default_dir[PATH_MAX];
    temp_path(cache, "ld.so.cache");
    temp_path(default_dir, "default");
    ldconfig_cache(cache, (const char *const[]){"c1", "c2", NULL});
    /* The parser agrees with ldconfig -p. */
    char path[PATH_MAX], expected[PATH_MAX], command[2 * PATH_MAX];
    snprintf(command, sizeof command,
             "/sbin/ldconfig -p -C '%s' | grep -m1 'libzc_found.so.1 (libc6,x86-64)'", cache);
    FILE *pipe = popen(command, "r");
    cr_assert(fgets(expected, sizeof expected, pipe) != NULL);
    pclose(pipe);
    cr_assert(zc_ld_cache_lookup_file(cache, "libzc_found.so.1", path, sizeof path));
    cr_assert_not_null(strstr(expected, path), "%s vs %s", expected, path);
    snprintf(expected, sizeof expected, "%s/c1/libzc_found.so.1", temp_dir);
    cr_assert_str_eq(path, expected);
    cr_assert(!zc_ld_cache_lookup_file(cache, "libzc_found.so", path, sizeof path));
    cr_assert(!zc_ld_cache_lookup_file(cache, "libzc_found.so.1", path, 8));
    /* The cache comes after LD_LIBRARY_PATH and before the default dirs. */
    const char *dirs[] = {default_dir, NULL};
    zc_library_search search = {.ld_so_cache = cache, .default_dirs = dirs};
    zc_search_step step;
    cr_assert_eq(found_copy(&search, &step), 1);
    cr_assert_eq(step, ZC_SEARCH_LD_SO_CACHE);
    char llp[PATH_MAX];
    temp_path(llp, "c2");
    search.ld_library_path = llp;
    cr_assert_eq(found_copy(&search, &step), 2);
    ldconfig_cache(cache, (const char *const[]){"c2", "c1", NULL});
    search.ld_library_path = NULL;
    cr_assert_eq(found_copy(&search, &step), 2);
    /* An entry whose file is gone: the default directories. */
    char gone[PATH_MAX];
    temp_path(gone, "c2/libzc_found.so.1");
    cr_assert_eq(unlink(gone), 0);
    cr_assert_eq(found_copy(&search, &step), 3);
    cr_assert_eq(step, ZC_SEARCH_DEFAULT_DIRS);
}

/* The system's own cache gives what ldconfig -p gives for IGC. */
Test(identity, system_ld_so_cache_finds_igc_as_ldconfig_does)
{
    char path[PATH_MAX], expected[PATH_MAX], command[128];
    const char *igc = t_system_igc_name();
    snprintf(command, sizeof command, "/sbin/ldconfig -p | grep -m1 '%s (libc6,x86-64)'", igc);
    FILE *pipe = popen(command, "r");
    cr_assert(fgets(expected, sizeof expected, pipe) != NULL, "ldconfig -p lists no %s", igc);
    pclose(pipe);
    cr_assert(zc_ld_cache_lookup_file("/etc/ld.so.cache", igc, path, sizeof path));
    char *arrow = strstr(expected, "=> ");
    cr_assert_not_null(arrow);
    arrow[3 + strcspn(arrow + 3, "\n")] = '\0';
    cr_assert_str_eq(path, arrow + 3);
}

/* Every truncation and many corruptions of a real cache: a lookup fails or
 * names a string inside the file, never reads outside it. */
Test(identity, damaged_ld_so_cache_is_read_safely)
{
    size_t size;
    uint8_t *real = t_read_bytes("/etc/ld.so.cache", &size);
    char path[PATH_MAX];
    for (size_t length = 0; length < size && length < 4096; length++) {
        uint8_t *copy = malloc(length + 1);
        memcpy(copy, real, length);
        (void)zc_ld_cache_lookup(copy, length, "libigc.so.1", path, sizeof path);
        free(copy);
    }
    srand(7);
    for (int round = 0; round < 2000; round++) {
        uint8_t *copy = malloc(size);
        memcpy(copy, real, size);
        for (int flips = 0; flips < 8; flips++)
            copy[(size_t)rand() % (size < 4096 ? size : 4096)] = (uint8_t)rand();
        if (zc_ld_cache_lookup(copy, size, "libigc.so.1", path, sizeof path))
            cr_assert_lt(strlen(path), sizeof path);
        free(copy);
    }
    uint8_t wrong_magic[64] = "glibc-ld.so.cache1.0";
    cr_assert(!zc_ld_cache_lookup(wrong_magic, sizeof wrong_magic, "x", path, sizeof path));
    cr_assert(!zc_ld_cache_lookup(NULL, 0, "x", path, sizeof path));
    free(real);
}

/* ---- the compiler ---- */

Test(identity, compiler_not_found_is_a_miss_and_a_found_front_end_alone_is_not_enough)
{
    char dir[PATH_MAX];
    temp_path(dir, "fcl");
    write_library(make_path("fcl/libigdfcl.so.1"), &(dyn_spec){.soname = "libigdfcl.so.1"});
    const char *dirs[] = {dir, NULL};
    zc_library_search search = {.default_dirs = dirs};
    zc_compiler_identity compiler;
    cr_assert_eq(zc_compiler_identity_predict(&search, &compiler), ZC_MISS);
    /* IGC 2.x names alone are a compiler. */
    write_library(make_path("fcl/libigc.so.2"), &(dyn_spec){.soname = "libigc.so.2", .id_byte = 9});
    cr_assert_eq(zc_compiler_identity_predict(&search, &compiler), ZC_OK);
    cr_assert_eq(compiler.count, 2);
    cr_assert_str_eq(compiler.libraries[0].name, "libigdfcl.so.1");
    cr_assert_str_eq(compiler.libraries[1].name, "libigc.so.2");
    cr_assert_eq(compiler.libraries[1].build_id[0], 9);
}

/* What IGC needs is keyed, found as the dynamic linker finds it for IGC:
 * a SPIR-V reader first in LD_LIBRARY_PATH is another compiler. */
Test(identity, compiler_keys_the_libraries_it_needs_where_they_are_found)
{
    char system[PATH_MAX], first[PATH_MAX];
    temp_path(system, "system");
    temp_path(first, "first");
    write_library(make_path("system/libigc.so.1"),
                  &(dyn_spec){.soname = "libigc.so.1", .needed = "libzc_reader.so.14"});
    write_library(
        make_path("system/libzc_reader.so.14"),
        &(dyn_spec){.soname = "libzc_reader.so.14", .needed = "libzc_base.so.1", .id_byte = 1});
    write_library(make_path("system/libzc_base.so.1"),
                  &(dyn_spec){.soname = "libzc_base.so.1", .id_byte = 3});
    const char *dirs[] = {system, NULL};
    zc_library_search search = {.default_dirs = dirs};
    static zc_compiler_identity plain, changed, merged;
    cr_assert_eq(zc_compiler_identity_predict(&search, &plain), ZC_OK);
    cr_assert_eq(plain.count, 3);
    cr_assert_str_eq(plain.libraries[1].name, "libzc_reader.so.14");
    cr_assert_eq(plain.libraries[1].build_id[0], 1);
    cr_assert_str_eq(plain.libraries[2].name, "libzc_base.so.1");
    cr_assert_eq(plain.libraries[2].build_id[0], 3);
    /* Another copy of the reader first in LD_LIBRARY_PATH. */
    write_library(
        make_path("first/libzc_reader.so.14"),
        &(dyn_spec){.soname = "libzc_reader.so.14", .needed = "libzc_base.so.1", .id_byte = 2});
    search.ld_library_path = first;
    cr_assert_eq(zc_compiler_identity_predict(&search, &changed), ZC_OK);
    cr_assert_eq(changed.count, 3);
    cr_assert_eq(changed.libraries[1].build_id[0], 2);
    cr_assert(!zc_library_identity_equal(&plain.libraries[1], &changed.libraries[1]));
    cr_assert(zc_compiler_identity_merge(&plain, changed.libraries, changed.count, &merged));
    /* A needed library that is nowhere is keyed by its name alone. */
    unlink(make_path("system/libzc_base.so.1"));
    search.ld_library_path = NULL;
    cr_assert_eq(zc_compiler_identity_predict(&search, &changed), ZC_OK);
    cr_assert_eq(changed.count, 3);
    cr_assert_str_eq(changed.libraries[2].name, "libzc_base.so.1");
    cr_assert_str_eq(changed.libraries[2].path, "");
}

/* The driver of this machine: its IGC where ldconfig -p puts it. */
Test(identity, igc_of_this_machine_for_its_driver)
{
    char executable[PATH_MAX];
    zc_library_search search =
        zc_library_search_of_process(SYSTEM_LIB_DIR "/libze_intel_gpu.so.1", executable);
    search.ld_library_path = NULL;
    zc_compiler_identity compiler;
    cr_assert_eq(zc_compiler_identity_predict(&search, &compiler), ZC_OK);
    cr_assert_geq(compiler.count, 1);
    const char *igc = t_system_igc_name();
    char igc_path[PATH_MAX];
    snprintf(igc_path, sizeof igc_path, "%s/%s", SYSTEM_LIB_DIR, igc);
    cr_assert_str_eq(compiler.libraries[0].name, igc);
    assert_identity_of(&compiler.libraries[0], igc, igc_path);
}

Test(identity, mapped_libraries_by_file_name_and_by_soname)
{
    zc_library_identity found[2];
    cr_assert_eq(zc_mapped_libraries((const char *const[]){"libc.so.6"}, 1, found, 2), 1);
    assert_identity_of(&found[0], "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6");
    /* A copy of a library opened under another file name answers to its
     * DT_SONAME, as a later dlopen of that name would find it. The loader's
     * tracing layer is in both Debian 12's and the current root's libze1, and
     * mapped by nothing else in this test (libzstd is, by libgit2 in the
     * current root's Criterion). */
    const char *sample = "libze_tracing_layer.so.1";
    const char *renamed = make_path("libzc_renamed.so");
    copy_file(SYSTEM_LIB_DIR "/libze_tracing_layer.so.1", renamed);
    cr_assert_eq(zc_mapped_libraries(&sample, 1, found, 2), 0);
    void *handle = dlopen(renamed, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(handle, "%s", dlerror());
    cr_assert_eq(zc_mapped_libraries(&sample, 1, found, 2), 1);
    assert_identity_of(&found[0], sample, renamed);
    dlclose(handle);
}

Test(identity, merge_replaces_what_differs)
{
    zc_compiler_identity predicted = {.count = 2};
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
    temp_path(a, "a.so");
    temp_path(b, "b.so");
    temp_path(c, "c.so");
    copy_file(SAMPLE_LIB, a);
    copy_file(SAMPLE_LIB, b);
    copy_file(SAMPLE_LIB, c);
    cr_assert_eq(zc_library_identity_describe(a, "libigc.so.1", &predicted.libraries[0]), ZC_OK);
    cr_assert_eq(zc_library_identity_describe(b, "libigdfcl.so.1", &predicted.libraries[1]), ZC_OK);
    zc_library_identity mapped[2];
    zc_compiler_identity merged;
    /* Same file: nothing differs. */
    mapped[0] = predicted.libraries[0];
    cr_assert(!zc_compiler_identity_merge(&predicted, mapped, 1, &merged));
    cr_assert_eq(merged.count, 2);
    /* Another file under the same name replaces it; the rest stays. */
    cr_assert_eq(zc_library_identity_describe(c, "libigc.so.1", &mapped[0]), ZC_OK);
    cr_assert(zc_compiler_identity_merge(&predicted, mapped, 1, &merged));
    cr_assert_eq(merged.count, 2);
    cr_assert(zc_library_identity_equal(&merged.libraries[0], &mapped[0]));
    cr_assert(zc_library_identity_equal(&merged.libraries[1], &predicted.libraries[1]));
    /* A name not predicted joins. */
    cr_assert_eq(zc_library_identity_describe(c, "libigc.so.2", &mapped[1]), ZC_OK);
    mapped[0] = predicted.libraries[0];
    cr_assert(zc_compiler_identity_merge(&predicted, mapped, 2, &merged));
    cr_assert_eq(merged.count, 3);
    cr_assert_str_eq(merged.libraries[2].name, "libigc.so.2");
}

/* ---- the public search ---- */

/* The dynamic linker reads LD_LIBRARY_PATH once, when the program starts:
 * a value set later changes nothing, for it or for the search. */
Test(identity, ld_library_path_set_after_start_is_ignored)
{
    char copy[PATH_MAX];
    temp_path(copy, "libzstd.so.1");
    copy_file(SAMPLE_LIB, copy);
    const char *at_start = getenv("LD_LIBRARY_PATH");
    char *initial = at_start != NULL ? strdup(at_start) : NULL;
    setenv("LD_LIBRARY_PATH", temp_dir, 1);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find("libzstd.so.1", &identity), ZC_OK);
    assert_identity_of(&identity, "libzstd.so.1", SAMPLE_LIB);
    if (initial == NULL)
        cr_assert_null(zc_initial_ld_library_path());
    else
        cr_assert_str_eq(zc_initial_ld_library_path(), initial);
    free(initial);
}

#define CHILD_LD_LIBRARY_PATH "/nonexistent/zc-initial:/x"

/* Run by the next test in a new process started with LD_LIBRARY_PATH set
 * (env -i: out of the Criterion worker's environment). */
Test(identity, initial_ld_library_path_in_a_child)
{
    if (getenv("ZC_IDENTITY_CHILD") == NULL)
        cr_skip_test("runs as the child of identity::ld_library_path_at_start_is_followed");
    setenv("LD_LIBRARY_PATH", "/changed", 1);
    cr_assert_str_eq(zc_initial_ld_library_path(), CHILD_LD_LIBRARY_PATH);
}

Test(identity, ld_library_path_at_start_is_followed)
{
    char command[PATH_MAX + 256], self[PATH_MAX];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(length, 0);
    self[length] = '\0';
    snprintf(command, sizeof command,
             "env -i ZC_IDENTITY_CHILD=1 LD_LIBRARY_PATH='" CHILD_LD_LIBRARY_PATH
             "' '%s' --filter 'identity/initial_ld_library_path_in_a_child' >/dev/null 2>&1",
             self);
    cr_assert_eq(system(command), 0);
    /* The child fails when it sees another value. */
    snprintf(command, sizeof command,
             "env -i ZC_IDENTITY_CHILD=1 LD_LIBRARY_PATH=/other '%s' "
             "--filter 'identity/initial_ld_library_path_in_a_child' >/dev/null 2>&1",
             self);
    cr_assert_neq(system(command), 0);
}

Test(identity, missing_library_is_a_miss)
{
    zc_library_identity identity;
    memset(&identity, 0x77, sizeof identity);
    cr_assert_eq(zc_library_identity_find("libzc_absent.so.1", &identity), ZC_MISS);
    cr_assert_str_eq(identity.name, "libzc_absent.so.1");
    cr_assert_str_eq(identity.path, "");
    cr_assert_eq(identity.build_id_size, 0);
    cr_assert_eq(identity.size, 0);
}

Test(identity, symlinks_are_resolved)
{
    char real[PATH_MAX], link[PATH_MAX];
    temp_path(real, "libzc_sample.so.1.2.3");
    temp_path(link, "libzc_sample.so.1");
    copy_file(SAMPLE_LIB, real);
    cr_assert_eq(symlink("libzc_sample.so.1.2.3", link), 0);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find(link, &identity), ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", real);
}

Test(identity, of_path)
{
    char copy[PATH_MAX], text[PATH_MAX];
    temp_path(copy, "libzc_sample.so.1");
    temp_path(text, "libzc_text.so.1");
    copy_file(SAMPLE_LIB, copy);
    t_write_file(text, "text", 4);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_of_path(copy, &identity), ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", copy);
    cr_assert_eq(zc_library_identity_of_path(text, &identity), ZC_MISS);
    cr_assert_str_eq(identity.name, "libzc_text.so.1");
    cr_assert_str_eq(identity.path, "");
}

Test(identity, invalid_arguments)
{
    zc_library_identity identity;
    char long_name[NAME_MAX + 2];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    cr_assert_eq(zc_library_identity_find(NULL, &identity), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_library_identity_find("", &identity), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_library_identity_find(long_name, &identity), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_library_identity_find("libzstd.so.1", NULL), ZC_ERR_INVALID_ARG);
    cr_assert_eq(zc_library_identity_of_path(NULL, &identity), ZC_ERR_INVALID_ARG);
    zc_library_search search = {0};
    cr_assert_eq(zc_library_search_find(&search, "a/b.so", &identity, NULL), ZC_ERR_INVALID_ARG);
}
