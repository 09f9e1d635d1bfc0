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
 *   nil        answers every command with nil (an absent key), the control */
#include <arpa/inet.h>
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

static bool send_all(int fd, const void *data, size_t size)
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

static bool send_text(int fd, const char *text)
{
    return send_all(fd, text, strlen(text));
}

static void pause_ms(long ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&pause, NULL);
}

/* One reply in mode; false when the connection is to be closed. */
static bool misbehave(int fd, const char *mode)
{
    if (strcmp(mode, "stall") == 0) {
        pause_ms(60 * 1000);
        return false;
    }
    if (strcmp(mode, "trickle") == 0) {
        if (!send_text(fd, "$4096\r\n"))
            return false;
        for (int i = 0; i < 4096; i++) {
            pause_ms(300);
            if (!send_all(fd, "x", 1))
                return false;
        }
        return send_text(fd, "\r\n");
    }
    if (strcmp(mode, "huge") == 0) {
        static char block[1 << 16];
        memset(block, 'h', sizeof block);
        if (!send_text(fd, "$800000000\r\n"))
            return false;
        for (long sent = 0; sent < 800000000; sent += (long)sizeof block)
            if (!send_all(fd, block, sizeof block))
                return false;
        return send_text(fd, "\r\n");
    }
    if (strcmp(mode, "malformed") == 0)
        return send_text(fd, "?this is not RESP\r\n");
    if (strcmp(mode, "drop") == 0) {
        send_text(fd, "$4096\r\npart of a value");
        return false;
    }
    if (strcmp(mode, "error") == 0)
        return send_text(fd, "-ERR the server refuses everything\r\n");
    return send_text(fd, "$-1\r\n"); /* nil */
}

/* Each read of the client's bytes is taken for one command: the client
 * under test sends one command and waits for its answer. */
static void serve(int fd, const char *mode)
{
    char buffer[1 << 16];
    while (recv(fd, buffer, sizeof buffer, 0) > 0)
        if (!misbehave(fd, mode))
            break;
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
    printf("ready %u\n", port);
    fflush(stdout);
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd >= 0)
            serve(fd, argv[1]);
    }
}
