/* A process that loads, stores, trims, removes and scans random keys of one
 * cache from several threads until a deadline, for the crash and stress
 * tests (test_faults_crash.c, test_faults_stress.c). Every artifact is
 * derived from its key number, so every hit is checked byte for byte.
 *
 *   fault_worker dir=PATH [max=BYTES] [keys=N] [binary=BYTES] [threads=N]
 *                [seconds=S] [seed=N] [check=0|1] [stats=FILE slot=N]
 *                [script=1 [crash_at=N]]
 *
 * check=1 also checks, under config.file's lock, that it holds the real
 * total and that the total is within max (not while processes are killed:
 * a killed writer may leave it off by one entry). stats=FILE is a file of
 * FM_STATS_SLOTS fm_counters the process adds its counts to, at slot.
 * script=1 runs fm_script's fixed sequence once, in one thread, counting its
 * system calls (fs_calls); crash_at=N then dies by SIGKILL at call N.
 * Exit status: 0, or one of fm_exit's codes with a message on stderr. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "../source/local/fs_ops.h"
#include "fault_mix.h"

#define MAX_THREADS 32

typedef struct worker_options {
    fm_settings settings;
    unsigned threads;
    uint64_t seed;
    const char *stats;
    unsigned slot;
    bool script;
} worker_options;

static bool parse_number(const char *text, uint64_t *value)
{
    char *end;
    errno = 0;
    *value = strtoull(text, &end, 10);
    return errno == 0 && end != text && *end == '\0';
}

static bool parse_option(worker_options *options, const char *argument)
{
    const char *equals = strchr(argument, '=');
    if (equals == NULL)
        return false;
    size_t name_length = (size_t)(equals - argument);
    const char *value = equals + 1;
    uint64_t number = 0;
    bool numeric = parse_number(value, &number);
#define NAME_IS(literal)                                                                           \
    (name_length == strlen(literal) && strncmp(argument, literal, name_length) == 0)
    if (NAME_IS("dir"))
        options->settings.dir = value;
    else if (NAME_IS("stats"))
        options->stats = value;
    else if (!numeric)
        return false;
    else if (NAME_IS("max"))
        options->settings.max_size = number;
    else if (NAME_IS("keys"))
        options->settings.keys = number;
    else if (NAME_IS("binary"))
        options->settings.max_binary = (size_t)number;
    else if (NAME_IS("seconds"))
        options->settings.seconds = (double)number;
    else if (NAME_IS("check"))
        options->settings.check_under_lock = number != 0;
    else if (NAME_IS("threads"))
        options->threads = (unsigned)number;
    else if (NAME_IS("seed"))
        options->seed = number;
    else if (NAME_IS("slot"))
        options->slot = (unsigned)number;
    else if (NAME_IS("script"))
        options->script = number != 0;
    else if (NAME_IS("crash_at"))
        fm_crash_at = number;
    else
        return false;
#undef NAME_IS
    return true;
}

static bool parse_options(int argc, char **argv, worker_options *options)
{
    *options = (worker_options){
        .settings = {.max_size = 64 << 10, .keys = 64, .max_binary = 3000, .seconds = 60},
        .threads = 2,
        .seed = 1,
    };
    for (int i = 1; i < argc; i++)
        if (!parse_option(options, argv[i]))
            return false;
    return options->settings.dir != NULL && options->settings.keys > 0 &&
           options->settings.max_binary >= 64 && options->threads >= 1 &&
           options->threads <= MAX_THREADS && options->slot < FM_STATS_SLOTS;
}

static fm_counters *map_counters(const worker_options *options)
{
    static fm_counters private_counters;
    if (options->stats == NULL)
        return &private_counters;
    int fd = open(options->stats, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    void *table =
        mmap(NULL, FM_STATS_SLOTS * sizeof(fm_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return table == MAP_FAILED ? NULL : (fm_counters *)table + options->slot;
}

static zc_disk_tier *open_tier(const fm_settings *settings, const zc_fs_ops *ops)
{
    zc_config config;
    memset(&config, 0, sizeof config);
    config.persistent = true;
    snprintf(config.dir, sizeof config.dir, "%s", settings->dir);
    config.max_size = settings->max_size;
    config.compression_level = 1;
    zc_disk_tier *tier = NULL;
    return zc_disk_tier_open_with_ops(&config, ops, &tier) == ZC_OK ? tier : NULL;
}

/* Even threads share one tier (its mutex), odd ones have their own, as
 * other processes would (flock on separate open files). */
static int run_threads(const worker_options *options, fm_counters *counters)
{
    fm_thread threads[MAX_THREADS];
    zc_disk_tier *tiers[MAX_THREADS] = {NULL};
    pthread_t ids[MAX_THREADS];
    unsigned started = 0;
    int result = FM_OK;
    for (unsigned i = 0; i < options->threads; i++) {
        tiers[i] = i % 2 == 0 && i > 0 ? tiers[0] : open_tier(&options->settings, NULL);
        if (tiers[i] == NULL) {
            fprintf(stderr, "fault_worker %d: cannot open %s\n", getpid(), options->settings.dir);
            result = FM_SETUP;
            break;
        }
        threads[i] = (fm_thread){.settings = &options->settings,
                                 .tier = tiers[i],
                                 .seed = fc_mix(options->seed * 1000 + i) ^ (uint64_t)getpid(),
                                 .counters = counters};
        if (pthread_create(&ids[i], NULL, fm_run, &threads[i]) != 0) {
            result = FM_SETUP;
            break;
        }
        started++;
    }
    for (unsigned i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
        if (threads[i].failure != FM_OK) {
            fprintf(stderr, "fault_worker %d thread %u: %s\n", getpid(), i, threads[i].message);
            if (result == FM_OK)
                result = threads[i].failure;
        }
    }
    for (unsigned i = 0; i < options->threads; i++)
        if (tiers[i] != NULL && (i % 2 == 1 || i == 0))
            zc_disk_tier_close(tiers[i]);
    return result;
}

static int run_script(const worker_options *options, fm_counters *counters)
{
    zc_disk_tier *tier = open_tier(&options->settings, &fm_crash_ops);
    if (tier == NULL) {
        fprintf(stderr, "fault_worker %d: cannot open %s\n", getpid(), options->settings.dir);
        return FM_SETUP;
    }
    fm_thread thread = {.settings = &options->settings, .tier = tier, .counters = counters};
    int result = fm_script(&thread);
    zc_disk_tier_close(tier);
    atomic_store(&counters->fs_calls, atomic_load(&fm_crash_calls));
    if (result != FM_OK)
        fprintf(stderr, "fault_worker %d script: %s\n", getpid(), thread.message);
    return result;
}

int main(int argc, char **argv)
{
    worker_options options;
    if (!parse_options(argc, argv, &options)) {
        fprintf(stderr, "usage: fault_worker dir=PATH [max=BYTES] [keys=N] [binary=BYTES] "
                        "[threads=N] [seconds=S] [seed=N] [check=0|1] [stats=FILE slot=N]\n");
        return FM_USAGE;
    }
    fm_counters *counters = map_counters(&options);
    if (counters == NULL) {
        fprintf(stderr, "fault_worker %d: cannot map %s\n", getpid(), options.stats);
        return FM_SETUP;
    }
    return options.script ? run_script(&options, counters) : run_threads(&options, counters);
}
