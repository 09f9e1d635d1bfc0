/* The runner behind the Criterion stand-in (see criterion/criterion.h). */
#include <criterion/criterion.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>

enum { MAX_TESTS = 512, MAX_SUITES = 64 };

typedef struct plain_test {
    const char *suite, *name;
    void (*body)(void);
    zc_plain_options options;
} plain_test;

static plain_test tests[MAX_TESTS];
static size_t test_count;
static zc_plain_suite suites[MAX_SUITES];
static size_t suite_count;
static jmp_buf test_exit;

void zc_plain_register(const char *suite, const char *name, void (*body)(void),
                       zc_plain_options options)
{
    if (test_count == MAX_TESTS) {
        fprintf(stderr, "plain runner: too many tests\n");
        exit(2);
    }
    tests[test_count++] = (plain_test){suite, name, body, options};
}

void zc_plain_register_suite(const char *suite, zc_plain_options options)
{
    if (suite_count < MAX_SUITES)
        suites[suite_count++] = (zc_plain_suite){suite, options};
}

static void print_message(const char *fmt, va_list args)
{
    if (fmt[0] == '\0')
        return;
    fputs(": ", stderr);
    vfprintf(stderr, fmt, args);
}

_Noreturn void zc_plain_fail(const char *file, int line, const char *condition, const char *fmt,
                             ...)
{
    fprintf(stderr, "%s:%d: assertion failed: %s", file, line, condition);
    va_list args;
    va_start(args, fmt);
    print_message(fmt, args);
    va_end(args);
    fputc('\n', stderr);
    longjmp(test_exit, 1);
}

_Noreturn void zc_plain_skip(const char *fmt, ...)
{
    fputs("skipped", stderr);
    va_list args;
    va_start(args, fmt);
    print_message(fmt, args);
    va_end(args);
    fputc('\n', stderr);
    longjmp(test_exit, 2);
}

static const zc_plain_options *suite_options(const char *suite)
{
    for (size_t i = 0; i < suite_count; i++)
        if (strcmp(suites[i].name, suite) == 0)
            return &suites[i].options;
    return NULL;
}

/* Test options override the suite's, as in Criterion. */
static int run_test(const plain_test *test)
{
    const zc_plain_options *suite = suite_options(test->suite);
    void (*volatile init)(void) = test->options.init ? test->options.init
                                  : suite            ? suite->init
                                                     : NULL;
    void (*volatile fini)(void) = test->options.fini ? test->options.fini
                                  : suite            ? suite->fini
                                                     : NULL;
    /* 0 passed, 1 failed, 2 skipped: the value the assertion longjmp'ed with. */
    volatile int outcome = 0;
    switch (setjmp(test_exit)) {
    case 0:
        if (init)
            init();
        test->body();
        break;
    case 1:
        outcome = 1;
        break;
    default:
        outcome = 2;
        break;
    }
    if (fini && setjmp(test_exit) == 0)
        fini();
    return outcome;
}

int main(void)
{
    size_t passed = 0, failed = 0, skipped = 0;
    for (size_t i = 0; i < test_count; i++) {
        if (tests[i].options.disabled)
            continue;
        fprintf(stderr, "[ RUN  ] %s::%s\n", tests[i].suite, tests[i].name);
        int outcome = run_test(&tests[i]);
        static const char *const verdicts[] = {"PASS", "FAIL", "SKIP"};
        fprintf(stderr, "[ %s ] %s::%s\n", verdicts[outcome], tests[i].suite, tests[i].name);
        if (outcome == 0)
            passed++;
        else if (outcome == 1)
            failed++;
        else
            skipped++;
    }
    printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
    return failed == 0 ? 0 : 1;
}
