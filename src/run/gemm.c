/* The GEMM path: the decision, and each precision mode's preparation on
 * the caller's stream as scratch work plus vendor GEMM steps. */
#include "run/gemm.h"

#include "amp_kernels.h"
#include "amp_math.h"
#include "base/log.h"
#include "base/shim.h"
#include "measure/harvest.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define AMP_F16_LD_MULTIPLE 8
/* tf32x3's FP32 copies: leading dimensions of 16 bytes. */
#define AMP_F32_LD_MULTIPLE 4

static const char *const amp_gemm_skip_reasons[] = {
    [AMP_GEMM_CONVERT] = "converted",
    [AMP_GEMM_SKIP_MODE] = "mode fp32",
    [AMP_GEMM_SKIP_INVALID] = "invalid arguments",
    [AMP_GEMM_SKIP_EMPTY] = "empty product",
    [AMP_GEMM_SKIP_PEDANTIC] = "pedantic math on the handle",
    [AMP_GEMM_SKIP_UNSUPPORTED] = "not supported by the converted path",
    [AMP_GEMM_SKIP_LIBRARY] = "called from a library of NVIDIA's",
    [AMP_GEMM_SKIP_ATOMIC_SYNC] = "atomic synchronisation with kernels",
};

/* Host scalars of the fp16x3 and tf32x3 steps: they live as long as the
 * process. */
static const float amp_one = 1.0f, amp_zero = 0.0f;
static const float amp_lo_weight = 1.0f / (float)(1 << AMP_F16X3_LO_EXP);

const char *
amp_gemm_skip_reason(enum amp_gemm_skip skip)
{
    if ((unsigned)skip >= AMP_GEMM_SKIP_COUNT)
        return "?";
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

/* Problems in the call: a single GEMM is one, whatever batch says. */
static int64_t
amp_gemm_batch(const struct amp_gemm_desc *d)
{
    return d->batch_kind == AMP_BATCH_NONE ? 1 : d->batch;
}

/* The rows and columns of a matrix as it lies in memory, column-major:
 * a row-major matrix of rows x cols lies as a column-major cols x rows. */
static void
amp_stored(int64_t rows, int64_t cols, int row_major, int64_t *srows,
           int64_t *scols)
{
    *srows = row_major ? cols : rows;
    *scols = row_major ? rows : cols;
}

/* op(A) is m x k: A as stored. */
static void
amp_stored_a(const struct amp_gemm_desc *d, int64_t *rows, int64_t *cols)
{
    amp_stored(d->transa == AMP_OP_N ? d->m : d->k,
               d->transa == AMP_OP_N ? d->k : d->m, d->row_a, rows, cols);
}

static void
amp_stored_b(const struct amp_gemm_desc *d, int64_t *rows, int64_t *cols)
{
    amp_stored(d->transb == AMP_OP_N ? d->k : d->n,
               d->transb == AMP_OP_N ? d->n : d->k, d->row_b, rows, cols);
}

/* C and D, m x n, as stored. */
static void
amp_stored_c(const struct amp_gemm_desc *d, int64_t *rows, int64_t *cols)
{
    amp_stored(d->m, d->n, d->row_cd, rows, cols);
}

int
amp_gemm_args_valid(const struct amp_gemm_desc *d)
{
    int64_t rows_a, rows_b, rows_c, cols;

    amp_stored_a(d, &rows_a, &cols);
    amp_stored_b(d, &rows_b, &cols);
    amp_stored_c(d, &rows_c, &cols);

    /* cuBLAS refuses a NULL alpha or beta (INVALID_VALUE) in either
     * pointer mode, before it reads anything: such a call is its to
     * refuse, and the shim must not read through the pointer. */
    return d->ops_valid && d->alpha && d->beta && d->m >= 0 && d->n >= 0 &&
           d->k >= 0 && amp_gemm_batch(d) >= 0 &&
           d->lda >= amp_max1(rows_a) && d->ldb >= amp_max1(rows_b) &&
           /* cuBLASLt: a C of leading dimension 0 is one broadcast
            * column (or row), and D is the output */
           (d->ldc >= amp_max1(rows_c) || (d->lt && d->ldc == 0)) &&
           (!d->lt || d->ldd >= amp_max1(rows_c));
}

enum amp_gemm_skip
amp_gemm_decide(const struct amp_gemm_desc *d, enum amp_mode mode)
{
    if (!amp_gemm_args_valid(d))
        return AMP_GEMM_SKIP_INVALID;
    if (d->from_library && !amp_policy_library_calls())
        return AMP_GEMM_SKIP_LIBRARY;
    if (mode == AMP_MODE_FP32)
        return AMP_GEMM_SKIP_MODE;
    if (d->unsupported)
        return AMP_GEMM_SKIP_UNSUPPORTED;
    /* Other kernels wait on the counters of D's chunks the product
     * writes (or the product waits on theirs): the converted steps would
     * keep neither, so the call runs as made. */
    if (d->atomic_sync)
        return AMP_GEMM_SKIP_ATOMIC_SYNC;
    if (d->m == 0 || d->n == 0 || d->k == 0 || amp_gemm_batch(d) == 0 ||
        (!d->scalars_on_device && *d->alpha == 0.0f))
        return AMP_GEMM_SKIP_EMPTY;
    return AMP_GEMM_CONVERT;
}

/* 1 when a cuBLASLt epilogue writes an auxiliary output. */
static int
amp_epi_aux(enum amp_epi e)
{
    return e == AMP_EPI_RELU_AUX || e == AMP_EPI_RELU_AUX_BIAS ||
           e == AMP_EPI_GELU_AUX || e == AMP_EPI_GELU_AUX_BIAS;
}

/* The policy's view of d's fields. */
static void
amp_gemm_policy_call(const struct amp_gemm_desc *d,
                     struct amp_policy_call *call)
{
    memset(call, 0, sizeof *call);
    call->family = AMP_FAMILY_GEMM;
    call->symbol = d->api;
    call->site = d->site;
    amp_policy_call_set(call, AMP_FIELD_M, d->m);
    amp_policy_call_set(call, AMP_FIELD_N, d->n);
    amp_policy_call_set(call, AMP_FIELD_K, d->k);
    amp_policy_call_set(call, AMP_FIELD_BATCH, amp_gemm_batch(d));
    amp_policy_call_set(call, AMP_FIELD_TRANSA, d->transa);
    amp_policy_call_set(call, AMP_FIELD_TRANSB, d->transb);
    amp_policy_call_set(call, AMP_FIELD_EPILOGUE, d->epilogue);
    amp_policy_call_set(call, AMP_FIELD_MATH, d->pedantic ? AMP_MATH_PEDANTIC
                                                         : AMP_MATH_DEFAULT);
}

void
amp_gemm_policy(struct amp_gemm_desc *d, struct amp_policy_read *read,
                struct amp_decision *out)
{
    struct amp_policy_call call;

    if (!d->site)
        d->site = amp_site_get(d->api, d->caller);
    if (!read || !read->valid) {
        amp_gemm_policy_call(d, &call);
        if (read)
            amp_policy_read(&call, read);
    }
    /* Earlier calls' results (the verdicts of shadow calls at the site
     * decide this one, demotions), never blocking, at a bounded cost
     * (also while the stream is being captured). */
    amp_harvest(0);
    if (read && read->valid)
        amp_policy_decide_read(d->site, read, out);
    else
        amp_policy_decide(&call, out);
    if (out->why == AMP_WHY_BASELINE &&
        amp_dev_stream_capturing(d->stream) != 0)
        amp_policy_no_baseline(out);
    /* A delivering run copies D alone: an auxiliary output would keep the
     * FP32 original's, so such a call converts without its baseline. */
    if (out->why == AMP_WHY_BASELINE && out->delivers && d->lt &&
        amp_epi_aux(d->epilogue))
        amp_policy_no_baseline(out);
    amp_decision_keep_captured(out, d->stream);
    d->auto_shape = amp_decision_auto_shape(out);
    d->shape = amp_decision_shape(out);
    d->delivers = out->delivers;
}

void
amp_gemm_shape(const struct amp_gemm_desc *d, struct amp_shape *shape)
{
    shape->family = AMP_FAMILY_GEMM;
    shape->v[0] = d->m;
    shape->v[1] = d->n;
    shape->v[2] = d->k;
    shape->v[3] = d->batch_kind == AMP_BATCH_NONE ? 1 : d->batch;
    shape->v[4] = d->transa;
    shape->v[5] = d->transb;
    shape->v[6] = d->epilogue;
}

void
amp_gemm_what_call(struct amp_prof_what *w, const struct amp_gemm_desc *d)
{
    memset(w, 0, sizeof *w);
    w->api = d->api;
    w->site = d->site;
    amp_gemm_shape(d, &w->shape);
    w->flops = 2.0 * (double)d->m * (double)d->n * (double)d->k *
               (double)amp_gemm_batch(d);
}

void
amp_gemm_what(struct amp_prof_what *w, const struct amp_gemm_desc *d,
              const struct amp_decision *dec, int device)
{
    amp_gemm_what_call(w, d);
    amp_gemm_what_decided(w, d, dec, device);
}

void
amp_gemm_what_decided(struct amp_prof_what *w, const struct amp_gemm_desc *d,
                      const struct amp_decision *dec, int device)
{
    w->mode = dec->mode;
    w->candidate = dec->candidate;
    w->delivers = dec->delivers;
    w->auto_shape = amp_decision_auto_shape(dec);
    w->site_shape = amp_decision_shape(dec);
    w->stream = d->stream;
    w->device = device;
}

/* ---- Scratch layout ---------------------------------------------------------- */

/* Where each part of a converted call lives in its one scratch allocation.
 * Offsets are 256-byte aligned; an absent part is AMP_ABSENT. Half-precision
 * operands have leading dimensions padded to multiples of 8 elements, so
 * every matrix of a batch starts 16-byte aligned. tf32x3's copies are FP32
 * (ld_a16 and the like then count FP32 elements): each problem's three
 * parts of an operand side by side along K (amp_tf32x3_operand), part_a
 * and part_b elements apart. */
struct amp_gemm_layout {
    int64_t batch;
    int64_t rows_a, cols_a, ld_a16, stride_a16;
    int64_t rows_b, cols_b, ld_b16, stride_b16;
    int64_t rows_r, cols_r;      /* C and D as stored: compact FP32 */
    int64_t stride_r;            /* m * n: results */
    size_t scalars, accum, a, a_lo, b, b_lo, ptrs_a, ptrs_b, ptrs_r, sum,
        hi, result, alpha_vec;
    int64_t part_a, part_b;      /* tf32x3: between an operand's parts */
    int64_t alpha_members;       /* alpha vectors compensated */
    size_t bytes;                /* SIZE_MAX when it does not fit */
};

#define AMP_ABSENT SIZE_MAX

/* The device address of a part, 0 when it is absent. */
static amp_devptr
amp_at(amp_devptr scratch, size_t part)
{
    return part == AMP_ABSENT ? 0 : scratch + part;
}

/* count * elem bytes, SIZE_MAX on overflow. */
static size_t
amp_bytes(int64_t count, size_t elem)
{
    size_t n;

    if (count < 0 || __builtin_mul_overflow((size_t)count, elem, &n))
        return SIZE_MAX;
    return n;
}

/* Elements of `batch` matrices of rows x cols, each `stride` apart. */
static int64_t
amp_batch_elems(int64_t batch, int64_t stride)
{
    int64_t n;

    if (__builtin_mul_overflow(batch, stride, &n))
        return -1;
    return n;
}

/* 1 when K runs along the stored columns of A (op(A) is m x k). */
static int
amp_k_in_cols_a(const struct amp_gemm_desc *d)
{
    return (d->transa == AMP_OP_N) != (d->row_a != 0);
}

/* ... of B (op(B) is k x n). */
static int
amp_k_in_cols_b(const struct amp_gemm_desc *d)
{
    return (d->transb == AMP_OP_T) != (d->row_b != 0);
}

/* One problem's tf32x3 copy of an operand stored rows x cols: three
 * parts side by side along K, so that together they are one operand of
 * three times K (amp_gemm_step's k_parts). Where K runs along the stored
 * columns, each part's columns follow the last's; along the rows, each
 * column holds the first part's rows, then the second's, then the
 * third's. Sets the leading dimension, the stride between problems and
 * the offset between parts (elements). */
static void
amp_tf32x3_operand(int64_t rows, int64_t cols, int k_in_cols, int64_t *ld,
                   int64_t *stride, int64_t *part)
{
    if (k_in_cols) {
        *ld = amp_round_up(rows, AMP_F32_LD_MULTIPLE);
        *part = *ld * cols;
        *stride = 3 * *part;
    } else {
        *ld = amp_round_up(3 * rows, AMP_F32_LD_MULTIPLE);
        *part = rows;
        *stride = *ld * cols;
    }
}

/* 1 for the modes whose one vendor step takes the program's own FP32
 * operands, only its compute type changed: tf32 and bf16x9. */
static int
amp_mode_own_operands(enum amp_mode mode)
{
    return mode == AMP_MODE_TF32 || mode == AMP_MODE_BF16X9;
}

/* `routed`: the one step writes a compact FP32 result that a kernel
 * blends into C (amp_gemm_routes_c). */
static void
amp_gemm_layout(const struct amp_gemm_desc *d, enum amp_mode work,
                int shadow, int routed, struct amp_gemm_layout *l)
{
    int half = work == AMP_MODE_FP16 || work == AMP_MODE_BF16 ||
               work == AMP_MODE_FP16X3;
    /* cuBLASLt's last step does the whole call, alpha and beta included:
     * a routed one needs no scalars, fp16x3 no separate hi part. */
    int routed_scalars = routed && !d->lt;
    int scaled = work == AMP_MODE_FP16 || work == AMP_MODE_FP16X3;
    int split = work == AMP_MODE_FP16X3;
    /* tf32x3: three-part FP32 copies, strided. */
    int tsplit = work == AMP_MODE_TF32X3;
    int arrays = d->batch_kind == AMP_BATCH_ARRAY, arrays_ab;
    /* A delivering shadow run writes the caller's pointer array C with
     * unit scalars (amp_queue_deliver). */
    int deliver_scalars = shadow && d->delivers && arrays && !d->lt;
    size_t a16, b16, r32, ptrs, *total = &l->bytes;

    memset(l, 0, sizeof *l);
    l->batch = amp_gemm_batch(d);
    amp_stored_a(d, &l->rows_a, &l->cols_a);
    amp_stored_b(d, &l->rows_b, &l->cols_b);
    amp_stored_c(d, &l->rows_r, &l->cols_r);
    l->ld_a16 = amp_round_up(l->rows_a, AMP_F16_LD_MULTIPLE);
    l->ld_b16 = amp_round_up(l->rows_b, AMP_F16_LD_MULTIPLE);
    l->stride_a16 = l->ld_a16 * l->cols_a;
    l->stride_b16 = l->ld_b16 * l->cols_b;
    l->stride_r = d->m * d->n;
    if (tsplit) {
        amp_tf32x3_operand(l->rows_a, l->cols_a, amp_k_in_cols_a(d),
                           &l->ld_a16, &l->stride_a16, &l->part_a);
        amp_tf32x3_operand(l->rows_b, l->cols_b, amp_k_in_cols_b(d),
                           &l->ld_b16, &l->stride_b16, &l->part_b);
    }
    a16 = amp_bytes(amp_batch_elems(l->batch, l->stride_a16), tsplit ? 4 : 2);
    b16 = amp_bytes(amp_batch_elems(l->batch, l->stride_b16), tsplit ? 4 : 2);
    r32 = amp_bytes(amp_batch_elems(l->batch, l->stride_r), 4);
    ptrs = amp_bytes(l->batch, 8);

    l->scalars = scaled || routed_scalars || deliver_scalars
                     ? amp_scratch_part(total,
                                        sizeof(struct amp_gemm_delayed))
                     : AMP_ABSENT;
    l->accum = shadow ? amp_scratch_part(total,
                                         sizeof(struct amp_shadow_accum))
                      : AMP_ABSENT;
    l->a = half ? amp_scratch_part(total, a16) : AMP_ABSENT;
    l->a_lo = split ? amp_scratch_part(total, a16) : AMP_ABSENT;
    l->b = half ? amp_scratch_part(total, b16) : AMP_ABSENT;
    l->b_lo = split ? amp_scratch_part(total, b16) : AMP_ABSENT;
    if (tsplit) {
        l->a = amp_scratch_part(total, a16);
        l->b = amp_scratch_part(total, b16);
    }
    arrays_ab = arrays && half && !shadow && !split;
    l->ptrs_a = arrays_ab ? amp_scratch_part(total, ptrs) : AMP_ABSENT;
    l->ptrs_b = arrays_ab ? amp_scratch_part(total, ptrs) : AMP_ABSENT;
    /* A step on pointer arrays (the caller's, or the half copies') writes
     * through one too. */
    l->ptrs_r = arrays && !tsplit &&
                        (routed || (shadow && amp_mode_own_operands(work)))
                    ? amp_scratch_part(total, ptrs)
                    : AMP_ABSENT;
    l->sum = split ? amp_scratch_part(total, r32) : AMP_ABSENT;
    l->hi = split && !d->lt ? amp_scratch_part(total, r32) : AMP_ABSENT;
    l->alpha_members = d->alpha_stride ? l->batch : 1;
    l->alpha_vec = scaled && d->alpha_vector
                       ? amp_scratch_part(
                             total, amp_bytes(amp_batch_elems(
                                                  l->alpha_members, d->m),
                                              4))
                       : AMP_ABSENT;
    l->result = shadow || routed ? amp_scratch_part(total, r32)
                                 : AMP_ABSENT;
}

/* Whether the one step of fp16, bf16, tf32, bf16x9 or tf32x3 writes a
 * scratch result rather than the caller's C. A step that fails may have
 * written part of its output (several kernels, a later one failed); with
 * beta 0 the FP32 fallback overwrites all of C, but with any other beta
 * it would read a modified C. So when beta may not be 0 (a host beta
 * other than 0, or scalars on the device) the step writes scratch, and
 * one kernel, which runs whole or fails before writing, blends it into C:
 * an extra pass over C and a compact m * n * batch FP32 result in
 * scratch. Nor does a step on the shim's copies (fp16, bf16, tf32x3)
 * write through the caller's pointer array C, whatever beta: tf32x3's
 * copies are strided, and for a half step cuBLAS picks a Tensor Core
 * kernel by the leading dimensions alone and takes each matrix of a
 * pointer array to be 16-byte aligned, which the caller's FP32 C need
 * not be (a 4-byte aligned one faulted, cudaErrorMisalignedAddress, on
 * an H200: docs/gpu-results.md); the compact result is aligned, and the
 * kernel that blends it into C is the shim's. */
static int
amp_gemm_routes_c(const struct amp_gemm_desc *d, enum amp_mode work,
                  int shadow)
{
    int copies = work == AMP_MODE_FP16 || work == AMP_MODE_BF16 ||
                 work == AMP_MODE_TF32X3;

    /* cuBLASLt writes D, which only an in-place call shares with C; its
     * last step applies the epilogue, so a kernel only copies. */
    if (d->lt)
        return !shadow && d->d == d->c &&
               (d->scalars_on_device || *d->beta != 0.0f);
    if (shadow)
        return 0;
    if (copies && d->batch_kind == AMP_BATCH_ARRAY)
        return 1;
    return (copies || amp_mode_own_operands(work)) &&
           (d->scalars_on_device || *d->beta != 0.0f);
}

/* ---- Queued work ------------------------------------------------------------- */

/* A batch of FP32 matrices as the batched kernels take it. */
struct amp_batch_src {
    amp_devptr base, array;
    int64_t stride, batch, ld, rows, cols;
};

static struct amp_batch_src
amp_operand(const struct amp_gemm_desc *d, amp_devptr p, int64_t stride,
            int64_t ld, int64_t rows, int64_t cols)
{
    struct amp_batch_src s = {
        .base = d->batch_kind == AMP_BATCH_ARRAY ? 0 : p,
        .array = d->batch_kind == AMP_BATCH_ARRAY ? p : 0,
        .stride = d->batch_kind == AMP_BATCH_STRIDED ? stride : 0,
        .batch = amp_gemm_batch(d), .ld = ld, .rows = rows, .cols = cols,
    };
    return s;
}

static enum amp_status
amp_launch(struct amp_dev *dev, enum amp_kernel k, int64_t elems,
           amp_stream stream, void **params)
{
    return amp_dev_launch(dev, k, amp_dev_grid(dev, k, elems),
                          AMP_KERNEL_BLOCK, stream, params);
}

static enum amp_status
amp_queue_fill_ptrs(struct amp_gemm_run *run, amp_devptr ptrs,
                    amp_devptr base, int64_t stride_elems, size_t elem)
{
    int64_t stride_bytes = stride_elems * (int64_t)elem;
    int64_t batch = run->desc.batch;
    void *params[] = {&ptrs, &base, &stride_bytes, &batch};

    return amp_launch(run->dev, AMP_KERNEL_FILL_PTRS, batch, run->stream,
                      params);
}

/* Copies the caller's C into the compact result (shadow). */
static enum amp_status
amp_queue_copy_c(struct amp_gemm_run *run)
{
    const struct amp_gemm_desc *d = &run->desc;
    struct amp_batch_src s = amp_operand(d, d->c, d->stride_c, d->ldc,
                                         run->rows_r, run->cols_r);
    void *params[] = {&s.base, &s.array, &s.stride, &s.batch, &s.ld,
                      &s.rows, &s.cols, &run->result, &run->ld_result,
                      &run->stride_result};

    return amp_launch(run->dev, AMP_KERNEL_GATHER_BATCH,
                      s.batch * s.rows * s.cols, run->stream, params);
}

/* An operand as the fused kernels take it: the caller's batch, its half
 * copy at dst (with lo, the fp16x3 split), the pointer array to fill with
 * the copy's matrices (0: none), and the blocks of the grid that cover
 * it, sized for kernel k (amp_dev_grid; the other kernels that take the
 * operand launch the same grid, which a grid-stride loop covers whatever
 * its size), into *o. */
static void
amp_fused_operand(const struct amp_gemm_run *run, enum amp_kernel k,
                  struct amp_batch_src s, amp_devptr dst, amp_devptr lo,
                  amp_devptr ptrs, int64_t ld_dst, int64_t stride_dst,
                  struct amp_gemm_operand *o)
{
    o->base = s.base;
    o->array = s.array;
    o->stride = s.stride;
    o->batch = s.batch;
    o->ld = s.ld;
    o->rows = s.rows;
    o->cols = s.cols;
    o->dst = dst;
    o->dst_lo = lo;
    o->ptrs = ptrs;
    o->ld_dst = ld_dst;
    o->stride_dst = stride_dst;
    o->blocks = amp_dev_grid(run->dev, k, s.batch * s.rows * s.cols);
}

/* One launch over both operands' blocks. */
static enum amp_status
amp_launch_fused(struct amp_gemm_run *run, enum amp_kernel k,
                 const struct amp_gemm_operand *a,
                 const struct amp_gemm_operand *b, void **params)
{
    return amp_dev_launch(run->dev, k, (unsigned)(a->blocks + b->blocks),
                          AMP_KERNEL_BLOCK, run->stream, params);
}

/* alpha and beta as the kernel that compensates alpha takes them: device
 * pointers in device pointer mode, else values. */
static void
amp_gemm_scalar_args(const struct amp_gemm_desc *d, amp_devptr *alpha_dev,
                     amp_devptr *beta_dev, float *alpha, float *beta)
{
    if (d->alpha_vector) {
        /* The compensation alone: amp_k_alpha_vector applies it per row;
         * a per-row beta is the steps' (or the fold's) own. */
        *alpha = 1.0f;
        *beta = d->beta_kind == AMP_BETA_HOST ? *d->beta : 0.0f;
    } else if (d->scalars_on_device) {
        *alpha_dev = (amp_devptr)(uintptr_t)d->alpha;
        *beta_dev = (amp_devptr)(uintptr_t)d->beta;
    } else {
        *alpha = *d->alpha;
        *beta = *d->beta;
    }
}

/* Zeroes the maxima and the block counter (the first words of the
 * scalars), then one kernel reduces both maxima and its last block turns
 * them into scales and compensates alpha; in device pointer mode it reads
 * alpha and beta on the device. */
static enum amp_status
amp_queue_scales(struct amp_gemm_run *run, struct amp_gemm_operand *a,
                 struct amp_gemm_operand *b)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr alpha_dev = 0, beta_dev = 0;
    float alpha = 0.0f, beta = 0.0f;
    amp_devptr rec = run->record;
    void *params[] = {a, b, &run->scalars, &alpha_dev, &beta_dev, &alpha,
                      &beta, &rec};
    enum amp_status st;

    amp_gemm_scalar_args(d, &alpha_dev, &beta_dev, &alpha, &beta);
    st = amp_dev_memset32_async(
        run->scalars, 0,
        offsetof(struct amp_gemm_scalars, blocks_done) / 4 + 1, run->stream);
    if (st == AMP_OK)
        st = amp_launch_fused(run, AMP_KERNEL_GEMM_SCALES, a, b, params);
    return st;
}

/* cuBLASLt's alpha vector times the scales' compensation, into scratch,
 * before the casts (which read the scales it may drop). */
static enum amp_status
amp_queue_alpha_vector(struct amp_gemm_run *run,
                       const struct amp_gemm_layout *l)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr alpha = (amp_devptr)(uintptr_t)d->alpha;
    int64_t members = l->alpha_members, m = d->m;
    void *params[] = {&alpha, (void *)&d->alpha_stride, &members, &m,
                      &run->alpha_vec, &run->scalars};

    return amp_dev_launch(run->dev, AMP_KERNEL_ALPHA_VECTOR, 1,
                          AMP_KERNEL_BLOCK, run->stream, params);
}

/* The one-pass FP16 casts of a repeating call (delayed scaling): the
 * casts at the previous call's scales with this call's maxima, then the
 * kernel that casts again, at the exact scale, an operand whose delayed
 * scale does not stand (and otherwise only reads its flag). */
static enum amp_status
amp_queue_delayed(struct amp_gemm_run *run, struct amp_gemm_operand *a,
                  struct amp_gemm_operand *b)
{
    amp_devptr alpha_dev = 0, beta_dev = 0;
    float alpha = 0.0f, beta = 0.0f;
    void *cast[] = {a, b, &run->record, &run->scalars, &alpha_dev,
                    &beta_dev, &alpha, &beta};
    void *recast[] = {a, b, &run->scalars};
    enum amp_status st;

    amp_gemm_scalar_args(&run->desc, &alpha_dev, &beta_dev, &alpha, &beta);
    st = amp_launch_fused(run, AMP_KERNEL_GEMM_CAST_DELAYED, a, b, cast);
    if (st == AMP_OK)
        st = amp_launch_fused(run, AMP_KERNEL_GEMM_RECAST, a, b, recast);
    return st;
}

/* Maxima, scales and scalars in one launch, then the casts (or splits) of
 * A and B and their pointer arrays in another; for a repeating FP16 call,
 * one pass (amp_queue_delayed). */
static enum amp_status
amp_queue_operands(struct amp_gemm_run *run, const struct amp_gemm_layout *l)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr base = run->scratch;
    struct amp_gemm_operand a, b;
    int bf16 = run->candidate == AMP_MODE_BF16;
    int32_t format = bf16 ? AMP_FORMAT_BF16 : AMP_FORMAT_F16;
    /* Unscaled (bf16) casts have no scalars: the kernel's scale is 1 (a
     * routed bf16 call's scalars are the final kernel's alone). */
    amp_devptr scalars = bf16 ? 0 : run->scalars;
    void *params[] = {&a, &b, &scalars, &format};
    enum amp_status st = AMP_OK;

    amp_fused_operand(
        run, AMP_KERNEL_GEMM_CAST,
        amp_operand(d, d->a, d->stride_a, d->lda, l->rows_a, l->cols_a),
        base + l->a, amp_at(base, l->a_lo), amp_at(base, l->ptrs_a),
        l->ld_a16, l->stride_a16, &a);
    amp_fused_operand(
        run, AMP_KERNEL_GEMM_CAST,
        amp_operand(d, d->b, d->stride_b, d->ldb, l->rows_b, l->cols_b),
        base + l->b, amp_at(base, l->b_lo), amp_at(base, l->ptrs_b),
        l->ld_b16, l->stride_b16, &b);
    if (run->delayed)
        return amp_queue_delayed(run, &a, &b);
    if (scalars)
        st = amp_queue_scales(run, &a, &b);
    if (st == AMP_OK && run->alpha_vec)
        st = amp_queue_alpha_vector(run, l);
    if (st == AMP_OK)
        st = amp_launch_fused(run, AMP_KERNEL_GEMM_CAST, &a, &b, params);
    return st;
}

/* The final kernel's alpha and beta when no scales kernel computes them
 * (bf16, tf32): the host values' bits, or a copy of the caller's device
 * scalars made in stream order, so the kernel sees their values at the
 * call's point in the stream. */
_Static_assert(offsetof(struct amp_gemm_scalars, beta) ==
                   offsetof(struct amp_gemm_scalars, alpha) + 4,
               "alpha and beta are adjacent");

static enum amp_status
amp_queue_scalars_copy(struct amp_gemm_run *run)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr alpha = run->scalars + offsetof(struct amp_gemm_scalars, alpha);
    amp_devptr beta = run->scalars + offsetof(struct amp_gemm_scalars, beta);
    enum amp_status st;
    uint32_t bits;

    if (d->scalars_on_device) {
        st = amp_dev_copy_async(alpha, (amp_devptr)(uintptr_t)d->alpha, 4,
                                run->stream);
        if (st == AMP_OK)
            st = amp_dev_copy_async(beta, (amp_devptr)(uintptr_t)d->beta, 4,
                                    run->stream);
        return st;
    }
    /* alpha and beta are adjacent: equal ones (1 and 1, accumulation)
     * take one memset. */
    memcpy(&bits, d->alpha, 4);
    if (memcmp(d->alpha, d->beta, 4) == 0)
        return amp_dev_memset32_async(alpha, bits, 2, run->stream);
    st = amp_dev_memset32_async(alpha, bits, 1, run->stream);
    memcpy(&bits, d->beta, 4);
    if (st == AMP_OK)
        st = amp_dev_memset32_async(beta, bits, 1, run->stream);
    return st;
}

/* tf32x3: both operands' three-part copies in one launch (no scales:
 * TF32 keeps FP32's exponent): A's parts hi', lo, hi along K, B's lo,
 * hi', hi (amp_tf32x3_parts); the kernel takes where hi' and lo go. */
static enum amp_status
amp_queue_tf32x3(struct amp_gemm_run *run, const struct amp_gemm_layout *l)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr a0 = run->scratch + l->a, b0 = run->scratch + l->b;
    amp_devptr a1 = a0 + (amp_devptr)l->part_a * 4;
    amp_devptr b1 = b0 + (amp_devptr)l->part_b * 4;
    struct amp_gemm_operand a, b;
    void *params[] = {&a, &b};

    amp_fused_operand(
        run, AMP_KERNEL_GEMM_SPLIT_TF32X3,
        amp_operand(d, d->a, d->stride_a, d->lda, l->rows_a, l->cols_a),
        a0, a1, 0, l->ld_a16, l->stride_a16, &a);
    amp_fused_operand(
        run, AMP_KERNEL_GEMM_SPLIT_TF32X3,
        amp_operand(d, d->b, d->stride_b, d->ldb, l->rows_b, l->cols_b),
        b1, b0, 0, l->ld_b16, l->stride_b16, &b);
    return amp_launch_fused(run, AMP_KERNEL_GEMM_SPLIT_TF32X3, &a, &b,
                            params);
}

/* ---- Steps ------------------------------------------------------------------- */

_Static_assert(sizeof(struct amp_gemm_step) == 11 * 4 + 16 * 8 + 4,
               "amp_step_caller writes every field of a step (4 bytes of "
               "tail padding)");

/* t: a step on the caller's own operands with its scalars (tf32,
 * bf16). */
static void
amp_step_caller(const struct amp_gemm_desc *d, struct amp_gemm_step *t)
{
    /* Every field written (no clearing first, which costs as much again):
     * a field added to struct amp_gemm_step is added here. */
    t->type_ab = AMP_DTYPE_F32;
    t->type_c = AMP_DTYPE_F32;
    t->compute = AMP_COMPUTE_32F;
    t->batch_kind = d->batch_kind;
    t->batch = amp_gemm_batch(d);
    t->a = d->a;
    t->b = d->b;
    t->c = d->c;
    t->lda = d->lda;
    t->ldb = d->ldb;
    t->ldc = d->ldc;
    t->stride_a = d->stride_a;
    t->stride_b = d->stride_b;
    t->stride_c = d->stride_c;
    t->d = d->d;
    t->ldd = d->ldd;
    t->stride_d = d->stride_d;
    t->alpha = d->alpha;
    t->beta = d->beta;
    t->scalars_on_device = d->scalars_on_device;
    t->alpha_vector = d->alpha_vector;
    t->beta_kind = d->beta_kind;
    t->alpha_stride = d->alpha_stride;
    t->writes_caller_c = 0;
    t->epilogue = AMP_EPILOGUE_NONE;
    t->fold_before = 0;
    t->k_parts = 0;
}

/* Points the step's output at the compact FP32 batch `r`: strided (or
 * single) for scratch operands, a pointer array when A and B are the
 * caller's pointer arrays. */
static void
amp_step_into(struct amp_gemm_step *t, const struct amp_gemm_run *run,
              amp_devptr r, amp_devptr r_ptrs)
{
    t->c = r_ptrs ? r_ptrs : r;
    t->ldc = run->ld_result;
    t->stride_c = run->stride_result;
    t->d = t->c;
    t->ldd = t->ldc;
    t->stride_d = t->stride_c;
}

/* A routed step: R = op(A) op(B); the final kernel applies alpha (fp16:
 * the compensated one) and beta. */
static void
amp_step_unscaled(struct amp_gemm_step *t)
{
    t->alpha = &amp_one;
    t->beta = &amp_zero;
    t->scalars_on_device = 0;
}

/* The steps of the candidate (or only) mode, built from the first, t,
 * which is run->steps[0]. */

/* The one step of a mode with a single GEMM: into the result scratch for
 * shadow or a routed call, else into the caller's C. */
static void
amp_gemm_one_step(struct amp_gemm_run *run, const struct amp_gemm_layout *l,
                  struct amp_gemm_step *t)
{
    int shadow = run->mode == AMP_MODE_SHADOW;

    if (shadow || run->routed)
        amp_step_into(t, run, run->result, amp_at(run->scratch, l->ptrs_r));
    if (run->routed)
        amp_step_unscaled(t);
    t->writes_caller_c = !shadow && !run->routed;
    run->nsteps = 1;
}

/* cuBLASLt: the last step computes the whole call (alpha, beta, C and the
 * epilogue) into D, or into the result scratch for shadow and routed
 * calls. fp16x3 first sums its two small terms in scratch, into which
 * amp_gemm_before_step() folds alpha and beta C; the last step adds that,
 * as its C, to alpha' hi_A hi_B. t is the candidate's step on the
 * caller's matrices or their half copies. */
static void
amp_gemm_steps_lt(struct amp_gemm_run *run, const struct amp_gemm_layout *l,
                  struct amp_gemm_step *t)
{
    int shadow = run->mode == AMP_MODE_SHADOW;
    int split = run->candidate == AMP_MODE_FP16X3;
    /* fp16x3's last step is the third, after the two small terms. */
    struct amp_gemm_step *last = split ? &run->steps[2] : t;
    amp_devptr scalars = run->scalars;

    if (split)
        *last = *t;
    if (shadow || run->routed) {
        last->d = run->result;
        last->ldd = run->ld_result;
        last->stride_d = run->stride_result;
    }
    last->epilogue = shadow ? AMP_EPILOGUE_NO_AUX : AMP_EPILOGUE_CALL;
    last->writes_caller_c = !shadow && !run->routed;
    if (!split) {
        run->nsteps = 1;
        return;
    }
    amp_step_into(t, run, run->sum, 0);
    t->scalars_on_device = 0;
    t->alpha_vector = 0;
    run->steps[1] = *t;
    run->steps[0].b = run->scratch + l->b_lo;
    run->steps[0].alpha = &amp_lo_weight;
    run->steps[0].beta = &amp_zero;
    run->steps[1].a = run->scratch + l->a_lo;
    run->steps[1].alpha = &amp_lo_weight;
    run->steps[1].beta = &amp_one;
    last->c = run->sum;
    last->ldc = run->ld_result;
    last->stride_c = run->stride_result;
    last->alpha = (const float *)(uintptr_t)(
        scalars + offsetof(struct amp_gemm_scalars, alpha));
    last->beta = (const float *)(uintptr_t)(
        scalars + offsetof(struct amp_gemm_scalars, one));
    last->scalars_on_device = 1;
    if (run->desc.alpha_vector) {
        /* alpha' per row, and the fold's sum added once: a host 1. */
        last->alpha = (const float *)(uintptr_t)run->alpha_vec;
        last->alpha_stride = run->alpha_vec_stride;
        last->beta = &amp_one;
        last->beta_kind = AMP_BETA_HOST;
    }
    last->fold_before = 1;
    run->nsteps = 3;
}

/* Points the step's A and B at the run's copies of them in scratch (half,
 * or tf32x3's three-part FP32), strided. */
static void
amp_step_on_copies(struct amp_gemm_step *t, const struct amp_gemm_run *run,
                   const struct amp_gemm_layout *l)
{
    t->a = run->scratch + l->a;
    t->b = run->scratch + l->b;
    t->lda = l->ld_a16;
    t->ldb = l->ld_b16;
    t->stride_a = l->stride_a16;
    t->stride_b = l->stride_b16;
}

/* tf32x3 (the 3xTF32 split CUTLASS ships as kernels of its own, here on
 * the vendor's GEMMs): the caller's call, alpha, beta, C and epilogue
 * included, as one TF32 product of three times K on the copies,
 * [hi'_A lo_A hi_A] [lo_B; hi'_B; hi_B] (amp_tf32x3_parts): the two small
 * terms, then the product FP32 sums. The scratch layout
 * (amp_tf32x3_operand) makes it legal whatever the transposes and
 * orders; a pointer-array call takes the copies strided (and is routed:
 * amp_gemm_routes_c). */
static void
amp_gemm_steps_tf32x3(struct amp_gemm_run *run,
                      const struct amp_gemm_layout *l,
                      struct amp_gemm_step *t)
{
    const struct amp_gemm_desc *d = &run->desc;

    t->compute = AMP_COMPUTE_32F_FAST_TF32;
    amp_step_on_copies(t, run, l);
    t->k_parts = 3;
    if (d->batch_kind == AMP_BATCH_ARRAY)
        t->batch_kind = AMP_BATCH_STRIDED;
    if (d->lt)
        amp_gemm_steps_lt(run, l, t);
    else
        amp_gemm_one_step(run, l, t);
}

static void
amp_gemm_steps(struct amp_gemm_run *run, const struct amp_gemm_layout *l)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr base = run->scratch;
    struct amp_gemm_step *t = &run->steps[0];

    amp_step_caller(d, t);
    if (run->candidate == AMP_MODE_TF32X3) {
        amp_gemm_steps_tf32x3(run, l, t);
        return;
    }
    if (amp_mode_own_operands(run->candidate)) {
        t->compute = run->candidate == AMP_MODE_TF32
                        ? AMP_COMPUTE_32F_FAST_TF32
                        : AMP_COMPUTE_32F_EMULATED_16BFX9;
        if (d->lt)
            amp_gemm_steps_lt(run, l, t);
        else
            amp_gemm_one_step(run, l, t);
        return;
    }
    t->type_ab = run->candidate == AMP_MODE_BF16 ? AMP_DTYPE_BF16
                                                : AMP_DTYPE_F16;
    amp_step_on_copies(t, run, l);
    if (d->batch_kind == AMP_BATCH_ARRAY) {
        /* Scratch operands are strided; only a step that writes the
         * caller's pointer array C needs arrays for A and B too. */
        t->batch_kind = l->ptrs_a != AMP_ABSENT ? AMP_BATCH_ARRAY
                                               : AMP_BATCH_STRIDED;
        if (l->ptrs_a != AMP_ABSENT) {
            t->a = base + l->ptrs_a;
            t->b = base + l->ptrs_b;
        }
    }
    if (run->candidate == AMP_MODE_FP16 && d->alpha_vector) {
        /* The compensated copy of alpha; beta as the caller gave it. */
        t->alpha = (const float *)(uintptr_t)run->alpha_vec;
        t->alpha_stride = run->alpha_vec_stride;
    } else if (run->candidate == AMP_MODE_FP16) {
        t->alpha = (const float *)(uintptr_t)(
            run->scalars + offsetof(struct amp_gemm_scalars, alpha));
        t->beta = (const float *)(uintptr_t)(
            run->scalars + offsetof(struct amp_gemm_scalars, beta));
        t->scalars_on_device = 1;
    }
    if (d->lt) {
        amp_gemm_steps_lt(run, l, t);
        return;
    }
    if (run->candidate != AMP_MODE_FP16X3) {
        amp_gemm_one_step(run, l, t);
        return;
    }
    /* fp16x3: sum = 2^-11 hi_A lo_B + 2^-11 lo_A hi_B, the smaller terms
     * first, and hi = hi_A hi_B apart, in FP32 scratch: the final kernel
     * adds them where hi is finite (amp_f16x3_sum). */
    amp_step_into(t, run, run->sum, 0);
    t->scalars_on_device = 0;
    run->steps[1] = *t;
    run->steps[2] = *t;
    run->steps[0].b = base + l->b_lo;
    run->steps[0].alpha = &amp_lo_weight;
    run->steps[0].beta = &amp_zero;
    run->steps[1].a = base + l->a_lo;
    run->steps[1].alpha = &amp_lo_weight;
    run->steps[1].beta = &amp_one;
    run->steps[2].c = run->hi;
    run->steps[2].alpha = &amp_one;
    run->steps[2].beta = &amp_zero;
    run->nsteps = 3;
}

/* ---- Prepare, finish, abandon ------------------------------------------------ */

static int
amp_mode_converts(enum amp_mode mode)
{
    return mode == AMP_MODE_FP16 || mode == AMP_MODE_BF16 ||
           mode == AMP_MODE_TF32 || mode == AMP_MODE_FP16X3 ||
           mode == AMP_MODE_TF32X3 || mode == AMP_MODE_BF16X9;
}

/* Queues the scratch free and gives an unused slot back. */
static void
amp_gemm_release(struct amp_gemm_run *run)
{
    if (run->scratch)
        amp_dev_free_async(run->scratch, run->stream,
                           run->scratch_in_graph);
    run->scratch = 0;
    if (run->slot >= 0)
        amp_dev_slot_release(run->dev, run->slot);
    run->slot = -1;
}

/* Mode checks, the shadow slot and the scratch allocation. */
static enum amp_status
amp_gemm_acquire(struct amp_gemm_run *run, const struct amp_gemm_layout *l,
                 uint64_t scratch_max)
{
    enum amp_status st;

    if (l->bytes == SIZE_MAX || l->bytes > scratch_max)
        return AMP_ERR_TOO_BIG;
    if (run->mode == AMP_MODE_SHADOW) {
        st = amp_dev_slot_take(run->dev, &run->slot, &run->slot_at);
        if (st != AMP_OK)
            return st;
    }
    if (l->bytes == 0)
        return AMP_OK;
    return amp_dev_alloc_async(run->dev, l->bytes, run->stream,
                               run->desc.capture, &run->scratch,
                               &run->scratch_in_graph);
}

_Static_assert(offsetof(struct amp_gemm_delayed, s) == 0 &&
                   sizeof(struct amp_gemm_record) <= AMP_DEV_RECORD_BYTES,
               "a call's scalars lead its delayed ones; a record fits");

/* A 64-bit hash of n words, a word at a time (a multiply and a shift
 * each). */
static uint64_t
amp_hash_words(uint64_t h, const int64_t *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ (uint64_t)v[i]) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 31;
    }
    return h;
}

/* The key of a call's delayed-scaling record: its site and shape. */
static uint64_t
amp_gemm_record_key(const struct amp_gemm_desc *d)
{
    int64_t shape[] = {
        d->m, d->n, d->k, d->batch, d->batch_kind, d->transa, d->transb,
        d->lda, d->ldb, d->stride_a, d->stride_b, d->lt, d->row_a,
        d->row_b, (int64_t)(uintptr_t)d->site,
    };

    return amp_hash_words(0xcbf29ce484222325ull, shape,
                          sizeof shape / sizeof shape[0]);
}

/* A repeating FP16 call keeps the maxima its next call scales by in a
 * record of the device layer, one per (site, shape, stream): the first
 * call there takes the two passes and sets it, the next ones cast in one
 * pass (delayed scaling: AMP_DELAYED_SLACK in amp_math.h), each with its
 * own scalars in its scratch. Not for other modes or an alpha vector (its
 * compensation runs between the scales and the casts); amp_dev_record
 * refuses the streams a record cannot serve. `key` is the call's
 * amp_gemm_record_key. */
static void
amp_gemm_record(struct amp_gemm_run *run, uint64_t key)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr at = 0;
    int fresh = 1;

    if (run->candidate != AMP_MODE_FP16 || d->alpha_vector)
        return;
    if (amp_dev_record(run->dev, key, d->stream, d->capture, &at, &fresh) !=
        AMP_OK)
        return;
    run->record = at;
    run->record_key = key;
    run->delayed = !fresh;
}

/* ---- The layout memo --------------------------------------------------------- */

/* Everything amp_gemm_layout and amp_gemm_record_key read of a call
 * (whose batch is amp_gemm_batch's) and its run: a call whose inputs
 * equal an earlier one's on its thread takes that call's layout and key
 * (a framework's layers repeat their shapes at every step). No padding:
 * inputs are compared whole. */
struct amp_gemm_layout_in {
    int64_t m, n, k, batch, lda, ldb, stride_a, stride_b, alpha_stride;
    const struct amp_site *site;
    int32_t batch_kind, transa, transb, row_a, row_b, row_cd, lt, delivers,
        alpha_vector, work, shadow, routed;
};

_Static_assert(sizeof(struct amp_gemm_layout_in) == 10 * 8 + 12 * 4,
               "a layout's inputs have no padding");

struct amp_gemm_memo {
    struct amp_gemm_layout_in in;
    struct amp_gemm_layout l;
    uint64_t record_key;
    int valid;
};

/* Per thread, by a hash of the shape and site (some 28 KiB a thread,
 * allocated at its first converted call). */
#define AMP_GEMM_MEMOS 64

static AMP_THREAD_HOT struct {
    struct amp_gemm_memo *memos; /* NULL: not had yet, or none */
    int tried;
} amp_gemm_memo_thread;

static void
amp_gemm_memo_exit(void)
{
    free(amp_gemm_memo_thread.memos);
    amp_gemm_memo_thread.memos = NULL;
}

/* The layout of d (a run's desc) for `work`, and its record key: the
 * thread's memo where it holds them, else made (into the memo, or into
 * `own` where the thread has none). */
static const struct amp_gemm_layout *
amp_gemm_layout_of(const struct amp_gemm_desc *d, enum amp_mode work,
                   int shadow, int routed, uint64_t *record_key,
                   struct amp_gemm_layout *own)
{
    struct amp_gemm_layout_in in = {
        .m = d->m, .n = d->n, .k = d->k, .batch = d->batch, .lda = d->lda,
        .ldb = d->ldb, .stride_a = d->stride_a, .stride_b = d->stride_b,
        .alpha_stride = d->alpha_stride, .site = d->site,
        .batch_kind = d->batch_kind, .transa = d->transa,
        .transb = d->transb, .row_a = d->row_a, .row_b = d->row_b,
        .row_cd = d->row_cd, .lt = d->lt, .delivers = d->delivers,
        .alpha_vector = d->alpha_vector, .work = work, .shadow = shadow,
        .routed = routed,
    };
    struct amp_gemm_memo *m;
    uint64_t h;

    if (!amp_gemm_memo_thread.memos && !amp_gemm_memo_thread.tried) {
        amp_gemm_memo_thread.tried = 1;
        amp_gemm_memo_thread.memos =
            calloc(AMP_GEMM_MEMOS, sizeof *amp_gemm_memo_thread.memos);
        if (amp_gemm_memo_thread.memos)
            amp_shim_at_thread_exit(amp_gemm_memo_exit);
    }
    if (!amp_gemm_memo_thread.memos) {
        amp_gemm_layout(d, work, shadow, routed, own);
        *record_key = amp_gemm_record_key(d);
        return own;
    }
    h = ((uint64_t)d->m * 0x9e3779b97f4a7c15ull) ^
        ((uint64_t)d->n * 0xbf58476d1ce4e5b9ull) ^ (uint64_t)d->k ^
        (uint64_t)(uintptr_t)d->site ^ (uint64_t)work;
    m = &amp_gemm_memo_thread.memos[(h * 0x94d049bb133111ebull) >> 58];
    if (!m->valid || memcmp(&m->in, &in, sizeof in) != 0) {
        m->in = in;
        amp_gemm_layout(d, work, shadow, routed, &m->l);
        m->record_key = amp_gemm_record_key(d);
        m->valid = 1;
    }
    *record_key = m->record_key;
    return &m->l;
}

_Static_assert(AMP_GEMM_MEMOS == 64, "the memo's place is a hash's top 6 bits");

/* The candidate's own work and its steps (amp_gemm_queue_candidate) on
 * the run's layout l. */
static enum amp_status
amp_gemm_queue(struct amp_gemm_run *run, const struct amp_gemm_layout *l)
{
    const struct amp_gemm_desc *d = &run->desc;
    enum amp_status st = AMP_OK;

    if (run->candidate == AMP_MODE_TF32X3)
        st = amp_queue_tf32x3(run, l);
    else if (!amp_mode_own_operands(run->candidate))
        st = amp_queue_operands(run, l);
    if (st == AMP_OK && run->routed && !d->lt &&
        run->candidate != AMP_MODE_FP16)
        st = amp_queue_scalars_copy(run);
    if (st == AMP_OK && l->ptrs_r != AMP_ABSENT)
        st = amp_queue_fill_ptrs(run, run->scratch + l->ptrs_r, run->result,
                                 l->stride_r, 4);
    if (st != AMP_OK) {
        /* A first call that may not have set its record: the key's next
         * call starts afresh (the one-pass cast needs the counters the
         * first call zeroes); its scales kernel may be queued already, so
         * the record drains before another stream may take it. */
        if (amp_gemm_warms_up(run))
            amp_dev_record_drop(run->dev, run->record, run->record_key,
                                run->stream);
        run->record = 0;
        amp_gemm_release(run);
        return st;
    }
    /* The record's first call is queued: later calls may take one pass
     * (their kernels follow these on the stream). */
    if (amp_gemm_warms_up(run))
        amp_dev_record_ready(run->dev, run->record, run->record_key);
    amp_gemm_steps(run, l);
    return AMP_OK;
}

enum amp_status
amp_gemm_prepare(struct amp_dev *dev, const struct amp_gemm_desc *d,
                 enum amp_mode mode, enum amp_mode candidate,
                 uint64_t scratch_max, int fp32_first,
                 struct amp_gemm_run *run)
{
    int shadow = mode == AMP_MODE_SHADOW;
    struct amp_gemm_layout own;
    const struct amp_gemm_layout *l;
    uint64_t record_key;
    enum amp_status st;

    memset(run, 0, offsetof(struct amp_gemm_run, desc));
    run->mode = mode;
    run->candidate = shadow ? candidate : mode;
    /* A convolution mode; for GEMMs the nearest one. */
    if (run->candidate == AMP_MODE_ALLOW_CONVERSION)
        run->candidate = AMP_MODE_FP16;
    run->stream = d->stream;
    run->dev = dev;
    if (d != &run->desc)
        run->desc = *d;
    run->desc.batch = amp_gemm_batch(d);
    if (!d->lt) { /* cuBLAS writes C */
        run->desc.d = d->c;
        run->desc.ldd = d->ldc;
        run->desc.stride_d = d->stride_c;
    }
    run->slot = -1;
    if (!amp_mode_converts(run->candidate))
        return AMP_ERR_UNAVAILABLE;
    /* Elsewhere cuBLAS would compute FP32 and call it bf16x9. */
    if (run->candidate == AMP_MODE_BF16X9 && !amp_dev_bf16x9(dev))
        return AMP_ERR_UNAVAILABLE;
    /* tf32x3's product of three times K, and its leading dimensions, in
     * the vendor's int. */
    if (run->candidate == AMP_MODE_TF32X3 && d->k > INT32_MAX / 3 - 8)
        return AMP_ERR_UNAVAILABLE;
    /* Shadow work is never captured into a graph: the caller runs FP32. */
    if (shadow && amp_dev_capturing_as(d->capture, d->stream) != 0)
        return AMP_ERR_UNAVAILABLE;

    run->routed = amp_gemm_routes_c(d, run->candidate, shadow);
    l = amp_gemm_layout_of(&run->desc, run->candidate, shadow, run->routed,
                           &record_key, &own);
    st = amp_gemm_acquire(run, l, scratch_max);
    if (st != AMP_OK) {
        amp_gemm_release(run);
        return st;
    }
    run->scratch_bytes = l->bytes;
    run->needs_original = shadow;
    run->fp32_first = shadow && fp32_first;
    run->delivers = shadow && d->delivers;
    run->rows_r = l->rows_r;
    run->cols_r = l->cols_r;
    run->alpha_vec = amp_at(run->scratch, l->alpha_vec);
    run->alpha_vec_stride = d->alpha_stride ? d->m : 0;
    run->ld_result = l->rows_r;
    run->stride_result = l->stride_r;
    run->scalars = amp_at(run->scratch, l->scalars);
    run->accum = amp_at(run->scratch, l->accum);
    run->sum = amp_at(run->scratch, l->sum);
    run->hi = amp_at(run->scratch, l->hi);
    run->result = shadow || run->routed ? amp_at(run->scratch, l->result)
                                        : run->hi;
    /* A shadow candidate starts from C unless beta is a host zero
     * (cuBLASLt's reads the caller's C and writes its own D): a copy of
     * C as the call found it, before either product runs (the FP32
     * original may run first and overwrite C), and outside both timed
     * spans, so that the two orders time the same work. */
    if (shadow && !d->lt && (d->scalars_on_device || *d->beta != 0.0f)) {
        st = amp_queue_copy_c(run);
        if (st != AMP_OK) {
            amp_gemm_release(run);
            return st;
        }
    }
    amp_gemm_record(run, record_key);
    if (run->fp32_first)
        return AMP_OK; /* amp_gemm_queue_candidate after the original */
    amp_prof_start(); /* the host's set-up is done: the timed work */
    return amp_gemm_queue(run, l);
}

enum amp_status
amp_gemm_queue_candidate(struct amp_gemm_run *run)
{
    struct amp_gemm_layout own;
    uint64_t record_key;

    return amp_gemm_queue(
        run, amp_gemm_layout_of(&run->desc, run->candidate,
                                run->mode == AMP_MODE_SHADOW, run->routed,
                                &record_key, &own));
}

int
amp_gemm_warms_up(const struct amp_gemm_run *run)
{
    return run->record && !run->delayed;
}

/* C = s->alpha * R + s->beta * C (C not read when s->beta is 0), R =
 * amp_f16x3_sum(r, r_lo) when r_lo is not 0, else r: into the caller's C
 * (`caller`), or into the candidate's copy of C in a shadow run. fp16x3:
 * C = alpha' * (hi + sum) + beta * C; routed: C = alpha * result + beta *
 * C. */
static enum amp_status
amp_queue_axpby(struct amp_gemm_run *run, amp_devptr r, amp_devptr r_lo,
                int caller)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr c = caller ? d->c : run->result, c_array = 0;
    int64_t ldc = caller ? d->ldc : run->ld_result;
    int64_t stride_c = caller ? d->stride_c : run->stride_result;
    int64_t batch = d->batch, rows = run->rows_r, cols = run->cols_r;
    void *params[] = {&r, &r_lo, &run->ld_result,
                      &run->stride_result, &c, &c_array, &ldc, &stride_c,
                      &batch, &rows, &cols, &run->scalars};

    if (caller && d->batch_kind == AMP_BATCH_ARRAY) {
        c_array = c;
        c = 0;
    }
    if (caller && d->batch_kind == AMP_BATCH_NONE)
        stride_c = 0;
    return amp_launch(run->dev, AMP_KERNEL_AXPBY_BATCH, batch * rows * cols,
                      run->stream, params);
}

/* cuBLASLt, routed: the result into the caller's D, a copy that runs
 * whole or fails before it writes. */
static enum amp_status
amp_queue_copy_d(struct amp_gemm_run *run)
{
    const struct amp_gemm_desc *d = &run->desc;
    amp_devptr array = 0;
    void *params[] = {&run->result, &array, &run->stride_result,
                      (void *)&d->batch, &run->ld_result, &run->rows_r,
                      &run->cols_r, (void *)&d->d, (void *)&d->ldd,
                      (void *)&d->stride_d};

    return amp_launch(run->dev, AMP_KERNEL_GATHER_BATCH,
                      d->batch * run->rows_r * run->cols_r, run->stream,
                      params);
}

enum amp_status
amp_gemm_before_step(struct amp_gemm_run *run)
{
    const struct amp_gemm_desc *d = &run->desc;
    struct amp_row_scalars v = {
        .alpha_vec = d->alpha_vector
                         ? (const float *)(uintptr_t)run->alpha_vec : NULL,
        .beta_vec = d->alpha_vector && d->beta_kind == AMP_BETA_VECTOR
                        ? d->beta : NULL,
        .alpha_stride = run->alpha_vec_stride,
        .row_major = d->row_cd,
    };
    void *params[] = {&run->sum, &run->ld_result, &run->stride_result,
                      (void *)&d->c, (void *)&d->ldc, (void *)&d->stride_c,
                      (void *)&d->batch, &run->rows_r, &run->cols_r,
                      &run->scalars, &v};

    return amp_launch(run->dev, AMP_KERNEL_F16X3_FOLD,
                      d->batch * run->rows_r * run->cols_r, run->stream,
                      params);
}

/* The error kernel of a shadow run: candidate against the caller's C (D
 * for cuBLASLt); its slot is pended by amp_gemm_pend_error. */
static enum amp_status
amp_queue_shadow_error(struct amp_gemm_run *run)
{
    const struct amp_gemm_desc *d = &run->desc;
    struct amp_batch_src c = amp_operand(d, d->d, d->stride_d, d->ldd,
                                         run->rows_r, run->cols_r);
    void *params[] = {&run->result, &run->ld_result, &run->stride_result,
                      &c.base, &c.array, &c.ld, &c.stride, &c.batch,
                      &c.rows, &c.cols, &run->accum, &run->slot_at};
    enum amp_status st;

    st = amp_dev_memset32_async(run->accum, 0,
                                sizeof(struct amp_shadow_accum) / 4,
                                run->stream);
    if (st == AMP_OK)
        st = amp_launch(run->dev, AMP_KERNEL_SHADOW_ERROR,
                        c.batch * c.rows * c.cols, run->stream, params);
    return st;
}

/* The shadow run's slot after its last work (the comparison, a
 * delivering run's copy): its event, and to the harvest. */
static enum amp_status
amp_gemm_pend_error(struct amp_gemm_run *run)
{
    enum amp_status st;

    amp_prof_checked();
    st = amp_dev_slot_record(run->dev, run->slot, run->stream);
    if (st == AMP_OK)
        st = amp_harvest_pend(run->dev, run->stream, run->slot,
                              run->slot_at, 1,
                              run->desc.stats, run->desc.site,
                              run->desc.shape, run->desc.auto_shape,
                              run->candidate);
    if (st == AMP_OK)
        run->slot = -1; /* the harvest's now */
    return st;
}

enum amp_status
amp_gemm_candidate_done(struct amp_gemm_run *run)
{
    enum amp_status st = AMP_OK;

    /* cuBLASLt's last step wrote the candidate whole. */
    if ((run->candidate == AMP_MODE_FP16X3 || run->routed) &&
        !run->candidate_done && !run->desc.lt)
        st = amp_queue_axpby(run, run->routed ? run->result : run->hi,
                             run->routed ? 0 : run->sum,
                             run->mode != AMP_MODE_SHADOW);
    if (st == AMP_OK)
        run->candidate_done = 1;
    return st;
}

/* A delivering shadow run, after its comparison: the candidate's result
 * into the caller's C (D), over the FP32 original's. One kernel, which
 * runs whole or fails before it writes: a copy, or through the caller's
 * pointer array C = 1 * result + 0 * C (exact, C not read). */
static enum amp_status
amp_queue_deliver(struct amp_gemm_run *run)
{
    amp_devptr alpha = run->scalars + offsetof(struct amp_gemm_scalars, alpha);
    amp_devptr beta = run->scalars + offsetof(struct amp_gemm_scalars, beta);
    enum amp_status st;

    if (run->desc.batch_kind != AMP_BATCH_ARRAY)
        return amp_queue_copy_d(run);
    /* The scalars' earlier readers are queued before: stream order. */
    st = amp_dev_memset32_async(alpha, 0x3f800000u, 1, run->stream);
    if (st == AMP_OK)
        st = amp_dev_memset32_async(beta, 0, 1, run->stream);
    if (st == AMP_OK)
        st = amp_queue_axpby(run, run->result, 0, 1);
    return st;
}

enum amp_status
amp_gemm_finish(struct amp_gemm_run *run)
{
    enum amp_status st = amp_gemm_candidate_done(run);

    if (st == AMP_OK && run->desc.lt && run->routed)
        st = amp_queue_copy_d(run);
    if (st == AMP_OK && run->mode == AMP_MODE_SHADOW)
        st = amp_queue_shadow_error(run);
    if (st == AMP_OK && run->delivers)
        st = amp_queue_deliver(run);
    if (st == AMP_OK && run->mode == AMP_MODE_SHADOW)
        st = amp_gemm_pend_error(run);
    amp_gemm_release(run);
    return st;
}

void
amp_gemm_abandon(struct amp_gemm_run *run)
{
    /* An FP32-first run abandoned before its candidate was queued (no
     * steps yet) holds a delayed-scaling record its work never set. */
    if (run->fp32_first && run->nsteps == 0 && amp_gemm_warms_up(run))
        amp_dev_record_drop(run->dev, run->record, run->record_key,
                            run->stream);
    amp_gemm_release(run);
}
