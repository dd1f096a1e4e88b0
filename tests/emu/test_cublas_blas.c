/* Tests for the emulated cuBLAS levels 1 to 3 in S, D, C and Z and their
 * _64 twins: each family in each type against a naive reference written
 * here in complex double (not a BLAS), over the whole of every buffer (what
 * a routine must not write stays as it was), with negative increments,
 * device pointer mode, batched and strided problems, and the statuses of
 * the argument checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <complex.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

typedef double _Complex cplx;

enum ty { TS, TD, TC, TZ };

static const enum ty all_types[] = { TS, TD, TC, TZ };
static const enum ty complex_types[] = { TC, TZ };
static const enum ty real_types[] = { TS, TD };

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static cublasHandle_t h;

static size_t
esz(enum ty t)
{
    static const size_t sizes[] = { 4, 8, 8, 16 };

    return sizes[t];
}

static int
is_cplx(enum ty t)
{
    return t == TC || t == TZ;
}

static int
is_dbl(enum ty t)
{
    return t == TD || t == TZ;
}

/* ---- Values, buffers, scalars ------------------------------------------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

/* Uniform in [-1, 1) with 24 significant bits: exact in every type. */
static double
rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 40) / 8388608.0 - 1.0;
}

static cplx
rnd_val(enum ty t)
{
    double re = rnd();

    return is_cplx(t) ? re + rnd() * I : re;
}

static cplx
get(enum ty t, const void *p, size_t i)
{
    const float *f = p;
    const double *d = p;

    switch (t) {
    case TS:
        return f[i];
    case TD:
        return d[i];
    case TC:
        return f[2 * i] + f[2 * i + 1] * I;
    default:
        return d[2 * i] + d[2 * i + 1] * I;
    }
}

static void
put(enum ty t, void *p, size_t i, cplx v)
{
    float *f = p;
    double *d = p;

    switch (t) {
    case TS:
        f[i] = (float)creal(v);
        break;
    case TD:
        d[i] = creal(v);
        break;
    case TC:
        f[2 * i] = (float)creal(v);
        f[2 * i + 1] = (float)cimag(v);
        break;
    default:
        d[2 * i] = creal(v);
        d[2 * i + 1] = cimag(v);
        break;
    }
}

/* n elements of type t on the host and the device, random, and `want`,
 * the reference's copy that the test updates as the routine should. */
struct buf {
    enum ty t;
    size_t n;
    unsigned char *host;
    void *dev;
    cplx *want;
};

static void
buf_upload(struct buf *b)
{
    assert_int_equal(cudaMemcpy(b->dev, b->host, b->n * esz(b->t),
                                cudaMemcpyHostToDevice), cudaSuccess);
}

static struct buf
buf_new(enum ty t, size_t n)
{
    struct buf b = { t, n, malloc(n * esz(t) + 1), NULL,
                     malloc(n * sizeof(cplx) + 1) };

    assert_non_null(b.host);
    assert_non_null(b.want);
    for (size_t i = 0; i < n; i++) {
        put(t, b.host, i, rnd_val(t));
        b.want[i] = get(t, b.host, i);
    }
    assert_int_equal(cudaMalloc(&b.dev, n * esz(t) + 1), cudaSuccess);
    buf_upload(&b);
    return b;
}

/* Element i set on the host and in `want` (buf_upload sends it). */
static void
buf_set(struct buf *b, size_t i, cplx v)
{
    put(b->t, b->host, i, v);
    b->want[i] = get(b->t, b->host, i);
}

static double
tolerance(enum ty t)
{
    return is_dbl(t) ? 1e-12 : 2e-5;
}

/* NaN where NaN is wanted (a value the routine must not have written),
 * else within tol. */
static int
part_close(double got, double want, double tol)
{
    if (isnan(want))
        return isnan(got);
    return fabs(got - want) <= tol;
}

/* The device copy against `want`, element by element, within `scale`
 * times the type's tolerance relative to 1 + |want|. */
static void
buf_check(const struct buf *b, double scale, const char *what)
{
    unsigned char *got = malloc(b->n * esz(b->t) + 1);

    assert_non_null(got);
    assert_int_equal(cudaMemcpy(got, b->dev, b->n * esz(b->t),
                                cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < b->n; i++) {
        cplx g = get(b->t, got, i), w = b->want[i];
        double mag = isnan(cabs(w)) ? 0.0 : cabs(w);
        double tol = scale * tolerance(b->t) * (1.0 + mag);

        if (!part_close(creal(g), creal(w), tol) ||
            !part_close(cimag(g), cimag(w), tol))
            fail_msg("%s (%c): element %zu is %.17g%+.17gi, want "
                     "%.17g%+.17gi", what, "SDCZ"[b->t], i, creal(g),
                     cimag(g), creal(w), cimag(w));
    }
    free(got);
}

static void
buf_free(struct buf *b)
{
    assert_int_equal(cudaFree(b->dev), cudaSuccess);
    free(b->host);
    free(b->want);
}

/* A scalar argument as the pointer mode passes it: host memory, or a
 * device copy. `real` takes the type's real part only (a real scalar of
 * a complex routine). The value as the type holds it goes to *v. */
struct scalar {
    _Alignas(16) unsigned char host[16];
    void *dev;
};

static const void *
scalar_arg(struct scalar *s, enum ty t, int real, cplx *v, int device)
{
    enum ty st = real ? (is_dbl(t) ? TD : TS) : t;

    put(st, s->host, 0, *v);
    *v = get(st, s->host, 0);
    s->dev = NULL;
    if (!device)
        return s->host;
    assert_int_equal(cudaMalloc(&s->dev, 16), cudaSuccess);
    assert_int_equal(cudaMemcpy(s->dev, s->host, 16, cudaMemcpyHostToDevice),
                     cudaSuccess);
    return s->dev;
}

static void
scalar_free(struct scalar *s)
{
    if (s->dev != NULL)
        assert_int_equal(cudaFree(s->dev), cudaSuccess);
    s->dev = NULL;
}

static void
pointer_mode(int device)
{
    assert_int_equal(cublasSetPointerMode(h, device
                                                 ? CUBLAS_POINTER_MODE_DEVICE
                                                 : CUBLAS_POINTER_MODE_HOST),
                     CUBLAS_STATUS_SUCCESS);
}

/* A result of `size` bytes written by a routine, from the host or the
 * device (after the device has finished). */
static void
result_fetch(void *out, const struct scalar *s, size_t size)
{
    if (s->dev != NULL)
        assert_int_equal(cudaMemcpy(out, s->dev, size,
                                    cudaMemcpyDeviceToHost), cudaSuccess);
    else
        memcpy(out, s->host, size);
}

static void *
result_arg(struct scalar *s, int device)
{
    memset(s->host, 0x55, sizeof(s->host));
    s->dev = NULL;
    if (device) {
        assert_int_equal(cudaMalloc(&s->dev, 16), cudaSuccess);
        assert_int_equal(cudaMemset(s->dev, 0x55, 16), cudaSuccess);
        return s->dev;
    }
    return s->host;
}

/* Element i of a vector of n with increment inc (element 0 of a negative
 * increment is the last in memory). */
static size_t
vat(int i, int n, int inc)
{
    return inc >= 0 ? (size_t)i * (size_t)inc
                    : (size_t)(n - 1 - i) * (size_t)-inc;
}

static size_t
vspan(int n, int inc)
{
    return n <= 0 ? 1 : 1 + (size_t)(n - 1) * (size_t)abs(inc);
}

/* The same routine in four types, with int or int64_t sizes (`wide`),
 * arguments converted by each prototype. */
#define CALL4(t, wide, s, d, c, z, ...)                                      \
    ((t) == TS   ? ((wide) ? s##_64(__VA_ARGS__) : s(__VA_ARGS__))           \
     : (t) == TD ? ((wide) ? d##_64(__VA_ARGS__) : d(__VA_ARGS__))           \
     : (t) == TC ? ((wide) ? c##_64(__VA_ARGS__) : c(__VA_ARGS__))           \
                 : ((wide) ? z##_64(__VA_ARGS__) : z(__VA_ARGS__)))
/* Two of them (S and D, or C and Z). */
#define CALL2(t, wide, a, b, ...)                                            \
    ((t) == TS || (t) == TC ? ((wide) ? a##_64(__VA_ARGS__) : a(__VA_ARGS__)) \
                            : ((wide) ? b##_64(__VA_ARGS__) : b(__VA_ARGS__)))

/* A routine without a _64 twin (rotg). */
#define CALL4_NARROW(t, s, d, c, z, ...)                                     \
    ((t) == TS   ? s(__VA_ARGS__)                                            \
     : (t) == TD ? d(__VA_ARGS__)                                            \
     : (t) == TC ? c(__VA_ARGS__)                                            \
                 : z(__VA_ARGS__))

#define OK CUBLAS_STATUS_SUCCESS

/* The variants every vector routine runs in: increments of both signs,
 * host and device pointer mode, int and int64_t sizes. */
struct vvariant {
    int n, incx, incy, device, wide;
};

static const struct vvariant vvariants[] = {
    { 7, 1, 1, 0, 0 },
    { 6, -2, 3, 1, 1 },
    { 5, 2, -1, 0, 1 },
    { 6, -1, -2, 1, 0 },
};

/* ---- Level 1 -------------------------------------------------------------- */

static void
run_iamax(enum ty t, const struct vvariant *v, int min)
{
    struct buf x = buf_new(t, vspan(v->n, v->incx));
    struct scalar r;
    void *res;
    int64_t got = 0, want = 0;
    double best = 0.0;
    cublasStatus_t st;

    pointer_mode(v->device);
    res = result_arg(&r, v->device);
    st = min ? CALL4(t, v->wide, cublasIsamin, cublasIdamin, cublasIcamin,
                     cublasIzamin, h, v->n, x.dev, v->incx, res)
             : CALL4(t, v->wide, cublasIsamax, cublasIdamax, cublasIcamax,
                     cublasIzamax, h, v->n, x.dev, v->incx, res);
    assert_int_equal(st, OK);
    if (v->wide) {
        result_fetch(&got, &r, 8);
    } else {
        int g;
        result_fetch(&g, &r, 4);
        got = g;
    }
    /* |re| + |im|, the first extreme; 0 when incx <= 0 (documented). */
    for (int i = 0; v->incx > 0 && i < v->n; i++) {
        cplx e = x.want[vat(i, v->n, v->incx)];
        double m = fabs(creal(e)) + fabs(cimag(e));

        if (i == 0 || (min ? m < best : m > best)) {
            best = m;
            want = i + 1;
        }
    }
    assert_int_equal(got, want);
    scalar_free(&r);
    buf_free(&x);
}

static void
test_amax_amin(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(all_types); t++)
        for (size_t v = 0; v < COUNT(vvariants); v++) {
            run_iamax(all_types[t], &vvariants[v], 0);
            run_iamax(all_types[t], &vvariants[v], 1);
        }
}

/* asum (nrm2 0) or nrm2 (1): a real result. */
static void
run_norm(enum ty t, const struct vvariant *v, int nrm2)
{
    struct buf x = buf_new(t, vspan(v->n, v->incx));
    struct scalar r;
    double want = 0.0, got;
    void *res;
    cublasStatus_t st;

    pointer_mode(v->device);
    res = result_arg(&r, v->device);
    st = nrm2 ? CALL4(t, v->wide, cublasSnrm2, cublasDnrm2, cublasScnrm2,
                      cublasDznrm2, h, v->n, x.dev, v->incx, res)
              : CALL4(t, v->wide, cublasSasum, cublasDasum, cublasScasum,
                      cublasDzasum, h, v->n, x.dev, v->incx, res);
    assert_int_equal(st, OK);
    if (is_dbl(t)) {
        result_fetch(&got, &r, 8);
    } else {
        float f;
        result_fetch(&f, &r, 4);
        got = f;
    }
    for (int i = 0; v->incx > 0 && i < v->n; i++) {
        cplx e = x.want[vat(i, v->n, v->incx)];

        want += nrm2 ? creal(e) * creal(e) + cimag(e) * cimag(e)
                     : fabs(creal(e)) + fabs(cimag(e));
    }
    if (nrm2)
        want = sqrt(want);
    assert_true(fabs(got - want) <= tolerance(t) * (1.0 + want));
    scalar_free(&r);
    buf_free(&x);
}

static void
test_asum_nrm2(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(all_types); t++)
        for (size_t v = 0; v < COUNT(vvariants); v++) {
            run_norm(all_types[t], &vvariants[v], 0);
            run_norm(all_types[t], &vvariants[v], 1);
        }
}

static void
run_dot(enum ty t, const struct vvariant *v, int conjugate)
{
    struct buf x = buf_new(t, vspan(v->n, v->incx));
    struct buf y = buf_new(t, vspan(v->n, v->incy));
    struct scalar r;
    unsigned char out[16];
    cplx want = 0, got;
    void *res;
    cublasStatus_t st;

    pointer_mode(v->device);
    res = result_arg(&r, v->device);
    if (conjugate)
        st = CALL2(t, v->wide, cublasCdotc, cublasZdotc, h, v->n, x.dev,
                   v->incx, y.dev, v->incy, res);
    else
        st = CALL4(t, v->wide, cublasSdot, cublasDdot, cublasCdotu,
                   cublasZdotu, h, v->n, x.dev, v->incx, y.dev, v->incy,
                   res);
    assert_int_equal(st, OK);
    result_fetch(out, &r, esz(t));
    got = get(t, out, 0);
    for (int i = 0; i < v->n; i++) {
        cplx xe = x.want[vat(i, v->n, v->incx)];

        want += (conjugate ? conj(xe) : xe) * y.want[vat(i, v->n, v->incy)];
    }
    assert_true(cabs(got - want) <= tolerance(t) * (1.0 + cabs(want)));
    scalar_free(&r);
    buf_free(&x);
    buf_free(&y);
}

static void
test_dot(void **state)
{
    (void)state;
    for (size_t v = 0; v < COUNT(vvariants); v++) {
        for (size_t t = 0; t < COUNT(all_types); t++)
            run_dot(all_types[t], &vvariants[v], 0);
        for (size_t t = 0; t < COUNT(complex_types); t++)
            run_dot(complex_types[t], &vvariants[v], 1);
    }
}

/* Empty reductions give 0 in either pointer mode, even into a result
 * that held something else. */
static void
test_reductions_empty(void **state)
{
    struct buf x = buf_new(TZ, 4);
    struct scalar r;
    unsigned char out[16], zero[16] = { 0 };

    (void)state;
    for (int device = 0; device < 2; device++) {
        pointer_mode(device);
        assert_int_equal(cublasZdotc(h, 0, x.dev, 1, x.dev, 1,
                                     result_arg(&r, device)), OK);
        result_fetch(out, &r, 16);
        assert_memory_equal(out, zero, 16);
        scalar_free(&r);
        assert_int_equal(cublasDznrm2(h, -1, x.dev, 1,
                                      result_arg(&r, device)), OK);
        result_fetch(out, &r, 8);
        assert_memory_equal(out, zero, 8);
        scalar_free(&r);
        assert_int_equal(cublasIzamax_64(h, 0, x.dev, 1,
                                         result_arg(&r, device)), OK);
        result_fetch(out, &r, 8);
        assert_memory_equal(out, zero, 8);
        scalar_free(&r);
    }
    pointer_mode(0);
    buf_free(&x);
}

static void
run_axpy(enum ty t, const struct vvariant *v)
{
    struct buf x = buf_new(t, vspan(v->n, v->incx));
    struct buf y = buf_new(t, vspan(v->n, v->incy));
    struct scalar sa;
    cplx alpha = rnd_val(t);
    const void *pa;

    pointer_mode(v->device);
    pa = scalar_arg(&sa, t, 0, &alpha, v->device);
    assert_int_equal(CALL4(t, v->wide, cublasSaxpy, cublasDaxpy, cublasCaxpy,
                           cublasZaxpy, h, v->n, pa, x.dev, v->incx, y.dev,
                           v->incy), OK);
    for (int i = 0; i < v->n; i++)
        y.want[vat(i, v->n, v->incy)] += alpha * x.want[vat(i, v->n, v->incx)];
    buf_check(&y, 1, "axpy");
    buf_check(&x, 0, "axpy x");
    scalar_free(&sa);
    buf_free(&x);
    buf_free(&y);
}

/* copy (swap 0) or swap (1). */
static void
run_copy_swap(enum ty t, const struct vvariant *v, int swap)
{
    struct buf x = buf_new(t, vspan(v->n, v->incx));
    struct buf y = buf_new(t, vspan(v->n, v->incy));

    pointer_mode(v->device);
    if (swap)
        assert_int_equal(CALL4(t, v->wide, cublasSswap, cublasDswap,
                               cublasCswap, cublasZswap, h, v->n, x.dev,
                               v->incx, y.dev, v->incy), OK);
    else
        assert_int_equal(CALL4(t, v->wide, cublasScopy, cublasDcopy,
                               cublasCcopy, cublasZcopy, h, v->n, x.dev,
                               v->incx, y.dev, v->incy), OK);
    for (int i = 0; i < v->n; i++) {
        cplx *xi = &x.want[vat(i, v->n, v->incx)];
        cplx *yi = &y.want[vat(i, v->n, v->incy)], old = *yi;

        *yi = *xi;
        if (swap)
            *xi = old;
    }
    buf_check(&x, 0, swap ? "swap x" : "copy x");
    buf_check(&y, 0, swap ? "swap y" : "copy y");
    buf_free(&x);
    buf_free(&y);
}

/* scal, and Csscal / Zdscal (`real`): incx <= 0 changes nothing. */
static void
run_scal(enum ty t, const struct vvariant *v, int real)
{
    struct buf x = buf_new(t, vspan(v->n, v->incx));
    struct scalar sa;
    cplx alpha = rnd_val(t);
    const void *pa;

    pointer_mode(v->device);
    pa = scalar_arg(&sa, t, real, &alpha, v->device);
    if (real)
        assert_int_equal(CALL2(t, v->wide, cublasCsscal, cublasZdscal, h,
                               v->n, pa, x.dev, v->incx), OK);
    else
        assert_int_equal(CALL4(t, v->wide, cublasSscal, cublasDscal,
                               cublasCscal, cublasZscal, h, v->n, pa, x.dev,
                               v->incx), OK);
    for (int i = 0; v->incx > 0 && i < v->n; i++)
        x.want[vat(i, v->n, v->incx)] *= alpha;
    buf_check(&x, 1, real ? "scal real" : "scal");
    scalar_free(&sa);
    buf_free(&x);
}

static void
test_vector_updates(void **state)
{
    (void)state;
    for (size_t v = 0; v < COUNT(vvariants); v++) {
        for (size_t t = 0; t < COUNT(all_types); t++) {
            run_axpy(all_types[t], &vvariants[v]);
            run_copy_swap(all_types[t], &vvariants[v], 0);
            run_copy_swap(all_types[t], &vvariants[v], 1);
            run_scal(all_types[t], &vvariants[v], 0);
        }
        for (size_t t = 0; t < COUNT(complex_types); t++)
            run_scal(complex_types[t], &vvariants[v], 1);
    }
}

/* rot with real c and s (S, D, Csrot, Zdrot: `complex_s` 0) or a complex
 * s (Crot, Zrot). */
static void
run_rot(enum ty t, const struct vvariant *v, int complex_s)
{
    struct buf x = buf_new(t, vspan(v->n, v->incx));
    struct buf y = buf_new(t, vspan(v->n, v->incy));
    struct scalar sc, ss;
    cplx c = rnd(), s = complex_s ? rnd_val(t) : rnd();
    const void *pc, *ps;
    cublasStatus_t st;

    pointer_mode(v->device);
    pc = scalar_arg(&sc, t, 1, &c, v->device);
    ps = scalar_arg(&ss, t, !complex_s, &s, v->device);
    if (complex_s)
        st = CALL2(t, v->wide, cublasCrot, cublasZrot, h, v->n, x.dev,
                   v->incx, y.dev, v->incy, pc, ps);
    else if (is_cplx(t))
        st = CALL2(t, v->wide, cublasCsrot, cublasZdrot, h, v->n, x.dev,
                   v->incx, y.dev, v->incy, pc, ps);
    else
        st = CALL2(t, v->wide, cublasSrot, cublasDrot, h, v->n, x.dev,
                   v->incx, y.dev, v->incy, pc, ps);
    assert_int_equal(st, OK);
    for (int i = 0; i < v->n; i++) {
        cplx *xi = &x.want[vat(i, v->n, v->incx)];
        cplx *yi = &y.want[vat(i, v->n, v->incy)], xv = *xi, yv = *yi;

        *xi = c * xv + s * yv;
        *yi = c * yv - conj(s) * xv;
    }
    buf_check(&x, 1, "rot x");
    buf_check(&y, 1, "rot y");
    scalar_free(&sc);
    scalar_free(&ss);
    buf_free(&x);
    buf_free(&y);
}

/* rotm with each flag: H from param as the reference BLAS defines it. */
static void
run_rotm(enum ty t, const struct vvariant *v, double flag)
{
    struct buf x = buf_new(t, vspan(v->n, v->incx));
    struct buf y = buf_new(t, vspan(v->n, v->incy));
    struct buf p = buf_new(t, 5);
    double h11, h12, h21, h22;

    buf_set(&p, 0, flag);
    buf_upload(&p);
    h11 = creal(p.want[1]), h21 = creal(p.want[2]);
    h12 = creal(p.want[3]), h22 = creal(p.want[4]);
    if (flag == 0.0)
        h11 = h22 = 1.0;
    else if (flag == 1.0)
        h12 = 1.0, h21 = -1.0;
    else if (flag == -2.0)
        h11 = h22 = 1.0, h12 = h21 = 0.0;
    pointer_mode(v->device);
    assert_int_equal(CALL2(t, v->wide, cublasSrotm, cublasDrotm, h, v->n,
                           x.dev, v->incx, y.dev, v->incy,
                           v->device ? p.dev : (void *)p.host), OK);
    for (int i = 0; i < v->n; i++) {
        cplx *xi = &x.want[vat(i, v->n, v->incx)];
        cplx *yi = &y.want[vat(i, v->n, v->incy)], xv = *xi, yv = *yi;

        *xi = h11 * xv + h12 * yv;
        *yi = h21 * xv + h22 * yv;
    }
    buf_check(&x, 1, "rotm x");
    buf_check(&y, 1, "rotm y");
    buf_free(&x);
    buf_free(&y);
    buf_free(&p);
}

static void
test_rotations(void **state)
{
    static const double flags[] = { -1.0, 0.0, 1.0, -2.0 };

    (void)state;
    for (size_t v = 0; v < COUNT(vvariants); v++) {
        for (size_t t = 0; t < COUNT(all_types); t++)
            run_rot(all_types[t], &vvariants[v], 0);
        for (size_t t = 0; t < COUNT(complex_types); t++)
            run_rot(complex_types[t], &vvariants[v], 1);
        for (size_t t = 0; t < COUNT(real_types); t++)
            run_rotm(real_types[t], &vvariants[v], flags[v]);
    }
}

/* Element i of an array of type t at base, host or device. */
static void *
elem_at(void *base, enum ty t, size_t i)
{
    return (unsigned char *)base + i * esz(t);
}

/* rotg: c real, c^2 + |s|^2 = 1, and the rotation takes (a, b) to (r, 0)
 * with r returned in a. */
static void
run_rotg(enum ty t, int device, cplx a, cplx b)
{
    struct buf args = buf_new(t, 4);    /* a, b, c (real part), s */
    void *base;
    cplx r, s;
    double c, tol = 100 * tolerance(t);

    buf_set(&args, 0, a);
    buf_set(&args, 1, b);
    buf_upload(&args);
    a = args.want[0];
    b = args.want[1];
    pointer_mode(device);
    base = device ? args.dev : (void *)args.host;
    assert_int_equal(CALL4_NARROW(t, cublasSrotg, cublasDrotg, cublasCrotg,
                                  cublasZrotg, h, elem_at(base, t, 0),
                                  elem_at(base, t, 1), elem_at(base, t, 2),
                                  elem_at(base, t, 3)), OK);
    if (device)
        assert_int_equal(cudaMemcpy(args.host, args.dev, 4 * esz(t),
                                    cudaMemcpyDeviceToHost), cudaSuccess);
    r = get(t, args.host, 0);
    s = get(t, args.host, 3);
    c = is_dbl(t) ? ((double *)(void *)(args.host + 2 * esz(t)))[0]
                  : ((float *)(void *)(args.host + 2 * esz(t)))[0];
    assert_true(fabs(c * c + creal(s * conj(s)) - 1.0) <= tol);
    assert_true(cabs(c * a + s * b - r) <= tol * (1 + cabs(r)));
    assert_true(cabs(-conj(s) * a + c * b) <= tol * (1 + cabs(r)));
    buf_free(&args);
}

/* rotmg: H (from param) takes (x1, y1) to (x1', 0) with d1 x1^2 + d2 y1^2
 * = d1' x1'^2. */
static void
run_rotmg(enum ty t, int device, double d1, double d2, double x1, double y1)
{
    struct buf args = buf_new(t, 9);    /* d1, d2, x1, y1, param[5] */
    void *base;
    double p[9], h11, h12, h21, h22, tol = 100 * tolerance(t);

    buf_set(&args, 0, d1);
    buf_set(&args, 1, d2);
    buf_set(&args, 2, x1);
    buf_set(&args, 3, y1);
    buf_upload(&args);
    pointer_mode(device);
    base = device ? args.dev : (void *)args.host;
    assert_int_equal(t == TS ? cublasSrotmg(h, elem_at(base, t, 0),
                                            elem_at(base, t, 1),
                                            elem_at(base, t, 2),
                                            elem_at(base, t, 3),
                                            elem_at(base, t, 4))
                             : cublasDrotmg(h, elem_at(base, t, 0),
                                            elem_at(base, t, 1),
                                            elem_at(base, t, 2),
                                            elem_at(base, t, 3),
                                            elem_at(base, t, 4)), OK);
    if (device)
        assert_int_equal(cudaMemcpy(args.host, args.dev, 9 * esz(t),
                                    cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 9; i++)
        p[i] = creal(get(t, args.host, (size_t)i));
    h11 = p[5], h21 = p[6], h12 = p[7], h22 = p[8];
    if (p[4] == 0.0)
        h11 = h22 = 1.0;
    else if (p[4] == 1.0)
        h12 = 1.0, h21 = -1.0;
    else if (p[4] == -2.0)
        h11 = h22 = 1.0, h12 = h21 = 0.0;
    else
        assert_true(p[4] == -1.0);
    assert_true(fabs(h21 * x1 + h22 * y1) <= tol * (fabs(x1) + fabs(y1)));
    assert_true(fabs(h11 * x1 + h12 * y1 - p[2]) <= tol * (1 + fabs(p[2])));
    assert_true(fabs(d1 * x1 * x1 + d2 * y1 * y1 - p[0] * p[2] * p[2]) <=
                tol * (1 + d1 * x1 * x1 + d2 * y1 * y1));
    buf_free(&args);
}

static void
test_rotation_constructions(void **state)
{
    (void)state;
    for (int device = 0; device < 2; device++) {
        for (size_t t = 0; t < COUNT(all_types); t++) {
            enum ty ty = all_types[t];

            run_rotg(ty, device, rnd_val(ty), rnd_val(ty));
            run_rotg(ty, device, 0.0, rnd_val(ty));
        }
        for (size_t t = 0; t < COUNT(real_types); t++) {
            run_rotmg(real_types[t], device, 0.75, 0.5, rnd(), rnd());
            run_rotmg(real_types[t], device, 2.0, 0.125, 0.25, 0.875);
        }
    }
    pointer_mode(0);
}

/* ---- Matrices: storage and references ------------------------------------- */

enum storage { FULL, BAND, PACKED };

/* Where a symmetric, Hermitian or triangular matrix's stored triangle
 * lies: full (leading dimension ld), band (k off-diagonals) or packed. */
struct view {
    enum storage s;
    int upper, n, k, ld;
};

/* Index of stored element (i, j), or -1 outside the stored triangle or
 * band. */
static long
vidx(const struct view *v, int i, int j)
{
    if (v->upper ? i > j : i < j)
        return -1;
    switch (v->s) {
    case FULL:
        return i + (long)j * v->ld;
    case BAND:
        if (abs(i - j) > v->k)
            return -1;
        return (v->upper ? v->k + i - j : i - j) + (long)j * v->ld;
    default:
        return v->upper ? i + (long)j * (j + 1) / 2
                        : i + (long)j * (2 * v->n - j - 1) / 2;
    }
}

static size_t
view_size(const struct view *v)
{
    return v->s == PACKED ? (size_t)v->n * (v->n + 1) / 2 + 1
                          : (size_t)v->ld * v->n + 1;
}

/* Element (i, j) of the symmetric (or Hermitian) matrix a stores. */
static cplx
sym_el(const struct view *v, const cplx *a, int herm, int i, int j)
{
    long p = vidx(v, i, j);

    if (p >= 0)
        return herm && i == j ? creal(a[p]) : a[p];
    p = vidx(v, j, i);
    if (p < 0)
        return 0;
    return herm ? conj(a[p]) : a[p];
}

/* Element (i, j) of op(T), T triangular as stored, unit diagonal or not. */
static cplx
tri_el(const struct view *v, const cplx *a, int unit,
       cublasOperation_t trans, int i, int j)
{
    long p;

    if (trans != CUBLAS_OP_N) {
        int tmp = i;
        i = j;
        j = tmp;
    }
    if (i == j && unit)
        return 1;
    p = vidx(v, i, j);
    if (p < 0)
        return 0;
    return trans == CUBLAS_OP_C ? conj(a[p]) : a[p];
}

/* A triangle well conditioned for solving: a diagonal of magnitude 2 to
 * 3 (set anyway when unit, to show it is not read). The caller uploads. */
static void
condition_triangle(struct buf *a, const struct view *v)
{
    for (int i = 0; i < v->n; i++)
        buf_set(a, (size_t)vidx(v, i, i),
                (2.0 + fabs(rnd())) * (rnd() < 0 ? -1 : 1) +
                    (is_cplx(a->t) ? 0.5 * rnd() * I : 0));
}

/* Solves M x = b in place, M n x n dense (column-major), triangular or
 * not, by elimination without pivoting. */
static void
solve_dense(int n, cplx *m, cplx *b)
{
    for (int p = 0; p < n; p++)
        for (int i = p + 1; i < n; i++) {
            cplx f = m[i + p * n] / m[p + p * n];

            for (int j = p; j < n; j++)
                m[i + j * n] -= f * m[p + j * n];
            b[i] -= f * b[p];
        }
    for (int i = n - 1; i >= 0; i--) {
        for (int j = i + 1; j < n; j++)
            b[i] -= m[i + j * n] * b[j];
        b[i] /= m[i + i * n];
    }
}

/* Element (i, j) of op(X), X column-major with leading dimension ld. */
static cplx
op_el(const cplx *x, int ld, cublasOperation_t trans, int i, int j)
{
    switch (trans) {
    case CUBLAS_OP_N:
        return x[i + (size_t)j * ld];
    case CUBLAS_OP_T:
        return x[j + (size_t)i * ld];
    default:
        return conj(x[j + (size_t)i * ld]);
    }
}

static const cublasOperation_t ops[] = { CUBLAS_OP_N, CUBLAS_OP_T,
                                         CUBLAS_OP_C };

/* ---- Level 2 -------------------------------------------------------------- */

/* gemv (kl < 0) or gbmv. */
static void
run_gemv(enum ty t, const struct vvariant *v, cublasOperation_t trans,
         int kl, int ku, int beta_zero)
{
    int m = v->n + 1, n = v->n, band = kl >= 0;
    int ld = band ? kl + ku + 2 : m + 1;
    int lenx = trans == CUBLAS_OP_N ? n : m, leny = trans == CUBLAS_OP_N ? m : n;
    struct buf a = buf_new(t, (size_t)ld * n);
    struct buf x = buf_new(t, vspan(lenx, v->incx));
    struct buf y = buf_new(t, vspan(leny, v->incy));
    struct scalar sa, sb;
    cplx alpha = rnd_val(t), beta = beta_zero ? 0 : rnd_val(t);
    const void *pa, *pb;
    cublasStatus_t st;

    if (beta_zero) {            /* y is not read: NaN there cannot leak */
        for (int i = 0; i < leny; i++)
            buf_set(&y, vat(i, leny, v->incy), NAN);
        buf_upload(&y);
    }
    pointer_mode(v->device);
    pa = scalar_arg(&sa, t, 0, &alpha, v->device);
    pb = scalar_arg(&sb, t, 0, &beta, v->device);
    if (band)
        st = CALL4(t, v->wide, cublasSgbmv, cublasDgbmv, cublasCgbmv,
                   cublasZgbmv, h, trans, m, n, kl, ku, pa, a.dev, ld, x.dev,
                   v->incx, pb, y.dev, v->incy);
    else
        st = CALL4(t, v->wide, cublasSgemv, cublasDgemv, cublasCgemv,
                   cublasZgemv, h, trans, m, n, pa, a.dev, ld, x.dev,
                   v->incx, pb, y.dev, v->incy);
    assert_int_equal(st, OK);
    for (int i = 0; i < leny; i++) {
        cplx s = 0, *yi = &y.want[vat(i, leny, v->incy)];

        for (int p = 0; p < lenx; p++) {
            int r = trans == CUBLAS_OP_N ? i : p, c = trans == CUBLAS_OP_N ? p : i;
            cplx e;

            if (band && (r - c > kl || c - r > ku))
                continue;
            e = a.want[(band ? ku + r - c : r) + (size_t)c * ld];
            s += (trans == CUBLAS_OP_C ? conj(e) : e) *
                 x.want[vat(p, lenx, v->incx)];
        }
        *yi = alpha * s + (beta_zero ? 0 : beta * *yi);
    }
    buf_check(&y, 4, band ? "gbmv" : "gemv");
    scalar_free(&sa);
    scalar_free(&sb);
    buf_free(&a);
    buf_free(&x);
    buf_free(&y);
}

static void
test_gemv_gbmv(void **state)
{
    (void)state;
    for (size_t v = 0; v < COUNT(vvariants); v++)
        for (size_t t = 0; t < COUNT(all_types); t++)
            for (size_t o = 0; o < COUNT(ops); o++) {
                run_gemv(all_types[t], &vvariants[v], ops[o], -1, 0, 0);
                run_gemv(all_types[t], &vvariants[v], ops[o], 1, 2,
                         o == 2);
            }
}

/* symv/hemv (FULL), sbmv/hbmv (BAND), spmv/hpmv (PACKED): y = alpha A x
 * + beta y. */
static void
run_symv(enum ty t, const struct vvariant *v, enum storage s, int herm,
         int upper)
{
    int n = v->n;
    struct view vw = { s, upper, n, 2, s == BAND ? 4 : n + 2 };
    cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER
                                  : CUBLAS_FILL_MODE_LOWER;
    struct buf a = buf_new(t, view_size(&vw));
    struct buf x = buf_new(t, vspan(n, v->incx));
    struct buf y = buf_new(t, vspan(n, v->incy));
    struct scalar sa, sb;
    cplx alpha = rnd_val(t), beta = rnd_val(t);
    const void *pa, *pb;
    cublasStatus_t st;

    pointer_mode(v->device);
    pa = scalar_arg(&sa, t, 0, &alpha, v->device);
    pb = scalar_arg(&sb, t, 0, &beta, v->device);
    if (s == FULL && herm)
        st = CALL2(t, v->wide, cublasChemv, cublasZhemv, h, uplo, n, pa,
                   a.dev, vw.ld, x.dev, v->incx, pb, y.dev, v->incy);
    else if (s == FULL)
        st = CALL4(t, v->wide, cublasSsymv, cublasDsymv, cublasCsymv,
                   cublasZsymv, h, uplo, n, pa, a.dev, vw.ld, x.dev, v->incx,
                   pb, y.dev, v->incy);
    else if (s == BAND)
        st = CALL4(t, v->wide, cublasSsbmv, cublasDsbmv, cublasChbmv,
                   cublasZhbmv, h, uplo, n, vw.k, pa, a.dev, vw.ld, x.dev,
                   v->incx, pb, y.dev, v->incy);
    else
        st = CALL4(t, v->wide, cublasSspmv, cublasDspmv, cublasChpmv,
                   cublasZhpmv, h, uplo, n, pa, a.dev, x.dev, v->incx, pb,
                   y.dev, v->incy);
    assert_int_equal(st, OK);
    for (int i = 0; i < n; i++) {
        cplx sum = 0, *yi = &y.want[vat(i, n, v->incy)];

        for (int p = 0; p < n; p++)
            sum += sym_el(&vw, a.want, herm, i, p) *
                   x.want[vat(p, n, v->incx)];
        *yi = alpha * sum + beta * *yi;
    }
    buf_check(&y, 4, "symv");
    scalar_free(&sa);
    scalar_free(&sb);
    buf_free(&a);
    buf_free(&x);
    buf_free(&y);
}

static void
test_symv_family(void **state)
{
    (void)state;
    for (size_t v = 0; v < COUNT(vvariants); v++)
        for (int upper = 0; upper < 2; upper++)
            for (size_t t = 0; t < COUNT(all_types); t++) {
                enum ty ty = all_types[t];

                run_symv(ty, &vvariants[v], FULL, 0, upper);
                /* sbmv and spmv are S and D; hbmv and hpmv C and Z. */
                run_symv(ty, &vvariants[v], BAND, is_cplx(ty), upper);
                run_symv(ty, &vvariants[v], PACKED, is_cplx(ty), upper);
                if (is_cplx(ty))
                    run_symv(ty, &vvariants[v], FULL, 1, upper);
            }
}

/* ger (geru for complex; gerc with `conjugate`): A += alpha x y^T (y^H). */
static void
run_ger(enum ty t, const struct vvariant *v, int conjugate)
{
    int m = v->n + 2, n = v->n, ld = m + 1;
    struct buf a = buf_new(t, (size_t)ld * n);
    struct buf x = buf_new(t, vspan(m, v->incx));
    struct buf y = buf_new(t, vspan(n, v->incy));
    struct scalar sa;
    cplx alpha = rnd_val(t);
    const void *pa;
    cublasStatus_t st;

    pointer_mode(v->device);
    pa = scalar_arg(&sa, t, 0, &alpha, v->device);
    if (conjugate)
        st = CALL2(t, v->wide, cublasCgerc, cublasZgerc, h, m, n, pa, x.dev,
                   v->incx, y.dev, v->incy, a.dev, ld);
    else
        st = CALL4(t, v->wide, cublasSger, cublasDger, cublasCgeru,
                   cublasZgeru, h, m, n, pa, x.dev, v->incx, y.dev, v->incy,
                   a.dev, ld);
    assert_int_equal(st, OK);
    for (int j = 0; j < n; j++) {
        cplx yj = y.want[vat(j, n, v->incy)];

        for (int i = 0; i < m; i++)
            a.want[i + (size_t)j * ld] += alpha * x.want[vat(i, m, v->incx)] *
                                          (conjugate ? conj(yj) : yj);
    }
    buf_check(&a, 2, "ger");
    scalar_free(&sa);
    buf_free(&a);
    buf_free(&x);
    buf_free(&y);
}

/* The symmetric and Hermitian rank updates, full (syr, her, syr2, her2)
 * or packed (spr, hpr, spr2, hpr2): the stored triangle gets alpha x x^T
 * (x x^H with a real alpha), or alpha x y^T + alpha y x^T (alpha x y^H +
 * conj(alpha) y x^H); a Hermitian diagonal stays real. */
static void
run_syr(enum ty t, const struct vvariant *v, int packed, int herm, int two,
        int upper)
{
    int n = v->n;
    struct view vw = { packed ? PACKED : FULL, upper, n, 0, n + 1 };
    cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER
                                  : CUBLAS_FILL_MODE_LOWER;
    struct buf a = buf_new(t, view_size(&vw));
    struct buf x = buf_new(t, vspan(n, v->incx));
    struct buf y = buf_new(t, vspan(n, v->incy));
    struct scalar sa;
    cplx alpha = rnd_val(t);
    const void *pa;
    void *ad = a.dev;
    int lda = vw.ld;
    cublasStatus_t st;

    pointer_mode(v->device);
    pa = scalar_arg(&sa, t, herm && !two, &alpha, v->device);
    if (!packed && !two)
        st = herm ? CALL2(t, v->wide, cublasCher, cublasZher, h, uplo, n,
                          pa, x.dev, v->incx, ad, lda)
                  : CALL4(t, v->wide, cublasSsyr, cublasDsyr, cublasCsyr,
                          cublasZsyr, h, uplo, n, pa, x.dev, v->incx, ad,
                          lda);
    else if (!packed)
        st = herm ? CALL2(t, v->wide, cublasCher2, cublasZher2, h, uplo, n,
                          pa, x.dev, v->incx, y.dev, v->incy, ad, lda)
                  : CALL4(t, v->wide, cublasSsyr2, cublasDsyr2, cublasCsyr2,
                          cublasZsyr2, h, uplo, n, pa, x.dev, v->incx, y.dev,
                          v->incy, ad, lda);
    else if (!two)      /* spr: S, D; hpr: C, Z */
        st = CALL4(t, v->wide, cublasSspr, cublasDspr, cublasChpr,
                   cublasZhpr, h, uplo, n, pa, x.dev, v->incx, ad);
    else
        st = CALL4(t, v->wide, cublasSspr2, cublasDspr2, cublasChpr2,
                   cublasZhpr2, h, uplo, n, pa, x.dev, v->incx, y.dev,
                   v->incy, ad);
    assert_int_equal(st, OK);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            long p = vidx(&vw, i, j);
            cplx xi = x.want[vat(i, n, v->incx)], xj = x.want[vat(j, n, v->incx)];
            cplx yi = y.want[vat(i, n, v->incy)], yj = y.want[vat(j, n, v->incy)];
            cplx d;

            if (p < 0)
                continue;
            if (!two)
                d = alpha * xi * (herm ? conj(xj) : xj);
            else if (herm)
                d = alpha * xi * conj(yj) + conj(alpha) * yi * conj(xj);
            else
                d = alpha * (xi * yj + yi * xj);
            a.want[p] += d;
            if (herm && i == j)
                a.want[p] = creal(a.want[p]);
        }
    buf_check(&a, 2, "syr");
    scalar_free(&sa);
    buf_free(&a);
    buf_free(&x);
    buf_free(&y);
}

static void
test_rank_updates(void **state)
{
    (void)state;
    for (size_t v = 0; v < COUNT(vvariants); v++) {
        for (size_t t = 0; t < COUNT(all_types); t++) {
            enum ty ty = all_types[t];

            run_ger(ty, &vvariants[v], 0);
            if (is_cplx(ty))
                run_ger(ty, &vvariants[v], 1);
            for (int upper = 0; upper < 2; upper++)
                for (int two = 0; two < 2; two++) {
                    run_syr(ty, &vvariants[v], 0, 0, two, upper);
                    /* spr(2) are S and D, hpr(2) C and Z */
                    run_syr(ty, &vvariants[v], 1, is_cplx(ty), two, upper);
                    if (is_cplx(ty))
                        run_syr(ty, &vvariants[v], 0, 1, two, upper);
                }
        }
    }
}

/* trmv/tbmv/tpmv (x = op(A) x) and trsv/tbsv/tpsv (op(A) x = b). */
static void
run_tri_l2(enum ty t, const struct vvariant *v, enum storage s, int solve,
           int upper, cublasOperation_t trans, int unit)
{
    int n = v->n;
    struct view vw = { s, upper, n, 2, s == BAND ? 3 : n + 1 };
    cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER
                                  : CUBLAS_FILL_MODE_LOWER;
    cublasDiagType_t diag = unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
    struct buf a = buf_new(t, view_size(&vw));
    struct buf x = buf_new(t, vspan(n, v->incx));
    cplx *m = calloc((size_t)n * n, sizeof(cplx)), *b = calloc(n, sizeof(cplx));
    cublasStatus_t st;

    assert_non_null(m);
    assert_non_null(b);
    condition_triangle(&a, &vw);
    buf_upload(&a);
    pointer_mode(v->device);
    if (s == FULL && solve)
        st = CALL4(t, v->wide, cublasStrsv, cublasDtrsv, cublasCtrsv,
                   cublasZtrsv, h, uplo, trans, diag, n, a.dev, vw.ld, x.dev,
                   v->incx);
    else if (s == FULL)
        st = CALL4(t, v->wide, cublasStrmv, cublasDtrmv, cublasCtrmv,
                   cublasZtrmv, h, uplo, trans, diag, n, a.dev, vw.ld, x.dev,
                   v->incx);
    else if (s == BAND && solve)
        st = CALL4(t, v->wide, cublasStbsv, cublasDtbsv, cublasCtbsv,
                   cublasZtbsv, h, uplo, trans, diag, n, vw.k, a.dev, vw.ld,
                   x.dev, v->incx);
    else if (s == BAND)
        st = CALL4(t, v->wide, cublasStbmv, cublasDtbmv, cublasCtbmv,
                   cublasZtbmv, h, uplo, trans, diag, n, vw.k, a.dev, vw.ld,
                   x.dev, v->incx);
    else if (solve)
        st = CALL4(t, v->wide, cublasStpsv, cublasDtpsv, cublasCtpsv,
                   cublasZtpsv, h, uplo, trans, diag, n, a.dev, x.dev,
                   v->incx);
    else
        st = CALL4(t, v->wide, cublasStpmv, cublasDtpmv, cublasCtpmv,
                   cublasZtpmv, h, uplo, trans, diag, n, a.dev, x.dev,
                   v->incx);
    assert_int_equal(st, OK);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            m[i + j * n] = tri_el(&vw, a.want, unit, trans, i, j);
    for (int i = 0; i < n; i++) {
        b[i] = 0;
        if (solve)
            b[i] = x.want[vat(i, n, v->incx)];
        else
            for (int p = 0; p < n; p++)
                b[i] += m[i + p * n] * x.want[vat(p, n, v->incx)];
    }
    if (solve)
        solve_dense(n, m, b);
    for (int i = 0; i < n; i++)
        x.want[vat(i, n, v->incx)] = b[i];
    buf_check(&x, 8, solve ? "triangular solve" : "triangular product");
    free(m);
    free(b);
    buf_free(&a);
    buf_free(&x);
}

static void
test_triangular_l2(void **state)
{
    (void)state;
    for (size_t v = 0; v < COUNT(vvariants); v++)
        for (size_t t = 0; t < COUNT(all_types); t++)
            for (int s = FULL; s <= PACKED; s++)
                for (int solve = 0; solve < 2; solve++)
                    for (size_t o = 0; o < COUNT(ops); o++)
                        run_tri_l2(all_types[t], &vvariants[v],
                                   (enum storage)s, solve, (int)(v + o) % 2,
                                   ops[o], (int)(v + o + s) % 3 == 0);
}

/* ---- Level 3 -------------------------------------------------------------- */

/* The matrix variants: host or device scalars, int or int64_t sizes. */
struct mvariant {
    int device, wide;
};

static const struct mvariant mvariants[] = {
    { 0, 0 }, { 1, 1 }, { 0, 1 }, { 1, 0 },
};

/* C = alpha op(A) op(B) + beta C for `count` problems. `batch`: 0 one
 * problem, 1 device pointer arrays, 2 strided; `three_m` the gemm3m
 * forms (C, Z). */
static void
run_gemm(enum ty t, const struct mvariant *mv, cublasOperation_t ta,
         cublasOperation_t tb, int batch, int three_m, int beta_zero)
{
    int m = 5, n = 4, k = 3, count = batch ? 3 : 1;
    int lda = (ta == CUBLAS_OP_N ? m : k) + 1, ldb = (tb == CUBLAS_OP_N ? k : n) + 2;
    int ldc = m + 1;
    long sa_ = (long)lda * (ta == CUBLAS_OP_N ? k : m) + 3;
    long sb_ = (long)ldb * (tb == CUBLAS_OP_N ? n : k) + 1, sc_ = (long)ldc * n + 2;
    struct buf a = buf_new(t, (size_t)sa_ * count);
    struct buf b = buf_new(t, (size_t)sb_ * count);
    struct buf c = buf_new(t, (size_t)sc_ * count);
    struct scalar salpha, sbeta;
    cplx alpha = rnd_val(t), beta = beta_zero ? 0 : rnd_val(t);
    const void *pa, *pb;
    void **arrays = NULL, *parr = NULL, *arr_b = NULL, *arr_c = NULL;
    cublasStatus_t st;

    if (beta_zero) {
        for (size_t i = 0; i < c.n; i++)
            buf_set(&c, i, NAN);
        buf_upload(&c);
    }
    pointer_mode(mv->device);
    pa = scalar_arg(&salpha, t, 0, &alpha, mv->device);
    pb = scalar_arg(&sbeta, t, 0, &beta, mv->device);
    if (batch == 1) {   /* the problems in reverse order in the arrays */
        arrays = malloc(3 * count * sizeof(void *));
        assert_non_null(arrays);
        for (int i = 0; i < count; i++) {
            int at = count - 1 - i;
            arrays[i] = (unsigned char *)a.dev + at * sa_ * esz(t);
            arrays[count + i] = (unsigned char *)b.dev + at * sb_ * esz(t);
            arrays[2 * count + i] = (unsigned char *)c.dev + at * sc_ * esz(t);
        }
        assert_int_equal(cudaMalloc(&parr, 3 * count * sizeof(void *)),
                         cudaSuccess);
        assert_int_equal(cudaMemcpy(parr, arrays, 3 * count * sizeof(void *),
                                    cudaMemcpyHostToDevice), cudaSuccess);
        arr_b = (void **)parr + count;
        arr_c = (void **)parr + 2 * count;
    }
    if (batch == 0 && three_m)
        st = CALL2(t, mv->wide, cublasCgemm3m, cublasZgemm3m, h, ta, tb, m,
                   n, k, pa, a.dev, lda, b.dev, ldb, pb, c.dev, ldc);
    else if (batch == 0)
        st = CALL4(t, mv->wide, cublasSgemm, cublasDgemm, cublasCgemm,
                   cublasZgemm, h, ta, tb, m, n, k, pa, a.dev, lda, b.dev,
                   ldb, pb, c.dev, ldc);
    else if (batch == 1 && three_m)
        st = CALL2(t, mv->wide, cublasCgemm3mBatched, cublasCgemm3mBatched,
                   h, ta, tb, m, n, k, pa, parr, lda, arr_b, ldb, pb, arr_c,
                   ldc, count);
    else if (batch == 1)
        st = CALL4(t, mv->wide, cublasSgemmBatched, cublasDgemmBatched,
                   cublasCgemmBatched, cublasZgemmBatched, h, ta, tb, m, n,
                   k, pa, parr, lda, arr_b, ldb, pb, arr_c, ldc, count);
    else if (three_m)
        st = CALL2(t, mv->wide, cublasCgemm3mStridedBatched,
                   cublasCgemm3mStridedBatched, h, ta, tb, m, n, k, pa,
                   a.dev, lda, sa_, b.dev, ldb, sb_, pb, c.dev, ldc, sc_,
                   count);
    else
        st = CALL4(t, mv->wide, cublasSgemmStridedBatched,
                   cublasDgemmStridedBatched, cublasCgemmStridedBatched,
                   cublasZgemmStridedBatched, h, ta, tb, m, n, k, pa, a.dev,
                   lda, sa_, b.dev, ldb, sb_, pb, c.dev, ldc, sc_, count);
    assert_int_equal(st, OK);
    for (int q = 0; q < count; q++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                cplx s = 0, *cij = &c.want[q * sc_ + i + (size_t)j * ldc];

                for (int p = 0; p < k; p++)
                    s += op_el(a.want + q * sa_, lda, ta, i, p) *
                         op_el(b.want + q * sb_, ldb, tb, p, j);
                *cij = alpha * s + (beta_zero ? 0 : beta * *cij);
            }
    buf_check(&c, 4, batch ? "batched gemm" : "gemm");
    if (parr != NULL)
        assert_int_equal(cudaFree(parr), cudaSuccess);
    free(arrays);
    scalar_free(&salpha);
    scalar_free(&sbeta);
    buf_free(&a);
    buf_free(&b);
    buf_free(&c);
}

static const enum ty gemm_types[] = { TD, TC, TZ };

static void
test_gemm(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(gemm_types); t++)
        for (size_t a = 0; a < COUNT(ops); a++)
            for (size_t b = 0; b < COUNT(ops); b++) {
                const struct mvariant *mv = &mvariants[(a + b) % 4];
                enum ty ty = gemm_types[t];

                run_gemm(ty, mv, ops[a], ops[b], 0, 0, a == b);
                if (is_cplx(ty))
                    run_gemm(ty, mv, ops[a], ops[b], 0, 1, 0);
            }
}

static void
test_gemm_batched_strided(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(gemm_types); t++)
        for (int batch = 1; batch <= 2; batch++)
            for (size_t v = 0; v < COUNT(mvariants); v++) {
                enum ty ty = gemm_types[t];

                run_gemm(ty, &mvariants[v], ops[v % 3], ops[(v + 1) % 3],
                         batch, 0, v == 3);
                if (ty == TC)
                    run_gemm(ty, &mvariants[v], ops[v % 3], ops[2], batch, 1,
                             0);
            }
}

/* symm/hemm: C = alpha A B + beta C (left) or alpha B A + beta C. */
static void
run_symm(enum ty t, const struct mvariant *mv, int left, int upper, int herm)
{
    int m = 5, n = 4, order = left ? m : n;
    struct view vw = { FULL, upper, order, 0, order + 1 };
    int ldb = m + 2, ldc = m + 1;
    cublasSideMode_t side = left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER
                                  : CUBLAS_FILL_MODE_LOWER;
    struct buf a = buf_new(t, view_size(&vw));
    struct buf b = buf_new(t, (size_t)ldb * n);
    struct buf c = buf_new(t, (size_t)ldc * n);
    struct scalar sa, sb;
    cplx alpha = rnd_val(t), beta = rnd_val(t);
    const void *pa, *pb;
    cublasStatus_t st;

    pointer_mode(mv->device);
    pa = scalar_arg(&sa, t, 0, &alpha, mv->device);
    pb = scalar_arg(&sb, t, 0, &beta, mv->device);
    if (herm)
        st = CALL2(t, mv->wide, cublasChemm, cublasZhemm, h, side, uplo, m, n,
                   pa, a.dev, vw.ld, b.dev, ldb, pb, c.dev, ldc);
    else
        st = CALL4(t, mv->wide, cublasSsymm, cublasDsymm, cublasCsymm,
                   cublasZsymm, h, side, uplo, m, n, pa, a.dev, vw.ld, b.dev,
                   ldb, pb, c.dev, ldc);
    assert_int_equal(st, OK);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            cplx s = 0, *cij = &c.want[i + (size_t)j * ldc];

            for (int p = 0; p < order; p++)
                s += left ? sym_el(&vw, a.want, herm, i, p) *
                                b.want[p + (size_t)j * ldb]
                          : b.want[i + (size_t)p * ldb] *
                                sym_el(&vw, a.want, herm, p, j);
            *cij = alpha * s + beta * *cij;
        }
    buf_check(&c, 4, "symm");
    scalar_free(&sa);
    scalar_free(&sb);
    buf_free(&a);
    buf_free(&b);
    buf_free(&c);
}

static void
test_symm_hemm(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(all_types); t++)
        for (int left = 0; left < 2; left++)
            for (int upper = 0; upper < 2; upper++) {
                const struct mvariant *mv = &mvariants[left * 2 + upper];
                enum ty ty = all_types[t];

                run_symm(ty, mv, left, upper, 0);
                if (is_cplx(ty))
                    run_symm(ty, mv, left, upper, 1);
            }
}

enum rk { SYRK, SYR2K, SYRKX };

/* syrk/herk, syr2k/her2k, syrkx/herkx: C's triangle (n x n) gets
 * alpha op(A) op(B)^T (+ alpha op(B) op(A)^T for syr2k) + beta C, B = A for
 * syrk; ^H and conj(alpha) for the Hermitian forms, whose beta (and herk's
 * alpha) is real and whose diagonal stays real. */
static void
run_rank_k(enum ty t, const struct mvariant *mv, enum rk form, int herm,
           int upper, cublasOperation_t trans)
{
    int n = 5, k = 3, rows = trans == CUBLAS_OP_N ? n : k;
    int cols = trans == CUBLAS_OP_N ? k : n, lda = rows + 1, ldb = rows + 2;
    int ldc = n + 1;
    cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER
                                  : CUBLAS_FILL_MODE_LOWER;
    struct buf a = buf_new(t, (size_t)lda * cols);
    struct buf b = buf_new(t, (size_t)ldb * cols);
    struct buf c = buf_new(t, (size_t)ldc * n);
    struct scalar sa, sb;
    cplx alpha = herm && form == SYRK ? rnd() : rnd_val(t);
    cplx beta = herm ? rnd() : rnd_val(t);
    const cplx *bw = form == SYRK ? a.want : b.want;
    int ldbw = form == SYRK ? lda : ldb;
    const void *pa, *pb;
    cublasStatus_t st;

    pointer_mode(mv->device);
    pa = scalar_arg(&sa, t, herm && form == SYRK, &alpha, mv->device);
    pb = scalar_arg(&sb, t, herm, &beta, mv->device);
    switch (form) {
    case SYRK:
        st = herm ? CALL2(t, mv->wide, cublasCherk, cublasZherk, h, uplo,
                          trans, n, k, pa, a.dev, lda, pb, c.dev, ldc)
                  : CALL4(t, mv->wide, cublasSsyrk, cublasDsyrk, cublasCsyrk,
                          cublasZsyrk, h, uplo, trans, n, k, pa, a.dev, lda,
                          pb, c.dev, ldc);
        break;
    case SYR2K:
        st = herm ? CALL2(t, mv->wide, cublasCher2k, cublasZher2k, h, uplo,
                          trans, n, k, pa, a.dev, lda, b.dev, ldb, pb, c.dev,
                          ldc)
                  : CALL4(t, mv->wide, cublasSsyr2k, cublasDsyr2k,
                          cublasCsyr2k, cublasZsyr2k, h, uplo, trans, n, k,
                          pa, a.dev, lda, b.dev, ldb, pb, c.dev, ldc);
        break;
    default:
        st = herm ? CALL2(t, mv->wide, cublasCherkx, cublasZherkx, h, uplo,
                          trans, n, k, pa, a.dev, lda, b.dev, ldb, pb, c.dev,
                          ldc)
                  : CALL4(t, mv->wide, cublasSsyrkx, cublasDsyrkx,
                          cublasCsyrkx, cublasZsyrkx, h, uplo, trans, n, k,
                          pa, a.dev, lda, b.dev, ldb, pb, c.dev, ldc);
        break;
    }
    assert_int_equal(st, OK);
    for (int j = 0; j < n; j++)
        for (int i = upper ? 0 : j; i <= (upper ? j : n - 1); i++) {
            cplx sum = 0, *cij = &c.want[i + (size_t)j * ldc];

            /* op(X)(i, p), op(A) and op(B) n x k: the product's (i, j) is
             * the sum over p of op(A)(i, p) op(B)(j, p), conjugated for
             * the Hermitian forms. */
            for (int p = 0; p < k; p++) {
                cplx ai = op_el(a.want, lda, trans, i, p);
                cplx aj = op_el(a.want, lda, trans, j, p);
                cplx bi = op_el(bw, ldbw, trans, i, p);
                cplx bj = op_el(bw, ldbw, trans, j, p);

                sum += alpha * ai * (herm ? conj(bj) : bj);
                if (form == SYR2K)
                    sum += (herm ? conj(alpha) : alpha) * bi *
                           (herm ? conj(aj) : aj);
            }
            *cij = sum + beta * *cij;
            if (herm && i == j)
                *cij = creal(*cij);
        }
    buf_check(&c, 4, "rank-k update");
    scalar_free(&sa);
    scalar_free(&sb);
    buf_free(&a);
    buf_free(&b);
    buf_free(&c);
}

static void
test_rank_k_updates(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(all_types); t++)
        for (int form = SYRK; form <= SYRKX; form++)
            for (int upper = 0; upper < 2; upper++)
                for (int tr = 0; tr < 2; tr++) {
                    enum ty ty = all_types[t];
                    const struct mvariant *mv =
                        &mvariants[(form + upper * 2 + tr) % 4];

                    run_rank_k(ty, mv, (enum rk)form, 0, upper,
                               tr ? CUBLAS_OP_T : CUBLAS_OP_N);
                    if (is_cplx(ty))
                        run_rank_k(ty, mv, (enum rk)form, 1, upper,
                                   tr ? CUBLAS_OP_C : CUBLAS_OP_N);
                }
}

/* trmm (C = alpha op(A) B or alpha B op(A); in place when `in_place`) and
 * trsm (op(A) X = alpha B or X op(A) = alpha B, X over B), one problem or
 * trsmBatched's `count`. */
static void
run_tri_l3(enum ty t, const struct mvariant *mv, int solve, int left,
           int upper, cublasOperation_t trans, int unit, int in_place,
           int count)
{
    int m = 4, n = 3, order = left ? m : n, ldb = m + 1;
    int ldc = in_place ? ldb : m + 2;
    struct view vw = { FULL, upper, order, 0, order + 1 };
    cublasSideMode_t side = left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER
                                  : CUBLAS_FILL_MODE_LOWER;
    cublasDiagType_t diag = unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
    size_t sa_ = view_size(&vw), sb_ = (size_t)ldb * n;
    struct buf a = buf_new(t, sa_ * count), b = buf_new(t, sb_ * count);
    struct buf c = buf_new(t, (size_t)ldc * n);
    struct buf *out = solve || in_place ? &b : &c;
    cplx *mat = calloc((size_t)order * order, sizeof(cplx));
    cplx *rhs = calloc((size_t)order, sizeof(cplx));
    struct scalar sa;
    cplx alpha = rnd_val(t);
    const void *pa;
    void *parr = NULL;
    cublasStatus_t st;

    assert_non_null(mat);
    assert_non_null(rhs);
    for (int q = 0; q < count; q++) {
        struct buf aq = a;      /* problem q's triangle, on the host */

        aq.host += q * sa_ * esz(t);
        aq.want += q * sa_;
        condition_triangle(&aq, &vw);
    }
    buf_upload(&a);
    pointer_mode(mv->device);
    pa = scalar_arg(&sa, t, 0, &alpha, mv->device);
    if (count > 1) {
        void *arrays[8], *arr_b;

        for (int q = 0; q < count; q++) {
            arrays[q] = (unsigned char *)a.dev + q * sa_ * esz(t);
            arrays[count + q] = (unsigned char *)b.dev + q * sb_ * esz(t);
        }
        assert_int_equal(cudaMalloc(&parr, sizeof(arrays)), cudaSuccess);
        assert_int_equal(cudaMemcpy(parr, arrays, sizeof(arrays),
                                    cudaMemcpyHostToDevice), cudaSuccess);
        arr_b = (void **)parr + count;
        st = CALL4(t, mv->wide, cublasStrsmBatched, cublasDtrsmBatched,
                   cublasCtrsmBatched, cublasZtrsmBatched, h, side, uplo,
                   trans, diag, m, n, pa, parr, vw.ld, arr_b, ldb, count);
    } else if (solve) {
        st = CALL4(t, mv->wide, cublasStrsm, cublasDtrsm, cublasCtrsm,
                   cublasZtrsm, h, side, uplo, trans, diag, m, n, pa, a.dev,
                   vw.ld, b.dev, ldb);
    } else {
        st = CALL4(t, mv->wide, cublasStrmm, cublasDtrmm, cublasCtrmm,
                   cublasZtrmm, h, side, uplo, trans, diag, m, n, pa, a.dev,
                   vw.ld, b.dev, ldb, in_place ? b.dev : c.dev, ldc);
    }
    assert_int_equal(st, OK);
    for (int q = 0; q < count; q++) {
        const cplx *aw = a.want + q * sa_;
        cplx *bw = b.want + q * sb_;
        int lines = left ? n : m;   /* columns (left) or rows (right) */

        for (int l = 0; l < lines; l++) {
            for (int i = 0; i < order; i++) {
                cplx bv = left ? bw[i + (size_t)l * ldb] : bw[l + (size_t)i * ldb];

                rhs[i] = 0;
                if (solve) {
                    rhs[i] = alpha * bv;
                } else {
                    for (int p = 0; p < order; p++)
                        rhs[i] += alpha *
                                  (left ? tri_el(&vw, aw, unit, trans, i, p) *
                                              bw[p + (size_t)l * ldb]
                                        : bw[l + (size_t)p * ldb] *
                                              tri_el(&vw, aw, unit, trans,
                                                     p, i));
                }
                /* right: X op(A) = B is op(A)^T X^T = B^T */
                for (int p = 0; solve && p < order; p++)
                    mat[i + p * order] =
                        left ? tri_el(&vw, aw, unit, trans, i, p)
                             : tri_el(&vw, aw, unit, trans, p, i);
            }
            if (solve)
                solve_dense(order, mat, rhs);
            for (int i = 0; i < order; i++) {
                size_t at = left ? i + (size_t)l * ldb : l + (size_t)i * ldb;
                size_t atc = left ? i + (size_t)l * ldc : l + (size_t)i * ldc;

                if (out == &c)
                    c.want[atc] = rhs[i];
                else
                    out->want[q * sb_ + at] = rhs[i];
            }
        }
    }
    buf_check(out, 8, solve ? "trsm" : "trmm");
    if (out != &b)
        buf_check(&b, 0, "trmm B");
    if (parr != NULL)
        assert_int_equal(cudaFree(parr), cudaSuccess);
    free(mat);
    free(rhs);
    scalar_free(&sa);
    buf_free(&a);
    buf_free(&b);
    buf_free(&c);
}

static void
test_trmm_trsm(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(all_types); t++)
        for (int left = 0; left < 2; left++)
            for (int upper = 0; upper < 2; upper++)
                for (size_t o = 0; o < COUNT(ops); o++) {
                    enum ty ty = all_types[t];
                    const struct mvariant *mv = &mvariants[(o + left) % 4];
                    int unit = (int)(o + upper) % 2;

                    run_tri_l3(ty, mv, 0, left, upper, ops[o], unit, 0, 1);
                    run_tri_l3(ty, mv, 0, left, upper, ops[o], unit, 1, 1);
                    run_tri_l3(ty, mv, 1, left, upper, ops[o], unit, 0, 1);
                    run_tri_l3(ty, mv, 1, left, upper, ops[o], unit, 0, 3);
                }
}

/* geam: C = alpha op(A) + beta op(B); `in_place` 1: C is A, 2: C is B. */
static void
run_geam(enum ty t, const struct mvariant *mv, cublasOperation_t ta,
         cublasOperation_t tb, int in_place, int zero)
{
    int m = 4, n = 5, ld = 6;
    struct buf a = buf_new(t, (size_t)ld * ld), b = buf_new(t, (size_t)ld * ld);
    struct buf c = buf_new(t, (size_t)ld * ld);
    struct buf *out = in_place == 1 ? &a : in_place == 2 ? &b : &c;
    cplx *want = calloc((size_t)ld * ld, sizeof(cplx));
    struct scalar sa, sb;
    cplx alpha = zero == 1 ? 0 : rnd_val(t), beta = zero == 2 ? 0 : rnd_val(t);
    const void *pa, *pb;

    assert_non_null(want);
    if (zero) {         /* the matrix whose scalar is 0 is not read */
        struct buf *unread = zero == 1 ? &a : &b;
        for (size_t i = 0; i < unread->n && out != unread; i++)
            buf_set(unread, i, NAN);
        buf_upload(unread);
    }
    pointer_mode(mv->device);
    pa = scalar_arg(&sa, t, 0, &alpha, mv->device);
    pb = scalar_arg(&sb, t, 0, &beta, mv->device);
    assert_int_equal(CALL4(t, mv->wide, cublasSgeam, cublasDgeam, cublasCgeam,
                           cublasZgeam, h, ta, tb, m, n, pa, a.dev, ld, pb,
                           b.dev, ld, out->dev, ld), OK);
    memcpy(want, out->want, (size_t)ld * ld * sizeof(cplx));
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            want[i + j * ld] =
                (zero == 1 ? 0 : alpha * op_el(a.want, ld, ta, i, j)) +
                (zero == 2 ? 0 : beta * op_el(b.want, ld, tb, i, j));
    memcpy(out->want, want, (size_t)ld * ld * sizeof(cplx));
    buf_check(out, 2, "geam");
    free(want);
    scalar_free(&sa);
    scalar_free(&sb);
    buf_free(&a);
    buf_free(&b);
    buf_free(&c);
}

/* dgmm: C = A diag(x) (right) or diag(x) A (left); in place into A. */
static void
run_dgmm(enum ty t, const struct mvariant *mv, int left, int incx,
         int in_place)
{
    int m = 4, n = 5, lda = 6, ldc = in_place ? lda : 5;
    int len = left ? m : n;
    struct buf a = buf_new(t, (size_t)lda * n), x = buf_new(t, vspan(len, incx));
    struct buf c = buf_new(t, (size_t)ldc * n);
    struct buf *out = in_place ? &a : &c;
    cublasSideMode_t side = left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;

    pointer_mode(mv->device);
    assert_int_equal(CALL4(t, mv->wide, cublasSdgmm, cublasDdgmm, cublasCdgmm,
                           cublasZdgmm, h, side, m, n, a.dev, lda, x.dev, incx,
                           out->dev, ldc), OK);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            out->want[i + (size_t)j * ldc] =
                a.want[i + (size_t)j * lda] *
                x.want[incx == 0 ? 0 : vat(left ? i : j, len, incx)];
    buf_check(out, 1, "dgmm");
    buf_free(&a);
    buf_free(&x);
    buf_free(&c);
}

static void
test_geam_dgmm(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(all_types); t++) {
        enum ty ty = all_types[t];

        for (size_t a = 0; a < COUNT(ops); a++)
            for (size_t b = 0; b < COUNT(ops); b++)
                run_geam(ty, &mvariants[(a + b) % 4], ops[a], ops[b], 0,
                         (int)(a * 3 + b) % 3);
        run_geam(ty, &mvariants[1], CUBLAS_OP_N, CUBLAS_OP_T, 1, 0);
        run_geam(ty, &mvariants[2], CUBLAS_OP_C, CUBLAS_OP_N, 2, 0);
        for (int left = 0; left < 2; left++) {
            run_dgmm(ty, &mvariants[left], left, 1, 0);
            run_dgmm(ty, &mvariants[2 + left], left, -2, 1);
            run_dgmm(ty, &mvariants[left], left, 0, 0);
        }
    }
}

/* ---- Semantics across routines -------------------------------------------- */

/* A result in host memory is there when the call returns: the call waits
 * for the work queued before it on the handle's stream. In device mode
 * the result is written in stream order. */
static void
test_results_and_stream_order(void **state)
{
    cudaStream_t stream;
    struct buf x = buf_new(TD, 64), y = buf_new(TD, 64);
    double alpha = 2.0, dot = 0.0, want = 0.0, *ddot;

    (void)state;
    assert_int_equal(cudaStreamCreate(&stream), cudaSuccess);
    assert_int_equal(cublasSetStream(h, stream), OK);
    pointer_mode(0);
    assert_int_equal(cublasDaxpy(h, 64, &alpha, x.dev, 1, y.dev, 1), OK);
    assert_int_equal(cublasDdot(h, 64, x.dev, 1, y.dev, 1, &dot), OK);
    for (int i = 0; i < 64; i++)
        want += creal(x.want[i]) * (creal(y.want[i]) + 2.0 * creal(x.want[i]));
    assert_true(fabs(dot - want) <= 1e-12 * (1.0 + fabs(want)));
    /* Device mode: queued, written when the stream gets there. */
    assert_int_equal(cudaMalloc((void **)&ddot, 8), cudaSuccess);
    assert_int_equal(cudaMemset(ddot, 0, 8), cudaSuccess);
    pointer_mode(1);
    assert_int_equal(cublasDnrm2(h, 64, x.dev, 1, ddot), OK);
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_int_equal(cudaMemcpy(&dot, ddot, 8, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    want = 0.0;
    for (int i = 0; i < 64; i++)
        want += creal(x.want[i]) * creal(x.want[i]);
    assert_true(fabs(dot - sqrt(want)) <= 1e-12 * (1.0 + sqrt(want)));
    pointer_mode(0);
    assert_int_equal(cublasSetStream(h, NULL), OK);
    assert_int_equal(cudaFree(ddot), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(stream), cudaSuccess);
    buf_free(&x);
    buf_free(&y);
}

/* alpha 0 and beta 1 on the host: nothing is read or written, so the
 * matrices may be NULL; a size beyond the CPU BLAS's int in a _64 call is
 * refused whole. */
static void
test_quick_returns_and_limits(void **state)
{
    double one = 1.0, zero = 0.0;
    cuDoubleComplex zone = { 1.0, 0.0 }, zzero = { 0.0, 0.0 };
    struct buf y = buf_new(TD, 4);

    (void)state;
    pointer_mode(0);
    assert_int_equal(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &zero,
                                 NULL, 4, NULL, 4, &one, NULL, 4), OK);
    assert_int_equal(cublasZgemv(h, CUBLAS_OP_T, 3, 3, &zzero, NULL, 3, NULL,
                                 1, &zone, NULL, 1), OK);
    assert_int_equal(cublasDsyrk(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, 3, 0,
                                 &one, NULL, 3, &one, NULL, 3), OK);
    assert_int_equal(cublasDger(h, 3, 3, &zero, NULL, 1, NULL, 1, NULL, 3),
                     OK);
    assert_int_equal(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N,
                                               2, 2, 2, &one, NULL, 2, 4,
                                               NULL, 2, 4, &one, NULL, 2, 4,
                                               0), OK);
    assert_int_equal(cublasDscal_64(h, (int64_t)1 << 31, &one, y.dev, 1),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(cublasDgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2,
                                    (int64_t)1 << 32, &one, y.dev, 2, y.dev,
                                    (int64_t)1 << 32, &one, y.dev, 2),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    buf_check(&y, 0, "untouched");
    buf_free(&y);
}

/* The documented statuses: NOT_INITIALIZED for a bad handle first, then
 * INVALID_VALUE for each argument check. */
static void
test_argument_checks(void **state)
{
    const cublasStatus_t INV = CUBLAS_STATUS_INVALID_VALUE;
    const cublasStatus_t NOI = CUBLAS_STATUS_NOT_INITIALIZED;
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T, C = CUBLAS_OP_C;
    const cublasOperation_t BADOP = (cublasOperation_t)7;
    const cublasFillMode_t U = CUBLAS_FILL_MODE_UPPER;
    const cublasFillMode_t FULLF = CUBLAS_FILL_MODE_FULL;
    const cublasSideMode_t L = CUBLAS_SIDE_LEFT;
    const cublasSideMode_t BADSIDE = (cublasSideMode_t)5;
    const cublasDiagType_t NU = CUBLAS_DIAG_NON_UNIT;
    const cublasDiagType_t BADDIAG = (cublasDiagType_t)9;
    struct buf d = buf_new(TZ, 256);
    cuDoubleComplex z1 = { 1.0, 0.0 };
    double one = 1.0, r;
    int ir;
    void *p = d.dev;
    struct {
        const char *what;
        cublasStatus_t got, want;
    } cases[] = {
        /* the handle comes first */
        { "Ddot handle", cublasDdot(NULL, 2, p, 1, p, 1, NULL), NOI },
        { "Zgemm handle", cublasZgemm(NULL, BADOP, N, -1, 2, 2, NULL, p, 0,
                                      p, 2, NULL, p, 2), NOI },
        { "Ctrsv handle", cublasCtrsv(NULL, U, N, NU, 2, p, 2, p, 1), NOI },
        { "Srotg handle", cublasSrotg(NULL, NULL, NULL, NULL, NULL), NOI },
        /* level 1: NULL scalars and results */
        { "Idamax result", cublasIdamax(h, 2, p, 1, NULL), INV },
        { "Dnrm2 result", cublasDnrm2(h, 2, p, 1, NULL), INV },
        { "Zdotc result", cublasZdotc(h, 2, p, 1, p, 1, NULL), INV },
        { "Daxpy alpha", cublasDaxpy(h, 2, NULL, p, 1, p, 1), INV },
        { "Zdscal alpha", cublasZdscal(h, 2, NULL, p, 1), INV },
        { "Drot s", cublasDrot(h, 2, p, 1, p, 1, &one, NULL), INV },
        { "Srotm param", cublasSrotm(h, 2, p, 1, p, 1, NULL), INV },
        { "Drotg c", cublasDrotg(h, &r, &r, NULL, &r), INV },
        { "Drotmg y1", cublasDrotmg(h, &r, &r, &r, NULL, &r), INV },
        { "Dcopy n<0", cublasDcopy(h, -1, p, 1, p, 1), OK },
        { "Dasum inc 0", cublasDasum(h, 2, p, 0, &r), OK },
        { "Idamin n 0", cublasIdamin(h, 0, p, 1, &ir), OK },
        /* level 2 */
        { "Dgemv trans", cublasDgemv(h, BADOP, 2, 2, &one, p, 2, p, 1, &one,
                                     p, 1), INV },
        { "Zgemv m<0", cublasZgemv(h, N, -1, 2, &z1, p, 2, p, 1, &z1, p, 1),
          INV },
        { "Dgemv lda", cublasDgemv(h, T, 3, 2, &one, p, 2, p, 1, &one, p, 1),
          INV },
        { "Dgemv incy 0", cublasDgemv(h, N, 2, 2, &one, p, 2, p, 1, &one, p,
                                      0), INV },
        { "Dgemv beta", cublasDgemv(h, N, 2, 2, &one, p, 2, p, 1, NULL, p,
                                    1), INV },
        { "Sgbmv kl<0", cublasSgbmv(h, N, 2, 2, -1, 0, p, p, 1, p, 1, p, p,
                                    1), INV },
        { "Dgbmv lda", cublasDgbmv(h, N, 4, 4, 1, 2, &one, p, 3, p, 1, &one,
                                   p, 1), INV },
        { "Dsymv uplo", cublasDsymv(h, FULLF, 2, &one, p, 2, p, 1, &one, p,
                                    1), INV },
        { "Zhemv incx 0", cublasZhemv(h, U, 2, &z1, p, 2, p, 0, &z1, p, 1),
          INV },
        { "Dsbmv lda", cublasDsbmv(h, U, 4, 2, &one, p, 2, p, 1, &one, p, 1),
          INV },
        { "Zhpmv n<0", cublasZhpmv(h, U, -2, &z1, p, p, 1, &z1, p, 1), INV },
        { "Dger lda", cublasDger(h, 3, 2, &one, p, 1, p, 1, p, 2), INV },
        { "Zgerc alpha", cublasZgerc(h, 2, 2, NULL, p, 1, p, 1, p, 2), INV },
        { "Zher lda", cublasZher(h, U, 3, &one, p, 1, p, 2), INV },
        { "Dsyr2 incy", cublasDsyr2(h, U, 2, &one, p, 1, p, 0, p, 2), INV },
        { "Dspr uplo", cublasDspr(h, FULLF, 2, &one, p, 1, p), INV },
        { "Zhpr2 alpha", cublasZhpr2(h, U, 2, NULL, p, 1, p, 1, p), INV },
        { "Dtrmv diag", cublasDtrmv(h, U, N, BADDIAG, 2, p, 2, p, 1), INV },
        { "Ztrsv trans", cublasZtrsv(h, U, BADOP, NU, 2, p, 2, p, 1), INV },
        { "Dtbmv k<0", cublasDtbmv(h, U, N, NU, 2, -1, p, 2, p, 1), INV },
        { "Stbsv lda", cublasStbsv(h, U, N, NU, 4, 2, p, 2, p, 1), INV },
        { "Ctpmv incx", cublasCtpmv(h, U, N, NU, 2, p, p, 0), INV },
        { "Dtpsv n 0", cublasDtpsv(h, U, N, NU, 0, p, p, 1), OK },
        /* level 3 */
        { "Dgemm transb", cublasDgemm(h, N, BADOP, 2, 2, 2, &one, p, 2, p, 2,
                                      &one, p, 2), INV },
        { "Zgemm ldb", cublasZgemm(h, N, T, 2, 3, 2, &z1, p, 2, p, 2, &z1, p,
                                   2), INV },
        { "Dgemm ldc", cublasDgemm(h, N, N, 3, 2, 2, &one, p, 3, p, 2, &one,
                                   p, 2), INV },
        { "Dgemm alpha", cublasDgemm(h, N, N, 2, 2, 2, NULL, p, 2, p, 2,
                                     &one, p, 2), INV },
        { "Zgemm batch<0", cublasZgemmStridedBatched(h, N, N, 2, 2, 2, &z1,
                                                     p, 2, 4, p, 2, 4, &z1,
                                                     p, 2, 4, -1), INV },
        { "Dgemm batched k<0", cublasDgemmBatched(h, N, N, 2, 2, -1, &one,
                                                  p, 2, p, 2, &one, p, 2,
                                                  1), INV },
        { "Dsymm side", cublasDsymm(h, BADSIDE, U, 2, 2, &one, p, 2, p, 2,
                                    &one, p, 2), INV },
        { "Zhemm lda right", cublasZhemm(h, CUBLAS_SIDE_RIGHT, U, 2, 3, &z1,
                                         p, 2, p, 2, &z1, p, 2), INV },
        { "Dsyrk lda", cublasDsyrk(h, U, T, 2, 3, &one, p, 2, &one, p, 2),
          INV },
        { "Dsyrk trans C", cublasDsyrk(h, U, C, 2, 2, &one, p, 2, &one, p,
                                       2), OK },
        { "Zsyrk trans C", cublasZsyrk(h, U, C, 2, 2, &z1, p, 2, &z1, p, 2),
          INV },
        { "Zherk trans T", cublasZherk(h, U, T, 2, 2, &one, p, 2, &one, p,
                                       2), INV },
        { "Zher2k ldb", cublasZher2k(h, U, N, 3, 2, &z1, p, 3, p, 2, &one, p,
                                     3), INV },
        { "Dsyrkx ldc", cublasDsyrkx(h, U, N, 3, 2, &one, p, 3, p, 3, &one,
                                     p, 2), INV },
        { "Zherkx beta", cublasZherkx(h, U, N, 2, 2, &z1, p, 2, p, 2, NULL,
                                      p, 2), INV },
        { "Dtrmm ldc", cublasDtrmm(h, L, U, N, NU, 3, 2, &one, p, 3, p, 3, p,
                                   2), INV },
        { "Ztrmm diag", cublasZtrmm(h, L, U, N, BADDIAG, 2, 2, &z1, p, 2, p,
                                    2, p, 2), INV },
        { "Dtrsm lda right", cublasDtrsm(h, CUBLAS_SIDE_RIGHT, U, N, NU, 2, 3,
                                         &one, p, 2, p, 2), INV },
        { "Dtrsm alpha", cublasDtrsm(h, L, U, N, NU, 2, 2, NULL, p, 2, p, 2),
          INV },
        { "Ztrsm batched count", cublasZtrsmBatched(h, L, U, N, NU, 2, 2,
                                                    &z1, p, 2, p, 2, -1),
          INV },
        { "Dgeam lda T", cublasDgeam(h, T, N, 3, 2, &one, p, 1, &one, p, 3, p,
                                     3), INV },
        { "Dgeam in place T", cublasDgeam(h, T, N, 2, 2, &one, p, 2, &one,
                                          (double *)p + 8, 2, p, 2), INV },
        { "Dgeam in place ld", cublasDgeam(h, N, N, 2, 2, &one, p, 3, &one,
                                           (double *)p + 8, 2, p, 2), INV },
        { "Zdgmm side", cublasZdgmm(h, BADSIDE, 2, 2, p, 2, p, 1, p, 2),
          INV },
        { "Ddgmm ldc", cublasDdgmm(h, L, 3, 2, p, 3, p, 1, p, 2), INV },
    };

    (void)state;
    pointer_mode(0);
    for (size_t i = 0; i < COUNT(cases); i++)
        if (cases[i].got != cases[i].want)
            fail_msg("%s: status %d, want %d", cases[i].what, cases[i].got,
                     cases[i].want);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    buf_free(&d);
}

/* A DGEMM's modelled time is its FP64 roofline: the H100's FP64 Tensor
 * Core rate (emulated default). */
static void
test_fp64_modelled_time(void **state)
{
    const int n = 256;
    const struct emu_gpu *g = emu_gpu();
    struct buf a = buf_new(TD, (size_t)n * n);
    double one = 1.0, flops = 2.0 * n * n * n, bytes = 4.0 * n * n * 8;
    double math_ms, mem_ms, want;
    cudaEvent_t start, stop;
    float ms;

    (void)state;
    pointer_mode(0);
    assert_int_equal(cudaEventCreate(&start), cudaSuccess);
    assert_int_equal(cudaEventCreate(&stop), cudaSuccess);
    assert_int_equal(cudaEventRecord(start, NULL), cudaSuccess);
    assert_int_equal(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                                 a.dev, n, a.dev, n, &one, a.dev, n), OK);
    assert_int_equal(cudaEventRecord(stop, NULL), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(stop), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    math_ms = flops / (g->fp64_tflops * 1e9 * g->fp64_efficiency);
    mem_ms = bytes / (g->bandwidth_tbs * 1e9 * g->mem_efficiency);
    want = (math_ms > mem_ms ? math_ms : mem_ms) +
           g->launch_latency_us * 1e-3;
    assert_true(fabs(want - emu_model_ns(flops, EMU_PREC_FP64, bytes) / 1e6) <=
                1e-9 * want);
    /* The span holds the stop event's record too. */
    assert_true(fabs(ms - emu_event_record_ns() * 1e-6 - want) <=
                0.01 * want + 1e-4);
    assert_int_equal(cudaEventDestroy(start), cudaSuccess);
    assert_int_equal(cudaEventDestroy(stop), cudaSuccess);
    buf_free(&a);
}

static int
group_setup(void **state)
{
    (void)state;
    return cublasCreate(&h) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

static int
group_teardown(void **state)
{
    (void)state;
    return cublasDestroy(h) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amax_amin),
        cmocka_unit_test(test_asum_nrm2),
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_reductions_empty),
        cmocka_unit_test(test_vector_updates),
        cmocka_unit_test(test_rotations),
        cmocka_unit_test(test_rotation_constructions),
        cmocka_unit_test(test_gemv_gbmv),
        cmocka_unit_test(test_symv_family),
        cmocka_unit_test(test_rank_updates),
        cmocka_unit_test(test_triangular_l2),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_gemm_batched_strided),
        cmocka_unit_test(test_symm_hemm),
        cmocka_unit_test(test_rank_k_updates),
        cmocka_unit_test(test_trmm_trsm),
        cmocka_unit_test(test_geam_dgmm),
        cmocka_unit_test(test_results_and_stream_order),
        cmocka_unit_test(test_quick_returns_and_limits),
        cmocka_unit_test(test_argument_checks),
        cmocka_unit_test(test_fp64_modelled_time),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
