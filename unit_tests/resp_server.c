/* A misbehaving Redis server for the tests: it speaks just enough RESP to be
 * taken for one, then misbehaves in one chosen way on every command.
 *
 *   resp_server MODE unix PATH     listen on a Unix socket
 *   resp_server MODE tcp           listen on 127.0.0.1, a port of the kernel's
 *
 * Prints "ready <port>" (0 for Unix) once listening, then serves connections
 * one at a time until killed. MODE, for every command received:
 *   stall      never answers
 *   trickle    announces a 4096-byte value, then sends one byte every 300 ms
 *   huge       announces an 800,000,000-byte value and sends it at full speed
 *   malformed  answers with bytes that are not RESP
 *   drop       announces a value, sends part of it and closes the connection
 *   error      answers every command with an error
 *   nil        answers every command with nil (an absent key), the control
 *   status     +OK                      integer    :1
 *   bulk:N     a bulk string of N bytes
 *   array:N    a flat array of N integers
 *   nested     an array of an array of an array... a million deep
 *   huge-array announces 100,000,000 elements, then ":1" at full speed
 *   endless    a status line that never ends, at full speed
 *   reset      announces a value, sends part of it and resets the connection
 *   scan-ok    an empty SCAN batch ending the iteration, the SCAN control
 *   scan-cycle a SCAN batch of 256 new recipe names, always under cursor 1
 *   scan-rising the same under a new cursor every time
 *   scan-rising-slow-nil  scan-rising to SCAN, nil after 20 ms to the rest
 *   auth-twice  two replies to AUTH (+OK and nil), an error to the rest
 *   scan-names:N  one SCAN batch of N names, ending the iteration
 *   prefix:FILE:N  announces N bytes, sends FILE's bytes then 'g' up to N,
 *              at full speed (an entry's header followed by garbage)
 *   moved-loop  a cluster of itself (CLUSTER SLOTS: every slot here) that
 *              answers every other command MOVED to itself
 *   ask-loop    the same with ASK (and +OK to ASKING) */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "send_test_support.h"

static void pause_ms(long ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&pause, NULL);
}

/* size bytes of fill, 64 KiB at a time; false when the client left. */
static bool send_fill(int fd, char fill, unsigned long long size)
{
    static char block[1 << 16];
    memset(block, fill, sizeof block);
    for (unsigned long long sent = 0; sent < size; sent += sizeof block) {
        size_t part = size - sent < sizeof block ? (size_t)(size - sent) : sizeof block;
        if (!t_send_all(fd, block, part))
            return false;
    }
    return true;
}

static bool send_repeated(int fd, const char *text, unsigned long long times)
{
    char block[1 << 14];
    size_t length = strlen(text), per_block = sizeof block / length;
    for (size_t i = 0; i < per_block; i++)
        memcpy(block + i * length, text, length);
    for (unsigned long long sent = 0; sent < times; sent += per_block)
        if (!t_send_all(fd, block, (times - sent < per_block ? times - sent : per_block) * length))
            return false;
    return true;
}

/* One SCAN batch of count recipe names never sent before. */
static bool send_scan_batch(int fd, unsigned long long cursor, unsigned count)
{
    static unsigned long long next_name;
    static char batch[20000 * 96 + 64]; /* one send: no wait on Nagle's algorithm */
    if (count > 20000)
        return false;
    int length = snprintf(batch, sizeof batch, "*2\r\n$%d\r\n%llu\r\n*%u\r\n",
                          snprintf(NULL, 0, "%llu", cursor), cursor, count);
    for (unsigned i = 0; i < count; i++)
        length += snprintf(batch + length, sizeof batch - (size_t)length,
                           "$82\r\nzecache:v1:recipe:%064llx\r\n", next_name++);
    return t_send_all(fd, batch, (size_t)length);
}

/* prefix:FILE:N */
static bool send_prefix(int fd, const char *argument)
{
    char path[512];
    unsigned long long total = 0;
    if (sscanf(argument, "%511[^:]:%llu", path, &total) != 2)
        return false;
    char head[4096];
    int file = open(path, O_RDONLY);
    ssize_t got = file >= 0 ? read(file, head, sizeof head) : -1;
    if (file >= 0)
        close(file);
    if (got < 0 || (unsigned long long)got > total)
        return false;
    char announce[64];
    snprintf(announce, sizeof announce, "$%llu\r\n", total);
    return t_send_text(fd, announce) && t_send_all(fd, head, (size_t)got) &&
           send_fill(fd, 'g', total - (unsigned long long)got) && t_send_text(fd, "\r\n");
}

/* Closed with a TCP reset (or, on a Unix socket, as a close). */
static void reset(int fd)
{
    struct linger now = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
}

/* The command being answered, as received. */
static const char *received;
/* The TCP port listened on (0: a Unix socket). */
static unsigned own_port;

/* moved-loop and ask-loop: -1 for other modes. */
static int redirect_forever(int fd, const char *mode)
{
    bool ask = strcmp(mode, "ask-loop") == 0;
    if (!ask && strcmp(mode, "moved-loop") != 0)
        return -1;
    char reply[256];
    if (strstr(received, "\r\nCLUSTER\r\n") != NULL)
        snprintf(reply, sizeof reply,
                 "*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:%u\r\n$40\r\n%040d\r\n",
                 own_port, 0);
    else if (strstr(received, "\r\nASKING\r\n") != NULL)
        snprintf(reply, sizeof reply, "+OK\r\n");
    else
        snprintf(reply, sizeof reply, "-%s 7 127.0.0.1:%u\r\n", ask ? "ASK" : "MOVED", own_port);
    return t_send_text(fd, reply);
}

/* The modes that take an argument or answer SCAN; -1: not one of them. */
static int misbehave_more(int fd, const char *mode)
{
    static unsigned long long rising = 1;
    unsigned long long n = 0;
    int redirected = redirect_forever(fd, mode);
    if (redirected >= 0)
        return redirected;
    if (strcmp(mode, "scan-rising-slow-nil") == 0) {
        if (strstr(received, "\r\nSCAN\r\n") != NULL)
            return send_scan_batch(fd, rising++, 256);
        pause_ms(20);
        return t_send_text(fd, "$-1\r\n");
    }
    if (strcmp(mode, "auth-twice") == 0)
        return t_send_text(fd, strstr(received, "\r\nAUTH\r\n") != NULL
                                   ? "+OK\r\n$-1\r\n"
                                   : "-ERR the reply to this command\r\n");
    if (sscanf(mode, "bulk:%llu", &n) == 1) {
        char announce[64];
        snprintf(announce, sizeof announce, "$%llu\r\n", n);
        return t_send_text(fd, announce) && send_fill(fd, 'b', n) && t_send_text(fd, "\r\n");
    }
    if (sscanf(mode, "array:%llu", &n) == 1) {
        char announce[64];
        snprintf(announce, sizeof announce, "*%llu\r\n", n);
        return t_send_text(fd, announce) && send_repeated(fd, ":1\r\n", n);
    }
    if (strncmp(mode, "prefix:", 7) == 0)
        return send_prefix(fd, mode + 7);
    if (strcmp(mode, "scan-ok") == 0)
        return t_send_text(fd, "*2\r\n$1\r\n0\r\n*0\r\n");
    if (strcmp(mode, "scan-cycle") == 0)
        return send_scan_batch(fd, 1, 256);
    if (strcmp(mode, "scan-rising") == 0)
        return send_scan_batch(fd, rising++, 256);
    if (sscanf(mode, "scan-names:%llu", &n) == 1)
        return send_scan_batch(fd, 0, (unsigned)n);
    return -1;
}

/* One reply in mode; false when the connection is to be closed. */
static bool misbehave(int fd, const char *mode)
{
    int more = misbehave_more(fd, mode);
    if (more >= 0)
        return more == 1;
    if (strcmp(mode, "status") == 0)
        return t_send_text(fd, "+OK\r\n");
    if (strcmp(mode, "escapes") == 0) /* clears the screen, sets the title */
        return t_send_text(fd, "-ERR \x1b[2J\x1b]0;pwned\x07 \xc2\x9b"
                               "31m evil\r\n");
    if (strcmp(mode, "integer") == 0)
        return t_send_text(fd, ":1\r\n");
    if (strcmp(mode, "nested") == 0)
        return t_send_text(fd, "*2\r\n$1\r\n0\r\n") && send_repeated(fd, "*1\r\n", 1000000);
    if (strcmp(mode, "huge-array") == 0)
        return t_send_text(fd, "*100000000\r\n") && send_repeated(fd, ":1\r\n", 100000000);
    if (strcmp(mode, "endless") == 0)
        return t_send_text(fd, "+") && send_fill(fd, 'e', 1ULL << 40);
    if (strcmp(mode, "reset") == 0) {
        t_send_text(fd, "$4096\r\npart of a value");
        reset(fd);
        return false;
    }
    if (strcmp(mode, "stall") == 0) {
        pause_ms(60 * 1000);
        return false;
    }
    if (strcmp(mode, "trickle") == 0) {
        if (!t_send_text(fd, "$4096\r\n"))
            return false;
        for (int i = 0; i < 4096; i++) {
            pause_ms(300);
            if (!t_send_all(fd, "x", 1))
                return false;
        }
        return t_send_text(fd, "\r\n");
    }
    if (strcmp(mode, "huge") == 0)
        return t_send_text(fd, "$800000000\r\n") && send_fill(fd, 'h', 800000000) &&
               t_send_text(fd, "\r\n");
    if (strcmp(mode, "malformed") == 0)
        return t_send_text(fd, "?this is not RESP\r\n");
    if (strcmp(mode, "drop") == 0) {
        t_send_text(fd, "$4096\r\npart of a value");
        return false;
    }
    if (strcmp(mode, "error") == 0)
        return t_send_text(fd, "-ERR the server refuses everything\r\n");
    return t_send_text(fd, "$-1\r\n"); /* nil */
}

/* Each read of the client's bytes is taken for one command: the client
 * under test sends one command and waits for its answer. */
static void serve(int fd, const char *mode)
{
    static char buffer[(1 << 16) + 1];
    received = buffer;
    for (ssize_t got; (got = recv(fd, buffer, sizeof buffer - 1, 0)) > 0;) {
        buffer[got] = '\0';
        if (!misbehave(fd, mode))
            break;
    }
    close(fd);
}

static int listen_on(const char *kind, const char *path, unsigned *port)
{
    int fd;
    if (strcmp(kind, "unix") == 0) {
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
        unlink(path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof address) != 0)
            return -1;
        *port = 0;
    } else {
        struct sockaddr_in address = {.sin_family = AF_INET};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof address;
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof address) != 0 ||
            getsockname(fd, (struct sockaddr *)&address, &length) != 0)
            return -1;
        *port = ntohs(address.sin_port);
    }
    return listen(fd, 16) == 0 ? fd : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[2], "unix") == 0 && argc < 4)) {
        fprintf(stderr, "usage: resp_server MODE unix PATH | resp_server MODE tcp\n");
        return 2;
    }
    unsigned port;
    int listener = listen_on(argv[2], argc > 3 ? argv[3] : NULL, &port);
    if (listener < 0) {
        perror("resp_server: listen");
        return 1;
    }
    own_port = port;
    printf("ready %u\n", port);
    fflush(stdout);
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd >= 0)
            serve(fd, argv[1]);
    }
}
