/* libcurl, loaded when the first HTTP storage is opened. Linked, it would
 * cost every program the layer starts in 20 to 26 ms and some 30 libraries
 * (measured here: dlopen of Debian 12's libcurl.so.4), HTTP storage or not;
 * the layer keeps its start-up for programs without one. The compile-time
 * header gives the types and constants; the functions come through this
 * table. Not installed: the HTTP storage's. */
#ifndef ZECACHE_CURL_API_H
#define ZECACHE_CURL_API_H

#include <curl/curl.h>
#include <stddef.h>

typedef struct zc_curl_api {
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL *curl);
    CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
    void (*easy_reset)(CURL *curl);
    void (*easy_cleanup)(CURL *curl);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
} zc_curl_api;

/* The table, libcurl loaded and initialised once per process (never
 * unloaded); NULL with the reason when libcurl.so.4 cannot be loaded. */
const zc_curl_api *zc_curl_api_get(char *reason, size_t reason_size);

#endif
