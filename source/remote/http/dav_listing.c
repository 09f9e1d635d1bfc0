/* See dav_listing.h. */
#include "dav_listing.h"

#include <ctype.h>
#include <string.h>

void zc_dav_listing_init(zc_dav_listing *listing, const char *dir, size_t max_keys,
                         zc_storage_recipe_fn each, void *context)
{
    *listing = (zc_dav_listing){.dir = dir, .max_keys = max_keys, .each = each, .context = context};
}

/* The 64 hex digits after dir, ended by c: a key, handed out. */
static bool name_ended(zc_dav_listing *listing)
{
    zc_key key;
    listing->hex[2 * ZC_KEY_SIZE] = '\0';
    if (!zc_key_from_hex(listing->hex, &key))
        return true;
    if (!listing->each(listing->context, &key)) {
        listing->stopped = true;
        return false;
    }
    if (++listing->keys >= listing->max_keys) {
        listing->over_limit = true;
        return false;
    }
    return true;
}

static void match_dir(zc_dav_listing *listing, char c)
{
    if (c == listing->dir[listing->matched])
        listing->matched++;
    else
        listing->matched = c == listing->dir[0] ? 1 : 0;
}

static bool take(zc_dav_listing *listing, char c)
{
    if (listing->dir[listing->matched] != '\0') {
        match_dir(listing, c);
        return true;
    }
    if (isxdigit((unsigned char)c) && listing->hex_count < 2 * ZC_KEY_SIZE) {
        listing->hex[listing->hex_count++] = (char)tolower((unsigned char)c);
        return true;
    }
    bool whole = listing->hex_count == 2 * ZC_KEY_SIZE && !isxdigit((unsigned char)c);
    listing->matched = 0;
    listing->hex_count = 0;
    if (whole && !name_ended(listing))
        return false;
    match_dir(listing, c); /* c may begin the next name */
    return true;
}

bool zc_dav_listing_feed(zc_dav_listing *listing, const uint8_t *bytes, size_t size)
{
    if (listing->stopped || listing->over_limit)
        return false;
    for (size_t i = 0; i < size; i++)
        if (!take(listing, (char)bytes[i]))
            return false;
    return true;
}
