// Kernels of the batched GEMM modes: pointer arrays, the copy of C, the
// fp16x3 final sum and the cuBLASLt fp16x3 fold, and the shadow error reduction.
// The arithmetic lives in amp_math.h, shared with the emulator's host build.
#include "amp_kernels.h"
#include "amp_math.h"
#include "amp_reduce.cuh"

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_fill_ptrs(uint64_t *ptrs, uint64_t base, int64_t stride_bytes,
                int64_t batch)
{
    amp_fill_ptrs_thread(ptrs, base, stride_bytes, batch, AMP_TID,
                         AMP_NTHREADS);
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_gather_batch(const float *base, const float *const *array,
                   int64_t stride, int64_t batch, int64_t ld_src,
                   int64_t rows, int64_t cols, float *dst, int64_t ld_dst,
                   int64_t stride_dst)
{
    amp_gather_batch_thread(base, array, stride, batch, ld_src, rows, cols,
                            dst, ld_dst, stride_dst, AMP_TID, AMP_NTHREADS);
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_axpby_batch(const float *r, const float *r_lo, int64_t ld_r,
                  int64_t stride_r, float *c, float *const *c_array,
                  int64_t ldc, int64_t stride_c, int64_t batch, int64_t rows,
                  int64_t cols, const struct amp_gemm_scalars *s)
{
    amp_axpby_batch_thread(r, r_lo, ld_r, stride_r, c, c_array, ldc, stride_c,
                           batch, rows, cols, s->alpha, s->beta, AMP_TID,
                           AMP_NTHREADS);
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_f16x3_fold(float *s, int64_t ld_s, int64_t stride_s, const float *c,
                 int64_t ldc, int64_t stride_c, int64_t batch, int64_t rows,
                 int64_t cols, const struct amp_gemm_scalars *sc,
                 struct amp_row_scalars v)
{
    amp_f16x3_fold_thread(s, ld_s, stride_s, c, ldc, stride_c, batch, rows,
                          cols, sc->alpha, sc->beta, v, AMP_TID,
                          AMP_NTHREADS);
}

// One block: alpha' = alpha * the scales' compensation for an alpha
// vector of n elements (members `stride` apart in alpha, m apart in
// out); when one element's compensation is not exact, scaling is dropped
// for the whole call (the casts that follow read the scales).
extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_alpha_vector(const float *alpha, int64_t stride, int64_t members,
                   int64_t m, float *out, struct amp_gemm_scalars *s)
{
    __shared__ uint32_t inexact[AMP_KERNEL_BLOCK];
    float c = s->alpha;

    inexact[threadIdx.x] = amp_alpha_inexact_thread(alpha, stride, members, m,
                                                    c, threadIdx.x,
                                                    blockDim.x);
    amp_block_max(inexact);
    __syncthreads();    // every thread reads inexact[0]
    if (inexact[0])
        c = 1.0f;
    amp_alpha_scale_thread(alpha, stride, members, m, c, out, threadIdx.x,
                           blockDim.x);
    if (inexact[0] && threadIdx.x == 0) {
        s->exp_a = s->exp_b = 0;
        s->scale_a = s->scale_b = 1.0f;
        s->alpha = 1.0f;
    }
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_shadow_error(const float *cand, int64_t ld_r, int64_t stride_r,
                   const float *c, const float *const *c_array, int64_t ldc,
                   int64_t stride_c, int64_t batch, int64_t rows,
                   int64_t cols, struct amp_shadow_accum *accum,
                   struct amp_shadow_error *slot)
{
    amp_shadow_reduce(amp_shadow_error_thread(cand, ld_r, stride_r, c, c_array,
                                              ldc, stride_c, batch, rows,
                                              cols, AMP_TID, AMP_NTHREADS),
                      accum, slot);
}
