/* zc_opencl_c_scan: the names it finds, read past comments and literals as
 * clang reads them, and everywhere when that reading is not sure. */
#include <criterion/criterion.h>
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
