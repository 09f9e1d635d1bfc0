/* The configuration parser: zc_config_parse_u64 against an independent
 * reading with strtoull, and zc_config_from_env with fuzzed values for every
 * variable it reads. Input: NUL-separated fields, the first parsed as a
 * number, the others the variables' values in the order of `variables`
 * (a field "\x01" leaves the variable unset). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "zecache/config.h"

static const char *const variables[] = {
    "NEO_CACHE_PERSISTENT",
    "NEO_CACHE_DIR",
    "NEO_CACHE_MAX_SIZE",
    "NEO_CACHE_MEMORY_SIZE",
    "NEO_CACHE_COMPRESSION_LEVEL",
    "NEO_CACHE_SHARED",
    "XDG_CACHE_HOME",
    "HOME",
    "BinaryCacheTrace",
};
enum { VARIABLES = sizeof variables / sizeof variables[0] };

/* What zc_config_parse_u64 documents, by other means. */
static bool reference_parse(const char *text, uint64_t *value)
{
    while (isspace((unsigned char)*text))
        text++;
    if (!isdigit((unsigned char)*text))
        return false;
    char *end;
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end != '\0')
        return false;
    *value = parsed;
    return true;
}

static void check_parse(const char *text)
{
    uint64_t value = 12345, expected = 0;
    bool parsed = zc_config_parse_u64(text, &value);
    bool reference = reference_parse(text, &expected);
    FUZZ_CHECK(parsed == reference);
    FUZZ_CHECK(parsed ? value == expected : value == 12345);
}

static void check_source(zc_config_source source, const char *name, uint64_t value,
                         uint64_t fallback)
{
    const char *text = getenv(name);
    uint64_t parsed;
    if (text == NULL)
        FUZZ_CHECK(source == ZC_SOURCE_DEFAULT && value == fallback);
    else if (source == ZC_SOURCE_ENV)
        FUZZ_CHECK(zc_config_parse_u64(text, &parsed) && parsed == value);
    else
        FUZZ_CHECK(source == ZC_SOURCE_INVALID && value == fallback);
}

static void check_config(void)
{
    zc_config config;
    zc_config_from_env(&config);
    FUZZ_CHECK(config.compression_level >= 1 && config.compression_level <= 19);
    FUZZ_CHECK(strnlen(config.dir, sizeof config.dir) < sizeof config.dir);
    FUZZ_CHECK(config.dir[0] == '\0' || config.dir[0] == '/');
    FUZZ_CHECK(config.dir_from_env == (config.dir_source == ZC_SOURCE_ENV));
    check_source(config.max_size_source, "NEO_CACHE_MAX_SIZE", config.max_size,
                 ZC_DEFAULT_MAX_SIZE);
    check_source(config.memory_size_source, "NEO_CACHE_MEMORY_SIZE", config.memory_size,
                 ZC_DEFAULT_MEMORY_SIZE);
    check_source(config.compression_level_source, "NEO_CACHE_COMPRESSION_LEVEL",
                 (uint64_t)config.compression_level, ZC_DEFAULT_COMPRESSION_LEVEL);
    check_source(config.persistent_source, "NEO_CACHE_PERSISTENT", config.persistent, 1);
    FUZZ_CHECK(!config.print_debug_messages);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    check_parse(text);
    const char *field = text + strlen(text);
    for (size_t i = 0; i < VARIABLES; i++) {
        bool present = field < text + size;
        if (present)
            field++;
        if (present && strcmp(field, "\x01") != 0)
            setenv(variables[i], field, 1);
        else
            unsetenv(variables[i]);
        if (present)
            field += strlen(field);
    }
    check_config();
    free(text);
    return 0;
}
