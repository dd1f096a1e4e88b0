/* fused_graph: an FP32 cuDNN program that fuses a convolution's epilogue
 * as frameworks do through the backend (graph) API: a forward
 * convolution into a virtual tensor, then pointwise operations (a
 * per-channel scale, a bias of 1 x K x 1 x 1 broadcast over N, H, W, a
 * ReLU with or without an upper clip), built with the raw descriptors as
 * cudnn-frontend builds them: the heuristics' engine configurations (mode
 * A; the count first) with each engine's numerical and behaviour notes
 * read the frontend's way (a count query, no array), the first that
 * makes an execution plan, its workspace (which holds the virtual
 * tensors) and a variant pack of the real tensors.
 *
 * Each case's result is compared with an FP64 host reference: the
 * largest |got - want| / (sum |products| |scale| + |bias|) must stay
 * within the bound --tol names (tf32, the default: 2^-10, what cuDNN's
 * default TF32 math allows; fp32: 1e-5). Prints one line per case:
 * case NAME m=OUTPUTS n=1 k=REDUCTION op=fwd status=NAME(N)
 *   err/bound=R hash=H ok|FAIL api=cudnnBackendExecute class=fused
 *   engine=E ws=BYTES
 * then "result: P of N cases passed", and exits 0 when every case
 * passed, 1 when one failed, 3 on an unexpected API error. */
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 4

enum { UID_X = 1, UID_W, UID_Y, UID_SCALE, UID_BIAS, UID_VIRTUAL = 100 };

enum epilogue { E_BIAS, E_BIAS_RELU, E_SCALE_BIAS_RELU };

struct fcase {
    const char *name;
    int n, c, k, h, w, r, s, pad, stride;
    int nhwc;
    enum epilogue epi;
    double upper;       /* the ReLU's upper clip; 0: none */
};

static const struct fcase cases[] = {
    { "bias_relu_nchw", 2, 3, 5, 7, 6, 3, 3, 1, 1, 0, E_BIAS_RELU, 0.0 },
    { "bias_relu_clip_nhwc", 2, 4, 6, 8, 8, 3, 3, 1, 2, 1, E_BIAS_RELU,
      0.5 },
    { "bias_nchw", 1, 2, 3, 5, 5, 3, 3, 0, 1, 0, E_BIAS, 0.0 },
    { "scale_bias_relu_nhwc", 2, 5, 4, 6, 5, 1, 3, 0, 1, 1,
      E_SCALE_BIAS_RELU, 0.0 },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

static void
failed(const char *what, int status)
{
    fprintf(stderr, "fused_graph: %s failed (%d)\n", what, status);
    exit(3);
}

static void
check(cudnnStatus_t st, const char *what)
{
    if (st != CUDNN_STATUS_SUCCESS)
        failed(what, (int)st);
}

static cudnnBackendDescriptor_t
make(cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t d = NULL;

    check(cudnnBackendCreateDescriptor(type, &d), "create");
    return d;
}

static void
set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
    cudnnBackendAttributeType_t type, int64_t n, const void *v)
{
    check(cudnnBackendSetAttribute(d, name, type, n, v), "set attribute");
}

/* Strides of a 4-d tensor of sizes dim (N, C, H, W) in NCHW or NHWC. */
static void
strides_of(const int64_t dim[4], int nhwc, int64_t stride[4])
{
    if (nhwc) {
        stride[1] = 1;
        stride[3] = dim[1];
        stride[2] = dim[3] * dim[1];
        stride[0] = dim[2] * stride[2];
    } else {
        stride[3] = 1;
        stride[2] = dim[3];
        stride[1] = dim[2] * dim[3];
        stride[0] = dim[1] * stride[1];
    }
}

static cudnnBackendDescriptor_t
tensor(int64_t uid, const int64_t dim[4], const int64_t stride[4],
       bool is_virtual)
{
    cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int64_t align = 16;

    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, stride);
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    check(cudnnBackendFinalize(t), "tensor");
    return t;
}

/* A pointwise operation y = mode(x[, b]) in FLOAT math. */
static cudnnBackendDescriptor_t
pointwise(cudnnPointwiseMode_t mode, double upper,
          cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
          cudnnBackendDescriptor_t y)
{
    cudnnBackendDescriptor_t pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    cudnnBackendDescriptor_t op =
        make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;

    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (upper > 0.0)
        set(pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1,
            &upper);
    check(cudnnBackendFinalize(pw), "pointwise descriptor");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b != NULL)
        set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    check(cudnnBackendFinalize(op), "pointwise operation");
    cudnnBackendDestroyDescriptor(pw);
    return op;
}

static cudnnBackendDescriptor_t
conv_op(const struct fcase *c, cudnnBackendDescriptor_t x,
        cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y)
{
    cudnnBackendDescriptor_t conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    cudnnBackendDescriptor_t op =
        make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t nsp = 2, pad[2] = { c->pad, c->pad };
    int64_t stride[2] = { c->stride, c->stride }, dil[2] = { 1, 1 };
    float alpha = 1.0f, beta = 0.0f;

    set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
        &comp);
    set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
        1, &mode);
    set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp);
    set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
        stride);
    set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
    check(cudnnBackendFinalize(conv), "convolution");
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT,
        1, &alpha);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT,
        1, &beta);
    check(cudnnBackendFinalize(op), "convolution operation");
    cudnnBackendDestroyDescriptor(conv);
    return op;
}

/* The engine's notes the frontend's way: the count with no array, then
 * the notes. */
static void
read_notes(cudnnBackendDescriptor_t cfg)
{
    cudnnBackendDescriptor_t e = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t n = 0;

    check(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e),
          "engine of a configuration");
    check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                   CUDNN_TYPE_NUMERICAL_NOTE,
                                   CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, NULL),
          "numerical note count");
    check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                   CUDNN_TYPE_NUMERICAL_NOTE, n, &n, num),
          "numerical notes");
    check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                   CUDNN_TYPE_BEHAVIOR_NOTE,
                                   CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, NULL),
          "behaviour note count");
    check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                   CUDNN_TYPE_BEHAVIOR_NOTE, n, &n, beh),
          "behaviour notes");
    cudnnBackendDestroyDescriptor(e);
}

/* The first configuration of the heuristics (mode A) that makes a plan,
 * and its engine's global index. */
static cudnnBackendDescriptor_t
plan_for(cudnnHandle_t h, cudnnBackendDescriptor_t graph, int64_t *engine)
{
    cudnnBackendDescriptor_t heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendDescriptor_t cfgs[16], plan = NULL;
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t count = 0, got = 0;

    set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    check(cudnnBackendFinalize(heur), "heuristics");
    check(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                   NULL),
          "heuristics count");
    if (count > 16)
        count = 16;
    for (int64_t i = 0; i < count; i++)
        cfgs[i] = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    check(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                   cfgs),
          "heuristics results");
    for (int64_t i = 0; i < count && plan == NULL; i++) {
        cudnnBackendDescriptor_t e = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        int64_t n = 0;

        read_notes(cfgs[i]);
        plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
        set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
        if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
            cudnnBackendDestroyDescriptor(plan);
            plan = NULL;
        } else if (cudnnBackendGetAttribute(cfgs[i],
                                            CUDNN_ATTR_ENGINECFG_ENGINE,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                            &n, &e) == CUDNN_STATUS_SUCCESS) {
            cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                     CUDNN_TYPE_INT64, 1, &n, engine);
        }
        cudnnBackendDestroyDescriptor(e);
    }
    for (int64_t i = 0; i < count; i++)
        cudnnBackendDestroyDescriptor(cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
    if (plan == NULL)
        failed("no engine configuration makes a plan", 0);
    return plan;
}

static uint64_t
fnv1a64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Uniform in [-1, 1), from a fixed sequence. */
static float
rnd(void)
{
    static uint32_t state = 12345u;

    state = state * 1664525u + 1013904223u;
    return (float)((int32_t)(state >> 8) - (1 << 23)) / (float)(1 << 23);
}

static void *
upload(const float *host, size_t n)
{
    void *d = NULL;

    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess)
        failed("cudaMalloc", 0);
    if (cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyHostToDevice) !=
        cudaSuccess)
        failed("cudaMemcpy", 0);
    return d;
}

static int
run_case(cudnnHandle_t h, const struct fcase *c, double bound)
{
    int p = (c->h + 2 * c->pad - c->r) / c->stride + 1;
    int q = (c->w + 2 * c->pad - c->s) / c->stride + 1;
    int64_t xd[4] = { c->n, c->c, c->h, c->w }, wd[4] = { c->k, c->c, c->r,
                                                          c->s };
    int64_t yd[4] = { c->n, c->k, p, q }, cd[4] = { 1, c->k, 1, 1 };
    int64_t xs[4], ws4[4], ys[4], cs[4] = { c->k, 1, 1, 1 };
    size_t nx = (size_t)c->n * c->c * c->h * c->w;
    size_t nw = (size_t)c->k * c->c * c->r * c->s;
    size_t ny = (size_t)c->n * c->k * p * q;
    float *x = malloc(nx * 4), *w = malloc(nw * 4), *y = malloc(ny * 4);
    float *xm = malloc(nx * 4), *wm = malloc(nw * 4), *ym = malloc(ny * 4);
    float bias[16], scale[16];
    cudnnBackendDescriptor_t t[5], v[2], ops[MAX_OPS], graph, plan, pack;
    void *dev[5], *wsp = NULL;
    int64_t uids[5] = { UID_X, UID_W, UID_Y, UID_BIAS, UID_SCALE };
    int64_t engine = -1, wsize = 0, got = 0;
    int nops = 0, npack = 4;
    double worst = 0.0;
    cudnnStatus_t st;
    char ratio[32];
    int pass;

    strides_of(xd, c->nhwc, xs);
    strides_of(wd, c->nhwc, ws4);
    strides_of(yd, c->nhwc, ys);
    for (int k = 0; k < c->k; k++) {
        bias[k] = 0.25f * rnd();
        scale[k] = 1.0f + 0.5f * rnd();
    }
    /* Logical NCHW values, stored at the layout's offsets. */
    for (size_t i = 0; i < nx; i++) {
        size_t ww = i % c->w, hh = i / c->w % c->h, cc = i / c->w / c->h % c->c;
        size_t nn = i / c->w / c->h / c->c;

        x[i] = rnd();
        xm[nn * xs[0] + cc * xs[1] + hh * xs[2] + ww * xs[3]] = x[i];
    }
    for (size_t i = 0; i < nw; i++) {
        size_t ss = i % c->s, rr = i / c->s % c->r, cc = i / c->s / c->r % c->c;
        size_t kk = i / c->s / c->r / c->c;

        w[i] = rnd();
        wm[kk * ws4[0] + cc * ws4[1] + rr * ws4[2] + ss * ws4[3]] = w[i];
    }
    for (size_t i = 0; i < ny; i++)
        ym[i] = NAN; /* the output's old contents: never read */
    dev[0] = upload(xm, nx);
    dev[1] = upload(wm, nw);
    dev[2] = upload(ym, ny);
    dev[3] = upload(bias, (size_t)c->k);
    dev[4] = upload(scale, (size_t)c->k);
    t[0] = tensor(UID_X, xd, xs, false);
    t[1] = tensor(UID_W, wd, ws4, false);
    t[2] = tensor(UID_Y, yd, ys, false);
    t[3] = tensor(UID_BIAS, cd, cs, false);
    t[4] = tensor(UID_SCALE, cd, cs, false);
    v[0] = tensor(UID_VIRTUAL, yd, ys, true);
    v[1] = tensor(UID_VIRTUAL + 1, yd, ys, true);
    /* The epilogue: conv -> v0; [v0 * scale -> v1;] v -> + bias -> y or
     * a virtual; relu -> y. */
    ops[nops++] = conv_op(c, t[0], t[1], v[0]);
    switch (c->epi) {
    case E_BIAS:
        ops[nops++] = pointwise(CUDNN_POINTWISE_ADD, 0.0, v[0], t[3], t[2]);
        break;
    case E_BIAS_RELU:
        ops[nops++] = pointwise(CUDNN_POINTWISE_ADD, 0.0, v[0], t[3], v[1]);
        ops[nops++] = pointwise(CUDNN_POINTWISE_RELU_FWD, c->upper, v[1], NULL,
                                t[2]);
        break;
    case E_SCALE_BIAS_RELU: {
        cudnnBackendDescriptor_t v2 = tensor(UID_VIRTUAL + 2, yd, ys, true);

        ops[nops++] = pointwise(CUDNN_POINTWISE_MUL, 0.0, v[0], t[4], v[1]);
        ops[nops++] = pointwise(CUDNN_POINTWISE_ADD, 0.0, v[1], t[3], v2);
        ops[nops++] = pointwise(CUDNN_POINTWISE_RELU_FWD, c->upper, v2, NULL,
                                t[2]);
        cudnnBackendDestroyDescriptor(v2);
        npack = 5;
        break;
    }
    }
    graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        nops, ops);
    check(cudnnBackendFinalize(graph), "operation graph");
    plan = plan_for(h, graph, &engine);
    check(cudnnBackendGetAttribute(plan,
                                   CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                   CUDNN_TYPE_INT64, 1, &got, &wsize),
          "workspace size");
    if (wsize > 0 && cudaMalloc(&wsp, (size_t)wsize) != cudaSuccess)
        failed("cudaMalloc", 0);
    pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, npack,
        uids);
    set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
        npack, dev);
    set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &wsp);
    check(cudnnBackendFinalize(pack), "variant pack");
    st = cudnnBackendExecute(h, plan, pack);
    if (cudaDeviceSynchronize() != cudaSuccess)
        failed("cudaDeviceSynchronize", 0);
    if (cudaMemcpy(ym, dev[2], ny * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
        failed("cudaMemcpy", 0);
    /* The FP64 reference, element by element of y's logical order. */
    for (size_t i = 0; i < ny && st == CUDNN_STATUS_SUCCESS; i++) {
        int qq = (int)(i % q), pp = (int)(i / q % p);
        int kk = (int)(i / q / p % c->k), nn = (int)(i / q / p / c->k);
        double sum = 0.0, mag = 0.0, want, err;
        float have;

        for (int cc = 0; cc < c->c; cc++)
            for (int r = 0; r < c->r; r++)
                for (int s = 0; s < c->s; s++) {
                    int ih = pp * c->stride - c->pad + r;
                    int iw = qq * c->stride - c->pad + s;
                    double a, b;

                    if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w)
                        continue;
                    a = x[(((size_t)nn * c->c + cc) * c->h + ih) * c->w + iw];
                    b = w[(((size_t)kk * c->c + cc) * c->r + r) * c->s + s];
                    sum += a * b;
                    mag += fabs(a * b);
                }
        if (c->epi == E_SCALE_BIAS_RELU) {
            sum *= scale[kk];
            mag *= fabs(scale[kk]);
        }
        want = sum + bias[kk];
        mag += fabs(bias[kk]);
        if (c->epi != E_BIAS) {
            want = want > 0.0 ? want : 0.0;
            if (c->upper > 0.0 && want > c->upper)
                want = c->upper;
        }
        y[i] = (float)want;
        have = ym[nn * ys[0] + kk * ys[1] + pp * ys[2] + qq * ys[3]];
        err = fabs(have - want) / (mag + 1e-30);
        if (!(err <= worst))
            worst = err;
    }
    pass = st == CUDNN_STATUS_SUCCESS && worst <= bound;
    snprintf(ratio, sizeof(ratio), "%.3e", worst / bound);
    printf("case %s m=%zu n=1 k=%d op=fwd status=%s(%d) err/bound=%s "
           "hash=%016" PRIx64 " %s api=cudnnBackendExecute class=fused "
           "engine=%lld ws=%lld\n",
           c->name, ny, c->c * c->r * c->s, cudnnGetErrorString(st), (int)st,
           ratio, fnv1a64(ym, ny * 4), pass ? "ok" : "FAIL",
           (long long)engine, (long long)wsize);
    cudnnBackendDestroyDescriptor(pack);
    cudnnBackendDestroyDescriptor(plan);
    cudnnBackendDestroyDescriptor(graph);
    for (int i = 0; i < nops; i++)
        cudnnBackendDestroyDescriptor(ops[i]);
    for (int i = 0; i < 5; i++) {
        cudnnBackendDestroyDescriptor(t[i]);
        cudaFree(dev[i]);
    }
    cudnnBackendDestroyDescriptor(v[0]);
    cudnnBackendDestroyDescriptor(v[1]);
    cudaFree(wsp);
    free(x), free(w), free(y), free(xm), free(wm), free(ym);
    return pass;
}

int
main(int argc, char **argv)
{
    double bound = ldexp(1.0, -10);
    cudnnHandle_t h;
    int passed = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc) {
            const char *t = argv[++i];

            bound = strcmp(t, "fp32") == 0   ? 1e-5
                    : strcmp(t, "tf32") == 0 ? ldexp(1.0, -10)
                                             : atof(t);
        } else {
            fprintf(stderr, "usage: fused_graph [--tol tf32|fp32|NUMBER]\n");
            return 2;
        }
    }
    check(cudnnCreate(&h), "cudnnCreate");
    for (int i = 0; i < NCASES; i++)
        passed += run_case(h, &cases[i], bound);
    cudnnDestroy(h);
    printf("result: %d of %d cases passed\n", passed, NCASES);
    return passed == NCASES ? 0 : 1;
}
