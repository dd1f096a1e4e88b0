// Kernels of the converted convolution path: maxima and scales of the two
// inputs (one launch), their half-precision packed copies with padded
// channels (one launch), or for a repeating FP16 call (delayed scaling)
// and for BF16 both in one pass, the output cast with alpha and beta and
// the non-finite check in the same pass, allow-conversion's excuse of
// that check's count where its inputs hold Inf or NaN, and the shadow
// errors. The arithmetic lives in amp_math.h, shared with the emulator's
// host build. Each kernel keeps to 64 registers and no stack
// (AMP_KERNEL_BOUNDS; the kernel_resources test).
#include "amp_kernels.h"
#include "amp_math.h"
#include "amp_reduce.cuh"

// Thread 0 of each block, after its block's reduction: the block's maximum
// and non-finite flag into s; 1 in the last block to finish, once the
// totals are in s->absmax_a, s->absmax_b and s->nonfinite_in.
static __device__ int
amp_conv_maxima_done(struct amp_conv_scalars *s, int part, uint32_t max,
                     uint32_t bad)
{
    if (bad)
        atomicOr(&s->nonfinite_in, 1u);
    atomicMax(part ? &s->absmax_b : &s->absmax_a, max);
    if (!amp_last_block(&s->blocks_done))
        return 0;
    s->absmax_a = atomicMax(&s->absmax_a, 0u);
    s->absmax_b = atomicMax(&s->absmax_b, 0u);
    s->nonfinite_in = atomicOr(&s->nonfinite_in, 0u);
    return 1;
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_conv_scales(const float *a, struct amp_conv_layout la, const float *b,
                  struct amp_conv_layout lb, int64_t blocks_a,
                  struct amp_conv_scalars *s, int32_t log2_len,
                  int32_t format, struct amp_conv_record *rec)
{
    __shared__ uint32_t block_max[AMP_KERNEL_BLOCK];
    uint32_t bad = 0;
    int64_t tid, nthreads;
    int part = amp_grid_part(AMP_TID, AMP_NTHREADS, blockDim.x, blocks_a,
                             &tid, &nthreads);

    // One call per input: a pointer chosen between two by-value
    // parameters would copy both to local memory.
    block_max[threadIdx.x] =
        part ? amp_conv_absmax_thread(b, &lb, &bad, tid, nthreads)
             : amp_conv_absmax_thread(a, &la, &bad, tid, nthreads);
    bad = amp_block_max_or(block_max, bad);
    if (threadIdx.x != 0 || !amp_conv_maxima_done(s, part, block_max[0], bad))
        return;
    amp_conv_scalars_finish(s, log2_len, format);
    // The first call of a delayed-scaling record: its exponents for the
    // next call.
    if (rec)
        amp_conv_record_set(rec, s->exp_a, s->exp_b);
}

// The copies at s's scales; with `redo`, only those of the inputs the
// one-pass cast flagged (the others' blocks return at once).
extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_conv_cast(const float *a, struct amp_conv_layout la, uint16_t *dst_a,
                const float *b, struct amp_conv_layout lb, uint16_t *dst_b,
                int64_t blocks_a, const struct amp_conv_scalars *s,
                int32_t format, int32_t redo)
{
    int64_t tid, nthreads;
    int part = amp_grid_part(AMP_TID, AMP_NTHREADS, blockDim.x, blocks_a,
                             &tid, &nthreads);

    if (redo && !(part ? s->redo_b : s->redo_a))
        return;
    // One call per input, as in amp_k_conv_scales.
    if (part)
        amp_conv_cast_thread(b, &lb, dst_b, s->scale_b, format, tid,
                             nthreads);
    else
        amp_conv_cast_thread(a, &la, dst_a, s->scale_a, format, tid,
                             nthreads);
}

// The one-pass cast: each input times the exponent the record gives
// (amp_conv_delayed_exp: 1 without a record, BF16), this call's maxima
// reduced on the way; the last block decides what stands
// (amp_conv_delayed_finish) and sets the record for the next call.
extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_conv_cast_one_pass(const float *a, struct amp_conv_layout la,
                         uint16_t *dst_a, const float *b,
                         struct amp_conv_layout lb, uint16_t *dst_b,
                         int64_t blocks_a, struct amp_conv_scalars *s,
                         int32_t log2_len, int32_t format,
                         struct amp_conv_record *rec)
{
    __shared__ uint32_t block_max[AMP_KERNEL_BLOCK];
    uint32_t bad = 0;
    int64_t tid, nthreads;
    int part = amp_grid_part(AMP_TID, AMP_NTHREADS, blockDim.x, blocks_a,
                             &tid, &nthreads);
    float scale = amp_pow2f(amp_conv_delayed_exp(rec, part));

    // One call per input, as in amp_k_conv_scales.
    block_max[threadIdx.x] =
        part ? amp_conv_cast_scan_thread(b, &lb, dst_b, scale, format, &bad,
                                         tid, nthreads)
             : amp_conv_cast_scan_thread(a, &la, dst_a, scale, format, &bad,
                                         tid, nthreads);
    bad = amp_block_max_or(block_max, bad);
    if (threadIdx.x != 0 || !amp_conv_maxima_done(s, part, block_max[0], bad))
        return;
    amp_conv_delayed_finish(s, rec, log2_len, format);
}

// tf32x3: one input's copy with the reduction axis tripled, the first
// input as hi, hi, lo and the other as hi, lo, hi
// (amp_conv_split_tf32x3_thread), so that the one vendor convolution sums
// the three products. A launch per input: both in one took it past 64
// registers.
extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_conv_split_tf32x3(const float *src, struct amp_conv_layout l,
                        float *dst, int64_t part, int32_t first)
{
    amp_conv_split_tf32x3_thread(src, &l, dst, part, first, AMP_TID,
                                 AMP_NTHREADS);
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_conv_output(const void *r, int32_t format, struct amp_conv_layout lr,
                  float *dst, struct amp_conv_layout ld, const float *old,
                  struct amp_conv_layout lo, const struct amp_conv_scalars *s,
                  float alpha, float beta, struct amp_shadow_accum *accum,
                  struct amp_shadow_error *slot)
{
    // The check first, done with before the output's walk starts (both in
    // one loop took the walk past 64 registers): non-finite inputs may
    // rightly make non-finite outputs.
    if (slot != NULL)
        amp_count_reduce(s->nonfinite_in
                             ? 0u
                             : amp_conv_nonfinite_thread(
                                   r, amp_conv_count(&lr, 1), format,
                                   AMP_TID, AMP_NTHREADS),
                         accum, slot);
    // No destination: the check alone, of a result the vendor call wrote
    // into the caller's output itself.
    if (dst != NULL)
        amp_conv_output_thread(r, format, &lr, dst, &ld, old, &lo, s, alpha,
                               beta, AMP_TID, AMP_NTHREADS);
}

// allow-conversion, after the output's check (stream order: its count is
// final): where it counted non-finite results and an input holds Inf or
// NaN, the results are the program's own (FP32 makes them too) and the
// count published becomes 0. cuDNN rounds the inputs to FP16 itself, so
// no pass of the shim's reads them before the call; here they are read
// only in the rare case, by one block (the launch's grid), and otherwise
// each thread reads the count and returns.
extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_conv_excuse(const float *a, struct amp_conv_layout la, const float *b,
                  struct amp_conv_layout lb,
                  const struct amp_shadow_accum *accum,
                  struct amp_shadow_error *slot)
{
    uint32_t bad = 0;

    if (accum->error.nonfinite == 0)
        return;
    (void)amp_conv_absmax_thread(a, &la, &bad, threadIdx.x, blockDim.x);
    (void)amp_conv_absmax_thread(b, &lb, &bad, threadIdx.x, blockDim.x);
    if (bad) {
        slot->nonfinite = 0;
        __threadfence_system();
    }
}

extern "C" __global__ void AMP_KERNEL_BOUNDS
amp_k_conv_error(const float *cand, const float *ref,
                 struct amp_conv_layout lref, struct amp_shadow_accum *accum,
                 struct amp_shadow_error *slot)
{
    amp_shadow_reduce(amp_conv_error_thread(cand, ref, &lref, AMP_TID,
                                            AMP_NTHREADS),
                      accum, slot);
}
