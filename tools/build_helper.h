/* What prewarm's build helpers share (zecache-build for Level Zero,
 * zecache-build-cl for OpenCL): the layer's report pipe, the job loop on
 * standard input and the answer lines on standard output (prewarm_job.h). */
#ifndef ZECACHE_BUILD_HELPER_H
#define ZECACHE_BUILD_HELPER_H

#include <stdbool.h>
#include <stdint.h>

#include "prewarm_job.h"

/* Sets ZECACHE_REPORT_FD to a pipe's write end, *report_fd its read end,
 * and NEO_CACHE_PREFETCH=0 (a helper builds what is missing: nothing to
 * load ahead). For before the API's initialisation, where the layer starts. */
bool build_helper_start(int *report_fd);

/* Prints job id's answer from the layer's line for its build (on report_fd)
 * and whether the API call succeeded (code: its result, for the message). */
void build_helper_answer(int report_fd, uint32_t id, bool call_ok, long code,
                         const char *device_name);

/* Reads jobs from standard input until it ends and builds each with
 * build(context, job); a job that cannot be read is answered as failed.
 * The exit status: 1 when the job stream is damaged. */
int build_helper_serve(void (*build)(void *context, const prewarm_job *job), void *context);

#endif
