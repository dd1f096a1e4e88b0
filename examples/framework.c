/* framework: an FP32 training loop shaped like a deep-learning framework
 * under the hood, for a shim that must work at framework scale.
 *
 * - Every GEMM goes through one wrapper, fw_gemm (as PyTorch's
 *   at::cuda::blas::gemm): the plain layers' forward and both backward
 *   products and the Linear layers' backward products, over 60 shapes a
 *   step.
 * - Biased Linear layers run forward through cublasLtMatmul with the BIAS
 *   epilogue, a bias pointer per layer (one matmul descriptor per layer,
 *   layouts and the heuristic's algorithm cached per sequence length).
 * - Convolutions go through cuDNN's graph API: a plan per shape and
 *   direction (forward, backward data, backward filter), built on first
 *   use with the handle of the thread that runs it and executed from the
 *   program's plan cache (a hash map keyed by shape and direction), a
 *   variant pack per execution.
 * - Backward is issued by a second thread on its own stream and handles,
 *   ordered after forward by an event; forward waits for backward's event
 *   before the next step. The host never waits for the device inside the
 *   loop: only after the warm-up steps and at the end.
 * - The token count T (the plain layers' m, the Linear layers' n) varies
 *   per step among three values; after the warm-up steps each length's
 *   step is captured into a CUDA graph (forward and the backward thread's
 *   stream joined by events), and the graphs are replayed in turn.
 * - One plain layer is ill-conditioned: its input is 1 + 2^-8 u, its
 *   weight columns sum to zero exactly, so its forward product cancels
 *   (FP32 keeps it to about 1e-4; 10 bits of mantissa do not).
 *
 * At the end every layer's outputs (forward and both gradients) are
 * compared with a double-precision host reference, in the max norm:
 * max |got - ref| / max |ref|. Prints one line per layer, "worst ..." and
 * "framework: layers=.. shapes=.. plans=.. graphs=.. replays=..
 * worst_rel=.."; exits 0 when every layer is within --bound, 1 when one
 * is not, 2 on a usage error, 3 when a CUDA call fails.
 *
 * --conv-layers N (1 to 256, 40 by default) sets the convolution layers,
 * each of its own shape.
 *
 * usage: framework [--steps N] [--replays N] [--small] [--conv-layers N]
 *                  [--bound X] */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <pthread.h>
#include <stdatomic.h>

#define EXAMPLE_PROG "framework"
#include "example_util.h"

#define GEMM_LAYERS 18
#define LINEAR_LAYERS 6
#define CONV_LAYERS 40          /* the default; --conv-layers */
#define CONV_LAYERS_MAX 256
#define SEQ_LENGTHS 3
#define MAP_SLOTS 1024          /* a power of two */
#define KEY_INTS 10
#define WORKSPACE_BYTES (8u << 20)

enum dir { FWD, BWD_DATA, BWD_FILTER, DIRS };
static const char *const dir_name[DIRS] = { "fwd", "bwd_data",
                                            "bwd_filter" };

/* ---- The model -------------------------------------------------------- */

/* A plain layer, token-major: Y (T x out) = X (T x in) W (in x out),
 * column-major, leading dimension T. */
struct gemm_layer {
    int in, out, ill;
    float *hx, *hw, *hdy;       /* host inputs */
    float *x, *w, *dy, *y, *dx, *dw;
};

/* A biased Linear layer, feature-major as PyTorch calls cuBLASLt:
 * D (out x T) = op(W) X + bias, W stored in x out (transposed), X in x T. */
struct linear_layer {
    int in, out;
    float *hx, *hw, *hb, *hdy;
    float *x, *w, *b, *dy, *d, *dx, *dw;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb[SEQ_LENGTHS], ld[SEQ_LENGTHS];
    cublasLtMatmulHeuristicResult_t algo[SEQ_LENGTHS];
};

/* A 2-d convolution, NCHW: x n c h h, w k c r r, y n k o o. */
struct conv_layer {
    int n, c, k, h, r, stride, pad, o;
    float *hx, *hw, *hdy;
    float *x, *w, *dy, *y, *dx, *dw;
};

/* An entry of the program's hash maps: the plan cache (value: the plan)
 * and the set of GEMM shapes the wrapper saw (value unused). */
struct map_entry {
    int used;
    int key[KEY_INTS];
    cudnnBackendDescriptor_t plan;
    int64_t workspace;
};

struct map {
    pthread_mutex_t lock;
    int count;
    struct map_entry slot[MAP_SLOTS];
};

/* What one thread issues with: its stream, handles and workspace. */
struct lane {
    cudaStream_t stream;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    void *workspace;
};

struct options {
    int steps, replays, small, conv_layers;
    double bound;
};

struct model {
    struct options opt;
    int seq[SEQ_LENGTHS], tmax;
    struct gemm_layer gemm[GEMM_LAYERS];
    struct linear_layer linear[LINEAR_LAYERS];
    struct conv_layer conv[CONV_LAYERS_MAX];
    cublasLtHandle_t lt;
    struct lane fwd, bwd;
    cudaEvent_t fwd_done, bwd_done;
    struct map plans, shapes;
    /* The backward thread's queue: one step at a time. */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int posted, issued, quit, step_seq;
};

static atomic_int api_errors;
/* Calls issued (captured ones included; a replay issues none). */
static atomic_int gemm_calls, lt_calls, conv_calls;

static int
cuda_bad(const char *what, cudaError_t err)
{
    if (!cuda_failed(what, err))
        return 0;
    api_errors++;
    return 1;
}

static int
blas_bad(const char *what, cublasStatus_t s)
{
    if (!cublas_failed(what, s))
        return 0;
    api_errors++;
    return 1;
}

static int
dnn_bad(const char *what, cudnnStatus_t s)
{
    if (!cudnn_failed(what, s))
        return 0;
    api_errors++;
    return 1;
}

#define DNN(call) dnn_bad(#call, (call))

/* ---- Hash maps -------------------------------------------------------- */

static void
map_init(struct map *m)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
}

/* The entry of key (inserted unused when absent, `*fresh` set); NULL when
 * the map is full. Called with the map's lock held. */
static struct map_entry *
map_slot(struct map *m, const int *key, int *fresh)
{
    uint64_t h = fnv1a64(key, KEY_INTS * sizeof(int), 0xcbf29ce484222325ULL);

    *fresh = 0;
    for (size_t i = 0; i < MAP_SLOTS; i++) {
        struct map_entry *e = &m->slot[(h + i) & (MAP_SLOTS - 1)];

        if (!e->used) {
            e->used = 1;
            memcpy(e->key, key, sizeof(e->key));
            m->count++;
            *fresh = 1;
            return e;
        }
        if (memcmp(e->key, key, sizeof(e->key)) == 0)
            return e;
    }
    return NULL;
}

static int
map_count(struct map *m)
{
    int n;

    pthread_mutex_lock(&m->lock);
    n = m->count;
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* ---- The GEMM wrapper ------------------------------------------------- */

/* Notes the shape in the set of shapes seen. */
static void
note_shape(struct model *md, int api, int ta, int tb, int m, int n, int k)
{
    int key[KEY_INTS] = { api, ta, tb, m, n, k };
    int fresh;

    pthread_mutex_lock(&md->shapes.lock);
    if (map_slot(&md->shapes, key, &fresh) == NULL)
        api_errors++;
    pthread_mutex_unlock(&md->shapes.lock);
}

/* Every FP32 GEMM of the program: C = op(A) op(B), alpha 1, beta 0, on the
 * lane's handle (bound to its stream). */
static void
fw_gemm(struct model *md, const struct lane *ln, cublasOperation_t ta,
        cublasOperation_t tb, int m, int n, int k, const float *a, int lda,
        const float *b, int ldb, float *c, int ldc)
{
    static const float one = 1.0f, zero = 0.0f;

    note_shape(md, 0, (int)ta, (int)tb, m, n, k);
    gemm_calls++;
    blas_bad("cublasSgemm_v2",
             cublasSgemm_v2(ln->blas, ta, tb, m, n, k, &one, a, lda, b, ldb,
                            &zero, c, ldc));
}

/* ---- cuBLASLt Linear layers ------------------------------------------- */

static cublasLtMatrixLayout_t
lt_layout(int rows, int cols, int ld)
{
    cublasLtMatrixLayout_t l = NULL;

    if (blas_bad("cublasLtMatrixLayoutCreate",
                 cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, (uint64_t)rows,
                                            (uint64_t)cols, ld)))
        return NULL;
    return l;
}

/* The layer's matmul descriptor: W transposed, the bias epilogue with the
 * layer's own bias pointer (a failure is counted in api_errors). */
static void
linear_desc(struct linear_layer *l)
{
    cublasOperation_t t = CUBLAS_OP_T;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;

    if (blas_bad("cublasLtMatmulDescCreate",
                 cublasLtMatmulDescCreate(&l->op, CUBLAS_COMPUTE_32F,
                                          CUDA_R_32F)))
        return;
    cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_TRANSA, &t,
                                   sizeof(t));
    cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                   sizeof(epi));
    cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                   &l->b, sizeof(l->b));
    l->la = lt_layout(l->in, l->out, l->in);
}

/* The layouts and algorithm for sequence length index s, made on first
 * use (the heuristic's first answer within the workspace, as frameworks
 * take it). 0, or -1 on failure. */
static int
linear_prepare(struct model *md, struct linear_layer *l, int s)
{
    cublasLtMatmulPreference_t pref = NULL;
    uint64_t ws = WORKSPACE_BYTES;
    int t = md->seq[s], found = 0;

    if (l->lb[s])
        return 0;
    l->lb[s] = lt_layout(l->in, t, l->in);
    l->ld[s] = lt_layout(l->out, t, l->out);
    if (!l->lb[s] || !l->ld[s] ||
        blas_bad("cublasLtMatmulPreferenceCreate",
                 cublasLtMatmulPreferenceCreate(&pref)))
        return -1;
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    if (blas_bad("cublasLtMatmulAlgoGetHeuristic",
                 cublasLtMatmulAlgoGetHeuristic(md->lt, l->op, l->la,
                                                l->lb[s], l->ld[s], l->ld[s],
                                                pref, 1, &l->algo[s],
                                                &found)) ||
        found < 1) {
        cublasLtMatmulPreferenceDestroy(pref);
        api_errors++;
        return -1;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    return 0;
}

static void
linear_forward(struct model *md, struct linear_layer *l, int s)
{
    static const float one = 1.0f, zero = 0.0f;

    if (linear_prepare(md, l, s) != 0)
        return;
    note_shape(md, 1, 1, 0, l->out, md->seq[s], l->in);
    lt_calls++;
    blas_bad("cublasLtMatmul",
             cublasLtMatmul(md->lt, l->op, &one, l->w, l->la, l->x, l->lb[s],
                            &zero, l->d, l->ld[s], l->d, l->ld[s],
                            &l->algo[s].algo, md->fwd.workspace,
                            WORKSPACE_BYTES, md->fwd.stream));
}

/* ---- cuDNN graph-API convolutions ------------------------------------- */

#define UID_X 1
#define UID_W 2
#define UID_Y 3

static cudnnBackendDescriptor_t
make_tensor(int64_t uid, int64_t n, int64_t c, int64_t h)
{
    cudnnBackendDescriptor_t t = NULL;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int64_t dim[4] = { n, c, h, h };
    int64_t stride[4] = { c * h * h, h * h, h, 1 };
    int64_t align = 16;

    if (DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR,
                                         &t)))
        return NULL;
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE,
                                 CUDNN_TYPE_DATA_TYPE, 1, &type));
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                 CUDNN_TYPE_INT64, 4, dim));
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES,
                                 CUDNN_TYPE_INT64, 4, stride));
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                 CUDNN_TYPE_INT64, 1, &uid));
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                 CUDNN_TYPE_INT64, 1, &align));
    DNN(cudnnBackendFinalize(t));
    return t;
}

static cudnnBackendDescriptor_t
make_conv_desc(const struct conv_layer *l)
{
    cudnnBackendDescriptor_t c = NULL;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t nsp = 2, pad[2] = { l->pad, l->pad };
    int64_t stride[2] = { l->stride, l->stride }, dil[2] = { 1, 1 };

    if (DNN(cudnnBackendCreateDescriptor(
            CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &c)))
        return NULL;
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                 CUDNN_TYPE_DATA_TYPE, 1, &comp));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                 CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                                 CUDNN_TYPE_INT64, 1, &nsp));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                                 CUDNN_TYPE_INT64, nsp, pad));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                                 CUDNN_TYPE_INT64, nsp, pad));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                 CUDNN_TYPE_INT64, nsp, stride));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                                 CUDNN_TYPE_INT64, nsp, dil));
    DNN(cudnnBackendFinalize(c));
    return c;
}

static const cudnnBackendDescriptorType_t op_type[DIRS] = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
};

/* alpha, beta, conv, x, w, y in the forward roles. */
static const cudnnBackendAttributeName_t op_attr[DIRS][6] = {
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

/* The operation graph of the layer's convolution in direction d. */
static cudnnBackendDescriptor_t
make_graph(cudnnHandle_t h, const struct conv_layer *l, enum dir d)
{
    cudnnBackendDescriptor_t t[3], conv, op = NULL, graph = NULL;
    float alpha = 1.0f, beta = 0.0f;

    t[0] = make_tensor(UID_X, l->n, l->c, l->h);
    t[1] = make_tensor(UID_W, l->k, l->c, l->r);
    t[2] = make_tensor(UID_Y, l->n, l->k, l->o);
    conv = make_conv_desc(l);
    DNN(cudnnBackendCreateDescriptor(op_type[d], &op));
    DNN(cudnnBackendSetAttribute(op, op_attr[d][0], CUDNN_TYPE_FLOAT, 1,
                                 &alpha));
    DNN(cudnnBackendSetAttribute(op, op_attr[d][1], CUDNN_TYPE_FLOAT, 1,
                                 &beta));
    DNN(cudnnBackendSetAttribute(op, op_attr[d][2],
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
    for (int i = 0; i < 3; i++)
        DNN(cudnnBackendSetAttribute(op, op_attr[d][3 + i],
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[i]));
    DNN(cudnnBackendFinalize(op));
    DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                                     &graph));
    DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                 CUDNN_TYPE_HANDLE, 1, &h));
    DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    DNN(cudnnBackendFinalize(graph));
    cudnnBackendDestroyDescriptor(op);
    cudnnBackendDestroyDescriptor(conv);
    for (int i = 0; i < 3; i++)
        cudnnBackendDestroyDescriptor(t[i]);
    return graph;
}

/* The plan of the heuristics' first configuration that finalizes, as
 * cudnn-frontend builds it; NULL when none does. */
static cudnnBackendDescriptor_t
make_plan(cudnnHandle_t h, const struct conv_layer *l, enum dir d)
{
    cudnnBackendDescriptor_t graph = make_graph(h, l, d), heur = NULL;
    cudnnBackendDescriptor_t cfgs[8] = { NULL }, plan = NULL;
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t n = 0, got = 0;

    DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                                     &heur));
    DNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    DNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,
                                 CUDNN_TYPE_HEUR_MODE, 1, &mode));
    DNN(cudnnBackendFinalize(heur));
    DNN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL));
    if (n > 8)
        n = 8;
    for (int64_t i = 0; i < n; i++)
        DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                         &cfgs[i]));
    if (n > 0)
        DNN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got,
                                     cfgs));
    for (int64_t i = 0; i < got && plan == NULL; i++) {
        DNN(cudnnBackendCreateDescriptor(
            CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
        DNN(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                     CUDNN_TYPE_HANDLE, 1, &h));
        DNN(cudnnBackendSetAttribute(plan,
                                     CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &cfgs[i]));
        if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
            cudnnBackendDestroyDescriptor(plan);
            plan = NULL;
        }
    }
    if (plan == NULL)
        dnn_bad("no engine configuration finalizes",
                CUDNN_STATUS_NOT_SUPPORTED);
    for (int64_t i = 0; i < n; i++)
        cudnnBackendDestroyDescriptor(cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
    cudnnBackendDestroyDescriptor(graph);
    return plan;
}

/* The cached plan of the layer's shape in direction d, built on a miss
 * with the lane's handle; NULL when it cannot be built or needs more
 * workspace than the lane has. */
static struct map_entry *
plan_lookup(struct model *md, const struct lane *ln,
            const struct conv_layer *l, enum dir d)
{
    int key[KEY_INTS] = { (int)d, l->n, l->c, l->k, l->h, l->r, l->stride,
                          l->pad };
    struct map_entry *e;
    int64_t one = 0;
    int fresh;

    pthread_mutex_lock(&md->plans.lock);
    e = map_slot(&md->plans, key, &fresh);
    if (e != NULL && fresh) {
        e->plan = make_plan(ln->dnn, l, d);
        if (e->plan != NULL)
            DNN(cudnnBackendGetAttribute(
                e->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                CUDNN_TYPE_INT64, 1, &one, &e->workspace));
    }
    pthread_mutex_unlock(&md->plans.lock);
    if (e == NULL || e->plan == NULL ||
        e->workspace > (int64_t)WORKSPACE_BYTES) {
        api_errors++;
        return NULL;
    }
    return e;
}

/* Executes the layer's convolution in direction d on the lane's stream
 * from the plan cache, with a variant pack made for the call. */
static void
conv_execute(struct model *md, const struct lane *ln,
             const struct conv_layer *l, enum dir d)
{
    static const int64_t uid[3] = { UID_X, UID_W, UID_Y };
    struct map_entry *e = plan_lookup(md, ln, l, d);
    cudnnBackendDescriptor_t pack = NULL;
    void *ptr[3];

    if (e == NULL)
        return;
    ptr[0] = d == BWD_DATA ? l->dx : l->x;
    ptr[1] = d == BWD_FILTER ? l->dw : l->w;
    ptr[2] = d == FWD ? l->y : l->dy;
    if (DNN(cudnnBackendCreateDescriptor(
            CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack)))
        return;
    DNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                 CUDNN_TYPE_INT64, 3, uid));
    DNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                 CUDNN_TYPE_VOID_PTR, 3, ptr));
    DNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                 CUDNN_TYPE_VOID_PTR, 1, &ln->workspace));
    DNN(cudnnBackendFinalize(pack));
    DNN(cudnnBackendExecute(ln->dnn, e->plan, pack));
    conv_calls++;
    cudnnBackendDestroyDescriptor(pack);
}

/* ---- One step --------------------------------------------------------- */

/* Forward at sequence length index s, on the main thread's lane. */
static void
forward(struct model *md, int s)
{
    const struct lane *ln = &md->fwd;
    int t = md->seq[s];

    for (int i = 0; i < GEMM_LAYERS; i++) {
        struct gemm_layer *l = &md->gemm[i];

        fw_gemm(md, ln, CUBLAS_OP_N, CUBLAS_OP_N, t, l->out, l->in, l->x, t,
                l->w, l->in, l->y, t);
    }
    for (int i = 0; i < LINEAR_LAYERS; i++)
        linear_forward(md, &md->linear[i], s);
    for (int i = 0; i < md->opt.conv_layers; i++)
        conv_execute(md, ln, &md->conv[i], FWD);
}

/* Backward at sequence length index s, on the backward thread's lane:
 * both gradients of every layer. */
static void
backward(struct model *md, int s)
{
    const struct lane *ln = &md->bwd;
    int t = md->seq[s];

    for (int i = md->opt.conv_layers - 1; i >= 0; i--) {
        conv_execute(md, ln, &md->conv[i], BWD_DATA);
        conv_execute(md, ln, &md->conv[i], BWD_FILTER);
    }
    for (int i = LINEAR_LAYERS - 1; i >= 0; i--) {
        struct linear_layer *l = &md->linear[i];

        /* dX (in x T) = W dY; dW (in x out) = X dY^T. */
        fw_gemm(md, ln, CUBLAS_OP_N, CUBLAS_OP_N, l->in, t, l->out, l->w,
                l->in, l->dy, l->out, l->dx, l->in);
        fw_gemm(md, ln, CUBLAS_OP_N, CUBLAS_OP_T, l->in, l->out, t, l->x,
                l->in, l->dy, l->out, l->dw, l->in);
    }
    for (int i = GEMM_LAYERS - 1; i >= 0; i--) {
        struct gemm_layer *l = &md->gemm[i];

        /* dX (T x in) = dY W^T; dW (in x out) = X^T dY. */
        fw_gemm(md, ln, CUBLAS_OP_N, CUBLAS_OP_T, t, l->in, l->out, l->dy, t,
                l->w, l->in, l->dx, t);
        fw_gemm(md, ln, CUBLAS_OP_T, CUBLAS_OP_N, l->in, l->out, t, l->x, t,
                l->dy, t, l->dw, l->in);
    }
}

/* The backward thread: its own handles on its own stream, made on its
 * first step; each posted step waits for forward's event, is issued, and
 * records backward's event. The host does not wait for the device. */
static void *
backward_main(void *arg)
{
    struct model *md = arg;
    int seen = 0;

    for (;;) {
        int s;

        pthread_mutex_lock(&md->lock);
        while (md->posted == seen && !md->quit)
            pthread_cond_wait(&md->cond, &md->lock);
        if (md->quit) {
            pthread_mutex_unlock(&md->lock);
            break;
        }
        seen = md->posted;
        s = md->step_seq;
        pthread_mutex_unlock(&md->lock);
        if (md->bwd.blas == NULL &&
            (blas_bad("cublasCreate_v2", cublasCreate_v2(&md->bwd.blas)) ||
             blas_bad("cublasSetStream_v2",
                      cublasSetStream_v2(md->bwd.blas, md->bwd.stream)) ||
             DNN(cudnnCreate(&md->bwd.dnn)) ||
             DNN(cudnnSetStream(md->bwd.dnn, md->bwd.stream))))
            md->bwd.blas = NULL;
        if (md->bwd.blas != NULL) {
            cuda_bad("cudaStreamWaitEvent",
                     cudaStreamWaitEvent(md->bwd.stream, md->fwd_done, 0));
            backward(md, s);
            cuda_bad("cudaEventRecord",
                     cudaEventRecord(md->bwd_done, md->bwd.stream));
        }
        pthread_mutex_lock(&md->lock);
        md->issued = seen;
        pthread_cond_broadcast(&md->cond);
        pthread_mutex_unlock(&md->lock);
    }
    return NULL;
}

/* One training step at sequence length index s: forward here, backward
 * handed to the backward thread (this thread waits until it is issued,
 * not until it ran), and the forward stream ordered after it. */
static void
step(struct model *md, int s)
{
    forward(md, s);
    cuda_bad("cudaEventRecord", cudaEventRecord(md->fwd_done,
                                                md->fwd.stream));
    pthread_mutex_lock(&md->lock);
    md->step_seq = s;
    md->posted++;
    pthread_cond_broadcast(&md->cond);
    while (md->issued != md->posted)
        pthread_cond_wait(&md->cond, &md->lock);
    pthread_mutex_unlock(&md->lock);
    cuda_bad("cudaStreamWaitEvent",
             cudaStreamWaitEvent(md->fwd.stream, md->bwd_done, 0));
}

/* The step at sequence length index s captured into an executable graph
 * (the backward stream joins the capture through forward's event and
 * leaves it through backward's); NULL when the capture fails. */
static cudaGraphExec_t
capture_step(struct model *md, int s)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;

    if (cuda_bad("cudaStreamBeginCapture",
                 cudaStreamBeginCapture(md->fwd.stream,
                                        cudaStreamCaptureModeGlobal)))
        return NULL;
    step(md, s);
    if (cuda_bad("cudaStreamEndCapture",
                 cudaStreamEndCapture(md->fwd.stream, &graph)))
        return NULL;
    if (cuda_bad("cudaGraphInstantiate",
                 cudaGraphInstantiate(&exec, graph, 0)))
        exec = NULL;
    cudaGraphDestroy(graph);
    return exec;
}

/* ---- Set-up ----------------------------------------------------------- */

/* Layer sizes in units (8 elements, 2 with --small). */
static const int gemm_units[GEMM_LAYERS][2] = {
    { 8, 16 }, { 16, 8 }, { 12, 24 }, { 24, 12 }, { 16, 32 }, { 32, 16 },
    { 8, 40 }, { 40, 8 }, { 20, 12 }, { 12, 20 }, { 48, 16 }, { 16, 48 },
    { 24, 32 }, { 32, 24 }, { 10, 16 }, { 16, 10 }, { 40, 24 }, { 24, 40 },
};
static const int linear_units[LINEAR_LAYERS][2] = {
    { 16, 24 }, { 24, 16 }, { 32, 12 }, { 12, 32 }, { 20, 40 }, { 40, 20 },
};
static const int seq_units[SEQ_LENGTHS] = { 16, 20, 24 };
/* The ill-conditioned layer: the 12th plain layer. */
#define ILL_LAYER 11

static float *
upload(const float *host, size_t n)
{
    float *dev = device_copy(host, n * sizeof(float));

    if (dev == NULL)
        cuda_bad("cudaMalloc/cudaMemcpy", cudaErrorMemoryAllocation);
    return dev;
}

static float *
random_host(size_t n, uint64_t *seed)
{
    float *v = host_data(n, seed);

    if (v == NULL) {
        fprintf(stderr, "framework: out of memory\n");
        exit(EXIT_CUDA_ERROR);
    }
    return v;
}

/* Input 1 + 2^-8 u and weight columns of pairs (v, -v): the forward
 * product cancels to about 2^-8 of its terms. */
static void
make_ill(struct gemm_layer *l, int tmax, uint64_t *seed)
{
    for (size_t i = 0; i < (size_t)tmax * l->in; i++)
        l->hx[i] = 1.0f + rng_float(seed, 0x1p-8f);
    for (size_t j = 0; j < (size_t)l->out; j++)
        for (size_t r = 0; r + 1 < (size_t)l->in; r += 2) {
            float v = rng_float(seed, 1.0f);

            l->hw[j * l->in + r] = v;
            l->hw[j * l->in + r + 1] = -v;
        }
}

static void
setup_gemm(struct model *md, int i, int unit, uint64_t *seed)
{
    struct gemm_layer *l = &md->gemm[i];
    size_t t = (size_t)md->tmax;

    l->in = gemm_units[i][0] * unit;
    l->out = gemm_units[i][1] * unit;
    l->ill = i == ILL_LAYER;
    l->hx = random_host(t * l->in, seed);
    l->hw = random_host((size_t)l->in * l->out, seed);
    l->hdy = random_host(t * l->out, seed);
    if (l->ill)
        make_ill(l, md->tmax, seed);
    l->x = upload(l->hx, t * l->in);
    l->w = upload(l->hw, (size_t)l->in * l->out);
    l->dy = upload(l->hdy, t * l->out);
    l->y = upload(NULL, t * l->out);
    l->dx = upload(NULL, t * l->in);
    l->dw = upload(NULL, (size_t)l->in * l->out);
}

static void
setup_linear(struct model *md, int i, int unit, uint64_t *seed)
{
    struct linear_layer *l = &md->linear[i];
    size_t t = (size_t)md->tmax;

    l->in = linear_units[i][0] * unit;
    l->out = linear_units[i][1] * unit;
    l->hx = random_host(t * l->in, seed);
    l->hw = random_host((size_t)l->in * l->out, seed);
    l->hb = random_host((size_t)l->out, seed);
    l->hdy = random_host(t * l->out, seed);
    l->x = upload(l->hx, t * l->in);
    l->w = upload(l->hw, (size_t)l->in * l->out);
    l->b = upload(l->hb, (size_t)l->out);
    l->dy = upload(l->hdy, t * l->out);
    l->d = upload(NULL, t * l->out);
    l->dx = upload(NULL, t * l->in);
    l->dw = upload(NULL, (size_t)l->in * l->out);
    if (l->b != NULL)
        linear_desc(l);
}

static size_t
conv_count(int n, int c, int h)
{
    return (size_t)n * c * h * h;
}

/* Layer i's shape: 40 distinct (c, k) pairs, 1x1 and 3x3 filters, some
 * strided; each further 40 layers (--conv-layers) two pixels taller. */
static void
setup_conv(struct model *md, int i, uint64_t *seed)
{
    static const int cs[5] = { 3, 4, 6, 8, 12 };
    static const int ks[8] = { 4, 5, 6, 8, 10, 12, 14, 16 };
    struct conv_layer *l = &md->conv[i];
    int scale = md->opt.small ? 1 : 2;

    l->n = md->opt.small ? 1 : 2;
    l->c = cs[i % 5] == 3 ? 3 : cs[i % 5] * scale;
    l->k = ks[(i / 5) % 8] * scale;
    l->h = (md->opt.small ? 6 : 12) + 2 * (i / 40);
    l->r = i % 3 == 2 ? 1 : 3;
    l->stride = i % 4 == 3 ? 2 : 1;
    l->pad = l->r / 2;
    l->o = (l->h + 2 * l->pad - l->r) / l->stride + 1;
    l->hx = random_host(conv_count(l->n, l->c, l->h), seed);
    l->hw = random_host(conv_count(l->k, l->c, l->r), seed);
    l->hdy = random_host(conv_count(l->n, l->k, l->o), seed);
    l->x = upload(l->hx, conv_count(l->n, l->c, l->h));
    l->w = upload(l->hw, conv_count(l->k, l->c, l->r));
    l->dy = upload(l->hdy, conv_count(l->n, l->k, l->o));
    l->y = upload(NULL, conv_count(l->n, l->k, l->o));
    l->dx = upload(NULL, conv_count(l->n, l->c, l->h));
    l->dw = upload(NULL, conv_count(l->k, l->c, l->r));
}

/* Streams, events, the main thread's handles, workspaces and every
 * layer's data. 0, or -1 when a call failed. */
static int
setup(struct model *md)
{
    int unit = md->opt.small ? 2 : 8;
    uint64_t seed = 0x5eed;

    map_init(&md->plans);
    map_init(&md->shapes);
    pthread_mutex_init(&md->lock, NULL);
    pthread_cond_init(&md->cond, NULL);
    for (int s = 0; s < SEQ_LENGTHS; s++)
        md->seq[s] = seq_units[s] * unit;
    md->tmax = md->seq[SEQ_LENGTHS - 1];
    if (cuda_bad("cudaStreamCreateWithFlags",
                 cudaStreamCreateWithFlags(&md->fwd.stream,
                                           cudaStreamNonBlocking)) ||
        cuda_bad("cudaStreamCreateWithFlags",
                 cudaStreamCreateWithFlags(&md->bwd.stream,
                                           cudaStreamNonBlocking)) ||
        cuda_bad("cudaEventCreateWithFlags",
                 cudaEventCreateWithFlags(&md->fwd_done,
                                          cudaEventDisableTiming)) ||
        cuda_bad("cudaEventCreateWithFlags",
                 cudaEventCreateWithFlags(&md->bwd_done,
                                          cudaEventDisableTiming)) ||
        blas_bad("cublasCreate_v2", cublasCreate_v2(&md->fwd.blas)) ||
        blas_bad("cublasSetStream_v2",
                 cublasSetStream_v2(md->fwd.blas, md->fwd.stream)) ||
        blas_bad("cublasLtCreate", cublasLtCreate(&md->lt)) ||
        DNN(cudnnCreate(&md->fwd.dnn)) ||
        DNN(cudnnSetStream(md->fwd.dnn, md->fwd.stream)))
        return -1;
    md->fwd.workspace = device_copy(NULL, WORKSPACE_BYTES);
    md->bwd.workspace = device_copy(NULL, WORKSPACE_BYTES);
    if (md->fwd.workspace == NULL || md->bwd.workspace == NULL) {
        cuda_bad("cudaMalloc(workspace)", cudaErrorMemoryAllocation);
        return -1;
    }
    for (int i = 0; i < GEMM_LAYERS; i++)
        setup_gemm(md, i, unit, &seed);
    for (int i = 0; i < LINEAR_LAYERS; i++)
        setup_linear(md, i, unit, &seed);
    for (int i = 0; i < md->opt.conv_layers; i++)
        setup_conv(md, i, &seed);
    return api_errors > 0 ? -1 : 0;
}

/* ---- The check -------------------------------------------------------- */

/* max |got - ref| / max |ref| over n elements; INFINITY when an element
 * is not finite or the reference is all zero and the result is not. */
static double
rel_error(const float *got, const double *ref, size_t n)
{
    double err = 0.0, mag = 0.0;

    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);

        if (!isfinite(e))
            return INFINITY;
        if (e > err)
            err = e;
        if (fabs(ref[i]) > mag)
            mag = fabs(ref[i]);
    }
    if (err == 0.0)
        return 0.0;
    return mag > 0.0 ? err / mag : INFINITY;
}

/* The device's n floats at dev, on the host (NULL on failure). */
static float *
download(const float *dev, size_t n)
{
    float *host = malloc(n * sizeof(*host));

    if (host == NULL || dev == NULL ||
        cuda_bad("cudaMemcpy", cudaMemcpy(host, dev, n * sizeof(*host),
                                          cudaMemcpyDeviceToHost))) {
        free(host);
        return NULL;
    }
    return host;
}

/* The error of the device's C = op(A) op(B) (+ bias per row), m x n with
 * leading dimension m, against the double product of the host operands. */
static double
gemm_check(const float *dev_c, int ta, int tb, int m, int n, int k,
           const float *a, int lda, const float *b, int ldb,
           const float *bias)
{
    struct operand_view va = { a, lda, ta }, vb = { b, ldb, tb };
    size_t count = (size_t)m * n;
    double *ref = malloc(count * sizeof(*ref));
    float *got = download(dev_c, count);
    double err = INFINITY;

    if (ref != NULL && got != NULL) {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double sum = bias ? bias[i] : 0.0;

                for (int l = 0; l < k; l++)
                    sum += operand_at(&va, i, l) * operand_at(&vb, l, j);
                ref[(size_t)j * m + i] = sum;
            }
        err = rel_error(got, ref, count);
    }
    free(ref);
    free(got);
    return err;
}

/* The three exact results of a convolution layer: y from x and w, dx from
 * dy and w, dw from x and dy (arrays of their tensors' sizes, zeroed). */
static void
conv_reference(const struct conv_layer *l, double *y, double *dx, double *dw)
{
    for (int n = 0; n < l->n; n++)
    for (int k = 0; k < l->k; k++)
    for (int c = 0; c < l->c; c++)
    for (int oh = 0; oh < l->o; oh++)
    for (int ow = 0; ow < l->o; ow++)
    for (int r = 0; r < l->r; r++)
    for (int s = 0; s < l->r; s++) {
        int ih = oh * l->stride - l->pad + r;
        int iw = ow * l->stride - l->pad + s;
        size_t xi, wi, yi;

        if (ih < 0 || ih >= l->h || iw < 0 || iw >= l->h)
            continue;
        xi = (((size_t)n * l->c + c) * l->h + ih) * l->h + iw;
        wi = (((size_t)k * l->c + c) * l->r + r) * l->r + s;
        yi = (((size_t)n * l->k + k) * l->o + oh) * l->o + ow;
        y[yi] += (double)l->hx[xi] * l->hw[wi];
        dx[xi] += (double)l->hdy[yi] * l->hw[wi];
        dw[wi] += (double)l->hx[xi] * l->hdy[yi];
    }
}

/* The errors of a convolution layer's three outputs. */
static void
conv_check(const struct conv_layer *l, double err[DIRS])
{
    size_t ny = conv_count(l->n, l->k, l->o);
    size_t nx = conv_count(l->n, l->c, l->h);
    size_t nw = conv_count(l->k, l->c, l->r);
    double *y = calloc(ny, sizeof(double)), *dx = calloc(nx, sizeof(double));
    double *dw = calloc(nw, sizeof(double));
    float *got[DIRS] = { download(l->y, ny), download(l->dx, nx),
                         download(l->dw, nw) };

    for (int d = 0; d < DIRS; d++)
        err[d] = INFINITY;
    if (y && dx && dw && got[FWD] && got[BWD_DATA] && got[BWD_FILTER]) {
        conv_reference(l, y, dx, dw);
        err[FWD] = rel_error(got[FWD], y, ny);
        err[BWD_DATA] = rel_error(got[BWD_DATA], dx, nx);
        err[BWD_FILTER] = rel_error(got[BWD_FILTER], dw, nw);
    }
    for (int d = 0; d < DIRS; d++)
        free(got[d]);
    free(y), free(dx), free(dw);
}

/* Prints a layer's line; returns its worst error (NaN counts as
 * infinite). */
static double
report_layer(const char *name, const char *shape, const double err[DIRS],
             double bound)
{
    double worst = 0.0;

    for (int d = 0; d < DIRS; d++)
        if (!(err[d] <= worst))
            worst = isnan(err[d]) ? INFINITY : err[d];
    printf("layer %s %s", name, shape);
    for (int d = 0; d < DIRS; d++)
        printf(" %s=%.3e", dir_name[d], err[d]);
    printf(" worst_rel=%.3e %s\n", worst, worst <= bound ? "ok" : "FAIL");
    return worst;
}

struct verdict {
    double worst;
    char worst_layer[32];
    int failed;
};

static void
judge(struct verdict *v, const char *name, double worst, double bound)
{
    if (!(worst <= v->worst) || v->worst_layer[0] == '\0') {
        v->worst = worst;
        snprintf(v->worst_layer, sizeof(v->worst_layer), "%s", name);
    }
    v->failed += !(worst <= bound);
}

/* Checks every layer's outputs of a step at sequence length index s. */
static void
check(const struct model *md, int s, struct verdict *v)
{
    int t = md->seq[s];
    double bound = md->opt.bound, err[DIRS];
    char name[32], shape[96];

    for (int i = 0; i < GEMM_LAYERS; i++) {
        const struct gemm_layer *l = &md->gemm[i];

        err[FWD] = gemm_check(l->y, 0, 0, t, l->out, l->in, l->hx, t, l->hw,
                              l->in, NULL);
        err[BWD_DATA] = gemm_check(l->dx, 0, 1, t, l->in, l->out, l->hdy, t,
                                   l->hw, l->in, NULL);
        err[BWD_FILTER] = gemm_check(l->dw, 1, 0, l->in, l->out, t, l->hx, t,
                                     l->hdy, t, NULL);
        snprintf(name, sizeof(name), "gemm%02d", i);
        snprintf(shape, sizeof(shape), "kind=gemm t=%d in=%d out=%d ill=%d",
                 t, l->in, l->out, l->ill);
        judge(v, name, report_layer(name, shape, err, bound), bound);
    }
    for (int i = 0; i < LINEAR_LAYERS; i++) {
        const struct linear_layer *l = &md->linear[i];

        err[FWD] = gemm_check(l->d, 1, 0, l->out, t, l->in, l->hw, l->in,
                              l->hx, l->in, l->hb);
        err[BWD_DATA] = gemm_check(l->dx, 0, 0, l->in, t, l->out, l->hw,
                                   l->in, l->hdy, l->out, NULL);
        err[BWD_FILTER] = gemm_check(l->dw, 0, 1, l->in, l->out, t, l->hx,
                                     l->in, l->hdy, l->out, NULL);
        snprintf(name, sizeof(name), "linear%d", i);
        snprintf(shape, sizeof(shape), "kind=linear t=%d in=%d out=%d bias=1",
                 t, l->in, l->out);
        judge(v, name, report_layer(name, shape, err, bound), bound);
    }
    for (int i = 0; i < md->opt.conv_layers; i++) {
        const struct conv_layer *l = &md->conv[i];

        conv_check(l, err);
        snprintf(name, sizeof(name), "conv%02d", i);
        snprintf(shape, sizeof(shape),
                 "kind=conv n=%d c=%d k=%d h=%d r=%d stride=%d", l->n, l->c,
                 l->k, l->h, l->r, l->stride);
        judge(v, name, report_layer(name, shape, err, bound), bound);
    }
}

/* ---- main ------------------------------------------------------------- */

static int
parse_options(int argc, char **argv, struct options *opt)
{
    opt->steps = 4;
    opt->replays = -1;
    opt->small = 0;
    opt->conv_layers = CONV_LAYERS;
    opt->bound = 1e-2;
    for (int i = 1; i < argc; i++) {
        char *end;

        if (strcmp(argv[i], "--small") == 0) {
            opt->small = 1;
        } else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc &&
                   parse_int_range(argv[i + 1], 1, 100000, &opt->steps) ==
                       0) {
            i++;
        } else if (strcmp(argv[i], "--replays") == 0 && i + 1 < argc &&
                   parse_int_range(argv[i + 1], 0, 1000000, &opt->replays) ==
                       0) {
            i++;
        } else if (strcmp(argv[i], "--conv-layers") == 0 && i + 1 < argc &&
                   parse_int_range(argv[i + 1], 1, CONV_LAYERS_MAX,
                                   &opt->conv_layers) == 0) {
            i++;
        } else if (strcmp(argv[i], "--bound") == 0 && i + 1 < argc &&
                   (opt->bound = strtod(argv[i + 1], &end)) > 0.0 &&
                   *end == '\0') {
            i++;
        } else {
            fprintf(stderr, "usage: framework [--steps N] [--replays N] "
                    "[--small] [--conv-layers N] [--bound X]\n");
            return -1;
        }
    }
    if (opt->replays < 0)
        opt->replays = opt->small ? 20 : 60;
    return 0;
}

/* Warm-up steps, one graph captured per sequence length, the replays in
 * turn; returns the sequence length index of the last step run, or -1
 * when a call failed. */
static int
train(struct model *md)
{
    cudaGraphExec_t exec[SEQ_LENGTHS] = { NULL };
    int last = 0;

    for (int i = 0; i < md->opt.steps; i++) {
        last = i % SEQ_LENGTHS;
        step(md, last);
    }
    /* The end of warm-up: the only wait before the end. */
    if (cuda_bad("cudaStreamSynchronize",
                 cudaStreamSynchronize(md->fwd.stream)))
        return -1;
    for (int s = 0; s < SEQ_LENGTHS; s++) {
        exec[s] = capture_step(md, s);
        if (exec[s] == NULL)
            return -1;
    }
    for (int r = 0; r < md->opt.replays; r++) {
        last = r % SEQ_LENGTHS;
        if (cuda_bad("cudaGraphLaunch",
                     cudaGraphLaunch(exec[last], md->fwd.stream)))
            return -1;
    }
    if (cuda_bad("cudaStreamSynchronize",
                 cudaStreamSynchronize(md->fwd.stream)))
        return -1;
    for (int s = 0; s < SEQ_LENGTHS; s++)
        cudaGraphExecDestroy(exec[s]);
    return last;
}

static void
stop_backward(struct model *md)
{
    pthread_mutex_lock(&md->lock);
    md->quit = 1;
    pthread_cond_broadcast(&md->cond);
    pthread_mutex_unlock(&md->lock);
    pthread_join(md->thread, NULL);
}

int
main(int argc, char **argv)
{
    static struct model md;
    struct verdict v = { 0.0, "", 0 };
    int last = -1;

    if (parse_options(argc, argv, &md.opt) != 0)
        return EXIT_USAGE;
    if (setup(&md) != 0)
        return EXIT_CUDA_ERROR;
    if (pthread_create(&md.thread, NULL, backward_main, &md) != 0) {
        fprintf(stderr, "framework: cannot start the backward thread\n");
        return EXIT_CUDA_ERROR;
    }
    last = train(&md);
    stop_backward(&md);
    if (last < 0 || api_errors > 0) {
        printf("api errors: %d\n", (int)api_errors);
        return EXIT_CUDA_ERROR;
    }
    check(&md, last, &v);
    printf("calls: gemm=%d lt=%d conv=%d\n", (int)gemm_calls, (int)lt_calls,
           (int)conv_calls);
    printf("worst layer=%s worst_rel=%.3e bound=%.3e\n", v.worst_layer,
           v.worst, md.opt.bound);
    printf("framework: layers=%d shapes=%d plans=%d graphs=%d steps=%d "
           "replays=%d failed=%d worst_rel=%.3e\n",
           GEMM_LAYERS + LINEAR_LAYERS + md.opt.conv_layers,
           map_count(&md.shapes) + map_count(&md.plans),
           map_count(&md.plans), SEQ_LENGTHS, md.opt.steps, md.opt.replays,
           v.failed, v.worst);
    if (api_errors > 0)
        return EXIT_CUDA_ERROR;
    return v.failed > 0 ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
