#include "ze_probe_describe.h"

#include <level_zero/zet_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DESCRIBE_MAX_KERNELS 16

/* FNV-1a: enough to tell two byte strings apart in a test's output. */
static uint64_t fnv1a(const uint8_t *bytes, size_t size)
{
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ bytes[i]) * 1099511628211ull;
    return hash;
}

/* text on one line, with anything but printable ASCII escaped. */
static void print_escaped(FILE *out, const char *text, size_t length)
{
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\\')
            fputs("\\\\", out);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, out);
        else
            fprintf(out, "\\x%02x", c);
    }
}

/* text, with "<0x...>" (module addresses in link and linkage logs) as
 * "<address>". */
static void print_without_addresses(FILE *out, const char *text)
{
    for (const char *at = text; *at != '\0';) {
        const char *hex = strstr(at, "<0x");
        size_t digits = hex != NULL ? strspn(hex + 3, "0123456789abcdefABCDEF") : 0;
        if (hex == NULL || hex[3 + digits] != '>') {
            size_t length = hex != NULL ? (size_t)(hex - at) + 1 : strlen(at);
            print_escaped(out, at, length);
            at += length;
            continue;
        }
        print_escaped(out, at, (size_t)(hex - at));
        fputs("<address>", out);
        at = hex + 3 + digits + 1;
    }
}

static void describe_log_text(FILE *out, ze_module_build_log_handle_t build_log,
                              bool without_addresses)
{
    size_t size = 0;
    char *text = NULL;
    if (build_log == NULL)
        return;
    ze_result_t result = zeModuleBuildLogGetString(build_log, &size, NULL);
    if (result == ZE_RESULT_SUCCESS && (text = calloc(1, size + 1)) != NULL)
        result = zeModuleBuildLogGetString(build_log, &size, text);
    fprintf(out, "build-log 0x%x \"", (unsigned)result);
    if (text != NULL && without_addresses)
        print_without_addresses(out, text);
    else if (text != NULL)
        print_escaped(out, text, strlen(text));
    fprintf(out, "\"\n");
    free(text);
}

static void describe_build_log(FILE *out, ze_module_build_log_handle_t build_log)
{
    describe_log_text(out, build_log, false);
}

static void describe_properties(FILE *out, ze_kernel_handle_t kernel)
{
    ze_kernel_preferred_group_size_properties_t preferred = {
        .stype = ZE_STRUCTURE_TYPE_KERNEL_PREFERRED_GROUP_SIZE_PROPERTIES};
    ze_kernel_properties_t p = {.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES, .pNext = &preferred};
    ze_result_t result = zeKernelGetProperties(kernel, &p);
    fprintf(out,
            "  properties 0x%x args %u required-group %u,%u,%u required-subgroups %u "
            "required-subgroup-size %u max-subgroup-size %u max-subgroups %u local %u "
            "private %u spill %u uuid-hash %016llx preferred-multiple %u\n",
            (unsigned)result, p.numKernelArgs, p.requiredGroupSizeX, p.requiredGroupSizeY,
            p.requiredGroupSizeZ, p.requiredNumSubGroups, p.requiredSubgroupSize, p.maxSubgroupSize,
            p.maxNumSubgroups, p.localMemSize, p.privateMemSize, p.spillMemSize,
            (unsigned long long)fnv1a((const uint8_t *)&p.uuid, sizeof(p.uuid)),
            preferred.preferredMultiple);
}

static void describe_attributes(FILE *out, ze_kernel_handle_t kernel)
{
    uint32_t size = 0;
    char *text = NULL;
    ze_result_t result = zeKernelGetSourceAttributes(kernel, &size, NULL);
    if (result == ZE_RESULT_SUCCESS && (text = calloc(1, (size_t)size + 1)) != NULL)
        result = zeKernelGetSourceAttributes(kernel, &size, &text);
    fprintf(out, "  attributes 0x%x size %u \"", (unsigned)result, size);
    if (text != NULL)
        print_escaped(out, text, strlen(text));
    fprintf(out, "\"\n");
    free(text);
}

/* The image layouts the driver knows: 22.43 indexes its format table with
 * the layout unchecked, and knows no three-channel layout (43 to 45) before
 * 24.45.31740. */
static uint32_t image_layout_count(void)
{
    uint32_t count = 1;
    ze_driver_handle_t driver = NULL;
    ze_driver_properties_t properties = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
    if (zeDriverGet(&count, &driver) != ZE_RESULT_SUCCESS || count == 0 ||
        zeDriverGetProperties(driver, &properties) != ZE_RESULT_SUCCESS)
        return 0;
    return (properties.driverVersion & 0xffffu) >= 31740u ? 46u : 43u;
}

#define IMAGE_TYPE_COUNT 5u /* UINT, SINT, UNORM, SNORM, FLOAT */

static ze_result_t create_image(const describe_lookups *lookups, uint32_t layout, uint32_t type,
                                ze_image_handle_t *image)
{
    ze_image_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_IMAGE_DESC,
                            .type = ZE_IMAGE_TYPE_2D,
                            .format = {(ze_image_format_layout_t)layout,
                                       (ze_image_format_type_t)type, ZE_IMAGE_FORMAT_SWIZZLE_R,
                                       ZE_IMAGE_FORMAT_SWIZZLE_G, ZE_IMAGE_FORMAT_SWIZZLE_B,
                                       ZE_IMAGE_FORMAT_SWIZZLE_A},
                            .width = 4,
                            .height = 4,
                            .depth = 1};
    *image = NULL;
    return zeImageCreate(lookups->context, lookups->device, &desc, image);
}

/* Every layout and type as argument index; kind 'v' sets the handle as a
 * plain 8-byte value. */
static void describe_image_formats(FILE *out, ze_kernel_handle_t kernel, uint32_t index, char kind,
                                   const describe_lookups *lookups)
{
    uint32_t layouts = image_layout_count();
    for (uint32_t layout = 0; layout < layouts; layout++) {
        for (uint32_t type = 0; type < IMAGE_TYPE_COUNT; type++) {
            ze_image_handle_t image;
            ze_result_t created = create_image(lookups, layout, type, &image);
            ze_result_t set = ZE_RESULT_ERROR_UNINITIALIZED, set_sized_0 = set;
            if (created == ZE_RESULT_SUCCESS) {
                set = zeKernelSetArgumentValue(kernel, index, sizeof(image), &image);
                /* the driver reads an image's handle whatever size it is told */
                if (kind == 'i')
                    set_sized_0 = zeKernelSetArgumentValue(kernel, index, 0, &image);
                zeImageDestroy(image);
            }
            fprintf(out, "  %s %u layout %u type %u create 0x%x set 0x%x",
                    kind == 'v' ? "value" : "image", index, layout, type, (unsigned)created,
                    (unsigned)set);
            if (kind == 'i')
                fprintf(out, " size-0 0x%x", (unsigned)set_sized_0);
            fprintf(out, "\n");
        }
    }
}

/* A view whose format the driver refuses, of an image whose format it
 * takes. */
static void describe_image_view(FILE *out, ze_kernel_handle_t kernel, uint32_t index,
                                const describe_lookups *lookups)
{
    ze_image_handle_t image, view = NULL;
    ze_result_t created =
        create_image(lookups, ZE_IMAGE_FORMAT_LAYOUT_32, ZE_IMAGE_FORMAT_TYPE_UINT, &image);
    ze_result_t viewed = ZE_RESULT_ERROR_UNINITIALIZED, set = ZE_RESULT_ERROR_UNINITIALIZED;
    if (created == ZE_RESULT_SUCCESS) {
        ze_image_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_IMAGE_DESC,
                                .type = ZE_IMAGE_TYPE_2D,
                                .format = {ZE_IMAGE_FORMAT_LAYOUT_32, ZE_IMAGE_FORMAT_TYPE_UNORM,
                                           ZE_IMAGE_FORMAT_SWIZZLE_R, ZE_IMAGE_FORMAT_SWIZZLE_0,
                                           ZE_IMAGE_FORMAT_SWIZZLE_0, ZE_IMAGE_FORMAT_SWIZZLE_1},
                                .width = 4,
                                .height = 4,
                                .depth = 1};
        viewed = zeImageViewCreateExp(lookups->context, lookups->device, &desc, image, &view);
        if (viewed == ZE_RESULT_SUCCESS) {
            set = zeKernelSetArgumentValue(kernel, index, sizeof(view), &view);
            zeImageDestroy(view);
        }
        zeImageDestroy(image);
    }
    fprintf(out, "  view %u create 0x%x view 0x%x set 0x%x\n", index, (unsigned)created,
            (unsigned)viewed, (unsigned)set);
}

/* Every addressing mode, filter and coordinate kind. */
static void describe_samplers(FILE *out, ze_kernel_handle_t kernel, uint32_t index,
                              const describe_lookups *lookups)
{
    for (uint32_t mode = 0; mode <= ZE_SAMPLER_ADDRESS_MODE_MIRROR; mode++) {
        for (uint32_t filter = 0; filter <= ZE_SAMPLER_FILTER_MODE_LINEAR; filter++) {
            for (int normalized = 0; normalized <= 1; normalized++) {
                ze_sampler_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_SAMPLER_DESC,
                                          .addressMode = (ze_sampler_address_mode_t)mode,
                                          .filterMode = (ze_sampler_filter_mode_t)filter,
                                          .isNormalized = normalized != 0};
                ze_sampler_handle_t sampler = NULL;
                ze_result_t created =
                    zeSamplerCreate(lookups->context, lookups->device, &desc, &sampler);
                ze_result_t set = ZE_RESULT_ERROR_UNINITIALIZED;
                if (created == ZE_RESULT_SUCCESS) {
                    set = zeKernelSetArgumentValue(kernel, index, sizeof(sampler), &sampler);
                    zeSamplerDestroy(sampler);
                }
                fprintf(out, "  sampler %u mode %u filter %u normalized %d create 0x%x set 0x%x\n",
                        index, mode, filter, normalized, (unsigned)created, (unsigned)set);
            }
        }
    }
}

static void describe_arguments(FILE *out, ze_kernel_handle_t kernel, const char *name,
                               const describe_lookups *lookups)
{
    for (int i = 0; i < lookups->argument_count; i++) {
        if (strcmp(lookups->arguments[i].kernel, name) != 0)
            continue;
        uint32_t index = lookups->arguments[i].index;
        char kind = lookups->arguments[i].kind;
        if (kind == 's') {
            describe_samplers(out, kernel, index, lookups);
            continue;
        }
        describe_image_formats(out, kernel, index, kind, lookups);
        if (kind == 'i')
            describe_image_view(out, kernel, index, lookups);
    }
}

static void describe_kernel(FILE *out, ze_module_handle_t module, const char *name,
                            const describe_lookups *lookups)
{
    ze_kernel_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = name};
    ze_kernel_handle_t kernel = NULL;
    ze_result_t result = zeKernelCreate(module, &desc, &kernel);
    fprintf(out, "kernel %s create 0x%x\n", name, (unsigned)result);
    if (result != ZE_RESULT_SUCCESS)
        return;
    describe_properties(out, kernel);
    describe_attributes(out, kernel);
    uint32_t x = 0, y = 0, z = 0;
    result = zeKernelSuggestGroupSize(kernel, 1024, 6, 1, &x, &y, &z);
    fprintf(out, "  suggested-group 0x%x %u,%u,%u\n", (unsigned)result, x, y, z);
    zet_profile_properties_t profile = {.stype = ZET_STRUCTURE_TYPE_PROFILE_PROPERTIES};
    result = zetKernelGetProfileInfo(kernel, &profile);
    fprintf(out, "  profile 0x%x flags 0x%x tokens %u\n", (unsigned)result, (unsigned)profile.flags,
            profile.numTokens);
    if (lookups != NULL)
        describe_arguments(out, kernel, name, lookups);
    zeKernelDestroy(kernel);
}

static void describe_kernels(FILE *out, ze_module_handle_t module, const describe_lookups *lookups)
{
    uint32_t count = 0;
    const char *names[DESCRIBE_MAX_KERNELS];
    ze_result_t result = zeModuleGetKernelNames(module, &count, NULL);
    if (count > DESCRIBE_MAX_KERNELS)
        count = DESCRIBE_MAX_KERNELS;
    if (result == ZE_RESULT_SUCCESS)
        result = zeModuleGetKernelNames(module, &count, names);
    fprintf(out, "kernel-names 0x%x", (unsigned)result);
    for (uint32_t i = 0; result == ZE_RESULT_SUCCESS && i < count; i++)
        fprintf(out, " %s", names[i]);
    fprintf(out, "\n");
    for (uint32_t i = 0; result == ZE_RESULT_SUCCESS && i < count; i++)
        describe_kernel(out, module, names[i], lookups);
}

static void describe_lookups_of(FILE *out, ze_module_handle_t module,
                                const describe_lookups *lookups)
{
    for (int i = 0; lookups != NULL && i < lookups->function_count; i++) {
        void *pointer = NULL;
        ze_result_t result = zeModuleGetFunctionPointer(module, lookups->functions[i], &pointer);
        fprintf(out, "function %s 0x%x %s\n", lookups->functions[i], (unsigned)result,
                pointer != NULL ? "found" : "null");
    }
    for (int i = 0; lookups != NULL && i < lookups->global_count; i++) {
        void *pointer = NULL;
        size_t size = 0;
        ze_result_t result = zeModuleGetGlobalPointer(module, lookups->globals[i], &size, &pointer);
        fprintf(out, "global %s 0x%x size %zu %s\n", lookups->globals[i], (unsigned)result, size,
                pointer != NULL ? "found" : "null");
    }
}

static void describe_linkage(FILE *out, ze_module_handle_t module)
{
    ze_linkage_inspection_ext_desc_t desc = {
        .stype = ZE_STRUCTURE_TYPE_LINKAGE_INSPECTION_EXT_DESC,
        .flags = ZE_LINKAGE_INSPECTION_EXT_FLAG_IMPORTS |
                 ZE_LINKAGE_INSPECTION_EXT_FLAG_UNRESOLVABLE_IMPORTS |
                 ZE_LINKAGE_INSPECTION_EXT_FLAG_EXPORTS};
    ze_module_build_log_handle_t log = NULL;
    ze_result_t result = zeModuleInspectLinkageExt(&desc, 1, &module, &log);
    fprintf(out, "linkage 0x%x\n", (unsigned)result);
    if (result == ZE_RESULT_SUCCESS && log != NULL) {
        describe_log_text(out, log, true); /* 26.x names each module by its address */
        zeModuleBuildLogDestroy(log);
    }
}

static void describe_bytes(FILE *out, const char *what, ze_result_t result, const uint8_t *bytes,
                           size_t size)
{
    fprintf(out, "%s 0x%x size %zu fnv %016llx\n", what, (unsigned)result, size,
            (unsigned long long)(bytes != NULL ? fnv1a(bytes, size) : 0));
}

static void describe_native_binary(FILE *out, ze_module_handle_t module)
{
    size_t size = 0;
    uint8_t *bytes = NULL;
    ze_result_t result = zeModuleGetNativeBinary(module, &size, NULL);
    if (result == ZE_RESULT_SUCCESS && (bytes = malloc(size + 1)) != NULL)
        result = zeModuleGetNativeBinary(module, &size, bytes);
    describe_bytes(out, "native-binary", result, bytes, size);
    free(bytes);
}

static void describe_debug_info(FILE *out, ze_module_handle_t module)
{
    size_t size = 0;
    uint8_t *bytes = NULL;
    zet_module_handle_t tools_module = (zet_module_handle_t)module;
    ze_result_t result =
        zetModuleGetDebugInfo(tools_module, ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF, &size, NULL);
    if (result == ZE_RESULT_SUCCESS && (bytes = malloc(size + 1)) != NULL)
        result = zetModuleGetDebugInfo(tools_module, ZET_MODULE_DEBUG_INFO_FORMAT_ELF_DWARF, &size,
                                       bytes);
    describe_bytes(out, "debug-info", result, bytes, size);
    free(bytes);
}

static void describe_module_properties(FILE *out, ze_module_handle_t module)
{
    ze_module_properties_t properties = {.stype = ZE_STRUCTURE_TYPE_MODULE_PROPERTIES};
    ze_result_t result = zeModuleGetProperties(module, &properties);
    fprintf(out, "module-properties 0x%x flags 0x%x\n", (unsigned)result,
            (unsigned)properties.flags);
}

/* zeModuleDynamicLink of module and the partner, with its log. */
static void describe_dynamic_link(FILE *out, ze_module_handle_t module,
                                  const describe_lookups *lookups)
{
    if (lookups == NULL || !lookups->has_partner)
        return;
    fprintf(out, "partner create 0x%x\n", (unsigned)lookups->partner_result);
    if (lookups->partner == NULL)
        return;
    ze_module_handle_t modules[2] = {module, lookups->partner};
    ze_module_build_log_handle_t log = NULL;
    ze_result_t result = zeModuleDynamicLink(2, modules, &log);
    fprintf(out, "dynamic-link 0x%x\n", (unsigned)result);
    describe_log_text(out, log, true);
    if (log != NULL)
        zeModuleBuildLogDestroy(log);
    describe_module_properties(out, module);
}

void describe_module(FILE *out, ze_result_t created, ze_module_handle_t module,
                     ze_module_build_log_handle_t build_log, const describe_lookups *lookups)
{
    fprintf(out, "create 0x%x\n", (unsigned)created);
    describe_build_log(out, build_log);
    if (created != ZE_RESULT_SUCCESS)
        return;
    describe_module_properties(out, module);
    describe_dynamic_link(out, module, lookups);
    describe_kernels(out, module, lookups);
    describe_lookups_of(out, module, lookups);
    describe_linkage(out, module);
    describe_debug_info(out, module);
    describe_native_binary(out, module);
}
