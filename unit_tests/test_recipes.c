/* Recorded inputs in the core: the sealed container and the recipe refuse
 * every damage; on the disk tier a recipe needs its entry, SPIR-V is kept
 * once per content, everything is counted in config.file, and a SPIR-V blob
 * goes exactly when the last recipe naming it does. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "disk_test_support.h"
#include "test_support.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_recipes.h"
#include "zecache/recipe.h"
#include "zecache/sha256.h"

static char test_root[256];
static char cache_dir[512];

static void make_test_root(void)
{
    t_make_scratch(test_root, sizeof test_root, "/tmp/zc_recipe_test_XXXXXX", cache_dir,
                   sizeof cache_dir);
}

static void remove_test_root(void)
{
    t_remove_tree(test_root);
}

TestSuite(recipes, .init = make_test_root, .fini = remove_test_root);

static const char spirv_a[] = "\x03\x02\x23\x07 pretend SPIR-V module A, long enough to matter";
static const char spirv_b[] = "\x03\x02\x23\x07 pretend SPIR-V module B";

/* A recipe with one input (flags, two constants of two widths). */
static zc_recipe sample_recipe(const zc_key *key, const char *spirv, size_t size)
{
    static zc_recipe_input input;
    static zc_recipe_constant constants[2] = {{1, 4, {3, 0, 0, 0}},
                                              {2, 8, {5, 0, 0, 0, 0, 0, 0, 1}}};
    input = (zc_recipe_input){.spirv_size = size,
                              .flags = (char *)"-ze-opt-level=1 -g",
                              .has_constants = true,
                              .constant_count = 2,
                              .constants = constants};
    zc_sha256_digest(spirv, size, input.spirv_sha256);
    return (zc_recipe){.key = *key,
                       .format = 0,
                       .device_name = (char *)"Intel(R) Graphics [0xff20]",
                       .driver_version = (char *)"1.3.24595",
                       .input_count = 1,
                       .inputs = &input};
}

Test(recipes, a_recipe_reads_back_as_written)
{
    zc_key key = t_key(1);
    zc_recipe recipe = sample_recipe(&key, spirv_a, sizeof spirv_a);
    uint8_t *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, &size), ZC_OK);
    zc_recipe read;
    char reason[256];
    cr_assert_eq(zc_recipe_decode(bytes, size, &key, &read, reason, sizeof reason), ZC_OK, "%s",
                 reason);
    cr_assert(zc_key_equal(&read.key, &key));
    cr_assert_str_eq(read.device_name, recipe.device_name);
    cr_assert_str_eq(read.inputs[0].flags, "-ze-opt-level=1 -g");
    cr_assert_eq(read.inputs[0].constant_count, 2);
    cr_assert_eq(read.inputs[0].constants[1].width, 8);
    cr_assert_eq(read.inputs[0].constants[1].value[7], 1);
    cr_assert_eq(memcmp(read.inputs[0].spirv_sha256, recipe.inputs[0].spirv_sha256, 32), 0);
    zc_recipe_free(&read);
    zc_key other = t_key(2);
    cr_assert_eq(zc_recipe_decode(bytes, size, &other, &read, reason, sizeof reason), ZC_MISS);
    free(bytes);
}

/* Every single flipped byte and every cut is refused, with a reason. */
Test(recipes, every_damage_is_refused_with_a_reason)
{
    zc_key key = t_key(3);
    zc_recipe recipe = sample_recipe(&key, spirv_a, sizeof spirv_a);
    uint8_t *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, &size), ZC_OK);
    for (size_t i = 0; i < size; i++) {
        zc_recipe read;
        char reason[256] = "";
        bytes[i] ^= 0x40;
        cr_assert_eq(zc_recipe_decode(bytes, size, NULL, &read, reason, sizeof reason), ZC_MISS,
                     "byte %zu flipped was accepted", i);
        cr_assert_neq(reason[0], '\0');
        cr_assert_eq(zc_recipe_decode_inputs(bytes, size, NULL, &read, reason, sizeof reason),
                     ZC_MISS, "byte %zu flipped was accepted for the inputs", i);
        bytes[i] ^= 0x40;
        cr_assert_eq(zc_recipe_decode(bytes, i, NULL, &read, reason, sizeof reason), ZC_MISS,
                     "cut at %zu accepted", i);
    }
    free(bytes);
}

/* The reader's bound is checked against the declared size before anything
 * is allocated or decompressed: content one byte over it is refused with
 * the reason, content at it is returned. */
Test(recipes, a_container_over_the_readers_bound_is_refused)
{
    uint8_t id[32] = {7};
    uint8_t content[1000] = {0};
    uint8_t *sealed = NULL, *out = NULL;
    size_t sealed_size = 0, out_size = 0;
    cr_assert_eq(
        zc_sealed_encode(ZC_RECIPE_MAGIC, id, content, sizeof content, 3, &sealed, &sealed_size),
        ZC_OK);
    char reason[128] = "";
    cr_assert_eq(zc_sealed_decode(ZC_RECIPE_MAGIC, sealed, sealed_size, id, sizeof content - 1,
                                  &out, &out_size, NULL, reason, sizeof reason),
                 ZC_MISS);
    cr_assert_null(out);
    cr_assert_not_null(strstr(reason, "over the limit"), "%s", reason);
    cr_assert_eq(zc_sealed_decode(ZC_RECIPE_MAGIC, sealed, sealed_size, id, sizeof content, &out,
                                  &out_size, NULL, reason, sizeof reason),
                 ZC_OK);
    cr_assert_eq(out_size, sizeof content);
    free(out);
    free(sealed);
}

Test(recipes, a_spirv_blob_must_hold_the_content_its_name_says)
{
    uint8_t sha_a[32], sha_b[32], *blob_b = NULL, *spirv = NULL;
    uint8_t *blob_a = NULL;
    size_t size_a = 0, size_b = 0, spirv_size = 0;
    char reason[256] = "";
    cr_assert_eq(zc_spirv_blob_encode(spirv_a, sizeof spirv_a, 3, sha_a, &blob_a, &size_a), ZC_OK);
    cr_assert_eq(zc_spirv_blob_encode(spirv_b, sizeof spirv_b, 3, sha_b, &blob_b, &size_b), ZC_OK);
    cr_assert_eq(
        zc_spirv_blob_decode(blob_a, size_a, sha_a, &spirv, &spirv_size, reason, sizeof reason),
        ZC_OK);
    cr_assert_eq(spirv_size, sizeof spirv_a);
    cr_assert_eq(memcmp(spirv, spirv_a, spirv_size), 0);
    free(spirv);
    cr_assert_eq(
        zc_spirv_blob_decode(blob_b, size_b, sha_a, &spirv, &spirv_size, reason, sizeof reason),
        ZC_MISS);
    free(blob_a);
    free(blob_b);
}

/* ---- on the disk tier ---- */

static zc_disk_tier *open_tier(void)
{
    zc_config config = t_disk_config(cache_dir, 0, 3);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    return tier;
}

static void store_entry(zc_disk_tier *tier, const zc_key *key)
{
    zc_artifact *artifact = t_artifact(600, key->bytes[0]);
    cr_assert_eq(zc_disk_tier_store(tier, key, artifact, NULL), ZC_OK);
    zc_artifact_unref(artifact);
}

/* Records key's recipe with spirv as its one input. */
static zc_status record(zc_disk_tier *tier, const zc_key *key, const char *spirv, size_t size)
{
    zc_recipe recipe = sample_recipe(key, spirv, size);
    uint8_t *bytes = NULL, *blob_bytes = NULL;
    size_t bytes_size = 0;
    zc_input_blob blob;
    cr_assert_eq(zc_spirv_blob_encode(spirv, size, 3, blob.sha256, &blob_bytes, &blob.size), ZC_OK);
    blob.bytes = blob_bytes;
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, &bytes_size), ZC_OK);
    zc_status status = zc_disk_tier_record(tier, key, bytes, bytes_size, &blob, 1);
    free(bytes);
    free(blob_bytes);
    return status;
}

static size_t files_named(const char *suffix)
{
    char command[1024];
    snprintf(command, sizeof command, "find '%s' -name '*%s' | wc -l", cache_dir, suffix);
    FILE *found = popen(command, "r");
    size_t count = 0;
    cr_assert_eq(fscanf(found, "%zu", &count), 1);
    pclose(found);
    return count;
}

static void assert_accounting_exact(zc_disk_tier *tier)
{
    uint64_t recorded = 0, scanned = 0;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &recorded), ZC_OK);
    cr_assert_eq(zc_disk_tier_scanned_size(tier, &scanned, NULL), ZC_OK);
    cr_assert_eq(recorded, scanned, "config.file %llu, files %llu", (unsigned long long)recorded,
                 (unsigned long long)scanned);
    char command[1024];
    snprintf(command, sizeof command,
             "find '%s' -name '*.l0_cache' -o -name '*.recipe' -o -name '*.spirv' | xargs cat | "
             "wc -c",
             cache_dir);
    FILE *found = popen(command, "r");
    unsigned long long on_disk = 0;
    cr_assert_eq(fscanf(found, "%llu", &on_disk), 1);
    pclose(found);
    cr_assert_eq(scanned, on_disk, "scanned %llu of %llu bytes", (unsigned long long)scanned,
                 on_disk);
}

Test(recipes, a_recipe_needs_its_entry_and_spirv_is_kept_once)
{
    zc_disk_tier *tier = open_tier();
    zc_key k1 = t_key(11), k2 = t_key(12), k3 = t_key(13);
    cr_assert_eq(record(tier, &k1, spirv_a, sizeof spirv_a), ZC_MISS, "recorded without entry");
    store_entry(tier, &k1);
    store_entry(tier, &k2);
    store_entry(tier, &k3);
    cr_assert_eq(record(tier, &k1, spirv_a, sizeof spirv_a), ZC_OK);
    cr_assert_eq(record(tier, &k1, spirv_a, sizeof spirv_a), ZC_EXISTS);
    cr_assert_eq(record(tier, &k2, spirv_a, sizeof spirv_a), ZC_OK);
    cr_assert_eq(record(tier, &k3, spirv_b, sizeof spirv_b), ZC_OK);
    cr_assert(zc_disk_tier_has_recipe(tier, &k1));
    cr_assert_eq(files_named(".recipe"), 3);
    cr_assert_eq(files_named(".spirv"), 2, "one blob per distinct SPIR-V");
    assert_accounting_exact(tier);
    zc_disk_tier_close(tier);
}

static void entry_rel(const zc_key *key, char *rel)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(rel, 128, "%c/%c/%s.l0_cache", hex[0], hex[1], hex);
}

Test(recipes, a_blob_goes_with_the_last_recipe_naming_it)
{
    zc_disk_tier *tier = open_tier();
    zc_key k1 = t_key(21), k2 = t_key(22);
    store_entry(tier, &k1);
    store_entry(tier, &k2);
    cr_assert_eq(record(tier, &k1, spirv_a, sizeof spirv_a), ZC_OK);
    cr_assert_eq(record(tier, &k2, spirv_a, sizeof spirv_a), ZC_OK);
    char rel[128];
    entry_rel(&k1, rel);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, rel), ZC_OK);
    cr_assert_eq(files_named(".recipe"), 1, "the recipe went with its entry");
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    cr_assert_eq(files_named(".spirv"), 1, "a blob still named was removed");
    assert_accounting_exact(tier);
    entry_rel(&k2, rel);
    cr_assert_eq(zc_disk_tier_remove_entry(tier, rel), ZC_OK);
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    cr_assert_eq(files_named(".spirv"), 0, "an orphan blob was kept");
    assert_accounting_exact(tier);
    zc_disk_tier_close(tier);
}

Test(recipes, eviction_takes_recipes_and_unnamed_blobs_and_keeps_the_count)
{
    zc_config config = t_disk_config(cache_dir, 6000, 3);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    for (uint64_t i = 0; i < 12; i++) {
        zc_key key = t_key(100 + i);
        store_entry(tier, &key);
        char spirv[64];
        snprintf(spirv, sizeof spirv, "\x03\x02\x23\x07 module %llu", (unsigned long long)i);
        zc_status status = record(tier, &key, spirv, strlen(spirv));
        cr_assert(status == ZC_OK || status == ZC_MISS, "%s", zc_status_name(status));
    }
    cr_assert_leq(files_named(".spirv"), files_named(".recipe"),
                  "blobs outlived the recipes naming them");
    cr_assert_leq(files_named(".recipe"), files_named(".l0_cache"));
    assert_accounting_exact(tier);
    zc_disk_tier_close(tier);
}

/* A tier holding seed's entry (*key) and its recipe (at path) naming
 * spirv_a. */
static zc_disk_tier *one_entry_with_recipe(uint64_t seed, zc_key *key, char path[1024])
{
    zc_disk_tier *tier = open_tier();
    *key = t_key(seed);
    store_entry(tier, key);
    cr_assert_eq(record(tier, key, spirv_a, sizeof spirv_a), ZC_OK);
    char hex[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(key, hex);
    snprintf(path, 1024, "%s/%c/%c/%s.recipe", cache_dir, hex[0], hex[1], hex);
    return tier;
}

/* A sweep leaves the entry alone: its recipe and SPIR-V went. */
static void assert_swept_to_the_entry_alone(zc_disk_tier *tier)
{
    cr_assert_eq(zc_disk_tier_trim(tier, UINT64_MAX, 0, NULL, NULL), ZC_OK);
    cr_assert_eq(files_named(".recipe"), 0, "the recipe was kept");
    cr_assert_eq(files_named(".spirv"), 0);
    cr_assert_eq(files_named(".l0_cache"), 1);
    assert_accounting_exact(tier);
}

static uint8_t *planted_recipe(const zc_key *key, const char *spirv, size_t spirv_size,
                               size_t *size);

/* seed's recipe, damaged (a byte flipped) or replaced by an oversized one
 * (planted_recipe), is dropped by a sweep, with the SPIR-V only it named;
 * its entry stays and loads. */
static void assert_dropped_by_a_sweep(uint64_t seed, bool oversized)
{
    zc_key key;
    char path[1024];
    zc_disk_tier *tier = one_entry_with_recipe(seed, &key, path);
    size_t size = 0;
    uint8_t *bytes = oversized ? planted_recipe(&key, spirv_a, sizeof spirv_a, &size)
                               : t_read_bytes(path, &size);
    if (!oversized)
        bytes[size / 2] ^= 1;
    t_write_file(path, bytes, size);
    free(bytes);
    assert_swept_to_the_entry_alone(tier);
    zc_artifact *artifact = NULL;
    cr_assert_eq(zc_disk_tier_load(tier, &key, &artifact), ZC_OK);
    zc_artifact_unref(artifact);
    zc_disk_tier_close(tier);
}

Test(recipes, a_damaged_recipe_is_dropped_by_a_sweep_and_its_entry_stays)
{
    assert_dropped_by_a_sweep(31, false);
}

/* Recording makes room, and making room may evict the only other entry
 * whose recipe names the same SPIR-V, and with it that SPIR-V: the new
 * recipe must still find its SPIR-V there. */
Test(recipes, a_recipe_keeps_its_spirv_when_making_room_evicts_the_other_user)
{
    zc_disk_tier *tier = open_tier();
    zc_key old_user = t_key(41), new_user = t_key(42);
    store_entry(tier, &old_user);
    cr_assert_eq(record(tier, &old_user, spirv_a, sizeof spirv_a), ZC_OK);
    store_entry(tier, &new_user);
    char rel[128], path[1024];
    entry_rel(&old_user, rel);
    snprintf(path, sizeof path, "%s/%s", cache_dir, rel);
    struct timespec long_ago[2] = {{1000, 0}, {1000, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, long_ago, 0), 0);
    uint64_t total = 0;
    cr_assert_eq(zc_disk_tier_recorded_size(tier, &total), ZC_OK);
    zc_disk_tier_close(tier);
    zc_config config = t_disk_config(cache_dir, total + 1, 3);
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    cr_assert_eq(record(tier, &new_user, spirv_a, sizeof spirv_a), ZC_OK);
    cr_assert_not(t_exists(path), "making room did not evict the older user");
    cr_assert(zc_disk_tier_has_recipe(tier, &new_user));
    cr_assert_eq(files_named(".spirv"), 1, "the recipe names SPIR-V that is gone");
    assert_accounting_exact(tier);
    zc_disk_tier_close(tier);
}

/* ---- bounds that fit what a recipe holds ---- */

typedef struct content_writer {
    uint8_t *bytes;
    size_t size;
} content_writer;

static void put_bytes(content_writer *w, const void *data, size_t size)
{
    memcpy(w->bytes + w->size, data, size);
    w->size += size;
}

static void put_le(content_writer *w, uint64_t value, size_t size)
{
    for (size_t i = 0; i < size; i++)
        w->bytes[w->size++] = (uint8_t)(value >> (8 * i));
}

static void put_text_of(content_writer *w, char fill, size_t length)
{
    put_le(w, length, 4);
    memset(w->bytes + w->size, fill, length);
    w->size += length;
}

/* A recipe that the old bounds took as sound (256 inputs, each with 40000
 * bytes of flags: about 10 MiB of content from a file of a few KB), naming
 * spirv in every input. */
static uint8_t *planted_recipe(const zc_key *key, const char *spirv, size_t spirv_size,
                               size_t *size)
{
    enum { INPUTS = 256, FLAGS = 40000 };
    content_writer w = {malloc(64 + INPUTS * (64 + FLAGS)), 0};
    uint8_t sha[32];
    zc_sha256_digest(spirv, spirv_size, sha);
    put_le(&w, 0, 4);
    put_le(&w, 1, 4);
    put_le(&w, INPUTS, 4);
    put_text_of(&w, 'd', 8);
    put_text_of(&w, 'v', 8);
    for (int i = 0; i < INPUTS; i++) {
        put_bytes(&w, sha, 32);
        put_le(&w, spirv_size, 8);
        put_le(&w, 1, 1);
        put_text_of(&w, 'f', FLAGS);
        put_le(&w, 0, 1);
        put_le(&w, 0, 4);
    }
    cr_assert_gt(w.size, ZC_RECIPE_MAX_CONTENT);
    uint8_t *sealed = NULL;
    cr_assert_eq(zc_sealed_encode(ZC_RECIPE_MAGIC, key->bytes, w.bytes, w.size, 3, &sealed, size),
                 ZC_OK);
    free(w.bytes);
    return sealed;
}

/* Refused from its header, before anything is allocated or decompressed:
 * the decoder is never asked for more than the largest recipe. */
Test(recipes, a_recipe_declaring_more_than_any_recipe_holds_is_refused_at_its_header)
{
    zc_key key = t_key(51);
    size_t size = 0;
    uint8_t *bytes = planted_recipe(&key, spirv_a, sizeof spirv_a, &size);
    cr_assert_lt(size, 64 << 10, "a small file");
    zc_recipe read;
    char reason[256] = "";
    cr_assert_eq(zc_recipe_decode(bytes, size, &key, &read, reason, sizeof reason), ZC_MISS);
    cr_assert_str_eq(reason, "content size over the limit");
    cr_assert_eq(zc_recipe_decode_inputs(bytes, size, &key, &read, reason, sizeof reason), ZC_MISS);
    cr_assert_str_eq(reason, "content size over the limit");
    free(bytes);
}

/* What a sweep reads of a recipe is what the full decoder reads (and it
 * refuses every damage: every_damage_is_refused_with_a_reason). */
Test(recipes, decoding_the_inputs_only_keeps_the_digests)
{
    zc_key key = t_key(52);
    zc_recipe recipe = sample_recipe(&key, spirv_a, sizeof spirv_a), read;
    uint8_t *bytes = NULL;
    size_t size = 0;
    char reason[256] = "";
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, &size), ZC_OK);
    cr_assert_eq(zc_recipe_decode_inputs(bytes, size, &key, &read, reason, sizeof reason), ZC_OK,
                 "%s", reason);
    cr_assert_eq(read.input_count, 1);
    cr_assert_eq(memcmp(read.inputs[0].spirv_sha256, recipe.inputs[0].spirv_sha256, 32), 0);
    cr_assert_eq(read.inputs[0].spirv_size, sizeof spirv_a);
    cr_assert_null(read.device_name);
    cr_assert_null(read.inputs[0].flags);
    cr_assert_null(read.inputs[0].constants);
    zc_recipe_free(&read);
    free(bytes);
}

/* What a decoder would refuse is not written. */
Test(recipes, a_recipe_over_the_bounds_is_not_encoded)
{
    zc_key key = t_key(53);
    zc_recipe recipe = sample_recipe(&key, spirv_a, sizeof spirv_a);
    zc_recipe_constant *constants = calloc(ZC_RECIPE_MAX_CONSTANTS + 1, sizeof *constants);
    for (uint32_t i = 0; i <= ZC_RECIPE_MAX_CONSTANTS; i++)
        constants[i] = (zc_recipe_constant){.id = i, .width = 4};
    recipe.inputs[0].constants = constants;
    recipe.inputs[0].constant_count = ZC_RECIPE_MAX_CONSTANTS + 1;
    uint8_t *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, &size), ZC_ERR_TOO_LARGE);
    recipe.inputs[0].constant_count = ZC_RECIPE_MAX_CONSTANTS;
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, &size), ZC_OK, "at the bound");
    free(bytes);
    free(constants);
    char *flags = malloc(ZC_RECIPE_MAX_TEXT + 2);
    memset(flags, 'f', ZC_RECIPE_MAX_TEXT + 1);
    flags[ZC_RECIPE_MAX_TEXT + 1] = '\0';
    recipe = sample_recipe(&key, spirv_a, sizeof spirv_a);
    recipe.inputs[0].flags = flags;
    cr_assert_eq(zc_recipe_encode(&recipe, 3, &bytes, &size), ZC_ERR_TOO_LARGE);
    free(flags);
}

/* Planted beside an entry, such a recipe is damage. */
Test(recipes, a_sweep_removes_a_planted_oversized_recipe)
{
    assert_dropped_by_a_sweep(54, true);
}
