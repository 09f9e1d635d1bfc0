/* A stand-in for the part of Criterion's API the threaded tests use, so the
 * same test files can run under ThreadSanitizer: Criterion's own runner cannot
 * start under TSan (its inheritable arena needs a fixed mapping that TSan's
 * shadow memory occupies). Tests run in-process, one after another; a failed
 * assertion ends the test with a message and the run with a non-zero status.
 * It prints "N passed, N failed" as its closing line. */
#ifndef ZC_PLAIN_CRITERION_H
#define ZC_PLAIN_CRITERION_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct zc_plain_options {
    void (*init)(void);
    void (*fini)(void);
    double timeout;
    bool disabled;
} zc_plain_options;

typedef struct zc_plain_suite {
    const char *name;
    zc_plain_options options;
} zc_plain_suite;

void zc_plain_register(const char *suite, const char *name, void (*body)(void),
                       zc_plain_options options);
void zc_plain_register_suite(const char *suite, zc_plain_options options);
_Noreturn void zc_plain_fail(const char *file, int line, const char *condition, const char *fmt,
                             ...);
_Noreturn void zc_plain_skip(const char *fmt, ...);

#define ZC_PLAIN_CAT2(a, b) a##b
#define ZC_PLAIN_CAT(a, b) ZC_PLAIN_CAT2(a, b)

#define TestSuite(suite, ...)                                                                      \
    __attribute__((constructor)) static void ZC_PLAIN_CAT(zc_plain_suite_, suite)(void)            \
    {                                                                                              \
        zc_plain_register_suite(#suite, (zc_plain_options){__VA_ARGS__});                          \
    }                                                                                              \
    struct ZC_PLAIN_CAT(zc_plain_unused_, suite)

#define Test(suite, name, ...)                                                                     \
    static void ZC_PLAIN_CAT(zc_plain_body_##suite##_, name)(void);                                \
    __attribute__((constructor)) static void ZC_PLAIN_CAT(zc_plain_reg_##suite##_, name)(void)     \
    {                                                                                              \
        zc_plain_register(#suite, #name, ZC_PLAIN_CAT(zc_plain_body_##suite##_, name),             \
                          (zc_plain_options){__VA_ARGS__});                                        \
    }                                                                                              \
    static void ZC_PLAIN_CAT(zc_plain_body_##suite##_, name)(void)

#define ZC_PLAIN_CHECK(cond, text, ...)                                                            \
    do {                                                                                           \
        if (!(cond))                                                                               \
            zc_plain_fail(__FILE__, __LINE__, text, "" __VA_ARGS__);                               \
    } while (0)

#define cr_assert(cond, ...) ZC_PLAIN_CHECK((cond), #cond, __VA_ARGS__)
#define cr_assert_fail(...) ZC_PLAIN_CHECK(0, "failed", __VA_ARGS__)
#define cr_assert_not(cond, ...) ZC_PLAIN_CHECK(!(cond), "!(" #cond ")", __VA_ARGS__)
#define cr_assert_eq(a, b, ...) ZC_PLAIN_CHECK((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) ZC_PLAIN_CHECK((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) ZC_PLAIN_CHECK((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) ZC_PLAIN_CHECK((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) ZC_PLAIN_CHECK((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) ZC_PLAIN_CHECK((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) ZC_PLAIN_CHECK((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) ZC_PLAIN_CHECK((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) ZC_PLAIN_CHECK(strcmp((a), (b)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_assert_arr_eq(a, b, n, ...)                                                             \
    ZC_PLAIN_CHECK(memcmp((a), (b), (n)) == 0, #a " arr_eq " #b, __VA_ARGS__)
#define cr_fail(...) zc_plain_fail(__FILE__, __LINE__, "cr_fail", "" __VA_ARGS__)
#define cr_skip_test(...) zc_plain_skip("" __VA_ARGS__)
#define cr_log_info(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))

#endif
