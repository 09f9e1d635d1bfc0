/* ELF files laid out as Intel's OpenCL binaries are, for the tests of
 * zecache/section_cut.h and of the OpenCL layer's entries that use it. */
#ifndef ZC_TEST_SECTION_ELF_H
#define ZC_TEST_SECTION_ELF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SPIRV 0xff000009u
#define SHT_NOBITS 8

typedef struct spec {
    uint32_t type;
    size_t size, align;
} spec;

typedef struct elf {
    uint8_t *bytes;
    size_t size;
    size_t offset[16];
} elf;

static inline void put(uint8_t *at, uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; i++)
        at[i] = (uint8_t)(value >> (8 * i));
}

static inline uint64_t get(const uint8_t *at, int bytes)
{
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; i--)
        value = value << 8 | at[i];
    return value;
}

static inline size_t align_up(size_t value, size_t align)
{
    return align <= 1 ? value : (value + align - 1) / align * align;
}

/* An ELF of count sections after the null one, each filled with bytes of
 * its index; the table before them (table_first) or after them. */
static inline elf make_elf(const spec *sections, size_t count, bool table_first, unsigned seed)
{
    elf e = {0};
    size_t table_size = (count + 1) * 64, at = 64;
    size_t table_at = table_first ? 64 : 0;
    if (table_first)
        at += table_size;
    for (size_t i = 0; i < count; i++) {
        at = align_up(at, sections[i].align);
        e.offset[i + 1] = at;
        if (sections[i].type != SHT_NOBITS)
            at += sections[i].size;
    }
    if (!table_first)
        table_at = at = align_up(at, 8);
    e.size = table_first ? at : at + table_size;
    e.bytes = calloc(1, e.size);
    memcpy(e.bytes,
           "\x7f"
           "ELF\x02\x01\x01",
           7);
    put(e.bytes + 16, 0xff04, 2);
    put(e.bytes + 40, table_at, 8);
    put(e.bytes + 52, 64, 2);
    put(e.bytes + 58, 64, 2);
    put(e.bytes + 60, count + 1, 2);
    for (size_t i = 0; i < count; i++) {
        uint8_t *header = e.bytes + table_at + (i + 1) * 64;
        put(header, 7 * i + 1, 4);
        put(header + 4, sections[i].type, 4);
        put(header + 24, e.offset[i + 1], 8);
        put(header + 32, sections[i].size, 8);
        put(header + 48, sections[i].align, 8);
        if (sections[i].type == SHT_NOBITS)
            continue;
        for (size_t b = 0; b < sections[i].size; b++)
            e.bytes[e.offset[i + 1] + b] = (uint8_t)(i * 31 + b * (seed | 1) + seed);
    }
    return e;
}

#endif
