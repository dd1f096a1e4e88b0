/* Tests for the emulated cuDNN backend (graph) API: convolution graphs
 * built through the raw descriptors as cudnn-frontend builds them, in the
 * three directions, over layouts, data types, groups, dilations, 2-d and
 * 3-d, against a double reference; GetAttribute round trips and the walk
 * from a plan back to its tensors; workspaces; the documented statuses;
 * TF32 by default; stream order, modelled time, threads and faults. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fault_test.h"

#include <cuda_runtime.h>
#include <cudnn.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_test.h"

#define ST(call, want) assert_int_equal((call), (want))

/* ---- Problems -------------------------------------------------------------- */

/* A convolution; 2-d problems have depth 1 (in[0] = filt[0] = 1, no
 * padding there). */
struct geom {
    int nsp;
    int n, c, k, groups;
    int in[3], filt[3], pre[3], post[3], stride[3], dil[3];
    cudnnConvolutionMode_t mode;
};

static const struct geom geoms[] = {
    /* 2-d, odd channels, same padding */
    { 2, 2, 3, 5, 1, { 1, 7, 6 }, { 1, 3, 3 }, { 0, 1, 1 }, { 0, 1, 1 },
      { 1, 1, 1 }, { 1, 1, 1 }, CUDNN_CROSS_CORRELATION },
    /* 2-d, two groups, asymmetric padding, strides, dilation, flipped */
    { 2, 1, 6, 4, 2, { 1, 9, 8 }, { 1, 3, 2 }, { 0, 2, 0 }, { 0, 1, 1 },
      { 1, 2, 1 }, { 1, 2, 1 }, CUDNN_CONVOLUTION },
    /* 3-d with strides and dilation */
    { 3, 2, 3, 2, 1, { 4, 5, 5 }, { 2, 3, 3 }, { 1, 1, 1 }, { 1, 1, 1 },
      { 1, 2, 1 }, { 1, 1, 2 }, CUDNN_CROSS_CORRELATION },
    /* 2-d depthwise (groups = channels), 1x5 filters */
    { 2, 3, 4, 4, 4, { 1, 5, 9 }, { 1, 1, 5 }, { 0, 0, 2 }, { 0, 0, 2 },
      { 1, 1, 1 }, { 1, 1, 1 }, CUDNN_CONVOLUTION },
};
#define GEOM_COUNT (sizeof(geoms) / sizeof(geoms[0]))

static int
out_size(const struct geom *g, int d)
{
    int span = (g->filt[d] - 1) * g->dil[d] + 1;

    return 1 + (g->in[d] + g->pre[d] + g->post[d] - span) / g->stride[d];
}

/* Logical sizes (N, C, spatial...) of x, w and y. */
static int
dims_of(const struct geom *g, int which, int64_t *dim)
{
    const int *sp = which == 0 ? g->in : which == 1 ? g->filt : NULL;

    dim[0] = which == 1 ? g->k : g->n;
    dim[1] = which == 0 ? g->c : which == 1 ? g->c / g->groups : g->k;
    for (int i = 0; i < g->nsp; i++) {
        int d = 3 - g->nsp + i;

        dim[2 + i] = sp != NULL ? sp[d] : out_size(g, d);
    }
    return 2 + g->nsp;
}

static size_t
count_of64(int nb, const int64_t *dim)
{
    size_t n = 1;

    for (int i = 0; i < nb; i++)
        n *= (size_t)dim[i];
    return n;
}

/* Layouts: packed NCHW, packed NHWC (C innermost), and an odd one: C
 * outermost, then N, then the spatial dimensions, with a gap of one
 * element after each dimension. */
enum layout_kind { L_NCHW, L_NHWC, L_ODD, L_COUNT };

static size_t
strides_of(enum layout_kind l, int nb, const int64_t *dim, int64_t *stride)
{
    int order[CUDNN_DIM_MAX], n = 0;   /* innermost first */
    int64_t s = 1;

    if (l == L_NCHW) {
        for (int i = nb - 1; i >= 0; i--)
            order[n++] = i;
    } else if (l == L_NHWC) {
        order[n++] = 1;
        for (int i = nb - 1; i >= 2; i--)
            order[n++] = i;
        order[n++] = 0;
    } else {
        for (int i = nb - 1; i >= 2; i--)
            order[n++] = i;
        order[n++] = 0;
        order[n++] = 1;
    }
    for (int i = 0; i < nb; i++) {
        stride[order[i]] = s;
        s = s * dim[order[i]] + (l == L_ODD ? 1 : 0);
    }
    return (size_t)s;
}

/* Element offset of row-major index `lin`. */
static int64_t
offset_of(int nb, const int64_t *dim, const int64_t *stride, size_t lin)
{
    int64_t off = 0;

    for (int i = nb - 1; i >= 0; i--) {
        off += (int64_t)(lin % (size_t)dim[i]) * stride[i];
        lin /= (size_t)dim[i];
    }
    return off;
}

/* ---- Backend descriptors ----------------------------------------------------- */

static cudnnBackendDescriptor_t
bk_new(cudnnBackendDescriptorType_t t)
{
    cudnnBackendDescriptor_t d = NULL;

    DNN_OK(cudnnBackendCreateDescriptor(t, &d));
    assert_non_null(d);
    return d;
}

static void
bk_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
       cudnnBackendAttributeType_t type, int64_t n, const void *v)
{
    DNN_OK(cudnnBackendSetAttribute(d, name, type, n, v));
}

static cudnnBackendDescriptor_t
bk_tensor(int64_t uid, cudnnDataType_t type, int nb, const int64_t *dim,
          const int64_t *stride)
{
    cudnnBackendDescriptor_t t = bk_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t align = 16;

    bk_set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    bk_set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nb, dim);
    bk_set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nb, stride);
    bk_set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    bk_set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    DNN_OK(cudnnBackendFinalize(t));
    return t;
}

static cudnnBackendDescriptor_t
bk_conv(const struct geom *g)
{
    cudnnBackendDescriptor_t c = bk_new(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    int64_t nsp = g->nsp, pre[3], post[3], stride[3], dil[3];
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = g->mode;

    for (int i = 0; i < g->nsp; i++) {
        int d = 3 - g->nsp + i;

        pre[i] = g->pre[d], post[i] = g->post[d];
        stride[i] = g->stride[d], dil[i] = g->dil[d];
    }
    bk_set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
           &comp);
    bk_set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
           &mode);
    bk_set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp);
    bk_set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsp, pre);
    bk_set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsp,
           post);
    bk_set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsp,
           stride);
    bk_set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsp, dil);
    DNN_OK(cudnnBackendFinalize(c));
    return c;
}

enum dir { FWD, BWD_DATA, BWD_FILTER, DIR_COUNT };

static const cudnnBackendDescriptorType_t op_type[DIR_COUNT] = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
};

/* alpha, beta, conv, x, w, y in the forward roles. */
static const cudnnBackendAttributeName_t op_attr[DIR_COUNT][6] = {
    { CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y },
    { CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY },
    { CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY },
};

/* The operation; alpha and beta as FLOAT, or DOUBLE when `as_double`. */
static cudnnBackendDescriptor_t
bk_op(enum dir dir, cudnnBackendDescriptor_t conv,
      cudnnBackendDescriptor_t const t[3], double alpha, double beta,
      int as_double)
{
    cudnnBackendDescriptor_t op = bk_new(op_type[dir]);
    float af = (float)alpha, bf = (float)beta;

    if (as_double) {
        bk_set(op, op_attr[dir][0], CUDNN_TYPE_DOUBLE, 1, &alpha);
        bk_set(op, op_attr[dir][1], CUDNN_TYPE_DOUBLE, 1, &beta);
    } else {
        bk_set(op, op_attr[dir][0], CUDNN_TYPE_FLOAT, 1, &af);
        bk_set(op, op_attr[dir][1], CUDNN_TYPE_FLOAT, 1, &bf);
    }
    bk_set(op, op_attr[dir][2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
    for (int i = 0; i < 3; i++)
        bk_set(op, op_attr[dir][3 + i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
               &t[i]);
    DNN_OK(cudnnBackendFinalize(op));
    return op;
}

static cudnnBackendDescriptor_t
bk_graph(cudnnHandle_t h, cudnnBackendDescriptor_t op)
{
    cudnnBackendDescriptor_t g = bk_new(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);

    bk_set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    bk_set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
           &op);
    DNN_OK(cudnnBackendFinalize(g));
    return g;
}

/* The heuristics' engine configurations for `graph`, as cudnn-frontend
 * asks for them: the count first, then that many descriptors. */
static int64_t
bk_heuristics(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
              cudnnBackendDescriptor_t *cfgs, int64_t max)
{
    cudnnBackendDescriptor_t heur = bk_new(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    int64_t count = -1, got = -1;

    bk_set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    bk_set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    DNN_OK(cudnnBackendFinalize(heur));
    DNN_OK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                    NULL));
    assert_true(count >= 0 && count <= max);
    for (int64_t i = 0; i < count; i++)
        cfgs[i] = bk_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    DNN_OK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                    cfgs));
    assert_int_equal(got, count);
    DNN_OK(cudnnBackendDestroyDescriptor(heur));
    return count;
}

static cudnnBackendDescriptor_t
bk_plan(cudnnHandle_t h, cudnnBackendDescriptor_t cfg)
{
    cudnnBackendDescriptor_t p = bk_new(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);

    bk_set(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    bk_set(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    DNN_OK(cudnnBackendFinalize(p));
    return p;
}

/* An engine configuration of engine `index` with no knobs chosen. */
static cudnnStatus_t
bk_engine_cfg(cudnnBackendDescriptor_t graph, int64_t index,
              cudnnBackendDescriptor_t *cfg)
{
    cudnnBackendDescriptor_t e = bk_new(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnStatus_t st;

    bk_set(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    bk_set(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index);
    st = cudnnBackendFinalize(e);
    *cfg = NULL;
    if (st == CUDNN_STATUS_SUCCESS) {
        *cfg = bk_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        bk_set(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e);
        st = cudnnBackendFinalize(*cfg);
    }
    DNN_OK(cudnnBackendDestroyDescriptor(e));
    return st;
}

static int64_t
plan_workspace(cudnnBackendDescriptor_t plan)
{
    int64_t ws = -1, n = -1;

    DNN_OK(cudnnBackendGetAttribute(plan,
                                    CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                    CUDNN_TYPE_INT64, 1, &n, &ws));
    assert_int_equal(n, 1);
    return ws;
}

static cudnnBackendDescriptor_t
bk_pack(int n, const int64_t *uids, void *const *ptrs, void *ws)
{
    cudnnBackendDescriptor_t p = bk_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);

    bk_set(p, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    bk_set(p, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n,
           ptrs);
    bk_set(p, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    DNN_OK(cudnnBackendFinalize(p));
    return p;
}

static void
bk_free(cudnnBackendDescriptor_t d)
{
    DNN_OK(cudnnBackendDestroyDescriptor(d));
}

/* ---- One problem end to end ------------------------------------------------- */

#define UID_X 101
#define UID_W 102
#define UID_Y 103

/* Host values (row-major) and device copies of x, w, y in one layout. */
struct prob {
    const struct geom *g;
    enum dir dir;
    cudnnDataType_t type;
    int nb;
    int64_t dim[3][5], stride[3][5];
    size_t count[3], span[3];
    float *val[3];          /* x, w, y: inputs, and the output's old values */
    void *dev[3];
    cudnnBackendDescriptor_t t[3], conv, op, graph;
};

static void
upload(struct prob *p, int i)
{
    size_t es = elem_size(p->type);
    float *mem = malloc(p->span[i] * sizeof(float));
    void *enc;

    for (size_t j = 0; j < p->span[i]; j++)
        mem[j] = 0.0f;
    for (size_t j = 0; j < p->count[i]; j++)
        mem[offset_of(p->nb, p->dim[i], p->stride[i], j)] = p->val[i][j];
    enc = encode(p->type, mem, p->span[i]);
    p->dev[i] = dev_upload(enc, p->span[i] * es);
    free(enc);
    free(mem);
}

static void
download(const struct prob *p, int i, float *out)
{
    size_t es = elem_size(p->type);
    void *raw = malloc(p->span[i] * es);
    float *mem = malloc(p->span[i] * sizeof(float));

    dev_download(raw, p->dev[i], p->span[i] * es);
    decode(p->type, raw, p->span[i], mem);
    for (size_t j = 0; j < p->count[i]; j++)
        out[j] = mem[offset_of(p->nb, p->dim[i], p->stride[i], j)];
    free(raw);
    free(mem);
}

static void
prob_new(struct prob *p, cudnnHandle_t h, const struct geom *g, enum dir dir,
         cudnnDataType_t type, enum layout_kind layout, double alpha,
         double beta)
{
    static const int64_t uid[3] = { UID_X, UID_W, UID_Y };
    int half = type != CUDNN_DATA_FLOAT;

    memset(p, 0, sizeof(*p));
    p->g = g, p->dir = dir, p->type = type;
    for (int i = 0; i < 3; i++) {
        p->nb = dims_of(g, i, p->dim[i]);
        p->count[i] = count_of64(p->nb, p->dim[i]);
        p->span[i] = strides_of(layout, p->nb, p->dim[i], p->stride[i]);
        p->val[i] = malloc(p->count[i] * sizeof(float));
        for (size_t j = 0; j < p->count[i]; j++)
            p->val[i][j] = half ? rnd_grid() : rnd();
        upload(p, i);
        p->t[i] = bk_tensor(uid[i], type, p->nb, p->dim[i], p->stride[i]);
    }
    p->conv = bk_conv(g);
    p->op = bk_op(dir, p->conv, p->t, alpha, beta, 0);
    p->graph = bk_graph(h, p->op);
}

static void
prob_free(struct prob *p)
{
    for (int i = 0; i < 3; i++) {
        free(p->val[i]);
        dev_free(p->dev[i]);
        bk_free(p->t[i]);
    }
    bk_free(p->conv), bk_free(p->op), bk_free(p->graph);
}

/* The output's index among x, w, y. */
static int
out_of(enum dir d)
{
    return d == FWD ? 2 : d == BWD_DATA ? 0 : 1;
}

/* The exact result (no alpha, beta) and the sum of |products| of each
 * output element, inputs rounded by `round` (NULL: exact). */
static void
reference(const struct prob *p, double (*round)(double), double *res,
          double *mag)
{
    const struct geom *g = p->g;
    int cg = g->c / g->groups, kg = g->k / g->groups;
    int o[3] = { out_size(g, 0), out_size(g, 1), out_size(g, 2) };
    size_t nout = p->count[out_of(p->dir)];
    const float *x = p->val[0], *w = p->val[1], *y = p->val[2];

    memset(res, 0, nout * sizeof(double));
    memset(mag, 0, nout * sizeof(double));
    for (int n = 0; n < g->n; n++)
    for (int k = 0; k < g->k; k++)
    for (int cl = 0; cl < cg; cl++)
    for (int od = 0; od < o[0]; od++)
    for (int oh = 0; oh < o[1]; oh++)
    for (int ow = 0; ow < o[2]; ow++)
    for (int t = 0; t < g->filt[0]; t++)
    for (int r = 0; r < g->filt[1]; r++)
    for (int s = 0; s < g->filt[2]; s++) {
        int c = (k / kg) * cg + cl, flip = g->mode == CUDNN_CONVOLUTION;
        int id = od * g->stride[0] - g->pre[0] + t * g->dil[0];
        int ih = oh * g->stride[1] - g->pre[1] + r * g->dil[1];
        int iw = ow * g->stride[2] - g->pre[2] + s * g->dil[2];
        int ft = flip ? g->filt[0] - 1 - t : t;
        int fr = flip ? g->filt[1] - 1 - r : r;
        int fs = flip ? g->filt[2] - 1 - s : s;
        size_t xi, wi, yi, at;
        double a, b;

        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1] ||
            iw < 0 || iw >= g->in[2])
            continue;
        xi = ((((size_t)n * g->c + c) * g->in[0] + id) * g->in[1] + ih) *
                 g->in[2] + iw;
        wi = ((((size_t)k * cg + cl) * g->filt[0] + ft) * g->filt[1] + fr) *
                 g->filt[2] + fs;
        yi = ((((size_t)n * g->k + k) * o[0] + od) * o[1] + oh) * o[2] + ow;
        switch (p->dir) {
        case FWD:
            a = x[xi], b = w[wi], at = yi;
            break;
        case BWD_DATA:
            a = y[yi], b = w[wi], at = xi;
            break;
        default:
            a = x[xi], b = y[yi], at = wi;
            break;
        }
        if (round != NULL)
            a = round(a), b = round(b);
        res[at] += a * b;
        mag[at] += fabs(a * b);
    }
}

/* Runs the plan over the problem's device tensors (one pack, the
 * workspace the plan asks for) and waits. */
static cudnnStatus_t
execute(cudnnHandle_t h, struct prob *p, cudnnBackendDescriptor_t plan)
{
    int64_t uids[3] = { UID_X, UID_W, UID_Y };
    int64_t ws = plan_workspace(plan);
    void *wsp = ws > 0 ? dev_alloc((size_t)ws) : NULL;
    cudnnBackendDescriptor_t pack = bk_pack(3, uids, p->dev, wsp);
    cudnnStatus_t st = cudnnBackendExecute(h, plan, pack);

    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    bk_free(pack);
    if (wsp != NULL)
        dev_free(wsp);
    return st;
}

/* Largest error of `got` against alpha * res + beta * old, relative to
 * alpha * mag + |beta old| (the size of what was summed). */
static double
max_rel_error(const struct prob *p, const float *got, const double *res,
              const double *mag, double alpha, double beta)
{
    int oi = out_of(p->dir);
    double worst = 0.0;

    for (size_t j = 0; j < p->count[oi]; j++) {
        double old = beta != 0.0 ? beta * p->val[oi][j] : 0.0;
        double want = alpha * res[j] + old;
        double size = fabs(alpha) * mag[j] + fabs(old) + 1e-30;
        double e = fabs(got[j] - want) / size;

        if (!(e <= worst))
            worst = e;
    }
    return worst;
}

/* Whether engine configuration `cfg`'s engine has numerical note `note`. */
static int
has_note(cudnnBackendDescriptor_t cfg, cudnnBackendNumericalNote_t note)
{
    cudnnBackendDescriptor_t e = bk_new(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n = -1, one = -1;
    int found = 0;

    DNN_OK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one,
                                    &e));
    assert_int_equal(one, 1);
    DNN_OK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                    CUDNN_TYPE_NUMERICAL_NOTE,
                                    CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n,
                                    notes));
    for (int64_t i = 0; i < n; i++)
        found |= notes[i] == note;
    bk_free(e);
    return found;
}

/* The notes of engine configuration `cfg`'s engine as cudnn-frontend
 * reads them: a count query (the most there can be, a NULL array), then
 * the notes into an array of that count. Returns the count. */
static int64_t
notes_frontend_way(cudnnBackendDescriptor_t cfg,
                   cudnnBackendAttributeName_t name,
                   cudnnBackendAttributeType_t type, int64_t most,
                   int32_t *notes)
{
    cudnnBackendDescriptor_t e = bk_new(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t n = -1, again = -1, one = -1;

    DNN_OK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one,
                                    &e));
    DNN_OK(cudnnBackendGetAttribute(e, name, type, most, &n, NULL));
    assert_true(n >= 0 && n <= most);
    DNN_OK(cudnnBackendGetAttribute(e, name, type, n, &again, notes));
    assert_int_equal(again, n);
    bk_free(e);
    return n;
}

/* ---- The numbers ------------------------------------------------------------- */

/* Every direction, layout, type and geometry with the heuristics' first
 * plan: FLOAT data through TF32 (the default on the modelled H100),
 * judged against the reference with TF32-rounded inputs to FP32
 * accumulation, and farther than that from the exact one somewhere;
 * HALF and BFLOAT16 from values exact in them, judged to the output's
 * rounding. */
static void
test_directions_layouts_types(void **state)
{
    static const cudnnDataType_t types[] = {
        CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16,
    };
    cudnnHandle_t h = handle_new();
    int runs = 0, tf32_seen = 0;

    (void)state;
    for (size_t gi = 0; gi < GEOM_COUNT; gi++)
    for (int dir = 0; dir < DIR_COUNT; dir++)
    for (int l = 0; l < L_COUNT; l++)
    for (int ti = 0; ti < 3; ti++) {
        cudnnDataType_t type = types[ti];
        int fp32 = type == CUDNN_DATA_FLOAT;
        double alpha = fp32 ? 0.75 : 1.0, beta = fp32 ? -0.5 : 0.0;
        cudnnBackendDescriptor_t cfgs[8], plan;
        struct prob p;
        int64_t n;
        int oi = out_of((enum dir)dir);
        double *res, *mag, err, tol;
        float *got;

        prob_new(&p, h, &geoms[gi], (enum dir)dir, type, (enum layout_kind)l,
                 alpha, beta);
        n = bk_heuristics(p.graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 8);
        assert_true(n >= 2);
        /* TF32 (Tensor Core) engines come first for FLOAT data. */
        assert_true(has_note(cfgs[0], CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
        plan = bk_plan(h, cfgs[0]);
        DNN_OK(execute(h, &p, plan));
        got = malloc(p.count[oi] * sizeof(float));
        res = malloc(p.count[oi] * sizeof(double));
        mag = malloc(p.count[oi] * sizeof(double));
        download(&p, oi, got);
        reference(&p, fp32 ? ref_tf32 : NULL, res, mag);
        /* FP32 sums: a few units of 2^-24 per term at most; HALF and
         * BFLOAT16: the output's rounding (2^-11, 2^-8 relative). */
        tol = fp32 ? 1e-5 : type == CUDNN_DATA_HALF ? 1.0 / 2048 : 1.0 / 256;
        err = max_rel_error(&p, got, res, mag, alpha, beta);
        if (!(err <= tol))
            fail_msg("geometry %zu dir %d layout %d type %d: error %g > %g",
                     gi, dir, l, (int)type, err, tol);
        if (fp32) {
            reference(&p, NULL, res, mag);
            tf32_seen += max_rel_error(&p, got, res, mag, alpha, beta) > 1e-5;
        }
        for (int64_t i = 0; i < n; i++)
            bk_free(cfgs[i]);
        bk_free(plan);
        free(got), free(res), free(mag);
        prob_free(&p);
        runs++;
    }
    assert_int_equal(runs, (int)GEOM_COUNT * DIR_COUNT * L_COUNT * 3);
    /* TF32 rounding shows against the exact sums in most FP32 runs. */
    assert_true(tf32_seen >= (int)GEOM_COUNT * DIR_COUNT * L_COUNT / 2);
    DNN_OK(cudnnDestroy(h));
}

/* Every engine that supports a FLOAT problem runs it: the FP32-core ones
 * to FP32 accuracy against the exact reference (no TF32), the Tensor Core
 * ones to the TF32 reference; alpha and beta given as doubles. */
static void
test_every_engine(void **state)
{
    cudnnHandle_t h = handle_new();
    const struct geom *g = &geoms[1];
    int supported[DIR_COUNT] = { 0 };

    (void)state;
    for (int dir = 0; dir < DIR_COUNT; dir++) {
        for (int64_t e = 0; e < 6; e++) {
            cudnnBackendDescriptor_t cfg, plan, op, graph;
            struct prob p;
            int oi = out_of((enum dir)dir), tc = (int)(e % 2);
            double *res, *mag, err;
            float *got;
            cudnnStatus_t st;

            prob_new(&p, h, g, (enum dir)dir, CUDNN_DATA_FLOAT, L_NHWC, 1.0,
                     0.0);
            op = bk_op((enum dir)dir, p.conv, p.t, -2.0, 0.25, 1);
            graph = bk_graph(h, op);
            st = bk_engine_cfg(graph, e, &cfg);
            if (e >= 4 && dir == BWD_DATA) {
                ST(st, CUDNN_STATUS_NOT_SUPPORTED);   /* no explicit GEMM */
                bk_free(op), bk_free(graph), prob_free(&p);
                continue;
            }
            DNN_OK(st);
            supported[dir]++;
            assert_int_equal(has_note(cfg, CUDNN_NUMERICAL_NOTE_TENSOR_CORE),
                             tc);
            plan = bk_plan(h, cfg);
            DNN_OK(execute(h, &p, plan));
            got = malloc(p.count[oi] * sizeof(float));
            res = malloc(p.count[oi] * sizeof(double));
            mag = malloc(p.count[oi] * sizeof(double));
            download(&p, oi, got);
            reference(&p, tc ? ref_tf32 : NULL, res, mag);
            err = max_rel_error(&p, got, res, mag, -2.0, 0.25);
            if (!(err <= 1e-5))
                fail_msg("dir %d engine %lld: error %g", dir, (long long)e,
                         err);
            bk_free(cfg), bk_free(plan), bk_free(op), bk_free(graph);
            free(got), free(res), free(mag);
            prob_free(&p);
        }
    }
    assert_int_equal(supported[FWD], 6);
    assert_int_equal(supported[BWD_DATA], 4);
    assert_int_equal(supported[BWD_FILTER], 6);
    DNN_OK(cudnnDestroy(h));
}

/* beta == 0 does not read the output: NaNs there stay out of it. */
static void
test_beta_zero_ignores_output(void **state)
{
    cudnnHandle_t h = handle_new();
    cudnnBackendDescriptor_t cfgs[8], plan;
    struct prob p;
    int64_t n;
    float *got;

    (void)state;
    prob_new(&p, h, &geoms[0], FWD, CUDNN_DATA_FLOAT, L_NCHW, 1.0, 0.0);
    for (size_t j = 0; j < p.count[2]; j++)
        p.val[2][j] = NAN;
    dev_free(p.dev[2]);
    upload(&p, 2);
    n = bk_heuristics(p.graph, CUDNN_HEUR_MODE_A, cfgs, 8);
    plan = bk_plan(h, cfgs[0]);
    DNN_OK(execute(h, &p, plan));
    got = malloc(p.count[2] * sizeof(float));
    download(&p, 2, got);
    for (size_t j = 0; j < p.count[2]; j++)
        assert_true(isfinite(got[j]));
    free(got);
    for (int64_t i = 0; i < n; i++)
        bk_free(cfgs[i]);
    bk_free(plan);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Reading back ------------------------------------------------------------ */

static cudnnBackendDescriptor_t
get_one(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
        cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t out = bk_new(type);
    int64_t n = -1;

    DNN_OK(cudnnBackendGetAttribute(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                    &n, &out));
    assert_int_equal(n, 1);
    return out;
}

static int64_t
get_i64(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name)
{
    int64_t v = -77, n = -1;

    DNN_OK(cudnnBackendGetAttribute(d, name, CUDNN_TYPE_INT64, 1, &n, &v));
    assert_int_equal(n, 1);
    return v;
}

/* A plan walked back through GetAttribute as far as cuDNN 9 answers: its
 * configuration, engine and graph, but not the graph's operations or
 * handle; from the operation on, its tensors and convolution: every
 * value is the one set. */
static void
test_plan_walk(void **state)
{
    cudnnHandle_t h = handle_new(), h2 = NULL;
    const struct geom *g = &geoms[2];
    cudnnBackendDescriptor_t cfgs[8], plan, cfg, engine, graph, op, wrong;
    cudnnBackendDescriptor_t t[3], conv;
    static const cudnnBackendAttributeName_t tattr[3] = {
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
    };
    int64_t n = -1, dims[6] = { 0 }, v[4];
    cudnnDataType_t type = CUDNN_DATA_DOUBLE;
    cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
    double alpha = 0.0;
    float beta = 0.0f;
    bool virt = true;
    struct prob p;

    (void)state;
    prob_new(&p, h, g, BWD_FILTER, CUDNN_DATA_FLOAT, L_ODD, 0.75, -0.5);
    assert_int_equal(bk_heuristics(p.graph, CUDNN_HEUR_MODE_A, cfgs, 8), 6);
    plan = bk_plan(h, cfgs[1]);
    /* The descriptors the walk started from go away first. */
    for (int i = 0; i < 6; i++)
        bk_free(cfgs[i]);

    cfg = get_one(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                  CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    assert_int_equal(get_i64(cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE),
                     plan_workspace(plan));
    engine = get_one(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                     CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    v[0] = get_i64(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
    assert_true(v[0] >= 0 && v[0] < 6);
    graph = get_one(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                    CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    assert_int_equal(get_i64(graph,
                             CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT),
                     8);
    /* cuDNN 9.19 gives neither the graph's handle nor its operations
     * back, as a count or as an array (an H200, docs/gpu-results.md): the
     * walk goes on from the program's own operation. */
    ST(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                CUDNN_TYPE_HANDLE, 1, &n, &h2),
       CUDNN_STATUS_NOT_SUPPORTED);
    ST(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL),
       CUDNN_STATUS_NOT_SUPPORTED);
    wrong = bk_new(op_type[BWD_FILTER]);
    ST(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &wrong),
       CUDNN_STATUS_NOT_SUPPORTED);
    bk_free(wrong);
    op = p.op;
    /* A scale reads back only as the type it was set as (FLOAT here):
     * cuDNN 9.19 refuses a FLOAT alpha read as DOUBLE. */
    ST(cudnnBackendGetAttribute(
           op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
           CUDNN_TYPE_DOUBLE, 1, &n, &alpha),
       CUDNN_STATUS_BAD_PARAM);
    DNN_OK(cudnnBackendGetAttribute(
        op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
        CUDNN_TYPE_FLOAT, 1, &n, &beta));
    alpha = beta;
    DNN_OK(cudnnBackendGetAttribute(
        op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
        CUDNN_TYPE_FLOAT, 1, &n, &beta));
    assert_true(alpha == 0.75 && beta == -0.5f);
    for (int i = 0; i < 3; i++) {
        t[i] = get_one(op, tattr[i], CUDNN_BACKEND_TENSOR_DESCRIPTOR);
        assert_int_equal(get_i64(t[i], CUDNN_ATTR_TENSOR_UNIQUE_ID),
                         i == 0 ? UID_X : i == 1 ? UID_W : UID_Y);
        /* Two of five dimensions asked for: five counted, two written. */
        dims[2] = -5;
        DNN_OK(cudnnBackendGetAttribute(t[i], CUDNN_ATTR_TENSOR_DIMENSIONS,
                                        CUDNN_TYPE_INT64, 2, &n, dims));
        assert_int_equal(n, 5);
        assert_int_equal(dims[0], p.dim[i][0]);
        assert_int_equal(dims[1], p.dim[i][1]);
        assert_int_equal(dims[2], -5);
        DNN_OK(cudnnBackendGetAttribute(t[i], CUDNN_ATTR_TENSOR_DIMENSIONS,
                                        CUDNN_TYPE_INT64, 6, &n, dims));
        assert_memory_equal(dims, p.dim[i], 5 * sizeof(int64_t));
        DNN_OK(cudnnBackendGetAttribute(t[i], CUDNN_ATTR_TENSOR_STRIDES,
                                        CUDNN_TYPE_INT64, 6, &n, dims));
        assert_int_equal(n, 5);
        assert_memory_equal(dims, p.stride[i], 5 * sizeof(int64_t));
        DNN_OK(cudnnBackendGetAttribute(t[i], CUDNN_ATTR_TENSOR_DATA_TYPE,
                                        CUDNN_TYPE_DATA_TYPE, 1, &n, &type));
        assert_int_equal(type, CUDNN_DATA_FLOAT);
        DNN_OK(cudnnBackendGetAttribute(t[i], CUDNN_ATTR_TENSOR_IS_VIRTUAL,
                                        CUDNN_TYPE_BOOLEAN, 1, &n, &virt));
        assert_false(virt);
        assert_int_equal(get_i64(t[i], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT), 16);
        /* The wrong attribute type. */
        ST(cudnnBackendGetAttribute(t[i], CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                    CUDNN_TYPE_INT32, 1, &n, v),
           CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
    }
    conv = get_one(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                   CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    assert_int_equal(get_i64(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS), 3);
    DNN_OK(cudnnBackendGetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                    CUDNN_TYPE_CONVOLUTION_MODE, 1, &n,
                                    &mode));
    assert_int_equal(mode, CUDNN_CROSS_CORRELATION);
    DNN_OK(cudnnBackendGetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                    CUDNN_TYPE_DATA_TYPE, 1, &n, &type));
    assert_int_equal(type, CUDNN_DATA_FLOAT);
    DNN_OK(cudnnBackendGetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                                    CUDNN_TYPE_INT64, 4, &n, v));
    assert_int_equal(n, 3);
    assert_true(v[0] == 1 && v[1] == 1 && v[2] == 2);
    DNN_OK(cudnnBackendGetAttribute(conv,
                                    CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                    CUDNN_TYPE_INT64, 3, &n, v));
    assert_true(v[0] == 1 && v[1] == 2 && v[2] == 1);
    DNN_OK(cudnnBackendGetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                                    CUDNN_TYPE_INT64, 3, &n, v));
    assert_true(v[0] == 1 && v[1] == 1 && v[2] == 1);
    DNN_OK(cudnnBackendGetAttribute(conv,
                                    CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                                    CUDNN_TYPE_INT64, 3, &n, v));
    assert_true(v[0] == 1 && v[1] == 1 && v[2] == 1);
    /* The walked plan still runs, and gives the original's numbers. */
    {
        int64_t uids[3] = { UID_X, UID_W, UID_Y };
        int64_t ws = plan_workspace(plan);
        void *wsp = ws > 0 ? dev_alloc((size_t)ws) : NULL;
        cudnnBackendDescriptor_t pack = bk_pack(3, uids, p.dev, wsp);
        cudnnBackendDescriptor_t plan2 = bk_new(
            CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        float *a = malloc(p.count[1] * sizeof(float));
        float *b = malloc(p.count[1] * sizeof(float));

        bk_set(plan2, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
        DNN_OK(cudnnBackendFinalize(plan2));
        assert_int_equal(plan_workspace(plan2), ws);
        DNN_OK(cudnnBackendExecute(h, plan, pack));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        download(&p, 1, a);
        dev_free(p.dev[1]);
        upload(&p, 1);
        bk_free(pack);
        void *ptrs[3] = { p.dev[0], p.dev[1], p.dev[2] };
        pack = bk_pack(3, uids, ptrs, wsp);
        DNN_OK(cudnnBackendExecute(h, plan2, pack));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        download(&p, 1, b);
        assert_memory_equal(a, b, p.count[1] * sizeof(float));
        free(a), free(b);
        bk_free(pack), bk_free(plan2);
        if (wsp != NULL)
            dev_free(wsp);
    }
    for (int i = 0; i < 3; i++)
        bk_free(t[i]);
    bk_free(conv), bk_free(graph), bk_free(engine);
    bk_free(cfg), bk_free(plan);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

/* Knobs, notes and workspaces of the engines: the precomputed implicit
 * GEMM (2, 3) has its tile-size knob (0 to 2) and 8 bytes per filter tap
 * and input channel of a group, rounded up to 256; the explicit GEMM
 * (4, 5) in the forward direction holds the columns (4 bytes times C
 * times taps times output positions); the implicit GEMM (0, 1) none.
 * Heuristics order and filter: INSTANT and A rank the Tensor Core engines
 * first, FALLBACK gives the FP32-core engines only. */
static void
test_engines_knobs_workspaces(void **state)
{
    cudnnHandle_t h = handle_new();
    const struct geom *g = &geoms[0];    /* C 3, 3x3 taps, 7x6 output */
    cudnnBackendDescriptor_t cfgs[8], cfg, knob, info, engine;
    cudnnBackendKnobType_t kt = CUDNN_KNOB_TYPE_SWIZZLE;
    int64_t n = -1, val, want_ws[6] = { 0, 0, 256, 256, 0, 0 };
    cudnnBackendNumericalNote_t notes[4];
    struct prob p;

    (void)state;
    want_ws[4] = want_ws[5] = ((4 * 3 * 9 * 42 + 255) / 256) * 256;
    prob_new(&p, h, g, FWD, CUDNN_DATA_FLOAT, L_NCHW, 1.0, 0.0);
    for (int64_t e = 0; e < 6; e++) {
        cudnnBackendDescriptor_t plan;

        DNN_OK(bk_engine_cfg(p.graph, e, &cfg));
        plan = bk_plan(h, cfg);
        assert_int_equal(plan_workspace(plan), want_ws[e]);
        bk_free(plan), bk_free(cfg);
    }
    /* Knob information of engine 3, and a configuration choosing it. */
    engine = bk_new(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    bk_set(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p.graph);
    val = 3;
    bk_set(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &val);
    DNN_OK(cudnnBackendFinalize(engine));
    DNN_OK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_KNOB_INFO,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                                    NULL));
    assert_int_equal(n, 1);
    info = get_one(engine, CUDNN_ATTR_ENGINE_KNOB_INFO,
                   CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR);
    DNN_OK(cudnnBackendGetAttribute(info, CUDNN_ATTR_KNOB_INFO_TYPE,
                                    CUDNN_TYPE_KNOB_TYPE, 1, &n, &kt));
    assert_int_equal(kt, CUDNN_KNOB_TYPE_TILE_SIZE);
    assert_int_equal(get_i64(info, CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE), 0);
    assert_int_equal(get_i64(info, CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE), 2);
    assert_int_equal(get_i64(info, CUDNN_ATTR_KNOB_INFO_STRIDE), 1);
    DNN_OK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                    CUDNN_TYPE_NUMERICAL_NOTE, 4, &n, notes));
    assert_int_equal(n, 1);
    assert_int_equal(notes[0], CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    for (val = 0; val <= 3; val++) {
        knob = bk_new(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
        bk_set(knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
               &kt);
        bk_set(knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
               &val);
        DNN_OK(cudnnBackendFinalize(knob));
        cfg = bk_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        bk_set(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
               1, &engine);
        bk_set(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &knob);
        ST(cudnnBackendFinalize(cfg), val <= 2
                                          ? CUDNN_STATUS_SUCCESS
                                          : CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND);
        if (val == 1) {
            cudnnBackendDescriptor_t back = get_one(
                cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);

            assert_int_equal(get_i64(back, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE),
                             1);
            bk_free(back);
        }
        bk_free(cfg), bk_free(knob);
    }
    bk_free(info), bk_free(engine);
    /* The knob on an engine without it. */
    DNN_OK(bk_engine_cfg(p.graph, 0, &cfg));
    bk_free(cfg);
    engine = bk_new(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    bk_set(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p.graph);
    val = 0;
    bk_set(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &val);
    DNN_OK(cudnnBackendFinalize(engine));
    DNN_OK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_KNOB_INFO,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n,
                                    NULL));
    assert_int_equal(n, 0);
    knob = bk_new(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    bk_set(knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
           &kt);
    bk_set(knob, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &val);
    DNN_OK(cudnnBackendFinalize(knob));
    cfg = bk_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    bk_set(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
           &engine);
    bk_set(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &knob);
    ST(cudnnBackendFinalize(cfg), CUDNN_STATUS_NOT_SUPPORTED);
    bk_free(cfg), bk_free(knob), bk_free(engine);
    /* Heuristics: INSTANT and A, Tensor Cores first; FALLBACK, FP32. */
    for (int mode = 0; mode < 4; mode++) {
        int64_t cnt = bk_heuristics(p.graph, (cudnnBackendHeurMode_t)mode,
                                    cfgs, 8);

        assert_int_equal(cnt, mode == CUDNN_HEUR_MODE_FALLBACK ? 3 : 6);
        for (int64_t i = 0; i < cnt; i++) {
            int tc = has_note(cfgs[i], CUDNN_NUMERICAL_NOTE_TENSOR_CORE);

            if (mode == CUDNN_HEUR_MODE_FALLBACK)
                assert_false(tc);
            else
                assert_int_equal(tc, i < 3);
            bk_free(cfgs[i]);
        }
    }
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Statuses ---------------------------------------------------------------- */

static cudnnBackendDescriptor_t
unfinished_tensor(int64_t uid)
{
    cudnnBackendDescriptor_t t = bk_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t dim[4] = { 1, 2, 3, 3 }, stride[4] = { 18, 9, 3, 1 };
    cudnnDataType_t type = CUDNN_DATA_FLOAT;

    bk_set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    bk_set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
    bk_set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, stride);
    bk_set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    return t;
}

/* Descriptors: creation, attribute names and types, finalization, reads
 * before it, incomplete and inconsistent descriptors. */
/* A count query with a positive requested count and a NULL array, the
 * way cudnn-frontend asks each engine for its numerical and behaviour
 * notes before it builds a plan: answered with the count, nothing
 * written. The notes read after it are those has_note() reads at once. */
static void
test_note_count_queries(void **state)
{
    cudnnHandle_t h = handle_new();
    cudnnBackendDescriptor_t cfgs[8], t;
    int32_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT +
                  CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t n, count = -1;
    struct prob p;

    (void)state;
    prob_new(&p, h, &geoms[0], FWD, CUDNN_DATA_FLOAT, L_NCHW, 1.0, 0.0);
    n = bk_heuristics(p.graph, CUDNN_HEUR_MODE_A, cfgs, 8);
    assert_true(n >= 2);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = notes_frontend_way(cfgs[i],
                                       CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                       CUDNN_TYPE_NUMERICAL_NOTE,
                                       CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                       notes);
        int tc = 0;

        for (int64_t j = 0; j < k; j++)
            tc |= notes[j] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
        assert_int_equal(tc, has_note(cfgs[i],
                                      CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
        notes_frontend_way(cfgs[i], CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                           CUDNN_TYPE_BEHAVIOR_NOTE,
                           CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, notes);
        bk_free(cfgs[i]);
    }
    /* Any attribute: a tensor's dimensions, asked for up to 8. */
    t = p.t[0];
    DNN_OK(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                    CUDNN_TYPE_INT64, 8, &count, NULL));
    assert_int_equal(count, 4);
    /* Without a place for the count either, there is nothing to answer. */
    ST(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                CUDNN_TYPE_INT64, 1, NULL, NULL),
       CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

static void
test_descriptor_statuses(void **state)
{
    cudnnBackendDescriptor_t d = NULL, t, t2, c;
    int64_t v = 16, n = 0, three[3] = { 1, 1, 1 };
    int32_t i32 = 1;

    (void)state;
    ST(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, NULL),
       CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    ST(cudnnBackendCreateDescriptor(
           CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &d),
       CUDNN_STATUS_NOT_SUPPORTED);
    assert_null(d);
    ST(cudnnBackendDestroyDescriptor(NULL), CUDNN_STATUS_BAD_PARAM);
    ST(cudnnBackendFinalize(NULL), CUDNN_STATUS_BAD_PARAM);
    ST(cudnnBackendSetAttribute(NULL, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                CUDNN_TYPE_INT64, 1, &v),
       CUDNN_STATUS_BAD_PARAM);

    t = unfinished_tensor(1);
    /* Incomplete: no byte alignment. */
    ST(cudnnBackendFinalize(t), CUDNN_STATUS_BAD_PARAM);
    /* Read before finalization. */
    ST(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                CUDNN_TYPE_INT64, 1, &n, &v),
       CUDNN_STATUS_NOT_INITIALIZED);
    /* Wrong type, wrong count, NULL array, another descriptor's name. */
    ST(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                CUDNN_TYPE_INT32, 1, &i32),
       CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
    ST(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                CUDNN_TYPE_INT64, 2, three),
       CUDNN_STATUS_BAD_PARAM);
    ST(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                CUDNN_TYPE_INT64, 1, NULL),
       CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    ST(cudnnBackendSetAttribute(t, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                                CUDNN_TYPE_INT64, 1, &v),
       CUDNN_STATUS_BAD_PARAM);
    ST(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                CUDNN_TYPE_INT64, 9, three),
       CUDNN_STATUS_BAD_PARAM);
    /* An alignment that is not a power of two. */
    v = 12;
    bk_set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &v);
    ST(cudnnBackendFinalize(t), CUDNN_STATUS_BAD_PARAM);
    v = 16;
    bk_set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &v);
    /* Strides of another rank. */
    bk_set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, three);
    ST(cudnnBackendFinalize(t), CUDNN_STATUS_BAD_PARAM);
    bk_set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4,
           (int64_t[]){ 18, 9, 3, 1 });
    DNN_OK(cudnnBackendFinalize(t));
    /* Once finalized: no more setting, no second finalization. */
    ST(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                CUDNN_TYPE_INT64, 1, &v),
       CUDNN_STATUS_BAD_PARAM);
    ST(cudnnBackendFinalize(t), CUDNN_STATUS_BAD_PARAM);
    assert_int_equal(get_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID), 1);
    /* Get: a negative request; a NULL array for a positive one is a
     * count query (test_note_count_queries). */
    ST(cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                CUDNN_TYPE_INT64, -1, &n, &v),
       CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    ST(cudnnBackendGetAttribute(t, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                CUDNN_TYPE_DATA_TYPE, 1, &n, &v),
       CUDNN_STATUS_BAD_PARAM);

    /* A convolution missing its dilations; one with a zero stride. */
    c = bk_new(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    {
        cudnnDataType_t comp = CUDNN_DATA_FLOAT;
        cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
        int64_t nsp = 2, zero[2] = { 0, 0 }, one[2] = { 1, 1 };

        bk_set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
               &comp);
        bk_set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
               CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
        bk_set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1,
               &nsp);
        bk_set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2,
               zero);
        bk_set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2,
               zero);
        bk_set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
               zero);
        ST(cudnnBackendFinalize(c), CUDNN_STATUS_BAD_PARAM);
        bk_set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one);
        ST(cudnnBackendFinalize(c), CUDNN_STATUS_BAD_PARAM);
        bk_set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
               one);
        DNN_OK(cudnnBackendFinalize(c));
    }
    /* An operation: an unfinalized tensor, a descriptor of another type,
     * missing y, then a y of the wrong size. */
    d = bk_new(op_type[FWD]);
    t2 = unfinished_tensor(2);
    ST(cudnnBackendSetAttribute(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t2),
       CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
    ST(cudnnBackendSetAttribute(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c),
       CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE);
    ST(cudnnBackendSetAttribute(d,
                                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                CUDNN_TYPE_INT64, 1, &v),
       CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
    bk_set(t2, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
           (int64_t[]){ 16 });
    DNN_OK(cudnnBackendFinalize(t2));
    bk_set(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    bk_set(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    bk_set(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t2);
    ST(cudnnBackendFinalize(d), CUDNN_STATUS_BAD_PARAM);
    /* y of x's size: a 2x2 filter over 3x3 gives 2x2, not 3x3. */
    bk_set(d, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    ST(cudnnBackendFinalize(d), CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
    bk_free(d), bk_free(t), bk_free(t2), bk_free(c);
}

/* Graphs, engines, plans and packs: duplicated unique ids, unsupported
 * data types, engine indices, execution arguments. */
static void
test_graph_and_execute_statuses(void **state)
{
    cudnnHandle_t h = handle_new();
    const struct geom *g = &geoms[0];
    cudnnBackendDescriptor_t cfgs[8], cfg, plan, pack, tt[3], op, graph;
    int64_t uids[3] = { UID_X, UID_W, UID_Y }, n, idx;
    void *ptrs[3];
    struct prob p;

    (void)state;
    prob_new(&p, h, g, FWD, CUDNN_DATA_FLOAT, L_NCHW, 1.0, 0.0);
    /* Two tensors with one unique id. */
    tt[0] = p.t[0], tt[1] = p.t[1];
    tt[2] = bk_tensor(UID_X, CUDNN_DATA_FLOAT, p.nb, p.dim[2], p.stride[2]);
    op = bk_op(FWD, p.conv, tt, 1.0, 0.0, 0);
    graph = bk_new(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    ST(cudnnBackendFinalize(graph), CUDNN_STATUS_BAD_PARAM);   /* no ops */
    bk_set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    ST(cudnnBackendFinalize(graph), CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES);
    bk_free(graph), bk_free(op), bk_free(tt[2]);
    /* DOUBLE data: a graph, but no engine takes it. */
    for (int i = 0; i < 3; i++)
        tt[i] = bk_tensor(UID_X + i, CUDNN_DATA_DOUBLE, p.nb, p.dim[i],
                          p.stride[i]);
    op = bk_op(FWD, p.conv, tt, 1.0, 0.0, 0);
    graph = bk_graph(h, op);
    assert_int_equal(bk_heuristics(graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 8),
                     0);
    ST(bk_engine_cfg(graph, 0, &cfg), CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
    for (int i = 0; i < 3; i++)
        bk_free(tt[i]);
    bk_free(op), bk_free(graph);
    /* A virtual tensor as the graph's output. */
    tt[0] = p.t[0], tt[1] = p.t[1];
    tt[2] = bk_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    {
        cudnnDataType_t type = CUDNN_DATA_FLOAT;
        bool virt = true;
        int64_t uid = UID_Y, align = 16;

        bk_set(tt[2], CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
               &type);
        bk_set(tt[2], CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, p.nb,
               p.dim[2]);
        bk_set(tt[2], CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, p.nb,
               p.stride[2]);
        bk_set(tt[2], CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
        bk_set(tt[2], CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
               &align);
        bk_set(tt[2], CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1,
               &virt);
        DNN_OK(cudnnBackendFinalize(tt[2]));
    }
    op = bk_op(FWD, p.conv, tt, 1.0, 0.0, 0);
    graph = bk_new(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    bk_set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    ST(cudnnBackendFinalize(graph), CUDNN_STATUS_BAD_PARAM);
    bk_free(graph), bk_free(op), bk_free(tt[2]);
    /* Engine indices; a plan without its configuration. */
    ST(bk_engine_cfg(p.graph, 8, &cfg), CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND);
    /* The runtime-fusion engines take no graph of one convolution. */
    ST(bk_engine_cfg(p.graph, 6, &cfg),
       CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
    ST(bk_engine_cfg(p.graph, 7, &cfg),
       CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
    ST(bk_engine_cfg(p.graph, -1, &cfg), CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND);
    plan = bk_new(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    ST(cudnnBackendFinalize(plan), CUDNN_STATUS_BAD_PARAM);
    bk_free(plan);
    /* Heuristics without a mode. */
    cfg = bk_new(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    bk_set(cfg, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &p.graph);
    ST(cudnnBackendFinalize(cfg), CUDNN_STATUS_BAD_PARAM);
    bk_free(cfg);

    /* Execution: engine 2 needs a workspace. */
    idx = 2;
    DNN_OK(bk_engine_cfg(p.graph, idx, &cfg));
    plan = bk_plan(h, cfg);
    assert_true(plan_workspace(plan) > 0);
    pack = bk_pack(3, uids, p.dev, NULL);
    ST(cudnnBackendExecute(h, plan, pack), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    ST(cudnnBackendExecute(NULL, plan, pack), CUDNN_STATUS_BAD_PARAM);
    ST(cudnnBackendExecute(h, pack, pack),
       CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE);
    bk_free(pack);
    void *ws = dev_alloc((size_t)plan_workspace(plan));
    /* A missing unique id; a NULL pointer; a misaligned one. */
    pack = bk_pack(2, uids, p.dev, ws);
    ST(cudnnBackendExecute(h, plan, pack), CUDNN_STATUS_BAD_PARAM);
    bk_free(pack);
    ptrs[0] = p.dev[0], ptrs[1] = NULL, ptrs[2] = p.dev[2];
    pack = bk_pack(3, uids, ptrs, ws);
    ST(cudnnBackendExecute(h, plan, pack), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    bk_free(pack);
    ptrs[1] = (char *)p.dev[1] + 4;
    pack = bk_pack(3, uids, ptrs, ws);
    ST(cudnnBackendExecute(h, plan, pack),
       CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
    bk_free(pack);
    /* Packs: counts that differ, a unique id twice, unfinalized. */
    pack = bk_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    bk_set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
    bk_set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 2,
           p.dev);
    ST(cudnnBackendExecute(h, plan, pack), CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
    ST(cudnnBackendFinalize(pack), CUDNN_STATUS_BAD_PARAM);
    bk_set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 2,
           (int64_t[]){ UID_X, UID_X });
    ST(cudnnBackendFinalize(pack), CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES);
    bk_free(pack);
    n = 0;
    (void)n;
    /* Nothing ran: the output is as it was. */
    {
        float *got = malloc(p.count[2] * sizeof(float));

        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        download(&p, 2, got);
        assert_memory_equal(got, p.val[2], p.count[2] * sizeof(float));
        free(got);
    }
    dev_free(ws);
    bk_free(plan), bk_free(cfg);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Streams, time, threads -------------------------------------------------- */

/* The work is queued on the handle's stream and runs there in order; its
 * modelled time grows with the problem and TF32 is faster than FP32. */
static void
test_stream_order_and_time(void **state)
{
    cudnnHandle_t h = handle_new();
    struct geom big = { 2, 8, 64, 64, 1, { 1, 28, 28 }, { 1, 3, 3 },
                        { 0, 1, 1 }, { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 },
                        CUDNN_CROSS_CORRELATION };
    cudaStream_t s;
    cudaEvent_t e0, e1;
    float ms[2] = { 0 };
    struct prob p;

    (void)state;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    DNN_OK(cudnnSetStream(h, s));
    assert_int_equal(cudaEventCreate(&e0), cudaSuccess);
    assert_int_equal(cudaEventCreate(&e1), cudaSuccess);
    prob_new(&p, h, &big, FWD, CUDNN_DATA_FLOAT, L_NHWC, 1.0, 0.0);
    for (int64_t e = 0; e < 2; e++) {
        cudnnBackendDescriptor_t cfg, plan, pack;
        int64_t uids[3] = { UID_X, UID_W, UID_Y };

        DNN_OK(bk_engine_cfg(p.graph, e, &cfg));
        plan = bk_plan(h, cfg);
        pack = bk_pack(3, uids, p.dev, NULL);
        assert_int_equal(cudaEventRecord(e0, s), cudaSuccess);
        DNN_OK(cudnnBackendExecute(h, plan, pack));
        assert_int_equal(cudaEventRecord(e1, s), cudaSuccess);
        /* Queued, not run at the call. */
        assert_int_equal(cudaStreamQuery(s), cudaErrorNotReady);
        assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
        assert_int_equal(cudaEventElapsedTime(&ms[e], e0, e1), cudaSuccess);
        bk_free(pack), bk_free(plan), bk_free(cfg);
    }
    /* 2 N K C R S P Q = 2 * 8 * 64 * 64 * 9 * 784 flops: tens of
     * microseconds on the FP32 cores, less on TF32 Tensor Cores. */
    assert_true(ms[0] > 0.0f && ms[1] > 0.0f);
    assert_true(ms[1] < ms[0]);
    prob_free(&p);
    assert_int_equal(cudaEventDestroy(e0), cudaSuccess);
    assert_int_equal(cudaEventDestroy(e1), cudaSuccess);
    DNN_OK(cudnnDestroy(h));
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

#define THREADS 8

struct thread_arg {
    const struct prob *p;                   /* x and w to read */
    cudnnBackendDescriptor_t shared_plan;   /* executed by every thread */
    const float *want;                      /* its result */
    int ok;
};

/* y from x and w through `plan` into a fresh buffer, compared bit for bit
 * with `want`. */
static int
run_into_fresh_y(cudnnHandle_t h, const struct prob *p,
                 cudnnBackendDescriptor_t plan, const float *want)
{
    int64_t uids[3] = { UID_X, UID_W, UID_Y };
    size_t bytes = p->span[2] * sizeof(float);
    void *ptrs[3] = { p->dev[0], p->dev[1], dev_alloc(bytes) };
    cudnnBackendDescriptor_t pack = bk_pack(3, uids, ptrs, NULL);
    float *raw = malloc(bytes);
    int ok = cudnnBackendExecute(h, plan, pack) == CUDNN_STATUS_SUCCESS &&
             cudaDeviceSynchronize() == cudaSuccess;

    dev_download(raw, ptrs[2], bytes);
    for (size_t j = 0; ok && j < p->count[2]; j++)
        ok = memcmp(&raw[offset_of(p->nb, p->dim[2], p->stride[2], j)],
                    &want[j], sizeof(float)) == 0;
    free(raw);
    bk_free(pack);
    dev_free(ptrs[2]);
    return ok;
}

/* Each thread builds its own graph and plan from scratch on its own
 * handle, runs it and the shared plan (built by the main thread) into
 * buffers of its own, and compares both results bit for bit with the
 * main thread's run. */
static void *
thread_main(void *argp)
{
    struct thread_arg *a = argp;
    const struct prob *p = a->p;
    cudnnBackendDescriptor_t cfgs[8], t[3], conv, op, graph, plan;
    cudnnHandle_t h = NULL;
    int64_t n;

    a->ok = 0;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS)
        return NULL;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3; i++)
            t[i] = bk_tensor(UID_X + i, CUDNN_DATA_FLOAT, p->nb, p->dim[i],
                             p->stride[i]);
        conv = bk_conv(p->g);
        op = bk_op(FWD, conv, t, 1.0, 0.0, 0);
        graph = bk_graph(h, op);
        for (int i = 0; i < 3; i++)
            bk_free(t[i]);
        bk_free(conv), bk_free(op);
        n = bk_heuristics(graph, CUDNN_HEUR_MODE_A, cfgs, 8);
        plan = bk_plan(h, cfgs[0]);
        for (int64_t i = 0; i < n; i++)
            bk_free(cfgs[i]);
        bk_free(graph);
        a->ok = run_into_fresh_y(h, p, plan, a->want) &&
                run_into_fresh_y(h, p, a->shared_plan, a->want);
        bk_free(plan);
        if (!a->ok)
            break;
    }
    if (cudnnDestroy(h) != CUDNN_STATUS_SUCCESS)
        a->ok = 0;
    return NULL;
}

static void
test_threads(void **state)
{
    cudnnHandle_t h = handle_new();
    cudnnBackendDescriptor_t cfgs[8], plan;
    struct thread_arg args[THREADS];
    pthread_t tid[THREADS];
    struct prob p;
    float *want;
    int64_t n;

    (void)state;
    prob_new(&p, h, &geoms[1], FWD, CUDNN_DATA_FLOAT, L_ODD, 1.0, 0.0);
    n = bk_heuristics(p.graph, CUDNN_HEUR_MODE_A, cfgs, 8);
    plan = bk_plan(h, cfgs[0]);
    for (int64_t i = 0; i < n; i++)
        bk_free(cfgs[i]);
    DNN_OK(execute(h, &p, plan));
    want = malloc(p.count[2] * sizeof(float));
    download(&p, 2, want);
    for (int i = 0; i < THREADS; i++) {
        args[i].p = &p;
        args[i].shared_plan = plan;
        args[i].want = want;
        assert_int_equal(pthread_create(&tid[i], NULL, thread_main, &args[i]),
                         0);
    }
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(tid[i], NULL), 0);
        assert_true(args[i].ok);
    }
    free(want);
    bk_free(plan);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

/* ---- Child runs: TF32 off, injected faults ------------------------------------ */

#define TF32_OFF_ARG "--tf32-off-child"
#define FAULT_ARG "--fault-child"
#define FAULT_SPEC "cudnnBackendExecute:1,cudnnBackendExecute:3:partial"

/* With NVIDIA_TF32_OVERRIDE=0 the Tensor Core engines do not take FLOAT
 * data: the heuristics give the three FP32 ones, whose results are FP32
 * accurate, and engine 1 is refused. HALF data keeps them. */
static void
test_tf32_off_child(void **state)
{
    cudnnHandle_t h = handle_new();
    cudnnBackendDescriptor_t cfgs[8], plan, cfg;
    struct prob p;
    double *res, *mag;
    float *got;
    int64_t n;

    (void)state;
    prob_new(&p, h, &geoms[0], BWD_DATA, CUDNN_DATA_FLOAT, L_NCHW, 1.0, 0.0);
    n = bk_heuristics(p.graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 8);
    assert_int_equal(n, 2);     /* implicit and precomputed, FP32 cores */
    for (int64_t i = 0; i < n; i++)
        assert_false(has_note(cfgs[i], CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
    ST(bk_engine_cfg(p.graph, 1, &cfg),
       CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH);
    plan = bk_plan(h, cfgs[0]);
    DNN_OK(execute(h, &p, plan));
    got = malloc(p.count[0] * sizeof(float));
    res = malloc(p.count[0] * sizeof(double));
    mag = malloc(p.count[0] * sizeof(double));
    download(&p, 0, got);
    reference(&p, NULL, res, mag);
    assert_true(max_rel_error(&p, got, res, mag, 1.0, 0.0) <= 1e-5);
    free(got), free(res), free(mag);
    for (int64_t i = 0; i < n; i++)
        bk_free(cfgs[i]);
    bk_free(plan);
    prob_free(&p);
    prob_new(&p, h, &geoms[0], BWD_DATA, CUDNN_DATA_HALF, L_NCHW, 1.0, 0.0);
    n = bk_heuristics(p.graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 8);
    assert_int_equal(n, 4);
    for (int64_t i = 0; i < n; i++)
        bk_free(cfgs[i]);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

/* The first execution fails whole (EXECUTION_FAILED, nothing written);
 * the third writes the first half of y (row-major), beta applied, and
 * fails. */
static void
test_fault_child(void **state)
{
    cudnnHandle_t h = handle_new();
    cudnnBackendDescriptor_t cfg, plan, pack;
    int64_t uids[3] = { UID_X, UID_W, UID_Y };
    float *full, *got;
    struct prob p;
    size_t half;
    void *old;

    (void)state;
    prob_new(&p, h, &geoms[0], FWD, CUDNN_DATA_FLOAT, L_NCHW, 1.0, 0.5);
    DNN_OK(bk_engine_cfg(p.graph, 0, &cfg));
    plan = bk_plan(h, cfg);
    pack = bk_pack(3, uids, p.dev, NULL);
    full = malloc(p.count[2] * sizeof(float));
    got = malloc(p.count[2] * sizeof(float));
    half = (p.count[2] + 1) / 2;
    ST(cudnnBackendExecute(h, plan, pack), CUDNN_STATUS_EXECUTION_FAILED);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    download(&p, 2, got);
    assert_memory_equal(got, p.val[2], p.count[2] * sizeof(float));
    DNN_OK(cudnnBackendExecute(h, plan, pack));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    download(&p, 2, full);
    /* Back to the old y, then the partial run. */
    old = p.dev[2];
    upload(&p, 2);
    bk_free(pack);
    pack = bk_pack(3, uids, p.dev, NULL);
    ST(cudnnBackendExecute(h, plan, pack), CUDNN_STATUS_EXECUTION_FAILED);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    download(&p, 2, got);
    assert_memory_equal(got, full, half * sizeof(float));
    assert_memory_equal(got + half, p.val[2] + half,
                        (p.count[2] - half) * sizeof(float));
    dev_free(old);
    free(full), free(got);
    bk_free(pack), bk_free(plan), bk_free(cfg);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

static void
test_tf32_off(void **state)
{
    (void)state;
    setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
    emu_test_rerun_with_faults("test_emu_cudnn_backend",
                               "cudnnBackendExecute:1000", TF32_OFF_ARG);
    unsetenv("NVIDIA_TF32_OVERRIDE");
}

static void
test_fault_injection(void **state)
{
    (void)state;
    emu_test_rerun_with_faults("test_emu_cudnn_backend", FAULT_SPEC,
                               FAULT_ARG);
}

/* ---- Fused graphs: convolution, bias, activation ------------------------------ */

#define UID_CONV_OUT 104
#define UID_BIAS 105
#define UID_SUM 106

/* A tensor of the graph, virtual when `virt`. */
static cudnnBackendDescriptor_t
bk_tensor_v(int64_t uid, int nb, const int64_t *dim, const int64_t *stride,
            bool virt)
{
    cudnnBackendDescriptor_t t = bk_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int64_t align = 16;

    bk_set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    bk_set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nb, dim);
    bk_set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nb, stride);
    bk_set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    bk_set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    bk_set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    DNN_OK(cudnnBackendFinalize(t));
    return t;
}

/* A pointwise descriptor of `mode` in FLOAT math; for RELU_FWD an upper
 * clip when `upper` > 0. */
static cudnnBackendDescriptor_t
bk_pw(cudnnPointwiseMode_t mode, double upper)
{
    cudnnBackendDescriptor_t pw = bk_new(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;

    bk_set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    bk_set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (upper > 0.0)
        bk_set(pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1,
               &upper);
    DNN_OK(cudnnBackendFinalize(pw));
    return pw;
}

/* A pointwise operation y = pw(x[, alpha2 * b]), finalized: its status. */
static cudnnStatus_t
bk_pw_op(cudnnBackendDescriptor_t pw, cudnnBackendDescriptor_t x,
         cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y, float alpha2,
         cudnnBackendDescriptor_t *op)
{
    *op = bk_new(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    bk_set(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    bk_set(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b != NULL) {
        bk_set(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
        bk_set(*op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1,
               &alpha2);
    }
    bk_set(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    return cudnnBackendFinalize(*op);
}

/* A graph of `n` operations, finalized: its status. */
static cudnnStatus_t
bk_graph_n(cudnnHandle_t h, int n, cudnnBackendDescriptor_t const *ops,
           cudnnBackendDescriptor_t *graph)
{
    *graph = bk_new(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    bk_set(*graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    bk_set(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
           CUDNN_TYPE_BACKEND_DESCRIPTOR, n, ops);
    return cudnnBackendFinalize(*graph);
}

/* The engine's behaviour notes, asked the frontend's way (the count with
 * no array, then the notes): 1 when RUNTIME_COMPILATION is one. */
static int
runtime_compiled(cudnnBackendDescriptor_t cfg)
{
    cudnnBackendDescriptor_t e = get_one(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                         CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t n = -1;
    int found = 0;

    DNN_OK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                    CUDNN_TYPE_BEHAVIOR_NOTE,
                                    CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n,
                                    NULL));
    assert_true(n >= 0 && n <= CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
    DNN_OK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                    CUDNN_TYPE_BEHAVIOR_NOTE, n, &n, notes));
    for (int64_t i = 0; i < n; i++)
        found |= notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    bk_free(e);
    return found;
}

/*
 * y = min(max(conv(x, w) + 0.5 * bias, 0), 0.75) as frameworks fuse a
 * convolution's bias and activation: the convolution's output and the
 * sum virtual, the bias 1 x K x 1 x 1 broadcast, the operations listed
 * out of order. The heuristics offer the two runtime-fusion engines
 * (Tensor Cores first, RUNTIME_COMPILATION), each plan's result is the
 * double reference's within TF32's or FP32's bound, and the engines of
 * one convolution refuse the graph.
 */
static void
test_fused_conv_bias_relu(void **state)
{
    cudnnHandle_t h = handle_new();
    const struct geom *g = &geoms[0];
    cudnnBackendDescriptor_t conv_out, bias_t, sum, out, op[3], pw[2];
    cudnnBackendDescriptor_t graph, cfgs[8], cfg;
    int64_t bdim[4] = { 1, g->k, 1, 1 }, bstride[4] = { g->k, 1, 1, 1 };
    float bias[16];
    void *bias_dev;
    struct prob p;
    int64_t n;

    (void)state;
    prob_new(&p, h, g, FWD, CUDNN_DATA_FLOAT, L_NHWC, 1.0, 0.0);
    for (int k = 0; k < g->k; k++)
        bias[k] = (float)(k - 2) * 0.375f;
    bias_dev = dev_upload(bias, (size_t)g->k * sizeof(float));
    conv_out = bk_tensor_v(UID_CONV_OUT, p.nb, p.dim[2], p.stride[2], true);
    sum = bk_tensor_v(UID_SUM, p.nb, p.dim[2], p.stride[2], true);
    out = p.t[2];
    bias_t = bk_tensor_v(UID_BIAS, 4, bdim, bstride, false);
    {
        cudnnBackendDescriptor_t t[3] = { p.t[0], p.t[1], conv_out };

        op[1] = bk_op(FWD, p.conv, t, 1.0, 0.0, 0);
    }
    pw[0] = bk_pw(CUDNN_POINTWISE_ADD, 0.0);
    pw[1] = bk_pw(CUDNN_POINTWISE_RELU_FWD, 0.75);
    DNN_OK(bk_pw_op(pw[0], conv_out, bias_t, sum, 0.5f, &op[2]));
    DNN_OK(bk_pw_op(pw[1], sum, NULL, out, 1.0f, &op[0]));
    DNN_OK(bk_graph_n(h, 3, op, &graph));
    assert_int_equal(get_i64(graph,
                             CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT),
                     8);
    /* The engines of one convolution do not take it. */
    for (int64_t e = 0; e < 6; e++)
        ST(bk_engine_cfg(graph, e, &cfg),
           CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
    n = bk_heuristics(graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 8);
    assert_int_equal(n, 2);
    for (int64_t i = 0; i < n; i++) {
        cudnnBackendDescriptor_t plan = bk_plan(h, cfgs[i]);
        cudnnBackendDescriptor_t e = get_one(cfgs[i],
                                             CUDNN_ATTR_ENGINECFG_ENGINE,
                                             CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        int64_t uids[4] = { UID_X, UID_W, UID_Y, UID_BIAS };
        void *ptrs[4] = { p.dev[0], p.dev[1], p.dev[2], bias_dev };
        int64_t ws = plan_workspace(plan);
        void *wsp = dev_alloc((size_t)ws);
        cudnnBackendDescriptor_t pack = bk_pack(4, uids, ptrs, wsp);
        int tc = has_note(cfgs[i], CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
        double *res = malloc(p.count[2] * sizeof(double));
        double *mag = malloc(p.count[2] * sizeof(double));
        float *got = malloc(p.count[2] * sizeof(float));
        double worst = 0.0;
        int clipped = 0, zeroed = 0;

        /* Tensor Cores first; both compile at run time. */
        assert_int_equal(get_i64(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX),
                         i == 0 ? 7 : 6);
        assert_int_equal(tc, i == 0);
        assert_true(runtime_compiled(cfgs[i]));
        /* The two virtual tensors live in the workspace. */
        assert_true(ws >= (int64_t)(2 * p.count[2] * sizeof(float)));
        DNN_OK(cudnnBackendExecute(h, plan, pack));
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        download(&p, 2, got);
        reference(&p, tc ? ref_tf32 : NULL, res, mag);
        for (size_t j = 0; j < p.count[2]; j++) {
            /* y is N K H W row-major here: K is (j / (H W)) % K. */
            size_t hw = (size_t)(p.dim[2][2] * p.dim[2][3]);
            int k = (int)((j / hw) % (size_t)g->k);
            double v = res[j] + 0.5 * bias[k];
            double want = v < 0.0 ? 0.0 : v > 0.75 ? 0.75 : v;
            double err = fabs(got[j] - want) /
                         (mag[j] + 0.5 * fabs(bias[k]) + 1e-30);

            clipped += v > 0.75, zeroed += v < 0.0;
            if (!(err <= worst))
                worst = err;
        }
        /* Both clips were exercised. */
        assert_true(clipped > 0 && zeroed > 0);
        if (!(worst <= (tc ? 1e-3 : 1e-5)))
            fail_msg("engine %lld: error %g", (long long)(i == 0 ? 7 : 6),
                     worst);
        bk_free(pack), bk_free(plan), bk_free(e);
        dev_free(wsp);
        free(res), free(mag), free(got);
    }
    /* The fallback heuristics: the FP32 runtime-fusion engine. */
    for (int64_t i = 0; i < n; i++)
        bk_free(cfgs[i]);
    n = bk_heuristics(graph, CUDNN_HEUR_MODE_FALLBACK, cfgs, 8);
    assert_int_equal(n, 1);
    assert_false(has_note(cfgs[0], CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
    bk_free(cfgs[0]);
    bk_free(graph);
    for (int i = 0; i < 3; i++)
        bk_free(op[i]);
    bk_free(pw[0]), bk_free(pw[1]);
    bk_free(conv_out), bk_free(sum), bk_free(bias_t);
    dev_free(bias_dev);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

/* The pointwise descriptors' documented statuses, a graph no engine
 * takes, and a pack without the bias. */
static void
test_fused_statuses(void **state)
{
    cudnnHandle_t h = handle_new();
    const struct geom *g = &geoms[0];
    cudnnBackendDescriptor_t pw, conv_out, sum, bias_t, bad_bias, op[3];
    cudnnBackendDescriptor_t graph, cfgs[8], plan, pack, back;
    cudnnPointwiseMode_t mode = CUDNN_POINTWISE_ADD;
    int64_t bdim[4] = { 1, g->k, 1, 1 }, bstride[4] = { g->k, 1, 1, 1 };
    int64_t bad_dim[4] = { 1, g->k, 1, 2 }, n = -1;
    double upper = -1.0;
    struct prob p;

    (void)state;
    prob_new(&p, h, g, FWD, CUDNN_DATA_FLOAT, L_NCHW, 1.0, 0.0);
    /* Mode and math precision are required. */
    pw = bk_new(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    bk_set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    ST(cudnnBackendFinalize(pw), CUDNN_STATUS_BAD_PARAM);
    ST(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC,
                                CUDNN_TYPE_INT64, 1, &n),
       CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
    bk_free(pw);
    /* The upper clip reads back as set; its default is FLT_MAX. */
    pw = bk_pw(CUDNN_POINTWISE_RELU_FWD, 0.0);
    DNN_OK(cudnnBackendGetAttribute(pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP,
                                    CUDNN_TYPE_DOUBLE, 1, &n, &upper));
    assert_int_equal(n, 1);
    assert_true(upper == (double)FLT_MAX);
    bk_free(pw);
    conv_out = bk_tensor_v(UID_CONV_OUT, p.nb, p.dim[2], p.stride[2], true);
    sum = bk_tensor_v(UID_SUM, p.nb, p.dim[2], p.stride[2], true);
    bias_t = bk_tensor_v(UID_BIAS, 4, bdim, bstride, false);
    bad_bias = bk_tensor_v(UID_BIAS, 4, bad_dim, bstride, false);
    pw = bk_pw(CUDNN_POINTWISE_ADD, 0.0);
    /* ADD without b; a b that does not broadcast to y. */
    ST(bk_pw_op(pw, conv_out, NULL, sum, 1.0f, &op[0]),
       CUDNN_STATUS_BAD_PARAM);
    bk_free(op[0]);
    ST(bk_pw_op(pw, conv_out, bad_bias, sum, 1.0f, &op[0]),
       CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
    bk_free(op[0]);
    /* conv -> add bias, the sum a virtual output: refused. */
    {
        cudnnBackendDescriptor_t t[3] = { p.t[0], p.t[1], conv_out };

        op[0] = bk_op(FWD, p.conv, t, 1.0, 0.0, 0);
    }
    DNN_OK(bk_pw_op(pw, conv_out, bias_t, sum, 1.0f, &op[1]));
    ST(bk_graph_n(h, 2, op, &graph), CUDNN_STATUS_BAD_PARAM);
    bk_free(graph), bk_free(op[1]);
    /* conv -> add bias into the real y: runs; its pointwise operation
     * reads back, the graph's operations do not (NOT_SUPPORTED, as
     * cuDNN 9.19). */
    DNN_OK(bk_pw_op(pw, conv_out, bias_t, p.t[2], 1.0f, &op[1]));
    DNN_OK(bk_graph_n(h, 2, op, &graph));
    back = get_one(op[1], CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                   CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    assert_int_equal(get_i64(back, CUDNN_ATTR_TENSOR_UNIQUE_ID), UID_BIAS);
    {
        cudnnBackendDescriptor_t two[2] = {
            bk_new(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR),
            bk_new(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) };

        ST(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 2, &n,
                                    two),
           CUDNN_STATUS_NOT_SUPPORTED);
        bk_free(two[0]), bk_free(two[1]);
    }
    bk_free(back);
    n = bk_heuristics(graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 8);
    assert_true(n >= 1);
    plan = bk_plan(h, cfgs[0]);
    {
        int64_t uids[3] = { UID_X, UID_W, UID_Y };
        void *ws = dev_alloc((size_t)plan_workspace(plan) + 256);

        /* No pointer for the bias. */
        pack = bk_pack(3, uids, p.dev, ws);
        ST(cudnnBackendExecute(h, plan, pack), CUDNN_STATUS_BAD_PARAM);
        bk_free(pack);
        dev_free(ws);
    }
    for (int64_t i = 0; i < n; i++)
        bk_free(cfgs[i]);
    bk_free(plan), bk_free(graph), bk_free(op[1]), bk_free(pw);
    /* A mode the engines do not compute: no configuration. */
    pw = bk_pw(CUDNN_POINTWISE_POW, 0.0);
    DNN_OK(bk_pw_op(pw, conv_out, bias_t, p.t[2], 1.0f, &op[1]));
    DNN_OK(bk_graph_n(h, 2, op, &graph));
    assert_int_equal(bk_heuristics(graph, CUDNN_HEUR_MODE_INSTANT, cfgs, 8),
                     0);
    bk_free(graph), bk_free(op[1]), bk_free(pw), bk_free(op[0]);
    bk_free(conv_out), bk_free(sum), bk_free(bias_t), bk_free(bad_bias);
    prob_free(&p);
    DNN_OK(cudnnDestroy(h));
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tf32_tests[] = {
        cmocka_unit_test(test_tf32_off_child),
    };
    const struct CMUnitTest fault_tests[] = {
        cmocka_unit_test(test_fault_child),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directions_layouts_types),
        cmocka_unit_test(test_every_engine),
        cmocka_unit_test(test_beta_zero_ignores_output),
        cmocka_unit_test(test_plan_walk),
        cmocka_unit_test(test_engines_knobs_workspaces),
        cmocka_unit_test(test_note_count_queries),
        cmocka_unit_test(test_descriptor_statuses),
        cmocka_unit_test(test_graph_and_execute_statuses),
        cmocka_unit_test(test_stream_order_and_time),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_tf32_off),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_fused_conv_bias_relu),
        cmocka_unit_test(test_fused_statuses),
    };

    if (argc > 1 && strcmp(argv[1], TF32_OFF_ARG) == 0)
        return cmocka_run_group_tests_name("emu_cudnn_backend_tf32_off",
                                           tf32_tests, NULL, NULL);
    if (argc > 1 && strcmp(argv[1], FAULT_ARG) == 0)
        return cmocka_run_group_tests_name("emu_cudnn_backend_faults",
                                           fault_tests, NULL, NULL);
    unsetenv("AMPSHIM_EMU_FAIL");
    unsetenv("NVIDIA_TF32_OVERRIDE");
    return cmocka_run_group_tests_name("emu_cudnn_backend", tests, NULL,
                                       NULL);
}
