/* A second small kernel for tests that need two different modules. */
kernel void vector_add(global const int *a, global const int *b, global int *sum)
{
    size_t i = get_global_id(0);
    sum[i] = a[i] + b[i];
}
