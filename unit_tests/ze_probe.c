/* ze_probe: creates one Level Zero module as the end-to-end tests describe it
 * on the command line and reports what happened, so the tests can run it in
 * fresh processes with and without the layer.
 *
 *   --spirv FILE        an input (repeat with --program for several)
 *   --native            pass the first input as ZE_MODULE_FORMAT_NATIVE
 *   --program           use ze_module_program_exp_desc_t
 *   --flags TEXT        build flags for every input (default NULL)
 *   --module-flags TEXT with --program: the module description's own build
 *                       flags (default NULL; --flags does not set them)
 *   --input-flags TEXT  build flags of the next input of --program (repeat;
 *                       "NULL" for none), instead of --flags
 *   --describe          print everything an application can ask of the module
 *                       (see ze_probe_describe.h) after a "describe N" line
 *   --repeat N          with --describe: create and describe the module N
 *                       times, one after the other, in this process
 *   --function NAME     with --describe: look NAME up as a function pointer
 *   --global NAME       with --describe: look NAME up as a global pointer
 *   --link-with FILE    with --describe: also create a module from SPIR-V FILE
 *                       (same flags) and link the two with zeModuleDynamicLink
 *   --argument K:I:KIND with --describe: argument I of kernel K is given
 *                       every image format the driver knows (KIND image, and
 *                       a view of another format), every sampler (sampler),
 *                       or image handles as a plain value (value)
 *   --spec ID=VALUE     a 32-bit specialization constant (in the order given)
 *   --spec64 ID=VALUE   a 64-bit one
 *   --unknown-pnext     chain a structure the layer does not know
 *   --native-out FILE   write zeModuleGetNativeBinary's bytes
 *   --log-out FILE      ask for the build log and write its text
 *   --threads N         N threads create the module at the same moment
 *   --context-per-thread  each thread in its own context
 *   --layers            once Level Zero is up, print "layer <file name>" for each
 *                       Level Zero layer library mapped in the process
 *   --start-fds R,G     once Level Zero is up, write a byte to fd R, then wait
 *                       for end of file on fd G: lets a test start several
 *                       processes' module creation at the same moment
 *
 * Prints "result 0x<code>" per thread and "kernels <names>" with
 * "kernel-create 0x<code>" for the first thread's module. Exit status 0 when
 * Level Zero started, 2 when it did not or the arguments were bad. */
#include <level_zero/ze_api.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ze_common.h"
#include "ze_probe_describe.h"

#define MAX_INPUTS 4
#define MAX_CONSTANTS 8
#define MAX_THREADS 64
#define MAX_KERNELS 16

typedef struct probe_options {
    const char *spirv_paths[MAX_INPUTS];
    uint32_t input_count;
    bool native, program, unknown_pnext, context_per_thread, layers;
    const char *flags, *module_flags;
    const char *input_flags[MAX_INPUTS];
    uint32_t input_flags_count;
    bool describe;
    int repeat;
    describe_lookups lookups;
    const char *link_with;
    uint32_t constant_ids[MAX_CONSTANTS];
    uint64_t constant_storage[MAX_CONSTANTS];
    const void *constant_values[MAX_CONSTANTS];
    uint32_t constant_count;
    const char *native_out, *log_out;
    int threads;
    int ready_fd, go_fd; /* -1: no start line across processes */
} probe_options;

typedef struct probe_inputs {
    uint8_t *data[MAX_INPUTS];
    size_t sizes[MAX_INPUTS];
} probe_inputs;

typedef struct probe {
    probe_options options;
    probe_inputs inputs;
    ze_common_device l0; /* its context is the one threads share */
    pthread_barrier_t start_line;
} probe;

typedef struct thread_result {
    probe *probe;
    ze_context_handle_t context;
    ze_result_t result;
    ze_module_handle_t module;
    ze_module_build_log_handle_t build_log;
} thread_result;

static bool write_file(const char *path, const void *data, size_t size)
{
    FILE *file = fopen(path, "wb");
    if (file == NULL)
        return false;
    bool written = fwrite(data, 1, size, file) == size;
    return fclose(file) == 0 && written;
}

static bool parse_constant(probe_options *options, const char *text, bool wide)
{
    unsigned id;
    unsigned long long value;
    if (options->constant_count == MAX_CONSTANTS || sscanf(text, "%u=%llu", &id, &value) != 2)
        return false;
    uint32_t i = options->constant_count++;
    options->constant_ids[i] = id;
    if (wide) {
        options->constant_storage[i] = value;
    } else {
        uint32_t narrow = (uint32_t)value;
        memcpy(&options->constant_storage[i], &narrow, sizeof(narrow));
    }
    options->constant_values[i] = &options->constant_storage[i];
    return true;
}

/* --argument KERNEL:INDEX:image|sampler|value */
static bool parse_argument(describe_lookups *lookups, const char *text)
{
    if (lookups->argument_count == DESCRIBE_MAX_NAMES)
        return false;
    int i = lookups->argument_count;
    char kind[16];
    if (sscanf(text, "%63[^:]:%u:%15s", lookups->arguments[i].kernel, &lookups->arguments[i].index,
               kind) != 3 ||
        (strcmp(kind, "image") != 0 && strcmp(kind, "sampler") != 0 && strcmp(kind, "value") != 0))
        return false;
    lookups->arguments[i].kind = kind[0];
    lookups->argument_count++;
    return true;
}

/* Options without a value; false when arg is none of them. */
static bool parse_switch(const char *arg, probe_options *options)
{
    if (strcmp(arg, "--native") == 0)
        options->native = true;
    else if (strcmp(arg, "--program") == 0)
        options->program = true;
    else if (strcmp(arg, "--unknown-pnext") == 0)
        options->unknown_pnext = true;
    else if (strcmp(arg, "--context-per-thread") == 0)
        options->context_per_thread = true;
    else if (strcmp(arg, "--describe") == 0)
        options->describe = true;
    else if (strcmp(arg, "--layers") == 0)
        options->layers = true;
    else
        return false;
    return true;
}

/* Options with a value; false when arg is none of them or value is bad. */
static bool parse_valued(const char *arg, const char *value, probe_options *options)
{
    if (strcmp(arg, "--spirv") == 0 && options->input_count < MAX_INPUTS)
        options->spirv_paths[options->input_count++] = value;
    else if (strcmp(arg, "--flags") == 0)
        options->flags = value;
    else if (strcmp(arg, "--link-with") == 0)
        options->link_with = value;
    else if (strcmp(arg, "--module-flags") == 0)
        options->module_flags = value;
    else if (strcmp(arg, "--input-flags") == 0 && options->input_flags_count < MAX_INPUTS)
        options->input_flags[options->input_flags_count++] =
            strcmp(value, "NULL") == 0 ? NULL : value;
    else if (strcmp(arg, "--repeat") == 0)
        options->repeat = atoi(value);
    else if (strcmp(arg, "--function") == 0 && options->lookups.function_count < DESCRIBE_MAX_NAMES)
        options->lookups.functions[options->lookups.function_count++] = value;
    else if (strcmp(arg, "--global") == 0 && options->lookups.global_count < DESCRIBE_MAX_NAMES)
        options->lookups.globals[options->lookups.global_count++] = value;
    else if (strcmp(arg, "--argument") == 0)
        return parse_argument(&options->lookups, value);
    else if (strcmp(arg, "--spec") == 0 || strcmp(arg, "--spec64") == 0)
        return parse_constant(options, value, strcmp(arg, "--spec64") == 0);
    else if (strcmp(arg, "--native-out") == 0)
        options->native_out = value;
    else if (strcmp(arg, "--log-out") == 0)
        options->log_out = value;
    else if (strcmp(arg, "--threads") == 0)
        options->threads = atoi(value);
    else if (strcmp(arg, "--start-fds") == 0)
        return sscanf(value, "%d,%d", &options->ready_fd, &options->go_fd) == 2;
    else
        return false;
    return true;
}

static bool parse_options(int argc, char **argv, probe_options *options)
{
    options->threads = 1;
    options->repeat = 1;
    options->ready_fd = options->go_fd = -1;
    for (int i = 1; i < argc; i++) {
        if (parse_switch(argv[i], options))
            continue;
        if (i + 1 == argc || !parse_valued(argv[i], argv[i + 1], options))
            return false;
        i++;
    }
    return options->input_count > 0 && options->threads >= 1 && options->threads <= MAX_THREADS &&
           options->repeat >= 1;
}

static ze_result_t create_context(const probe *probe, ze_context_handle_t *context)
{
    ze_context_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    return zeContextCreate(probe->l0.driver, &desc, context);
}

static ze_result_t create_module(thread_result *thread)
{
    const probe_options *options = &thread->probe->options;
    const probe_inputs *inputs = &thread->probe->inputs;
    ze_module_constants_t constants = {options->constant_count, options->constant_ids,
                                       (const void **)options->constant_values};
    const ze_module_constants_t *constants_of_inputs[MAX_INPUTS];
    const char *flags_of_inputs[MAX_INPUTS];
    for (uint32_t i = 0; i < options->input_count; i++) {
        constants_of_inputs[i] = options->constant_count > 0 ? &constants : NULL;
        flags_of_inputs[i] =
            i < options->input_flags_count ? options->input_flags[i] : options->flags;
    }
    ze_module_program_exp_desc_t program = {.stype = ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC,
                                            .count = options->input_count,
                                            .inputSizes = inputs->sizes,
                                            .pInputModules = (const uint8_t **)inputs->data,
                                            .pBuildFlags = flags_of_inputs,
                                            .pConstants = constants_of_inputs};
    /* A structure type no extension uses. */
    ze_base_desc_t unknown = {.stype = (ze_structure_type_t)0x7ffe0001};
    ze_module_desc_t desc = {
        .stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
        .pNext = options->program         ? (const void *)&program
                 : options->unknown_pnext ? (const void *)&unknown
                                          : NULL,
        .format = options->native ? ZE_MODULE_FORMAT_NATIVE : ZE_MODULE_FORMAT_IL_SPIRV,
        .inputSize = inputs->sizes[0],
        .pInputModule = inputs->data[0],
        .pBuildFlags = options->program ? options->module_flags : options->flags,
        .pConstants = options->constant_count > 0 ? &constants : NULL};
    bool want_log = options->log_out != NULL || options->describe;
    return zeModuleCreate(thread->context, thread->probe->l0.device, &desc, &thread->module,
                          want_log ? &thread->build_log : NULL);
}

static void *run_thread(void *context)
{
    thread_result *thread = context;
    pthread_barrier_wait(&thread->probe->start_line);
    thread->result = create_module(thread);
    return NULL;
}

static void report_kernels(ze_module_handle_t module)
{
    uint32_t count = MAX_KERNELS;
    const char *names[MAX_KERNELS];
    if (zeModuleGetKernelNames(module, &count, names) != ZE_RESULT_SUCCESS)
        count = 0;
    printf("kernels ");
    for (uint32_t i = 0; i < count; i++)
        printf("%s%s", i > 0 ? "," : "", names[i]);
    printf("\n");
    for (uint32_t i = 0; i < count; i++) {
        ze_kernel_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = names[i]};
        ze_kernel_handle_t kernel;
        ze_result_t result = zeKernelCreate(module, &desc, &kernel);
        printf("kernel-create 0x%x\n", (unsigned)result);
        if (result == ZE_RESULT_SUCCESS)
            zeKernelDestroy(kernel);
    }
}

static void save_native_binary(ze_module_handle_t module, const char *path)
{
    size_t size = 0;
    uint8_t *binary = NULL;
    if (zeModuleGetNativeBinary(module, &size, NULL) == ZE_RESULT_SUCCESS &&
        (binary = malloc(size)) != NULL &&
        zeModuleGetNativeBinary(module, &size, binary) == ZE_RESULT_SUCCESS &&
        write_file(path, binary, size))
        printf("native-binary %zu bytes\n", size);
    else
        printf("native-binary failed\n");
    free(binary);
}

static void save_build_log(ze_module_build_log_handle_t build_log, const char *path)
{
    size_t size = 0;
    char *text = NULL;
    if (zeModuleBuildLogGetString(build_log, &size, NULL) == ZE_RESULT_SUCCESS &&
        (text = malloc(size)) != NULL &&
        zeModuleBuildLogGetString(build_log, &size, text) == ZE_RESULT_SUCCESS &&
        write_file(path, text, size > 0 ? strlen(text) : 0))
        printf("build-log %zu bytes\n", size > 0 ? strlen(text) : 0);
    else
        printf("build-log failed\n");
    free(text);
    zeModuleBuildLogDestroy(build_log);
}

static void report(const probe *probe, thread_result *threads)
{
    for (int i = 0; i < probe->options.threads; i++)
        printf("result 0x%x\n", (unsigned)threads[i].result);
    if (threads[0].build_log != NULL)
        save_build_log(threads[0].build_log, probe->options.log_out);
    if (threads[0].result != ZE_RESULT_SUCCESS)
        return;
    report_kernels(threads[0].module);
    if (probe->options.native_out != NULL)
        save_native_binary(threads[0].module, probe->options.native_out);
}

/* The --link-with module, made as the application would (build log and all). */
static void create_partner(probe *probe, describe_lookups *lookups)
{
    size_t size = 0;
    void *spirv = ze_common_read_file(probe->options.link_with, &size);
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = ZE_MODULE_FORMAT_IL_SPIRV,
                             .inputSize = size,
                             .pInputModule = spirv,
                             .pBuildFlags = probe->options.flags};
    ze_module_build_log_handle_t build_log = NULL;
    lookups->has_partner = true;
    lookups->partner = NULL;
    lookups->partner_result = spirv == NULL ? ZE_RESULT_ERROR_INVALID_ARGUMENT
                                            : zeModuleCreate(probe->l0.context, probe->l0.device,
                                                             &desc, &lookups->partner, &build_log);
    if (build_log != NULL)
        zeModuleBuildLogDestroy(build_log);
    free(spirv);
}

/* The first thread's module, then repeat - 1 more made one after the other. */
static void describe_creations(probe *probe, thread_result *first)
{
    probe->options.lookups.context = probe->l0.context;
    probe->options.lookups.device = probe->l0.device;
    for (int n = 1; n <= probe->options.repeat; n++) {
        thread_result again = {.probe = probe, .context = probe->l0.context};
        thread_result *creation = n == 1 ? first : &again;
        if (n > 1)
            creation->result = create_module(creation);
        if (probe->options.link_with != NULL)
            create_partner(probe, &probe->options.lookups);
        printf("describe %d\n", n);
        describe_module(stdout, creation->result, creation->module, creation->build_log,
                        &probe->options.lookups);
        if (creation->build_log != NULL)
            zeModuleBuildLogDestroy(creation->build_log);
    }
}

/* The other processes are at the same point once G reaches end of file. */
static bool wait_at_start_line(const probe_options *options)
{
    char byte;
    if (options->ready_fd < 0)
        return true;
    bool ready = write(options->ready_fd, "r", 1) == 1;
    close(options->ready_fd);
    while (ready && read(options->go_fd, &byte, 1) > 0)
        continue;
    close(options->go_fd);
    return ready;
}

static bool run_threads(probe *probe, thread_result *threads)
{
    int count = probe->options.threads;
    pthread_t ids[MAX_THREADS];
    pthread_barrier_init(&probe->start_line, NULL, (unsigned)count);
    for (int i = 0; i < count; i++) {
        threads[i] = (thread_result){.probe = probe, .context = probe->l0.context};
        if (probe->options.context_per_thread &&
            create_context(probe, &threads[i].context) != ZE_RESULT_SUCCESS)
            return false;
    }
    for (int i = 0; i < count; i++)
        if (pthread_create(&ids[i], NULL, run_thread, &threads[i]) != 0)
            return false;
    for (int i = 0; i < count; i++)
        pthread_join(ids[i], NULL);
    pthread_barrier_destroy(&probe->start_line);
    return true;
}

static int print_layer(struct dl_phdr_info *info, size_t size, void *context)
{
    (void)size;
    (void)context;
    const char *slash = info->dlpi_name != NULL ? strrchr(info->dlpi_name, '/') : NULL;
    const char *name = slash != NULL ? slash + 1 : "";
    if (strncmp(name, "libze_", 6) == 0 && strstr(name, "_layer.so") != NULL)
        printf("layer %s\n", name);
    return 0;
}

int main(int argc, char **argv)
{
    static probe probe;
    static thread_result threads[MAX_THREADS];
    if (!parse_options(argc, argv, &probe.options)) {
        fprintf(stderr, "ze_probe: bad arguments (see the comment in ze_probe.c)\n");
        return 2;
    }
    for (uint32_t i = 0; i < probe.options.input_count; i++)
        if ((probe.inputs.data[i] = ze_common_read_file(probe.options.spirv_paths[i],
                                                        &probe.inputs.sizes[i])) == NULL) {
            fprintf(stderr, "ze_probe: cannot read %s\n", probe.options.spirv_paths[i]);
            return 2;
        }
    ze_result_t result = ze_common_open(&probe.l0);
    if (result != ZE_RESULT_SUCCESS) {
        printf("init 0x%x\n", (unsigned)result);
        return 2;
    }
    if (probe.options.layers)
        dl_iterate_phdr(print_layer, NULL);
    if (!wait_at_start_line(&probe.options) || !run_threads(&probe, threads))
        return 2;
    if (probe.options.describe)
        describe_creations(&probe, threads);
    else
        report(&probe, threads);
    return 0;
}
