/* Intel's real driver without a GPU, pretending to have a Tiger Lake device:
 * one recipe for both driver generations. 22.43 needs the first three
 * settings; 26.x, built without aubstream, crashes in zeInit unless told not
 * to use it (UseAubStream=0) and given the device's layout
 * (HardwareInfoOverride). 22.43 accepts both. scripts/pretend-device.sh is
 * the shell's copy. */
#ifndef ZC_PRETEND_DEVICE_H
#define ZC_PRETEND_DEVICE_H

#include <stdlib.h>

/* As NAME=value strings, for an environment built by hand. */
#define ZC_PRETEND_DEVICE_ENV                                                                      \
    "NEOReadDebugKeys=1", "SetCommandStreamReceiver=1", "UseAubStream=0",                          \
        "ProductFamilyOverride=tgllp", "HardwareInfoOverride=1x6x16"

/* As lines of the driver's igdrcl.config settings file (which needs no
 * NEOReadDebugKeys). */
#define ZC_PRETEND_DEVICE_FILE                                                                     \
    "SetCommandStreamReceiver = 1\nUseAubStream = 0\nProductFamilyOverride = tgllp\n"              \
    "HardwareInfoOverride = 1x6x16\n"

/* Into this process's environment, for the children it starts. */
static inline void zc_pretend_device_setenv(void)
{
    static const char *const settings[][2] = {{"NEOReadDebugKeys", "1"},
                                              {"SetCommandStreamReceiver", "1"},
                                              {"UseAubStream", "0"},
                                              {"ProductFamilyOverride", "tgllp"},
                                              {"HardwareInfoOverride", "1x6x16"}};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        setenv(settings[i][0], settings[i][1], 1);
}

#endif
