/* The prefetch of this program's entries (README, "Prefetch"): started by
 * the constructor, inside zeInit, so that the background thread loads the
 * entries while the driver initialises, well before the first module: a
 * thread started at the first context was often not running yet when the
 * first modules were asked for (an idle vCPU took hundreds of microseconds
 * to wake on the test machines). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "layer_internal.h"

/* What names this program for its usage list: the executable and its first
 * argument (the script, for an interpreter). Empty when unknown. */
static void program_name(char *name, size_t size)
{
    char arguments[4096];
    ssize_t length = readlink("/proc/self/exe", name, size - 1);
    int fd = length > 0 ? open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC) : -1;
    ssize_t got = fd >= 0 ? read(fd, arguments, sizeof arguments - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (length <= 0 || got < 0) {
        name[0] = '\0';
        return;
    }
    arguments[got] = '\0';
    /* NUL-separated: argv[1] follows argv[0]'s NUL, when there is one. */
    size_t first_end = strlen(arguments);
    const char *first = (ssize_t)first_end < got ? arguments + first_end + 1 : "";
    snprintf(name + length, size - (size_t)length, "\n%s", first);
}

void zcl_prefetch_start(void)
{
    char name[PATH_MAX + 4096];
    program_name(name, sizeof name);
    if (name[0] != '\0')
        (void)zc_cache_prefetch_start(zcl_layer.cache, name);
}
