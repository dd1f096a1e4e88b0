// Kernels of the converted GEMM path: the maxima and scales of both
// operands in one launch, then their FP16/BF16 copies (or fp16x3 or tf32x3
// splits) and pointer arrays in another; and the single-matrix maximum
// and cast the device layer's tests launch. The arithmetic lives in
// amp_math.h, shared with the emulator's host build.
#include "amp_kernels.h"
#include "amp_math.h"
#include "amp_reduce.cuh"

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_absmax_f32(const float *src, int64_t ld, int64_t rows, int64_t cols,
                 uint32_t *absmax)
{
    __shared__ uint32_t block_max[AMP_KERNEL_BLOCK];

    block_max[threadIdx.x] = amp_absmax_thread(src, ld, rows, cols, AMP_TID,
                                               AMP_NTHREADS);
    amp_block_max(block_max);
    if (threadIdx.x == 0)
        atomicMax(absmax, block_max[0]);
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_cast_f32_f16(const float *src, int64_t ld_src, uint16_t *dst,
                   int64_t ld_dst, int64_t rows, int64_t cols,
                   const float *scale)
{
    amp_cast_f16_thread(src, ld_src, dst, ld_dst, rows, cols, *scale, AMP_TID,
                        AMP_NTHREADS);
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_gemm_scales(struct amp_gemm_operand a, struct amp_gemm_operand b,
                  struct amp_gemm_scalars *s, const float *alpha_dev,
                  const float *beta_dev, float alpha, float beta,
                  struct amp_gemm_record *rec)
{
    __shared__ uint32_t block_max[AMP_KERNEL_BLOCK];
    int64_t tid, nthreads;
    int part = amp_grid_part(AMP_TID, AMP_NTHREADS, blockDim.x, a.blocks,
                             &tid, &nthreads);
    const struct amp_gemm_operand o = part ? b : a;

    block_max[threadIdx.x] = amp_absmax_batch_thread(
        (const float *)o.base, (const float *const *)o.array, o.stride,
        o.batch, o.ld, o.rows, o.cols, tid, nthreads);
    amp_block_max(block_max);
    if (threadIdx.x != 0)
        return;
    atomicMax(part ? &s->absmax_b : &s->absmax_a, block_max[0]);
    if (!amp_last_block(&s->blocks_done))
        return;
    s->absmax_a = atomicMax(&s->absmax_a, 0u);
    s->absmax_b = atomicMax(&s->absmax_b, 0u);
    amp_gemm_scalars_finish(s, alpha_dev ? *alpha_dev : alpha,
                            beta_dev ? *beta_dev : beta);
    // The first call of a record: its maxima for the next call, and the
    // counters at 0 for the one-pass cast.
    if (rec)
        amp_gemm_record_set(rec, s->absmax_a, s->absmax_b);
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_gemm_cast(struct amp_gemm_operand a, struct amp_gemm_operand b,
                const struct amp_gemm_scalars *s, int32_t format)
{
    int64_t tid, nthreads;
    int part = amp_grid_part(AMP_TID, AMP_NTHREADS, blockDim.x, a.blocks,
                             &tid, &nthreads);
    const struct amp_gemm_operand o = part ? b : a;
    const float *base = (const float *)o.base;
    const float *const *array = (const float *const *)o.array;
    float scale = s ? (part ? s->scale_b : s->scale_a) : 1.0f;

    if (o.ptrs)
        amp_fill_ptrs_thread((uint64_t *)o.ptrs, o.dst, o.stride_dst * 2,
                             o.batch, tid, nthreads);
    if (o.dst_lo)
        amp_split_batch_thread(base, array, o.stride, o.batch, o.ld, o.rows,
                               o.cols, (uint16_t *)o.dst,
                               (uint16_t *)o.dst_lo, o.ld_dst, o.stride_dst,
                               scale, tid, nthreads);
    else
        amp_cast_batch_thread(base, array, o.stride, o.batch, o.ld, o.rows,
                              o.cols, (uint16_t *)o.dst, o.ld_dst,
                              o.stride_dst, scale, format, tid, nthreads);
}

// tf32x3: both operands' three-part copies (amp_tf32x3_parts): hi' at
// dst, lo at dst_lo, hi as far beyond the later. A kernel of its own: in
// amp_k_gemm_cast's branches it took that kernel past 64 registers.
extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_gemm_split_tf32x3(struct amp_gemm_operand a, struct amp_gemm_operand b)
{
    int64_t tid, nthreads;
    int part = amp_grid_part(AMP_TID, AMP_NTHREADS, blockDim.x, a.blocks,
                             &tid, &nthreads);
    const struct amp_gemm_operand o = part ? b : a;

    amp_split_tf32x3_batch_thread((const float *)o.base,
                                  (const float *const *)o.array, o.stride,
                                  o.batch, o.ld, o.rows, o.cols,
                                  (float *)o.dst, (float *)o.dst_lo,
                                  o.ld_dst, o.stride_dst, tid, nthreads);
}

// The one-pass FP16 cast of a repeating call: each operand times the
// exponent the last call's maximum gave (amp_gemm_delayed_exp), this
// call's maxima reduced on the way in the record; the last block decides
// what stands (amp_gemm_delayed_finish) into the call's scalars c and
// sets the record for the next call.
extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_gemm_cast_delayed(struct amp_gemm_operand a, struct amp_gemm_operand b,
                        struct amp_gemm_record *rec,
                        struct amp_gemm_delayed *c, const float *alpha_dev,
                        const float *beta_dev, float alpha, float beta)
{
    __shared__ uint32_t block_max[AMP_KERNEL_BLOCK];
    int64_t tid, nthreads;
    int part = amp_grid_part(AMP_TID, AMP_NTHREADS, blockDim.x, a.blocks,
                             &tid, &nthreads);
    const struct amp_gemm_operand o = part ? b : a;
    float scale = amp_pow2f(amp_gemm_delayed_exp(rec, part));
    uint32_t ma, mb;

    if (o.ptrs)
        amp_fill_ptrs_thread((uint64_t *)o.ptrs, o.dst, o.stride_dst * 2,
                             o.batch, tid, nthreads);
    block_max[threadIdx.x] = amp_cast_absmax_batch_thread(
        (const float *)o.base, (const float *const *)o.array, o.stride,
        o.batch, o.ld, o.rows, o.cols, (uint16_t *)o.dst, o.ld_dst,
        o.stride_dst, scale, tid, nthreads);
    amp_block_max(block_max);
    if (threadIdx.x != 0)
        return;
    atomicMax(part ? &rec->absmax_b : &rec->absmax_a, block_max[0]);
    if (!amp_last_block(&rec->blocks_done))
        return;
    ma = atomicMax(&rec->absmax_a, 0u);
    mb = atomicMax(&rec->absmax_b, 0u);
    amp_gemm_delayed_finish(c, rec, ma, mb, alpha_dev ? *alpha_dev : alpha,
                            beta_dev ? *beta_dev : beta);
}

// After amp_k_gemm_cast_delayed: the operands whose redo flag is set cast
// again at the exact scale; the others' blocks return at once.
extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_gemm_recast(struct amp_gemm_operand a, struct amp_gemm_operand b,
                  const struct amp_gemm_delayed *c)
{
    int64_t tid, nthreads;
    int part = amp_grid_part(AMP_TID, AMP_NTHREADS, blockDim.x, a.blocks,
                             &tid, &nthreads);
    const struct amp_gemm_operand o = part ? b : a;

    if (!(part ? c->redo_b : c->redo_a))
        return;
    amp_cast_batch_thread((const float *)o.base,
                          (const float *const *)o.array, o.stride, o.batch,
                          o.ld, o.rows, o.cols, (uint16_t *)o.dst, o.ld_dst,
                          o.stride_dst, part ? c->s.scale_b : c->s.scale_a,
                          AMP_FORMAT_F16, tid, nthreads);
}
