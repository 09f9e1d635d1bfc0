/* The modules the layer made from a cached native binary where the driver
 * would answer a lookup differently had it compiled the SPIR-V, with what it
 * would have known: whether the flags asked for exported functions
 * (-library-compilation) and globals (-ze-take-global-address). Intel's
 * driver from 22.53 on takes a native module to export every symbol, and a
 * SPIR-V one only what its flags ask for (ModuleImp::getFunctionPointer,
 * getGlobalPointer in level_zero/core/source/module/module_imp.cpp).
 *
 * Only failed lookups and module destruction consult the map, and
 * destruction only while it holds anything, so hits without such lookups pay
 * one insertion. */
#include "layer_internal.h"

static zcl_handle_map hit_modules = ZCL_HANDLE_MAP_INIT;

bool zcl_hit_modules_add(ze_module_handle_t module, unsigned flags)
{
    return zcl_handle_map_put(&hit_modules, module, flags);
}

bool zcl_hit_modules_find(ze_module_handle_t module, unsigned *flags)
{
    uintptr_t value;
    if (!zcl_handle_map_get(&hit_modules, module, &value))
        return false;
    *flags = (unsigned)value;
    return true;
}

void zcl_hit_modules_remove(ze_module_handle_t module)
{
    (void)zcl_handle_map_take(&hit_modules, module, NULL);
}
