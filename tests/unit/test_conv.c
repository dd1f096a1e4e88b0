/* Unit tests of the convolution path (src/conv.c): the decision, the
 * reduction length, the plan's padded channels-last tensors, the FP16
 * scale bound, and prepare / vendor call (issued here as hooks/cudnn.c
 * issues it) / finish on the emulated driver and cuDNN for every
 * direction and mode against a double reference, the fused forward's
 * output in scratch; failures leave the destination untouched and nothing
 * allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "amp_math.h"
#include "emu_child.h"
#include "measure/harvest.h"
#include "run/conv.h"

#include <cuda.h>
#include <cudnn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUstream stream;
static cudnnHandle_t dnn;
static struct amp_dev *dev;
static struct amp_api_stats stats = AMP_API_STATS_INIT("test_conv");
static const char *const api = "test_conv";

/* ---- A convolution problem (2-d, one layout for all three tensors) ------- */

struct problem {
    int n, c, k, h, w, r, s, pad, stride, dil, groups, nhwc;
    int p, q;                          /* output height and width */
    enum amp_conv_dir dir;
    float alpha, beta;
    float *x, *wt, *y;                 /* host copies */
    CUdeviceptr dx, dw, dy;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
};

static unsigned rng_state = 12345;

static float
uniform(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (float)((rng_state >> 8) & 0xffff) / 65536.0f * 2.0f - 1.0f;
}

static void
strides4(int n, int c, int h, int w, int nhwc, int64_t *st)
{
    (void)n;
    if (nhwc) {
        st[1] = 1; st[3] = c; st[2] = (int64_t)c * w; st[0] = (int64_t)c * w * h;
    } else {
        st[3] = 1; st[2] = w; st[1] = (int64_t)w * h; st[0] = (int64_t)c * w * h;
    }
}

static void
layout4(struct amp_conv_layout *l, int a, int b, int c, int d, int nhwc)
{
    memset(l, 0, sizeof *l);
    l->nb_dims = 4;
    l->dim[0] = a; l->dim[1] = b; l->dim[2] = c; l->dim[3] = d;
    strides4(a, b, c, d, nhwc, l->stride);
}

static size_t
count4(const struct amp_conv_layout *l)
{
    return (size_t)amp_conv_count(l, 0);
}

/* The caller's view of p, as the hook reads it from the descriptors. */
static struct amp_conv_desc
describe(const struct problem *p)
{
    struct amp_conv_desc d;

    memset(&d, 0, sizeof d);
    d.api = api;
    d.stats = &stats;
    d.dir = p->dir;
    d.groups = p->groups;
    layout4(&d.x, p->n, p->c, p->h, p->w, p->nhwc);
    layout4(&d.w, p->k, p->c / p->groups, p->r, p->s, p->nhwc);
    layout4(&d.y, p->n, p->k, p->p, p->q, p->nhwc);
    d.xp = p->dx;
    d.wp = p->dw;
    d.yp = p->dy;
    d.alpha = p->alpha;
    d.beta = p->beta;
    d.valid = 1;
    d.stream = (amp_stream)stream;
    return d;
}

static float *
out_host(struct problem *p)
{
    return p->dir == AMP_CONV_FWD ? p->y : p->dir == AMP_CONV_BWD_DATA ? p->x
                                                                       : p->wt;
}

static CUdeviceptr
out_dev(const struct problem *p)
{
    return p->dir == AMP_CONV_FWD ? p->dy : p->dir == AMP_CONV_BWD_DATA ? p->dx
                                                                        : p->dw;
}

static void
problem_free(struct problem *p)
{
    free(p->x); free(p->wt); free(p->y);
    cuMemFree(p->dx); cuMemFree(p->dw); cuMemFree(p->dy);
    cudnnDestroyTensorDescriptor(p->xd);
    cudnnDestroyTensorDescriptor(p->yd);
    cudnnDestroyFilterDescriptor(p->wd);
    cudnnDestroyConvolutionDescriptor(p->cd);
}

/* Fills x, w, y with values of magnitude xs, ws, ys (the output with NaN
 * when beta is 0) and uploads them; makes the caller's descriptors. */
static int
problem_make(struct problem *p, float xs, float ws, float ys)
{
    struct amp_conv_desc d;
    size_t nx, nw, ny, i;
    int pads[2] = {p->pad, p->pad}, strides[2] = {p->stride, p->stride};
    int dils[2] = {p->dil, p->dil};
    cudnnTensorFormat_t fmt = p->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    float *out;

    p->p = (p->h + 2 * p->pad - p->dil * (p->r - 1) - 1) / p->stride + 1;
    p->q = (p->w + 2 * p->pad - p->dil * (p->s - 1) - 1) / p->stride + 1;
    d = describe(p);
    nx = count4(&d.x);
    nw = count4(&d.w);
    ny = count4(&d.y);
    p->x = malloc(nx * 4);
    p->wt = malloc(nw * 4);
    p->y = malloc(ny * 4);
    if (!p->x || !p->wt || !p->y)
        return -1;
    for (i = 0; i < nx; i++) p->x[i] = uniform() * xs;
    for (i = 0; i < nw; i++) p->wt[i] = uniform() * ws;
    for (i = 0; i < ny; i++) p->y[i] = uniform() * ys;
    out = out_host(p);
    if (p->beta == 0.0f)
        for (i = 0; i < (out == p->x ? nx : out == p->wt ? nw : ny); i++)
            out[i] = NAN;
    if (cuMemAlloc(&p->dx, nx * 4) || cuMemAlloc(&p->dw, nw * 4) ||
        cuMemAlloc(&p->dy, ny * 4) || cuMemcpyHtoD(p->dx, p->x, nx * 4) ||
        cuMemcpyHtoD(p->dw, p->wt, nw * 4) ||
        cuMemcpyHtoD(p->dy, p->y, ny * 4))
        return -1;
    if (cudnnCreateTensorDescriptor(&p->xd) ||
        cudnnCreateTensorDescriptor(&p->yd) ||
        cudnnCreateFilterDescriptor(&p->wd) ||
        cudnnCreateConvolutionDescriptor(&p->cd) ||
        cudnnSetTensor4dDescriptor(p->xd, fmt, CUDNN_DATA_FLOAT, p->n, p->c,
                                   p->h, p->w) ||
        cudnnSetTensor4dDescriptor(p->yd, fmt, CUDNN_DATA_FLOAT, p->n, p->k,
                                   p->p, p->q) ||
        cudnnSetFilter4dDescriptor(p->wd, CUDNN_DATA_FLOAT, fmt, p->k,
                                   p->c / p->groups, p->r, p->s) ||
        cudnnSetConvolutionNdDescriptor(p->cd, 2, pads, strides, dils,
                                        CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT) ||
        cudnnSetConvolutionGroupCount(p->cd, p->groups))
        return -1;
    return 0;
}

/* Every product once, with magnitudes, into the direction's output. */
static void
reference(const struct problem *p, double *sum, double *mag)
{
    struct amp_conv_desc d = describe(p);
    int cg = p->c / p->groups, kg = p->k / p->groups;

    for (int n = 0; n < p->n; n++)
    for (int k = 0; k < p->k; k++)
    for (int i = 0; i < p->p; i++)
    for (int j = 0; j < p->q; j++)
    for (int cl = 0; cl < cg; cl++)
    for (int r = 0; r < p->r; r++)
    for (int s = 0; s < p->s; s++) {
        int c = k / kg * cg + cl;
        int hi = i * p->stride - p->pad + r * p->dil;
        int wi = j * p->stride - p->pad + s * p->dil;
        int64_t ax[4] = {n, c, hi, wi}, aw[4] = {k, cl, r, s};
        int64_t ay[4] = {n, k, i, j};
        int64_t xo, wo, yo, at;
        double prod;

        if (hi < 0 || hi >= p->h || wi < 0 || wi >= p->w)
            continue;
        xo = amp_conv_offset(&d.x, ax);
        wo = amp_conv_offset(&d.w, aw);
        yo = amp_conv_offset(&d.y, ay);
        if (p->dir == AMP_CONV_FWD) {
            prod = (double)p->x[xo] * p->wt[wo];
            at = yo;
        } else if (p->dir == AMP_CONV_BWD_DATA) {
            prod = (double)p->y[yo] * p->wt[wo];
            at = xo;
        } else {
            prod = (double)p->x[xo] * p->y[yo];
            at = wo;
        }
        sum[at] += prod;
        mag[at] += fabs(prod);
    }
}

/* ---- The vendor call, as the hook issues it ------------------------------- */

struct vendor {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t cd;
    int algo;
    size_t bytes;
};

static cudnnDataType_t
vendor_type(enum amp_conv_type t)
{
    return t == AMP_CONV_F16 ? CUDNN_DATA_HALF
           : t == AMP_CONV_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

static cudnnMathType_t
vendor_math(enum amp_conv_math m)
{
    return m == AMP_CONV_MATH_TENSOR_OP ? CUDNN_TENSOR_OP_MATH
           : m == AMP_CONV_MATH_DEFAULT ? CUDNN_DEFAULT_MATH
                                        : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/* The shim's descriptors for the plan (the caller's where it keeps its
 * tensors), and the heuristic's first algorithm with its workspace. */
static void
vendor_make(const struct problem *p, const struct amp_conv_plan *plan,
            struct vendor *v)
{
    cudnnDataType_t t = vendor_type(plan->type);
    const struct amp_conv_tensor *tx = &plan->tensor[AMP_CONV_X];
    const struct amp_conv_tensor *tw = &plan->tensor[AMP_CONV_W];
    const struct amp_conv_tensor *ty = &plan->tensor[AMP_CONV_Y];
    int pads[2] = {p->pad, p->pad}, strides[2] = {p->stride, p->stride};
    int dils[2] = {p->dil, p->dil}, got = 0;

    memset(v, 0, sizeof *v);
    v->x = p->xd;
    v->y = p->yd;
    v->w = p->wd;
    if (plan->own[AMP_CONV_X]) {
        assert_int_equal(cudnnCreateTensorDescriptor(&v->x), 0);
        assert_int_equal(cudnnSetTensorNdDescriptor(v->x, t, tx->nb_dims,
                                                    tx->dim, tx->stride), 0);
    }
    if (plan->own[AMP_CONV_Y]) {
        assert_int_equal(cudnnCreateTensorDescriptor(&v->y), 0);
        assert_int_equal(cudnnSetTensorNdDescriptor(v->y, t, ty->nb_dims,
                                                    ty->dim, ty->stride), 0);
    }
    if (plan->own[AMP_CONV_W]) {
        assert_int_equal(cudnnCreateFilterDescriptor(&v->w), 0);
        assert_int_equal(cudnnSetFilterNdDescriptor(v->w, t, CUDNN_TENSOR_NHWC,
                                                    tw->nb_dims, tw->dim), 0);
    }
    assert_int_equal(cudnnCreateConvolutionDescriptor(&v->cd), 0);
    assert_int_equal(cudnnSetConvolutionNdDescriptor(v->cd, 2, pads, strides,
                                                     dils,
                                                     CUDNN_CROSS_CORRELATION,
                                                     CUDNN_DATA_FLOAT), 0);
    assert_int_equal(cudnnSetConvolutionGroupCount(v->cd, p->groups), 0);
    assert_int_equal(cudnnSetConvolutionMathType(v->cd,
                                                 vendor_math(plan->math)), 0);
    if (p->dir == AMP_CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf;

        assert_int_equal(cudnnGetConvolutionForwardAlgorithm_v7(
                             dnn, v->x, v->w, v->cd, v->y, 1, &got, &perf), 0);
        v->algo = (int)perf.algo;
        v->bytes = perf.memory;
        assert_int_equal(perf.status, 0);
    } else if (p->dir == AMP_CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf;

        assert_int_equal(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                             dnn, v->w, v->y, v->cd, v->x, 1, &got, &perf), 0);
        v->algo = (int)perf.algo;
        v->bytes = perf.memory;
        assert_int_equal(perf.status, 0);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf;

        assert_int_equal(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                             dnn, v->x, v->y, v->cd, v->w, 1, &got, &perf), 0);
        v->algo = (int)perf.algo;
        v->bytes = perf.memory;
        assert_int_equal(perf.status, 0);
    }
    assert_int_equal(got, 1);
}

static void
vendor_free(const struct problem *p, struct vendor *v)
{
    if (v->x != p->xd)
        cudnnDestroyTensorDescriptor(v->x);
    if (v->y != p->yd)
        cudnnDestroyTensorDescriptor(v->y);
    if (v->w != p->wd)
        cudnnDestroyFilterDescriptor(v->w);
    cudnnDestroyConvolutionDescriptor(v->cd);
}

static cudnnStatus_t
vendor_run(const struct problem *p, const struct vendor *v,
           const struct amp_conv_run *run)
{
    void *ws = (void *)(uintptr_t)run->workspace;
    void *x = (void *)(uintptr_t)run->x, *w = (void *)(uintptr_t)run->w;
    void *y = (void *)(uintptr_t)run->y;

    if (p->dir == AMP_CONV_BWD_DATA)
        return cudnnConvolutionBackwardData(
            dnn, run->alpha, v->w, w, v->y, y, v->cd,
            (cudnnConvolutionBwdDataAlgo_t)v->algo, ws, run->workspace_bytes,
            run->beta, v->x, x);
    if (p->dir == AMP_CONV_BWD_FILTER)
        return cudnnConvolutionBackwardFilter(
            dnn, run->alpha, v->x, x, v->y, y, v->cd,
            (cudnnConvolutionBwdFilterAlgo_t)v->algo, ws, run->workspace_bytes,
            run->beta, v->w, w);
    return cudnnConvolutionForward(
        dnn, run->alpha, v->x, x, v->w, w, v->cd,
        (cudnnConvolutionFwdAlgo_t)v->algo, ws, run->workspace_bytes,
        run->beta, v->y, y);
}

/* The caller's FP32 call (shadow's original). */
static cudnnStatus_t
original_run(const struct problem *p)
{
    struct amp_conv_run run;
    struct vendor v;
    struct amp_conv_plan plan;
    struct amp_conv_desc d = describe(p);
    CUdeviceptr ws = 0;
    cudnnStatus_t s;

    memset(&run, 0, sizeof run);
    memset(&plan, 0, sizeof plan);
    plan.math = AMP_CONV_MATH_DEFAULT;
    vendor_make(p, &plan, &v);
    if (v.bytes)
        assert_int_equal(cuMemAlloc(&ws, v.bytes), CUDA_SUCCESS);
    run.x = d.xp;
    run.w = d.wp;
    run.y = d.yp;
    run.workspace = ws;
    run.workspace_bytes = v.bytes;
    run.alpha = &p->alpha;
    run.beta = &p->beta;
    s = vendor_run(p, &v, &run);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    cuMemFree(ws);
    vendor_free(p, &v);
    return s;
}

/* Plans, prepares, issues and finishes p in mode as a call from site
 * (NULL: none): the first step's failure, AMP_ERR_DRIVER for the vendor
 * call's, or AMP_OK. */
static enum amp_status
convert_at(const struct problem *p, struct amp_site *site,
           enum amp_mode mode, enum amp_mode candidate, uint64_t scratch_max,
           struct amp_conv_run *run)
{
    struct amp_conv_desc d = describe(p);
    struct amp_conv_plan plan;
    struct vendor v;
    enum amp_status st;

    d.site = site;
    st = amp_conv_plan(&d, mode, candidate, &plan);
    if (st != AMP_OK)
        return st;
    vendor_make(p, &plan, &v);
    st = amp_conv_prepare(dev, &d, &plan, v.bytes, scratch_max, 0, run);
    if (st == AMP_OK && vendor_run(p, &v, run) != CUDNN_STATUS_SUCCESS) {
        amp_conv_abandon(run);
        st = AMP_ERR_DRIVER;
    } else if (st == AMP_OK) {
        st = amp_conv_finish(run);
    }
    vendor_free(p, &v);
    return st;
}

static enum amp_status
convert(const struct problem *p, enum amp_mode mode, enum amp_mode candidate,
        uint64_t scratch_max, struct amp_conv_run *run)
{
    return convert_at(p, NULL, mode, candidate, scratch_max, run);
}

/* The device layer's delayed-scaling records, made once per context on
 * the first FP16 call and kept for its life: made before a test counts
 * free memory. */
static void
records_made(void)
{
    amp_devptr at;
    int fresh;

    assert_int_equal(amp_dev_record(dev, 1, stream, AMP_CAPTURE_ASK,
                                    &at, &fresh), AMP_OK);
    amp_dev_record_drop(dev, at, 1, stream);
}

static int
setup(void **state)
{
    CUcontext ctx;
    CUdevice d;

    (void)state;
    if (cuInit(0) || cuDeviceGet(&d, 0) ||
        cuDevicePrimaryCtxRetain(&ctx, d) || cuCtxSetCurrent(ctx) ||
        cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))
        return -1;
    if (cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS ||
        cudnnSetStream(dnn, (cudaStream_t)stream) != CUDNN_STATUS_SUCCESS)
        return -1;
    dev = amp_dev_current();
    return dev ? 0 : -1;
}

/* ---- Decision, reduction length and plan ---------------------------------- */

static const struct problem base = {
    .n = 2, .c = 13, .k = 6, .h = 7, .w = 6, .r = 3, .s = 3, .pad = 1,
    .stride = 1, .dil = 1, .groups = 1, .alpha = 1.0f,
};

static void
test_decide(void **state)
{
    struct problem p = base;
    struct amp_conv_desc d;
    struct amp_site *site;

    (void)state;
    p.p = 7;
    p.q = 6;
    d = describe(&p);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16), AMP_CONV_CONVERT);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_BF16), AMP_CONV_CONVERT);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_TF32), AMP_CONV_CONVERT);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_ALLOW_CONVERSION),
                     AMP_CONV_CONVERT);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_SHADOW), AMP_CONV_CONVERT);
    /* fp16x3 has no convolution form: FP32. */
    assert_int_equal(amp_conv_mode(AMP_MODE_FP16X3), AMP_MODE_FP32);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16X3), AMP_CONV_SKIP_MODE);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP32), AMP_CONV_SKIP_MODE);
    /* FMA math goes to the policy, which keeps it FP32 unless a rule
     * names `math` (test_policy). */
    d.strict = 1;
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16), AMP_CONV_CONVERT);
    d.strict = 0;
    /* A backend plan on an engine without Tensor Cores: its own reason. */
    d.no_tc_engine = 1;
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16),
                     AMP_CONV_SKIP_NO_TC_ENGINE);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP32), AMP_CONV_SKIP_MODE);
    d.no_tc_engine = 0;
    /* A backend plan fused with pointwise operations: never converted,
     * its own reason. */
    d.fused_graph = 1;
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16),
                     AMP_CONV_SKIP_FUSED_GRAPH);
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_SHADOW),
                     AMP_CONV_SKIP_FUSED_GRAPH);
    d.fused_graph = 0;
    d.alpha = 0.0f;
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16), AMP_CONV_SKIP_EMPTY);
    d.alpha = 1.0f;
    d.x.dim[0] = 0;
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16), AMP_CONV_SKIP_EMPTY);
    d = describe(&p);
    /* Invalid comes first, whatever the mode: cuDNN must say so. */
    d.valid = 0;
    d.strict = 1;
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP32),
                     AMP_CONV_SKIP_INVALID);
    d = describe(&p);
    site = amp_site_get(api, (const void *)&stats);
    assert_non_null(site);
    d.site = site;
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16), AMP_CONV_CONVERT);
    amp_site_demote(site, -1, "test");
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16),
                     AMP_CONV_SKIP_DEMOTED);
    assert_string_equal(amp_conv_skip_reason(AMP_CONV_SKIP_DEMOTED),
                        "site demoted");
    assert_string_equal(amp_conv_skip_reason(AMP_CONV_SKIP_COUNT), "?");
}

static void
test_reduction(void **state)
{
    struct problem p = base;
    struct amp_conv_desc d;

    (void)state;
    p.c = 12;
    p.k = 8;
    p.groups = 4;
    p.p = 5;
    p.q = 4;
    d = describe(&p);
    d.dir = AMP_CONV_FWD;
    assert_int_equal(amp_conv_reduction(&d), 3 * 3 * 3);      /* C/g R S */
    d.dir = AMP_CONV_BWD_DATA;
    assert_int_equal(amp_conv_reduction(&d), 2 * 3 * 3);      /* K/g R S */
    d.dir = AMP_CONV_BWD_FILTER;
    assert_int_equal(amp_conv_reduction(&d), 2 * 5 * 4);      /* N P Q */
}

/* Channels padded to 8 per group in the half copies (C of 13 -> 16; 4
 * groups of 3 -> 4 groups of 8), the filter's K per group too, never N;
 * packed channels last; which tensors are the shim's per mode. */
static void
test_plan(void **state)
{
    struct problem p = base;
    struct amp_conv_desc d;
    struct amp_conv_plan plan;

    (void)state;
    p.p = 7;
    p.q = 6;
    d = describe(&p);
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_FP16, AMP_MODE_FP16, &plan),
                     AMP_OK);
    assert_int_equal(plan.type, AMP_CONV_F16);
    assert_int_equal(plan.math, AMP_CONV_MATH_TENSOR_OP);
    assert_true(plan.own[0] && plan.own[1] && plan.own[2]);
    /* x: 2 x 16 x 7 x 6 channels last. */
    assert_int_equal(plan.tensor[AMP_CONV_X].dim[0], 2);
    assert_int_equal(plan.tensor[AMP_CONV_X].dim[1], 16);
    assert_int_equal(plan.tensor[AMP_CONV_X].stride[1], 1);
    assert_int_equal(plan.tensor[AMP_CONV_X].stride[3], 16);
    assert_int_equal(plan.tensor[AMP_CONV_X].stride[2], 16 * 6);
    assert_int_equal(plan.tensor[AMP_CONV_X].stride[0], 16 * 6 * 7);
    /* w: K 6 -> 8, C 13 -> 16; y: N 2, K 6 -> 8. */
    assert_int_equal(plan.tensor[AMP_CONV_W].dim[0], 8);
    assert_int_equal(plan.tensor[AMP_CONV_W].dim[1], 16);
    assert_int_equal(plan.tensor[AMP_CONV_Y].dim[0], 2);
    assert_int_equal(plan.tensor[AMP_CONV_Y].dim[1], 8);
    assert_int_equal(amp_conv_count(&plan.x, 1), 2 * 16 * 7 * 6);
    assert_int_equal(amp_conv_count(&plan.x, 0), 2 * 13 * 7 * 6);

    p.c = 12;
    p.k = 8;
    p.groups = 4;
    d = describe(&p);
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_BF16, AMP_MODE_FP16, &plan),
                     AMP_OK);
    assert_int_equal(plan.type, AMP_CONV_BF16);
    assert_int_equal(plan.x.per[1], 3);
    assert_int_equal(plan.x.per_pad[1], 8);
    assert_int_equal(plan.tensor[AMP_CONV_X].dim[1], 32);
    assert_int_equal(plan.tensor[AMP_CONV_W].dim[0], 32); /* 4 x (2 -> 8) */
    assert_int_equal(plan.tensor[AMP_CONV_W].dim[1], 8);
    assert_int_equal(plan.tensor[AMP_CONV_Y].dim[1], 32);

    /* tf32 and allow-conversion with beta 0 read and write the caller's
     * tensors (allow-conversion checks the caller's dense output in
     * place); with another beta, or an output with gaps for
     * allow-conversion, and in shadow, they write into the shim's FP32
     * output (to blend, for the check, or beside the original). Nothing
     * padded in FP32. */
    d.dir = AMP_CONV_BWD_DATA;
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_TF32, AMP_MODE_FP16, &plan),
                     AMP_OK);
    assert_int_equal(plan.type, AMP_CONV_F32);
    assert_int_equal(plan.math, AMP_CONV_MATH_DEFAULT);
    assert_true(!plan.own[0] && !plan.own[1] && !plan.own[2]);
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_ALLOW_CONVERSION,
                                   AMP_MODE_FP16, &plan), AMP_OK);
    assert_int_equal(plan.math, AMP_CONV_MATH_ALLOW_CONVERSION);
    assert_true(!plan.own[0] && !plan.own[1] && !plan.own[2]);
    d.beta = 0.5f;
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_ALLOW_CONVERSION,
                                   AMP_MODE_FP16, &plan), AMP_OK);
    assert_true(plan.own[AMP_CONV_X] && !plan.own[AMP_CONV_W] &&
                !plan.own[AMP_CONV_Y]);
    assert_int_equal(plan.tensor[AMP_CONV_X].dim[1], 12);
    d.beta = 0.0f;
    d.x.stride[0] += 5; /* a gap after each image */
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_ALLOW_CONVERSION,
                                   AMP_MODE_FP16, &plan), AMP_OK);
    assert_true(plan.own[AMP_CONV_X] && !plan.own[AMP_CONV_Y]);
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_TF32, AMP_MODE_FP16, &plan),
                     AMP_OK);
    assert_true(!plan.own[AMP_CONV_X]);
    d.x.stride[0] -= 5;
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_SHADOW, AMP_MODE_TF32, &plan),
                     AMP_OK);
    assert_int_equal(plan.candidate, AMP_MODE_TF32);
    assert_true(plan.own[AMP_CONV_X]);
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_SHADOW, AMP_MODE_FP16X3,
                                   &plan), AMP_ERR_UNAVAILABLE);
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_FP32, AMP_MODE_FP16, &plan),
                     AMP_ERR_UNAVAILABLE);
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_FP16X3, AMP_MODE_FP16, &plan),
                     AMP_ERR_UNAVAILABLE);
    /* tf32x3: FP32 copies of both inputs with the reduction axis three
     * times as long (forward C, backward data K, backward filter N), the
     * output as tf32's (the caller's, beta 0); one group only. */
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_TF32X3, AMP_MODE_FP16, &plan),
                     AMP_ERR_UNAVAILABLE);
    {
        static const int axis[3][4] = {
            /* input a, its dim, input b, its dim */
            {AMP_CONV_X, 1, AMP_CONV_W, 1},
            {AMP_CONV_Y, 1, AMP_CONV_W, 0},
            {AMP_CONV_X, 0, AMP_CONV_Y, 0},
        };
        struct problem one = base;

        for (int dir = 0; dir < 3; dir++) {
            struct amp_conv_desc e;
            const int *ax = axis[dir];
            int out = dir == AMP_CONV_FWD ? AMP_CONV_Y
                      : dir == AMP_CONV_BWD_DATA ? AMP_CONV_X : AMP_CONV_W;

            one.p = 7;
            one.q = 6;
            one.dir = (enum amp_conv_dir)dir;
            e = describe(&one);
            assert_int_equal(amp_conv_plan(&e, AMP_MODE_TF32X3,
                                           AMP_MODE_FP16, &plan), AMP_OK);
            assert_int_equal(plan.type, AMP_CONV_F32);
            assert_int_equal(plan.math, AMP_CONV_MATH_DEFAULT);
            assert_true(plan.own[ax[0]] && plan.own[ax[2]] && !plan.own[out]);
            for (int k = 0; k < 4; k += 2) {
                const struct amp_conv_layout *l =
                    ax[k] == AMP_CONV_X ? &e.x
                    : ax[k] == AMP_CONV_W ? &e.w : &e.y;
                int d0 = ax[k + 1];

                assert_int_equal(plan.tensor[ax[k]].dim[d0], 3 * l->dim[d0]);
                assert_int_equal(plan.tensor[ax[k]].dim[1 - d0],
                                 l->dim[1 - d0]);
            }
        }
    }
    /* Beyond cuDNN's int sizes. */
    d.x.dim[0] = (int64_t)1 << 31;
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_FP16, AMP_MODE_FP16, &plan),
                     AMP_ERR_TOO_BIG);
}

/* ---- The FP16 scale bound ------------------------------------------------- */

/* For maxima from FP32's smallest subnormal to its largest finite value
 * and reduction lengths up to 2^40: each scaled maximum rounds to a finite
 * FP16 value, and |output| <= rounded max_a * rounded max_b * 2^log2_len
 * stays below FP16's largest finite value, whenever the FP32 output
 * (max_a max_b 2^log2_len) is finite: no FP16 overflow by construction. */
static void
test_scale_bound(void **state)
{
    static const float maxima[] = {
        0x1p-149f, 0x1p-126f, 1e-30f, 0x1p-20f, 0.75f, 1.0f, 1.5f, 65504.0f,
        1e5f, 1e20f, 0x1p100f, 3e38f, FLT_MAX,
    };
    size_t n = sizeof maxima / sizeof *maxima, i, j;
    double worst = 0.0;

    (void)state;
    for (int log2_len = 0; log2_len <= 40; log2_len++)
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) {
                struct amp_conv_scalars s;
                double a, b, bound, fp32;

                memset(&s, 0, sizeof s);
                s.absmax_a = amp_f32_bits(maxima[i]);
                s.absmax_b = amp_f32_bits(maxima[j]);
                amp_conv_scalars_finish(&s, log2_len, AMP_FORMAT_F16);
                a = amp_f16_to_f32(amp_f32_to_f16(maxima[i] * s.scale_a));
                b = amp_f16_to_f32(amp_f32_to_f16(maxima[j] * s.scale_b));
                if (!isfinite(a) || !isfinite(b))
                    fail_msg("max_a %g max_b %g len 2^%d: scaled maxima %g "
                             "and %g", maxima[i], maxima[j], log2_len, a, b);
                /* The scales are exact inverses where not clamped. */
                assert_true((double)s.scale_a * s.unscale_a == 1.0 ||
                            s.exp_a == 127 || s.exp_a == -126);
                fp32 = (double)maxima[i] * maxima[j] * ldexp(1.0, log2_len);
                if (fp32 > FLT_MAX)
                    continue;
                bound = a * b * ldexp(1.0, log2_len);
                if (bound > worst)
                    worst = bound;
                if (bound > 65504.0)
                    fail_msg("max_a %g max_b %g len 2^%d: scaled %g x %g, "
                             "output up to %g overflows FP16", maxima[i],
                             maxima[j], log2_len, a, b, bound);
            }
    assert_true(worst <= 0x1p15 + 0x1p5);
    /* bf16 and fp32 keep FP32's range: no scaling. */
    {
        struct amp_conv_scalars s;

        memset(&s, 0, sizeof s);
        s.absmax_a = amp_f32_bits(FLT_MAX);
        s.absmax_b = amp_f32_bits(1e-30f);
        amp_conv_scalars_finish(&s, 20, AMP_FORMAT_BF16);
        assert_true(s.scale_a == 1.0f && s.scale_b == 1.0f);
    }
}

/* ---- Converted calls on the emulator --------------------------------------- */

#define U32 0x1p-24

/* err <= bound * (rel + 2 len u32) element-wise, against the reference
 * of p's host data; NaN exactly where the reference has it. Returns the
 * worst error / bound. */
static double
check_output(const struct problem *p, const float *got, double rel)
{
    struct amp_conv_desc d = describe(p);
    const struct amp_conv_layout *l = p->dir == AMP_CONV_FWD ? &d.y
                                      : p->dir == AMP_CONV_BWD_DATA ? &d.x
                                                                    : &d.w;
    size_t n = count4(l), i;
    double *sum = calloc(n, sizeof *sum), *mag = calloc(n, sizeof *mag);
    const float *old = out_host((struct problem *)p);
    double len = (double)amp_conv_reduction(&d), worst = 0.0;

    assert_non_null(sum);
    assert_non_null(mag);
    reference(p, sum, mag);
    for (i = 0; i < n; i++) {
        double ref = p->alpha * sum[i], bound = fabs(p->alpha) * mag[i];

        if (p->beta != 0.0f) {
            ref += (double)p->beta * old[i];
            bound += fabs((double)p->beta * old[i]);
        }
        bound *= rel + 2.0 * len * U32;
        if (isnan(ref)) {
            assert_true(isnan(got[i]));
            continue;
        }
        if (!isfinite(got[i]) || fabs(got[i] - ref) > bound)
            fail_msg("element %zu: %.9g, reference %.9g, bound %.3g", i,
                     (double)got[i], ref, bound);
        if (bound > 0 && fabs(got[i] - ref) / bound > worst)
            worst = fabs(got[i] - ref) / bound;
    }
    free(sum);
    free(mag);
    return worst;
}

static void
download(const struct problem *p, float *got)
{
    struct amp_conv_desc d = describe(p);
    size_t n = count4(p->dir == AMP_CONV_FWD ? &d.y
                      : p->dir == AMP_CONV_BWD_DATA ? &d.x : &d.w);

    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(got, out_dev(p), n * 4), CUDA_SUCCESS);
}

/* Relative bound per mode: input rounding of both operands (u each) plus,
 * for half data, the half output's rounding. */
static double
mode_rel(enum amp_mode mode)
{
    switch (mode) {
    case AMP_MODE_FP16: return 2 * 0x1p-11 + 0x1p-11;
    case AMP_MODE_BF16: return 2 * 0x1p-8 + 0x1p-8;
    /* hi hi + hi lo + lo hi: lo lo dropped and each lo rounded to TF32,
     * 2^-22 each, well within 2^-20 */
    case AMP_MODE_TF32X3: return 0x1p-20;
    default: return 2 * 0x1p-11; /* tf32, allow-conversion */
    }
}

struct geometry {
    int c, k, groups, nhwc, stride, dil, pad;
    float alpha, beta;
};

static const struct geometry geometries[] = {
    {13, 6, 1, 0, 1, 1, 1, 1.0f, 0.0f},       /* padded C and K, NCHW */
    {12, 8, 4, 1, 2, 1, 1, 0.5f, 0.25f},      /* groups of 3 and 2, NHWC */
    {8, 8, 1, 1, 1, 2, 2, -1.5f, 0.0f},       /* no padding needed, dilated */
    {3, 5, 1, 0, 1, 1, 0, 1.0f, 1.0f},        /* 3 channels, pad 0 */
};

static const enum amp_mode modes[] = {
    AMP_MODE_FP16, AMP_MODE_BF16, AMP_MODE_TF32, AMP_MODE_ALLOW_CONVERSION,
    AMP_MODE_TF32X3,
};

static void
make_geometry(struct problem *p, const struct geometry *g,
              enum amp_conv_dir dir, float xs, float ws, float ys)
{
    *p = base;
    p->c = g->c;
    p->k = g->k;
    p->groups = g->groups;
    p->nhwc = g->nhwc;
    p->stride = g->stride;
    p->dil = g->dil;
    p->pad = g->pad;
    p->alpha = g->alpha;
    p->beta = g->beta;
    p->dir = dir;
    assert_int_equal(problem_make(p, xs, ws, ys), 0);
}

/* Every direction, mode and geometry within its bound (tf32x3 within
 * 2^-20 of each product, FP32's accuracy where tf32 is held to 2^-10);
 * beta 0 never reads the NaN-filled destination; the scratch is given
 * back. */
static void
test_paths_within_bounds(void **state)
{
    double worst[5] = {0, 0, 0, 0, 0};

    (void)state;
    records_made();
    for (size_t gi = 0; gi < sizeof geometries / sizeof *geometries; gi++)
        for (int dir = 0; dir < 3; dir++)
            for (size_t mi = 0; mi < sizeof modes / sizeof *modes; mi++) {
                struct problem p;
                struct amp_conv_run run;
                float *got;
                size_t free0, free1, total;
                double r;

                make_geometry(&p, &geometries[gi], (enum amp_conv_dir)dir,
                              1.0f, 1.0f, 1.0f);
                got = malloc(8 << 20);
                assert_non_null(got);
                assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
                assert_int_equal(cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
                /* tf32x3's parts lie along the reduction axis: one group
                 * only, else FP32. */
                if (modes[mi] == AMP_MODE_TF32X3 && p.groups != 1) {
                    assert_int_equal(convert(&p, modes[mi], AMP_MODE_FP16,
                                             1 << 30, &run),
                                     AMP_ERR_UNAVAILABLE);
                    free(got);
                    problem_free(&p);
                    continue;
                }
                assert_int_equal(convert(&p, modes[mi], AMP_MODE_FP16,
                                         1 << 30, &run), AMP_OK);
                download(&p, got);
                amp_harvest(1);
                assert_int_equal(cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
                assert_int_equal(free1, free0);
                r = check_output(&p, got, mode_rel(modes[mi]));
                if (r > worst[mi])
                    worst[mi] = r;
                free(got);
                problem_free(&p);
            }
    print_message("worst error/bound: fp16 %.3f bf16 %.3f tf32 %.3f "
                  "allow-conversion %.3f tf32x3 %.3f\n", worst[0], worst[1],
                  worst[2], worst[3], worst[4]);
}

/* Inputs far outside FP16's range (x about 1e30, w about 1e-30), inputs
 * whose products overflow FP16 many times over (1e3 x 1e3 over a
 * reduction of 64 x 9 = 576 terms: outputs about 1e7), and inputs below
 * FP16's subnormals (1e-15): the scales bring each into range; the result
 * is within the FP16 bound and finite. */
static void
test_range_beyond_fp16(void **state)
{
    static const struct geometry wide = {64, 16, 1, 0, 1, 1, 1, 1.0f, 0.0f};
    static const float scales[][2] = {{1e30f, 1e-30f}, {1e3f, 1e3f},
                                      {1e-15f, 1e-15f}};

    (void)state;
    for (size_t i = 0; i < sizeof scales / sizeof *scales; i++)
        for (int dir = 0; dir < 3; dir++) {
            struct problem p;
            struct amp_conv_run run;
            float *got = malloc(4 << 20);

            assert_non_null(got);
            /* Forward: x, w; backward data: dy, w; filter: x, dy. */
            make_geometry(&p, &wide, (enum amp_conv_dir)dir, scales[i][0],
                          scales[i][1],
                          dir == AMP_CONV_FWD ? 1.0f : scales[i][1]);
            if (dir == AMP_CONV_BWD_DATA) {
                /* dy carries the first scale. */
                for (size_t j = 0; j < (size_t)p.n * p.k * p.p * p.q; j++)
                    p.y[j] = uniform() * scales[i][0];
                assert_int_equal(cuMemcpyHtoD(p.dy, p.y, (size_t)p.n * p.k *
                                              p.p * p.q * 4), CUDA_SUCCESS);
            }
            assert_int_equal(convert(&p, AMP_MODE_FP16, AMP_MODE_FP16,
                                     1 << 30, &run), AMP_OK);
            download(&p, got);
            amp_harvest(1);
            check_output(&p, got, mode_rel(AMP_MODE_FP16));
            free(got);
            problem_free(&p);
        }
}

/* allow-conversion lets cuDNN round FP32 inputs to FP16 itself, without
 * scales: inputs beyond 65504 become Inf there. The check counts the
 * non-finite result from finite inputs and demotes the call's site; FP16
 * mode, scaled, is finite on the same data. */
static void
test_nonfinite_demotes_site(void **state)
{
    static const struct geometry g = {8, 8, 1, 0, 1, 1, 1, 1.0f, 0.0f};
    struct problem p;
    struct amp_conv_run run;
    struct amp_conv_desc d;
    struct amp_site *site = amp_site_get(api, (const void *)&g);
    float *got = malloc(1 << 20);

    (void)state;
    assert_non_null(got);
    assert_non_null(site);
    /* First finite data at another site: its check finds nothing and
     * leaves that site converting (a check that did not run would leave
     * its slot as the last call did). */
    {
        struct amp_site *calm = amp_site_get(api, (const void *)&p);

        assert_non_null(calm);
        make_geometry(&p, &g, AMP_CONV_FWD, 1.0f, 1.0f, 1.0f);
        assert_int_equal(convert_at(&p, calm, AMP_MODE_ALLOW_CONVERSION,
                                    AMP_MODE_FP16, 1 << 30, &run), AMP_OK);
        amp_harvest(1);
        assert_false(amp_site_demoted(calm));
        problem_free(&p);
    }
    make_geometry(&p, &g, AMP_CONV_FWD, 1e6f, 1.0f, 1.0f);
    d = describe(&p);
    d.site = site;
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_ALLOW_CONVERSION),
                     AMP_CONV_CONVERT);
    assert_int_equal(convert_at(&p, site, AMP_MODE_ALLOW_CONVERSION,
                                AMP_MODE_FP16, 1 << 30, &run), AMP_OK);
    download(&p, got);
    amp_harvest(1);
    assert_true(amp_site_demoted(site));
    assert_int_equal(amp_conv_decide(&d, AMP_MODE_FP16),
                     AMP_CONV_SKIP_DEMOTED);
    /* The same data in fp16: scaled, finite, within the bound. */
    assert_int_equal(convert(&p, AMP_MODE_FP16, AMP_MODE_FP16, 1 << 30, &run),
                     AMP_OK);
    download(&p, got);
    amp_harvest(1);
    check_output(&p, got, mode_rel(AMP_MODE_FP16));
    free(got);
    problem_free(&p);
}

/* allow-conversion reads no input before its call (cuDNN rounds them
 * itself): where its check counts non-finite results, the excuse kernel
 * reads the inputs, and an Inf or NaN there makes the results the
 * program's own, which FP32 makes too: no demotion. Each direction, an
 * input of each half of the scan poisoned (x; w; dy); the same site then
 * demotes on an overflow from finite inputs. */
static void
test_nonfinite_inputs_excused(void **state)
{
    static const struct geometry g = {8, 8, 1, 0, 1, 1, 1, 1.0f, 0.0f};
    struct problem p;
    struct amp_conv_run run;
    float *got = malloc(1 << 20);
    int dir;

    (void)state;
    assert_non_null(got);
    for (dir = AMP_CONV_FWD; dir <= AMP_CONV_BWD_FILTER; dir++) {
        struct amp_site *site =
            amp_site_get(api, (const char *)&g + 1 + dir);
        float *in;
        CUdeviceptr at;
        size_t i, n, poisoned = 0;

        assert_non_null(site);
        make_geometry(&p, &g, (enum amp_conv_dir)dir, 1.0f, 1.0f, 1.0f);
        in = dir == AMP_CONV_FWD ? p.x : dir == AMP_CONV_BWD_DATA ? p.wt
                                                                  : p.y;
        at = dir == AMP_CONV_FWD ? p.dx : dir == AMP_CONV_BWD_DATA ? p.dw
                                                                   : p.dy;
        n = dir == AMP_CONV_FWD ? (size_t)p.n * p.c * p.h * p.w
            : dir == AMP_CONV_BWD_DATA ? (size_t)p.k * p.c * p.r * p.s
                                       : (size_t)p.n * p.k * p.p * p.q;
        in[n / 2] = NAN;
        assert_int_equal(cuMemcpyHtoD(at, in, n * 4), CUDA_SUCCESS);
        assert_int_equal(convert_at(&p, site, AMP_MODE_ALLOW_CONVERSION,
                                    AMP_MODE_FP16, 1 << 30, &run),
                         AMP_OK);
        download(&p, got);
        amp_harvest(1);
        /* The NaN reached the output, as it does in FP32. */
        n = dir == AMP_CONV_FWD ? (size_t)p.n * p.k * p.p * p.q
            : dir == AMP_CONV_BWD_DATA ? (size_t)p.n * p.c * p.h * p.w
                                       : (size_t)p.k * p.c * p.r * p.s;
        for (i = 0; i < n; i++)
            poisoned += isnan(got[i]) != 0;
        assert_true(poisoned > 0);
        assert_false(amp_site_demoted(site));
        problem_free(&p);
        /* The same site, finite inputs beyond FP16: demoted. */
        make_geometry(&p, &g, (enum amp_conv_dir)dir, 1e6f, 1e6f, 1e6f);
        assert_int_equal(convert_at(&p, site, AMP_MODE_ALLOW_CONVERSION,
                                    AMP_MODE_FP16, 1 << 30, &run),
                         AMP_OK);
        amp_harvest(1);
        assert_true(amp_site_demoted(site));
        problem_free(&p);
    }
    free(got);
}

/* Delayed scaling of a repeating FP16 convolution: at one site and shape
 * the first call takes the two passes and sets the record, later calls
 * cast in one pass at the last call's exponents. Where a delayed exponent
 * does not stand (the data grew 2^12 times: its copy would overflow FP16's
 * output; it shrank 2^12 times: below the slack) the input is cast again
 * and the output is a first call's (at a site of its own) bit for bit;
 * where it stands (the same data; data that shrank 4 times) the output is
 * the first call's or within FP16's bound. */
static void
test_delayed_scaling(void **state)
{
    static const struct geometry g = {16, 8, 1, 1, 1, 1, 1, 1.0f, 0.0f};
    static const struct {
        float xs;
        int fresh_bits; /* the output is a first call's, bit for bit */
    } steps[] = {
        {1.0f, 1}, {1.0f, 1}, {0x1p12f, 1}, {0x1p10f, 0}, {0x1p-2f, 1},
    };
    static char refs[sizeof steps / sizeof *steps];
    struct amp_site *site = amp_site_get(api, (const void *)&steps);
    size_t n = (size_t)2 * 8 * 7 * 6, i;
    float *got = malloc(n * 4), *want = malloc(n * 4);
    struct amp_conv_run run;
    struct problem p;

    (void)state;
    assert_true(got && want && site);
    for (i = 0; i < sizeof steps / sizeof *steps; i++) {
        struct amp_site *fresh = amp_site_get(api, (const void *)&refs[i]);

        assert_non_null(fresh);
        make_geometry(&p, &g, AMP_CONV_FWD, steps[i].xs, 1.0f, 1.0f);
        assert_int_equal(convert_at(&p, site, AMP_MODE_FP16, AMP_MODE_FP16,
                                    1 << 30, &run), AMP_OK);
        assert_int_equal(run.delayed, i > 0);
        assert_int_equal(amp_conv_warms_up(&run), i == 0);
        download(&p, got);
        check_output(&p, got, mode_rel(AMP_MODE_FP16));
        assert_int_equal(convert_at(&p, fresh, AMP_MODE_FP16, AMP_MODE_FP16,
                                    1 << 30, &run), AMP_OK);
        assert_true(amp_conv_warms_up(&run));
        download(&p, want);
        amp_harvest(1);
        if (steps[i].fresh_bits && memcmp(got, want, n * 4) != 0)
            fail_msg("step %zu (x of magnitude %g): the one-pass output "
                     "differs from a first call's", i, (double)steps[i].xs);
        problem_free(&p);
    }
    assert_false(amp_site_demoted(site));
    free(got);
    free(want);
}

/* Shadow: finish leaves the destination to the original call; after it,
 * the error kernel measures the candidate: one measured call, small
 * nonzero error (fp16), nothing non-finite, and the original's bytes. */
static void
test_shadow(void **state)
{
    static const struct geometry g = {13, 6, 1, 1, 1, 1, 1, 1.0f, 0.5f};
    struct problem p;
    struct amp_conv_run run;
    unsigned long long calls = stats.shadow_calls;
    float *got = malloc(1 << 20), *want = malloc(1 << 20);
    size_t n;

    (void)state;
    assert_non_null(got);
    assert_non_null(want);
    make_geometry(&p, &g, AMP_CONV_BWD_FILTER, 1.0f, 1.0f, 1.0f);
    n = (size_t)p.k * (p.c / p.groups) * p.r * p.s;
    /* The original alone, for its bytes; then back to the start. */
    assert_int_equal(original_run(&p), CUDNN_STATUS_SUCCESS);
    download(&p, want);
    assert_int_equal(cuMemcpyHtoD(p.dw, p.wt, n * 4), CUDA_SUCCESS);
    assert_int_equal(convert(&p, AMP_MODE_SHADOW, AMP_MODE_FP16, 1 << 30,
                             &run), AMP_OK);
    assert_true(run.needs_original);
    download(&p, got);
    assert_memory_equal(got, p.wt, n * 4); /* untouched so far */
    assert_int_equal(original_run(&p), CUDNN_STATUS_SUCCESS);
    assert_int_equal(amp_conv_shadow_finish(&run, 1), AMP_OK);
    download(&p, got);
    amp_harvest(1);
    assert_memory_equal(got, want, n * 4);
    assert_int_equal(stats.shadow_calls, calls + 1);
    assert_int_equal(stats.shadow_nonfinite, 0);
    assert_true(stats.shadow_max_rel > 0.0 && stats.shadow_max_rel < 0x1p-8);
    free(got);
    free(want);
    problem_free(&p);
}

/* Scratch beyond the cap: TOO_BIG before anything is allocated. */
static void
test_scratch_cap(void **state)
{
    static const struct geometry g = {13, 6, 1, 0, 1, 1, 1, 1.0f, 0.0f};
    struct problem p;
    struct amp_conv_run run;
    struct amp_conv_desc d;
    struct amp_conv_plan plan;
    size_t bytes, free0, free1, total;

    (void)state;
    make_geometry(&p, &g, AMP_CONV_FWD, 1.0f, 1.0f, 1.0f);
    d = describe(&p);
    assert_int_equal(amp_conv_plan(&d, AMP_MODE_FP16, AMP_MODE_FP16, &plan),
                     AMP_OK);
    assert_int_equal(amp_conv_prepare(dev, &d, &plan, 4096, 1 << 30, 0, &run),
                     AMP_OK);
    bytes = run.scratch_bytes;
    /* x, w, y half copies, scalars, check counters and the workspace. */
    assert_true(bytes >= 2 * (size_t)(amp_conv_count(&plan.x, 1) +
                                      amp_conv_count(&plan.w, 1) +
                                      amp_conv_count(&plan.y, 1)) + 4096);
    amp_conv_abandon(&run);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
    assert_int_equal(amp_conv_prepare(dev, &d, &plan, 4096, bytes - 1, 0, &run),
                     AMP_ERR_TOO_BIG);
    assert_true(run.scratch == 0 && run.slot < 0);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
    assert_int_equal(free1, free0);
    problem_free(&p);
}

/* The fused forward's output in scratch (beta 0), in fp16 and in tf32
 * (whose vendor call writes the output itself): the caller's y is never
 * written; the convolution lands in the run's scratch, within the bound,
 * and stays there after finish until amp_conv_abandon, which gives the
 * device memory back. */
static void
test_output_in_scratch(void **state)
{
    static const struct geometry g = {13, 6, 1, 1, 1, 1, 1, 1.5f, 0.0f};
    static const enum amp_mode scratch_modes[] = {AMP_MODE_FP16,
                                                  AMP_MODE_TF32};

    (void)state;
    for (size_t mi = 0; mi < 2; mi++) {
        struct problem p;
        struct amp_conv_run run;
        struct amp_conv_desc d;
        struct amp_conv_plan plan;
        struct vendor v;
        size_t n, free0, free1, total;
        float *got;

        make_geometry(&p, &g, AMP_CONV_FWD, 1.0f, 1.0f, 1.0f);
        d = describe(&p);
        d.output_in_scratch = 1;
        n = count4(&d.y);
        got = malloc(n * 4);
        assert_non_null(got);
        assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
        assert_int_equal(cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
        assert_int_equal(amp_conv_plan(&d, scratch_modes[mi], AMP_MODE_FP16,
                                       &plan), AMP_OK);
        vendor_make(&p, &plan, &v);
        assert_int_equal(amp_conv_prepare(dev, &d, &plan, v.bytes, 1 << 30,
                                          0, &run), AMP_OK);
        assert_true(run.scratch_output >= run.scratch &&
                    run.scratch_output + n * 4 <=
                        run.scratch + run.scratch_bytes);
        assert_int_equal(vendor_run(&p, &v, &run), CUDNN_STATUS_SUCCESS);
        assert_int_equal(amp_conv_finish(&run), AMP_OK);
        vendor_free(&p, &v);
        download(&p, got);
        assert_memory_equal(got, p.y, n * 4); /* NaN, as the caller left it */
        assert_int_equal(cuMemcpyDtoH(got, (CUdeviceptr)run.scratch_output,
                                      n * 4), CUDA_SUCCESS);
        check_output(&p, got, mode_rel(scratch_modes[mi]));
        amp_conv_abandon(&run);
        amp_harvest(1);
        assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
        assert_int_equal(cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
        assert_int_equal(free1, free0);
        free(got);
        problem_free(&p);
    }
}

/* ---- Failures, in a fresh child per injected fault ------------------------- */

/* Scenario "mode/dir/warm": one converted call with the fault, after
 * `warm` calls of the same problem without one (an FP16 call after one is
 * delayed scaling's one-pass cast). Exits 0 when a step failed and held
 * (destination untouched, device memory back), 1 when no fault fired,
 * higher when a rule broke. */
static int
child(const char *scenario)
{
    static const struct geometry g = {13, 6, 1, 1, 1, 1, 1, 1.25f, 0.5f};
    static float got[1 << 16];
    struct problem p;
    struct amp_conv_run run;
    int mode, dir, warm;
    size_t free0, free1, total, n;
    enum amp_status st;
    int rc;

    if (sscanf(scenario, "%d/%d/%d", &mode, &dir, &warm) != 3 ||
        setup(NULL) != 0)
        return 10;
    p = base;
    p.c = g.c; p.k = g.k; p.nhwc = g.nhwc; p.alpha = g.alpha;
    p.beta = g.beta; p.dir = (enum amp_conv_dir)dir;
    if (problem_make(&p, 1.0f, 1.0f, 1.0f) != 0)
        return 11;
    n = dir == AMP_CONV_FWD ? (size_t)p.n * p.k * p.p * p.q
        : dir == AMP_CONV_BWD_DATA ? (size_t)p.n * p.c * p.h * p.w
                                   : (size_t)p.k * p.c * p.r * p.s;
    records_made();
    while (warm-- > 0)
        if (convert(&p, (enum amp_mode)mode, AMP_MODE_FP16, 1 << 30, &run) !=
                AMP_OK ||
            cuStreamSynchronize(stream) ||
            cuMemcpyHtoD(out_dev(&p), out_host(&p), n * 4))
            return 14;
    if (cuStreamSynchronize(stream) || cuMemGetInfo(&free0, &total))
        return 12;
    st = convert(&p, (enum amp_mode)mode, AMP_MODE_FP16, 1 << 30, &run);
    if (cuStreamSynchronize(stream) || cuMemGetInfo(&free1, &total) ||
        cuMemcpyDtoH(got, out_dev(&p), n * 4))
        return 13;
    amp_harvest(1);
    /* The problem's host copies are freed too: LeakSanitizer checks the
     * child at exit. */
    rc = free1 != free0 ? 2 : st == AMP_OK ? 1
         : memcmp(got, out_host(&p), n * 4) != 0 ? 3 : 0;
    problem_free(&p);
    return rc;
}

static const char *const dir_api[] = {
    "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
    "cudnnConvolutionBackwardFilter",
};

/* Launches of one converted call: fp16, maxima and scales, casts, output
 * with the check = 3 (a repeating call: the one-pass cast, the cast again
 * of what did not stand, output = 3); bf16, the one-pass cast, output = 2;
 * allow-conversion, output with the check, the check's excuse = 2; tf32
 * (beta != 0), output. */
static int
launches(enum amp_mode mode)
{
    return mode == AMP_MODE_TF32 ? 1
           : mode == AMP_MODE_ALLOW_CONVERSION || mode == AMP_MODE_BF16 ? 2
                                                                       : 3;
}

/* Of those, the ones whose failure fails the call: not allow-conversion's
 * excuse, queued after the output kernel wrote the caller's output (the
 * call stands, its check unexcused). */
static int
failing_launches(enum amp_mode mode)
{
    return launches(mode) - (mode == AMP_MODE_ALLOW_CONVERSION);
}

/* The allocation, every launch in turn, and the vendor call (default
 * status and NOT_SUPPORTED), of a call after `warm` calls without a
 * fault. */
static void
check_failures(enum amp_mode mode, int dir, int warm)
{
    char scenario[32], fault[64];
    int before = warm * launches(mode), n, rc;

    snprintf(scenario, sizeof scenario, "%d/%d/%d", mode, dir, warm);
    /* beta is 0.5: tf32 too writes its result into scratch. */
    snprintf(fault, sizeof fault, "alloc-async:%d", warm + 1);
    assert_int_equal(amp_test_run_child(scenario, fault), 0);
    for (n = 1; n < 20; n++) {
        snprintf(fault, sizeof fault, "launch:%d", before + n);
        rc = amp_test_run_child(scenario, fault);
        if (rc == 1)
            break;
        assert_int_equal(rc, 0);
    }
    assert_int_equal(n - 1, failing_launches(mode));
    snprintf(fault, sizeof fault, "%s:%d", dir_api[dir], warm + 1);
    assert_int_equal(amp_test_run_child(scenario, fault), 0);
    /* A vendor call that wrote part of its output before failing. */
    snprintf(fault, sizeof fault, "%s:%d:partial", dir_api[dir], warm + 1);
    assert_int_equal(amp_test_run_child(scenario, fault), 0);
    snprintf(fault, sizeof fault, "%s:%d:3000", dir_api[dir], warm + 1);
    assert_int_equal(amp_test_run_child(scenario, fault), 0);
}

static void
test_failures_leave_nothing(void **state)
{
    (void)state;
    for (int dir = 0; dir < 3; dir++)
        check_failures(AMP_MODE_FP16, dir, 0);
    /* Delayed scaling's one-pass call. */
    check_failures(AMP_MODE_FP16, AMP_CONV_FWD, 1);
    check_failures(AMP_MODE_BF16, AMP_CONV_BWD_DATA, 0);
    check_failures(AMP_MODE_ALLOW_CONVERSION, AMP_CONV_FWD, 0);
    check_failures(AMP_MODE_TF32, AMP_CONV_BWD_FILTER, 0);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_reduction),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_scale_bound),
        cmocka_unit_test(test_paths_within_bounds),
        cmocka_unit_test(test_range_beyond_fp16),
        cmocka_unit_test(test_nonfinite_demotes_site),
        cmocka_unit_test(test_nonfinite_inputs_excused),
        cmocka_unit_test(test_delayed_scaling),
        cmocka_unit_test(test_shadow),
        cmocka_unit_test(test_scratch_cap),
        cmocka_unit_test(test_output_in_scratch),
        cmocka_unit_test(test_failures_leave_nothing),
    };

    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child(argv[2]);
    return cmocka_run_group_tests(tests, setup, NULL);
}
