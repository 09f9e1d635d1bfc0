/* A non-IGC driver's compiler identified from one of its functions, and the
 * host CPU: what PoCL's keys hold in place of IGC's identity. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zecache/driver_compiler.h"
#include "zecache/key.h"

#define POCL_LIBRARY "libpocl.so.2"
/* The one entry point an ICD-only PoCL exports; the layer passes the
 * driver's clBuildProgram from its dispatch table instead. */
#define POCL_SYMBOL "POclIcdGetPlatformIDsKHR"

/* The trace of a key holding what add adds, and the key. */
typedef zc_status (*add_fn)(zc_key_builder *builder, const void *context);

static char *trace_of(add_fn add, const void *context, zc_key *key)
{
    zc_key_builder *builder = NULL;
    cr_assert_eq(zc_key_builder_create(true, &builder), ZC_OK);
    cr_assert_eq(add(builder, context), ZC_OK, "%s", zc_key_builder_reason(builder));
    cr_assert_eq(zc_key_finish(builder, key), ZC_OK);
    char *trace = strdup(zc_key_builder_trace(builder));
    zc_key_builder_destroy(builder);
    return trace;
}

static zc_status add_cpu(zc_key_builder *builder, const void *context)
{
    (void)context;
    return zc_key_add_host_cpu(builder);
}

static zc_status add_compiler(zc_key_builder *builder, const void *context)
{
    return zc_key_add_driver_compiler(builder, context);
}

static void pin_to_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    cr_assert_eq(sched_setaffinity(0, sizeof set, &set), 0, "cannot run on CPU %d", cpu);
}

/* Every core of the machine gives the same part (APIC ids and core counts
 * are masked), of the size the leaves kept make. */
Test(host_cpu, same_on_every_core)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 2)
        cr_skip_test("SKIPPED: one CPU online: nothing to compare the first with");
    zc_key first, other;
    pin_to_cpu(0);
    char *trace = trace_of(add_cpu, NULL, &first);
#if defined(__x86_64__)
    cr_assert_not_null(strstr(trace, "---- hardware: host cpu ----\nsize: 152\n"), "%s", trace);
#endif
    free(trace);
    for (int cpu = 1; cpu < cpus && cpu < 64; cpu++) {
        pin_to_cpu(cpu);
        free(trace_of(add_cpu, NULL, &other));
        cr_assert(zc_key_equal(&first, &other), "CPU %d describes itself otherwise than CPU 0",
                  cpu);
    }
}

static zc_driver_compiler *identify_symbol(const char *library, const char *symbol)
{
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL)
        return NULL;
    void *function = dlsym(handle, symbol);
    cr_assert_not_null(function, "%s has no %s", library, symbol);
    zc_driver_compiler *compiler = NULL;
    char reason[256] = "";
    cr_assert_eq(zc_driver_compiler_identify(function, &compiler, reason, sizeof reason), ZC_OK,
                 "%s", reason);
    return compiler;
}

/* Any library: itself and what it needs, each by the name it is needed by. */
Test(driver_compiler, a_library_and_what_it_needs)
{
    zc_driver_compiler *compiler = identify_symbol("libz.so.1", "zlibVersion");
    cr_assert_not_null(compiler, "libz.so.1: %s", dlerror());
    cr_assert(!zc_driver_compiler_is_pocl(compiler));
    cr_assert_not_null(strstr(zc_driver_compiler_path(compiler), "/libz.so.1"));
    zc_key key;
    char *trace = trace_of(add_compiler, compiler, &key);
    const char *self = strstr(trace, "---- driver compiler library ----\nname: libz.so.1\n");
    const char *libc = strstr(trace, "---- driver compiler library ----\nname: libc.so.6\n");
    cr_assert(self != NULL && libc != NULL && self < libc, "%s", trace);
    cr_assert_null(strstr(trace, "driver compiler files"), "%s", trace);
    free(trace);
    zc_driver_compiler_destroy(compiler);
}

Test(driver_compiler, an_address_in_no_library)
{
    zc_driver_compiler *compiler = (zc_driver_compiler *)1;
    char reason[256] = "";
    int *heap = calloc(1, sizeof *heap);
    cr_assert_eq(zc_driver_compiler_identify(heap, &compiler, reason, sizeof reason),
                 ZC_NOT_CACHEABLE);
    cr_assert_null(compiler);
    cr_assert_str_eq(reason, "the driver's function is in no loaded library");
    free(heap);
    zc_key_builder *builder = NULL;
    cr_assert_eq(zc_key_builder_create(false, &builder), ZC_OK);
    cr_assert_eq(zc_key_add_driver_compiler(builder, NULL), ZC_ERR_INVALID_ARG);
    zc_key_builder_destroy(builder);
}

/* PoCL: its closure holds LLVM and clang, its directories' files are keyed,
 * and so are the POCL_ variables that change code, but not the others. */
Test(driver_compiler, pocl)
{
    setenv("POCL_DEBUG", "all", 1);
    zc_driver_compiler *compiler = identify_symbol(POCL_LIBRARY, POCL_SYMBOL);
    if (compiler == NULL)
        cr_skip_test("SKIPPED: %s is not installed (pocl-opencl-icd)", POCL_LIBRARY);
    cr_assert(zc_driver_compiler_is_pocl(compiler));
    zc_key plain;
    char *trace = trace_of(add_compiler, compiler, &plain);
    cr_assert_not_null(strstr(trace, "name: libclang-cpp.so."), "%s", trace);
    cr_assert_not_null(strstr(trace, "name: libLLVM-"), "%s", trace);
    cr_assert_not_null(strstr(trace, "/pocl/libpocl-devices-"), "%s", trace);
    cr_assert_not_null(strstr(trace, "/share/pocl/include/_kernel.h: file "), "%s", trace);
    cr_assert_not_null(strstr(trace, "/clang: directory "), "%s", trace);
    cr_assert_null(strstr(trace, "POCL_DEBUG"), "%s", trace);
    free(trace);
    zc_driver_compiler_destroy(compiler);

    setenv("POCL_WORK_GROUP_METHOD", "loopvec", 1);
    setenv("POCL_DEBUG", "err", 1);
    setenv("POCL_KERNEL_CACHE", "0", 1);
    compiler = identify_symbol(POCL_LIBRARY, POCL_SYMBOL);
    zc_key changed;
    trace = trace_of(add_compiler, compiler, &changed);
    cr_assert_not_null(strstr(trace, "---- driver compiler variables ----\n"
                                     "POCL_WORK_GROUP_METHOD=loopvec\n"),
                       "%s", trace);
    cr_assert(!zc_key_equal(&plain, &changed));
    free(trace);
    zc_driver_compiler_destroy(compiler);

    unsetenv("POCL_WORK_GROUP_METHOD");
    compiler = identify_symbol(POCL_LIBRARY, POCL_SYMBOL);
    zc_key back;
    free(trace_of(add_compiler, compiler, &back));
    cr_assert(zc_key_equal(&plain, &back), "only not-code variables differ, yet the keys do");
    zc_driver_compiler_destroy(compiler);
}
