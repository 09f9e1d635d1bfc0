"""An FFT through gpyfft, Debian's Python binding of clFFT, on PoCL: clFFT
writes and builds its OpenCL kernels at run time, for the transform's size
and layout. Prints the magnitudes of the transform, rounded, so that
test_opencl_programs.c compares the computed result with and without the
zecache layer."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from gpyfft.fft import FFT

platform = next(p for p in cl.get_platforms() if "Portable" in p.name)
context = cl.Context(platform.get_devices()[:1])
queue = cl.CommandQueue(context)
for size in (64, 96):
    signal = (np.arange(size, dtype=np.float32) % 7 - 3).astype(np.complex64)
    data = cla.to_device(queue, signal)
    (event,) = FFT(context, queue, data, axes=(0,)).enqueue()
    event.wait()
    magnitudes = np.abs(data.get())
    print("fft", size, " ".join("%.2f" % v for v in magnitudes[:12]))
