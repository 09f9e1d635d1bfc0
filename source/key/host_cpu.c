/* The host CPU as a compiler targeting it sees it (driver_compiler.h): what
 * LLVM's host detection reads (sys::getHostCPUName, getHostCPUFeatures) is
 * CPUID and XCR0 on x86-64, so those are keyed, less the bits that tell
 * cores of one machine apart. Elsewhere, the auxiliary vector's hardware
 * capabilities and /proc/cpuinfo's lines naming the model and features. */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "byte_order.h"
#include "zecache/driver_compiler.h"
#include "key_record.h"

#if defined(__x86_64__)
#include <cpuid.h>

/* Room for every leaf kept, 16 bytes each, and XCR0. */
#define DESCRIPTION_MAX (16 * 16 + 8)

typedef struct description {
    uint8_t bytes[DESCRIPTION_MAX];
    size_t size;
} description;

static void put_registers(description *d, unsigned a, unsigned b, unsigned c, unsigned e)
{
    if (d->size + 16 > sizeof d->bytes)
        return;
    uint8_t *at = d->bytes + d->size;
    zc_put_le32(zc_put_le32(zc_put_le32(zc_put_le32(at, a), b), c), e);
    d->size += 16;
}

static void put_leaf(description *d, unsigned leaf, unsigned subleaf, unsigned max)
{
    unsigned a = 0, b = 0, c = 0, e = 0;
    if (leaf <= max)
        __cpuid_count(leaf, subleaf, a, b, c, e);
    put_registers(d, a, b, c, e);
}

static void describe(description *d)
{
    unsigned max = __get_cpuid_max(0, NULL), a, b, c, e;
    __cpuid(0, a, b, c, e);
    put_registers(d, 0, b, c, e); /* the vendor, not how many leaves this model has */
    __cpuid(1, a, b, c, e);
    /* ebx: the brand index and CLFLUSH size stay; the logical processor
     * count and the initial APIC id (bits 16-31) differ between cores. */
    put_registers(d, a, b & 0xffffu, c, e);
    put_leaf(d, 7, 0, max);
    put_leaf(d, 7, 1, max);
    put_leaf(d, 0xd, 1, max);
    unsigned ext_max = __get_cpuid_max(0x80000000u, NULL);
    for (unsigned leaf = 0x80000001u; leaf <= 0x80000004u; leaf++)
        put_leaf(d, leaf, 0, ext_max);
    uint64_t xcr0 = 0;
    if ((c & bit_OSXSAVE) != 0) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = (uint64_t)hi << 32 | lo;
    }
    zc_put_le64(d->bytes + d->size, xcr0);
    d->size += 8;
}

zc_status zc_key_add_host_cpu(zc_key_builder *builder)
{
    zc_status status = zc_key_part_usable(builder);
    if (status != ZC_OK)
        return status;
    description d = {.size = 0};
    describe(&d);
    return zc_key_add_hardware(builder, "host cpu", d.bytes, d.size);
}

#else

/* The lines of /proc/cpuinfo's first processor that name what it is. */
static size_t cpuinfo_lines(char *out, size_t size)
{
    static const char *const keys[] = {"model name",
                                       "CPU implementer",
                                       "CPU architecture",
                                       "CPU variant",
                                       "CPU part",
                                       "CPU revision",
                                       "Features",
                                       "flags",
                                       "isa",
                                       "uarch",
                                       "cpu",
                                       "vendor_id"};
    FILE *file = fopen("/proc/cpuinfo", "re");
    size_t used = 0;
    char line[4096];
    while (file != NULL && fgets(line, sizeof line, file) != NULL && line[0] != '\n')
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (strncmp(line, keys[i], strlen(keys[i])) == 0 && used + strlen(line) < size) {
                memcpy(out + used, line, strlen(line));
                used += strlen(line);
                break;
            }
    if (file != NULL)
        fclose(file);
    return used;
}

zc_status zc_key_add_host_cpu(zc_key_builder *builder)
{
    zc_status status = zc_key_part_usable(builder);
    if (status != ZC_OK)
        return status;
    char text[16384];
    const char *platform = (const char *)getauxval(AT_PLATFORM);
    int used =
        snprintf(text, sizeof text, "hwcap %lx\nhwcap2 %lx\nplatform %s\n", getauxval(AT_HWCAP),
                 getauxval(AT_HWCAP2), platform != NULL ? platform : "");
    if (used < 0 || (size_t)used >= sizeof text)
        return zc_key_refuse(builder, ZC_NOT_CACHEABLE, "the host CPU cannot be described");
    size_t lines = cpuinfo_lines(text + used, sizeof text - (size_t)used);
    if (lines == 0)
        return zc_key_refuse(builder, ZC_NOT_CACHEABLE, "/proc/cpuinfo names no CPU");
    return zc_key_add_hardware(builder, "host cpu", text, (size_t)used + lines);
}

#endif
