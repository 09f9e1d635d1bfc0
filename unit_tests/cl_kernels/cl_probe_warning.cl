/* Builds with a warning: the build log of a hit must be the build's. */
#warning "zecache probe warning"

__kernel void copy(__global int *out, __global const int *in, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = in[i];
}
