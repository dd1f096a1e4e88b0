/* Host versions of the shim's kernels: every thread of the grid runs the
 * same per-thread function from kernels/amp_math.h that the device runs. */
#include "emu_kernels.h"

#include "amp_kernels.h"
#include "amp_math.h"
#include "emu.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Parameter i of the launch, read as type T. */
#define EMU_PARAM(launch, i, T) (*(const T *)(launch)->params[i])

static int64_t
emu_threads(const struct emu_launch *l)
{
    return (int64_t)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] *
           l->block[1] * l->block[2];
}

/* Bytes spanned by a rows x cols column-major matrix with leading
 * dimension ld. */
static size_t
emu_matrix_span(int64_t rows, int64_t cols, int64_t ld, size_t elem)
{
    if (rows <= 0 || cols <= 0)
        return 0;
    return (size_t)((cols - 1) * ld + rows) * elem;
}

/* amp_k_absmax_f32(src, ld, rows, cols, absmax) */
static CUresult
emu_run_absmax(const struct emu_launch *l)
{
    int64_t ld = EMU_PARAM(l, 1, int64_t);
    int64_t rows = EMU_PARAM(l, 2, int64_t);
    int64_t cols = EMU_PARAM(l, 3, int64_t);
    const float *src = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                                  emu_matrix_span(rows, cols, ld, 4));
    uint32_t *absmax = emu_dev_at(EMU_PARAM(l, 4, CUdeviceptr), 4);
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!src || !absmax)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (tid = 0; tid < nthreads; tid++) {
        uint32_t local = amp_absmax_thread(src, ld, rows, cols, tid,
                                           nthreads);
        if (local > *absmax) /* atomicMax */
            *absmax = local;
    }
    return CUDA_SUCCESS;
}

static double
emu_bytes_absmax(const struct emu_launch *l)
{
    return (double)EMU_PARAM(l, 2, int64_t) * EMU_PARAM(l, 3, int64_t) * 4.0;
}

/* amp_k_cast_f32_f16(src, ld_src, dst, ld_dst, rows, cols, scale) */
static CUresult
emu_run_cast_f16(const struct emu_launch *l)
{
    int64_t ld_src = EMU_PARAM(l, 1, int64_t);
    int64_t ld_dst = EMU_PARAM(l, 3, int64_t);
    int64_t rows = EMU_PARAM(l, 4, int64_t);
    int64_t cols = EMU_PARAM(l, 5, int64_t);
    const float *src = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                                  emu_matrix_span(rows, cols, ld_src, 4));
    uint16_t *dst = emu_dev_at(EMU_PARAM(l, 2, CUdeviceptr),
                               emu_matrix_span(rows, cols, ld_dst, 2));
    const float *scale = emu_dev_at(EMU_PARAM(l, 6, CUdeviceptr), 4);
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!src || !dst || !scale)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (tid = 0; tid < nthreads; tid++)
        amp_cast_f16_thread(src, ld_src, dst, ld_dst, rows, cols, *scale, tid,
                            nthreads);
    return CUDA_SUCCESS;
}

static double
emu_bytes_cast_f16(const struct emu_launch *l)
{
    return (double)EMU_PARAM(l, 4, int64_t) * EMU_PARAM(l, 5, int64_t) * 6.0;
}

/* ---- Batched kernels --------------------------------------------------- */

/* Host aliases of the `batch` matrices of (base, array, stride), each
 * spanning `span` bytes of elements of `elem` bytes: an array of host
 * pointers the caller frees, or NULL when a matrix (or the pointer array)
 * is outside its allocation. The per-thread functions then run in array
 * form, as on the device. */
static void **
emu_batch_at(CUdeviceptr base, CUdeviceptr array, int64_t stride,
             int64_t batch, size_t span, size_t elem)
{
    const CUdeviceptr *ptrs = NULL;
    void **at;
    int64_t b;

    if (batch <= 0)
        return calloc(1, sizeof(void *));
    if (array && !(ptrs = emu_dev_at(array, (size_t)batch * 8)))
        return NULL;
    at = calloc((size_t)batch, sizeof *at);
    if (!at)
        return NULL;
    for (b = 0; b < batch; b++) {
        CUdeviceptr p = ptrs ? ptrs[b]
                             : base + (CUdeviceptr)(b * stride * (int64_t)elem);
        if (!(at[b] = emu_dev_at(p, span))) {
            free(at);
            return NULL;
        }
    }
    return at;
}

/* The host alias of a strided destination batch, checked whole. */
static void *
emu_strided_at(CUdeviceptr p, int64_t batch, int64_t stride, size_t span,
               size_t elem)
{
    if (batch <= 0)
        return emu_dev_at(p, 0);
    return emu_dev_at(p, (size_t)((batch - 1) * stride) * elem + span);
}

/* Host aliases of the source batch (base, array, stride, batch, ld, rows,
 * cols) at parameters 0 to 6 of every batched kernel that reads one. */
static void **
emu_src_at(const struct emu_launch *l)
{
    return emu_batch_at(EMU_PARAM(l, 0, CUdeviceptr),
                        EMU_PARAM(l, 1, CUdeviceptr),
                        EMU_PARAM(l, 2, int64_t), EMU_PARAM(l, 3, int64_t),
                        emu_matrix_span(EMU_PARAM(l, 5, int64_t),
                                        EMU_PARAM(l, 6, int64_t),
                                        EMU_PARAM(l, 4, int64_t), 4),
                        4);
}

/* Elements of the batch of a kernel whose batch, rows and cols are
 * parameters bi, bi + 2 and bi + 3 (a leading dimension in between). */
static double
emu_batch_elems(const struct emu_launch *l, int bi)
{
    return (double)EMU_PARAM(l, bi, int64_t) *
           (double)EMU_PARAM(l, bi + 2, int64_t) *
           (double)EMU_PARAM(l, bi + 3, int64_t);
}

/* ---- The fused GEMM kernels: two operands, one grid ---------------------- */

#define EMU_OPERAND sizeof(struct amp_gemm_operand)

/* Thread tid of a launch whose grid is split between two operands at
 * blocks_a (amp_grid_part). */
static int
emu_part(const struct emu_launch *l, int64_t blocks_a, int64_t tid,
         int64_t nthreads, int64_t *part_tid, int64_t *part_threads)
{
    return amp_grid_part(tid, nthreads, l->block[0], blocks_a, part_tid,
                         part_threads);
}

/* The last block of a kernel's grid (amp_last_block): every block adds 1
 * to *done, and the one that takes it to the grid's size from a zeroed
 * counter finishes. Returns whether the counter was zeroed (else no block
 * finishes: a counter left from an earlier launch never reaches the value
 * a last block looks for). */
static int
emu_last_block(const struct emu_launch *l, uint32_t *done)
{
    uint32_t start = *done;

    *done = start + l->grid[0];
    return start == 0;
}

/* Host aliases of an operand's FP32 source batch. */
static void **
emu_operand_src(const struct amp_gemm_operand *o)
{
    return emu_batch_at(o->base, o->array, o->stride, o->batch,
                        emu_matrix_span(o->rows, o->cols, o->ld, 4), 4);
}

static double
emu_operand_elems(const struct amp_gemm_operand *o)
{
    return (double)o->batch * (double)o->rows * (double)o->cols;
}

/* amp_k_gemm_scales(a, b, s, alpha_dev, beta_dev, alpha, beta) */
static CUresult
emu_run_gemm_scales(const struct emu_launch *l)
{
    const struct amp_gemm_operand *op[2] = {l->params[0], l->params[1]};
    struct amp_gemm_scalars *s =
        emu_dev_at(EMU_PARAM(l, 2, CUdeviceptr), sizeof *s);
    CUdeviceptr alpha_dev = EMU_PARAM(l, 3, CUdeviceptr);
    CUdeviceptr beta_dev = EMU_PARAM(l, 4, CUdeviceptr);
    float alpha = EMU_PARAM(l, 5, float), beta = EMU_PARAM(l, 6, float);
    const float *pa = alpha_dev ? emu_dev_at(alpha_dev, 4) : &alpha;
    const float *pb = beta_dev ? emu_dev_at(beta_dev, 4) : &beta;
    void **src[2] = {emu_operand_src(op[0]), emu_operand_src(op[1])};
    int64_t nthreads = emu_threads(l), tid, t, n;
    CUresult rc = CUDA_SUCCESS;

    if (!s || !pa || !pb || !src[0] || !src[1]) {
        rc = CUDA_ERROR_ILLEGAL_ADDRESS;
        goto out;
    }
    for (tid = 0; tid < nthreads; tid++) {
        int part = emu_part(l, op[0]->blocks, tid, nthreads, &t, &n);
        const struct amp_gemm_operand *o = op[part];
        uint32_t *absmax = part ? &s->absmax_b : &s->absmax_a;
        uint32_t local = amp_absmax_batch_thread(
            NULL, (const float *const *)src[part], 0, o->batch, o->ld,
            o->rows, o->cols, t, n);

        if (local > *absmax) /* atomicMax */
            *absmax = local;
    }
    if (emu_last_block(l, &s->blocks_done))
        amp_gemm_scalars_finish(s, *pa, *pb);
out:
    free(src[0]);
    free(src[1]);
    return rc;
}

static double
emu_bytes_gemm_scales(const struct emu_launch *l)
{
    return (emu_operand_elems(l->params[0]) +
            emu_operand_elems(l->params[1])) * 4.0 +
           (double)sizeof(struct amp_gemm_scalars);
}

/* One operand's share of amp_k_gemm_cast, every thread of its part. */
static CUresult
emu_gemm_cast_operand(const struct emu_launch *l,
                      const struct amp_gemm_operand *o, int part,
                      const float *scale, int32_t format)
{
    size_t span = emu_matrix_span(o->rows, o->cols, o->ld_dst, 2);
    void **src = emu_operand_src(o);
    uint16_t *dst = emu_strided_at(o->dst, o->batch, o->stride_dst, span, 2);
    uint16_t *lo = o->dst_lo ? emu_strided_at(o->dst_lo, o->batch,
                                              o->stride_dst, span, 2)
                             : NULL;
    uint64_t *ptrs = o->ptrs ? emu_dev_at(o->ptrs, (size_t)o->batch * 8)
                             : NULL;
    const struct amp_gemm_operand *a = l->params[0];
    int64_t nthreads = emu_threads(l), tid, t, n;

    if (!src || !dst || (o->dst_lo && !lo) || (o->ptrs && !ptrs)) {
        free(src);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    for (tid = 0; tid < nthreads; tid++) {
        if (emu_part(l, a->blocks, tid, nthreads, &t, &n) != part)
            continue;
        if (ptrs)
            amp_fill_ptrs_thread(ptrs, o->dst, o->stride_dst * 2, o->batch,
                                 t, n);
        if (lo)
            amp_split_batch_thread(NULL, (const float *const *)src, 0,
                                   o->batch, o->ld, o->rows, o->cols, dst,
                                   lo, o->ld_dst, o->stride_dst,
                                   scale ? *scale : 1.0f, t, n);
        else
            amp_cast_batch_thread(NULL, (const float *const *)src, 0,
                                  o->batch, o->ld, o->rows, o->cols, dst,
                                  o->ld_dst, o->stride_dst,
                                  scale ? *scale : 1.0f, format, t, n);
    }
    free(src);
    return CUDA_SUCCESS;
}

/* amp_k_gemm_cast(a, b, s, format) */
static CUresult
emu_run_gemm_cast(const struct emu_launch *l)
{
    CUdeviceptr s_at = EMU_PARAM(l, 2, CUdeviceptr);
    const struct amp_gemm_scalars *s =
        s_at ? emu_dev_at(s_at, sizeof *s) : NULL;
    int32_t format = EMU_PARAM(l, 3, int32_t);
    CUresult rc;

    if (s_at && !s)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    rc = emu_gemm_cast_operand(l, l->params[0], 0, s ? &s->scale_a : NULL,
                               format);
    if (rc == CUDA_SUCCESS)
        rc = emu_gemm_cast_operand(l, l->params[1], 1,
                                   s ? &s->scale_b : NULL, format);
    return rc;
}

/* Bytes of one operand's cast: FP32 in, one or two halves out, and the
 * pointer array. */
static double
emu_bytes_gemm_operand(const struct amp_gemm_operand *o)
{
    return emu_operand_elems(o) * (o->dst_lo ? 8.0 : 6.0) +
           (o->ptrs ? (double)o->batch * 8.0 : 0.0);
}

static double
emu_bytes_gemm_cast(const struct emu_launch *l)
{
    return emu_bytes_gemm_operand(l->params[0]) +
           emu_bytes_gemm_operand(l->params[1]);
}

/* amp_k_fill_ptrs(ptrs, base, stride_bytes, batch) */
static CUresult
emu_run_fill_ptrs(const struct emu_launch *l)
{
    int64_t batch = EMU_PARAM(l, 3, int64_t);
    uint64_t *ptrs = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                                batch > 0 ? (size_t)batch * 8 : 0);
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!ptrs)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (tid = 0; tid < nthreads; tid++)
        amp_fill_ptrs_thread(ptrs, EMU_PARAM(l, 1, uint64_t),
                             EMU_PARAM(l, 2, int64_t), batch, tid, nthreads);
    return CUDA_SUCCESS;
}

static double
emu_bytes_fill_ptrs(const struct emu_launch *l)
{
    return (double)EMU_PARAM(l, 3, int64_t) * 8.0;
}

/* amp_k_gather_batch(base, array, stride, batch, ld_src, rows, cols, dst,
 *                    ld_dst, stride_dst) */
static CUresult
emu_run_gather_batch(const struct emu_launch *l)
{
    int64_t batch = EMU_PARAM(l, 3, int64_t);
    int64_t ld_src = EMU_PARAM(l, 4, int64_t);
    int64_t rows = EMU_PARAM(l, 5, int64_t);
    int64_t cols = EMU_PARAM(l, 6, int64_t);
    int64_t ld_dst = EMU_PARAM(l, 8, int64_t);
    int64_t stride_dst = EMU_PARAM(l, 9, int64_t);
    void **src = emu_src_at(l);
    float *dst = emu_strided_at(EMU_PARAM(l, 7, CUdeviceptr), batch,
                                stride_dst,
                                emu_matrix_span(rows, cols, ld_dst, 4), 4);
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!src || !dst) {
        free(src);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    for (tid = 0; tid < nthreads; tid++)
        amp_gather_batch_thread(NULL, (const float *const *)src, 0, batch,
                                ld_src, rows, cols, dst, ld_dst, stride_dst,
                                tid, nthreads);
    free(src);
    return CUDA_SUCCESS;
}

static double
emu_bytes_gather_batch(const struct emu_launch *l)
{
    return emu_batch_elems(l, 3) * 8.0;
}

/* The caller's C of the axpby and error kernels: (c, c_array, ldc,
 * stride_c) at parameters ci..ci+3, with batch, rows, cols after them. */
static void **
emu_c_at(const struct emu_launch *l, int ci)
{
    int64_t batch = EMU_PARAM(l, ci + 4, int64_t);
    int64_t rows = EMU_PARAM(l, ci + 5, int64_t);
    int64_t cols = EMU_PARAM(l, ci + 6, int64_t);

    return emu_batch_at(EMU_PARAM(l, ci, CUdeviceptr),
                        EMU_PARAM(l, ci + 1, CUdeviceptr),
                        EMU_PARAM(l, ci + 3, int64_t), batch,
                        emu_matrix_span(rows, cols,
                                        EMU_PARAM(l, ci + 2, int64_t), 4),
                        4);
}

/* A compact FP32 batch at parameter ri of the axpby and error kernels,
 * laid out as (ld_r, stride_r) at li, li + 1, with batch, rows and cols at
 * bi, bi + 1, bi + 2. NULL for a NULL pointer too. */
static float *
emu_r_at(const struct emu_launch *l, int ri, int li, int bi)
{
    int64_t batch = EMU_PARAM(l, bi, int64_t);
    int64_t rows = EMU_PARAM(l, bi + 1, int64_t);
    int64_t cols = EMU_PARAM(l, bi + 2, int64_t);

    return emu_strided_at(EMU_PARAM(l, ri, CUdeviceptr), batch,
                          EMU_PARAM(l, li + 1, int64_t),
                          emu_matrix_span(rows, cols,
                                          EMU_PARAM(l, li, int64_t), 4),
                          4);
}

/* Elements of a batch whose batch, rows and cols are parameters bi, bi + 1
 * and bi + 2. */
static double
emu_r_elems(const struct emu_launch *l, int bi)
{
    return (double)EMU_PARAM(l, bi, int64_t) *
           (double)EMU_PARAM(l, bi + 1, int64_t) *
           (double)EMU_PARAM(l, bi + 2, int64_t);
}

/* amp_k_axpby_batch(r, r_lo, ld_r, stride_r, c, c_array, ldc, stride_c,
 *                   batch, rows, cols, s) */
static CUresult
emu_run_axpby_batch(const struct emu_launch *l)
{
    const float *r = emu_r_at(l, 0, 2, 8);
    int has_lo = EMU_PARAM(l, 1, CUdeviceptr) != 0;
    const float *r_lo = has_lo ? emu_r_at(l, 1, 2, 8) : NULL;
    void **c = emu_c_at(l, 4);
    const struct amp_gemm_scalars *s =
        emu_dev_at(EMU_PARAM(l, 11, CUdeviceptr), sizeof *s);
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!r || (has_lo && !r_lo) || !c || !s) {
        free(c);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    for (tid = 0; tid < nthreads; tid++)
        amp_axpby_batch_thread(r, r_lo, EMU_PARAM(l, 2, int64_t),
                               EMU_PARAM(l, 3, int64_t), NULL,
                               (float *const *)c, EMU_PARAM(l, 6, int64_t),
                               0, EMU_PARAM(l, 8, int64_t),
                               EMU_PARAM(l, 9, int64_t),
                               EMU_PARAM(l, 10, int64_t), s->alpha, s->beta,
                               tid, nthreads);
    free(c);
    return CUDA_SUCCESS;
}

static double
emu_bytes_axpby_batch(const struct emu_launch *l)
{
    return emu_r_elems(l, 8) * 16.0;
}

/* amp_k_shadow_error(cand, ld_r, stride_r, c, c_array, ldc, stride_c,
 *                    batch, rows, cols, accum, slot) */
static CUresult
emu_run_shadow_error(const struct emu_launch *l)
{
    const float *cand = emu_r_at(l, 0, 1, 7);
    void **c = emu_c_at(l, 3);
    struct amp_shadow_accum *accum =
        emu_dev_at(EMU_PARAM(l, 10, CUdeviceptr), sizeof *accum);
    struct amp_shadow_error *slot =
        emu_dev_at(EMU_PARAM(l, 11, CUdeviceptr), sizeof *slot);
    struct amp_shadow_error e;
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!cand || !c || !accum || !slot) {
        free(c);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    for (tid = 0; tid < nthreads; tid++) {
        e = amp_shadow_error_thread(cand, EMU_PARAM(l, 1, int64_t),
                                    EMU_PARAM(l, 2, int64_t), NULL,
                                    (const float *const *)c,
                                    EMU_PARAM(l, 5, int64_t), 0,
                                    EMU_PARAM(l, 7, int64_t),
                                    EMU_PARAM(l, 8, int64_t),
                                    EMU_PARAM(l, 9, int64_t), tid, nthreads);
        amp_shadow_merge(&accum->error, &e);
    }
    /* As on the GPU, the last block writes the slot: from a counter the
     * caller zeroed, else no block is last and the slot keeps what it had. */
    if (emu_last_block(l, &accum->blocks_done))
        *slot = accum->error;
    free(c);
    return CUDA_SUCCESS;
}

static double
emu_bytes_shadow_error(const struct emu_launch *l)
{
    return emu_r_elems(l, 7) * 8.0;
}

/* ---- Convolution kernels ------------------------------------------------ */

#define EMU_LAYOUT sizeof(struct amp_conv_layout)

/* Bytes a tensor of `l` spans in the caller's layout, elements of `elem`
 * bytes (non-negative strides, as cuDNN's). */
static size_t
emu_conv_span(const struct amp_conv_layout *l, size_t elem)
{
    int64_t last = 0;

    for (int d = 0; d < l->nb_dims; d++) {
        if (l->dim[d] <= 0)
            return 0;
        last += (l->dim[d] - 1) * l->stride[d];
    }
    return (size_t)(last + 1) * elem;
}

static size_t
emu_conv_packed_bytes(const struct amp_conv_layout *l, size_t elem)
{
    return (size_t)amp_conv_count(l, 1) * elem;
}

static size_t
emu_format_size(int32_t format)
{
    return format == AMP_FORMAT_F32 ? 4 : 2;
}

/* amp_k_conv_scales(a, la, b, lb, blocks_a, s, log2_len, format) */
static CUresult
emu_run_conv_scales(const struct emu_launch *l)
{
    const struct amp_conv_layout *t[2] = {l->params[1], l->params[3]};
    const float *src[2] = {
        emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr), emu_conv_span(t[0], 4)),
        emu_dev_at(EMU_PARAM(l, 2, CUdeviceptr), emu_conv_span(t[1], 4)),
    };
    int64_t blocks_a = EMU_PARAM(l, 4, int64_t);
    struct amp_conv_scalars *s =
        emu_dev_at(EMU_PARAM(l, 5, CUdeviceptr), sizeof *s);
    int64_t nthreads = emu_threads(l), tid, pt, n;

    if (!src[0] || !src[1] || !s)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (tid = 0; tid < nthreads; tid++) {
        int part = emu_part(l, blocks_a, tid, nthreads, &pt, &n);
        uint32_t *absmax = part ? &s->absmax_b : &s->absmax_a;
        uint32_t bad = 0;
        uint32_t local = amp_conv_absmax_thread(src[part], t[part], &bad, pt,
                                                n);

        if (local > *absmax) /* atomicMax */
            *absmax = local;
        if (bad)
            s->nonfinite_in |= 1u;
    }
    if (emu_last_block(l, &s->blocks_done))
        amp_conv_scalars_finish(s, EMU_PARAM(l, 6, int32_t),
                                EMU_PARAM(l, 7, int32_t));
    return CUDA_SUCCESS;
}

static double
emu_bytes_conv_scales(const struct emu_launch *l)
{
    return ((double)amp_conv_count(l->params[1], 0) +
            (double)amp_conv_count(l->params[3], 0)) * 4.0 +
           (double)sizeof(struct amp_conv_scalars);
}

/* amp_k_conv_cast(a, la, dst_a, b, lb, dst_b, blocks_a, s, format) */
static CUresult
emu_run_conv_cast(const struct emu_launch *l)
{
    const struct amp_conv_layout *t[2] = {l->params[1], l->params[4]};
    const float *src[2] = {
        emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr), emu_conv_span(t[0], 4)),
        emu_dev_at(EMU_PARAM(l, 3, CUdeviceptr), emu_conv_span(t[1], 4)),
    };
    uint16_t *dst[2] = {
        emu_dev_at(EMU_PARAM(l, 2, CUdeviceptr),
                   emu_conv_packed_bytes(t[0], 2)),
        emu_dev_at(EMU_PARAM(l, 5, CUdeviceptr),
                   emu_conv_packed_bytes(t[1], 2)),
    };
    int64_t blocks_a = EMU_PARAM(l, 6, int64_t);
    const struct amp_conv_scalars *s =
        emu_dev_at(EMU_PARAM(l, 7, CUdeviceptr), sizeof *s);
    int32_t format = EMU_PARAM(l, 8, int32_t);
    int64_t nthreads = emu_threads(l), tid, pt, n;

    if (!src[0] || !src[1] || !dst[0] || !dst[1] || !s)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (tid = 0; tid < nthreads; tid++) {
        int part = emu_part(l, blocks_a, tid, nthreads, &pt, &n);

        amp_conv_cast_thread(src[part], t[part], dst[part],
                             part ? s->scale_b : s->scale_a, format, pt, n);
    }
    return CUDA_SUCCESS;
}

static double
emu_bytes_conv_cast(const struct emu_launch *l)
{
    return ((double)amp_conv_count(l->params[1], 1) +
            (double)amp_conv_count(l->params[4], 1)) * 6.0;
}

/* amp_k_conv_output(r, format, lr, dst, ld, old, lo, s, alpha, beta) */
static CUresult
emu_run_conv_output(const struct emu_launch *l)
{
    int32_t format = EMU_PARAM(l, 1, int32_t);
    const struct amp_conv_layout *lr = l->params[2];
    const struct amp_conv_layout *ld = l->params[4];
    const struct amp_conv_layout *lo = l->params[6];
    float beta = EMU_PARAM(l, 9, float);
    const void *r = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                               emu_conv_packed_bytes(lr, emu_format_size(format)));
    float *dst = emu_dev_at(EMU_PARAM(l, 3, CUdeviceptr), emu_conv_span(ld, 4));
    const float *old = beta == 0.0f
                           ? NULL
                           : emu_dev_at(EMU_PARAM(l, 5, CUdeviceptr),
                                        emu_conv_span(lo, 4));
    const struct amp_conv_scalars *s =
        emu_dev_at(EMU_PARAM(l, 7, CUdeviceptr), sizeof *s);
    int64_t nthreads = emu_threads(l);

    if (!r || !dst || (beta != 0.0f && !old) || !s)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int64_t tid = 0; tid < nthreads; tid++)
        amp_conv_output_thread(r, format, lr, dst, ld, old, lo, s,
                               EMU_PARAM(l, 8, float), beta, tid, nthreads);
    return CUDA_SUCCESS;
}

static double
emu_bytes_conv_output(const struct emu_launch *l)
{
    return (double)amp_conv_count(l->params[2], 0) * 10.0;
}

/* amp_k_conv_check(r, n, format, s, accum, slot) */
static CUresult
emu_run_conv_check(const struct emu_launch *l)
{
    int64_t n = EMU_PARAM(l, 1, int64_t);
    int32_t format = EMU_PARAM(l, 2, int32_t);
    const void *r = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                               (size_t)n * emu_format_size(format));
    const struct amp_conv_scalars *s =
        emu_dev_at(EMU_PARAM(l, 3, CUdeviceptr), sizeof *s);
    struct amp_shadow_accum *accum =
        emu_dev_at(EMU_PARAM(l, 4, CUdeviceptr), sizeof *accum);
    struct amp_shadow_error *slot =
        emu_dev_at(EMU_PARAM(l, 5, CUdeviceptr), sizeof *slot);
    int64_t nthreads = emu_threads(l);

    if (!r || !s || !accum || !slot)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int64_t tid = 0; tid < nthreads && !s->nonfinite_in; tid++)
        accum->error.nonfinite +=
            amp_conv_nonfinite_thread(r, n, format, tid, nthreads);
    /* As on the GPU, the last block writes the slot: from a counter the
     * caller zeroed, else no block is last and the slot keeps what it had. */
    if (emu_last_block(l, &accum->blocks_done))
        *slot = accum->error;
    return CUDA_SUCCESS;
}

static double
emu_bytes_conv_check(const struct emu_launch *l)
{
    return (double)EMU_PARAM(l, 1, int64_t) *
           (double)emu_format_size(EMU_PARAM(l, 2, int32_t));
}

/* amp_k_conv_error(cand, lc, ref, lref, accum, slot) */
static CUresult
emu_run_conv_error(const struct emu_launch *l)
{
    const struct amp_conv_layout *lc = l->params[1];
    const struct amp_conv_layout *lref = l->params[3];
    const float *cand = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                                   emu_conv_span(lc, 4));
    const float *ref = emu_dev_at(EMU_PARAM(l, 2, CUdeviceptr),
                                  emu_conv_span(lref, 4));
    struct amp_shadow_accum *accum =
        emu_dev_at(EMU_PARAM(l, 4, CUdeviceptr), sizeof *accum);
    struct amp_shadow_error *slot =
        emu_dev_at(EMU_PARAM(l, 5, CUdeviceptr), sizeof *slot);
    int64_t nthreads = emu_threads(l);

    if (!cand || !ref || !accum || !slot)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int64_t tid = 0; tid < nthreads; tid++) {
        struct amp_shadow_error e =
            amp_conv_error_thread(cand, lc, ref, lref, tid, nthreads);

        amp_shadow_merge(&accum->error, &e);
    }
    /* As on the GPU, the last block writes the slot: from a counter the
     * caller zeroed, else no block is last and the slot keeps what it had. */
    if (emu_last_block(l, &accum->blocks_done))
        *slot = accum->error;
    return CUDA_SUCCESS;
}

static double
emu_bytes_conv_error(const struct emu_launch *l)
{
    return (double)amp_conv_count(l->params[1], 0) * 8.0;
}

const struct emu_kernel emu_kernels[] = {
    {AMP_K_ABSMAX_F32, 5, {8, 8, 8, 8, 8}, emu_run_absmax, emu_bytes_absmax},
    {AMP_K_CAST_F32_F16, 7, {8, 8, 8, 8, 8, 8, 8}, emu_run_cast_f16,
     emu_bytes_cast_f16},
    {AMP_K_GEMM_SCALES, 7, {EMU_OPERAND, EMU_OPERAND, 8, 8, 8, 4, 4},
     emu_run_gemm_scales, emu_bytes_gemm_scales},
    {AMP_K_GEMM_CAST, 4, {EMU_OPERAND, EMU_OPERAND, 8, 4}, emu_run_gemm_cast,
     emu_bytes_gemm_cast},
    {AMP_K_FILL_PTRS, 4, {8, 8, 8, 8}, emu_run_fill_ptrs,
     emu_bytes_fill_ptrs},
    {AMP_K_GATHER_BATCH, 10, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
     emu_run_gather_batch, emu_bytes_gather_batch},
    {AMP_K_AXPBY_BATCH, 12, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
     emu_run_axpby_batch, emu_bytes_axpby_batch},
    {AMP_K_SHADOW_ERROR, 12, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
     emu_run_shadow_error, emu_bytes_shadow_error},
    {AMP_K_CONV_SCALES, 8, {8, EMU_LAYOUT, 8, EMU_LAYOUT, 8, 8, 4, 4},
     emu_run_conv_scales, emu_bytes_conv_scales},
    {AMP_K_CONV_CAST, 9, {8, EMU_LAYOUT, 8, 8, EMU_LAYOUT, 8, 8, 8, 4},
     emu_run_conv_cast, emu_bytes_conv_cast},
    {AMP_K_CONV_OUTPUT, 10,
     {8, 4, EMU_LAYOUT, 8, EMU_LAYOUT, 8, EMU_LAYOUT, 8, 4, 4},
     emu_run_conv_output, emu_bytes_conv_output},
    {AMP_K_CONV_CHECK, 6, {8, 8, 4, 8, 8, 8}, emu_run_conv_check,
     emu_bytes_conv_check},
    {AMP_K_CONV_ERROR, 6, {8, EMU_LAYOUT, 8, EMU_LAYOUT, 8, 8},
     emu_run_conv_error, emu_bytes_conv_error},
    {NULL, 0, {0}, NULL, NULL},
};

const struct emu_kernel *
emu_kernel_find(const char *name)
{
    const struct emu_kernel *k;

    for (k = emu_kernels; k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}
