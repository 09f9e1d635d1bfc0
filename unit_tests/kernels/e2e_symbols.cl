// Program-scope variables and a function that is not a kernel: what
// zeModuleGetGlobalPointer and zeModuleGetFunctionPointer can find.
global int counter = 5;
global float table[16] = {1.0f, 2.0f};
constant int limits[4] = {1, 2, 3, 4};

__attribute__((noinline)) int scaled(int x)
{
    return x * limits[x & 3] + counter;
}

kernel void use_symbols(global int *out)
{
    size_t i = get_global_id(0);
    out[i] = scaled((int)i) + (int)table[i & 15];
    counter += 1;
}

kernel void second_kernel(global float *out)
{
    out[get_global_id(0)] = table[get_global_id(0) & 15];
}
