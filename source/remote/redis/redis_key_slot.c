/* See redis_key_slot.h. Bit by bit: key names are about a hundred bytes and
 * a slot is computed once per command, far below a round trip. */
#include "redis_key_slot.h"

#include <string.h>

static uint16_t crc16_xmodem(const char *bytes, size_t length)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < length; i++) {
        crc ^= (uint16_t)((uint16_t)(unsigned char)bytes[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) != 0 ? (uint16_t)(crc << 1 ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

uint16_t zc_redis_key_slot(const char *name, size_t length)
{
    const char *open = memchr(name, '{', length);
    if (open != NULL) {
        size_t after = (size_t)(open - name) + 1;
        const char *close = memchr(open + 1, '}', length - after);
        if (close != NULL && close > open + 1)
            return crc16_xmodem(open + 1, (size_t)(close - open - 1)) % ZC_REDIS_SLOTS;
    }
    return crc16_xmodem(name, length) % ZC_REDIS_SLOTS;
}
