/* glibc's hardware-capability subdirectories and ld.so.cache entries, as the
 * glibc of this process treats them (elf/dl-hwcaps.c, elf/dl-cache.c and
 * sysdeps/x86 in glibc 2.36 and 2.41):
 *
 * - glibc >= 2.33 tries DIR/glibc-hwcaps/NAME/ before every search directory
 *   DIR, for each active NAME, best first: on x86-64 x86-64-v4, -v3, -v2 as
 *   glibc's get_isa_level finds them usable. It is computed here from
 *   glibc's own view of the CPU (<sys/platform/x86.h>, CPU_FEATURE_ACTIVE),
 *   so GLIBC_TUNABLES=glibc.cpu.hwcaps masks count as they do for ld.so.
 *   x86-64-v3 needs BMI1 and BMI2 as in glibc 2.37 and on the 2.36 release
 *   branch Debian 12 ships (upstream 2.36.0 did not: only a CPU or tunable
 *   with AVX2 but no BMI2 tells them apart). ld.so's own options
 *   --glibc-hwcaps-prepend and --glibc-hwcaps-mask (a program started by
 *   running ld.so explicitly) are assumed unused.
 * - glibc before 2.37 then tries the legacy subdirectories: every subset of
 *   {the hwcap names of dl_hwcap & hwcap_mask, dl_platform, "tls"}, in the
 *   order of _dl_important_hwcaps' power set. glibc.cpu.hwcap_mask
 *   (LD_HWCAP_MASK) is assumed to keep its default, HWCAP_IMPORTANT.
 * - ld.so.cache entries tagged with a legacy hwcap are taken as glibc 2.36
 *   does it before 2.40, skipped from 2.40 on.
 *
 * Other architectures: only the directory itself and no hwcap cache
 * entries; the check after the first compile (compiler_identity.c) covers
 * them. */
#include "hwcaps.h"

#include <gnu/libc-version.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/platform/x86.h>
#endif

/* GNU_PROPERTY_X86_ISA_1_* (elf.h of recent glibc). */
#define ISA_BASELINE (1u << 0)
#define ISA_V2 (1u << 1)
#define ISA_V3 (1u << 2)
#define ISA_V4 (1u << 3)

#define GLIBC_HWCAPS_PREFIX "glibc-hwcaps/"

/* glibc's HWCAP_X86_64 and HWCAP_X86_AVX512_1 (sysdeps/x86/dl-hwcap.h). */
#define HWCAP_X86_64 (1ull << 1)
#define HWCAP_X86_AVX512_1 (1ull << 2)
#define LEGACY_TLS (1ull << 63)
#define FIRST_PLATFORM_BIT 48

static zc_hwcaps process_hwcaps;
static pthread_once_t process_hwcaps_once = PTHREAD_ONCE_INIT;

/* glibc's version as major * 1000 + minor, 0 when unreadable. */
static unsigned glibc_version(void)
{
    unsigned major = 0, minor = 0;
    if (sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor) != 2)
        return 0;
    return major * 1000 + minor;
}

/* Adds prefix name suffix, a subdirectory ending in '/' or "". */
static void add_subdir(zc_hwcaps *hwcaps, const char *prefix, const char *name, const char *suffix)
{
    if (hwcaps->subdir_count < ZC_HWCAPS_SUBDIRS_MAX)
        snprintf(hwcaps->subdirs[hwcaps->subdir_count++], ZC_HWCAPS_SUBDIR_SIZE, "%s%s%s", prefix,
                 name, suffix);
}

/* The legacy subdirectories of names[0..count), the power set in
 * _dl_important_hwcaps' order: entry j holds the names whose bit is clear
 * in j, from the last name to the first; the last entry is "". */
static void add_legacy_subdirs(zc_hwcaps *hwcaps, const char *const *names, size_t count)
{
    for (size_t j = 0; j < ((size_t)1 << count); j++) {
        char subdir[ZC_HWCAPS_SUBDIR_SIZE] = "";
        for (size_t n = count; n-- > 0;)
            if ((j & ((size_t)1 << n)) == 0) {
                size_t used = strlen(subdir);
                snprintf(subdir + used, sizeof subdir - used, "%s/", names[n]);
            }
        add_subdir(hwcaps, "", subdir, "");
    }
}

#if defined(__x86_64__)

/* CPU_FEATURE_ACTIVE and CPU_FEATURE_PRESENT of <sys/platform/x86.h>, read
 * with an unsigned shift: the header's own (glibc 2.36) shifts a signed 1 by
 * up to 31, undefined behaviour that UBSan reports. */
static bool feature_bit(unsigned index, bool active)
{
    const unsigned bits = 8 * sizeof(unsigned);
    const struct cpuid_feature *leaf = __x86_get_cpuid_feature_leaf(index / (bits * 4));
    unsigned reg = (index & (bits * 4 - 1)) / bits, bit = index & (bits - 1);
    unsigned word = active ? leaf->active_array[reg] : leaf->cpuid_array[reg];
    return ((word >> bit) & 1u) != 0;
}

#undef CPU_FEATURE_ACTIVE
#undef CPU_FEATURE_PRESENT
#define CPU_FEATURE_ACTIVE(name) feature_bit(x86_cpu_##name, true)
#define CPU_FEATURE_PRESENT(name) feature_bit(x86_cpu_##name, false)

/* sysdeps/x86/get-isa-level.h, from glibc's usable features. */
static uint32_t x86_isa_levels(void)
{
    if (!(CPU_FEATURE_ACTIVE(CMOV) && CPU_FEATURE_ACTIVE(CX8) && CPU_FEATURE_PRESENT(FPU) &&
          CPU_FEATURE_ACTIVE(FXSR) && CPU_FEATURE_ACTIVE(MMX) && CPU_FEATURE_ACTIVE(SSE) &&
          CPU_FEATURE_ACTIVE(SSE2)))
        return 0;
    if (!(CPU_FEATURE_ACTIVE(CMPXCHG16B) && CPU_FEATURE_ACTIVE(LAHF64_SAHF64) &&
          CPU_FEATURE_ACTIVE(POPCNT) && CPU_FEATURE_ACTIVE(SSE3) && CPU_FEATURE_ACTIVE(SSSE3) &&
          CPU_FEATURE_ACTIVE(SSE4_1) && CPU_FEATURE_ACTIVE(SSE4_2)))
        return ISA_BASELINE;
    if (!(CPU_FEATURE_ACTIVE(AVX) && CPU_FEATURE_ACTIVE(AVX2) && CPU_FEATURE_ACTIVE(BMI1) &&
          CPU_FEATURE_ACTIVE(BMI2) && CPU_FEATURE_ACTIVE(F16C) && CPU_FEATURE_ACTIVE(FMA) &&
          CPU_FEATURE_ACTIVE(LZCNT) && CPU_FEATURE_ACTIVE(MOVBE)))
        return ISA_BASELINE | ISA_V2;
    if (!(CPU_FEATURE_ACTIVE(AVX512F) && CPU_FEATURE_ACTIVE(AVX512BW) &&
          CPU_FEATURE_ACTIVE(AVX512CD) && CPU_FEATURE_ACTIVE(AVX512DQ) &&
          CPU_FEATURE_ACTIVE(AVX512VL)))
        return ISA_BASELINE | ISA_V2 | ISA_V3;
    return ISA_BASELINE | ISA_V2 | ISA_V3 | ISA_V4;
}

static bool cpu_is_intel(void)
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid(0, &eax, &ebx, &ecx, &edx) && ebx == 0x756e6547 /* "Genu" */ &&
           edx == 0x49656e69 /* "ineI" */ && ecx == 0x6c65746e /* "ntel" */;
}

/* init_cpu_features: dl_hwcap gains AVX512_1 and dl_platform becomes
 * "xeon_phi" or "haswell" on Intel CPUs only. */
static const char *x86_platform(uint64_t *hwcap)
{
    *hwcap = HWCAP_X86_64;
    if (!cpu_is_intel())
        return (const char *)getauxval(AT_PLATFORM);
    const char *platform = NULL;
    if (CPU_FEATURE_ACTIVE(AVX512CD)) {
        if (CPU_FEATURE_ACTIVE(AVX512ER)) {
            if (CPU_FEATURE_ACTIVE(AVX512PF))
                platform = "xeon_phi";
        } else if (CPU_FEATURE_ACTIVE(AVX512BW) && CPU_FEATURE_ACTIVE(AVX512DQ) &&
                   CPU_FEATURE_ACTIVE(AVX512VL)) {
            *hwcap |= HWCAP_X86_AVX512_1;
        }
    }
    if (platform == NULL && CPU_FEATURE_ACTIVE(AVX2) && CPU_FEATURE_ACTIVE(FMA) &&
        CPU_FEATURE_ACTIVE(BMI1) && CPU_FEATURE_ACTIVE(BMI2) && CPU_FEATURE_ACTIVE(LZCNT) &&
        CPU_FEATURE_ACTIVE(MOVBE) && CPU_FEATURE_ACTIVE(POPCNT))
        platform = "haswell";
    return platform != NULL ? platform : (const char *)getauxval(AT_PLATFORM);
}

/* _dl_string_platform: x86-64 knows "haswell" (bit 50) and "xeon_phi"
 * (51); any other platform matches no entry's platform bits. */
static uint64_t x86_platform_bit(const char *platform)
{
    if (platform != NULL && strcmp(platform, "haswell") == 0)
        return 1ull << (FIRST_PLATFORM_BIT + 2);
    if (platform != NULL && strcmp(platform, "xeon_phi") == 0)
        return 1ull << (FIRST_PLATFORM_BIT + 3);
    return UINT64_MAX;
}

static void find_x86_hwcaps(zc_hwcaps *hwcaps, unsigned version)
{
    static const char *const levels[] = {"x86-64-v4", "x86-64-v3", "x86-64-v2"};
    static const uint32_t level_bits[] = {ISA_V4, ISA_V3, ISA_V2};
    hwcaps->isa_levels = x86_isa_levels();
    for (size_t i = 0; i < 3; i++)
        if (version >= 2033 && (hwcaps->isa_levels & level_bits[i]) != 0)
            hwcaps->names[hwcaps->name_count++] = levels[i];
    uint64_t hwcap;
    hwcaps->platform = x86_platform(&hwcap);
    hwcaps->legacy_cache = version < 2040;
    hwcaps->platform_mask = 0xfull << FIRST_PLATFORM_BIT;
    hwcaps->legacy_allowed = hwcap | hwcaps->platform_mask | LEGACY_TLS;
    hwcaps->platform_bit = x86_platform_bit(hwcaps->platform);
    for (size_t i = 0; i < hwcaps->name_count; i++)
        add_subdir(hwcaps, GLIBC_HWCAPS_PREFIX, hwcaps->names[i], "/");
    if (version >= 2037) {
        add_subdir(hwcaps, "", "", "");
        return;
    }
    const char *legacy[4];
    size_t count = 0;
    legacy[count++] = "x86_64";
    if (hwcap & HWCAP_X86_AVX512_1)
        legacy[count++] = "avx512_1";
    if (hwcaps->platform != NULL)
        legacy[count++] = hwcaps->platform;
    legacy[count++] = "tls";
    add_legacy_subdirs(hwcaps, legacy, count);
}

#endif

static void find_process_hwcaps(void)
{
    zc_hwcaps *hwcaps = &process_hwcaps;
#if defined(__x86_64__)
    find_x86_hwcaps(hwcaps, glibc_version());
#else
    hwcaps->platform = (const char *)getauxval(AT_PLATFORM);
    add_subdir(hwcaps, "", "", "");
#endif
}

const zc_hwcaps *zc_hwcaps_of_process(void)
{
    pthread_once(&process_hwcaps_once, find_process_hwcaps);
    return &process_hwcaps;
}

uint32_t zc_hwcaps_priority(const zc_hwcaps *hwcaps, const char *name)
{
    for (size_t i = 0; i < hwcaps->name_count; i++)
        if (strcmp(hwcaps->names[i], name) == 0)
            return (uint32_t)i + 1;
    return 0;
}

/* elf/dl-cache.c search_cache before 2.40: no bit outside
 * dl_hwcap & hwcap_mask, the platform bits and TLS, and the platform's own
 * bit when the entry names a platform. */
bool zc_hwcaps_legacy_entry_accepted(const zc_hwcaps *hwcaps, uint64_t hwcap)
{
    if (!hwcaps->legacy_cache || (hwcap & ~hwcaps->legacy_allowed) != 0)
        return false;
    uint64_t platform = hwcap & hwcaps->platform_mask;
    return platform == 0 || platform == hwcaps->platform_bit;
}
