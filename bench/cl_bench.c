/* cl_bench: what an application sees of building OpenCL programs -- the
 * wall time of clCreateProgramWith* plus clBuildProgram for each, nothing
 * around it -- for a list of programs, so the same program measures the
 * driver alone, the driver's own cache, the zecache layer and the floor
 * (programs made from their binaries) when bench/bench_opencl.sh runs it
 * with different environments.
 *
 *   cl_bench [options] PATH...
 *
 * PATH is a .cl file (OpenCL C source), a .spv file (SPIR-V, through
 * clCreateProgramWithIL), a .bin file (a program's binary, through
 * clCreateProgramWithBinary, named without .bin) or a directory, which
 * stands for its *.cl and *.spv files in name order.
 *
 *   --options STR      build options for every program (default "")
 *   --platform TEXT    the first platform whose name contains TEXT
 *                      (default: the first platform with a device)
 *   --repeat K         after the first pass, time K more passes in the same
 *                      process (the layer's memory hits)
 *   --floor            build each program first (untimed) and time building
 *                      the programs from their binaries
 *   --digest           print a digest of each program's binary, so runs can
 *                      be compared byte for byte
 *   --save-binaries DIR  write each program's binary to DIR/<name>.bin
 *                      (untimed), for runs that make the programs from
 *                      those files: the floor in a new process that has
 *                      compiled nothing
 *
 * Output, one line each, times in milliseconds:
 *   program <name> first <ms> [repeat <median ms of the K passes>] [binary <fnv-1a>]
 *   total first <ms> [repeat <sum of the per-program medians>]
 *   start <ms>: clGetPlatformIDs through clCreateContext
 *
 * A benchmark, not a test: it fails only when a program cannot be built. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dirent.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PROGRAMS 256
#define MAX_REPEAT 1000

typedef struct program_input {
    char *path;
    const char *name; /* inside path */
    bool is_il;
    bool is_binary; /* .bin: bytes are the binary */
    char *bytes;
    size_t size;
    unsigned char *binary; /* --floor: the binary the untimed build made */
    size_t binary_size;
    double first_ms;
    double *repeat_ms; /* K samples */
} program_input;

typedef struct bench_options {
    const char *build_options;
    const char *platform;
    unsigned repeat;
    bool floor;
    const char *save_binaries; /* or NULL */
    bool digest;
} bench_options;

typedef struct cl_target {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
} cl_target;

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "cl_bench: %s%s%s\n", what, detail != NULL ? ": " : "",
            detail != NULL ? detail : "");
    exit(1);
}

static void die_code(const char *what, cl_int code)
{
    char text[32];
    snprintf(text, sizeof text, "%d", (int)code);
    die(what, text);
}

static double now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

/* ---- inputs ---- */

static char *read_whole_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        die("cannot open", path);
    char *data = NULL;
    long length = -1;
    if (fseek(file, 0, SEEK_END) == 0 && (length = ftell(file)) >= 0 &&
        fseek(file, 0, SEEK_SET) == 0)
        data = malloc((size_t)length + 1);
    if (data == NULL || fread(data, 1, (size_t)length, file) != (size_t)length)
        die("cannot read", path);
    fclose(file);
    data[length] = '\0';
    *size = (size_t)length;
    return data;
}

static bool has_suffix(const char *name, const char *suffix)
{
    size_t length = strlen(name), suffix_length = strlen(suffix);
    return length > suffix_length && strcmp(name + length - suffix_length, suffix) == 0;
}

static void add_file(program_input *programs, size_t *count, const char *path)
{
    if (*count == MAX_PROGRAMS)
        die("too many programs", path);
    program_input *program = &programs[(*count)++];
    if ((program->path = strdup(path)) == NULL)
        die("out of memory", NULL);
    const char *slash = strrchr(program->path, '/');
    char *name = strdup(slash != NULL ? slash + 1 : program->path);
    if (name == NULL)
        die("out of memory", NULL);
    program->is_il = has_suffix(path, ".spv");
    program->is_binary = has_suffix(path, ".bin");
    if (program->is_binary)
        name[strlen(name) - strlen(".bin")] = '\0';
    program->name = name;
    program->bytes = read_whole_file(path, &program->size);
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_directory(program_input *programs, size_t *count, DIR *dir, const char *dir_path)
{
    char *names[MAX_PROGRAMS];
    size_t found = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        if ((has_suffix(e->d_name, ".cl") || has_suffix(e->d_name, ".spv")) &&
            found < MAX_PROGRAMS && (names[found] = strdup(e->d_name)) != NULL)
            found++;
    qsort(names, found, sizeof names[0], compare_strings);
    for (size_t i = 0; i < found; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir_path, names[i]) >= (int)sizeof path)
            die("path too long", names[i]);
        add_file(programs, count, path);
        free(names[i]);
    }
}

static void add_path(program_input *programs, size_t *count, const char *path)
{
    DIR *dir = opendir(path);
    if (dir == NULL) {
        add_file(programs, count, path);
        return;
    }
    add_directory(programs, count, dir, path);
    closedir(dir);
}

/* ---- OpenCL ---- */

static bool platform_matches(cl_platform_id platform, const char *wanted)
{
    char name[256] = "";
    cl_uint devices = 0;
    if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &devices) != CL_SUCCESS)
        return false;
    return devices > 0 && (wanted == NULL || strstr(name, wanted) != NULL);
}

static void open_target(const char *wanted, cl_target *target)
{
    cl_platform_id platforms[16];
    cl_uint count = 0;
    cl_int status = clGetPlatformIDs(16, platforms, &count);
    if (status != CL_SUCCESS)
        die_code("clGetPlatformIDs failed", status);
    target->platform = NULL;
    for (cl_uint i = 0; i < count && i < 16 && target->platform == NULL; i++)
        if (platform_matches(platforms[i], wanted))
            target->platform = platforms[i];
    if (target->platform == NULL)
        die("no platform with a device", wanted);
    status = clGetDeviceIDs(target->platform, CL_DEVICE_TYPE_ALL, 1, &target->device, NULL);
    if (status != CL_SUCCESS)
        die_code("clGetDeviceIDs failed", status);
    target->context = clCreateContext(NULL, 1, &target->device, NULL, NULL, &status);
    if (status != CL_SUCCESS)
        die_code("clCreateContext failed", status);
}

static cl_program create_program(const cl_target *target, const program_input *input,
                                 bool from_binary)
{
    cl_int status = CL_SUCCESS, binary_status = CL_SUCCESS;
    cl_program program;
    if (from_binary || input->is_binary) {
        const unsigned char *binary =
            input->is_binary ? (const unsigned char *)input->bytes : input->binary;
        size_t size = input->is_binary ? input->size : input->binary_size;
        program = clCreateProgramWithBinary(target->context, 1, &target->device, &size, &binary,
                                            &binary_status, &status);
    } else if (input->is_il) {
        program = clCreateProgramWithIL(target->context, input->bytes, input->size, &status);
    } else {
        const char *text = input->bytes;
        program = clCreateProgramWithSource(target->context, 1, &text, &input->size, &status);
    }
    if (status != CL_SUCCESS || binary_status != CL_SUCCESS)
        die("cannot create a program from", input->name);
    return program;
}

static void report_build_failure(const cl_target *target, cl_program program, const char *name)
{
    size_t size = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(program, target->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) ==
            CL_SUCCESS &&
        (log = calloc(1, size + 1)) != NULL)
        clGetProgramBuildInfo(program, target->device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
    fprintf(stderr, "cl_bench: %s does not build:\n%s\n", name, log != NULL ? log : "");
    exit(1);
}

/* Creates and builds a program; returns how long the two calls took. */
static double build_program(const cl_target *target, const bench_options *options,
                            const program_input *input, bool from_binary, cl_program *out)
{
    double start = now_ms();
    cl_program program = create_program(target, input, from_binary);
    cl_int status = clBuildProgram(program, 1, &target->device, options->build_options, NULL, NULL);
    double elapsed = now_ms() - start;
    if (status != CL_SUCCESS)
        report_build_failure(target, program, input->name);
    *out = program;
    return elapsed;
}

static unsigned char *binary_of(cl_program program, size_t *size)
{
    unsigned char *binary = NULL;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof *size, size, NULL) !=
            CL_SUCCESS ||
        *size == 0 || (binary = malloc(*size)) == NULL ||
        clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binary, &binary, NULL) != CL_SUCCESS)
        die("cannot read a program's binary", NULL);
    return binary;
}

static uint64_t fnv1a(const unsigned char *bytes, size_t size)
{
    uint64_t hash = 0xcbf29ce484222325u;
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ bytes[i]) * 0x100000001b3u;
    return hash;
}

/* ---- the passes ---- */

static void prepare_floor(const cl_target *target, const bench_options *options,
                          program_input *programs, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        cl_program program;
        build_program(target, options, &programs[i], false, &program);
        programs[i].binary = binary_of(program, &programs[i].binary_size);
        clReleaseProgram(program);
    }
}

static void run_pass(const cl_target *target, const bench_options *options, program_input *programs,
                     size_t count, unsigned pass)
{
    for (size_t i = 0; i < count; i++) {
        cl_program program;
        double ms = build_program(target, options, &programs[i], options->floor, &program);
        if (pass == 0)
            programs[i].first_ms = ms;
        else
            programs[i].repeat_ms[pass - 1] = ms;
        if (pass == 0 && (options->digest || options->save_binaries != NULL) &&
            programs[i].binary == NULL)
            programs[i].binary = binary_of(program, &programs[i].binary_size);
        clReleaseProgram(program);
    }
}

static void save_binaries(const char *dir, const program_input *programs, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.bin", dir, programs[i].name);
        FILE *file = fopen(path, "wb");
        if (file == NULL ||
            fwrite(programs[i].binary, 1, programs[i].binary_size, file) !=
                programs[i].binary_size ||
            fclose(file) != 0)
            die("cannot write", path);
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *samples, unsigned count)
{
    qsort(samples, count, sizeof samples[0], compare_doubles);
    return count % 2 != 0 ? samples[count / 2] : (samples[count / 2 - 1] + samples[count / 2]) / 2;
}

static void print_results(const bench_options *options, program_input *programs, size_t count)
{
    double first = 0, repeat = 0;
    for (size_t i = 0; i < count; i++) {
        program_input *program = &programs[i];
        first += program->first_ms;
        printf("program %s first %.3f", program->name, program->first_ms);
        if (options->repeat > 0) {
            double middle = median(program->repeat_ms, options->repeat);
            repeat += middle;
            printf(" repeat %.3f", middle);
        }
        if (options->digest)
            printf(" binary %016llx",
                   (unsigned long long)fnv1a(program->binary, program->binary_size));
        printf("\n");
    }
    printf("total first %.3f", first);
    if (options->repeat > 0)
        printf(" repeat %.3f", repeat);
    printf("\n");
}

static unsigned parse_count(const char *text)
{
    char *end;
    unsigned long value = strtoul(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value > MAX_REPEAT)
        die("bad --repeat", text);
    return (unsigned)value;
}

static int parse_options(int argc, char **argv, bench_options *options)
{
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        bool has_value = i + 1 < argc;
        if (strcmp(argv[i], "--floor") == 0)
            options->floor = true;
        else if (strcmp(argv[i], "--digest") == 0)
            options->digest = true;
        else if (strcmp(argv[i], "--repeat") == 0 && has_value)
            options->repeat = parse_count(argv[++i]);
        else if (strcmp(argv[i], "--options") == 0 && has_value)
            options->build_options = argv[++i];
        else if (strcmp(argv[i], "--platform") == 0 && has_value)
            options->platform = argv[++i];
        else if (strcmp(argv[i], "--save-binaries") == 0 && has_value)
            options->save_binaries = argv[++i];
        else
            die("unknown option or missing value", argv[i]);
    }
    if (i == argc)
        die("usage: cl_bench [--options STR] [--platform TEXT] [--repeat K] [--floor] "
            "[--digest] [--save-binaries DIR] PATH...",
            NULL);
    return i;
}

int main(int argc, char **argv)
{
    bench_options options = {.build_options = ""};
    int first_path = parse_options(argc, argv, &options);
    static program_input programs[MAX_PROGRAMS];
    size_t count = 0;
    for (int i = first_path; i < argc; i++)
        add_path(programs, &count, argv[i]);
    for (size_t i = 0; i < count; i++)
        if (options.repeat > 0 &&
            (programs[i].repeat_ms = calloc(options.repeat, sizeof(double))) == NULL)
            die("out of memory", NULL);
    double start = now_ms();
    cl_target target;
    open_target(options.platform, &target);
    double start_ms = now_ms() - start;
    if (options.floor)
        prepare_floor(&target, &options, programs, count);
    for (unsigned pass = 0; pass <= options.repeat; pass++)
        run_pass(&target, &options, programs, count, pass);
    print_results(&options, programs, count);
    printf("start %.3f\n", start_ms);
    if (options.save_binaries != NULL)
        save_binaries(options.save_binaries, programs, count);
    clReleaseContext(target.context);
    return 0;
}
