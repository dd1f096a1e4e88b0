/* The GEMM path: decision and FP16 preparation on the caller's stream. */
#include "gemm.h"

#include "amp_kernels.h"
#include "amp_math.h"

#include <stddef.h>

#define AMP_SCRATCH_ALIGN 256
#define AMP_F16_LD_MULTIPLE 8

static const char *const amp_gemm_skip_reasons[] = {
    [AMP_GEMM_CONVERT] = "converted",
    [AMP_GEMM_SKIP_MODE] = "mode fp32",
    [AMP_GEMM_SKIP_INVALID] = "invalid arguments",
    [AMP_GEMM_SKIP_EMPTY] = "empty product",
    [AMP_GEMM_SKIP_PEDANTIC] = "pedantic math on the handle",
};

const char *
amp_gemm_skip_reason(enum amp_gemm_skip skip)
{
    return amp_gemm_skip_reasons[skip];
}

static int64_t
amp_max1(int64_t v)
{
    return v > 1 ? v : 1;
}

static int64_t
amp_round_up(int64_t v, int64_t multiple)
{
    return (v + multiple - 1) / multiple * multiple;
}

int
amp_gemm_args_valid(const struct amp_gemm_desc *d)
{
    int64_t rows_a = d->transa == AMP_OP_N ? d->m : d->k;
    int64_t rows_b = d->transb == AMP_OP_N ? d->k : d->n;

    return d->ops_valid && d->m >= 0 && d->n >= 0 && d->k >= 0 &&
           d->lda >= amp_max1(rows_a) && d->ldb >= amp_max1(rows_b) &&
           d->ldc >= amp_max1(d->m);
}

enum amp_gemm_skip
amp_gemm_decide(const struct amp_gemm_desc *d, enum amp_mode mode)
{
    if (!amp_gemm_args_valid(d))
        return AMP_GEMM_SKIP_INVALID;
    if (mode == AMP_MODE_FP32)
        return AMP_GEMM_SKIP_MODE;
    if (d->pedantic)
        return AMP_GEMM_SKIP_PEDANTIC;
    if (d->m == 0 || d->n == 0 || d->k == 0 ||
        (!d->scalars_on_device && *d->alpha == 0.0f))
        return AMP_GEMM_SKIP_EMPTY;
    return AMP_GEMM_CONVERT;
}

void
amp_gemm_plan(const struct amp_gemm_desc *d, struct amp_gemm_plan *p)
{
    size_t a_bytes, b_bytes;

    p->rows_a = d->transa == AMP_OP_N ? d->m : d->k;
    p->cols_a = d->transa == AMP_OP_N ? d->k : d->m;
    p->rows_b = d->transb == AMP_OP_N ? d->k : d->n;
    p->cols_b = d->transb == AMP_OP_N ? d->n : d->k;
    p->ld_a16 = amp_round_up(p->rows_a, AMP_F16_LD_MULTIPLE);
    p->ld_b16 = amp_round_up(p->rows_b, AMP_F16_LD_MULTIPLE);
    a_bytes = (size_t)(p->ld_a16 * p->cols_a) * sizeof(uint16_t);
    b_bytes = (size_t)(p->ld_b16 * p->cols_b) * sizeof(uint16_t);
    p->off_a = (size_t)amp_round_up(sizeof(struct amp_gemm_scalars),
                                    AMP_SCRATCH_ALIGN);
    p->off_b = p->off_a + (size_t)amp_round_up((int64_t)a_bytes,
                                               AMP_SCRATCH_ALIGN);
    p->bytes = p->off_b + (size_t)amp_round_up((int64_t)b_bytes,
                                               AMP_SCRATCH_ALIGN);
}

/* Queues the absolute maximum of one operand into *absmax. */
static enum amp_status
amp_gemm_absmax(struct amp_dev *dev, amp_devptr src, int64_t ld,
                int64_t rows, int64_t cols, amp_devptr absmax,
                amp_stream stream)
{
    void *params[] = {&src, &ld, &rows, &cols, &absmax};

    return amp_dev_launch(dev, AMP_KERNEL_ABSMAX_F32,
                          amp_kernel_grid(rows * cols), AMP_KERNEL_BLOCK,
                          stream, params);
}

/* Queues the scaled FP16 cast of one operand. */
static enum amp_status
amp_gemm_cast(struct amp_dev *dev, amp_devptr src, int64_t ld_src,
              amp_devptr dst, int64_t ld_dst, int64_t rows, int64_t cols,
              amp_devptr scale, amp_stream stream)
{
    void *params[] = {&src, &ld_src, &dst, &ld_dst, &rows, &cols, &scale};

    return amp_dev_launch(dev, AMP_KERNEL_CAST_F32_F16,
                          amp_kernel_grid(rows * cols), AMP_KERNEL_BLOCK,
                          stream, params);
}

/* Queues the kernel that turns the maxima into scales and compensates
 * alpha; in device pointer mode it reads alpha and beta on the device. */
static enum amp_status
amp_gemm_scalars(struct amp_dev *dev, const struct amp_gemm_desc *d,
                 amp_devptr scalars)
{
    amp_devptr alpha_dev = 0, beta_dev = 0;
    float alpha = 0.0f, beta = 0.0f;
    void *params[] = {&scalars, &alpha_dev, &beta_dev, &alpha, &beta};

    if (d->scalars_on_device) {
        alpha_dev = (amp_devptr)(uintptr_t)d->alpha;
        beta_dev = (amp_devptr)(uintptr_t)d->beta;
    } else {
        alpha = *d->alpha;
        beta = *d->beta;
    }
    return amp_dev_launch(dev, AMP_KERNEL_GEMM_SCALARS, 1, 1, d->stream,
                          params);
}

enum amp_status
amp_gemm_prepare_f16(struct amp_dev *dev, const struct amp_gemm_desc *d,
                     uint64_t scratch_max, struct amp_gemm_f16 *out)
{
    struct amp_gemm_plan p;
    amp_devptr s;
    enum amp_status st;

    amp_gemm_plan(d, &p);
    if (p.bytes > scratch_max)
        return AMP_ERR_TOO_BIG;
    st = amp_dev_alloc_async(dev, p.bytes, d->stream, &out->scratch);
    if (st != AMP_OK)
        return st;
    out->stream = d->stream;
    s = out->scratch;
    out->a16 = s + p.off_a;
    out->b16 = s + p.off_b;
    out->lda16 = p.ld_a16;
    out->ldb16 = p.ld_b16;
    out->alpha = s + offsetof(struct amp_gemm_scalars, alpha);
    out->beta = s + offsetof(struct amp_gemm_scalars, beta);

    /* absmax_a and absmax_b are the first two words of the scalars. */
    st = amp_dev_memset32_async(s, 0, 2, d->stream);
    if (st == AMP_OK)
        st = amp_gemm_absmax(dev, d->a, d->lda, p.rows_a, p.cols_a,
                             s + offsetof(struct amp_gemm_scalars, absmax_a),
                             d->stream);
    if (st == AMP_OK)
        st = amp_gemm_absmax(dev, d->b, d->ldb, p.rows_b, p.cols_b,
                             s + offsetof(struct amp_gemm_scalars, absmax_b),
                             d->stream);
    if (st == AMP_OK)
        st = amp_gemm_scalars(dev, d, s);
    if (st == AMP_OK)
        st = amp_gemm_cast(dev, d->a, d->lda, out->a16, p.ld_a16, p.rows_a,
                           p.cols_a,
                           s + offsetof(struct amp_gemm_scalars, scale_a),
                           d->stream);
    if (st == AMP_OK)
        st = amp_gemm_cast(dev, d->b, d->ldb, out->b16, p.ld_b16, p.rows_b,
                           p.cols_b,
                           s + offsetof(struct amp_gemm_scalars, scale_b),
                           d->stream);
    if (st != AMP_OK)
        amp_gemm_release_f16(out);
    return st;
}

void
amp_gemm_release_f16(struct amp_gemm_f16 *f16)
{
    if (f16->scratch)
        amp_dev_free_async(f16->scratch, f16->stream);
    f16->scratch = 0;
}
