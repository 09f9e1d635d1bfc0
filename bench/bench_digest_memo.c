/* What the per-process SPIR-V digest memo saves per module, against plain
 * hashing, for inputs of 64 KiB to 16 MiB: a memory hit of a module created
 * again hashes its SPIR-V for the key, or finds the digest in the memo (a
 * fingerprint and a full memcmp against a private copy). Prints the time per
 * digest of each way and their ratio; the first and second sight of new
 * content (hash; hash and copy) are the memo's cost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zecache/sha256.h"
#include "zecache/spirv_digest_memo.h"

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void fill(uint8_t *bytes, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        bytes[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

/* The best of rounds runs of repeats digests, per digest. */
static double best_us(bool memo, const uint8_t *bytes, size_t size, int repeats)
{
    double best = 1e30;
    uint8_t digest[ZC_SHA256_SIZE];
    for (int round = 0; round < 5; round++) {
        double start = now_us();
        for (int i = 0; i < repeats; i++)
            if (!(memo ? zc_spirv_digest(bytes, size, digest)
                       : zc_sha256_digest(bytes, size, digest)))
                exit(1);
        double each = (now_us() - start) / repeats;
        best = each < best ? each : best;
    }
    return best;
}

int main(void)
{
    static const size_t sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20};
    printf("%-10s %12s %12s %12s %12s %8s\n", "input", "hash us", "memo hit us", "1st sight us",
           "2nd sight us", "hit/hash");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t size = sizes[s];
        uint8_t *bytes = malloc(size), digest[ZC_SHA256_SIZE];
        fill(bytes, size, (unsigned)s);
        int repeats = (int)((64u << 20) / size);
        double hash = best_us(false, bytes, size, repeats);
        fill(bytes, size, (unsigned)s + 100); /* new content: first, second sight */
        double start = now_us();
        zc_spirv_digest(bytes, size, digest);
        double first = now_us() - start;
        start = now_us();
        zc_spirv_digest(bytes, size, digest);
        double second = now_us() - start;
        double hit = best_us(true, bytes, size, repeats);
        printf("%-10zu %12.1f %12.1f %12.1f %12.1f %8.3f\n", size, hash, hit, first, second,
               hit / hash);
        free(bytes);
    }
    return 0;
}
