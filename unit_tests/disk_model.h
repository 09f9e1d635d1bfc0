/* The reference model of a disk tier's directory (test_disk_model.c): what
 * each key's entry and recipe should be, the SPIR-V the recipes share, the
 * usage lists, and an independent walk (nftw, never the tier's own scan)
 * of what the directory holds, to compare the two after every step. */
#ifndef ZC_DISK_MODEL_H
#define ZC_DISK_MODEL_H

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdarg.h>

#include "../source/local/disk_blob_refs.h"
#include "fault_test_support.h"
#include "zecache/disk_maintenance.h"
#include "zecache/disk_recipes.h"
#include "zecache/disk_usage_list.h"
#include "zecache/recipe.h"
#include "zecache/sealed.h"

enum {
    M_KEYS = 48,
    M_FOREIGN_BASE = 1000, /* keys a concurrent process stores: counted, not modelled */
    M_FOREIGN = 16,
    M_BLOBS = 16,
    M_PROGRAMS = 3,
    M_USAGE_KEYS = 8,
    M_MAX_BINARY = 1400,
    M_HISTORY = 24,
    M_MAX_SEEN_BLOBS = 256,
    M_MAX_NAMED = 1024,
};

#define M_LIMIT (UINT64_C(64) << 10)
#define M_TRACE "---- spirv ----\n03022307\n---- flags ----\n-O2\n"

typedef enum m_state {
    M_ABSENT,
    M_PRESENT, /* its entry, exactly as stored */
    M_DAMAGED, /* a regular file planted at its name: loads miss and remove it */
    M_LINKED,  /* a symlink planted at its name: loads miss, stores replace it */
} m_state;

typedef struct m_key {
    m_state state;
    bool recipe;         /* our recipe is beside it (or orphaned: its entry gone by hand) */
    bool recipe_planted; /* something else lies at its recipe's name */
    char hex[ZC_KEY_HEX_SIZE];
    const char *suffix; /* its kind's: odd keys are OpenCL's (fc_mixed_kinds) */
    uint64_t entry_size;
    uint8_t *recipe_bytes;
    size_t recipe_size;
    int blobs[2];
    int blob_count;
} m_key;

typedef struct m_blob {
    uint8_t sha256[32];
    char hex[ZC_KEY_HEX_SIZE];
    uint8_t *bytes;
    size_t size, spirv_size;
} m_blob;

/* What the directory holds, walked with nftw. */
typedef struct m_walk {
    uint64_t total; /* every entry, trace, recipe and SPIR-V */
    uint64_t temps, usage_lists, entries, recipes, blobs;
    bool entry[M_KEYS], recipe[M_KEYS];
    uint64_t entry_size[M_KEYS], recipe_size[M_KEYS];
    struct timespec mtime[M_KEYS];
    char blob_hex[M_MAX_SEEN_BLOBS][65];
    size_t blob_count;
    uint8_t named[M_MAX_NAMED][32]; /* SPIR-V named by recipes that verify */
    size_t named_count;
    char unnamed_recipe[PATH_MAX]; /* a recipe naming SPIR-V that is not there */
    /* SPIR-V users' counts (disk_blob_refs.h): by name, -1 when no count. */
    char refs_hex[M_MAX_SEEN_BLOBS][65];
    int64_t refs_count[M_MAX_SEEN_BLOBS];
    size_t refs_seen;
} m_walk;

/* What a step may do to the directory, and what must hold after it. */
typedef struct m_rules {
    bool remove_any;          /* an eviction, trim, clear: any entry may go */
    bool chaos;               /* a crash, a fault, another process: anything may go or come */
    bool may_remove[M_KEYS];  /* this key's entry may go */
    bool must_remove[M_KEYS]; /* this key's entry must be gone */
    bool may_add[M_KEYS];     /* this key's entry may appear */
    bool repairing;           /* config.file must be exact afterwards */
    bool locks;               /* takes config.file's lock (so rescans a bad one) */
    bool stores;              /* the size bound must hold afterwards */
    bool evicted;             /* an eviction ran: what is kept is checked */
    bool orphaned[M_KEYS];    /* its recipe stood without its entry: a pass may remove it */
    bool spared[M_KEYS];      /* in use by the step (a record's entry): its eviction keeps it */
    uint64_t incoming;        /* what the step was adding when it evicted */
    bool bounded;             /* trim: the walked total is at most total_bound */
    uint64_t total_bound;
    int64_t unused_before; /* trim: no entry last used before this remains */
    bool cleared;          /* clear: nothing counted remains */
} m_rules;

typedef struct model {
    uint64_t seed, rng;
    unsigned long step, steps;
    const char *profile;
    zc_disk_tier *tier[2]; /* two handles: two processes on one directory */
    m_key keys[M_KEYS];
    char foreign_hex[M_FOREIGN][ZC_KEY_HEX_SIZE];
    m_blob blobs[M_BLOBS];
    bool has_usage[M_PROGRAMS], usage_planted[M_PROGRAMS];
    bool usage_maybe[M_PROGRAMS]; /* a killed clear may have removed it */
    zc_key usage[M_PROGRAMS][M_USAGE_KEYS];
    size_t usage_count[M_PROGRAMS];
    bool hand_dirty; /* files changed behind the tiers' backs since the last repair */
    /* Since the last trim or clear only the tiers' stores and records ran:
     * every SPIR-V's count is its recipes, and none stays without one. */
    bool counts_exact;
    uint64_t counts_checked; /* steps that checked it */
    uint64_t crashes;        /* writers killed: each may leave one temp file */
    uint64_t slack;          /* the largest cost of one key: entry, trace, recipe, its SPIR-V */
    uint64_t evictions_checked, hits, misses, stores, records, sweeps, kills, faults, concurrent;
    /* Steps after which zecache.accounting added up (and was compared with a
     * scan) or did not (and was rebuilt). */
    uint64_t figures_kept, figures_rebuilt;
    char history[M_HISTORY][200];
    m_walk walk;
    /* The pack made last (ft_root/model.zcp), open since, and which keys
     * it holds: the entries present when it was made, whatever the
     * directory did since. */
    struct zc_pack *pack;
    bool packed[M_KEYS];
    uint64_t packs_made, pack_hits;
} model;

/* ---- reporting ---- */

static inline void m_note(model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void m_note(model *m, const char *fmt, ...)
{
    char *line = m->history[m->step % M_HISTORY];
    int used = snprintf(line, sizeof m->history[0], "step %lu: ", m->step);
    va_list args;
    va_start(args, fmt);
    vsnprintf(line + used, sizeof m->history[0] - (size_t)used, fmt, args);
    va_end(args);
}

/* Prints the last steps and fails with the seed that replays them. */
static inline void m_fail(model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void m_fail(model *m, const char *fmt, ...)
{
    char message[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    unsigned long first = m->step >= M_HISTORY ? m->step - M_HISTORY + 1 : 0;
    for (unsigned long s = first; s <= m->step; s++)
        cr_log_error("%s", m->history[s % M_HISTORY]);
    cr_assert_fail("%s profile, seed %llu, step %lu: %s (replay: ZC_MODEL_SEED=%llu "
                   "ZC_MODEL_STEPS=%lu)",
                   m->profile, (unsigned long long)m->seed, m->step, message,
                   (unsigned long long)m->seed, m->step + 1);
}

#define M_CHECK(m, cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            m_fail(m, __VA_ARGS__);                                                                \
    } while (0)

static inline uint64_t m_rand(model *m)
{
    m->rng = fc_mix(m->rng);
    return m->rng;
}

static inline uint64_t m_below(model *m, uint64_t n)
{
    return m_rand(m) % n;
}

/* ---- the walk ---- */

static m_walk *m_walking;
static const model *m_walked_model;

static inline int m_key_of_name(const model *m, const char *name, const char *suffix)
{
    if (strlen(name) != 64 + strlen(suffix) || !ft_has_suffix(name, suffix))
        return -1;
    for (int k = 0; k < M_KEYS; k++)
        if (memcmp(name, m->keys[k].hex, 64) == 0)
            return k;
    return -1;
}

/* Notes the SPIR-V a recipe names, when it verifies for the key its name says. */
static inline void m_note_named(m_walk *w, const char *path, const char *name)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key key;
    snprintf(hex, sizeof hex, "%.64s", name);
    if (strlen(name) != 64 + strlen(ZC_RECIPE_SUFFIX) || !zc_key_from_hex(hex, &key))
        return;
    size_t size = 0;
    uint8_t *bytes = ft_read_file(path, &size);
    zc_recipe recipe;
    char reason[160];
    if (zc_recipe_decode(bytes, size, &key, &recipe, reason, sizeof reason) == ZC_OK) {
        for (uint32_t i = 0; i < recipe.input_count && w->named_count < M_MAX_NAMED; i++)
            memcpy(w->named[w->named_count++], recipe.inputs[i].spirv_sha256, 32);
        if (w->named_count == M_MAX_NAMED)
            snprintf(w->unnamed_recipe, sizeof w->unnamed_recipe, "(too many named)");
        zc_recipe_free(&recipe);
    }
    free(bytes);
}

/* The count a SPIR-V users' count file holds for the SPIR-V its name says;
 * -1 when it holds none. */
static inline int64_t m_read_refs(const char *path, const char *name)
{
    char hex[ZC_KEY_HEX_SIZE];
    zc_key as_key;
    snprintf(hex, sizeof hex, "%.64s", name);
    if (strlen(name) != 64 + strlen(ZC_SPIRV_REFS_SUFFIX) || !zc_key_from_hex(hex, &as_key))
        return -1;
    size_t size = 0, content_size = 0;
    uint8_t *bytes = ft_read_file(path, &size), *content = NULL, id[ZC_SEALED_ID_SIZE];
    char reason[160];
    int64_t count = -1;
    if (zc_sealed_decode(ZC_SPIRV_REFS_MAGIC, bytes, size, as_key.bytes, 8, &content, &content_size,
                         id, reason, sizeof reason) == ZC_OK &&
        content_size == 8) {
        count = 0;
        for (int i = 7; i >= 0; i--)
            count = count * 256 + content[i];
    }
    free(content);
    free(bytes);
    return count;
}

static inline int m_walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    m_walk *w = m_walking;
    const model *m = m_walked_model;
    const char *name = path + ftw->base;
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    uint64_t size = (uint64_t)st->st_size;
    if (ftw->level == 1) {
        if (strncmp(name, ZC_TEMP_PREFIX, strlen(ZC_TEMP_PREFIX)) == 0)
            w->temps++;
        else if (ft_has_suffix(name, ZC_USAGE_SUFFIX))
            w->usage_lists++;
        return 0;
    }
    if (ftw->level != 3)
        return 0;
    if (ft_has_suffix(name, ZC_ENTRY_SUFFIX) || ft_has_suffix(name, ZC_ENTRY_SUFFIX_OPENCL)) {
        const char *suffix =
            ft_has_suffix(name, ZC_ENTRY_SUFFIX) ? ZC_ENTRY_SUFFIX : ZC_ENTRY_SUFFIX_OPENCL;
        int k = m_key_of_name(m, name, suffix);
        if (k >= 0 && strcmp(m->keys[k].suffix, suffix) != 0)
            k = -1; /* not where a load of that key looks */
        w->total += size;
        w->entries++;
        if (k >= 0) {
            w->entry[k] = true;
            w->entry_size[k] = size;
            w->mtime[k] = st->st_mtim;
        }
    } else if (ft_has_suffix(name, ZC_TRACE_SUFFIX)) {
        w->total += size; /* an orphaned one too: repairing steps remove ours */
    } else if (ft_has_suffix(name, ZC_RECIPE_SUFFIX)) {
        int k = m_key_of_name(m, name, ZC_RECIPE_SUFFIX);
        w->total += size; /* counted whether or not its entry is there */
        w->recipes++;
        if (k >= 0) {
            w->recipe[k] = true;
            w->recipe_size[k] = size;
        }
        m_note_named(w, path, name);
    } else if (ft_has_suffix(name, ZC_SPIRV_REFS_SUFFIX)) {
        if (w->refs_seen < M_MAX_SEEN_BLOBS) {
            snprintf(w->refs_hex[w->refs_seen], 65, "%.64s", name);
            w->refs_count[w->refs_seen++] = m_read_refs(path, name);
        }
    } else if (ft_has_suffix(name, ZC_SPIRV_SUFFIX)) {
        w->total += size;
        w->blobs++;
        if (w->blob_count < M_MAX_SEEN_BLOBS)
            snprintf(w->blob_hex[w->blob_count++], 65, "%.64s", name);
    }
    return 0;
}

static inline bool m_blob_seen(const m_walk *w, const uint8_t sha256[32])
{
    zc_key as_key = {0};
    char hex[ZC_KEY_HEX_SIZE];
    memcpy(as_key.bytes, sha256, 32);
    zc_key_to_hex(&as_key, hex);
    for (size_t i = 0; i < w->blob_count; i++)
        if (strcmp(w->blob_hex[i], hex) == 0)
            return true;
    return false;
}

static inline void m_take_walk(model *m)
{
    memset(&m->walk, 0, sizeof m->walk);
    m_walking = &m->walk;
    m_walked_model = m;
    M_CHECK(m, nftw(ft_cache, m_walk_one, 16, FTW_PHYS) == 0, "cannot walk %s", ft_cache);
    for (size_t i = 0; i < m->walk.named_count; i++) {
        if (m_blob_seen(&m->walk, m->walk.named[i]))
            continue;
        zc_key as_key = {0};
        char hex[ZC_KEY_HEX_SIZE];
        memcpy(as_key.bytes, m->walk.named[i], 32);
        zc_key_to_hex(&as_key, hex);
        snprintf(m->walk.unnamed_recipe, sizeof m->walk.unnamed_recipe,
                 "a recipe names SPIR-V %.16s..., which is not there", hex);
    }
}

/* config.file's value, when it holds exactly 8 bytes. */
static inline bool m_config_value(uint64_t *value)
{
    return ft_config_value(value);
}

/* A value the tier would trust (disk_accounting.c: at most twice the limit). */
static inline bool m_config_trusted(uint64_t *value)
{
    return m_config_value(value) && *value <= 2 * M_LIMIT;
}

#endif
