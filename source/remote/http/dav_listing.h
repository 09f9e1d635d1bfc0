/* The names a WebDAV PROPFIND (Depth: 1) answer lists under a directory, as
 * they stream in: every "<dir>/<64 hex>" followed by a character that is
 * no hex digit (the end of an href, absolute path or URL) is a key. Nothing
 * else of the XML is read, so a document of any size costs a few bytes of
 * state, and no parser meets what the server sends. Not installed:
 * storage_http.c's listing. */
#ifndef ZECACHE_DAV_LISTING_H
#define ZECACHE_DAV_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/key.h"
#include "zecache/storage.h"

typedef struct zc_dav_listing {
    const char *dir; /* "recipe/": what precedes each name */
    size_t matched;  /* characters of dir seen so far */
    size_t hex_count;
    char hex[ZC_KEY_HEX_SIZE];
    size_t keys, max_keys;
    zc_storage_recipe_fn each;
    void *context;
    bool stopped;    /* each said stop */
    bool over_limit; /* max_keys named: stopped */
} zc_dav_listing;

void zc_dav_listing_init(zc_dav_listing *listing, const char *dir, size_t max_keys,
                         zc_storage_recipe_fn each, void *context);
/* Takes the next bytes of the answer; false once each said stop or
 * max_keys were named. */
bool zc_dav_listing_feed(zc_dav_listing *listing, const uint8_t *bytes, size_t size);

#endif
