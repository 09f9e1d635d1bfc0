/* Sizes, durations and times on the command line and in the output. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tool_support.h"
#include "zecache/config.h"

/* value * factor, false on overflow of limit. */
static bool scale(uint64_t value, uint64_t factor, uint64_t limit, uint64_t *out)
{
    if (value > limit / factor)
        return false;
    *out = value * factor;
    return true;
}

/* The unit's factor, or 0 when unit is not one of units. */
static uint64_t unit_factor(char unit, const char *units, const uint64_t *factors)
{
    const char *found = unit != '\0' ? strchr(units, unit) : NULL;
    return found != NULL ? factors[found - units] : 0;
}

bool tool_parse_size(const char *text, uint64_t *bytes)
{
    static const char units[] = "KMGTkmgt";
    static const uint64_t factors[] = {
        UINT64_C(1) << 10, UINT64_C(1) << 20, UINT64_C(1) << 30, UINT64_C(1) << 40,
        UINT64_C(1) << 10, UINT64_C(1) << 20, UINT64_C(1) << 30, UINT64_C(1) << 40,
    };
    uint64_t value;
    if (text == NULL || !zc_config_parse_digits(&text, &value))
        return false;
    if (text[0] == '\0') {
        *bytes = value;
        return true;
    }
    uint64_t factor = unit_factor(text[0], units, factors);
    return factor != 0 && text[1] == '\0' && scale(value, factor, UINT64_MAX, bytes);
}

bool tool_parse_duration(const char *text, int64_t *seconds)
{
    static const char units[] = "smhd";
    static const uint64_t factors[] = {1, 60, 3600, 86400};
    uint64_t value, result;
    if (text == NULL || !zc_config_parse_digits(&text, &value))
        return false;
    uint64_t factor = unit_factor(text[0], units, factors);
    if (factor == 0 || text[1] != '\0' || !scale(value, factor, INT64_MAX, &result))
        return false;
    *seconds = (int64_t)result;
    return true;
}

void tool_format_size(uint64_t bytes, char text[TOOL_SIZE_TEXT])
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(text, TOOL_SIZE_TEXT, "%llu B", (unsigned long long)bytes);
        return;
    }
    double value = (double)bytes / 1024;
    size_t unit = 0;
    while (value >= 1024 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024;
        unit++;
    }
    snprintf(text, TOOL_SIZE_TEXT, "%.1f %s", value, units[unit]);
}

void tool_format_local_time(int64_t unix_seconds, char text[TOOL_TIME_TEXT])
{
    time_t when = (time_t)unix_seconds;
    struct tm local;
    if (localtime_r(&when, &local) == NULL ||
        strftime(text, TOOL_TIME_TEXT, "%Y-%m-%d %H:%M:%S", &local) == 0)
        snprintf(text, TOOL_TIME_TEXT, "?");
}
