/* X comes from the build's flags (POCL_EXTRA_BUILD_FLAGS in a test). */
#ifndef X
#define X 1
#endif
kernel void store_x(global int *out)
{
    out[get_global_id(0)] = X;
}
