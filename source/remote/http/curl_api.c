/* See curl_api.h. */
#include "curl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define ZC_LIBCURL "libcurl.so.4"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static zc_curl_api api;
static const zc_curl_api *loaded;
static char failure[256];

/* dlsym returns an object pointer: copied into the function pointer's
 * bytes, as POSIX allows. */
static int resolve(void *library, const char *name, void *slot, size_t slot_size)
{
    void *symbol = dlsym(library, name);
    if (symbol == NULL || slot_size != sizeof symbol)
        return 0;
    __builtin_memcpy(slot, &symbol, sizeof symbol);
    return 1;
}

#define RESOLVE(field, name) resolve(library, name, &api.field, sizeof api.field)

static void load(void)
{
    /* RTLD_LOCAL: its OpenSSL stays apart from the static libcrypto of the
     * layer, whose symbols are not exported. */
    void *library = dlopen(ZC_LIBCURL, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(failure, sizeof failure, "cannot load " ZC_LIBCURL ": %s", dlerror());
        return;
    }
    CURLcode (*global_init)(long flags) = NULL;
    int found =
        resolve(library, "curl_global_init", &global_init, sizeof global_init) &
        RESOLVE(easy_init, "curl_easy_init") & RESOLVE(easy_setopt, "curl_easy_setopt") &
        RESOLVE(easy_perform, "curl_easy_perform") & RESOLVE(easy_getinfo, "curl_easy_getinfo") &
        RESOLVE(easy_reset, "curl_easy_reset") & RESOLVE(easy_cleanup, "curl_easy_cleanup") &
        RESOLVE(easy_strerror, "curl_easy_strerror") & RESOLVE(slist_append, "curl_slist_append") &
        RESOLVE(slist_free_all, "curl_slist_free_all");
    if (!found) {
        snprintf(failure, sizeof failure, ZC_LIBCURL " lacks a function zecache needs");
        return;
    }
    /* Once, here: curl_global_init is not thread-safe in every libcurl. */
    CURLcode code = global_init(CURL_GLOBAL_DEFAULT);
    if (code != CURLE_OK) {
        snprintf(failure, sizeof failure, "curl_global_init failed (%d)", (int)code);
        return;
    }
    loaded = &api;
}

const zc_curl_api *zc_curl_api_get(char *reason, size_t reason_size)
{
    pthread_once(&once, load);
    if (loaded == NULL)
        snprintf(reason, reason_size, "%s", failure);
    return loaded;
}
