/* The table of hits: the application's programs that answer from a program
 * the layer built from a cached binary. The common path (no hits) is one
 * atomic load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"

static zcc_program_table table = ZCC_PROGRAM_TABLE_INIT;

bool zcc_hits_add(zcc_hit *hit)
{
    zcc_program_table_lock(&table);
    /* One record per program: a stale one would answer for the new. */
    zcc_hit *stale = zcc_program_list_take(&table.list, hit->program);
    bool added = zcc_program_list_add(&table.list, hit);
    zcc_program_table_unlock(&table);
    zcc_hit_free(stale);
    return added;
}

zc_hit_outcome zcc_hits_add_built(zcc_hit *hit, cl_program built, char *detail, size_t detail_size)
{
    if (hit != NULL)
        hit->built = built;
    if (hit != NULL && zcc_hits_add(hit))
        return ZC_HIT_CREATED;
    if (hit != NULL)
        zcc_hit_free(hit);
    else
        zcc_layer.next.clReleaseProgram(built);
    snprintf(detail, detail_size, "out of memory");
    return ZC_HIT_REFUSED;
}

bool zcc_hits_with(cl_program program, void (*fn)(zcc_hit *hit, void *context), void *context)
{
    if (zcc_hits_empty())
        return false;
    zcc_program_table_lock(&table);
    zcc_hit *hit = zcc_program_list_find(&table.list, program);
    if (hit != NULL)
        fn(hit, context);
    zcc_program_table_unlock(&table);
    return hit != NULL;
}

cl_program zcc_hits_built_of(cl_program program)
{
    if (zcc_hits_empty())
        return NULL;
    zcc_program_table_lock(&table);
    zcc_hit *hit = zcc_program_list_find(&table.list, program);
    cl_program built = hit != NULL ? hit->built : NULL;
    /* Retained so a release racing with the caller cannot free it. */
    if (built != NULL)
        zcc_layer.next.clRetainProgram(built);
    zcc_program_table_unlock(&table);
    return built;
}

/* The hit whose layer's program is built; NULL when none. Under the lock. */
static zcc_hit *hit_of_built(cl_program built)
{
    for (size_t i = 0; i < table.list.count; i++) {
        zcc_hit *hit = table.list.records[i];
        if (hit->built == built)
            return hit;
    }
    return NULL;
}

cl_program zcc_hits_owner_of(cl_program built)
{
    if (zcc_hits_empty())
        return NULL;
    zcc_program_table_lock(&table);
    zcc_hit *hit = hit_of_built(built);
    cl_program owner = hit != NULL ? hit->program : NULL;
    zcc_program_table_unlock(&table);
    return owner;
}

char *zcc_hits_kernel_attributes(cl_program built, const char *name)
{
    if (zcc_hits_empty())
        return NULL;
    zcc_program_table_lock(&table);
    zcc_hit *hit = hit_of_built(built);
    const char *attributes = NULL;
    size_t length = 0;
    char *copy = NULL;
    if (hit != NULL &&
        zcc_entry_kernel_attributes(hit->kernels, hit->kernels_size, name, &attributes, &length))
        copy = strndup(attributes, length);
    zcc_program_table_unlock(&table);
    return copy;
}

void zcc_hits_count_kernel(cl_program built, int delta)
{
    if (zcc_hits_empty())
        return;
    zcc_program_table_lock(&table);
    zcc_hit *hit = hit_of_built(built);
    if (hit != NULL && delta > 0)
        hit->live_kernels++;
    else if (hit != NULL && hit->live_kernels > 0)
        hit->live_kernels--;
    zcc_program_table_unlock(&table);
}

typedef struct object_copy {
    void *bytes;
    size_t size;
} object_copy;

static void copy_object(zcc_hit *hit, void *context)
{
    object_copy *copy = context;
    copy->bytes = hit->compiled ? malloc(hit->entry.whole_size) : NULL;
    if (copy->bytes != NULL && !zcc_entry_whole(&hit->entry, hit->program, copy->bytes)) {
        free(copy->bytes);
        copy->bytes = NULL;
    }
    copy->size = copy->bytes != NULL ? hit->entry.whole_size : 0;
}

void *zcc_hits_object_of(cl_program program, size_t *size)
{
    object_copy copy = {NULL, 0};
    (void)zcc_hits_with(program, copy_object, &copy);
    *size = copy.size;
    return copy.bytes;
}

zcc_hit *zcc_hits_take(cl_program program)
{
    if (zcc_hits_empty())
        return NULL;
    zcc_program_table_lock(&table);
    zcc_hit *hit = zcc_program_list_take(&table.list, program);
    zcc_program_table_unlock(&table);
    return hit;
}

void zcc_hit_free(zcc_hit *hit)
{
    if (hit == NULL)
        return;
    /* Kernels made from it keep the driver's object alive as long as they
     * live; this drops the layer's own reference. */
    if (hit->built != NULL)
        zcc_layer.next.clReleaseProgram(hit->built);
    free(hit->options);
    free(hit->log);
    free(hit->kernels);
    zc_artifact_unref(hit->artifact);
    for (size_t i = 0; i < hit->other_count; i++)
        free(hit->others[i].log);
    free(hit->others);
    free(hit);
}

bool zcc_hits_empty(void)
{
    return zcc_program_table_empty(&table);
}
