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

/* amp_k_gemm_scalars(s, alpha_dev, beta_dev, alpha, beta) */
static CUresult
emu_run_gemm_scalars(const struct emu_launch *l)
{
    struct amp_gemm_scalars *s =
        emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr), sizeof *s);
    CUdeviceptr alpha_dev = EMU_PARAM(l, 1, CUdeviceptr);
    CUdeviceptr beta_dev = EMU_PARAM(l, 2, CUdeviceptr);
    float alpha = EMU_PARAM(l, 3, float);
    float beta = EMU_PARAM(l, 4, float);
    const float *p;

    if (!s)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (alpha_dev) {
        if (!(p = emu_dev_at(alpha_dev, sizeof *p)))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        alpha = *p;
    }
    if (beta_dev) {
        if (!(p = emu_dev_at(beta_dev, sizeof *p)))
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        beta = *p;
    }
    amp_gemm_scalars_finish(s, alpha, beta);
    return CUDA_SUCCESS;
}

static double
emu_bytes_gemm_scalars(const struct emu_launch *l)
{
    (void)l;
    return (double)sizeof(struct amp_gemm_scalars);
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

/* amp_k_absmax_batch(base, array, stride, batch, ld, rows, cols, absmax) */
static CUresult
emu_run_absmax_batch(const struct emu_launch *l)
{
    int64_t batch = EMU_PARAM(l, 3, int64_t);
    int64_t ld = EMU_PARAM(l, 4, int64_t);
    int64_t rows = EMU_PARAM(l, 5, int64_t);
    int64_t cols = EMU_PARAM(l, 6, int64_t);
    void **src = emu_src_at(l);
    uint32_t *absmax = emu_dev_at(EMU_PARAM(l, 7, CUdeviceptr), 4);
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!src || !absmax) {
        free(src);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    for (tid = 0; tid < nthreads; tid++) {
        uint32_t local = amp_absmax_batch_thread(
            NULL, (const float *const *)src, 0, batch, ld, rows, cols, tid,
            nthreads);
        if (local > *absmax) /* atomicMax */
            *absmax = local;
    }
    free(src);
    return CUDA_SUCCESS;
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

static double
emu_bytes_absmax_batch(const struct emu_launch *l)
{
    return emu_batch_elems(l, 3) * 4.0;
}

/* amp_k_cast_batch(base, array, stride, batch, ld_src, rows, cols, dst,
 *                  ld_dst, stride_dst, scale, format) and
 * amp_k_split_batch(base, array, stride, batch, ld_src, rows, cols, hi,
 *                   lo, ld_dst, stride_dst, scale): one runner, `split`
 * tells which. */
static CUresult
emu_run_cast_or_split(const struct emu_launch *l, int split)
{
    int64_t batch = EMU_PARAM(l, 3, int64_t);
    int64_t ld_src = EMU_PARAM(l, 4, int64_t);
    int64_t rows = EMU_PARAM(l, 5, int64_t);
    int64_t cols = EMU_PARAM(l, 6, int64_t);
    int64_t ld_dst = EMU_PARAM(l, 8 + split, int64_t);
    int64_t stride_dst = EMU_PARAM(l, 9 + split, int64_t);
    CUdeviceptr scale_at = EMU_PARAM(l, 10 + split, CUdeviceptr);
    size_t dst_span = emu_matrix_span(rows, cols, ld_dst, 2);
    void **src = emu_src_at(l);
    uint16_t *dst = emu_strided_at(EMU_PARAM(l, 7, CUdeviceptr), batch,
                                   stride_dst, dst_span, 2);
    uint16_t *lo = split ? emu_strided_at(EMU_PARAM(l, 8, CUdeviceptr),
                                          batch, stride_dst, dst_span, 2)
                         : dst;
    const float *scale = scale_at ? emu_dev_at(scale_at, 4) : NULL;
    int64_t nthreads = emu_threads(l);
    int64_t tid;

    if (!src || !dst || !lo || (scale_at && !scale) || (split && !scale)) {
        free(src);
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    for (tid = 0; tid < nthreads; tid++) {
        if (split)
            amp_split_batch_thread(NULL, (const float *const *)src, 0, batch,
                                   ld_src, rows, cols, dst, lo, ld_dst,
                                   stride_dst, *scale, tid, nthreads);
        else
            amp_cast_batch_thread(NULL, (const float *const *)src, 0, batch,
                                  ld_src, rows, cols, dst, ld_dst, stride_dst,
                                  scale ? *scale : 1.0f,
                                  EMU_PARAM(l, 11, int32_t), tid, nthreads);
    }
    free(src);
    return CUDA_SUCCESS;
}

static CUresult
emu_run_cast_batch(const struct emu_launch *l)
{
    return emu_run_cast_or_split(l, 0);
}

static CUresult
emu_run_split_batch(const struct emu_launch *l)
{
    return emu_run_cast_or_split(l, 1);
}

static double
emu_bytes_cast_batch(const struct emu_launch *l)
{
    return emu_batch_elems(l, 3) * 6.0;
}

static double
emu_bytes_split_batch(const struct emu_launch *l)
{
    return emu_batch_elems(l, 3) * 8.0;
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
    accum->blocks_done = l->grid[0];
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

/* amp_k_conv_absmax(src, l, absmax, nonfinite) */
static CUresult
emu_run_conv_absmax(const struct emu_launch *l)
{
    const struct amp_conv_layout *t = l->params[1];
    const float *src = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                                  emu_conv_span(t, 4));
    uint32_t *absmax = emu_dev_at(EMU_PARAM(l, 2, CUdeviceptr), 4);
    uint32_t *nonfinite = emu_dev_at(EMU_PARAM(l, 3, CUdeviceptr), 4);
    int64_t nthreads = emu_threads(l);

    if (!src || !absmax || !nonfinite)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int64_t tid = 0; tid < nthreads; tid++) {
        uint32_t bad = 0;
        uint32_t local = amp_conv_absmax_thread(src, t, &bad, tid, nthreads);

        if (local > *absmax) /* atomicMax */
            *absmax = local;
        if (bad)
            *nonfinite = 1;
    }
    return CUDA_SUCCESS;
}

static double
emu_bytes_conv_absmax(const struct emu_launch *l)
{
    return (double)amp_conv_count(l->params[1], 0) * 4.0;
}

/* amp_k_conv_scalars(s, log2_len, format) */
static CUresult
emu_run_conv_scalars(const struct emu_launch *l)
{
    struct amp_conv_scalars *s =
        emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr), sizeof *s);

    if (!s)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    amp_conv_scalars_finish(s, EMU_PARAM(l, 1, int32_t),
                            EMU_PARAM(l, 2, int32_t));
    return CUDA_SUCCESS;
}

static double
emu_bytes_conv_scalars(const struct emu_launch *l)
{
    (void)l;
    return (double)sizeof(struct amp_conv_scalars);
}

/* amp_k_conv_cast(src, l, dst, scale, format) */
static CUresult
emu_run_conv_cast(const struct emu_launch *l)
{
    const struct amp_conv_layout *t = l->params[1];
    const float *src = emu_dev_at(EMU_PARAM(l, 0, CUdeviceptr),
                                  emu_conv_span(t, 4));
    uint16_t *dst = emu_dev_at(EMU_PARAM(l, 2, CUdeviceptr),
                               emu_conv_packed_bytes(t, 2));
    const float *scale = emu_dev_at(EMU_PARAM(l, 3, CUdeviceptr), 4);
    int64_t nthreads = emu_threads(l);

    if (!src || !dst || !scale)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int64_t tid = 0; tid < nthreads; tid++)
        amp_conv_cast_thread(src, t, dst, *scale, EMU_PARAM(l, 4, int32_t),
                             tid, nthreads);
    return CUDA_SUCCESS;
}

static double
emu_bytes_conv_cast(const struct emu_launch *l)
{
    return (double)amp_conv_count(l->params[1], 1) * 6.0;
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
    accum->blocks_done = l->grid[0];
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
    accum->blocks_done = l->grid[0];
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
    {AMP_K_GEMM_SCALARS, 5, {8, 8, 8, 4, 4}, emu_run_gemm_scalars,
     emu_bytes_gemm_scalars},
    {AMP_K_CAST_F32_F16, 7, {8, 8, 8, 8, 8, 8, 8}, emu_run_cast_f16,
     emu_bytes_cast_f16},
    {AMP_K_ABSMAX_BATCH, 8, {8, 8, 8, 8, 8, 8, 8, 8}, emu_run_absmax_batch,
     emu_bytes_absmax_batch},
    {AMP_K_CAST_BATCH, 12, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 4},
     emu_run_cast_batch, emu_bytes_cast_batch},
    {AMP_K_SPLIT_BATCH, 12, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
     emu_run_split_batch, emu_bytes_split_batch},
    {AMP_K_FILL_PTRS, 4, {8, 8, 8, 8}, emu_run_fill_ptrs,
     emu_bytes_fill_ptrs},
    {AMP_K_GATHER_BATCH, 10, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
     emu_run_gather_batch, emu_bytes_gather_batch},
    {AMP_K_AXPBY_BATCH, 12, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
     emu_run_axpby_batch, emu_bytes_axpby_batch},
    {AMP_K_SHADOW_ERROR, 12, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8},
     emu_run_shadow_error, emu_bytes_shadow_error},
    {AMP_K_CONV_ABSMAX, 4, {8, EMU_LAYOUT, 8, 8}, emu_run_conv_absmax,
     emu_bytes_conv_absmax},
    {AMP_K_CONV_SCALARS, 3, {8, 4, 4}, emu_run_conv_scalars,
     emu_bytes_conv_scalars},
    {AMP_K_CONV_CAST, 5, {8, EMU_LAYOUT, 8, 8, 4}, emu_run_conv_cast,
     emu_bytes_conv_cast},
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
