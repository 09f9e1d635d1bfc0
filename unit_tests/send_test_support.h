/* Sending whole replies from the tests' own servers (resp_server.c, the
 * fake cluster nodes of test_redis_cluster_hostile.c). Header-only, as the
 * other support headers. */
#ifndef ZC_SEND_TEST_SUPPORT_H
#define ZC_SEND_TEST_SUPPORT_H

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

/* All of data to fd, without SIGPIPE; false when the peer is gone. */
static inline bool t_send_all(int fd, const void *data, size_t size)
{
    const char *at = data;
    while (size > 0) {
        ssize_t sent = send(fd, at, size, MSG_NOSIGNAL);
        if (sent <= 0)
            return false;
        at += sent;
        size -= (size_t)sent;
    }
    return true;
}

static inline bool t_send_text(int fd, const char *text)
{
    return t_send_all(fd, text, strlen(text));
}

#endif
