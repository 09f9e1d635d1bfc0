kernel void histogram(global const uchar *data, uint size, global uint *bins)
{
    local uint local_bins[256];
    for (uint i = get_local_id(0); i < 256; i += get_local_size(0))
        local_bins[i] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_global_id(0); i < size; i += get_global_size(0))
        atomic_inc(&local_bins[data[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_local_id(0); i < 256; i += get_local_size(0))
        atomic_add(&bins[i], local_bins[i]);
}
