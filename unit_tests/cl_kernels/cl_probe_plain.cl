/* Two kernels with arguments of several kinds, a program-scope variable. */
__constant int offsets[4] = {1, 2, 3, 4};
__global int counter = 7;

__kernel void add_offsets(__global int *restrict out, __global const int *in, int n)
{
    int i = get_global_id(0);
    if (i < n)
        out[i] = in[i] + offsets[i % 4];
    else if (n < 0)
        counter += i; /* keeps the variable but never reads it: PoCL 6.0 leaves its
                         initial value out at random, with or without the layer */
}

__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void square(__global int *data, int n)
{
    int i = get_global_id(0);
    if (i < n)
        data[i] = data[i] * data[i];
}
