/* Unit tests of the converted GEMM path on the emulated driver and cuBLAS:
 * each mode's prepare, steps (issued here as the hook issues them) and
 * finish, for single, strided and pointer-array calls, against a double
 * reference; failures leave C untouched and nothing allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "amp_math.h"
#include "emu.h"
#include "emu_child.h"
#include "measure/harvest.h"
#include "run/gemm.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* op(A) = A^T with A stored K x M, op(B) = B stored K x N: odd sizes and
 * leading dimensions that are not multiples of 8. */
#define M 37
#define N 29
#define K 53
#define LDA (K + 3)
#define LDB (K + 1)
#define LDC (M + 2)
#define BATCH 3
/* Host strides between a batch's matrices, with a gap. */
#define SA (LDA * M + 5)
#define SB (LDB * N + 7)
#define SC (LDC * N + 3)

#define U16 0x1p-11
#define UBF16 0x1p-8
#define UTF32 0x1p-11
#define U32 0x1p-24

static CUstream stream;
static cublasHandle_t blas;
static struct amp_dev *dev;
static struct amp_api_stats stats = AMP_API_STATS_INIT("test_gemm");

/* One problem: host data and its device copies. */
struct problem {
    enum amp_batch kind;
    int batch;
    float a[BATCH * SA], b[BATCH * SB], c0[BATCH * SC];
    CUdeviceptr da, db, dc, pa, pb, pc, scalars;
};

static struct problem prob;

static unsigned rng_state = 12345;

static float
uniform(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (float)((rng_state >> 8) & 0xffff) / 65536.0f;
}

/* Values of magnitude about `scale`, both signs. */
static void
fill(float *x, int n, float scale)
{
    int i;

    for (i = 0; i < n; i++)
        x[i] = (uniform() * 2.0f - 1.0f) * scale;
}

static void
upload(struct problem *p)
{
    CUdeviceptr ptrs[3][BATCH];
    int i;

    for (i = 0; i < BATCH; i++) {
        ptrs[0][i] = p->da + (CUdeviceptr)i * SA * 4;
        ptrs[1][i] = p->db + (CUdeviceptr)i * SB * 4;
        ptrs[2][i] = p->dc + (CUdeviceptr)i * SC * 4;
    }
    assert_int_equal(cuMemcpyHtoD(p->da, p->a, sizeof p->a), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(p->db, p->b, sizeof p->b), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(p->dc, p->c0, sizeof p->c0), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(p->pa, ptrs[0], sizeof ptrs[0]),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(p->pb, ptrs[1], sizeof ptrs[1]),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(p->pc, ptrs[2], sizeof ptrs[2]),
                     CUDA_SUCCESS);
}

/* Moderate-range data: A about 1, B about 100, C about 10. */
static void
problem_default(struct problem *p, enum amp_batch kind)
{
    p->kind = kind;
    p->batch = kind == AMP_BATCH_NONE ? 1 : BATCH;
    rng_state = 12345;
    fill(p->a, BATCH * SA, 1.0f);
    fill(p->b, BATCH * SB, 100.0f);
    fill(p->c0, BATCH * SC, 10.0f);
    upload(p);
}

static int
setup(void **state)
{
    CUcontext ctx;
    CUdevice d;

    if (cuInit(0) || cuDeviceGet(&d, 0) ||
        cuDevicePrimaryCtxRetain(&ctx, d) || cuCtxSetCurrent(ctx) ||
        cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) ||
        cuMemAlloc(&prob.da, sizeof prob.a) ||
        cuMemAlloc(&prob.db, sizeof prob.b) ||
        cuMemAlloc(&prob.dc, sizeof prob.c0) ||
        cuMemAlloc(&prob.pa, BATCH * 8) || cuMemAlloc(&prob.pb, BATCH * 8) ||
        cuMemAlloc(&prob.pc, BATCH * 8) ||
        cuMemAlloc(&prob.scalars, 2 * sizeof(float)))
        return -1;
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(blas, (cudaStream_t)stream) != CUBLAS_STATUS_SUCCESS)
        return -1;
    dev = amp_dev_current();
    return dev ? 0 : -1;
}

static struct amp_gemm_desc
desc(const struct problem *p, const float *alpha, const float *beta,
     int on_device)
{
    int arrays = p->kind == AMP_BATCH_ARRAY;
    struct amp_gemm_desc d = {
        .api = "test", .stats = &stats,
        .transa = AMP_OP_T, .transb = AMP_OP_N, .ops_valid = 1,
        .m = M, .n = N, .k = K, .lda = LDA, .ldb = LDB, .ldc = LDC,
        .batch_kind = p->kind, .batch = p->batch,
        .stride_a = SA, .stride_b = SB, .stride_c = SC,
        .a = arrays ? p->pa : p->da, .b = arrays ? p->pb : p->db,
        .c = arrays ? p->pc : p->dc,
        .alpha = alpha, .beta = beta, .scalars_on_device = on_device,
        .stream = stream,
    };
    return d;
}

static cudaDataType
dtype(enum amp_dtype t)
{
    return t == AMP_DTYPE_F16 ? CUDA_R_16F
                              : t == AMP_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* The problem size issue() gives cuBLAS: the test's, or the odd shapes'
 * (a tf32x3 step of three times K gets three times issue_k_call). */
static int issue_m = M, issue_n = N, issue_k_call = K;

/* Issues one step as the hook does, on the test's handle. */
static cublasStatus_t
issue(const struct amp_gemm_step *s)
{
    cublasComputeType_t compute = s->compute == AMP_COMPUTE_32F_FAST_TF32
                                      ? CUBLAS_COMPUTE_32F_FAST_TF32
                                      : CUBLAS_COMPUTE_32F;
    cublasStatus_t st = cublasSetPointerMode(
        blas, s->scalars_on_device ? CUBLAS_POINTER_MODE_DEVICE
                                   : CUBLAS_POINTER_MODE_HOST);
    const void *a = (const void *)(uintptr_t)s->a;
    const void *b = (const void *)(uintptr_t)s->b;
    void *c = (void *)(uintptr_t)s->c;
    int issue_k = s->k_parts ? s->k_parts * issue_k_call : issue_k_call;

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    switch (s->batch_kind) {
    case AMP_BATCH_NONE:
        return cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, issue_m, issue_n,
                            issue_k,
                            s->alpha, a, dtype(s->type_ab), (int)s->lda, b,
                            dtype(s->type_ab), (int)s->ldb, s->beta, c,
                            dtype(s->type_c), (int)s->ldc, compute,
                            CUBLAS_GEMM_DEFAULT);
    case AMP_BATCH_STRIDED:
        return cublasGemmStridedBatchedEx(
            blas, CUBLAS_OP_T, CUBLAS_OP_N, issue_m, issue_n, issue_k,
            s->alpha, a, dtype(s->type_ab), (int)s->lda, s->stride_a, b, dtype(s->type_ab),
            (int)s->ldb, s->stride_b, s->beta, c, dtype(s->type_c),
            (int)s->ldc, s->stride_c, (int)s->batch, compute,
            CUBLAS_GEMM_DEFAULT);
    default:
        return cublasGemmBatchedEx(
            blas, CUBLAS_OP_T, CUBLAS_OP_N, issue_m, issue_n, issue_k,
            s->alpha, (const void *const *)a, dtype(s->type_ab), (int)s->lda,
            (const void *const *)b, dtype(s->type_ab), (int)s->ldb, s->beta,
            (void *const *)c, dtype(s->type_c), (int)s->ldc, (int)s->batch,
            compute, CUBLAS_GEMM_DEFAULT);
    }
}

/* issue() for a problem of m x n x k. */
static cublasStatus_t
issue_dims(const struct amp_gemm_step *s, int m, int n, int k)
{
    int keep_m = issue_m, keep_n = issue_n, keep_k = issue_k_call;
    cublasStatus_t st;

    issue_m = m;
    issue_n = n;
    issue_k_call = k;
    st = issue(s);
    issue_m = keep_m;
    issue_n = keep_n;
    issue_k_call = keep_k;
    return st;
}

/* The original FP32 call of a descriptor, as a step. */
static cublasStatus_t
original(const struct amp_gemm_desc *d)
{
    struct amp_gemm_step s = {
        .type_ab = AMP_DTYPE_F32, .type_c = AMP_DTYPE_F32,
        .compute = AMP_COMPUTE_32F, .batch_kind = d->batch_kind,
        .batch = d->batch, .a = d->a, .b = d->b, .c = d->c, .lda = d->lda,
        .ldb = d->ldb, .ldc = d->ldc, .stride_a = d->stride_a,
        .stride_b = d->stride_b, .stride_c = d->stride_c,
        .alpha = d->alpha, .beta = d->beta,
        .scalars_on_device = d->scalars_on_device,
    };
    return issue(&s);
}

/* Runs one call in `mode` as the hook would: prepare, steps, the original
 * for shadow, finish. Returns the first failure's status (AMP_OK). */
static enum amp_status
convert(const struct amp_gemm_desc *d, enum amp_mode mode,
        enum amp_mode candidate, struct amp_gemm_run *run)
{
    enum amp_status st;
    int i;

    if (mode == AMP_MODE_FP32)
        return original(d) == CUBLAS_STATUS_SUCCESS ? AMP_OK : AMP_ERR_DRIVER;
    st = amp_gemm_prepare(dev, d, mode, candidate, 1 << 24, 0, run);
    if (st != AMP_OK)
        return st;
    for (i = 0; i < run->nsteps; i++) {
        if (issue(&run->steps[i]) != CUBLAS_STATUS_SUCCESS) {
            amp_gemm_abandon(run);
            return AMP_ERR_DRIVER;
        }
    }
    if (run->needs_original && original(d) != CUBLAS_STATUS_SUCCESS) {
        amp_gemm_abandon(run);
        return AMP_ERR_DRIVER;
    }
    return amp_gemm_finish(run);
}

/* Runs the problem in `mode` from C0 and downloads C. */
static void
run_mode(struct problem *p, enum amp_mode mode, enum amp_mode candidate,
         const float *alpha, const float *beta, int on_device, float *c)
{
    struct amp_gemm_desc d = desc(p, alpha, beta, on_device);
    struct amp_gemm_run run;

    assert_int_equal(cuMemcpyHtoD(p->dc, p->c0, sizeof p->c0), CUDA_SUCCESS);
    assert_int_equal(convert(&d, mode, candidate, &run), AMP_OK);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(c, p->dc, sizeof p->c0), CUDA_SUCCESS);
}

/* Element (i, j) of matrix b: the reference and the bound's magnitude
 * |alpha| |op(A)| |op(B)| + |beta| |C0|. */
static void
reference(const struct problem *p, int b, int i, int j, float alpha,
          float beta, double *ref, double *mag)
{
    const float *a = p->a + b * SA, *bm = p->b + b * SB;
    double c0 = p->c0[b * SC + j * LDC + i];
    double sum = 0.0, abs_sum = 0.0;
    int q;

    for (q = 0; q < K; q++) {
        double t = (double)a[i * LDA + q] * (double)bm[j * LDB + q];
        sum += t;
        abs_sum += fabs(t);
    }
    *ref = alpha * sum;
    *mag = fabs(alpha) * abs_sum;
    if (beta != 0.0f) { /* C is not read when beta is 0 */
        *ref += beta * c0;
        *mag += fabs(beta) * fabs(c0);
    }
}

/* Largest |C - ref| / ((2u + 2k u32) mag) over the problem, and the
 * largest |C - ref| in *max_err. */
static double
bound_ratio(const struct problem *p, const float *c, float alpha, float beta,
            double u, double *max_err)
{
    double worst = 0.0, bound_factor = 2.0 * u + 2.0 * K * U32;
    int b, i, j;

    *max_err = 0.0;
    for (b = 0; b < p->batch; b++)
        for (j = 0; j < N; j++)
            for (i = 0; i < M; i++) {
                double ref, mag, err;

                reference(p, b, i, j, alpha, beta, &ref, &mag);
                err = fabs((double)c[b * SC + j * LDC + i] - ref);
                assert_true(isfinite(err));
                if (err > *max_err)
                    *max_err = err;
                if (err / (bound_factor * mag) > worst)
                    worst = err / (bound_factor * mag);
            }
    return worst;
}

/* Gaps between a batch's matrices and rows beyond M are never written. */
static void
assert_outside_untouched(const struct problem *p, const float *c)
{
    int b, i, j;

    for (b = 0; b < BATCH; b++)
        for (j = 0; j < N; j++)
            for (i = M; i < LDC; i++)
                assert_true(c[b * SC + j * LDC + i] ==
                            p->c0[b * SC + j * LDC + i]);
    for (b = p->batch; b < BATCH; b++)
        assert_memory_equal(c + b * SC, p->c0 + b * SC, SC * 4);
}

static const char *const kind_names[] = {"none", "strided", "array"};

/* Every layout in fp16, bf16 and tf32 stays within its element-wise
 * bound; fp16x3 within 4x the error of FP32 on the same inputs; tf32x3
 * within FP32's own bound, 2k u32 (mag). */
static void
test_modes_within_bounds(void **state)
{
    static const struct {
        enum amp_mode mode;
        double u;
    } modes[] = {
        {AMP_MODE_FP16, U16}, {AMP_MODE_BF16, UBF16}, {AMP_MODE_TF32, UTF32},
    };
    static float c[BATCH * SC];
    const float alpha = 1.5f, beta = -0.75f;
    double ratio, err, err32, err_x3;
    int kind, i;

    for (kind = AMP_BATCH_NONE; kind <= AMP_BATCH_ARRAY; kind++) {
        problem_default(&prob, (enum amp_batch)kind);
        for (i = 0; i < 3; i++) {
            run_mode(&prob, modes[i].mode, AMP_MODE_FP16, &alpha, &beta, 0,
                     c);
            ratio = bound_ratio(&prob, c, alpha, beta, modes[i].u, &err);
            print_message("%s %s: error/bound %.3f (max abs error %.3g)\n",
                          amp_mode_name(modes[i].mode), kind_names[kind],
                          ratio, err);
            assert_true(ratio <= 1.0);
            assert_true(ratio > 0.0);
            assert_outside_untouched(&prob, c);
        }
        run_mode(&prob, AMP_MODE_FP32, AMP_MODE_FP16, &alpha, &beta, 0, c);
        bound_ratio(&prob, c, alpha, beta, 0.0, &err32);
        run_mode(&prob, AMP_MODE_FP16X3, AMP_MODE_FP16, &alpha, &beta, 0, c);
        ratio = bound_ratio(&prob, c, alpha, beta, 0.0, &err_x3);
        print_message("fp16x3 %s: max abs error %.3g, FP32 %.3g (x%.2f)\n",
                      kind_names[kind], err_x3, err32, err_x3 / err32);
        assert_true(err32 > 0.0);
        assert_true(err_x3 <= 4.0 * err32);
        assert_outside_untouched(&prob, c);
        run_mode(&prob, AMP_MODE_TF32X3, AMP_MODE_FP16, &alpha, &beta, 0, c);
        ratio = bound_ratio(&prob, c, alpha, beta, 0.0, &err_x3);
        print_message("tf32x3 %s: error/(2k u32) %.3f, max abs error %.3g, "
                      "FP32 %.3g\n", kind_names[kind], ratio, err_x3, err32);
        assert_true(ratio <= 1.0);
        assert_outside_untouched(&prob, c);
    }
}

/* The step layout the hook gets: padded leading dimensions, aligned FP16
 * parts, the caller's C for fp16, bf16 and tf32 with beta 0, scratch for
 * fp16x3 and for the others with beta 0.5. */
static void
test_step_layout(void **state)
{
    const float alpha = 1.0f, beta = 0.0f, beta_half = 0.5f;
    struct amp_gemm_desc d;
    struct amp_gemm_run run;

    problem_default(&prob, AMP_BATCH_STRIDED);
    d = desc(&prob, &alpha, &beta, 0);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_FP16, AMP_MODE_FP16,
                                      1 << 24, 0, &run),
                     AMP_OK);
    assert_int_equal(run.nsteps, 1);
    assert_int_equal(run.needs_original, 0);
    assert_int_equal(run.steps[0].type_ab, AMP_DTYPE_F16);
    assert_int_equal(run.steps[0].type_c, AMP_DTYPE_F32);
    assert_int_equal(run.steps[0].batch_kind, AMP_BATCH_STRIDED);
    assert_int_equal(run.steps[0].lda, 56);  /* K = 53 -> 56 */
    assert_int_equal(run.steps[0].ldb, 56);
    assert_int_equal(run.steps[0].stride_a, 56 * M);
    assert_int_equal(run.steps[0].a % 256, 0);
    assert_int_equal(run.steps[0].b % 256, 0);
    assert_true(run.steps[0].c == prob.dc);
    assert_int_equal(run.steps[0].ldc, LDC);
    assert_int_equal(run.steps[0].stride_c, SC);
    assert_int_equal(run.steps[0].scalars_on_device, 1);
    assert_int_equal(run.steps[0].writes_caller_c, 1);
    /* Scalars, then A and B: 3 * 56 * 37 and 3 * 56 * 29 halves. */
    assert_int_equal(run.scratch_bytes, 256 + 12544 + 9984);
    amp_gemm_abandon(&run);

    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_TF32, AMP_MODE_FP16,
                                      1 << 24, 0, &run),
                     AMP_OK);
    assert_int_equal(run.scratch_bytes, 0);
    assert_int_equal(run.nsteps, 1);
    assert_int_equal(run.steps[0].compute, AMP_COMPUTE_32F_FAST_TF32);
    assert_true(run.steps[0].a == prob.da && run.steps[0].c == prob.dc);
    assert_true(run.steps[0].alpha == &alpha);
    assert_int_equal(run.steps[0].writes_caller_c, 1);
    assert_int_equal(amp_gemm_finish(&run), AMP_OK);

    prob.kind = AMP_BATCH_ARRAY;
    d = desc(&prob, &alpha, &beta, 0);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_FP16X3,
                                      AMP_MODE_FP16, 1 << 24, 0, &run),
                     AMP_OK);
    assert_int_equal(run.nsteps, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(run.steps[i].batch_kind, AMP_BATCH_STRIDED);
        assert_int_equal(run.steps[i].writes_caller_c, 0);
        assert_true(run.steps[i].c != prob.pc);
        assert_true(*run.steps[i].beta == (i == 1 ? 1.0f : 0.0f));
    }
    assert_true(*run.steps[0].alpha == 0x1p-11f);
    assert_true(*run.steps[1].alpha == 0x1p-11f);
    assert_true(*run.steps[2].alpha == 1.0f);
    assert_true(run.steps[2].c != run.steps[0].c);
    assert_true(run.steps[1].c == run.steps[0].c);
    amp_gemm_abandon(&run);

    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_BF16, AMP_MODE_FP16,
                                      1 << 24, 0, &run),
                     AMP_OK);
    /* A half step never writes through the caller's pointer array C,
     * whose matrices cuBLAS would take to be 16-byte aligned (an H200
     * faulted): it writes scratch, blended into C by the shim's kernel. */
    assert_int_equal(run.steps[0].type_ab, AMP_DTYPE_BF16);
    assert_true(run.steps[0].c != prob.pc);
    assert_int_equal(run.steps[0].writes_caller_c, 0);
    assert_int_equal(run.routed, 1);
    assert_int_equal(run.steps[0].scalars_on_device, 0);
    amp_gemm_abandon(&run);

    /* tf32x3: one TF32 product of three times K on FP32 copies, strided,
     * [hi'_A lo_A hi_A] [lo_B; hi'_B; hi_B], K along the copies' rows
     * (A^T, B plain), so each column holds the three parts' rows one
     * after another (3 * 53 -> 160). A pointer-array call is routed: the
     * product into a compact result, unscaled, the final kernel into C. */
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_TF32X3,
                                      AMP_MODE_FP16, 1 << 24, 0, &run),
                     AMP_OK);
    assert_int_equal(run.nsteps, 1);
    assert_int_equal(run.steps[0].type_ab, AMP_DTYPE_F32);
    assert_int_equal(run.steps[0].compute, AMP_COMPUTE_32F_FAST_TF32);
    assert_int_equal(run.steps[0].batch_kind, AMP_BATCH_STRIDED);
    assert_int_equal(run.steps[0].k_parts, 3);
    assert_int_equal(run.steps[0].lda, 160);
    assert_int_equal(run.steps[0].ldb, 160);
    assert_int_equal(run.steps[0].stride_a, 160 * M);
    assert_int_equal(run.steps[0].writes_caller_c, 0);
    assert_true(run.steps[0].c != prob.pc);
    assert_true(*run.steps[0].alpha == 1.0f && *run.steps[0].beta == 0.0f);
    amp_gemm_abandon(&run);
    /* Strided with beta 0: the caller's call on the copies, into C. */
    prob.kind = AMP_BATCH_STRIDED;
    d = desc(&prob, &alpha, &beta, 0);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_TF32X3,
                                      AMP_MODE_FP16, 1 << 24, 0, &run),
                     AMP_OK);
    assert_int_equal(run.nsteps, 1);
    assert_int_equal(run.steps[0].k_parts, 3);
    assert_int_equal(run.steps[0].writes_caller_c, 1);
    assert_true(run.steps[0].c == prob.dc);
    assert_true(run.steps[0].alpha == &alpha && run.steps[0].beta == &beta);
    amp_gemm_abandon(&run);
    prob.kind = AMP_BATCH_ARRAY;
    d = desc(&prob, &alpha, &beta, 0);

    /* beta 0.5: fp16, bf16 and tf32 write a compact result in scratch
     * (through a pointer array when the step takes arrays), with alpha 1
     * and beta 0; the final kernel writes C. */
    d = desc(&prob, &alpha, &beta_half, 0);
    for (int m = 0; m < 3; m++) {
        static const enum amp_mode routed[] = {AMP_MODE_FP16, AMP_MODE_BF16,
                                               AMP_MODE_TF32};

        assert_int_equal(amp_gemm_prepare(dev, &d, routed[m], AMP_MODE_FP16,
                                          1 << 24, 0, &run),
                         AMP_OK);
        assert_int_equal(run.nsteps, 1);
        assert_int_equal(run.steps[0].batch_kind, AMP_BATCH_ARRAY);
        assert_true(run.steps[0].c != prob.pc);
        assert_int_equal(run.steps[0].ldc, M);
        assert_int_equal(run.steps[0].writes_caller_c, 0);
        assert_int_equal(run.steps[0].scalars_on_device, 0);
        assert_true(*run.steps[0].alpha == 1.0f &&
                    *run.steps[0].beta == 0.0f);
        amp_gemm_abandon(&run);
    }
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
}

/* Scaling moves FP16's window: A near 1e6 (beyond 65504) and B near 1e-9
 * (below 2^-24) still meet the FP16 bound, and fp16x3 the FP32 one. */
static void
test_range_beyond_fp16(void **state)
{
    static float c[BATCH * SC];
    const float alpha = 1.0f, beta = 0.5f;
    double ratio, err;
    int i;

    problem_default(&prob, AMP_BATCH_NONE);
    for (i = 0; i < SA; i++)
        prob.a[i] *= 1e6f;
    for (i = 0; i < SB; i++)
        prob.b[i] *= 1e-11f;
    fill(prob.c0, SC, 1e-3f);
    upload(&prob);
    run_mode(&prob, AMP_MODE_FP16, AMP_MODE_FP16, &alpha, &beta, 0, c);
    ratio = bound_ratio(&prob, c, alpha, beta, U16, &err);
    print_message("fp16 out of range: error/bound %.3f\n", ratio);
    assert_true(ratio <= 1.0);
    run_mode(&prob, AMP_MODE_FP16X3, AMP_MODE_FP16, &alpha, &beta, 0, c);
    ratio = bound_ratio(&prob, c, alpha, beta, 0.0, &err);
    print_message("fp16x3 out of range: error/(2k u32) %.3f\n", ratio);
    assert_true(ratio <= 4.0);
}

/* tf32x3 keeps FP32's range: rows of op(A) near 1e30 and 1e-30 (2^100
 * and 2^-100, both in one tensor, beyond any FP16 scale), B near 1e-30
 * or 1e30 by column, still meet FP32's own bound, where fp16x3 cannot;
 * and values near FLT_MAX split without overflow. */
static void
test_tf32x3_full_range(void **state)
{
    static float c[BATCH * SC];
    const float alpha = 1.0f, beta = 0.5f;
    double ratio, err;
    int b, i, j, q;

    (void)state;
    problem_default(&prob, AMP_BATCH_STRIDED);
    for (b = 0; b < BATCH; b++) {
        for (i = 0; i < M; i++) {
            float s = i % 2 ? 0x1p100f : 0x1p-100f;

            for (q = 0; q < K; q++)
                prob.a[b * SA + i * LDA + q] *= s;
            for (j = 0; j < N; j++)
                prob.c0[b * SC + j * LDC + i] *= s;
        }
        for (j = 0; j < N; j++) {
            float s = j % 3 ? 0x1p-20f : 0x1p-26f;

            for (q = 0; q < K; q++)
                prob.b[b * SB + j * LDB + q] *= s;
            for (i = 0; i < M; i++)
                prob.c0[b * SC + j * LDC + i] *= s;
        }
    }
    upload(&prob);
    run_mode(&prob, AMP_MODE_TF32X3, AMP_MODE_FP16, &alpha, &beta, 0, c);
    ratio = bound_ratio(&prob, c, alpha, beta, 0.0, &err);
    print_message("tf32x3 over 1e-30..1e30: error/(2k u32) %.3f\n", ratio);
    assert_true(ratio <= 1.0);
    run_mode(&prob, AMP_MODE_FP16X3, AMP_MODE_FP16, &alpha, &beta, 0, c);
    ratio = bound_ratio(&prob, c, alpha, beta, 0.0, &err);
    print_message("fp16x3 over 1e-30..1e30: error/(2k u32) %.3g\n", ratio);
    assert_true(ratio > 4.0);

    /* Near FLT_MAX: hi rounds toward zero rather than to Inf. */
    problem_default(&prob, AMP_BATCH_NONE);
    memset(prob.a, 0, sizeof prob.a);
    memset(prob.b, 0, sizeof prob.b);
    prob.a[0] = 3.4028235e38f;  /* FLT_MAX: op(A)(0, 0) */
    prob.a[1] = -3.3e38f;       /* op(A)(0, 1) */
    prob.b[0] = 0.75f;          /* B(0, 0) */
    prob.b[1] = 0.125f;         /* B(1, 0) */
    upload(&prob);
    run_mode(&prob, AMP_MODE_TF32X3, AMP_MODE_FP16, &alpha, &beta, 0, c);
    ratio = bound_ratio(&prob, c, alpha, beta, 0.0, &err);
    assert_true(isfinite(c[0]));
    assert_true(ratio <= 1.0);
}

/* NaN and Inf in A or B come out where FP32 puts them. */
static void
test_nan_inf_positions(void **state)
{
    static const enum amp_mode modes[] = {
        AMP_MODE_FP16, AMP_MODE_BF16, AMP_MODE_TF32, AMP_MODE_FP16X3,
        AMP_MODE_TF32X3,
    };
    static float c32[BATCH * SC], c[BATCH * SC];
    const float alpha = 1.0f, beta = 1.0f;
    int i, m;

    problem_default(&prob, AMP_BATCH_STRIDED);
    prob.a[3 * LDA + 4] = NAN;          /* row 3 of C */
    prob.b[SB + 5 * LDB + 9] = INFINITY; /* column 5 of C_1 */
    prob.a[2 * SA + 7 * LDA + 1] = -INFINITY;
    /* Row 7 of C_2 is -Inf: the k it meets in B_2 is 1 there, a TF32
     * value (tf32x3's lo 0: no NaN of -Inf times 0). */
    for (i = 0; i < N; i++)
        prob.b[2 * SB + i * LDB + 1] = 1.0f;
    upload(&prob);
    run_mode(&prob, AMP_MODE_FP32, AMP_MODE_FP16, &alpha, &beta, 0, c32);
    for (m = 0; m < 5; m++) {
        int nan_count = 0;

        run_mode(&prob, modes[m], AMP_MODE_FP16, &alpha, &beta, 0, c);
        for (i = 0; i < BATCH * SC; i++) {
            assert_int_equal(isnan(c[i]) != 0, isnan(c32[i]) != 0);
            assert_int_equal(isinf(c[i]) != 0, isinf(c32[i]) != 0);
            if (isinf(c32[i]))
                assert_int_equal(signbit(c[i]), signbit(c32[i]));
            nan_count += isnan(c32[i]) != 0;
        }
        assert_true(nan_count >= N);
    }
}

/* beta == 0: NaN in C does not leak, with host or device scalars. */
static void
test_beta_zero_ignores_c(void **state)
{
    static const enum amp_mode modes[] = {
        AMP_MODE_FP16, AMP_MODE_BF16, AMP_MODE_TF32, AMP_MODE_FP16X3,
        AMP_MODE_SHADOW, AMP_MODE_TF32X3,
    };
    static float c[BATCH * SC];
    const float alpha = 2.0f, beta = 0.0f, values[2] = {2.0f, 0.0f};
    const float *dev_alpha = (const float *)(uintptr_t)prob.scalars;
    const float *dev_beta = (const float *)(uintptr_t)(prob.scalars + 4);
    double err;
    int i, m, on_device;

    problem_default(&prob, AMP_BATCH_ARRAY);
    for (i = 0; i < BATCH * SC; i++)
        prob.c0[i] = NAN;
    upload(&prob);
    assert_int_equal(cuMemcpyHtoD(prob.scalars, values, sizeof values),
                     CUDA_SUCCESS);
    for (on_device = 0; on_device < 2; on_device++)
        for (m = 0; m < 6; m++) {
            run_mode(&prob, modes[m], AMP_MODE_FP16X3,
                     on_device ? dev_alpha : &alpha,
                     on_device ? dev_beta : &beta, on_device, c);
            assert_true(bound_ratio(&prob, c, alpha, beta, UBF16, &err) <=
                        1.0);
        }
    amp_harvest(1);
}

/* Device pointer mode: alpha and beta are read on the device by the
 * queued work (a host read would fault); the results meet the bounds. */
static void
test_device_scalars(void **state)
{
    static float c[BATCH * SC];
    const float values[2] = {-3.0f, 0.25f};
    const float *alpha = (const float *)(uintptr_t)prob.scalars;
    const float *beta = (const float *)(uintptr_t)(prob.scalars + 4);
    double err, err32;

    problem_default(&prob, AMP_BATCH_STRIDED);
    assert_int_equal(cuMemcpyHtoD(prob.scalars, values, sizeof values),
                     CUDA_SUCCESS);
    run_mode(&prob, AMP_MODE_FP16, AMP_MODE_FP16, alpha, beta, 1, c);
    assert_true(bound_ratio(&prob, c, values[0], values[1], U16, &err) <=
                1.0);
    run_mode(&prob, AMP_MODE_FP32, AMP_MODE_FP16, alpha, beta, 1, c);
    bound_ratio(&prob, c, values[0], values[1], 0.0, &err32);
    run_mode(&prob, AMP_MODE_FP16X3, AMP_MODE_FP16, alpha, beta, 1, c);
    bound_ratio(&prob, c, values[0], values[1], 0.0, &err);
    assert_true(err <= 4.0 * err32);
    run_mode(&prob, AMP_MODE_TF32X3, AMP_MODE_FP16, alpha, beta, 1, c);
    assert_true(bound_ratio(&prob, c, values[0], values[1], 0.0, &err) <=
                1.0);
}

/* Shadow: C holds exactly the FP32 result, and the harvest reports the
 * candidate's errors against it, as measured here from a candidate run. */
static void
test_shadow(void **state)
{
    static const enum amp_mode candidates[] = {
        AMP_MODE_FP16, AMP_MODE_BF16, AMP_MODE_TF32, AMP_MODE_FP16X3,
        AMP_MODE_TF32X3,
    };
    static float c32[BATCH * SC], c[BATCH * SC], cand[BATCH * SC];
    const float alpha = 0.5f, beta = 2.0f;
    int kind, m, i;

    for (kind = AMP_BATCH_NONE; kind <= AMP_BATCH_ARRAY; kind++) {
        problem_default(&prob, (enum amp_batch)kind);
        run_mode(&prob, AMP_MODE_FP32, AMP_MODE_FP16, &alpha, &beta, 0, c32);
        for (m = 0; m < 5; m++) {
            float max_abs = 0.0f, max_ref = 0.0f;

            run_mode(&prob, candidates[m], AMP_MODE_FP16, &alpha, &beta, 0,
                     cand);
            for (i = 0; i < BATCH * SC; i++) {
                float e = fabsf(cand[i] - c32[i]);

                if (e > max_abs)
                    max_abs = e;
                if (fabsf(c32[i]) > max_ref)
                    max_ref = fabsf(c32[i]);
            }
            amp_stats_reset();
            run_mode(&prob, AMP_MODE_SHADOW, candidates[m], &alpha, &beta, 0,
                     c);
            assert_memory_equal(c, c32, sizeof c);
            assert_int_equal(amp_harvest(1), 1);
            assert_int_equal(amp_harvest(1), 0);
            assert_int_equal(stats.shadow_calls, 1);
            print_message("shadow:%s %s: max abs %.3g, max rel %.3g\n",
                          amp_mode_name(candidates[m]), kind_names[kind],
                          stats.shadow_max_abs, stats.shadow_max_rel);
            assert_true(stats.shadow_max_abs == max_abs);
            assert_true(stats.shadow_max_rel == (double)max_abs / max_ref);
            assert_int_equal(stats.shadow_nonfinite, 0);
            if (candidates[m] != AMP_MODE_FP16X3 &&
                candidates[m] != AMP_MODE_TF32X3)
                assert_true(max_abs > 0.0);
        }
    }
}

/* Shadow counts candidates that are not finite where FP32 is. */
static void
test_shadow_nonfinite(void **state)
{
    static float c[BATCH * SC];
    const float alpha = 1.0f, beta = 0.0f;

    /* 3.4e38 is finite in FP32 and rounds to Inf in BF16: C(0, 0) is
     * 1.7e38 in FP32 and Inf in the candidate. */
    problem_default(&prob, AMP_BATCH_NONE);
    memset(prob.a, 0, sizeof prob.a);
    memset(prob.b, 0, sizeof prob.b);
    prob.a[0] = 3.4e38f;  /* A(0, 0) = op(A)(0, 0) */
    prob.b[0] = 0.5f;     /* B(0, 0) */
    upload(&prob);
    amp_stats_reset();
    run_mode(&prob, AMP_MODE_SHADOW, AMP_MODE_BF16, &alpha, &beta, 0, c);
    assert_true(c[0] == prob.a[0] * 0.5f);
    assert_int_equal(amp_harvest(1), 1);
    /* C(0, j) for j > 0 is 3.4e38 * 0: 0 in FP32, Inf * 0 = NaN in BF16. */
    assert_int_equal(stats.shadow_nonfinite, N);
}

/* During stream capture shadow is unavailable (the caller runs FP32),
 * while fp16x3 captures whole and replays correctly. */
static void
test_capture(void **state)
{
    static float c[BATCH * SC], c_before[BATCH * SC];
    const float alpha = 1.0f, beta = 1.0f;
    struct amp_gemm_desc d;
    struct amp_gemm_run run;
    CUgraph graph;
    CUgraphExec exec;
    double err, err32;

    problem_default(&prob, AMP_BATCH_STRIDED);
    run_mode(&prob, AMP_MODE_FP32, AMP_MODE_FP16, &alpha, &beta, 0, c);
    bound_ratio(&prob, c, alpha, beta, 0.0, &err32);
    assert_int_equal(cuMemcpyHtoD(prob.dc, prob.c0, sizeof prob.c0),
                     CUDA_SUCCESS);
    d = desc(&prob, &alpha, &beta, 0);
    assert_int_equal(
        cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL),
        CUDA_SUCCESS);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_SHADOW,
                                      AMP_MODE_FP16, 1 << 24, 0, &run),
                     AMP_ERR_UNAVAILABLE);
    assert_int_equal(convert(&d, AMP_MODE_FP16X3, AMP_MODE_FP16, &run),
                     AMP_OK);
    assert_int_equal(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(c_before, prob.dc, sizeof c_before),
                     CUDA_SUCCESS);
    assert_memory_equal(c_before, prob.c0, sizeof c_before);
    assert_int_equal(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
    assert_int_equal(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(c, prob.dc, sizeof c), CUDA_SUCCESS);
    bound_ratio(&prob, c, alpha, beta, 0.0, &err);
    assert_true(err <= 4.0 * err32);
    assert_int_equal(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    assert_int_equal(cuGraphDestroy(graph), CUDA_SUCCESS);
}

static void
test_scratch_cap_and_modes(void **state)
{
    const float alpha = 1.0f, beta = 0.0f;
    struct amp_gemm_desc d;
    struct amp_gemm_run run;
    size_t bytes;

    problem_default(&prob, AMP_BATCH_ARRAY);
    d = desc(&prob, &alpha, &beta, 0);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_FP16X3,
                                      AMP_MODE_FP16, 1 << 24, 0, &run),
                     AMP_OK);
    bytes = run.scratch_bytes;
    amp_gemm_abandon(&run);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_FP16X3,
                                      AMP_MODE_FP16, bytes - 1, 0, &run),
                     AMP_ERR_TOO_BIG);
    assert_true(run.scratch == 0);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_FP32, AMP_MODE_FP16,
                                      1 << 24, 0, &run),
                     AMP_ERR_UNAVAILABLE);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_SHADOW,
                                      AMP_MODE_SHADOW, 1 << 24, 0, &run),
                     AMP_ERR_UNAVAILABLE);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
}

/* Scratch holds whole FP32 results: shadow's candidate, fp16x3's two
 * partial sums. Parts are 256-byte aligned, so a part one float short
 * hides in the padding unless batch * m * n is 1 more than a multiple of
 * 64; at those shapes every mode converts, meets its bound, and its
 * scratch has room for its FP32 results. */
static void
test_scratch_at_odd_shapes(void **state)
{
    static const struct {
        enum amp_batch kind;
        int batch, m, n;
    } shapes[] = {
        {AMP_BATCH_NONE, 1, 5, 13},    /* 65 */
        {AMP_BATCH_NONE, 1, 1, 1},     /* 1 */
        {AMP_BATCH_STRIDED, 5, 1, 13}, /* 65 */
        {AMP_BATCH_ARRAY, 3, 1, 43},   /* 129 */
    };
    static const struct {
        enum amp_mode mode, candidate;
        double u;
        int results;                   /* FP32 results held in scratch */
    } modes[] = {
        {AMP_MODE_FP16, AMP_MODE_FP16, U16, 0},
        {AMP_MODE_BF16, AMP_MODE_FP16, UBF16, 0},
        {AMP_MODE_TF32, AMP_MODE_FP16, UTF32, 0},
        {AMP_MODE_FP16X3, AMP_MODE_FP16, U32, 2},
        {AMP_MODE_SHADOW, AMP_MODE_FP16, 0.0, 1},
        {AMP_MODE_SHADOW, AMP_MODE_BF16, 0.0, 1},
        {AMP_MODE_SHADOW, AMP_MODE_TF32, 0.0, 1},
        {AMP_MODE_SHADOW, AMP_MODE_FP16X3, 0.0, 3},
        {AMP_MODE_TF32X3, AMP_MODE_FP16, 0.0, 2},
        {AMP_MODE_SHADOW, AMP_MODE_TF32X3, 0.0, 3},
    };
    enum { KO = 7, MAXE = 1024 };
    const float alpha = 1.25f, beta = 0.5f;
    float a[MAXE], b[MAXE], c0[MAXE], c[MAXE];
    CUdeviceptr da, db, dc, pa, pb, pc;

    assert_int_equal(cuMemAlloc(&da, sizeof a), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&db, sizeof b), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&dc, sizeof c0), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&pa, 8 * 8), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&pb, 8 * 8), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&pc, 8 * 8), CUDA_SUCCESS);
    rng_state = 777;
    fill(a, MAXE, 1.0f);
    fill(b, MAXE, 1.0f);
    fill(c0, MAXE, 1.0f);
    assert_int_equal(cuMemcpyHtoD(da, a, sizeof a), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(db, b, sizeof b), CUDA_SUCCESS);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int batch = shapes[s].batch, m = shapes[s].m, n = shapes[s].n;
        int64_t sa = KO * m, sb = KO * n, sc = m * n;
        CUdeviceptr ptrs[3][8];
        struct amp_gemm_desc d = {
            .api = "test", .stats = &stats,
            .transa = AMP_OP_T, .transb = AMP_OP_N, .ops_valid = 1,
            .m = m, .n = n, .k = KO, .lda = KO, .ldb = KO, .ldc = m,
            .batch_kind = shapes[s].kind, .batch = batch,
            .stride_a = sa, .stride_b = sb, .stride_c = sc,
            .a = da, .b = db, .c = dc,
            .alpha = &alpha, .beta = &beta, .stream = stream,
        };

        assert_true(batch <= 8 && batch * sa <= MAXE && batch * sb <= MAXE);
        if (shapes[s].kind == AMP_BATCH_ARRAY) {
            for (int i = 0; i < batch; i++) {
                ptrs[0][i] = da + (CUdeviceptr)(i * sa * 4);
                ptrs[1][i] = db + (CUdeviceptr)(i * sb * 4);
                ptrs[2][i] = dc + (CUdeviceptr)(i * sc * 4);
            }
            assert_int_equal(cuMemcpyHtoD(pa, ptrs[0], sizeof ptrs[0]),
                             CUDA_SUCCESS);
            assert_int_equal(cuMemcpyHtoD(pb, ptrs[1], sizeof ptrs[1]),
                             CUDA_SUCCESS);
            assert_int_equal(cuMemcpyHtoD(pc, ptrs[2], sizeof ptrs[2]),
                             CUDA_SUCCESS);
            d.a = pa;
            d.b = pb;
            d.c = pc;
        }
        issue_m = m;
        issue_n = n;
        issue_k_call = KO;
        for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
            struct amp_gemm_run run;
            size_t result = (size_t)batch * m * n * 4;
            double bound = 2.0 * modes[i].u + 2.0 * KO * U32;

            assert_int_equal(cuMemcpyHtoD(dc, c0, sizeof c0), CUDA_SUCCESS);
            if (convert(&d, modes[i].mode, modes[i].candidate, &run) !=
                AMP_OK)
                fail_msg("%s:%s, batch %d of %dx%d: the call failed",
                         amp_mode_name(modes[i].mode),
                         amp_mode_name(modes[i].candidate), batch, m, n);
            amp_harvest(1);
            assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
            assert_int_equal(cuMemcpyDtoH(c, dc, sizeof c), CUDA_SUCCESS);
            assert_true(run.scratch_bytes >= modes[i].results * result);
            for (int e = 0; e < batch * m * n; e++) {
                int bi = e / (m * n), col = e % (m * n) / m, row = e % m;
                double ref = 0.0, mag = 0.0;

                for (int q = 0; q < KO; q++) {
                    double t = (double)a[bi * sa + row * KO + q] *
                               (double)b[bi * sb + col * KO + q];

                    ref += t;
                    mag += fabs(t);
                }
                ref = alpha * ref + beta * (double)c0[e];
                mag = fabs(alpha) * mag + fabs(beta) * fabs((double)c0[e]);
                if (!(fabs((double)c[e] - ref) <= bound * mag))
                    fail_msg("%s:%s, batch %d of %dx%d: element %d is %g, "
                             "not %g", amp_mode_name(modes[i].mode),
                             amp_mode_name(modes[i].candidate), batch, m, n,
                             e, (double)c[e], ref);
            }
            /* Past the batch's results: untouched. */
            assert_memory_equal(c + batch * m * n, c0 + batch * m * n,
                                (MAXE - batch * m * n) * 4);
        }
    }
    issue_m = M;
    issue_n = N;
    issue_k_call = K;
    cuMemFree(da);
    cuMemFree(db);
    cuMemFree(dc);
    cuMemFree(pa);
    cuMemFree(pb);
    cuMemFree(pc);
}

/* ---- Delayed scaling ------------------------------------------------------ */

/* A compact problem of its own shape (so its first call finds no record):
 * op(A) = A^T, A stored DK x DM, B stored DK x DN. */
#define DM 256
#define DN 192
#define DK 320
#define DNA (DK * DM)
#define DNB (DK * DN)

static struct {
    float a[DNA], b[DNB], c[DM * DN], want[DM * DN];
    uint16_t ha[DNA], hb[DNB];
    CUdeviceptr da, db, dc, dha, dhb;
} dly;

static float
host_absmax(const float *x, int n)
{
    float best = 0.0f;
    int i;

    for (i = 0; i < n; i++)
        if (isfinite(x[i]) && fabsf(x[i]) > best)
            best = fabsf(x[i]);
    return best;
}

/* The exact-scale path, done here: the maxima on the host, the FP16 copies
 * at the scales amp_gemm_scalars_finish() gives, the FP16 GEMM with the
 * compensated alpha (host alpha 1, beta 0), into dly.want. */
static void
delayed_reference(void)
{
    struct amp_gemm_scalars s = {
        .absmax_a = amp_f32_bits(host_absmax(dly.a, DNA)),
        .absmax_b = amp_f32_bits(host_absmax(dly.b, DNB)),
    };
    const float zero = 0.0f;
    int i;

    amp_gemm_scalars_finish(&s, 1.0f, 0.0f);
    for (i = 0; i < DNA; i++)
        dly.ha[i] = amp_f32_to_f16(dly.a[i] * s.scale_a);
    for (i = 0; i < DNB; i++)
        dly.hb[i] = amp_f32_to_f16(dly.b[i] * s.scale_b);
    assert_int_equal(cuMemcpyHtoD(dly.dha, dly.ha, sizeof dly.ha),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(dly.dhb, dly.hb, sizeof dly.hb),
                     CUDA_SUCCESS);
    assert_int_equal(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(
        cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, DM, DN, DK, &s.alpha,
                     (const void *)(uintptr_t)dly.dha, CUDA_R_16F, DK,
                     (const void *)(uintptr_t)dly.dhb, CUDA_R_16F, DK, &zero,
                     (void *)(uintptr_t)dly.dc, CUDA_R_32F, DM,
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(dly.want, dly.dc, sizeof dly.want),
                     CUDA_SUCCESS);
}

/* The problem's call as the hook describes it: C = A^T B, host alpha 1
 * and beta 0. */
static struct amp_gemm_desc
delayed_desc(void)
{
    static const float alpha = 1.0f, beta = 0.0f;

    return (struct amp_gemm_desc){
        .api = "test", .stats = &stats, .transa = AMP_OP_T,
        .transb = AMP_OP_N, .ops_valid = 1, .m = DM, .n = DN, .k = DK,
        .lda = DK, .ldb = DK, .ldc = DM, .batch_kind = AMP_BATCH_NONE,
        .batch = 1, .a = dly.da, .b = dly.db, .c = dly.dc, .alpha = &alpha,
        .beta = &beta, .stream = stream,
    };
}

/* One fp16 call of the problem as the hook makes it; C into dly.c. Returns
 * the bytes the emulator charged the work amp_gemm_prepare() queued (the
 * scratch allocation is free of time; `ops` is the number of operations
 * it queued, each charged the launch latency besides its bytes). */
static double
delayed_call(int ops, int *delayed)
{
    struct amp_gemm_desc d = delayed_desc();
    const struct emu_gpu *g = emu_gpu();
    struct amp_gemm_run run;
    CUevent e0, e1;
    float ms;
    int i;

    assert_int_equal(cuMemcpyHtoD(dly.da, dly.a, sizeof dly.a),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(dly.db, dly.b, sizeof dly.b),
                     CUDA_SUCCESS);
    assert_int_equal(cuEventCreate(&e0, 0), CUDA_SUCCESS);
    assert_int_equal(cuEventCreate(&e1, 0), CUDA_SUCCESS);
    assert_int_equal(cuEventRecord(e0, stream), CUDA_SUCCESS);
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_FP16, AMP_MODE_FP16,
                                      1 << 24, 0, &run),
                     AMP_OK);
    assert_int_equal(cuEventRecord(e1, stream), CUDA_SUCCESS);
    *delayed = run.delayed;
    for (i = 0; i < run.nsteps; i++)
        assert_int_equal(issue_dims(&run.steps[i], DM, DN, DK),
                         CUBLAS_STATUS_SUCCESS);
    assert_int_equal(amp_gemm_finish(&run), AMP_OK);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuEventElapsedTime(&ms, e0, e1), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(dly.c, dly.dc, sizeof dly.c),
                     CUDA_SUCCESS);
    cuEventDestroy(e0);
    cuEventDestroy(e1);
    for (i = 0; i < DM * DN; i++)
        assert_true(isfinite(dly.c[i]));
    /* ms = sum over ops of (latency + bytes / effective bandwidth), and
     * e1's record */
    return ((double)ms * 1e6 - ops * g->launch_latency_us * 1e3 -
            emu_event_record_ns()) *
           g->bandwidth_tbs * 1e3 * g->mem_efficiency;
}

static void delayed_fill(float scale_a, float scale_b);

/* Two calls at the key queued before either's steps (two threads on one
 * stream may do that): each call's scalars are its own, so each gives its
 * own exact-path bits, the second's A 1e4 times larger than the first's. */
static void
delayed_interleaved(void)
{
    static float want1[DM * DN], a2[DNA], c2[DM * DN];
    struct amp_gemm_desc d = delayed_desc(), d2 = d;
    struct amp_gemm_run run1, run2;
    CUdeviceptr da2, dc2;
    int i;

    delayed_fill(1.0f, 100.0f);
    delayed_reference();
    memcpy(want1, dly.want, sizeof want1);
    for (i = 0; i < DNA; i++)
        a2[i] = dly.a[i] * 1e4f;
    assert_int_equal(cuMemcpyHtoD(dly.da, dly.a, sizeof dly.a),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(dly.db, dly.b, sizeof dly.b),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&da2, sizeof a2), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&dc2, sizeof c2), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(da2, a2, sizeof a2), CUDA_SUCCESS);
    d2.a = da2;
    d2.c = dc2;
    assert_int_equal(amp_gemm_prepare(dev, &d, AMP_MODE_FP16, AMP_MODE_FP16,
                                      1 << 24, 0, &run1),
                     AMP_OK);
    assert_int_equal(amp_gemm_prepare(dev, &d2, AMP_MODE_FP16,
                                      AMP_MODE_FP16, 1 << 24, 0, &run2),
                     AMP_OK);
    assert_true(run1.delayed && run2.delayed);
    for (i = 0; i < run1.nsteps; i++)
        assert_int_equal(issue_dims(&run1.steps[i], DM, DN, DK),
                         CUBLAS_STATUS_SUCCESS);
    assert_int_equal(amp_gemm_finish(&run1), AMP_OK);
    for (i = 0; i < run2.nsteps; i++)
        assert_int_equal(issue_dims(&run2.steps[i], DM, DN, DK),
                         CUBLAS_STATUS_SUCCESS);
    assert_int_equal(amp_gemm_finish(&run2), AMP_OK);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(dly.c, dly.dc, sizeof dly.c),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(c2, dc2, sizeof c2), CUDA_SUCCESS);
    assert_memory_equal(dly.c, want1, sizeof want1);
    memcpy(dly.a, a2, sizeof a2);
    delayed_reference();
    assert_memory_equal(c2, dly.want, sizeof c2);
    cuMemFree(da2);
    cuMemFree(dc2);
}

static void
delayed_fill(float scale_a, float scale_b)
{
    rng_state = 777;
    fill(dly.a, DNA, scale_a);
    fill(dly.b, DNB, scale_b);
}

/* The first call at a (site, shape, stream) takes the two passes and gives
 * the exact-scale path's bits; the next ones cast in one pass (6 bytes per
 * element, read once and written once, besides the record's page) with
 * the previous call's scales. Data 1e4 times larger than the last call's
 * (the delayed scale would overflow) and 1e-4 times smaller (it would
 * lose bits) are cast again at the exact scale: the exact path's bits, no
 * infinity. Data 8 times smaller keeps the delayed scale (within
 * AMP_DELAYED_SLACK) and, every value staying an FP16 normal, the exact
 * path's bits too, with no second pass. Two calls queued before either's
 * steps keep their own scalars. */
static void
test_delayed_scaling(void **state)
{
    const double elems = (double)(DNA + DNB), page = 4096.0;
    double bytes;
    int delayed;

    (void)state;
    assert_int_equal(cuMemAlloc(&dly.da, sizeof dly.a), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&dly.db, sizeof dly.b), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&dly.dc, sizeof dly.c), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&dly.dha, sizeof dly.ha), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&dly.dhb, sizeof dly.hb), CUDA_SUCCESS);

    /* First call: memset, maxima, cast; 4 + 4 + 2 bytes per element. */
    delayed_fill(1.0f, 100.0f);
    delayed_reference();
    bytes = delayed_call(3, &delayed);
    assert_false(delayed);
    assert_memory_equal(dly.c, dly.want, sizeof dly.c);
    assert_true(bytes >= 10.0 * elems);

    /* Steady state: one read, one write. */
    bytes = delayed_call(2, &delayed);
    assert_true(delayed);
    assert_memory_equal(dly.c, dly.want, sizeof dly.c);
    assert_true(bytes >= 6.0 * elems);
    assert_true(bytes <= 6.0 * elems + 4.0 * page);

    /* A grew 1e4 times: A is cast again, B's delayed scale stands. */
    delayed_fill(1e4f, 100.0f);
    delayed_reference();
    bytes = delayed_call(2, &delayed);
    assert_true(delayed);
    assert_memory_equal(dly.c, dly.want, sizeof dly.c);
    assert_true(bytes >= 6.0 * elems + 6.0 * DNA);
    assert_true(bytes <= 6.0 * elems + 6.0 * DNA + 4.0 * page);

    /* A back at 1 (1e-4 of the last call's): cast again. */
    delayed_fill(1.0f, 100.0f);
    delayed_reference();
    bytes = delayed_call(2, &delayed);
    assert_memory_equal(dly.c, dly.want, sizeof dly.c);
    assert_true(bytes >= 6.0 * elems + 6.0 * DNA);

    /* Both 8 times smaller: the delayed scales stand, no second pass. */
    delayed_fill(1.0f / 8.0f, 100.0f / 8.0f);
    delayed_reference();
    bytes = delayed_call(2, &delayed);
    assert_memory_equal(dly.c, dly.want, sizeof dly.c);
    assert_true(bytes <= 6.0 * elems + 4.0 * page);

    delayed_interleaved();

    cuMemFree(dly.da);
    cuMemFree(dly.db);
    cuMemFree(dly.dc);
    cuMemFree(dly.dha);
    cuMemFree(dly.dhb);
}

/* ---- Failures, in a fresh child per injected fault ------------------------- */

/* Runs scenario "mode/candidate/kind" once with the injected fault. Exits
 * 0 when a failure happened and held (C untouched unless shadow, free
 * memory back, no slot held), 1 when no fault fired, higher when a rule
 * broke. */
static int
child(const char *scenario)
{
    static float c[BATCH * SC];
    int mode, candidate, kind;
    const float alpha = 1.25f, beta = 0.5f;
    struct amp_gemm_desc d;
    struct amp_gemm_run run;
    size_t free_before, free_after, total;
    amp_devptr record;
    enum amp_status st;
    int fresh;

    if (sscanf(scenario, "%d/%d/%d", &mode, &candidate, &kind) != 3 ||
        setup(NULL) != 0)
        return 10;
    problem_default(&prob, (enum amp_batch)kind);
    d = desc(&prob, &alpha, &beta, 0);
    /* The context's records (device memory made on first use and kept
     * for the context's life, as the slots are) exist before: what is
     * counted is the call's own memory. */
    if (amp_dev_record(dev, 1, NULL, AMP_CAPTURE_ASK,
                       &record, &fresh) != AMP_OK)
        return 13;
    if (cuStreamSynchronize(stream) || cuMemGetInfo(&free_before, &total))
        return 11;
    st = convert(&d, (enum amp_mode)mode, (enum amp_mode)candidate, &run);
    if (cuStreamSynchronize(stream) || cuMemGetInfo(&free_after, &total) ||
        cuMemcpyDtoH(c, prob.dc, sizeof c))
        return 12;
    if (free_after != free_before)
        return 2;
    amp_harvest(1);
    if (st == AMP_OK)
        return 1;
    if (mode != AMP_MODE_SHADOW && memcmp(c, prob.c0, sizeof c) != 0)
        return 3;
    return 0;
}

/* Fails every launch, the allocation and every vendor step in turn (the
 * step also after writing part of its output); the call makes `launches`
 * kernel launches. beta is 0.5: every mode has scratch (fp16, bf16 and
 * tf32 route their result through it). */
static void
check_failures(enum amp_mode mode, enum amp_mode candidate, int kind,
               const char *step_api, int launches)
{
    char scenario[32], fault[64];
    int n, rc;

    snprintf(scenario, sizeof scenario, "%d/%d/%d", mode, candidate, kind);
    assert_int_equal(amp_test_run_child(scenario, "alloc-async:1"), 0);
    for (n = 1; n < 20; n++) {
        snprintf(fault, sizeof fault, "launch:%d", n);
        rc = amp_test_run_child(scenario, fault);
        if (rc == 1)
            break;
        assert_int_equal(rc, 0);
    }
    assert_true(n < 20);
    assert_int_equal(n - 1, launches);
    snprintf(fault, sizeof fault, "%s:1", step_api);
    assert_int_equal(amp_test_run_child(scenario, fault), 0);
    snprintf(fault, sizeof fault, "%s:1:partial", step_api);
    assert_int_equal(amp_test_run_child(scenario, fault), 0);
    snprintf(fault, sizeof fault, "%s:3", step_api);
    assert_int_equal(amp_test_run_child(scenario, fault),
                     mode == AMP_MODE_FP16X3 ? 0 : 1);
}

static void
test_failures_leave_nothing(void **state)
{
    static const struct {
        enum amp_mode mode, candidate;
        enum amp_batch kind;
        const char *step_api;
        int launches;
    } cases[] = {
        /* maxima and scales, casts, C from the result */
        {AMP_MODE_FP16, AMP_MODE_FP16, AMP_BATCH_NONE, "cublasGemmEx", 3},
        /* maxima and scales, splits, final sum */
        {AMP_MODE_FP16X3, AMP_MODE_FP16, AMP_BATCH_NONE, "cublasGemmEx", 3},
        {AMP_MODE_FP16X3, AMP_MODE_FP16, AMP_BATCH_ARRAY,
         "cublasGemmStridedBatchedEx", 3},
        /* splits, C from the result */
        {AMP_MODE_TF32X3, AMP_MODE_FP16, AMP_BATCH_NONE, "cublasGemmEx", 2},
        {AMP_MODE_TF32X3, AMP_MODE_FP16, AMP_BATCH_ARRAY,
         "cublasGemmStridedBatchedEx", 2},
        /* casts with the pointer arrays, result pointer array, C */
        {AMP_MODE_BF16, AMP_MODE_FP16, AMP_BATCH_ARRAY, "cublasGemmBatchedEx",
         3},
        /* C from the result */
        {AMP_MODE_TF32, AMP_MODE_FP16, AMP_BATCH_STRIDED,
         "cublasGemmStridedBatchedEx", 1},
        /* maxima and scales, casts, copy of C, errors */
        {AMP_MODE_SHADOW, AMP_MODE_FP16, AMP_BATCH_STRIDED,
         "cublasGemmStridedBatchedEx", 4},
        /* result pointer array, copy of C, errors */
        {AMP_MODE_SHADOW, AMP_MODE_TF32, AMP_BATCH_ARRAY,
         "cublasGemmBatchedEx", 3},
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof *cases; i++)
        check_failures(cases[i].mode, cases[i].candidate, cases[i].kind,
                       cases[i].step_api, cases[i].launches);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_within_bounds),
        cmocka_unit_test(test_step_layout),
        cmocka_unit_test(test_range_beyond_fp16),
        cmocka_unit_test(test_tf32x3_full_range),
        cmocka_unit_test(test_nan_inf_positions),
        cmocka_unit_test(test_beta_zero_ignores_c),
        cmocka_unit_test(test_device_scalars),
        cmocka_unit_test(test_shadow),
        cmocka_unit_test(test_shadow_nonfinite),
        cmocka_unit_test(test_capture),
        cmocka_unit_test(test_scratch_cap_and_modes),
        cmocka_unit_test(test_scratch_at_odd_shapes),
        cmocka_unit_test(test_failures_leave_nothing),
        cmocka_unit_test(test_delayed_scaling),
    };

    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child(argv[2]);
    return cmocka_run_group_tests(tests, setup, NULL);
}
