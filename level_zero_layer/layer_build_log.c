/* Build logs the layer makes for cache hits: the text of the original
 * compile's log. The handles are this file's own objects, so the two build
 * log functions are wrapped and recognise them through a registry; any other
 * handle goes to the driver. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "layer_internal.h"

typedef struct layer_build_log {
    struct layer_build_log *next_registered;
    size_t size; /* without the terminating NUL */
    char text[];
} layer_build_log;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static layer_build_log *registry; /* live handles; few at any time */

ze_module_build_log_handle_t zcl_build_log_create(const char *text, size_t size)
{
    layer_build_log *log = malloc(sizeof(*log) + size + 1);
    if (log == NULL)
        return NULL;
    log->size = size;
    if (size > 0)
        memcpy(log->text, text, size);
    log->text[size] = '\0';
    pthread_mutex_lock(&registry_lock);
    log->next_registered = registry;
    registry = log;
    pthread_mutex_unlock(&registry_lock);
    return (ze_module_build_log_handle_t)log;
}

/* Finds handle among the registered logs; with unlink, also removes it. */
static layer_build_log *find_registered(ze_module_build_log_handle_t handle, bool unlink)
{
    pthread_mutex_lock(&registry_lock);
    layer_build_log **link = &registry;
    while (*link != NULL && (void *)*link != (void *)handle)
        link = &(*link)->next_registered;
    layer_build_log *found = *link;
    if (found != NULL && unlink)
        *link = found->next_registered;
    pthread_mutex_unlock(&registry_lock);
    return found;
}

static ze_result_t copy_text(const layer_build_log *log, size_t *size, char *text)
{
    if (size == NULL)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    size_t needed = log->size + 1;
    if (text == NULL) {
        *size = needed;
        return ZE_RESULT_SUCCESS;
    }
    /* A short buffer gets what fits, still NUL-terminated. */
    size_t copied = *size < needed ? *size : needed;
    if (copied > 0) {
        memcpy(text, log->text, copied);
        text[copied - 1] = '\0';
    }
    *size = copied;
    return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zcl_build_log_get_string(ze_module_build_log_handle_t build_log,
                                                size_t *size, char *text)
{
    /* The text stays valid while the caller holds the handle: destroying it
     * at the same time as reading it is the caller's error, as with drivers. */
    const layer_build_log *log = find_registered(build_log, false);
    if (log != NULL)
        return copy_text(log, size, text);
    return zcl_layer.next.build_log_get_string(build_log, size, text);
}

ze_result_t ZE_APICALL zcl_build_log_destroy(ze_module_build_log_handle_t build_log)
{
    layer_build_log *log = find_registered(build_log, true);
    if (log == NULL)
        return zcl_layer.next.build_log_destroy(build_log);
    free(log);
    return ZE_RESULT_SUCCESS;
}
