/* Specialization constants the driver accepted for a program
 * (clSetProgramSpecializationConstant), kept by the layer because the
 * driver cannot be asked for them back: the key of the program's build
 * holds them as Level Zero's does (by id, at the width the SPIR-V
 * declares). A value the driver took at a size other than that width is
 * one the key cannot read as the driver does: that build is bypassed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_layer_internal.h"
#include "zecache/spirv.h"

/* SPIR-V scalars are 8 bytes at most; a size beyond is kept as given (so
 * that it matches no declared width), its value cut. */
#define VALUE_MAX 8
/* Distinct ids of one program, beyond which its builds are bypassed: a
 * driver that takes ids its SPIR-V does not declare must not grow the
 * layer's memory without bound. */
#define IDS_MAX 4096

typedef struct set_constant {
    uint32_t id;
    size_t size; /* as the application gave it */
    unsigned char value[VALUE_MAX];
} set_constant;

typedef struct program_constants {
    cl_program program; /* first, as zcc_program_list wants */
    set_constant *constants;
    size_t count, capacity;
} program_constants;

static zcc_program_table table = ZCC_PROGRAM_TABLE_INIT;

static program_constants *record_of(cl_program program)
{
    program_constants *record = zcc_program_list_find(&table.list, program);
    if (record != NULL)
        return record;
    record = calloc(1, sizeof(*record));
    if (record != NULL && !zcc_program_list_add(&table.list, record)) {
        free(record);
        return NULL;
    }
    if (record != NULL)
        record->program = program;
    return record;
}

/* The slot of id in record, added when new; NULL when it cannot be. */
static set_constant *slot_of(program_constants *record, uint32_t id)
{
    for (size_t i = 0; i < record->count; i++)
        if (record->constants[i].id == id)
            return &record->constants[i];
    if (record->count == IDS_MAX)
        return NULL;
    if (record->count == record->capacity) {
        size_t capacity = record->capacity == 0 ? 4 : 2 * record->capacity;
        set_constant *grown = realloc(record->constants, capacity * sizeof(*grown));
        if (grown == NULL)
            return NULL;
        record->constants = grown;
        record->capacity = capacity;
    }
    set_constant *slot = &record->constants[record->count++];
    slot->id = id;
    return slot;
}

bool zcc_spec_constants_record(cl_program program, cl_uint id, size_t size, const void *value)
{
    zcc_program_table_lock(&table);
    program_constants *record = record_of(program);
    set_constant *slot = record != NULL ? slot_of(record, id) : NULL;
    if (slot != NULL) {
        slot->size = size;
        memset(slot->value, 0, sizeof(slot->value));
        memcpy(slot->value, value, size < VALUE_MAX ? size : VALUE_MAX);
    }
    zcc_program_table_unlock(&table);
    return slot != NULL;
}

void zcc_spec_constants_forget(cl_program program)
{
    program_constants *record = zcc_program_table_take(&table, program);
    if (record != NULL)
        free(record->constants);
    free(record);
}

bool zcc_spec_constants_none(void)
{
    return zcc_program_table_empty(&table);
}

bool zcc_spec_constants_set(cl_program program)
{
    if (zcc_program_table_empty(&table))
        return false;
    zcc_program_table_lock(&table);
    const program_constants *record = zcc_program_list_find(&table.list, program);
    bool set = record != NULL && record->count > 0;
    zcc_program_table_unlock(&table);
    return set;
}

/* A copy of program's constants (count 0 when none were set); false when
 * memory runs out. */
static bool copy_of(cl_program program, set_constant **copy, size_t *count)
{
    *copy = NULL;
    *count = 0;
    if (zcc_program_table_empty(&table))
        return true;
    zcc_program_table_lock(&table);
    const program_constants *record = zcc_program_list_find(&table.list, program);
    bool ok = true;
    if (record != NULL && record->count > 0) {
        *copy = malloc(record->count * sizeof(**copy));
        ok = *copy != NULL;
        if (ok) {
            memcpy(*copy, record->constants, record->count * sizeof(**copy));
            *count = record->count;
        }
    }
    zcc_program_table_unlock(&table);
    return ok;
}

/* Whether each constant was set at the width spirv declares for its id. */
static bool widths_declared(const set_constant *constants, size_t count, const void *spirv,
                            size_t spirv_size, char *detail, size_t detail_size)
{
    zc_spirv_spec_constants declared;
    char reason[160];
    if (zc_spirv_scan_spec_constants(spirv, spirv_size, &declared, reason, sizeof(reason)) !=
        ZC_OK) {
        snprintf(detail, detail_size, "specialization constants of IL the layer cannot read: %s",
                 reason);
        return false;
    }
    bool all = true;
    for (size_t i = 0; all && i < count; i++) {
        uint32_t width = zc_spirv_spec_constant_width(&declared, constants[i].id);
        all = width == constants[i].size;
        if (!all)
            snprintf(detail, detail_size,
                     "specialization constant %u set with %zu bytes, declared with %u",
                     (unsigned)constants[i].id, constants[i].size, (unsigned)width);
    }
    zc_spirv_spec_constants_free(&declared);
    return all;
}

bool zcc_spec_constants_for(cl_program program, const zc_build_input *input,
                            zcc_spec_values *values, char *detail, size_t detail_size)
{
    *values = (zcc_spec_values){0};
    set_constant *constants;
    size_t count;
    if (!copy_of(program, &constants, &count)) {
        snprintf(detail, detail_size, "out of memory for specialization constants");
        return false;
    }
    if (count == 0)
        return true;
    if (input->kind != ZC_INPUT_SPIRV ||
        !widths_declared(constants, count, input->bytes, input->size, detail, detail_size)) {
        if (input->kind != ZC_INPUT_SPIRV)
            snprintf(detail, detail_size, "specialization constants on a program not from IL");
        free(constants);
        return false;
    }
    values->ids = malloc(count * sizeof(*values->ids));
    values->values = malloc(count * sizeof(*values->values));
    values->held = constants;
    if (values->ids == NULL || values->values == NULL) {
        zcc_spec_values_free(values);
        snprintf(detail, detail_size, "out of memory for specialization constants");
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        values->ids[i] = constants[i].id;
        values->values[i] = constants[i].value;
    }
    values->count = (uint32_t)count;
    return true;
}

void zcc_spec_values_free(zcc_spec_values *values)
{
    free(values->ids);
    free(values->values);
    free(values->held);
    *values = (zcc_spec_values){0};
}
