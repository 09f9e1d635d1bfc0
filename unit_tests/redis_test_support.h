/* A private redis-server for a test: started in a scratch directory on a
 * Unix socket and a free TCP port of 127.0.0.1, never a system instance, and
 * stopped by its pid. Also a TCP listener that accepts connections and never
 * answers, for the timeout tests. Header-only, as the other support headers. */
#ifndef ZC_REDIS_TEST_SUPPORT_H
#define ZC_REDIS_TEST_SUPPORT_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"

typedef struct t_redis {
    char dir[128];
    char socket[192];
    unsigned port;
    pid_t pid;
} t_redis;

/* A port the kernel just gave out, released for the server to take. */
static inline unsigned t_free_tcp_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = 0};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&address, sizeof address) == 0 &&
              getsockname(fd, (struct sockaddr *)&address, &length) == 0);
    close(fd);
    return ntohs(address.sin_port);
}

static inline bool t_redis_answers(const t_redis *redis)
{
    struct timeval timeout = {0, 200000};
    redisContext *context = redisConnectUnixWithTimeout(redis->socket, timeout);
    bool ok = false;
    if (context != NULL && context->err == 0) {
        redisReply *reply = redisCommand(context, "PING");
        ok = reply != NULL; /* PONG, or NOAUTH from a server with a password */
        if (reply != NULL)
            freeReplyObject(reply);
    }
    if (context != NULL)
        redisFree(context);
    return ok;
}

/* Starts redis-server in redis->dir, on redis->socket and redis->port,
 * and waits until it answers. */
static inline void t_redis_launch(t_redis *redis, const char *const *extra)
{
    char port[16];
    snprintf(port, sizeof port, "%u", redis->port);
    const char *argv[64] = {"redis-server",
                            "--port",
                            port,
                            "--bind",
                            "127.0.0.1",
                            "--unixsocket",
                            redis->socket,
                            "--save",
                            "",
                            "--appendonly",
                            "no",
                            "--dir",
                            redis->dir,
                            "--daemonize",
                            "no",
                            "--loglevel",
                            "warning",
                            "--logfile",
                            ""};
    size_t argc = 19;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && argc < 62; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    redis->pid = fork();
    cr_assert(redis->pid >= 0);
    if (redis->pid == 0) {
        /* Dies with the test, even one that crashed before its .fini, and
         * keeps no copy of the test's output pipes (ctest waits for them). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execvp("redis-server", (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 500 && !t_redis_answers(redis); i++) {
        int status;
        cr_assert_eq(waitpid(redis->pid, &status, WNOHANG), 0, "redis-server exited early");
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    }
    cr_assert(t_redis_answers(redis), "redis-server did not come up");
}

/* Starts redis-server with extra "--name value" arguments (NULL-terminated
 * list, may be empty) in a new directory and waits until it answers. */
static inline void t_redis_start(t_redis *redis, const char *const *extra)
{
    snprintf(redis->dir, sizeof redis->dir, "/tmp/zc_redis_XXXXXX");
    cr_assert_not_null(mkdtemp(redis->dir));
    snprintf(redis->socket, sizeof redis->socket, "%s/redis.sock", redis->dir);
    redis->port = t_free_tcp_port();
    t_redis_launch(redis, extra);
}

/* Kills the server and starts a new one in its place, empty. */
static inline void t_redis_restart(t_redis *redis, const char *const *extra)
{
    kill(redis->pid, SIGKILL);
    waitpid(redis->pid, NULL, 0);
    t_redis_launch(redis, extra);
}

static inline void t_redis_stop(t_redis *redis)
{
    if (redis->pid > 0) {
        kill(redis->pid, SIGKILL); /* also when stopped with SIGSTOP */
        waitpid(redis->pid, NULL, 0);
    }
    redis->pid = 0;
    if (redis->dir[0] != '\0')
        t_remove_tree(redis->dir);
}

/* One command on the private server, e.g. to plant or read values. */
static inline redisReply *t_redis_command(const t_redis *redis, int argc, const char **argv,
                                          const size_t *lengths)
{
    struct timeval timeout = {2, 0};
    redisContext *context = redisConnectUnixWithTimeout(redis->socket, timeout);
    cr_assert(context != NULL && context->err == 0);
    redisReply *reply = redisCommandArgv(context, argc, argv, lengths);
    cr_assert_not_null(reply);
    redisFree(context);
    return reply;
}

/* A TCP listener on 127.0.0.1 that never accepts nor answers: connections
 * complete in its backlog and then hear nothing. Returns its fd. */
static inline int t_silent_listener(unsigned *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = 0};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&address, sizeof address) == 0 &&
              listen(fd, 64) == 0 && getsockname(fd, (struct sockaddr *)&address, &length) == 0);
    *port = ntohs(address.sin_port);
    return fd;
}

static inline uint64_t t_monotonic_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

#endif
