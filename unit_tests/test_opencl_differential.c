/* The OpenCL front end's differential test: the layer's answer is the
 * driver's, whatever the program, its headers, options, environment and the
 * way the application builds it, through any sequence of changes.
 *
 * Per seed, diff_scenario.h generates a program (headers in include trees,
 * the working directory, -I and -isystem directories, quoted and angled
 * includes, macros, several source strings, __TIME__ and friends) and then,
 * per step, one random change to it. Each step runs cl_diff_probe twice in
 * new processes with the same environment and working directory: the driver
 * alone, then through the layer, with one cache directory for all the steps
 * of the seed. Their outputs (result codes, build logs, kernel names, and the
 * computed results on PoCL or the binaries' digests on Intel) must be equal,
 * and a step that changed nothing must be a hit, so that the comparison is
 * not vacuous.
 *
 *   ZC_DIFF_SEED      the first seed (default 1)
 *   ZC_DIFF_SEEDS     how many seeds from it (default 3)
 *   ZC_DIFF_STEPS     steps per seed (default 8)
 *   ZC_DIFF_CLASSES   the classes of change (diff_scenario.h), comma
 *                     separated, or "all" (the default)
 *   ZC_DIFF_VERBOSE   1: print every step as a failing one is printed
 *
 * A failing step prints the seed, the step, the changes that led to it, the
 * scenario's files and options, both outputs and the command that replays
 * the seed. */
#include <criterion/criterion.h>
#include <glob.h>
#include <string.h>

#include "diff_scenario.h"
#include "e2e_probe_support.h"

/* Every class of change and call pattern (diff_scenario.h). */
#define DIFF_CLASSES                                                                               \
    "headers,patterns,threads,cwd,time,file,poclenv,shared,cb-release,cb-build,libs,comments"

#define LAYER "OPENCL_LAYERS=" ZC_LAYER_DIR "/libzecache_opencl_layer.so.1"
#define LAYER_SETTINGS "NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT=1"
/* A hang (a callback building under a lock) ends as a result: generous,
 * a step's build takes well under a second. */
#define DEADLINE "20"
#define HISTORY_MAX 4096
#define TEXT_MAX 2048
#define RESULT_MAX (OUTPUT_MAX + 32) /* the probe's output and its exit status */
#define NAME_MAX_LENGTH 64

TestSuite(differential, .init = scratch_create, .fini = scratch_remove, .timeout = 3600);

typedef struct diff_run {
    const char *platform;
    diff_allowed allowed;
    unsigned long seed;
    int step;
    char history[HISTORY_MAX]; /* the changes so far, for the report */
    char classes[256];
    int steps_run, hits_checked;
} diff_run;

static char alone[RESULT_MAX], through_layer[RESULT_MAX], layer_err[OUTPUT_MAX];

static unsigned long env_number(const char *name, unsigned long fallback)
{
    const char *value = getenv(name);
    return value != NULL && *value != '\0' ? strtoul(value, NULL, 10) : fallback;
}

static void parse_classes(diff_run *dr)
{
    const char *chosen = getenv("ZC_DIFF_CLASSES");
    if (chosen == NULL || *chosen == '\0' || strcmp(chosen, "all") == 0)
        chosen = DIFF_CLASSES;
    snprintf(dr->classes, sizeof dr->classes, "%s", chosen);
    char list[256];
    snprintf(list, sizeof list, "%s", chosen);
    bool any = false;
    for (char *save, *word = strtok_r(list, ",", &save); word != NULL;
         word = strtok_r(NULL, ",", &save)) {
        int i = 0;
        while (i < CLASS_COUNT && strcmp(diff_class_names[i], word) != 0)
            i++;
        cr_assert_lt(i, CLASS_COUNT, "ZC_DIFF_CLASSES: no class \"%s\"", word);
        dr->allowed.classes[i] = any = true;
    }
    cr_assert(any, "ZC_DIFF_CLASSES names no class");
}

/* ---- the scenario on disk ---- */

static void write_text(const char *relative, const char *text)
{
    t_write_file(in_scratch(relative), text, strlen(text));
}

static void write_scenario(const diff_scenario *s)
{
    char path[NAME_MAX_LENGTH], text[TEXT_MAX];
    for (int location = 0; location < DIFF_LOCATIONS; location++) {
        mkdir(in_scratch(diff_location_dirs[location]), 0700);
        for (int name = 0; name < DIFF_NAMES; name++) {
            snprintf(path, sizeof path, "%s/h%d.h", diff_location_dirs[location], name);
            if (s->header[location][name] == 0) {
                unlink(in_scratch(path));
                continue;
            }
            diff_header_text(s, location, name, text, sizeof text);
            write_text(path, text);
        }
        for (int name = 0; name < DIFF_COMMENTED; name++) {
            snprintf(path, sizeof path, "%s/c%d.h", diff_location_dirs[location], name);
            snprintf(text, sizeof text, "#error c%d.h is named only in comments %d\n", name,
                     s->commented[name]);
            write_text(path, text);
        }
    }
    for (int i = 0; i < s->source_count; i++) {
        snprintf(path, sizeof path, "src%d.cl", i);
        diff_source_text(s, i, text, sizeof text);
        write_text(path, text);
    }
}

/* The files and options of s, for a report. */
static void print_scenario(const diff_scenario *s, const char *options)
{
    char path[NAME_MAX_LENGTH], text[TEXT_MAX];
    for (int location = 0; location < DIFF_LOCATIONS; location++)
        for (int name = 0; name < DIFF_NAMES; name++)
            if (s->header[location][name] != 0) {
                diff_header_text(s, location, name, text, sizeof text);
                snprintf(path, sizeof path, "%s/h%d.h", diff_location_dirs[location], name);
                fprintf(stderr, "--- %s\n%s", path, text);
            }
    for (int i = 0; i < s->source_count; i++) {
        diff_source_text(s, i, text, sizeof text);
        fprintf(stderr, "--- source string %d\n%s", i, text);
    }
    fprintf(stderr,
            "--- working directory w%d, options \"%s\", pattern %s x%d, "
            "POCL_EXTRA_BUILD_FLAGS %s%d (%s clCreateContext)\n",
            s->cwd + 1, options, diff_pattern_names[s->pattern], s->repeat,
            s->extra_flag > 0 ? "-DX=" : "unset ", s->extra_flag,
            s->extra_after ? "after" : "before");
}

/* ---- one step ---- */

typedef struct step_command {
    char options[TEXT_MAX], cwd[PATH_MAX], sources[DIFF_SOURCES][PATH_MAX], repeat[8];
    char extra[64], setenv_value[64], library_path[PATH_MAX + 32];
    const char *argv[32];
} step_command;

static void build_command(const diff_run *dr, const diff_scenario *s, step_command *c)
{
    int argc = 0;
    diff_options(s, sc.root, c->options, sizeof c->options);
    snprintf(c->cwd, sizeof c->cwd, "%s", in_scratch(s->cwd ? "w2" : "w1"));
    snprintf(c->repeat, sizeof c->repeat, "%d", s->repeat);
    const char *fixed[] = {"--platform", dr->platform, "--options",  c->options,
                           "--chdir",    c->cwd,       "--pattern",  diff_pattern_names[s->pattern],
                           "--repeat",   c->repeat,    "--deadline", DEADLINE};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        c->argv[argc++] = fixed[i];
    for (int i = 0; i < s->source_count; i++) {
        snprintf(c->sources[i], PATH_MAX, "%s/src%d.cl", sc.root, i);
        c->argv[argc++] = "--source";
        c->argv[argc++] = c->sources[i];
    }
    if (dr->allowed.pocl)
        c->argv[argc++] = "--run";
    c->extra[0] = c->setenv_value[0] = '\0';
    snprintf(c->library_path, sizeof c->library_path, "%s%s",
             s->patched_libs ? "LD_LIBRARY_PATH=" : "POCL_KERNEL_CACHE=0",
             s->patched_libs ? in_scratch("libs") : "");
    if (s->extra_flag > 0) {
        snprintf(c->setenv_value, sizeof c->setenv_value, "POCL_EXTRA_BUILD_FLAGS=-DX=%d",
                 s->extra_flag);
        if (s->extra_after) {
            c->argv[argc++] = "--setenv";
            c->argv[argc++] = c->setenv_value;
        } else {
            snprintf(c->extra, sizeof c->extra, "%s", c->setenv_value);
        }
    }
    c->argv[argc] = NULL;
}

/* Runs the step's probe with the layer or not into output. PoCL's own
 * kernel cache stays off: the driver alone builds each time. */
static void run_step(const step_command *c, bool with_layer, char *output)
{
    const char *extra = c->extra[0] != '\0' ? c->extra : "POCL_KERNEL_CACHE=0";
    if (with_layer)
        probe_run(false, ENV(LAYER, LAYER_SETTINGS, "POCL_KERNEL_CACHE=0", extra, c->library_path),
                  c->argv);
    else
        probe_run(false, ENV("POCL_KERNEL_CACHE=0", extra, c->library_path), c->argv);
    snprintf(output, RESULT_MAX, "exit %d\n%s", run.exit_status, run.out);
}

static void report(const diff_run *dr, const diff_scenario *s, const step_command *c,
                   const char *problem)
{
    fprintf(stderr, "\n==== differential: %s, seed %lu, step %d: %s\n", dr->platform, dr->seed,
            dr->step, problem);
    fprintf(stderr, "changes:%s\n", dr->history);
    print_scenario(s, c->options);
    fprintf(stderr, "--- driver alone:\n%s--- through the layer:\n%s--- layer's messages:\n%s",
            alone, through_layer, layer_err);
    fprintf(stderr,
            "replay: ZC_DIFF_SEED=%lu ZC_DIFF_SEEDS=1 ZC_DIFF_STEPS=%d ZC_DIFF_CLASSES=%s "
            "build/unit_tests/test_opencl_differential --filter 'differential/%s'\n",
            dr->seed, dr->step + 1, dr->classes, dr->allowed.pocl ? "pocl" : "intel");
}

/* __TIME__ (its tens of seconds) and __DATE__ differ between two runs, and
 * between two builds of one run, when a boundary passes in between; Intel's
 * __FILE__ (a build counter) between two threads' builds, as they happen to
 * come: no run of the driver is the reference then. What the layer must do
 * is what the driver does, compile each of them: it may serve none from the
 * cache. A miss is the driver's compile, so it may be logged (a link of
 * the same process misses): a stale result needs a hit. */
static bool same_as_the_driver(const diff_scenario *s)
{
    /* A build of a text naming __TIME__ or __DATE__, in its source or
     * through a -D option, is never served, even when the values happen to
     * agree; a link of its compiled objects may be (they hold the values). */
    bool timed = s->special == SPECIAL_TIME || s->special == SPECIAL_DATE;
    if (timed && s->pattern != PATTERN_LINK && strstr(layer_err, "[Cache]: hit ") != NULL)
        return false;
    if (strcmp(alone, through_layer) == 0)
        return true;
    if (s->special == SPECIAL_NONE)
        return false;
    return strstr(layer_err, "[Cache]: hit ") == NULL;
}

/* One step: true when the layer stored the program or found it on disk
 * (its summary line tells), so that the same step again must hit. */
static bool check_step(diff_run *dr, const diff_scenario *s, bool expect_hit)
{
    static step_command c;
    build_command(dr, s, &c);
    write_scenario(s);
    run_step(&c, false, alone);
    run_step(&c, true, through_layer);
    snprintf(layer_err, sizeof layer_err, "%s", run.err);
    if (!same_as_the_driver(s)) {
        report(dr, s, &c, "the layer's result differs from the driver's");
        cr_assert_fail("differential: %s seed %lu step %d differs (see above)", dr->platform,
                       dr->seed, dr->step);
    }
    if (env_number("ZC_DIFF_VERBOSE", 0) != 0)
        report(dr, s, &c, "passed");
    if (expect_hit && (strstr(layer_err, HIT_DISK) == NULL || strstr(layer_err, MISS) != NULL)) {
        report(dr, s, &c, "nothing the compiler reads changed, yet the layer did not hit");
        cr_assert_fail("differential: %s seed %lu step %d did not hit", dr->platform, dr->seed,
                       dr->step);
    }
    bool stored = strstr(layer_err, " stores,") != NULL && strstr(layer_err, " 0 stores,") == NULL;
    return (stored || strstr(layer_err, HIT_DISK) != NULL) &&
           strstr(layer_err, "[Cache]: bypass") == NULL;
}

static void run_seed(diff_run *dr)
{
    diff_random random = {dr->seed};
    diff_scenario s;
    diff_generate(&s, &random, &dr->allowed);
    dr->history[0] = '\0';
    bool cached = false;
    unsigned long steps = env_number("ZC_DIFF_STEPS", 8);
    for (dr->step = 0; dr->step < (int)steps; dr->step++) {
        char what[256] = "the program as generated";
        bool unchanged = dr->step > 0 && diff_chance(&random, 30);
        s.commented_edit = false;
        if (unchanged)
            snprintf(what, sizeof what, "nothing");
        else if (dr->step > 0)
            diff_change(&s, &random, &dr->allowed, what, sizeof what);
        size_t length = strlen(dr->history);
        snprintf(dr->history + length, sizeof dr->history - length, "\n  step %d: %s", dr->step,
                 what);
        bool must_hit = (unchanged || s.commented_edit) && cached;
        dr->hits_checked += must_hit;
        dr->steps_run++;
        cached = check_step(dr, &s, must_hit);
    }
}

/* The libs class: a copy of Intel's libopencl-clang in <scratch>/libs
 * with one predefined macro (FLT_DIG, which every program adds) changed to
 * another of the same length, so that a build with it differs. */
static void make_patched_compiler(void)
{
    static const char search[] = "#define FLT_DIG 6", patched[] = "#define FLT_DIG 7";
    glob_t found;
    cr_assert_eq(glob(ZC_SYSTEM_LIB_DIR "/libopencl-clang.so.*", 0, NULL, &found), 0,
                 "no libopencl-clang in " ZC_SYSTEM_LIB_DIR);
    const char *library = found.gl_pathv[found.gl_pathc - 1];
    size_t size = 0;
    uint8_t *bytes = t_read_bytes(library, &size);
    uint8_t *at = memmem(bytes, size, search, strlen(search));
    cr_assert_not_null(at, "no \"%s\" in %s", search, library);
    memcpy(at, patched, strlen(patched));
    mkdir(in_scratch("libs"), 0700);
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s/libs/%s", sc.root, strrchr(library, '/') + 1);
    t_write_file(copy, bytes, size);
    free(bytes);
    globfree(&found);
}

static void run_seeds(const char *platform, bool pocl)
{
    static diff_run dr;
    memset(&dr, 0, sizeof dr);
    dr.platform = platform;
    dr.allowed.pocl = pocl;
    parse_classes(&dr);
    if (dr.allowed.classes[CLASS_LIBS] && !pocl)
        make_patched_compiler();
    unsigned long first = env_number("ZC_DIFF_SEED", 1);
    unsigned long count = env_number("ZC_DIFF_SEEDS", 3);
    for (dr.seed = first; dr.seed < first + count; dr.seed++) {
        t_remove_tree(sc.cache);
        cr_assert_eq(mkdir(sc.cache, 0700), 0);
        run_seed(&dr);
    }
    cr_log_info("differential: %s: %lu seeds, %d steps, %d of them unchanged and hits, classes %s",
                platform, count, dr.steps_run, dr.hits_checked, dr.classes);
}

Test(differential, intel)
{
    run_seeds("Intel", false);
}

Test(differential, pocl)
{
    run_seeds("Portable", true);
}
