/* cuda_info.cu - the CUDA device count, built only where nvcc is found. */
#include <cuda_runtime.h>

extern "C" int sc_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0; /* no driver or no device: report none */
    return n;
}
