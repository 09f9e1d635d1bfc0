/* The smallest realistic module: one short kernel, about 2 KB of native code
 * and 1.4 KB of SPIR-V (the "typical module" of the key timing). */
kernel void saxpy(global float *y, global const float *x, float a)
{
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
