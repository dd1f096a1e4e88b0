/* Tests for the emulated cuDNN normalisations: LRN across channels and
 * batch normalisation (training, inference, backward; spatial, persistent
 * and per activation) with their descriptors, against double references
 * written here and, in DOUBLE, the backward passes against central
 * differences of the forward passes; blending, layouts, statuses and the
 * modelled time. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_test.h"

/* ---- LRN ----------------------------------------------------------------- */

struct lrn_params {
    unsigned n;
    double alpha, beta, k;
};

/* A window of n channels from c - (n - 1) / 2; alpha large enough that
 * the normalisation is far from the identity. */
static const struct lrn_params lrn_sets[] = {
    { 5, 1.5, 0.75, 1.2 },
    { 4, 2.0, 0.5, 2.0 },       /* even: one more channel ahead */
    { 1, 0.5, 1.0, 0.5 },
};

/* s_c for channel c of pixel p of row-major N x C x S data. */
static double
ref_lrn_scale(const struct lrn_params *l, const double *x, int cn, int sp,
              int p, int c)
{
    int behind = ((int)l->n - 1) / 2, ahead = (int)l->n - 1 - behind;
    int base = (p / sp) * cn * sp + p % sp;
    double sum = 0.0;

    for (int j = c - behind; j <= c + ahead; j++) {
        if (j >= 0 && j < cn)
            sum += x[base + j * sp] * x[base + j * sp];
    }
    return l->k + l->alpha / l->n * sum;
}

/* y and, by the chain rule term by term, dx. */
static void
ref_lrn(const struct lrn_params *l, int nn, int cn, int sp, const double *x,
        const double *dy, double *y, double *dx)
{
    int behind = ((int)l->n - 1) / 2, ahead = (int)l->n - 1 - behind;

    for (int p = 0; p < nn * sp; p++) {
        int base = (p / sp) * cn * sp + p % sp;

        for (int c = 0; c < cn; c++) {
            double s = ref_lrn_scale(l, x, cn, sp, p, c);
            y[base + c * sp] = x[base + c * sp] * pow(s, -l->beta);
        }
        for (int i = 0; i < cn; i++) {
            double g = 0.0;

            /* d y_c / d x_i for every c */
            for (int c = 0; c < cn; c++) {
                double s = ref_lrn_scale(l, x, cn, sp, p, c), d = 0.0;

                if (c == i)
                    d += pow(s, -l->beta);
                if (i >= c - behind && i <= c + ahead)
                    d -= x[base + c * sp] * l->beta * pow(s, -l->beta - 1) *
                         l->alpha / l->n * 2.0 * x[base + i * sp];
                g += dy[base + c * sp] * d;
            }
            dx[base + i * sp] = g;
        }
    }
}

static cudnnLRNDescriptor_t
lrn_new(const struct lrn_params *l)
{
    cudnnLRNDescriptor_t d;

    DNN_OK(cudnnCreateLRNDescriptor(&d));
    DNN_OK(cudnnSetLRNDescriptor(d, l->n, l->alpha, l->beta, l->k));
    return d;
}

struct lrn_fd {
    cudnnHandle_t h;
    cudnnLRNDescriptor_t d;
    cudnnTensorDescriptor_t t;
    void *xd, *yd;
};

static void
lrn_forward_fd(void *ctx, const double *x, double *y)
{
    struct lrn_fd *c = ctx;
    double one = 1.0, zero = 0.0;

    tensor_put_d(c->t, c->xd, x);
    DNN_OK(cudnnLRNCrossChannelForward(c->h, c->d,
                                       CUDNN_LRN_CROSS_CHANNEL_DIM1, &one,
                                       c->t, c->xd, &zero, c->t, c->yd));
    tensor_download_d(c->t, c->yd, y);
}

static void
test_lrn(void **state)
{
    /* 4-d in every layout; 5-d NCDHW (DHW-packed, as cuDNN requires). */
    static const int dims[2][5] = { { 2, 7, 3, 2 }, { 1, 6, 2, 2, 3 } };
    cudnnHandle_t h = handle_new();
    union scalar sa, sb;

    (void)state;
    for (size_t l = 0; l < sizeof(lrn_sets) / sizeof(lrn_sets[0]); l++)
    for (size_t k = 0; k < ew_case_count; k++)
    for (int r = 0; r < 2; r++) {
        const struct ew_case *c = &ew_cases[k];
        int nb = 4 + r;
        enum layout lay = r ? LAYOUT_NCHW : c->layout;
        size_t n = count_of(nb, dims[r]);
        int sp = (int)(n / ((size_t)dims[r][0] * dims[r][1]));
        cudnnLRNDescriptor_t d = lrn_new(&lrn_sets[l]);
        cudnnTensorDescriptor_t t = tensor_layout(lay, c->type, nb, dims[r]);
        double *x = exact_values(n, c->type, 2.0);
        double *dy = exact_values(n, c->type, 1.0);
        double *old = old_values(n, c), *ry = malloc(n * 8);
        double *rdx = malloc(n * 8), *got = malloc(n * 8);
        void *xd = tensor_upload_d(t, x, 0.0);
        void *dyd = tensor_upload_d(t, dy, 0.0);
        void *yd = tensor_upload_d(t, old, 0.0);
        void *dxd = tensor_upload_d(t, old, 0.0);
        const void *alpha = scalar(&sa, c->type, c->alpha);
        const void *beta = scalar(&sb, c->type, c->beta);
        double tol = tol_of(c->type) * 4;

        ref_lrn(&lrn_sets[l], dims[r][0], dims[r][1], sp, x, dy, ry, rdx);
        DNN_OK(cudnnLRNCrossChannelForward(h, d, CUDNN_LRN_CROSS_CHANNEL_DIM1,
                                           alpha, t, xd, beta, t, yd));
        tensor_download_d(t, yd, got);
        for (size_t i = 0; i < n; i++)
            assert_close(got[i],
                         c->alpha * ry[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol, "y", i);
        DNN_OK(cudnnLRNCrossChannelBackward(h, d,
                                            CUDNN_LRN_CROSS_CHANNEL_DIM1,
                                            alpha, t, yd, t, dyd, t, xd,
                                            beta, t, dxd));
        tensor_download_d(t, dxd, got);
        for (size_t i = 0; i < n; i++)
            assert_close(got[i],
                         c->alpha * rdx[i] +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol * 4, "dx", i);
        if (c->type == CUDNN_DATA_DOUBLE && c->beta == 0.0) {
            struct lrn_fd fd = { h, d, t, xd, yd };
            double one = 1.0, zero = 0.0;

            DNN_OK(cudnnLRNCrossChannelBackward(
                h, d, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, t, yd, t, dyd, t,
                xd, &zero, t, dxd));
            tensor_download_d(t, dxd, got);
            check_gradient(lrn_forward_fd, &fd, n, n, x, dy, got);
        }
        free(x), free(dy), free(old), free(ry), free(rdx), free(got);
        dev_free(xd), dev_free(dyd), dev_free(yd), dev_free(dxd);
        DNN_OK(cudnnDestroyTensorDescriptor(t));
        DNN_OK(cudnnDestroyLRNDescriptor(d));
    }
    DNN_OK(cudnnDestroy(h));
}

static void
test_lrn_descriptor_statuses(void **state)
{
    static const int d4[4] = { 2, 7, 3, 2 }, d4b[4] = { 2, 7, 2, 3 };
    static const int d5[5] = { 1, 6, 2, 2, 3 };
    cudnnHandle_t h = handle_new();
    cudnnLRNDescriptor_t d;
    cudnnTensorDescriptor_t a = tensor_new(CUDNN_TENSOR_NCHW,
                                           CUDNN_DATA_FLOAT, 4, d4);
    cudnnTensorDescriptor_t b = tensor_new(CUDNN_TENSOR_NCHW,
                                           CUDNN_DATA_FLOAT, 4, d4b);
    cudnnTensorDescriptor_t hf = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_HALF, 4, d4);
    cudnnTensorDescriptor_t nhwc5 = tensor_new(CUDNN_TENSOR_NHWC,
                                               CUDNN_DATA_FLOAT, 5, d5);
    void *x = dev_alloc(84 * 4), *y = dev_alloc(84 * 4);
    void *dy = dev_alloc(84 * 4), *dx = dev_alloc(84 * 4);
    float one = 1.0f, zero = 0.0f;
    const cudnnLRNMode_t cross = CUDNN_LRN_CROSS_CHANNEL_DIM1;
    unsigned n;
    double alpha, beta, k;

    (void)state;
    /* Krizhevsky's defaults; any output may be NULL. */
    DNN_OK(cudnnCreateLRNDescriptor(&d));
    DNN_OK(cudnnGetLRNDescriptor(d, &n, &alpha, &beta, &k));
    assert_true(n == 5 && alpha == 1e-4 && beta == 0.75 && k == 2.0);
    DNN_OK(cudnnGetLRNDescriptor(d, NULL, NULL, &beta, NULL));
    DNN_OK(cudnnSetLRNDescriptor(d, 16, -0.5, 0.01, 1e-5));
    DNN_OK(cudnnGetLRNDescriptor(d, &n, &alpha, &beta, &k));
    assert_true(n == 16 && alpha == -0.5 && beta == 0.01 && k == 1e-5);
    assert_int_equal(cudnnSetLRNDescriptor(d, 0, 1e-4, 0.75, 2.0),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetLRNDescriptor(d, 17, 1e-4, 0.75, 2.0),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetLRNDescriptor(d, 5, 1e-4, 0.005, 2.0),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnSetLRNDescriptor(d, 5, 1e-4, 0.75, 1e-6),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnGetLRNDescriptor(NULL, &n, NULL, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnGetLRNDescriptor(d, &n, NULL, NULL, NULL));
    assert_int_equal(n, 16);     /* a failed set keeps the last good one */

    /* Forward: BAD_PARAM for the mode, NULLs and 5-d layout; types and
     * sizes that differ NOT_SUPPORTED. */
    DNN_OK(cudnnLRNCrossChannelForward(h, d, cross, &one, a, x, &zero, a,
                                       y));
    assert_int_equal(cudnnLRNCrossChannelForward(h, d, (cudnnLRNMode_t)1,
                                                 &one, a, x, &zero, a, y),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnLRNCrossChannelForward(h, d, cross, &one, a, NULL,
                                                 &zero, a, y),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnLRNCrossChannelForward(h, d, cross, &one, a, x,
                                                 NULL, a, y),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnLRNCrossChannelForward(h, d, cross, &one, nhwc5,
                                                 x, &zero, nhwc5, y),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnLRNCrossChannelForward(h, d, cross, &one, a, x,
                                                 &zero, hf, y),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnLRNCrossChannelForward(h, d, cross, &one, a, x,
                                                 &zero, b, y),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnLRNCrossChannelForward(h, (cudnnLRNDescriptor_t)a,
                                                 cross, &one, a, x, &zero,
                                                 a, y),
                     CUDNN_STATUS_BAD_PARAM);
    /* Backward: any pair of sizes that differ. */
    DNN_OK(cudnnLRNCrossChannelBackward(h, d, cross, &one, a, y, a, dy, a,
                                        x, &zero, a, dx));
    assert_int_equal(cudnnLRNCrossChannelBackward(h, d, cross, &one, a, y, b,
                                                  dy, a, x, &zero, a, dx),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnLRNCrossChannelBackward(h, d, cross, &one, a, y, a,
                                                  dy, a, x, &zero, a, NULL),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    DNN_OK(cudnnDestroyLRNDescriptor(d));
    DNN_OK(cudnnDestroyLRNDescriptor(NULL));
    dev_free(x), dev_free(y), dev_free(dy), dev_free(dx);
    DNN_OK(cudnnDestroyTensorDescriptor(a));
    DNN_OK(cudnnDestroyTensorDescriptor(b));
    DNN_OK(cudnnDestroyTensorDescriptor(hf));
    DNN_OK(cudnnDestroyTensorDescriptor(nhwc5));
    DNN_OK(cudnnDestroy(h));
}

/* ---- Batch normalisation ------------------------------------------------- */

static const cudnnBatchNormMode_t bn_modes[] = {
    CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_PER_ACTIVATION,
    CUDNN_BATCHNORM_SPATIAL_PERSISTENT,
};

/* Groups and members of row-major N x C x S data: a channel of all images
 * and pixels, or per activation a channel and pixel of all images. */
struct bn_ref {
    int n, c, s, per_act;
};

static int
bn_groups(const struct bn_ref *r)
{
    return r->per_act ? r->c * r->s : r->c;
}

static int
bn_members(const struct bn_ref *r)
{
    return r->per_act ? r->n : r->n * r->s;
}

static int
bn_at(const struct bn_ref *r, int g, int m)
{
    if (r->per_act)
        return m * r->c * r->s + g;
    return ((m / r->s) * r->c + g) * r->s + m % r->s;
}

/* Batch mean and biased variance of group g. */
static void
bn_stats(const struct bn_ref *r, const double *x, int g, double *mean,
         double *var)
{
    double sum = 0.0, sq = 0.0;

    for (int m = 0; m < bn_members(r); m++)
        sum += x[bn_at(r, g, m)];
    *mean = sum / bn_members(r);
    for (int m = 0; m < bn_members(r); m++)
        sq += (x[bn_at(r, g, m)] - *mean) * (x[bn_at(r, g, m)] - *mean);
    *var = sq / bn_members(r);
}

/* dx, dscale, dbias of y = scale xhat + bias with batch statistics:
 * written as the derivative of each term, not cuDNN's folded form. */
static void
ref_bn_backward(const struct bn_ref *r, const double *x, const double *dy,
                const double *scale, double eps, double *dx, double *dscale,
                double *dbias)
{
    for (int g = 0; g < bn_groups(r); g++) {
        double mean, var, sd, dvar = 0.0, dmean = 0.0, mm = bn_members(r);

        bn_stats(r, x, g, &mean, &var);
        sd = sqrt(var + eps);
        dscale[g] = dbias[g] = 0.0;
        for (int m = 0; m < bn_members(r); m++) {
            int i = bn_at(r, g, m);
            double dxhat = dy[i] * scale[g];

            dscale[g] += dy[i] * (x[i] - mean) / sd;
            dbias[g] += dy[i];
            dvar += dxhat * (x[i] - mean) * -0.5 / (sd * sd * sd);
            dmean += -dxhat / sd;
        }
        for (int m = 0; m < bn_members(r); m++) {
            int i = bn_at(r, g, m);
            dx[i] = dy[i] * scale[g] / sd + dvar * 2.0 * (x[i] - mean) / mm +
                    dmean / mm;
        }
    }
}

struct bn_fd {
    cudnnHandle_t h;
    cudnnBatchNormMode_t mode;
    cudnnTensorDescriptor_t t, p;
    void *xd, *yd, *scaled, *biasd;
    int which;          /* the input varied: 0 x, 1 scale, 2 bias */
};

static void
bn_forward_fd(void *ctx, const double *in, double *y)
{
    struct bn_fd *c = ctx;
    double one = 1.0, zero = 0.0;
    void *dst[3] = { c->xd, c->scaled, c->biasd };

    tensor_put_d(c->which ? c->p : c->t, dst[c->which], in);
    DNN_OK(cudnnBatchNormalizationForwardTraining(
        c->h, c->mode, &one, &zero, c->t, c->xd, c->t, c->yd, c->p,
        c->scaled, c->biasd, 1.0, NULL, NULL, 1e-3, NULL, NULL));
    tensor_download_d(c->t, c->yd, y);
}

/* Training, inference and backward in every mode, case and rank. */
static void
test_batchnorm(void **state)
{
    static const int dims[2][5] = { { 3, 4, 2, 3 }, { 2, 3, 2, 2, 2 } };
    const double eps = 1e-3, factor = 0.3;
    cudnnHandle_t h = handle_new();
    union scalar sa, sb, spa, spb;

    (void)state;
    for (size_t md = 0; md < 3; md++)
    for (size_t k = 0; k < ew_case_count; k++)
    for (int r = 0; r < 2; r++) {
        const struct ew_case *c = &ew_cases[k];
        cudnnBatchNormMode_t mode = bn_modes[md];
        int nb = 4 + r;
        size_t n = count_of(nb, dims[r]);
        struct bn_ref ref = { dims[r][0], dims[r][1],
                              (int)(n / ((size_t)dims[r][0] * dims[r][1])),
                              mode == CUDNN_BATCHNORM_PER_ACTIVATION };
        size_t np = (size_t)bn_groups(&ref);
        cudnnTensorDescriptor_t t = tensor_layout(c->layout, c->type, nb,
                                                  dims[r]);
        cudnnTensorDescriptor_t p;
        cudnnDataType_t pt;
        double *x = exact_values(n, c->type, 2.0);
        double *dy = exact_values(n, c->type, 1.0), *old = old_values(n, c);
        double *scale = exact_values(np, CUDNN_DATA_DOUBLE, 1.0);
        double *bias = exact_values(np, CUDNN_DATA_DOUBLE, 1.0);
        double *rmean = exact_values(np, CUDNN_DATA_DOUBLE, 1.0);
        double *rvar = exact_values(np, CUDNN_DATA_DOUBLE, 1.0);
        double *got = malloc(n * 8), *pgot = malloc(np * 8);
        double *rdx = malloc(n * 8), *rds = malloc(np * 8);
        double *rdb = malloc(np * 8);
        double *pold = exact_values(np, CUDNN_DATA_FLOAT, 1.0);
        void *xd, *yd, *dyd, *dxd, *sd, *bd, *rmd, *rvd, *smd, *sid, *dsd,
            *dbd;
        double tol = tol_of(c->type) * 8, ptol;
        int nbp, pdim[5], pstr[5];

        DNN_OK(cudnnCreateTensorDescriptor(&p));
        DNN_OK(cudnnDeriveBNTensorDescriptor(p, t, mode));
        DNN_OK(cudnnGetTensorNdDescriptor(p, 5, &pt, &nbp, pdim, pstr));
        assert_int_equal(pt, c->type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE
                                                          : CUDNN_DATA_FLOAT);
        assert_int_equal(count_of(nbp, pdim), np);
        ptol = tol_of(pt) * 8 > tol ? tol_of(pt) * 8 : tol;
        for (size_t g = 0; g < np; g++) {
            rvar[g] = fabs(rvar[g]) + 0.5;
            scale[g] += 1.5;
        }
        xd = tensor_upload_d(t, x, 0.0);
        dyd = tensor_upload_d(t, dy, 0.0);
        yd = tensor_upload_d(t, old, 0.0);
        dxd = tensor_upload_d(t, old, 0.0);
        sd = tensor_upload_d(p, scale, 0.0);
        bd = tensor_upload_d(p, bias, 0.0);
        rmd = tensor_upload_d(p, rmean, 0.0);
        rvd = tensor_upload_d(p, rvar, 0.0);
        smd = tensor_upload_d(p, rvar, 0.0);
        sid = tensor_upload_d(p, rvar, 0.0);
        /* Parameters as stored (FLOAT for all but DOUBLE data). */
        tensor_download_d(p, sd, scale);
        tensor_download_d(p, bd, bias);
        tensor_download_d(p, rmd, rmean);
        tensor_download_d(p, rvd, rvar);

        /* Training: y, the running averages, the saved statistics. */
        DNN_OK(cudnnBatchNormalizationForwardTraining(
            h, mode, scalar(&sa, c->type, c->alpha),
            scalar(&sb, c->type, c->beta), t, xd, t, yd, p, sd, bd, factor,
            rmd, rvd, eps, smd, sid));
        tensor_download_d(t, yd, got);
        for (int g = 0; g < bn_groups(&ref); g++) {
            double mean, var, m = bn_members(&ref);

            bn_stats(&ref, x, g, &mean, &var);
            for (int mm = 0; mm < bn_members(&ref); mm++) {
                int i = bn_at(&ref, g, mm);
                double want = scale[g] * (x[i] - mean) / sqrt(var + eps) +
                              bias[g];
                assert_close(got[i],
                             c->alpha * want +
                                 (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                             tol, "y", (size_t)i);
            }
            rmean[g] = (1 - factor) * rmean[g] + factor * mean;
            rvar[g] = (1 - factor) * rvar[g] + factor * var * m / (m - 1);
            rds[g] = mean;
            rdb[g] = 1.0 / sqrt(var + eps);
        }
        tensor_download_d(p, rmd, pgot);
        for (size_t g = 0; g < np; g++)
            assert_close(pgot[g], rmean[g], ptol, "running mean", g);
        tensor_download_d(p, rvd, pgot);
        for (size_t g = 0; g < np; g++)
            assert_close(pgot[g], rvar[g], ptol, "running variance", g);
        tensor_download_d(p, smd, pgot);
        for (size_t g = 0; g < np; g++)
            assert_close(pgot[g], rds[g], ptol, "saved mean", g);
        tensor_download_d(p, sid, pgot);
        for (size_t g = 0; g < np; g++)
            assert_close(pgot[g], rdb[g], ptol, "saved inverse sd", g);

        /* Inference from the running statistics just written. */
        tensor_download_d(p, rmd, rmean);
        tensor_download_d(p, rvd, rvar);
        tensor_put_d(t, yd, old);
        DNN_OK(cudnnBatchNormalizationForwardInference(
            h, mode, scalar(&sa, c->type, c->alpha),
            scalar(&sb, c->type, c->beta), t, xd, t, yd, p, sd, bd, rmd, rvd,
            eps));
        tensor_download_d(t, yd, got);
        for (int g = 0; g < bn_groups(&ref); g++)
        for (int mm = 0; mm < bn_members(&ref); mm++) {
            int i = bn_at(&ref, g, mm);
            double want = scale[g] * (x[i] - rmean[g]) /
                              sqrt(eps + rvar[g]) + bias[g];
            assert_close(got[i],
                         c->alpha * want +
                             (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                         tol, "inference y", (size_t)i);
        }

        /* Backward, with the saved statistics and without: the parameter
         * gradients blended by their own factors. */
        ref_bn_backward(&ref, x, dy, scale, eps, rdx, rds, rdb);
        for (int saved = 0; saved < 2; saved++) {
            double beta_p = saved ? 0.0 : -0.5;
            double *pold_v = beta_p != 0.0 ? pold : NULL;
            double *nanp = nans(np);

            tensor_put_d(t, dxd, old);
            dsd = tensor_upload_d(p, pold_v ? pold_v : nanp, 0.0);
            dbd = tensor_upload_d(p, pold_v ? pold_v : nanp, 0.0);
            if (pold_v != NULL)
                tensor_download_d(p, dsd, pold);
            DNN_OK(cudnnBatchNormalizationBackward(
                h, mode, scalar(&sa, c->type, c->alpha),
                scalar(&sb, c->type, c->beta),
                scalar(&spa, c->type, 2.0), scalar(&spb, c->type, beta_p), t,
                xd, t, dyd, t, dxd, p, sd, dsd, dbd, eps,
                saved ? smd : NULL, saved ? sid : NULL));
            tensor_download_d(t, dxd, got);
            for (size_t i = 0; i < n; i++)
                assert_close(got[i],
                             c->alpha * rdx[i] +
                                 (c->beta != 0.0 ? c->beta * old[i] : 0.0),
                             tol * 4, "dx", i);
            tensor_download_d(p, dsd, pgot);
            for (size_t g = 0; g < np; g++)
                assert_close(pgot[g],
                             2.0 * rds[g] +
                                 (pold_v ? beta_p * pold[g] : 0.0),
                             ptol * 4, "dscale", g);
            tensor_download_d(p, dbd, pgot);
            for (size_t g = 0; g < np; g++)
                assert_close(pgot[g],
                             2.0 * rdb[g] +
                                 (pold_v ? beta_p * pold[g] : 0.0),
                             ptol * 4, "dbias", g);
            dev_free(dsd), dev_free(dbd);
            free(nanp);
        }

        /* DOUBLE: dx, dscale and dbias against differences of training's
         * forward pass. */
        if (c->type == CUDNN_DATA_DOUBLE && c->beta == 0.0) {
            struct bn_fd fd = { h, mode, t, p, xd, yd, sd, bd, 0 };
            double one = 1.0, zero = 0.0, *ds = malloc(np * 8);
            double *db = malloc(np * 8);

            dsd = dev_alloc(np * 8);
            dbd = dev_alloc(np * 8);
            DNN_OK(cudnnBatchNormalizationBackward(
                h, mode, &one, &zero, &one, &zero, t, xd, t, dyd, t, dxd, p,
                sd, dsd, dbd, eps, NULL, NULL));
            tensor_download_d(t, dxd, got);
            tensor_download_d(p, dsd, ds);
            tensor_download_d(p, dbd, db);
            check_gradient(bn_forward_fd, &fd, n, n, x, dy, got);
            fd.which = 1;
            check_gradient(bn_forward_fd, &fd, np, n, scale, dy, ds);
            tensor_put_d(p, sd, scale);
            fd.which = 2;
            check_gradient(bn_forward_fd, &fd, np, n, bias, dy, db);
            dev_free(dsd), dev_free(dbd);
            free(ds), free(db);
        }
        free(x), free(dy), free(old), free(scale), free(bias), free(rmean);
        free(rvar), free(got), free(pgot), free(rdx), free(rds), free(rdb);
        free(pold);
        dev_free(xd), dev_free(yd), dev_free(dyd), dev_free(dxd);
        dev_free(sd), dev_free(bd), dev_free(rmd), dev_free(rvd);
        dev_free(smd), dev_free(sid);
        DNN_OK(cudnnDestroyTensorDescriptor(t));
        DNN_OK(cudnnDestroyTensorDescriptor(p));
    }
    DNN_OK(cudnnDestroy(h));
}

static void
test_batchnorm_statuses(void **state)
{
    static const int d4[4] = { 3, 4, 2, 3 }, d3[3] = { 3, 4, 6 };
    static const int other[4] = { 3, 4, 3, 2 };
    cudnnHandle_t h = handle_new();
    cudnnTensorDescriptor_t x = tensor_new(CUDNN_TENSOR_NCHW,
                                           CUDNN_DATA_FLOAT, 4, d4);
    cudnnTensorDescriptor_t xo = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 4, other);
    cudnnTensorDescriptor_t x3 = tensor_new(CUDNN_TENSOR_NCHW,
                                            CUDNN_DATA_FLOAT, 3, d3);
    cudnnTensorDescriptor_t xh = tensor_new(CUDNN_TENSOR_NHWC,
                                            CUDNN_DATA_HALF, 4, d4);
    cudnnTensorDescriptor_t p, pa, ph;
    int nb, dim[5], str[5];
    cudnnDataType_t type;
    void *xd = dev_alloc(72 * 4), *yd = dev_alloc(72 * 4);
    void *dyd = dev_alloc(72 * 4), *dxd = dev_alloc(72 * 4);
    void *pd[6];
    float one = 1.0f, zero = 0.0f;
    const cudnnBatchNormMode_t sp = CUDNN_BATCHNORM_SPATIAL;

    (void)state;
    for (int i = 0; i < 6; i++) {
        pd[i] = dev_alloc(24 * 4);
        assert_int_equal(cudaMemset(pd[i], 0, 24 * 4), cudaSuccess);
    }
    assert_int_equal(cudaMemset(xd, 0, 72 * 4), cudaSuccess);
    assert_int_equal(cudaMemset(dyd, 0, 72 * 4), cudaSuccess);
    DNN_OK(cudnnCreateTensorDescriptor(&p));
    DNN_OK(cudnnCreateTensorDescriptor(&pa));
    DNN_OK(cudnnCreateTensorDescriptor(&ph));

    /* The derived descriptor: packed NCHW, FLOAT for HALF data. */
    DNN_OK(cudnnDeriveBNTensorDescriptor(p, xh, sp));
    DNN_OK(cudnnGetTensorNdDescriptor(p, 5, &type, &nb, dim, str));
    assert_true(type == CUDNN_DATA_FLOAT && nb == 4 && dim[0] == 1 &&
                dim[1] == 4 && dim[2] == 1 && dim[3] == 1 && str[0] == 4 &&
                str[1] == 1);
    DNN_OK(cudnnDeriveBNTensorDescriptor(pa, x,
                                         CUDNN_BATCHNORM_PER_ACTIVATION));
    DNN_OK(cudnnGetTensorNdDescriptor(pa, 5, &type, &nb, dim, str));
    assert_true(dim[0] == 1 && dim[1] == 4 && dim[2] == 2 && dim[3] == 3 &&
                str[1] == 6);
    assert_int_equal(cudnnDeriveBNTensorDescriptor(ph, x3, sp),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnDeriveBNTensorDescriptor(ph, x,
                                                   (cudnnBatchNormMode_t)3),
                     CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnSetTensor4dDescriptor(ph, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF,
                                      1, 4, 1, 1));

    /* Training. */
    DNN_OK(cudnnBatchNormalizationForwardTraining(
        h, sp, &one, &zero, x, xd, x, yd, p, pd[0], pd[1], 1.0, pd[2], pd[3],
        1e-5, pd[4], pd[5]));
    DNN_OK(cudnnBatchNormalizationForwardTraining(
        h, sp, &one, &zero, x, xd, x, yd, p, pd[0], pd[1], 1.0, NULL, NULL,
        0.0, NULL, NULL));
    {
        static const struct {
            cudnnStatus_t want;
            int mode, xi, yi, pi, null_scale, null_rvar, null_sinv;
            double eps;
        } bad[] = {
            { CUDNN_STATUS_BAD_PARAM, 3, 0, 0, 0, 0, 0, 0, 1e-5 },  /* mode */
            { CUDNN_STATUS_BAD_PARAM, 1, 0, 0, 0, 0, 0, 0, -1e-5 }, /* eps */
            { CUDNN_STATUS_BAD_PARAM, 1, 0, 0, 0, 0, 0, 0, NAN },
            { CUDNN_STATUS_BAD_PARAM, 1, 2, 2, 0, 0, 0, 0, 1e-5 },  /* 3-d */
            { CUDNN_STATUS_BAD_PARAM, 1, 0, 1, 0, 0, 0, 0, 1e-5 },  /* y */
            { CUDNN_STATUS_BAD_PARAM, 1, 0, 0, 1, 0, 0, 0, 1e-5 },  /* 1CHW */
            { CUDNN_STATUS_BAD_PARAM, 1, 0, 0, 2, 0, 0, 0, 1e-5 },  /* half */
            { CUDNN_STATUS_BAD_PARAM, 1, 0, 0, 0, 0, 1, 0, 1e-5 },  /* pair */
            { CUDNN_STATUS_BAD_PARAM, 1, 0, 0, 0, 0, 0, 1, 1e-5 },  /* pair */
            { CUDNN_STATUS_BAD_PARAM_NULL_POINTER, 1, 0, 0, 0, 1, 0, 0,
              1e-5 },
        };
        cudnnTensorDescriptor_t xs[3] = { x, xo, x3 }, ps[3] = { p, pa, ph };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            assert_int_equal(
                cudnnBatchNormalizationForwardTraining(
                    h, (cudnnBatchNormMode_t)bad[i].mode, &one, &zero,
                    xs[bad[i].xi], xd, xs[bad[i].yi], yd, ps[bad[i].pi],
                    bad[i].null_scale ? NULL : pd[0], pd[1], 0.5, pd[2],
                    bad[i].null_rvar ? NULL : pd[3], bad[i].eps, pd[4],
                    bad[i].null_sinv ? NULL : pd[5]),
                bad[i].want);
    }
    assert_int_equal(cudnnBatchNormalizationForwardTraining(
                         h, sp, NULL, &zero, x, xd, x, yd, p, pd[0], pd[1],
                         1.0, NULL, NULL, 1e-5, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);

    /* Inference: the estimates are required. */
    DNN_OK(cudnnBatchNormalizationForwardInference(
        h, sp, &one, &zero, x, xd, x, yd, p, pd[0], pd[1], pd[2], pd[3],
        1e-5));
    assert_int_equal(cudnnBatchNormalizationForwardInference(
                         h, sp, &one, &zero, x, xd, x, yd, p, pd[0], pd[1],
                         NULL, pd[3], 1e-5),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnBatchNormalizationForwardInference(
                         h, sp, &one, &zero, x, xd, x, yd, p, pd[0], pd[1],
                         pd[2], pd[3], -1.0),
                     CUDNN_STATUS_BAD_PARAM);

    /* Backward: the results are required, the saved pair together. */
    DNN_OK(cudnnBatchNormalizationBackward(h, sp, &one, &zero, &one, &zero, x,
                                           xd, x, dyd, x, dxd, p, pd[0],
                                           pd[1], pd[2], 1e-5, NULL, NULL));
    assert_int_equal(cudnnBatchNormalizationBackward(
                         h, sp, &one, &zero, &one, &zero, x, xd, x, dyd, x,
                         dxd, p, pd[0], NULL, pd[2], 1e-5, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnBatchNormalizationBackward(
                         h, sp, &one, &zero, NULL, &zero, x, xd, x, dyd, x,
                         dxd, p, pd[0], pd[1], pd[2], 1e-5, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    assert_int_equal(cudnnBatchNormalizationBackward(
                         h, sp, &one, &zero, &one, &zero, x, xd, x, dyd, x,
                         dxd, p, pd[0], pd[1], pd[2], 1e-5, pd[4], NULL),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnBatchNormalizationBackward(
                         h, sp, &one, &zero, &one, &zero, x, xd, xo, dyd, x,
                         dxd, p, pd[0], pd[1], pd[2], 1e-5, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudnnBatchNormalizationBackward(
                         h, sp, &one, &zero, &one, &zero, x, xd, x, dyd, x,
                         dxd, pa, pd[0], pd[1], pd[2], 1e-5, NULL, NULL),
                     CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    for (int i = 0; i < 6; i++)
        dev_free(pd[i]);
    dev_free(xd), dev_free(yd), dev_free(dyd), dev_free(dxd);
    DNN_OK(cudnnDestroyTensorDescriptor(x));
    DNN_OK(cudnnDestroyTensorDescriptor(xo));
    DNN_OK(cudnnDestroyTensorDescriptor(x3));
    DNN_OK(cudnnDestroyTensorDescriptor(xh));
    DNN_OK(cudnnDestroyTensorDescriptor(p));
    DNN_OK(cudnnDestroyTensorDescriptor(pa));
    DNN_OK(cudnnDestroyTensorDescriptor(ph));
    DNN_OK(cudnnDestroy(h));
}

/* Modelled time: memory-bound, linear in the bytes moved, so the time of
 * four times the images exceeds one's by three times what two's does. */
static void
test_modelled_time(void **state)
{
    cudnnHandle_t h = handle_new();
    float ms[3], one = 1.0f, zero = 0.0f;

    (void)state;
    for (int i = 0; i < 3; i++) {
        int dim[4] = { 16 << i, 4, 16, 16 };
        cudnnTensorDescriptor_t t = tensor_new(CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, 4, dim), p;
        size_t bytes = tensor_count(t) * 4;
        void *x = dev_alloc(bytes), *y = dev_alloc(bytes);
        void *sc = dev_alloc(16), *bi = dev_alloc(16);
        cudaEvent_t a, b;

        assert_int_equal(cudaMemset(x, 0, bytes), cudaSuccess);
        assert_int_equal(cudaMemset(sc, 0, 16), cudaSuccess);
        assert_int_equal(cudaMemset(bi, 0, 16), cudaSuccess);
        DNN_OK(cudnnCreateTensorDescriptor(&p));
        DNN_OK(cudnnDeriveBNTensorDescriptor(p, t, CUDNN_BATCHNORM_SPATIAL));
        assert_int_equal(cudaEventCreate(&a), cudaSuccess);
        assert_int_equal(cudaEventCreate(&b), cudaSuccess);
        assert_int_equal(cudaEventRecord(a, NULL), cudaSuccess);
        DNN_OK(cudnnBatchNormalizationForwardTraining(
            h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, t, x, t, y, p, sc, bi,
            1.0, NULL, NULL, 1e-5, NULL, NULL));
        assert_int_equal(cudaEventRecord(b, NULL), cudaSuccess);
        assert_int_equal(cudaEventSynchronize(b), cudaSuccess);
        assert_int_equal(cudaEventElapsedTime(&ms[i], a, b), cudaSuccess);
        assert_true(ms[i] > 0.0f);
        assert_int_equal(cudaEventDestroy(a), cudaSuccess);
        assert_int_equal(cudaEventDestroy(b), cudaSuccess);
        dev_free(x), dev_free(y), dev_free(sc), dev_free(bi);
        DNN_OK(cudnnDestroyTensorDescriptor(t));
        DNN_OK(cudnnDestroyTensorDescriptor(p));
    }
    assert_true(ms[1] > ms[0] && ms[2] > ms[1]);
    assert_true(fabs((ms[2] - ms[0]) / (ms[1] - ms[0]) - 3.0) < 0.03);
    DNN_OK(cudnnDestroy(h));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lrn),
        cmocka_unit_test(test_lrn_descriptor_statuses),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_batchnorm_statuses),
        cmocka_unit_test(test_modelled_time),
    };

    unsetenv("AMPSHIM_EMU_FAIL");
    return cmocka_run_group_tests_name("emu_cudnn_norm", tests, NULL, NULL);
}
