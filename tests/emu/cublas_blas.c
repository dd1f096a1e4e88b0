/* The emulated cuBLAS routines (every FP32 GEMM entry point: plain, _64,
 * Ex, SgemmEx, batched, strided and grouped; cublasSgemv_v2,
 * cublasSaxpy_v2 and their _64 twins): checked at call time like the real
 * library, then queued on the handle's stream and run by the emulator core
 * in stream order. */
#include <cublas_v2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_handle.h"
#include "cublas_types.h"
#include "emu.h"

/* ---- Scalars and elements ------------------------------------------------ */

/* alpha and beta: host values read at call time, or device addresses read
 * when the work runs (CUBLAS_POINTER_MODE_DEVICE); float, or __half for
 * the cublasHgemm family (`half`). */
struct scalars {
    int on_device;
    int has_beta;
    int half;
    float alpha, beta;
    CUdeviceptr alpha_at, beta_at;
};

/* The scalar at p, a float or a __half. */
static float
scalar_at(const void *p, int half)
{
    uint16_t h;
    float f;

    if (half) {
        memcpy(&h, p, sizeof h);
        return emu_f16_to_f32(h);
    }
    memcpy(&f, p, sizeof f);
    return f;
}

static void
take_scalars(struct scalars *s, cublasPointerMode_t mode, const void *alpha,
             const void *beta, int half)
{
    memset(s, 0, sizeof(*s));
    s->on_device = mode == CUBLAS_POINTER_MODE_DEVICE;
    s->has_beta = beta != NULL;
    s->half = half;
    if (s->on_device) {
        s->alpha_at = (CUdeviceptr)(uintptr_t)alpha;
        s->beta_at = (CUdeviceptr)(uintptr_t)beta;
        return;
    }
    s->alpha = scalar_at(alpha, half);
    if (s->has_beta)
        s->beta = scalar_at(beta, half);
}

/* Inside an op: the values of alpha and beta. Fails (-1) when a device
 * scalar is not in device memory. */
static int
read_scalars(const struct scalars *s, float *alpha, float *beta)
{
    const void *a, *b;

    *alpha = s->alpha;
    *beta = s->beta;
    if (!s->on_device)
        return 0;
    a = emu_dev_at(s->alpha_at, s->half ? sizeof(uint16_t) : sizeof(float));
    if (a == NULL)
        return -1;
    *alpha = scalar_at(a, s->half);
    if (s->has_beta) {
        b = emu_dev_at(s->beta_at,
                       s->half ? sizeof(uint16_t) : sizeof(float));
        if (b == NULL)
            return -1;
        *beta = scalar_at(b, s->half);
    }
    return 0;
}

/* Bytes spanned by a column-major rows x cols matrix (both >= 1). */
static size_t
matrix_bytes(int64_t rows, int64_t cols, int64_t ld, size_t elem)
{
    return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * elem;
}

/* Bytes spanned by a strided vector of len >= 1 elements. */
static size_t
vector_bytes(int64_t len, int64_t inc)
{
    size_t step = inc < 0 ? (size_t)(-inc) : (size_t)inc;

    return ((size_t)(len - 1) * step + 1) * sizeof(float);
}

/* Element i of a BLAS vector: a negative increment starts from the end. */
static size_t
vector_index(int64_t i, int64_t len, int64_t inc)
{
    if (inc >= 0)
        return (size_t)i * (size_t)inc;
    return (size_t)(len - 1 - i) * (size_t)(-inc);
}

static int
op_valid(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static int64_t
max1(int64_t v)
{
    return v > 1 ? v : 1;
}

/* ---- GEMM ---------------------------------------------------------------- */

/*
 * Every GEMM entry point (plain, _64, Ex, SgemmEx, batched, strided,
 * grouped, and the legacy cublasSgemm) becomes one gemm_call: a list of
 * groups, each a shape and scalars shared by `count` problems, and where
 * the problems' matrices are (a base and strides, or device arrays of
 * device pointers). One checked call becomes one queued op.
 */

/* Which table decides types and operand rounding. */
enum gemm_api {
    GEMM_API_SGEMM,     /* FP32 only; the handle's math mode applies */
    GEMM_API_SGEMM_EX,  /* float scalars, the SgemmEx type table */
    GEMM_API_EX,        /* GemmEx: compute type and algorithm apply */
    GEMM_API_HGEMM,     /* FP16 data and __half scalars (compute 16F) */
};

/* What the compute type and math mode make of the arithmetic. */
struct gemm_kind {
    enum operand_round round;
    enum emu_prec prec;
};

/* One group of problems that share shape and scalars. */
struct gemm_group {
    cublasOperation_t transa, transb;
    int64_t m, n, k;
    int64_t lda, ldb, ldc;
    const void *alpha, *beta;       /* as given: host or device addresses */
    int64_t count;                  /* problems in the group */
};

struct gemm_call {
    const char *name;
    enum gemm_api api;
    cudaDataType atype, btype, ctype;
    cublasComputeType_t compute;    /* GEMM_API_EX */
    cublasGemmAlgo_t algo;          /* GEMM_API_EX */
    int by_array;                   /* a, b, c: device arrays of pointers */
    int host_scalars_only;          /* grouped: device pointer mode refused */
    const void *a, *b;
    void *c;
    int64_t stride_a, stride_b, stride_c;   /* elements, strided batches */
    int64_t ngroups;
    const struct gemm_group *groups;
};

/* One problem as the host kernel sees it. */
struct gemm_problem {
    cublasOperation_t transa, transb;
    int64_t m, n, k;
    int64_t lda, ldb, ldc;
    cudaDataType atype, btype, ctype;
    enum operand_round round;
};

struct gemm_job_group {
    struct gemm_problem p;
    struct scalars s;
    int64_t count;
};

struct gemm_job {
    int by_array;
    CUdeviceptr a, b, c;
    int64_t stride_a, stride_b, stride_c;
    int partial;                    /* an injected fault: part of C only */
    int64_t ngroups;
    struct gemm_job_group groups[];
};

/* op(X), rows x cols, as a dense column-major FP32 matrix (leading
 * dimension rows), each element converted from its type and rounded as
 * the compute type says. Element (i, p) of op(X) sits at p + i * ld when
 * `trans`, else at i + p * ld. */
static void
gather_op(const void *src, cudaDataType type, int64_t ld, int trans,
          enum operand_round round, int64_t rows, int64_t cols, float *dst)
{
    for (int64_t p = 0; p < cols; p++)
        for (int64_t i = 0; i < rows; i++) {
            size_t idx = trans ? (size_t)p + (size_t)i * (size_t)ld
                               : (size_t)i + (size_t)p * (size_t)ld;
            dst[(size_t)i + (size_t)p * (size_t)rows] =
                round_operand(load(src, idx, type), round);
        }
}

static void
store_c(const struct gemm_problem *j, void *c, size_t idx, float alpha,
        float beta, float acc)
{
    float v = alpha * acc;

    /* beta == 0: C is not read, so NaN or Inf there cannot leak. */
    if (beta != 0.0f)
        v = v + beta * load(c, idx, j->ctype);
    store(c, idx, j->ctype, v);
}

/* C = beta * C, or zeros when beta == 0 (alpha == 0 or k == 0). */
static void
scale_c(const struct gemm_problem *j, void *c, float beta)
{
    for (int64_t col = 0; col < j->n; col++) {
        for (int64_t i = 0; i < j->m; i++) {
            size_t idx = (size_t)i + (size_t)col * (size_t)j->ldc;
            float v = beta == 0.0f ? 0.0f : beta * load(c, idx, j->ctype);
            store(c, idx, j->ctype, v);
        }
    }
}

/* C = alpha op(A) op(B) + beta C: the operands as the compute type rounds
 * them, their product in FP32 on the BLAS, then alpha and beta per element
 * (one rounded multiply, one rounded add) in C's type. FP32 operands that
 * need no rounding go to the BLAS where they lie. */
static CUresult
multiply(const struct gemm_problem *j, const void *a, const void *b, void *c,
         float alpha, float beta)
{
    int ta = j->transa != CUBLAS_OP_N, tb = j->transb != CUBLAS_OP_N;
    int bf16x9 = j->round == ROUND_BF16X9;
    int keep = j->round == ROUND_NONE || bf16x9;
    int direct_a = j->atype == CUDA_R_32F && keep;
    int direct_b = j->btype == CUDA_R_32F && keep;
    size_t mk = (size_t)j->m * (size_t)j->k, kn = (size_t)j->k * (size_t)j->n;
    float *ga = direct_a ? NULL : malloc(mk * sizeof(float));
    float *gb = direct_b ? NULL : malloc(kn * sizeof(float));
    float *prod = malloc((size_t)j->m * (size_t)j->n * sizeof(float));

    if ((!direct_a && !ga) || (!direct_b && !gb) || !prod) {
        free(ga), free(gb), free(prod);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (ga)
        gather_op(a, j->atype, j->lda, ta, j->round, j->m, j->k, ga);
    if (gb)
        gather_op(b, j->btype, j->ldb, tb, j->round, j->k, j->n, gb);
    if (bf16x9 &&
        emu_cpu_sgemm_bf16x9(direct_a && ta, direct_b && tb, j->m, j->n,
                             j->k, ga ? ga : a, ga ? j->m : j->lda,
                             gb ? gb : b, gb ? j->k : j->ldb, prod,
                             j->m) != CUDA_SUCCESS) {
        free(ga), free(gb), free(prod);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!bf16x9)
        emu_cpu_sgemm(direct_a && ta, direct_b && tb, j->m, j->n, j->k,
                      ga ? ga : a, ga ? j->m : j->lda, gb ? gb : b,
                      gb ? j->k : j->ldb, 0.0f, prod, j->m);
    for (int64_t col = 0; col < j->n; col++)
        for (int64_t i = 0; i < j->m; i++)
            store_c(j, c, (size_t)i + (size_t)col * (size_t)j->ldc, alpha,
                    beta, prod[(size_t)i + (size_t)col * (size_t)j->m]);
    free(ga), free(gb), free(prod);
    return CUDA_SUCCESS;
}

/* One problem with its scalars already read. */
static CUresult
run_problem(const struct gemm_problem *j, CUdeviceptr da, CUdeviceptr db,
            CUdeviceptr dc, float alpha, float beta)
{
    int64_t acols = j->transa == CUBLAS_OP_N ? j->k : j->m;
    int64_t bcols = j->transb == CUBLAS_OP_N ? j->n : j->k;
    int64_t arows = j->transa == CUBLAS_OP_N ? j->m : j->k;
    int64_t brows = j->transb == CUBLAS_OP_N ? j->k : j->n;
    void *a, *b, *c;

    c = emu_dev_at(dc, matrix_bytes(j->m, j->n, j->ldc, type_size(j->ctype)));
    if (c == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    emu_dev_wrote(dc, matrix_bytes(j->m, j->n, j->ldc, type_size(j->ctype)));
    if (alpha == 0.0f || j->k == 0) {
        scale_c(j, c, beta);
        return CUDA_SUCCESS;
    }
    a = emu_dev_at(da, matrix_bytes(arows, acols, j->lda,
                                    type_size(j->atype)));
    b = emu_dev_at(db, matrix_bytes(brows, bcols, j->ldb,
                                    type_size(j->btype)));
    if (a == NULL || b == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    return multiply(j, a, b, c, alpha, beta);
}

/* Problem `idx`'s matrix: read from the device pointer array at `base`,
 * or `idx` strides of `elem`-byte elements past `base`. */
static CUresult
operand_at(const struct gemm_job *j, CUdeviceptr base, int64_t stride,
           size_t elem, int64_t idx, CUdeviceptr *out)
{
    const void *slot;

    if (!j->by_array) {
        *out = base + (CUdeviceptr)(idx * stride * (int64_t)elem);
        return CUDA_SUCCESS;
    }
    slot = emu_dev_at(base + (CUdeviceptr)idx * sizeof(CUdeviceptr),
                      sizeof(CUdeviceptr));
    if (slot == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    memcpy(out, slot, sizeof(*out));
    return CUDA_SUCCESS;
}

/* Whether cuBLAS runs a pointer-array problem on a kernel that moves
 * 16 bytes at a time: 16-bit A and B whose leading dimensions are
 * multiples of 8 elements, and a C whose leading dimension is a multiple
 * of 16 bytes. cuBLAS cannot see the matrices' addresses, which lie in
 * device memory, and picks such a kernel by the leading dimensions
 * alone: on an H200 (cuBLAS 13.0, docs/gpu-results.md) a
 * cublasGemmBatchedEx of FP16 A and B with ldc 12 floats ran
 * `cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x2_nt_align8`,
 * whose 16-byte stores to a 4-byte aligned C faulted with
 * cudaErrorMisalignedAddress (compute-sanitizer: "Invalid __global__
 * write of size 16 bytes ... misaligned"); the same call with FP32 A and
 * B ran. */
static int
vector_kernel(const struct gemm_problem *p)
{
    return (p->atype == CUDA_R_16F || p->atype == CUDA_R_16BF) &&
           p->atype == p->btype && p->lda % 8 == 0 && p->ldb % 8 == 0 &&
           (p->ldc * (int64_t)type_size(p->ctype)) % 16 == 0;
}

static CUresult
run_one(const struct gemm_job *j, const struct gemm_problem *p, int64_t idx,
        float alpha, float beta)
{
    CUdeviceptr a = 0, b = 0, c = 0;
    CUresult rc;

    rc = operand_at(j, j->c, j->stride_c, type_size(p->ctype), idx, &c);
    if (rc == CUDA_SUCCESS && alpha != 0.0f && p->k != 0)
        rc = operand_at(j, j->a, j->stride_a, type_size(p->atype), idx, &a);
    if (rc == CUDA_SUCCESS && alpha != 0.0f && p->k != 0)
        rc = operand_at(j, j->b, j->stride_b, type_size(p->btype), idx, &b);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (j->by_array && vector_kernel(p) && ((a | b | c) & 15) != 0)
        return CUDA_ERROR_MISALIGNED_ADDRESS;
    return run_problem(p, a, b, c, alpha, beta);
}

/* A partial fault: the first problem that has work gets the whole result
 * (beta applied) in its first half of columns, or of rows when it has one
 * column, as the first tiles of a call whose later launch failed; nothing
 * else is written. */
static CUresult
gemm_run_partial(const struct gemm_job *j)
{
    int64_t idx = 0;

    for (int64_t g = 0; g < j->ngroups; g++) {
        const struct gemm_job_group *grp = &j->groups[g];
        struct gemm_problem p = grp->p;
        float alpha, beta;

        if (read_scalars(&grp->s, &alpha, &beta) != 0)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        if (grp->count == 0 || p.m == 0 || p.n == 0 ||
            ((alpha == 0.0f || p.k == 0) && beta == 1.0f)) {
            idx += grp->count;
            continue;
        }
        if (p.n > 1)
            p.n = (p.n + 1) / 2;
        else
            p.m = (p.m + 1) / 2;
        return run_one(j, &p, idx, alpha, beta);
    }
    return CUDA_SUCCESS;
}

static CUresult
gemm_run(void *arg)
{
    const struct gemm_job *j = arg;
    CUresult rc = CUDA_SUCCESS;
    int64_t idx = 0;

    if (j->partial)
        return gemm_run_partial(j);
    for (int64_t g = 0; rc == CUDA_SUCCESS && g < j->ngroups; g++) {
        const struct gemm_job_group *grp = &j->groups[g];
        float alpha, beta;
        int idle;

        if (read_scalars(&grp->s, &alpha, &beta) != 0) {
            rc = CUDA_ERROR_ILLEGAL_ADDRESS;
            break;
        }
        /* An empty problem or C = 1 * C reads and writes nothing. */
        idle = grp->p.m == 0 || grp->p.n == 0 ||
               ((alpha == 0.0f || grp->p.k == 0) && beta == 1.0f);
        for (int64_t i = 0; !idle && rc == CUDA_SUCCESS && i < grp->count;
             i++)
            rc = run_one(j, &grp->p, idx + i, alpha, beta);
        idx += grp->count;
    }
    return rc;
}

static cublasStatus_t
group_check(const struct gemm_group *g)
{
    int64_t arows = g->transa == CUBLAS_OP_N ? g->m : g->k;
    int64_t brows = g->transb == CUBLAS_OP_N ? g->k : g->n;

    if (!op_valid(g->transa) || !op_valid(g->transb))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g->m < 0 || g->n < 0 || g->k < 0 || g->count < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g->lda < max1(arows) || g->ldb < max1(brows) || g->ldc < max1(g->m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g->alpha == NULL || g->beta == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* FP32 operands under CUBLAS_COMPUTE_32F follow the handle's math mode,
 * as cublasSgemm_v2 does: the deprecated TENSOR_OP_MATH means FAST_16F,
 * TF32_TENSOR_OP_MATH allows TF32, FP32_EMULATED_BF16X9_MATH means
 * EMULATED_16BFX9 ("For single precision GEMM routines cuBLAS will use
 * the CUBLAS_COMPUTE_32F_EMULATED_16BFX9 compute type", cublasMath_t);
 * the reduction flag changes nothing when everything accumulates and
 * stores in FP32. */
static struct gemm_kind
fp32_kind(cublasMath_t math)
{
    struct gemm_kind kind = { ROUND_NONE, EMU_PREC_FP32 };

    switch ((unsigned)math & 0xfu) {
    case CUBLAS_TENSOR_OP_MATH:
        kind.round = ROUND_F16;
        kind.prec = EMU_PREC_FP16;
        break;
    case CUBLAS_TF32_TENSOR_OP_MATH:
        if (emu_tf32_available()) {
            kind.round = ROUND_TF32;
            kind.prec = EMU_PREC_TF32;
        }
        break;
    case CUBLAS_FP32_EMULATED_BF16X9_MATH:
        kind.round = ROUND_BF16X9; /* if it runs: gemm_settle_emulation */
        break;
    default:
        break;
    }
    return kind;
}

static int
algo_valid(cublasGemmAlgo_t algo)
{
    int v = (int)algo;

    return (v >= CUBLAS_GEMM_DEFAULT && v <= CUBLAS_GEMM_ALGO23) ||
           (v >= CUBLAS_GEMM_DEFAULT_TENSOR_OP &&
            v <= CUBLAS_GEMM_ALGO15_TENSOR_OP) ||
           v == CUBLAS_GEMM_AUTOTUNE;
}

/* FP16 or BF16 operands (exact in FP32) with an FP32 C or one of their
 * own type; `standard` (pedantic) arithmetic keeps off the Tensor Cores. */
static cublasStatus_t
half_kind(cudaDataType atype, cudaDataType ctype, int standard,
          struct gemm_kind *kind)
{
    if (ctype != CUDA_R_32F && ctype != atype)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    kind->round = ROUND_NONE;
    kind->prec = standard ? EMU_PREC_FP32
                          : emu_half_prec(atype == CUDA_R_16BF);
    return CUBLAS_STATUS_SUCCESS;
}

/* The cublasGemmEx combinations with a 32F compute type and real
 * operands, from the documented table; anything else is NOT_SUPPORTED. */
static cublasStatus_t
gemm_ex_kind(const struct gemm_call *g, cublasMath_t math,
             struct gemm_kind *kind)
{
    int pedantic = g->compute == CUBLAS_COMPUTE_32F_PEDANTIC;
    int plain = g->compute == CUBLAS_COMPUTE_32F || pedantic;

    if (!algo_valid(g->algo) || g->atype != g->btype)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    kind->round = ROUND_NONE;
    kind->prec = EMU_PREC_FP32;
    switch (g->atype) {
    case CUDA_R_32F:
        if (g->ctype != CUDA_R_32F)
            return CUBLAS_STATUS_NOT_SUPPORTED;
        switch (g->compute) {
        case CUBLAS_COMPUTE_32F:
            *kind = fp32_kind(math);
            return CUBLAS_STATUS_SUCCESS;
        case CUBLAS_COMPUTE_32F_PEDANTIC:
            return CUBLAS_STATUS_SUCCESS;
        case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
            kind->round = ROUND_BF16X9; /* gemm_settle_emulation */
            return CUBLAS_STATUS_SUCCESS;
        case CUBLAS_COMPUTE_32F_FAST_16F:
            kind->round = ROUND_F16;
            kind->prec = EMU_PREC_FP16;
            return CUBLAS_STATUS_SUCCESS;
        case CUBLAS_COMPUTE_32F_FAST_16BF:
            kind->round = ROUND_BF16;
            kind->prec = emu_half_prec(1);
            return CUBLAS_STATUS_SUCCESS;
        case CUBLAS_COMPUTE_32F_FAST_TF32:
            if (emu_tf32_available()) {
                kind->round = ROUND_TF32;
                kind->prec = EMU_PREC_TF32;
            }
            return CUBLAS_STATUS_SUCCESS;
        default:
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    case CUDA_R_16F:
    case CUDA_R_16BF:
        if (!plain)
            return CUBLAS_STATUS_NOT_SUPPORTED;
        return half_kind(g->atype, g->ctype, pedantic, kind);
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

/* The cublasSgemmEx table (A and B of one type): 32F, 16F, 16BF or 8I
 * operands with a 32F C, or 16F/16BF operands with a C of their own type.
 * Arithmetic is FP32; FP32 operands follow the math mode as in
 * cublasSgemm_v2, half operands use Tensor Cores unless the handle is
 * pedantic. */
static cublasStatus_t
sgemm_ex_kind(const struct gemm_call *g, cublasMath_t math,
              struct gemm_kind *kind)
{
    int pedantic = ((unsigned)math & 0xfu) == CUBLAS_PEDANTIC_MATH;

    if (g->atype != g->btype)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    switch (g->atype) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
        return half_kind(g->atype, g->ctype, pedantic, kind);
    case CUDA_R_8I:
        kind->round = ROUND_NONE;
        kind->prec = EMU_PREC_FP32;
        break;
    case CUDA_R_32F:
        *kind = fp32_kind(math);
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return g->ctype == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS
                                  : CUBLAS_STATUS_NOT_SUPPORTED;
}

static cublasStatus_t
gemm_kind_of(const struct gemm_call *g, cublasMath_t math,
             struct gemm_kind *kind)
{
    switch (g->api) {
    case GEMM_API_EX:
        return gemm_ex_kind(g, math, kind);
    case GEMM_API_SGEMM_EX:
        return sgemm_ex_kind(g, math, kind);
    case GEMM_API_HGEMM:
        /* Tensor Cores; the products accumulate in FP32 and C is rounded
         * once to FP16 (a GPU may accumulate in FP16: see emulator.md). */
        kind->round = ROUND_NONE;
        kind->prec = EMU_PREC_FP16;
        return CUBLAS_STATUS_SUCCESS;
    default:
        *kind = fp32_kind(math);
        return CUBLAS_STATUS_SUCCESS;
    }
}

/* With host scalars known at call time: 1 when the group reads and writes
 * nothing (an empty problem, or C = 1 * C). */
static int
group_idle(const struct gemm_job_group *grp)
{
    if (grp->count == 0 || grp->p.m == 0 || grp->p.n == 0)
        return 1;
    return !grp->s.on_device &&
           (grp->s.alpha == 0.0f || grp->p.k == 0) && grp->s.beta == 1.0f;
}

/* Modelled time of the whole call, one launch: its flops at the
 * precision used and the bytes its problems move (BF16x9: with the split
 * of its operands, emu_model_bf16x9_ns). */
static double
gemm_model_ns(const struct gemm_job *j, const struct gemm_kind *kind)
{
    double flops = 0.0, bytes = 0.0, elems = 0.0;

    for (int64_t g = 0; g < j->ngroups; g++) {
        const struct gemm_job_group *grp = &j->groups[g];
        const struct gemm_problem *p = &grp->p;
        double m = (double)p->m, n = (double)p->n, k = (double)p->k;
        double c_bytes = m * n * (double)type_size(p->ctype);
        double one = c_bytes; /* C written */

        if (group_idle(grp))
            continue;
        if (grp->s.on_device || grp->s.beta != 0.0f)
            one += c_bytes;
        if (grp->s.on_device || (grp->s.alpha != 0.0f && p->k != 0)) {
            one += m * k * (double)type_size(p->atype);
            one += k * n * (double)type_size(p->btype);
            flops += 2.0 * m * n * k * (double)grp->count;
            elems += (m * k + k * n) * (double)grp->count;
        }
        bytes += one * (double)grp->count;
    }
    if (kind->round == ROUND_BF16X9 && flops > 0.0)
        return emu_model_bf16x9_ns(flops, bytes, elems);
    return emu_model_ns(flops, flops > 0.0 ? kind->prec : EMU_PREC_NONE,
                        bytes);
}

/* The job for a checked call; NULL when out of memory. *idle is set when
 * no group has anything to do. */
static struct gemm_job *
gemm_job_new(const struct gemm_call *g, const struct emu_blas_config *cfg,
             const struct gemm_kind *kind, int *idle)
{
    struct gemm_job *job;

    job = calloc(1, sizeof(*job) +
                        (size_t)g->ngroups * sizeof(struct gemm_job_group));
    if (job == NULL)
        return NULL;
    job->by_array = g->by_array;
    job->a = (CUdeviceptr)(uintptr_t)g->a;
    job->b = (CUdeviceptr)(uintptr_t)g->b;
    job->c = (CUdeviceptr)(uintptr_t)g->c;
    job->stride_a = g->stride_a;
    job->stride_b = g->stride_b;
    job->stride_c = g->stride_c;
    job->ngroups = g->ngroups;
    *idle = 1;
    for (int64_t i = 0; i < g->ngroups; i++) {
        const struct gemm_group *src = &g->groups[i];
        struct gemm_job_group *dst = &job->groups[i];
        struct gemm_problem p = {
            .transa = src->transa, .transb = src->transb,
            .m = src->m, .n = src->n, .k = src->k,
            .lda = src->lda, .ldb = src->ldb, .ldc = src->ldc,
            .atype = g->atype, .btype = g->btype, .ctype = g->ctype,
            .round = kind->round,
        };

        dst->p = p;
        dst->count = src->count;
        take_scalars(&dst->s, cfg->pointer_mode, src->alpha, src->beta,
                     g->api == GEMM_API_HGEMM);
        if (!group_idle(dst))
            *idle = 0;
    }
    return job;
}

/* A product that asks for BF16x9 runs it where emu_bf16x9_runs says so
 * (the GPU has it; the strategy, and for PERFORMANT the modelled times),
 * else it is the native FP32 product. */
static void
gemm_settle_emulation(struct gemm_job *job, struct gemm_kind *kind,
                      cublasEmulationStrategy_t strategy)
{
    struct gemm_kind native = { ROUND_NONE, EMU_PREC_FP32 };

    if (kind->round != ROUND_BF16X9 ||
        emu_bf16x9_runs((int)strategy, gemm_model_ns(job, &native),
                        gemm_model_ns(job, kind)))
        return;
    *kind = native;
    for (int64_t g = 0; g < job->ngroups; g++)
        job->groups[g].p.round = ROUND_NONE;
}

/* Checks a call as the library does (handle, then arguments, then types
 * and modes), then queues it on the handle's stream. */
static cublasStatus_t
gemm_submit(cublasHandle_t handle, const struct gemm_call *g)
{
    struct emu_blas_config cfg;
    struct gemm_kind kind;
    struct gemm_job *job;
    struct emu_op op = { 0 }; /* a kernel node when captured */
    cublasStatus_t st;
    int fault, partial, idle;

    st = emu_blas_config(handle, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    for (int64_t i = 0; i < g->ngroups; i++) {
        st = group_check(&g->groups[i]);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    }
    if (g->host_scalars_only && cfg.pointer_mode != CUBLAS_POINTER_MODE_HOST)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    st = gemm_kind_of(g, cfg.math_mode, &kind);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (emu_call_log_on() && g->ngroups > 0)
        emu_call_log("%s m=%lld n=%lld k=%lld type_ab=%s groups=%lld "
                     "sm_count_target=%d", g->name,
                     (long long)g->groups[0].m, (long long)g->groups[0].n,
                     (long long)g->groups[0].k, type_name(g->atype),
                     (long long)g->ngroups, cfg.sm_count_target);
    fault = emu_fault_partial(g->name, CUBLAS_STATUS_EXECUTION_FAILED,
                              &partial);
    if (fault != 0 && !partial)
        return (cublasStatus_t)fault;

    job = gemm_job_new(g, &cfg, &kind, &idle);
    if (job == NULL)
        return fault ? (cublasStatus_t)fault : CUBLAS_STATUS_ALLOC_FAILED;
    if (idle) {
        free(job);
        return (cublasStatus_t)fault;
    }
    job->partial = partial;
    gemm_settle_emulation(job, &kind, cfg.emulation_strategy);
    op.name = g->name;
    op.run = gemm_run;
    op.release = free;
    op.arg = job;
    op.model_ns = gemm_model_ns(job, &kind);
    st = emu_blas_enqueue(&cfg, &op);
    /* A partial fault: the part is queued, the call still fails. */
    return fault ? (cublasStatus_t)fault : st;
}

/* ---- GEMM entry points --------------------------------------------------- */

/* What the non-grouped entry points share: one group of `count` problems,
 * their matrices at A/B/C plus strides, or in device pointer arrays. */
struct gemm_uniform {
    cublasOperation_t transa, transb;
    int64_t m, n, k;
    const void *alpha, *beta;
    const void *a, *b;
    void *c;
    cudaDataType atype, btype, ctype;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
    int64_t count;
};

static cublasStatus_t
gemm_uniform(cublasHandle_t handle, const char *name, enum gemm_api api,
             int by_array, const struct gemm_uniform *u,
             cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    struct gemm_group grp = {
        .transa = u->transa, .transb = u->transb,
        .m = u->m, .n = u->n, .k = u->k,
        .lda = u->lda, .ldb = u->ldb, .ldc = u->ldc,
        .alpha = u->alpha, .beta = u->beta, .count = u->count,
    };
    struct gemm_call g = {
        .name = name, .api = api,
        .atype = u->atype, .btype = u->btype, .ctype = u->ctype,
        .compute = compute, .algo = algo, .by_array = by_array,
        .a = u->a, .b = u->b, .c = u->c,
        .stride_a = u->stride_a, .stride_b = u->stride_b,
        .stride_c = u->stride_c, .ngroups = 1, .groups = &grp,
    };

    return gemm_submit(handle, &g);
}

cublasStatus_t
emu_blas_sgemm(cublasHandle_t handle, const char *name,
               cublasOperation_t transa, cublasOperation_t transb, int64_t m,
               int64_t n, int64_t k, const float *alpha, const float *A,
               int64_t lda, const float *B, int64_t ldb, const float *beta,
               float *C, int64_t ldc)
{
    struct gemm_uniform u = {
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
        .alpha = alpha, .beta = beta, .a = A, .b = B, .c = C,
        .atype = CUDA_R_32F, .btype = CUDA_R_32F, .ctype = CUDA_R_32F,
        .lda = lda, .ldb = ldb, .ldc = ldc, .count = 1,
    };

    return gemm_uniform(handle, name, GEMM_API_SGEMM, 0, &u,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

/* The fields every uniform entry point fills from its own parameters. */
#define UNIFORM_ARGS(A_, B_, C_, count_)                                     \
    .transa = transa, .transb = transb, .m = m, .n = n, .k = k,              \
    .alpha = alpha, .beta = beta, .a = A_, .b = B_,                          \
    .c = (void *)(uintptr_t)(C_), .lda = lda, .ldb = ldb, .ldc = ldc,        \
    .count = count_

/*
 * Each entry point exists with int sizes and as _64 with int64_t sizes;
 * one macro defines both from one parameter list, so that the two differ
 * only in the size type, as in the header. The header's prototype checks
 * each definition.
 */
#define DEFINE_SGEMM(fn, I)                                                  \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const float *alpha, const float *A, I lda,             \
                      const float *B, I ldb, const float *beta, float *C,    \
                      I ldc)                                                 \
    {                                                                        \
        return emu_blas_sgemm(handle, #fn, transa, transb, m, n, k, alpha,   \
                              A, lda, B, ldb, beta, C, ldc);                 \
    }
DEFINE_SGEMM(cublasSgemm_v2, int)
DEFINE_SGEMM(cublasSgemm_v2_64, int64_t)

#define DEFINE_GEMM_EX(fn, I)                                                \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *A, cudaDataType Atype,  \
                      I lda, const void *B, cudaDataType Btype, I ldb,       \
                      const void *beta, void *C, cudaDataType Ctype, I ldc,  \
                      cublasComputeType_t computeType,                       \
                      cublasGemmAlgo_t algo)                                 \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(A, B, C, 1),                                        \
            .atype = Atype, .btype = Btype, .ctype = Ctype,                  \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_EX, 0, &u, computeType,    \
                            algo);                                           \
    }
DEFINE_GEMM_EX(cublasGemmEx, int)
DEFINE_GEMM_EX(cublasGemmEx_64, int64_t)

#define DEFINE_SGEMM_EX(fn, I)                                               \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const float *alpha, const void *A, cudaDataType Atype, \
                      I lda, const void *B, cudaDataType Btype, I ldb,       \
                      const float *beta, void *C, cudaDataType Ctype, I ldc) \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(A, B, C, 1),                                        \
            .atype = Atype, .btype = Btype, .ctype = Ctype,                  \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_SGEMM_EX, 0, &u,           \
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);        \
    }
DEFINE_SGEMM_EX(cublasSgemmEx, int)
DEFINE_SGEMM_EX(cublasSgemmEx_64, int64_t)

#define DEFINE_SGEMM_BATCHED(fn, I)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const float *alpha, const float *const Aarray[],       \
                      I lda, const float *const Barray[], I ldb,             \
                      const float *beta, float *const Carray[], I ldc,       \
                      I batchCount)                                          \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(Aarray, Barray, Carray, batchCount),                \
            .atype = CUDA_R_32F, .btype = CUDA_R_32F, .ctype = CUDA_R_32F,   \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_SGEMM, 1, &u,              \
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);        \
    }
DEFINE_SGEMM_BATCHED(cublasSgemmBatched, int)
DEFINE_SGEMM_BATCHED(cublasSgemmBatched_64, int64_t)

#define DEFINE_SGEMM_STRIDED(fn, I)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const float *alpha, const float *A, I lda,             \
                      long long int strideA, const float *B, I ldb,          \
                      long long int strideB, const float *beta, float *C,    \
                      I ldc, long long int strideC, I batchCount)            \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(A, B, C, batchCount),                               \
            .atype = CUDA_R_32F, .btype = CUDA_R_32F, .ctype = CUDA_R_32F,   \
            .stride_a = strideA, .stride_b = strideB, .stride_c = strideC,   \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_SGEMM, 0, &u,              \
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);        \
    }
DEFINE_SGEMM_STRIDED(cublasSgemmStridedBatched, int)
DEFINE_SGEMM_STRIDED(cublasSgemmStridedBatched_64, int64_t)

#define DEFINE_GEMM_BATCHED_EX(fn, I)                                        \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *const Aarray[],         \
                      cudaDataType Atype, I lda, const void *const Barray[], \
                      cudaDataType Btype, I ldb, const void *beta,           \
                      void *const Carray[], cudaDataType Ctype, I ldc,       \
                      I batchCount, cublasComputeType_t computeType,         \
                      cublasGemmAlgo_t algo)                                 \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(Aarray, Barray, Carray, batchCount),                \
            .atype = Atype, .btype = Btype, .ctype = Ctype,                  \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_EX, 1, &u, computeType,    \
                            algo);                                           \
    }
DEFINE_GEMM_BATCHED_EX(cublasGemmBatchedEx, int)
DEFINE_GEMM_BATCHED_EX(cublasGemmBatchedEx_64, int64_t)

#define DEFINE_GEMM_STRIDED_EX(fn, I)                                        \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *A, cudaDataType Atype,  \
                      I lda, long long int strideA, const void *B,           \
                      cudaDataType Btype, I ldb, long long int strideB,      \
                      const void *beta, void *C, cudaDataType Ctype, I ldc,  \
                      long long int strideC, I batchCount,                   \
                      cublasComputeType_t computeType,                       \
                      cublasGemmAlgo_t algo)                                 \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(A, B, C, batchCount),                               \
            .atype = Atype, .btype = Btype, .ctype = Ctype,                  \
            .stride_a = strideA, .stride_b = strideB, .stride_c = strideC,   \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_EX, 0, &u, computeType,    \
                            algo);                                           \
    }
DEFINE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, int)
DEFINE_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)

/* The FP16 GEMMs (cublas_api.h declares them for C++ only, with __half
 * elements and scalars: pointers to 16-bit values here). */
#define DEFINE_HGEMM(fn, I)                                                  \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *A, I lda,               \
                      const void *B, I ldb, const void *beta, void *C,       \
                      I ldc);                                                \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *A, I lda,               \
                      const void *B, I ldb, const void *beta, void *C,       \
                      I ldc)                                                 \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(A, B, C, 1),                                        \
            .atype = CUDA_R_16F, .btype = CUDA_R_16F, .ctype = CUDA_R_16F,   \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_HGEMM, 0, &u,              \
                            CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);        \
    }
DEFINE_HGEMM(cublasHgemm, int)
DEFINE_HGEMM(cublasHgemm_64, int64_t)

#define DEFINE_HGEMM_BATCHED(fn, I)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *const Aarray[], I lda,  \
                      const void *const Barray[], I ldb, const void *beta,   \
                      void *const Carray[], I ldc, I batchCount);            \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *const Aarray[], I lda,  \
                      const void *const Barray[], I ldb, const void *beta,   \
                      void *const Carray[], I ldc, I batchCount)             \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(Aarray, Barray, Carray, batchCount),                \
            .atype = CUDA_R_16F, .btype = CUDA_R_16F, .ctype = CUDA_R_16F,   \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_HGEMM, 1, &u,              \
                            CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);        \
    }
DEFINE_HGEMM_BATCHED(cublasHgemmBatched, int)
DEFINE_HGEMM_BATCHED(cublasHgemmBatched_64, int64_t)

#define DEFINE_HGEMM_STRIDED(fn, I)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *A, I lda,               \
                      long long int strideA, const void *B, I ldb,           \
                      long long int strideB, const void *beta, void *C,      \
                      I ldc, long long int strideC, I batchCount);           \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const void *alpha, const void *A, I lda,               \
                      long long int strideA, const void *B, I ldb,           \
                      long long int strideB, const void *beta, void *C,      \
                      I ldc, long long int strideC, I batchCount)            \
    {                                                                        \
        struct gemm_uniform u = {                                            \
            UNIFORM_ARGS(A, B, C, batchCount),                               \
            .atype = CUDA_R_16F, .btype = CUDA_R_16F, .ctype = CUDA_R_16F,   \
            .stride_a = strideA, .stride_b = strideB, .stride_c = strideC,   \
        };                                                                   \
        return gemm_uniform(handle, #fn, GEMM_API_HGEMM, 0, &u,              \
                            CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT);        \
    }
DEFINE_HGEMM_STRIDED(cublasHgemmStridedBatched, int)
DEFINE_HGEMM_STRIDED(cublasHgemmStridedBatched_64, int64_t)

/* ---- Grouped GEMM -------------------------------------------------------- */

/* The per-group host arrays of a grouped call; sizes are int or int64_t
 * (`wide`). Scalars are host floats: the grouped functions support only
 * CUBLAS_POINTER_MODE_HOST. */
struct grouped_args {
    const cublasOperation_t *transa, *transb;
    const void *m, *n, *k, *lda, *ldb, *ldc, *size;
    const float *alpha, *beta;
    int wide;
};

static int64_t
size_at(const void *array, int wide, int64_t i)
{
    return wide ? ((const int64_t *)array)[i] : ((const int *)array)[i];
}

static cublasStatus_t
gemm_grouped(cublasHandle_t handle, struct gemm_call *g,
             const struct grouped_args *ga, int64_t group_count)
{
    struct emu_blas_config cfg;
    struct gemm_group *groups;
    cublasStatus_t st;

    st = emu_blas_config(handle, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (group_count < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (group_count == 0)
        return CUBLAS_STATUS_SUCCESS;
    if (ga->transa == NULL || ga->transb == NULL || ga->m == NULL ||
        ga->n == NULL || ga->k == NULL || ga->lda == NULL ||
        ga->ldb == NULL || ga->ldc == NULL || ga->size == NULL ||
        ga->alpha == NULL || ga->beta == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    groups = calloc((size_t)group_count, sizeof(*groups));
    if (groups == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    for (int64_t i = 0; i < group_count; i++) {
        groups[i].transa = ga->transa[i];
        groups[i].transb = ga->transb[i];
        groups[i].m = size_at(ga->m, ga->wide, i);
        groups[i].n = size_at(ga->n, ga->wide, i);
        groups[i].k = size_at(ga->k, ga->wide, i);
        groups[i].lda = size_at(ga->lda, ga->wide, i);
        groups[i].ldb = size_at(ga->ldb, ga->wide, i);
        groups[i].ldc = size_at(ga->ldc, ga->wide, i);
        groups[i].count = size_at(ga->size, ga->wide, i);
        groups[i].alpha = &ga->alpha[i];
        groups[i].beta = &ga->beta[i];
    }
    g->by_array = 1;
    g->host_scalars_only = 1;
    g->ngroups = group_count;
    g->groups = groups;
    st = gemm_submit(handle, g);
    free(groups);
    return st;
}

#define DEFINE_SGEMM_GROUPED(fn, I)                                          \
    cublasStatus_t fn(cublasHandle_t handle,                                 \
                      const cublasOperation_t transa_array[],                \
                      const cublasOperation_t transb_array[],                \
                      const I m_array[], const I n_array[],                  \
                      const I k_array[], const float alpha_array[],          \
                      const float *const Aarray[], const I lda_array[],      \
                      const float *const Barray[], const I ldb_array[],      \
                      const float beta_array[], float *const Carray[],       \
                      const I ldc_array[], I group_count,                    \
                      const I group_size[])                                  \
    {                                                                        \
        struct grouped_args ga = {                                           \
            transa_array, transb_array, m_array, n_array, k_array,           \
            lda_array, ldb_array, ldc_array, group_size, alpha_array,        \
            beta_array, sizeof(I) == sizeof(int64_t),                        \
        };                                                                   \
        struct gemm_call g = {                                               \
            .name = #fn, .api = GEMM_API_SGEMM, .atype = CUDA_R_32F,         \
            .btype = CUDA_R_32F, .ctype = CUDA_R_32F,                        \
            .compute = CUBLAS_COMPUTE_32F, .algo = CUBLAS_GEMM_DEFAULT,      \
            .a = Aarray, .b = Barray, .c = (void *)(uintptr_t)Carray,        \
        };                                                                   \
        return gemm_grouped(handle, &g, &ga, group_count);                   \
    }
DEFINE_SGEMM_GROUPED(cublasSgemmGroupedBatched, int)
DEFINE_SGEMM_GROUPED(cublasSgemmGroupedBatched_64, int64_t)

#define DEFINE_GEMM_GROUPED_EX(fn, I)                                        \
    cublasStatus_t fn(cublasHandle_t handle,                                 \
                      const cublasOperation_t transa_array[],                \
                      const cublasOperation_t transb_array[],                \
                      const I m_array[], const I n_array[],                  \
                      const I k_array[], const void *alpha_array,            \
                      const void *const Aarray[], cudaDataType_t Atype,      \
                      const I lda_array[], const void *const Barray[],       \
                      cudaDataType_t Btype, const I ldb_array[],             \
                      const void *beta_array, void *const Carray[],          \
                      cudaDataType_t Ctype, const I ldc_array[],             \
                      I group_count, const I group_size[],                   \
                      cublasComputeType_t computeType)                       \
    {                                                                        \
        struct grouped_args ga = {                                           \
            transa_array, transb_array, m_array, n_array, k_array,           \
            lda_array, ldb_array, ldc_array, group_size, alpha_array,        \
            beta_array, sizeof(I) == sizeof(int64_t),                        \
        };                                                                   \
        struct gemm_call g = {                                               \
            .name = #fn, .api = GEMM_API_EX, .atype = Atype,                 \
            .btype = Btype, .ctype = Ctype, .compute = computeType,          \
            .algo = CUBLAS_GEMM_DEFAULT,                                     \
            .a = Aarray, .b = Barray, .c = (void *)(uintptr_t)Carray,        \
        };                                                                   \
        return gemm_grouped(handle, &g, &ga, group_count);                   \
    }
DEFINE_GEMM_GROUPED_EX(cublasGemmGroupedBatchedEx, int)
DEFINE_GEMM_GROUPED_EX(cublasGemmGroupedBatchedEx_64, int64_t)

/* ---- GEMV ---------------------------------------------------------------- */

struct gemv_job {
    cublasOperation_t trans;
    int64_t m, n;
    CUdeviceptr a, x, y;
    int64_t lda, incx, incy;
    struct scalars s;
};

static CUresult
gemv_run(void *arg)
{
    const struct gemv_job *j = arg;
    int64_t lenx = j->trans == CUBLAS_OP_N ? j->n : j->m;
    int64_t leny = j->trans == CUBLAS_OP_N ? j->m : j->n;
    float alpha, beta, *acc;
    const float *a, *x;
    float *y;

    if (read_scalars(&j->s, &alpha, &beta) != 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (alpha == 0.0f && beta == 1.0f)
        return CUDA_SUCCESS;
    y = emu_dev_at(j->y, vector_bytes(leny, j->incy));
    if (y == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    emu_dev_wrote(j->y, vector_bytes(leny, j->incy));
    acc = calloc((size_t)leny, sizeof(float));
    if (acc == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (alpha != 0.0f) {
        a = emu_dev_at(j->a, matrix_bytes(j->m, j->n, j->lda, 4));
        x = emu_dev_at(j->x, vector_bytes(lenx, j->incx));
        if (a == NULL || x == NULL) {
            free(acc);
            return CUDA_ERROR_ILLEGAL_ADDRESS;
        }
        /* Each y element sums its products in column (N) or row (T)
         * order; columns of A are walked contiguously either way. */
        for (int64_t col = 0; col < j->n; col++) {
            const float *ac = a + (size_t)col * (size_t)j->lda;
            if (j->trans == CUBLAS_OP_N) {
                float xv = x[vector_index(col, lenx, j->incx)];
                for (int64_t i = 0; i < j->m; i++)
                    acc[i] = acc[i] + ac[i] * xv;
            } else {
                float s = 0.0f;
                for (int64_t i = 0; i < j->m; i++)
                    s = s + ac[i] * x[vector_index(i, lenx, j->incx)];
                acc[col] = s;
            }
        }
    }
    for (int64_t i = 0; i < leny; i++) {
        float *yi = &y[vector_index(i, leny, j->incy)];
        float v = alpha * acc[i];
        if (beta != 0.0f)
            v = v + beta * *yi;
        *yi = v;
    }
    free(acc);
    return CUDA_SUCCESS;
}

/* cublasSgemv_v2 and its _64 twin, named `name`. */
static cublasStatus_t
sgemv(cublasHandle_t handle, const char *name, cublasOperation_t trans,
      int64_t m, int64_t n, const float *alpha, const float *A, int64_t lda,
      const float *x, int64_t incx, const float *beta, float *y,
      int64_t incy)
{
    struct emu_blas_config cfg;
    struct gemv_job *job;
    struct emu_op op = { 0 }; /* a kernel node when captured */
    cublasStatus_t st;
    double bytes;
    int fault;

    st = emu_blas_config(handle, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (!op_valid(trans) || m < 0 || n < 0 || lda < max1(m) || incx == 0 ||
        incy == 0 || alpha == NULL || beta == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault(name, CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    if (m == 0 || n == 0)
        return CUBLAS_STATUS_SUCCESS;

    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    take_scalars(&job->s, cfg.pointer_mode, alpha, beta, 0);
    if (!job->s.on_device && job->s.alpha == 0.0f && job->s.beta == 1.0f) {
        free(job);
        return CUBLAS_STATUS_SUCCESS;
    }
    job->trans = trans;
    job->m = m;
    job->n = n;
    job->a = (CUdeviceptr)(uintptr_t)A;
    job->x = (CUdeviceptr)(uintptr_t)x;
    job->y = (CUdeviceptr)(uintptr_t)y;
    job->lda = lda;
    job->incx = incx;
    job->incy = incy;

    /* A and x read, y read unless beta == 0, y written. */
    bytes = 4.0 * ((double)m * (double)n + (double)m + (double)n);
    if (job->s.on_device || job->s.beta != 0.0f)
        bytes += 4.0 * (double)(trans == CUBLAS_OP_N ? m : n);
    op.name = name;
    op.run = gemv_run;
    op.release = free;
    op.arg = job;
    op.model_ns = emu_model_ns(2.0 * (double)m * (double)n, EMU_PREC_FP32,
                               bytes);
    return emu_blas_enqueue(&cfg, &op);
}

#define DEFINE_SGEMV(fn, I)                                                  \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t trans, I m,   \
                      I n, const float *alpha, const float *A, I lda,        \
                      const float *x, I incx, const float *beta, float *y,   \
                      I incy)                                                \
    {                                                                        \
        return sgemv(handle, #fn, trans, m, n, alpha, A, lda, x, incx, beta, \
                     y, incy);                                               \
    }
DEFINE_SGEMV(cublasSgemv_v2, int)
DEFINE_SGEMV(cublasSgemv_v2_64, int64_t)

/* ---- AXPY ---------------------------------------------------------------- */

struct axpy_job {
    int64_t n;
    CUdeviceptr x, y;
    int64_t incx, incy;
    struct scalars s;
};

static CUresult
axpy_run(void *arg)
{
    const struct axpy_job *j = arg;
    float alpha, unused;
    const float *x;
    float *y;

    if (read_scalars(&j->s, &alpha, &unused) != 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (alpha == 0.0f)
        return CUDA_SUCCESS;
    x = emu_dev_at(j->x, vector_bytes(j->n, j->incx));
    y = emu_dev_at(j->y, vector_bytes(j->n, j->incy));
    if (x == NULL || y == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    emu_dev_wrote(j->y, vector_bytes(j->n, j->incy));
    for (int64_t i = 0; i < j->n; i++) {
        float *yi = &y[vector_index(i, j->n, j->incy)];
        *yi = alpha * x[vector_index(i, j->n, j->incx)] + *yi;
    }
    return CUDA_SUCCESS;
}

/* cublasSaxpy_v2 and its _64 twin, named `name`. */
static cublasStatus_t
saxpy(cublasHandle_t handle, const char *name, int64_t n, const float *alpha,
      const float *x, int64_t incx, float *y, int64_t incy)
{
    struct emu_blas_config cfg;
    struct axpy_job *job;
    struct emu_op op = { 0 }; /* a kernel node when captured */
    cublasStatus_t st;
    int fault;

    st = emu_blas_config(handle, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (alpha == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault(name, CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    if (n <= 0)
        return CUBLAS_STATUS_SUCCESS;

    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    take_scalars(&job->s, cfg.pointer_mode, alpha, NULL, 0);
    if (!job->s.on_device && job->s.alpha == 0.0f) {
        free(job);
        return CUBLAS_STATUS_SUCCESS;
    }
    job->n = n;
    job->x = (CUdeviceptr)(uintptr_t)x;
    job->y = (CUdeviceptr)(uintptr_t)y;
    job->incx = incx;
    job->incy = incy;

    op.name = name;
    op.run = axpy_run;
    op.release = free;
    op.arg = job;
    op.model_ns = emu_model_ns(2.0 * (double)n, EMU_PREC_FP32,
                               12.0 * (double)n);
    return emu_blas_enqueue(&cfg, &op);
}

#define DEFINE_SAXPY(fn, I)                                                  \
    cublasStatus_t fn(cublasHandle_t handle, I n, const float *alpha,        \
                      const float *x, I incx, float *y, I incy)              \
    {                                                                        \
        return saxpy(handle, #fn, n, alpha, x, incx, y, incy);               \
    }
DEFINE_SAXPY(cublasSaxpy_v2, int)
DEFINE_SAXPY(cublasSaxpy_v2_64, int64_t)
