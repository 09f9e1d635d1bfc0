/* Keeps the driver's own persistent cache off while the layer caches, so a
 * module is not stored twice. Intel's driver 22.43 reads l0_cache_dir, newer
 * ones NEO_CACHE_PERSISTENT (the same variable zecache reads); both are read
 * when the driver first compiles, after this library's constructor ran.
 *
 * The user's values survive in ZECACHE_ORIGINAL_<name> ("" when unset), so a
 * child process that loads the layer again reads what the user set, not the
 * values hidden here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"
#include "zecache/log.h"

typedef struct hidden_variable {
    const char *name;
    const char *hidden_value; /* NULL: hidden by unsetting it */
} hidden_variable;

static const hidden_variable hidden_variables[] = {
    {"NEO_CACHE_PERSISTENT", "0"},
    {"l0_cache_dir", NULL},
};

#define ORIGINAL_PREFIX "ZECACHE_ORIGINAL_"

static void original_name_of(const hidden_variable *variable, char *name, size_t size)
{
    snprintf(name, size, "%s%s", ORIGINAL_PREFIX, variable->name);
}

static bool still_hidden(const hidden_variable *variable)
{
    const char *value = getenv(variable->name);
    if (variable->hidden_value == NULL)
        return value == NULL;
    return value != NULL && strcmp(value, variable->hidden_value) == 0;
}

static void set_or_unset(const char *name, const char *value)
{
    if (value == NULL || value[0] == '\0')
        unsetenv(name);
    else
        setenv(name, value, 1);
}

void zcl_driver_cache_restore_user_env(void)
{
    for (size_t i = 0; i < sizeof(hidden_variables) / sizeof(hidden_variables[0]); i++) {
        const hidden_variable *variable = &hidden_variables[i];
        char original_name[64];
        original_name_of(variable, original_name, sizeof(original_name));
        const char *original = getenv(original_name);
        /* A value changed since the parent hid it was set on purpose: keep it. */
        if (original != NULL && still_hidden(variable))
            set_or_unset(variable->name, original);
    }
}

void zcl_driver_cache_hide(void)
{
    for (size_t i = 0; i < sizeof(hidden_variables) / sizeof(hidden_variables[0]); i++) {
        const hidden_variable *variable = &hidden_variables[i];
        char original_name[64];
        original_name_of(variable, original_name, sizeof(original_name));
        const char *user_value = getenv(variable->name);
        setenv(original_name, user_value != NULL ? user_value : "", 1);
        set_or_unset(variable->name, variable->hidden_value);
    }
    zc_log_info("the driver's own cache is off while the layer caches (%s)",
                "NEO_CACHE_PERSISTENT=0, l0_cache_dir unset");
}
