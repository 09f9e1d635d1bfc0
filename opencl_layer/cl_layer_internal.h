/* What the OpenCL layer's files share. Nothing here is exported from the
 * library: its version script exports only the four layer entry points. */
#ifndef ZECACHE_CL_LAYER_INTERNAL_H
#define ZECACHE_CL_LAYER_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zecache/artifact.h"
#include "zecache/build_request.h"
#include "zecache/cache.h"
#include "zecache/config.h"
#include "zecache/frontend.h"
#include "zecache/frontend_device.h"
#include "zecache/key.h"
#include "zecache/loaded_check.h"

typedef struct zcc_state {
    /* The functions below this layer (another layer, or the loader's
     * functions that dispatch on the object), as the loader gave them. */
    cl_icd_dispatch next;
    zc_config config;
    zc_cache *cache; /* NULL when the cache is off or could not start */
    /* Set once the driver did not load a cached binary unchanged: no more
     * hits in this process. */
    atomic_bool hits_not_reproduced;
    /* Which hits' "loaded unchanged" check may be the sizes alone. */
    zc_loaded_checks hit_checks;
} zcc_state;

extern zcc_state zcc_layer;

/* ---- cl_entry.c: what an OpenCL entry holds ---- */

typedef struct zcc_entry {
    /* What a hit hands the driver: CL_PROGRAM_BINARIES, or it without the
     * bytes of the SPIR-V it carries when restore is not NULL. */
    const uint8_t *binary;
    size_t binary_size;
    const uint8_t *restore; /* what joins the SPIR-V back (section_cut.h) */
    size_t restore_size;
    /* > 0: restore is the restore part's head, and the SPIR-V's bytes are
     * the first cut_from_il of the program's IL (CL_PROGRAM_IL) */
    size_t cut_from_il;
    size_t whole_size;      /* CL_PROGRAM_BINARIES's size */
    const uint8_t *kernels; /* each kernel's CL_KERNEL_ATTRIBUTES */
    size_t kernels_size;
} zcc_entry;

/* The entry of a build of program (the driver's), with its binary and build
 * log; NULL when the kernels cannot be asked or memory runs out. program
 * NULL: a compiled object's, with no kernels. */
zc_artifact *zcc_entry_create(cl_program program, const unsigned char *binary, size_t size,
                              const char *log, size_t log_length, const zc_artifact_meta *meta);
/* The parts of artifact's entry (pointing into it); false for a bad one. */
bool zcc_entry_read(const zc_artifact *artifact, zcc_entry *entry);
/* Writes the driver's CL_PROGRAM_BINARIES the entry holds (whole_size
 * bytes) to out; il_of is the program whose IL gives back the bytes of an
 * entry stored without them (the hit's, whose IL was keyed; NULL: none).
 * false when those cannot be had (il_of NULL, or memory runs out). */
bool zcc_entry_whole(const zcc_entry *entry, cl_program il_of, uint8_t *out);
/* Whether the binary a hit hands the driver (entry->binary) was cut and
 * holds no intermediate code the driver could build it again from: the
 * driver then either refuses it or keeps it as given (cl_programs.c). */
bool zcc_entry_without_ir(const zcc_entry *entry);
/* The driver's CL_PROGRAM_BINARIES: entry->binary, or one joined into
 * *held (malloc'd; NULL when zcc_entry_whole cannot, then NULL is
 * returned). */
const uint8_t *zcc_entry_whole_binary(const zcc_entry *entry, cl_program il_of, uint8_t **held);
/* The attributes of kernel name in an entry's kernels part. */
bool zcc_entry_kernel_attributes(const uint8_t *kernels, size_t size, const char *name,
                                 const char **attributes, size_t *length);

/* ---- cl_program_list.c: records keyed by the application's program ---- */

/* Records whose first field is their cl_program; the caller locks. */
typedef struct zcc_program_list {
    void **records;
    size_t count, capacity;
} zcc_program_list;

/* false when memory runs out (then record is not added). */
bool zcc_program_list_add(zcc_program_list *list, void *record);
/* program's record, or NULL. */
void *zcc_program_list_find(const zcc_program_list *list, cl_program program);
/* Removes program's record and returns it, or NULL. */
void *zcc_program_list_take(zcc_program_list *list, cl_program program);

/* A process-wide list behind a lock held across fork() (fork_guard.h),
 * whose record count (live) is read without the lock: the layer's common
 * path, a program in no table, is one atomic load. */
typedef struct zcc_program_table {
    pthread_mutex_t lock;
    zcc_program_list list;
    atomic_size_t live;
    atomic_bool guarded;
} zcc_program_table;
#define ZCC_PROGRAM_TABLE_INIT                                                                     \
    {                                                                                              \
        .lock = PTHREAD_MUTEX_INITIALIZER                                                          \
    }

void zcc_program_table_lock(zcc_program_table *table);
/* Publishes the list's count as live, then unlocks. */
void zcc_program_table_unlock(zcc_program_table *table);
/* Removes program's record and returns it (NULL when none; one atomic load
 * when the table is empty). */
void *zcc_program_table_take(zcc_program_table *table, cl_program program);
/* One atomic load: whether the table holds no record. */
bool zcc_program_table_empty(zcc_program_table *table);

/* ---- cl_building.c: programs the layer is building now ---- */

/* CL_SUCCESS when this thread now holds program's build, after waiting for
 * another thread's build of it when wait; else CL_INVALID_OPERATION when
 * another build of it has not completed; CL_OUT_OF_HOST_MEMORY. */
cl_int zcc_building_enter(cl_program program, bool wait);
void zcc_building_leave(cl_program program);

/* ---- cl_hits.c: programs built from the cache ---- */

/* What the application's program (the driver's, created from source or IL,
 * never built by the driver) answers for after a hit: a program the layer
 * made from the cached binary, which kernels come from. */
typedef struct zcc_hit {
    cl_program program; /* the application's: first, as zcc_program_list wants */
    cl_program built;   /* the layer's, from the cached binary */
    cl_device_id device;
    char *options; /* as clBuildProgram was given them ("" for NULL) */
    char *log;     /* the build log of the compile the entry holds */
    size_t log_size;
    size_t live_kernels; /* kernels of built the application holds */
    uint8_t *kernels;    /* the entry's kernel attributes (zcc_entry) */
    size_t kernels_size;
    /* A clCompileProgram hit: built is a compiled object created from the
     * entry's, which answers as compiled with the entry's bytes. */
    bool compiled;
    /* Held when the entry answers CL_PROGRAM_BINARIES (a compiled object,
     * or a binary the driver was handed without its SPIR-V); entry points
     * into it. NULL when built answers. */
    zc_artifact *artifact;
    zcc_entry entry;
    /* A build for several devices: the others, after device (the
     * program's order), each with its build log; 0 and NULL for one. */
    size_t other_count;
    struct zcc_hit_device {
        cl_device_id device;
        char *log;
        size_t log_size;
    } * others;
} zcc_hit;

/* Takes hit (malloc'd, with its strings) into the table, in place of any
 * record of its program; false when memory runs out (then nothing was
 * taken). */
bool zcc_hits_add(zcc_hit *hit);
/* Takes hit (NULL when it could not be made) into the table with built, the
 * layer's program, which it owns from then on: ZC_HIT_CREATED; else built
 * is released, "out of memory" written in detail, and ZC_HIT_REFUSED. */
zc_hit_outcome zcc_hits_add_built(zcc_hit *hit, cl_program built, char *detail, size_t detail_size);
/* Runs fn on the hit of program (the application's) under the table's
 * lock, and returns true; false when program is no hit. */
bool zcc_hits_with(cl_program program, void (*fn)(zcc_hit *hit, void *context), void *context);
/* The layer's program of program's hit, retained (the caller releases it);
 * NULL when program is no hit. */
cl_program zcc_hits_built_of(cl_program program);
/* The application's program whose hit made built; NULL when none. */
cl_program zcc_hits_owner_of(cl_program built);
/* The build's CL_KERNEL_ATTRIBUTES of kernel name of the hit that made
 * built (malloc'd); NULL when built is no hit's or has no such kernel. */
char *zcc_hits_kernel_attributes(cl_program built, const char *name);
/* Counts a kernel made from built, or (delta -1) one released. */
void zcc_hits_count_kernel(cl_program built, int delta);
/* Removes program's hit and returns it (the caller frees it with
 * zcc_hit_free); NULL when program is no hit. */
zcc_hit *zcc_hits_take(cl_program program);
/* Drops program's hit before it is built again: false (hit kept) when
 * kernels of it live, which the driver answers with CL_INVALID_OPERATION. */
bool zcc_hits_drop(cl_program program);
/* Why the key cannot see the whole build of program (specialization
 * constants set, a source string holding a NUL byte); NULL when it can. */
const char *zcc_unkeyable_reason(cl_program program);
/* A copy of the compiled object of program's compile hit (malloc'd); NULL
 * when program is no compile hit. */
void *zcc_hits_object_of(cl_program program, size_t *size);
/* Releases the layer's program and frees hit. */
void zcc_hit_free(zcc_hit *hit);
/* One atomic load: whether any hit is live. */
bool zcc_hits_empty(void);

/* ---- cl_spec_constants.c: specialization constants the driver took ---- */

/* Records a constant the driver accepted for program (the last value of an
 * id wins); false when memory runs out or the program has too many ids
 * (then its builds cannot be keyed). */
bool zcc_spec_constants_record(cl_program program, cl_uint id, size_t size, const void *value);
/* Forgets program's constants (released, or a new program at its address). */
void zcc_spec_constants_forget(cl_program program);
/* Whether program has constants recorded. */
bool zcc_spec_constants_set(cl_program program);
/* One atomic load: whether no program has constants recorded. */
bool zcc_spec_constants_none(void);

/* A program's constants as the key takes them (zc_spec_constants). */
typedef struct zcc_spec_values {
    uint32_t count;
    uint32_t *ids;
    const void **values;
    void *held; /* what values point into */
} zcc_spec_values;

/* The constants set for program, whose input (as the driver holds it) is
 * input: count 0 when none were set; false, with why in detail, when the
 * key cannot hold them as the driver took them (a size other than the
 * width the IL declares, IL that cannot be read, no IL). */
bool zcc_spec_constants_for(cl_program program, const zc_build_input *input,
                            zcc_spec_values *values, char *detail, size_t detail_size);
void zcc_spec_values_free(zcc_spec_values *values);

/* ---- cl_il_digests.c: the digest of a large IL, made at its create ---- */

/* IL below this is read back at the build: cheaper than keeping a record. */
#define ZCC_IL_DIGEST_MIN_SIZE ((size_t)64 << 10)
/* Notes the digest (zc_spirv_digest) of program's IL, length bytes at il
 * (the application's buffer, valid for the create call), when it is large
 * SPIR-V; else, or when memory runs out, nothing. */
void zcc_il_digest_note(cl_program program, const void *il, size_t length);
/* The noted digest and size of program's IL; false when none was noted. */
bool zcc_il_digest_of(cl_program program, size_t *size, uint8_t digest[ZC_SHA256_SIZE]);
/* Forgets program's digest (released, or a new program at its address). */
void zcc_il_digest_forget(cl_program program);
/* One atomic load: whether no digest is noted. */
bool zcc_il_digests_none(void);

/* ---- cl_programs.c (builds), cl_compile.c, cl_link.c, cl_program_life.c
 * (the rest) ---- */

typedef void(CL_CALLBACK *zcc_notify)(cl_program, void *);

/* What clCompileProgram adds to a build: its headers as given, and as the
 * key holds them. */
typedef struct zcc_compile_args {
    cl_uint num_input_headers;
    const cl_program *input_headers;
    const char **header_include_names;
    uint32_t header_count;
    const zc_named_header *headers;
    const char *bypass; /* why the headers cannot be keyed; NULL when they can */
} zcc_compile_args;

/* Runs a clBuildProgram (compile NULL) or clCompileProgram call through
 * the cache, or the driver alone; the application's callback called as the
 * driver would; the call's result. */
cl_int zcc_build_run(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                     const char *options, zcc_notify notify, void *user_data,
                     const zcc_compile_args *compile);
/* Each of count devices' binary of program (binaries[i] malloc'd, NULL
 * when not read; free them with zcc_binaries_free whatever the result). */
bool zcc_binaries_of(cl_program program, cl_uint count, size_t *sizes, unsigned char **binaries);
void zcc_binaries_free(cl_uint count, unsigned char **binaries);
/* The binary of a program built for one device (malloc'd); NULL on failure. */
unsigned char *zcc_binary_of(cl_program program, size_t *size);
/* cl_loaded_check.c: whether built, made from binaries for count devices
 * with options, gives back exactly each device's binary: the driver did not
 * rebuild them from the intermediate code they hold (a debug key, a
 * debugger). Checked in full or by the sizes, as zecache/loaded_check.h
 * decides; without_ir: the binaries hold no intermediate code
 * (zcc_entry_without_ir). */
bool zcc_loaded_unchanged(cl_program built, cl_uint count, const cl_device_id *devices,
                          const char *options, const size_t *sizes,
                          const unsigned char *const *binaries, bool without_ir,
                          zc_faulted_buffer *prepared);
/* The buffer zecache/loaded_check.h prepares for the check of a program for
 * device with options made from binary (prepared, above: zcc_loaded_unchanged
 * frees it), started before the driver makes it; NULL when none is needed or
 * to be had. */
zc_faulted_buffer *zcc_check_prepare(cl_device_id device, const char *options,
                                     const unsigned char *binary, size_t size, bool without_ir);
/* The entry of binary, which the driver made of program for device in
 * compile_ns, with the device's build log, and with kernels each kernel's
 * attributes (a compiled object has none); NULL on failure. */
zc_artifact *zcc_entry_made(cl_program program, cl_device_id device, bool kernels,
                            const zc_artifact_meta *device_meta, uint64_t compile_ns,
                            const unsigned char *binary, size_t binary_size);
/* zcc_entry_made of program's one binary, timed from start. */
zc_status zcc_entry_of(cl_program program, cl_device_id device, bool kernels,
                       const zc_artifact_meta *device_meta, uint64_t start, zc_artifact **out);
/* What the layer's program made from an entry is for. */
typedef enum zcc_made_as {
    ZCC_MADE_HIT,     /* a build hit's, the entry answering its binary */
    ZCC_MADE_OBJECT,  /* a compile hit's: a compiled object, as created */
    ZCC_MADE_PROGRAM, /* the application's own (a link's): the whole binary */
} zcc_made_as;
/* The layer's program (*built) from artifact's binary for device: built
 * with options, or as created for ZCC_MADE_OBJECT; checked to give back
 * the bytes it was made from (an executable). ZC_HIT_REFUSED with the
 * driver's answer in detail, ZC_HIT_REBUILT (nothing left), or
 * ZC_HIT_CREATED with *entry read from artifact. */
zc_hit_outcome zcc_program_of_entry(const zc_artifact *artifact, cl_context context,
                                    cl_device_id device, const char *options, zcc_made_as as,
                                    cl_program il_of, cl_program *built, zcc_entry *entry,
                                    char *detail, size_t detail_size);
/* The program's IL, else its source, as the driver holds it (malloc'd);
 * NULL when it has neither. */
void *zcc_input_of(cl_program program, zc_build_input *input);
/* The program's IL as the driver holds it (malloc'd, *size bytes); NULL
 * when it has none. */
void *zcc_il_of(cl_program program, size_t *size);
/* The stand-in for the application's callback on the cached path: notes in
 * *(bool *)notified that the driver called it. */
void CL_CALLBACK zcc_note_notified(cl_program program, void *notified);

typedef void(CL_CALLBACK *zcc_notify)(cl_program, void *);

/* One clBuildProgram call's arguments. */
typedef struct zcc_build_args {
    cl_program program;
    cl_uint num_devices;
    const cl_device_id *device_list;
    const char *options;
    zcc_notify notify;
    void *user_data;
} zcc_build_args;
/* The driver's clBuildProgram with args. */
cl_int zcc_build_with_driver(const zcc_build_args *args);

/* The front end's request for a build of program with options: its IL or
 * source (as zcc_input_of) and the specialization constants set;
 * false, with why in detail, when it has neither or the key cannot hold
 * the constants. request.inputs points into the struct: keep it in place,
 * and free it with zcc_request_free. */
typedef struct zcc_request {
    zc_build_input input;
    zcc_spec_values constants;
    zc_build_request request;
    void *bytes;
    uint8_t digest[ZC_SHA256_SIZE]; /* input.spirv_digest's, when noted */
} zcc_request;
/* A large IL's request is keyed from the digest noted at its create
 * (cl_il_digests.c): its bytes are NULL until zcc_request_read_input. */
bool zcc_request_of(cl_program program, const char *options, zcc_request *out, char *detail,
                    size_t detail_size);
/* Reads program's input into request when it holds only its digest; false
 * when it cannot be read (or is not the one the digest was made of). */
bool zcc_request_read_input(cl_program program, zcc_request *request);
void zcc_request_free(zcc_request *request);
/* The front end the layer's requests go to. */
zc_frontend zcc_frontend(void);
/* A program's build log for device (malloc'd, NUL-terminated, its length
 * in *length); NULL on failure. */
char *zcc_build_log_of(cl_program program, cl_device_id device, size_t *length);
/* Runs build(context, notify, user_data) as the only build of program (a
 * second one waits, or when refuses gets CL_INVALID_OPERATION, as the
 * driver does), after dropping program's hit, with a stand-in for the
 * application's callback, which it then calls once the layer is done with
 * the program. build returns the call's result. */
cl_int zcc_build_guarded(cl_program program, bool refuses, zcc_notify notify, void *user_data,
                         cl_int (*build)(void *context, zcc_notify notify, void *user_data),
                         void *context);

/* ---- cl_multi_device.c: a build of a program of several devices ---- */

/* Serves clBuildProgram for a program of several devices (its result in
 * *result) and returns true; false when program has one device or the
 * arguments are ones the driver answers with an error (the single-device
 * path answers those). */
bool zcc_build_several(cl_program program, cl_uint num_devices, const cl_device_id *device_list,
                       const char *options, zcc_notify notify, void *user_data, cl_int *result);

cl_int CL_API_CALL zcc_build_program(cl_program program, cl_uint num_devices,
                                     const cl_device_id *device_list, const char *options,
                                     void(CL_CALLBACK *notify)(cl_program, void *),
                                     void *user_data);
cl_int CL_API_CALL zcc_compile_program(cl_program program, cl_uint num_devices,
                                       const cl_device_id *device_list, const char *options,
                                       cl_uint num_input_headers, const cl_program *input_headers,
                                       const char **header_include_names,
                                       void(CL_CALLBACK *notify)(cl_program, void *),
                                       void *user_data);
cl_program CL_API_CALL zcc_link_program(cl_context context, cl_uint num_devices,
                                        const cl_device_id *device_list, const char *options,
                                        cl_uint num_input_programs,
                                        const cl_program *input_programs,
                                        void(CL_CALLBACK *notify)(cl_program, void *),
                                        void *user_data, cl_int *errcode_ret);
cl_int CL_API_CALL zcc_release_program(cl_program program);
/* A new program (NULL too): records of one released before at its address
 * go. */
cl_program zcc_program_born(cl_program program);
/* Each way a program comes to exist forgets any record of a program that
 * lived at the same address before. */
cl_program CL_API_CALL zcc_create_program_with_source(cl_context context, cl_uint count,
                                                      const char **strings, const size_t *lengths,
                                                      cl_int *errcode_ret);
cl_program CL_API_CALL zcc_create_program_with_il(cl_context context, const void *il, size_t length,
                                                  cl_int *errcode_ret);
cl_program CL_API_CALL zcc_create_program_with_binary(cl_context context, cl_uint num_devices,
                                                      const cl_device_id *device_list,
                                                      const size_t *lengths,
                                                      const unsigned char **binaries,
                                                      cl_int *binary_status, cl_int *errcode_ret);
cl_program CL_API_CALL zcc_create_program_with_built_in_kernels(cl_context context,
                                                                cl_uint num_devices,
                                                                const cl_device_id *device_list,
                                                                const char *kernel_names,
                                                                cl_int *errcode_ret);
cl_int CL_API_CALL zcc_set_program_specialization_constant(cl_program program, cl_uint spec_id,
                                                           size_t spec_size,
                                                           const void *spec_value);

/* ---- cl_queries.c: what a hit answers as the build would ---- */

/* Answers a query with bytes (size of them) as OpenCL does: CL_INVALID_VALUE
 * when value is too small for them. */
cl_int zcc_answer(const void *bytes, size_t bytes_size, size_t size, void *value, size_t *size_ret);

cl_int CL_API_CALL zcc_get_program_info(cl_program program, cl_program_info name, size_t size,
                                        void *value, size_t *size_ret);
cl_int CL_API_CALL zcc_get_program_build_info(cl_program program, cl_device_id device,
                                              cl_program_build_info name, size_t size, void *value,
                                              size_t *size_ret);

/* ---- cl_kernels.c: kernels of a hit ---- */

cl_kernel CL_API_CALL zcc_create_kernel(cl_program program, const char *name, cl_int *errcode_ret);
cl_int CL_API_CALL zcc_create_kernels_in_program(cl_program program, cl_uint num_kernels,
                                                 cl_kernel *kernels, cl_uint *num_kernels_ret);
cl_kernel CL_API_CALL zcc_clone_kernel(cl_kernel kernel, cl_int *errcode_ret);
cl_int CL_API_CALL zcc_release_kernel(cl_kernel kernel);
cl_int CL_API_CALL zcc_get_kernel_info(cl_kernel kernel, cl_kernel_info name, size_t size,
                                       void *value, size_t *size_ret);

/* ---- cl_extensions.c: extension functions that take a program ---- */

void *CL_API_CALL zcc_get_extension_function_address_for_platform(cl_platform_id platform,
                                                                  const char *name);
void *CL_API_CALL zcc_get_extension_function_address(const char *name);

/* ---- cl_warm_up.c: the process's one-time costs, at a context ---- */

cl_context CL_API_CALL zcc_create_context(const cl_context_properties *properties,
                                          cl_uint num_devices, const cl_device_id *devices,
                                          void(CL_CALLBACK *notify)(const char *, const void *,
                                                                    size_t, void *),
                                          void *user_data, cl_int *errcode_ret);
cl_context CL_API_CALL
zcc_create_context_from_type(const cl_context_properties *properties, cl_device_type type,
                             void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *),
                             void *user_data, cl_int *errcode_ret);

/* ---- cl_devices.c: a device described once ---- */

typedef struct zcc_device zcc_device;

/* The description of device, made at its first build and kept for the
 * process; NULL with the status (ZC_NOT_CACHEABLE: a compiler that cannot
 * be identified) and the reason when it cannot be described. */
const zcc_device *zcc_device_of(cl_device_id device, zc_status *status, char *reason,
                                size_t reason_size);
const zc_device_description *zcc_device_description(const zcc_device *device);
/* IGC's identity for Intel's driver; NULL for a driver's own compiler. */
const zc_compiler_identity *zcc_device_compiler(const zcc_device *device);

#endif
