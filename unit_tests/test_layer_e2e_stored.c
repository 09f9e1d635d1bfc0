/* A module whose native binary compresses poorly (1 MiB of constant data,
 * bench/make_large_module.py) through the layer and Intel's real driver: its
 * entry's frames are stored uncompressed, a new process's disk hit gives the
 * driver's own bytes, and a damaged stored entry is a counted miss that
 * compiles again to the same bytes, never another binary. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "e2e_probe_support.h"
#include "test_support.h"

TestSuite(e2e_stored, .init = scratch_create, .fini = scratch_remove, .timeout = 240);

static char entry_path[PATH_MAX];
static int find_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_F && is_zecache_entry_name(strrchr(path, '/') + 1))
        snprintf(entry_path, sizeof entry_path, "%s", path);
    return 0;
}

static void assert_lookups(int misses, int disk_hits)
{
    cr_assert_eq(run.exit_status, 0, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, MISS), misses, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), disk_hits, "stderr: %s", run.err);
}

Test(e2e_stored, poorly_compressible_module_is_stored_hit_exactly_and_damage_is_a_miss)
{
    char command[PATH_MAX * 2];
    const char *spirv = in_scratch("constant_data.spv");
    snprintf(command, sizeof command, "/usr/bin/python3 '%s' '%s' 1", ZC_LARGE_MODULE_SCRIPT,
             spirv);
    cr_assert_eq(system(command), 0);

    probe_run(true, NULL, ARGS("--spirv", spirv, "--native-out", in_scratch("cold.bin")));
    assert_lookups(1, 0);
    entry_path[0] = '\0';
    cr_assert_eq(nftw(sc.cache, find_entry, 16, FTW_PHYS), 0);
    cr_assert_neq(entry_path[0], '\0');
    struct stat entry_st, binary_st;
    cr_assert_eq(stat(entry_path, &entry_st), 0);
    cr_assert_eq(stat(in_scratch("cold.bin"), &binary_st), 0);
    cr_assert_gt(entry_st.st_size, binary_st.st_size, "stored, not compressed");

    probe_run(true, NULL, ARGS("--spirv", spirv, "--native-out", in_scratch("warm.bin")));
    assert_lookups(0, 1);
    assert_same_file(in_scratch("cold.bin"), in_scratch("warm.bin"));

    /* One byte in the middle of the stored binary. */
    size_t size;
    uint8_t *entry = t_read_bytes(entry_path, &size);
    entry[size / 2] ^= 0x10;
    FILE *file = fopen(entry_path, "wb");
    cr_assert_not_null(file);
    cr_assert_eq(fwrite(entry, 1, size, file), size);
    cr_assert_eq(fclose(file), 0);
    free(entry);
    probe_run(true, NULL, ARGS("--spirv", spirv, "--native-out", in_scratch("damaged.bin")));
    assert_lookups(1, 0);
    assert_same_file(in_scratch("cold.bin"), in_scratch("damaged.bin"));
}
