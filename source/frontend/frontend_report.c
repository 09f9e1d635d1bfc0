/* What each request did, for `zecache prewarm`: with ZECACHE_REPORT_FD set
 * to an open descriptor, one line per request through the cache,
 * "<outcome> <64 hex key>\n", written in one write() so lines of several
 * threads never mix. Read at each call (a getenv), since the process that
 * sets it may do so after the layer is loaded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "frontend_internal.h"
#include "zecache/config.h"

static int report_fd(void)
{
    const char *text = getenv("ZECACHE_REPORT_FD");
    uint64_t fd;
    if (text == NULL || !zc_config_parse_u64(text, &fd) || fd > 1024 * 1024)
        return -1;
    return (int)fd;
}

void zc_frontend_report(const char *outcome, const zc_key *key)
{
    int fd = report_fd();
    if (fd < 0)
        return;
    char hex[ZC_KEY_HEX_SIZE], line[128];
    if (key != NULL)
        zc_key_to_hex(key, hex);
    int length = snprintf(line, sizeof line, "%s %s\n", outcome, key != NULL ? hex : "-");
    while (write(fd, line, (size_t)length) < 0 && errno == EINTR)
        continue;
}
