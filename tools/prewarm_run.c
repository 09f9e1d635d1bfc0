/* prewarm's builds (prewarm_run.h). Helpers ignore SIGINT, so an interrupt
 * stops handing out jobs while the builds under way finish and are stored:
 * a second run finds them present and builds the rest. */
#include "prewarm_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prewarm_job.h"

#define MAX_HELPERS 64
#define LINE_MAX_BYTES 1024

typedef struct helper {
    pid_t pid;
    FILE *jobs;  /* its standard input; NULL once closed */
    int answers; /* its standard output; -1 once it ended */
    long job;    /* the item it builds, -1 when idle */
    char line[LINE_MAX_BYTES];
    size_t line_used;
} helper;

typedef struct run_state {
    const prewarm_list *list;
    helper helpers[MAX_HELPERS];
    unsigned helper_count;
    size_t next, done;
    prewarm_result *result;
    double started;
    bool progress; /* a terminal: one updated line */
} run_state;

/* Ctrl-C once: no new builds, those under way finish and are stored. Twice:
 * those are stopped too (a build can hang in a driver). */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int signal_number)
{
    (void)signal_number;
    if (interrupted < 2)
        interrupted++;
}

static void stop_builds_under_way(run_state *state)
{
    for (unsigned i = 0; i < state->helper_count; i++)
        if (state->helpers[i].pid > 0 && state->helpers[i].job >= 0)
            kill(state->helpers[i].pid, SIGTERM);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool start_helper(helper *h, const char *path)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return false;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return false;
    }
    h->pid = fork();
    if (h->pid == 0) {
        signal(SIGINT, SIG_IGN); /* finish the build under way; kept across exec */
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
            _exit(126);
        execl(path, path, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    h->jobs = h->pid > 0 ? fdopen(in[1], "wb") : NULL;
    h->answers = out[0];
    h->job = -1;
    h->line_used = 0;
    if (h->jobs == NULL) {
        close(in[1]);
        close(out[0]);
        return false;
    }
    return true;
}

static bool add_failure(prewarm_result *result, const prewarm_item *item, const char *why)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&item->recorded_key, hex);
    char **grown = realloc(result->failures, (result->failed + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    result->failures = grown;
    size_t size = strlen(hex) + strlen(why) + 3;
    char *text = malloc(size);
    if (text != NULL)
        snprintf(text, size, "%s: %s", hex, why);
    result->failures[result->failed++] = text;
    return text != NULL;
}

static void show_progress(const run_state *state)
{
    const prewarm_result *r = state->result;
    size_t total = state->list->count;
    double elapsed = now_seconds() - state->started;
    double left =
        state->done > 0 ? elapsed / (double)state->done * (double)(total - state->done) : 0.0;
    char bar[31];
    size_t filled = total > 0 ? state->done * 30 / total : 30;
    for (size_t i = 0; i < 30; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r[%s] %zu/%zu  built %llu  present %llu  failed %llu  ", bar, state->done,
            total, (unsigned long long)r->built, (unsigned long long)r->present,
            (unsigned long long)r->failed);
    if (state->done > 0 && state->done < total)
        fprintf(stderr, "about %.0f s left ", left);
    fflush(stderr);
}

/* "<id> <outcome> <key> <message>" from a helper. */
static void take_answer(run_state *state, helper *h, const char *line)
{
    unsigned id;
    char outcome[16], key[80];
    int consumed = 0;
    const prewarm_item *item = &state->list->items[h->job];
    if (sscanf(line, "%u %15s %79s %n", &id, outcome, key, &consumed) < 3 || id != (unsigned)h->job)
        outcome[0] = '\0';
    const char *message = consumed > 0 ? line + consumed : "";
    if (strcmp(outcome, "built") == 0)
        state->result->built++;
    else if (strcmp(outcome, "present") == 0)
        state->result->present++;
    else
        add_failure(state->result, item, outcome[0] != '\0' ? message : "unreadable answer");
    if (!state->progress)
        printf("%s %s %s\n", outcome[0] != '\0' ? outcome : "failed", key, message);
    h->job = -1;
    state->done++;
}

static void give_job(run_state *state, helper *h)
{
    if (interrupted || state->next == state->list->count) {
        if (h->jobs != NULL)
            fclose(h->jobs);
        h->jobs = NULL;
        return;
    }
    const prewarm_item *item = &state->list->items[state->next];
    h->job = (long)state->next++;
    if (!prewarm_job_write(h->jobs, (uint32_t)h->job, item->recipe, item->recipe_size, item->blobs,
                           item->blob_sizes, item->blob_count)) {
        add_failure(state->result, item, "the build helper stopped reading");
        state->done++;
        h->job = -1;
        fclose(h->jobs);
        h->jobs = NULL;
    }
}

static void read_answers(run_state *state, helper *h)
{
    ssize_t got = read(h->answers, h->line + h->line_used, sizeof h->line - 1 - h->line_used);
    if (got < 0 && errno == EINTR)
        return;
    if (got <= 0) {
        if (h->job >= 0) {
            add_failure(state->result, &state->list->items[h->job], "the build helper died");
            state->done++;
        }
        close(h->answers);
        h->answers = -1;
        h->job = -1;
        return;
    }
    h->line_used += (size_t)got;
    h->line[h->line_used] = '\0';
    char *end;
    while ((end = strchr(h->line, '\n')) != NULL) {
        *end = '\0';
        if (h->job >= 0)
            take_answer(state, h, h->line);
        size_t rest = h->line_used - (size_t)(end + 1 - h->line);
        memmove(h->line, end + 1, rest + 1);
        h->line_used = rest;
        give_job(state, h);
    }
    if (h->line_used == sizeof h->line - 1)
        h->line_used = 0; /* a line too long to be an answer: dropped */
}

static void poll_helpers(run_state *state)
{
    struct pollfd fds[MAX_HELPERS];
    helper *which[MAX_HELPERS];
    nfds_t count = 0;
    for (unsigned i = 0; i < state->helper_count; i++)
        if (state->helpers[i].answers >= 0) {
            fds[count] = (struct pollfd){.fd = state->helpers[i].answers, .events = POLLIN};
            which[count++] = &state->helpers[i];
        }
    if (count == 0 || poll(fds, count, 1000) <= 0)
        return;
    for (nfds_t i = 0; i < count; i++)
        if (fds[i].revents != 0)
            read_answers(state, which[i]);
}

static bool any_running(const run_state *state)
{
    for (unsigned i = 0; i < state->helper_count; i++)
        if (state->helpers[i].answers >= 0)
            return true;
    return false;
}

static void install_handlers(struct sigaction *old_int)
{
    struct sigaction action = {.sa_handler = on_interrupt};
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, old_int);
    signal(SIGPIPE, SIG_IGN); /* a helper that died is seen on its answers */
}

bool prewarm_run(const prewarm_list *list, unsigned jobs, const char *helper_path,
                 prewarm_result *result, char *reason, size_t reason_size)
{
    static run_state state;
    memset(&state, 0, sizeof state);
    memset(result, 0, sizeof *result);
    state.list = list;
    state.result = result;
    state.started = now_seconds();
    state.progress = isatty(2);
    struct sigaction old_int;
    install_handlers(&old_int);
    interrupted = 0;
    unsigned wanted = jobs < MAX_HELPERS ? jobs : MAX_HELPERS;
    if (wanted > list->count)
        wanted = list->count > 0 ? (unsigned)list->count : 1;
    for (unsigned i = 0; i < wanted; i++)
        if (start_helper(&state.helpers[state.helper_count], helper_path))
            give_job(&state, &state.helpers[state.helper_count++]);
    if (state.helper_count == 0) {
        snprintf(reason, reason_size, "cannot start %s: %s", helper_path, strerror(errno));
        return false;
    }
    bool announced = false, stopped = false;
    while (any_running(&state)) {
        poll_helpers(&state);
        if (interrupted == 1 && !announced) {
            fprintf(stderr, "\ninterrupted: finishing the builds under way (Ctrl-C again stops "
                            "them)\n");
            announced = true;
        }
        if (interrupted >= 2 && !stopped) {
            stop_builds_under_way(&state);
            stopped = true;
        }
        for (unsigned i = 0; interrupted && i < state.helper_count; i++)
            if (state.helpers[i].job < 0 && state.helpers[i].jobs != NULL)
                give_job(&state, &state.helpers[i]); /* closes its input */
        if (state.progress)
            show_progress(&state);
    }
    for (unsigned i = 0; i < state.helper_count; i++)
        waitpid(state.helpers[i].pid, NULL, 0);
    /* Every helper ended (none could open a device, say) with work left:
     * that work failed too, so the summary adds up. */
    for (; !interrupted && state.next < list->count; state.next++)
        add_failure(result, &list->items[state.next], "not built: every build helper ended");
    if (state.progress)
        fprintf(stderr, "\n");
    sigaction(SIGINT, &old_int, NULL);
    result->interrupted = interrupted != 0 && state.done < list->count;
    result->seconds = now_seconds() - state.started;
    return true;
}

void prewarm_result_free(prewarm_result *result)
{
    for (uint64_t i = 0; i < result->failed; i++)
        free(result->failures[i]);
    free(result->failures);
    memset(result, 0, sizeof *result);
}
