/* backend_cuda.cu - the CUDA backend's kernels, behind C launchers
 * (backend_cuda.c holds everything else: cuBLAS, NCCL and MPI are C APIs).
 * Built only where nvcc is found. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

/* The fill pattern of backend.h (sc_backend_pattern), byte for byte. */
__device__ static uint8_t pattern(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i >> 3) + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (uint8_t)(z >> (8 * (i & 7)));
}

__global__ static void fill_k(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = pattern(seed, i);
}

/* sc_backend_uniform of backend.h: the pattern word's top 53 bits scaled
 * to [-1, 1). */
__device__ static double uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-52 - 1.0;
}

template <typename T> __device__ static T from_double(double v);
template <> __device__ float from_double<float>(double v) { return (float)v; }
template <> __device__ __half from_double<__half>(double v) { return __float2half((float)v); }
template <> __device__ __nv_bfloat16 from_double<__nv_bfloat16>(double v)
{
    return __float2bfloat16((float)v);
}

template <typename T> __global__ static void uniform_k(T *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = from_double<T>(uniform(seed, i));
}

__global__ static void memop_k(float *d, const float *s, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        d[i] = s[i] * 0.5f + d[i] * 0.5f;
}

/* The same over float4: 16-byte loads and stores, as the vectorized
 * elementwise kernels of a framework (a norm, an activation) run; the
 * scalar kernel above left one H200 at ~0.7 of its HBM (docs/accuracy.md,
 * "The seventh run"). */
__global__ static void memop4_k(float4 *d, const float4 *s, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float4 a = s[i], b = d[i];
        d[i] = make_float4(a.x * 0.5f + b.x * 0.5f, a.y * 0.5f + b.y * 0.5f,
                           a.z * 0.5f + b.z * 0.5f, a.w * 0.5f + b.w * 0.5f);
    }
}

static unsigned blocks(size_t n)
{
    size_t b = (n + 255) / 256;
    return b < 1 ? 1 : b > 65535 ? 65535 : (unsigned)b;
}

extern "C" int sc_cuda_fill(void *p, size_t bytes, uint64_t seed, void *stream)
{
    if (bytes)
        fill_k<<<blocks(bytes), 256, 0, (cudaStream_t)stream>>>((uint8_t *)p, bytes, seed);
    return (int)cudaGetLastError();
}

extern "C" int sc_cuda_memop(void *dst, const void *src, size_t bytes, void *stream)
{
    size_t n = bytes / 4, n4 = 0;
    cudaStream_t st = (cudaStream_t)stream;
    /* float4 where both are 16-byte aligned (cudaMalloc's are), the tail scalar */
    if (((uintptr_t)dst | (uintptr_t)src) % 16 == 0)
        n4 = n / 4;
    if (n4)
        memop4_k<<<blocks(n4), 256, 0, st>>>((float4 *)dst, (const float4 *)src, n4);
    if (n > 4 * n4)
        memop_k<<<blocks(n - 4 * n4), 256, 0, st>>>((float *)dst + 4 * n4,
                                                    (const float *)src + 4 * n4, n - 4 * n4);
    return (int)cudaGetLastError();
}

/* kind: 0 fp32 (and tf32), 1 fp16, 2 bf16. */
extern "C" int sc_cuda_fill_uniform(void *p, size_t count, int kind, uint64_t seed, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    if (count == 0)
        return (int)cudaGetLastError();
    if (kind == 1)
        uniform_k<__half><<<blocks(count), 256, 0, s>>>((__half *)p, count, seed);
    else if (kind == 2)
        uniform_k<__nv_bfloat16><<<blocks(count), 256, 0, s>>>((__nv_bfloat16 *)p, count, seed);
    else
        uniform_k<float><<<blocks(count), 256, 0, s>>>((float *)p, count, seed);
    return (int)cudaGetLastError();
}
