/* Does not compile: the failed build's error and log must be the driver's. */
__kernel void broken(__global int *out)
{
    out[0] = undeclared_name;
}
