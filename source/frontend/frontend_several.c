/* A build for several devices through the cache (frontend_several.h). Kept
 * apart from frontend.c's single-device flow: the all-or-nothing rule (one
 * driver build serves every device, or none runs) differs from one key's
 * lookup-or-compile, and a partial hit must not hold any key's single
 * flight while the driver compiles the others. */
#include <stdio.h>
#include <stdlib.h>

#include "frontend_internal.h"
#include "zecache/frontend_several.h"
#include "zecache/key_files.h"

typedef struct several {
    const zc_frontend *frontend;
    const zc_build_request *request;
    const zc_device_description *const *devices;
    const zc_compiler_identity *const *compilers;
    size_t count;
    const zc_frontend_several_ops *ops;
    void *context;
    zc_key keys[ZC_FRONTEND_MAX_DEVICES];
    char *traces[ZC_FRONTEND_MAX_DEVICES];
    zc_key_files *files[ZC_FRONTEND_MAX_DEVICES];
    zc_artifact *found[ZC_FRONTEND_MAX_DEVICES];      /* NULL: not in the cache */
    zc_lookup_outcome where[ZC_FRONTEND_MAX_DEVICES]; /* of each found one */
    zc_frontend_outcome outcome;
} several;

static zc_cache *cache_of(const several *build)
{
    return build->frontend->cache;
}

static zc_frontend_outcome alone(several *build, zc_frontend_outcome outcome)
{
    return build->ops->build_alone(build->context) ? outcome : ZC_FRONTEND_FAILED;
}

static bool any_compiler(const several *build)
{
    for (size_t i = 0; i < build->count; i++)
        if (build->compilers[i] != NULL)
            return true;
    return false;
}

/* Why the request cannot go through the cache (written in detail), with the
 * bypass reason; false when every device has its key. */
static bool unkeyed(several *build, zc_bypass_reason *reason, char *detail, size_t detail_size)
{
    *reason = ZC_BYPASS_NOT_CACHEABLE;
    if (build->count > ZC_FRONTEND_MAX_DEVICES) {
        snprintf(detail, detail_size, "a build for more than %d devices", ZC_FRONTEND_MAX_DEVICES);
        return true;
    }
    if (atomic_load(build->frontend->hits_off)) {
        snprintf(detail, detail_size,
                 "the driver does not load cached binaries unchanged in this process");
        return true;
    }
    if (any_compiler(build) && zc_compiler_identity_changed()) {
        *reason = ZC_BYPASS_COMPILER_CHANGED;
        snprintf(detail, detail_size, "the compiler loaded is not the one predicted");
        return true;
    }
    for (size_t i = 0; i < build->count; i++) {
        zc_status status =
            zc_frontend_key_files(build->request, build->devices[i], build->compilers[i],
                                  build->frontend->config->binary_cache_trace, &build->keys[i],
                                  &build->traces[i], detail, detail_size, &build->files[i]);
        if (status == ZC_OK)
            continue;
        if (status != ZC_NOT_CACHEABLE) {
            *reason = ZC_BYPASS_CACHE_ERROR;
            snprintf(detail, detail_size, "key: %s", zc_status_name(status));
        }
        return true;
    }
    return false;
}

/* Whether the cache holds every device's entry (each found one kept,
 * counted only once it serves). */
static bool look_up_all(several *build)
{
    bool all = true;
    for (size_t i = 0; i < build->count; i++) {
        if (zc_cache_lookup(cache_of(build), &build->keys[i], &build->found[i], &build->where[i]) !=
            ZC_OK) {
            build->found[i] = NULL;
            all = false;
        }
    }
    return all;
}

/* Whether device i's fresh artifact belongs under its key: the headers the
 * key read are unchanged, and the compiler loaded is the one keyed. */
static bool belongs_under_key(const several *build, size_t i)
{
    if (!zc_key_files_unchanged(build->files[i]))
        return false;
    if (build->compilers[i] == NULL)
        return true;
    zc_compiler_identity_check_loaded();
    return zc_compiler_identity_get(NULL) == build->compilers[i];
}

/* Device i's fresh artifact: stored (or replacing a refused entry) when it
 * was missing, else only counted as the compile it was. */
static void keep_fresh(several *build, size_t i, zc_artifact *fresh, bool replacing)
{
    zc_cache *cache = cache_of(build);
    if (!belongs_under_key(build, i)) {
        zc_cache_count_miss(cache, ZC_NOT_CACHEABLE, NULL);
        zc_cache_count_bypass(cache, ZC_BYPASS_NOT_CACHEABLE,
                              "a header or the compiler changed while the driver compiled: "
                              "nothing stored");
        return;
    }
    if (build->found[i] != NULL && !replacing) {
        zc_cache_count_miss(cache, ZC_OK, fresh);
        return;
    }
    if (replacing) {
        zc_cache_count_miss(cache, ZC_OK, fresh);
        (void)zc_cache_replace(cache, &build->keys[i], fresh, build->traces[i]);
    } else {
        (void)zc_cache_store(cache, &build->keys[i], fresh, build->traces[i]);
    }
    if (build->frontend->config->record_inputs)
        zc_frontend_record(cache, build->request, build->devices[i], build->files[i],
                           &build->keys[i], zc_artifact_meta_of(fresh)->compile_ns);
}

/* The application's call, one driver build for every device. */
static zc_frontend_outcome compile_all(several *build, bool replacing)
{
    zc_artifact *fresh[ZC_FRONTEND_MAX_DEVICES] = {NULL};
    zc_status status = build->ops->compile(build->context, fresh);
    if (status != ZC_OK) {
        for (size_t i = 0; i < build->count; i++)
            zc_cache_count_miss(cache_of(build), status, NULL);
        return ZC_FRONTEND_FAILED;
    }
    for (size_t i = 0; i < build->count; i++) {
        keep_fresh(build, i, fresh[i], replacing);
        zc_artifact_unref(fresh[i]);
    }
    return ZC_FRONTEND_BUILT;
}

static zc_frontend_outcome create_all(several *build)
{
    char detail[256] = "the driver refused them";
    zc_hit_outcome hit = build->ops->create(
        build->context, (const zc_artifact *const *)build->found, detail, sizeof(detail));
    if (hit == ZC_HIT_CREATED) {
        for (size_t i = 0; i < build->count; i++)
            zc_cache_count_hit(cache_of(build), &build->keys[i], build->where[i], build->found[i]);
        return ZC_FRONTEND_PRESENT;
    }
    if (!zc_frontend_hit_refused(build->frontend, hit, detail))
        return alone(build, ZC_FRONTEND_UNCACHED);
    return compile_all(build, true);
}

static void finish(several *build)
{
    for (size_t i = 0; i < build->count && i < ZC_FRONTEND_MAX_DEVICES; i++) {
        zc_frontend_report(zc_frontend_outcome_name(build->outcome), &build->keys[i]);
        zc_artifact_unref(build->found[i]);
        zc_key_files_destroy(build->files[i]);
        free(build->traces[i]);
    }
}

zc_frontend_outcome zc_frontend_build_several(const zc_frontend *frontend,
                                              const zc_build_request *request,
                                              const zc_device_description *const *devices,
                                              const zc_compiler_identity *const *compilers,
                                              size_t count, const zc_frontend_several_ops *ops,
                                              void *context)
{
    several build = {.frontend = frontend,
                     .request = request,
                     .devices = devices,
                     .compilers = compilers,
                     .count = count,
                     .ops = ops,
                     .context = context};
    zc_bypass_reason reason;
    char detail[256] = "";
    if (unkeyed(&build, &reason, detail, sizeof(detail))) {
        build.count = count <= ZC_FRONTEND_MAX_DEVICES ? count : 0;
        build.outcome = ZC_FRONTEND_BYPASS;
        for (size_t i = 0; i < build.count; i++) {
            zc_key_files_destroy(build.files[i]);
            free(build.traces[i]);
        }
        zc_frontend_bypass(frontend->cache, reason, detail);
        return alone(&build, ZC_FRONTEND_BYPASS);
    }
    build.outcome = look_up_all(&build) ? create_all(&build) : compile_all(&build, false);
    finish(&build);
    return build.outcome;
}
