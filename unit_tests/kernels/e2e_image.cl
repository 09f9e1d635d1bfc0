// An image argument: zeKernelSetArgumentValue treats it differently for a
// module built from SPIR-V and one made from a native binary.
kernel void copy_image(read_only image2d_t in, global float4 *out)
{
    int2 at = (int2)(get_global_id(0), get_global_id(1));
    out[at.y * get_image_width(in) + at.x] = read_imagef(in, at);
}
