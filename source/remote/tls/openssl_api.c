/* See openssl_api.h. */
#include "openssl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#define ZC_LIBSSL "libssl.so.3"

zc_openssl zc_openssl_api;
static bool loaded;
static char load_error[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* RTLD_LOCAL: the application's own OpenSSL, if any, is left alone, and
 * libssl's libcrypto references bind to its own libcrypto.so.3. Never
 * closed: sessions and OpenSSL's thread-local state outlive any call. */
static void load(void)
{
    void *libssl = dlopen(ZC_LIBSSL, RTLD_NOW | RTLD_LOCAL);
    if (libssl == NULL) {
        snprintf(load_error, sizeof load_error, "TLS: cannot load %s: %s", ZC_LIBSSL, dlerror());
        return;
    }
    /* dlsym's result is a data pointer; POSIX makes it convertible. */
#define ZC_OPENSSL_FIND(name)                                                                      \
    *(void **)&zc_openssl_api.name = dlsym(libssl, #name);                                         \
    if (zc_openssl_api.name == NULL) {                                                             \
        snprintf(load_error, sizeof load_error, "TLS: %s lacks %s", ZC_LIBSSL, #name);             \
        return;                                                                                    \
    }
    ZC_OPENSSL_FUNCTIONS(ZC_OPENSSL_FIND)
#undef ZC_OPENSSL_FIND
    loaded = true;
}

const zc_openssl *zc_openssl_load(char *why, size_t why_size)
{
    pthread_once(&once, load);
    if (!loaded)
        snprintf(why, why_size, "%s", load_error);
    return loaded ? &zc_openssl_api : NULL;
}
