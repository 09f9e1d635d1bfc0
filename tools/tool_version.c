/* zecache --version: the version, how this build was made, and the versions
 * of the libraries it runs with. Bug reports need the libraries the process
 * really loads, not the headers it was built against: zstd and libcrypto
 * report their own; libssl and libcurl, which the storages load only when a
 * rediss:// or http(s) storage is opened, are loaded here to be asked;
 * hiredis 0.14 has no run-time version, so its headers' is given. */
#include "tool.h"

#include <dlfcn.h>
#include <hiredis/hiredis.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <zstd.h>

/* A function of a shared library loaded for the asking (and left loaded:
 * what it allocates when asked stays its own until exit); NULL when the
 * library or the function is not there. */
static void *library_function(const char *file, const char *name)
{
    void *handle = dlopen(file, RTLD_LAZY | RTLD_LOCAL);
    return handle == NULL ? NULL : dlsym(handle, name);
}

static const char *libssl_version(void)
{
    const char *(*version)(int) = NULL;
    void *symbol = library_function("libssl.so.3", "OpenSSL_version");
    if (symbol == NULL)
        return "not found";
    __builtin_memcpy(&version, &symbol, sizeof symbol); /* POSIX: dlsym's result is callable */
    return version(OPENSSL_VERSION);
}

static const char *libcurl_version(void)
{
    const char *(*version)(void) = NULL;
    void *symbol = library_function("libcurl.so.4", "curl_version");
    if (symbol == NULL)
        return "not found";
    __builtin_memcpy(&version, &symbol, sizeof symbol);
    return version();
}

int tool_print_version(void)
{
    printf("zecache %s\n", ZC_TOOL_VERSION);
    printf("build: %s\n", ZC_TOOL_BUILD_OPTIONS);
    printf("zstd %s\n", ZSTD_versionString());
    printf("hiredis %d.%d.%d (built with)\n", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    printf("libcrypto: %s (linked in)\n", OpenSSL_version(OPENSSL_VERSION));
    printf("libssl.so.3: %s (loaded by rediss:// storages)\n", libssl_version());
    printf("libcurl.so.4: %s (loaded by http(s):// storages)\n", libcurl_version());
    return TOOL_EXIT_OK;
}
