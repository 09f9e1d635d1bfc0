// Image arguments in several places and of several kinds, beside samplers,
// buffers and plain values, and a kernel without images in the same module.
kernel void read_first(read_only image2d_t in, global float4 *out)
{
    int2 at = (int2)(get_global_id(0), get_global_id(1));
    out[at.y * get_image_width(in) + at.x] = read_imagef(in, at);
}

kernel void sample_second(sampler_t sampler, read_only image2d_t in, global float4 *out,
                          ulong tag)
{
    int i = get_global_id(0);
    out[i] = read_imagef(in, sampler, (int2)(i, 0)) + (float)tag;
}

kernel void write_third(global const float4 *in, ulong tag, write_only image2d_t out)
{
    int i = get_global_id(0);
    write_imagef(out, (int2)(i, 0), in[i] * (float)tag);
}

kernel void volume_and_line(read_only image3d_t volume, write_only image1d_t line)
{
    int i = get_global_id(0);
    write_imagef(line, i, read_imagef(volume, (int4)(i, 0, 0, 0)));
}

kernel void no_image(global float *x, ulong tag)
{
    x[get_global_id(0)] += (float)tag;
}
