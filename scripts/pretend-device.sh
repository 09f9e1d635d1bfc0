# Sourced: Intel's real driver without a GPU, pretending to have a Tiger Lake
# device, with one recipe for Debian 12's 22.43 and the current 26.x (which
# has no aubstream: without UseAubStream=0 and HardwareInfoOverride its
# zeInit crashes). unit_tests/pretend_device.h is the tests' copy.
export NEOReadDebugKeys=1 SetCommandStreamReceiver=1 UseAubStream=0
export ProductFamilyOverride=${ProductFamilyOverride:-tgllp}
export HardwareInfoOverride=${HardwareInfoOverride:-1x6x16}
