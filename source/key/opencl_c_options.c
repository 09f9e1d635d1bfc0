/* Build options as the key reads them (opencl_c_options.h).
 *
 * Refused, since they name files (or file systems) the key would have to
 * follow and does not: -include, -imacros, -isystem, -iquote, -idirafter
 * and every other option starting with "-i" (no OpenCL option does), their
 * "--" spellings (--include=, --imacros, --sysroot, --embed-dir, ...), -I=
 * (relative to the sysroot), -F, @file (options read from a file), -s (the
 * source's file name: IGC's quoted includes would search its directory),
 * -B, -Xclang, -Xpreprocessor, -Wp, (options passed on unread), and the
 * -f options that read files: modules, profiles, sanitizer lists, plugins.
 * -x and -cl-ext= read no file: their text is keyed with the options. */
#include "opencl_c_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A split of the options into words. */
typedef struct words {
    char **items;
    size_t count, capacity;
} words;

static void words_free(words *w)
{
    for (size_t i = 0; i < w->count; i++)
        free(w->items[i]);
    free(w->items);
    *w = (words){0};
}

static bool words_add(words *w, const char *bytes, size_t length)
{
    if (w->count == w->capacity) {
        size_t capacity = w->capacity > 0 ? 2 * w->capacity : 16;
        char **items = realloc(w->items, capacity * sizeof *items);
        if (items == NULL)
            return false;
        w->items = items;
        w->capacity = capacity;
    }
    char *copy = malloc(length + 1);
    if (copy == NULL)
        return false;
    memcpy(copy, bytes, length);
    copy[length] = '\0';
    w->items[w->count++] = copy;
    return true;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Split on white space, nothing else. */
static bool split_plain(const char *options, words *out)
{
    for (const char *p = options; *p != '\0';) {
        while (is_space(*p))
            p++;
        const char *start = p;
        while (*p != '\0' && !is_space(*p))
            p++;
        if (p > start && !words_add(out, start, (size_t)(p - start)))
            return false;
    }
    return true;
}

/* Split as a shell does without expansions (LLVM's GNU tokenizer): quotes
 * group, a backslash takes the next byte as it is (outside single quotes). */
static bool split_quoted(const char *options, words *out)
{
    size_t length = strlen(options);
    char *word = malloc(length + 1);
    if (word == NULL)
        return false;
    bool ok = true;
    for (const char *p = options; ok && *p != '\0';) {
        while (is_space(*p))
            p++;
        if (*p == '\0')
            break;
        size_t n = 0;
        char quote = 0;
        for (; *p != '\0' && (quote != 0 || !is_space(*p)); p++) {
            if (quote == 0 && (*p == '"' || *p == '\''))
                quote = *p;
            else if (quote != 0 && *p == quote)
                quote = 0;
            else if (*p == '\\' && quote != '\'' && p[1] != '\0')
                word[n++] = *++p;
            else
                word[n++] = *p;
        }
        ok = words_add(out, word, n);
    }
    free(word);
    return ok;
}

static bool starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

/* The option of word that reads files the key does not see, or NULL. */
static const char *unseen_file_option(const char *word)
{
    static const char *const prefixes[] = {
        "@",
        "-i",
        "-I=",
        "-F",
        "-B",
        "-Xclang",
        "-Xpreproc",
        "-Wp,",
        "--imacro",
        "--sysroot",
        "--embed",
        "--config",
        "--system-h",
        "--no-syst",
        "-fmodule",
        "-fimplicit-module",
        "-fprebuilt",
        "-fprofile-",
        "-fsanitize-ignorelist",
        "-fsanitize-blacklist",
        "-fplugin",
        "-fpass-plugin",
        "-fembed-dir",
        "-ivfsoverlay",
        "--include-with",
        "--include-prefix",
        "-load",
    };
    if (strcmp(word, "-s") == 0)
        return "-s";
    if (starts_with(word, "--include") && !starts_with(word, "--include-directory"))
        return "--include";
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (starts_with(word, prefixes[i]))
            return prefixes[i];
    return NULL;
}

typedef struct reading {
    char *dirs[ZC_OPENCL_C_INCLUDE_DIRS_MAX];
    size_t dir_count;
    bool debug_info;
} reading;

static void reading_free(reading *r)
{
    for (size_t i = 0; i < r->dir_count; i++)
        free(r->dirs[i]);
    r->dir_count = 0;
}

static zc_status add_dir(reading *r, const char *dir, char *reason, size_t reason_size)
{
    if (r->dir_count == ZC_OPENCL_C_INCLUDE_DIRS_MAX)
        return zc_explain(ZC_NOT_CACHEABLE, reason, reason_size, "more than %d -I directories",
                          ZC_OPENCL_C_INCLUDE_DIRS_MAX);
    r->dirs[r->dir_count] = strdup(dir);
    if (r->dirs[r->dir_count] == NULL)
        return ZC_ERR_NOMEM;
    r->dir_count++;
    return ZC_OK;
}

/* The -I directory word i gives ("-Idir", "-I dir", "--include-directory=dir"
 * or "--include-directory dir"), and how many words it took. */
static const char *include_dir_of(const words *w, size_t i, size_t *taken)
{
    static const char *const spellings[] = {"--include-directory=", "--include-directory", "-I"};
    *taken = 1;
    for (size_t s = 0; s < 3; s++) {
        if (!starts_with(w->items[i], spellings[s]))
            continue;
        const char *rest = w->items[i] + strlen(spellings[s]);
        if (rest[0] != '\0' || s == 0)
            return rest;
        if (i + 1 == w->count)
            return NULL; /* an -I without a directory: the compiler's error */
        *taken = 2;
        return w->items[i + 1];
    }
    return NULL;
}

static zc_status read_words(const words *w, reading *r, char *reason, size_t reason_size)
{
    for (size_t i = 0; i < w->count;) {
        const char *option = unseen_file_option(w->items[i]);
        if (option != NULL)
            return zc_explain(ZC_NOT_CACHEABLE, reason, reason_size,
                              "build option %s reads files the key cannot see (%.64s)", option,
                              w->items[i]);
        if (starts_with(w->items[i], "-g"))
            r->debug_info = true;
        size_t taken;
        const char *dir = include_dir_of(w, i, &taken);
        if (dir != NULL) {
            zc_status status = add_dir(r, dir, reason, reason_size);
            if (status != ZC_OK)
                return status;
        }
        i += taken;
    }
    return ZC_OK;
}

static bool same_dirs(const reading *a, const reading *b)
{
    if (a->dir_count != b->dir_count)
        return false;
    for (size_t i = 0; i < a->dir_count; i++)
        if (strcmp(a->dirs[i], b->dirs[i]) != 0)
            return false;
    return true;
}

static zc_status read_split(const char *options, bool quoted, reading *r, char *reason,
                            size_t reason_size)
{
    words w = {0};
    zc_status status = (quoted ? split_quoted : split_plain)(options, &w)
                           ? read_words(&w, r, reason, reason_size)
                           : ZC_ERR_NOMEM;
    words_free(&w);
    return status;
}

zc_status zc_opencl_c_options_parse(const char *options, zc_opencl_c_options *out, char *reason,
                                    size_t reason_size)
{
    if (out == NULL)
        return ZC_ERR_INVALID_ARG;
    *out = (zc_opencl_c_options){0};
    if (options == NULL)
        return ZC_OK;
    reading plain = {0}, quoted = {0};
    zc_status status = read_split(options, false, &plain, reason, reason_size);
    if (status == ZC_OK)
        status = read_split(options, true, &quoted, reason, reason_size);
    if (status == ZC_OK && !same_dirs(&plain, &quoted))
        status = zc_explain(ZC_NOT_CACHEABLE, reason, reason_size,
                            "-I directories with quotes or backslashes: drivers split them "
                            "differently");
    if (status == ZC_OK) {
        memcpy(out->include_dirs, plain.dirs, sizeof plain.dirs);
        out->include_dir_count = plain.dir_count;
        out->debug_info = plain.debug_info || quoted.debug_info;
        plain.dir_count = 0;
    }
    reading_free(&plain);
    reading_free(&quoted);
    return status;
}

void zc_opencl_c_options_free(zc_opencl_c_options *options)
{
    if (options == NULL)
        return;
    for (size_t i = 0; i < options->include_dir_count; i++)
        free(options->include_dirs[i]);
    options->include_dir_count = 0;
}
