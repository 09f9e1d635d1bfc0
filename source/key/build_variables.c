/* Variables a driver reads at every build, keyed at every build
 * (zc_key_add_build_variables in key.h). PoCL 3.1 keeps the first value it
 * finds set and never reads the variable again; PoCL 6.0 reads it each time.
 * Which one answers is not known here, so a value that changes after the
 * first one seen is not cached: both then build what the key says. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "key_record.h"
#include "zecache/key.h"

#define FIRST_VALUES_MAX 32

static struct {
    pthread_mutex_t lock;
    const char *names[FIRST_VALUES_MAX];
    char *values[FIRST_VALUES_MAX];
    size_t count;
} first_seen = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Whether value (set) is the first value seen for name, remembering it when
 * it is the first; false also when there is no room to remember. */
static bool same_as_first(const char *name, const char *value)
{
    pthread_mutex_lock(&first_seen.lock);
    bool same = false, known = false;
    for (size_t i = 0; i < first_seen.count && !known; i++)
        if (strcmp(first_seen.names[i], name) == 0)
            known = true, same = strcmp(first_seen.values[i], value) == 0;
    if (!known && first_seen.count < FIRST_VALUES_MAX &&
        (first_seen.values[first_seen.count] = strdup(value)) != NULL) {
        first_seen.names[first_seen.count++] = name;
        same = true;
    }
    pthread_mutex_unlock(&first_seen.lock);
    return same;
}

static bool seen_set(const char *name)
{
    pthread_mutex_lock(&first_seen.lock);
    bool seen = false;
    for (size_t i = 0; i < first_seen.count && !seen; i++)
        seen = strcmp(first_seen.names[i], name) == 0;
    pthread_mutex_unlock(&first_seen.lock);
    return seen;
}

zc_status zc_key_add_build_variables(zc_key_builder *builder, const char *const *names,
                                     size_t count)
{
    zc_status status = zc_key_part_usable(builder);
    if (status != ZC_OK || count == 0)
        return status;
    zc_key_trace(builder, "---- driver build variables ----\n");
    for (size_t i = 0; i < count; i++) {
        const char *value = getenv(names[i]);
        if (value != NULL ? !same_as_first(names[i], value) : seen_set(names[i]))
            return zc_key_refuse(builder, ZC_NOT_CACHEABLE,
                                 "%s changed after the driver may have read it", names[i]);
        size_t name_length = strlen(names[i]), value_length = value != NULL ? strlen(value) : 0;
        char *entry = malloc(name_length + value_length + 2);
        if (entry == NULL)
            return zc_key_refuse(builder, ZC_ERR_NOMEM, "out of memory");
        memcpy(entry, names[i], name_length);
        entry[name_length] = '=';
        if (value != NULL)
            memcpy(entry + name_length + 1, value, value_length + 1);
        size_t length = value != NULL ? name_length + 1 + value_length : name_length;
        zc_key_record_field(builder, ZC_KEY_TAG_DRIVER_VARIABLE, entry, length);
        zc_key_trace(builder, "%.*s\n", (int)length, entry);
        free(entry);
    }
    return ZC_OK;
}
