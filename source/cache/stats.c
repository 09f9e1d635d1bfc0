/* The stats file: persistent counters summed over processes (format in
 * include/zecache/stats.h). Every change is a read-modify-write under
 * flock(LOCK_EX) on the file itself; readers take LOCK_SH so they never see a
 * rewrite half done. All I/O goes through the disk tier's zc_fs_ops (so the
 * fault matrix reaches it), beneath its directory, and both locks have the
 * tier's deadline. The file is open only inside the tier's locked section,
 * so that fork() never hands a child its lock (disk_fork.c). */
#include "zecache/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_internal.h"
#include "zecache/config.h"
#include "zecache/log.h"

#define STATS_STRING(x) #x
#define STATS_VERSION_TEXT(x) STATS_STRING(x)
#define STATS_HEADER "zecache-stats " STATS_VERSION_TEXT(ZC_STATS_FORMAT_VERSION)
#define STATS_END "end"
#define BYPASS_PREFIX "bypass."

/* A real file is under 1 KiB; this leaves room for counters a later version
 * adds while refusing to load a huge garbage file into memory. */
enum { STATS_MAX_FILE_SIZE = 64 * 1024, STATS_TEXT_SIZE = 4096, NAME_SIZE = 64 };

typedef struct counter_field {
    const char *name;
    size_t offset;
} counter_field;

static const counter_field fields[] = {
    {"memory_hits", offsetof(zc_stats_counters, memory_hits)},
    {"disk_hits", offsetof(zc_stats_counters, disk_hits)},
    {"misses", offsetof(zc_stats_counters, misses)},
    {"failed_builds", offsetof(zc_stats_counters, failed_builds)},
    {"stores", offsetof(zc_stats_counters, stores)},
    {"store_errors", offsetof(zc_stats_counters, store_errors)},
    {"evictions", offsetof(zc_stats_counters, evictions)},
    {"memory_evictions", offsetof(zc_stats_counters, memory_evictions)},
    {"lock_timeouts", offsetof(zc_stats_counters, lock_timeouts)},
    {"compile_ns_spent", offsetof(zc_stats_counters, compile_ns_spent)},
    {"compile_ns_saved", offsetof(zc_stats_counters, compile_ns_saved)},
    {"remote_hits", offsetof(zc_stats_counters, remote_hits)},
    {"remote_misses", offsetof(zc_stats_counters, remote_misses)},
    {"remote_stores", offsetof(zc_stats_counters, remote_stores)},
    {"remote_errors", offsetof(zc_stats_counters, remote_errors)},
    {"remote_rejected", offsetof(zc_stats_counters, remote_rejected)},
    {"remote_not_admitted", offsetof(zc_stats_counters, remote_not_admitted)},
    {"pack_hits", offsetof(zc_stats_counters, pack_hits)},
    {"pack_rejected", offsetof(zc_stats_counters, pack_rejected)},
};

enum { FIELD_COUNT = sizeof fields / sizeof fields[0] };
enum { COUNTER_COUNT = FIELD_COUNT + ZC_BYPASS_REASON_COUNT };
/* A counter added to zc_cache_stats must be added to fields[] too. */
_Static_assert(sizeof(zc_stats_counters) == COUNTER_COUNT * sizeof(uint64_t),
               "every counter of zc_cache_stats has a name in the stats file");

/* ---- the counters by index: the fixed fields, then one per bypass reason ---- */

static const uint64_t *counter_in(const zc_stats_counters *counters, size_t index)
{
    if (index < FIELD_COUNT)
        return (const uint64_t *)((const char *)counters + fields[index].offset);
    return &counters->bypasses[index - FIELD_COUNT];
}

static uint64_t *counter_at(zc_stats_counters *counters, size_t index)
{
    return (uint64_t *)counter_in(counters, index);
}

static void counter_name(size_t index, char name[NAME_SIZE])
{
    if (index < FIELD_COUNT)
        snprintf(name, NAME_SIZE, "%s", fields[index].name);
    else
        snprintf(name, NAME_SIZE, BYPASS_PREFIX "%s",
                 zc_bypass_reason_name((zc_bypass_reason)(index - FIELD_COUNT)));
}

static uint64_t *counter_named(zc_stats_counters *counters, const char *name)
{
    char candidate[NAME_SIZE];
    for (size_t i = 0; i < COUNTER_COUNT; i++) {
        counter_name(i, candidate);
        if (strcmp(candidate, name) == 0)
            return counter_at(counters, i);
    }
    return NULL;
}

void zc_stats_foreach(const zc_stats_counters *counters, zc_stats_visit_fn visit, void *context)
{
    char name[NAME_SIZE];
    for (size_t i = 0; i < COUNTER_COUNT; i++) {
        counter_name(i, name);
        visit(context, name, *counter_in(counters, i));
    }
}

/* ---- text ---- */

static bool parse_counter_line(char *line, zc_stats_counters *counters)
{
    char *space = strchr(line, ' ');
    if (space == NULL)
        return false;
    *space = '\0';
    uint64_t value;
    if (!zc_config_parse_u64(space + 1, &value))
        return false;
    uint64_t *counter = counter_named(counters, line);
    if (counter != NULL) /* unknown: a later version's counter */
        *counter = value;
    return true;
}

/* text is modified. False when it is garbage. */
static bool parse_stats_text(char *text, zc_stats_counters *counters)
{
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    if (line == NULL || strcmp(line, STATS_HEADER) != 0)
        return false;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        if (strcmp(line, STATS_END) == 0)
            return true;
        if (!parse_counter_line(line, counters))
            return false;
    }
    return false; /* cut off before the end */
}

typedef struct text_buffer {
    char text[STATS_TEXT_SIZE];
    size_t length;
    bool overflow;
} text_buffer;

static void append_text(text_buffer *buffer, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void append_text(text_buffer *buffer, const char *format, ...)
{
    size_t room = sizeof buffer->text - buffer->length;
    va_list args;
    va_start(args, format);
    int written = vsnprintf(buffer->text + buffer->length, room, format, args);
    va_end(args);
    if (written < 0 || (size_t)written >= room)
        buffer->overflow = true;
    else
        buffer->length += (size_t)written;
}

static void append_counter(void *context, const char *name, uint64_t value)
{
    append_text(context, "%s %llu\n", name, (unsigned long long)value);
}

static bool format_stats_text(const zc_stats_counters *counters, text_buffer *buffer)
{
    buffer->length = 0;
    buffer->overflow = false;
    append_text(buffer, "%s\n", STATS_HEADER);
    zc_stats_foreach(counters, append_counter, buffer);
    append_text(buffer, "%s\n", STATS_END);
    return !buffer->overflow;
}

/* ---- the file ---- */

/* O_NONBLOCK: a FIFO planted under the name must not hang the caller; and
 * the tier's openat never follows a symlink. */
static int open_stats_file(zc_disk_tier *tier, int flags)
{
    /* Shared like the tier's own files: in a shared directory every user's
     * counters land in it; never anything for others. */
    return tier->ops->openat(tier->dir_fd, ZC_STATS_FILE_NAME, flags | O_CLOEXEC | O_NONBLOCK,
                             tier->file_mode);
}

static zc_status lock_stats_file(zc_disk_tier *tier, int fd, int operation)
{
    zc_status status = zc_disk_flock_within_deadline(tier, fd, operation, &tier->stats_lock_stuck,
                                                     ZC_STATS_FILE_NAME);
    if (status == ZC_ERR_IO)
        zc_log_failure("cannot lock the stats file", errno);
    return status;
}

static zc_status reject_garbage(const zc_disk_tier *tier, zc_stats_counters *counters)
{
    memset(counters, 0, sizeof *counters);
    zc_log_info("stats file in %s is malformed: counters start from zero", tier->dir);
    return ZC_MISS;
}

/* An empty file is a fresh one (created, not yet written): all zero. */
static zc_status load_counters(zc_disk_tier *tier, int fd, zc_stats_counters *counters)
{
    memset(counters, 0, sizeof *counters);
    struct stat st;
    if (tier->ops->fstat(fd, &st) != 0) {
        zc_log_failure("cannot examine the stats file", errno);
        return ZC_ERR_IO;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > STATS_MAX_FILE_SIZE)
        return reject_garbage(tier, counters);
    if (st.st_size == 0)
        return ZC_OK;
    size_t size = (size_t)st.st_size, got = 0;
    char *text = malloc(size + 1);
    if (text == NULL)
        return ZC_ERR_NOMEM;
    zc_status status = zc_disk_pread_upto(tier->ops, fd, text, size, &got);
    if (status != ZC_OK) {
        zc_log_failure("cannot read the stats file", errno);
    } else {
        text[got] = '\0';
        if (!parse_stats_text(text, counters))
            status = reject_garbage(tier, counters);
    }
    free(text);
    return status;
}

static zc_status store_counters(zc_disk_tier *tier, int fd, const zc_stats_counters *counters)
{
    text_buffer buffer;
    if (!format_stats_text(counters, &buffer))
        return ZC_ERR_TOO_LARGE;
    if (zc_disk_pwrite_all(tier->ops, fd, buffer.text, buffer.length, 0) != ZC_OK ||
        tier->ops->ftruncate(fd, (off_t)buffer.length) != 0) {
        zc_log_failure("cannot write the stats file", errno);
        return ZC_ERR_IO;
    }
    return ZC_OK;
}

typedef void (*counters_change_fn)(zc_stats_counters *counters, const zc_stats_counters *delta);

static zc_status update_locked_stats_file(zc_disk_tier *tier, counters_change_fn change,
                                          const zc_stats_counters *delta)
{
    int fd = open_stats_file(tier, O_RDWR | O_CREAT);
    if (fd < 0) {
        zc_log_failure("cannot open the stats file", errno);
        return ZC_ERR_IO;
    }
    zc_status status = lock_stats_file(tier, fd, LOCK_EX);
    if (status == ZC_OK) {
        zc_stats_counters counters;
        status = load_counters(tier, fd, &counters);
        if (status == ZC_OK || status == ZC_MISS) { /* garbage is replaced */
            change(&counters, delta);
            status = store_counters(tier, fd, &counters);
        }
    }
    tier->ops->close(fd); /* releases the lock */
    return status;
}

static zc_status update_stats_file(zc_disk_tier *tier, counters_change_fn change,
                                   const zc_stats_counters *delta)
{
    zc_disk_section_enter(tier);
    zc_status status = update_locked_stats_file(tier, change, delta);
    zc_disk_section_leave(tier);
    return status;
}

static uint64_t add_saturating(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void add_delta(zc_stats_counters *counters, const zc_stats_counters *delta)
{
    for (size_t i = 0; i < COUNTER_COUNT; i++)
        *counter_at(counters, i) = add_saturating(*counter_in(counters, i), *counter_in(delta, i));
}

static void set_zero(zc_stats_counters *counters, const zc_stats_counters *unused)
{
    (void)unused;
    memset(counters, 0, sizeof *counters);
}

static bool all_zero(const zc_stats_counters *delta)
{
    for (size_t i = 0; i < COUNTER_COUNT; i++)
        if (*counter_in(delta, i) != 0)
            return false;
    return true;
}

zc_status zc_stats_merge(zc_disk_tier *tier, const zc_stats_counters *delta)
{
    if (tier == NULL || delta == NULL)
        return ZC_ERR_INVALID_ARG;
    if (all_zero(delta))
        return ZC_OK;
    if (tier->read_only)
        return ZC_ERR_DISABLED; /* not ours to write: nothing to log each time */
    return update_stats_file(tier, add_delta, delta);
}

zc_status zc_stats_zero(zc_disk_tier *tier)
{
    if (tier == NULL)
        return ZC_ERR_INVALID_ARG;
    return update_stats_file(tier, set_zero, NULL);
}

static zc_status read_locked_stats_file(zc_disk_tier *tier, zc_stats_counters *counters)
{
    int fd = open_stats_file(tier, O_RDONLY);
    if (fd < 0) {
        if (errno == ENOENT)
            return ZC_OK;
        zc_log_failure("cannot open the stats file", errno);
        return ZC_ERR_IO;
    }
    zc_status status = lock_stats_file(tier, fd, LOCK_SH);
    if (status == ZC_OK)
        status = load_counters(tier, fd, counters);
    tier->ops->close(fd);
    return status;
}

zc_status zc_stats_read(zc_disk_tier *tier, zc_stats_counters *counters)
{
    if (tier == NULL || counters == NULL)
        return ZC_ERR_INVALID_ARG;
    memset(counters, 0, sizeof *counters);
    zc_disk_section_enter(tier);
    zc_status status = read_locked_stats_file(tier, counters);
    zc_disk_section_leave(tier);
    return status;
}

void zc_stats_difference(const zc_stats_counters *now, const zc_stats_counters *before,
                         zc_stats_counters *difference)
{
    for (size_t i = 0; i < COUNTER_COUNT; i++)
        *counter_at(difference, i) = *counter_in(now, i) - *counter_in(before, i);
}
