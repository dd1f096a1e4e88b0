/* The emulated cuBLAS level-1 routines in S, D, C and Z (amax, amin, asum,
 * axpy, copy, dot, nrm2, rot, rotg, rotm, rotmg, scal, swap) and their _64
 * twins, on the generic job of cublas_job.h with OpenBLAS doing the
 * arithmetic. cublasSaxpy_v2 is cublas_blas.c's. Increments of either sign
 * follow the reference BLAS; a reduction over n <= 0 elements, or with
 * incx <= 0, gives 0, as cuBLAS documents. */
#include <cublas_v2.h>
#include <stdlib.h>

#include "cublas_job.h"

/* The vectors of a level-1 job: x is operand 0, y operand 1. */
struct vectors {
    void *x, *y;
    int n, incx, incy;
};

static struct vectors
vectors_of(const struct blas_job *j)
{
    struct vectors v = {
        j->op[0].host, j->op[1].host, (int)j->a.n, (int)j->a.incx,
        (int)j->a.incy,
    };

    return v;
}

/* Sets x (and y when given) of n elements as operands 0 and 1. */
static void
take_vectors(struct blas_job *j, int64_t n, const void *x, int64_t incx,
             int x_written, const void *y, int64_t incy, int y_written)
{
    size_t e = blas_elem_size(j->elem);

    j->a.n = n;
    j->a.incx = incx;
    blas_operand(j, 0, x, blas_vector_bytes(n, incx, e), x_written);
    if (y != NULL || y_written) {
        j->a.incy = incy;
        blas_operand(j, 1, y, blas_vector_bytes(n, incy, e), y_written);
    }
}

/* ---- Reductions: amax, amin, asum, nrm2, dot ------------------------------ */

enum { FORM_MAX, FORM_MIN };           /* amax, amin */
enum { FORM_ASUM, FORM_NRM2 };         /* asum, nrm2 */
enum { FORM_DOTU, FORM_DOTC };         /* dot, dotu; dotc */

static CUresult
iamax_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);
    int min = j->form == FORM_MIN;
    int64_t idx = 0;
    int32_t idx32;

    if (v.x != NULL) {
        switch (j->elem) {
        case BLAS_S:
            idx = (int64_t)(min ? cblas_isamin(v.n, v.x, v.incx)
                                : cblas_isamax(v.n, v.x, v.incx));
            break;
        case BLAS_D:
            idx = (int64_t)(min ? cblas_idamin(v.n, v.x, v.incx)
                                : cblas_idamax(v.n, v.x, v.incx));
            break;
        case BLAS_C:
            idx = (int64_t)(min ? cblas_icamin(v.n, v.x, v.incx)
                                : cblas_icamax(v.n, v.x, v.incx));
            break;
        case BLAS_Z:
            idx = (int64_t)(min ? cblas_izamin(v.n, v.x, v.incx)
                                : cblas_izamax(v.n, v.x, v.incx));
            break;
        }
        idx += 1;               /* 1-based, as Fortran */
    }
    idx32 = (int32_t)idx;
    if (j->result.size == sizeof(idx32))
        memcpy(j->result.value, &idx32, sizeof(idx32));
    else
        memcpy(j->result.value, &idx, sizeof(idx));
    return CUDA_SUCCESS;
}

static CUresult
norm_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);
    int asum = j->form == FORM_ASUM;
    float f = 0.0f;
    double d = 0.0;

    if (v.x != NULL) {
        switch (j->elem) {
        case BLAS_S:
            f = asum ? cblas_sasum(v.n, v.x, v.incx)
                     : cblas_snrm2(v.n, v.x, v.incx);
            break;
        case BLAS_D:
            d = asum ? cblas_dasum(v.n, v.x, v.incx)
                     : cblas_dnrm2(v.n, v.x, v.incx);
            break;
        case BLAS_C:
            f = asum ? cblas_scasum(v.n, v.x, v.incx)
                     : cblas_scnrm2(v.n, v.x, v.incx);
            break;
        case BLAS_Z:
            d = asum ? cblas_dzasum(v.n, v.x, v.incx)
                     : cblas_dznrm2(v.n, v.x, v.incx);
            break;
        }
    }
    if (blas_real_size(j->elem) == sizeof(f))
        memcpy(j->result.value, &f, sizeof(f));
    else
        memcpy(j->result.value, &d, sizeof(d));
    return CUDA_SUCCESS;
}

static CUresult
dot_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);
    int conj = j->form == FORM_DOTC;
    void *out = j->result.value;

    memset(out, 0, sizeof(j->result.value));
    if (v.x == NULL)
        return CUDA_SUCCESS;
    switch (j->elem) {
    case BLAS_S: {
        float r = cblas_sdot(v.n, v.x, v.incx, v.y, v.incy);
        memcpy(out, &r, sizeof(r));
        break;
    }
    case BLAS_D: {
        double r = cblas_ddot(v.n, v.x, v.incx, v.y, v.incy);
        memcpy(out, &r, sizeof(r));
        break;
    }
    case BLAS_C:
        if (conj)
            cblas_cdotc_sub(v.n, v.x, v.incx, v.y, v.incy, out);
        else
            cblas_cdotu_sub(v.n, v.x, v.incx, v.y, v.incy, out);
        break;
    case BLAS_Z:
        if (conj)
            cblas_zdotc_sub(v.n, v.x, v.incx, v.y, v.incy, out);
        else
            cblas_zdotu_sub(v.n, v.x, v.incx, v.y, v.incy, out);
        break;
    }
    return CUDA_SUCCESS;
}

/* A reduction of x (and y): `result` of `result_size` bytes gets 0 when
 * n <= 0 or, for one vector, incx <= 0 (nothing is read then). */
static cublasStatus_t
reduction(cublasHandle_t handle, const char *name, enum blas_elem e,
          blas_kernel kernel, int form, int64_t n, const void *x,
          int64_t incx, const void *y, int64_t incy, void *result,
          size_t result_size)
{
    struct emu_blas_config cfg;
    struct blas_job *j;
    cublasStatus_t st;
    int empty = n <= 0 || (y == NULL && incx <= 0);

    st = blas_begin(handle, name, result != NULL, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    j = blas_job_new(&cfg, name, e, kernel);
    if (j == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    j->form = form;
    if (!empty)
        take_vectors(j, n, x, incx, 0, y, incy, 0);
    blas_result(j, result, result_size);
    return blas_submit(j, 2.0 * (double)(n > 0 ? n : 0));
}

#define DEFINE_IAMAX(fn, T, R, I, E, form)                                   \
    cublasStatus_t fn(cublasHandle_t handle, I n, const T *x, I incx,        \
                      I *result)                                             \
    {                                                                        \
        return reduction(handle, #fn, E, iamax_kernel, form, n, x, incx,     \
                         NULL, 0, result, sizeof(*result));                  \
    }
#define DEFINE_AMAX(fn, T, R, I, E) DEFINE_IAMAX(fn, T, R, I, E, FORM_MAX)
#define DEFINE_AMIN(fn, T, R, I, E) DEFINE_IAMAX(fn, T, R, I, E, FORM_MIN)
BLAS_BOTH(DEFINE_AMAX, cublasIsamax_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_AMAX, cublasIdamax_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_AMAX, cublasIcamax_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_AMAX, cublasIzamax_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_AMIN, cublasIsamin_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_AMIN, cublasIdamin_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_AMIN, cublasIcamin_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_AMIN, cublasIzamin_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_NORM(fn, T, R, I, E, form)                                    \
    cublasStatus_t fn(cublasHandle_t handle, I n, const T *x, I incx,        \
                      R *result)                                             \
    {                                                                        \
        return reduction(handle, #fn, E, norm_kernel, form, n, x, incx,      \
                         NULL, 0, result, sizeof(R));                        \
    }
#define DEFINE_ASUM(fn, T, R, I, E) DEFINE_NORM(fn, T, R, I, E, FORM_ASUM)
#define DEFINE_NRM2(fn, T, R, I, E) DEFINE_NORM(fn, T, R, I, E, FORM_NRM2)
BLAS_BOTH(DEFINE_ASUM, cublasSasum_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_ASUM, cublasDasum_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_ASUM, cublasScasum_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_ASUM, cublasDzasum_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_NRM2, cublasSnrm2_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_NRM2, cublasDnrm2_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_NRM2, cublasScnrm2_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_NRM2, cublasDznrm2_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_DOTF(fn, T, R, I, E, form)                                    \
    cublasStatus_t fn(cublasHandle_t handle, I n, const T *x, I incx,        \
                      const T *y, I incy, T *result)                         \
    {                                                                        \
        return reduction(handle, #fn, E, dot_kernel, form, n, x, incx, y,    \
                         incy, result, sizeof(T));                           \
    }
#define DEFINE_DOT(fn, T, R, I, E) DEFINE_DOTF(fn, T, R, I, E, FORM_DOTU)
#define DEFINE_DOTC(fn, T, R, I, E) DEFINE_DOTF(fn, T, R, I, E, FORM_DOTC)
BLAS_BOTH(DEFINE_DOT, cublasSdot_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_DOT, cublasDdot_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_DOT, cublasCdotu_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_DOT, cublasZdotu_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_DOTC, cublasCdotc_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_DOTC, cublasZdotc_v2, cuDoubleComplex, double, BLAS_Z)

/* ---- Vector updates: axpy, copy, swap, scal -------------------------------- */

static CUresult
axpy_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);

    switch (j->elem) {
    case BLAS_S:
        cblas_saxpy(v.n, blas_f(j, 0), v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_D:
        cblas_daxpy(v.n, blas_d(j, 0), v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_C:
        cblas_caxpy(v.n, blas_p(j, 0), v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_Z:
        cblas_zaxpy(v.n, blas_p(j, 0), v.x, v.incx, v.y, v.incy);
        break;
    }
    return CUDA_SUCCESS;
}

static CUresult
copy_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);

    switch (j->elem) {
    case BLAS_S:
        cblas_scopy(v.n, v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_D:
        cblas_dcopy(v.n, v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_C:
        cblas_ccopy(v.n, v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_Z:
        cblas_zcopy(v.n, v.x, v.incx, v.y, v.incy);
        break;
    }
    return CUDA_SUCCESS;
}

static CUresult
swap_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);

    switch (j->elem) {
    case BLAS_S:
        cblas_sswap(v.n, v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_D:
        cblas_dswap(v.n, v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_C:
        cblas_cswap(v.n, v.x, v.incx, v.y, v.incy);
        break;
    case BLAS_Z:
        cblas_zswap(v.n, v.x, v.incx, v.y, v.incy);
        break;
    }
    return CUDA_SUCCESS;
}

enum { FORM_SCAL, FORM_SCAL_REAL };    /* alpha of x's type; real alpha */

static CUresult
scal_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);
    int real = j->form == FORM_SCAL_REAL;

    switch (j->elem) {
    case BLAS_S:
        cblas_sscal(v.n, blas_f(j, 0), v.x, v.incx);
        break;
    case BLAS_D:
        cblas_dscal(v.n, blas_d(j, 0), v.x, v.incx);
        break;
    case BLAS_C:
        if (real)
            cblas_csscal(v.n, blas_f(j, 0), v.x, v.incx);
        else
            cblas_cscal(v.n, blas_p(j, 0), v.x, v.incx);
        break;
    case BLAS_Z:
        if (real)
            cblas_zdscal(v.n, blas_d(j, 0), v.x, v.incx);
        else
            cblas_zscal(v.n, blas_p(j, 0), v.x, v.incx);
        break;
    }
    return CUDA_SUCCESS;
}

/* An update of x and y (or x alone, y NULL and not written) over n
 * elements with an optional scalar alpha of alpha_size bytes (checked not
 * NULL); n <= 0 does nothing. */
static cublasStatus_t
update(cublasHandle_t handle, const char *name, enum blas_elem e,
       blas_kernel kernel, int form, int64_t n, const void *alpha,
       size_t alpha_size, const void *x, int64_t incx, int x_written,
       void *y, int64_t incy, int y_written)
{
    struct emu_blas_config cfg;
    struct blas_job *j;
    cublasStatus_t st;

    st = blas_begin(handle, name, alpha_size == 0 || alpha != NULL, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS || n <= 0)
        return st;
    j = blas_job_new(&cfg, name, e, kernel);
    if (j == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    j->form = form;
    if (alpha_size != 0)
        blas_scalar(j, 0, alpha, alpha_size);
    take_vectors(j, n, x, incx, x_written, y, incy, y_written);
    return blas_submit(j, alpha_size != 0 ? 2.0 * (double)n : 0.0);
}

#define DEFINE_AXPY(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, I n, const T *alpha,            \
                      const T *x, I incx, T *y, I incy)                      \
    {                                                                        \
        return update(handle, #fn, E, axpy_kernel, 0, n, alpha, sizeof(T),   \
                      x, incx, 0, y, incy, 1);                               \
    }
BLAS_BOTH(DEFINE_AXPY, cublasDaxpy_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_AXPY, cublasCaxpy_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_AXPY, cublasZaxpy_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_COPY(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, I n, const T *x, I incx,        \
                      T *y, I incy)                                          \
    {                                                                        \
        return update(handle, #fn, E, copy_kernel, 0, n, NULL, 0, x, incx,   \
                      0, y, incy, 1);                                        \
    }
BLAS_BOTH(DEFINE_COPY, cublasScopy_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_COPY, cublasDcopy_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_COPY, cublasCcopy_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_COPY, cublasZcopy_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_SWAP(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, I n, T *x, I incx, T *y,        \
                      I incy)                                                \
    {                                                                        \
        return update(handle, #fn, E, swap_kernel, 0, n, NULL, 0, x, incx,   \
                      1, y, incy, 1);                                        \
    }
BLAS_BOTH(DEFINE_SWAP, cublasSswap_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SWAP, cublasDswap_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SWAP, cublasCswap_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SWAP, cublasZswap_v2, cuDoubleComplex, double, BLAS_Z)

/* scal with incx <= 0 does nothing, as in the reference BLAS: x is then
 * not opened. */
#define DEFINE_SCALF(fn, A, T, I, E, form)                                   \
    cublasStatus_t fn(cublasHandle_t handle, I n, const A *alpha, T *x,      \
                      I incx)                                                \
    {                                                                        \
        return update(handle, #fn, E, scal_kernel, form,                     \
                      incx > 0 ? n : 0, alpha, sizeof(A), x, incx, 1, NULL,  \
                      0, 0);                                                 \
    }
#define DEFINE_SCAL(fn, T, R, I, E) DEFINE_SCALF(fn, T, T, I, E, FORM_SCAL)
#define DEFINE_SCAL_REAL(fn, T, R, I, E)                                     \
    DEFINE_SCALF(fn, R, T, I, E, FORM_SCAL_REAL)
BLAS_BOTH(DEFINE_SCAL, cublasSscal_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_SCAL, cublasDscal_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_SCAL, cublasCscal_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SCAL, cublasZscal_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_SCAL_REAL, cublasCsscal_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_SCAL_REAL, cublasZdscal_v2, cuDoubleComplex, double, BLAS_Z)

/* ---- Rotations: rot, rotm --------------------------------------------------- */

enum { FORM_ROT_REAL, FORM_ROT_COMPLEX };   /* real s; complex s */

/* x' = c x + s y, y' = c y - conj(s) x with a complex s (crot, zrot): the
 * reference BLAS has no such routine, so it is a loop here. */
#define ROT_COMPLEX_LOOP(ctype, rtype, conjugate)                            \
    do {                                                                     \
        ctype *xs = v.x, *ys = v.y, s;                                       \
        rtype c;                                                             \
                                                                             \
        memcpy(&c, blas_p(j, 0), sizeof(c));                                 \
        memcpy(&s, blas_p(j, 1), sizeof(s));                                 \
        for (int i = 0; i < v.n; i++) {                                      \
            ctype *xi = &xs[blas_vat(i, v.n, v.incx)];                       \
            ctype *yi = &ys[blas_vat(i, v.n, v.incy)];                       \
            ctype xv = *xi, yv = *yi;                                        \
                                                                             \
            *xi = c * xv + s * yv;                                           \
            *yi = c * yv - conjugate(s) * xv;                                \
        }                                                                    \
    } while (0)

static CUresult
rot_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);
    int real = j->form == FORM_ROT_REAL;

    switch (j->elem) {
    case BLAS_S:
        cblas_srot(v.n, v.x, v.incx, v.y, v.incy, blas_f(j, 0),
                   blas_f(j, 1));
        break;
    case BLAS_D:
        cblas_drot(v.n, v.x, v.incx, v.y, v.incy, blas_d(j, 0),
                   blas_d(j, 1));
        break;
    case BLAS_C:
        if (real)
            cblas_csrot(v.n, v.x, v.incx, v.y, v.incy, blas_f(j, 0),
                        blas_f(j, 1));
        else
            ROT_COMPLEX_LOOP(float _Complex, float, conjf);
        break;
    case BLAS_Z:
        if (real)
            cblas_zdrot(v.n, v.x, v.incx, v.y, v.incy, blas_d(j, 0),
                        blas_d(j, 1));
        else
            ROT_COMPLEX_LOOP(double _Complex, double, conj);
        break;
    }
    return CUDA_SUCCESS;
}

static CUresult
rotm_kernel(struct blas_job *j)
{
    struct vectors v = vectors_of(j);

    if (j->elem == BLAS_S)
        cblas_srotm(v.n, v.x, v.incx, v.y, v.incy, blas_p(j, 0));
    else
        cblas_drotm(v.n, v.x, v.incx, v.y, v.incy, blas_p(j, 0));
    return CUDA_SUCCESS;
}

/* A rotation of x and y by scalars 0 and 1 (c and s; rotm: param alone,
 * s_size 0); n <= 0 does nothing. */
static cublasStatus_t
rotation(cublasHandle_t handle, const char *name, enum blas_elem e,
         blas_kernel kernel, int form, int64_t n, void *x, int64_t incx,
         void *y, int64_t incy, const void *c, size_t c_size, const void *s,
         size_t s_size)
{
    struct emu_blas_config cfg;
    struct blas_job *j;
    cublasStatus_t st;
    int ok = c != NULL && (s_size == 0 || s != NULL);

    st = blas_begin(handle, name, ok, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS || n <= 0)
        return st;
    j = blas_job_new(&cfg, name, e, kernel);
    if (j == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    j->form = form;
    blas_scalar(j, 0, c, c_size);
    if (s_size != 0)
        blas_scalar(j, 1, s, s_size);
    take_vectors(j, n, x, incx, 1, y, incy, 1);
    return blas_submit(j, 6.0 * (double)n);
}

#define DEFINE_ROTF(fn, T, C, S, I, E, form)                                 \
    cublasStatus_t fn(cublasHandle_t handle, I n, T *x, I incx, T *y,        \
                      I incy, const C *c, const S *s)                        \
    {                                                                        \
        return rotation(handle, #fn, E, rot_kernel, form, n, x, incx, y,     \
                        incy, c, sizeof(C), s, sizeof(S));                   \
    }
/* Real types and Csrot, Zdrot: c and s real; Crot, Zrot: s complex. */
#define DEFINE_ROT(fn, T, R, I, E)                                           \
    DEFINE_ROTF(fn, T, R, R, I, E, FORM_ROT_REAL)
#define DEFINE_ROT_COMPLEX(fn, T, R, I, E)                                   \
    DEFINE_ROTF(fn, T, R, T, I, E, FORM_ROT_COMPLEX)
BLAS_BOTH(DEFINE_ROT, cublasSrot_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_ROT, cublasDrot_v2, double, double, BLAS_D)
BLAS_BOTH(DEFINE_ROT, cublasCsrot_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_ROT, cublasZdrot_v2, cuDoubleComplex, double, BLAS_Z)
BLAS_BOTH(DEFINE_ROT_COMPLEX, cublasCrot_v2, cuComplex, float, BLAS_C)
BLAS_BOTH(DEFINE_ROT_COMPLEX, cublasZrot_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_ROTM(fn, T, R, I, E)                                          \
    cublasStatus_t fn(cublasHandle_t handle, I n, T *x, I incx, T *y,        \
                      I incy, const T *param)                                \
    {                                                                        \
        return rotation(handle, #fn, E, rotm_kernel, 0, n, x, incx, y,       \
                        incy, param, 5 * sizeof(T), NULL, 0);                \
    }
BLAS_BOTH(DEFINE_ROTM, cublasSrotm_v2, float, float, BLAS_S)
BLAS_BOTH(DEFINE_ROTM, cublasDrotm_v2, double, double, BLAS_D)

/* ---- Constructing rotations: rotg, rotmg ---------------------------------- */

/* rotg's a, b, c, s and rotmg's d1, d2, x1, y1, param are all host or all
 * device memory, as the pointer mode says. On the host the library
 * computes them at once; on the device, in stream order. The kernels take
 * them from a struct of pointers, either way. */
struct construct {
    enum blas_elem elem;
    void *p[5];
};

static CUresult
rotg_now(void *arg)
{
    const struct construct *r = arg;

    switch (r->elem) {
    case BLAS_S:
        cblas_srotg(r->p[0], r->p[1], r->p[2], r->p[3]);
        break;
    case BLAS_D:
        cblas_drotg(r->p[0], r->p[1], r->p[2], r->p[3]);
        break;
    case BLAS_C:
        cblas_crotg(r->p[0], r->p[1], r->p[2], r->p[3]);
        break;
    case BLAS_Z:
        cblas_zrotg(r->p[0], r->p[1], r->p[2], r->p[3]);
        break;
    }
    return CUDA_SUCCESS;
}

static CUresult
rotmg_now(void *arg)
{
    const struct construct *r = arg;

    if (r->elem == BLAS_S) {
        float y1;
        memcpy(&y1, r->p[3], sizeof(y1));
        cblas_srotmg(r->p[0], r->p[1], r->p[2], y1, r->p[4]);
    } else {
        double y1;
        memcpy(&y1, r->p[3], sizeof(y1));
        cblas_drotmg(r->p[0], r->p[1], r->p[2], y1, r->p[4]);
    }
    return CUDA_SUCCESS;
}

static CUresult
construct_kernel(struct blas_job *j)
{
    struct construct r = { j->elem, { NULL } };

    for (int i = 0; i < BLAS_MAX_OPERANDS; i++)
        r.p[i] = j->op[i].host;
    if (j->form == 5) {         /* rotmg: param, the fifth, is the result */
        r.p[4] = j->result.value;
        return rotmg_now(&r);
    }
    return rotg_now(&r);
}

/* rotg (4 arguments) or rotmg (5, the last param's 5 reals, which the
 * device job returns as its result) with sizes[i] bytes at p[i]. */
static cublasStatus_t
construct(cublasHandle_t handle, const char *name, enum blas_elem e,
          int nargs, void *const p[], const size_t sizes[])
{
    struct construct r = { e, { NULL } };
    struct emu_blas_config cfg;
    struct blas_job *j;
    cublasStatus_t st;
    int ok = 1;

    for (int i = 0; i < nargs; i++) {
        ok = ok && p[i] != NULL;
        r.p[i] = p[i];
    }
    st = blas_begin(handle, name, ok, &cfg);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if (cfg.pointer_mode == CUBLAS_POINTER_MODE_HOST) {
        if (emu_cpu_blas(nargs == 4 ? rotg_now : rotmg_now, &r) !=
            CUDA_SUCCESS)
            return CUBLAS_STATUS_EXECUTION_FAILED;
        return CUBLAS_STATUS_SUCCESS;
    }
    j = blas_job_new(&cfg, name, e, construct_kernel);
    if (j == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    j->form = nargs;
    for (int i = 0; i < 4; i++)
        blas_operand(j, i, p[i], sizes[i], 1);
    if (nargs == 5)
        blas_result(j, p[4], sizes[4]);
    return blas_submit(j, 10.0);
}

#define DEFINE_ROTG(fn, T, R, E)                                             \
    cublasStatus_t fn(cublasHandle_t handle, T *a, T *b, R *c, T *s)         \
    {                                                                        \
        void *const p[] = { a, b, c, s };                                    \
        const size_t sizes[] = { sizeof(T), sizeof(T), sizeof(R),            \
                                 sizeof(T) };                                \
                                                                             \
        return construct(handle, #fn, E, 4, p, sizes);                       \
    }
DEFINE_ROTG(cublasSrotg_v2, float, float, BLAS_S)
DEFINE_ROTG(cublasDrotg_v2, double, double, BLAS_D)
DEFINE_ROTG(cublasCrotg_v2, cuComplex, float, BLAS_C)
DEFINE_ROTG(cublasZrotg_v2, cuDoubleComplex, double, BLAS_Z)

#define DEFINE_ROTMG(fn, T, E)                                               \
    cublasStatus_t fn(cublasHandle_t handle, T *d1, T *d2, T *x1,            \
                      const T *y1, T *param)                                 \
    {                                                                        \
        void *const p[] = { d1, d2, x1, (void *)(uintptr_t)y1, param };      \
        const size_t sizes[] = { sizeof(T), sizeof(T), sizeof(T),            \
                                 sizeof(T), 5 * sizeof(T) };                 \
                                                                             \
        return construct(handle, #fn, E, 5, p, sizes);                       \
    }
DEFINE_ROTMG(cublasSrotmg_v2, float, BLAS_S)
DEFINE_ROTMG(cublasDrotmg_v2, double, BLAS_D)
