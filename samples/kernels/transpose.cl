#define TILE 16
kernel void transpose(global const float *in, global float *out, uint width, uint height)
{
    local float tile[TILE][TILE + 1];
    uint x = get_global_id(0), y = get_global_id(1);
    uint lx = get_local_id(0), ly = get_local_id(1);
    if (x < width && y < height)
        tile[ly][lx] = in[y * width + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    uint tx = get_group_id(1) * TILE + lx, ty = get_group_id(0) * TILE + ly;
    if (tx < height && ty < width)
        out[ty * height + tx] = tile[lx][ly];
}
