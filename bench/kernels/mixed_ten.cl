/* About 2 MB of native code: ten kernels in one module, each its own
 * sequence of operations. */
#include "mixed_ops.h"

MIXED_KERNEL(mixed_0, REPEAT_704)
MIXED_KERNEL(mixed_1, REPEAT_704)
MIXED_KERNEL(mixed_2, REPEAT_704)
MIXED_KERNEL(mixed_3, REPEAT_704)
MIXED_KERNEL(mixed_4, REPEAT_704)
MIXED_KERNEL(mixed_5, REPEAT_704)
MIXED_KERNEL(mixed_6, REPEAT_704)
MIXED_KERNEL(mixed_7, REPEAT_704)
MIXED_KERNEL(mixed_8, REPEAT_704)
MIXED_KERNEL(mixed_9, REPEAT_704)
