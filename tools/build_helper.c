/* The parts of prewarm's build helpers that do not depend on the API
 * (build_helper.h). */
#include "build_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool build_helper_start(int *report_fd)
{
    int fds[2];
    char text[16];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (setenv("NEO_CACHE_PREFETCH", "0", 1) != 0 || pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
        return false;
    *report_fd = fds[0];
    snprintf(text, sizeof text, "%d", fds[1]);
    return setenv("ZECACHE_REPORT_FD", text, 1) == 0;
}

/* The layer's line for this build: "<outcome> <key>". */
static bool read_report(int fd, char *outcome, size_t outcome_size, char key[65])
{
    char line[160];
    ssize_t got;
    while ((got = read(fd, line, sizeof line - 1)) < 0 && errno == EINTR)
        continue;
    if (got <= 0)
        return false;
    line[got] = '\0';
    char format[32];
    snprintf(format, sizeof format, "%%%zus %%64s", outcome_size - 1);
    return sscanf(line, format, outcome, key) == 2;
}

void build_helper_answer(int report_fd, uint32_t id, bool call_ok, long code,
                         const char *device_name)
{
    char outcome[32] = "", key[65] = "-";
    if (!read_report(report_fd, outcome, sizeof outcome, key))
        printf("%u failed - the layer did not answer (is it enabled?)\n", id);
    else if (!call_ok || strcmp(outcome, "failed") == 0)
        printf("%u failed %s the driver's build failed (%ld)\n", id, key, code);
    else if (strcmp(outcome, "built") == 0 || strcmp(outcome, "present") == 0)
        printf("%u %s %s on %s\n", id, outcome, key, device_name);
    else
        printf("%u failed %s not cached by the layer (%s)\n", id, key, outcome);
}

int build_helper_serve(void (*build)(void *context, const prewarm_job *job), void *context)
{
    /* Kept until the next job is read, which may share its input. */
    prewarm_job previous = {0};
    prewarm_job_read read = PREWARM_JOB_READY;
    while (read != PREWARM_JOB_END && read != PREWARM_JOB_BAD) {
        prewarm_job job;
        char reason[256] = "";
        read = prewarm_job_read_next(stdin, &previous, &job, reason, sizeof reason);
        prewarm_job_free(&previous);
        if (read == PREWARM_JOB_READY)
            build(context, &job);
        else if (read != PREWARM_JOB_END)
            printf("%u failed - %s\n", job.id, reason);
        previous = job;
    }
    prewarm_job_free(&previous);
    return read == PREWARM_JOB_BAD ? 1 : 0;
}
