/* zc_key_add_opencl_c: the source, the options and every header the source
 * can include, found as clang finds them for a program from a string. Each
 * test runs in a scratch directory that is also the working directory. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../source/key/opencl_c_key.h"
#include "test_support.h"
#include "zecache/key.h"

static char scratch[256];

static void enter_scratch(void)
{
    char unused[512];
    t_make_scratch(scratch, sizeof scratch, "/tmp/zc_clkey_XXXXXX", unused, sizeof unused);
    cr_assert_eq(chdir(scratch), 0);
}

static void leave_scratch(void)
{
    t_remove_tree(scratch);
}

TestSuite(opencl_c_key, .init = enter_scratch, .fini = leave_scratch);

/* rel (relative to the scratch directory) holds text; directories made. */
static void put(const char *rel, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", scratch, rel);
    for (char *slash = strchr(path + strlen(scratch) + 1, '/'); slash != NULL;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0700);
        *slash = '/';
    }
    t_write_file(path, text, strlen(text));
}

static void drop(const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", scratch, rel);
    cr_assert_eq(unlink(path), 0, "unlink %s", path);
}

/* Whose header search the key follows. */
static zc_opencl_c_driver driver = ZC_OPENCL_C_IGC;

static char last_reason[256];

/* The key of source with options: ZC_OK or the builder's status, with
 * last_reason set on a refusal. */
static zc_status key_of(const char *source, const char *options, zc_key *key)
{
    zc_key_builder *builder = NULL;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    zc_status added = zc_key_add_opencl_c(builder, source, strlen(source), options, driver);
    zc_status status = zc_key_finish(builder, key);
    const char *reason = zc_key_builder_reason(builder);
    snprintf(last_reason, sizeof last_reason, "%s", reason != NULL ? reason : "");
    zc_key_builder_destroy(builder);
    cr_assert_eq(added == ZC_OK, status == ZC_OK, "add %d, finish %d", added, status);
    return added;
}

static zc_key must_key(const char *source, const char *options)
{
    zc_key key;
    zc_status status = key_of(source, options, &key);
    cr_assert_eq(status, ZC_OK, "status %d: %s", status, last_reason);
    return key;
}

static void assert_refused(const char *source, const char *options, const char *needle)
{
    zc_key key;
    cr_assert_eq(key_of(source, options, &key), ZC_NOT_CACHEABLE, "expected a refusal");
    cr_assert_not_null(strstr(last_reason, needle), "reason \"%s\" lacks \"%s\"", last_reason,
                       needle);
}

static void assert_same(zc_key a, zc_key b)
{
    char ha[ZC_KEY_HEX_SIZE], hb[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&a, ha);
    zc_key_to_hex(&b, hb);
    cr_assert(zc_key_equal(&a, &b), "keys differ: %s (kind %d) %s (kind %d)", ha, a.kind, hb,
              b.kind);
}

static void assert_differ(zc_key a, zc_key b)
{
    cr_assert(!zc_key_equal(&a, &b), "keys are equal");
}

Test(opencl_c_key, source_and_options_byte_for_byte)
{
    const char *src = "kernel void k(global int *p) { p[0] = 1; }";
    zc_key plain = must_key(src, NULL);
    assert_same(plain, must_key(src, NULL));
    assert_differ(plain, must_key(src, ""));
    assert_differ(must_key(src, "-DX"), must_key(src, "-DX "));
    assert_differ(plain, must_key("kernel void k(global int *p) { p[0] = 2; }", NULL));
    /* The source's bytes count, not only up to a NUL. */
    zc_key_builder *builder = NULL;
    zc_key with_nul;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_opencl_c(builder, "ab\0c", 4, NULL, driver), ZC_OK);
    cr_assert_eq(zc_key_finish(builder, &with_nul), ZC_OK);
    zc_key_builder_destroy(builder);
    assert_differ(with_nul, must_key("ab", NULL));
}

/* A header made where the search looks, changed, shadowed by one made
 * earlier in the search, removed again. */
Test(opencl_c_key, header_made_changed_shadowed_removed)
{
    const char *src = "#include \"common.h\"\nkernel void k() {}";
    const char *options = "-I second -I third";
    zc_key absent = must_key(src, options);
    put("third/common.h", "#define A 1\n");
    zc_key in_third = must_key(src, options);
    assert_differ(absent, in_third);
    put("third/common.h", "#define A 2\n");
    zc_key changed = must_key(src, options);
    assert_differ(in_third, changed);
    put("second/common.h", "#define A 2\n"); /* same bytes, earlier in the search */
    zc_key in_second = must_key(src, options);
    assert_differ(changed, in_second);
    put("common.h", "#define A 2\n"); /* the working directory comes first */
    zc_key in_cwd = must_key(src, options);
    assert_differ(in_second, in_cwd);
    drop("common.h");
    assert_same(in_second, must_key(src, options));
    drop("second/common.h");
    assert_same(changed, must_key(src, options));
    drop("third/common.h");
    assert_same(absent, must_key(src, options));
}

/* Whether changing the header at rel changes source's key with options. */
static bool header_is_keyed(const char *source, const char *options, const char *rel)
{
    put(rel, "int a;\n");
    zc_key before = must_key(source, options);
    put(rel, "int b;\n");
    zc_key after = must_key(source, options);
    return !zc_key_equal(&before, &after);
}

/* -I dir, -Idir and --include-directory are one directory; relative ones
 * are the working directory's. */
Test(opencl_c_key, include_dir_spellings)
{
    char absolute[PATH_MAX + 8];
    snprintf(absolute, sizeof absolute, "-I %s/inc", scratch);
    const char *const spellings[] = {
        "-Iinc",           "-I inc", absolute, "--include-directory=inc", "--include-directory inc",
        "-DX -Inone -Iinc"};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
        cr_assert(header_is_keyed("#include <h.h>\n", spellings[i], "inc/h.h"), "%s", spellings[i]);
    cr_assert(!header_is_keyed("#include <h.h>\n", "-Iother", "inc/h.h"));
}

Test(opencl_c_key, include_through_a_macro_is_not_cacheable)
{
    assert_refused("#define H \"a.h\"\n#include H\n", NULL, "macro");
    assert_refused("#if __has_include(H)\n#endif\n", NULL, "macro");
    /* Even where the preprocessor would skip it. */
    assert_refused("#if 0\n#include NOT_DEFINED\n#endif\n", NULL, "macro");
    /* clang expands H("x.h") into a real test of x.h. */
    assert_refused("#define H __has_include\n#if H(\"x.h\")\n#endif\n", NULL, "macro");
    /* Token pasting builds __has_include from a prefix and the rest. */
    assert_refused("#define CAT(a, b) a##b\n#if CAT(__has_, include)(\"x.h\")\n#endif\n", NULL,
                   "macro");
}

/* Whether changing x.h (in the working directory and in -Iinc) changes
 * source's key. */
static bool x_h_is_keyed(const char *source)
{
    put("x.h", "int a;\n");
    return header_is_keyed(source, "-Iinc", "inc/x.h") || header_is_keyed(source, NULL, "x.h");
}

/* Each spelling and place of a directive the preprocessor could see (or
 * that only looks like one): the header it names is keyed. */
Test(opencl_c_key, every_spelling_is_found)
{
    static const char *const sources[] = {
        "#include \"x.h\"\n",
        "  #  include\t\"x.h\"\n",
        "#/* c */include/* d */\"x.h\"\n",
        "#inc\\\nlude \"x.h\"\n",
        "#include \\  \n\"x.h\"\n",
        "#include \"x\\\n.h\"\n",
        "%:include \"x.h\"\n",
        "?"
        "?=include \"x.h\"\n", /* the trigraph */
        "#include_next \"x.h\"\n",
        "#import \"x.h\"\n",
        "#if __has_include(\"x.h\")\n#endif\n",
        "#if __has_include_next(<x.h>)\n#endif\n",
        "#if 0\n#include <x.h>\n#endif\n",
        "/* a\n */ #include \"x.h\"\n",
        "#include \"x.h\"", /* no line end */
        "\r\n#include \"x.h\"\r\n",
    };
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++)
        cr_assert(x_h_is_keyed(sources[i]), "source %zu: the header is not keyed", i);
}

/* clang reads a digraph through a splice ('%' backslash-newline ':' is
 * '#'), so the directive behind it includes x.h. */
Test(opencl_c_key, digraph_split_by_a_splice_is_found)
{
    cr_assert(x_h_is_keyed("%\\\n:include \"x.h\"\n"));
    cr_assert(x_h_is_keyed("%\\ \r\n:include <x.h>\n"));
}

/* What is no include names no header: the keys stay put. */
Test(opencl_c_key, non_includes_key_no_header)
{
    static const char *const sources[] = {
        "#ifdef __has_include\n#endif\n",
        "#if defined(__has_include)\n#endif\n",
        "#includes \"x.h\"\n",
        "int include; \"x.h\"\n",
        "#include\n",
        "/* #include \"x.h\" */\n",
        "// #include \"x.h\"\n",
    };
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++)
        cr_assert(!x_h_is_keyed(sources[i]), "source %zu keyed x.h", i);
}

/* A header's quoted includes search its own directory first, and headers
 * are followed as deep as they go. */
Test(opencl_c_key, recursion_from_the_header_directory)
{
    put("inc/a.h", "#include \"sub/b.h\"\n");
    put("inc/sub/b.h", "#include \"c.h\"\n");
    put("inc/sub/c.h", "int c1;\n");
    const char *src = "#include <a.h>\n";
    zc_key first = must_key(src, "-Iinc");
    put("inc/sub/c.h", "int c2;\n");
    zc_key second = must_key(src, "-Iinc");
    assert_differ(first, second);
    /* c.h made in the working directory is not the one b.h finds first. */
    put("c.h", "int other;\n");
    assert_same(second, must_key(src, "-Iinc"));
    /* A c.h in inc/sub shadows nothing: removing it makes the search go on. */
    drop("inc/sub/c.h");
    assert_differ(second, must_key(src, "-Iinc"));
}

Test(opencl_c_key, cycles_end)
{
    put("a.h", "#include \"b.h\"\n#include \"a.h\"\n");
    put("b.h", "#include \"a.h\"\n");
    zc_key first = must_key("#include \"a.h\"\n", NULL);
    put("b.h", "#include \"a.h\"\n// changed\n");
    assert_differ(first, must_key("#include \"a.h\"\n", NULL));
}

/* The working directory is an include directory for angled names too, and
 * for a header's quoted ones: after the -I directories on Intel's driver,
 * before them on PoCL (its -I.), as each was measured to search. */
Test(opencl_c_key, the_working_directory_is_searched_as_each_driver_does)
{
    cr_assert(header_is_keyed("#include <v.h>\n", NULL, "v.h"));
    put("sub/a.h", "#include \"b.h\"\n");
    cr_assert(header_is_keyed("#include \"sub/a.h\"\n", NULL, "b.h"));
    put("inc/v.h", "int inc;\n");
    cr_assert(!header_is_keyed("#include <v.h>\n", "-Iinc", "v.h"));
    put("a2.h", "#include \"w.h\"\n");
    cr_assert(header_is_keyed("#include \"a2.h\"\n", "-Iinc", "w.h"));
    driver = ZC_OPENCL_C_POCL;
    cr_assert(header_is_keyed("#include <v.h>\n", "-Iinc", "v.h"));
    drop("v.h");
    cr_assert(!header_is_keyed("#include <v.h>\n", "-Iinc", "other/v.h"));
    put("sub/b.h", "int sub;\n");
    cr_assert(!header_is_keyed("#include \"sub/a.h\"\n", NULL, "b.h"));
}

/* The key follows the driver's search: the same source keys apart per
 * driver, and for one unknown every candidate of either search is keyed. */
Test(opencl_c_key, unknown_drivers_key_every_candidate)
{
    const char *src = "#include <v.h>\n";
    zc_key igc = must_key(src, "-Iinc");
    driver = ZC_OPENCL_C_POCL;
    assert_differ(igc, must_key(src, "-Iinc"));
    put("v.h", "int cwd;\n");
    put("inc/v.h", "int inc;\n");
    driver = ZC_OPENCL_C_ANY_DRIVER;
    cr_assert(header_is_keyed(src, "-Iinc", "v.h"));
    cr_assert(header_is_keyed(src, "-Iinc", "inc/v.h"));
}

/* Macros whose expansion a key cannot hold: not cacheable, wherever the
 * text names them but in a comment or a literal. */
Test(opencl_c_key, time_and_file_macros_are_not_cacheable)
{
    assert_refused("constant char t[] = __TIME__;\n", NULL, "__TIME__");
    assert_refused("#if 0\nconstant char d[] = __DATE__;\n#endif\n", NULL, "__DATE__");
    assert_refused("int n = sizeof(__FI\\\nLE__);\n", NULL, "__FILE__");
    put("inc/t.h", "#define STAMP __TIMESTAMP__\n");
    assert_refused("#include <t.h>\n", "-Iinc", "__TIMESTAMP__");
    must_key("// __TIME__\n/* __FILE__ */ constant char s[] = \"__DATE__\"; int x__TIME__;\n",
             NULL);
    must_key("int c = __COUNTER__ + __LINE__;\n", NULL);
}

/* Token pasting builds __TIME__ from pieces the text names apart; the
 * first piece is a prefix of the name. */
Test(opencl_c_key, time_macro_pasted_from_pieces_is_not_cacheable)
{
    assert_refused("#define CAT(a, b) a##b\n#define T(a, b) CAT(a, b)\n"
                   "constant char t[] = T(__TI, ME__);\n",
                   NULL, "__TIME__");
    must_key("#define CAT(a, b) a##b\nint CAT(A, B);\n", NULL);
}

/* The build options define macros too: one that is __TIME__, or a piece
 * pasted into it, is as unkeyable as the text naming it. */
Test(opencl_c_key, time_macro_from_the_options_is_not_cacheable)
{
    assert_refused("constant char t[] = T;\n", "-DT=__TIME__", "__TIME__");
    assert_refused("#define CAT(a, b) a##b\n#define P(a, b) CAT(a, b)\n"
                   "constant char t[] = P(X, ME__);\n",
                   "-D X=__TI", "__TIME__");
    must_key("constant int t = T;\n", "-DT=1 -cl-fast-relaxed-math");
}

/* Thousands of distinct names, mostly absent headers, are keyed (each
 * looked up once). */
Test(opencl_c_key, thousands_of_names)
{
    size_t size = 0;
    char *src = malloc(64 * 2100);
    size += (size_t)sprintf(src + size, "#if 0\n");
    for (int i = 0; i < 1000; i++)
        size += (size_t)sprintf(src + size, "#include <h%d.h>\n#include \"h%d.h\"\n", i, i);
    sprintf(src + size, "#endif\n");
    put("inc/h7.h", "int seven;\n");
    cr_assert(header_is_keyed(src, "-Iinc", "inc/h7.h"));
    free(src);
}

/* #include_next keys every candidate, #include only up to the one found. */
Test(opencl_c_key, include_next_keys_every_candidate)
{
    put("one/n.h", "int one;\n");
    put("two/n.h", "int two;\n");
    zc_key include = must_key("#include <n.h>\n", "-Ione -Itwo");
    zc_key next = must_key("#include_next <n.h>\n", "-Ione -Itwo");
    put("two/n.h", "int two_changed;\n");
    assert_same(include, must_key("#include <n.h>\n", "-Ione -Itwo"));
    assert_differ(next, must_key("#include_next <n.h>\n", "-Ione -Itwo"));
}

/* -g records the working directory in the binary. */
Test(opencl_c_key, debug_info_keys_the_working_directory)
{
    const char *src = "kernel void k() {}";
    zc_key plain_here = must_key(src, "-DX");
    zc_key debug_here = must_key(src, "-g");
    cr_assert_eq(mkdir("elsewhere", 0700), 0);
    cr_assert_eq(chdir("elsewhere"), 0);
    assert_same(plain_here, must_key(src, "-DX"));
    assert_differ(debug_here, must_key(src, "-g"));
}

Test(opencl_c_key, options_that_read_unseen_files)
{
    static const char *const refused[][2] = {
        {"-include pre.h", "-i"},
        {"-imacros m.h", "-i"},
        {"-isystem dir", "-i"},
        {"-iquote dir", "-i"},
        {"-idirafter dir", "-i"},
        {"@opts.txt", "@"},
        {"-s /path/main.cl", "-s"},
        {"--include=pre.h", "--include"},
        {"-I=/sys", "-I="},
        {"-Xclang -load", "-Xclang"},
        {"-DA -ivfsoverlay o.yaml", "-i"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        assert_refused("kernel void k() {}", refused[i][0], refused[i][1]);
    /* Options that read nothing are fine. */
    must_key("kernel void k() {}", "-x cl -cl-ext=+cl_khr_fp64 -cl-std=CL2.0 -DINC=\"a.h\"");
}

/* A split with quotes and one on white space disagree on the directory. */
Test(opencl_c_key, quoted_include_dirs_are_not_cacheable)
{
    assert_refused("kernel void k() {}", "-I \"my dir\"", "split");
    assert_refused("kernel void k() {}", "-Imy\\ dir", "split");
    must_key("kernel void k() {}", "-Iplain -DQ=\\\"1\\\"");
}

Test(opencl_c_key, limits)
{
    /* A chain one header longer than the bound. */
    char name[64], text[128];
    for (int i = 0; i <= ZC_OPENCL_C_HEADERS_MAX; i++) {
        snprintf(name, sizeof name, "h%d.h", i);
        snprintf(text, sizeof text, "#include \"h%d.h\"\n", i + 1);
        put(name, text);
    }
    assert_refused("#include \"h0.h\"\n", NULL, "more headers than the bound");
    /* A header larger than the byte bound, read no further than its size. */
    put("big.h", "");
    cr_assert_eq(truncate("big.h", (off_t)ZC_OPENCL_C_HEADER_BYTES_MAX + 1), 0);
    assert_refused("#include \"big.h\"\n", NULL, "larger than the bound");
    /* More names than the bound. */
    size_t size = (ZC_OPENCL_C_LOOKUPS_MAX + 1) * 24;
    char *many = malloc(size);
    cr_assert_not_null(many);
    size_t used = 0;
    for (int i = 0; i <= ZC_OPENCL_C_LOOKUPS_MAX; i++)
        used += (size_t)snprintf(many + used, size - used, "#include <n%d.h>\n", i);
    assert_refused(many, NULL, "names more headers than the bound");
    free(many);
}

Test(opencl_c_key, unreadable_and_special_headers)
{
    cr_assert_eq(mkfifo("fifo.h", 0600), 0);
    assert_refused("#include \"fifo.h\"\n", NULL, "not a regular file");
    /* A directory in the way is skipped, as clang skips it. */
    cr_assert_eq(mkdir("dir.h", 0700), 0);
    put("inc/dir.h", "int d;\n");
    zc_key found = must_key("#include \"dir.h\"\n", "-Iinc");
    put("inc/dir.h", "int e;\n");
    assert_differ(found, must_key("#include \"dir.h\"\n", "-Iinc"));
    if (geteuid() != 0) {
        put("secret.h", "int s;\n");
        cr_assert_eq(chmod("secret.h", 0), 0);
        assert_refused("#include \"secret.h\"\n", NULL, "cannot be read");
    }
}

/* Refusals stick, and the trace shows every candidate. */
Test(opencl_c_key, trace_lists_candidates)
{
    put("inc/t.h", "int t;\n");
    zc_key_builder *builder = NULL;
    cr_assert_eq(zc_key_builder_create(true, &builder), ZC_OK);
    const char *src = "#include \"t.h\"\n";
    cr_assert_eq(zc_key_add_opencl_c(builder, src, strlen(src), "-Iinc", driver), ZC_OK);
    const char *trace = zc_key_builder_trace(builder);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "include \"t.h\" from %s\n  %s/t.h: absent\n  %s/inc/t.h: found 7 "
             "bytes sha256 ",
             scratch, scratch, scratch);
    cr_assert_not_null(strstr(trace, expected), "trace:\n%s", trace);
    cr_assert_eq(zc_key_add_opencl_c(builder, "#include X\n", 11, NULL, driver), ZC_NOT_CACHEABLE);
    cr_assert_eq(zc_key_add_opencl_c(builder, "", 0, NULL, driver), ZC_NOT_CACHEABLE);
    zc_key key;
    cr_assert_eq(zc_key_finish(builder, &key), ZC_NOT_CACHEABLE);
    zc_key_builder_destroy(builder);
}

/* Rodinia's lavaMD and b+tree name headers in line comments: the key does
 * not depend on the working directory's files, and "#include ../common.h"
 * in a comment is no include through a macro. */
Test(opencl_c_key, includes_in_comments_are_not_keyed)
{
    const char *lava = "// #include <main.h>\t// (in the directory SOMEHOW known)\n"
                       "__kernel void k(__global int *p) { p[0] = 1; }\n";
    zc_key elsewhere = must_key(lava, NULL);
    put("main.h", "int m;\n");
    assert_same(elsewhere, must_key(lava, NULL));
    put("other/main.h", "int n;\n");
    cr_assert_eq(chdir("other"), 0);
    assert_same(elsewhere, must_key(lava, NULL));
    must_key("// #include ../common.h\t\t// (in directory specified to compiler)\n"
             "__kernel void k(__global int *p) { p[0] = 1; }\n",
             NULL);
}
