/* The scenarios of the front end's differential test
 * (test_opencl_differential.c): a seeded random OpenCL C program spread over
 * headers in several directories, its build options and environment and the
 * call pattern that builds it, and the random changes made to it between
 * steps. Each change belongs to a class (diff_class) so that a run can be
 * limited to the classes the layer is known to get right.
 *
 * Headers are statements (the source includes them inside function bodies),
 * so every header found, and which copy of it, shows in what the kernel
 * computes and in its binary. Header-only, as the other support headers. */
#ifndef ZC_DIFF_SCENARIO_H
#define ZC_DIFF_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define DIFF_NAMES 4   /* headers h0.h .. h3.h */
#define DIFF_SOURCES 3 /* source strings at most */
#define DIFF_INCLUDES 3
#define DIFF_COMMENTED 2 /* headers c0.h, c1.h, named only in comments */

/* What the comments class puts before an include of a source: each hides
 * nothing but the c<n>.h names, or nothing at all. */
static const char *const diff_decors[] = {
    "",
    "/* x */ ",
    "/* a\n b */ ",
    " v += '\"' - 34 + sizeof(\"\\\"/*\") - 4 + '\\'' - 39;\n",
    "// continued \\\n#include \"c0.h\"\n",
    "// #include <c1.h>\n/* #include \"c0.h\" */\n",
    "#if 0\n it's /* \"\n#endif\n",
    " v += sizeof(\"// #include <c1.h>\"); // \" /*\n",
};
#define DIFF_DECORS ((int)(sizeof diff_decors / sizeof diff_decors[0]))

/* Where a header can be: the two working directories, the -I directory
 * "i1" under each (given relative, so it follows the working directory),
 * one given by absolute path and one given with -isystem. */
enum { LOC_W1, LOC_W2, LOC_W1_I1, LOC_W2_I1, LOC_ABS, LOC_SYS, DIFF_LOCATIONS };
static const char *const diff_location_dirs[DIFF_LOCATIONS] = {"w1",    "w2",  "w1/i1",
                                                               "w2/i1", "abs", "sys"};

/* What a program uses that differs from build to build. */
enum { SPECIAL_NONE, SPECIAL_TIME, SPECIAL_DATE, SPECIAL_FILE };

enum {
    PATTERN_BUILD,
    PATTERN_REBUILD,
    PATTERN_LINK,
    PATTERN_THREADS,
    PATTERN_SHARED,
    PATTERN_CB_RELEASE,
    PATTERN_CB_BUILD,
    PATTERN_COUNT
};
static const char *const diff_pattern_names[PATTERN_COUNT] = {
    "build", "rebuild", "link", "threads", "shared", "cb-release", "cb-build"};

/* The classes of change, as ZC_DIFF_CLASSES names them. */
typedef enum diff_class {
    CLASS_HEADERS,    /* headers edited, added, removed, shadowed; includes, options */
    CLASS_PATTERNS,   /* rebuilds, compile and link, several builds a process */
    CLASS_THREADS,    /* two threads, a program each */
    CLASS_CWD,        /* headers in the working directory; the directory changed */
    CLASS_TIME,       /* __TIME__, __DATE__ */
    CLASS_FILE,       /* __FILE__, several builds a process */
    CLASS_POCL_ENV,   /* POCL_EXTRA_BUILD_FLAGS before or after clCreateContext */
    CLASS_SHARED,     /* two threads building one program */
    CLASS_CB_RELEASE, /* the build callback releases the program */
    CLASS_CB_BUILD,   /* the build callback builds the same source */
    CLASS_LIBS,       /* Intel's compiler library swapped (LD_LIBRARY_PATH) */
    CLASS_COMMENTS,   /* includes in comments, after comments and tricky literals */
    CLASS_COUNT
} diff_class;
static const char *const diff_class_names[CLASS_COUNT] = {
    "headers", "patterns", "threads",    "cwd",      "time", "file",
    "poclenv", "shared",   "cb-release", "cb-build", "libs", "comments"};

typedef struct diff_scenario {
    int header[DIFF_LOCATIONS][DIFF_NAMES]; /* 0: absent, else its constant */
    int nested[DIFF_LOCATIONS][DIFF_NAMES]; /* -1, or an include: 2 * name + angled */
    int source_count;
    int includes[DIFF_SOURCES][DIFF_INCLUDES]; /* -1, or 2 * name + angled */
    int cwd;                                   /* 0: w1, 1: w2 */
    bool use_i1, use_abs, use_sys, fast_math;
    int define; /* -D M=define when > 0 */
    int extra_flag;
    bool extra_after;  /* POCL_EXTRA_BUILD_FLAGS set after clCreateContext */
    bool patched_libs; /* a copy of libopencl-clang whose FLT_DIG is 7 */
    int special, pattern, repeat;
    bool special_defined; /* __TIME__ or __DATE__ named by -D T=... in the options */
    /* The comments class: what stands before each include of a source
     * (DECOR_*), and the constants of c0.h and c1.h, written everywhere a
     * header can be but named only where the compiler reads no include. */
    int decor[DIFF_SOURCES][DIFF_INCLUDES];
    int commented[DIFF_COMMENTED];
    bool commented_names; /* the kernel's source names both in comments */
    bool commented_edit;  /* this step edited only those: must hit */
} diff_scenario;

/* ---- the random source (splitmix64) ---- */

typedef struct diff_random {
    uint64_t state;
} diff_random;

static inline uint32_t diff_next(diff_random *r, uint32_t bound)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return (uint32_t)((z ^ (z >> 31)) % bound);
}

static inline bool diff_chance(diff_random *r, int percent)
{
    return (int)diff_next(r, 100) < percent;
}

/* ---- what a run may use ---- */

typedef struct diff_allowed {
    bool classes[CLASS_COUNT];
    bool pocl; /* PoCL's platform (computed results; its variables) */
} diff_allowed;

static inline bool diff_location_allowed(const diff_allowed *allowed, int location)
{
    if (location == LOC_W1 || location == LOC_W2 || location == LOC_W2_I1)
        return allowed->classes[CLASS_CWD];
    return true;
}

/* A location a change is made in: one the current working directory sees
 * rather than the other's (which only a change of directory brings in). */
static inline int diff_random_location(diff_random *r, const diff_allowed *allowed, int cwd)
{
    int location;
    do
        location = (int)diff_next(r, DIFF_LOCATIONS);
    while (!diff_location_allowed(allowed, location));
    if ((location == LOC_W1 || location == LOC_W2) && diff_chance(r, 80))
        return cwd == 0 ? LOC_W1 : LOC_W2;
    if ((location == LOC_W1_I1 || location == LOC_W2_I1) && diff_chance(r, 80))
        return cwd == 0 ? LOC_W1_I1 : LOC_W2_I1;
    return location;
}

/* An include of a name after `after` (so headers never include in a cycle),
 * quoted or angled, or -1. */
static inline int diff_random_include(diff_random *r, int after)
{
    if (after + 1 >= DIFF_NAMES)
        return -1;
    int name = after + 1 + (int)diff_next(r, (uint32_t)(DIFF_NAMES - after - 1));
    return 2 * name + (int)diff_chance(r, 50);
}

static inline void diff_place_header(diff_scenario *s, diff_random *r, int location, int name)
{
    s->header[location][name] = 1 + (int)diff_next(r, 1000);
    s->nested[location][name] = diff_chance(r, 40) ? diff_random_include(r, name) : -1;
}

static inline int diff_random_pattern(diff_random *r, const diff_allowed *allowed)
{
    static const struct {
        int pattern;
        diff_class needs;
    } choices[] = {{PATTERN_REBUILD, CLASS_PATTERNS},      {PATTERN_LINK, CLASS_PATTERNS},
                   {PATTERN_THREADS, CLASS_THREADS},       {PATTERN_SHARED, CLASS_SHARED},
                   {PATTERN_CB_RELEASE, CLASS_CB_RELEASE}, {PATTERN_CB_BUILD, CLASS_CB_BUILD}};
    /* Mostly a plain build: compile and link pass the layer by, and a
     * seed's steps must reach it to mean anything. */
    for (int tries = 0; tries < 8 && diff_chance(r, 50); tries++) {
        size_t i = diff_next(r, sizeof choices / sizeof choices[0]);
        if (allowed->classes[choices[i].needs])
            return choices[i].pattern;
    }
    return PATTERN_BUILD;
}

static inline void diff_random_sources(diff_scenario *s, diff_random *r)
{
    s->source_count = 1 + (int)diff_next(r, DIFF_SOURCES);
    for (int i = 0; i < DIFF_SOURCES; i++)
        for (int j = 0; j < DIFF_INCLUDES; j++)
            s->includes[i][j] = j == 0 || diff_chance(r, 40) ? diff_random_include(r, -1) : -1;
}

/* The comments class's decorations, when it is enabled. */
static inline void diff_random_decors(diff_scenario *s, diff_random *r, const diff_allowed *allowed)
{
    for (int i = 0; i < DIFF_SOURCES; i++)
        for (int j = 0; j < DIFF_INCLUDES; j++)
            s->decor[i][j] =
                allowed->classes[CLASS_COMMENTS] ? (int)diff_next(r, (uint32_t)DIFF_DECORS) : 0;
    for (int i = 0; i < DIFF_COMMENTED; i++)
        s->commented[i] = 1 + (int)diff_next(r, 1000);
    s->commented_names = allowed->classes[CLASS_COMMENTS];
}

static inline void diff_generate(diff_scenario *s, diff_random *r, const diff_allowed *allowed)
{
    memset(s, 0, sizeof *s);
    memset(s->nested, -1, sizeof s->nested);
    s->cwd = allowed->classes[CLASS_CWD] ? (int)diff_next(r, 2) : 0;
    /* Every name at home in the absolute directory (mostly searched, so
     * that most programs build) or in the working directory; some shadowed
     * elsewhere. */
    for (int name = 0; name < DIFF_NAMES; name++) {
        int home = allowed->classes[CLASS_CWD] && diff_chance(r, 50) ? s->cwd : LOC_ABS;
        for (int location = 0; location < DIFF_LOCATIONS; location++)
            if (diff_location_allowed(allowed, location) &&
                (location == home || diff_chance(r, 35)))
                diff_place_header(s, r, location, name);
    }
    diff_random_sources(s, r);
    diff_random_decors(s, r, allowed);
    s->use_i1 = diff_chance(r, 80);
    s->use_abs = diff_chance(r, 90);
    s->use_sys = diff_chance(r, 5);
    s->fast_math = diff_chance(r, 30);
    s->define = diff_chance(r, 50) ? 1 + (int)diff_next(r, 100) : 0;
    s->pattern = diff_random_pattern(r, allowed);
    s->repeat = allowed->classes[CLASS_PATTERNS] || allowed->classes[CLASS_FILE]
                    ? 1 + (int)diff_next(r, 2)
                    : 1;
    if (allowed->classes[CLASS_TIME] && diff_chance(r, 50)) {
        s->special = diff_chance(r, 50) ? SPECIAL_TIME : SPECIAL_DATE;
        s->special_defined = diff_chance(r, 50);
    } else if (allowed->classes[CLASS_FILE] && diff_chance(r, 50))
        s->special = SPECIAL_FILE;
    if (allowed->pocl && allowed->classes[CLASS_POCL_ENV]) {
        s->extra_flag = 1 + (int)diff_next(r, 100);
        s->extra_after = diff_chance(r, 50);
    }
}

/* ---- changes between steps ---- */

/* A header that exists at an allowed location: *location, *name; false if
 * none. */
static inline bool diff_find_header(const diff_scenario *s, diff_random *r,
                                    const diff_allowed *allowed, int *location, int *name)
{
    for (int tries = 0; tries < 32; tries++) {
        *location = diff_random_location(r, allowed, s->cwd);
        *name = (int)diff_next(r, DIFF_NAMES);
        if (s->header[*location][*name] != 0)
            return true;
    }
    return false;
}

/* One change of the headers class, described into what. */
static inline void diff_change_headers(diff_scenario *s, diff_random *r,
                                       const diff_allowed *allowed, char *what, size_t size)
{
    int location, name;
    switch (diff_next(r, 6)) {
    case 0:
        if (diff_find_header(s, r, allowed, &location, &name)) {
            s->header[location][name] = 1 + (int)diff_next(r, 1000);
            snprintf(what, size, "edited %s/h%d.h", diff_location_dirs[location], name);
            return;
        }
        /* nothing to edit: add one */
        /* fall through */
    case 1:
        location = diff_random_location(r, allowed, s->cwd);
        name = (int)diff_next(r, DIFF_NAMES);
        diff_place_header(s, r, location, name);
        snprintf(what, size, "added %s/h%d.h", diff_location_dirs[location], name);
        return;
    case 2:
        if (diff_find_header(s, r, allowed, &location, &name)) {
            s->header[location][name] = 0;
            snprintf(what, size, "removed %s/h%d.h", diff_location_dirs[location], name);
            return;
        }
        snprintf(what, size, "nothing to remove");
        return;
    case 3:
        diff_random_sources(s, r);
        snprintf(what, size, "new source strings");
        return;
    case 4:
        s->define = diff_chance(r, 70) ? 1 + (int)diff_next(r, 100) : 0;
        s->fast_math = !s->fast_math;
        snprintf(what, size, "options: -D M=%d, fast math %d", s->define, s->fast_math);
        return;
    default:
        s->use_i1 = diff_chance(r, 70);
        s->use_abs = diff_chance(r, 85);
        s->use_sys = diff_chance(r, 10);
        snprintf(what, size, "include directories: i1 %d abs %d sys %d", s->use_i1, s->use_abs,
                 s->use_sys);
        return;
    }
}

/* One change of the comments class: a header only comments name edited
 * (a hit), or one the sources include (the driver's result), or the
 * decorations anew. */
static inline void diff_change_comments(diff_scenario *s, diff_random *r,
                                        const diff_allowed *allowed, char *what, size_t size)
{
    int location, name;
    switch (diff_next(r, 3)) {
    case 0:
        name = (int)diff_next(r, DIFF_COMMENTED);
        s->commented[name] = 1 + (int)diff_next(r, 1000);
        s->commented_edit = true;
        snprintf(what, size, "edited c%d.h, which only comments name", name);
        return;
    case 1:
        if (diff_find_header(s, r, allowed, &location, &name)) {
            s->header[location][name] = 1 + (int)diff_next(r, 1000);
            snprintf(what, size, "edited %s/h%d.h", diff_location_dirs[location], name);
            return;
        }
        /* fall through */
    default:
        diff_random_decors(s, r, allowed);
        snprintf(what, size, "new comments and literals before the includes");
        return;
    }
}

/* How often a class's changes come, 0 for one not enabled: the changes to
 * the files the program includes, which most programs meet, more often;
 * the rarer classes' more often than the call patterns every run meets. */
static inline int diff_class_weight(const diff_allowed *allowed, diff_class c)
{
    if (!allowed->classes[c] || (c == CLASS_POCL_ENV && !allowed->pocl) ||
        (c == CLASS_LIBS && allowed->pocl))
        return 0;
    if (c == CLASS_PATTERNS || c == CLASS_THREADS)
        return 1;
    return c == CLASS_HEADERS ? 6 : c == CLASS_CWD ? 4 : 3;
}

/* One random change of an enabled class, described into what. */
static inline void diff_change(diff_scenario *s, diff_random *r, const diff_allowed *allowed,
                               char *what, size_t size)
{
    int total = 0;
    for (int i = 0; i < CLASS_COUNT; i++)
        total += diff_class_weight(allowed, (diff_class)i);
    int pick = (int)diff_next(r, (uint32_t)total);
    s->commented_edit = false;
    diff_class chosen = CLASS_HEADERS;
    for (int i = 0; i < CLASS_COUNT; i++) {
        if (pick < diff_class_weight(allowed, (diff_class)i)) {
            chosen = (diff_class)i;
            break;
        }
        pick -= diff_class_weight(allowed, (diff_class)i);
    }
    switch (chosen) {
    case CLASS_CWD:
        if (diff_chance(r, 30)) {
            s->cwd = !s->cwd;
            snprintf(what, size, "working directory now w%d", s->cwd + 1);
        } else {
            /* A name the sources include, so that the change matters. */
            int include =
                s->includes[diff_next(r, (uint32_t)s->source_count)][diff_next(r, DIFF_INCLUDES)];
            int name = include >= 0 ? include / 2 : (int)diff_next(r, DIFF_NAMES);
            diff_place_header(s, r, s->cwd, name);
            bool moved = diff_chance(r, 50);
            /* Moved from the include directories: found only here now. */
            for (int location = LOC_W1_I1; moved && location <= LOC_ABS; location++)
                s->header[location][name] = 0;
            snprintf(what, size, "%s w%d/h%d.h", moved ? "moved to" : "wrote", s->cwd + 1, name);
        }
        return;
    case CLASS_TIME:
        s->special = diff_chance(r, 50) ? SPECIAL_TIME : SPECIAL_DATE;
        s->special_defined = diff_chance(r, 50);
        snprintf(what, size, "uses %s%s", s->special == SPECIAL_TIME ? "__TIME__" : "__DATE__",
                 s->special_defined ? " through -D T=" : "");
        return;
    case CLASS_FILE:
        s->special = SPECIAL_FILE;
        s->special_defined = false;
        s->repeat = 2;
        snprintf(what, size, "uses __FILE__, two builds");
        return;
    case CLASS_POCL_ENV:
        s->extra_flag = 1 + (int)diff_next(r, 100);
        s->extra_after = diff_chance(r, 50);
        snprintf(what, size, "POCL_EXTRA_BUILD_FLAGS=-DX=%d %s clCreateContext", s->extra_flag,
                 s->extra_after ? "after" : "before");
        return;
    case CLASS_LIBS:
        s->patched_libs = !s->patched_libs;
        snprintf(what, size, "compiler library: %s", s->patched_libs ? "patched" : "installed");
        return;
    case CLASS_HEADERS:
        diff_change_headers(s, r, allowed, what, size);
        return;
    case CLASS_COMMENTS:
        diff_change_comments(s, r, allowed, what, size);
        return;
    default:
        s->pattern = diff_random_pattern(r, allowed);
        s->repeat = 1 + (int)diff_next(r, 2);
        snprintf(what, size, "pattern %s, %d times", diff_pattern_names[s->pattern], s->repeat);
        return;
    }
}

/* ---- the scenario as files and arguments ---- */

static inline void diff_append(char *text, size_t size, const char *format, int value)
{
    size_t length = strlen(text);
    if (length < size)
        snprintf(text + length, size - length, format, value);
}

static inline void diff_include_line(char *text, size_t size, int include)
{
    if (include < 0)
        return;
    diff_append(text, size, include % 2 ? "#include <h%d.h>\n" : "#include \"h%d.h\"\n",
                include / 2);
}

static inline void diff_header_text(const diff_scenario *s, int location, int name, char *text,
                                    size_t size)
{
    text[0] = '\0';
    diff_append(text, size, "v = v * 3 + %d;\n", s->header[location][name]);
    diff_include_line(text, size, s->nested[location][name]);
}

/* Source string i: a function f<i> for all but the last, the kernel k that
 * calls them for the last. */
static inline void diff_source_text(const diff_scenario *s, int i, char *text, size_t size)
{
    static const char *const specials[] = {
        "", "v += __TIME__[6];\n", "v += __DATE__[5] + __DATE__[0];\n", "v += __FILE__[0];\n"};
    /* The same through a macro the build options define (-D T=__TIME__). */
    static const char *const defined[] = {"", "v += T[6];\n", "v += T[5] + T[0];\n", ""};
    text[0] = '\0';
    bool kernel = i == s->source_count - 1;
    if (kernel && s->commented_names) /* as Rodinia's lavaMD and b+tree do */
        diff_append(text, size, "// #include <c1.h>\t// main.h\n// #include \"c%d.h\"\n", 0);
    if (kernel)
        diff_append(text, size, "kernel void k(global int *out)\n{\n int v = get_global_id(0);\n",
                    0);
    else
        diff_append(text, size, "int f%d(int v)\n{\n", i);
    for (int j = 0; j < DIFF_INCLUDES; j++) {
        size_t length = strlen(text);
        if (s->includes[i][j] >= 0 && length < size)
            snprintf(text + length, size - length, "%s", diff_decors[s->decor[i][j]]);
        diff_include_line(text, size, s->includes[i][j]);
    }
    if (!kernel) {
        diff_append(text, size, " return v;\n}\n", 0);
        return;
    }
    for (int j = 0; j < s->source_count - 1; j++)
        diff_append(text, size, " v = f%d(v);\n", j);
    diff_append(text, size,
                " v += FLT_DIG;\n#ifdef M\n v += M;\n#endif\n#ifdef X\n v += X * %d;\n#endif\n", 7);
    size_t length = strlen(text);
    snprintf(text + length, size - length, "%s out[get_global_id(0)] = v;\n}\n",
             (s->special_defined ? defined : specials)[s->special]);
}

static inline void diff_options(const diff_scenario *s, const char *root, char *text, size_t size)
{
    snprintf(text, size, "%s%s%s%s%s%s%s", s->use_i1 ? "-I i1 " : "", s->use_abs ? "-I " : "",
             s->use_abs ? root : "", s->use_abs ? "/abs " : "", s->use_sys ? "-isystem " : "",
             s->use_sys ? root : "", s->use_sys ? "/sys " : "");
    if (s->define > 0)
        diff_append(text, size, "-D M=%d ", s->define);
    if (s->special_defined && s->special != SPECIAL_FILE)
        diff_append(text, size, s->special == SPECIAL_TIME ? "-D T=__TIME__ " : "-D T=__DATE__ ",
                    0);
    if (s->fast_math)
        diff_append(text, size, "-cl-fast-relaxed-math ", 0);
}

#endif
