/* The emulated cuBLAS routines (cublasSgemm_v2, cublasGemmEx,
 * cublasSgemv_v2, cublasSaxpy_v2): checked at call time like the real
 * library, then queued on the handle's stream and run by the emulator core
 * in stream order. */
#include <cublas_v2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_handle.h"
#include "emu.h"

/* ---- Scalars and elements ------------------------------------------------ */

/* alpha and beta: host values read at call time, or device addresses read
 * when the work runs (CUBLAS_POINTER_MODE_DEVICE). */
struct scalars {
    int on_device;
    int has_beta;
    float alpha, beta;
    CUdeviceptr alpha_at, beta_at;
};

static void
take_scalars(struct scalars *s, cublasPointerMode_t mode, const void *alpha,
             const void *beta)
{
    memset(s, 0, sizeof(*s));
    s->on_device = mode == CUBLAS_POINTER_MODE_DEVICE;
    s->has_beta = beta != NULL;
    if (s->on_device) {
        s->alpha_at = (CUdeviceptr)(uintptr_t)alpha;
        s->beta_at = (CUdeviceptr)(uintptr_t)beta;
        return;
    }
    memcpy(&s->alpha, alpha, sizeof(float));
    if (s->has_beta)
        memcpy(&s->beta, beta, sizeof(float));
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
    a = emu_dev_at(s->alpha_at, sizeof(float));
    if (a == NULL)
        return -1;
    memcpy(alpha, a, sizeof(float));
    if (s->has_beta) {
        b = emu_dev_at(s->beta_at, sizeof(float));
        if (b == NULL)
            return -1;
        memcpy(beta, b, sizeof(float));
    }
    return 0;
}

/* How FP32 operands are rounded before the multiply. */
enum operand_round { ROUND_NONE, ROUND_F16, ROUND_BF16, ROUND_TF32 };

static size_t
type_size(cudaDataType t)
{
    return t == CUDA_R_32F ? 4 : 2;
}

static float
load(const void *base, size_t idx, cudaDataType t)
{
    uint16_t h;
    float f;

    switch (t) {
    case CUDA_R_16F:
        memcpy(&h, (const char *)base + idx * 2, 2);
        return emu_f16_to_f32(h);
    case CUDA_R_16BF:
        memcpy(&h, (const char *)base + idx * 2, 2);
        return emu_bf16_to_f32(h);
    default:
        memcpy(&f, (const char *)base + idx * 4, 4);
        return f;
    }
}

static void
store(void *base, size_t idx, cudaDataType t, float v)
{
    uint16_t h;

    switch (t) {
    case CUDA_R_16F:
        h = emu_f32_to_f16(v);
        memcpy((char *)base + idx * 2, &h, 2);
        break;
    case CUDA_R_16BF:
        h = emu_f32_to_bf16(v);
        memcpy((char *)base + idx * 2, &h, 2);
        break;
    default:
        memcpy((char *)base + idx * 4, &v, 4);
        break;
    }
}

static float
round_operand(float v, enum operand_round r)
{
    switch (r) {
    case ROUND_F16:
        return emu_f16_to_f32(emu_f32_to_f16(v));
    case ROUND_BF16:
        return emu_bf16_to_f32(emu_f32_to_bf16(v));
    case ROUND_TF32:
        return emu_round_tf32(v);
    default:
        return v;
    }
}

/* Bytes spanned by a column-major rows x cols matrix (both >= 1). */
static size_t
matrix_bytes(int rows, int cols, int ld, size_t elem)
{
    return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * elem;
}

/* Bytes spanned by a strided vector of len >= 1 elements. */
static size_t
vector_bytes(int len, int inc)
{
    size_t step = inc < 0 ? (size_t)(-(int64_t)inc) : (size_t)inc;

    return ((size_t)(len - 1) * step + 1) * sizeof(float);
}

/* Element i of a BLAS vector: a negative increment starts from the end. */
static size_t
vector_index(int i, int len, int inc)
{
    if (inc >= 0)
        return (size_t)i * (size_t)inc;
    return (size_t)(len - 1 - i) * (size_t)(-(int64_t)inc);
}

static int
op_valid(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

static int
max1(int v)
{
    return v > 1 ? v : 1;
}

/* ---- GEMM ---------------------------------------------------------------- */

/* What the compute type and math mode make of the arithmetic. */
struct gemm_kind {
    enum operand_round round;
    enum emu_prec prec;
};

struct gemm_call {
    const char *name;
    cublasOperation_t transa, transb;
    int m, n, k;
    const void *alpha, *beta;
    const void *a, *b;
    void *c;
    cudaDataType atype, btype, ctype;
    int lda, ldb, ldc;
    int is_ex;                      /* GemmEx: compute and algo apply */
    cublasComputeType_t compute;
    cublasGemmAlgo_t algo;
};

struct gemm_job {
    cublasOperation_t transa, transb;
    int m, n, k;
    CUdeviceptr a, b, c;
    cudaDataType atype, btype, ctype;
    int lda, ldb, ldc;
    enum operand_round round;
    struct scalars s;
};

/* Blocking of the host kernel: op(A) is packed MB rows at a time and op(B)
 * NB columns at a time, both interleaved by 4 so that the 4x4 micro-kernel
 * reads two contiguous streams. Each C element still sums its k products
 * in order, one rounded multiply and one rounded add per term. */
#define MR 4
#define NR 4
#define MB 64
#define NB 256

typedef float v4f __attribute__((vector_size(16)));

static void
pack_a(const struct gemm_job *j, const void *a, int i0, int rows,
       float *pack)
{
    size_t k = (size_t)j->k;

    for (int g = 0; g < rows; g += MR) {
        float *dst = pack + (size_t)g * k;
        for (int r = 0; r < MR; r++) {
            int i = i0 + g + r;
            for (size_t p = 0; p < k; p++) {
                float v = 0.0f;
                if (g + r < rows) {
                    size_t idx = j->transa == CUBLAS_OP_N
                                     ? (size_t)i + p * (size_t)j->lda
                                     : p + (size_t)i * (size_t)j->lda;
                    v = round_operand(load(a, idx, j->atype), j->round);
                }
                dst[p * MR + (size_t)r] = v;
            }
        }
    }
}

static void
pack_b(const struct gemm_job *j, const void *b, int j0, int cols,
       float *pack)
{
    size_t k = (size_t)j->k;

    for (int h = 0; h < cols; h += NR) {
        float *dst = pack + (size_t)h * k;
        for (int c = 0; c < NR; c++) {
            int col = j0 + h + c;
            for (size_t p = 0; p < k; p++) {
                float v = 0.0f;
                if (h + c < cols) {
                    size_t idx = j->transb == CUBLAS_OP_N
                                     ? p + (size_t)col * (size_t)j->ldb
                                     : (size_t)col + p * (size_t)j->ldb;
                    v = round_operand(load(b, idx, j->btype), j->round);
                }
                dst[p * NR + (size_t)c] = v;
            }
        }
    }
}

/* out[c][r] = sum over p of a[r, p] * b[p, c], in p order. */
static void
micro_kernel(const float *ap, const float *bp, size_t k, float out[NR][MR])
{
    v4f acc[NR] = { { 0 } };

    for (size_t p = 0; p < k; p++) {
        v4f a;
        memcpy(&a, ap + p * MR, sizeof(a));
        for (int c = 0; c < NR; c++) {
            float bv = bp[p * NR + (size_t)c];
            v4f b = { bv, bv, bv, bv };
            acc[c] = acc[c] + a * b;
        }
    }
    memcpy(out, acc, sizeof(acc));
}

static void
store_c(const struct gemm_job *j, void *c, size_t idx, float alpha,
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
scale_c(const struct gemm_job *j, void *c, float beta)
{
    for (int col = 0; col < j->n; col++) {
        for (int i = 0; i < j->m; i++) {
            size_t idx = (size_t)i + (size_t)col * (size_t)j->ldc;
            float v = beta == 0.0f ? 0.0f : beta * load(c, idx, j->ctype);
            store(c, idx, j->ctype, v);
        }
    }
}

static void
multiply(const struct gemm_job *j, const void *a, const void *b, void *c,
         float alpha, float beta, float *apack, float *bpack)
{
    size_t k = (size_t)j->k;
    float out[NR][MR];

    for (int j0 = 0; j0 < j->n; j0 += NB) {
        int cols = j->n - j0 < NB ? j->n - j0 : NB;
        pack_b(j, b, j0, cols, bpack);
        for (int i0 = 0; i0 < j->m; i0 += MB) {
            int rows = j->m - i0 < MB ? j->m - i0 : MB;
            pack_a(j, a, i0, rows, apack);
            for (int h = 0; h < cols; h += NR) {
                for (int g = 0; g < rows; g += MR) {
                    micro_kernel(apack + (size_t)g * k, bpack + (size_t)h * k,
                                 k, out);
                    for (int cc = 0; cc < NR && h + cc < cols; cc++) {
                        for (int r = 0; r < MR && g + r < rows; r++) {
                            size_t idx = (size_t)(i0 + g + r) +
                                         (size_t)(j0 + h + cc) *
                                             (size_t)j->ldc;
                            store_c(j, c, idx, alpha, beta, out[cc][r]);
                        }
                    }
                }
            }
        }
    }
}

static CUresult
gemm_run(void *arg)
{
    const struct gemm_job *j = arg;
    int arows = j->transa == CUBLAS_OP_N ? j->m : j->k;
    int brows = j->transb == CUBLAS_OP_N ? j->k : j->n;
    float alpha, beta, *apack, *bpack;
    void *a, *b, *c;
    size_t k = (size_t)j->k;

    if (read_scalars(&j->s, &alpha, &beta) != 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if ((alpha == 0.0f || j->k == 0) && beta == 1.0f)
        return CUDA_SUCCESS;
    c = emu_dev_at(j->c, matrix_bytes(j->m, j->n, j->ldc,
                                      type_size(j->ctype)));
    if (c == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (alpha == 0.0f || j->k == 0) {
        scale_c(j, c, beta);
        return CUDA_SUCCESS;
    }
    a = emu_dev_at(j->a, matrix_bytes(arows, j->transa == CUBLAS_OP_N
                                                 ? j->k : j->m,
                                      j->lda, type_size(j->atype)));
    b = emu_dev_at(j->b, matrix_bytes(brows, j->transb == CUBLAS_OP_N
                                                 ? j->n : j->k,
                                      j->ldb, type_size(j->btype)));
    if (a == NULL || b == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;

    apack = malloc(MB * k * sizeof(float));
    bpack = malloc(NB * k * sizeof(float));
    if (apack == NULL || bpack == NULL) {
        free(apack);
        free(bpack);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    multiply(j, a, b, c, alpha, beta, apack, bpack);
    free(apack);
    free(bpack);
    return CUDA_SUCCESS;
}

static cublasStatus_t
gemm_check(const struct gemm_call *g)
{
    int arows = g->transa == CUBLAS_OP_N ? g->m : g->k;
    int brows = g->transb == CUBLAS_OP_N ? g->k : g->n;

    if (!op_valid(g->transa) || !op_valid(g->transb))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g->m < 0 || g->n < 0 || g->k < 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g->lda < max1(arows) || g->ldb < max1(brows) || g->ldc < max1(g->m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (g->alpha == NULL || g->beta == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

static int
tf32_available(void)
{
    return !emu_blas_tf32_disabled() && emu_gpu()->cc_major >= 8;
}

/* FP32 operands under CUBLAS_COMPUTE_32F follow the handle's math mode,
 * as cublasSgemm_v2 does: the deprecated TENSOR_OP_MATH means FAST_16F,
 * TF32_TENSOR_OP_MATH allows TF32; the reduction flag changes nothing
 * when everything accumulates and stores in FP32. */
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
        if (tf32_available()) {
            kind.round = ROUND_TF32;
            kind.prec = EMU_PREC_TF32;
        }
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
        case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
            return CUBLAS_STATUS_SUCCESS;
        case CUBLAS_COMPUTE_32F_FAST_16F:
            kind->round = ROUND_F16;
            kind->prec = EMU_PREC_FP16;
            return CUBLAS_STATUS_SUCCESS;
        case CUBLAS_COMPUTE_32F_FAST_16BF:
            kind->round = ROUND_BF16;
            kind->prec = EMU_PREC_FP16;
            return CUBLAS_STATUS_SUCCESS;
        case CUBLAS_COMPUTE_32F_FAST_TF32:
            if (tf32_available()) {
                kind->round = ROUND_TF32;
                kind->prec = EMU_PREC_TF32;
            }
            return CUBLAS_STATUS_SUCCESS;
        default:
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    case CUDA_R_16F:
    case CUDA_R_16BF:
        if (!plain || (g->ctype != CUDA_R_32F && g->ctype != g->atype))
            return CUBLAS_STATUS_NOT_SUPPORTED;
        /* Pedantic asks for standard arithmetic: no Tensor Cores. */
        kind->prec = pedantic ? EMU_PREC_FP32 : EMU_PREC_FP16;
        return CUBLAS_STATUS_SUCCESS;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

static double
gemm_model_ns(const struct gemm_call *g, const struct gemm_kind *kind,
              const struct scalars *s)
{
    double m = g->m, n = g->n, k = g->k;
    double c_bytes = m * n * (double)type_size(g->ctype);
    double bytes = c_bytes; /* C written */

    if (s->on_device || s->beta != 0.0f)
        bytes += c_bytes;
    if (!s->on_device && (s->alpha == 0.0f || g->k == 0))
        return emu_model_ns(0.0, EMU_PREC_NONE, bytes);
    bytes += m * k * (double)type_size(g->atype);
    bytes += k * n * (double)type_size(g->btype);
    return emu_model_ns(2.0 * m * n * k, kind->prec, bytes);
}

static cublasStatus_t
gemm_submit(cublasHandle_t handle, const struct gemm_call *g)
{
    struct emu_blas_config cfg;
    struct gemm_kind kind;
    struct gemm_job *job;
    struct emu_op op;
    cublasStatus_t st;
    int fault;

    st = emu_blas_config(handle, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    st = gemm_check(g);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (g->is_ex) {
        st = gemm_ex_kind(g, cfg.math_mode, &kind);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    } else {
        kind = fp32_kind(cfg.math_mode);
    }
    fault = emu_fault(g->name, CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    if (g->m == 0 || g->n == 0)
        return CUBLAS_STATUS_SUCCESS;

    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    take_scalars(&job->s, cfg.pointer_mode, g->alpha, g->beta);
    if (!job->s.on_device && (job->s.alpha == 0.0f || g->k == 0) &&
        job->s.beta == 1.0f) {
        free(job);
        return CUBLAS_STATUS_SUCCESS;
    }
    job->transa = g->transa;
    job->transb = g->transb;
    job->m = g->m;
    job->n = g->n;
    job->k = g->k;
    job->a = (CUdeviceptr)(uintptr_t)g->a;
    job->b = (CUdeviceptr)(uintptr_t)g->b;
    job->c = (CUdeviceptr)(uintptr_t)g->c;
    job->atype = g->atype;
    job->btype = g->btype;
    job->ctype = g->ctype;
    job->lda = g->lda;
    job->ldb = g->ldb;
    job->ldc = g->ldc;
    job->round = kind.round;

    op.name = g->name;
    op.run = gemm_run;
    op.release = free;
    op.arg = job;
    op.model_ns = gemm_model_ns(g, &kind, &job->s);
    return emu_blas_enqueue(&cfg, &op);
}

cublasStatus_t
cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
               cublasOperation_t transb, int m, int n, int k,
               const float *alpha, const float *A, int lda, const float *B,
               int ldb, const float *beta, float *C, int ldc)
{
    struct gemm_call g = {
        .name = "cublasSgemm_v2",
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
        .alpha = alpha, .beta = beta, .a = A, .b = B, .c = C,
        .atype = CUDA_R_32F, .btype = CUDA_R_32F, .ctype = CUDA_R_32F,
        .lda = lda, .ldb = ldb, .ldc = ldc,
        .is_ex = 0, .compute = CUBLAS_COMPUTE_32F,
        .algo = CUBLAS_GEMM_DEFAULT,
    };

    return gemm_submit(handle, &g);
}

cublasStatus_t
cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
             cublasOperation_t transb, int m, int n, int k,
             const void *alpha, const void *A, cudaDataType Atype, int lda,
             const void *B, cudaDataType Btype, int ldb, const void *beta,
             void *C, cudaDataType Ctype, int ldc,
             cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    struct gemm_call g = {
        .name = "cublasGemmEx",
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k,
        .alpha = alpha, .beta = beta, .a = A, .b = B, .c = C,
        .atype = Atype, .btype = Btype, .ctype = Ctype,
        .lda = lda, .ldb = ldb, .ldc = ldc,
        .is_ex = 1, .compute = computeType, .algo = algo,
    };

    return gemm_submit(handle, &g);
}

/* ---- GEMV ---------------------------------------------------------------- */

struct gemv_job {
    cublasOperation_t trans;
    int m, n;
    CUdeviceptr a, x, y;
    int lda, incx, incy;
    struct scalars s;
};

static CUresult
gemv_run(void *arg)
{
    const struct gemv_job *j = arg;
    int lenx = j->trans == CUBLAS_OP_N ? j->n : j->m;
    int leny = j->trans == CUBLAS_OP_N ? j->m : j->n;
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
        for (int col = 0; col < j->n; col++) {
            const float *ac = a + (size_t)col * (size_t)j->lda;
            if (j->trans == CUBLAS_OP_N) {
                float xv = x[vector_index(col, lenx, j->incx)];
                for (int i = 0; i < j->m; i++)
                    acc[i] = acc[i] + ac[i] * xv;
            } else {
                float s = 0.0f;
                for (int i = 0; i < j->m; i++)
                    s = s + ac[i] * x[vector_index(i, lenx, j->incx)];
                acc[col] = s;
            }
        }
    }
    for (int i = 0; i < leny; i++) {
        float *yi = &y[vector_index(i, leny, j->incy)];
        float v = alpha * acc[i];
        if (beta != 0.0f)
            v = v + beta * *yi;
        *yi = v;
    }
    free(acc);
    return CUDA_SUCCESS;
}

cublasStatus_t
cublasSgemv_v2(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
               const float *alpha, const float *A, int lda, const float *x,
               int incx, const float *beta, float *y, int incy)
{
    struct emu_blas_config cfg;
    struct gemv_job *job;
    struct emu_op op;
    cublasStatus_t st;
    double bytes;
    int fault;

    st = emu_blas_config(handle, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (!op_valid(trans) || m < 0 || n < 0 || lda < max1(m) || incx == 0 ||
        incy == 0 || alpha == NULL || beta == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault("cublasSgemv_v2", CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    if (m == 0 || n == 0)
        return CUBLAS_STATUS_SUCCESS;

    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    take_scalars(&job->s, cfg.pointer_mode, alpha, beta);
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
    bytes = 4.0 * ((double)m * n + m + n);
    if (job->s.on_device || job->s.beta != 0.0f)
        bytes += 4.0 * (trans == CUBLAS_OP_N ? m : n);
    op.name = "cublasSgemv_v2";
    op.run = gemv_run;
    op.release = free;
    op.arg = job;
    op.model_ns = emu_model_ns(2.0 * m * n, EMU_PREC_FP32, bytes);
    return emu_blas_enqueue(&cfg, &op);
}

/* ---- AXPY ---------------------------------------------------------------- */

struct axpy_job {
    int n;
    CUdeviceptr x, y;
    int incx, incy;
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
    for (int i = 0; i < j->n; i++) {
        float *yi = &y[vector_index(i, j->n, j->incy)];
        *yi = alpha * x[vector_index(i, j->n, j->incx)] + *yi;
    }
    return CUDA_SUCCESS;
}

cublasStatus_t
cublasSaxpy_v2(cublasHandle_t handle, int n, const float *alpha,
               const float *x, int incx, float *y, int incy)
{
    struct emu_blas_config cfg;
    struct axpy_job *job;
    struct emu_op op;
    cublasStatus_t st;
    int fault;

    st = emu_blas_config(handle, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (alpha == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault("cublasSaxpy_v2", CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    if (n <= 0)
        return CUBLAS_STATUS_SUCCESS;

    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    take_scalars(&job->s, cfg.pointer_mode, alpha, NULL);
    if (!job->s.on_device && job->s.alpha == 0.0f) {
        free(job);
        return CUBLAS_STATUS_SUCCESS;
    }
    job->n = n;
    job->x = (CUdeviceptr)(uintptr_t)x;
    job->y = (CUdeviceptr)(uintptr_t)y;
    job->incx = incx;
    job->incy = incy;

    op.name = "cublasSaxpy_v2";
    op.run = axpy_run;
    op.release = free;
    op.arg = job;
    op.model_ns = emu_model_ns(2.0 * n, EMU_PREC_FP32, 12.0 * n);
    return emu_blas_enqueue(&cfg, &op);
}
