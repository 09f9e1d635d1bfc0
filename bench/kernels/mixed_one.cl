/* About 200 KB of native code: one kernel. */
#include "mixed_ops.h"

MIXED_KERNEL(mixed_0, REPEAT_704)
