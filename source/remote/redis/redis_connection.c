/* See redis_connection.h. hiredis formats commands and parses replies (its
 * reader); the socket is this file's: connected without blocking (the name
 * looked up in a thread of its own), left non-blocking, read and written
 * here, directly or through TLS (tls_socket.c), so that every wait is a
 * poll() against the command's deadline. */
#include "redis_connection.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "monotonic_clock.h"
#include "../tls/tls_socket.h"
#include "zecache/live_set.h"
#include "zecache/log.h"

/* A connection keeps a read buffer up to this size between replies (hiredis
 * would free it after every reply above 16 KiB, and grow a new one page by
 * page for the next large entry), never more, and only while the storage's
 * budget (redis_buffer_budget.h) has room for it. Smaller ones are not
 * counted. */
#define KEPT_BUFFER_MAX ((size_t)16 << 20)
#define UNCOUNTED_BUFFER_MAX ((size_t)64 << 10)

/* A connected socket: the descriptor, its TLS session (NULL: plain text),
 * and hiredis's reader of what came through it. */
typedef struct redis_link {
    int fd;
    zc_tls_socket *tls;
    redisReader *reader;
    size_t peak; /* the most bytes its reader buffered */
} redis_link;

struct zc_redis_connection {
    zc_remote_server server;
    zc_redis_limits limits;
    redis_link *link;            /* NULL: not connected */
    zc_tls_context *tls_context; /* rediss://: made at the first connect, then kept */
    size_t kept;                 /* of limits.buffers, counted for link's reader */
    pid_t owner;                 /* the process that connected it */
    pthread_mutex_t mutex;
    zc_live_link live;    /* the connections in use, for fork() */
    bool locked_for_fork; /* idle at the fork: its mutex was taken */
};

typedef struct failure {
    char text[256];
} failure;

static bool failed(failure *why, const char *format, const char *detail)
{
    snprintf(why->text, sizeof why->text, format, detail);
    return false;
}

/* ---- deadlines ---- */

static uint64_t deadline_after_ms(uint64_t start_ns, uint64_t ms)
{
    return start_ns + ms * UINT64_C(1000000);
}

/* Milliseconds left, rounded up; 0 once the deadline has passed. */
static int remaining_ms(uint64_t deadline_ns)
{
    uint64_t now = zc_monotonic_ns();
    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Until fd is ready for events (or in error, which the next call reports),
 * or the deadline. */
static bool wait_for(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        int ms = remaining_ms(deadline_ns);
        if (ms == 0)
            return false;
        struct pollfd ready = {.fd = fd, .events = events};
        int count = poll(&ready, 1, ms);
        if (count > 0)
            return true;
        if (count < 0 && errno != EINTR)
            return false;
    }
}

/* ---- SIGPIPE ---- */

/* hiredis writes with write(): a server that closed the connection would
 * raise SIGPIPE, whose default kills the application. It is blocked in this
 * thread around every command, and one raised meanwhile is consumed. */
typedef struct sigpipe_guard {
    sigset_t old_mask;
    bool was_pending;
} sigpipe_guard;

static void sigpipe_block(sigpipe_guard *guard)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    guard->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &guard->old_mask);
}

static void sigpipe_restore(sigpipe_guard *guard)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    if (!guard->was_pending && sigismember(&pending, SIGPIPE) == 1) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &guard->old_mask, NULL);
}

/* ---- fork() ----
 * A child shares its parent's sockets and must never write on one: the
 * owner check (connect_now) makes it connect on its own. Around fork(),
 * every connection's mutex is tried, never waited for (a command may take
 * seconds). One that was idle is whole in the child, which drops it at its
 * first command. One that another thread was using is mid-command in the
 * child's copy, its mutex held by a thread the child does not have: the
 * child closes its copy of the socket, forgets the half-updated link
 * (its memory is left: freeing it is not safe) and makes the mutex anew, so
 * that its commands connect instead of waiting out their deadline. Nothing
 * in a command calls back into the application, so the forking thread is
 * never inside one. */
static void register_fork_handlers(void);
static zc_live_set live_connections = ZC_LIVE_SET_INIT(register_fork_handlers);

static zc_redis_connection *connection_of(zc_live_link *link)
{
    return ZC_LIVE_OWNER(link, zc_redis_connection, live);
}

static void lock_for_fork(void)
{
    pthread_mutex_lock(&live_connections.lock);
    for (zc_live_link *link = live_connections.head; link != NULL; link = link->next)
        connection_of(link)->locked_for_fork =
            pthread_mutex_trylock(&connection_of(link)->mutex) == 0;
}

static void unlock_in_parent(void)
{
    for (zc_live_link *link = live_connections.head; link != NULL; link = link->next)
        if (connection_of(link)->locked_for_fork)
            pthread_mutex_unlock(&connection_of(link)->mutex);
    pthread_mutex_unlock(&live_connections.lock);
}

static void disown_in_child(void)
{
    for (zc_live_link *link = live_connections.head; link != NULL; link = link->next) {
        zc_redis_connection *at = connection_of(link);
        if (at->locked_for_fork) {
            pthread_mutex_unlock(&at->mutex);
        } else {
            if (at->link != NULL)
                close(at->link->fd);
            at->link = NULL;
            pthread_mutex_init(&at->mutex, NULL);
        }
        at->owner = 0; /* no process: even one that gets the parent's pid reconnects */
    }
    pthread_mutex_unlock(&live_connections.lock);
}

static void register_fork_handlers(void)
{
    if (pthread_atfork(lock_for_fork, unlock_in_parent, disown_in_child) != 0)
        zc_log_failure("remote: registering fork handlers", ENOMEM);
}

/* ---- connecting ---- */

/* Non-blocking connect to one address, waited for until the deadline. */
static int connect_address(const struct sockaddr *address, socklen_t length, uint64_t deadline_ns)
{
    int fd = socket(address->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int error = 0;
    socklen_t error_length = sizeof error;
    if (connect(fd, address, length) == 0 ||
        (errno == EINPROGRESS && wait_for(fd, POLLOUT, deadline_ns) &&
         getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_length) == 0 && error == 0))
        return fd;
    if (error != 0)
        errno = error;
    else if (remaining_ms(deadline_ns) == 0)
        errno = ETIMEDOUT;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

/* The name lookup, bounded: getaddrinfo runs in a thread of its own, and a
 * lookup not done by the deadline is abandoned to it (the thread frees it
 * when the resolver returns). Not getaddrinfo_a, whose resolver threads the
 * sanitizers cannot follow. A numeric address needs no thread. */
typedef struct lookup {
    pthread_mutex_t lock;
    pthread_cond_t finished;
    bool done, abandoned;
    int status;
    struct addrinfo *result;
    char host[sizeof(((zc_remote_server *)0)->host)], service[8];
} lookup;

static const struct addrinfo stream_hints = {.ai_socktype = SOCK_STREAM,
                                             .ai_flags = AI_NUMERICSERV};

static void lookup_free(lookup *pending)
{
    pthread_cond_destroy(&pending->finished);
    pthread_mutex_destroy(&pending->lock);
    free(pending);
}

static void *run_lookup(void *context)
{
    lookup *pending = context;
    struct addrinfo *result = NULL;
    int status = getaddrinfo(pending->host, pending->service, &stream_hints, &result);
    pthread_mutex_lock(&pending->lock);
    bool abandoned = pending->abandoned;
    pending->status = status;
    pending->result = result;
    pending->done = true;
    pthread_cond_signal(&pending->finished);
    pthread_mutex_unlock(&pending->lock);
    if (abandoned) {
        if (result != NULL)
            freeaddrinfo(result);
        lookup_free(pending);
    }
    return NULL;
}

static lookup *lookup_new(const char *host, unsigned port)
{
    lookup *pending = calloc(1, sizeof *pending);
    pthread_condattr_t attributes;
    if (pending == NULL || pthread_condattr_init(&attributes) != 0) {
        free(pending);
        return NULL;
    }
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_mutex_init(&pending->lock, NULL);
    pthread_cond_init(&pending->finished, &attributes);
    pthread_condattr_destroy(&attributes);
    snprintf(pending->host, sizeof pending->host, "%s", host);
    snprintf(pending->service, sizeof pending->service, "%u", port);
    return pending;
}

/* Starts the lookup's thread with every signal blocked, so that none of the
 * application's is delivered there. */
static bool lookup_start(lookup *pending)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attributes;
    pthread_t thread;
    bool started = pthread_attr_init(&attributes) == 0;
    if (started) {
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&thread, &attributes, run_lookup, pending) == 0;
        pthread_attr_destroy(&attributes);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return started;
}

static struct addrinfo *look_up(const char *host, unsigned port, uint64_t deadline_ns, failure *why)
{
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo numeric = stream_hints, *found = NULL;
    numeric.ai_flags |= AI_NUMERICHOST;
    if (getaddrinfo(host, service, &numeric, &found) == 0)
        return found;
    lookup *pending = lookup_new(host, port);
    if (pending == NULL || !lookup_start(pending)) {
        if (pending != NULL)
            lookup_free(pending);
        failed(why, "%s", "cannot start the name lookup");
        return NULL;
    }
    struct timespec until = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    pthread_mutex_lock(&pending->lock);
    while (!pending->done &&
           pthread_cond_timedwait(&pending->finished, &pending->lock, &until) != ETIMEDOUT)
        ;
    bool done = pending->done;
    pending->abandoned = !done;
    pthread_mutex_unlock(&pending->lock);
    if (!done) {
        failed(why, "%s", "name lookup timed out");
        return NULL; /* the lookup's thread frees it */
    }
    found = pending->result;
    if (pending->status != 0)
        failed(why, "name lookup: %s", gai_strerror(pending->status));
    lookup_free(pending);
    return found;
}

static int connect_tcp(const zc_remote_server *server, uint64_t deadline_ns, failure *why)
{
    struct addrinfo *addresses = look_up(server->host, server->port, deadline_ns, why);
    int fd = -1;
    for (struct addrinfo *at = addresses; at != NULL && fd < 0; at = at->ai_next)
        fd = connect_address(at->ai_addr, at->ai_addrlen, deadline_ns);
    if (addresses != NULL && fd < 0)
        failed(why, "connect: %s", strerror(errno));
    freeaddrinfo(addresses);
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
    return fd;
}

static int connect_unix(const zc_remote_server *server, uint64_t deadline_ns, failure *why)
{
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(server->path) >= sizeof address.sun_path) {
        failed(why, "%s", "socket path too long");
        return -1;
    }
    memcpy(address.sun_path, server->path, strlen(server->path) + 1);
    int fd = connect_address((const struct sockaddr *)&address, sizeof address, deadline_ns);
    if (fd < 0)
        failed(why, "connect: %s", strerror(errno));
    return fd;
}

/* ---- the link's bytes, plain or through TLS ---- */

/* A plain read() or write() that moved nothing: wait for wait_event, or
 * failed (what names the step). */
static ssize_t plain_result(ssize_t moved, short wait_event, const char *what, short *events,
                            failure *why)
{
    *events = moved < 0 && (errno == EAGAIN || errno == EINTR) ? wait_event : 0;
    if (moved < 0 && *events == 0)
        failed(why, what, strerror(errno));
    return moved;
}

/* As read() and write(): bytes moved, 0 at the end of the stream (read),
 * or -1 with *events to wait for (0: failed, why says so). */
static ssize_t link_read(redis_link *at, void *buffer, size_t size, short *events, failure *why)
{
    if (at->tls != NULL)
        return zc_tls_read(at->tls, buffer, size, events, why->text, sizeof why->text);
    return plain_result(read(at->fd, buffer, size), POLLIN, "receive: %s", events, why);
}

static ssize_t link_write(redis_link *at, const void *buffer, size_t size, short *events,
                          failure *why)
{
    if (at->tls != NULL)
        return zc_tls_write(at->tls, buffer, size, events, why->text, sizeof why->text);
    return plain_result(write(at->fd, buffer, size), POLLOUT, "send: %s", events, why);
}

/* Some bytes into buffer, waiting for them until the deadline: a TLS
 * session may hold bytes already, so the socket is polled only when the
 * read says it must be. */
static ssize_t read_some(redis_link *at, void *buffer, size_t size, uint64_t deadline_ns,
                         failure *why)
{
    for (;;) {
        short events = 0;
        ssize_t got = link_read(at, buffer, size, &events, why);
        if (got == 0)
            failed(why, "%s", "the server closed the connection");
        if (got >= 0 || events == 0)
            return got > 0 ? got : -1;
        if (!wait_for(at->fd, events, deadline_ns)) {
            failed(why, "%s", "timed out waiting for the reply");
            return -1;
        }
    }
}

static bool write_all(redis_link *at, const char *bytes, size_t size, uint64_t deadline_ns,
                      failure *why)
{
    while (size > 0) {
        short events = 0;
        ssize_t written = link_write(at, bytes, size, &events, why);
        if (written > 0) {
            bytes += written;
            size -= (size_t)written;
        } else if (events == 0) {
            return false;
        } else if (!wait_for(at->fd, events, deadline_ns)) {
            return failed(why, "%s", "timed out sending");
        }
    }
    return true;
}

/* ---- one command on a connected link ---- */

/* What one command takes back: its reply's shape, where a large value goes,
 * and whether the connection must be dropped after it (a streamed value, or
 * bytes after the reply that no command asked for). */
typedef struct command {
    zc_redis_reply_check check;
    const zc_redis_sink *sink;
    bool drop_after;
} command;

static command command_for(zc_redis_reply_kind kind, const zc_redis_sink *sink, size_t max_reply)
{
    command taking = {.check = {.kind = kind, .max_value = max_reply}, .sink = sink};
    if (kind == ZC_REDIS_REPLY_VALUE && sink != NULL)
        taking.check.in_memory_max = ZC_REDIS_IN_MEMORY_MAX;
    else if (max_reply > ZC_REDIS_IN_MEMORY_MAX)
        taking.check.max_value = ZC_REDIS_IN_MEMORY_MAX;
    return taking;
}

static bool send_command(redis_link *at, int argc, const char **argv, const size_t *lengths,
                         uint64_t deadline_ns, failure *why)
{
    char *bytes = NULL;
    int size = redisFormatCommandArgv(&bytes, argc, argv, lengths);
    if (size < 0)
        return failed(why, "%s", "out of memory");
    bool sent = write_all(at, bytes, (size_t)size, deadline_ns, why);
    redisFreeCommand(bytes);
    return sent;
}

/* More of the reply into the reader's buffer (up to 16 KiB a read, a TLS
 * record). */
static bool receive_more(redis_link *at, uint64_t deadline_ns, failure *why)
{
    char buffer[16 * 1024];
    ssize_t got = read_some(at, buffer, sizeof buffer, deadline_ns, why);
    if (got < 0)
        return false;
    if (redisReaderFeed(at->reader, buffer, (size_t)got) != REDIS_OK)
        return failed(why, "%s", "out of memory");
    if (at->reader->len > at->peak)
        at->peak = at->reader->len;
    return true;
}

/* The value's next bytes to the sink, and its CRLF checked; *done counts
 * the bytes of value and CRLF taken so far. */
static bool feed_sink(command *taking, const char *bytes, size_t size, uint64_t *done, failure *why)
{
    uint64_t length = taking->check.bulk_length;
    uint64_t left = length + 2 - *done;
    size_t take = size < left ? size : (size_t)left;
    size_t of_value = *done >= length ? 0 : (size_t)(length - *done < take ? length - *done : take);
    char reason[128] = "";
    if (of_value > 0 && !taking->sink->write(taking->sink->context, length, (const uint8_t *)bytes,
                                             of_value, reason, sizeof reason))
        return failed(why, "the value was refused: %s", reason);
    for (size_t i = of_value; i < take; i++)
        if (bytes[i] != "\r\n"[*done + i - length])
            return failed(why, "%s", "a bulk string not ended by CRLF");
    *done += take;
    return true;
}

/* A value too large to hold, from the bytes the reader buffered after its
 * header on, straight from the socket to the sink. */
static redisReply *stream_value(redis_link *at, command *taking, uint64_t deadline_ns, failure *why)
{
    enum { CHUNK = 256 << 10 };
    redisReader *reader = at->reader;
    uint64_t done = 0, whole = taking->check.bulk_length + 2;
    taking->drop_after = true; /* hiredis's reader is left mid-reply */
    if (!feed_sink(taking, reader->buf + reader->pos + taking->check.size,
                   reader->len - reader->pos - taking->check.size, &done, why))
        return NULL;
    char *chunk = malloc(CHUNK);
    if (chunk == NULL) {
        failed(why, "%s", "out of memory");
        return NULL;
    }
    bool ok = true;
    while (ok && done < whole) {
        ssize_t got = read_some(at, chunk, CHUNK, deadline_ns, why);
        ok = got > 0 && feed_sink(taking, chunk, (size_t)got, &done, why);
    }
    free(chunk);
    redisReply *reply = ok ? calloc(1, sizeof *reply) : NULL;
    if (reply != NULL) {
        reply->type = REDIS_REPLY_STRING;
        reply->len = (size_t)taking->check.bulk_length;
    } else if (ok) {
        failed(why, "%s", "out of memory");
    }
    return reply;
}

/* A whole reply of the right shape is buffered: hiredis builds it. */
static redisReply *parse_reply(redisReader *reader, command *taking, failure *why)
{
    void *reply = NULL;
    if (redisReaderGetReply(reader, &reply) != REDIS_OK || reply == NULL) {
        failed(why, "bad reply: %s", reader->err != 0 ? reader->errstr : "cut short");
        return NULL;
    }
    if (reader->len > reader->pos)
        taking->drop_after = true; /* more than one reply to one command */
    return reply;
}

static redisReply *exchange(redis_link *at, command *taking, int argc, const char **argv,
                            const size_t *lengths, uint64_t deadline_ns, failure *why)
{
    if (!send_command(at, argc, argv, lengths, deadline_ns, why))
        return NULL;
    for (;;) {
        redisReader *reader = at->reader;
        switch (zc_redis_reply_check_bytes(&taking->check, reader->buf + reader->pos,
                                           reader->len - reader->pos)) {
        case ZC_REDIS_COMPLETE:
            return parse_reply(reader, taking, why);
        case ZC_REDIS_STREAM:
            if (taking->sink != NULL)
                return stream_value(at, taking, deadline_ns, why);
            failed(why, "%s", "a value too large to hold: refused");
            return NULL;
        case ZC_REDIS_REFUSED:
            failed(why, "refused: %s", taking->check.why);
            return NULL;
        case ZC_REDIS_INCOMPLETE:
            break;
        }
        if (!receive_more(at, deadline_ns, why))
            return NULL;
    }
}

/* A command whose reply only says yes or no; what names it in a failure. */
static bool accepted(redis_link *at, const char *what, int argc, const char **argv,
                     uint64_t deadline_ns, failure *why)
{
    command taking = command_for(ZC_REDIS_REPLY_SIMPLE, NULL, 0);
    redisReply *reply = exchange(at, &taking, argc, argv, NULL, deadline_ns, why);
    if (reply == NULL) {
        failure cause = *why;
        return failed(why, what, cause.text);
    }
    /* Bytes after the reply would answer the next command: the connection
     * is refused, as zc_redis_command drops one after any other command. */
    bool ok = reply->type != REDIS_REPLY_ERROR && !taking.drop_after;
    if (taking.drop_after)
        failed(why, what, "more than one reply");
    else if (!ok)
        failed(why, what, reply->str != NULL ? reply->str : "refused");
    freeReplyObject(reply);
    return ok;
}

/* AUTH and SELECT on a new connection. The password is never in a
 * message: the server's refusal does not quote it. */
static bool prepare(redis_link *at, const zc_remote_server *server, uint64_t deadline_ns,
                    failure *why)
{
    if (server->password[0] != '\0') {
        bool with_user = server->user[0] != '\0';
        const char *argv[] = {"AUTH", with_user ? server->user : server->password,
                              server->password};
        if (!accepted(at, "AUTH: %s", with_user ? 3 : 2, argv, deadline_ns, why))
            return false;
    }
    char db[16];
    snprintf(db, sizeof db, "%u", server->db);
    return server->db == 0 ||
           accepted(at, "SELECT: %s", 2, (const char *[]){"SELECT", db}, deadline_ns, why);
}

/* Closes the socket; a TLS session goes without a word (see
 * zc_tls_socket_free). */
static void link_free(redis_link *at)
{
    if (at == NULL)
        return;
    zc_tls_socket_free(at->tls);
    close(at->fd);
    if (at->reader != NULL)
        redisReaderFree(at->reader);
    free(at);
}

static void drop(zc_redis_connection *connection)
{
    link_free(connection->link);
    connection->link = NULL;
    if (connection->kept > 0)
        zc_redis_buffer_budget_give(connection->limits.buffers, connection->kept);
    connection->kept = 0;
}

static redisReader *reader_new(const zc_redis_limits *limits)
{
    redisReader *reader = redisReaderCreate();
    if (reader != NULL)
        reader->maxbuf = limits->max_reply < KEPT_BUFFER_MAX ? limits->max_reply : KEPT_BUFFER_MAX;
    return reader;
}

/* What a reader that once buffered peak bytes may hold: hiredis grows its
 * buffer by doubling up to 1 MiB, then by 1 MiB. */
static size_t buffer_estimate(size_t peak)
{
    size_t step = (size_t)1 << 20;
    return peak < step ? 2 * peak : peak + step;
}

/* After a reply: a large buffer is kept when the storage's budget has room
 * for it, and given back at once (a new reader) when not. */
static void settle_buffer(zc_redis_connection *connection)
{
    redis_link *at = connection->link;
    zc_redis_buffer_budget *budget = connection->limits.buffers;
    if (budget == NULL || at->peak <= UNCOUNTED_BUFFER_MAX)
        return;
    size_t wanted = buffer_estimate(at->peak);
    if (wanted <= connection->kept)
        return;
    if (zc_redis_buffer_budget_take(budget, wanted - connection->kept)) {
        connection->kept = wanted;
        return;
    }
    redisReader *fresh = reader_new(&connection->limits);
    if (fresh == NULL) {
        drop(connection); /* which frees the buffer too */
        return;
    }
    redisReaderFree(at->reader);
    at->reader = fresh;
    at->peak = 0;
    zc_redis_buffer_budget_give(budget, connection->kept);
    connection->kept = 0;
}

/* ---- TLS ---- */

static bool tls_handshake(zc_tls_socket *tls, int fd, uint64_t deadline_ns, failure *why)
{
    for (;;) {
        short events = 0;
        switch (zc_tls_handshake(tls, &events, why->text, sizeof why->text)) {
        case ZC_TLS_DONE:
            return true;
        case ZC_TLS_FAILED:
            return false;
        case ZC_TLS_WAIT:
            if (!wait_for(fd, events, deadline_ns))
                return failed(why, "%s", "TLS handshake: timed out");
        }
    }
}

/* rediss://: the server's files (CAs, client certificate) loaded, once per
 * connection, before its first connect. This is local work, bounded, done
 * outside the deadlines: OpenSSL's start-up alone takes 10 to 20 ms here,
 * which a connect_timeout of 100 ms must not pay. False when they cannot
 * be loaded. */
static bool load_tls_context(zc_redis_connection *connection, failure *why)
{
    const zc_remote_tls *tls = &connection->server.tls;
    if (!tls->enabled || connection->tls_context != NULL)
        return true;
    zc_tls_settings settings = {tls->ca_file, tls->cert_file, tls->key_file};
    connection->tls_context = zc_tls_context_new(&settings, why->text, sizeof why->text);
    return connection->tls_context != NULL;
}

/* The session on at's socket, its handshake done by the deadline. */
static bool start_tls(zc_redis_connection *connection, redis_link *at, uint64_t deadline_ns,
                      failure *why)
{
    at->tls = zc_tls_socket_new(connection->tls_context, at->fd, connection->server.host, why->text,
                                sizeof why->text);
    return at->tls != NULL && tls_handshake(at->tls, at->fd, deadline_ns, why);
}

/* ---- connecting ---- */

static redis_link *link_open(zc_redis_connection *connection, uint64_t deadline_ns, failure *why)
{
    const zc_remote_server *server = &connection->server;
    int fd = server->path[0] != '\0' ? connect_unix(server, deadline_ns, why)
                                     : connect_tcp(server, deadline_ns, why);
    if (fd < 0)
        return NULL;
    redis_link *at = calloc(1, sizeof *at);
    if (at == NULL) {
        close(fd);
        failed(why, "%s", "out of memory");
        return NULL;
    }
    at->fd = fd;
    at->reader = reader_new(&connection->limits);
    bool ok = at->reader != NULL || failed(why, "%s", "out of memory");
    if (ok && server->tls.enabled)
        ok = start_tls(connection, at, deadline_ns, why);
    if (!ok) {
        link_free(at);
        return NULL;
    }
    return at;
}

static bool connect_now(zc_redis_connection *connection, uint64_t deadline_ns, failure *why)
{
    /* A child of fork shares the parent's socket: its replies are not ours.
     * The child closes its copy and connects on its own. */
    if (connection->link != NULL && connection->owner != getpid())
        drop(connection);
    if (connection->link != NULL)
        return true;
    redis_link *at = link_open(connection, deadline_ns, why);
    if (at == NULL)
        return false;
    connection->link = at;
    connection->owner = getpid();
    if (!prepare(at, &connection->server, deadline_ns, why)) {
        drop(connection);
        return false;
    }
    return true;
}

/* The connection's mutex, waited for until the deadline. */
static bool lock_until(zc_redis_connection *connection, uint64_t deadline_ns)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int ms = remaining_ms(deadline_ns);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    return pthread_mutex_timedlock(&connection->mutex, &until) == 0;
}

static uint64_t earlier(uint64_t deadline_ns, const zc_redis_call *call)
{
    return call != NULL && call->deadline_ns != 0 && call->deadline_ns < deadline_ns
               ? call->deadline_ns
               : deadline_ns;
}

redisReply *zc_redis_command(zc_redis_connection *connection, zc_redis_reply_kind kind,
                             const zc_redis_sink *sink, int argc, const char **argv,
                             const size_t *lengths)
{
    return zc_redis_command_within(connection, NULL, kind, sink, argc, argv, lengths);
}

redisReply *zc_redis_command_within(zc_redis_connection *connection, zc_redis_call *call,
                                    zc_redis_reply_kind kind, const zc_redis_sink *sink, int argc,
                                    const char **argv, const size_t *lengths)
{
    uint64_t start = zc_monotonic_ns();
    const zc_redis_limits *limits = &connection->limits;
    uint64_t deadline = earlier(
        deadline_after_ms(start, (uint64_t)limits->connect_timeout_ms + limits->timeout_ms), call);
    failure why = {""};
    if (call != NULL)
        call->timed_out = false;
    if (!lock_until(connection, deadline)) {
        zc_log_info("remote %s: %s: another thread's command on this server did not end in time",
                    connection->server.name, argv[0]);
        if (call != NULL)
            call->timed_out = true;
        return NULL;
    }
    sigpipe_guard guard;
    sigpipe_block(&guard);
    redisReply *reply = NULL;
    const char *step = "cannot connect";
    uint64_t loading = zc_monotonic_ns();
    bool loaded = load_tls_context(connection, &why);
    deadline = earlier(deadline + (zc_monotonic_ns() - loading), call);
    uint64_t connect_deadline = deadline_after_ms(zc_monotonic_ns(), limits->connect_timeout_ms);
    if (connect_deadline > deadline)
        connect_deadline = deadline;
    bool connected = loaded && connect_now(connection, connect_deadline, &why);
    if (connected) {
        step = argv[0];
        command taking = command_for(kind, sink, limits->max_reply);
        reply = exchange(connection->link, &taking, argc, argv, lengths, deadline, &why);
        if (reply == NULL || taking.drop_after)
            drop(connection);
        else
            settle_buffer(connection);
    }
    sigpipe_restore(&guard);
    pthread_mutex_unlock(&connection->mutex);
    if (reply == NULL && call != NULL)
        call->timed_out = zc_monotonic_ns() >= (connected ? deadline : connect_deadline);
    if (reply == NULL)
        zc_log_info("remote %s: %s: %s", connection->server.name, step, why.text);
    return reply;
}

zc_redis_connection *zc_redis_connection_new(const zc_remote_server *server,
                                             const zc_redis_limits *limits)
{
    zc_redis_connection *connection = calloc(1, sizeof *connection);
    if (connection == NULL)
        return NULL;
    connection->server = *server;
    connection->limits = *limits;
    if (pthread_mutex_init(&connection->mutex, NULL) != 0) {
        free(connection);
        return NULL;
    }
    zc_live_set_add(&live_connections, &connection->live);
    return connection;
}

void zc_redis_connection_free(zc_redis_connection *connection)
{
    if (connection == NULL)
        return;
    zc_live_set_remove(&live_connections, &connection->live);
    drop(connection);
    zc_tls_context_free(connection->tls_context);
    pthread_mutex_destroy(&connection->mutex);
    free(connection);
}

const char *zc_redis_connection_name(const zc_redis_connection *connection)
{
    return connection->server.name;
}
