/* The tables the loader asks every layer for. Loader 1.8.12 fails zeInit
 * unless a layer in the validation layer's slot exports every table the real
 * validation layer exports, so all 53 are here, generated from one list.
 *
 * For each table: a hook sees it as the loader filled it, the chained
 * validation layer (option `validation`) wraps it, and then this layer's hook
 * saves what it calls and puts its own functions in. The application thus
 * calls this layer first, then the validation layer, then the driver. */
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "layer_internal.h"

/* X(api prefix, table name, table type's infix, hook before chain, hook after chain) */
#define ZCL_TABLES(X)                                                                              \
    X(ze, CommandList, command_list, zcl_hook_none, zcl_hook_command_list)                         \
    X(ze, CommandQueue, command_queue, zcl_hook_none, zcl_hook_none)                               \
    X(ze, Context, context, zcl_hook_none, zcl_hook_context)                                       \
    X(ze, DeviceExp, device_exp, zcl_hook_none, zcl_hook_none)                                     \
    X(ze, Device, device, zcl_hook_none, zcl_hook_device)                                          \
    X(ze, Driver, driver, zcl_hook_none, zcl_hook_driver)                                          \
    X(ze, EventExp, event_exp, zcl_hook_none, zcl_hook_none)                                       \
    X(ze, EventPool, event_pool, zcl_hook_none, zcl_hook_none)                                     \
    X(ze, Event, event, zcl_hook_none, zcl_hook_none)                                              \
    X(ze, FabricEdgeExp, fabric_edge_exp, zcl_hook_none, zcl_hook_none)                            \
    X(ze, FabricVertexExp, fabric_vertex_exp, zcl_hook_none, zcl_hook_none)                        \
    X(ze, Fence, fence, zcl_hook_none, zcl_hook_none)                                              \
    X(ze, Global, global, zcl_hook_none, zcl_hook_none)                                            \
    X(ze, ImageExp, image_exp, zcl_hook_none, zcl_hook_image_exp)                                  \
    X(ze, Image, image, zcl_hook_none, zcl_hook_image)                                             \
    X(ze, KernelExp, kernel_exp, zcl_hook_none, zcl_hook_none)                                     \
    X(ze, Kernel, kernel, zcl_hook_none, zcl_hook_kernel)                                          \
    X(ze, Mem, mem, zcl_hook_none, zcl_hook_none)                                                  \
    X(ze, ModuleBuildLog, module_build_log, zcl_hook_none, zcl_hook_module_build_log)              \
    X(ze, Module, module, zcl_hook_module_before_chain, zcl_hook_module)                           \
    X(ze, PhysicalMem, physical_mem, zcl_hook_none, zcl_hook_none)                                 \
    X(ze, Sampler, sampler, zcl_hook_none, zcl_hook_none)                                          \
    X(ze, VirtualMem, virtual_mem, zcl_hook_none, zcl_hook_none)                                   \
    X(zes, Device, device, zcl_hook_none, zcl_hook_none)                                           \
    X(zes, Diagnostics, diagnostics, zcl_hook_none, zcl_hook_none)                                 \
    X(zes, Driver, driver, zcl_hook_none, zcl_hook_none)                                           \
    X(zes, Engine, engine, zcl_hook_none, zcl_hook_none)                                           \
    X(zes, FabricPort, fabric_port, zcl_hook_none, zcl_hook_none)                                  \
    X(zes, Fan, fan, zcl_hook_none, zcl_hook_none)                                                 \
    X(zes, Firmware, firmware, zcl_hook_none, zcl_hook_none)                                       \
    X(zes, Frequency, frequency, zcl_hook_none, zcl_hook_none)                                     \
    X(zes, Led, led, zcl_hook_none, zcl_hook_none)                                                 \
    X(zes, Memory, memory, zcl_hook_none, zcl_hook_none)                                           \
    X(zes, PerformanceFactor, performance_factor, zcl_hook_none, zcl_hook_none)                    \
    X(zes, Power, power, zcl_hook_none, zcl_hook_none)                                             \
    X(zes, Psu, psu, zcl_hook_none, zcl_hook_none)                                                 \
    X(zes, Ras, ras, zcl_hook_none, zcl_hook_none)                                                 \
    X(zes, Scheduler, scheduler, zcl_hook_none, zcl_hook_none)                                     \
    X(zes, Standby, standby, zcl_hook_none, zcl_hook_none)                                         \
    X(zes, Temperature, temperature, zcl_hook_none, zcl_hook_none)                                 \
    X(zet, CommandList, command_list, zcl_hook_none, zcl_hook_none)                                \
    X(zet, Context, context, zcl_hook_none, zcl_hook_none)                                         \
    X(zet, Debug, debug, zcl_hook_none, zcl_hook_none)                                             \
    X(zet, Device, device, zcl_hook_none, zcl_hook_none)                                           \
    X(zet, Kernel, kernel, zcl_hook_none, zcl_hook_none)                                           \
    X(zet, MetricGroupExp, metric_group_exp, zcl_hook_none, zcl_hook_none)                         \
    X(zet, MetricGroup, metric_group, zcl_hook_none, zcl_hook_none)                                \
    X(zet, Metric, metric, zcl_hook_none, zcl_hook_none)                                           \
    X(zet, MetricQueryPool, metric_query_pool, zcl_hook_none, zcl_hook_none)                       \
    X(zet, MetricQuery, metric_query, zcl_hook_none, zcl_hook_none)                                \
    X(zet, MetricStreamer, metric_streamer, zcl_hook_none, zcl_hook_none)                          \
    X(zet, Module, module, zcl_hook_none, zcl_hook_none)                                           \
    X(zet, TracerExp, tracer_exp, zcl_hook_none, zcl_hook_none)

/* Versions older than 1.0 have no tables this layer knows. Newer versions are
 * accepted: the hooks only touch fields that exist since 1.0. */
static bool version_supported(ze_api_version_t version)
{
    return ZE_MAJOR_VERSION(version) >= 1;
}

#define ZCL_DEFINE_TABLE_EXPORT(prefix, name, infix, hook_before_chain, hook_after_chain)          \
    ZE_DLLEXPORT ze_result_t ZE_APICALL prefix##Get##name##ProcAddrTable(                          \
        ze_api_version_t version, prefix##_##infix##_dditable_t *table)                            \
    {                                                                                              \
        if (table == NULL)                                                                         \
            return ZE_RESULT_ERROR_INVALID_NULL_POINTER;                                           \
        if (!version_supported(version))                                                           \
            return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;                                            \
        hook_before_chain(version, table);                                                         \
        prefix##_pfnGet##name##ProcAddrTable_t chained =                                           \
            (prefix##_pfnGet##name##ProcAddrTable_t)zcl_chain_symbol(#prefix "Get" #name           \
                                                                             "ProcAddrTable");     \
        if (chained != NULL) {                                                                     \
            ze_result_t result = chained(version, table);                                          \
            if (result != ZE_RESULT_SUCCESS)                                                       \
                return result;                                                                     \
        }                                                                                          \
        hook_after_chain(version, table);                                                          \
        return ZE_RESULT_SUCCESS;                                                                  \
    }

ZCL_TABLES(ZCL_DEFINE_TABLE_EXPORT)
