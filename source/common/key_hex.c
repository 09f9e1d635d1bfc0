#include "zecache/key.h"

#include <string.h>

void zc_key_to_hex(const zc_key *key, char hex[ZC_KEY_HEX_SIZE])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < ZC_KEY_SIZE; i++) {
        hex[2 * i] = digits[key->bytes[i] >> 4];
        hex[2 * i + 1] = digits[key->bytes[i] & 0xf];
    }
    hex[2 * ZC_KEY_SIZE] = '\0';
}

static int hex_digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool zc_key_from_hex(const char *hex, zc_key *key)
{
    if (hex == NULL || strlen(hex) != 2 * ZC_KEY_SIZE)
        return false;
    for (size_t i = 0; i < ZC_KEY_SIZE; i++) {
        int high = hex_digit_value(hex[2 * i]);
        int low = hex_digit_value(hex[2 * i + 1]);
        if (high < 0 || low < 0)
            return false;
        key->bytes[i] = (uint8_t)(high << 4 | low);
    }
    key->kind = ZC_ENTRY_LEVEL_ZERO;
    return true;
}

bool zc_key_equal(const zc_key *a, const zc_key *b)
{
    return memcmp(a->bytes, b->bytes, ZC_KEY_SIZE) == 0 && a->kind == b->kind;
}

/* The names Intel's driver gives its own entries of each API, so one
 * directory holds both as it does; by zc_entry_kind. */
static const char *const kind_suffixes[ZC_ENTRY_KIND_COUNT] = {".l0_cache", ".cl_cache"};
static const char *const kind_names[ZC_ENTRY_KIND_COUNT] = {"level-zero", "opencl"};

const char *zc_entry_kind_suffix(zc_entry_kind kind)
{
    return (unsigned)kind < ZC_ENTRY_KIND_COUNT ? kind_suffixes[kind] : NULL;
}

const char *zc_entry_kind_name(zc_entry_kind kind)
{
    return (unsigned)kind < ZC_ENTRY_KIND_COUNT ? kind_names[kind] : "unknown";
}
