/* ze_bench_arguments: the cost of what the layer wraps for image arguments,
 * as the application sees it: zeKernelSetArgumentValue (image and buffer
 * arguments), zeKernelCreate with zeKernelDestroy, and zeImageCreate with
 * zeImageDestroy, on one module. bench/bench_arguments.sh runs it on the
 * driver alone (SPIR-V), the layer's hit, and the floor (the native binary
 * without the layer), so the layer's added cost shows against the floor.
 *
 *   ze_bench_arguments FILE KERNEL IMAGE_INDEX BUFFER_INDEX
 *
 * FILE is a .spv (SPIR-V) or .bin (native) module; BUFFER_INDEX may be -1.
 * Output: one line per call measured, the median of ROUNDS rounds of
 * CALLS calls each, in nanoseconds per call. */
#include <level_zero/ze_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ze_common.h"

#define ROUNDS 15
#define CALLS 2000

static void check(ze_result_t result, const char *what)
{
    if (result != ZE_RESULT_SUCCESS) {
        fprintf(stderr, "ze_bench_arguments: %s: 0x%x\n", what, (unsigned)result);
        exit(1);
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct bench {
    ze_common_device l0;
    ze_module_handle_t module;
    ze_kernel_handle_t kernel;
    const char *kernel_name;
    ze_image_handle_t image;
    void *buffer;
    int image_index, buffer_index;
    ze_image_format_t format;
} bench;

typedef ze_result_t (*call_fn)(bench *b);

static ze_result_t set_image(bench *b)
{
    return zeKernelSetArgumentValue(b->kernel, (uint32_t)b->image_index, sizeof(b->image),
                                    &b->image);
}

static ze_result_t set_buffer(bench *b)
{
    return zeKernelSetArgumentValue(b->kernel, (uint32_t)b->buffer_index, sizeof(b->buffer),
                                    &b->buffer);
}

static ze_result_t create_kernel(bench *b)
{
    ze_kernel_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = b->kernel_name};
    ze_kernel_handle_t kernel;
    ze_result_t result = zeKernelCreate(b->module, &desc, &kernel);
    if (result == ZE_RESULT_SUCCESS)
        result = zeKernelDestroy(kernel);
    return result;
}

static ze_image_desc_t image_desc(ze_image_format_t format)
{
    return (ze_image_desc_t){.stype = ZE_STRUCTURE_TYPE_IMAGE_DESC,
                             .type = ZE_IMAGE_TYPE_2D,
                             .format = format,
                             .width = 16,
                             .height = 16,
                             .depth = 1};
}

static ze_result_t create_image(bench *b)
{
    ze_image_desc_t desc = image_desc(b->format);
    ze_image_handle_t image;
    ze_result_t result = zeImageCreate(b->l0.context, b->l0.device, &desc, &image);
    if (result == ZE_RESULT_SUCCESS)
        result = zeImageDestroy(image);
    return result;
}

/* Median ns per call; the result of the last call goes to *last. */
static double measure(bench *b, call_fn call, unsigned calls, ze_result_t *last)
{
    double rounds[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double start = ze_common_now_ms();
        for (unsigned i = 0; i < calls; i++)
            *last = call(b);
        rounds[r] = (ze_common_now_ms() - start) * 1e6 / calls;
    }
    qsort(rounds, ROUNDS, sizeof rounds[0], compare_doubles);
    return rounds[ROUNDS / 2];
}

static void report(bench *b, const char *what, call_fn call, unsigned calls)
{
    ze_result_t last = ZE_RESULT_SUCCESS;
    double ns = measure(b, call, calls, &last);
    printf("%-28s %10.1f ns  result 0x%x\n", what, ns, (unsigned)last);
}

static void open_module(bench *b, const char *path)
{
    size_t size;
    void *bytes = ze_common_read_file(path, &size);
    if (bytes == NULL) {
        fprintf(stderr, "ze_bench_arguments: cannot read %s\n", path);
        exit(1);
    }
    size_t length = strlen(path);
    bool native = length > 4 && strcmp(path + length - 4, ".bin") == 0;
    ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                             .format = native ? ZE_MODULE_FORMAT_NATIVE : ZE_MODULE_FORMAT_IL_SPIRV,
                             .inputSize = size,
                             .pInputModule = bytes};
    check(zeModuleCreate(b->l0.context, b->l0.device, &desc, &b->module, NULL), "zeModuleCreate");
    free(bytes);
    ze_kernel_desc_t kernel_desc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                                    .pKernelName = b->kernel_name};
    check(zeKernelCreate(b->module, &kernel_desc, &b->kernel), "zeKernelCreate");
}

static void set_format(bench *b, ze_image_format_layout_t layout, ze_image_format_type_t type)
{
    b->format = (ze_image_format_t){layout,
                                    type,
                                    ZE_IMAGE_FORMAT_SWIZZLE_R,
                                    ZE_IMAGE_FORMAT_SWIZZLE_G,
                                    ZE_IMAGE_FORMAT_SWIZZLE_B,
                                    ZE_IMAGE_FORMAT_SWIZZLE_A};
    if (b->image != NULL)
        zeImageDestroy(b->image);
    ze_image_desc_t desc = image_desc(b->format);
    check(zeImageCreate(b->l0.context, b->l0.device, &desc, &b->image), "zeImageCreate");
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: ze_bench_arguments FILE KERNEL IMAGE_INDEX BUFFER_INDEX\n");
        return 2;
    }
    bench b = {.kernel_name = argv[2], .image_index = atoi(argv[3]), .buffer_index = atoi(argv[4])};
    check(ze_common_open(&b.l0), "zeInit");
    open_module(&b, argv[1]);
    if (b.image_index >= 0) {
        set_format(&b, ZE_IMAGE_FORMAT_LAYOUT_8_8_8_8, ZE_IMAGE_FORMAT_TYPE_UNORM);
        report(&b, "set image (RGBA8 UNORM)", set_image, CALLS);
        set_format(&b, ZE_IMAGE_FORMAT_LAYOUT_32, ZE_IMAGE_FORMAT_TYPE_UNORM);
        report(&b, "set image (R32 UNORM)", set_image, CALLS);
        report(&b, "create+destroy image", create_image, CALLS / 20);
    }
    if (b.buffer_index >= 0) {
        ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
        check(zeMemAllocDevice(b.l0.context, &desc, 4096, 64, b.l0.device, &b.buffer),
              "zeMemAllocDevice");
        report(&b, "set buffer", set_buffer, CALLS);
    }
    report(&b, "create+destroy kernel", create_kernel, CALLS / 20);
    return 0;
}
