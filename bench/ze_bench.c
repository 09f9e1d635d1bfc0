/* ze_bench: what an application sees of zeModuleCreate -- the wall time
 * inside each call, nothing around it -- for a list of modules, so the same
 * program measures the driver alone, the driver's own cache, the zecache
 * layer and the floor (modules made from their native binaries) when
 * bench/bench_layer.sh runs it with different environments.
 *
 *   ze_bench [options] PATH...
 *
 * PATH is a .spv file (SPIR-V), a .bin file (a native binary, created with
 * ZE_MODULE_FORMAT_NATIVE) or a directory, which stands for its *.spv files
 * in name order.
 *
 *   --floor            compile each SPIR-V module first (untimed) and time
 *                      creating the modules from their native binaries
 *   --repeat K         after the first pass over all modules, time K more
 *                      passes in the same process (the layer's memory hits)
 *   --pair-native      after each of those passes, time a pass creating
 *                      the modules from the native binaries the second pass
 *                      made: the floor in the same process, under the same
 *                      load (through the layer, a bypass)
 *   --rotate R         start the list at its R-th module (R mod count), so
 *                      each repetition of a run puts another module first
 *   --save-native DIR  write each module's native binary to DIR/<name>.bin
 *                      (untimed), for later runs that create the modules
 *                      from those files (the floor in a new process)
 *
 * Output, one line each, times in milliseconds:
 *   module <name> first <ms> [repeat <median ms of the K passes> [native <same>]]
 *   total first <ms> [repeat <sum of the per-module medians> [native <same>]]
 *   start <ms>: zeInit through zeContextCreate (where a layer may do its
 *   one-time work: it is shown, not hidden)
 *
 * A benchmark, not a test: it fails only when a module cannot be created. */
#include <dirent.h>
#include <errno.h>
#include <level_zero/ze_api.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ze_common.h"

#define MAX_MODULES 256
#define MAX_REPEAT 1000

typedef struct module_input {
    char *path;
    const char *name; /* inside path */
    ze_module_format_t format;
    void *bytes;
    size_t size;
    double first_ms;
    double *repeat_ms; /* K samples */
    void *native;      /* --pair-native: the binary the first pass made */
    size_t native_size;
    double *native_ms; /* K samples */
} module_input;

typedef struct bench_options {
    bool floor;
    bool pair_native;
    unsigned repeat;
    unsigned rotate;
    const char *save_native_dir;
} bench_options;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "ze_bench: %s%s%s\n", what, detail != NULL ? ": " : "",
            detail != NULL ? detail : "");
    exit(1);
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size != 0 ? size : 1);
    if (p == NULL)
        die("out of memory", NULL);
    return p;
}

/* ---- inputs ---- */

static void *read_whole_file(const char *path, size_t *size)
{
    void *data = ze_common_read_file(path, size);
    if (data == NULL)
        die("cannot read", path);
    return data;
}

static bool has_suffix(const char *name, const char *suffix)
{
    size_t length = strlen(name), suffix_length = strlen(suffix);
    return length > suffix_length && strcmp(name + length - suffix_length, suffix) == 0;
}

static void add_file(module_input *modules, size_t *count, const char *path)
{
    if (*count == MAX_MODULES)
        die("too many modules", path);
    module_input *module = &modules[(*count)++];
    module->path = strdup(path);
    if (module->path == NULL)
        die("out of memory", NULL);
    const char *slash = strrchr(module->path, '/');
    module->name = slash != NULL ? slash + 1 : module->path;
    module->format = has_suffix(path, ".bin") ? ZE_MODULE_FORMAT_NATIVE : ZE_MODULE_FORMAT_IL_SPIRV;
    module->bytes = read_whole_file(path, &module->size);
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_directory(module_input *modules, size_t *count, DIR *dir, const char *dir_path)
{
    char *names[MAX_MODULES];
    size_t found = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        if (has_suffix(e->d_name, ".spv") && found < MAX_MODULES &&
            (names[found] = strdup(e->d_name)) != NULL)
            found++;
    qsort(names, found, sizeof(names[0]), compare_strings);
    for (size_t i = 0; i < found; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", dir_path, names[i]) >= (int)sizeof(path))
            die("path too long", names[i]);
        add_file(modules, count, path);
        free(names[i]);
    }
}

static void add_path(module_input *modules, size_t *count, const char *path)
{
    DIR *dir = opendir(path);
    if (dir == NULL) {
        add_file(modules, count, path);
        return;
    }
    add_directory(modules, count, dir, path);
    closedir(dir);
}

/* ---- Level Zero ---- */

static void open_level_zero(ze_common_device *l0)
{
    ze_result_t result = ze_common_open(l0);
    if (result != ZE_RESULT_SUCCESS) {
        char code[32];
        snprintf(code, sizeof(code), "0x%x", (unsigned)result);
        die("Level Zero setup failed", code);
    }
}

/* Creates a module and returns how long zeModuleCreate took. */
static double create_from(const ze_common_device *l0, const char *name, ze_module_format_t format,
                          const void *bytes, size_t size, ze_module_handle_t *module)
{
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = format,
                             .inputSize = size,
                             .pInputModule = bytes,
                             .pBuildFlags = ""};
    double start = ze_common_now_ms();
    ze_result_t result = zeModuleCreate(l0->context, l0->device, &desc, module, NULL);
    double elapsed = ze_common_now_ms() - start;
    if (result != ZE_RESULT_SUCCESS) {
        fprintf(stderr, "ze_bench: zeModuleCreate(%s) failed: 0x%x\n", name, (unsigned)result);
        exit(1);
    }
    return elapsed;
}

static double create_module(const ze_common_device *l0, const module_input *input,
                            ze_module_handle_t *module)
{
    return create_from(l0, input->name, input->format, input->bytes, input->size, module);
}

static void *native_binary_of(ze_module_handle_t module, size_t *size)
{
    *size = 0;
    if (zeModuleGetNativeBinary(module, size, NULL) != ZE_RESULT_SUCCESS || *size == 0)
        die("zeModuleGetNativeBinary failed", NULL);
    void *binary = xmalloc(*size);
    if (zeModuleGetNativeBinary(module, size, binary) != ZE_RESULT_SUCCESS)
        die("zeModuleGetNativeBinary failed", NULL);
    return binary;
}

static void save_native(const char *dir, const module_input *input, ze_module_handle_t module)
{
    char path[PATH_MAX];
    size_t size;
    void *binary = native_binary_of(module, &size);
    int length = snprintf(path, sizeof(path), "%s/%.*s.bin", dir,
                          (int)(strlen(input->name) - (has_suffix(input->name, ".spv") ? 4 : 0)),
                          input->name);
    FILE *file = length > 0 && length < (int)sizeof(path) ? fopen(path, "wb") : NULL;
    if (file == NULL || fwrite(binary, 1, size, file) != size || fclose(file) != 0)
        die("cannot write", path);
    free(binary);
}

/* --floor: the module's input becomes its native binary, compiled here. */
static void replace_by_native(const ze_common_device *l0, module_input *input)
{
    if (input->format == ZE_MODULE_FORMAT_NATIVE)
        return;
    ze_module_handle_t module;
    (void)create_module(l0, input, &module);
    free(input->bytes);
    input->bytes = native_binary_of(module, &input->size);
    input->format = ZE_MODULE_FORMAT_NATIVE;
    zeModuleDestroy(module);
}

/* ---- timing ---- */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *samples, unsigned count)
{
    qsort(samples, count, sizeof(samples[0]), compare_doubles);
    return count % 2 ? samples[count / 2] : (samples[count / 2 - 1] + samples[count / 2]) / 2.0;
}

/* One pass over all modules, the list started at its rotate-th entry. pass 0
 * is the first; pass k > 0 records the k-th repeat sample. */
static void run_pass(const ze_common_device *l0, module_input *modules, size_t count,
                     const bench_options *options, unsigned pass)
{
    for (size_t n = 0; n < count; n++) {
        module_input *input = &modules[(n + options->rotate) % count];
        ze_module_handle_t module;
        double elapsed = create_module(l0, input, &module);
        if (pass == 0)
            input->first_ms = elapsed;
        else
            input->repeat_ms[pass - 1] = elapsed;
        if (pass == 0 && options->save_native_dir != NULL)
            save_native(options->save_native_dir, input, module);
        /* Not in the first pass, the one compared across processes: reading
         * the binary there would change what the next create costs. */
        if (pass == 1 && options->pair_native)
            input->native = native_binary_of(module, &input->native_size);
        zeModuleDestroy(module);
    }
}

/* --pair-native: the same pass, each module made from the native binary the
 * first pass made. A whole pass, not module by module, so each module follows
 * the same module as in run_pass: destroying a large module changes what the
 * next create costs. */
static void run_native_pass(const ze_common_device *l0, module_input *modules, size_t count,
                            const bench_options *options, unsigned pass)
{
    for (size_t n = 0; n < count; n++) {
        module_input *input = &modules[(n + options->rotate) % count];
        ze_module_handle_t module;
        input->native_ms[pass - 1] = create_from(l0, input->name, ZE_MODULE_FORMAT_NATIVE,
                                                 input->native, input->native_size, &module);
        zeModuleDestroy(module);
    }
}

static void print_results(module_input *modules, size_t count, const bench_options *options)
{
    double first_total = 0, repeat_total = 0, native_total = 0;
    bool native = options->repeat > 0 && options->pair_native;
    for (size_t n = 0; n < count; n++) {
        module_input *input = &modules[(n + options->rotate) % count];
        first_total += input->first_ms;
        printf("module %s first %.4f", input->name, input->first_ms);
        if (options->repeat > 0) {
            double median = median_of(input->repeat_ms, options->repeat);
            repeat_total += median;
            printf(" repeat %.4f", median);
        }
        if (native) {
            double median = median_of(input->native_ms, options->repeat);
            native_total += median;
            printf(" native %.4f", median);
        }
        printf("\n");
    }
    printf("total first %.4f", first_total);
    if (options->repeat > 0)
        printf(" repeat %.4f", repeat_total);
    if (native)
        printf(" native %.4f", native_total);
    printf("\n");
}

/* ---- main ---- */

static unsigned parse_count(const char *text, unsigned max, const char *what)
{
    char *end;
    errno = 0;
    unsigned long value = strtoul(text, &end, 10);
    if (errno != 0 || *end != '\0' || end == text || value > max)
        die("bad number for", what);
    return (unsigned)value;
}

/* Returns the index of the first path. */
static int parse_options(int argc, char **argv, bench_options *options)
{
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *option = argv[i];
        if (strcmp(option, "--floor") == 0) {
            options->floor = true;
            continue;
        }
        if (strcmp(option, "--pair-native") == 0) {
            options->pair_native = true;
            continue;
        }
        const char *value = i + 1 < argc ? argv[++i] : NULL;
        if (value == NULL)
            die("missing value for", option);
        if (strcmp(option, "--repeat") == 0)
            options->repeat = parse_count(value, MAX_REPEAT, option);
        else if (strcmp(option, "--rotate") == 0)
            options->rotate = parse_count(value, UINT_MAX, option);
        else if (strcmp(option, "--save-native") == 0)
            options->save_native_dir = value;
        else
            die("unknown option (see the comment at the top of ze_bench.c)", option);
    }
    return i;
}

int main(int argc, char **argv)
{
    bench_options options = {0};
    int first_path = parse_options(argc, argv, &options);
    static module_input modules[MAX_MODULES];
    size_t count = 0;
    for (int i = first_path; i < argc; i++)
        add_path(modules, &count, argv[i]);
    if (count == 0)
        die("usage: ze_bench [--floor] [--repeat K] [--pair-native] [--rotate R] [--save-native "
            "DIR] PATH...",
            NULL);
    options.rotate %= (unsigned)count;
    for (size_t n = 0; n < count; n++) {
        modules[n].repeat_ms = xmalloc(options.repeat * sizeof(double));
        modules[n].native_ms = xmalloc(options.repeat * sizeof(double));
    }

    ze_common_device l0;
    double start_ms = ze_common_now_ms();
    open_level_zero(&l0);
    start_ms = ze_common_now_ms() - start_ms;
    if (options.floor)
        for (size_t n = 0; n < count; n++)
            replace_by_native(&l0, &modules[n]);
    for (unsigned pass = 0; pass <= options.repeat; pass++) {
        run_pass(&l0, modules, count, &options, pass);
        if (pass > 0 && options.pair_native)
            run_native_pass(&l0, modules, count, &options, pass);
    }
    print_results(modules, count, &options);
    printf("start %.4f\n", start_ms);

    zeContextDestroy(l0.context);
    for (size_t n = 0; n < count; n++) {
        free(modules[n].repeat_ms);
        free(modules[n].native_ms);
        free(modules[n].native);
        free(modules[n].bytes);
        free(modules[n].path);
    }
    return 0;
}
