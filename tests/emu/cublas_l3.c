/* The emulated cuBLAS level-3 routines beyond the FP32 GEMMs of
 * cublas_blas.c: gemm in D, C and Z (with gemm3m, batched and strided
 * batched), symm/hemm, syrk/herk, syr2k/her2k, syrkx/herkx, trmm (cuBLAS's
 * out-of-place form, C = alpha op(A) B), trsm and trsmBatched in S, D, C
 * and Z, and the BLAS-like geam and dgmm, with their _64 twins, on the
 * generic job of cublas_job.h with OpenBLAS doing the arithmetic. syrkx is
 * a product in a temporary and the triangle of C updated from it; geam and
 * dgmm, which the BLAS lacks, are loops. */
#include <complex.h>
#include <cublas_v2.h>
#include <stdlib.h>

#include "cublas_job.h"

/* What a level-3 call hands the generic job: A (operand 0), B (1), C (2),
 * alpha (scalar 0), beta (1); a batch of `count` problems whose matrices
 * lie `stride_*` elements apart or in device arrays of pointers. */
struct l3 {
    const char *name;
    enum blas_elem elem;
    blas_kernel kernel;
    int form;
    struct blas_args a;
    int ok, empty;
    const void *alpha, *beta;
    size_t alpha_size, beta_size;   /* 0: none */
    const void *A, *B, *C;
    size_t a_bytes, b_bytes, c_bytes;
    int b_written, c_written;
    int64_t count;
    int by_array;
    int64_t stride_a, stride_b, stride_c;
    int a_unread_if, b_unread_if;   /* 1 + i: unread when scalar i is 0 */
    int beta_keeps;                 /* C = alpha (...) + beta C: nothing to
                                     * do for beta 1 with alpha 0 or k 0 */
    double flops;                   /* per problem */
};

static cublasStatus_t
l3_submit(cublasHandle_t handle, const struct l3 *c)
{
    int64_t e = (int64_t)blas_elem_size(c->elem);
    struct emu_blas_config cfg;
    struct blas_job *j;
    cublasStatus_t st;

    st = blas_begin(handle, c->name, c->ok, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS || c->empty || c->count == 0)
        return st;
    j = blas_job_new(&cfg, c->name, c->elem, c->kernel);
    if (j == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    j->form = c->form;
    j->a = c->a;
    j->count = c->count;
    if (c->alpha_size != 0)
        blas_scalar(j, 0, c->alpha, c->alpha_size);
    if (c->beta_size != 0)
        blas_scalar(j, 1, c->beta, c->beta_size);
    /* C = 1 * C: nothing to read or write. */
    if (c->beta_keeps && blas_scalar_one(j, 1) &&
        (blas_scalar_zero(j, 0) || c->a_bytes == 0)) {
        free(j);
        return CUBLAS_STATUS_SUCCESS;
    }
    blas_operand(j, 0, c->A, c->a_bytes, 0);
    blas_operand(j, 1, c->B, c->b_bytes, c->b_written);
    blas_operand(j, 2, c->C, c->c_bytes, c->c_written);
    j->op[0].stride = c->stride_a * e;
    j->op[1].stride = c->stride_b * e;
    j->op[2].stride = c->stride_c * e;
    for (int i = 0; i < 3; i++)
        j->op[i].by_array = c->by_array;
    j->op[0].unread_if = c->a_unread_if;
    j->op[1].unread_if = c->b_unread_if;
    return blas_submit(j, c->flops * (double)c->count);
}

/* The operands of a running level-3 job, sizes as CBLAS takes them. */
struct l3_run {
    void *A, *B, *C;
    int m, n, k, lda, ldb, ldc;
};

static struct l3_run
l3_run_of(const struct blas_job *j)
{
    struct l3_run r = {
        j->op[0].host, j->op[1].host, j->op[2].host,
        (int)j->a.m, (int)j->a.n, (int)j->a.k,
        (int)j->a.lda, (int)j->a.ldb, (int)j->a.ldc,
    };

    return r;
}

/* op(X) has `rows` rows: X's own when not transposed, else its columns. */
static int64_t
op_rows(int trans, int64_t rows, int64_t cols)
{
    return trans == CblasNoTrans ? rows : cols;
}

/* ---- gemm ------------------------------------------------------------------- */

/* C = alpha op(A) op(B) + beta C in a job's element type, on operands
 * given explicitly (the syrkx temporaries use it too). */
static void
gemm_on(const struct blas_job *j, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb,
        int m, int n, int k, const void *alpha, const void *A, int lda,
        const void *B, int ldb, const void *beta, void *C, int ldc)
{
    const CBLAS_ORDER o = CblasColMajor;
    float fa, fb;
    double da, db;

    switch (j->elem) {
    case BLAS_S:
        memcpy(&fa, alpha, sizeof(fa));
        memcpy(&fb, beta, sizeof(fb));
        cblas_sgemm(o, ta, tb, m, n, k, fa, A, lda, B, ldb, fb, C, ldc);
        break;
    case BLAS_D:
        memcpy(&da, alpha, sizeof(da));
        memcpy(&db, beta, sizeof(db));
        cblas_dgemm(o, ta, tb, m, n, k, da, A, lda, B, ldb, db, C, ldc);
        break;
    case BLAS_C:
        cblas_cgemm(o, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        break;
    case BLAS_Z:
        cblas_zgemm(o, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        break;
    }
}

static CUresult
gemm_kernel(struct blas_job *j)
{
    struct l3_run r = l3_run_of(j);

    gemm_on(j, j->a.trans, j->a.transb, r.m, r.n, r.k, blas_p(j, 0), r.A,
            r.lda, r.B, r.ldb, blas_p(j, 1), r.C, r.ldc);
    return CUDA_SUCCESS;
}

/* How a gemm entry point gives its batch. */
enum batch { ONE, BY_ARRAY, STRIDED };

static cublasStatus_t
gemm(cublasHandle_t handle, const char *name, enum blas_elem e,
     enum batch batch, cublasOperation_t transa, cublasOperation_t transb,
     int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
     int64_t lda, int64_t stride_a, const void *B, int64_t ldb,
     int64_t stride_b, const void *beta, void *C, int64_t ldc,
     int64_t stride_c, int64_t count)
{
    int ta = blas_trans(transa), tb = blas_trans(transb);
    size_t es = blas_elem_size(e);
    int64_t arows = op_rows(ta, m, k), brows = op_rows(tb, k, n);
    struct l3 c = {
        .name = name, .elem = e, .kernel = gemm_kernel,
        .a = { .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc,
               .trans = (CBLAS_TRANSPOSE)ta, .transb = (CBLAS_TRANSPOSE)tb },
        .alpha = alpha, .beta = beta, .alpha_size = es, .beta_size = es,
        .A = A, .B = B, .C = C, .c_written = 1, .count = count,
        .by_array = batch == BY_ARRAY, .a_unread_if = 1, .b_unread_if = 1,
        .beta_keeps = 1,
        .flops = 2.0 * (double)m * (double)n * (double)k,
    };

    if (batch == STRIDED) {
        c.stride_a = stride_a;
        c.stride_b = stride_b;
        c.stride_c = stride_c;
    }
    c.ok = ta >= 0 && tb >= 0 && m >= 0 && n >= 0 && k >= 0 && count >= 0 &&
           lda >= blas_max1(arows) && ldb >= blas_max1(brows) &&
           ldc >= blas_max1(m) && alpha != NULL && beta != NULL;
    c.empty = m == 0 || n == 0;
    c.a_bytes = blas_matrix_bytes(arows, ta == CblasNoTrans ? k : m, lda, es);
    c.b_bytes = blas_matrix_bytes(brows, tb == CblasNoTrans ? n : k, ldb, es);
    c.c_bytes = blas_matrix_bytes(m, n, ldc, es);
    return l3_submit(handle, &c);
}

#define DEFINE_GEMM(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const T *alpha, const T *A, I lda, const T *B, I ldb,  \
                      const T *beta, T *C, I ldc)                            \
    {                                                                        \
        return gemm(handle, #fn, E, ONE, transa, transb, m, n, k, alpha, A,  \
                    lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);                  \
    }
BLAS_BOTH(DEFINE_GEMM, cublasDgemm_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_GEMM, cublasCgemm_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_GEMM, cublasZgemm_v2, cuDoubleComplex, double, BLAS_Z)
/* The 3m forms differ on a GPU in the algorithm only. */
BLAS_BOTH(DEFINE_GEMM, cublasCgemm3m, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_GEMM, cublasZgemm3m, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_GEMM_BATCHED(fn, T, R, I, E)                                  \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const T *alpha, const T *const Aarray[], I lda,        \
                      const T *const Barray[], I ldb, const T *beta,         \
                      T *const Carray[], I ldc, I batchCount)                \
    {                                                                        \
        return gemm(handle, #fn, E, BY_ARRAY, transa, transb, m, n, k,       \
                    alpha, Aarray, lda, 0, Barray, ldb, 0, beta,             \
                    (void *)(uintptr_t)Carray, ldc, 0, batchCount);          \
    }
BLAS_BOTH(DEFINE_GEMM_BATCHED, cublasDgemmBatched, double, double, BLAS_D)
BLAS_BOTH(DEFINE_GEMM_BATCHED, cublasCgemmBatched, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_GEMM_BATCHED, cublasZgemmBatched, cuDoubleComplex, double,
          BLAS_Z)
BLAS_BOTH(DEFINE_GEMM_BATCHED, cublasCgemm3mBatched, cuComplex, float,
          BLAS_C)

#define DEFINE_GEMM_STRIDED(fn, T, R, I, E)                                  \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, I k,               \
                      const T *alpha, const T *A, I lda,                     \
                      long long int strideA, const T *B, I ldb,              \
                      long long int strideB, const T *beta, T *C, I ldc,     \
                      long long int strideC, I batchCount)                   \
    {                                                                        \
        return gemm(handle, #fn, E, STRIDED, transa, transb, m, n, k, alpha, \
                    A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC, \
                    batchCount);                                             \
    }
BLAS_BOTH(DEFINE_GEMM_STRIDED, cublasDgemmStridedBatched, double, double,
          BLAS_D)
BLAS_BOTH(DEFINE_GEMM_STRIDED, cublasCgemmStridedBatched, cuComplex, float,
          BLAS_C)
BLAS_BOTH(DEFINE_GEMM_STRIDED, cublasZgemmStridedBatched, cuDoubleComplex,
          double, BLAS_Z)
BLAS_BOTH(DEFINE_GEMM_STRIDED, cublasCgemm3mStridedBatched, cuComplex, float,
          BLAS_C)

/* ---- symm/hemm ---------------------------------------------------------------- */

static CUresult
symm_kernel(struct blas_job *j)
{
    struct l3_run r = l3_run_of(j);
    const CBLAS_ORDER o = CblasColMajor;
    CBLAS_SIDE s = j->a.side;
    CBLAS_UPLO u = j->a.uplo;

    switch (j->elem) {
    case BLAS_S:
        cblas_ssymm(o, s, u, r.m, r.n, blas_f(j, 0), r.A, r.lda, r.B, r.ldb,
                    blas_f(j, 1), r.C, r.ldc);
        break;
    case BLAS_D:
        cblas_dsymm(o, s, u, r.m, r.n, blas_d(j, 0), r.A, r.lda, r.B, r.ldb,
                    blas_d(j, 1), r.C, r.ldc);
        break;
    case BLAS_C:
        (j->form ? cblas_chemm : cblas_csymm)(o, s, u, r.m, r.n,
                                              blas_p(j, 0), r.A, r.lda, r.B,
                                              r.ldb, blas_p(j, 1), r.C,
                                              r.ldc);
        break;
    case BLAS_Z:
        (j->form ? cblas_zhemm : cblas_zsymm)(o, s, u, r.m, r.n,
                                              blas_p(j, 0), r.A, r.lda, r.B,
                                              r.ldb, blas_p(j, 1), r.C,
                                              r.ldc);
        break;
    }
    return CUDA_SUCCESS;
}

/* C = alpha A B + beta C (left) or alpha B A + beta C (right), A
 * symmetric or Hermitian (`herm`). */
static cublasStatus_t
symm(cublasHandle_t handle, const char *name, enum blas_elem e, int herm,
     cublasSideMode_t side, cublasFillMode_t uplo, int64_t m, int64_t n,
     const void *alpha, const void *A, int64_t lda, const void *B,
     int64_t ldb, const void *beta, void *C, int64_t ldc)
{
    int s = blas_side(side), u = blas_uplo(uplo);
    int64_t order = s == CblasLeft ? m : n;
    size_t es = blas_elem_size(e);
    struct l3 c = {
        .name = name, .elem = e, .kernel = symm_kernel, .form = herm,
        .a = { .m = m, .n = n, .lda = lda, .ldb = ldb, .ldc = ldc,
               .side = (CBLAS_SIDE)s, .uplo = (CBLAS_UPLO)u },
        .alpha = alpha, .beta = beta, .alpha_size = es, .beta_size = es,
        .A = A, .B = B, .C = C, .c_written = 1, .count = 1,
        .a_unread_if = 1, .b_unread_if = 1, .beta_keeps = 1,
        .flops = 2.0 * (double)m * (double)n * (double)order,
    };

    c.ok = s >= 0 && u >= 0 && m >= 0 && n >= 0 &&
           lda >= blas_max1(order) && ldb >= blas_max1(m) &&
           ldc >= blas_max1(m) && alpha != NULL && beta != NULL;
    c.empty = m == 0 || n == 0;
    c.a_bytes = blas_matrix_bytes(order, order, lda, es);
    c.b_bytes = blas_matrix_bytes(m, n, ldb, es);
    c.c_bytes = blas_matrix_bytes(m, n, ldc, es);
    return l3_submit(handle, &c);
}

#define DEFINE_SYMMF(fn, T, I, E, herm)                                      \
    cublasStatus_t fn(cublasHandle_t handle, cublasSideMode_t side,          \
                      cublasFillMode_t uplo, I m, I n, const T *alpha,       \
                      const T *A, I lda, const T *B, I ldb, const T *beta,   \
                      T *C, I ldc)                                           \
    {                                                                        \
        return symm(handle, #fn, E, herm, side, uplo, m, n, alpha, A, lda,   \
                    B, ldb, beta, C, ldc);                                   \
    }
#define DEFINE_SYMM(fn, T, R, I, E) DEFINE_SYMMF(fn, T, I, E, 0)
#define DEFINE_HEMM(fn, T, R, I, E) DEFINE_SYMMF(fn, T, I, E, 1)
BLAS_BOTH(DEFINE_SYMM, cublasSsymm_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SYMM, cublasDsymm_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SYMM, cublasCsymm_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SYMM, cublasZsymm_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_HEMM, cublasChemm_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HEMM, cublasZhemm_v2, cuDoubleComplex, double, BLAS_Z)

/* ---- syrk/herk, syr2k/her2k, syrkx/herkx --------------------------------------- */

enum { RK_SYRK, RK_HERK, RK_SYR2K, RK_HER2K, RK_SYRKX, RK_HERKX };

/* C's triangle = P's + beta C's (C not read when beta is 0), P the n x n
 * product in a temporary; herkx takes a real beta and gives a real
 * diagonal, as herk and her2k do. */
#define TRIANGLE_LOOP(T, RT, herm)                                           \
    do {                                                                     \
        const T *p = prod;                                                   \
        T *cm = r->C;                                                        \
        T beta = 0;                                                          \
                                                                             \
        if (herm) {                                                          \
            RT b;                                                            \
            memcpy(&b, blas_p(j, 1), sizeof(b));                             \
            beta = b;                                                        \
        } else {                                                             \
            memcpy(&beta, blas_p(j, 1), sizeof(beta));                       \
        }                                                                    \
        for (int col = 0; col < r->n; col++) {                               \
            int lo = upper ? 0 : col, hi = upper ? col : r->n - 1;           \
                                                                             \
            for (int row = lo; row <= hi; row++) {                           \
                T *cij = &cm[blas_at(row, col, r->ldc)];                     \
                T v = p[blas_at(row, col, r->n)];                            \
                                                                             \
                if (beta != 0)                                               \
                    v += beta * *cij;                                        \
                if ((herm) && row == col)                                    \
                    v = creal(v);                                            \
                *cij = v;                                                    \
            }                                                                \
        }                                                                    \
    } while (0)

/* syrkx and herkx: P = alpha op(A) op(B)^T (^H for herkx) by a product,
 * then the triangle of C. */
static CUresult
rkx(struct blas_job *j, const struct l3_run *r, int herm)
{
    static const double zero[2];
    CBLAS_TRANSPOSE t = j->a.trans, tb;
    int upper = j->a.uplo == CblasUpper;
    void *prod;

    prod = calloc((size_t)r->n * (size_t)r->n, blas_elem_size(j->elem));
    if (prod == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tb = herm ? CblasConjTrans : CblasTrans;
    if (t != CblasNoTrans) {    /* op(A) = A^T (A^H), op(B)^T = B */
        t = tb;
        tb = CblasNoTrans;
    }
    if (r->A != NULL)           /* alpha 0: A and B not opened, P = 0 */
        gemm_on(j, t, tb, r->n, r->n, r->k, blas_p(j, 0), r->A, r->lda,
                r->B, r->ldb, zero, prod, r->n);
    switch (j->elem) {
    case BLAS_S:
        TRIANGLE_LOOP(float, float, 0);
        break;
    case BLAS_D:
        TRIANGLE_LOOP(double, double, 0);
        break;
    case BLAS_C:
        TRIANGLE_LOOP(float _Complex, float, herm);
        break;
    case BLAS_Z:
        TRIANGLE_LOOP(double _Complex, double, herm);
        break;
    }
    free(prod);
    return CUDA_SUCCESS;
}

#define RK_CALL(sfn, dfn, cfn, zfn, ...)                                     \
    do {                                                                     \
        switch (j->elem) {                                                   \
        case BLAS_S: sfn(__VA_ARGS__); break;                                \
        case BLAS_D: dfn(__VA_ARGS__); break;                                \
        case BLAS_C: cfn(__VA_ARGS__); break;                                \
        case BLAS_Z: zfn(__VA_ARGS__); break;                                \
        }                                                                    \
    } while (0)

static CUresult
rank_k_kernel(struct blas_job *j)
{
    struct l3_run r = l3_run_of(j);
    const CBLAS_ORDER o = CblasColMajor;
    CBLAS_UPLO u = j->a.uplo;
    CBLAS_TRANSPOSE t = j->a.trans;
    int d = j->elem == BLAS_D || j->elem == BLAS_Z;

    switch (j->form) {
    case RK_SYRK:
        if (j->elem == BLAS_S)
            cblas_ssyrk(o, u, t, r.n, r.k, blas_f(j, 0), r.A, r.lda,
                        blas_f(j, 1), r.C, r.ldc);
        else if (j->elem == BLAS_D)
            cblas_dsyrk(o, u, t, r.n, r.k, blas_d(j, 0), r.A, r.lda,
                        blas_d(j, 1), r.C, r.ldc);
        else
            (d ? cblas_zsyrk : cblas_csyrk)(o, u, t, r.n, r.k, blas_p(j, 0),
                                            r.A, r.lda, blas_p(j, 1), r.C,
                                            r.ldc);
        break;
    case RK_HERK:
        if (d)
            cblas_zherk(o, u, t, r.n, r.k, blas_d(j, 0), r.A, r.lda,
                        blas_d(j, 1), r.C, r.ldc);
        else
            cblas_cherk(o, u, t, r.n, r.k, blas_f(j, 0), r.A, r.lda,
                        blas_f(j, 1), r.C, r.ldc);
        break;
    case RK_SYR2K:
        if (j->elem == BLAS_S)
            cblas_ssyr2k(o, u, t, r.n, r.k, blas_f(j, 0), r.A, r.lda, r.B,
                         r.ldb, blas_f(j, 1), r.C, r.ldc);
        else if (j->elem == BLAS_D)
            cblas_dsyr2k(o, u, t, r.n, r.k, blas_d(j, 0), r.A, r.lda, r.B,
                         r.ldb, blas_d(j, 1), r.C, r.ldc);
        else
            (d ? cblas_zsyr2k : cblas_csyr2k)(o, u, t, r.n, r.k,
                                              blas_p(j, 0), r.A, r.lda, r.B,
                                              r.ldb, blas_p(j, 1), r.C,
                                              r.ldc);
        break;
    case RK_HER2K:
        if (d)
            cblas_zher2k(o, u, t, r.n, r.k, blas_p(j, 0), r.A, r.lda, r.B,
                         r.ldb, blas_d(j, 1), r.C, r.ldc);
        else
            cblas_cher2k(o, u, t, r.n, r.k, blas_p(j, 0), r.A, r.lda, r.B,
                         r.ldb, blas_f(j, 1), r.C, r.ldc);
        break;
    default:
        return rkx(j, &r, j->form == RK_HERKX);
    }
    return CUDA_SUCCESS;
}

/* The transposes a rank-k form takes: N and T for the symmetric ones (C
 * too, meaning T, for real types), N and C for the Hermitian ones. */
static int
rank_k_trans(int form, enum blas_elem e, cublasOperation_t trans)
{
    int herm = form == RK_HERK || form == RK_HER2K || form == RK_HERKX;

    switch (trans) {
    case CUBLAS_OP_N:
        return CblasNoTrans;
    case CUBLAS_OP_T:
        return herm ? -1 : CblasTrans;
    case CUBLAS_OP_C:
        return herm ? CblasConjTrans : blas_complex(e) ? -1 : CblasTrans;
    default:
        return -1;
    }
}

/* The triangle of C (n x n) = alpha op(A) op(B)^T-like products + beta C,
 * op(A) n x k; B is NULL for syrk and herk. The Hermitian forms take a
 * real beta (and herk a real alpha). */
static cublasStatus_t
rank_k(cublasHandle_t handle, const char *name, enum blas_elem e, int form,
       cublasFillMode_t uplo, cublasOperation_t trans, int64_t n, int64_t k,
       const void *alpha, const void *A, int64_t lda, const void *B,
       int64_t ldb, const void *beta, void *C, int64_t ldc)
{
    int u = blas_uplo(uplo), t = rank_k_trans(form, e, trans);
    int herm = form == RK_HERK || form == RK_HER2K || form == RK_HERKX;
    int64_t rows = t == CblasNoTrans ? n : k, cols = t == CblasNoTrans ? k : n;
    size_t es = blas_elem_size(e), rs = blas_real_size(e);
    int two = form == RK_SYR2K || form == RK_HER2K;
    struct l3 c = {
        .name = name, .elem = e, .kernel = rank_k_kernel, .form = form,
        .a = { .n = n, .k = k, .lda = lda, .ldb = ldb, .ldc = ldc,
               .uplo = (CBLAS_UPLO)u, .trans = (CBLAS_TRANSPOSE)t },
        .alpha = alpha, .beta = beta,
        .alpha_size = form == RK_HERK ? rs : es, .beta_size = herm ? rs : es,
        .A = A, .B = B, .C = C, .c_written = 1, .count = 1,
        .a_unread_if = 1, .b_unread_if = 1, .beta_keeps = 1,
        .flops = (double)n * (double)(n + 1) * (double)k * (two ? 2.0 : 1.0),
    };

    c.ok = u >= 0 && t >= 0 && n >= 0 && k >= 0 && lda >= blas_max1(rows) &&
           (B == NULL || ldb >= blas_max1(rows)) && ldc >= blas_max1(n) &&
           alpha != NULL && beta != NULL;
    c.empty = n == 0;
    c.a_bytes = blas_matrix_bytes(rows, cols, lda, es);
    if (B != NULL)
        c.b_bytes = blas_matrix_bytes(rows, cols, ldb, es);
    c.c_bytes = blas_matrix_bytes(n, n, ldc, es);
    return l3_submit(handle, &c);
}

#define DEFINE_SYRKF(fn, T, AT, BT, I, E, form)                              \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo,          \
                      cublasOperation_t trans, I n, I k, const AT *alpha,    \
                      const T *A, I lda, const BT *beta, T *C, I ldc)        \
    {                                                                        \
        return rank_k(handle, #fn, E, form, uplo, trans, n, k, alpha, A,     \
                      lda, NULL, 0, beta, C, ldc);                           \
    }
#define DEFINE_SYRK(fn, T, R, I, E) DEFINE_SYRKF(fn, T, T, T, I, E, RK_SYRK)
#define DEFINE_HERK(fn, T, R, I, E) DEFINE_SYRKF(fn, T, R, R, I, E, RK_HERK)
BLAS_BOTH(DEFINE_SYRK, cublasSsyrk_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SYRK, cublasDsyrk_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SYRK, cublasCsyrk_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SYRK, cublasZsyrk_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_HERK, cublasCherk_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HERK, cublasZherk_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_SYR2KF(fn, T, BT, I, E, form)                                 \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo,          \
                      cublasOperation_t trans, I n, I k, const T *alpha,     \
                      const T *A, I lda, const T *B, I ldb, const BT *beta,  \
                      T *C, I ldc)                                           \
    {                                                                        \
        return rank_k(handle, #fn, E, form, uplo, trans, n, k, alpha, A,     \
                      lda, B, ldb, beta, C, ldc);                            \
    }
#define DEFINE_SYR2K(fn, T, R, I, E) DEFINE_SYR2KF(fn, T, T, I, E, RK_SYR2K)
#define DEFINE_HER2K(fn, T, R, I, E) DEFINE_SYR2KF(fn, T, R, I, E, RK_HER2K)
#define DEFINE_SYRKX(fn, T, R, I, E) DEFINE_SYR2KF(fn, T, T, I, E, RK_SYRKX)
#define DEFINE_HERKX(fn, T, R, I, E) DEFINE_SYR2KF(fn, T, R, I, E, RK_HERKX)
BLAS_BOTH(DEFINE_SYR2K, cublasSsyr2k_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SYR2K, cublasDsyr2k_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SYR2K, cublasCsyr2k_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SYR2K, cublasZsyr2k_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_HER2K, cublasCher2k_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HER2K, cublasZher2k_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_SYRKX, cublasSsyrkx, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SYRKX, cublasDsyrkx, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SYRKX, cublasCsyrkx, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SYRKX, cublasZsyrkx, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_HERKX, cublasCherkx, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HERKX, cublasZherkx, cuDoubleComplex, double, BLAS_Z)

/* ---- trmm, trsm, trsmBatched --------------------------------------------------- */

enum { TR_MM, TR_SM };

static CUresult
tr_kernel(struct blas_job *j)
{
    struct l3_run r = l3_run_of(j);
    const CBLAS_ORDER o = CblasColMajor;
    CBLAS_SIDE s = j->a.side;
    CBLAS_UPLO u = j->a.uplo;
    CBLAS_TRANSPOSE t = j->a.trans;
    CBLAS_DIAG dg = j->a.diag;
    size_t es = blas_elem_size(j->elem);
    void *X = r.B;
    int ldx = r.ldb;

    if (j->form == TR_MM) {
        /* cuBLAS's trmm writes C = alpha op(A) B: B copied into C (the
         * same memory when the call is in place), then the BLAS's trmm in
         * place on C. */
        for (int col = 0; col < r.n; col++)
            memmove((unsigned char *)r.C + blas_at(0, col, r.ldc) * es,
                    (unsigned char *)r.B + blas_at(0, col, r.ldb) * es,
                    (size_t)r.m * es);
        X = r.C;
        ldx = r.ldc;
    }
    switch (j->elem) {
    case BLAS_S:
        (j->form == TR_MM ? cblas_strmm : cblas_strsm)(
            o, s, u, t, dg, r.m, r.n, blas_f(j, 0), r.A, r.lda, X, ldx);
        break;
    case BLAS_D:
        (j->form == TR_MM ? cblas_dtrmm : cblas_dtrsm)(
            o, s, u, t, dg, r.m, r.n, blas_d(j, 0), r.A, r.lda, X, ldx);
        break;
    case BLAS_C:
        (j->form == TR_MM ? cblas_ctrmm : cblas_ctrsm)(
            o, s, u, t, dg, r.m, r.n, blas_p(j, 0), r.A, r.lda, X, ldx);
        break;
    case BLAS_Z:
        (j->form == TR_MM ? cblas_ztrmm : cblas_ztrsm)(
            o, s, u, t, dg, r.m, r.n, blas_p(j, 0), r.A, r.lda, X, ldx);
        break;
    }
    return CUDA_SUCCESS;
}

/* trmm (C = alpha op(A) B or alpha B op(A)) and trsm (B = alpha op(A)^-1
 * B or alpha B op(A)^-1; C NULL), A triangular; trsmBatched with `count`
 * problems in device pointer arrays. */
static cublasStatus_t
triangular(cublasHandle_t handle, const char *name, enum blas_elem e,
           int form, int by_array, cublasSideMode_t side,
           cublasFillMode_t uplo, cublasOperation_t trans,
           cublasDiagType_t diag, int64_t m, int64_t n, const void *alpha,
           const void *A, int64_t lda, const void *B, int64_t ldb, void *C,
           int64_t ldc, int64_t count)
{
    int s = blas_side(side), u = blas_uplo(uplo), t = blas_trans(trans);
    int d = blas_diag(diag);
    int64_t order = s == CblasLeft ? m : n;
    size_t es = blas_elem_size(e);
    struct l3 c = {
        .name = name, .elem = e, .kernel = tr_kernel, .form = form,
        .a = { .m = m, .n = n, .lda = lda, .ldb = ldb, .ldc = ldc,
               .side = (CBLAS_SIDE)s, .uplo = (CBLAS_UPLO)u,
               .trans = (CBLAS_TRANSPOSE)t, .diag = (CBLAS_DIAG)d },
        .alpha = alpha, .alpha_size = es, .A = A, .B = B, .C = C,
        .b_written = form == TR_SM, .c_written = 1, .count = count,
        .by_array = by_array,
        .flops = (double)m * (double)n * (double)order,
    };

    c.ok = s >= 0 && u >= 0 && t >= 0 && d >= 0 && m >= 0 && n >= 0 &&
           count >= 0 && lda >= blas_max1(order) && ldb >= blas_max1(m) &&
           (form == TR_SM || ldc >= blas_max1(m)) && alpha != NULL;
    c.empty = m == 0 || n == 0;
    c.a_bytes = blas_matrix_bytes(order, order, lda, es);
    c.b_bytes = blas_matrix_bytes(m, n, ldb, es);
    if (form == TR_MM)
        c.c_bytes = blas_matrix_bytes(m, n, ldc, es);
    return l3_submit(handle, &c);
}

#define DEFINE_TRMM(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasSideMode_t side,          \
                      cublasFillMode_t uplo, cublasOperation_t trans,        \
                      cublasDiagType_t diag, I m, I n, const T *alpha,       \
                      const T *A, I lda, const T *B, I ldb, T *C, I ldc)     \
    {                                                                        \
        return triangular(handle, #fn, E, TR_MM, 0, side, uplo, trans, diag, \
                          m, n, alpha, A, lda, B, ldb, C, ldc, 1);           \
    }
BLAS_BOTH(DEFINE_TRMM, cublasStrmm_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TRMM, cublasDtrmm_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TRMM, cublasCtrmm_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TRMM, cublasZtrmm_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_TRSM(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasSideMode_t side,          \
                      cublasFillMode_t uplo, cublasOperation_t trans,        \
                      cublasDiagType_t diag, I m, I n, const T *alpha,       \
                      const T *A, I lda, T *B, I ldb)                        \
    {                                                                        \
        return triangular(handle, #fn, E, TR_SM, 0, side, uplo, trans, diag, \
                          m, n, alpha, A, lda, B, ldb, NULL, 0, 1);          \
    }
BLAS_BOTH(DEFINE_TRSM, cublasStrsm_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TRSM, cublasDtrsm_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TRSM, cublasCtrsm_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TRSM, cublasZtrsm_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_TRSM_BATCHED(fn, T, R, I, E)                                  \
    cublasStatus_t fn(cublasHandle_t handle, cublasSideMode_t side,          \
                      cublasFillMode_t uplo, cublasOperation_t trans,        \
                      cublasDiagType_t diag, I m, I n, const T *alpha,       \
                      const T *const A[], I lda, T *const B[], I ldb,        \
                      I batchCount)                                          \
    {                                                                        \
        return triangular(handle, #fn, E, TR_SM, 1, side, uplo, trans, diag, \
                          m, n, alpha, A, lda, B, ldb, NULL, 0, batchCount); \
    }
BLAS_BOTH(DEFINE_TRSM_BATCHED, cublasStrsmBatched, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TRSM_BATCHED, cublasDtrsmBatched, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TRSM_BATCHED, cublasCtrsmBatched, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TRSM_BATCHED, cublasZtrsmBatched, cuDoubleComplex, double,
          BLAS_Z)

/* ---- geam, dgmm ------------------------------------------------------------------ */

static float
conj_s(float v)
{
    return v;
}

static double
conj_d(double v)
{
    return v;
}

/* C = alpha op(A) + beta op(B), element by element; a matrix whose scalar
 * is 0 was not opened and counts as 0. In place (C is A or B, not
 * transposed, same leading dimension) each element is read before it is
 * written. */
#define GEAM_LOOP(T, conjugate)                                              \
    do {                                                                     \
        const T *a = r.A, *b = r.B;                                          \
        T *cm = r.C, alpha, beta;                                            \
                                                                             \
        memcpy(&alpha, blas_p(j, 0), sizeof(alpha));                         \
        memcpy(&beta, blas_p(j, 1), sizeof(beta));                           \
        for (int col = 0; col < r.n; col++) {                                \
            for (int row = 0; row < r.m; row++) {                            \
                T v = 0;                                                     \
                                                                             \
                if (a != NULL)                                               \
                    v = alpha * (ta == CblasNoTrans                          \
                                     ? a[blas_at(row, col, r.lda)]           \
                                 : ta == CblasTrans                          \
                                     ? a[blas_at(col, row, r.lda)]           \
                                     : conjugate(                            \
                                           a[blas_at(col, row, r.lda)]));    \
                if (b != NULL)                                               \
                    v += beta * (tb == CblasNoTrans                          \
                                     ? b[blas_at(row, col, r.ldb)]           \
                                 : tb == CblasTrans                          \
                                     ? b[blas_at(col, row, r.ldb)]           \
                                     : conjugate(                            \
                                           b[blas_at(col, row, r.ldb)]));    \
                cm[blas_at(row, col, r.ldc)] = v;                            \
            }                                                                \
        }                                                                    \
    } while (0)

static CUresult
geam_kernel(struct blas_job *j)
{
    struct l3_run r = l3_run_of(j);
    CBLAS_TRANSPOSE ta = j->a.trans, tb = j->a.transb;

    switch (j->elem) {
    case BLAS_S:
        GEAM_LOOP(float, conj_s);
        break;
    case BLAS_D:
        GEAM_LOOP(double, conj_d);
        break;
    case BLAS_C:
        GEAM_LOOP(float _Complex, conjf);
        break;
    case BLAS_Z:
        GEAM_LOOP(double _Complex, conj);
        break;
    }
    return CUDA_SUCCESS;
}

static cublasStatus_t
geam(cublasHandle_t handle, const char *name, enum blas_elem e,
     cublasOperation_t transa, cublasOperation_t transb, int64_t m,
     int64_t n, const void *alpha, const void *A, int64_t lda,
     const void *beta, const void *B, int64_t ldb, void *C, int64_t ldc)
{
    int ta = blas_trans(transa), tb = blas_trans(transb);
    int64_t arows = op_rows(ta, m, n), brows = op_rows(tb, m, n);
    size_t es = blas_elem_size(e);
    struct l3 c = {
        .name = name, .elem = e, .kernel = geam_kernel,
        .a = { .m = m, .n = n, .lda = lda, .ldb = ldb, .ldc = ldc,
               .trans = (CBLAS_TRANSPOSE)ta, .transb = (CBLAS_TRANSPOSE)tb },
        .alpha = alpha, .beta = beta, .alpha_size = es, .beta_size = es,
        .A = A, .B = B, .C = C, .c_written = 1, .count = 1,
        .a_unread_if = 1, .b_unread_if = 2,
        .flops = 3.0 * (double)m * (double)n,
    };
    /* In place: C may be A or B only as that matrix untransposed with
     * C's leading dimension. */
    int in_place_ok = (C != A || (ta == CblasNoTrans && lda == ldc)) &&
                      (C != B || (tb == CblasNoTrans && ldb == ldc));

    c.ok = ta >= 0 && tb >= 0 && m >= 0 && n >= 0 &&
           lda >= blas_max1(arows) && ldb >= blas_max1(brows) &&
           ldc >= blas_max1(m) && alpha != NULL && beta != NULL &&
           in_place_ok;
    c.empty = m == 0 || n == 0;
    c.a_bytes = blas_matrix_bytes(arows, op_rows(ta, n, m), lda, es);
    c.b_bytes = blas_matrix_bytes(brows, op_rows(tb, n, m), ldb, es);
    c.c_bytes = blas_matrix_bytes(m, n, ldc, es);
    return l3_submit(handle, &c);
}

#define DEFINE_GEAM(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t transa,       \
                      cublasOperation_t transb, I m, I n, const T *alpha,    \
                      const T *A, I lda, const T *beta, const T *B, I ldb,   \
                      T *C, I ldc)                                           \
    {                                                                        \
        return geam(handle, #fn, E, transa, transb, m, n, alpha, A, lda,     \
                    beta, B, ldb, C, ldc);                                   \
    }
BLAS_BOTH(DEFINE_GEAM, cublasSgeam, float, float, BLAS_S)
BLAS_BOTH(DEFINE_GEAM, cublasDgeam, double, double, BLAS_D)
BLAS_BOTH(DEFINE_GEAM, cublasCgeam, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_GEAM, cublasZgeam, cuDoubleComplex, double, BLAS_Z)

/* C = A diag(x) (right) or diag(x) A (left); x's increment of either sign
 * (or 0) as in the BLAS. In place when C is A with A's leading dimension. */
#define DGMM_LOOP(T)                                                         \
    do {                                                                     \
        const T *a = r.A, *x = r.B;                                          \
        T *cm = r.C;                                                         \
        int len = left ? r.m : r.n, inc = (int)j->a.incx;                    \
                                                                             \
        for (int col = 0; col < r.n; col++)                                  \
            for (int row = 0; row < r.m; row++)                              \
                cm[blas_at(row, col, r.ldc)] =                               \
                    a[blas_at(row, col, r.lda)] *                            \
                    x[blas_vat(left ? row : col, len, inc)];                 \
    } while (0)

static CUresult
dgmm_kernel(struct blas_job *j)
{
    struct l3_run r = l3_run_of(j);
    int left = j->a.side == CblasLeft;

    switch (j->elem) {
    case BLAS_S:
        DGMM_LOOP(float);
        break;
    case BLAS_D:
        DGMM_LOOP(double);
        break;
    case BLAS_C:
        DGMM_LOOP(float _Complex);
        break;
    case BLAS_Z:
        DGMM_LOOP(double _Complex);
        break;
    }
    return CUDA_SUCCESS;
}

/* x is operand 1 (B's place). */
static cublasStatus_t
dgmm(cublasHandle_t handle, const char *name, enum blas_elem e,
     cublasSideMode_t mode, int64_t m, int64_t n, const void *A, int64_t lda,
     const void *x, int64_t incx, void *C, int64_t ldc)
{
    int s = blas_side(mode);
    size_t es = blas_elem_size(e);
    struct l3 c = {
        .name = name, .elem = e, .kernel = dgmm_kernel,
        .a = { .m = m, .n = n, .lda = lda, .ldc = ldc, .incx = incx,
               .side = (CBLAS_SIDE)s },
        .A = A, .B = x, .C = C, .c_written = 1, .count = 1,
        .flops = (double)m * (double)n,
    };

    c.ok = s >= 0 && m >= 0 && n >= 0 && lda >= blas_max1(m) &&
           ldc >= blas_max1(m);
    c.empty = m == 0 || n == 0;
    c.a_bytes = blas_matrix_bytes(m, n, lda, es);
    c.b_bytes = blas_vector_bytes(s == CblasLeft ? m : n, incx, es);
    c.c_bytes = blas_matrix_bytes(m, n, ldc, es);
    return l3_submit(handle, &c);
}

#define DEFINE_DGMM(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasSideMode_t mode, I m,     \
                      I n, const T *A, I lda, const T *x, I incx, T *C,      \
                      I ldc)                                                 \
    {                                                                        \
        return dgmm(handle, #fn, E, mode, m, n, A, lda, x, incx, C, ldc);    \
    }
BLAS_BOTH(DEFINE_DGMM, cublasSdgmm, float, float, BLAS_S)
BLAS_BOTH(DEFINE_DGMM, cublasDdgmm, double, double, BLAS_D)
BLAS_BOTH(DEFINE_DGMM, cublasCdgmm, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_DGMM, cublasZdgmm, cuDoubleComplex, double, BLAS_Z)
