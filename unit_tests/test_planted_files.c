/* The hostile-peer matrix for planted files (RELIABILITY.md, "Planted
 * files"): for every file a peer can plant in a shared cache directory
 * besides entries and config.file (test_faults_entries.c and
 * test_faults_config.c have those) -- recipes, SPIR-V, usage lists, the
 * stats file, zecache.accounting, and bundles handed to an import -- and
 * every kind of bad file
 * (garbage, truncated, a huge declared size, another key's valid file, a
 * symlink, a directory, a FIFO, zero length), one case that shows: bounded
 * time (a watchdog), bounded memory (VmHWM growth, reset before each case),
 * what a reader gets (a miss with a reason, never another file's bytes),
 * that the cache keeps serving and counting exactly, and the failure logged
 * where the core logs it. */
#include <criterion/criterion.h>

#include "../source/local/disk_blob_refs.h"
#include "cache_test_support.h"
#include "fault_test_support.h"
#include "zecache/bundle.h"
#include "zecache/disk_figures.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_recipes.h"
#include "zecache/disk_usage_list.h"
#include "zecache/log.h"
#include "zecache/pack.h"
#include "zecache/recipe.h"
#include "zecache/sealed.h"
#include "zecache/stats.h"

/* The huge file of the running test, freed even when a case fails. */
static uint8_t *pf_huge;

static void pf_finish(void)
{
    free(pf_huge);
    pf_huge = NULL;
    ft_remove_root();
}

TestSuite(planted, .init = ft_make_root, .fini = pf_finish);

enum { VICTIM = 1, BYSTANDER = 2, WATCHDOG_S = 120, SPIRV_SIZE = 3000 };

/* No case may grow the process by more than this (VmHWM). */
#define PF_MEMORY_BOUND_KIB (64 * 1024)

typedef enum pf_kind {
    PF_GARBAGE,
    PF_TRUNCATED,
    PF_WRONG_KEY, /* another key's (program's, SPIR-V's) valid file */
    PF_SYMLINK,   /* to a valid file of this name outside the cache */
    PF_DIRECTORY,
    PF_FIFO,
    PF_ZERO,
    PF_HUGE, /* a container honestly declaring the format's largest content */
    PF_KINDS,
} pf_kind;

static const char *const kind_names[PF_KINDS] = {
    "garbage",   "truncated", "another key's", "symlink",
    "directory", "FIFO",      "zero length",   "huge declared size",
};

static bool pf_regular(pf_kind kind)
{
    return kind != PF_SYMLINK && kind != PF_DIRECTORY && kind != PF_FIFO;
}

/* ---- measuring a case ---- */

static uint64_t pf_status_kib(const char *field)
{
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t kib = 0;
    size_t length = strlen(field);
    while (status != NULL && fgets(line, sizeof line, status) != NULL)
        if (strncmp(line, field, length) == 0)
            kib = strtoull(line + length + 1, NULL, 10);
    if (status != NULL)
        fclose(status);
    return kib;
}

typedef struct pf_watch {
    uint64_t rss_kib; /* when the case started; VmHWM was reset to it */
    int saved_stderr;
    char log_path[PATH_MAX];
} pf_watch;

/* Resets the high-water mark, starts the watchdog, sends the core's log to
 * a file. */
static void pf_watch_start(pf_watch *watch)
{
    FILE *clear = fopen("/proc/self/clear_refs", "w");
    cr_assert_not_null(clear, "resetting VmHWM needs /proc/self/clear_refs");
    fputs("5", clear);
    fclose(clear);
    watch->rss_kib = pf_status_kib("VmRSS:");
    alarm(WATCHDOG_S); /* SIGALRM ends the test: bounded time */
    snprintf(watch->log_path, sizeof watch->log_path, "%s/log", ft_root);
    fflush(stderr);
    watch->saved_stderr = dup(2);
    int fd = open(watch->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    dup2(fd, 2);
    close(fd);
    zc_log_set_enabled(true);
}

/* Stops it all; returns the growth in KiB, log gets what was logged. */
static uint64_t pf_watch_stop(pf_watch *watch, char *log, size_t log_size)
{
    zc_log_set_enabled(false);
    fflush(stderr);
    dup2(watch->saved_stderr, 2);
    close(watch->saved_stderr);
    alarm(0);
    t_read_text(watch->log_path, log, log_size);
    uint64_t hwm = pf_status_kib("VmHWM:");
    return hwm > watch->rss_kib ? hwm - watch->rss_kib : 0;
}

static void pf_assert_bounded(uint64_t growth_kib, uint64_t bound_kib, const char *what,
                              pf_kind kind)
{
    cr_log_info("%s, %s: +%llu KiB", what, kind_names[kind], (unsigned long long)growth_kib);
    cr_assert_leq(growth_kib, bound_kib, "%s, %s: the process grew by %llu KiB", what,
                  kind_names[kind], (unsigned long long)growth_kib);
}

/* ---- a cache with two entries, each with its recipe and SPIR-V ---- */

static void pf_new_cache(const char *what, pf_kind kind)
{
    snprintf(ft_cache, sizeof ft_cache, "%s/%s_%d", ft_root, what, (int)kind);
}

static void pf_spirv(uint64_t n, uint8_t sha256[32], uint8_t **blob, size_t *blob_size)
{
    uint8_t spirv[SPIRV_SIZE];
    t_fill_random(spirv, sizeof spirv, n + 900);
    cr_assert_eq(zc_spirv_blob_encode(spirv, sizeof spirv, 1, sha256, blob, blob_size), ZC_OK);
}

/* Key n's recipe, naming SPIR-V number spirv_n. */
static uint8_t *pf_recipe_naming(uint64_t n, uint64_t spirv_n, size_t *size)
{
    zc_recipe_input input = {.spirv_size = SPIRV_SIZE, .flags = (char *)"-O2"};
    uint8_t *blob;
    size_t blob_size;
    pf_spirv(spirv_n, input.spirv_sha256, &blob, &blob_size);
    free(blob);
    zc_recipe recipe = {.key = fc_key(n),
                        .device_name = (char *)"planted device",
                        .driver_version = (char *)"1.0",
                        .input_count = 1,
                        .inputs = &input};
    uint8_t *bytes = NULL;
    cr_assert_eq(zc_recipe_encode(&recipe, 1, &bytes, size), ZC_OK);
    return bytes;
}

static uint8_t *pf_recipe(uint64_t n, size_t *size)
{
    return pf_recipe_naming(n, n, size);
}

static void pf_store_and_record_naming(zc_disk_tier *tier, uint64_t n, uint64_t spirv_n)
{
    ft_store(tier, n);
    zc_input_blob blob;
    uint8_t *blob_bytes;
    pf_spirv(spirv_n, blob.sha256, &blob_bytes, &blob.size);
    blob.bytes = blob_bytes;
    size_t size;
    uint8_t *recipe = pf_recipe_naming(n, spirv_n, &size);
    zc_key key = fc_key(n);
    cr_assert_eq(zc_disk_tier_record(tier, &key, recipe, size, &blob, 1), ZC_OK);
    free(recipe);
    free(blob_bytes);
}

static void pf_store_and_record(zc_disk_tier *tier, uint64_t n)
{
    pf_store_and_record_naming(tier, n, n);
}

static zc_disk_tier *pf_open_filled(void)
{
    zc_disk_tier *tier = ft_open(1 << 20, NULL);
    pf_store_and_record(tier, VICTIM);
    pf_store_and_record(tier, BYSTANDER);
    return tier;
}

static void pf_blob_path(uint64_t n, char *path)
{
    uint8_t sha[32], *blob;
    size_t size;
    pf_spirv(n, sha, &blob, &size);
    free(blob);
    zc_key as_key = {0};
    memcpy(as_key.bytes, sha, 32);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&as_key, hex);
    snprintf(path, PATH_MAX, "%s/%c/%c/%s%s", ft_cache, hex[0], hex[1], hex, ZC_SPIRV_SUFFIX);
}

/* Every regular counted file, walked: config.file must equal it. */
static uint64_t pf_counted;

static int pf_count_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    const char *name = path + ftw->base;
    if (type != FTW_F || !S_ISREG(st->st_mode) || ftw->level != 3)
        return 0;
    if (ft_has_suffix(name, ZC_ENTRY_SUFFIX) || ft_has_suffix(name, ZC_RECIPE_SUFFIX) ||
        ft_has_suffix(name, ZC_SPIRV_SUFFIX))
        pf_counted += (uint64_t)st->st_size;
    else if (ft_has_suffix(name, ZC_TRACE_SUFFIX))
        pf_counted += ft_trace_counted_size(path, st);
    return 0;
}

/* The cache still serves both entries with their bytes, the bystander's
 * recorded inputs are intact, and config.file is exact. */
static void pf_assert_cache_intact(zc_disk_tier *tier, const char *what, pf_kind kind)
{
    ft_assert_hit(tier, VICTIM);
    ft_assert_hit(tier, BYSTANDER);
    zc_key key = fc_key(BYSTANDER);
    uint8_t *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(zc_disk_tier_read_recipe(tier, &key, &bytes, &size), ZC_OK);
    zc_recipe recipe;
    char reason[256] = "";
    cr_assert_eq(zc_recipe_decode(bytes, size, &key, &recipe, reason, sizeof reason), ZC_OK,
                 "%s, %s: the bystander's recipe: %s", what, kind_names[kind], reason);
    free(bytes);
    uint8_t *spirv = NULL;
    size_t spirv_size = 0;
    cr_assert_eq(zc_disk_tier_read_blob(tier, recipe.inputs[0].spirv_sha256, &bytes, &size), ZC_OK);
    cr_assert_eq(zc_spirv_blob_decode(bytes, size, recipe.inputs[0].spirv_sha256, &spirv,
                                      &spirv_size, reason, sizeof reason),
                 ZC_OK, "%s, %s: the bystander's SPIR-V: %s", what, kind_names[kind], reason);
    free(spirv);
    free(bytes);
    zc_recipe_free(&recipe);
    pf_counted = 0;
    cr_assert_eq(nftw(ft_cache, pf_count_one, 16, FTW_PHYS), 0);
    uint64_t recorded = 0;
    cr_assert(ft_config_value(&recorded), "%s, %s: config.file holds no value", what,
              kind_names[kind]);
    cr_assert_eq(recorded, pf_counted, "%s, %s: config.file %llu, counted files %llu", what,
                 kind_names[kind], (unsigned long long)recorded, (unsigned long long)pf_counted);
    cr_assert_eq(ft_take_census().temps, 0, "%s, %s: temp files left", what, kind_names[kind]);
}

/* ---- planting ---- */

/* A sealed container (sealed.h) honestly declaring the largest content the
 * format allows: zeros, which compress to a few KiB. Made once per magic. */
static uint8_t *pf_huge_sealed(const char *magic, const uint8_t id[32], size_t *size)
{
    uint8_t *zeros = calloc(1, ZC_SEALED_MAX_CONTENT);
    cr_assert_not_null(zeros);
    uint8_t *out = NULL;
    cr_assert_eq(zc_sealed_encode(magic, id, zeros, ZC_SEALED_MAX_CONTENT, 1, &out, size), ZC_OK);
    free(zeros);
    return out;
}

/* What lies outside the cache, where a planted symlink points. */
static void pf_outside_path(char *path)
{
    snprintf(path, PATH_MAX, "%s/outside_file", ft_root);
}

/* Plants kind at path; valid is what belongs there, other another key's
 * valid file, huge the huge container. */
static void pf_plant(const char *path, pf_kind kind, const uint8_t *valid, size_t valid_size,
                     const uint8_t *other, size_t other_size, const uint8_t *huge, size_t huge_size)
{
    t_remove_tree(path); /* what the previous case planted, of whatever kind */
    uint8_t garbage[777];
    t_fill_random(garbage, sizeof garbage, 4242);
    char outside[PATH_MAX], inside[PATH_MAX + 16];
    switch (kind) {
    case PF_GARBAGE:
        ft_write_file(path, garbage, sizeof garbage);
        break;
    case PF_TRUNCATED:
        ft_write_file(path, valid, valid_size / 2);
        break;
    case PF_HUGE:
        ft_write_file(path, huge, huge_size);
        break;
    case PF_WRONG_KEY:
        ft_write_file(path, other, other_size);
        break;
    case PF_SYMLINK:
        pf_outside_path(outside);
        unlink(outside);
        ft_write_file(outside, valid, valid_size);
        cr_assert_eq(symlink(outside, path), 0);
        break;
    case PF_DIRECTORY:
        cr_assert_eq(mkdir(path, 0700), 0);
        snprintf(inside, sizeof inside, "%s/inside", path);
        ft_write_file(inside, valid, valid_size);
        break;
    case PF_FIFO:
        cr_assert_eq(mkfifo(path, 0600), 0);
        break;
    default:
        ft_write_file(path, "", 0);
        break;
    }
}

/* Non-regular plants are never followed nor emptied. */
static void pf_assert_left_alone(const char *path, pf_kind kind, const uint8_t *valid,
                                 size_t valid_size)
{
    char other[PATH_MAX + 16];
    struct stat st;
    if (kind == PF_SYMLINK) {
        cr_assert_eq(lstat(path, &st), 0);
        cr_assert(S_ISLNK(st.st_mode), "the symlink is still a symlink");
        pf_outside_path(other);
    } else if (kind == PF_DIRECTORY) {
        snprintf(other, sizeof other, "%s/inside", path);
    } else {
        return;
    }
    size_t size;
    uint8_t *kept = ft_read_file(other, &size);
    cr_assert_eq(size, valid_size, "%s: what lies behind it is untouched", kind_names[kind]);
    cr_assert_arr_eq(kept, valid, size);
    free(kept);
}

static void pf_assert_logged(const char *log, const char *expected, const char *what, pf_kind kind)
{
    cr_assert_not_null(strstr(log, expected), "%s, %s: no \"%s\" in the log: %s", what,
                       kind_names[kind], expected, log);
}

/* What every case ends with: the plant at path (NULL: replaced since, and
 * checked before) left alone if it is no regular file, the cache intact. */
static void pf_end_case(zc_disk_tier *tier, const char *what, const char *path, pf_kind kind,
                        uint8_t *valid, size_t valid_size, uint8_t *other)
{
    if (path != NULL)
        pf_assert_left_alone(path, kind, valid, valid_size);
    pf_assert_cache_intact(tier, what, kind);
    free(valid);
    free(other);
    zc_disk_tier_close(tier);
}

typedef void (*pf_case_fn)(pf_kind kind, const uint8_t *huge, size_t huge_size);

/* Every kind, with huge (freed by the suite, even when a case fails). */
static void pf_each_kind(pf_case_fn run, uint8_t *huge, size_t huge_size)
{
    pf_huge = huge;
    for (int kind = 0; kind < PF_KINDS; kind++)
        run((pf_kind)kind, huge, huge_size);
}

/* ---- recipes ---- */

/* The reader (prewarm, export) and every sweep (eviction, trim) meet a
 * planted recipe: the reader gets a miss, the sweep drops a regular bad one
 * (its entry stays) and ignores anything else. */
static void pf_recipe_case(pf_kind kind, const uint8_t *huge, size_t huge_size)
{
    pf_new_cache("recipe", kind);
    zc_disk_tier *tier = pf_open_filled();
    char path[PATH_MAX];
    ft_entry_path(path, VICTIM, ZC_RECIPE_SUFFIX);
    size_t valid_size, other_size;
    uint8_t *valid = pf_recipe(VICTIM, &valid_size), *other = pf_recipe(BYSTANDER, &other_size);
    pf_plant(path, kind, valid, valid_size, other, other_size, huge, huge_size);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);

    pf_watch watch;
    pf_watch_start(&watch);
    zc_key key = fc_key(VICTIM);
    uint8_t *bytes = NULL;
    size_t size = 0;
    char reason[256] = "";
    zc_status read = zc_disk_tier_read_recipe(tier, &key, &bytes, &size);
    zc_status decoded = ZC_MISS;
    zc_recipe recipe;
    if (read == ZC_OK)
        decoded = zc_recipe_decode(bytes, size, &key, &recipe, reason, sizeof reason);
    free(bytes);
    zc_status swept = zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL);
    char log[8192];
    uint64_t growth = pf_watch_stop(&watch, log, sizeof log);

    cr_assert(read == ZC_OK || read == ZC_ERR_IO, "recipe, %s: read %s", kind_names[kind],
              zc_status_name(read));
    cr_assert_eq(decoded, ZC_MISS, "recipe, %s: the reader got a recipe", kind_names[kind]);
    cr_assert(read != ZC_OK || reason[0] != '\0', "recipe, %s: a miss without a reason",
              kind_names[kind]);
    cr_assert_eq(swept, ZC_OK, "recipe, %s: the sweep: %s", kind_names[kind],
                 zc_status_name(swept));
    pf_assert_bounded(growth, PF_MEMORY_BOUND_KIB, "recipe", kind);
    if (pf_regular(kind) && kind != PF_WRONG_KEY) {
        cr_assert(!t_exists(path), "recipe, %s: the sweep kept it", kind_names[kind]);
        pf_assert_logged(log, "damaged recorded inputs", "recipe", kind);
    }
    pf_end_case(tier, "recipe", path, kind, valid, valid_size, other);
}

Test(planted, recipes, .timeout = 600)
{
    zc_key key = fc_key(VICTIM);
    size_t huge_size;
    uint8_t *huge = pf_huge_sealed(ZC_RECIPE_MAGIC, key.bytes, &huge_size);
    pf_each_kind(pf_recipe_case, huge, huge_size);
}

/* ---- SPIR-V ---- */

/* A planted SPIR-V where a recipe's input should be: its reader gets a miss
 * (the content must hash to the name), a sweep keeps what a recipe names
 * and never reads it. */
static void pf_blob_case(pf_kind kind, const uint8_t *huge, size_t huge_size)
{
    pf_new_cache("spirv", kind);
    zc_disk_tier *tier = pf_open_filled();
    char path[PATH_MAX];
    pf_blob_path(VICTIM, path);
    uint8_t sha[32], other_sha[32], *valid, *other;
    size_t valid_size, other_size;
    pf_spirv(VICTIM, sha, &valid, &valid_size);
    pf_spirv(BYSTANDER, other_sha, &other, &other_size);
    pf_plant(path, kind, valid, valid_size, other, other_size, huge, huge_size);
    cr_assert_eq(zc_disk_tier_repair_accounting(tier, NULL), ZC_OK);

    pf_watch watch;
    pf_watch_start(&watch);
    zc_status swept = zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL);
    char log[8192];
    uint64_t sweep_growth = pf_watch_stop(&watch, log, sizeof log);
    pf_watch_start(&watch);
    uint8_t *bytes = NULL, *spirv = NULL;
    size_t size = 0, spirv_size = 0;
    char reason[256] = "";
    zc_status read = zc_disk_tier_read_blob(tier, sha, &bytes, &size);
    zc_status decoded = ZC_MISS;
    if (read == ZC_OK)
        decoded =
            zc_spirv_blob_decode(bytes, size, sha, &spirv, &spirv_size, reason, sizeof reason);
    free(bytes);
    free(spirv);
    uint64_t read_growth = pf_watch_stop(&watch, log, sizeof log);

    cr_assert_eq(swept, ZC_OK, "SPIR-V, %s: the sweep: %s", kind_names[kind],
                 zc_status_name(swept));
    pf_assert_bounded(sweep_growth, PF_MEMORY_BOUND_KIB, "SPIR-V (sweep)", kind);
    cr_assert(read == ZC_OK || read == ZC_ERR_IO, "SPIR-V, %s: read %s", kind_names[kind],
              zc_status_name(read));
    cr_assert_eq(decoded, ZC_MISS, "SPIR-V, %s: the reader got SPIR-V", kind_names[kind]);
    cr_assert(read != ZC_OK || reason[0] != '\0', "SPIR-V, %s: a miss without a reason",
              kind_names[kind]);
    /* What decoding one SPIR-V may cost is the format's cap (sealed.h); the
     * bound by what its recipes declare is prewarm's (issue 23). */
    pf_assert_bounded(read_growth, ZC_SEALED_MAX_CONTENT / 1024 + PF_MEMORY_BOUND_KIB,
                      "SPIR-V (read)", kind);
    cr_assert(t_exists(path), "SPIR-V, %s: a named SPIR-V's place is kept", kind_names[kind]);
    pf_end_case(tier, "SPIR-V", path, kind, valid, valid_size, other);
}

/* Every kind, with the huge container of magic for SPIR-V number n. */
static void pf_each_kind_of_spirv(uint64_t n, const char *magic, pf_case_fn run)
{
    uint8_t sha[32], *blob;
    size_t size, huge_size;
    pf_spirv(n, sha, &blob, &size);
    free(blob);
    uint8_t *huge = pf_huge_sealed(magic, sha, &huge_size);
    pf_each_kind(run, huge, huge_size);
}

Test(planted, spirv, .timeout = 600)
{
    pf_each_kind_of_spirv(VICTIM, ZC_SPIRV_MAGIC, pf_blob_case);
}

/* ---- SPIR-V users' counts ---- */

/* A count file (disk_blob_refs.h) of SPIR-V number n holding count. */
static uint8_t *pf_refs(uint64_t n, uint64_t count, size_t *size)
{
    uint8_t sha[32], *blob, content[8], *out = NULL;
    size_t blob_size;
    pf_spirv(n, sha, &blob, &blob_size);
    free(blob);
    for (size_t i = 0; i < sizeof content; i++)
        content[i] = (uint8_t)(count >> (8 * i));
    cr_assert_eq(zc_sealed_encode(ZC_SPIRV_REFS_MAGIC, sha, content, sizeof content, 1, &out, size),
                 ZC_OK);
    return out;
}

static void pf_shard_of(uint64_t n, char shard[4])
{
    char path[PATH_MAX];
    ft_entry_path(path, n, "");
    const char *name = strrchr(path, '/');
    snprintf(shard, 4, "%.3s", name - 3);
}

/* Two keys from 3 on sharing a shard that the victim's and bystander's
 * do not: the sharer, and the newcomer whose store evicts it. */
static void pf_shard_pair(uint64_t *sharer, uint64_t *newcomer)
{
    char victim[4], bystander[4], shards[64][4];
    pf_shard_of(VICTIM, victim);
    pf_shard_of(BYSTANDER, bystander);
    for (uint64_t n = 3;; n++) {
        pf_shard_of(n, shards[n % 64]);
        for (uint64_t m = n > 63 ? n - 63 : 3; m < n; m++)
            if (strcmp(shards[m % 64], shards[n % 64]) == 0 &&
                strcmp(shards[n % 64], victim) != 0 && strcmp(shards[n % 64], bystander) != 0) {
                *sharer = m;
                *newcomer = n;
                return;
            }
    }
}

/* The bystander's SPIR-V is named by a sharer too, and a store at the limit
 * evicts the sharer from its shard: whatever is planted as the SPIR-V's
 * count, the SPIR-V stays for the bystander. A valid count (2) would go to
 * 1; a planted one is no count, and leaves it to the full sweep. */
static void pf_refs_case(pf_kind kind, const uint8_t *huge, size_t huge_size)
{
    pf_new_cache("refs", kind);
    uint64_t sharer, newcomer;
    pf_shard_pair(&sharer, &newcomer);
    zc_disk_tier *tier = pf_open_filled();
    uint64_t filled = 0, with_newcomer = 0, before = 0;
    cr_assert(ft_config_value(&filled));
    ft_store(tier, newcomer); /* to learn what its store needs */
    cr_assert(ft_config_value(&with_newcomer));
    char path[PATH_MAX];
    ft_entry_path(path, newcomer, ZC_ENTRY_SUFFIX);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, path + strlen(ft_cache) + 1), ZC_OK);
    pf_store_and_record_naming(tier, sharer, BYSTANDER);
    ft_entry_path(path, sharer, ZC_ENTRY_SUFFIX);
    struct timespec old[2] = {{1000000, 0}, {1000000, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);
    cr_assert(ft_config_value(&before));
    zc_disk_tier_close(tier);

    char refs_path[PATH_MAX];
    pf_blob_path(BYSTANDER, refs_path);
    snprintf(strrchr(refs_path, '.'), 16, "%s", ZC_SPIRV_REFS_SUFFIX);
    size_t valid_size, other_size;
    uint8_t *valid = pf_refs(BYSTANDER, 2, &valid_size), *other = pf_refs(VICTIM, 1, &other_size);
    pf_plant(refs_path, kind, valid, valid_size, other, other_size, huge, huge_size);
    /* Room for the newcomer but for one byte: the sharer alone goes. */
    tier = ft_open(before + (with_newcomer - filled) - 1, NULL);
    pf_watch watch;
    pf_watch_start(&watch);
    ft_store(tier, newcomer);
    char log[8192];
    uint64_t growth = pf_watch_stop(&watch, log, sizeof log);

    pf_assert_bounded(growth, PF_MEMORY_BOUND_KIB, "SPIR-V users", kind);
    cr_assert_eq(zc_disk_tier_evictions(tier), 1, "SPIR-V users, %s: %llu evictions",
                 kind_names[kind], (unsigned long long)zc_disk_tier_evictions(tier));
    cr_assert_not(t_exists(path), "SPIR-V users, %s: the sharer stayed", kind_names[kind]);
    pf_assert_logged(log, "is no count", "SPIR-V users", kind);
    pf_end_case(tier, "SPIR-V users", refs_path, kind, valid, valid_size, other);
}

Test(planted, spirv_users_counts, .timeout = 600)
{
    pf_each_kind_of_spirv(BYSTANDER, ZC_SPIRV_REFS_MAGIC, pf_refs_case);
}

/* ---- usage lists ---- */

static void pf_program(int p, uint8_t program[32])
{
    memset(program, 0x60 + p, 32);
}

static uint8_t *pf_usage_file(int p, size_t *size)
{
    uint8_t program[32];
    pf_program(p, program);
    zc_key keys[2] = {fc_key(VICTIM), fc_key(BYSTANDER)};
    uint8_t *bytes = NULL;
    cr_assert_eq(zc_sealed_encode(ZC_USAGE_MAGIC, program, keys, sizeof keys, 1, &bytes, size),
                 ZC_OK);
    return bytes;
}

/* A planted list reads as none (a prefetch skipped, never another list's
 * keys), and the program's next list replaces it where it can. */
static void pf_usage_case(pf_kind kind, const uint8_t *huge, size_t huge_size)
{
    pf_new_cache("usage", kind);
    zc_disk_tier *tier = pf_open_filled();
    uint8_t program[32];
    pf_program(0, program);
    zc_key id = {0};
    memcpy(id.bytes, program, 32);
    char hex[ZC_KEY_HEX_SIZE], path[PATH_MAX];
    zc_key_to_hex(&id, hex);
    snprintf(path, sizeof path, "%s/%s%s", ft_cache, hex, ZC_USAGE_SUFFIX);
    size_t valid_size, other_size;
    uint8_t *valid = pf_usage_file(0, &valid_size), *other = pf_usage_file(1, &other_size);
    pf_plant(path, kind, valid, valid_size, other, other_size, huge, huge_size);

    pf_watch watch;
    pf_watch_start(&watch);
    zc_key keys[ZC_USAGE_LIST_MAX];
    size_t count = 99;
    zc_status read = zc_disk_tier_read_usage(tier, program, keys, &count);
    zc_status swept = zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL);
    char log[8192];
    uint64_t growth = pf_watch_stop(&watch, log, sizeof log);

    cr_assert_eq(read, ZC_MISS, "usage list, %s: %s", kind_names[kind], zc_status_name(read));
    cr_assert_eq(count, 0);
    cr_assert_eq(swept, ZC_OK);
    pf_assert_bounded(growth, PF_MEMORY_BOUND_KIB, "usage list", kind);
    if (pf_regular(kind))
        pf_assert_logged(log, "ignoring usage list", "usage list", kind);
    pf_assert_left_alone(path, kind, valid, valid_size);
    zc_key written[1] = {fc_key(BYSTANDER)};
    zc_status write = zc_disk_tier_write_usage(tier, program, written, 1);
    cr_assert_eq(write, kind == PF_DIRECTORY ? ZC_ERR_IO : ZC_OK, "usage list, %s: write %s",
                 kind_names[kind], zc_status_name(write));
    if (write == ZC_OK) {
        cr_assert_eq(zc_disk_tier_read_usage(tier, program, keys, &count), ZC_OK);
        cr_assert_eq(count, 1);
        cr_assert(zc_key_equal(&keys[0], &written[0]));
    }
    pf_end_case(tier, "usage list", NULL, kind, valid, valid_size, other);
}

Test(planted, usage_lists, .timeout = 600)
{
    uint8_t program[32];
    pf_program(0, program);
    size_t huge_size;
    uint8_t *huge = pf_huge_sealed(ZC_USAGE_MAGIC, program, &huge_size);
    pf_each_kind(pf_usage_case, huge, huge_size);
}

/* ---- the stats file ---- */

static const char other_stats[] = "zecache-stats 1\nmemory_hits 7\nend\n";

/* A planted stats file reads as zero counters (never made-up ones), and
 * the next merge replaces a regular one and refuses anything else. */
static void pf_stats_case(pf_kind kind)
{
    pf_new_cache("stats", kind);
    zc_disk_tier *tier = pf_open_filled();
    zc_stats_counters delta;
    memset(&delta, 0, sizeof delta);
    delta.disk_hits = 3;
    cr_assert_eq(zc_stats_merge(tier, &delta), ZC_OK);
    char path[PATH_MAX];
    ft_path(path, ZC_STATS_FILE_NAME);
    size_t valid_size;
    uint8_t *valid = ft_read_file(path, &valid_size);
    /* Huge: a sparse file of 1 GiB, which no reader may take in. */
    pf_plant(path, kind, valid, valid_size, (const uint8_t *)other_stats, strlen(other_stats),
             (const uint8_t *)"", 0);
    if (kind == PF_HUGE)
        cr_assert_eq(truncate(path, (off_t)1 << 30), 0);

    pf_watch watch;
    pf_watch_start(&watch);
    zc_stats_counters counters;
    zc_status read = zc_stats_read(tier, &counters);
    zc_status merged = zc_stats_merge(tier, &delta);
    char log[8192];
    uint64_t growth = pf_watch_stop(&watch, log, sizeof log);

    pf_assert_bounded(growth, PF_MEMORY_BOUND_KIB, "stats", kind);
    /* Empty is a fresh file; a symlink is not opened; anything else that is
     * not a valid stats file is garbage. */
    zc_status expected_read = kind == PF_ZERO || kind == PF_WRONG_KEY ? ZC_OK
                              : kind == PF_SYMLINK                    ? ZC_ERR_IO
                                                                      : ZC_MISS;
    cr_assert_eq(read, expected_read, "stats, %s: read %s", kind_names[kind], zc_status_name(read));
    if (kind == PF_WRONG_KEY) /* a valid file is the directory's counters, whoever wrote it */
        cr_assert_eq(counters.memory_hits, 7);
    else
        cr_assert_eq(counters.disk_hits, 0, "stats, %s: made-up counters", kind_names[kind]);
    if (read != ZC_OK)
        pf_assert_logged(log, "stats file", "stats", kind);
    cr_assert_eq(merged, pf_regular(kind) ? ZC_OK : ZC_ERR_IO, "stats, %s: merge %s",
                 kind_names[kind], zc_status_name(merged));
    if (merged == ZC_OK) {
        cr_assert_eq(zc_stats_read(tier, &counters), ZC_OK);
        cr_assert_eq(counters.disk_hits, 3, "stats, %s: the merge replaced garbage",
                     kind_names[kind]);
    }
    pf_end_case(tier, "stats", path, kind, valid, valid_size, NULL);
}

Test(planted, stats_file, .timeout = 600)
{
    for (int kind = 0; kind < PF_KINDS; kind++)
        pf_stats_case((pf_kind)kind);
}

/* ---- zecache.accounting ---- */

/* Whatever lies there, a store still succeeds and zecache stats' figures
 * are a scan's: rebuilt from one (logged), into a regular file only. */
static void pf_accounting_case(pf_kind kind, const uint8_t *huge, size_t huge_size)
{
    pf_new_cache("accounting", kind);
    zc_disk_tier *tier = pf_open_filled();
    char path[PATH_MAX];
    ft_path(path, ZC_ACCOUNTING_FILE_NAME);
    size_t valid_size;
    uint8_t *valid = ft_read_file(path, &valid_size);
    zc_disk_figures figures, scanned;
    cr_assert_eq(zc_disk_parse_accounting(valid, valid_size, &figures, NULL, 0), ZC_OK);
    figures.counted.entry_bytes += 7; /* valid, and 7 bytes off config.file */
    figures.counted.total += 7;
    uint8_t other[ZC_ACCOUNTING_FILE_SIZE];
    zc_disk_encode_accounting(&figures, other);
    pf_plant(path, kind, valid, valid_size, other, sizeof other, huge, huge_size);

    pf_watch watch;
    pf_watch_start(&watch);
    ft_store(tier, 3); /* asserts ZC_OK */
    uint64_t recorded;
    bool recorded_valid, rebuilt;
    zc_status status = zc_disk_tier_figures(tier, &figures, &recorded, &recorded_valid, &rebuilt);
    char log[8192];
    uint64_t growth = pf_watch_stop(&watch, log, sizeof log);

    pf_assert_bounded(growth, PF_MEMORY_BOUND_KIB, "accounting", kind);
    cr_assert_eq(status, ZC_OK, "accounting, %s: %s", kind_names[kind], zc_status_name(status));
    cr_assert(rebuilt, "accounting, %s: trusted", kind_names[kind]);
    pf_assert_logged(log, ZC_ACCOUNTING_FILE_NAME, "accounting", kind);
    cr_assert_eq(zc_disk_tier_scanned_figures(tier, &scanned), ZC_OK);
    cr_assert_arr_eq(&figures, &scanned, sizeof scanned, "accounting, %s: not a scan's figures",
                     kind_names[kind]);
    cr_assert(recorded_valid && recorded == scanned.counted.total);
    /* Rewritten when it was a regular file, and kept up since. */
    zc_status kept = zc_disk_tier_accounted_figures(tier, &figures, NULL, 0);
    cr_assert_eq(kept, pf_regular(kind) ? ZC_OK : ZC_MISS, "accounting, %s: %s", kind_names[kind],
                 zc_status_name(kept));
    pf_end_case(tier, "accounting", path, kind, valid, valid_size, NULL);
}

Test(planted, accounting_file, .timeout = 600)
{
    size_t huge_size = 4096;
    pf_each_kind(pf_accounting_case, calloc(1, huge_size), huge_size);
}

/* ---- bundles handed to an import ---- */

/* A bundle of VICTIM's entry, under key (VICTIM, or another key). */
static uint8_t *pf_bundle(uint64_t key_number, size_t *size)
{
    char *buffer = NULL;
    FILE *out = open_memstream(&buffer, size);
    zc_bundle_writer writer = {0};
    cr_assert_eq(zc_bundle_write_start(&writer, out), ZC_OK);
    size_t entry_size;
    uint8_t *entry = ft_encode(VICTIM, &entry_size);
    zc_key key = fc_key(key_number);
    cr_assert_eq(zc_bundle_write_entry(&writer, &key, entry, entry_size), ZC_OK);
    cr_assert_eq(zc_bundle_write_end(&writer), ZC_OK);
    zc_bundle_writer_close(&writer);
    fclose(out);
    free(entry);
    return (uint8_t *)buffer;
}

/* A header, then one item declaring the largest size an item may have,
 * then a few bytes: the reader must not allocate what is not there. */
static uint8_t *pf_huge_bundle(size_t *size)
{
    size_t valid_size;
    uint8_t *valid = pf_bundle(VICTIM, &valid_size);
    *size = ZC_BUNDLE_HEADER_SIZE + 32 + 8 + 100;
    uint8_t *bytes = calloc(1, *size);
    memcpy(bytes, valid, ZC_BUNDLE_HEADER_SIZE + 32);
    zc_put_le64(bytes + ZC_BUNDLE_HEADER_SIZE + 32, ZC_BUNDLE_MAX_ENTRY_SIZE);
    free(valid);
    return bytes;
}

/* The import's core: every item the reader gives is stored only if it
 * verifies under its key. Returns how many were stored. */
static int pf_import(zc_disk_tier *tier, FILE *in, zc_bundle_item *last, char *reason,
                     size_t reason_size)
{
    zc_bundle_reader reader = {0};
    int stored = 0;
    *last = ZC_BUNDLE_BAD;
    if (zc_bundle_read_start(&reader, in, reason, reason_size) == ZC_OK) {
        for (;;) {
            zc_key key;
            uint8_t *bytes = NULL;
            size_t size = 0;
            *last = zc_bundle_read_next(&reader, &key, &bytes, &size, reason, reason_size);
            if (*last != ZC_BUNDLE_ENTRY)
                break;
            char why[256];
            stored += zc_disk_tier_store_entry(tier, &key, bytes, size, why, sizeof why) == ZC_OK;
            free(bytes);
        }
    }
    zc_bundle_reader_close(&reader);
    return stored;
}

static void pf_bundle_case(pf_kind kind, const uint8_t *huge, size_t huge_size)
{
    pf_new_cache("bundle", kind);
    zc_disk_tier *tier = pf_open_filled();
    char rel[ZC_KEY_HEX_SIZE + 16], hex[ZC_KEY_HEX_SIZE];
    zc_key victim = fc_key(VICTIM);
    zc_key_to_hex(&victim, hex);
    snprintf(rel, sizeof rel, "%c/%c/%s%s", hex[0], hex[1], hex, ZC_ENTRY_SUFFIX);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, rel), ZC_OK, "the bundle would bring it back");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/planted.bundle", ft_root);
    size_t valid_size, other_size;
    uint8_t *valid = pf_bundle(VICTIM, &valid_size), *other = pf_bundle(3, &other_size);
    pf_plant(path, kind, valid, valid_size, other, other_size, huge, huge_size);

    pf_watch watch;
    pf_watch_start(&watch);
    /* A FIFO is opened without waiting for a writer (a pipe with none). */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *in = fd >= 0 ? fdopen(fd, "rb") : NULL;
    zc_bundle_item last = ZC_BUNDLE_BAD;
    char reason[256] = "";
    int stored = in != NULL ? pf_import(tier, in, &last, reason, sizeof reason) : 0;
    if (in != NULL)
        fclose(in);
    char log[8192];
    uint64_t growth = pf_watch_stop(&watch, log, sizeof log);

    pf_assert_bounded(growth, PF_MEMORY_BOUND_KIB, "bundle", kind);
    /* The symlink leads to a valid bundle the user named: that one imports. */
    int expected = kind == PF_SYMLINK ? 1 : 0;
    cr_assert_eq(stored, expected, "bundle, %s: %d entries stored", kind_names[kind], stored);
    if (kind == PF_SYMLINK)
        cr_assert_eq(last, ZC_BUNDLE_END);
    else if (kind != PF_WRONG_KEY)
        cr_assert(last == ZC_BUNDLE_BAD && reason[0] != '\0', "bundle, %s: %d without a reason",
                  kind_names[kind], last);
    if (stored == 0)
        ft_assert_miss(tier, VICTIM);
    ft_assert_miss(tier, 3); /* another key's bytes are never stored under its name */
    if (stored == 0)
        ft_store(tier, VICTIM);
    pf_assert_cache_intact(tier, "bundle", kind);
    free(valid);
    free(other);
    zc_disk_tier_close(tier);
}

Test(planted, bundles, .timeout = 600)
{
    size_t huge_size;
    uint8_t *huge = pf_huge_bundle(&huge_size);
    pf_each_kind(pf_bundle_case, huge, huge_size);
}

/* ---- packs named by NEO_CACHE_PACKS and by a file:// storage ---- */

/* A valid pack of key n's entry, as zecache pack writes it. */
static uint8_t *pf_pack(uint64_t n, size_t *size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/made.zcp", ft_root);
    FILE *out = fopen(path, "w+b");
    cr_assert_not_null(out);
    zc_pack_writer *writer = NULL;
    cr_assert_eq(zc_pack_write_start(out, NULL, &writer), ZC_OK);
    size_t entry_size;
    uint8_t *entry = ft_encode(n, &entry_size);
    zc_key key = fc_key(n);
    cr_assert_eq(zc_pack_write_entry(writer, &key, entry, entry_size), ZC_OK);
    cr_assert_eq(zc_pack_write_end(writer, NULL), ZC_OK);
    zc_pack_writer_free(writer);
    cr_assert_eq(fclose(out), 0);
    free(entry);
    uint8_t *bytes = ft_read_file(path, size);
    unlink(path);
    return bytes;
}

/* A sparse GiB whose header honestly declares the records that fill it:
 * the reader must refuse it at its first (zero) record, never holding the
 * index whole. */
static void pf_plant_huge_pack(const char *path)
{
    uint64_t size = UINT64_C(1) << 30;
    uint64_t count = (size - ZC_PACK_HEADER_SIZE - ZC_PACK_TAG_SIZE) / ZC_PACK_RECORD_SIZE;
    uint8_t header[ZC_PACK_HEADER_SIZE] = {0};
    memcpy(header, ZC_PACK_MAGIC, 8);
    zc_put_le32(header + 8, ZC_PACK_FORMAT_VERSION);
    zc_put_le64(header + 16, count);
    zc_put_le64(header + 24, size - ZC_PACK_TAG_SIZE - count * ZC_PACK_RECORD_SIZE);
    zc_put_le64(header + 32, size);
    ft_write_file(path, header, sizeof header);
    cr_assert_eq(truncate(path, (off_t)size), 0);
}

static zc_status pf_compile_victim(void *context, zc_artifact **out)
{
    ++*(int *)context;
    *out = fc_artifact(VICTIM, FT_MAX_BINARY);
    return ZC_OK;
}

/* VICTIM looked up through a cache on the directory (where it is not) with
 * the plant as its pack (packs) or its storage (remote): the outcome, the
 * counters, the log. */
static zc_lookup_outcome pf_pack_lookup(zc_disk_tier *tier, pf_kind kind, const char *packs,
                                        const char *remote, zc_cache_stats *stats, char *log,
                                        size_t log_size)
{
    char rel[ZC_KEY_HEX_SIZE + 16], hex[ZC_KEY_HEX_SIZE];
    zc_key victim = fc_key(VICTIM);
    zc_key_to_hex(&victim, hex);
    snprintf(rel, sizeof rel, "%c/%c/%s%s", hex[0], hex[1], hex, ZC_ENTRY_SUFFIX);
    zc_status removed = zc_disk_tier_remove_entry(tier, rel);
    cr_assert(removed == ZC_OK || removed == ZC_MISS);
    zc_config config = ft_config(ft_cache, 1 << 20);
    snprintf(config.packs, sizeof config.packs, "%s", packs);
    snprintf(config.remote, sizeof config.remote, "%s", remote);
    pf_watch watch;
    pf_watch_start(&watch);
    zc_cache *cache = NULL;
    cr_assert_eq(zc_cache_open(&config, &cache), ZC_OK);
    int compiles = 0;
    zc_artifact *artifact = NULL, *expected = fc_artifact(VICTIM, FT_MAX_BINARY);
    zc_lookup_outcome outcome;
    cr_assert_eq(zc_cache_get_or_compile(cache, &victim, NULL, pf_compile_victim, &compiles,
                                         &artifact, &outcome),
                 ZC_OK);
    *stats = t_cache_stats(cache);
    zc_cache_close(cache);
    uint64_t growth = pf_watch_stop(&watch, log, log_size);
    pf_assert_bounded(growth, PF_MEMORY_BOUND_KIB, packs[0] != '\0' ? "pack" : "pack storage",
                      kind);
    t_assert_same_artifact(artifact, expected);
    zc_artifact_unref(artifact);
    zc_artifact_unref(expected);
    cr_assert_eq(compiles, outcome == ZC_LOOKUP_COMPILED);
    return outcome;
}

static void pf_pack_case(pf_kind kind, const uint8_t *huge, size_t huge_size)
{
    (void)huge, (void)huge_size;
    pf_new_cache("pack", kind);
    zc_disk_tier *tier = pf_open_filled();
    char path[PATH_MAX], remote[PATH_MAX + 16], log[8192];
    snprintf(path, sizeof path, "%s/planted.zcp", ft_root);
    size_t valid_size, other_size;
    uint8_t *valid = pf_pack(VICTIM, &valid_size), *other = pf_pack(3, &other_size);
    pf_plant(path, kind, valid, valid_size, other, other_size, NULL, 0);
    if (kind == PF_HUGE)
        pf_plant_huge_pack(path);
    /* The symlink leads to a valid pack the user named: that one serves. */
    bool served = kind == PF_SYMLINK, refused = !served && kind != PF_WRONG_KEY;

    zc_cache_stats stats;
    zc_lookup_outcome outcome = pf_pack_lookup(tier, kind, path, "", &stats, log, sizeof log);
    cr_assert_eq(outcome, served ? ZC_LOOKUP_DISK_HIT : ZC_LOOKUP_COMPILED, "pack, %s: %d",
                 kind_names[kind], outcome);
    cr_assert_eq(stats.pack_hits, served);
    cr_assert_eq(stats.pack_rejected, refused, "pack, %s", kind_names[kind]);
    if (refused)
        pf_assert_logged(log, "; not used", "pack", kind);

    snprintf(remote, sizeof remote, "file://%s", path);
    outcome = pf_pack_lookup(tier, kind, "", remote, &stats, log, sizeof log);
    cr_assert_eq(outcome, served ? ZC_LOOKUP_REMOTE_HIT : ZC_LOOKUP_COMPILED,
                 "pack storage, %s: %d", kind_names[kind], outcome);
    cr_assert_eq(stats.remote_hits, served);
    cr_assert_eq(stats.remote_stores, 0, "a pack is never written");
    if (refused)
        pf_assert_logged(log, "not usable, left out", "pack storage", kind);
    pf_end_case(tier, "pack", kind == PF_HUGE ? NULL : path, kind, valid, valid_size, other);
}

Test(planted, packs, .timeout = 600)
{
    pf_each_kind(pf_pack_case, NULL, 0);
}
