/* zc_key_add_opencl_c: an OpenCL C source, its options, and every header
 * it can include, as the compiler's front end (clang, inside IGC or PoCL)
 * finds them for a program made from a string.
 *
 * A program from a string has no directory of its own: its quoted includes
 * are searched in the working directory (where IGC's clang looks; PoCL
 * compiles a copy of the source in a directory of its own cache, holding
 * no headers), then in each -I directory in
 * order (relative ones from the working directory), then in the system
 * directories /usr/local/include and /usr/include, which clang searches
 * unless told not to (searching them when it does not only keys more);
 * angled ones skip the working directory. A header's own quoted includes
 * search its directory first. A name found nowhere may be one the compiler
 * embeds (opencl-c.h), part of its identity: "not found" is keyed for it
 * like any absent candidate. For each name the key holds every candidate
 * tried up to the one found (so a header created earlier in the search
 * changes the key), then that one's path and content. Every candidate is
 * keyed, found or not, for an #include_next (or __has_include_next), since
 * which ones it skips depends on where its includer was found, and for the
 * source's own quoted includes, since which directory a driver searches
 * first for them differs (the working directory, or a directory of its own). Every header found is
 * scanned in turn (opencl_c_scan.h), each once; a cycle ends there.
 *
 * Bounds: ZC_OPENCL_C_HEADERS_MAX headers, ZC_OPENCL_C_HEADER_BYTES_MAX
 * bytes of them and ZC_OPENCL_C_LOOKUPS_MAX names; past any of them the
 * program is not cacheable. A header that exists but cannot be read (or is
 * neither a regular file nor a directory) is not cacheable either: the
 * compiler's view of it is unknown. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_order.h"
#include "key_record.h"
#include "opencl_c_key.h"
#include "opencl_c_options.h"
#include "opencl_c_scan.h"
#include "zecache/sha256.h"

static const char *const system_dirs[] = {"/usr/local/include", "/usr/include"};
#define SYSTEM_DIR_COUNT (sizeof system_dirs / sizeof system_dirs[0])

/* A header found, to scan in turn. */
typedef struct header {
    char *path;
    char *dir; /* where its quoted includes are searched first */
    char *content;
    size_t size;
} header;

/* A name already looked up from a directory: the same lookup keys once. */
typedef struct lookup {
    char *name;
    char *dir;
    bool angled, every;
} lookup;

/* Headers are scanned in the order found (a queue, not recursion, so the
 * stack stays small however deep the includes go). */
typedef struct resolver {
    zc_key_builder *builder;
    zc_opencl_c_options options;
    char cwd[PATH_MAX];
    /* The -I directories made absolute, then the system directories. */
    char *dirs[ZC_OPENCL_C_INCLUDE_DIRS_MAX + SYSTEM_DIR_COUNT];
    size_t dir_count;
    /* Grown as needed up to their bounds: most sources include nothing,
     * and a resolver of full arrays (60 KB, zeroed and page-faulted in on
     * every source build) cost more than the rest of the key. */
    header *headers;
    size_t header_count, header_capacity;
    uint64_t header_bytes;
    lookup *lookups;
    size_t lookup_count, lookup_capacity;
    const char *current_dir; /* the includer's directory during its scan */
    bool in_source;          /* scanning the source itself, not a header */
} resolver;

typedef enum candidate_state {
    CANDIDATE_ABSENT = 0,
    CANDIDATE_NOT_A_FILE = 1, /* a directory: clang looks further */
    CANDIDATE_FOUND = 2,
} candidate_state;

static zc_status refuse(resolver *r, zc_status status, const char *what)
{
    return zc_key_refuse(r->builder, status, "OpenCL C: %s", what);
}

/* array (of *capacity elements of size element, count used) with room for
 * one more, grown by doubling up to max (which count is below); NULL when
 * out of memory, array then unchanged. */
static void *with_room(void *array, size_t *capacity, size_t count, size_t element, size_t max)
{
    if (count < *capacity)
        return array;
    size_t grown = *capacity == 0 ? 8 : *capacity * 2;
    grown = grown < max ? grown : max;
    void *bigger = realloc(array, grown * element);
    if (bigger != NULL)
        *capacity = grown;
    return bigger;
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

/* Reads a regular file whole within the header budget. */
static zc_status read_header(resolver *r, int fd, uint64_t size, char **out)
{
    if (size > ZC_OPENCL_C_HEADER_BYTES_MAX - r->header_bytes)
        return refuse(r, ZC_NOT_CACHEABLE, "its headers are larger than the bound");
    char *bytes = malloc((size_t)size + 1);
    if (bytes == NULL)
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header");
    size_t done = 0;
    for (;;) {
        ssize_t got = read(fd, bytes + done, (size_t)size + 1 - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += (size_t)got;
        if (done > size)
            break;
    }
    if (done != size) {
        free(bytes);
        return refuse(r, ZC_NOT_CACHEABLE, "a header changed size while it was read");
    }
    r->header_bytes += size;
    *out = bytes;
    return ZC_OK;
}

static void record_candidate(resolver *r, const char *path, candidate_state state, uint64_t size,
                             const uint8_t digest[ZC_SHA256_SIZE])
{
    size_t length = strlen(path);
    uint8_t head[1 + 8 + ZC_SHA256_SIZE];
    head[0] = (uint8_t)state;
    size_t head_size = 1;
    if (state == CANDIDATE_FOUND) {
        zc_put_le64(head + 1, size);
        memcpy(head + 9, digest, ZC_SHA256_SIZE);
        head_size = sizeof head;
    }
    zc_key_record_start(r->builder, ZC_KEY_TAG_OPENCL_C_CANDIDATE, head_size + (uint64_t)length);
    zc_key_record_more(r->builder, head, head_size);
    zc_key_record_more(r->builder, path, length);
    static const char *const names[] = {"absent", "not a file", "found"};
    zc_key_trace(r->builder, "  %s: %s", path, names[state]);
    if (state == CANDIDATE_FOUND) {
        zc_key_trace(r->builder, " %llu bytes sha256 ", (unsigned long long)size);
        zc_key_trace_hex(r->builder, digest, ZC_SHA256_SIZE);
    }
    zc_key_trace(r->builder, "\n");
}

/* Keeps a found header to scan (the bytes keyed are the bytes scanned),
 * once per path; takes content. */
static zc_status queue_header(resolver *r, const char *path, char *content, size_t size)
{
    for (size_t i = 0; i < r->header_count; i++) {
        if (strcmp(r->headers[i].path, path) != 0)
            continue;
        bool same = r->headers[i].size == size && memcmp(r->headers[i].content, content, size) == 0;
        free(content);
        return same ? ZC_OK : refuse(r, ZC_NOT_CACHEABLE, "a header changed while it was read");
    }
    if (r->header_count == ZC_OPENCL_C_HEADERS_MAX) {
        free(content);
        return refuse(r, ZC_NOT_CACHEABLE, "it can include more headers than the bound");
    }
    header *headers = with_room(r->headers, &r->header_capacity, r->header_count, sizeof *headers,
                                ZC_OPENCL_C_HEADERS_MAX);
    if (headers == NULL) {
        free(content);
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header");
    }
    r->headers = headers;
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

/* Looks at one candidate path; a found header is keyed and queued. */
static zc_status try_candidate(resolver *r, const char *path, candidate_state *state)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG)) {
        *state = CANDIDATE_ABSENT;
    } else if (fd < 0 && errno == EISDIR) {
        *state = CANDIDATE_NOT_A_FILE;
    } else if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return refuse(r, ZC_NOT_CACHEABLE, "a header it can include cannot be read");
    } else if (S_ISDIR(st.st_mode)) {
        *state = CANDIDATE_NOT_A_FILE;
    } else if (!S_ISREG(st.st_mode)) {
        close(fd);
        return refuse(r, ZC_NOT_CACHEABLE, "a header it can include is not a regular file");
    } else {
        char *content = NULL;
        zc_status status = read_header(r, fd, (uint64_t)st.st_size, &content);
        close(fd);
        uint8_t digest[ZC_SHA256_SIZE];
        if (status == ZC_OK && !zc_sha256_digest(content, (size_t)st.st_size, digest))
            status = refuse(r, ZC_ERR_NOMEM, "SHA-256 of a header failed");
        if (status != ZC_OK) {
            free(content);
            return status;
        }
        record_candidate(r, path, CANDIDATE_FOUND, (uint64_t)st.st_size, digest);
        *state = CANDIDATE_FOUND;
        return queue_header(r, path, content, (size_t)st.st_size);
    }
    if (fd >= 0)
        close(fd);
    record_candidate(r, path, *state, 0, NULL);
    return ZC_OK;
}

/* The i-th directory name is searched in: the includer's (quoted names
 * only), then r->dirs. */
static const char *search_dir(const resolver *r, size_t i)
{
    return i == 0 ? r->current_dir : r->dirs[i - 1];
}

/* Looks up name in order; stops at the first found unless ref->next. An
 * absolute name is its only candidate. */
static zc_status search(resolver *r, const zc_include_ref *ref, const char *name, bool every)
{
    bool absolute = name[0] == '/';
    size_t first = absolute || !ref->angled ? 0 : 1;
    size_t end = absolute ? 1 : 1 + r->dir_count;
    for (size_t i = first; i < end; i++) {
        char path[PATH_MAX];
        if (!join(path, absolute ? "" : search_dir(r, i), name))
            return refuse(r, ZC_NOT_CACHEABLE, "a header path is too long");
        candidate_state state = CANDIDATE_ABSENT;
        zc_status status = try_candidate(r, path, &state);
        if (status != ZC_OK)
            return status;
        if (state == CANDIDATE_FOUND && !every)
            break;
    }
    return ZC_OK;
}

/* Whether this name was looked up from this directory already. */
static bool seen_lookup(const resolver *r, const zc_include_ref *ref, const char *name, bool every)
{
    for (size_t i = 0; i < r->lookup_count; i++) {
        const lookup *l = &r->lookups[i];
        if (l->angled == ref->angled && l->every == every && strcmp(l->name, name) == 0 &&
            (ref->angled || strcmp(l->dir, r->current_dir) == 0))
            return true;
    }
    return false;
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

static zc_status on_include(void *context, const zc_include_ref *ref)
{
    resolver *r = context;
    if (ref->length == 0 || ref->length >= PATH_MAX)
        return ZC_OK; /* #include "" is the compiler's error, keyed with the text */
    char name[PATH_MAX];
    memcpy(name, ref->name, ref->length);
    name[ref->length] = '\0';
    bool every = ref->next || (r->in_source && !ref->angled);
    if (seen_lookup(r, ref, name, every))
        return ZC_OK;
    if (r->lookup_count == ZC_OPENCL_C_LOOKUPS_MAX)
        return refuse(r, ZC_NOT_CACHEABLE, "it names more headers than the bound");
    lookup *lookups = with_room(r->lookups, &r->lookup_capacity, r->lookup_count, sizeof *lookups,
                                ZC_OPENCL_C_LOOKUPS_MAX);
    if (lookups == NULL)
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header name");
    r->lookups = lookups;
    lookup *l = &r->lookups[r->lookup_count];
    *l = (lookup){strdup(name), strdup(r->current_dir), ref->angled, every};
    if (l->name == NULL || l->dir == NULL) {
        free(l->name);
        free(l->dir);
        return refuse(r, ZC_ERR_NOMEM, "out of memory for a header name");
    }
    r->lookup_count++;
    record_lookup(r, ref, name, every);
    return search(r, ref, name, every);
}

static zc_status scan_text(resolver *r, const char *text, size_t size, const char *dir)
{
    char reason[200];
    r->current_dir = dir;
    zc_status status = zc_opencl_c_scan(text, size, on_include, r, reason, sizeof reason);
    if (status == ZC_OK || zc_key_part_usable(r->builder) != ZC_OK)
        return status; /* refused inside, with its own reason */
    return refuse(r, status, status == ZC_NOT_CACHEABLE ? reason : "out of memory scanning");
}

/* The options, and the -I directories made absolute (from the working
 * directory) followed by the system directories. */
static zc_status prepare(resolver *r, const char *options)
{
    char reason[200];
    zc_status status = zc_opencl_c_options_parse(options, &r->options, reason, sizeof reason);
    if (status != ZC_OK)
        return refuse(r, status, status == ZC_ERR_NOMEM ? "out of memory" : reason);
    if (getcwd(r->cwd, sizeof r->cwd) == NULL)
        return refuse(r, ZC_NOT_CACHEABLE, "the working directory is unknown");
    for (size_t i = 0; i < r->options.include_dir_count + SYSTEM_DIR_COUNT; i++) {
        char dir[PATH_MAX];
        bool given = i < r->options.include_dir_count;
        if (!join(dir, r->cwd,
                  given ? r->options.include_dirs[i]
                        : system_dirs[i - r->options.include_dir_count]))
            return refuse(r, ZC_NOT_CACHEABLE, "an -I directory's path is too long");
        r->dirs[r->dir_count] = strdup(dir);
        if (r->dirs[r->dir_count] == NULL)
            return refuse(r, ZC_ERR_NOMEM, "out of memory");
        r->dir_count++;
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

static void resolver_free(resolver *r)
{
    zc_opencl_c_options_free(&r->options);
    for (size_t i = 0; i < r->dir_count; i++)
        free(r->dirs[i]);
    for (size_t i = 0; i < r->header_count; i++) {
        free(r->headers[i].path);
        free(r->headers[i].dir);
        free(r->headers[i].content);
    }
    for (size_t i = 0; i < r->lookup_count; i++) {
        free(r->lookups[i].name);
        free(r->lookups[i].dir);
    }
    free(r->headers);
    free(r->lookups);
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
    r->in_source = true;
    status = scan_text(r, source, size, r->cwd);
    r->in_source = false;
    for (size_t i = 0; status == ZC_OK && i < r->header_count; i++)
        status = scan_text(r, r->headers[i].content, r->headers[i].size, r->headers[i].dir);
    return status;
}

zc_status zc_key_add_opencl_c(zc_key_builder *builder, const char *source, size_t size,
                              const char *options)
{
    zc_status status = zc_key_part_usable(builder);
    if (status != ZC_OK)
        return status;
    if (source == NULL && size > 0)
        return zc_key_refuse(builder, ZC_ERR_INVALID_ARG, "OpenCL C source is NULL");
    uint8_t digest[ZC_SHA256_SIZE];
    if (!zc_sha256_digest(source != NULL ? source : "", size, digest))
        return zc_key_refuse(builder, ZC_ERR_NOMEM, "SHA-256 of the OpenCL C source failed");
    record_source(builder, size, options, digest);
    resolver *r = calloc(1, sizeof *r);
    if (r == NULL)
        return zc_key_refuse(builder, ZC_ERR_NOMEM, "out of memory for the OpenCL C headers");
    r->builder = builder;
    status = resolve(r, source != NULL ? source : "", size, options);
    resolver_free(r);
    return status;
}
