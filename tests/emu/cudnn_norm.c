/* The emulated cuDNN normalisations: local response normalisation across
 * channels (cudnnLRNCrossChannelForward and Backward) and batch
 * normalisation (training, inference and backward; spatial, persistent
 * spatial and per activation). FLOAT, DOUBLE, HALF and BFLOAT16 data with
 * any strides, computed in double (see cudnn_emu.h); statistics are
 * two-pass double sums. */
#include <cudnn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

#define BAD(...) emu_dnn_error(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)
#define UNSUPPORTED(...) emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED, __VA_ARGS__)
#define NULL_POINTER(...) \
    emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, __VA_ARGS__)

/* Host aliases of the `n` views that are given (ptr != 0); -1 when one is
 * not in device memory. */
static int
map_views(const struct emu_dnn_view *v, int n, void **at)
{
    for (int i = 0; i < n; i++) {
        at[i] = NULL;
        if (v[i].ptr != 0 && (at[i] = emu_dnn_view_at(&v[i])) == NULL)
            return -1;
    }
    return 0;
}

static double
views_bytes(const struct emu_dnn_view *v, int n)
{
    double bytes = 0.0;

    for (int i = 0; i < n; i++) {
        if (v[i].ptr != 0)
            bytes += emu_dnn_view_bytes(&v[i]);
    }
    return bytes;
}

static double
at_view(void *const *at, const struct emu_dnn_view *v, int i, size_t lin)
{
    return emu_dnn_loadd(at[i], emu_dnn_view_offset(&v[i], lin), v[i].type);
}

/* ---- Local response normalisation ---------------------------------------- */

/*
 * For each image and pixel, over the channels: with the window
 * W(c) = [c - (n - 1) / 2, c + n / 2] (rounded down) inside 0 .. C - 1,
 *   s_c = k + alpha / n * sum_{j in W(c)} x_j^2,   y_c = x_c s_c^-beta,
 * and backward
 *   dx_i = dy_i s_i^-beta
 *          - 2 alpha beta / n x_i sum_{c : i in W(c)} dy_c x_c s_c^(-beta-1).
 * Backward recomputes s from x; y is checked but not read.
 */
enum { LRN_X, LRN_Y, LRN_DY, LRN_DX, LRN_NVIEWS };

struct lrn_job {
    struct emu_dnn_view v[LRN_NVIEWS];
    double alpha, beta;
    struct cudnnLRNStruct lrn;
};

/* s_c for the C values of one pixel. */
static void
lrn_scales(const struct cudnnLRNStruct *l, const double *x, int c_count,
           double *s)
{
    int behind = ((int)l->n - 1) / 2, ahead = (int)l->n - behind - 1;

    for (int c = 0; c < c_count; c++) {
        double sum = 0.0;

        for (int j = c - behind; j <= c + ahead; j++) {
            if (j >= 0 && j < c_count)
                sum += x[j] * x[j];
        }
        s[c] = l->k + l->alpha / l->n * sum;
    }
}

static CUresult
lrn_run(void *arg)
{
    const struct lrn_job *j = arg;
    const struct emu_dnn_view *v = j->v;
    int backward = v[LRN_DX].ptr != 0, out = backward ? LRN_DX : LRN_Y;
    int cn = v[LRN_X].dim[1];
    int behind = ((int)j->lrn.n - 1) / 2, ahead = (int)j->lrn.n - behind - 1;
    size_t spatial = emu_dnn_view_count(&v[LRN_X]) /
                     ((size_t)v[LRN_X].dim[0] * (size_t)cn);
    double *buf = malloc(4 * (size_t)cn * sizeof(double));
    double *x = buf, *s = buf + cn, *dy = buf + 2 * cn, *t = buf + 3 * cn;
    void *at[LRN_NVIEWS];

    if (buf == NULL)
        return emu_op_fail(CUDA_ERROR_OUT_OF_MEMORY, "cudnnLRN",
                           "out of host memory");
    if (map_views(v, LRN_NVIEWS, at) != 0) {
        free(buf);
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS, "cudnnLRN",
                           "a tensor is not in device memory");
    }
    for (size_t p = 0; p < (size_t)v[LRN_X].dim[0] * spatial; p++) {
        size_t n = p / spatial, base = n * (size_t)cn * spatial + p % spatial;

        for (int c = 0; c < cn; c++) {
            x[c] = at_view(at, v, LRN_X, base + (size_t)c * spatial);
            if (backward)
                dy[c] = at_view(at, v, LRN_DY, base + (size_t)c * spatial);
        }
        lrn_scales(&j->lrn, x, cn, s);
        for (int c = 0; backward && c < cn; c++)
            t[c] = dy[c] * x[c] * pow(s[c], -j->lrn.beta - 1.0);
        for (int i = 0; i < cn; i++) {
            size_t lin = base + (size_t)i * spatial;
            double r = (backward ? dy[i] : x[i]) * pow(s[i], -j->lrn.beta);

            for (int c = i - ahead; backward && c <= i + behind; c++) {
                if (c >= 0 && c < cn)
                    r -= 2.0 * j->lrn.alpha * j->lrn.beta / j->lrn.n *
                         x[i] * t[c];
            }
            emu_dnn_blendd(at[out], emu_dnn_view_offset(&v[out], lin),
                           v[out].type, j->alpha, j->beta, r);
        }
    }
    free(buf);
    return CUDA_SUCCESS;
}

/* A 5-d tensor must be NCDHW with D, H and W packed. */
static int
lrn_layout_ok(cudnnTensorDescriptor_t t)
{
    return t->nb_dims != 5 ||
           (t->stride[4] == 1 && t->stride[3] == t->dim[4] &&
            t->stride[2] == t->dim[3] * t->dim[4]);
}

/* The checks cuDNN lists: NULL pointers, an invalid descriptor or mode and
 * 5-d tensors not DHW-packed are BAD_PARAM; types or sizes that differ
 * NOT_SUPPORTED. An output in place of an input needs its strides. */
static cudnnStatus_t
lrn_check(const char *api, cudnnLRNDescriptor_t norm, cudnnLRNMode_t mode,
          const void *alpha, const void *beta,
          const cudnnTensorDescriptor_t desc[LRN_NVIEWS],
          const void *const data[LRN_NVIEWS], int out)
{
    if (norm == NULL || norm->magic != EMU_DNN_MAGIC_LRN)
        return BAD("%s: invalid LRN descriptor", api);
    if (mode != CUDNN_LRN_CROSS_CHANNEL_DIM1)
        return BAD("%s: invalid LRN mode %d", api, (int)mode);
    if (alpha == NULL || beta == NULL)
        return NULL_POINTER("%s: alpha or beta is NULL", api);
    for (int i = 0; i < LRN_NVIEWS; i++) {
        if (desc[i] == NULL && data[i] == NULL)
            continue;
        if (!emu_dnn_tensor_ok(desc[i]))
            return BAD("%s: invalid tensor descriptor", api);
        if (data[i] == NULL)
            return NULL_POINTER("%s: NULL data", api);
        if (!lrn_layout_ok(desc[i]))
            return BAD("%s: a 5-d tensor is not NCDHW, DHW-packed", api);
    }
    for (int i = 0; i < LRN_NVIEWS; i++) {
        if (desc[i] == NULL)
            continue;
        if (desc[i]->type != desc[out]->type ||
            !emu_dnn_same_dims(desc[i], desc[out]))
            return UNSUPPORTED("%s: tensors differ in type or sizes", api);
        if (i != out && data[i] == data[out] &&
            !emu_dnn_same_strides(desc[i], desc[out]))
            return BAD("%s: in-place call with different strides", api);
    }
    return emu_dnn_type_ok(desc[out], api);
}

static cudnnStatus_t
lrn_submit(const char *api, cudnnHandle_t handle, cudnnLRNDescriptor_t norm,
           cudnnLRNMode_t mode, const void *alpha, const void *beta,
           const cudnnTensorDescriptor_t desc[LRN_NVIEWS],
           const void *const data[LRN_NVIEWS], int out)
{
    struct emu_dnn_config cfg;
    struct lrn_job *job;
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st == CUDNN_STATUS_SUCCESS)
        st = lrn_check(api, norm, mode, alpha, beta, desc, data, out);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    for (int i = 0; i < LRN_NVIEWS; i++) {
        if (desc[i] != NULL)
            emu_dnn_view_tensor(&job->v[i], desc[i], data[i]);
    }
    job->alpha = emu_dnn_scalar(alpha, desc[out]->type);
    job->beta = emu_dnn_scalar(beta, desc[out]->type);
    job->lrn = *norm;
    return emu_dnn_submit(&cfg, api, lrn_run, free, job,
                          (2.0 * norm->n + 8.0) *
                              (double)emu_dnn_view_count(&job->v[out]),
                          views_bytes(job->v, LRN_NVIEWS));
}

cudnnStatus_t
cudnnLRNCrossChannelForward(cudnnHandle_t handle, cudnnLRNDescriptor_t normDesc,
                            cudnnLRNMode_t lrnMode, const void *alpha,
                            const cudnnTensorDescriptor_t xDesc,
                            const void *x, const void *beta,
                            const cudnnTensorDescriptor_t yDesc, void *y)
{
    const cudnnTensorDescriptor_t desc[LRN_NVIEWS] = { xDesc, yDesc };
    const void *const data[LRN_NVIEWS] = { x, y };

    return lrn_submit("cudnnLRNCrossChannelForward", handle, normDesc,
                      lrnMode, alpha, beta, desc, data, LRN_Y);
}

cudnnStatus_t
cudnnLRNCrossChannelBackward(cudnnHandle_t handle,
                             cudnnLRNDescriptor_t normDesc,
                             cudnnLRNMode_t lrnMode, const void *alpha,
                             const cudnnTensorDescriptor_t yDesc,
                             const void *y,
                             const cudnnTensorDescriptor_t dyDesc,
                             const void *dy,
                             const cudnnTensorDescriptor_t xDesc,
                             const void *x, const void *beta,
                             const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    const cudnnTensorDescriptor_t desc[LRN_NVIEWS] = { xDesc, yDesc, dyDesc,
                                                       dxDesc };
    const void *const data[LRN_NVIEWS] = { x, y, dy, dx };

    return lrn_submit("cudnnLRNCrossChannelBackward", handle, normDesc,
                      lrnMode, alpha, beta, desc, data, LRN_DX);
}

/* ---- Batch normalisation ------------------------------------------------- */

/*
 * Each group (a channel, or per activation a channel and pixel) holds M
 * elements (N times the pixels, or N). Training: the batch mean and biased
 * variance, y = scale (x - mean) / sqrt(var + eps) + bias, blended; the
 * running mean and variance move by the factor f towards the batch mean
 * and the unbiased variance (var M / (M - 1); var when M is 1); the saved
 * mean and 1 / sqrt(var + eps) are written when asked for. Inference uses
 * the estimated mean and variance. Backward, from the saved mean and
 * inverse deviation or, without them, from x again, with
 * xhat = (x - mean) / sd:
 *   dbias = sum dy, dscale = sum dy xhat,
 *   dx = scale / (sd M) (M dy - dbias - xhat dscale).
 */
enum {
    BN_X, BN_Y, BN_DY, BN_DX,
    BN_SCALE, BN_BIAS, BN_MEAN, BN_VAR, BN_SAVE_MEAN, BN_SAVE_INV,
    BN_DSCALE, BN_DBIAS, BN_NVIEWS,
};

enum bn_kind { BN_TRAIN, BN_INFER, BN_BACKWARD };

struct bn_job {
    struct emu_dnn_view v[BN_NVIEWS];
    enum bn_kind kind;
    cudnnBatchNormMode_t mode;
    double alpha, beta;             /* data: y or dx */
    double alpha_param, beta_param; /* dscale and dbias */
    double factor, epsilon;
};

/* The groups, their size M, and the row-major index of member m of group
 * g; the parameters' row-major index of group g is g. */
struct bn_shape {
    size_t groups, members, c, spatial;
    int per_activation;
};

static size_t
bn_index(const struct bn_shape *s, size_t g, size_t m)
{
    if (s->per_activation)
        return m * s->c * s->spatial + g;
    return ((m / s->spatial) * s->c + g) * s->spatial + m % s->spatial;
}

static void
bn_shape_of(const struct bn_job *j, struct bn_shape *s)
{
    const struct emu_dnn_view *x = &j->v[BN_X];

    s->c = (size_t)x->dim[1];
    s->spatial = emu_dnn_view_count(x) / ((size_t)x->dim[0] * s->c);
    s->per_activation = j->mode == CUDNN_BATCHNORM_PER_ACTIVATION;
    s->groups = s->per_activation ? s->c * s->spatial : s->c;
    s->members = emu_dnn_view_count(x) / s->groups;
}

/* The batch mean and biased variance of group g (two passes). */
static void
bn_moments(const struct bn_job *j, void *const *at, const struct bn_shape *s,
           size_t g, double *mean, double *var)
{
    double sum = 0.0, sq = 0.0;

    for (size_t m = 0; m < s->members; m++)
        sum += at_view(at, j->v, BN_X, bn_index(s, g, m));
    *mean = sum / (double)s->members;
    for (size_t m = 0; m < s->members; m++) {
        double d = at_view(at, j->v, BN_X, bn_index(s, g, m)) - *mean;
        sq += d * d;
    }
    *var = sq / (double)s->members;
}

static void
param_store(void *const *at, const struct emu_dnn_view *v, int i, size_t g,
            double value)
{
    if (v[i].ptr != 0)
        emu_dnn_stored(at[i], emu_dnn_view_offset(&v[i], g), v[i].type,
                       value);
}

/* Training and inference: y for group g from its mean and inverse
 * deviation. */
static void
bn_normalise(const struct bn_job *j, void *const *at,
             const struct bn_shape *s, size_t g, double mean, double inv)
{
    double scale = at_view(at, j->v, BN_SCALE, g);
    double bias = at_view(at, j->v, BN_BIAS, g);
    const struct emu_dnn_view *y = &j->v[BN_Y];

    for (size_t m = 0; m < s->members; m++) {
        size_t lin = bn_index(s, g, m);
        double x = at_view(at, j->v, BN_X, lin);

        emu_dnn_blendd(at[BN_Y], emu_dnn_view_offset(y, lin), y->type,
                       j->alpha, j->beta, scale * (x - mean) * inv + bias);
    }
}

static void
bn_train_group(const struct bn_job *j, void *const *at,
               const struct bn_shape *s, size_t g)
{
    double mean, var, inv, unbiased, f = j->factor;

    bn_moments(j, at, s, g, &mean, &var);
    inv = 1.0 / sqrt(var + j->epsilon);
    bn_normalise(j, at, s, g, mean, inv);
    unbiased = s->members > 1
                   ? var * (double)s->members / (double)(s->members - 1)
                   : var;
    if (j->v[BN_MEAN].ptr != 0) {
        param_store(at, j->v, BN_MEAN, g,
                    (1.0 - f) * at_view(at, j->v, BN_MEAN, g) + f * mean);
        param_store(at, j->v, BN_VAR, g,
                    (1.0 - f) * at_view(at, j->v, BN_VAR, g) + f * unbiased);
    }
    param_store(at, j->v, BN_SAVE_MEAN, g, mean);
    param_store(at, j->v, BN_SAVE_INV, g, inv);
}

static void
bn_backward_group(const struct bn_job *j, void *const *at,
                  const struct bn_shape *s, size_t g)
{
    const struct emu_dnn_view *v = j->v;
    double mean, var, inv, sum_dy = 0.0, sum_dy_xhat = 0.0, k;
    double members = (double)s->members;

    if (v[BN_SAVE_MEAN].ptr != 0) {
        mean = at_view(at, v, BN_SAVE_MEAN, g);
        inv = at_view(at, v, BN_SAVE_INV, g);
    } else {
        bn_moments(j, at, s, g, &mean, &var);
        inv = 1.0 / sqrt(var + j->epsilon);
    }
    for (size_t m = 0; m < s->members; m++) {
        size_t lin = bn_index(s, g, m);
        double dy = at_view(at, v, BN_DY, lin);

        sum_dy += dy;
        sum_dy_xhat += dy * (at_view(at, v, BN_X, lin) - mean) * inv;
    }
    k = at_view(at, v, BN_SCALE, g) * inv / members;
    for (size_t m = 0; m < s->members; m++) {
        size_t lin = bn_index(s, g, m);
        double xhat = (at_view(at, v, BN_X, lin) - mean) * inv;
        double dy = at_view(at, v, BN_DY, lin);

        emu_dnn_blendd(at[BN_DX], emu_dnn_view_offset(&v[BN_DX], lin),
                       v[BN_DX].type, j->alpha, j->beta,
                       k * (members * dy - sum_dy - xhat * sum_dy_xhat));
    }
    emu_dnn_blendd(at[BN_DSCALE], emu_dnn_view_offset(&v[BN_DSCALE], g),
                   v[BN_DSCALE].type, j->alpha_param, j->beta_param,
                   sum_dy_xhat);
    emu_dnn_blendd(at[BN_DBIAS], emu_dnn_view_offset(&v[BN_DBIAS], g),
                   v[BN_DBIAS].type, j->alpha_param, j->beta_param, sum_dy);
}

static CUresult
bn_run(void *arg)
{
    const struct bn_job *j = arg;
    struct bn_shape s;
    void *at[BN_NVIEWS];

    if (map_views(j->v, BN_NVIEWS, at) != 0)
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS, "cudnnBatchNorm",
                           "a tensor is not in device memory");
    bn_shape_of(j, &s);
    for (size_t g = 0; g < s.groups; g++) {
        if (j->kind == BN_TRAIN) {
            bn_train_group(j, at, &s, g);
        } else if (j->kind == BN_INFER) {
            double var = at_view(at, j->v, BN_VAR, g);
            bn_normalise(j, at, &s, g, at_view(at, j->v, BN_MEAN, g),
                         1.0 / sqrt(j->epsilon + var));
        } else {
            bn_backward_group(j, at, &s, g);
        }
    }
    return CUDA_SUCCESS;
}

/* A batch normalisation call as its entry point gives it. */
struct bn_call {
    const char *api;
    enum bn_kind kind;
    cudnnHandle_t handle;
    cudnnBatchNormMode_t mode;
    const void *alpha, *beta, *alpha_param, *beta_param;
    cudnnTensorDescriptor_t desc[BN_NVIEWS];    /* NULL: no such tensor */
    const void *data[BN_NVIEWS];
    double factor, epsilon;
};

/* The parameters' descriptor: 1 x C x 1 x 1 (x 1) spatially, 1 x C x H x W
 * (x D) per activation; FLOAT, or DOUBLE for DOUBLE data. */
static cudnnStatus_t
bn_param_check(const char *api, cudnnBatchNormMode_t mode,
               cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t p)
{
    cudnnDataType_t want = x->type == CUDNN_DATA_DOUBLE ? CUDNN_DATA_DOUBLE
                                                        : CUDNN_DATA_FLOAT;

    if (p->nb_dims != x->nb_dims || p->dim[0] != 1 || p->dim[1] != x->dim[1])
        return BAD("%s: the parameters are not 1 x C x ...", api);
    for (int d = 2; d < x->nb_dims; d++) {
        int size = mode == CUDNN_BATCHNORM_PER_ACTIVATION ? x->dim[d] : 1;
        if (p->dim[d] != size)
            return BAD("%s: parameter dimension %d is %d, not %d", api, d,
                       p->dim[d], size);
    }
    if (p->type != want)
        return BAD("%s: parameters of type %d, not %d", api, (int)p->type,
                   (int)want);
    return CUDNN_STATUS_SUCCESS;
}

/* Tensors: data (x, y, dy, dx) of x's type and sizes, in place only with
 * the same strides; parameters as above. Pairs that must be given or
 * omitted together, the mode, epsilon and the NULL pointers are checked
 * by the caller's table. */
static cudnnStatus_t
bn_check(const struct bn_call *c)
{
    cudnnTensorDescriptor_t x = c->desc[BN_X];
    int out = c->kind == BN_BACKWARD ? BN_DX : BN_Y;

    if (c->mode != CUDNN_BATCHNORM_PER_ACTIVATION &&
        c->mode != CUDNN_BATCHNORM_SPATIAL &&
        c->mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT)
        return BAD("%s: invalid mode %d", c->api, (int)c->mode);
    for (int i = 0; i < BN_NVIEWS; i++) {
        if (c->desc[i] != NULL && !emu_dnn_tensor_ok(c->desc[i]))
            return BAD("%s: invalid tensor descriptor", c->api);
    }
    if (c->alpha == NULL || c->beta == NULL ||
        (c->kind == BN_BACKWARD &&
         (c->alpha_param == NULL || c->beta_param == NULL)))
        return NULL_POINTER("%s: a scaling factor is NULL", c->api);
    if (x->nb_dims != 4 && x->nb_dims != 5)
        return BAD("%s: x has %d dimensions (4 or 5)", c->api, x->nb_dims);
    if (!(c->epsilon >= CUDNN_BN_MIN_EPSILON))
        return BAD("%s: epsilon %g below CUDNN_BN_MIN_EPSILON", c->api,
                   c->epsilon);
    for (int i = BN_Y; i <= BN_DX; i++) {
        if (c->desc[i] == NULL)
            continue;
        if (c->desc[i]->type != x->type || !emu_dnn_same_dims(c->desc[i], x))
            return BAD("%s: data tensors differ in type or sizes", c->api);
    }
    for (int i = BN_X; i <= BN_DY; i++) {
        if (c->desc[i] != NULL && c->data[i] == c->data[out] &&
            i != out && !emu_dnn_same_strides(c->desc[i], c->desc[out]))
            return BAD("%s: in-place call with different strides", c->api);
    }
    for (int i = BN_SCALE; i < BN_NVIEWS; i++) {
        cudnnStatus_t st;

        if (c->desc[i] == NULL)
            continue;
        st = bn_param_check(c->api, c->mode, x, c->desc[i]);
        if (st != CUDNN_STATUS_SUCCESS)
            return st;
    }
    return emu_dnn_type_ok(x, c->api);
}

static cudnnStatus_t
bn_submit(const struct bn_call *c)
{
    struct emu_dnn_config cfg;
    struct bn_job *job;
    cudnnDataType_t type = c->desc[BN_X]->type;
    cudnnStatus_t st = emu_dnn_config(c->handle, &cfg);

    if (st == CUDNN_STATUS_SUCCESS)
        st = bn_check(c);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    for (int i = 0; i < BN_NVIEWS; i++) {
        if (c->desc[i] != NULL && c->data[i] != NULL)
            emu_dnn_view_tensor(&job->v[i], c->desc[i], c->data[i]);
    }
    job->kind = c->kind;
    job->mode = c->mode;
    job->alpha = emu_dnn_scalar(c->alpha, type);
    job->beta = emu_dnn_scalar(c->beta, type);
    if (c->kind == BN_BACKWARD) {
        job->alpha_param = emu_dnn_scalar(c->alpha_param, type);
        job->beta_param = emu_dnn_scalar(c->beta_param, type);
    }
    job->factor = c->factor;
    job->epsilon = c->epsilon;
    /* x is read twice (statistics, then the output). */
    return emu_dnn_submit(&cfg, c->api, bn_run, free, job,
                          8.0 * (double)emu_dnn_view_count(&job->v[BN_X]),
                          views_bytes(job->v, BN_NVIEWS) +
                              emu_dnn_view_bytes(&job->v[BN_X]));
}

/* The tensors that must not be NULL, and pairs given or omitted together;
 * -1 ends a list. */
static cudnnStatus_t
bn_pointers(const struct bn_call *c, const int *required, const int *pairs)
{
    for (; *required >= 0; required++) {
        if (c->data[*required] == NULL)
            return NULL_POINTER("%s: a required tensor is NULL", c->api);
    }
    for (; *pairs >= 0; pairs += 2) {
        if ((c->data[pairs[0]] == NULL) != (c->data[pairs[1]] == NULL))
            return BAD("%s: exactly one of a pair of optional tensors is "
                       "NULL", c->api);
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha,
    const void *beta, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc,
    const void *bnScale, const void *bnBias,
    double exponentialAverageFactor, void *resultRunningMean,
    void *resultRunningVariance, double epsilon, void *resultSaveMean,
    void *resultSaveInvVariance)
{
    static const int required[] = { BN_X, BN_Y, BN_SCALE, BN_BIAS, -1 };
    static const int pairs[] = { BN_MEAN, BN_VAR, BN_SAVE_MEAN, BN_SAVE_INV,
                                 -1 };
    const cudnnTensorDescriptor_t p = bnScaleBiasMeanVarDesc;
    struct bn_call c = {
        "cudnnBatchNormalizationForwardTraining", BN_TRAIN, handle, mode,
        alpha, beta, NULL, NULL,
        { xDesc, yDesc, NULL, NULL, p, p, p, p, p, p },
        { x, y, NULL, NULL, bnScale, bnBias, resultRunningMean,
          resultRunningVariance, resultSaveMean, resultSaveInvVariance },
        exponentialAverageFactor, epsilon,
    };
    cudnnStatus_t st = bn_pointers(&c, required, pairs);

    if (st == CUDNN_STATUS_SUCCESS && (!emu_dnn_tensor_ok(xDesc) ||
                                       !emu_dnn_tensor_ok(yDesc) ||
                                       !emu_dnn_tensor_ok(p)))
        st = BAD("%s: invalid tensor descriptor", c.api);
    return st == CUDNN_STATUS_SUCCESS ? bn_submit(&c) : st;
}

cudnnStatus_t
cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha,
    const void *beta, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t yDesc, void *y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc,
    const void *bnScale, const void *bnBias, const void *estimatedMean,
    const void *estimatedVariance, double epsilon)
{
    static const int required[] = { BN_X, BN_Y, BN_SCALE, BN_BIAS, BN_MEAN,
                                    BN_VAR, -1 };
    static const int pairs[] = { -1 };
    const cudnnTensorDescriptor_t p = bnScaleBiasMeanVarDesc;
    struct bn_call c = {
        "cudnnBatchNormalizationForwardInference", BN_INFER, handle, mode,
        alpha, beta, NULL, NULL,
        { xDesc, yDesc, NULL, NULL, p, p, p, p },
        { x, y, NULL, NULL, bnScale, bnBias, estimatedMean,
          estimatedVariance },
        0.0, epsilon,
    };
    cudnnStatus_t st = bn_pointers(&c, required, pairs);

    if (st == CUDNN_STATUS_SUCCESS && (!emu_dnn_tensor_ok(xDesc) ||
                                       !emu_dnn_tensor_ok(yDesc) ||
                                       !emu_dnn_tensor_ok(p)))
        st = BAD("%s: invalid tensor descriptor", c.api);
    return st == CUDNN_STATUS_SUCCESS ? bn_submit(&c) : st;
}

cudnnStatus_t
cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode,
    const void *alphaDataDiff, const void *betaDataDiff,
    const void *alphaParamDiff, const void *betaParamDiff,
    const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnTensorDescriptor_t dxDesc, void *dx,
    const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScale,
    void *dBnScaleResult, void *dBnBiasResult, double epsilon,
    const void *savedMean, const void *savedInvVariance)
{
    static const int required[] = { BN_X, BN_DY, BN_DX, BN_SCALE, BN_DSCALE,
                                    BN_DBIAS, -1 };
    static const int pairs[] = { BN_SAVE_MEAN, BN_SAVE_INV, -1 };
    const cudnnTensorDescriptor_t p = dBnScaleBiasDesc;
    struct bn_call c = {
        "cudnnBatchNormalizationBackward", BN_BACKWARD, handle, mode,
        alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff,
        { xDesc, NULL, dyDesc, dxDesc, p, NULL, NULL, NULL, p, p, p, p },
        { x, NULL, dy, dx, bnScale, NULL, NULL, NULL, savedMean,
          savedInvVariance, dBnScaleResult, dBnBiasResult },
        0.0, epsilon,
    };
    cudnnStatus_t st = bn_pointers(&c, required, pairs);

    if (st == CUDNN_STATUS_SUCCESS && (!emu_dnn_tensor_ok(xDesc) ||
                                       !emu_dnn_tensor_ok(dyDesc) ||
                                       !emu_dnn_tensor_ok(dxDesc) ||
                                       !emu_dnn_tensor_ok(p)))
        st = BAD("%s: invalid tensor descriptor", c.api);
    return st == CUDNN_STATUS_SUCCESS ? bn_submit(&c) : st;
}
