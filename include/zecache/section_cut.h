/* A binary without the bytes of one of its ELF sections (the section still
 * listed, empty), and what puts the whole binary back together byte for byte.
 * Intel's OpenCL binaries (CL_PROGRAM_BINARIES) carry the SPIR-V they were
 * built from beside the device binary; a program made from one without it
 * costs the driver about half (it copies every part it keeps), and the
 * whole binary is only wanted when the application asks for it. */
#ifndef ZECACHE_SECTION_CUT_H
#define ZECACHE_SECTION_CUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zc_section_cut {
    uint8_t *kept; /* the binary without the section's bytes (malloc'd) */
    size_t kept_size;
    uint8_t *restore; /* what zc_section_cut_join needs beside kept (malloc'd) */
    size_t restore_size;
    /* restore ends with the cut bytes (the whole size less kept_size, a
     * prefix of the section's bytes); what comes before them is its head */
    size_t head_size;
} zc_section_cut;

/* Cuts the bytes of the one section of type section_type out of binary.
 * false, with nothing allocated, when binary is not a 64-bit little-endian
 * ELF file without program headers whose one such section can be cut alone
 * (no other section, nor the section table, within its bytes; at least 16
 * bytes to cut) and joined back to exactly binary, or memory runs out.
 * Only whole multiples of the largest alignment of what follows it are cut,
 * so every later section keeps its alignment. */
bool zc_section_cut_make(const uint8_t *binary, size_t size, uint32_t section_type,
                         zc_section_cut *cut);
void zc_section_cut_free(zc_section_cut *cut);

/* The section type of the SPIR-V inside Intel's binaries: SHT_OPENCL_SPIRV
 * of its OpenCL ELF (22.43) and SHT_ZEBIN_SPIRV of zebin (26.x) alike. */
#define ZC_INTEL_SPIRV_SECTION 0xff000009u

/* Whether an Intel binary holds no intermediate code its driver could
 * build it again from: no section of LLVM bitcode, SPIR-V or vISA with
 * bytes (unpackSingleDeviceBinary, 22.43 and 26.x); false when one has
 * bytes or its section table cannot be read. */
bool zc_intel_binary_without_ir(const uint8_t *binary, size_t size);

/* Whether binary, a 64-bit little-endian ELF file as zc_section_cut_make
 * takes, lists no section with bytes of any of the count types; false when
 * one has bytes or the section table cannot be read. */
bool zc_sections_all_empty(const uint8_t *binary, size_t size, const uint32_t *types, size_t count);

/* The size of the whole binary that kept (kept_size bytes) and restore make;
 * false when restore is not one zc_section_cut_make wrote for such a kept
 * binary (any bytes may be given). */
bool zc_section_cut_whole_size(size_t kept_size, const uint8_t *restore, size_t restore_size,
                               size_t *whole_size);
/* Writes the whole binary to out (zc_section_cut_whole_size bytes, which
 * must have accepted restore for kept_size). */
void zc_section_cut_join(const uint8_t *kept, size_t kept_size, const uint8_t *restore,
                         size_t restore_size, uint8_t *out);

/* The same from restore's head (head_size bytes) and the cut bytes kept
 * elsewhere (cut_size bytes): for a caller that can have them again, so
 * need not store them twice. */
bool zc_section_cut_head_whole_size(size_t kept_size, const uint8_t *head, size_t head_size,
                                    size_t cut_size, size_t *whole_size);
void zc_section_cut_join_head(const uint8_t *kept, size_t kept_size, const uint8_t *head,
                              size_t head_size, const uint8_t *cut, size_t cut_size, uint8_t *out);

#endif
