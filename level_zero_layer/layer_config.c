/* ZE_ENABLE_LAYERS: which of the layer's functions are on. No loader reads
 * this variable; the layer gives it meaning itself (see README). */
#include <string.h>

#include "layer_internal.h"
#include "zecache/log.h"

static const char *const default_layers = "cache";

static void enable_layer(const char *name, size_t length, zcl_options *options)
{
    if (length == 0)
        return;
    if (length == strlen("cache") && strncmp(name, "cache", length) == 0)
        options->cache = true;
    else if (length == strlen("validation") && strncmp(name, "validation", length) == 0)
        options->validation = true;
    else
        zc_log_info("ZE_ENABLE_LAYERS: unknown layer \"%.*s\" ignored (known: cache, validation)",
                    (int)length, name);
}

void zcl_options_parse(const char *list, zcl_options *options)
{
    *options = (zcl_options){0};
    if (list == NULL)
        list = default_layers;
    while (*list != '\0') {
        list += strspn(list, " \t,");
        size_t length = strcspn(list, ",");
        size_t trimmed = length;
        while (trimmed > 0 && (list[trimmed - 1] == ' ' || list[trimmed - 1] == '\t'))
            trimmed--;
        enable_layer(list, trimmed, options);
        list += length;
    }
}
