kernel void mandelbrot(global uchar *image, uint width, uint height, uint max_iterations)
{
    uint px = get_global_id(0), py = get_global_id(1);
    float cx = 3.0f * px / width - 2.0f, cy = 2.0f * py / height - 1.0f;
    float x = 0.0f, y = 0.0f;
    uint n = 0;
    while (n < max_iterations && x * x + y * y < 4.0f) {
        float next_x = x * x - y * y + cx;
        y = 2.0f * x * y + cy;
        x = next_x;
        n++;
    }
    image[py * width + px] = (uchar)(255u * n / max_iterations);
}
