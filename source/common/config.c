#include "zecache/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zecache/log.h"

bool zc_config_parse_digits(const char **text, uint64_t *value)
{
    const char *p = *text;
    if (!isdigit((unsigned char)*p))
        return false; /* empty, a sign, or garbage */
    uint64_t result = 0;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned digit = (unsigned)(*p - '0');
        if (result > (UINT64_MAX - digit) / 10)
            return false;
        result = result * 10 + digit;
    }
    *text = p;
    *value = result;
    return true;
}

bool zc_config_parse_u64(const char *text, uint64_t *value)
{
    if (text == NULL)
        return false;
    while (isspace((unsigned char)*text))
        text++;
    uint64_t result;
    if (!zc_config_parse_digits(&text, &result))
        return false;
    while (isspace((unsigned char)*text))
        text++;
    if (*text != '\0')
        return false;
    *value = result;
    return true;
}

/* Intel's driver accepts its debug keys with the prefixes NEO_L0_, NEO_ or
 * none; users copy settings between the two, so we read them the same way. */
static const char *getenv_debug_key(const char *name)
{
    static const char *const prefixes[] = {"NEO_L0_", "NEO_", ""};
    char full[128];
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        snprintf(full, sizeof full, "%s%s", prefixes[i], name);
        const char *value = getenv(full);
        if (value != NULL)
            return value;
    }
    return NULL;
}

/* Messages about invalid settings are collected while parsing and printed
 * once PrintDebugMessages is known, whatever order the variables come in. */
typedef struct config_complaints {
    char text[16][256];
    size_t count;
} config_complaints;

static void complain(config_complaints *complaints, const char *name, const char *value,
                     const char *expected, const char *fallback)
{
    if (complaints->count == sizeof complaints->text / sizeof complaints->text[0])
        return;
    snprintf(complaints->text[complaints->count++], sizeof complaints->text[0],
             "invalid %s=\"%.64s\" (expected %s); using %s", name, value, expected, fallback);
}

static zc_config_source read_u64(const char *name, uint64_t min, uint64_t max, uint64_t fallback,
                                 uint64_t *out, config_complaints *complaints)
{
    *out = fallback;
    const char *text = getenv(name);
    if (text == NULL)
        return ZC_SOURCE_DEFAULT;
    uint64_t value;
    if (!zc_config_parse_u64(text, &value) || value < min || value > max) {
        char expected[96], fallback_text[32];
        snprintf(expected, sizeof expected, "an integer from %llu to %llu", (unsigned long long)min,
                 (unsigned long long)max);
        snprintf(fallback_text, sizeof fallback_text, "%llu", (unsigned long long)fallback);
        complain(complaints, name, text, expected, fallback_text);
        return ZC_SOURCE_INVALID;
    }
    *out = value;
    return ZC_SOURCE_ENV;
}

static zc_config_source read_flag(const char *name, const char *value, bool fallback, bool *out,
                                  config_complaints *complaints)
{
    *out = fallback;
    if (value == NULL)
        return ZC_SOURCE_DEFAULT;
    uint64_t number;
    if (!zc_config_parse_u64(value, &number) || number > 1) {
        complain(complaints, name, value, "0 or 1", fallback ? "1" : "0");
        return ZC_SOURCE_INVALID;
    }
    *out = number == 1;
    return ZC_SOURCE_ENV;
}

static bool join_path(char *out, size_t size, const char *base, const char *suffix)
{
    int written = snprintf(out, size, "%s%s", base, suffix);
    return written > 0 && (size_t)written < size;
}

/* A relative NEO_CACHE_DIR is made absolute now, so a later chdir by the
 * application does not move the cache. */
static bool resolve_env_dir(const char *value, char *out, size_t size)
{
    if (value[0] == '/')
        return join_path(out, size, value, "");
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return false;
    return snprintf(out, size, "%s/%s", cwd, value) < (int)size;
}

static zc_config_source read_dir(zc_config *config, config_complaints *complaints)
{
    config->dir[0] = '\0';
    const char *value = getenv("NEO_CACHE_DIR");
    if (value != NULL && value[0] != '\0') {
        if (resolve_env_dir(value, config->dir, sizeof config->dir)) {
            config->dir_from_env = true;
            return ZC_SOURCE_ENV;
        }
        complain(complaints, "NEO_CACHE_DIR", value, "a usable path", "the default directory");
    } else if (value != NULL) {
        complain(complaints, "NEO_CACHE_DIR", value, "a path", "the default directory");
    }
    /* Relative values are ignored, as the XDG base directory specification
     * says: they would move the cache with the working directory. */
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    bool ok = false;
    if (xdg != NULL && xdg[0] == '/')
        ok = join_path(config->dir, sizeof config->dir, xdg, "/neo_compiler_cache");
    else if (home != NULL && home[0] == '/')
        ok = join_path(config->dir, sizeof config->dir, home, "/.cache/neo_compiler_cache");
    if (!ok)
        config->dir[0] = '\0'; /* no directory at all: the disk tier stays off */
    return value != NULL ? ZC_SOURCE_INVALID : ZC_SOURCE_DEFAULT;
}

/* Text settings: copied as given; one too long for its buffer is refused
 * whole (a cut list or path would name something else). */
static zc_config_source read_text(const char *name, char *out, size_t size,
                                  config_complaints *complaints)
{
    out[0] = '\0';
    const char *value = getenv(name);
    if (value == NULL || value[0] == '\0')
        return ZC_SOURCE_DEFAULT;
    if (strlen(value) >= size) {
        complain(complaints, name, value, "a shorter value", "none");
        return ZC_SOURCE_INVALID;
    }
    memcpy(out, value, strlen(value) + 1);
    return ZC_SOURCE_ENV;
}

void zc_config_from_env(zc_config *config)
{
    memset(config, 0, sizeof *config);
    config_complaints complaints = {.count = 0};

    read_flag("PrintDebugMessages", getenv_debug_key("PrintDebugMessages"), false,
              &config->print_debug_messages, &complaints);
    read_flag("BinaryCacheTrace", getenv_debug_key("BinaryCacheTrace"), false,
              &config->binary_cache_trace, &complaints);
    config->persistent_source = read_flag("NEO_CACHE_PERSISTENT", getenv("NEO_CACHE_PERSISTENT"),
                                          true, &config->persistent, &complaints);
    config->record_inputs_source =
        read_flag("NEO_CACHE_RECORD_INPUTS", getenv("NEO_CACHE_RECORD_INPUTS"),
                  ZC_DEFAULT_RECORD_INPUTS, &config->record_inputs, &complaints);
    config->prefetch_source = read_flag("NEO_CACHE_PREFETCH", getenv("NEO_CACHE_PREFETCH"),
                                        ZC_DEFAULT_PREFETCH, &config->prefetch, &complaints);
    read_flag("NEO_CACHE_SHARED", getenv("NEO_CACHE_SHARED"), false, &config->allow_shared,
              &complaints);
    config->max_size_source = read_u64("NEO_CACHE_MAX_SIZE", 0, UINT64_MAX, ZC_DEFAULT_MAX_SIZE,
                                       &config->max_size, &complaints);
    config->memory_size_source =
        read_u64("NEO_CACHE_MEMORY_SIZE", 0, SIZE_MAX, ZC_DEFAULT_MEMORY_SIZE, &config->memory_size,
                 &complaints);
    uint64_t level;
    config->compression_level_source = read_u64("NEO_CACHE_COMPRESSION_LEVEL", 1, 19,
                                                ZC_DEFAULT_COMPRESSION_LEVEL, &level, &complaints);
    config->compression_level = (int)level;
    config->wait_timeout_source =
        read_u64("NEO_CACHE_WAIT_TIMEOUT_MS", 0, ZC_MAX_WAIT_TIMEOUT_MS, ZC_DEFAULT_WAIT_TIMEOUT_MS,
                 &config->wait_timeout_ms, &complaints);
    config->lock_timeout_source =
        read_u64("NEO_CACHE_LOCK_TIMEOUT_MS", 0, ZC_MAX_WAIT_TIMEOUT_MS, ZC_DEFAULT_LOCK_TIMEOUT_MS,
                 &config->lock_timeout_ms, &complaints);
    config->remote_min_compile_source =
        read_u64("NEO_CACHE_REMOTE_MIN_COMPILE_MS", 0, ZC_MAX_WAIT_TIMEOUT_MS,
                 ZC_DEFAULT_REMOTE_MIN_COMPILE_MS, &config->remote_min_compile_ms, &complaints);
    config->dir_source = read_dir(config, &complaints);
    config->remote_source =
        read_text("NEO_CACHE_REMOTE", config->remote, sizeof config->remote, &complaints);
    config->remote_secret_file_source =
        read_text("NEO_CACHE_REMOTE_SECRET_FILE", config->remote_secret_file,
                  sizeof config->remote_secret_file, &complaints);
    config->packs_source =
        read_text("NEO_CACHE_PACKS", config->packs, sizeof config->packs, &complaints);

    zc_log_set_enabled(config->print_debug_messages);
    for (size_t i = 0; i < complaints.count; i++)
        zc_log_failure(complaints.text[i], EINVAL);
}
