/* The hardware-capability part of the dynamic linker's search, as the glibc
 * of this process does it: which subdirectories of a search directory it
 * tries, and which hwcap-tagged ld.so.cache entries it accepts. Internal to
 * the core. */
#ifndef ZECACHE_HWCAPS_H
#define ZECACHE_HWCAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* glibc-hwcaps names (3 on x86-64) plus the legacy power set of at most four
 * names (16) plus the directory itself. */
#define ZC_HWCAPS_SUBDIRS_MAX 24
#define ZC_HWCAPS_SUBDIR_SIZE 64
#define ZC_HWCAPS_NAMES_MAX 4

typedef struct zc_hwcaps {
    /* What each search directory is tried with, in glibc's order: each
     * active "glibc-hwcaps/NAME/", then the legacy subdirectories (glibc
     * before 2.37), then "" (the directory itself). */
    char subdirs[ZC_HWCAPS_SUBDIRS_MAX][ZC_HWCAPS_SUBDIR_SIZE];
    size_t subdir_count;
    /* The active glibc-hwcaps names, best first (priority i + 1). */
    const char *names[ZC_HWCAPS_NAMES_MAX];
    size_t name_count;
    /* GNU_PROPERTY_X86_ISA_1_* bits this CPU has (glibc's cpu_features->isa_1). */
    uint32_t isa_levels;
    /* $PLATFORM, glibc's dl_platform; NULL when unknown. */
    const char *platform;
    /* ld.so.cache entries with a legacy hwcap are considered (glibc before
     * 2.40), and then accepted when they carry no bit outside
     * legacy_allowed and, if any platform bit, exactly platform_bit. */
    bool legacy_cache;
    uint64_t legacy_allowed, platform_mask, platform_bit;
} zc_hwcaps;

/* This process's, computed once. */
const zc_hwcaps *zc_hwcaps_of_process(void);

/* The priority glibc gives the glibc-hwcaps subdirectory name (1 is the
 * best), 0 when it is not active. */
uint32_t zc_hwcaps_priority(const zc_hwcaps *hwcaps, const char *name);

/* Whether glibc takes an ld.so.cache entry whose hwcap field is a legacy
 * one (not a glibc-hwcaps extension, not 0). */
bool zc_hwcaps_legacy_entry_accepted(const zc_hwcaps *hwcaps, uint64_t hwcap);

#endif
