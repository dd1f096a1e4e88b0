/* The shim's device kernels as the host sees them: names, parameter lists
 * and launch shapes. Plain C; the kernels are in the .cu files here, their
 * arithmetic in kernels/amp_math.h. */
#ifndef AMP_KERNELS_H
#define AMP_KERNELS_H

#include <stddef.h>

/* The fatbin with every kernel, embedded in the library. */
extern const unsigned char amp_kernels_fatbin[];
extern const size_t amp_kernels_fatbin_size;

/* Threads per block of every element-wise kernel; the block reductions
 * (shared arrays of this size) rely on it. */
#define AMP_KERNEL_BLOCK 256
/* Upper bound on blocks of a grid-stride kernel where the device's wave
 * is not known (amp_dev_grid). */
#define AMP_KERNEL_MAX_GRID 1024

/*
 * Parameters, in order (every size and leading dimension is int64_t,
 * every matrix is column-major):
 *
 * amp_k_absmax_f32(const float *src, int64_t ld, int64_t rows,
 *                  int64_t cols, uint32_t *absmax)
 *     atomically raises *absmax to the largest finite |src| (FP32 bits);
 *     *absmax must be zeroed first. (The device layer's own tests.)
 *
 * amp_k_cast_f32_f16(const float *src, int64_t ld_src, uint16_t *dst,
 *                    int64_t ld_dst, int64_t rows, int64_t cols,
 *                    const float *scale)
 *     dst = fp16(src * *scale), element by element. (The device layer's
 *     own tests.)
 *
 * The converted GEMM path takes its two operands in one launch each, as
 * struct amp_gemm_operand by value (see amp_math.h): blocks [0, a.blocks)
 * of the grid cover A, the next b.blocks cover B (amp_grid_part).
 *
 * amp_k_gemm_scales(struct amp_gemm_operand a, struct amp_gemm_operand b,
 *                   struct amp_gemm_scalars *s, const float *alpha_dev,
 *                   const float *beta_dev, float alpha, float beta,
 *                   struct amp_gemm_record *rec)
 *     raises s->absmax_a and s->absmax_b to the largest finite |A| and |B|
 *     (FP32 bits); the last block to finish (counted in s->blocks_done)
 *     calls amp_gemm_scalars_finish() with alpha and beta read from the
 *     device pointers when they are not NULL (device pointer mode), else
 *     the values. absmax_a, absmax_b and blocks_done must be zeroed first.
 *     With rec (struct amp_gemm_record *; NULL otherwise) the last
 *     block also sets rec for the next call (amp_gemm_record_set).
 *
 * amp_k_gemm_cast_delayed(struct amp_gemm_operand a,
 *                         struct amp_gemm_operand b,
 *                         struct amp_gemm_record *rec,
 *                         struct amp_gemm_delayed *c,
 *                         const float *alpha_dev, const float *beta_dev,
 *                         float alpha, float beta)
 *     the one-pass FP16 cast of a repeating call (no dst_lo): matrix i of
 *     dst = fp16(src_i * 2^amp_gemm_delayed_exp(rec, part)), pointer
 *     arrays as amp_k_gemm_cast, the maxima reduced in rec; the last
 *     block calls amp_gemm_delayed_finish() into the call's scalars c
 *     (alpha and beta as amp_k_gemm_scales reads them). rec's counters
 *     are 0 before and after.
 *
 * amp_k_gemm_split_tf32x3(struct amp_gemm_operand a,
 *                         struct amp_gemm_operand b)
 *     tf32x3: each operand's three-part copy, laid out by ld_dst and
 *     stride_dst, FP32 words holding TF32 values (amp_tf32x3_parts): each
 *     element's hi' in the part at dst, its lo in the part at dst_lo, its
 *     hi in the part as far beyond the later of the two as they are apart
 *     (ptrs unused).
 *
 * amp_k_gemm_recast(struct amp_gemm_operand a, struct amp_gemm_operand b,
 *                   const struct amp_gemm_delayed *c)
 *     after amp_k_gemm_cast_delayed: for each operand whose redo flag in
 *     c is set, dst = fp16(src * its exact scale in c->s); for the others
 *     each thread reads the flag and returns.
 *
 * The other batched kernels take a batch of FP32 matrices as (base, array,
 * stride, batch): matrix i at base + i * stride (elements) when array is
 * NULL, else at array[i] (a device array of device pointers).
 *
 * amp_k_fill_ptrs(uint64_t *ptrs, uint64_t base, int64_t stride_bytes,
 *                 int64_t batch)
 *     ptrs[i] = base + i * stride_bytes: device pointer arrays for batched
 *     GEMMs on strided scratch.
 *
 * amp_k_gather_batch(const float *base, const float *const *array,
 *                    int64_t stride, int64_t batch, int64_t ld_src,
 *                    int64_t rows, int64_t cols, float *dst,
 *                    int64_t ld_dst, int64_t stride_dst)
 *     copies the batch into dst (matrix i at dst + i * stride_dst).
 *
 * amp_k_axpby_batch(const float *r, const float *r_lo, int64_t ld_r,
 *                   int64_t stride_r, float *c, float *const *c_array,
 *                   int64_t ldc, int64_t stride_c, int64_t batch,
 *                   int64_t rows, int64_t cols,
 *                   const struct amp_gemm_scalars *s)
 *     C_i = s->alpha * R_i + s->beta * C_i, C not read when s->beta is 0;
 *     R_i = amp_f16x3_sum(r_i, r_lo_i) when r_lo is not NULL, else r_i;
 *     C_i at c + i * stride_c, or c_array[i] when c_array is not NULL.
 *
 * amp_k_f16x3_fold(float *s, int64_t ld_s, int64_t stride_s,
 *                  const float *c, int64_t ldc, int64_t stride_c,
 *                  int64_t batch, int64_t rows, int64_t cols,
 *                  const struct amp_gemm_scalars *sc)
 *     S_i = sc->alpha * S_i + sc->beta * C_i, S's elements that are not
 *     finite taken as 0, C not read when sc->beta is 0 (the cuBLASLt
 *     fp16x3 path: amp_f16x3_fold_thread); with a struct amp_row_scalars
 *     v (by value) of vectors, alpha and beta per row.
 *
 * amp_k_alpha_vector(const float *alpha, int64_t stride, int64_t members,
 *                    int64_t m, float *out, struct amp_gemm_scalars *s)
 *     one block: out[b * m + i] = alpha[b * stride + i] * s->alpha, the
 *     scales' compensation, for `members` vectors of m; when one product
 *     is not exact (amp_scale_exact), scaling is dropped: s's exponents 0,
 *     scales and s->alpha 1, out a copy.
 *
 * amp_k_shadow_error(const float *cand, int64_t ld_r, int64_t stride_r,
 *                    const float *c, const float *const *c_array,
 *                    int64_t ldc, int64_t stride_c, int64_t batch,
 *                    int64_t rows, int64_t cols,
 *                    struct amp_shadow_accum *accum,
 *                    struct amp_shadow_error *slot)
 *     the errors of the candidate against C (amp_shadow_element), reduced
 *     in *accum (zeroed first); the last block to finish writes the total
 *     to *slot (page-locked host memory mapped for the device).
 *
 * The convolution kernels take tensors as struct amp_conv_layout (by
 * value; see amp_math.h; the plan checks amp_conv_walks_fit) and cover
 * them as grid-stride loops:
 *
 * amp_k_conv_scales(const float *a, struct amp_conv_layout la,
 *                   const float *b, struct amp_conv_layout lb,
 *                   int64_t blocks_a, struct amp_conv_scalars *s,
 *                   int32_t log2_len, int32_t format,
 *                   struct amp_conv_record *rec)
 *     blocks [0, blocks_a) raise s->absmax_a to the largest finite |a|, the
 *     rest s->absmax_b to that of |b| (FP32 bits); s->nonfinite_in becomes
 *     1 when an input holds Inf or NaN; the last block to finish (counted
 *     in s->blocks_done) calls amp_conv_scalars_finish() and, with a
 *     record (the first call of a delayed-scaling one), sets it to the
 *     exponents. The struct must be zeroed first.
 *
 * amp_k_conv_cast(const float *a, struct amp_conv_layout la,
 *                 uint16_t *dst_a, const float *b,
 *                 struct amp_conv_layout lb, uint16_t *dst_b,
 *                 int64_t blocks_a, const struct amp_conv_scalars *s,
 *                 int32_t format, int32_t redo)
 *     the packed copies of a times s->scale_a (blocks [0, blocks_a)) and
 *     of b times s->scale_b (the rest) in FP16 or BF16, padding zeroed;
 *     with redo, only the inputs whose s->redo_a or s->redo_b is set.
 *
 * amp_k_conv_cast_one_pass(const float *a, struct amp_conv_layout la,
 *                          uint16_t *dst_a, const float *b,
 *                          struct amp_conv_layout lb, uint16_t *dst_b,
 *                          int64_t blocks_a, struct amp_conv_scalars *s,
 *                          int32_t log2_len, int32_t format,
 *                          struct amp_conv_record *rec)
 *     the copies as amp_k_conv_cast at the record's exponents (1 without
 *     one), and the maxima and non-finite flag as amp_k_conv_scales; the
 *     last block calls amp_conv_delayed_finish(), which sets the redo
 *     flags an amp_k_conv_cast with redo then reads. s zeroed first.
 *
 * amp_k_conv_split_tf32x3(const float *src, struct amp_conv_layout l,
 *                         float *dst, int64_t part, int32_t first)
 *     tf32x3: the FP32 packed copy of src with its reduction axis tripled
 *     (l's per_pad says so), each element's three parts
 *     (amp_tf32x3_parts, `first`: the first input's) at its packed
 *     offset and part and twice part further.
 *
 * amp_k_conv_output(const void *r, int32_t format,
 *                   struct amp_conv_layout lr, float *dst,
 *                   struct amp_conv_layout ld, const float *old,
 *                   struct amp_conv_layout lo,
 *                   const struct amp_conv_scalars *s, float alpha,
 *                   float beta, struct amp_shadow_accum *accum,
 *                   struct amp_shadow_error *slot)
 *     dst = alpha * unscaled r + beta * old (old not read when beta is 0):
 *     r packed by lr's sizes and padding, dst and old by their strides.
 *     With a slot (the check of a converted call), counts the non-finite
 *     results it reads into slot->nonfinite (0 when s->nonfinite_in),
 *     reduced through accum as amp_k_shadow_error; NULL: no check. dst
 *     NULL: the check alone (r an FP32 result the vendor call wrote into
 *     the caller's dense output).
 *
 * amp_k_conv_error(const float *cand, const float *ref,
 *                  struct amp_conv_layout lref,
 *                  struct amp_shadow_accum *accum,
 *                  struct amp_shadow_error *slot)
 *     the errors of a shadow candidate (packed channels last by its real
 *     sizes) against the FP32 result ref (by lref's strides), as
 *     amp_k_shadow_error.
 *
 * amp_k_conv_excuse(const float *a, struct amp_conv_layout la,
 *                   const float *b, struct amp_conv_layout lb,
 *                   const struct amp_shadow_accum *accum,
 *                   struct amp_shadow_error *slot)
 *     one block, after amp_k_conv_output's check of an allow-conversion
 *     call (accum its total): where the check counted non-finite results
 *     and a or b (the call's FP32 inputs, by their strides) holds Inf or
 *     NaN, sets slot->nonfinite back to 0; where it counted none, each
 *     thread reads the count alone.
 */
#define AMP_K_ABSMAX_F32 "amp_k_absmax_f32"
#define AMP_K_CAST_F32_F16 "amp_k_cast_f32_f16"
#define AMP_K_GEMM_SCALES "amp_k_gemm_scales"
#define AMP_K_GEMM_CAST "amp_k_gemm_cast"
#define AMP_K_GEMM_CAST_DELAYED "amp_k_gemm_cast_delayed"
#define AMP_K_GEMM_SPLIT_TF32X3 "amp_k_gemm_split_tf32x3"
#define AMP_K_GEMM_RECAST "amp_k_gemm_recast"
#define AMP_K_FILL_PTRS "amp_k_fill_ptrs"
#define AMP_K_GATHER_BATCH "amp_k_gather_batch"
#define AMP_K_AXPBY_BATCH "amp_k_axpby_batch"
#define AMP_K_F16X3_FOLD "amp_k_f16x3_fold"
#define AMP_K_ALPHA_VECTOR "amp_k_alpha_vector"
#define AMP_K_SHADOW_ERROR "amp_k_shadow_error"
#define AMP_K_CONV_SCALES "amp_k_conv_scales"
#define AMP_K_CONV_CAST "amp_k_conv_cast"
#define AMP_K_CONV_CAST_ONE_PASS "amp_k_conv_cast_one_pass"
#define AMP_K_CONV_SPLIT_TF32X3 "amp_k_conv_split_tf32x3"
#define AMP_K_CONV_OUTPUT "amp_k_conv_output"
#define AMP_K_CONV_ERROR "amp_k_conv_error"
#define AMP_K_CONV_EXCUSE "amp_k_conv_excuse"

/* Units of work a thread takes at least where the grid is not a full
 * wave: a small tensor's grid has a quarter of the blocks, whose set-up
 * (each thread's walk) and block reductions (barriers, the atomics of the
 * last-block protocol) are then a quarter, at a few microseconds of
 * memory traffic, where the launch's latency dominates anyway. */
#define AMP_KERNEL_PER_THREAD 4

/* Blocks for a grid-stride kernel over n units of work: one per
 * AMP_KERNEL_BLOCK * AMP_KERNEL_PER_THREAD units, at least 1 and at most
 * max. */
static inline unsigned
amp_kernel_grid(long long n, unsigned max)
{
    long long per_block = (long long)AMP_KERNEL_BLOCK * AMP_KERNEL_PER_THREAD;
    long long blocks = (n + per_block - 1) / per_block;

    if (blocks < 1)
        return 1;
    return blocks > (long long)max ? max : (unsigned)blocks;
}

#endif
