/* The fuzzers' oracle: a broken property aborts with where and why, which
 * libFuzzer reports as a crash and saves the input for. */
#ifndef ZC_FUZZ_CHECK_H
#define ZC_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(condition)                                                                      \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #condition);       \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
