// A 3x3 box filter through a sampler: an image module, as image-processing
// programs have them.
kernel void box_filter(read_only image2d_t in, write_only image2d_t out, sampler_t sampler)
{
    int2 at = (int2)(get_global_id(0), get_global_id(1));
    float4 sum = (float4)(0.0f);
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
            sum += read_imagef(in, sampler, at + (int2)(dx, dy));
    write_imagef(out, at, sum / 9.0f);
}
