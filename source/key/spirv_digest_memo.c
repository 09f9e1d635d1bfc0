/* The per-process SPIR-V digest memo (see spirv_digest_memo.h).
 *
 * One mutex guards a list of entries, most recently used first. It is held
 * only to find, link and unlink entries: comparing, hashing and copying
 * megabytes run outside it, on an entry kept alive by a reference, so they
 * do not hold up other keys. */
#include "spirv_digest_memo_internal.h"

#include "parallel.h"
#include "zecache/fork_guard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define FINGERPRINT_SAMPLES 64
/* Contents of one size and fingerprint compared per lookup: inputs that
 * differ in a few bytes (a buffer reused, a constant changed) share a
 * fingerprint, and comparing unequal bytes usually stops early. */
#define MAX_CANDIDATES 4

typedef struct memo_entry {
    struct memo_entry *newer;
    struct memo_entry *older; /* also links entries waiting to be freed */
    size_t size;
    uint64_t fingerprint;
    uint8_t digest[ZC_SHA256_SIZE];
    uint8_t *copy; /* NULL until the content comes again; never changed once set */
    unsigned refs; /* the list's while linked, plus one per comparison under way */
    bool linked;
} memo_entry;

static struct {
    pthread_mutex_t lock;
    memo_entry *newest;
    memo_entry *oldest;
    size_t entries;
    size_t copies;
    size_t bytes;
    uint64_t hits;
    uint64_t hashed;
} memo = {.lock = PTHREAD_MUTEX_INITIALIZER};
/* Held across fork(): a child forked while another thread was in the list
 * would otherwise wait for ever at its next SPIR-V digest. */
static atomic_bool memo_lock_guarded;

/* Words sampled across the whole input, so that most edits change it; the
 * byte comparison, not this, decides. size >= ZC_SPIRV_DIGEST_MEMO_MIN_SIZE. */
static uint64_t fingerprint_of(const uint8_t *bytes, size_t size)
{
    uint64_t hash = size * 0x9e3779b97f4a7c15u;
    size_t step = (size - sizeof hash) / (FINGERPRINT_SAMPLES - 1);
    for (size_t i = 0; i < FINGERPRINT_SAMPLES; i++) {
        uint64_t word;
        memcpy(&word, bytes + i * step, sizeof word);
        hash = (hash ^ word) * 0xff51afd7ed558ccdu;
        hash ^= hash >> 32;
    }
    return hash;
}

/* ---- the list; every function here runs under memo.lock ---- */

static void link_newest(memo_entry *entry)
{
    entry->linked = true;
    entry->newer = NULL;
    entry->older = memo.newest;
    if (memo.newest != NULL)
        memo.newest->newer = entry;
    else
        memo.oldest = entry;
    memo.newest = entry;
}

static void unlink_entry(memo_entry *entry)
{
    if (entry->newer != NULL)
        entry->newer->older = entry->older;
    else
        memo.newest = entry->older;
    if (entry->older != NULL)
        entry->older->newer = entry->newer;
    else
        memo.oldest = entry->newer;
}

static void make_newest(memo_entry *entry)
{
    unlink_entry(entry);
    link_newest(entry);
}

/* The entry for this content, made the most recently used. */
static memo_entry *find_content(size_t size, uint64_t fingerprint,
                                const uint8_t digest[ZC_SHA256_SIZE])
{
    for (memo_entry *entry = memo.newest; entry != NULL; entry = entry->older)
        if (entry->size == size && entry->fingerprint == fingerprint &&
            memcmp(entry->digest, digest, ZC_SHA256_SIZE) == 0) {
            make_newest(entry);
            return entry;
        }
    return NULL;
}

typedef struct candidates {
    memo_entry *kept[MAX_CANDIDATES]; /* with a copy; referenced */
    size_t count;
    bool seen_once; /* an entry without a copy matched too */
} candidates;

static void gather_candidates(size_t size, uint64_t fingerprint, candidates *found)
{
    for (memo_entry *entry = memo.newest; entry != NULL; entry = entry->older) {
        if (entry->size != size || entry->fingerprint != fingerprint)
            continue;
        if (entry->copy == NULL) {
            found->seen_once = true;
        } else if (found->count < MAX_CANDIDATES) {
            entry->refs++;
            found->kept[found->count++] = entry;
        }
    }
}

/* Entries nobody holds any more are freed after the lock is released. */
static void release(memo_entry *entry, memo_entry **unused)
{
    if (--entry->refs == 0) {
        entry->older = *unused;
        *unused = entry;
    }
}

static void attach_copy(memo_entry *entry, uint8_t *copy)
{
    entry->copy = copy;
    memo.copies++;
    memo.bytes += entry->size;
}

static void drop_oldest(memo_entry **unused)
{
    memo_entry *entry = memo.oldest;
    unlink_entry(entry);
    entry->linked = false;
    memo.entries--;
    if (entry->copy != NULL) {
        memo.copies--;
        memo.bytes -= entry->size;
    }
    release(entry, unused);
}

/* The entry just used is the newest and no larger than a quarter of the
 * budget, so it is never the one dropped. */
static void keep_within_limits(memo_entry **unused)
{
    while (memo.entries > ZC_SPIRV_DIGEST_MEMO_MAX_ENTRIES ||
           memo.bytes > ZC_SPIRV_DIGEST_MEMO_MAX_BYTES)
        drop_oldest(unused);
}

/* ---- outside the lock ---- */

static void free_unused(memo_entry *unused)
{
    while (unused != NULL) {
        memo_entry *next = unused->older;
        free(unused->copy);
        free(unused);
        unused = next;
    }
}

typedef enum sighting { NEW_CONTENT, SEEN_ONCE, CONFIRMED } sighting;

/* CONFIRMED: digest is the stored one for these exact bytes. SEEN_ONCE: no
 * copy holds them, but an entry without a copy has their size and
 * fingerprint. */
static sighting recall(const void *spirv, size_t size, uint64_t fingerprint,
                       uint8_t digest[ZC_SHA256_SIZE])
{
    candidates found = {.count = 0};
    zc_fork_guard_lock(&memo.lock, &memo_lock_guarded);
    gather_candidates(size, fingerprint, &found);
    pthread_mutex_unlock(&memo.lock);
    memo_entry *same = NULL;
    for (size_t i = 0; i < found.count && same == NULL; i++)
        if (memcmp(found.kept[i]->copy, spirv, size) == 0)
            same = found.kept[i];
    if (same != NULL)
        memcpy(digest, same->digest, ZC_SHA256_SIZE);
    memo_entry *unused = NULL;
    zc_fork_guard_lock(&memo.lock, &memo_lock_guarded);
    if (same != NULL) {
        memo.hits++;
        if (same->linked)
            make_newest(same);
    }
    for (size_t i = 0; i < found.count; i++)
        release(found.kept[i], &unused);
    pthread_mutex_unlock(&memo.lock);
    free_unused(unused);
    if (same != NULL)
        return CONFIRMED;
    return found.seen_once ? SEEN_ONCE : NEW_CONTENT;
}

/* Takes copy (may be NULL): the bytes that digest was computed from. */
static void remember(size_t size, uint64_t fingerprint, const uint8_t digest[ZC_SHA256_SIZE],
                     uint8_t *copy)
{
    memo_entry *unused = NULL;
    zc_fork_guard_lock(&memo.lock, &memo_lock_guarded);
    memo.hashed++;
    memo_entry *entry = find_content(size, fingerprint, digest);
    if (entry == NULL && (entry = calloc(1, sizeof *entry)) != NULL) {
        entry->size = size;
        entry->fingerprint = fingerprint;
        memcpy(entry->digest, digest, ZC_SHA256_SIZE);
        entry->refs = 1;
        link_newest(entry);
        memo.entries++;
    }
    if (entry != NULL && entry->copy == NULL && copy != NULL) {
        attach_copy(entry, copy);
        copy = NULL;
    }
    keep_within_limits(&unused);
    pthread_mutex_unlock(&memo.lock);
    free(copy);
    free_unused(unused);
}

/* The digest of an input: its SHA-256, or above ZC_SPIRV_DIGEST_PIECE bytes
 * the SHA-256 of a tag, its size and the SHA-256s of its pieces, hashed in
 * parallel (SHA-256 runs at about 1.8 GB/s on one core: 2 ms of a hit on a
 * 3.5 MB module). Pieces have a fixed size, so the digest does not depend
 * on the machine. */
typedef struct pieces_job {
    const uint8_t *bytes;
    size_t size;
    uint8_t (*digests)[ZC_SHA256_SIZE];
    atomic_bool failed;
} pieces_job;

static void hash_piece(void *context, size_t index)
{
    pieces_job *job = context;
    size_t begin = index * ZC_SPIRV_DIGEST_PIECE;
    size_t size =
        job->size - begin < ZC_SPIRV_DIGEST_PIECE ? job->size - begin : ZC_SPIRV_DIGEST_PIECE;
    if (!zc_sha256_digest(job->bytes + begin, size, job->digests[index]))
        atomic_store(&job->failed, true);
}

static bool digest_of(const void *spirv, size_t size, uint8_t digest[ZC_SHA256_SIZE])
{
    if (size <= ZC_SPIRV_DIGEST_PIECE)
        return zc_sha256_digest(spirv, size, digest);
    size_t count = (size + ZC_SPIRV_DIGEST_PIECE - 1) / ZC_SPIRV_DIGEST_PIECE;
    size_t list_size = sizeof ZC_SPIRV_DIGEST_TAG + 8 + count * ZC_SHA256_SIZE;
    uint8_t *list = malloc(list_size);
    if (list == NULL)
        return false;
    memcpy(list, ZC_SPIRV_DIGEST_TAG, sizeof ZC_SPIRV_DIGEST_TAG);
    for (int i = 0; i < 8; i++)
        list[sizeof ZC_SPIRV_DIGEST_TAG + i] = (uint8_t)((uint64_t)size >> (8 * i));
    pieces_job job = {.bytes = spirv,
                      .size = size,
                      .digests =
                          (uint8_t(*)[ZC_SHA256_SIZE])(list + sizeof ZC_SPIRV_DIGEST_TAG + 8)};
    atomic_init(&job.failed, false);
    zc_parallel_for(count, hash_piece, &job);
    bool ok = !atomic_load(&job.failed) && zc_sha256_digest(list, list_size, digest);
    free(list);
    return ok;
}

/* Content that comes a second time will likely come again: it is copied, and
 * the copy hashed, so the digest stored is the copy's whatever the caller's
 * buffer does meanwhile. */
static bool digest_as_copy(const void *spirv, size_t size, uint64_t fingerprint,
                           uint8_t digest[ZC_SHA256_SIZE])
{
    uint8_t *copy = malloc(size);
    if (copy == NULL)
        return false;
    memcpy(copy, spirv, size);
    if (!digest_of(copy, size, digest)) {
        free(copy);
        return false;
    }
    remember(size, fingerprint, digest, copy);
    return true;
}

bool zc_spirv_digest(const void *spirv, size_t size, uint8_t digest[ZC_SHA256_SIZE])
{
    if (size < ZC_SPIRV_DIGEST_MEMO_MIN_SIZE || size > ZC_SPIRV_DIGEST_MEMO_MAX_INPUT)
        return digest_of(spirv, size, digest);
    uint64_t fingerprint = fingerprint_of(spirv, size);
    sighting seen = recall(spirv, size, fingerprint, digest);
    if (seen == CONFIRMED)
        return true;
    if (seen == SEEN_ONCE && digest_as_copy(spirv, size, fingerprint, digest))
        return true;
    if (!digest_of(spirv, size, digest))
        return false;
    remember(size, fingerprint, digest, NULL);
    return true;
}

void zc_spirv_digest_memo_stats_get(zc_spirv_digest_memo_stats *stats)
{
    zc_fork_guard_lock(&memo.lock, &memo_lock_guarded);
    *stats = (zc_spirv_digest_memo_stats){.hits = memo.hits,
                                          .hashed = memo.hashed,
                                          .entries = memo.entries,
                                          .copies = memo.copies,
                                          .bytes = memo.bytes};
    pthread_mutex_unlock(&memo.lock);
}

void zc_spirv_digest_memo_clear(void)
{
    memo_entry *unused = NULL;
    zc_fork_guard_lock(&memo.lock, &memo_lock_guarded);
    while (memo.oldest != NULL)
        drop_oldest(&unused);
    memo.hits = 0;
    memo.hashed = 0;
    pthread_mutex_unlock(&memo.lock);
    free_unused(unused);
}
