/* End-to-end tests of the layer with Intel's real driver pretending to have a
 * Tiger Lake GPU (see real-driver-without-gpu.md). Each test runs ze_probe in
 * new processes, in its own scratch directory, with a controlled environment.
 *
 * Compiles are counted from the layer's PrintDebugMessages lines: exactly one
 * "[Cache]: miss" line per compile the cache ran, "hit disk" / "hit memory"
 * per hit and "bypass <reason>" per module that went around the cache. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e_probe_support.h"
#include "test_support.h"
#include "zecache/entry.h"

TestSuite(e2e, .init = scratch_create, .fini = scratch_remove, .timeout = 120);

static const char *only_entry_path;
static int find_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    static char found[PATH_MAX];
    size_t length = strlen(path);
    if (flag == FTW_F && length > 9 && strcmp(path + length - 9, ".l0_cache") == 0) {
        snprintf(found, sizeof(found), "%s", path);
        only_entry_path = found;
    }
    return 0;
}

static const char *the_entry(void)
{
    cr_assert_eq(entries_in(sc.cache), 1);
    only_entry_path = NULL;
    nftw(sc.cache, find_entry, 16, FTW_PHYS);
    return only_entry_path;
}

static int counted_recipes;

static int count_recipe(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    size_t length = strlen(path + ftw->base);
    counted_recipes +=
        flag == FTW_F && length > 7 && strcmp(path + ftw->base + length - 7, ".recipe") == 0;
    return 0;
}

/* The recorded inputs (.recipe files) under dir. */
static int recipes_in(const char *dir)
{
    counted_recipes = 0;
    nftw(dir, count_recipe, 16, FTW_PHYS);
    return counted_recipes;
}

static void write_bytes(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    cr_assert_not_null(file);
    cr_assert_eq(fwrite(data, 1, size, file), size);
    cr_assert_eq(fclose(file), 0);
}

/* The probe's "result 0x..." line for its first thread. */
static void result_line(char *line, size_t size)
{
    const char *at = strstr(run.out, "result ");
    cr_assert_not_null(at, "no result line; stdout: %s stderr: %s", run.out, run.err);
    snprintf(line, size, "%.*s", (int)strcspn(at, "\n"), at);
}

static void assert_module_created(const char *kernel_names)
{
    char expected[128];
    cr_assert_eq(run.exit_status, 0, "exit %d; stderr: %s", run.exit_status, run.err);
    cr_assert_not_null(strstr(run.out, "result 0x0\n"), "stdout: %s stderr: %s", run.out, run.err);
    snprintf(expected, sizeof(expected), "kernels %s\n", kernel_names);
    cr_assert_not_null(strstr(run.out, expected), "stdout: %s", run.out);
}

/* Created, and every kernel of it too. */
static void assert_module_works(const char *kernel_names)
{
    assert_module_created(kernel_names);
    cr_assert_eq(count_of(run.out, "kernel-create 0x0\n"), count_of(kernel_names, ",") + 1,
                 "stdout: %s", run.out);
}

static void assert_lookups(int misses, int disk_hits, int memory_hits)
{
    cr_assert_eq(count_of(run.err, MISS), misses, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_DISK), disk_hits, "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, HIT_MEMORY), memory_hits, "stderr: %s", run.err);
}

/* ---- the tests ---- */

Test(e2e, cold_run_stores_and_new_process_hits_with_same_binary_and_log)
{
    probe_run(true, NULL,
              ARGS("--spirv", SAXPY, "--native-out", in_scratch("cold.bin"), "--log-out",
                   in_scratch("cold.log")));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    cr_assert_eq(entries_in(sc.cache), 1);

    probe_run(true, NULL,
              ARGS("--spirv", SAXPY, "--native-out", in_scratch("warm.bin"), "--log-out",
                   in_scratch("warm.log")));
    assert_module_works("saxpy");
    assert_lookups(0, 1, 0);
    assert_same_file(in_scratch("cold.bin"), in_scratch("warm.bin"));
    assert_same_file(in_scratch("cold.log"), in_scratch("warm.log"));

    /* The stored entry holds exactly the binary the compiling run got. */
    size_t entry_size, binary_size, stored_size;
    uint8_t *entry = t_read_bytes(the_entry(), &entry_size);
    uint8_t *binary = t_read_bytes(in_scratch("cold.bin"), &binary_size);
    zc_artifact *artifact = NULL;
    char reason[128];
    cr_assert_eq(zc_entry_decode(entry, entry_size, NULL, 0, &artifact, reason, sizeof(reason)),
                 ZC_OK, "%s", reason);
    const uint8_t *stored = zc_artifact_binary(artifact, &stored_size);
    cr_assert_eq(stored_size, binary_size);
    cr_assert_eq(memcmp(stored, binary, binary_size), 0);
    zc_artifact_unref(artifact);
    free(entry);
    free(binary);
}

Test(e2e, another_device_misses)
{
    probe_run(true, NULL, ARGS("--spirv", SAXPY));
    assert_lookups(1, 0, 0);
    /* The pretend Alder Lake makes modules but not kernels, layer or not. */
    probe_run(true, ENV("ProductFamilyOverride=adlp"), ARGS("--spirv", SAXPY));
    assert_module_created("saxpy");
    assert_lookups(1, 0, 0);
    cr_assert_eq(entries_in(sc.cache), 2);
}

Test(e2e, other_build_flags_miss_and_null_differs_from_empty)
{
    probe_run(true, NULL, ARGS("--spirv", SAXPY));
    assert_lookups(1, 0, 0);
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--flags", ""));
    assert_lookups(1, 0, 0);
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--flags", "-cl-mad-enable"));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    cr_assert_eq(entries_in(sc.cache), 3);
}

Test(e2e, spec_constant_value_misses_and_order_hits)
{
    probe_run(true, NULL, ARGS("--spirv", SPEC_CONSTANTS, "--spec", "1=3", "--spec64", "2=5"));
    assert_module_works("spec_fill");
    assert_lookups(1, 0, 0);
    probe_run(true, NULL, ARGS("--spirv", SPEC_CONSTANTS, "--spec64", "2=5", "--spec", "1=3"));
    assert_module_works("spec_fill");
    assert_lookups(0, 1, 0);
    probe_run(true, NULL, ARGS("--spirv", SPEC_CONSTANTS, "--spec", "1=4", "--spec64", "2=5"));
    assert_module_works("spec_fill");
    assert_lookups(1, 0, 0);
    cr_assert_eq(entries_in(sc.cache), 2);
}

Test(e2e, changed_igc_variable_misses)
{
    probe_run(true, NULL, ARGS("--spirv", SAXPY));
    assert_lookups(1, 0, 0);
    probe_run(true, ENV("IGC_ForceOCLSIMDWidth=16"), ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    cr_assert_eq(entries_in(sc.cache), 2);
}

Test(e2e, program_extension_is_cached_apart_from_plain_modules)
{
    probe_run(true, NULL, ARGS("--program", "--spirv", SAXPY, "--flags", ""));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    probe_run(true, NULL, ARGS("--program", "--spirv", SAXPY, "--flags", ""));
    assert_module_works("saxpy");
    assert_lookups(0, 1, 0);
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--flags", ""));
    assert_lookups(1, 0, 0);
    cr_assert_eq(entries_in(sc.cache), 2);
}

Test(e2e, failed_build_returns_the_drivers_error_and_stores_nothing)
{
    char without_layer[64], with_layer[64];
    probe_run(false, NULL, ARGS("--spirv", FP64, "--log-out", in_scratch("plain.log")));
    result_line(without_layer, sizeof(without_layer));
    cr_assert_str_neq(without_layer, "result 0x0");
    probe_run(true, NULL, ARGS("--spirv", FP64, "--log-out", in_scratch("layer.log")));
    result_line(with_layer, sizeof(with_layer));
    cr_assert_str_eq(with_layer, without_layer);
    assert_same_file(in_scratch("plain.log"), in_scratch("layer.log"));
    assert_lookups(1, 0, 0);
    cr_assert_eq(count_of(run.err, "build failed"), 1);
    cr_assert_eq(entries_in(sc.cache), 0);
}

/* The driver "builds" a truncated module (without kernels) and ends the
 * process on bytes that are not SPIR-V at all: the layer must change
 * neither, whether its key builder takes the input (it reads the module only
 * for spec constants) or refuses it. */
Test(e2e, invalid_spirv_behaves_as_without_the_layer)
{
    size_t size;
    uint8_t *saxpy = t_read_bytes(SAXPY, &size);
    write_bytes(in_scratch("truncated.spv"), saxpy, size / 2);
    free(saxpy);
    write_bytes(in_scratch("junk.spv"), "\x03\x02\x23\x07 this is not SPIR-V", 24);
    const char *const *cases[] = {
        ARGS("--spirv", in_scratch("truncated.spv")),
        ARGS("--spirv", in_scratch("junk.spv")),
        ARGS("--spirv", in_scratch("junk.spv"), "--spec", "1=1"),
    };
    static char plain_out[OUTPUT_MAX];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        probe_run(false, NULL, cases[i]);
        int plain_status = run.exit_status;
        memcpy(plain_out, run.out, sizeof(plain_out));
        probe_run(true, NULL, cases[i]);
        cr_assert_eq(run.exit_status, plain_status);
        cr_assert_str_eq(run.out, plain_out);
    }
    cr_assert_eq(count_of(run.err, "bypass not-cacheable"), 1, "stderr: %s", run.err);
}

Test(e2e, corrupted_entry_is_compiled_again)
{
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("first.bin")));
    const char *entry = the_entry();
    size_t size;
    uint8_t *bytes = t_read_bytes(entry, &size);
    bytes[size / 2] ^= 0x40;
    write_bytes(entry, bytes, size);
    free(bytes);

    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("second.bin")));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    assert_same_file(in_scratch("first.bin"), in_scratch("second.bin"));
    probe_run(true, NULL, ARGS("--spirv", SAXPY));
    assert_lookups(0, 1, 0);
}

/* A verified entry whose binary the driver refuses: the app still gets its
 * module, and the entry is replaced with a good one. */
Test(e2e, binary_the_driver_rejects_is_compiled_again_and_replaced)
{
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("first.bin")));
    const char *entry = the_entry();
    size_t size;
    uint8_t *bytes = t_read_bytes(entry, &size);
    zc_entry_header header;
    zc_artifact *good = NULL;
    char reason[128];
    cr_assert_eq(zc_entry_read_header(bytes, size, &header, reason, sizeof(reason)), ZC_OK);
    cr_assert_eq(zc_entry_decode(bytes, size, NULL, 0, &good, reason, sizeof(reason)), ZC_OK);
    size_t log_size;
    const char *log = zc_artifact_build_log(good, &log_size);
    static const char garbage[64] = "not a native binary";
    zc_artifact *bad =
        zc_artifact_create(garbage, sizeof(garbage), log, log_size, zc_artifact_meta_of(good));
    uint8_t *encoded;
    size_t encoded_size;
    cr_assert_eq(zc_entry_encode(&header.key, bad, 3, &encoded, &encoded_size), ZC_OK);
    write_bytes(entry, encoded, encoded_size);
    free(encoded);
    free(bytes);
    zc_artifact_unref(bad);
    zc_artifact_unref(good);

    cr_assert_eq(recipes_in(sc.cache), 1, "recorded by the first run");

    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("second.bin")));
    assert_module_works("saxpy");
    cr_assert_eq(count_of(run.err, "bypass rejected-binary"), 1, "stderr: %s", run.err);
    /* Not a hit: a miss, which saved nothing, and whose inputs are recorded
     * beside the entry that replaced the refused one. */
    cr_assert_not_null(strstr(run.err, "summary: 0 memory hits, 0 disk hits, 1 misses (0 failed), "
                                       "1 bypasses"),
                       "stderr: %s", run.err);
    cr_assert_not_null(strstr(run.err, " 0.000 ms of compiling saved"), "stderr: %s", run.err);
    cr_assert_eq(recipes_in(sc.cache), 1, "stderr: %s", run.err);
    assert_same_file(in_scratch("first.bin"), in_scratch("second.bin"));
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("third.bin")));
    assert_lookups(0, 1, 0);
    assert_same_file(in_scratch("first.bin"), in_scratch("third.bin"));
}

Test(e2e, persistence_off_writes_no_files)
{
    probe_run(true, ENV("NEO_CACHE_PERSISTENT=0"), ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    cr_assert_eq(files_in(sc.cache), 0);
}

Test(e2e, unusable_cache_directory_leaves_the_program_working)
{
    char setting[PATH_MAX + 32];
    write_bytes(in_scratch("a_file"), "x", 1);
    snprintf(setting, sizeof(setting), "NEO_CACHE_DIR=%s", in_scratch("a_file"));
    probe_run(true, ENV(setting), ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");

    /* root ignores permission bits, but cannot create files in /proc. */
    const char *read_only = geteuid() == 0 ? "/proc" : sc.cache;
    cr_assert_eq(chmod(sc.cache, 0500), 0);
    snprintf(setting, sizeof(setting), "NEO_CACHE_DIR=%s", read_only);
    probe_run(true, ENV(setting), ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    cr_assert_eq(files_in(sc.cache), 0);
    chmod(sc.cache, 0700);
}

Test(e2e, sixteen_threads_creating_one_module_compile_once)
{
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--threads", "16"));
    cr_assert_eq(count_of(run.out, "result 0x0\n"), 16, "stdout: %s", run.out);
    assert_lookups(1, 0, 15);
    probe_run(true, NULL, ARGS("--spirv", VECTOR_ADD, "--threads", "16", "--context-per-thread"));
    cr_assert_eq(count_of(run.out, "result 0x0\n"), 16, "stdout: %s", run.out);
    assert_module_works("vector_add");
    assert_lookups(1, 0, 15);
    cr_assert_eq(entries_in(sc.cache), 2);
}

/* A child of a process running the layer (on a driver that reads
 * NEO_CACHE_PERSISTENT) sees the layer's NEO_CACHE_PERSISTENT=00, but the
 * layer reads the user's value that the parent saved. */
Test(e2e, child_process_reads_the_users_values)
{
    probe_run(true, ENV("NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT="),
              ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    cr_assert_eq(entries_in(sc.cache), 1);
    probe_run(true, ENV("NEO_CACHE_PERSISTENT=00", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT=0"),
              ARGS("--spirv", VECTOR_ADD));
    assert_module_works("vector_add");
    cr_assert_eq(entries_in(sc.cache), 1);
}

/* A child that switches persistence off itself is obeyed, although its
 * parent's user had it on. */
Test(e2e, child_process_keeps_the_value_it_set_itself)
{
    probe_run(true, ENV("NEO_CACHE_PERSISTENT=0", "ZECACHE_ORIGINAL_NEO_CACHE_PERSISTENT="),
              ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    cr_assert_eq(entries_in(sc.cache), 0);
}

Test(e2e, native_input_and_unknown_extension_bypass)
{
    char without_layer[64], with_layer[64];
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("native.bin")));
    probe_run(true, NULL, ARGS("--native", "--spirv", in_scratch("native.bin")));
    assert_module_works("saxpy");
    cr_assert_eq(count_of(run.err, "bypass native-input"), 1, "stderr: %s", run.err);
    assert_lookups(0, 0, 0);

    probe_run(false, NULL, ARGS("--unknown-pnext", "--spirv", SAXPY));
    result_line(without_layer, sizeof(without_layer));
    probe_run(true, NULL, ARGS("--unknown-pnext", "--spirv", SAXPY));
    result_line(with_layer, sizeof(with_layer));
    cr_assert_str_eq(with_layer, without_layer);
    cr_assert_eq(count_of(run.err, "bypass unsupported-input"), 1, "stderr: %s", run.err);
    cr_assert_eq(entries_in(sc.cache), 1);
}

Test(e2e, enable_layers_selects_cache_and_validation)
{
    probe_run(true, ENV("ZE_ENABLE_LAYERS=validation"), ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    assert_lookups(0, 0, 0);
    cr_assert_eq(count_of(run.err, "validation: chained to /"), 1, "stderr: %s", run.err);
    cr_assert_eq(entries_in(sc.cache), 0);

    probe_run(true, ENV("ZE_ENABLE_LAYERS=bogus"), ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    cr_assert_eq(count_of(run.err, "unknown layer \"bogus\""), 1, "stderr: %s", run.err);
    cr_assert_eq(entries_in(sc.cache), 0);

    probe_run(true, ENV("ZE_ENABLE_LAYERS= cache , validation"), ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    cr_assert_eq(count_of(run.err, "validation: chained to /"), 1, "stderr: %s", run.err);
    cr_assert_eq(entries_in(sc.cache), 1);
}

/* ---- the compiler found through ld.so.conf.d ---- */

#define TEST_LD_CONF "/etc/ld.so.conf.d/000-zecache-e2e-test.conf"

/* Puts the system's ld.so.cache back as it was: other programs on this
 * machine read it. Run before, after and at exit of the test. */
static void restore_ld_so_conf(void)
{
    if (unlink(TEST_LD_CONF) == 0 && system("/sbin/ldconfig") != 0)
        fprintf(stderr, "ldconfig failed: /etc/ld.so.cache may still list the test directory\n");
}

/* Intel's packages install IGC outside the multiarch directory and list it in
 * ld.so.conf.d. A byte-identical copy with the same mtime keeps the key of
 * every other program on this machine the same while the test runs; only
 * the moment after its mtime changes differs, and that is kept short. */
Test(e2e, compiler_found_through_ld_so_conf_d_misses_when_its_mtime_changes)
{
    if (geteuid() != 0)
        cr_skip_test("changing /etc/ld.so.conf.d needs root");
    restore_ld_so_conf();
    atexit(restore_ld_so_conf);
    const char *dir = in_scratch("intel-igc");
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s/%s", dir, t_system_igc_name());
    cr_assert_eq(mkdir(dir, 0755), 0);
    char command[3 * PATH_MAX];
    snprintf(command, sizeof(command), "cp -pL '%s/%s' '%s'", T_SYSTEM_LIB_DIR, t_system_igc_name(),
             copy);
    cr_assert_eq(system(command), 0);
    char conf[PATH_MAX + 2];
    int length = snprintf(conf, sizeof(conf), "%s\n", dir);
    write_bytes(TEST_LD_CONF, conf, (size_t)length);
    cr_assert_eq(system("/sbin/ldconfig"), 0);

    probe_run(true, ENV("BinaryCacheTrace=1"), ARGS("--spirv", SAXPY));
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    snprintf(command, sizeof(command), "grep -rqF 'path: %s' '%s'", copy, sc.cache);
    bool keyed_the_copy = system(command) == 0;
    probe_run(true, NULL, ARGS("--spirv", SAXPY));
    bool warm_hit = count_of(run.err, HIT_DISK) == 1;

    struct timespec times[2] = {{0, UTIME_OMIT}, {0, 0}};
    clock_gettime(CLOCK_REALTIME, &times[1]);
    cr_assert_eq(utimensat(AT_FDCWD, copy, times, 0), 0);
    probe_run(true, NULL, ARGS("--spirv", SAXPY));
    restore_ld_so_conf();

    cr_assert(keyed_the_copy, "the key's trace does not name %s", copy);
    cr_assert(warm_hit, "stderr: %s", run.err);
    assert_module_works("saxpy");
    assert_lookups(1, 0, 0);
    cr_assert_eq(entries_in(sc.cache), 2);
}

/* The warm process's lookup is served by the prefetch from zeInit on, with
 * the binary the compile gave; a damaged usage list is ignored; with
 * NEO_CACHE_PREFETCH=0 nothing is listed or loaded ahead. */
Test(e2e, warm_process_prefetches_its_programs_entries)
{
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("cold.bin")));
    assert_lookups(1, 0, 0);
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("warm.bin")));
    assert_lookups(0, 1, 0);
    cr_assert_eq(count_of(run.err, "prefetch: 1 entries listed from this program's last run"), 1,
                 "stderr: %s", run.err);
    cr_assert_eq(count_of(run.err, "prefetch: of 1 entries listed, "), 1, "stderr: %s", run.err);
    assert_same_file(in_scratch("cold.bin"), in_scratch("warm.bin"));

    char command[2 * PATH_MAX];
    snprintf(command, sizeof command, "for f in '%s'/*.l0_usage; do printf 'junk' > \"$f\"; done",
             sc.cache);
    cr_assert_eq(system(command), 0);
    probe_run(true, NULL, ARGS("--spirv", SAXPY, "--native-out", in_scratch("after.bin")));
    assert_module_works("saxpy");
    assert_lookups(0, 1, 0);
    cr_assert_eq(count_of(run.err, "ignoring usage list"), 1, "stderr: %s", run.err);
    assert_same_file(in_scratch("cold.bin"), in_scratch("after.bin"));

    probe_run(true, ENV("NEO_CACHE_PREFETCH=0"), ARGS("--spirv", SAXPY));
    assert_lookups(0, 1, 0);
    cr_assert_eq(count_of(run.err, "prefetch:"), 0, "stderr: %s", run.err);
}
