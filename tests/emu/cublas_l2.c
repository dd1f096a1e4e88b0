/* The emulated cuBLAS level-2 routines in S, D, C and Z (gbmv, gemv, ger,
 * sbmv/hbmv, spmv/hpmv, spr/hpr, spr2/hpr2, symv/hemv, syr/her, syr2/her2,
 * tbmv, tbsv, tpmv, tpsv, trmv, trsv) and their _64 twins, on the generic
 * job of cublas_job.h with OpenBLAS doing the arithmetic. cublasSgemv_v2
 * is cublas_blas.c's. The complex symmetric (not Hermitian) forms that the
 * BLAS lacks (csymv, csyr, csyr2 and Z) are a full matrix and cblas gemv,
 * or loops. Arguments are checked as the library documents: a bad enum,
 * a negative size, a zero increment, a leading dimension too small or a
 * NULL scalar is INVALID_VALUE. */
#include <complex.h>
#include <cublas_v2.h>
#include <stdlib.h>

#include "cublas_job.h"

/* What a level-2 call hands the generic job: A (operand 0), x (1), y (2),
 * alpha (scalar 0) and beta (1). */
struct l2 {
    const char *name;
    enum blas_elem elem;
    blas_kernel kernel;
    int form;
    struct blas_args a;
    int ok;                         /* the arguments pass the checks */
    int empty;                      /* nothing to do */
    const void *alpha, *beta;
    size_t alpha_size, beta_size;   /* 0: none */
    const void *A;
    size_t a_bytes;
    int a_written;
    const void *x, *y;
    int64_t lenx, leny;
    int x_written;
    double flops;
};

/* Checks, then queues the job. With alpha 0 (given on the host) and no
 * beta, or beta 1, there is nothing to do; with alpha 0 known only when
 * the job runs, A and x are not read (an update then changes nothing). */
static cublasStatus_t
l2_submit(cublasHandle_t handle, const struct l2 *c)
{
    size_t e = blas_elem_size(c->elem);
    struct emu_blas_config cfg;
    struct blas_job *j;
    cublasStatus_t st;

    st = blas_begin(handle, c->name, c->ok, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS || c->empty)
        return st;
    j = blas_job_new(&cfg, c->name, c->elem, c->kernel);
    if (j == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    j->form = c->form;
    j->a = c->a;
    if (c->alpha_size != 0)
        blas_scalar(j, 0, c->alpha, c->alpha_size);
    if (c->beta_size != 0)
        blas_scalar(j, 1, c->beta, c->beta_size);
    if (c->alpha_size != 0 && blas_scalar_zero(j, 0) &&
        (c->beta_size == 0 || blas_scalar_one(j, 1))) {
        free(j);
        return CUBLAS_STATUS_SUCCESS;
    }
    blas_operand(j, 0, c->A, c->a_bytes, c->a_written);
    blas_operand(j, 1, c->x, blas_vector_bytes(c->lenx, c->a.incx, e),
                 c->x_written);
    if (c->y != NULL)
        blas_operand(j, 2, c->y, blas_vector_bytes(c->leny, c->a.incy, e),
                     1);
    if (c->alpha_size != 0) {
        j->op[0].unread_if = 1;
        j->op[1].unread_if = 1;
        if (c->beta_size == 0)
            j->op[2].unread_if = 1;
    }
    return blas_submit(j, c->flops);
}

/* The operands of a running level-2 job, sizes as CBLAS takes them. */
struct l2_run {
    void *A, *x, *y;
    int m, n, kl, ku, lda, incx, incy;
    CBLAS_TRANSPOSE trans;
    CBLAS_UPLO uplo;
    CBLAS_DIAG diag;
};

static struct l2_run
l2_run_of(const struct blas_job *j)
{
    struct l2_run r = {
        j->op[0].host, j->op[1].host, j->op[2].host,
        (int)j->a.m, (int)j->a.n, (int)j->a.kl, (int)j->a.ku,
        (int)j->a.lda, (int)j->a.incx, (int)j->a.incy,
        j->a.trans, j->a.uplo, j->a.diag,
    };

    return r;
}

/* ---- gemv, gbmv ------------------------------------------------------------- */

static CUresult
gemv_kernel(struct blas_job *j)
{
    struct l2_run r = l2_run_of(j);
    const CBLAS_ORDER o = CblasColMajor;

    switch (j->elem) {
    case BLAS_S:    /* sgbmv only: cublasSgemv_v2 is cublas_blas.c's */
        cblas_sgbmv(o, r.trans, r.m, r.n, r.kl, r.ku, blas_f(j, 0), r.A,
                    r.lda, r.x, r.incx, blas_f(j, 1), r.y, r.incy);
        break;
    case BLAS_D:
        if (j->form)
            cblas_dgbmv(o, r.trans, r.m, r.n, r.kl, r.ku, blas_d(j, 0), r.A,
                        r.lda, r.x, r.incx, blas_d(j, 1), r.y, r.incy);
        else
            cblas_dgemv(o, r.trans, r.m, r.n, blas_d(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_d(j, 1), r.y, r.incy);
        break;
    case BLAS_C:
        if (j->form)
            cblas_cgbmv(o, r.trans, r.m, r.n, r.kl, r.ku, blas_p(j, 0), r.A,
                        r.lda, r.x, r.incx, blas_p(j, 1), r.y, r.incy);
        else
            cblas_cgemv(o, r.trans, r.m, r.n, blas_p(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_p(j, 1), r.y, r.incy);
        break;
    case BLAS_Z:
        if (j->form)
            cblas_zgbmv(o, r.trans, r.m, r.n, r.kl, r.ku, blas_p(j, 0), r.A,
                        r.lda, r.x, r.incx, blas_p(j, 1), r.y, r.incy);
        else
            cblas_zgemv(o, r.trans, r.m, r.n, blas_p(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_p(j, 1), r.y, r.incy);
        break;
    }
    return CUDA_SUCCESS;
}

/* gemv (band 0: kl and ku unused) and gbmv (band 1). */
static cublasStatus_t
gemv(cublasHandle_t handle, const char *name, enum blas_elem e, int band,
     cublasOperation_t trans, int64_t m, int64_t n, int64_t kl, int64_t ku,
     const void *alpha, const void *A, int64_t lda, const void *x,
     int64_t incx, const void *beta, void *y, int64_t incy)
{
    int t = blas_trans(trans);
    int64_t rows = band ? kl + ku + 1 : m;
    struct l2 c = {
        .name = name, .elem = e, .kernel = gemv_kernel, .form = band,
        .a = { .m = m, .n = n, .kl = kl, .ku = ku, .lda = lda,
               .incx = incx, .incy = incy, .trans = (CBLAS_TRANSPOSE)t },
        .alpha = alpha, .beta = beta, .alpha_size = blas_elem_size(e),
        .beta_size = blas_elem_size(e), .A = A, .x = x, .y = y,
        .lenx = t == CblasNoTrans ? n : m, .leny = t == CblasNoTrans ? m : n,
        .flops = 2.0 * (double)m * (double)(band ? rows : n),
    };

    c.ok = t >= 0 && m >= 0 && n >= 0 && kl >= 0 && ku >= 0 &&
           lda >= blas_max1(rows) && incx != 0 && incy != 0 &&
           alpha != NULL && beta != NULL;
    c.empty = m == 0 || n == 0;
    c.a_bytes = blas_matrix_bytes(band ? rows : m, n, lda,
                                  blas_elem_size(e));
    return l2_submit(handle, &c);
}

#define DEFINE_GEMV(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t trans, I m,   \
                      I n, const T *alpha, const T *A, I lda, const T *x,    \
                      I incx, const T *beta, T *y, I incy)                   \
    {                                                                        \
        return gemv(handle, #fn, E, 0, trans, m, n, 0, 0, alpha, A, lda, x,  \
                    incx, beta, y, incy);                                    \
    }
BLAS_BOTH(DEFINE_GEMV, cublasDgemv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_GEMV, cublasCgemv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_GEMV, cublasZgemv_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_GBMV(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasOperation_t trans, I m,   \
                      I n, I kl, I ku, const T *alpha, const T *A, I lda,    \
                      const T *x, I incx, const T *beta, T *y, I incy)       \
    {                                                                        \
        return gemv(handle, #fn, E, 1, trans, m, n, kl, ku, alpha, A, lda,   \
                    x, incx, beta, y, incy);                                 \
    }
BLAS_BOTH(DEFINE_GBMV, cublasSgbmv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_GBMV, cublasDgbmv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_GBMV, cublasCgbmv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_GBMV, cublasZgbmv_v2, cuDoubleComplex, double, BLAS_Z)

/* ---- symv/hemv, sbmv/hbmv, spmv/hpmv ---------------------------------------- */

/* How a symmetric or Hermitian (or triangular) matrix is stored. */
enum storage { FULL, BAND, PACKED };

/* Which product: the storage times 2, plus 1 for Hermitian. */
#define SYM_FORM(storage, herm) ((storage) * 2 + (herm))

/* The complex symmetric A (full storage, one triangle) as a full
 * column-major n x n matrix, for cblas gemv. NULL without memory. */
static void *
complex_symmetric_full(const struct l2_run *r, size_t e)
{
    unsigned char *full = malloc((size_t)r->n * (size_t)r->n * e);
    const unsigned char *a = r->A;

    if (full == NULL)
        return NULL;
    for (int col = 0; col < r->n; col++) {
        for (int row = 0; row < r->n; row++) {
            int upper = r->uplo == CblasUpper;
            int stored = upper ? row <= col : row >= col;
            size_t from = stored ? blas_at(row, col, r->lda)
                                 : blas_at(col, row, r->lda);

            memcpy(full + blas_at(row, col, r->n) * e, a + from * e, e);
        }
    }
    return full;
}

static CUresult
csymv(struct blas_job *j, const struct l2_run *r)
{
    void *full = NULL;

    /* alpha 0: A and x were not opened; y = beta y. */
    if (r->A != NULL) {
        full = complex_symmetric_full(r, blas_elem_size(j->elem));
        if (full == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (j->elem == BLAS_C)
        cblas_cgemv(CblasColMajor, CblasNoTrans, r->n, r->n, blas_p(j, 0),
                    full, r->n, r->x, r->incx, blas_p(j, 1), r->y, r->incy);
    else
        cblas_zgemv(CblasColMajor, CblasNoTrans, r->n, r->n, blas_p(j, 0),
                    full, r->n, r->x, r->incx, blas_p(j, 1), r->y, r->incy);
    free(full);
    return CUDA_SUCCESS;
}

static CUresult
symv_kernel(struct blas_job *j)
{
    struct l2_run r = l2_run_of(j);
    const CBLAS_ORDER o = CblasColMajor;
    int k = r.kl;

    switch (j->form) {
    case SYM_FORM(FULL, 0):
        if (j->elem == BLAS_S)
            cblas_ssymv(o, r.uplo, r.n, blas_f(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_f(j, 1), r.y, r.incy);
        else if (j->elem == BLAS_D)
            cblas_dsymv(o, r.uplo, r.n, blas_d(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_d(j, 1), r.y, r.incy);
        else
            return csymv(j, &r);
        break;
    case SYM_FORM(FULL, 1):
        if (j->elem == BLAS_C)
            cblas_chemv(o, r.uplo, r.n, blas_p(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_p(j, 1), r.y, r.incy);
        else
            cblas_zhemv(o, r.uplo, r.n, blas_p(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_p(j, 1), r.y, r.incy);
        break;
    case SYM_FORM(BAND, 0):
        if (j->elem == BLAS_S)
            cblas_ssbmv(o, r.uplo, r.n, k, blas_f(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_f(j, 1), r.y, r.incy);
        else
            cblas_dsbmv(o, r.uplo, r.n, k, blas_d(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_d(j, 1), r.y, r.incy);
        break;
    case SYM_FORM(BAND, 1):
        if (j->elem == BLAS_C)
            cblas_chbmv(o, r.uplo, r.n, k, blas_p(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_p(j, 1), r.y, r.incy);
        else
            cblas_zhbmv(o, r.uplo, r.n, k, blas_p(j, 0), r.A, r.lda, r.x,
                        r.incx, blas_p(j, 1), r.y, r.incy);
        break;
    case SYM_FORM(PACKED, 0):
        if (j->elem == BLAS_S)
            cblas_sspmv(o, r.uplo, r.n, blas_f(j, 0), r.A, r.x, r.incx,
                        blas_f(j, 1), r.y, r.incy);
        else
            cblas_dspmv(o, r.uplo, r.n, blas_d(j, 0), r.A, r.x, r.incx,
                        blas_d(j, 1), r.y, r.incy);
        break;
    default:
        if (j->elem == BLAS_C)
            cblas_chpmv(o, r.uplo, r.n, blas_p(j, 0), r.A, r.x, r.incx,
                        blas_p(j, 1), r.y, r.incy);
        else
            cblas_zhpmv(o, r.uplo, r.n, blas_p(j, 0), r.A, r.x, r.incx,
                        blas_p(j, 1), r.y, r.incy);
        break;
    }
    return CUDA_SUCCESS;
}

/* The bytes of a triangle, band or packed matrix of order n. */
static size_t
stored_bytes(enum storage s, int64_t n, int64_t k, int64_t lda, size_t e)
{
    switch (s) {
    case FULL:
        return blas_matrix_bytes(n, n, lda, e);
    case BAND:
        return blas_matrix_bytes(k + 1, n, lda, e);
    default:
        return blas_packed_bytes(n, e);
    }
}

/* The leading dimension a storage needs (packed has none). */
static int
lda_ok(enum storage s, int64_t n, int64_t k, int64_t lda)
{
    return s == PACKED || lda >= (s == FULL ? blas_max1(n) : k + 1);
}

/* y = alpha A x + beta y, A symmetric or Hermitian (`herm`) of order n,
 * stored as `s` (band: k super- or sub-diagonals). */
static cublasStatus_t
symv(cublasHandle_t handle, const char *name, enum blas_elem e,
     enum storage s, int herm, cublasFillMode_t uplo, int64_t n, int64_t k,
     const void *alpha, const void *A, int64_t lda, const void *x,
     int64_t incx, const void *beta, void *y, int64_t incy)
{
    int u = blas_uplo(uplo);
    struct l2 c = {
        .name = name, .elem = e, .kernel = symv_kernel,
        .form = SYM_FORM(s, herm),
        .a = { .n = n, .kl = k, .lda = lda, .incx = incx, .incy = incy,
               .uplo = (CBLAS_UPLO)u },
        .alpha = alpha, .beta = beta, .alpha_size = blas_elem_size(e),
        .beta_size = blas_elem_size(e), .A = A, .x = x, .y = y,
        .lenx = n, .leny = n,
        .flops = 2.0 * (double)n * (double)(s == BAND ? 2 * k + 1 : n),
    };

    c.ok = u >= 0 && n >= 0 && k >= 0 && lda_ok(s, n, k, lda) &&
           incx != 0 && incy != 0 && alpha != NULL && beta != NULL;
    c.empty = n == 0;
    c.a_bytes = stored_bytes(s, n, k, lda, blas_elem_size(e));
    return l2_submit(handle, &c);
}

#define DEFINE_SYMV_FULL(fn, T, R, I, E, herm)                               \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo, I n,     \
                      const T *alpha, const T *A, I lda, const T *x, I incx, \
                      const T *beta, T *y, I incy)                           \
    {                                                                        \
        return symv(handle, #fn, E, FULL, herm, uplo, n, 0, alpha, A, lda,   \
                    x, incx, beta, y, incy);                                 \
    }
#define DEFINE_SYMV(fn, T, R, I, E) DEFINE_SYMV_FULL(fn, T, R, I, E, 0)
#define DEFINE_HEMV(fn, T, R, I, E) DEFINE_SYMV_FULL(fn, T, R, I, E, 1)
BLAS_BOTH(DEFINE_SYMV, cublasSsymv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SYMV, cublasDsymv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SYMV, cublasCsymv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SYMV, cublasZsymv_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_HEMV, cublasChemv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HEMV, cublasZhemv_v2, cuDoubleComplex, double, BLAS_Z)

/* sbmv (S, D) and hbmv (C, Z). */
#define DEFINE_SBMV(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo, I n,     \
                      I k, const T *alpha, const T *A, I lda, const T *x,    \
                      I incx, const T *beta, T *y, I incy)                   \
    {                                                                        \
        return symv(handle, #fn, E, BAND, blas_complex(E), uplo, n, k,       \
                    alpha, A, lda, x, incx, beta, y, incy);                  \
    }
BLAS_BOTH(DEFINE_SBMV, cublasSsbmv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SBMV, cublasDsbmv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SBMV, cublasChbmv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SBMV, cublasZhbmv_v2, cuDoubleComplex, double, BLAS_Z)

/* spmv (S, D) and hpmv (C, Z). */
#define DEFINE_SPMV(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo, I n,     \
                      const T *alpha, const T *AP, const T *x, I incx,       \
                      const T *beta, T *y, I incy)                           \
    {                                                                        \
        return symv(handle, #fn, E, PACKED, blas_complex(E), uplo, n, 0,     \
                    alpha, AP, 0, x, incx, beta, y, incy);                   \
    }
BLAS_BOTH(DEFINE_SPMV, cublasSspmv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SPMV, cublasDspmv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SPMV, cublasChpmv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SPMV, cublasZhpmv_v2, cuDoubleComplex, double, BLAS_Z)

/* ---- ger, syr/her, syr2/her2, spr/hpr, spr2/hpr2 ------------------------------ */

/* Which rank update: ger (geru for complex), gerc, and the symmetric and
 * Hermitian ones, rank 1 or 2, full or packed. */
enum {
    UPD_GER, UPD_GERC,
    UPD_SYR, UPD_HER, UPD_SYR2, UPD_HER2,
    UPD_SPR, UPD_HPR, UPD_SPR2, UPD_HPR2,
};

/* A += alpha x x^T (`two` 0) or alpha (x y^T + y x^T) over A's stored
 * triangle, A complex symmetric: the BLAS has no such routine. */
#define CSYR_LOOP(ctype)                                                     \
    do {                                                                     \
        ctype *a = r.A, *xs = r.x, *ys = r.y, alpha;                         \
                                                                             \
        memcpy(&alpha, blas_p(j, 0), sizeof(alpha));                         \
        for (int col = 0; col < r.n; col++) {                                \
            int lo = r.uplo == CblasUpper ? 0 : col;                         \
            int hi = r.uplo == CblasUpper ? col : r.n - 1;                   \
            ctype xc = xs[blas_vat(col, r.n, r.incx)];                       \
            ctype yc = two ? ys[blas_vat(col, r.n, r.incy)] : 0;             \
                                                                             \
            for (int row = lo; row <= hi; row++) {                           \
                ctype xr = xs[blas_vat(row, r.n, r.incx)];                   \
                ctype v = xr * xc;                                           \
                                                                             \
                if (two)                                                     \
                    v = xr * yc + ys[blas_vat(row, r.n, r.incy)] * xc;       \
                a[blas_at(row, col, r.lda)] += alpha * v;                    \
            }                                                                \
        }                                                                    \
    } while (0)

static CUresult
csyr(struct blas_job *j, int two)
{
    struct l2_run r = l2_run_of(j);

    if (j->elem == BLAS_C)
        CSYR_LOOP(float _Complex);
    else
        CSYR_LOOP(double _Complex);
    return CUDA_SUCCESS;
}

static CUresult
ger_kernel(struct blas_job *j)
{
    struct l2_run r = l2_run_of(j);
    const CBLAS_ORDER o = CblasColMajor;
    int conj = j->form == UPD_GERC;

    if (r.A == NULL)        /* alpha 0 on the device: nothing changes */
        return CUDA_SUCCESS;
    switch (j->elem) {
    case BLAS_S:
        cblas_sger(o, r.m, r.n, blas_f(j, 0), r.x, r.incx, r.y, r.incy, r.A,
                   r.lda);
        break;
    case BLAS_D:
        cblas_dger(o, r.m, r.n, blas_d(j, 0), r.x, r.incx, r.y, r.incy, r.A,
                   r.lda);
        break;
    case BLAS_C:
        (conj ? cblas_cgerc : cblas_cgeru)(o, r.m, r.n, blas_p(j, 0), r.x,
                                           r.incx, r.y, r.incy, r.A, r.lda);
        break;
    case BLAS_Z:
        (conj ? cblas_zgerc : cblas_zgeru)(o, r.m, r.n, blas_p(j, 0), r.x,
                                           r.incx, r.y, r.incy, r.A, r.lda);
        break;
    }
    return CUDA_SUCCESS;
}

/* The symmetric and Hermitian updates of real or complex A. */
static CUresult
syr_kernel(struct blas_job *j)
{
    struct l2_run r = l2_run_of(j);
    const CBLAS_ORDER o = CblasColMajor;
    int d = j->elem == BLAS_D || j->elem == BLAS_Z;

    if (r.A == NULL)        /* alpha 0 on the device: nothing changes */
        return CUDA_SUCCESS;
    switch (j->form) {
    case UPD_SYR:
        if (blas_complex(j->elem))
            return csyr(j, 0);
        if (d)
            cblas_dsyr(o, r.uplo, r.n, blas_d(j, 0), r.x, r.incx, r.A,
                       r.lda);
        else
            cblas_ssyr(o, r.uplo, r.n, blas_f(j, 0), r.x, r.incx, r.A,
                       r.lda);
        break;
    case UPD_SYR2:
        if (blas_complex(j->elem))
            return csyr(j, 1);
        if (d)
            cblas_dsyr2(o, r.uplo, r.n, blas_d(j, 0), r.x, r.incx, r.y,
                        r.incy, r.A, r.lda);
        else
            cblas_ssyr2(o, r.uplo, r.n, blas_f(j, 0), r.x, r.incx, r.y,
                        r.incy, r.A, r.lda);
        break;
    case UPD_HER:
        if (d)
            cblas_zher(o, r.uplo, r.n, blas_d(j, 0), r.x, r.incx, r.A,
                       r.lda);
        else
            cblas_cher(o, r.uplo, r.n, blas_f(j, 0), r.x, r.incx, r.A,
                       r.lda);
        break;
    case UPD_HER2:
        (d ? cblas_zher2 : cblas_cher2)(o, r.uplo, r.n, blas_p(j, 0), r.x,
                                        r.incx, r.y, r.incy, r.A, r.lda);
        break;
    case UPD_SPR:
        if (d)
            cblas_dspr(o, r.uplo, r.n, blas_d(j, 0), r.x, r.incx, r.A);
        else
            cblas_sspr(o, r.uplo, r.n, blas_f(j, 0), r.x, r.incx, r.A);
        break;
    case UPD_SPR2:
        if (d)
            cblas_dspr2(o, r.uplo, r.n, blas_d(j, 0), r.x, r.incx, r.y,
                        r.incy, r.A);
        else
            cblas_sspr2(o, r.uplo, r.n, blas_f(j, 0), r.x, r.incx, r.y,
                        r.incy, r.A);
        break;
    case UPD_HPR:
        if (d)
            cblas_zhpr(o, r.uplo, r.n, blas_d(j, 0), r.x, r.incx, r.A);
        else
            cblas_chpr(o, r.uplo, r.n, blas_f(j, 0), r.x, r.incx, r.A);
        break;
    default:
        (d ? cblas_zhpr2 : cblas_chpr2)(o, r.uplo, r.n, blas_p(j, 0), r.x,
                                        r.incx, r.y, r.incy, r.A);
        break;
    }
    return CUDA_SUCCESS;
}

/* A (m x n, or a triangle of order n) += a rank-1 or rank-2 product of x
 * (length m) and y (length n; NULL for syr, her, spr, hpr). The Hermitian
 * rank-1 forms take a real alpha. */
static cublasStatus_t
update(cublasHandle_t handle, const char *name, enum blas_elem e, int form,
       cublasFillMode_t uplo, int64_t m, int64_t n, const void *alpha,
       const void *x, int64_t incx, const void *y, int64_t incy, void *A,
       int64_t lda)
{
    int ger = form == UPD_GER || form == UPD_GERC;
    int packed = form >= UPD_SPR;
    int real_alpha = form == UPD_HER || form == UPD_HPR;
    int u = ger ? CblasUpper : blas_uplo(uplo);
    size_t es = blas_elem_size(e);
    struct l2 c = {
        .name = name, .elem = e, .kernel = ger ? ger_kernel : syr_kernel,
        .form = form,
        .a = { .m = m, .n = n, .lda = lda, .incx = incx, .incy = incy,
               .uplo = (CBLAS_UPLO)u },
        .alpha = alpha, .alpha_size = real_alpha ? blas_real_size(e) : es,
        .A = A, .a_written = 1, .x = x, .y = y, .lenx = m, .leny = n,
        .flops = 2.0 * (double)m * (double)n * (y != NULL ? 2.0 : 1.0),
    };

    c.ok = u >= 0 && m >= 0 && n >= 0 && incx != 0 &&
           (y == NULL || incy != 0) &&
           (packed || lda >= blas_max1(m)) && alpha != NULL;
    c.empty = m == 0 || n == 0;
    c.a_bytes = packed ? blas_packed_bytes(n, es)
                       : blas_matrix_bytes(m, n, lda, es);
    return l2_submit(handle, &c);
}

#define DEFINE_GERF(fn, T, R, I, E, form)                                    \
    cublasStatus_t fn(cublasHandle_t handle, I m, I n, const T *alpha,       \
                      const T *x, I incx, const T *y, I incy, T *A, I lda)   \
    {                                                                        \
        return update(handle, #fn, E, form, CUBLAS_FILL_MODE_UPPER, m, n,    \
                      alpha, x, incx, y, incy, A, lda);                      \
    }
#define DEFINE_GER(fn, T, R, I, E) DEFINE_GERF(fn, T, R, I, E, UPD_GER)
#define DEFINE_GERC(fn, T, R, I, E) DEFINE_GERF(fn, T, R, I, E, UPD_GERC)
BLAS_BOTH(DEFINE_GER, cublasSger_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_GER, cublasDger_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_GER, cublasCgeru_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_GER, cublasZgeru_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_GERC, cublasCgerc_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_GERC, cublasZgerc_v2, cuDoubleComplex, double, BLAS_Z)

/* syr (S, D, C, Z) and her (C, Z, real alpha). */
#define DEFINE_SYRF(fn, AT, T, I, E, form)                                   \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo, I n,     \
                      const AT *alpha, const T *x, I incx, T *A, I lda)      \
    {                                                                        \
        return update(handle, #fn, E, form, uplo, n, n, alpha, x, incx,      \
                      NULL, 0, A, lda);                                      \
    }
#define DEFINE_SYR(fn, T, R, I, E) DEFINE_SYRF(fn, T, T, I, E, UPD_SYR)
#define DEFINE_HER(fn, T, R, I, E) DEFINE_SYRF(fn, R, T, I, E, UPD_HER)
BLAS_BOTH(DEFINE_SYR, cublasSsyr_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SYR, cublasDsyr_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SYR, cublasCsyr_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SYR, cublasZsyr_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_HER, cublasCher_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HER, cublasZher_v2, cuDoubleComplex, double, BLAS_Z)

/* syr2 (S, D, C, Z) and her2 (C, Z). */
#define DEFINE_SYR2F(fn, T, R, I, E, form)                                   \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo, I n,     \
                      const T *alpha, const T *x, I incx, const T *y,        \
                      I incy, T *A, I lda)                                   \
    {                                                                        \
        return update(handle, #fn, E, form, uplo, n, n, alpha, x, incx, y,   \
                      incy, A, lda);                                         \
    }
#define DEFINE_SYR2(fn, T, R, I, E) DEFINE_SYR2F(fn, T, R, I, E, UPD_SYR2)
#define DEFINE_HER2(fn, T, R, I, E) DEFINE_SYR2F(fn, T, R, I, E, UPD_HER2)
BLAS_BOTH(DEFINE_SYR2, cublasSsyr2_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SYR2, cublasDsyr2_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SYR2, cublasCsyr2_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SYR2, cublasZsyr2_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_HER2, cublasCher2_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HER2, cublasZher2_v2, cuDoubleComplex, double, BLAS_Z)

/* spr (S, D) and hpr (C, Z, real alpha): alpha is real either way. */
#define DEFINE_SPRF(fn, T, R, I, E, form)                                    \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo, I n,     \
                      const R *alpha, const T *x, I incx, T *AP)             \
    {                                                                        \
        return update(handle, #fn, E, form, uplo, n, n, alpha, x, incx,      \
                      NULL, 0, AP, 0);                                       \
    }
#define DEFINE_SPR(fn, T, R, I, E) DEFINE_SPRF(fn, T, R, I, E, UPD_SPR)
#define DEFINE_HPR(fn, T, R, I, E) DEFINE_SPRF(fn, T, R, I, E, UPD_HPR)
BLAS_BOTH(DEFINE_SPR, cublasSspr_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SPR, cublasDspr_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_HPR, cublasChpr_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HPR, cublasZhpr_v2, cuDoubleComplex, double, BLAS_Z)

/* spr2 (S, D) and hpr2 (C, Z). */
#define DEFINE_SPR2F(fn, T, R, I, E, form)                                   \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo, I n,     \
                      const T *alpha, const T *x, I incx, const T *y,        \
                      I incy, T *AP)                                         \
    {                                                                        \
        return update(handle, #fn, E, form, uplo, n, n, alpha, x, incx, y,   \
                      incy, AP, 0);                                          \
    }
#define DEFINE_SPR2(fn, T, R, I, E) DEFINE_SPR2F(fn, T, R, I, E, UPD_SPR2)
#define DEFINE_HPR2(fn, T, R, I, E) DEFINE_SPR2F(fn, T, R, I, E, UPD_HPR2)
BLAS_BOTH(DEFINE_SPR2, cublasSspr2_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SPR2, cublasDspr2_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_HPR2, cublasChpr2_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_HPR2, cublasZhpr2_v2, cuDoubleComplex, double, BLAS_Z)

/* ---- trmv, trsv, tbmv, tbsv, tpmv, tpsv --------------------------------------- */

/* The triangular form: storage times 2, plus 1 for a solve. */
#define TRI_FORM(storage, solve) ((storage) * 2 + (solve))

#define TRI_CALL4(j, r, sfn, dfn, cfn, zfn, ...)                             \
    do {                                                                     \
        switch ((j)->elem) {                                                 \
        case BLAS_S: sfn(CblasColMajor, r.uplo, r.trans, r.diag,             \
                         __VA_ARGS__); break;                                \
        case BLAS_D: dfn(CblasColMajor, r.uplo, r.trans, r.diag,             \
                         __VA_ARGS__); break;                                \
        case BLAS_C: cfn(CblasColMajor, r.uplo, r.trans, r.diag,             \
                         __VA_ARGS__); break;                                \
        case BLAS_Z: zfn(CblasColMajor, r.uplo, r.trans, r.diag,             \
                         __VA_ARGS__); break;                                \
        }                                                                    \
    } while (0)

static CUresult
tri_kernel(struct blas_job *j)
{
    struct l2_run r = l2_run_of(j);
    int k = r.kl;

    switch (j->form) {
    case TRI_FORM(FULL, 0):
        TRI_CALL4(j, r, cblas_strmv, cblas_dtrmv, cblas_ctrmv, cblas_ztrmv,
                  r.n, r.A, r.lda, r.x, r.incx);
        break;
    case TRI_FORM(FULL, 1):
        TRI_CALL4(j, r, cblas_strsv, cblas_dtrsv, cblas_ctrsv, cblas_ztrsv,
                  r.n, r.A, r.lda, r.x, r.incx);
        break;
    case TRI_FORM(BAND, 0):
        TRI_CALL4(j, r, cblas_stbmv, cblas_dtbmv, cblas_ctbmv, cblas_ztbmv,
                  r.n, k, r.A, r.lda, r.x, r.incx);
        break;
    case TRI_FORM(BAND, 1):
        TRI_CALL4(j, r, cblas_stbsv, cblas_dtbsv, cblas_ctbsv, cblas_ztbsv,
                  r.n, k, r.A, r.lda, r.x, r.incx);
        break;
    case TRI_FORM(PACKED, 0):
        TRI_CALL4(j, r, cblas_stpmv, cblas_dtpmv, cblas_ctpmv, cblas_ztpmv,
                  r.n, r.A, r.x, r.incx);
        break;
    default:
        TRI_CALL4(j, r, cblas_stpsv, cblas_dtpsv, cblas_ctpsv, cblas_ztpsv,
                  r.n, r.A, r.x, r.incx);
        break;
    }
    return CUDA_SUCCESS;
}

/* x = op(A) x, or x = op(A)^-1 x (`solve`), A triangular of order n. */
static cublasStatus_t
triangular(cublasHandle_t handle, const char *name, enum blas_elem e,
           enum storage s, int solve, cublasFillMode_t uplo,
           cublasOperation_t trans, cublasDiagType_t diag, int64_t n,
           int64_t k, const void *A, int64_t lda, void *x, int64_t incx)
{
    int u = blas_uplo(uplo), t = blas_trans(trans), d = blas_diag(diag);
    struct l2 c = {
        .name = name, .elem = e, .kernel = tri_kernel,
        .form = TRI_FORM(s, solve),
        .a = { .n = n, .kl = k, .lda = lda, .incx = incx,
               .uplo = (CBLAS_UPLO)u, .trans = (CBLAS_TRANSPOSE)t,
               .diag = (CBLAS_DIAG)d },
        .A = A, .x = x, .lenx = n, .x_written = 1,
        .flops = (double)n * (double)(s == BAND ? 2 * k + 1 : n),
    };

    c.ok = u >= 0 && t >= 0 && d >= 0 && n >= 0 && k >= 0 &&
           lda_ok(s, n, k, lda) && incx != 0;
    c.empty = n == 0;
    c.a_bytes = stored_bytes(s, n, k, lda, blas_elem_size(e));
    return l2_submit(handle, &c);
}

#define DEFINE_TRF(fn, T, I, E, solve)                                       \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo,          \
                      cublasOperation_t trans, cublasDiagType_t diag, I n,   \
                      const T *A, I lda, T *x, I incx)                       \
    {                                                                        \
        return triangular(handle, #fn, E, FULL, solve, uplo, trans, diag, n, \
                          0, A, lda, x, incx);                               \
    }
#define DEFINE_TRMV(fn, T, R, I, E) DEFINE_TRF(fn, T, I, E, 0)
#define DEFINE_TRSV(fn, T, R, I, E) DEFINE_TRF(fn, T, I, E, 1)
BLAS_BOTH(DEFINE_TRMV, cublasStrmv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TRMV, cublasDtrmv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TRMV, cublasCtrmv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TRMV, cublasZtrmv_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_TRSV, cublasStrsv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TRSV, cublasDtrsv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TRSV, cublasCtrsv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TRSV, cublasZtrsv_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_TBF(fn, T, I, E, solve)                                       \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo,          \
                      cublasOperation_t trans, cublasDiagType_t diag, I n,   \
                      I k, const T *A, I lda, T *x, I incx)                  \
    {                                                                        \
        return triangular(handle, #fn, E, BAND, solve, uplo, trans, diag, n, \
                          k, A, lda, x, incx);                               \
    }
#define DEFINE_TBMV(fn, T, R, I, E) DEFINE_TBF(fn, T, I, E, 0)
#define DEFINE_TBSV(fn, T, R, I, E) DEFINE_TBF(fn, T, I, E, 1)
BLAS_BOTH(DEFINE_TBMV, cublasStbmv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TBMV, cublasDtbmv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TBMV, cublasCtbmv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TBMV, cublasZtbmv_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_TBSV, cublasStbsv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TBSV, cublasDtbsv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TBSV, cublasCtbsv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TBSV, cublasZtbsv_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_TPF(fn, T, I, E, solve)                                       \
    cublasStatus_t fn(cublasHandle_t handle, cublasFillMode_t uplo,          \
                      cublasOperation_t trans, cublasDiagType_t diag, I n,   \
                      const T *AP, T *x, I incx)                             \
    {                                                                        \
        return triangular(handle, #fn, E, PACKED, solve, uplo, trans, diag,  \
                          n, 0, AP, 0, x, incx);                             \
    }
#define DEFINE_TPMV(fn, T, R, I, E) DEFINE_TPF(fn, T, I, E, 0)
#define DEFINE_TPSV(fn, T, R, I, E) DEFINE_TPF(fn, T, I, E, 1)
BLAS_BOTH(DEFINE_TPMV, cublasStpmv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TPMV, cublasDtpmv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TPMV, cublasCtpmv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TPMV, cublasZtpmv_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_TPSV, cublasStpsv_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_TPSV, cublasDtpsv_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_TPSV, cublasCtpsv_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_TPSV, cublasZtpsv_v2, cuDoubleComplex, double, BLAS_Z)
