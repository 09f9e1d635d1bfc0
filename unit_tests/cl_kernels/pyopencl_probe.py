"""Builds an OpenCL C program with PyOpenCL (which adds -I <its include dir>
to every build) on the platform whose name contains argv[1], prints what
PyOpenCL answers of it, and with --run runs its kernel on the device and
prints the result. test_opencl_programs.c compares the output with and
without the zecache layer."""
import hashlib
import sys

import numpy as np
import pyopencl as cl

SOURCE = """
#include <pyopencl-complex.h>
__kernel void twice(__global const float *a, __global float *b)
{
    int i = get_global_id(0);
    cfloat_t z = cfloat_new(a[i], 1.0f);
    b[i] = 2.0f * cfloat_real(z);
}
"""

platform = next(p for p in cl.get_platforms() if sys.argv[1] in p.name)
device = platform.get_devices()[0]
context = cl.Context([device])
program = cl.Program(context, SOURCE).build(options=["-cl-mad-enable"])
print("kernels", program.get_info(cl.program_info.KERNEL_NAMES))
print("options", repr(program.get_build_info(device, cl.program_build_info.OPTIONS)))
print("status", program.get_build_info(device, cl.program_build_info.STATUS))
print("log", repr(program.get_build_info(device, cl.program_build_info.LOG)))
kernel = program.twice
print("args", kernel.get_info(cl.kernel_info.NUM_ARGS))
if "--run" in sys.argv:
    queue = cl.CommandQueue(context)
    a = np.arange(64, dtype=np.float32)
    flags = cl.mem_flags
    a_buffer = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
    b_buffer = cl.Buffer(context, flags.WRITE_ONLY, a.nbytes)
    kernel(queue, a.shape, None, a_buffer, b_buffer)
    b = np.empty_like(a)
    cl.enqueue_copy(queue, b, b_buffer)
    print("result", hashlib.sha256(b.tobytes()).hexdigest(), b[:4])
