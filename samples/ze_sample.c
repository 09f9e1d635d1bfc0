/* A small Level Zero program: creates one module per SPIR-V file (the
 * arguments, or every .spv file in the sample kernel directory), creates
 * its kernels, and prints how long each zeModuleCreate took. Run it twice
 * through the zecache layer to see the cache at work (scripts/demo.sh). */
#include <dirent.h>
#include <level_zero/ze_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ze_common.h"

#define MAX_FILES 64
#define MAX_KERNELS 16

static int open_level_zero(ze_common_device *l0)
{
    ze_result_t result = ze_common_open(l0);
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

static int build_module(const ze_common_device *l0, const char *path)
{
    size_t size;
    void *spirv = ze_common_read_file(path, &size);
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
    double start = ze_common_now_ms();
    ze_result_t result = zeModuleCreate(l0->context, l0->device, &desc, &module, NULL);
    double elapsed = ze_common_now_ms() - start;
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
    ze_common_device l0;
    char *paths[MAX_FILES];
    int count = 0;
    for (int i = 1; i < argc && count < MAX_FILES; i++)
        paths[count++] = strdup(argv[i]);
    if (argc == 1)
        count = list_spirv(ZC_SAMPLE_KERNEL_DIR, paths);
    if (count == 0 || open_level_zero(&l0) != 0)
        return 1;
    int failures = 0;
    double start = ze_common_now_ms();
    for (int i = 0; i < count; i++) {
        failures += build_module(&l0, paths[i]) != 0;
        free(paths[i]);
    }
    printf("total %d modules %10.3f ms\n", count, ze_common_now_ms() - start);
    zeContextDestroy(l0.context);
    return failures == 0 ? 0 : 1;
}
