/* zc_opencl_c_scan: the names it finds, read past comments and literals as
 * clang reads them, and everywhere when that reading is not sure. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../source/key/opencl_c_macros.h"
#include "../source/key/opencl_c_scan.h"

static zc_status collect(void *context, const zc_include_ref *ref)
{
    char *names = context;
    strncat(names, ref->name, ref->length);
    strcat(names, ";");
    return ZC_OK;
}

/* The names found in text, each followed by ';'. */
static const char *names_in(const char *text)
{
    static char names[256];
    names[0] = '\0';
    char reason[128];
    zc_status status = zc_opencl_c_scan(text, strlen(text), collect, names, reason, sizeof reason);
    cr_assert_eq(status, ZC_OK, "%s: %s", text, reason);
    return names;
}

static void assert_names(const char *text, const char *expected)
{
    cr_assert_str_eq(names_in(text), expected, "in: %s", text);
}

Test(opencl_c_scan, comments_hide_includes)
{
    assert_names("// #include \"a.h\"\n/* #include <b.h> */\n", "");
    assert_names("/* x\n#include \"a.h\"\n*/\n", "");
    assert_names("/* unterminated\n#include \"a.h\"\n", "");
    /* A splice joins the next line to the line comment. */
    assert_names("// note \\\n#include \"a.h\"\n#include \"b.h\"\n", "b.h;");
}

Test(opencl_c_scan, includes_after_comments_are_found)
{
    assert_names("/* x */ #include \"a.h\"\n", "a.h;");
    assert_names("/* x\n y */ #include \"a.h\"\n", "a.h;");
    assert_names("#/* c */include/* d */<a.h>\n", "a.h;");
    assert_names("#include \"a.h\" // #include \"b.h\"\n", "a.h;");
}

Test(opencl_c_scan, literals_hold_no_comment_markers)
{
    assert_names("constant char *s = \"/*\";\n#include \"a.h\"\n// */\n", "a.h;");
    assert_names("char c = '\"';\n#include \"a.h\"\n", "a.h;");
    assert_names("constant char *s = \"\\\"/*\";\n#include \"a.h\"\n", "a.h;");
    assert_names("char c = '\\'' ; /* x */\n#include \"a.h\"\n", "a.h;");
    assert_names("constant char *s = u8\"/*\"; int c = L'\"';\n#include \"a.h\"\n", "a.h;");
    assert_names("constant char *s = \"#include <a.h>\";\n", "");
}

/* An unterminated literal ends at the line end, as clang ends it. */
Test(opencl_c_scan, unterminated_literals_end_at_the_line_end)
{
    assert_names("#if 0\nit's /*\n#endif\n#include \"a.h\"\n", "a.h;");
    assert_names("#if 0\n\"open /*\n#endif\n#include \"a.h\"\n", "a.h;");
}

Test(opencl_c_scan, header_names_start_no_comment_or_literal)
{
    assert_names("#include <a//b.h>\n#include \"c.h\"\n", "a//b.h;c.h;");
    assert_names("#include \"a'b.h\"\n#include \"c.h\"\n", "a'b.h;c.h;");
    assert_names("#include <a/*b.h>\n#include \"c.h\"\n", "a/*b.h;c.h;");
    assert_names("#if __has_include(<a\"b.h>) && __has_include(\"c.h\")\n#endif\n", "a\"b.h;c.h;");
}

/* Where another language mode could read comments or literals another way,
 * everything is scanned as code: the commented include is found. */
Test(opencl_c_scan, unsure_texts_are_scanned_as_code)
{
    assert_names("?"
                 "?= x\n// #include \"a.h\"\n",
                 "a.h;");
    assert_names("char c = '?"
                 "?/''; /* */\n// #include \"a.h\"\n",
                 "a.h;");
    assert_names("int n = 1'000; // #include \"a.h\"\n", "a.h;");
    assert_names("constant char *s = R\"(/*)\"; // #include \"a.h\"\n", "a.h;");
    assert_names("#include \"a\\\"b.h\" // #include \"c.h\"\n", "a\\;a\\\"b.h;c.h;");
}

/* The unkeyable macros are found as the includes are. */
Test(opencl_c_scan, macros_read_as_includes_are)
{
    const char *macro = NULL;
    const char *hidden = "// __TIME__\n/* __FILE__ */ \"__DATE__\" '__TIME__' x__TIME__\n"
                         "#include <a/*b.h>\n";
    cr_assert_eq(zc_opencl_c_unkeyable_macro(hidden, strlen(hidden), &macro), ZC_OK);
    cr_assert_null(macro, "%s", macro);
    const char *after_header = "#include <a/*b.h>\n__TIME__ */\n";
    cr_assert_eq(zc_opencl_c_unkeyable_macro(after_header, strlen(after_header), &macro), ZC_OK);
    cr_assert_str_eq(macro, "__TIME__");
    const char *trigraph = "char c = '?"
                           "?/''; __DATE__ '\n";
    cr_assert_eq(zc_opencl_c_unkeyable_macro(trigraph, strlen(trigraph), &macro), ZC_OK);
    cr_assert_str_eq(macro, "__DATE__");
}

/* What one scan of text found: its status, its names and its words. */
typedef struct reading {
    char found[4096];
    zc_status status;
} reading;

static zc_status collect_word(void *context, const char *word, size_t length)
{
    char *found = context;
    if (strlen(found) + length + 2 < sizeof(((reading *)0)->found)) {
        strncat(found, word, length);
        strcat(found, "|");
    }
    return ZC_OK;
}

static zc_status collect_name(void *context, const zc_include_ref *ref)
{
    char *found = context;
    if (strlen(found) + ref->length + 2 < sizeof(((reading *)0)->found)) {
        strncat(found, ref->name, ref->length);
        strcat(found, ";");
    }
    return ZC_OK;
}

static reading read_text(const char *text, size_t size)
{
    reading r = {.found = ""};
    char reason[128];
    r.status = zc_opencl_c_scan_all(text, size, collect_name, collect_word, r.found, reason,
                                    sizeof reason);
    return r;
}

/* Most texts are their own logical text (no splice, trigraph or digraph),
 * and the scan then reads them as they are, without a copy: random texts
 * of the pieces those are made of read the same as with "??" or a splice
 * appended, either of which makes the scan take the copy and changes
 * nothing else. */
Test(opencl_c_scan, a_text_without_splices_reads_as_one_with_them)
{
    static const char *const pieces[] = {"#include \"a.h\"\n",
                                         "#inc",
                                         "lude <b.h>\n",
                                         "\\\n",
                                         "\\",
                                         " \\ \n",
                                         "?\?/\n",
                                         "?\?=",
                                         "?",
                                         "%:",
                                         "%",
                                         ":",
                                         "__TIME__",
                                         "__FI",
                                         "LE__",
                                         "_x",
                                         " y ",
                                         "\"s\\\"\"",
                                         "'c'",
                                         "/* c */",
                                         "// l\n",
                                         "\n",
                                         "__has_include(<c.h>)",
                                         "a?b:c",
                                         "\r\n",
                                         "\\\r\n",
                                         "\n%:include <d.h>\n",
                                         "\n?\?=include <e.h>\n",
                                         "\n%\\\n:include <f.h>\n"};
    unsigned seed = 7;
    for (int round = 0; round < 20000; round++) {
        char text[512] = "";
        int count = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 10;
        for (int i = 0; i < count; i++) {
            seed = seed * 1103515245u + 12345u;
            strcat(text, pieces[(seed >> 16) % (sizeof pieces / sizeof pieces[0])]);
        }
        reading as_given = read_text(text, strlen(text));
        size_t size = strlen(text);
        for (int appended = 0; appended < 2; appended++) {
            strcpy(text + size, appended == 0 ? "??" : "\\\n");
            reading copied = read_text(text, strlen(text));
            cr_assert_eq(as_given.status, copied.status, "in: %s", text);
            cr_assert_str_eq(as_given.found, copied.found, "in: %s", text);
        }
    }
}
