/* A header found through -I. */
#include "cl_probe_scale.h"

__kernel void scale(__global int *out, __global const int *in, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = in[i] * PROBE_SCALE;
}
