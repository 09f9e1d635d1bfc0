/* Uses fp64, which the pretend Tiger Lake device lacks: its build fails. */
kernel void fp64_scale(global double *data)
{
    size_t i = get_global_id(0);
    data[i] = data[i] * 2.5;
}
