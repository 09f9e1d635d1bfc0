/* See trust_store.h. */
#include "trust_store.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "openssl_api.h"

/* "<8 hex digits>.<digits>": a certificate's link as c_rehash (openssl
 * rehash) makes it; ".r<digits>" are revocation lists. */
static bool is_certificate_link(const char *name)
{
    for (int i = 0; i < 8; i++)
        if (!isxdigit((unsigned char)name[i]))
            return false;
    if (name[8] != '.' || !isdigit((unsigned char)name[9]))
        return false;
    for (const char *c = name + 10; *c != '\0'; c++)
        if (!isdigit((unsigned char)*c))
            return false;
    return true;
}

static bool directory_has_certificate(const char *path)
{
    DIR *dir = opendir(path);
    if (dir == NULL)
        return false;
    bool found = false;
    for (struct dirent *entry = readdir(dir); entry != NULL && !found; entry = readdir(dir))
        found = is_certificate_link(entry->d_name);
    closedir(dir);
    return found;
}

/* Whether any directory of list (':'-separated, as OpenSSL takes it) holds
 * a certificate OpenSSL can look up. */
static bool any_certificate_in(const char *list)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", list);
    char *saveptr = NULL;
    for (char *dir = strtok_r(copy, ":", &saveptr); dir != NULL;
         dir = strtok_r(NULL, ":", &saveptr))
        if (directory_has_certificate(dir))
            return true;
    return false;
}

static zc_status take_file(const char *name, const char *path, zc_trust_store *store, char *why,
                           size_t why_size)
{
    if (access(path, R_OK) != 0)
        return zc_explain(ZC_ERR_INVALID_ARG, why, why_size, "%s %s: %s", name, path,
                          strerror(errno));
    if (snprintf(store->file, sizeof store->file, "%s", path) >= (int)sizeof store->file)
        return zc_explain(ZC_ERR_INVALID_ARG, why, why_size, "%s: path too long", name);
    store->file_name = name;
    return ZC_OK;
}

zc_status zc_trust_store_choose(const char *ca_file, zc_trust_store *store, char *why,
                                size_t why_size)
{
    memset(store, 0, sizeof *store);
    if (ca_file != NULL && ca_file[0] != '\0')
        return take_file("ca-file", ca_file, store, why, why_size);
    if (zc_openssl_load(why, why_size) == NULL)
        return ZC_ERR_DISABLED;
    const char *file = secure_getenv(OSSL(X509_get_default_cert_file_env)());
    if (file != NULL && file[0] != '\0') {
        zc_status status = take_file("SSL_CERT_FILE", file, store, why, why_size);
        if (status != ZC_OK)
            return status;
    }
    const char *dir = secure_getenv(OSSL(X509_get_default_cert_dir_env)());
    if (dir == NULL || dir[0] == '\0')
        dir = OSSL(X509_get_default_cert_dir)();
    snprintf(store->dir, sizeof store->dir, "%s", dir);
    if (store->file[0] == '\0' && !any_certificate_in(store->dir))
        return zc_explain(ZC_ERR_INVALID_ARG, why, why_size,
                          "no CA certificate to verify the server with: SSL_CERT_FILE is not set "
                          "and %s holds none (install ca-certificates, set SSL_CERT_FILE or "
                          "SSL_CERT_DIR, or give |ca-file=PATH)",
                          store->dir);
    return ZC_OK;
}
