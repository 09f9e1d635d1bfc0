#include "ze_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

ze_result_t ze_common_open(ze_common_device *l0)
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
    return result;
}

void *ze_common_read_file(const char *path, size_t *size)
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

double ze_common_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}
