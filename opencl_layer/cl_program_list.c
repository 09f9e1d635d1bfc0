/* A growable list of records keyed by the application's program, and the
 * locked tables the layer keeps of them (hits, programs the key cannot see
 * whole, specialization constants). A process has few programs, so a plain
 * array searched in order is enough. */
#include <stdlib.h>

#include "cl_layer_internal.h"
#include "zecache/fork_guard.h"

/* Every record starts with its program. */
static cl_program program_of(const void *record)
{
    return *(const cl_program *)record;
}

static size_t index_of(const zcc_program_list *list, cl_program program)
{
    for (size_t i = 0; i < list->count; i++)
        if (program_of(list->records[i]) == program)
            return i;
    return list->count;
}

bool zcc_program_list_add(zcc_program_list *list, void *record)
{
    if (list->count == list->capacity) {
        size_t capacity = list->capacity == 0 ? 16 : 2 * list->capacity;
        void **grown = realloc(list->records, capacity * sizeof(*grown));
        if (grown == NULL)
            return false;
        list->records = grown;
        list->capacity = capacity;
    }
    list->records[list->count++] = record;
    return true;
}

void *zcc_program_list_find(const zcc_program_list *list, cl_program program)
{
    size_t i = index_of(list, program);
    return i < list->count ? list->records[i] : NULL;
}

void *zcc_program_list_take(zcc_program_list *list, cl_program program)
{
    size_t i = index_of(list, program);
    if (i == list->count)
        return NULL;
    void *record = list->records[i];
    list->records[i] = list->records[--list->count];
    return record;
}

void zcc_program_table_lock(zcc_program_table *table)
{
    zc_fork_guard_lock(&table->lock, &table->guarded);
}

void zcc_program_table_unlock(zcc_program_table *table)
{
    atomic_store(&table->live, table->list.count);
    pthread_mutex_unlock(&table->lock);
}

void *zcc_program_table_take(zcc_program_table *table, cl_program program)
{
    if (zcc_program_table_empty(table))
        return NULL;
    zcc_program_table_lock(table);
    void *record = zcc_program_list_take(&table->list, program);
    zcc_program_table_unlock(table);
    return record;
}

bool zcc_program_table_empty(zcc_program_table *table)
{
    return atomic_load(&table->live) == 0;
}
