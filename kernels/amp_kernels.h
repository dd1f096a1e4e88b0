/* The shim's device kernels as the host sees them: names, parameter lists
 * and launch shapes. Plain C; the kernels are in the .cu files here, their
 * arithmetic in kernels/amp_math.h. */
#ifndef AMP_KERNELS_H
#define AMP_KERNELS_H

#include <stddef.h>

/* The fatbin with every kernel, embedded in the library. */
extern const unsigned char amp_kernels_fatbin[];
extern const size_t amp_kernels_fatbin_size;

/* Threads per block of every element-wise kernel; the block reduction of
 * amp_k_absmax_f32 relies on it. */
#define AMP_KERNEL_BLOCK 256
/* Upper bound on blocks of a grid-stride kernel. */
#define AMP_KERNEL_MAX_GRID 1024

/*
 * Parameters, in order (every size and leading dimension is int64_t,
 * every matrix is column-major):
 *
 * amp_k_absmax_f32(const float *src, int64_t ld, int64_t rows,
 *                  int64_t cols, uint32_t *absmax)
 *     atomically raises *absmax to the largest finite |src| (FP32 bits);
 *     *absmax must be zeroed first.
 *
 * amp_k_gemm_scalars(struct amp_gemm_scalars *s, const float *alpha_dev,
 *                    const float *beta_dev, float alpha, float beta)
 *     one thread: reads alpha/beta from the device pointers when they are
 *     not NULL (device pointer mode), else uses the values, and calls
 *     amp_gemm_scalars_finish().
 *
 * amp_k_cast_f32_f16(const float *src, int64_t ld_src, uint16_t *dst,
 *                    int64_t ld_dst, int64_t rows, int64_t cols,
 *                    const float *scale)
 *     dst = fp16(src * *scale), element by element.
 */
#define AMP_K_ABSMAX_F32 "amp_k_absmax_f32"
#define AMP_K_GEMM_SCALARS "amp_k_gemm_scalars"
#define AMP_K_CAST_F32_F16 "amp_k_cast_f32_f16"

/* Blocks for a grid-stride kernel over n elements. */
static inline unsigned
amp_kernel_grid(long long n)
{
    long long blocks = (n + AMP_KERNEL_BLOCK - 1) / AMP_KERNEL_BLOCK;

    if (blocks < 1)
        return 1;
    return blocks > AMP_KERNEL_MAX_GRID ? AMP_KERNEL_MAX_GRID
                                        : (unsigned)blocks;
}

#endif
