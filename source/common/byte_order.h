/* Little-endian fields of the on-disk entry header and of the key record,
 * written and read byte by byte so the formats are the same on every host.
 * (config.file is the exception: it holds a native size_t, as Intel's driver
 * writes it.) Not installed. */
#ifndef ZECACHE_BYTE_ORDER_H
#define ZECACHE_BYTE_ORDER_H

#include <stdint.h>

/* Each put returns the byte after the field written. */
static inline uint8_t *zc_put_le32(uint8_t *out, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(value >> (8 * i));
    return out + 4;
}

static inline uint8_t *zc_put_le64(uint8_t *out, uint64_t value)
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(value >> (8 * i));
    return out + 8;
}

static inline uint16_t zc_get_le16(const uint8_t *in)
{
    return (uint16_t)(in[0] | in[1] << 8);
}

static inline uint32_t zc_get_le32(const uint8_t *in)
{
    uint32_t value = 0;
    for (int i = 3; i >= 0; i--)
        value = value << 8 | in[i];
    return value;
}

static inline uint64_t zc_get_le64(const uint8_t *in)
{
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--)
        value = value << 8 | in[i];
    return value;
}

#endif
