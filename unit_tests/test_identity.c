/* Library identity: the loader's search order, without loading, and ELF
 * build-ids as readelf reports them. */
#include <criterion/criterion.h>
#include <elf.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include "zecache/identity.h"

#define SYSTEM_LIB_DIR "/usr/lib/x86_64-linux-gnu"
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

/* ---- searching ---- */

Test(identity, found_through_ld_library_path)
{
    char copy[PATH_MAX];
    temp_path(copy, "libzc_sample.so.1");
    copy_file(SAMPLE_LIB, copy);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find_in("libzc_sample.so.1", temp_dir, NULL, &identity),
                 ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", copy);
}

Test(identity, ld_library_path_comes_before_the_system_directories)
{
    char copy[PATH_MAX];
    temp_path(copy, "libzstd.so.1");
    copy_file(SAMPLE_LIB, copy);
    setenv("LD_LIBRARY_PATH", temp_dir, 1);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find("libzstd.so.1", &identity), ZC_OK);
    assert_identity_of(&identity, "libzstd.so.1", copy);
    unsetenv("LD_LIBRARY_PATH");
    cr_assert_eq(zc_library_identity_find("libzstd.so.1", &identity), ZC_OK);
    assert_identity_of(&identity, "libzstd.so.1", SAMPLE_LIB);
}

Test(identity, every_directory_of_the_list_is_searched)
{
    char first[PATH_MAX], second[PATH_MAX], copy[PATH_MAX], list[3 * PATH_MAX];
    temp_path(first, "first");
    temp_path(second, "second");
    cr_assert_eq(mkdir(first, 0700), 0);
    cr_assert_eq(mkdir(second, 0700), 0);
    temp_path(copy, "second/libzc_sample.so.1");
    copy_file(SAMPLE_LIB, copy);
    snprintf(list, sizeof list, "/nonexistent;%s:%s", first, second);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find_in("libzc_sample.so.1", list, NULL, &identity), ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", copy);
}

Test(identity, candidates_the_loader_would_reject_are_skipped)
{
    char text_dir[PATH_MAX], foreign_dir[PATH_MAX], good_dir[PATH_MAX], path[PATH_MAX];
    temp_path(text_dir, "text");
    temp_path(foreign_dir, "foreign");
    temp_path(good_dir, "good");
    cr_assert_eq(mkdir(text_dir, 0700), 0);
    cr_assert_eq(mkdir(foreign_dir, 0700), 0);
    cr_assert_eq(mkdir(good_dir, 0700), 0);
    temp_path(path, "text/libzc_sample.so.1");
    t_write_file(path, "INPUT(-lzstd)\n", 14);
    temp_path(path, "foreign/libzc_sample.so.1");
    write_elf(path, EM_AARCH64, false, 4, NULL, 0);
    temp_path(path, "good/libzc_sample.so.1");
    copy_file(SAMPLE_LIB, path);
    char list[3 * PATH_MAX + 8];
    snprintf(list, sizeof list, "%s:%s:%s", text_dir, foreign_dir, good_dir);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find_in("libzc_sample.so.1", list, NULL, &identity), ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", path);
}

Test(identity, empty_list_element_is_the_current_directory)
{
    char copy[PATH_MAX];
    temp_path(copy, "libzc_sample.so.1");
    copy_file(SAMPLE_LIB, copy);
    cr_assert_eq(chdir(temp_dir), 0);
    zc_library_identity identity;
    cr_assert_eq(
        zc_library_identity_find_in("libzc_sample.so.1", "/nonexistent::/x", NULL, &identity),
        ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", copy);
    /* An empty LD_LIBRARY_PATH is ignored altogether, as by the loader. */
    cr_assert_eq(zc_library_identity_find_in("libzc_sample.so.1", "", NULL, &identity), ZC_MISS);
}

Test(identity, symlinks_are_resolved)
{
    char real[PATH_MAX], link[PATH_MAX];
    temp_path(real, "libzc_sample.so.1.2.3");
    temp_path(link, "libzc_sample.so.1");
    copy_file(SAMPLE_LIB, real);
    cr_assert_eq(symlink("libzc_sample.so.1.2.3", link), 0);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find_in("libzc_sample.so.1", temp_dir, NULL, &identity),
                 ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", real);
    cr_assert_str_eq(strrchr(identity.path, '/'), "/libzc_sample.so.1.2.3");
}

Test(identity, directories_of_ld_so_conf_and_its_includes)
{
    char conf[PATH_MAX], conf_d[PATH_MAX], path[PATH_MAX], lib_dir[PATH_MAX], text[2 * PATH_MAX];
    temp_path(conf, "ld.so.conf");
    temp_path(conf_d, "ld.so.conf.d");
    temp_path(lib_dir, "libs");
    cr_assert_eq(mkdir(conf_d, 0700), 0);
    cr_assert_eq(mkdir(lib_dir, 0700), 0);
    temp_path(path, "libs/libzc_sample.so.1");
    copy_file(SAMPLE_LIB, path);
    const char *main_conf = "# comment\n  include   ld.so.conf.d/*.conf  \nhwcap 0 nosegneg\n";
    t_write_file(conf, main_conf, strlen(main_conf));
    temp_path(path, "ld.so.conf.d/a.conf");
    t_write_file(path, "/nonexistent\n\n", 14);
    temp_path(path, "ld.so.conf.d/b.conf");
    int length = snprintf(text, sizeof text, "\t%s//  # trailing comment", lib_dir);
    t_write_file(path, text, (size_t)length);
    temp_path(path, "libs/libzc_sample.so.1");
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find_in("libzc_sample.so.1", NULL, conf, &identity), ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", path);
}

Test(identity, include_loop_ends)
{
    char conf[PATH_MAX];
    temp_path(conf, "loop.conf");
    t_write_file(conf, "include loop.conf\ninclude\n", 26);
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find_in("libzc_absent.so.1", NULL, conf, &identity), ZC_MISS);
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
    cr_assert_eq(identity.mtime_sec, 0);
    cr_assert_eq(identity.mtime_nsec, 0);
}

Test(identity, igc_of_this_machine)
{
    zc_library_identity identity;
    cr_assert_eq(zc_library_identity_find("libigc.so.1", &identity), ZC_OK);
    assert_identity_of(&identity, "libigc.so.1", SYSTEM_LIB_DIR "/libigc.so.1");
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
    /* A name with a slash is a path, for the search as for the loader. */
    cr_assert_eq(zc_library_identity_find(copy, &identity), ZC_OK);
    assert_identity_of(&identity, "libzc_sample.so.1", copy);
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
}
