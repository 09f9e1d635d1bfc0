/* Running prewarm's builds: N helper processes (zecache-build, with the
 * layer enabled), each given one job at a time, with a progress line. */
#ifndef ZECACHE_PREWARM_RUN_H
#define ZECACHE_PREWARM_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prewarm_collect.h"

typedef struct prewarm_result {
    uint64_t built, present, failed;
    char **failures;  /* "<recorded key>: reason", failed of them */
    bool interrupted; /* SIGINT: the builds under way finished, no others started */
    double seconds;
} prewarm_result;

/* Builds every item of list with jobs helpers at path helper. False when
 * not even one helper could start (reason). */
bool prewarm_run(const prewarm_list *list, unsigned jobs, const char *helper,
                 prewarm_result *result, char *reason, size_t reason_size);
void prewarm_result_free(prewarm_result *result);

#endif
