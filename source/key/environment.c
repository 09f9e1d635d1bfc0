/* The environment snapshot: which variables and settings files Intel's driver
 * (NEO) and its compiler (IGC) read in a way that can change a compile, as
 * their sources have it (intel/compute-runtime, intel-graphics-compiler).
 *
 * Driver, Level Zero (shared/source/debug_settings, os_interface/
 * debug_env_reader.cpp, level_zero/core/source/driver/driver.cpp):
 * - Debug keys (debug_variables_base.inl, several hundred) are read only when
 *   NEOReadDebugKeys parses (atoll) to non-zero. Each is looked up as
 *   NEO_L0_<name>, NEO_<name>, then <name> (22.43: <name> only); every name
 *   in every release is ASCII letters and digits, starting with a letter,
 *   with upper and lower case letters ("CamelCase"): all 474 of 22.43.24595.41
 *   (Debian 12's driver, whose library holds each name) and all 753 of the
 *   newest. The class below is that shape, not a list: new drivers add keys
 *   every release. Upper-case names
 *   with underscores (HOME, NEO_CACHE_DIR, l0_cache_dir) are outside it.
 * - Release variables (release_variables.inl) are read whatever
 *   NEOReadDebugKeys says, with the same prefixes. Of them
 *   OverrideDefaultFP64Settings (fp64 support given to the compiler) and
 *   ZEX_NUMBER_OF_CCS (the hardware description IGC gets) reach the
 *   compiler. ZE_AFFINITY_MASK, ZE_ENABLE_PCI_ID_DEVICE_ORDER and the newer
 *   device-hierarchy switch only choose which devices are seen (the key has
 *   the device's properties); the others place memory.
 * - zeInit reads, unprefixed and ungated: ZET_ENABLE_PROGRAM_DEBUGGING (the
 *   debugger adds options and changes caching policy), ZET_ENABLE_PROGRAM_
 *   INSTRUMENTATION (GT-Pin instruments kernels at compile), and in newer
 *   drivers ONEAPI_PVC_SEND_WAR_WA (an internal option) and
 *   NEO_FP64_EMULATION (-cl-fp64-gen-emu). ZET_ENABLE_METRICS and
 *   ZES_ENABLE_SYSMAN change no compile.
 * - The settings reader reads "igdrcl.config" (newer: also "neo.config") in
 *   the working directory instead of the environment when one exists, for
 *   debug keys and release variables alike: their bytes are keyed.
 * The driver reads all of this once, when it is loaded and in zeInit.
 *
 * Compiler: IGC reads its registry keys as IGC_<name> variables and the file
 * /tmp/IntelIGC/debugFlags/Options.txt, once per process, just before its
 * first compile (LoadRegistryKeys). */
#include "environment_internal.h"
#include "zecache/fork_guard.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IGC_OPTIONS_FILE "/tmp/IntelIGC/debugFlags/Options.txt"

typedef struct snapshot_slot {
    atomic_bool taken;
    zc_environment_part part;
} snapshot_slot;

static snapshot_slot driver_slot;
static snapshot_slot compiler_slot;
/* The compiler's part taken ahead of the first key (a layer's warm-up). */
static struct {
    bool held;
    zc_environment_part part;
} proposal;
static pthread_mutex_t snapshot_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held across fork(): a fork waits for a part being taken (it reads the
 * settings files), else a child forked meanwhile would wait for ever at its
 * first key. */
static atomic_bool snapshot_lock_guarded;

extern char **environ;

/* ---- which variables ---- */

static bool name_is(const char *name, size_t length, const char *wanted)
{
    return strlen(wanted) == length && memcmp(name, wanted, length) == 0;
}

static bool name_in(const char *name, size_t length, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (name_is(name, length, list[i]))
            return true;
    return false;
}

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

/* Read by zeInit without a prefix and without NEOReadDebugKeys. */
static const char *const ungated_unprefixed[] = {
    "ZET_ENABLE_PROGRAM_DEBUGGING",
    "ZET_ENABLE_PROGRAM_INSTRUMENTATION",
    "ONEAPI_PVC_SEND_WAR_WA",
    "NEO_FP64_EMULATION",
};

/* Release variables that reach the compiler: read with the debug key
 * prefixes, without NEOReadDebugKeys. */
static const char *const ungated_release[] = {"OverrideDefaultFP64Settings", "ZEX_NUMBER_OF_CCS"};

/* Debug keys that zecache reads for its own output (see config.c) and that
 * only print in the driver too: keying them would make turning on a trace
 * miss the cache it is meant to observe. */
static const char *const output_only[] = {"PrintDebugMessages", "BinaryCacheTrace"};

/* The name without a Level Zero debug key prefix. */
static const char *without_prefix(const char *name, size_t *length)
{
    static const char *const prefixes[] = {"NEO_L0_", "NEO_"};
    for (size_t i = 0; i < COUNT_OF(prefixes); i++) {
        size_t prefix_length = strlen(prefixes[i]);
        if (*length > prefix_length && memcmp(name, prefixes[i], prefix_length) == 0) {
            *length -= prefix_length;
            return name + prefix_length;
        }
    }
    return name;
}

static bool is_ascii_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_ascii_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static bool is_ascii_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The shape of every debug key name (see the top of this file). */
static bool has_debug_key_shape(const char *name, size_t length)
{
    if (length == 0 || is_ascii_digit(name[0]))
        return false;
    bool upper = false, lower = false;
    for (size_t i = 0; i < length; i++) {
        upper |= is_ascii_upper(name[i]);
        lower |= is_ascii_lower(name[i]);
        if (!is_ascii_upper(name[i]) && !is_ascii_lower(name[i]) && !is_ascii_digit(name[i]))
            return false;
    }
    return upper && lower;
}

bool zc_environment_is_driver_setting(const char *entry, bool debug_keys_read)
{
    size_t length = strcspn(entry, "=");
    if (entry[length] != '=')
        return false;
    if (name_in(entry, length, ungated_unprefixed, COUNT_OF(ungated_unprefixed)))
        return true;
    const char *base = without_prefix(entry, &length);
    if (name_in(base, length, ungated_release, COUNT_OF(ungated_release)))
        return true;
    if (!debug_keys_read || name_in(base, length, output_only, COUNT_OF(output_only)))
        return false;
    return has_debug_key_shape(base, length);
}

/* As the driver's isDebugKeysReadEnabled: atoll of the value, non-zero. */
bool zc_environment_debug_keys_on(const char *value)
{
    return value != NULL && strtoll(value, NULL, 10) != 0;
}

/* IGC reads its variables whatever NEOReadDebugKeys says. */
static bool is_compiler_setting(const char *entry, bool debug_keys_read)
{
    (void)debug_keys_read;
    return strncmp(entry, "IGC_", 4) == 0 && strchr(entry, '=') != NULL;
}

/* ---- taking a part ---- */

/* Orders "NAME=value" strings by NAME (a plain strcmp would put "IGC_A0"
 * before "IGC_A", since '=' sorts after digits), then by value: an
 * environment handed to execve may hold a name twice. */
static int compare_by_name(const void *a, const void *b)
{
    const char *left = *(const char *const *)a;
    const char *right = *(const char *const *)b;
    size_t left_name = strcspn(left, "=");
    size_t right_name = strcspn(right, "=");
    size_t shorter = left_name < right_name ? left_name : right_name;
    int order = memcmp(left, right, shorter);
    if (order != 0)
        return order;
    if (left_name != right_name)
        return left_name < right_name ? -1 : 1;
    return strcmp(left, right);
}

static void part_free(zc_environment_part *part)
{
    for (size_t i = 0; i < part->count; i++)
        free(part->variables[i]);
    free(part->variables);
    *part = (zc_environment_part){0};
}

typedef bool (*variable_filter)(const char *entry, bool debug_keys_read);

/* Copies the matching variables, sorted; false when memory runs out. */
static bool copy_variables(zc_environment_part *part, variable_filter wanted, bool debug_keys_read)
{
    size_t count = 0;
    for (char **entry = environ; entry != NULL && *entry != NULL; entry++)
        count += wanted(*entry, debug_keys_read);
    part->variables = calloc(count > 0 ? count : 1, sizeof *part->variables);
    if (part->variables == NULL)
        return false;
    for (char **entry = environ; entry != NULL && *entry != NULL && part->count < count; entry++) {
        if (!wanted(*entry, debug_keys_read))
            continue;
        part->variables[part->count] = strdup(*entry);
        if (part->variables[part->count] == NULL)
            return false;
        part->count++;
    }
    qsort(part->variables, part->count, sizeof *part->variables, compare_by_name);
    return true;
}

/* The file as its reader would see it: absent when it cannot be opened (the
 * reader then goes without it), else its digest. False on a read error. */
static bool hash_settings_file(zc_settings_file *file, const char *path)
{
    *file = (zc_settings_file){.path = path};
    FILE *stream = fopen(path, "rb");
    if (stream == NULL)
        return true;
    zc_sha256 *hash = zc_sha256_create();
    bool ok = hash != NULL && fstat(fileno(stream), &file->seen) == 0;
    uint8_t buffer[4096];
    size_t got;
    while (ok && (got = fread(buffer, 1, sizeof buffer, stream)) > 0)
        ok = zc_sha256_update(hash, buffer, got);
    ok = ok && !ferror(stream) && zc_sha256_finish(hash, file->sha256);
    zc_sha256_destroy(hash);
    fclose(stream);
    file->present = ok;
    return ok;
}

static void take_driver_part(zc_environment_part *part)
{
    bool debug_keys_read = zc_environment_debug_keys_on(getenv("NEOReadDebugKeys"));
    bool ok = copy_variables(part, zc_environment_is_driver_setting, debug_keys_read);
    static const char *const settings_files[] = {"igdrcl.config", "neo.config"};
    for (size_t i = 0; ok && i < COUNT_OF(settings_files); i++)
        ok = hash_settings_file(&part->files[part->file_count++], settings_files[i]);
    if (!ok) {
        part_free(part);
        part->failed = true;
    }
}

static void take_compiler_part(zc_environment_part *part)
{
    bool ok = copy_variables(part, is_compiler_setting, false);
    if (ok)
        ok = hash_settings_file(&part->files[part->file_count++], IGC_OPTIONS_FILE);
    if (!ok) {
        part_free(part);
        part->failed = true;
    }
}

static const zc_environment_part *part_of(snapshot_slot *slot,
                                          void (*take)(zc_environment_part *part))
{
    if (atomic_load_explicit(&slot->taken, memory_order_acquire))
        return &slot->part;
    zc_fork_guard_lock(&snapshot_lock, &snapshot_lock_guarded);
    if (!atomic_load_explicit(&slot->taken, memory_order_relaxed)) {
        take(&slot->part);
        atomic_store_explicit(&slot->taken, true, memory_order_release);
    }
    pthread_mutex_unlock(&snapshot_lock);
    return &slot->part;
}

const zc_environment_part *zc_environment_driver_part(void)
{
    return part_of(&driver_slot, take_driver_part);
}

/* Whether the file is as it was when hashed (or still absent): the same
 * inode, size, modification and change times. */
static bool settings_file_unchanged(const zc_settings_file *file)
{
    struct stat now;
    if (stat(file->path, &now) != 0)
        return !file->present && errno == ENOENT;
    const struct stat *then = &file->seen;
    return file->present && now.st_dev == then->st_dev && now.st_ino == then->st_ino &&
           now.st_size == then->st_size && now.st_mtim.tv_sec == then->st_mtim.tv_sec &&
           now.st_mtim.tv_nsec == then->st_mtim.tv_nsec &&
           now.st_ctim.tv_sec == then->st_ctim.tv_sec &&
           now.st_ctim.tv_nsec == then->st_ctim.tv_nsec;
}

static bool proposal_still_holds(void)
{
    if (!proposal.held || proposal.part.failed ||
        !zc_environment_compiler_unchanged(&proposal.part))
        return false;
    for (size_t i = 0; i < proposal.part.file_count; i++)
        if (!settings_file_unchanged(&proposal.part.files[i]))
            return false;
    return true;
}

/* The proposal when the IGC_* variables are still its own and its settings
 * file is untouched (a stat, not a read), else a new part: what changed
 * between the proposal and the first key is keyed. */
static void take_or_adopt_compiler_part(zc_environment_part *part)
{
    if (proposal_still_holds()) {
        *part = proposal.part;
    } else {
        part_free(&proposal.part);
        take_compiler_part(part);
    }
    proposal.part = (zc_environment_part){0};
    proposal.held = false;
}

const zc_environment_part *zc_environment_compiler_part(void)
{
    return part_of(&compiler_slot, take_or_adopt_compiler_part);
}

/* Each IGC_* variable now is in the snapshot with the same value, and there
 * are as many: no allocation, since keys of hits pass here too. */
bool zc_environment_compiler_unchanged(const zc_environment_part *part)
{
    size_t seen = 0;
    for (char **entry = environ; entry != NULL && *entry != NULL; entry++) {
        if (!is_compiler_setting(*entry, false))
            continue;
        if (bsearch(entry, part->variables, part->count, sizeof *part->variables,
                    compare_by_name) == NULL)
            return false;
        seen++;
    }
    return seen == part->count;
}

void zc_environment_snapshot_driver(void)
{
    zc_environment_driver_part();
}

void zc_environment_propose_compiler_part(void)
{
    zc_fork_guard_lock(&snapshot_lock, &snapshot_lock_guarded);
    if (!atomic_load(&compiler_slot.taken) && !proposal.held) {
        take_compiler_part(&proposal.part);
        proposal.held = true;
    }
    pthread_mutex_unlock(&snapshot_lock);
}

void zc_environment_forget(void)
{
    snapshot_slot *slots[] = {&driver_slot, &compiler_slot};
    for (size_t i = 0; i < COUNT_OF(slots); i++) {
        part_free(&slots[i]->part);
        atomic_store(&slots[i]->taken, false);
    }
    part_free(&proposal.part);
    proposal.held = false;
}
