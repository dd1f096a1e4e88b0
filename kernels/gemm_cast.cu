// Kernels of the converted GEMM path: absolute maxima, scales, FP16 casts.
// The arithmetic lives in amp_math.h, shared with the emulator's host build.
#include "amp_kernels.h"
#include "amp_math.h"

extern "C" __global__ void
amp_k_absmax_f32(const float *src, int64_t ld, int64_t rows, int64_t cols,
                 uint32_t *absmax)
{
    __shared__ uint32_t block_max[AMP_KERNEL_BLOCK];
    int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nthreads = (int64_t)gridDim.x * blockDim.x;

    block_max[threadIdx.x] = amp_absmax_thread(src, ld, rows, cols, tid,
                                               nthreads);
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half && block_max[threadIdx.x + half] >
                                      block_max[threadIdx.x])
            block_max[threadIdx.x] = block_max[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicMax(absmax, block_max[0]);
}

extern "C" __global__ void
amp_k_gemm_scalars(struct amp_gemm_scalars *s, const float *alpha_dev,
                   const float *beta_dev, float alpha, float beta)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    amp_gemm_scalars_finish(s, alpha_dev ? *alpha_dev : alpha,
                            beta_dev ? *beta_dev : beta);
}

extern "C" __global__ void
amp_k_cast_f32_f16(const float *src, int64_t ld_src, uint16_t *dst,
                   int64_t ld_dst, int64_t rows, int64_t cols,
                   const float *scale)
{
    int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nthreads = (int64_t)gridDim.x * blockDim.x;

    amp_cast_f16_thread(src, ld_src, dst, ld_dst, rows, cols, *scale, tid,
                        nthreads);
}
