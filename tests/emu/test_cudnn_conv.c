/* Tests for the emulated cuDNN convolutions: forward, backward data,
 * backward filter and backward bias against a direct double-precision
 * reference, the data-type configurations and math types, the documented
 * statuses, the algorithm queries and workspaces, deferred execution,
 * modelled time and fault injection. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fault_test.h"

#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudnn_test.h"
#include "emu.h"

/* ---- Problems and the reference ----------------------------------------- */

/* A convolution; 2-d problems have depth 1 (in[0] = filt[0] = 1). */
struct geom {
    int nsp;                        /* 2 or 3 */
    int n, c, k, groups;
    int in[3], filt[3], pad[3], stride[3], dil[3];
    cudnnConvolutionMode_t mode;
    cudnnTensorFormat_t format;
};

static int
out_size(const struct geom *g, int d)
{
    int span = (g->filt[d] - 1) * g->dil[d] + 1;

    return 1 + (g->in[d] + 2 * g->pad[d] - span) / g->stride[d];
}

static size_t
count_x(const struct geom *g)
{
    return (size_t)g->n * g->c * g->in[0] * g->in[1] * g->in[2];
}

static size_t
count_w(const struct geom *g)
{
    return (size_t)g->k * (g->c / g->groups) * g->filt[0] * g->filt[1] *
           g->filt[2];
}

static size_t
count_y(const struct geom *g)
{
    return (size_t)g->n * g->k * out_size(g, 0) * out_size(g, 1) *
           out_size(g, 2);
}

/* Scatters every product of the direct convolution once: y += x w,
 * dx += dy w, dw += x dy, with the sums of |products| in the mag_
 * arrays. All arrays row-major N, C, D, H, W (filters K, C/groups,
 * T, R, S). Any output may be NULL. */
struct ref {
    double *y, *dx, *dw, *mag_y, *mag_dx, *mag_dw;
};

static void
ref_conv(const struct geom *g, const float *x, const float *w,
         const float *dy, const struct ref *r)
{
    int cg = g->c / g->groups, kg = g->k / g->groups;
    int o[3] = { out_size(g, 0), out_size(g, 1), out_size(g, 2) };

    for (int n = 0; n < g->n; n++)
    for (int k = 0; k < g->k; k++)
    for (int cl = 0; cl < cg; cl++)
    for (int od = 0; od < o[0]; od++)
    for (int oh = 0; oh < o[1]; oh++)
    for (int ow = 0; ow < o[2]; ow++)
    for (int t = 0; t < g->filt[0]; t++)
    for (int rr = 0; rr < g->filt[1]; rr++)
    for (int s = 0; s < g->filt[2]; s++) {
        int c = (k / kg) * cg + cl;
        int id = od * g->stride[0] - g->pad[0] + t * g->dil[0];
        int ih = oh * g->stride[1] - g->pad[1] + rr * g->dil[1];
        int iw = ow * g->stride[2] - g->pad[2] + s * g->dil[2];
        int flip = g->mode == CUDNN_CONVOLUTION;
        int ft = flip ? g->filt[0] - 1 - t : t;
        int fr = flip ? g->filt[1] - 1 - rr : rr;
        int fs = flip ? g->filt[2] - 1 - s : s;
        size_t xi, wi, yi;

        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1] ||
            iw < 0 || iw >= g->in[2])
            continue;
        xi = ((((size_t)n * g->c + c) * g->in[0] + id) * g->in[1] + ih) *
                 g->in[2] + iw;
        wi = ((((size_t)k * cg + cl) * g->filt[0] + ft) * g->filt[1] + fr) *
                 g->filt[2] + fs;
        yi = ((((size_t)n * g->k + k) * o[0] + od) * o[1] + oh) * o[2] + ow;
        if (r->y) {
            r->y[yi] += (double)x[xi] * w[wi];
            r->mag_y[yi] += fabs((double)x[xi] * w[wi]);
        }
        if (r->dx) {
            r->dx[xi] += (double)dy[yi] * w[wi];
            r->mag_dx[xi] += fabs((double)dy[yi] * w[wi]);
        }
        if (r->dw) {
            r->dw[wi] += (double)x[xi] * dy[yi];
            r->mag_dw[wi] += fabs((double)x[xi] * dy[yi]);
        }
    }
}

/* ---- Descriptors for a problem ------------------------------------------ */

struct descs {
    cudnnTensorDescriptor_t x, y, w_layout; /* w_layout: the filter's memory */
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
};

/* Tensor sizes N, C, (D,) H, W of a problem. */
static int
dims_of(const struct geom *g, int n, int c, const int *sp, int *dim)
{
    dim[0] = n, dim[1] = c;
    for (int i = 0; i < g->nsp; i++)
        dim[2 + i] = sp[3 - g->nsp + i];
    return 2 + g->nsp;
}

static void
descs_new(const struct geom *g, cudnnDataType_t type, cudnnMathType_t math,
          struct descs *d)
{
    int dim[5], nb, o[3] = { out_size(g, 0), out_size(g, 1), out_size(g, 2) };
    int pad[3], stride[3], dil[3];

    nb = dims_of(g, g->n, g->c, g->in, dim);
    d->x = tensor_new(g->format, type, nb, dim);
    dims_of(g, g->n, g->k, o, dim);
    d->y = tensor_new(g->format, type, nb, dim);
    dims_of(g, g->k, g->c / g->groups, g->filt, dim);
    d->w_layout = tensor_new(g->format, type, nb, dim);
    DNN_OK(cudnnCreateFilterDescriptor(&d->w));
    DNN_OK(cudnnSetFilterNdDescriptor(d->w, type, g->format, nb, dim));
    for (int i = 0; i < g->nsp; i++) {
        pad[i] = g->pad[3 - g->nsp + i];
        stride[i] = g->stride[3 - g->nsp + i];
        dil[i] = g->dil[3 - g->nsp + i];
    }
    DNN_OK(cudnnCreateConvolutionDescriptor(&d->conv));
    DNN_OK(cudnnSetConvolutionNdDescriptor(d->conv, g->nsp, pad, stride, dil,
                                           g->mode, CUDNN_DATA_FLOAT));
    DNN_OK(cudnnSetConvolutionGroupCount(d->conv, g->groups));
    DNN_OK(cudnnSetConvolutionMathType(d->conv, math));
}

static void
descs_free(struct descs *d)
{
    DNN_OK(cudnnDestroyTensorDescriptor(d->x));
    DNN_OK(cudnnDestroyTensorDescriptor(d->y));
    DNN_OK(cudnnDestroyTensorDescriptor(d->w_layout));
    DNN_OK(cudnnDestroyFilterDescriptor(d->w));
    DNN_OK(cudnnDestroyConvolutionDescriptor(d->conv));
}

/* ---- Running all three directions ---------------------------------------- */

/* Host data of one problem, row-major, and the device copies. */
struct run {
    const struct geom *g;
    cudnnDataType_t type;
    float *x, *w, *dy, *y0, *dx0, *dw0;    /* inputs and old outputs */
    float *y, *dx, *dw;                    /* results */
    void *dx_d, *dw_d, *dy_d, *x_d, *w_d, *y_d;
    struct descs d;
};

static float *
values(size_t n, float (*gen)(void))
{
    float *v = malloc(n * sizeof(float) + 1);

    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = gen();
    return v;
}

static void
run_new(struct run *r, const struct geom *g, cudnnDataType_t type,
        cudnnMathType_t math, float (*gen)(void))
{
    memset(r, 0, sizeof(*r));
    r->g = g;
    r->type = type;
    r->x = values(count_x(g), gen);
    r->w = values(count_w(g), gen);
    r->dy = values(count_y(g), gen);
    r->y0 = values(count_y(g), gen);
    r->dx0 = values(count_x(g), gen);
    r->dw0 = values(count_w(g), gen);
    r->y = values(count_y(g), gen);
    r->dx = values(count_x(g), gen);
    r->dw = values(count_w(g), gen);
    descs_new(g, type, math, &r->d);
    r->x_d = tensor_upload(r->d.x, r->x, 0.0f);
    r->w_d = tensor_upload(r->d.w_layout, r->w, 0.0f);
    r->dy_d = tensor_upload(r->d.y, r->dy, 0.0f);
}

/* Replaces the inputs by copies of another run's (same problem). */
static void
run_copy_inputs(struct run *r, const struct run *from)
{
    const struct geom *g = r->g;

    memcpy(r->x, from->x, count_x(g) * sizeof(float));
    memcpy(r->w, from->w, count_w(g) * sizeof(float));
    memcpy(r->dy, from->dy, count_y(g) * sizeof(float));
    dev_free(r->x_d), dev_free(r->w_d), dev_free(r->dy_d);
    r->x_d = tensor_upload(r->d.x, r->x, 0.0f);
    r->w_d = tensor_upload(r->d.w_layout, r->w, 0.0f);
    r->dy_d = tensor_upload(r->d.y, r->dy, 0.0f);
}

static void
run_free(struct run *r)
{
    void *dev[] = { r->x_d, r->w_d, r->dy_d, r->y_d, r->dx_d, r->dw_d };
    float *host[] = { r->x, r->w, r->dy, r->y0, r->dx0, r->dw0, r->y, r->dx,
                      r->dw };

    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++) {
        if (dev[i] != NULL)
            dev_free(dev[i]);
    }
    for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
        free(host[i]);
    descs_free(&r->d);
}

/* Runs the three directions with IMPLICIT_GEMM / ALGO_0 (no workspace),
 * `nan_old` puts NaN in the old outputs (for beta == 0). */
static void
run_all(cudnnHandle_t h, struct run *r, float alpha, float beta, int nan_old)
{
    const struct geom *g = r->g;

    if (nan_old) {
        for (size_t i = 0; i < count_y(g); i++)
            r->y0[i] = NAN;
        for (size_t i = 0; i < count_x(g); i++)
            r->dx0[i] = NAN;
        for (size_t i = 0; i < count_w(g); i++)
            r->dw0[i] = NAN;
    }
    r->y_d = tensor_upload(r->d.y, r->y0, 0.0f);
    r->dx_d = tensor_upload(r->d.x, r->dx0, 0.0f);
    r->dw_d = tensor_upload(r->d.w_layout, r->dw0, 0.0f);
    DNN_OK(cudnnConvolutionForward(h, &alpha, r->d.x, r->x_d, r->d.w, r->w_d,
                                   r->d.conv,
                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                   NULL, 0, &beta, r->d.y, r->y_d));
    DNN_OK(cudnnConvolutionBackwardData(h, &alpha, r->d.w, r->w_d, r->d.y,
                                        r->dy_d, r->d.conv,
                                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                                        NULL, 0, &beta, r->d.x, r->dx_d));
    DNN_OK(cudnnConvolutionBackwardFilter(h, &alpha, r->d.x, r->x_d, r->d.y,
                                          r->dy_d, r->d.conv,
                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                                          NULL, 0, &beta, r->d.w, r->dw_d));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    tensor_download(r->d.y, r->y_d, r->y);
    tensor_download(r->d.x, r->dx_d, r->dx);
    tensor_download(r->d.w_layout, r->dw_d, r->dw);
}

/* got == alpha * ref + beta * old within `rel` of the magnitudes (FP32
 * summation), or bit-exact after rounding with `exact` (NULL: not). */
static void
check_close(const float *got, const double *ref, const double *mag,
            const float *old, size_t n, float alpha, float beta, double rel,
            double (*exact)(double))
{
    for (size_t i = 0; i < n; i++) {
        double want = (double)alpha * ref[i];
        double tol = rel * fabs((double)alpha) * mag[i] + 1e-30;

        if (beta != 0.0f) {
            want += (double)beta * old[i];
            tol += rel * fabs((double)beta * old[i]);
        }
        if (exact != NULL) {
            if ((float)exact(want) != got[i])
                fail_msg("element %zu: got %a, want %a (unrounded %a)", i,
                         (double)got[i], exact(want), want);
            continue;
        }
        if (!(fabs(got[i] - want) <= tol))
            fail_msg("element %zu: got %.9g, want %.9g (tol %.3g)", i,
                     (double)got[i], want, tol);
    }
}

/* Checks the three results of run_all against the reference. */
static void
check_run(const struct run *r, float alpha, float beta, double rel,
          double (*exact)(double))
{
    const struct geom *g = r->g;
    size_t nx = count_x(g), nw = count_w(g), ny = count_y(g);
    double *buf = calloc(2 * (nx + nw + ny), sizeof(double));
    struct ref ref = { buf, buf + ny, buf + ny + nx, buf + ny + nx + nw,
                       buf + 2 * ny + nx + nw, buf + 2 * ny + 2 * nx + nw };

    assert_non_null(buf);
    ref_conv(g, r->x, r->w, r->dy, &ref);
    check_close(r->y, ref.y, ref.mag_y, r->y0, ny, alpha, beta, rel, exact);
    check_close(r->dx, ref.dx, ref.mag_dx, r->dx0, nx, alpha, beta, rel,
                exact);
    check_close(r->dw, ref.dw, ref.mag_dw, r->dw0, nw, alpha, beta, rel,
                exact);
    free(buf);
}

/* FP32 summation of up to a few thousand terms, with margin. */
#define FP32_REL 1e-5

/* ---- Numerics ------------------------------------------------------------ */

static const struct geom shapes[] = {
    /* nsp, n, c, k, groups, in, filt, pad, stride, dil, mode, format */
    { 2, 2, 1, 1, 1, { 1, 7, 6 }, { 1, 3, 3 }, { 0, 0, 0 }, { 1, 1, 1 },
      { 1, 1, 1 }, CUDNN_CROSS_CORRELATION, CUDNN_TENSOR_NCHW },
    { 2, 2, 3, 8, 1, { 1, 9, 8 }, { 1, 3, 3 }, { 0, 1, 1 }, { 1, 1, 1 },
      { 1, 1, 1 }, CUDNN_CONVOLUTION, CUDNN_TENSOR_NCHW },
    { 2, 1, 3, 8, 1, { 1, 9, 8 }, { 1, 3, 2 }, { 0, 2, 1 }, { 1, 2, 2 },
      { 1, 1, 1 }, CUDNN_CROSS_CORRELATION, CUDNN_TENSOR_NHWC },
    { 2, 2, 8, 6, 2, { 1, 8, 9 }, { 1, 3, 3 }, { 0, 2, 2 }, { 1, 1, 1 },
      { 1, 2, 2 }, CUDNN_CONVOLUTION, CUDNN_TENSOR_NHWC },
    { 2, 1, 13, 13, 13, { 1, 7, 7 }, { 1, 3, 3 }, { 0, 1, 1 }, { 1, 2, 1 },
      { 1, 1, 2 }, CUDNN_CROSS_CORRELATION, CUDNN_TENSOR_NCHW },
    { 2, 1, 64, 8, 4, { 1, 5, 4 }, { 1, 3, 3 }, { 0, 1, 1 }, { 1, 1, 1 },
      { 1, 1, 1 }, CUDNN_CONVOLUTION, CUDNN_TENSOR_NHWC },
    { 2, 2, 13, 3, 1, { 1, 6, 5 }, { 1, 1, 1 }, { 0, 0, 0 }, { 1, 2, 2 },
      { 1, 1, 1 }, CUDNN_CROSS_CORRELATION, CUDNN_TENSOR_NCHW },
    /* 3-d (5-dim tensors) */
    { 3, 2, 4, 6, 2, { 4, 5, 6 }, { 2, 3, 3 }, { 1, 1, 0 }, { 1, 2, 1 },
      { 2, 1, 1 }, CUDNN_CONVOLUTION, CUDNN_TENSOR_NCHW },
    { 3, 1, 3, 4, 1, { 3, 4, 5 }, { 3, 2, 2 }, { 1, 0, 1 }, { 2, 1, 1 },
      { 1, 2, 1 }, CUDNN_CROSS_CORRELATION, CUDNN_TENSOR_NHWC },
};

#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* FLOAT with FMA math is plain FP32 arithmetic, on every shape. */
static void
test_fp32_shapes(void **state)
{
    cudnnHandle_t h = handle_new();

    (void)state;
    for (size_t i = 0; i < NSHAPES; i++) {
        struct run r;

        run_new(&r, &shapes[i], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
        run_all(h, &r, 1.0f, 0.0f, 0);
        check_run(&r, 1.0f, 0.0f, FP32_REL, NULL);
        run_free(&r);
    }
    DNN_OK(cudnnDestroy(h));
}

/* dst = alpha * result + beta * dst; beta == 0 never reads dst. */
static void
test_alpha_beta(void **state)
{
    cudnnHandle_t h = handle_new();
    const float cases[][2] = { { 0.5f, 2.0f }, { -1.25f, 1.0f },
                               { 2.0f, 0.0f }, { 0.0f, -0.5f } };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct run r;
        int nan_old = cases[i][1] == 0.0f;

        run_new(&r, &shapes[3], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
        run_all(h, &r, cases[i][0], cases[i][1], nan_old);
        for (size_t e = 0; nan_old && e < count_y(r.g); e++)
            assert_false(isnan(r.y[e]));
        check_run(&r, cases[i][0], cases[i][1], FP32_REL, NULL);
        run_free(&r);
    }
    DNN_OK(cudnnDestroy(h));
}

/* PSEUDO_HALF and BFLOAT16: inputs on a grid whose products and sums are
 * exact in FP32, so the one rounding is the output's: bit-exact against
 * the reference rounded to the type, in NCHW and NHWC, with and without
 * Tensor Core math. */
static void
test_half_bit_exact(void **state)
{
    const size_t pick[] = { 1, 2, 3, 7 };
    const cudnnMathType_t maths[] = { CUDNN_TENSOR_OP_MATH, CUDNN_FMA_MATH };
    cudnnHandle_t h = handle_new();

    (void)state;
    for (int t = 0; t < 2; t++) {
        cudnnDataType_t type = t ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
        for (size_t i = 0; i < sizeof(pick) / sizeof(pick[0]); i++) {
            struct run r;

            run_new(&r, &shapes[pick[i]], type, maths[i % 2], rnd_grid);
            run_all(h, &r, 0.75f, i % 2 ? 0.5f : 0.0f, i % 2 == 0);
            check_run(&r, 0.75f, i % 2 ? 0.5f : 0.0f, 0.0,
                      t ? ref_bf16 : ref_f16);
            run_free(&r);
        }
    }
    DNN_OK(cudnnDestroy(h));
}

/* FLOAT data: TENSOR_OP_MATH and FMA give the same FP32 bits,
 * ALLOW_CONVERSION computes on FP16-rounded inputs, DEFAULT on
 * TF32-rounded inputs (Ampere and later). */
static void
test_float_math_types(void **state)
{
    const cudnnMathType_t maths[] = {
        CUDNN_FMA_MATH, CUDNN_TENSOR_OP_MATH,
        CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_DEFAULT_MATH,
    };
    cudnnHandle_t h = handle_new();
    const struct geom *g = &shapes[1];
    struct run fma;

    (void)state;
    assert_true(emu_gpu()->cc_major >= 8);
    run_new(&fma, g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    run_all(h, &fma, 1.0f, 0.0f, 0);
    check_run(&fma, 1.0f, 0.0f, FP32_REL, NULL);
    for (int m = 1; m < 4; m++) {
        struct run r;
        double (*rounding)(double) = m == 2 ? ref_f16 : ref_tf32;
        size_t differ = 0;

        run_new(&r, g, CUDNN_DATA_FLOAT, maths[m], rnd);
        run_copy_inputs(&r, &fma);
        run_all(h, &r, 1.0f, 0.0f, 0);
        if (m == 1) {
            assert_memory_equal(r.y, fma.y, count_y(g) * sizeof(float));
            assert_memory_equal(r.dx, fma.dx, count_x(g) * sizeof(float));
            assert_memory_equal(r.dw, fma.dw, count_w(g) * sizeof(float));
            run_free(&r);
            continue;
        }
        for (size_t i = 0; i < count_y(g); i++)
            differ += r.y[i] != fma.y[i];
        assert_true(differ > count_y(g) / 2);
        /* The same problem on rounded inputs, in plain FP32. */
        for (size_t i = 0; i < count_x(g); i++)
            r.x[i] = (float)rounding(r.x[i]);
        for (size_t i = 0; i < count_w(g); i++)
            r.w[i] = (float)rounding(r.w[i]);
        for (size_t i = 0; i < count_y(g); i++)
            r.dy[i] = (float)rounding(r.dy[i]);
        check_run(&r, 1.0f, 0.0f, FP32_REL, NULL);
        run_free(&r);
    }
    run_free(&fma);
    DNN_OK(cudnnDestroy(h));
}

/* Backward bias: db = alpha * (sum over N and space of dy) + beta * db. */
static void
test_backward_bias(void **state)
{
    cudnnHandle_t h = handle_new();
    const cudnnTensorFormat_t formats[] = { CUDNN_TENSOR_NCHW,
                                            CUDNN_TENSOR_NHWC };

    (void)state;
    for (int f = 0; f < 2; f++) {
        for (int t = 0; t < 2; t++) {
            cudnnDataType_t type = t ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
            int dim[4] = { 3, 5, 4, 6 }, bdim[4] = { 1, 5, 1, 1 };
            cudnnTensorDescriptor_t dy = tensor_new(formats[f], type, 4, dim);
            cudnnTensorDescriptor_t db = tensor_new(formats[f], type, 4, bdim);
            float *v = values(360, t ? rnd_grid : rnd), old[5], got[5];
            float alpha = 0.5f, beta = t ? 0.25f : 0.0f;
            void *dyd = tensor_upload(dy, v, 0.0f), *dbd;

            for (int k = 0; k < 5; k++)
                old[k] = t ? (float)k : NAN;
            dbd = tensor_upload(db, old, 0.0f);
            DNN_OK(cudnnConvolutionBackwardBias(h, &alpha, dy, dyd, &beta, db,
                                                dbd));
            tensor_download(db, dbd, got);
            for (int k = 0; k < 5; k++) {
                double sum = 0.0;
                for (int n = 0; n < 3; n++)
                    for (int s = 0; s < 24; s++)
                        sum += v[(n * 5 + k) * 24 + s];
                double want = alpha * sum + (t ? beta * old[k] : 0.0);
                if (t)
                    assert_true(got[k] == (float)ref_f16(want));
                else
                    assert_true(fabs(got[k] - want) <= 1e-5 * 72);
            }
            free(v);
            dev_free(dyd), dev_free(dbd);
            DNN_OK(cudnnDestroyTensorDescriptor(dy));
            DNN_OK(cudnnDestroyTensorDescriptor(db));
        }
    }
    DNN_OK(cudnnDestroy(h));
}

/* ---- Statuses ------------------------------------------------------------ */

static cudnnStatus_t
forward(cudnnHandle_t h, struct run *r, int algo, void *ws, size_t ws_size)
{
    float alpha = 1.0f, beta = 0.0f;

    return cudnnConvolutionForward(h, &alpha, r->d.x, r->x_d, r->d.w, r->w_d,
                                   r->d.conv, (cudnnConvolutionFwdAlgo_t)algo,
                                   ws, ws_size, &beta, r->d.y, r->y_d);
}

/* Data-type configurations and algorithms that are not implemented. */
static void
test_not_supported(void **state)
{
    cudnnHandle_t h = handle_new();
    struct run r;
    cudnnTensorDescriptor_t x3, y3;
    cudnnFilterDescriptor_t w3;
    cudnnConvolutionDescriptor_t c1;
    int dim3[3] = { 1, 2, 8 }, wdim3[3] = { 2, 2, 3 }, pad = 0, one = 1;
    float alpha = 1.0f, beta = 0.0f;
    size_t ws;

    (void)state;
    run_new(&r, &shapes[1], CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, rnd_grid);
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    /* TRUE_HALF: half compute is refused (use PSEUDO_HALF). */
    DNN_OK(cudnnSetConvolution2dDescriptor(r.d.conv, 1, 1, 1, 1, 1, 1,
                                           CUDNN_CONVOLUTION,
                                           CUDNN_DATA_HALF));
    assert_int_equal(forward(h, &r, 0, NULL, 0), CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(
                         h, r.d.x, r.d.w, r.d.conv, r.d.y,
                         CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &ws),
                     CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnSetConvolution2dDescriptor(r.d.conv, 1, 1, 1, 1, 1, 1,
                                           CUDNN_CONVOLUTION,
                                           CUDNN_DATA_FLOAT));
    /* Explicit GEMM is FLOAT only; DIRECT is not implemented at all. */
    assert_int_equal(forward(h, &r, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, NULL,
                             1u << 20),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(
                         h, r.d.x, r.d.w, r.d.conv, r.d.y,
                         CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &ws),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(forward(h, &r, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, NULL,
                             0),
                     CUDNN_STATUS_NOT_SUPPORTED);
    run_free(&r);

    /* FFT needs packed NCHW; bfloat16 has only the implicit GEMMs. */
    run_new(&r, &shapes[3], CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_OP_MATH,
            rnd_grid);
    for (int a = 2; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++)
        assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(
                             h, r.d.x, r.d.w, r.d.conv, r.d.y,
                             (cudnnConvolutionFwdAlgo_t)a, &ws),
                         CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnGetConvolutionForwardWorkspaceSize(
        h, r.d.x, r.d.w, r.d.conv, r.d.y,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &ws));
    run_free(&r);
    /* NHWC, a 3x2 filter, stride 2: no FFT, no Winograd. */
    run_new(&r, &shapes[2], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    for (int a = CUDNN_CONVOLUTION_FWD_ALGO_FFT;
         a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; a++)
        assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(
                             h, r.d.x, r.d.w, r.d.conv, r.d.y,
                             (cudnnConvolutionFwdAlgo_t)a, &ws),
                         CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnGetConvolutionForwardWorkspaceSize(
        h, r.d.x, r.d.w, r.d.conv, r.d.y, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
        &ws));
    assert_true(ws > 0);
    /* A NULL workspace with a size is refused. */
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    assert_int_equal(forward(h, &r, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, NULL,
                             ws),
                     CUDNN_STATUS_BAD_PARAM);
    run_free(&r);

    /* 3-dimensional tensors (1-d convolution) and DOUBLE data. */
    DNN_OK(cudnnCreateTensorDescriptor(&x3));
    DNN_OK(cudnnCreateTensorDescriptor(&y3));
    DNN_OK(cudnnCreateFilterDescriptor(&w3));
    DNN_OK(cudnnCreateConvolutionDescriptor(&c1));
    DNN_OK(cudnnSetTensorNdDescriptorEx(x3, CUDNN_TENSOR_NCHW,
                                        CUDNN_DATA_FLOAT, 3, dim3));
    dim3[1] = 2, dim3[2] = 6;
    DNN_OK(cudnnSetTensorNdDescriptorEx(y3, CUDNN_TENSOR_NCHW,
                                        CUDNN_DATA_FLOAT, 3, dim3));
    DNN_OK(cudnnSetFilterNdDescriptor(w3, CUDNN_DATA_FLOAT,
                                      CUDNN_TENSOR_NCHW, 3, wdim3));
    DNN_OK(cudnnSetConvolutionNdDescriptor(c1, 1, &pad, &one, &one,
                                           CUDNN_CONVOLUTION,
                                           CUDNN_DATA_FLOAT));
    assert_int_equal(cudnnConvolutionForward(h, &alpha, x3, &alpha, w3,
                                             &alpha, c1,
                                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                             NULL, 0, &beta, y3, &alpha),
                     CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnDestroyTensorDescriptor(x3));
    DNN_OK(cudnnDestroyTensorDescriptor(y3));
    DNN_OK(cudnnDestroyFilterDescriptor(w3));
    DNN_OK(cudnnDestroyConvolutionDescriptor(c1));
    DNN_OK(cudnnDestroy(h));
}

/* Descriptors that do not fit together and NULL pointers: BAD_PARAM, and
 * the output is not touched. */
static void
test_bad_param(void **state)
{
    cudnnHandle_t h = handle_new();
    struct run r;
    float alpha = 1.0f, beta = 0.0f, *got;
    cudnnTensorDescriptor_t half_y;
    int ydim[4] = { 2, 8, 9, 8 }, k, c, hh, w;
    size_t ny;

    (void)state;
    run_new(&r, &shapes[1], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    ny = count_y(r.g);
    got = malloc(ny * sizeof(float));
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    assert_int_equal(cudnnConvolutionForward(NULL, &alpha, r.d.x, r.x_d,
                                             r.d.w, r.w_d, r.d.conv, 0, NULL,
                                             0, &beta, r.d.y, r.y_d),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnConvolutionForward(h, NULL, r.d.x, r.x_d, r.d.w,
                                             r.w_d, r.d.conv, 0, NULL, 0,
                                             &beta, r.d.y, r.y_d),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnConvolutionForward(h, &alpha, r.d.x, NULL, r.d.w,
                                             r.w_d, r.d.conv, 0, NULL, 0,
                                             &beta, r.d.y, r.y_d),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnConvolutionBackwardData(h, &alpha, r.d.w, r.w_d,
                                                  r.d.y, r.dy_d, NULL, 0,
                                                  NULL, 0, &beta, r.d.x,
                                                  r.x_d),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnConvolutionBackwardFilter(h, &alpha, r.d.x, r.x_d,
                                                    r.d.y, r.dy_d, r.d.conv,
                                                    0, NULL, 0, NULL, r.d.w,
                                                    r.w_d),
                     CUDNN_STATUS_BAD_PARAM);
    /* An algorithm enumerant out of range. */
    assert_int_equal(forward(h, &r, 99, NULL, 0), CUDNN_STATUS_BAD_PARAM);
    /* y of another data type. */
    half_y = tensor_new(CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 4, ydim);
    assert_int_equal(cudnnConvolutionForward(h, &alpha, r.d.x, r.x_d, r.d.w,
                                             r.w_d, r.d.conv, 0, NULL, 0,
                                             &beta, half_y, r.y_d),
                     CUDNN_STATUS_BAD_PARAM);
    /* y with the wrong number of feature maps. */
    ydim[1] = 7;
    DNN_OK(cudnnSetTensor4dDescriptor(half_y, CUDNN_TENSOR_NCHW,
                                      CUDNN_DATA_FLOAT, 2, 7, 9, 8));
    assert_int_equal(cudnnConvolutionForward(h, &alpha, r.d.x, r.x_d, r.d.w,
                                             r.w_d, r.d.conv, 0, NULL, 0,
                                             &beta, half_y, r.y_d),
                     CUDNN_STATUS_BAD_PARAM);
    /* y with the wrong spatial size: NOT_SUPPORTED, as documented. */
    DNN_OK(cudnnSetTensor4dDescriptor(half_y, CUDNN_TENSOR_NCHW,
                                      CUDNN_DATA_FLOAT, 2, 8, 9, 7));
    assert_int_equal(cudnnConvolutionForward(h, &alpha, r.d.x, r.x_d, r.d.w,
                                             r.w_d, r.d.conv, 0, NULL, 0,
                                             &beta, half_y, r.y_d),
                     CUDNN_STATUS_NOT_SUPPORTED);
    /* Input channels that are not filter channels x groups. */
    DNN_OK(cudnnSetConvolutionGroupCount(r.d.conv, 3));
    assert_int_equal(forward(h, &r, 0, NULL, 0), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnGetConvolution2dForwardOutputDim(r.d.conv, r.d.x,
                                                           r.d.w, &k, &c,
                                                           &hh, &w),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetConvolutionGroupCount(r.d.conv, 1));
    /* A dilated filter larger than the padded input. */
    DNN_OK(cudnnSetConvolution2dDescriptor(r.d.conv, 0, 0, 1, 1, 5, 1,
                                           CUDNN_CONVOLUTION,
                                           CUDNN_DATA_FLOAT));
    assert_int_equal(forward(h, &r, 0, NULL, 0), CUDNN_STATUS_BAD_PARAM);
    /* A 3-d convolution descriptor with 4-d tensors. */
    {
        int pad[3] = { 0, 1, 1 }, one[3] = { 1, 1, 1 };
        DNN_OK(cudnnSetConvolutionNdDescriptor(r.d.conv, 3, pad, one, one,
                                               CUDNN_CONVOLUTION,
                                               CUDNN_DATA_FLOAT));
        assert_int_equal(forward(h, &r, 0, NULL, 0), CUDNN_STATUS_BAD_PARAM);
    }
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    tensor_download(r.d.y, r.y_d, got);
    assert_memory_equal(got, r.y0, ny * sizeof(float));
    DNN_OK(cudnnDestroyTensorDescriptor(half_y));
    free(got);
    run_free(&r);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Algorithms and workspaces -------------------------------------------- */


/* ---- The fused forward --------------------------------------------------- */

/* cudnnConvolutionBiasActivationForward's operands beside a run's: z, the
 * bias (1 x K x 1 ...) and the activation. */
struct fused {
    float *z, *bias;
    void *z_d, *bias_d;
    cudnnTensorDescriptor_t bias_desc;
    cudnnActivationDescriptor_t act;
};

static void
fused_new(struct fused *f, const struct run *r, cudnnActivationMode_t mode)
{
    const struct geom *g = r->g;
    int dim[5] = { 1, g->k, 1, 1, 1 };

    f->z = values(count_y(g), rnd);
    f->bias = values((size_t)g->k, rnd);
    f->z_d = tensor_upload(r->d.y, f->z, 0.0f);
    f->bias_desc = tensor_new(CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                              2 + g->nsp, dim);
    f->bias_d = tensor_upload(f->bias_desc, f->bias, 0.0f);
    DNN_OK(cudnnCreateActivationDescriptor(&f->act));
    DNN_OK(cudnnSetActivationDescriptor(f->act, mode,
                                        CUDNN_NOT_PROPAGATE_NAN, 0.0));
}

static void
fused_free(struct fused *f)
{
    free(f->z), free(f->bias);
    dev_free(f->z_d), dev_free(f->bias_d);
    DNN_OK(cudnnDestroyTensorDescriptor(f->bias_desc));
    DNN_OK(cudnnDestroyActivationDescriptor(f->act));
}

static cudnnStatus_t
fused_call(cudnnHandle_t h, struct run *r, struct fused *f, int algo,
           void *ws, size_t ws_size, float alpha1, float alpha2,
           const void *z)
{
    return cudnnConvolutionBiasActivationForward(
        h, &alpha1, r->d.x, r->x_d, r->d.w, r->w_d, r->d.conv,
        (cudnnConvolutionFwdAlgo_t)algo, ws, ws_size, &alpha2, r->d.y, z,
        f->bias_desc, f->bias_d, f->act, r->d.y, r->y_d);
}

/* y against act(alpha1 * conv + alpha2 * z + bias) from the double
 * reference, z being `z` (NULL: not read); where ReLU's argument is
 * clearly negative, y is exactly 0. */
static void
fused_check(const struct run *r, const struct fused *f, float alpha1,
            float alpha2, const float *z, int relu)
{
    const struct geom *g = r->g;
    size_t ny = count_y(g), per_k = ny / ((size_t)g->n * g->k);
    double *buf = calloc(2 * ny, sizeof(double));
    struct ref ref = { buf, NULL, NULL, buf + ny, NULL, NULL };

    assert_non_null(buf);
    ref_conv(g, r->x, r->w, r->dy, &ref);
    for (size_t i = 0; i < ny; i++) {
        double bias = f->bias[(i / per_k) % (size_t)g->k];
        double want = (double)alpha1 * ref.y[i] + bias;
        double tol = FP32_REL * (fabs((double)alpha1) * ref.mag_y[i] +
                                 fabs(bias)) + 1e-30;

        if (z != NULL) {
            want += (double)alpha2 * z[i];
            tol += FP32_REL * fabs((double)alpha2 * z[i]);
        }
        if (relu && want < -tol) {
            if (r->y[i] != 0.0f)
                fail_msg("element %zu: got %.9g, want 0 (ReLU of %.9g)", i,
                         (double)r->y[i], want);
            continue;
        }
        if (relu && want < 0.0)
            want = 0.0;
        if (!(fabs(r->y[i] - want) <= tol))
            fail_msg("element %zu: got %.9g, want %.9g (tol %.3g)", i,
                     (double)r->y[i], want, tol);
    }
    free(buf);
}

/* y = act(alpha1 * conv(x) + alpha2 * z + bias) on every shape: ReLU
 * with z apart, z in place of y, alpha2 == 0 over a y of NaN (z is not
 * read), and IDENTITY with IMPLICIT_PRECOMP_GEMM and its workspace. */
static void
test_fused_forward(void **state)
{
    cudnnHandle_t h = handle_new();

    (void)state;
    for (size_t i = 0; i < NSHAPES; i++) {
        const struct geom *g = &shapes[i];
        struct run r;
        struct fused f;
        size_t ny = count_y(g), ws_size;
        void *ws;

        run_new(&r, g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
        fused_new(&f, &r, CUDNN_ACTIVATION_RELU);
        r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
        DNN_OK(fused_call(h, &r, &f, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                          NULL, 0, 0.75f, 0.5f, f.z_d));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        tensor_download(r.d.y, r.y_d, r.y);
        fused_check(&r, &f, 0.75f, 0.5f, f.z, 1);

        /* z in place of y: a residual connection. */
        dev_free(r.y_d);
        r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
        DNN_OK(fused_call(h, &r, &f, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                          NULL, 0, 1.0f, -1.5f, r.y_d));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        tensor_download(r.d.y, r.y_d, r.y);
        fused_check(&r, &f, 1.0f, -1.5f, r.y0, 1);

        /* alpha2 == 0: z (here y, all NaN) is not read. */
        for (size_t e = 0; e < ny; e++)
            r.y0[e] = NAN;
        dev_free(r.y_d);
        r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
        DNN_OK(fused_call(h, &r, &f, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                          NULL, 0, 2.0f, 0.0f, r.y_d));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        tensor_download(r.d.y, r.y_d, r.y);
        fused_check(&r, &f, 2.0f, 0.0f, NULL, 1);

        /* IDENTITY: negative results stay. */
        DNN_OK(cudnnSetActivationDescriptor(f.act, CUDNN_ACTIVATION_IDENTITY,
                                            CUDNN_NOT_PROPAGATE_NAN, 0.0));
        DNN_OK(cudnnGetConvolutionForwardWorkspaceSize(
            h, r.d.x, r.d.w, r.d.conv, r.d.y,
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &ws_size));
        ws = ws_size > 0 ? dev_alloc(ws_size) : NULL;
        DNN_OK(fused_call(h, &r, &f,
                          CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                          ws, ws_size, -0.5f, 0.25f, f.z_d));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        tensor_download(r.d.y, r.y_d, r.y);
        fused_check(&r, &f, -0.5f, 0.25f, f.z, 0);
        if (ws != NULL)
            dev_free(ws);
        fused_free(&f);
        run_free(&r);
    }
    DNN_OK(cudnnDestroy(h));
}

/* The fused forward waits on the handle's stream like the other
 * convolutions; its host scalars are read at the call. */
static void
test_fused_deferred(void **state)
{
    cudnnHandle_t h = handle_new();
    cudaStream_t quiet;
    struct run r;
    struct fused f;
    float alpha1 = 0.75f, alpha2 = 0.5f;

    (void)state;
    run_new(&r, &shapes[1], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    fused_new(&f, &r, CUDNN_ACTIVATION_RELU);
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    assert_int_equal(cudaStreamCreateWithFlags(&quiet, cudaStreamNonBlocking),
                     cudaSuccess);
    DNN_OK(cudnnSetStream(h, quiet));
    DNN_OK(cudnnConvolutionBiasActivationForward(
        h, &alpha1, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &alpha2, r.d.y,
        f.z_d, f.bias_desc, f.bias_d, f.act, r.d.y, r.y_d));
    alpha1 = alpha2 = 100.0f;
    assert_int_equal(cudaStreamQuery(quiet), cudaErrorNotReady);
    assert_int_equal(cudaStreamSynchronize(quiet), cudaSuccess);
    tensor_download(r.d.y, r.y_d, r.y);
    fused_check(&r, &f, 0.75f, 0.5f, f.z, 1);
    DNN_OK(cudnnDestroy(h));
    assert_int_equal(cudaStreamDestroy(quiet), cudaSuccess);
    fused_free(&f);
    run_free(&r);
}

/* The statuses cuDNN 9 documents for the fused forward. */
static void
test_fused_statuses(void **state)
{
    cudnnHandle_t h = handle_new();
    const struct geom *g = &shapes[1];
    int small[4] = { 1, g->k, 1, 1 }, wide[4] = { 1, g->k, 2, 1 };
    int zdim[4] = { g->n, g->k, out_size(g, 1), out_size(g, 2) + 1 };
    cudnnTensorDescriptor_t bias_bad = tensor_new(CUDNN_TENSOR_NCHW,
                                                  CUDNN_DATA_FLOAT, 4, wide);
    cudnnTensorDescriptor_t bias_half = tensor_new(CUDNN_TENSOR_NCHW,
                                                   CUDNN_DATA_HALF, 4, small);
    cudnnTensorDescriptor_t z_bad = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, zdim);
    float one = 1.0f, zero = 0.0f;
    struct run r, rh;
    struct fused f;
    void *y_before, *y_after;
    size_t ybytes;

    (void)state;
    run_new(&r, g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    fused_new(&f, &r, CUDNN_ACTIVATION_RELU);
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    ybytes = tensor_span(r.d.y) * sizeof(float);
    y_before = malloc(ybytes), y_after = malloc(ybytes);
    assert_non_null(y_before), assert_non_null(y_after);
    dev_download(y_before, r.y_d, ybytes);

    /* NULL pointers and descriptors: BAD_PARAM. */
    assert_int_equal(cudnnConvolutionBiasActivationForward(
        h, &one, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, r.d.y,
        f.z_d, f.bias_desc, NULL, f.act, r.d.y, r.y_d),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnConvolutionBiasActivationForward(
        h, &one, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, r.d.y,
        f.z_d, f.bias_desc, f.bias_d, NULL, r.d.y, r.y_d),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnConvolutionBiasActivationForward(
        h, &one, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, NULL, r.d.y,
        f.z_d, f.bias_desc, f.bias_d, f.act, r.d.y, r.y_d),
        CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnConvolutionBiasActivationForward(
        h, NULL, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, r.d.y,
        f.z_d, f.bias_desc, f.bias_d, f.act, r.d.y, r.y_d),
        CUDNN_STATUS_BAD_PARAM);
    /* A bias that is not 1 x K x 1 x 1: BAD_PARAM. */
    assert_int_equal(cudnnConvolutionBiasActivationForward(
        h, &one, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, r.d.y,
        f.z_d, bias_bad, f.bias_d, f.act, r.d.y, r.y_d),
        CUDNN_STATUS_BAD_PARAM);
    /* A bias of another type than y's, z unlike y: NOT_SUPPORTED. */
    assert_int_equal(cudnnConvolutionBiasActivationForward(
        h, &one, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, r.d.y,
        f.z_d, bias_half, f.bias_d, f.act, r.d.y, r.y_d),
        CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnConvolutionBiasActivationForward(
        h, &one, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, z_bad,
        f.z_d, f.bias_desc, f.bias_d, f.act, r.d.y, r.y_d),
        CUDNN_STATUS_NOT_SUPPORTED);
    /* Activations other than RELU and IDENTITY; NaN propagation. */
    DNN_OK(cudnnSetActivationDescriptor(f.act, CUDNN_ACTIVATION_SIGMOID,
                                        CUDNN_NOT_PROPAGATE_NAN, 0.0));
    assert_int_equal(fused_call(h, &r, &f,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                NULL, 0, 1.0f, 0.0f, f.z_d),
                     CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnSetActivationDescriptor(f.act, CUDNN_ACTIVATION_CLIPPED_RELU,
                                        CUDNN_NOT_PROPAGATE_NAN, 6.0));
    assert_int_equal(fused_call(h, &r, &f,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                NULL, 0, 1.0f, 0.0f, f.z_d),
                     CUDNN_STATUS_NOT_SUPPORTED);
    DNN_OK(cudnnSetActivationDescriptor(f.act, CUDNN_ACTIVATION_RELU,
                                        CUDNN_PROPAGATE_NAN, 0.0));
    assert_int_equal(fused_call(h, &r, &f,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                NULL, 0, 1.0f, 0.0f, f.z_d),
                     CUDNN_STATUS_NOT_SUPPORTED);
    /* IDENTITY only with IMPLICIT_PRECOMP_GEMM. */
    DNN_OK(cudnnSetActivationDescriptor(f.act, CUDNN_ACTIVATION_IDENTITY,
                                        CUDNN_NOT_PROPAGATE_NAN, 0.0));
    assert_int_equal(fused_call(h, &r, &f,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                NULL, 0, 1.0f, 0.0f, f.z_d),
                     CUDNN_STATUS_NOT_SUPPORTED);
    /* The convolution's own checks: too little workspace. */
    DNN_OK(cudnnSetActivationDescriptor(f.act, CUDNN_ACTIVATION_RELU,
                                        CUDNN_NOT_PROPAGATE_NAN, 0.0));
    assert_int_equal(fused_call(h, &r, &f,
                                CUDNN_CONVOLUTION_FWD_ALGO_GEMM, NULL, 0,
                                1.0f, 0.0f, f.z_d),
                     CUDNN_STATUS_BAD_PARAM);
    /* HALF data is not emulated. */
    run_new(&rh, g, CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, rnd_grid);
    rh.y_d = tensor_upload(rh.d.y, rh.y0, 0.0f);
    assert_int_equal(cudnnConvolutionBiasActivationForward(
        h, &one, rh.d.x, rh.x_d, rh.d.w, rh.w_d, rh.d.conv,
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, rh.d.y,
        rh.y_d, bias_half, f.bias_d, f.act, rh.d.y, rh.y_d),
        CUDNN_STATUS_NOT_SUPPORTED);
    run_free(&rh);
    /* No refused call wrote y. */
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    dev_download(y_after, r.y_d, ybytes);
    assert_memory_equal(y_before, y_after, ybytes);
    free(y_before), free(y_after);
    DNN_OK(cudnnDestroyTensorDescriptor(bias_bad));
    DNN_OK(cudnnDestroyTensorDescriptor(bias_half));
    DNN_OK(cudnnDestroyTensorDescriptor(z_bad));
    fused_free(&f);
    run_free(&r);
    DNN_OK(cudnnDestroy(h));
}

/* Every query agrees with the workspace sizes; working algorithms come
 * first, fastest first; a workspace one byte short is refused. */
static void
test_algorithm_queries(void **state)
{
    cudnnHandle_t h = handle_new();
    cudnnConvolutionFwdAlgoPerf_t perf[8], find[8];
    cudnnConvolutionBwdDataAlgoPerf_t bd[6];
    cudnnConvolutionBwdFilterAlgoPerf_t bf[7];
    struct geom g = { 2, 2, 8, 8, 1, { 1, 12, 12 }, { 1, 3, 3 },
                      { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 },
                      CUDNN_CROSS_CORRELATION, CUDNN_TENSOR_NCHW };
    struct run r;
    int count, ret, ok = 0;
    size_t ws;

    (void)state;
    run_new(&r, &g, CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, rnd_grid);
    DNN_OK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
    assert_int_equal(count, 8);
    DNN_OK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
    assert_int_equal(count, 6);
    DNN_OK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
    assert_int_equal(count, 7);

    DNN_OK(cudnnGetConvolutionForwardAlgorithm_v7(h, r.d.x, r.d.w, r.d.conv,
                                                  r.d.y, 8, &ret, perf));
    assert_int_equal(ret, 8);
    DNN_OK(cudnnFindConvolutionForwardAlgorithm(h, r.d.x, r.d.w, r.d.conv,
                                                r.d.y, 8, &ret, find));
    assert_memory_equal(perf, find, sizeof(perf));
    for (int i = 0; i < ret; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS) {
            assert_int_equal(perf[i].status, CUDNN_STATUS_NOT_SUPPORTED);
            assert_true(perf[i].time < 0.0f);
            continue;
        }
        assert_int_equal(i, ok++);      /* successes come first */
        assert_true(perf[i].time > 0.0f);
        if (i > 0)
            assert_true(perf[i].time >= perf[i - 1].time);
        assert_int_equal(perf[i].mathType, CUDNN_TENSOR_OP_MATH);
        DNN_OK(cudnnGetConvolutionForwardWorkspaceSize(
            h, r.d.x, r.d.w, r.d.conv, r.d.y, perf[i].algo, &ws));
        assert_int_equal(ws, perf[i].memory);
        if (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM)
            assert_int_equal(ws, 0);
        if (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
            perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
            perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED)
            assert_true(ws > 0 && ws % 256 == 0);
    }
    /* PSEUDO_HALF 3x3: all but explicit GEMM and DIRECT. */
    assert_int_equal(ok, 6);

    /* Each working algorithm computes the same bits; one byte short of
     * its workspace is BAD_PARAM and leaves y alone. */
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    for (int i = 0; i < ok; i++) {
        void *wsd = perf[i].memory ? dev_alloc(perf[i].memory) : NULL;
        float *got = malloc(count_y(&g) * sizeof(float));

        if (perf[i].memory > 0) {
            assert_int_equal(forward(h, &r, perf[i].algo, wsd,
                                     perf[i].memory - 1),
                             CUDNN_STATUS_BAD_PARAM);
            assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
            tensor_download(r.d.y, r.y_d, got);
            assert_memory_equal(got, r.y0, count_y(&g) * sizeof(float));
        }
        DNN_OK(forward(h, &r, perf[i].algo, wsd, perf[i].memory));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        tensor_download(r.d.y, r.y_d, r.y);
        if (i == 0)
            memcpy(r.y0, r.y, count_y(&g) * sizeof(float));
        else
            assert_memory_equal(r.y, r.y0, count_y(&g) * sizeof(float));
        if (wsd != NULL) {
            unsigned char first;
            dev_download(&first, wsd, 1);
            assert_int_equal(first, 0xa5);  /* the algorithm's scratch */
            dev_free(wsd);
        }
        free(got);
    }

    /* Find...Ex with a small workspace: what needs more fails with
     * ALLOC_FAILED and sorts after the working algorithms. */
    {
        void *wsd = dev_alloc(256);
        DNN_OK(cudnnFindConvolutionForwardAlgorithmEx(
            h, r.d.x, r.x_d, r.d.w, r.w_d, r.d.conv, r.d.y, r.y_d, 8, &ret,
            find, wsd, 256));
        for (int i = 0; i < ret; i++) {
            int fits = find[i].memory <= 256;
            if (find[i].status == CUDNN_STATUS_SUCCESS)
                assert_true(fits);
            else if (find[i].status != CUDNN_STATUS_NOT_SUPPORTED)
                assert_int_equal(find[i].status,
                                 CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);
        }
        assert_int_equal(find[0].status, CUDNN_STATUS_SUCCESS);
        dev_free(wsd);
    }
    /* Fewer results when fewer are asked for; none is BAD_PARAM. */
    DNN_OK(cudnnGetConvolutionForwardAlgorithm_v7(h, r.d.x, r.d.w, r.d.conv,
                                                  r.d.y, 2, &ret, find));
    assert_int_equal(ret, 2);
    assert_memory_equal(find, perf, 2 * sizeof(perf[0]));
    assert_int_equal(cudnnGetConvolutionForwardAlgorithm_v7(
                         h, r.d.x, r.d.w, r.d.conv, r.d.y, 0, &ret, find),
                     CUDNN_STATUS_BAD_PARAM);

    /* The backward queries: ALGO_0 is the non-deterministic one. */
    DNN_OK(cudnnFindConvolutionBackwardDataAlgorithm(h, r.d.w, r.d.y,
                                                     r.d.conv, r.d.x, 6,
                                                     &ret, bd));
    assert_int_equal(ret, 6);
    for (int i = 0; i < ret; i++) {
        assert_int_equal(bd[i].determinism,
                         bd[i].algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0
                             ? CUDNN_NON_DETERMINISTIC
                             : CUDNN_DETERMINISTIC);
        if (bd[i].status == CUDNN_STATUS_SUCCESS) {
            DNN_OK(cudnnGetConvolutionBackwardDataWorkspaceSize(
                h, r.d.w, r.d.y, r.d.conv, r.d.x, bd[i].algo, &ws));
            assert_int_equal(ws, bd[i].memory);
        }
    }
    DNN_OK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, r.d.x, r.d.y,
                                                         r.d.conv, r.d.w, 7,
                                                         &ret, bf));
    assert_int_equal(ret, 7);
    for (int i = 1; i < ret; i++) {
        if (bf[i].status == CUDNN_STATUS_SUCCESS)
            assert_true(bf[i].time >= bf[i - 1].time);
        if (bf[i].algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD)
            assert_int_equal(bf[i].status, CUDNN_STATUS_NOT_SUPPORTED);
    }
    run_free(&r);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Streams, time, faults ------------------------------------------------ */

/* Work is queued on its stream, unfinished when the call returns; host
 * scalars are read at the call. */
static void
test_deferred_execution(void **state)
{
    cudnnHandle_t h = handle_new();
    cudaStream_t quiet, got_stream;
    struct run r;
    float alpha = 1.0f, beta = 0.0f;

    (void)state;
    run_new(&r, &shapes[1], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    assert_int_equal(cudaStreamCreateWithFlags(&quiet, cudaStreamNonBlocking),
                     cudaSuccess);
    DNN_OK(cudnnSetStream(h, quiet));
    DNN_OK(cudnnGetStream(h, &got_stream));
    assert_ptr_equal(got_stream, quiet);
    DNN_OK(cudnnConvolutionForward(h, &alpha, r.d.x, r.x_d, r.d.w, r.w_d,
                                   r.d.conv, 0, NULL, 0, &beta, r.d.y,
                                   r.y_d));
    alpha = 100.0f;
    assert_int_equal(cudaStreamQuery(quiet), cudaErrorNotReady);
    assert_int_equal(cudaStreamSynchronize(quiet), cudaSuccess);
    tensor_download(r.d.y, r.y_d, r.y);
    {
        size_t ny = count_y(r.g);
        double *ref = calloc(2 * ny, sizeof(double));
        struct ref rr = { ref, NULL, NULL, ref + ny, NULL, NULL };
        ref_conv(r.g, r.x, r.w, r.dy, &rr);
        check_close(r.y, ref, ref + ny, r.y0, ny, 1.0f, 0.0f, FP32_REL, NULL);
        free(ref);
    }
    DNN_OK(cudnnDestroy(h));
    assert_int_equal(cudaStreamDestroy(quiet), cudaSuccess);
    run_free(&r);
}

/* The modelled time between two events is the time Find reports, and
 * PSEUDO_HALF on Tensor Cores beats FP32. */
static void
test_modelled_time(void **state)
{
    struct geom g = { 2, 8, 64, 64, 1, { 1, 16, 16 }, { 1, 3, 3 },
                      { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 },
                      CUDNN_CROSS_CORRELATION, CUDNN_TENSOR_NHWC };
    cudnnHandle_t h = handle_new();
    float ms[2];

    (void)state;
    for (int t = 0; t < 2; t++) {
        cudaEvent_t a, b;
        struct run r;
        int ret;
        double flops = 2.0 * 8 * 64 * 64 * 9 * 256;

        run_new(&r, &g, t ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT,
                t ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH, rnd_grid);
        r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
        DNN_OK(cudnnSetStream(h, NULL));
        assert_int_equal(cudaEventCreate(&a), cudaSuccess);
        assert_int_equal(cudaEventCreate(&b), cudaSuccess);
        assert_int_equal(cudaEventRecord(a, NULL), cudaSuccess);
        /* PRECOMP needs its workspace. */
        assert_int_equal(forward(h, &r,
                                 CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                 NULL, 0),
                         CUDNN_STATUS_BAD_PARAM);
        {
            size_t ws;
            void *wsd;
            DNN_OK(cudnnGetConvolutionForwardWorkspaceSize(
                h, r.d.x, r.d.w, r.d.conv, r.d.y,
                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &ws));
            wsd = dev_alloc(ws);
            DNN_OK(forward(h, &r,
                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                           wsd, ws));
            assert_int_equal(cudaEventRecord(b, NULL), cudaSuccess);
            assert_int_equal(cudaEventSynchronize(b), cudaSuccess);
            dev_free(wsd);
        }
        /* The convolution's time: the span less b's own record. */
        assert_int_equal(cudaEventElapsedTime(&ms[t], a, b), cudaSuccess);
        ms[t] -= (float)(emu_event_record_ns() * 1e-6);
        {
            cudnnConvolutionFwdAlgoPerf_t all[8];
            DNN_OK(cudnnFindConvolutionForwardAlgorithm(h, r.d.x, r.d.w,
                                                        r.d.conv, r.d.y, 8,
                                                        &ret, all));
            for (int i = 0; i < ret; i++) {
                if (all[i].algo ==
                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
                    assert_true(fabs(all[i].time - ms[t]) <= 1e-3 * ms[t]);
            }
        }
        /* At least the roofline time of the flops at the precision. */
        assert_true(ms[t] * 1e-3 >=
                    flops / ((t ? emu_gpu()->fp16_tflops
                                : emu_gpu()->fp32_tflops) * 1e12));
        assert_int_equal(cudaEventDestroy(a), cudaSuccess);
        assert_int_equal(cudaEventDestroy(b), cudaSuccess);
        run_free(&r);
    }
    print_message("emulated %s: conv 8x64x16x16 k64 3x3 FP32 %.4f ms, "
                  "PSEUDO_HALF %.4f ms\n", emu_gpu()->name, ms[0], ms[1]);
    assert_true(ms[1] < ms[0]);
    DNN_OK(cudnnDestroy(h));
}

#define FAULT_ARG "--fault-child"
#define FAULT_SPEC "cudnnCreate:1,cudnnConvolutionForward:2," \
                   "cudnnConvolutionBackwardFilter:1:3000," \
                   "cudnnConvolutionBackwardData:1:partial," \
                   "cudnnConvolutionBiasActivationForward:1:partial"

/* In the child: the first create fails (NOT_INITIALIZED), the second
 * forward call fails (EXECUTION_FAILED) without touching y, the first
 * backward filter fails with the status the variable names. */
static void
test_fault_child(void **state)
{
    cudnnHandle_t h = (cudnnHandle_t)0x1;
    float alpha = 1.0f, beta = 0.0f, *first;
    struct run r;

    (void)state;
    assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_NOT_INITIALIZED);
    assert_ptr_equal(h, (cudnnHandle_t)0x1);
    h = handle_new();
    run_new(&r, &shapes[1], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    first = malloc(count_y(r.g) * sizeof(float));
    DNN_OK(forward(h, &r, 0, NULL, 0));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    tensor_download(r.d.y, r.y_d, first);
    r.y_d = (dev_free(r.y_d), tensor_upload(r.d.y, r.y0, 0.0f));
    assert_int_equal(forward(h, &r, 0, NULL, 0),
                     CUDNN_STATUS_EXECUTION_FAILED);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    tensor_download(r.d.y, r.y_d, r.y);
    assert_memory_equal(r.y, r.y0, count_y(r.g) * sizeof(float));
    DNN_OK(forward(h, &r, 0, NULL, 0));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    tensor_download(r.d.y, r.y_d, r.y);
    assert_memory_equal(r.y, first, count_y(r.g) * sizeof(float));
    assert_int_equal(cudnnConvolutionBackwardFilter(h, &alpha, r.d.x, r.x_d,
                                                    r.d.y, r.dy_d, r.d.conv,
                                                    0, NULL, 0, &beta, r.d.w,
                                                    r.w_d),
                     CUDNN_STATUS_NOT_SUPPORTED);
    free(first);
    run_free(&r);
    DNN_OK(cudnnDestroy(h));
}

/* A partial fault: the backward data call fails, and once the stream has
 * run the first half of dx's elements (row-major) hold the whole result,
 * beta applied, and the rest are as they were. The reference is the same
 * call, unfaulted, on another copy of dx. */
static void
test_fault_partial_child(void **state)
{
    cudnnHandle_t h = handle_new();
    float alpha = 1.5f, beta = 0.5f;
    struct run r;
    size_t n, half;
    void *ref_d;

    (void)state;
    run_new(&r, &shapes[1], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    n = count_x(r.g);
    half = (n + 1) / 2;
    r.dx_d = tensor_upload(r.d.x, r.dx0, 0.0f);
    ref_d = tensor_upload(r.d.x, r.dx0, 0.0f);
    assert_int_equal(cudnnConvolutionBackwardData(h, &alpha, r.d.w, r.w_d,
                                                  r.d.y, r.dy_d, r.d.conv,
                                                  0, NULL, 0, &beta, r.d.x,
                                                  r.dx_d),
                     CUDNN_STATUS_EXECUTION_FAILED);
    DNN_OK(cudnnConvolutionBackwardData(h, &alpha, r.d.w, r.w_d, r.d.y,
                                        r.dy_d, r.d.conv, 0, NULL, 0, &beta,
                                        r.d.x, ref_d));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    tensor_download(r.d.x, r.dx_d, r.dx);
    tensor_download(r.d.x, ref_d, r.x);
    assert_memory_equal(r.dx, r.x, half * sizeof(float));
    assert_memory_equal(r.dx + half, r.dx0 + half,
                        (n - half) * sizeof(float));
    dev_free(ref_d);
    run_free(&r);
    DNN_OK(cudnnDestroy(h));
}

/* The same for the fused forward: the first half of y holds the whole
 * act(alpha1 * conv + alpha2 * z + bias), the rest its old values. */
static void
test_fault_partial_fused_child(void **state)
{
    cudnnHandle_t h = handle_new();
    struct run r;
    struct fused f;
    size_t n, half;
    float *want;
    void *y_d;

    (void)state;
    run_new(&r, &shapes[1], CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, rnd);
    fused_new(&f, &r, CUDNN_ACTIVATION_RELU);
    n = count_y(r.g);
    want = values(n, rnd);
    half = (n + 1) / 2;
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    assert_int_equal(fused_call(h, &r, &f,
                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                NULL, 0, 1.5f, 0.5f, f.z_d),
                     CUDNN_STATUS_EXECUTION_FAILED);
    y_d = r.y_d;
    r.y_d = tensor_upload(r.d.y, r.y0, 0.0f);
    DNN_OK(fused_call(h, &r, &f, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                      NULL, 0, 1.5f, 0.5f, f.z_d));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    tensor_download(r.d.y, y_d, r.y);
    tensor_download(r.d.y, r.y_d, want);
    assert_memory_equal(r.y, want, half * sizeof(float));
    assert_memory_equal(r.y + half, r.y0 + half, (n - half) * sizeof(float));
    dev_free(y_d);
    free(want);
    fused_free(&f);
    run_free(&r);
    DNN_OK(cudnnDestroy(h));
}

/* The variable is read once per process: run the checks in a fresh one. */
static void
test_fault_injection(void **state)
{
    (void)state;
    emu_test_rerun_with_faults("test_emu_cudnn_conv", FAULT_SPEC, FAULT_ARG);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest fault_tests[] = {
        cmocka_unit_test(test_fault_child),
        cmocka_unit_test(test_fault_partial_child),
        cmocka_unit_test(test_fault_partial_fused_child),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp32_shapes),
        cmocka_unit_test(test_alpha_beta),
        cmocka_unit_test(test_half_bit_exact),
        cmocka_unit_test(test_float_math_types),
        cmocka_unit_test(test_backward_bias),
        cmocka_unit_test(test_not_supported),
        cmocka_unit_test(test_bad_param),
        cmocka_unit_test(test_fused_forward),
        cmocka_unit_test(test_fused_statuses),
        cmocka_unit_test(test_fused_deferred),
        cmocka_unit_test(test_algorithm_queries),
        cmocka_unit_test(test_deferred_execution),
        cmocka_unit_test(test_modelled_time),
        cmocka_unit_test(test_fault_injection),
    };

    if (argc > 1 && strcmp(argv[1], FAULT_ARG) == 0)
        return cmocka_run_group_tests_name("emu_cudnn_conv_faults",
                                           fault_tests, NULL, NULL);
    unsetenv("AMPSHIM_EMU_FAIL");
    unsetenv("NVIDIA_TF32_OVERRIDE");
    return cmocka_run_group_tests_name("emu_cudnn_conv", tests, NULL, NULL);
}
