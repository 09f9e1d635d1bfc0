/* A small Level Zero program: creates one module per SPIR-V file (the
 * arguments, or every .spv file in the sample kernel directory), creates
 * its kernels, and prints how long each zeModuleCreate took. Run it twice
 * through the zecache layer to see the cache at work (scripts/demo.sh). */
#include <dirent.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FILES 64
#define MAX_KERNELS 16

typedef struct level_zero {
    ze_driver_handle_t driver;
    ze_device_handle_t device;
    ze_context_handle_t context;
} level_zero;

static double now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

static void *read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    void *data = NULL;
    long length = -1;
    if (fseek(file, 0, SEEK_END) == 0 && (length = ftell(file)) > 0 &&
        fseek(file, 0, SEEK_SET) == 0 && (data = malloc((size_t)length)) != NULL &&
        fread(data, 1, (size_t)length, file) != (size_t)length) {
        free(data);
        data = NULL;
    }
    fclose(file);
    *size = length > 0 ? (size_t)length : 0;
    return data;
}

static int open_level_zero(level_zero *l0)
{
    uint32_t count = 1;
    ze_context_desc_t context_desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_result_t result = zeInit(0);
    if (result == ZE_RESULT_SUCCESS)
        result = zeDriverGet(&count, &l0->driver);
    if (result == ZE_RESULT_SUCCESS)
        result = zeDeviceGet(l0->driver, &count, &l0->device);
    if (result == ZE_RESULT_SUCCESS)
        result = zeContextCreate(l0->driver, &context_desc, &l0->context);
    if (result != ZE_RESULT_SUCCESS)
        fprintf(stderr, "ze_sample: Level Zero setup failed: 0x%x\n", (unsigned)result);
    return result == ZE_RESULT_SUCCESS ? 0 : -1;
}

static void print_kernels(ze_module_handle_t module)
{
    uint32_t count = MAX_KERNELS;
    const char *names[MAX_KERNELS];
    if (zeModuleGetKernelNames(module, &count, names) != ZE_RESULT_SUCCESS)
        count = 0;
    for (uint32_t i = 0; i < count && i < MAX_KERNELS; i++) {
        ze_kernel_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = names[i]};
        ze_kernel_handle_t kernel;
        ze_result_t result = zeKernelCreate(module, &desc, &kernel);
        printf("%s%s%s", i == 0 ? "" : ",", names[i], result == ZE_RESULT_SUCCESS ? "" : "(!)");
        if (result == ZE_RESULT_SUCCESS)
            zeKernelDestroy(kernel);
    }
}

static int build_module(const level_zero *l0, const char *path)
{
    size_t size;
    void *spirv = read_file(path, &size);
    if (spirv == NULL) {
        fprintf(stderr, "ze_sample: cannot read %s\n", path);
        return -1;
    }
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = ZE_MODULE_FORMAT_IL_SPIRV,
                             .inputSize = size,
                             .pInputModule = spirv,
                             .pBuildFlags = ""};
    ze_module_handle_t module;
    double start = now_ms();
    ze_result_t result = zeModuleCreate(l0->context, l0->device, &desc, &module, NULL);
    double elapsed = now_ms() - start;
    free(spirv);
    const char *name = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
    if (result != ZE_RESULT_SUCCESS) {
        printf("module %-16s failed 0x%x\n", name, (unsigned)result);
        return -1;
    }
    printf("module %-16s %10.3f ms  kernels: ", name, elapsed);
    print_kernels(module);
    printf("\n");
    zeModuleDestroy(module);
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every .spv file of dir, sorted, as malloc'd paths. */
static int list_spirv(const char *dir, char **paths)
{
    DIR *stream = opendir(dir);
    int count = 0;
    for (struct dirent *e; stream != NULL && (e = readdir(stream)) != NULL && count < MAX_FILES;) {
        size_t length = strlen(e->d_name);
        if (length > 4 && strcmp(e->d_name + length - 4, ".spv") == 0 &&
            (paths[count] = malloc(strlen(dir) + length + 2)) != NULL)
            sprintf(paths[count++], "%s/%s", dir, e->d_name);
    }
    if (stream != NULL)
        closedir(stream);
    qsort(paths, (size_t)count, sizeof(paths[0]), compare_names);
    return count;
}

int main(int argc, char **argv)
{
    level_zero l0;
    char *paths[MAX_FILES];
    int count = 0;
    for (int i = 1; i < argc && count < MAX_FILES; i++)
        paths[count++] = strdup(argv[i]);
    if (argc == 1)
        count = list_spirv(ZC_SAMPLE_KERNEL_DIR, paths);
    if (count == 0 || open_level_zero(&l0) != 0)
        return 1;
    int failures = 0;
    double start = now_ms();
    for (int i = 0; i < count; i++) {
        failures += build_module(&l0, paths[i]) != 0;
        free(paths[i]);
    }
    printf("total %d modules %10.3f ms\n", count, now_ms() - start);
    zeContextDestroy(l0.context);
    return failures == 0 ? 0 : 1;
}
