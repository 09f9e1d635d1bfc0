/* zc_key_add_opencl_c: an OpenCL C source, its options, and every header
 * it can include, as the compiler's front end (clang, inside IGC or PoCL)
 * finds them for a program made from a string.
 *
 * Where each front end looks, measured with Intel's 22.43 and PoCL 3.1:
 * quoted names first in the includer's directory (for the program itself,
 * the working directory on Intel; PoCL compiles a copy of the source in a
 * directory of its own cache, holding no headers), then
 *   Intel: each -I directory in order, the working directory, then
 *          /usr/local/include and /usr/include;
 *   PoCL:  the working directory (it passes -I. before the application's
 *          options), then each -I directory; no system directory (they are
 *          searched here too: that only keys more).
 * Angled names the same without the includer's directory. Relative -I
 * directories are the working directory's. For an unknown driver every
 * candidate of both lists is keyed. A name found nowhere may be one the
 * compiler embeds (opencl-c.h), part of its identity: "not found" is keyed
 * for it like any absent candidate. For each name the key holds every
 * candidate tried up to the one found (so a header created earlier in the
 * search changes the key), then that one's path and content; every one for
 * an #include_next (or __has_include_next), since which ones it skips
 * depends on where its includer was found. Every header found is scanned in
 * turn (opencl_c_scan.h), each once; a cycle ends there. A text naming a
 * macro the key cannot hold (opencl_c_macros.h) is not cacheable.
 *
 * Bounds: ZC_OPENCL_C_HEADERS_MAX headers, ZC_OPENCL_C_HEADER_BYTES_MAX
 * bytes of them and ZC_OPENCL_C_LOOKUPS_MAX names; past any of them the
 * program is not cacheable. Names and paths already seen are found in hash
 * tables, so the work grows with the text, not with its names squared. A
 * header that exists but cannot be read (or is neither a regular file nor a
 * directory) is not cacheable either: the compiler's view of it is
 * unknown. */
#include <limits.h>
#include <search.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "byte_order.h"
#include "key_record.h"
#include "opencl_c_key.h"
#include "opencl_c_macros.h"
#include "opencl_c_options.h"
#include "opencl_c_scan.h"
#include "zecache/key_files.h"
#include "zecache/sha256.h"

static const char *const system_dirs[] = {"/usr/local/include", "/usr/include"};
#define SYSTEM_DIR_COUNT (sizeof system_dirs / sizeof system_dirs[0])
/* The most directories one name is looked for in. */
#define SEARCH_MAX (3 + 2 * ZC_OPENCL_C_INCLUDE_DIRS_MAX + SYSTEM_DIR_COUNT)

static atomic_uint_fast64_t sources_keyed;

/* A header found, to scan in turn. */
typedef struct header {
    char *path;
    char *dir; /* where its quoted includes are searched first */
    char *content;
    size_t size;
} header;

/* Headers are scanned in the order found (a queue, not recursion, so the
 * stack stays small however deep the includes go). */
typedef struct resolver {
    zc_key_builder *builder;
    zc_opencl_c_driver driver;
    zc_opencl_c_options options;
    char cwd[PATH_MAX];
    char *include_dirs[ZC_OPENCL_C_INCLUDE_DIRS_MAX]; /* the -I ones, absolute */
    size_t include_dir_count;
    /* Grown as needed up to their bounds: most sources include nothing. */
    header *headers;
    size_t header_count, header_capacity;
    uint64_t header_bytes;
    /* Lookups done (name, kind, includer directory) and headers queued
     * (path), each a hash table over strings kept in the pool below. */
    struct hsearch_data lookups_seen, headers_seen;
    bool tables_made;
    char **names;
    size_t name_count;
    const char *current_dir; /* the includer's directory during its scan */
    const char *macro;       /* an unkeyable macro its scan found */
} resolver;

static zc_status refuse(resolver *r, zc_status status, const char *what)
{
    return zc_key_refuse(r->builder, status, "OpenCL C: %s", what);
}

/* dir/name, or name when it is absolute; false when it does not fit. */
static bool join(char *out, const char *dir, const char *name)
{
    int n = name[0] == '/' ? snprintf(out, PATH_MAX, "%s", name)
                           : snprintf(out, PATH_MAX, "%s/%s", dir, name);
    return n >= 0 && n < PATH_MAX;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t length = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(length + 1);
    if (dir != NULL) {
        memcpy(dir, path, length);
        dir[length] = '\0';
    }
    return dir;
}

/* The tables of names, made at the first include: most sources have none,
 * and making them costs a hit more than scanning a small source. */
static bool make_tables(resolver *r)
{
    size_t names_max = ZC_OPENCL_C_LOOKUPS_MAX + ZC_OPENCL_C_HEADERS_MAX;
    r->names = calloc(names_max, sizeof *r->names);
    if (r->names == NULL || hcreate_r(names_max * 2, &r->lookups_seen) == 0)
        return false;
    if (hcreate_r(ZC_OPENCL_C_HEADERS_MAX * 2, &r->headers_seen) == 0) {
        hdestroy_r(&r->lookups_seen);
        return false;
    }
    r->tables_made = true;
    return true;
}

/* Enters name in table unless there; *index is its value (the one given
 * when new). false when out of memory; *added says whether it was new. */
static bool remember(resolver *r, struct hsearch_data *table, char *name, size_t *index,
                     bool *added)
{
    ENTRY *found = NULL;
    ENTRY wanted = {name, NULL};
    *added = false;
    if (!r->tables_made && !make_tables(r)) {
        free(name);
        return false;
    }
    if (hsearch_r(wanted, FIND, &found, table) != 0 && found != NULL) {
        *index = (size_t)(uintptr_t)found->data;
        free(name);
        return true;
    }
    r->names[r->name_count] = name;
    wanted.data = (void *)(uintptr_t)*index;
    if (hsearch_r(wanted, ENTER, &found, table) == 0) {
        free(name);
        return false;
    }
    r->name_count++;
    *added = true;
    return true;
}

static void record_candidate(resolver *r, const char *path, zc_key_file_state state, uint64_t size,
                             const uint8_t digest[ZC_SHA256_SIZE])
{
    size_t length = strlen(path);
    uint8_t head[1 + 8 + ZC_SHA256_SIZE];
    head[0] = (uint8_t)state;
    size_t head_size = 1;
    if (state == ZC_KEY_FILE_FOUND) {
        zc_put_le64(head + 1, size);
        memcpy(head + 9, digest, ZC_SHA256_SIZE);
        head_size = sizeof head;
    }
    zc_key_record_start(r->builder, ZC_KEY_TAG_OPENCL_C_CANDIDATE, head_size + (uint64_t)length);
    zc_key_record_more(r->builder, head, head_size);
    zc_key_record_more(r->builder, path, length);
    static const char *const names[] = {"absent", "not a file", "found"};
    zc_key_trace(r->builder, "  %s: %s", path, names[state]);
    if (state == ZC_KEY_FILE_FOUND) {
        zc_key_trace(r->builder, " %llu bytes sha256 ", (unsigned long long)size);
        zc_key_trace_hex(r->builder, digest, ZC_SHA256_SIZE);
    }
    zc_key_trace(r->builder, "\n");
}

/* Keeps a found header to scan (the bytes keyed are the bytes scanned),
 * once per path; takes content. */
static zc_status queue_header(resolver *r, const char *path, char *content, size_t size)
{
    char *name = strdup(path);
    size_t index = r->header_count;
    bool added = false;
    if (name == NULL || !remember(r, &r->headers_seen, name, &index, &added)) {
        free(content);
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header");
    }
    if (!added) {
        const header *old = &r->headers[index];
        bool same = old->size == size && memcmp(old->content, content, size) == 0;
        free(content);
        return same ? ZC_OK : refuse(r, ZC_NOT_CACHEABLE, "a header changed while it was read");
    }
    header *h = &r->headers[r->header_count];
    *h = (header){strdup(path), dir_of(path), content, size};
    if (h->path == NULL || h->dir == NULL) {
        free(h->path);
        free(h->dir);
        free(content);
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header");
    }
    r->header_count++;
    return ZC_OK;
}

/* Room for one more header within the bound. */
static zc_status header_room(resolver *r)
{
    if (r->header_count == ZC_OPENCL_C_HEADERS_MAX)
        return refuse(r, ZC_NOT_CACHEABLE, "it can include more headers than the bound");
    if (r->header_count < r->header_capacity)
        return ZC_OK;
    size_t grown = r->header_capacity == 0 ? 8 : r->header_capacity * 2;
    grown = grown < ZC_OPENCL_C_HEADERS_MAX ? grown : ZC_OPENCL_C_HEADERS_MAX;
    header *bigger = realloc(r->headers, grown * sizeof *bigger);
    if (bigger == NULL)
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header");
    r->headers = bigger;
    r->header_capacity = grown;
    return ZC_OK;
}

/* Looks at one candidate path: keyed, kept for the check after the
 * compile, and queued when found. */
static zc_status try_candidate(resolver *r, const char *path, zc_key_file_state *state)
{
    char *content = NULL;
    uint64_t size = 0;
    const char *why = NULL;
    zc_status status = header_room(r);
    if (status == ZC_OK)
        status = zc_key_file_read(path, ZC_OPENCL_C_HEADER_BYTES_MAX - r->header_bytes, state,
                                  &content, &size, &why);
    if (status != ZC_OK)
        return status == ZC_ERR_NOMEM ? refuse(r, status, "out of memory for a header")
               : why != NULL          ? refuse(r, status, why)
                                      : status;
    uint8_t digest[ZC_SHA256_SIZE] = {0};
    if (*state == ZC_KEY_FILE_FOUND && !zc_sha256_digest(content, (size_t)size, digest)) {
        free(content);
        return refuse(r, ZC_ERR_NOMEM, "SHA-256 of a header failed");
    }
    zc_key_files *files = zc_key_builder_files(r->builder);
    if (files == NULL || !zc_key_files_add(files, path, *state, size, digest)) {
        free(content);
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header");
    }
    record_candidate(r, path, *state, size, digest);
    if (*state != ZC_KEY_FILE_FOUND)
        return ZC_OK;
    r->header_bytes += size;
    return queue_header(r, path, content, (size_t)size);
}

static void add_dirs(const char **list, size_t *count, char *const *dirs, size_t dir_count)
{
    for (size_t i = 0; i < dir_count; i++)
        list[(*count)++] = dirs[i];
}

/* Where this driver's front end looks for a name, in order. */
static size_t search_list(const resolver *r, bool angled, const char **list)
{
    size_t count = 0;
    if (!angled)
        list[count++] = r->current_dir;
    if (r->driver != ZC_OPENCL_C_IGC)
        list[count++] = r->cwd;
    add_dirs(list, &count, r->include_dirs, r->include_dir_count);
    if (r->driver != ZC_OPENCL_C_POCL)
        list[count++] = r->cwd;
    for (size_t i = 0; i < SYSTEM_DIR_COUNT; i++)
        list[count++] = system_dirs[i];
    return count;
}

/* Looks up name in order; stops at the first found unless every. An
 * absolute name is its only candidate. */
static zc_status search(resolver *r, const zc_include_ref *ref, const char *name, bool every)
{
    const char *list[SEARCH_MAX];
    size_t count = name[0] == '/' ? 1 : search_list(r, ref->angled, list);
    for (size_t i = 0; i < count; i++) {
        char path[PATH_MAX];
        if (!join(path, name[0] == '/' ? "" : list[i], name))
            return refuse(r, ZC_NOT_CACHEABLE, "a header path is too long");
        zc_key_file_state state = ZC_KEY_FILE_ABSENT;
        zc_status status = try_candidate(r, path, &state);
        if (status != ZC_OK)
            return status;
        if (state == ZC_KEY_FILE_FOUND && !every)
            break;
    }
    return ZC_OK;
}

static void record_lookup(resolver *r, const zc_include_ref *ref, const char *name, bool every)
{
    size_t dir_length = ref->angled ? 0 : strlen(r->current_dir);
    uint8_t head[6];
    head[0] = ref->angled;
    head[1] = every;
    zc_put_le32(head + 2, (uint32_t)ref->length);
    zc_key_record_start(r->builder, ZC_KEY_TAG_OPENCL_C_LOOKUP,
                        sizeof head + (uint64_t)ref->length + dir_length);
    zc_key_record_more(r->builder, head, sizeof head);
    zc_key_record_more(r->builder, name, ref->length);
    zc_key_record_more(r->builder, r->current_dir, dir_length);
    zc_key_trace(r->builder, "%s %c%s%c", every ? "include (every candidate)" : "include",
                 ref->angled ? '<' : '"', name, ref->angled ? '>' : '"');
    if (!ref->angled)
        zc_key_trace(r->builder, " from %s", r->current_dir);
    zc_key_trace(r->builder, "\n");
}

/* Whether this name is looked up the first time from here (a quoted name
 * per includer directory); ZC_NOT_CACHEABLE past the bound. */
static zc_status first_lookup(resolver *r, const zc_include_ref *ref, const char *name, bool every,
                              bool *first)
{
    const char *dir = ref->angled ? "" : r->current_dir;
    size_t dir_length = strlen(dir);
    char *entry = malloc(dir_length + ref->length + 32);
    if (entry == NULL)
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header name");
    /* The directory's length first: no name or directory can make two
     * lookups one string. */
    sprintf(entry, "%d%d%zu:%s%s", ref->angled, every, dir_length, dir, name);
    size_t index = 0;
    if (!remember(r, &r->lookups_seen, entry, &index, first))
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header name");
    return ZC_OK;
}

static zc_status on_include(void *context, const zc_include_ref *ref)
{
    resolver *r = context;
    if (ref->length == 0 || ref->length >= PATH_MAX)
        return ZC_OK; /* #include "" is the compiler's error, keyed with the text */
    char name[PATH_MAX];
    memcpy(name, ref->name, ref->length);
    name[ref->length] = '\0';
    bool every = ref->next || r->driver == ZC_OPENCL_C_ANY_DRIVER;
    bool first = false;
    if (r->name_count - r->header_count >= ZC_OPENCL_C_LOOKUPS_MAX)
        return refuse(r, ZC_NOT_CACHEABLE, "it names more headers than the bound");
    zc_status status = first_lookup(r, ref, name, every, &first);
    if (status != ZC_OK || !first)
        return status;
    record_lookup(r, ref, name, every);
    return search(r, ref, name, every);
}

static zc_status refuse_macro(resolver *r, const char *where, const char *macro)
{
    return zc_key_refuse(r->builder, ZC_NOT_CACHEABLE,
                         "OpenCL C: %s names %s, which the driver expands anew at each build: not "
                         "cached",
                         where, macro);
}

/* Refuses text that names a macro the key cannot hold (opencl_c_macros.h);
 * where says whose text it is. */
static zc_status refuse_unkeyable_macro(resolver *r, const char *text, size_t size,
                                        const char *where)
{
    const char *macro = NULL;
    if (zc_opencl_c_unkeyable_macro(text, size, &macro) != ZC_OK)
        return refuse(r, ZC_ERR_NOMEM, "out of memory scanning");
    return macro != NULL ? refuse_macro(r, where, macro) : ZC_OK;
}

static zc_status on_word(void *context, const char *word, size_t length)
{
    resolver *r = context;
    r->macro = zc_opencl_c_unkeyable_word(word, length);
    return r->macro != NULL ? ZC_NOT_CACHEABLE : ZC_OK;
}

/* The text's includes, and the macros it names, in one reading. */
static zc_status scan_text(resolver *r, const char *text, size_t size, const char *dir)
{
    char reason[200];
    r->current_dir = dir;
    r->macro = NULL;
    zc_status status =
        zc_opencl_c_scan_all(text, size, on_include, on_word, r, reason, sizeof reason);
    if (r->macro != NULL)
        return refuse_macro(r, "it", r->macro);
    if (status == ZC_OK || zc_key_part_usable(r->builder) != ZC_OK)
        return status; /* refused inside, with its own reason */
    return refuse(r, status, status == ZC_NOT_CACHEABLE ? reason : "out of memory scanning");
}

/* The options, and the -I directories made absolute (from the working
 * directory). */
static zc_status prepare(resolver *r, const char *options)
{
    char reason[200];
    /* A -D defines a macro as the text does: one that is __TIME__, or a
     * piece pasted into it, is as unkeyable. */
    zc_status status = options != NULL
                           ? refuse_unkeyable_macro(r, options, strlen(options), "a build option")
                           : ZC_OK;
    if (status != ZC_OK)
        return status;
    status = zc_opencl_c_options_parse(options, &r->options, reason, sizeof reason);
    if (status != ZC_OK)
        return refuse(r, status, status == ZC_ERR_NOMEM ? "out of memory" : reason);
    if (getcwd(r->cwd, sizeof r->cwd) == NULL)
        return refuse(r, ZC_NOT_CACHEABLE, "the working directory is unknown");
    for (size_t i = 0; i < r->options.include_dir_count; i++) {
        char dir[PATH_MAX];
        if (!join(dir, r->cwd, r->options.include_dirs[i]))
            return refuse(r, ZC_NOT_CACHEABLE, "an -I directory's path is too long");
        r->include_dirs[i] = strdup(dir);
        if (r->include_dirs[i] == NULL)
            return refuse(r, ZC_ERR_NOMEM, "out of memory");
        r->include_dir_count++;
    }
    return ZC_OK;
}

static void record_source(zc_key_builder *builder, size_t size, const char *options,
                          const uint8_t digest[ZC_SHA256_SIZE])
{
    uint8_t field[8 + ZC_SHA256_SIZE];
    zc_put_le64(field, size);
    memcpy(field + 8, digest, ZC_SHA256_SIZE);
    zc_key_record_field(builder, ZC_KEY_TAG_OPENCL_C, field, sizeof field);
    zc_key_trace(builder, "---- opencl c ----\nsize: %zu\nsha256: ", size);
    zc_key_trace_hex(builder, digest, ZC_SHA256_SIZE);
    uint8_t present = options != NULL;
    size_t length = present ? strlen(options) : 0;
    zc_key_record_start(builder, ZC_KEY_TAG_OPENCL_C_OPTIONS, 1 + (uint64_t)length);
    zc_key_record_more(builder, &present, 1);
    zc_key_record_more(builder, options, length);
    zc_key_trace(builder, present ? "\noptions: \"" : "\noptions: NULL\n");
    if (present) {
        zc_key_trace_escaped(builder, options, length);
        zc_key_trace(builder, "\"\n");
    }
}

/* Which front end's search the key follows, keyed: the same source built
 * through two drivers finds other headers. */
static void record_driver(zc_key_builder *builder, zc_opencl_c_driver driver)
{
    static const char *const names[] = {"any", "IGC", "PoCL"};
    uint8_t which = (uint8_t)driver;
    zc_key_record_field(builder, ZC_KEY_TAG_OPENCL_C_DRIVER, &which, 1);
    zc_key_trace(builder, "header search: %s\n", names[driver]);
}

static void resolver_free(resolver *r)
{
    zc_opencl_c_options_free(&r->options);
    for (size_t i = 0; i < r->include_dir_count; i++)
        free(r->include_dirs[i]);
    for (size_t i = 0; i < r->header_count; i++) {
        free(r->headers[i].path);
        free(r->headers[i].dir);
        free(r->headers[i].content);
    }
    if (r->tables_made) {
        hdestroy_r(&r->lookups_seen);
        hdestroy_r(&r->headers_seen);
    }
    for (size_t i = 0; i < r->name_count; i++)
        free(r->names[i]);
    free(r->names);
    free(r->headers);
    free(r);
}

static zc_status resolve(resolver *r, const char *source, size_t size, const char *options)
{
    zc_status status = prepare(r, options);
    if (status != ZC_OK)
        return status;
    if (r->options.debug_info) {
        zc_key_record_field(r->builder, ZC_KEY_TAG_OPENCL_C_CWD, r->cwd, strlen(r->cwd));
        zc_key_trace(r->builder, "working directory (debug information): %s\n", r->cwd);
    }
    status = scan_text(r, source, size, r->cwd);
    for (size_t i = 0; status == ZC_OK && i < r->header_count; i++)
        status = scan_text(r, r->headers[i].content, r->headers[i].size, r->headers[i].dir);
    return status;
}

uint64_t zc_key_opencl_c_count(void)
{
    return atomic_load(&sources_keyed);
}

zc_status zc_key_add_opencl_c(zc_key_builder *builder, const char *source, size_t size,
                              const char *options, zc_opencl_c_driver driver)
{
    atomic_fetch_add(&sources_keyed, 1);
    zc_status status = zc_key_part_usable(builder);
    if (status != ZC_OK)
        return status;
    if (source == NULL && size > 0)
        return zc_key_refuse(builder, ZC_ERR_INVALID_ARG, "OpenCL C source is NULL");
    if ((unsigned)driver > ZC_OPENCL_C_POCL)
        return zc_key_refuse(builder, ZC_ERR_INVALID_ARG, "unknown OpenCL C driver");
    uint8_t digest[ZC_SHA256_SIZE];
    if (!zc_sha256_digest(source != NULL ? source : "", size, digest))
        return zc_key_refuse(builder, ZC_ERR_NOMEM, "SHA-256 of the OpenCL C source failed");
    record_source(builder, size, options, digest);
    record_driver(builder, driver);
    resolver *r = calloc(1, sizeof *r);
    if (r == NULL)
        return zc_key_refuse(builder, ZC_ERR_NOMEM, "out of memory for the OpenCL C headers");
    r->builder = builder;
    r->driver = driver;
    status = resolve(r, source != NULL ? source : "", size, options);
    resolver_free(r);
    return status;
}
