/* A model-based test of the disk tier (RELIABILITY.md, "The model"): long
 * random sequences of stores, recorded inputs (recipes sharing SPIR-V),
 * loads, evictions at a small limit, trims, clears, repairs, verifies,
 * bundle exports and imports, packs made mid-run and served from while the
 * directory goes on changing, usage lists, a second tier handle, a forked
 * process storing at the same time, writers killed at their Nth system call
 * and calls that fail, and files removed or planted by hand; after every
 * step the directory is walked (nftw) and compared with the model
 * (disk_model.h). Odd-numbered keys are OpenCL's (.cl_cache), the others
 * Level Zero's, so every step meets both kinds. ZC_MODEL_SEED replays a
 * run, ZC_MODEL_STEPS sets its length. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "disk_model.h"
#include "zecache/bundle.h"
#include "zecache/disk_figures.h"
#include "zecache/pack.h"

TestSuite(model, .init = ft_make_root, .fini = ft_remove_root);

#ifdef __SANITIZE_ADDRESS__
/* A forked writer copies the page tables of all the parent maps, and ASan's
 * default quarantine keeps 256 MiB of freed memory mapped: each fork cost
 * about half a second. 16 MiB still holds many steps' worth of frees. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "quarantine_size_mb=16";
}
#endif

/* ---- set-up: keys, SPIR-V, recipes ---- */

static void m_make_blob(m_blob *blob, int b)
{
    blob->spirv_size = 1500 + (size_t)(fc_mix((uint64_t)b * 13 + 5) % 4500);
    uint8_t *spirv = malloc(blob->spirv_size);
    t_fill_random(spirv, blob->spirv_size, (uint64_t)b + 5000); /* incompressible */
    cr_assert_eq(
        zc_spirv_blob_encode(spirv, blob->spirv_size, 1, blob->sha256, &blob->bytes, &blob->size),
        ZC_OK);
    zc_key as_key = {0};
    memcpy(as_key.bytes, blob->sha256, 32);
    zc_key_to_hex(&as_key, blob->hex);
    free(spirv);
}

/* Key n's recipe names one or two of the shared SPIR-V modules. */
static void m_make_recipe(model *m, int n)
{
    m_key *key = &m->keys[n];
    key->blobs[0] = (int)(fc_mix((uint64_t)n + 77) % M_BLOBS);
    key->blobs[1] = (int)(fc_mix((uint64_t)n + 991) % M_BLOBS);
    key->blob_count = n % 3 != 0 && key->blobs[1] != key->blobs[0] ? 2 : 1;
    zc_recipe_input inputs[2];
    memset(inputs, 0, sizeof inputs);
    for (int i = 0; i < key->blob_count; i++) {
        const m_blob *blob = &m->blobs[key->blobs[i]];
        memcpy(inputs[i].spirv_sha256, blob->sha256, 32);
        inputs[i].spirv_size = blob->spirv_size;
        inputs[i].flags = i == 0 ? (char *)"-ze-opt-level=2" : NULL;
    }
    zc_recipe recipe = {.key = fc_key((uint64_t)n),
                        .device_name = (char *)"model device",
                        .driver_version = (char *)"1.0",
                        .input_count = (uint32_t)key->blob_count,
                        .inputs = inputs};
    cr_assert_eq(zc_recipe_encode(&recipe, 1, &key->recipe_bytes, &key->recipe_size), ZC_OK);
}

static uint8_t *m_encode(uint64_t n, size_t *size)
{
    return ft_encode_sized(n, M_MAX_BINARY, size);
}

static zc_disk_tier *m_open_tier(void)
{
    zc_config config = ft_config(ft_cache, M_LIMIT);
    zc_disk_tier *tier = NULL;
    cr_assert_eq(zc_disk_tier_open(&config, &tier), ZC_OK);
    return tier;
}

static uint64_t m_env(const char *name, uint64_t fallback)
{
    return ft_env_number(name, fallback);
}

static void m_setup(model *m, const char *profile, unsigned long default_steps)
{
    memset(m, 0, sizeof *m);
    fc_mixed_kinds = true;
    m->profile = profile;
    m->seed = m_env("ZC_MODEL_SEED", (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20));
    m->rng = m->seed;
    m->steps = (unsigned long)m_env("ZC_MODEL_STEPS", default_steps);
    for (int b = 0; b < M_BLOBS; b++)
        m_make_blob(&m->blobs[b], b);
    for (int n = 0; n < M_KEYS; n++) {
        m_key *key = &m->keys[n];
        zc_key k = fc_key((uint64_t)n);
        zc_key_to_hex(&k, key->hex);
        key->suffix = zc_entry_kind_suffix((zc_entry_kind)k.kind);
        size_t size;
        free(m_encode((uint64_t)n, &size));
        key->entry_size = size;
        m_make_recipe(m, n);
        uint64_t cost = size + strlen(M_TRACE) + key->recipe_size;
        for (int i = 0; i < key->blob_count; i++)
            cost += m->blobs[key->blobs[i]].size;
        m->slack = cost > m->slack ? cost : m->slack;
    }
    for (int f = 0; f < M_FOREIGN; f++) {
        zc_key k = fc_key(M_FOREIGN_BASE + (uint64_t)f);
        zc_key_to_hex(&k, m->foreign_hex[f]);
    }
    m->tier[0] = m_open_tier();
    m->tier[1] = m_open_tier();
    cr_log_info("model (%s): seed %llu, %lu steps, limit %llu, slack %llu (replay with "
                "ZC_MODEL_SEED=%llu)",
                profile, (unsigned long long)m->seed, m->steps, (unsigned long long)M_LIMIT,
                (unsigned long long)m->slack, (unsigned long long)m->seed);
}

static void m_teardown(model *m)
{
    zc_pack_close(m->pack);
    zc_disk_tier_close(m->tier[0]);
    zc_disk_tier_close(m->tier[1]);
    for (int b = 0; b < M_BLOBS; b++)
        free(m->blobs[b].bytes);
    for (int n = 0; n < M_KEYS; n++)
        free(m->keys[n].recipe_bytes);
}

/* As a new process would: after a crash, the handles are opened again. */
static void m_reopen(model *m)
{
    for (int t = 0; t < 2; t++) {
        zc_disk_tier_close(m->tier[t]);
        m->tier[t] = m_open_tier();
    }
}

static uint64_t m_evictions(model *m)
{
    return zc_disk_tier_evictions(m->tier[0]) + zc_disk_tier_evictions(m->tier[1]);
}

static zc_disk_tier *m_pick_tier(model *m)
{
    return m->tier[m_below(m, 2)];
}

/* ---- paths ---- */

static void m_file_path(const char *hex, const char *suffix, char *out)
{
    snprintf(out, PATH_MAX, "%s/%c/%c/%s%s", ft_cache, hex[0], hex[1], hex, suffix);
}

static void m_rel_entry(const m_key *key, char *out)
{
    snprintf(out, PATH_MAX, "%c/%c/%s%s", key->hex[0], key->hex[1], key->hex, key->suffix);
}

static void m_make_dirs(const char *hex)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%c", ft_cache, hex[0]);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/%c/%c", ft_cache, hex[0], hex[1]);
    mkdir(path, 0700);
}

/* ---- the operations the tier offers ---- */

typedef struct m_step {
    model *m;
    m_rules rules;
    bool lenient; /* another process works at the same time: statuses may differ */
} m_step;

static bool m_entry_regular(const m_key *key)
{
    return key->state == M_PRESENT || key->state == M_DAMAGED;
}

/* A sweep may remove usage lists of programs whose entries it evicted
 * (disk_usage_list.h), and a killed clear any of them. */
static void m_usage_may_go(model *m)
{
    for (int p = 0; p < M_PROGRAMS; p++)
        m->usage_maybe[p] = m->has_usage[p] || m->usage_maybe[p];
}

static void m_after_sweep(m_step *s, uint64_t evictions_before, uint64_t incoming)
{
    if (m_evictions(s->m) == evictions_before)
        return;
    m_usage_may_go(s->m);
    s->rules.evicted = true;
    s->rules.remove_any = true;
    /* Not repairing: a store's eviction from its shard (disk_shard_evict.c)
     * keeps config.file's total, however a hand changed the files, which
     * only a full sweep (its fallback), repair, trim or clear rebuilds. */
    s->rules.incoming = incoming;
    s->m->sweeps++;
}

static void op_store(m_step *s, int n)
{
    model *m = s->m;
    m_key *key = &m->keys[n];
    zc_key k = fc_key((uint64_t)n);
    zc_artifact *artifact = fc_artifact((uint64_t)n, M_MAX_BINARY);
    const char *trace = n % 4 == 0 ? M_TRACE : NULL;
    uint64_t before = m_evictions(m);
    /* A pass making room may take a recipe whose entry is gone (an orphan,
     * as it lists the shard), before this store brings the entry back. */
    s->rules.orphaned[n] = key->recipe && !m_entry_regular(key);
    zc_status status = zc_disk_tier_store(m_pick_tier(m), &k, artifact, trace);
    zc_artifact_unref(artifact);
    m_note(m, "store %d (%s, trace %d): %s", n,
           key->state == M_PRESENT   ? "present"
           : key->state == M_DAMAGED ? "damaged"
           : key->state == M_LINKED  ? "a symlink"
                                     : "absent",
           trace != NULL, zc_status_name(status));
    zc_status expected = m_entry_regular(key) ? ZC_EXISTS : ZC_OK;
    M_CHECK(m, status == expected || (s->lenient && (status == ZC_OK || status == ZC_EXISTS)),
            "store %d: %s, expected %s", n, zc_status_name(status), zc_status_name(expected));
    s->rules.locks = true;
    s->rules.may_add[n] = true;
    m_after_sweep(s, before, key->entry_size + (trace != NULL ? strlen(trace) : 0));
    s->rules.stores = status == ZC_OK || s->rules.evicted;
    if (status == ZC_OK)
        key->state = M_PRESENT;
    m->stores++;
}

static zc_status m_record(zc_disk_tier *tier, const model *m, int n)
{
    const m_key *key = &m->keys[n];
    zc_input_blob blobs[2];
    for (int i = 0; i < key->blob_count; i++) {
        const m_blob *blob = &m->blobs[key->blobs[i]];
        memcpy(blobs[i].sha256, blob->sha256, 32);
        blobs[i].bytes = blob->bytes;
        blobs[i].size = blob->size;
    }
    zc_key k = fc_key((uint64_t)n);
    return zc_disk_tier_record(tier, &k, key->recipe_bytes, key->recipe_size, blobs,
                               (size_t)key->blob_count);
}

static void op_record(m_step *s, int n)
{
    model *m = s->m;
    m_key *key = &m->keys[n];
    uint64_t before = m_evictions(m);
    s->rules.spared[n] = true; /* recording its inputs: the entry is in use */
    zc_status status = m_record(m_pick_tier(m), m, n);
    m_note(m, "record %d (entry %d, recipe %d, planted %d): %s", n, key->state, key->recipe,
           key->recipe_planted, zc_status_name(status));
    uint64_t incoming = key->recipe_size;
    for (int i = 0; i < key->blob_count; i++)
        incoming += m->blobs[key->blobs[i]].size;
    m_after_sweep(s, before, incoming);
    /* A symlink at the entry's name is no entry, and not one to record beside. */
    zc_status expected = key->state == M_LINKED               ? ZC_ERR_IO
                         : !m_entry_regular(key)              ? ZC_MISS
                         : key->recipe || key->recipe_planted ? ZC_EXISTS
                                                              : ZC_OK;
    /* Making room may have evicted the entry itself: then no recipe. */
    bool evicted_itself = expected == ZC_OK && status == ZC_MISS && s->rules.evicted;
    M_CHECK(m, status == expected || evicted_itself || s->lenient, "record %d: %s, expected %s", n,
            zc_status_name(status), zc_status_name(expected));
    s->rules.locks = true;
    s->rules.stores = status == ZC_OK || s->rules.evicted;
    if (status == ZC_OK)
        key->recipe = true;
    m->records++;
}

/* A hit must be exactly the key's artifact; a miss only when the model says
 * the entry may be gone. */
static void op_load(m_step *s, int n)
{
    model *m = s->m;
    m_key *key = &m->keys[n];
    zc_key k = fc_key((uint64_t)n);
    zc_artifact *loaded = NULL;
    zc_status status = zc_disk_tier_load(m_pick_tier(m), &k, &loaded);
    m_note(m, "load %d (state %d): %s", n, key->state, zc_status_name(status));
    M_CHECK(m, status == ZC_OK || status == ZC_MISS, "load %d: %s", n, zc_status_name(status));
    if (status == ZC_OK) {
        bool right = fc_artifact_matches(loaded, (uint64_t)n, M_MAX_BINARY);
        zc_artifact_unref(loaded);
        M_CHECK(m, right, "load %d returned bytes other than the ones stored", n);
        M_CHECK(m, key->state == M_PRESENT || s->lenient, "load %d hit, but its state is %d", n,
                key->state);
        m->hits++;
        return;
    }
    m->misses++;
    M_CHECK(m, key->state != M_PRESENT || s->lenient,
            "load %d missed, but the model says its entry is there", n);
    if (key->state == M_DAMAGED) {
        s->rules.must_remove[n] = s->rules.may_remove[n] = true; /* the bad entry goes */
        s->rules.locks = true;
    }
}

static void op_remove(m_step *s, int n)
{
    model *m = s->m;
    m_key *key = &m->keys[n];
    char rel[PATH_MAX];
    m_rel_entry(key, rel);
    zc_status status = zc_disk_tier_remove_entry(m_pick_tier(m), rel);
    m_note(m, "remove %d (state %d): %s", n, key->state, zc_status_name(status));
    zc_status expected = m_entry_regular(key)     ? ZC_OK
                         : key->state == M_LINKED ? ZC_ERR_INVALID_ARG
                                                  : ZC_MISS;
    M_CHECK(m, status == expected, "remove %d: %s, expected %s", n, zc_status_name(status),
            zc_status_name(expected));
    s->rules.locks = true;
    s->rules.may_remove[n] = s->rules.must_remove[n] = status == ZC_OK;
}

static void op_trim(m_step *s)
{
    model *m = s->m;
    static const uint64_t fractions[] = {0, 1, 2, 3, 4};
    uint64_t fraction = fractions[m_below(m, 5)];
    uint64_t bound = m_below(m, 4) == 0 ? UINT64_MAX : M_LIMIT * fraction / 4;
    int64_t unused_before = m_below(m, 3) == 0 ? (int64_t)time(NULL) - 5 * 86400 : 0;
    uint64_t removed = 0, bytes = 0;
    zc_status status = zc_disk_tier_trim(m_pick_tier(m), bound, unused_before, &removed, &bytes);
    m_note(m, "trim to %llu, unused before %lld: %s, %llu entries (%llu bytes)",
           (unsigned long long)bound, (long long)unused_before, zc_status_name(status),
           (unsigned long long)removed, (unsigned long long)bytes);
    M_CHECK(m, status == ZC_OK, "trim: %s", zc_status_name(status));
    s->rules.locks = s->rules.remove_any = s->rules.repairing = true;
    m_usage_may_go(m);
    s->rules.bounded = bound != UINT64_MAX;
    s->rules.total_bound = bound;
    s->rules.unused_before = unused_before;
    m->sweeps++;
}

static void op_clear(m_step *s)
{
    model *m = s->m;
    zc_status status = zc_disk_tier_clear(m_pick_tier(m));
    m_note(m, "clear: %s", zc_status_name(status));
    M_CHECK(m, status == ZC_OK, "clear: %s", zc_status_name(status));
    s->rules.locks = s->rules.remove_any = s->rules.repairing = s->rules.cleared = true;
    for (int n = 0; n < M_KEYS; n++) {
        m->keys[n].recipe = m->keys[n].recipe_planted = false;
        if (m->keys[n].state != M_LINKED) /* a scan never follows nor removes a symlink */
            m->keys[n].state = M_ABSENT;
        s->rules.may_remove[n] = true;
    }
    memset(m->has_usage, 0, sizeof m->has_usage);
    memset(m->usage_planted, 0, sizeof m->usage_planted);
    memset(m->usage_maybe, 0, sizeof m->usage_maybe);
}

static void op_repair(m_step *s)
{
    model *m = s->m;
    uint64_t size = 0;
    zc_status status = zc_disk_tier_repair_accounting(m_pick_tier(m), &size);
    m_note(m, "repair: %s, %llu", zc_status_name(status), (unsigned long long)size);
    M_CHECK(m, status == ZC_OK, "repair: %s", zc_status_name(status));
    s->rules.locks = s->rules.repairing = true;
}

typedef struct m_verify_walk {
    model *m;
    zc_disk_tier *tier;
} m_verify_walk;

static int m_verify_one(void *context, const zc_disk_entry_info *info)
{
    m_verify_walk *v = context;
    if (!info->is_zecache)
        return 0;
    long n = fc_key_number(&info->key, M_KEYS);
    if (n < 0)
        return 0;
    char reason[256] = "";
    zc_status status = zc_disk_tier_verify_entry(v->tier, info->path, NULL, reason, sizeof reason);
    m_state state = v->m->keys[n].state;
    M_CHECK(v->m, (status == ZC_OK) == (state == M_PRESENT), "verify %ld (state %d): %s %s", n,
            state, zc_status_name(status), reason);
    return 0;
}

static void op_verify(m_step *s)
{
    m_verify_walk v = {s->m, m_pick_tier(s->m)};
    zc_status status = zc_disk_tier_foreach(v.tier, m_verify_one, &v);
    m_note(s->m, "verify: %s", zc_status_name(status));
    M_CHECK(s->m, status == ZC_OK, "foreach: %s", zc_status_name(status));
}

/* ---- bundles, through the core's reader and writer ---- */

static void op_export(m_step *s)
{
    model *m = s->m;
    zc_disk_tier *tier = m_pick_tier(m);
    char *buffer = NULL;
    size_t buffer_size = 0;
    FILE *out = open_memstream(&buffer, &buffer_size);
    zc_bundle_writer writer = {0};
    cr_assert_eq(zc_bundle_write_start(&writer, out), ZC_OK);
    uint64_t written = 0;
    for (int n = 0; n < M_KEYS; n++) {
        if (m->keys[n].state != M_PRESENT)
            continue;
        char rel[PATH_MAX], reason[256] = "";
        uint8_t *bytes = NULL;
        size_t size = 0;
        m_rel_entry(&m->keys[n], rel);
        zc_status status = zc_disk_tier_read_entry(tier, rel, &bytes, &size, reason, sizeof reason);
        M_CHECK(m, status == ZC_OK, "export: read %d: %s %s", n, zc_status_name(status), reason);
        zc_key k = fc_key((uint64_t)n);
        cr_assert_eq(zc_bundle_write_entry(&writer, &k, bytes, size), ZC_OK);
        free(bytes);
        written++;
    }
    cr_assert_eq(zc_bundle_write_end(&writer), ZC_OK);
    zc_bundle_writer_close(&writer);
    fclose(out);

    FILE *in = fmemopen(buffer, buffer_size, "rb");
    zc_bundle_reader reader = {0};
    char reason[256] = "";
    cr_assert_eq(zc_bundle_read_start(&reader, in, reason, sizeof reason), ZC_OK, "%s", reason);
    uint64_t read = 0;
    for (;;) {
        zc_key k;
        uint8_t *bytes = NULL;
        size_t size = 0;
        zc_bundle_item item =
            zc_bundle_read_next(&reader, &k, &bytes, &size, reason, sizeof reason);
        M_CHECK(m, item != ZC_BUNDLE_BAD, "export: the bundle reads back bad: %s", reason);
        if (item == ZC_BUNDLE_END)
            break;
        long n = fc_key_number(&k, M_KEYS);
        zc_artifact *artifact = NULL;
        M_CHECK(m,
                n >= 0 &&
                    zc_entry_decode(bytes, size, &k, 0, &artifact, reason, sizeof reason) == ZC_OK,
                "export: item %llu does not decode: %s", (unsigned long long)read, reason);
        M_CHECK(m, fc_artifact_matches(artifact, (uint64_t)n, M_MAX_BINARY),
                "export: key %ld's bytes differ", n);
        zc_artifact_unref(artifact);
        free(bytes);
        read++;
    }
    zc_bundle_reader_close(&reader);
    fclose(in);
    free(buffer);
    m_note(m, "export: %llu entries", (unsigned long long)written);
    M_CHECK(m, read == written, "export wrote %llu entries, read %llu", (unsigned long long)written,
            (unsigned long long)read);
}

/* A bundle of a few keys' entries and, sometimes, one entry under another
 * key's name, imported as `zecache import` stores them. */
static void op_import(m_step *s)
{
    model *m = s->m;
    char *buffer = NULL;
    size_t buffer_size = 0;
    FILE *out = open_memstream(&buffer, &buffer_size);
    zc_bundle_writer writer = {0};
    cr_assert_eq(zc_bundle_write_start(&writer, out), ZC_OK);
    int chosen[5], count = 1 + (int)m_below(m, 4);
    int forged = m_below(m, 3) == 0 ? (int)m_below(m, M_KEYS) : -1;
    for (int i = 0; i < count + (forged >= 0); i++) {
        chosen[i] = (int)m_below(m, M_KEYS);
        size_t size;
        uint8_t *bytes = m_encode((uint64_t)chosen[i], &size);
        zc_key k = fc_key((uint64_t)(i == count ? forged : chosen[i]));
        cr_assert_eq(zc_bundle_write_entry(&writer, &k, bytes, size), ZC_OK);
        free(bytes);
    }
    cr_assert_eq(zc_bundle_write_end(&writer), ZC_OK);
    zc_bundle_writer_close(&writer);
    fclose(out);

    zc_disk_tier *tier = m_pick_tier(m);
    FILE *in = fmemopen(buffer, buffer_size, "rb");
    zc_bundle_reader reader = {0};
    char reason[256] = "";
    cr_assert_eq(zc_bundle_read_start(&reader, in, reason, sizeof reason), ZC_OK, "%s", reason);
    uint64_t before = m_evictions(m), largest = 0;
    for (int i = 0;; i++) {
        zc_key k;
        uint8_t *bytes = NULL;
        size_t size = 0;
        zc_bundle_item item =
            zc_bundle_read_next(&reader, &k, &bytes, &size, reason, sizeof reason);
        M_CHECK(m, item != ZC_BUNDLE_BAD, "import: bad bundle: %s", reason);
        if (item == ZC_BUNDLE_END)
            break;
        zc_status status = zc_disk_tier_store_entry(tier, &k, bytes, size, reason, sizeof reason);
        free(bytes);
        int n = i == count ? forged : chosen[i];
        m_key *key = &m->keys[n];
        zc_status expected = i == count ? ZC_MISS : m_entry_regular(key) ? ZC_EXISTS : ZC_OK;
        if (i == count && chosen[i] == forged) /* its own bytes after all */
            expected = m_entry_regular(key) ? ZC_EXISTS : ZC_OK;
        bool evicted_meanwhile = m_evictions(m) != before && status == ZC_OK && i != count;
        M_CHECK(m, status == expected || evicted_meanwhile, "import of %d%s: %s, expected %s", n,
                i == count ? " (another key's bytes)" : "", zc_status_name(status),
                zc_status_name(expected));
        if (status == ZC_OK)
            key->state = M_PRESENT;
        s->rules.stores |= status == ZC_OK;
        s->rules.may_add[n] = true;
        largest = size > largest ? size : largest;
    }
    zc_bundle_reader_close(&reader);
    fclose(in);
    free(buffer);
    m_note(m, "import of %d entries%s", count, forged >= 0 ? " and a forged one" : "");
    s->rules.locks = true;
    m_after_sweep(s, before, largest);
    s->rules.stores |= s->rules.evicted;
}

/* ---- usage lists ---- */

static void op_usage(m_step *s)
{
    model *m = s->m;
    int p = (int)m_below(m, M_PROGRAMS);
    uint8_t program[32];
    memset(program, 0x40 + p, sizeof program);
    zc_disk_tier *tier = m_pick_tier(m);
    if (m_below(m, 2) == 0) {
        size_t count = 1 + m_below(m, M_USAGE_KEYS);
        for (size_t i = 0; i < count; i++)
            m->usage[p][i] = fc_key(m_below(m, M_KEYS));
        zc_status status = zc_disk_tier_write_usage(tier, program, m->usage[p], count);
        m_note(m, "write usage list %d (%zu keys): %s", p, count, zc_status_name(status));
        M_CHECK(m, status == ZC_OK, "write usage %d: %s", p, zc_status_name(status));
        m->usage_count[p] = count;
        m->has_usage[p] = true;
        m->usage_planted[p] = m->usage_maybe[p] = false;
        return;
    }
    zc_key keys[ZC_USAGE_LIST_MAX];
    size_t count = 0;
    zc_status status = zc_disk_tier_read_usage(tier, program, keys, &count);
    m_note(m, "read usage list %d: %s, %zu keys", p, zc_status_name(status), count);
    if (m->usage_maybe[p] && status == ZC_MISS) {
        m->has_usage[p] = m->usage_maybe[p] = false;
        return;
    }
    if (!m->has_usage[p]) {
        M_CHECK(m, status == ZC_MISS && count == 0,
                "usage list %d: %s with %zu keys, expected a "
                "miss",
                p, zc_status_name(status), count);
        return;
    }
    M_CHECK(m,
            status == ZC_OK && count == m->usage_count[p] &&
                memcmp(keys, m->usage[p], count * sizeof *keys) == 0,
            "usage list %d: %s, %zu keys, differs from the %zu written", p, zc_status_name(status),
            count, m->usage_count[p]);
}

/* ---- files changed by hand ---- */

static void op_hand_remove_entry(m_step *s, int n)
{
    model *m = s->m;
    m_key *key = &m->keys[n];
    char path[PATH_MAX];
    m_file_path(key->hex, key->suffix, path);
    m_note(m, "by hand: rm %d's entry (state %d; its recipe stays)", n, key->state);
    if (!m_entry_regular(key))
        return;
    cr_assert_eq(unlink(path), 0);
    key->state = M_ABSENT;
    m->hand_dirty = true;
}

static void op_hand_remove_recipe(m_step *s, int n)
{
    model *m = s->m;
    m_key *key = &m->keys[n];
    char path[PATH_MAX];
    m_file_path(key->hex, ZC_RECIPE_SUFFIX, path);
    m_note(m, "by hand: rm %d's recipe (%d)", n, key->recipe || key->recipe_planted);
    if (unlink(path) == 0)
        m->hand_dirty = true;
    key->recipe = key->recipe_planted = false;
}

static uint8_t *m_garbage(model *m, size_t *size)
{
    *size = 1 + m_below(m, 3000);
    uint8_t *bytes = malloc(*size);
    t_fill_random(bytes, *size, m_rand(m));
    return bytes;
}

static void m_replace_file(const char *path, const void *bytes, size_t size)
{
    unlink(path); /* also a symlink: never written through */
    ft_write_file(path, bytes, size);
}

static const char *const entry_plants[] = {"garbage", "truncated", "another key's entry",
                                           "zero length", "a symlink to another key's entry"};

static void op_plant_entry(m_step *s, int n)
{
    model *m = s->m;
    m_key *key = &m->keys[n];
    int kind = (int)m_below(m, 5);
    char path[PATH_MAX];
    m_file_path(key->hex, key->suffix, path);
    m_make_dirs(key->hex);
    m_note(m, "by hand: plant %s as %d's entry (state %d)", entry_plants[kind], n, key->state);
    size_t size = 0;
    int other = (n + 1 + (int)m_below(m, M_KEYS - 1)) % M_KEYS;
    uint8_t *bytes =
        kind == 0 ? m_garbage(m, &size) : m_encode((uint64_t)(kind == 2 ? other : n), &size);
    if (kind == 1)
        size = m_below(m, size);
    if (kind == 3)
        size = 0;
    if (kind == 4) {
        char target[PATH_MAX];
        m_file_path(m->keys[other].hex, m->keys[other].suffix, target);
        unlink(path);
        cr_assert_eq(symlink(target, path), 0);
        key->state = M_LINKED;
    } else {
        m_replace_file(path, bytes, size);
        key->state = M_DAMAGED;
    }
    free(bytes);
    m->hand_dirty = true;
}

static const char *const recipe_plants[] = {"garbage", "truncated", "another key's recipe",
                                            "zero length"};

/* Beside an entry on disk (a recipe without its entry is the hand-removal
 * case above). */
static void op_plant_recipe(m_step *s, int n)
{
    model *m = s->m;
    m_key *key = &m->keys[n];
    if (!m_entry_regular(key)) {
        m_note(m, "by hand: no entry of %d to plant a recipe beside", n);
        return;
    }
    int kind = (int)m_below(m, 4);
    int other = (n + 1) % M_KEYS;
    char path[PATH_MAX];
    m_file_path(key->hex, ZC_RECIPE_SUFFIX, path);
    m_note(m, "by hand: plant %s as %d's recipe", recipe_plants[kind], n);
    size_t size = 0;
    uint8_t *garbage = kind == 0 ? m_garbage(m, &size) : NULL;
    const uint8_t *bytes = kind == 0   ? garbage
                           : kind == 2 ? m->keys[other].recipe_bytes
                                       : key->recipe_bytes;
    if (kind == 1)
        size = m_below(m, key->recipe_size);
    if (kind == 2)
        size = m->keys[other].recipe_size;
    m_replace_file(path, bytes, size);
    free(garbage);
    key->recipe = false;
    key->recipe_planted = true;
    m->hand_dirty = true;
}

/* Damages a shared SPIR-V in place, or plants one no recipe names. */
static void op_plant_blob(m_step *s)
{
    model *m = s->m;
    int b = (int)m_below(m, M_BLOBS);
    bool unnamed = m_below(m, 2) == 0;
    char hex[ZC_KEY_HEX_SIZE], path[PATH_MAX];
    if (unnamed) {
        zc_key random = t_key(m_rand(m));
        zc_key_to_hex(&random, hex);
    } else {
        snprintf(hex, sizeof hex, "%s", m->blobs[b].hex);
    }
    m_file_path(hex, ZC_SPIRV_SUFFIX, path);
    if (!unnamed && !t_exists(path)) {
        m_note(m, "by hand: SPIR-V %d is not there to damage", b);
        return;
    }
    m_make_dirs(hex);
    size_t size;
    uint8_t *bytes = m_garbage(m, &size);
    m_replace_file(path, bytes, size);
    free(bytes);
    m_note(m, "by hand: plant %zu bytes of garbage as %s SPIR-V", size,
           unnamed ? "an unnamed" : "a shared");
    m->hand_dirty = true;
}

static void op_plant_usage(m_step *s)
{
    model *m = s->m;
    int p = (int)m_below(m, M_PROGRAMS);
    uint8_t program[32];
    memset(program, 0x40 + p, sizeof program);
    zc_key id = {0};
    memcpy(id.bytes, program, 32);
    char hex[ZC_KEY_HEX_SIZE], path[PATH_MAX];
    zc_key_to_hex(&id, hex);
    snprintf(path, sizeof path, "%s/%s%s", ft_cache, hex, ZC_USAGE_SUFFIX);
    size_t size;
    uint8_t *bytes = m_garbage(m, &size);
    m_replace_file(path, bytes, size);
    free(bytes);
    m_note(m, "by hand: plant garbage as usage list %d", p);
    m->has_usage[p] = m->usage_maybe[p] = false;
    m->usage_planted[p] = true;
}

/* Garbage, an implausible value, a long file (all rebuilt by the next
 * locked step), or a plausible wrong value (trusted until a repair). */
static void op_plant_config(m_step *s)
{
    model *m = s->m;
    int kind = (int)m_below(m, 4);
    char path[PATH_MAX];
    ft_path(path, ZC_CONFIG_FILE_NAME);
    uint64_t value = kind == 1 ? UINT64_MAX / 3 : M_LIMIT / 3 + m_below(m, 1000);
    uint8_t bytes[16] = {'x', 'y', 'z'};
    if (kind != 0)
        memcpy(bytes, &value, 8);
    size_t size = kind == 0 ? 3 : kind == 2 ? 16 : 8;
    m_replace_file(path, bytes, size);
    m_note(m, "by hand: plant config.file: %s",
           kind == 0   ? "3 bytes of garbage"
           : kind == 1 ? "an implausible value"
           : kind == 2 ? "16 bytes"
                       : "a plausible wrong value");
    if (kind == 3)
        m->hand_dirty = true;
}

static void op_age(m_step *s, int n)
{
    model *m = s->m;
    char path[PATH_MAX];
    m_file_path(m->keys[n].hex, m->keys[n].suffix, path);
    struct timespec old[2] = {{time(NULL) - 10 * 86400, 0}, {time(NULL) - 10 * 86400, 0}};
    bool aged = m_entry_regular(&m->keys[n]) && utimensat(AT_FDCWD, path, old, 0) == 0;
    m_note(m, "by hand: age %d's entry by 10 days: %d", n, aged);
}

/* ---- other processes, crashes, failing calls ---- */

/* A child stores and loads keys of its own while the parent takes a step. */
static pid_t m_start_neighbour(model *m)
{
    uint64_t seed = m_rand(m);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid != 0)
        return pid;
    zc_config config = ft_config(ft_cache, M_LIMIT);
    zc_disk_tier *tier = NULL;
    if (zc_disk_tier_open(&config, &tier) != ZC_OK)
        _exit(FM_SETUP);
    for (int i = 0; i < 12; i++) {
        seed = fc_mix(seed);
        uint64_t n = M_FOREIGN_BASE + seed % M_FOREIGN;
        zc_key key = fc_key(n);
        zc_artifact *artifact = fc_artifact(n, M_MAX_BINARY);
        zc_status status = zc_disk_tier_store(tier, &key, artifact, NULL);
        zc_artifact_unref(artifact);
        if (status != ZC_OK && status != ZC_EXISTS)
            _exit(FM_BAD_STATUS);
        zc_artifact *loaded = NULL;
        if (zc_disk_tier_load(tier, &key, &loaded) == ZC_OK &&
            !fc_artifact_matches(loaded, n, M_MAX_BINARY))
            _exit(FM_WRONG_BYTES);
        zc_artifact_unref(loaded);
    }
    zc_disk_tier_close(tier);
    _exit(0);
}

static void m_wait_neighbour(model *m, pid_t pid)
{
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    M_CHECK(m, WIFEXITED(status) && WEXITSTATUS(status) == 0, "the concurrent process failed: %s",
            WIFEXITED(status) ? ft_worker_exit_meaning(WEXITSTATUS(status)) : "killed");
}

static void op_step_with_neighbour(m_step *s, int n)
{
    model *m = s->m;
    pid_t pid = m_start_neighbour(m);
    s->lenient = true;
    switch (m_below(m, 3)) {
    case 0:
        op_store(s, n);
        break;
    case 1:
        op_record(s, n);
        break;
    default:
        op_load(s, n);
        break;
    }
    m_wait_neighbour(m, pid);
    m_usage_may_go(m);
    s->rules.chaos = s->rules.remove_any = true;
    s->rules.evicted = false; /* what the other process evicted is not seen here */
    m->concurrent++;
}

/* What a killed or failing writer was doing. */
static zc_status m_writer_op(zc_disk_tier *tier, const model *m, int what, int n)
{
    zc_key k = fc_key((uint64_t)n);
    char rel[PATH_MAX];
    switch (what) {
    case 0: {
        zc_artifact *artifact = fc_artifact((uint64_t)n, M_MAX_BINARY);
        zc_status status = zc_disk_tier_store(tier, &k, artifact, M_TRACE);
        zc_artifact_unref(artifact);
        return status;
    }
    case 1:
        return m_record(tier, m, n);
    case 2:
        return zc_disk_tier_trim(tier, M_LIMIT / 2, 0, NULL, NULL);
    case 3:
        m_rel_entry(&m->keys[n], rel);
        return zc_disk_tier_remove_entry(tier, rel);
    case 4:
        return zc_disk_tier_repair_accounting(tier, NULL);
    default:
        return zc_disk_tier_clear(tier);
    }
}

static const char *const writer_ops[] = {"store", "record", "trim", "remove", "repair", "clear"};

static int m_pick_writer_op(model *m)
{
    int what = (int)m_below(m, 12);
    return what < 4 ? 0 : what < 7 ? 1 : what < 9 ? 2 : what < 10 ? 3 : what < 11 ? 4 : 5;
}

/* A writer killed before its Nth system call (fault_mix.h's seam); then
 * every handle is opened again, as the next process would. */
static void op_crash(m_step *s, int n)
{
    model *m = s->m;
    int what = m_pick_writer_op(m);
    uint64_t at = 1 + m_below(m, 160);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        zc_config config = ft_config(ft_cache, M_LIMIT);
        zc_disk_tier *tier = NULL;
        if (zc_disk_tier_open_with_ops(&config, &fm_crash_ops, &tier) != ZC_OK)
            _exit(FM_SETUP);
        atomic_store(&fm_crash_calls, 0);
        fm_crash_at = at;
        m_writer_op(tier, m, what, n);
        _exit(0);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    M_CHECK(m, killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
            "the writer to be killed failed otherwise (status %d)", status);
    m_note(m, "%s %d killed before system call %llu: %s", writer_ops[what], n,
           (unsigned long long)at, killed ? "killed" : "finished first");
    m->crashes += killed;
    m->kills += killed;
    m_reopen(m);
    s->rules.chaos = s->rules.remove_any = true;
    s->rules.may_add[n] = true;
    m_usage_may_go(m); /* its sweep or clear may have reached them */
}

/* The Nth system call of an operation fails (fault_test_support.h's seam). */
static void op_fault(m_step *s, int n)
{
    model *m = s->m;
    int what = m_pick_writer_op(m);
    if (what == 5)
        what = 2; /* a failed clear leaves usage lists unknown: not worth modelling */
    zc_disk_tier *tier = ft_open(M_LIMIT, &ft_faulty_ops);
    static const int errors[] = {EIO, ENOSPC, EINTR, EACCES};
    ft_fault_plan plan = {.fail_at = 1 + (long)m_below(m, 120),
                          .kind = m_below(m, 4) == 0 ? FT_SHORT : FT_FAIL,
                          .error = errors[m_below(m, 4)]};
    ft_start_plan(plan);
    zc_status status = m_writer_op(tier, m, what, n);
    const char *faulted = ft_plan.faulted;
    ft_start_plan((ft_fault_plan){0});
    zc_disk_tier_close(tier);
    m_note(m, "%s %d with call %ld failing (%s, %s): %s", writer_ops[what], n, plan.fail_at,
           faulted != NULL ? faulted : "not reached", strerror(plan.error), zc_status_name(status));
    s->rules.chaos = s->rules.remove_any = true;
    s->rules.may_add[n] = true;
    m_usage_may_go(m); /* its sweep, if any, is not counted by the handles */
    if (what == 0 && status == ZC_OK)
        m->keys[n].state = M_PRESENT;
    m->faults++;
}

/* ---- the invariants, after every step ---- */

static void m_check_config(model *m, const m_rules *rules, bool dirty_before, bool bad_before)
{
    uint64_t recorded = 0;
    bool eight = m_config_value(&recorded);
    uint64_t total = m->walk.total;
    bool repairing = rules->repairing || (bad_before && rules->locks && !rules->chaos);
    if (repairing) {
        M_CHECK(m, eight && recorded == total,
                "after a repairing step config.file holds %s%llu, the counted files %llu",
                eight ? "" : "no 8-byte value; ", (unsigned long long)recorded,
                (unsigned long long)total);
        m->hand_dirty = false;
    } else if (!dirty_before && !m->hand_dirty && eight && recorded <= 2 * M_LIMIT) {
        M_CHECK(m, recorded == total, "config.file is plausible and wrong: %llu, counted %llu",
                (unsigned long long)recorded, (unsigned long long)total);
    }
}

static void m_check_bounds(model *m, const m_rules *rules, bool dirty_before)
{
    uint64_t total = m->walk.total;
    if (rules->stores && !dirty_before && !rules->chaos)
        M_CHECK(m, total <= M_LIMIT, "the counted total %llu is above the limit %llu",
                (unsigned long long)total, (unsigned long long)M_LIMIT);
    if (rules->evicted && !dirty_before && !rules->chaos) {
        /* Eviction frees about a third of the limit: what stays is about two
         * thirds, less the incoming bytes, less one key's cost of overshoot. */
        int64_t floor = (int64_t)(2 * M_LIMIT / 3) - (int64_t)rules->incoming - (int64_t)m->slack;
        M_CHECK(m, (int64_t)total >= floor,
                "an eviction kept %llu bytes, below 2/3 of the limit %llu less the incoming "
                "%llu and the slack %llu (%lld): %llu entries, %llu recipes, %llu SPIR-V left",
                (unsigned long long)total, (unsigned long long)M_LIMIT,
                (unsigned long long)rules->incoming, (unsigned long long)m->slack, (long long)floor,
                (unsigned long long)m->walk.entries, (unsigned long long)m->walk.recipes,
                (unsigned long long)m->walk.blobs);
        m->evictions_checked++;
    }
    if (rules->bounded && !dirty_before)
        M_CHECK(m, total <= rules->total_bound, "trim to %llu left %llu",
                (unsigned long long)rules->total_bound, (unsigned long long)total);
    if (rules->cleared)
        M_CHECK(m,
                m->walk.entries == 0 && m->walk.recipes == 0 && m->walk.blobs == 0 &&
                    m->walk.usage_lists == 0 && total == 0,
                "clear left %llu entries, %llu recipes, %llu SPIR-V, %llu usage lists",
                (unsigned long long)m->walk.entries, (unsigned long long)m->walk.recipes,
                (unsigned long long)m->walk.blobs, (unsigned long long)m->walk.usage_lists);
    M_CHECK(m, m->walk.temps <= m->crashes, "%llu temp files, %llu writers killed",
            (unsigned long long)m->walk.temps, (unsigned long long)m->crashes);
    M_CHECK(m, m->walk.unnamed_recipe[0] == '\0', "%s", m->walk.unnamed_recipe);
}

/* Entries: what went went only by a step allowed to remove it, what came
 * came only by a step that stored it, and what stayed is the same file. */
static void m_check_entries(model *m, const m_rules *rules)
{
    for (int n = 0; n < M_KEYS; n++) {
        m_key *key = &m->keys[n];
        bool on = m->walk.entry[n];
        bool was = m_entry_regular(key);
        if (was && !on) {
            M_CHECK(m, rules->remove_any || rules->may_remove[n],
                    "entry %d vanished in a step that may not remove it", n);
            M_CHECK(m, !key->recipe || !m->walk.recipe[n] || rules->chaos,
                    "entry %d went, its recipe stayed", n);
            key->state = M_ABSENT;
        } else if (!was && on) {
            M_CHECK(m, rules->may_add[n], "entry %d appeared in a step that did not store it", n);
            key->state = M_PRESENT;
        } else if (on) {
            M_CHECK(m, !rules->must_remove[n], "entry %d was to be removed and is still there", n);
        }
        if (key->state == M_PRESENT)
            M_CHECK(m, m->walk.entry_size[n] == key->entry_size,
                    "entry %d holds %llu bytes, %llu stored", n,
                    (unsigned long long)m->walk.entry_size[n], (unsigned long long)key->entry_size);
        if (on && rules->unused_before != 0)
            M_CHECK(m, m->walk.mtime[n].tv_sec >= rules->unused_before,
                    "trim left entry %d, unused since before its bound", n);
    }
}

/* Recipes: ours stay while their entry does; nothing appears unrecorded. */
static void m_check_recipes(model *m, const m_rules *rules)
{
    for (int n = 0; n < M_KEYS; n++) {
        m_key *key = &m->keys[n];
        bool on = m->walk.recipe[n];
        if (key->recipe && !on) {
            /* Unless its entry went and was stored again in this step. */
            bool replaced = (rules->remove_any || rules->orphaned[n]) && rules->may_add[n];
            M_CHECK(m, !m->walk.entry[n] || rules->chaos || replaced,
                    "recipe %d vanished while its entry is there", n);
            key->recipe = false;
        } else if (key->recipe && on) {
            M_CHECK(m, m->walk.recipe_size[n] == key->recipe_size,
                    "recipe %d holds %llu bytes, %zu recorded", n,
                    (unsigned long long)m->walk.recipe_size[n], key->recipe_size);
        } else if (!key->recipe && !key->recipe_planted && on) {
            M_CHECK(m, rules->chaos, "recipe %d appeared unrecorded", n);
            key->recipe = m->walk.recipe_size[n] == key->recipe_size;
            key->recipe_planted = !key->recipe;
        }
        if (key->recipe_planted && !on)
            key->recipe_planted = false; /* a sweep dropped it */
    }
}

static bool m_same_shard(int a, int b)
{
    zc_key x = fc_key((uint64_t)a), y = fc_key((uint64_t)b);
    char hex_x[ZC_KEY_HEX_SIZE], hex_y[ZC_KEY_HEX_SIZE];
    zc_key_to_hex(&x, hex_x);
    zc_key_to_hex(&y, hex_y);
    return hex_x[0] == hex_y[0] && hex_x[1] == hex_y[1];
}

/* LRU as sharded eviction keeps it (disk_shard_evict.c): an eviction never
 * removes an entry while one of its shard (k0/k1) last used earlier stays.
 * Across shards the order holds only as evenly as hashing spreads ages. */
static void m_check_lru(model *m, const m_rules *rules, bool dirty_before, const m_walk *before)
{
    if (!rules->evicted || rules->chaos || dirty_before)
        return;
    for (int gone = 0; gone < M_KEYS; gone++) {
        if (!before->entry[gone] || m->walk.entry[gone])
            continue;
        for (int kept = 0; kept < M_KEYS; kept++)
            /* A key the step stores may have gone and come back in it (an
             * import's later item): its time before says nothing. */
            if (before->entry[kept] && m->walk.entry[kept] && m_same_shard(gone, kept) &&
                !rules->spared[kept] && !rules->may_add[kept])
                M_CHECK(m,
                        before->mtime[gone].tv_sec < before->mtime[kept].tv_sec ||
                            (before->mtime[gone].tv_sec == before->mtime[kept].tv_sec &&
                             before->mtime[gone].tv_nsec <= before->mtime[kept].tv_nsec),
                        "eviction removed key %d and kept key %d of its shard, used earlier", gone,
                        kept);
    }
}

/* zecache.accounting: whenever it adds up to config.file (so zecache stats
 * would answer from it), its figures are a scan's, field by field. One that
 * does not is rebuilt, as zecache stats does, unless config.file itself is
 * to be rebuilt first, or files changed behind the tiers' backs. */
static void m_check_figures(model *m)
{
    zc_disk_figures accounted, scanned;
    uint64_t recorded;
    char reason[200] = "";
    zc_disk_tier *tier = m->tier[0];
    if (m->hand_dirty || !m_config_trusted(&recorded))
        return;
    if (zc_disk_tier_accounted_figures(tier, &accounted, reason, sizeof reason) != ZC_OK) {
        M_CHECK(m, zc_disk_tier_rebuild_figures(tier, &scanned) == ZC_OK,
                "cannot rebuild zecache.accounting");
        m->figures_rebuilt++;
        return;
    }
    M_CHECK(m, zc_disk_tier_scanned_figures(tier, &scanned) == ZC_OK, "cannot scan");
    const uint64_t *a = (const uint64_t *)&accounted, *b = (const uint64_t *)&scanned;
    for (size_t i = 0; i < sizeof scanned / sizeof *b; i++)
        M_CHECK(m, a[i] == b[i], "zecache.accounting's figure %zu is %llu, a scan's %llu", i,
                (unsigned long long)a[i], (unsigned long long)b[i]);
    m->figures_kept++;
}

/* SPIR-V users' counts: one never counts fewer recipes than name its SPIR-V
 * (or a blob could go while named), whatever ran; while only stores and
 * records ran since a trim or clear, each counts them exactly, and a blob
 * went with its last recipe, from a shard as from a full sweep. */
static void m_check_blob_counts(model *m)
{
    for (size_t b = 0; b < m->walk.blob_count; b++) {
        const char *hex = m->walk.blob_hex[b];
        int64_t named = 0, count = -1;
        for (size_t i = 0; i < m->walk.named_count; i++) {
            zc_key as_key = {0};
            char named_hex[ZC_KEY_HEX_SIZE];
            memcpy(as_key.bytes, m->walk.named[i], 32);
            zc_key_to_hex(&as_key, named_hex);
            named += strcmp(named_hex, hex) == 0;
        }
        for (size_t r = 0; r < m->walk.refs_seen; r++)
            if (strcmp(m->walk.refs_hex[r], hex) == 0)
                count = m->walk.refs_count[r];
        M_CHECK(m, count < 0 || count >= named, "SPIR-V %.16s... counts %lld users, %lld name it",
                hex, (long long)count, (long long)named);
        if (!m->counts_exact)
            continue;
        M_CHECK(m, named > 0, "SPIR-V %.16s... stayed after its last recipe went", hex);
        M_CHECK(m, count == named, "SPIR-V %.16s... counts %lld users, exactly %lld name it", hex,
                (long long)count, (long long)named);
    }
    m->counts_checked += m->counts_exact;
}

static void m_check(model *m, const m_rules *rules, bool dirty_before, bool bad_before)
{
    static m_walk before; /* large: off the stack */
    before = m->walk;
    m_take_walk(m);
    m_check_config(m, rules, dirty_before, bad_before);
    m_check_lru(m, rules, dirty_before, &before);
    m_check_bounds(m, rules, dirty_before);
    m_check_entries(m, rules);
    m_check_recipes(m, rules);
    m_check_figures(m);
    m_check_blob_counts(m);
}

/* ---- packs, as zecache pack makes them and NEO_CACHE_PACKS reads them ---- */

typedef struct m_pack_walk {
    model *m;
    zc_disk_tier *tier;
    zc_pack_writer *writer;
} m_pack_walk;

/* Every entry that verifies goes in, as zecache pack takes them. */
static int m_pack_one(void *context, const zc_disk_entry_info *info)
{
    m_pack_walk *w = context;
    if (!info->is_zecache)
        return 0;
    uint8_t *bytes = NULL;
    size_t size = 0;
    char reason[256];
    if (zc_disk_tier_read_entry(w->tier, info->path, &bytes, &size, reason, sizeof reason) == ZC_OK)
        cr_assert_eq(zc_pack_write_entry(w->writer, &info->key, bytes, size), ZC_OK);
    free(bytes);
    return 0;
}

/* A new pack renamed over the last, as zecache pack replaces one: it holds
 * exactly the entries the model says are present, and is served from
 * until the next one. */
static void op_pack(m_step *s)
{
    model *m = s->m;
    char path[PATH_MAX], temporary[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/model.zcp", ft_root);
    snprintf(temporary, sizeof temporary, "%s.tmp", path);
    FILE *out = fopen(temporary, "w+b");
    cr_assert_not_null(out);
    m_pack_walk w = {m, m_pick_tier(m), NULL};
    cr_assert_eq(zc_pack_write_start(out, NULL, &w.writer), ZC_OK);
    M_CHECK(m, zc_disk_tier_foreach(w.tier, m_pack_one, &w) == ZC_OK, "pack: cannot walk");
    cr_assert_eq(zc_pack_write_end(w.writer, NULL), ZC_OK);
    zc_pack_writer_free(w.writer);
    cr_assert_eq(fclose(out), 0);
    cr_assert_eq(rename(temporary, path), 0);
    zc_pack_close(m->pack);
    m->pack = NULL;
    char reason[256] = "";
    M_CHECK(m, zc_pack_open(path, NULL, &m->pack, reason, sizeof reason) == ZC_OK,
            "pack: the new pack does not open: %s", reason);
    uint64_t present = 0;
    for (int n = 0; n < M_KEYS; n++) {
        m->packed[n] = m->keys[n].state == M_PRESENT;
        present += m->packed[n];
    }
    uint64_t modelled = 0;
    for (uint64_t i = 0; i < zc_pack_entry_count(m->pack); i++) {
        zc_key k;
        zc_pack_key_at(m->pack, i, &k);
        long n = fc_key_number(&k, M_KEYS);
        M_CHECK(m, n < 0 || m->packed[n], "pack: holds key %ld, whose state is %d", n,
                n < 0 ? -1 : (int)m->keys[n].state);
        modelled += n >= 0;
    }
    m_note(m, "pack: %llu entries", (unsigned long long)modelled);
    M_CHECK(m, modelled == present, "pack: %llu of the %llu present entries",
            (unsigned long long)modelled, (unsigned long long)present);
    m->packs_made++;
}

/* A lookup in the last pack: exactly the key's artifact when the pack was
 * made with it, else a plain miss. */
static void m_pack_check(model *m, int n)
{
    zc_key k = fc_key((uint64_t)n);
    uint8_t *bytes = NULL;
    size_t size = 0;
    char reason[256] = "";
    zc_status status = zc_pack_find(m->pack, &k, &bytes, &size, reason, sizeof reason);
    zc_artifact *artifact = NULL;
    if (status == ZC_OK)
        status = zc_entry_decode(bytes, size, &k, 0, &artifact, reason, sizeof reason);
    free(bytes);
    M_CHECK(m, m->packed[n] ? status == ZC_OK : status == ZC_MISS && reason[0] == '\0',
            "pack load %d (packed %d): %s %s", n, m->packed[n], zc_status_name(status), reason);
    if (artifact != NULL)
        M_CHECK(m, fc_artifact_matches(artifact, (uint64_t)n, M_MAX_BINARY),
                "pack load %d: other bytes", n);
    zc_artifact_unref(artifact);
    m->pack_hits += status == ZC_OK;
}

static void op_pack_load(m_step *s, int n)
{
    if (s->m->pack == NULL)
        return;
    m_note(s->m, "pack load %d (packed %d)", n, s->m->packed[n]);
    m_pack_check(s->m, n);
}

/* Every entry the model holds loads with its bytes. */
static void m_load_all(model *m)
{
    for (int n = 0; n < M_KEYS; n++) {
        if (m->keys[n].state != M_PRESENT)
            continue;
        zc_key k = fc_key((uint64_t)n);
        zc_artifact *loaded = NULL;
        zc_status status = zc_disk_tier_load(m->tier[n % 2], &k, &loaded);
        M_CHECK(m, status == ZC_OK, "entry %d is there but does not load: %s", n,
                zc_status_name(status));
        M_CHECK(m, fc_artifact_matches(loaded, (uint64_t)n, M_MAX_BINARY),
                "entry %d loads with other bytes", n);
        zc_artifact_unref(loaded);
    }
    for (int n = 0; m->pack != NULL && n < M_KEYS; n++)
        m_pack_check(m, n);
}

/* ---- the sequences ---- */

typedef enum m_op {
    OP_STORE,
    OP_RECORD,
    OP_LOAD,
    OP_REMOVE,
    OP_TRIM,
    OP_CLEAR,
    OP_REPAIR,
    OP_VERIFY,
    OP_EXPORT,
    OP_IMPORT,
    OP_USAGE,
    OP_NEIGHBOUR,
    OP_CRASH,
    OP_FAULT,
    OP_HAND_ENTRY,
    OP_HAND_RECIPE,
    OP_PLANT_ENTRY,
    OP_PLANT_RECIPE,
    OP_PLANT_BLOB,
    OP_PLANT_USAGE,
    OP_PLANT_CONFIG,
    OP_AGE,
    OP_PACK,
    OP_PACK_LOAD,
    OP_COUNT,
} m_op;

static m_op m_pick(model *m, const unsigned weights[OP_COUNT])
{
    unsigned sum = 0;
    for (int op = 0; op < OP_COUNT; op++)
        sum += weights[op];
    unsigned at = (unsigned)m_below(m, sum);
    for (int op = 0; op < OP_COUNT; op++) {
        if (at < weights[op])
            return (m_op)op;
        at -= weights[op];
    }
    return OP_LOAD;
}

static void m_do(m_step *s, m_op op, int n)
{
    switch (op) {
    case OP_STORE:
        op_store(s, n);
        break;
    case OP_RECORD:
        op_record(s, n);
        break;
    case OP_LOAD:
        op_load(s, n);
        break;
    case OP_REMOVE:
        op_remove(s, n);
        break;
    case OP_TRIM:
        op_trim(s);
        break;
    case OP_CLEAR:
        op_clear(s);
        break;
    case OP_REPAIR:
        op_repair(s);
        break;
    case OP_VERIFY:
        op_verify(s);
        break;
    case OP_EXPORT:
        op_export(s);
        break;
    case OP_IMPORT:
        op_import(s);
        break;
    case OP_USAGE:
        op_usage(s);
        break;
    case OP_NEIGHBOUR:
        op_step_with_neighbour(s, n);
        break;
    case OP_CRASH:
        op_crash(s, n);
        break;
    case OP_FAULT:
        op_fault(s, n);
        break;
    case OP_HAND_ENTRY:
        op_hand_remove_entry(s, n);
        break;
    case OP_HAND_RECIPE:
        op_hand_remove_recipe(s, n);
        break;
    case OP_PLANT_ENTRY:
        op_plant_entry(s, n);
        break;
    case OP_PLANT_RECIPE:
        op_plant_recipe(s, n);
        break;
    case OP_PLANT_BLOB:
        op_plant_blob(s);
        break;
    case OP_PLANT_USAGE:
        op_plant_usage(s);
        break;
    case OP_PLANT_CONFIG:
        op_plant_config(s);
        break;
    case OP_AGE:
        op_age(s, n);
        break;
    case OP_PACK:
        op_pack(s);
        break;
    case OP_PACK_LOAD:
        op_pack_load(s, n);
        break;
    default:
        break;
    }
}

/* Whether every SPIR-V's count is exact after op (m_check_blob_counts):
 * a trim or clear rebuilds them; what else removes recipes (a removal, a
 * load or verify removing a damaged entry), imports, other processes, crashes,
 * faults and hands may leave them counting too many. */
static void m_follow_counts(model *m, m_op op, const m_rules *rules, bool damaged)
{
    static const bool keeps[OP_COUNT] = {
        [OP_STORE] = true,  [OP_RECORD] = true,    [OP_LOAD] = true,  [OP_REPAIR] = true,
        [OP_VERIFY] = true, [OP_EXPORT] = true,    [OP_USAGE] = true, [OP_AGE] = true,
        [OP_PACK] = true,   [OP_PACK_LOAD] = true,
    };
    bool removes_damaged = damaged && (op == OP_LOAD || op == OP_VERIFY);
    if (rules->chaos)
        m->counts_exact = false;
    else if (op == OP_TRIM || op == OP_CLEAR)
        m->counts_exact = true;
    else if (!keeps[op] || removes_damaged)
        m->counts_exact = false;
}

static void m_run(const char *profile, const unsigned weights[OP_COUNT], unsigned long steps)
{
    static model m; /* large: off the stack */
    m_setup(&m, profile, steps);
    m.counts_exact = true; /* an empty cache */
    for (m.step = 0; m.step < m.steps; m.step++) {
        m_step s = {.m = &m};
        uint64_t recorded;
        bool bad_before = !m_config_trusted(&recorded);
        bool dirty_before = m.hand_dirty;
        int n = (int)m_below(&m, M_KEYS);
        m_op op = m_pick(&m, weights);
        bool damaged = false; /* a load or verify removes it, and its recipe */
        for (int k = 0; k < M_KEYS; k++)
            damaged = damaged || m.keys[k].state == M_DAMAGED;
        m_do(&s, op, n);
        m_follow_counts(&m, op, &s.rules, damaged);
        m_check(&m, &s.rules, dirty_before, bad_before);
        if (m.step % 64 == 63)
            m_load_all(&m);
    }
    m_load_all(&m);
    cr_log_info("model (%s): %lu steps: %llu stores, %llu records, %llu hits, %llu misses, "
                "%llu sweeps, %llu evictions checked, %llu writers killed, %llu faults, %llu "
                "steps beside another process, %llu packs made, %llu pack hits, accounting kept "
                "%llu times, rebuilt %llu, %llu steps with exact SPIR-V users' counts",
                profile, m.steps, (unsigned long long)m.stores, (unsigned long long)m.records,
                (unsigned long long)m.hits, (unsigned long long)m.misses,
                (unsigned long long)m.sweeps, (unsigned long long)m.evictions_checked,
                (unsigned long long)m.kills, (unsigned long long)m.faults,
                (unsigned long long)m.concurrent, (unsigned long long)m.packs_made,
                (unsigned long long)m.pack_hits, (unsigned long long)m.figures_kept,
                (unsigned long long)m.figures_rebuilt, (unsigned long long)m.counts_checked);
    /* Stores, records and removals keep it: a rebuild follows only sweeps,
     * clears, crashes, failures and hands. */
    M_CHECK(&m, m.figures_kept > 4 * m.figures_rebuilt,
            "zecache.accounting added up after %llu steps and was rebuilt after %llu",
            (unsigned long long)m.figures_kept, (unsigned long long)m.figures_rebuilt);
    m_teardown(&m);
}

/* Only what a program does: stores, recorded inputs, loads. With SPIR-V
 * larger than the entries (as real modules' are), every store at the limit
 * evicts: the cache must keep about two thirds of its limit, and serve. */
Test(model, a_cache_at_its_limit_keeps_two_thirds, .timeout = 600)
{
    static const unsigned weights[OP_COUNT] = {
        [OP_STORE] = 45, [OP_RECORD] = 35, [OP_LOAD] = 30, [OP_REPAIR] = 2, [OP_VERIFY] = 1,
    };
    m_run("at the limit", weights, 1000);
}

/* Everything, with files planted and removed by hand, other processes,
 * crashes and failing calls. */
Test(model, random_sequences_keep_every_invariant, .timeout = 600)
{
    static const unsigned weights[OP_COUNT] = {
        [OP_STORE] = 56,       [OP_RECORD] = 34,      [OP_LOAD] = 40,      [OP_REMOVE] = 4,
        [OP_TRIM] = 4,         [OP_CLEAR] = 1,        [OP_REPAIR] = 4,     [OP_VERIFY] = 2,
        [OP_EXPORT] = 2,       [OP_IMPORT] = 4,       [OP_USAGE] = 4,      [OP_NEIGHBOUR] = 3,
        [OP_CRASH] = 4,        [OP_FAULT] = 6,        [OP_HAND_ENTRY] = 2, [OP_HAND_RECIPE] = 2,
        [OP_PLANT_ENTRY] = 3,  [OP_PLANT_RECIPE] = 2, [OP_PLANT_BLOB] = 2, [OP_PLANT_USAGE] = 1,
        [OP_PLANT_CONFIG] = 2, [OP_AGE] = 2,          [OP_PACK] = 2,       [OP_PACK_LOAD] = 8,
    };
    m_run("random", weights, 2000);
}
