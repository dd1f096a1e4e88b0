/* legacy_trainer: the CNN on cuDNN and cuBLAS, FP32 throughout: VGG-style
 * blocks of 3x3 convolutions (padding 1, bias, ReLU), a 2x2 max pooling
 * between blocks, then two fully connected layers.
 *
 *   image 1x28x28
 *   conv 1 -> 32 at 28x28, max pool 2 -> 32x14x14
 *   conv 32 -> 64, conv 64 -> 64 at 14x14, max pool 2 -> 64x7x7
 *   conv 64 -> 128, conv 128 -> 128 at 7x7, max pool 2 -> 128x3x3
 *   conv 128 -> 256, conv 256 -> 256 at 3x3
 *   fully connected 2304 -> hidden, bias, ReLU
 *   fully connected hidden -> 10, bias, softmax, cross-entropy
 *
 * Per image, the forward convolutions are 29.9M multiply-adds and the
 * fully connected layers 2304 hidden + 10 hidden (2.4M with the default
 * 1024 hidden units): the convolutions carry most of the work.
 *
 * Activations are NCHW; a fully connected layer's input and output are
 * row-major (batch x features), that is column-major features x batch for
 * cuBLAS, and its weights are out x in row-major. All parameters live in
 * one flat buffer (gradients and momentum in two more of the same layout),
 * so the SGD step is two calls over everything. */
#include "trainer.h"

#define CONV_LAYERS 7
#define FC_LAYERS 2
#define KERNEL 3
#define WORKSPACE_LIMIT ((size_t)256 << 20)
/* Each parameter tensor starts on a 256-byte boundary of the flat buffer. */
#define PARAM_ALIGN 64

/* One parameter tensor: where it lies in the flat buffers. */
struct param {
    size_t offset, count;
    int fan_in;                 /* for the initialisation; 0: zeros */
    int relu;                   /* a ReLU follows */
};

/* The convolutions in order: output channels, and whether a max pooling
 * follows (the last layer of a block but the last block). */
static const struct conv_spec {
    int cout, pool;
} conv_specs[CONV_LAYERS] = {
    { 32, 1 },                  /* 28x28 */
    { 64, 0 }, { 64, 1 },       /* 14x14 */
    { 128, 0 }, { 128, 1 },     /* 7x7 */
    { 256, 0 }, { 256, 0 },     /* 3x3 */
};

/* Convolution, bias, ReLU, then max pooling when `pool`. */
struct conv_layer {
    int cin, cout, side, pool;  /* side: input height and width */
    cudnnTensorDescriptor_t in_desc;    /* N cin side side */
    cudnnTensorDescriptor_t pre_desc;   /* N cout side side */
    cudnnTensorDescriptor_t out_desc;   /* N cout side/2 side/2; pool only */
    cudnnTensorDescriptor_t bias_desc;  /* 1 cout 1 1 */
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t fwd_algo;
    cudnnConvolutionBwdDataAlgo_t bwd_data_algo;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo;
    /* --conv-graph: the execution plans and variant packs of forward,
     * backward data (NULL for the first layer) and backward filter. */
    cudnnBackendDescriptor_t plan[3], pack[3];
    struct param w, b;
    const float *in;
    float *d_in;                /* NULL: the network's input needs none */
    float *pre, *act, *out;     /* convolution + bias, ReLU, output:
                                 * pooled, or act without pooling */
    float *d_pre, *d_act, *d_out;
};

/* y = W x + b, then ReLU unless it is the last layer. */
struct fc_layer {
    int in, out, relu;
    cudnnTensorDescriptor_t y_desc;     /* N out 1 1 */
    cudnnTensorDescriptor_t bias_desc;  /* 1 out 1 1 */
    /* --fc-lt: the forward product with its epilogue (bias, and ReLU
     * into act), W, x and y, and the heuristics' algorithm. */
    cublasLtMatmulDesc_t lt_op;
    cublasLtMatrixLayout_t lt_w, lt_x, lt_y;
    cublasLtMatmulAlgo_t lt_algo;
    struct param w, b;
    const float *x;
    float *d_x;
    float *pre, *act;           /* act: NULL without ReLU */
    float *d_pre, *d_act;
};

struct net {
    int batch, hidden;
    char device[256];
    cudaStream_t stream;
    cudaEvent_t mark[2];
    int marked;                 /* mark[0] holds the last mark */
    cublasHandle_t blas;
    cublasLtHandle_t lt;        /* --fc-lt only */
    void *lt_workspace;
    cudnnHandle_t dnn;
    int conv_graph;
    cudnnActivationDescriptor_t relu;
    cudnnPoolingDescriptor_t pool;
    cudnnTensorDescriptor_t flat_desc;  /* 1 x params x 1 x 1 */
    struct conv_layer conv[CONV_LAYERS];
    struct fc_layer fc[FC_LAYERS];
    size_t param_count;
    float *params, *grads, *velocity;
    float *input, *probs, *d_logits, *ones;
    void *workspace;
    size_t workspace_size;
    float *host_probs, *host_onehot;
    /* Every device allocation, for net_destroy. */
    void *allocs[64];
    int nallocs;
};

/* ---- Set-up ------------------------------------------------------------- */

static float *
dev_alloc(struct net *net, size_t floats)
{
    void *p = NULL;

    if (net->nallocs == (int)(sizeof(net->allocs) / sizeof(net->allocs[0])))
        return NULL;
    if (cuda_failed("cudaMalloc", cudaMalloc(&p, floats * sizeof(float))))
        return NULL;
    net->allocs[net->nallocs++] = p;
    return p;
}

static void
param_add(struct net *net, struct param *p, size_t count, int fan_in,
          int relu)
{
    p->offset = net->param_count;
    p->count = count;
    p->fan_in = fan_in;
    p->relu = relu;
    net->param_count += (count + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
}

static int
tensor4(cudnnTensorDescriptor_t *d, int n, int c, int h, int w)
{
    return cudnn_failed("cudnnCreateTensorDescriptor",
                        cudnnCreateTensorDescriptor(d)) ||
           cudnn_failed("cudnnSetTensor4dDescriptor",
                        cudnnSetTensor4dDescriptor(*d, CUDNN_TENSOR_NCHW,
                                                   CUDNN_DATA_FLOAT, n, c, h,
                                                   w));
}

/* The first algorithm the heuristics rank that works within the
 * workspace limit, as FP32 programs of the time chose them. */
static int
pick_algos(struct net *net, struct conv_layer *b)
{
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnConvolutionBwdDataAlgoPerf_t bwd_data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int nf = 0, nd = 0, nw = 0, i;

    if (cudnn_failed("cudnnGetConvolutionForwardAlgorithm_v7",
            cudnnGetConvolutionForwardAlgorithm_v7(net->dnn, b->in_desc,
                b->w_desc, b->conv, b->pre_desc,
                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &nf, fwd)) ||
        cudnn_failed("cudnnGetConvolutionBackwardDataAlgorithm_v7",
            cudnnGetConvolutionBackwardDataAlgorithm_v7(net->dnn, b->w_desc,
                b->pre_desc, b->conv, b->in_desc,
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &nd, bwd_data)) ||
        cudnn_failed("cudnnGetConvolutionBackwardFilterAlgorithm_v7",
            cudnnGetConvolutionBackwardFilterAlgorithm_v7(net->dnn,
                b->in_desc, b->pre_desc, b->conv, b->w_desc,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &nw, bwd_filter)))
        return -1;
    for (i = 0; i < nf; i++) {
        if (fwd[i].status == CUDNN_STATUS_SUCCESS &&
            fwd[i].memory <= WORKSPACE_LIMIT)
            break;
    }
    if (i == nf)
        goto none;
    b->fwd_algo = fwd[i].algo;
    for (i = 0; i < nd; i++) {
        if (bwd_data[i].status == CUDNN_STATUS_SUCCESS &&
            bwd_data[i].memory <= WORKSPACE_LIMIT)
            break;
    }
    if (i == nd)
        goto none;
    b->bwd_data_algo = bwd_data[i].algo;
    for (i = 0; i < nw; i++) {
        if (bwd_filter[i].status == CUDNN_STATUS_SUCCESS &&
            bwd_filter[i].memory <= WORKSPACE_LIMIT)
            break;
    }
    if (i == nw)
        goto none;
    b->bwd_filter_algo = bwd_filter[i].algo;
    return 0;
none:
    fprintf(stderr, EXAMPLE_PROG ": no convolution algorithm for %d -> %d "
            "channels fits %zu bytes of workspace\n", b->cin, b->cout,
            WORKSPACE_LIMIT);
    return -1;
}

/* The workspace the chosen algorithms ask for, as cuDNN reports it. */
static int
size_workspace(struct net *net, const struct conv_layer *b)
{
    size_t fwd = 0, data = 0, filter = 0;

    if (cudnn_failed("cudnnGetConvolutionForwardWorkspaceSize",
            cudnnGetConvolutionForwardWorkspaceSize(net->dnn, b->in_desc,
                b->w_desc, b->conv, b->pre_desc, b->fwd_algo, &fwd)) ||
        cudnn_failed("cudnnGetConvolutionBackwardDataWorkspaceSize",
            cudnnGetConvolutionBackwardDataWorkspaceSize(net->dnn,
                b->w_desc, b->pre_desc, b->conv, b->in_desc,
                b->bwd_data_algo, &data)) ||
        cudnn_failed("cudnnGetConvolutionBackwardFilterWorkspaceSize",
            cudnnGetConvolutionBackwardFilterWorkspaceSize(net->dnn,
                b->in_desc, b->pre_desc, b->conv, b->w_desc,
                b->bwd_filter_algo, &filter)))
        return -1;
    if (b->d_in == NULL)
        data = 0;
    if (fwd > net->workspace_size)
        net->workspace_size = fwd;
    if (data > net->workspace_size)
        net->workspace_size = data;
    if (filter > net->workspace_size)
        net->workspace_size = filter;
    return 0;
}

/* ---- --conv-graph: the convolutions as backend execution plans ---------- */

enum { GRAPH_FWD, GRAPH_BWD_DATA, GRAPH_BWD_FILTER };
enum { UID_X = 1, UID_W, UID_Y };

static const cudnnBackendDescriptorType_t graph_op_type[3] = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
};

/* alpha, beta, the convolution, then x, w, y in the forward roles. */
static const cudnnBackendAttributeName_t graph_op_attr[3][6] = {
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

/* Sets one attribute; 1 when it failed (reported). */
static int
graph_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
          cudnnBackendAttributeType_t type, int64_t n, const void *v)
{
    return cudnn_failed("cudnnBackendSetAttribute",
                        cudnnBackendSetAttribute(d, name, type, n, v));
}

static int
graph_new(cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *d)
{
    *d = NULL;
    return cudnn_failed("cudnnBackendCreateDescriptor",
                        cudnnBackendCreateDescriptor(type, d));
}

/* A packed NCHW FP32 tensor. */
static int
graph_tensor(cudnnBackendDescriptor_t *t, int64_t uid, int n, int c, int h,
             int w)
{
    int64_t dim[4] = { n, c, h, w };
    int64_t stride[4] = { (int64_t)c * h * w, (int64_t)h * w, w, 1 };
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int64_t align = 16;

    return graph_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR, t) ||
           graph_set(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                     &type) ||
           graph_set(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4,
                     dim) ||
           graph_set(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4,
                     stride) ||
           graph_set(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1,
                     &uid) ||
           graph_set(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64,
                     1, &align) ||
           cudnn_failed("cudnnBackendFinalize", cudnnBackendFinalize(*t));
}

/* The 3x3 convolution, padding 1, FP32 compute. */
static int
graph_conv(cudnnBackendDescriptor_t *c)
{
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t nsp = 2, pad[2] = { KERNEL / 2, KERNEL / 2 }, unit[2] = { 1, 1 };

    return graph_new(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, c) ||
           graph_set(*c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                     CUDNN_TYPE_DATA_TYPE, 1, &comp) ||
           graph_set(*c, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                     CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) ||
           graph_set(*c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                     CUDNN_TYPE_INT64, 1, &nsp) ||
           graph_set(*c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                     CUDNN_TYPE_INT64, 2, pad) ||
           graph_set(*c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                     CUDNN_TYPE_INT64, 2, pad) ||
           graph_set(*c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                     CUDNN_TYPE_INT64, 2, unit) ||
           graph_set(*c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64,
                     2, unit) ||
           cudnn_failed("cudnnBackendFinalize", cudnnBackendFinalize(*c));
}

/* The plan of the heuristics' (mode A) first configuration that
 * finalizes within the workspace limit, for the operation graph `graph`;
 * NULL after reporting. */
static cudnnBackendDescriptor_t
graph_plan(struct net *net, cudnnBackendDescriptor_t graph)
{
    cudnnBackendDescriptor_t heur = NULL, cfg[8] = { NULL }, plan = NULL;
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    int64_t n = 0, got = 0, ws = 0, one = 0;

    if (graph_new(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur) ||
        graph_set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph) ||
        graph_set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                  &mode) ||
        cudnn_failed("cudnnBackendFinalize", cudnnBackendFinalize(heur)) ||
        cudnn_failed("cudnnBackendGetAttribute",
                     cudnnBackendGetAttribute(heur,
                         CUDNN_ATTR_ENGINEHEUR_RESULTS,
                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL)))
        goto out;
    if (n > 8)
        n = 8;
    for (int64_t i = 0; i < n; i++) {
        if (graph_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]))
            goto out;
    }
    if (n == 0 ||
        cudnn_failed("cudnnBackendGetAttribute",
                     cudnnBackendGetAttribute(heur,
                         CUDNN_ATTR_ENGINEHEUR_RESULTS,
                         CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfg)))
        goto out;
    for (int64_t i = 0; i < got && i < n && plan == NULL; i++) {
        if (graph_new(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) ||
            graph_set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                      CUDNN_TYPE_HANDLE, 1, &net->dnn) ||
            graph_set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]))
            goto out;
        if (cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
            cudnnBackendGetAttribute(plan,
                CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                &one, &ws) == CUDNN_STATUS_SUCCESS &&
            (size_t)ws <= WORKSPACE_LIMIT)
            break;
        cudnnBackendDestroyDescriptor(plan);
        plan = NULL;
    }
    if (plan != NULL && (size_t)ws > net->workspace_size)
        net->workspace_size = (size_t)ws;
out:
    if (plan == NULL)
        fprintf(stderr, EXAMPLE_PROG ": no execution plan for a "
                "convolution graph\n");
    for (int i = 0; i < 8; i++) {
        if (cfg[i] != NULL)
            cudnnBackendDestroyDescriptor(cfg[i]);
    }
    if (heur != NULL)
        cudnnBackendDestroyDescriptor(heur);
    return plan;
}

/* The layer's three plans (two for the first layer: its input needs no
 * gradient). The tensors, convolution, operations and graphs are
 * destroyed once the plans hold them, as frameworks do. */
static int
graph_plans(struct net *net, struct conv_layer *b)
{
    cudnnBackendDescriptor_t t[3] = { NULL }, conv = NULL;
    float alpha = 1.0f, beta = 0.0f;
    int rc = -1;

    if (graph_tensor(&t[0], UID_X, net->batch, b->cin, b->side, b->side) ||
        graph_tensor(&t[1], UID_W, b->cout, b->cin, KERNEL, KERNEL) ||
        graph_tensor(&t[2], UID_Y, net->batch, b->cout, b->side, b->side) ||
        graph_conv(&conv))
        goto out;
    for (int dir = GRAPH_FWD; dir <= GRAPH_BWD_FILTER; dir++) {
        const cudnnBackendAttributeName_t *at = graph_op_attr[dir];
        cudnnBackendDescriptor_t op = NULL, graph = NULL;
        int failed;

        if (dir == GRAPH_BWD_DATA && b == &net->conv[0])
            continue; /* the network's input needs no gradient */
        failed = graph_new(graph_op_type[dir], &op) ||
                 graph_set(op, at[0], CUDNN_TYPE_FLOAT, 1, &alpha) ||
                 graph_set(op, at[1], CUDNN_TYPE_FLOAT, 1, &beta) ||
                 graph_set(op, at[2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                           &conv);
        for (int i = 0; i < 3 && !failed; i++)
            failed = graph_set(op, at[3 + i], CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               1, &t[i]);
        failed = failed ||
                 cudnn_failed("cudnnBackendFinalize",
                              cudnnBackendFinalize(op)) ||
                 graph_new(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph) ||
                 graph_set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                           CUDNN_TYPE_HANDLE, 1, &net->dnn) ||
                 graph_set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op) ||
                 cudnn_failed("cudnnBackendFinalize",
                              cudnnBackendFinalize(graph)) ||
                 (b->plan[dir] = graph_plan(net, graph)) == NULL;
        if (graph != NULL)
            cudnnBackendDestroyDescriptor(graph);
        if (op != NULL)
            cudnnBackendDestroyDescriptor(op);
        if (failed)
            goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < 3; i++) {
        if (t[i] != NULL)
            cudnnBackendDestroyDescriptor(t[i]);
    }
    if (conv != NULL)
        cudnnBackendDestroyDescriptor(conv);
    return rc;
}

/* The variant packs: the layer's buffers and the shared workspace never
 * move, so each is made once. */
static int
graph_packs(struct net *net, struct conv_layer *b)
{
    static const int64_t uid[3] = { UID_X, UID_W, UID_Y };
    float *w = net->params + b->w.offset, *dw = net->grads + b->w.offset;
    void *ptr[3][3] = {
        { (void *)b->in, w, b->pre },
        { b->d_in, w, b->d_pre },
        { (void *)b->in, dw, b->d_pre },
    };

    for (int dir = GRAPH_FWD; dir <= GRAPH_BWD_FILTER; dir++) {
        if (b->plan[dir] == NULL)
            continue;
        if (graph_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &b->pack[dir]) ||
            graph_set(b->pack[dir], CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                      CUDNN_TYPE_INT64, 3, uid) ||
            graph_set(b->pack[dir], CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                      CUDNN_TYPE_VOID_PTR, 3, ptr[dir]) ||
            graph_set(b->pack[dir], CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                      CUDNN_TYPE_VOID_PTR, 1, &net->workspace) ||
            cudnn_failed("cudnnBackendFinalize",
                         cudnnBackendFinalize(b->pack[dir])))
            return -1;
    }
    return 0;
}

static int
conv_setup(struct net *net, struct conv_layer *b)
{
    int n = net->batch, half = b->side / 2;
    size_t pre = (size_t)n * b->cout * b->side * b->side;
    size_t out = (size_t)n * b->cout * half * half;

    if (tensor4(&b->in_desc, n, b->cin, b->side, b->side) ||
        tensor4(&b->pre_desc, n, b->cout, b->side, b->side) ||
        (b->pool && tensor4(&b->out_desc, n, b->cout, half, half)) ||
        tensor4(&b->bias_desc, 1, b->cout, 1, 1) ||
        cudnn_failed("cudnnCreateFilterDescriptor",
                     cudnnCreateFilterDescriptor(&b->w_desc)) ||
        cudnn_failed("cudnnSetFilter4dDescriptor",
                     cudnnSetFilter4dDescriptor(b->w_desc, CUDNN_DATA_FLOAT,
                         CUDNN_TENSOR_NCHW, b->cout, b->cin, KERNEL,
                         KERNEL)) ||
        cudnn_failed("cudnnCreateConvolutionDescriptor",
                     cudnnCreateConvolutionDescriptor(&b->conv)) ||
        cudnn_failed("cudnnSetConvolution2dDescriptor",
                     cudnnSetConvolution2dDescriptor(b->conv, KERNEL / 2,
                         KERNEL / 2, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                         CUDNN_DATA_FLOAT)))
        return -1;
    b->pre = dev_alloc(net, pre);
    b->act = dev_alloc(net, pre);
    b->d_pre = dev_alloc(net, pre);
    b->d_act = dev_alloc(net, pre);
    if (b->pool) {
        b->out = dev_alloc(net, out);
        b->d_out = dev_alloc(net, out);
    } else {
        b->out = b->act;
        b->d_out = b->d_act;
    }
    if (b->pre == NULL || b->act == NULL || b->out == NULL ||
        b->d_pre == NULL || b->d_act == NULL || b->d_out == NULL)
        return -1;
    return net->conv_graph ? graph_plans(net, b) : pick_algos(net, b);
}

static int
fc_setup(struct net *net, struct fc_layer *l)
{
    size_t y = (size_t)net->batch * l->out;

    if (tensor4(&l->y_desc, net->batch, l->out, 1, 1) ||
        tensor4(&l->bias_desc, 1, l->out, 1, 1))
        return -1;
    l->pre = dev_alloc(net, y);
    l->d_pre = dev_alloc(net, y);
    if (l->pre == NULL || l->d_pre == NULL)
        return -1;
    if (l->relu) {
        l->act = dev_alloc(net, y);
        l->d_act = dev_alloc(net, y);
        if (l->act == NULL || l->d_act == NULL)
            return -1;
    }
    return 0;
}

#define LT_WORKSPACE ((size_t)1 << 20)

/* --fc-lt: y (out x N) = W^T (W stored in x out) . x (in x N) + b, ReLU
 * fused for a hidden layer; the descriptors and algorithm made once, as
 * frameworks cache them. */
static int
fc_lt_setup(struct net *net, struct fc_layer *l)
{
    cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = l->relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                     : CUBLASLT_EPILOGUE_BIAS;
    const float *bias = net->params + l->b.offset;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t heur;
    uint64_t ws = LT_WORKSPACE;
    int count = 0;

    if (cublas_failed("cublasLtMatmulDescCreate",
            cublasLtMatmulDescCreate(&l->lt_op, CUBLAS_COMPUTE_32F,
                                     CUDA_R_32F)) ||
        cublas_failed("cublasLtMatmulDescSetAttribute",
            cublasLtMatmulDescSetAttribute(l->lt_op,
                CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t))) ||
        cublas_failed("cublasLtMatmulDescSetAttribute",
            cublasLtMatmulDescSetAttribute(l->lt_op,
                CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n))) ||
        cublas_failed("cublasLtMatmulDescSetAttribute",
            cublasLtMatmulDescSetAttribute(l->lt_op,
                CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi))) ||
        cublas_failed("cublasLtMatmulDescSetAttribute",
            cublasLtMatmulDescSetAttribute(l->lt_op,
                CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias))) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
            cublasLtMatrixLayoutCreate(&l->lt_w, CUDA_R_32F, l->in, l->out,
                                       l->in)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
            cublasLtMatrixLayoutCreate(&l->lt_x, CUDA_R_32F, l->in,
                                       net->batch, l->in)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
            cublasLtMatrixLayoutCreate(&l->lt_y, CUDA_R_32F, l->out,
                                       net->batch, l->out)) ||
        cublas_failed("cublasLtMatmulPreferenceCreate",
            cublasLtMatmulPreferenceCreate(&pref)))
        return -1;
    if (cublas_failed("cublasLtMatmulPreferenceSetAttribute",
            cublasLtMatmulPreferenceSetAttribute(pref,
                CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws))) ||
        cublas_failed("cublasLtMatmulAlgoGetHeuristic",
            cublasLtMatmulAlgoGetHeuristic(net->lt, l->lt_op, l->lt_w,
                l->lt_x, l->lt_y, l->lt_y, pref, 1, &heur, &count))) {
        cublasLtMatmulPreferenceDestroy(pref);
        return -1;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (count < 1) {
        fprintf(stderr, EXAMPLE_PROG ": cuBLASLt has no algorithm for the "
                "%d -> %d layer\n", l->in, l->out);
        return -1;
    }
    l->lt_algo = heur.algo;
    return 0;
}

/* Weights uniform with variance 2 / fan_in (He et al., for layers
 * followed by ReLU) or 1 / fan_in (the output layer), biases zero. */
static int
init_params(struct net *net, uint64_t seed)
{
    struct param *all[2 * (CONV_LAYERS + FC_LAYERS)];
    uint64_t state = seed;
    float *host;
    int n = 0, rc;

    for (int i = 0; i < CONV_LAYERS; i++) {
        all[n++] = &net->conv[i].w;
        all[n++] = &net->conv[i].b;
    }
    for (int i = 0; i < FC_LAYERS; i++) {
        all[n++] = &net->fc[i].w;
        all[n++] = &net->fc[i].b;
    }
    host = calloc(net->param_count, sizeof(float));
    if (host == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of memory\n");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        float scale;

        if (all[i]->fan_in == 0)
            continue;
        scale = sqrtf((all[i]->relu ? 6.0f : 3.0f) /
                      (float)all[i]->fan_in);
        for (size_t j = 0; j < all[i]->count; j++)
            host[all[i]->offset + j] = rng_float(&state, scale);
    }
    rc = cuda_failed("cudaMemcpy", cudaMemcpy(net->params, host,
                     net->param_count * sizeof(float),
                     cudaMemcpyHostToDevice)) ||
         cuda_failed("cudaMemset", cudaMemset(net->velocity, 0,
                     net->param_count * sizeof(float))) ||
         cuda_failed("cudaMemset", cudaMemset(net->grads, 0,
                     net->param_count * sizeof(float)));
    free(host);
    return rc ? -1 : 0;
}

/* The layer sizes, parameters and wiring, before anything touches the
 * device. */
static void
net_layout(struct net *net)
{
    int side = IMAGE_SIDE, channels = 1;

    for (int i = 0; i < CONV_LAYERS; i++) {
        struct conv_layer *b = &net->conv[i];

        b->cin = channels;
        b->cout = conv_specs[i].cout;
        b->side = side;
        b->pool = conv_specs[i].pool;
        param_add(net, &b->w, (size_t)b->cout * b->cin * KERNEL * KERNEL,
                  b->cin * KERNEL * KERNEL, 1);
        param_add(net, &b->b, (size_t)b->cout, 0, 0);
        channels = b->cout;
        if (b->pool)
            side /= 2;
    }
    net->fc[0].in = channels * side * side;
    net->fc[0].out = net->hidden;
    net->fc[0].relu = 1;
    net->fc[1].in = net->hidden;
    net->fc[1].out = CLASSES;
    net->fc[1].relu = 0;
    for (int i = 0; i < FC_LAYERS; i++) {
        struct fc_layer *l = &net->fc[i];

        param_add(net, &l->w, (size_t)l->in * l->out, l->in, l->relu);
        param_add(net, &l->b, (size_t)l->out, 0, 0);
    }
}

/* Inputs and input gradients: each layer reads the one before. */
static void
net_wire(struct net *net)
{
    net->conv[0].in = net->input;
    net->conv[0].d_in = NULL;
    for (int i = 1; i < CONV_LAYERS; i++) {
        net->conv[i].in = net->conv[i - 1].out;
        net->conv[i].d_in = net->conv[i - 1].d_out;
    }
    net->fc[0].x = net->conv[CONV_LAYERS - 1].out;
    net->fc[0].d_x = net->conv[CONV_LAYERS - 1].d_out;
    for (int i = 1; i < FC_LAYERS; i++) {
        net->fc[i].x = net->fc[i - 1].act;
        net->fc[i].d_x = net->fc[i - 1].d_act;
    }
}

static int
handles_setup(struct net *net)
{
    struct cudaDeviceProp prop;
    int device;

    /* The current device: a rank of legacy_trainer_mpi picked its own. */
    if (cuda_failed("cudaGetDevice", cudaGetDevice(&device)) ||
        cuda_failed("cudaGetDeviceProperties",
                    cudaGetDeviceProperties(&prop, device)))
        return -1;
    snprintf(net->device, sizeof(net->device), "%s", prop.name);
    return cuda_failed("cudaStreamCreate", cudaStreamCreate(&net->stream)) ||
           cuda_failed("cudaEventCreate", cudaEventCreate(&net->mark[0])) ||
           cuda_failed("cudaEventCreate", cudaEventCreate(&net->mark[1])) ||
           cublas_failed("cublasCreate_v2", cublasCreate(&net->blas)) ||
           cublas_failed("cublasSetStream_v2",
                         cublasSetStream(net->blas, net->stream)) ||
           cudnn_failed("cudnnCreate", cudnnCreate(&net->dnn)) ||
           cudnn_failed("cudnnSetStream",
                        cudnnSetStream(net->dnn, net->stream)) ||
           cudnn_failed("cudnnCreateActivationDescriptor",
                        cudnnCreateActivationDescriptor(&net->relu)) ||
           cudnn_failed("cudnnSetActivationDescriptor",
                        cudnnSetActivationDescriptor(net->relu,
                            CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN,
                            0.0)) ||
           cudnn_failed("cudnnCreatePoolingDescriptor",
                        cudnnCreatePoolingDescriptor(&net->pool)) ||
           cudnn_failed("cudnnSetPooling2dDescriptor",
                        cudnnSetPooling2dDescriptor(net->pool,
                            CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2,
                            0, 0, 2, 2))
           ? -1 : 0;
}

struct net *
net_create(int batch, int hidden, uint64_t seed, int fc_lt, int conv_graph)
{
    struct net *net = calloc(1, sizeof(*net));
    size_t p;

    if (net == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of memory\n");
        return NULL;
    }
    net->batch = batch;
    net->hidden = hidden;
    net->conv_graph = conv_graph;
    net_layout(net);
    if (handles_setup(net) != 0)
        goto fail;
    p = net->param_count;
    net->params = dev_alloc(net, p);
    net->grads = dev_alloc(net, p);
    net->velocity = dev_alloc(net, p);
    net->input = dev_alloc(net, (size_t)batch * IMAGE_PIXELS);
    net->probs = dev_alloc(net, (size_t)batch * CLASSES);
    net->d_logits = dev_alloc(net, (size_t)batch * CLASSES);
    net->ones = dev_alloc(net, (size_t)batch);
    net->host_probs = malloc((size_t)batch * CLASSES * sizeof(float));
    net->host_onehot = malloc((size_t)batch * CLASSES * sizeof(float));
    if (net->params == NULL || net->grads == NULL || net->velocity == NULL ||
        net->input == NULL || net->probs == NULL || net->d_logits == NULL ||
        net->ones == NULL || net->host_probs == NULL ||
        net->host_onehot == NULL)
        goto fail;
    for (int i = 0; i < CONV_LAYERS; i++) {
        if (conv_setup(net, &net->conv[i]) != 0)
            goto fail;
    }
    for (int i = 0; i < FC_LAYERS; i++) {
        if (fc_setup(net, &net->fc[i]) != 0)
            goto fail;
    }
    net_wire(net);
    if (fc_lt) {
        if (cublas_failed("cublasLtCreate", cublasLtCreate(&net->lt)))
            goto fail;
        net->lt_workspace = dev_alloc(net, LT_WORKSPACE / sizeof(float));
        if (net->lt_workspace == NULL)
            goto fail;
        for (int i = 0; i < FC_LAYERS; i++) {
            if (fc_lt_setup(net, &net->fc[i]) != 0)
                goto fail;
        }
    }
    for (int i = 0; i < CONV_LAYERS && !conv_graph; i++) {
        if (size_workspace(net, &net->conv[i]) != 0)
            goto fail;
    }
    if (tensor4(&net->flat_desc, 1, (int)p, 1, 1))
        goto fail;
    if (net->workspace_size > 0) {
        net->workspace = dev_alloc(net, (net->workspace_size + 3) / 4);
        if (net->workspace == NULL)
            goto fail;
    }
    for (int i = 0; i < CONV_LAYERS && conv_graph; i++) {
        if (graph_packs(net, &net->conv[i]) != 0)
            goto fail;
    }
    for (int i = 0; i < batch; i++)
        net->host_onehot[i] = 1.0f;
    if (cuda_failed("cudaMemcpy", cudaMemcpy(net->ones, net->host_onehot,
                    (size_t)batch * sizeof(float), cudaMemcpyHostToDevice)) ||
        init_params(net, seed) != 0)
        goto fail;
    return net;
fail:
    net_destroy(net);
    return NULL;
}

void
net_destroy(struct net *net)
{
    if (net == NULL)
        return;
    for (int i = 0; i < CONV_LAYERS; i++) {
        struct conv_layer *b = &net->conv[i];

        cudnnDestroyTensorDescriptor(b->in_desc);
        cudnnDestroyTensorDescriptor(b->pre_desc);
        cudnnDestroyTensorDescriptor(b->out_desc);
        cudnnDestroyTensorDescriptor(b->bias_desc);
        cudnnDestroyFilterDescriptor(b->w_desc);
        cudnnDestroyConvolutionDescriptor(b->conv);
        for (int d = 0; d < 3; d++) {
            if (b->pack[d] != NULL)
                cudnnBackendDestroyDescriptor(b->pack[d]);
            if (b->plan[d] != NULL)
                cudnnBackendDestroyDescriptor(b->plan[d]);
        }
    }
    for (int i = 0; i < FC_LAYERS; i++) {
        struct fc_layer *l = &net->fc[i];

        cudnnDestroyTensorDescriptor(l->y_desc);
        cudnnDestroyTensorDescriptor(l->bias_desc);
        if (l->lt_op != NULL)
            cublasLtMatmulDescDestroy(l->lt_op);
        if (l->lt_w != NULL)
            cublasLtMatrixLayoutDestroy(l->lt_w);
        if (l->lt_x != NULL)
            cublasLtMatrixLayoutDestroy(l->lt_x);
        if (l->lt_y != NULL)
            cublasLtMatrixLayoutDestroy(l->lt_y);
    }
    if (net->lt != NULL)
        cublasLtDestroy(net->lt);
    cudnnDestroyTensorDescriptor(net->flat_desc);
    cudnnDestroyActivationDescriptor(net->relu);
    cudnnDestroyPoolingDescriptor(net->pool);
    if (net->dnn != NULL)
        cudnnDestroy(net->dnn);
    if (net->blas != NULL)
        cublasDestroy(net->blas);
    for (int i = 0; i < net->nallocs; i++)
        cudaFree(net->allocs[i]);
    for (int i = 0; i < 2; i++) {
        if (net->mark[i] != NULL)
            cudaEventDestroy(net->mark[i]);
    }
    if (net->stream != NULL)
        cudaStreamDestroy(net->stream);
    free(net->host_probs);
    free(net->host_onehot);
    free(net);
}

const char *
net_device_name(const struct net *net)
{
    return net->device;
}

double
net_device_ms(struct net *net)
{
    float ms = -1.0f;
    cudaEvent_t swap;

    if (cuda_failed("cudaEventRecord",
                    cudaEventRecord(net->mark[1], net->stream)) ||
        cuda_failed("cudaEventSynchronize",
                    cudaEventSynchronize(net->mark[1])))
        return -1.0;
    if (net->marked &&
        cuda_failed("cudaEventElapsedTime",
                    cudaEventElapsedTime(&ms, net->mark[0], net->mark[1])))
        ms = -1.0f;
    swap = net->mark[0];
    net->mark[0] = net->mark[1];
    net->mark[1] = swap;
    net->marked = 1;
    return ms;
}

/* ---- Forward ------------------------------------------------------------ */

static const float one = 1.0f, zero = 0.0f;

static int
conv_forward(struct net *net, struct conv_layer *b)
{
    const float *w = net->params + b->w.offset;
    const float *bias = net->params + b->b.offset;

    return (net->conv_graph
                ? cudnn_failed("cudnnBackendExecute",
                      cudnnBackendExecute(net->dnn, b->plan[GRAPH_FWD],
                          b->pack[GRAPH_FWD]))
                : cudnn_failed("cudnnConvolutionForward",
                      cudnnConvolutionForward(net->dnn, &one, b->in_desc,
                          b->in, b->w_desc, w, b->conv, b->fwd_algo,
                          net->workspace, net->workspace_size, &zero,
                          b->pre_desc, b->pre))) ||
           cudnn_failed("cudnnAddTensor",
               cudnnAddTensor(net->dnn, &one, b->bias_desc, bias, &one,
                   b->pre_desc, b->pre)) ||
           cudnn_failed("cudnnActivationForward",
               cudnnActivationForward(net->dnn, net->relu, &one,
                   b->pre_desc, b->pre, &zero, b->pre_desc, b->act)) ||
           (b->pool &&
            cudnn_failed("cudnnPoolingForward",
               cudnnPoolingForward(net->dnn, net->pool, &one, b->pre_desc,
                   b->act, &zero, b->out_desc, b->out)))
           ? -1 : 0;
}

static int
fc_forward(struct net *net, struct fc_layer *l)
{
    const float *w = net->params + l->w.offset;
    const float *bias = net->params + l->b.offset;

    if (net->lt) {
        float *y = l->relu ? l->act : l->pre;

        return cublas_failed("cublasLtMatmul",
                   cublasLtMatmul(net->lt, l->lt_op, &one, w, l->lt_w, l->x,
                                  l->lt_x, &zero, y, l->lt_y, y, l->lt_y,
                                  &l->lt_algo, net->lt_workspace,
                                  LT_WORKSPACE, net->stream)) ? -1 : 0;
    }

    /* pre (out x N) = W^T (W stored in x out) . x (in x N) */
    if (cublas_failed("cublasSgemm_v2",
            cublasSgemm(net->blas, CUBLAS_OP_T, CUBLAS_OP_N, l->out,
                        net->batch, l->in, &one, w, l->in, l->x, l->in,
                        &zero, l->pre, l->out)) ||
        cudnn_failed("cudnnAddTensor",
            cudnnAddTensor(net->dnn, &one, l->bias_desc, bias, &one,
                           l->y_desc, l->pre)))
        return -1;
    if (!l->relu)
        return 0;
    return cudnn_failed("cudnnActivationForward",
               cudnnActivationForward(net->dnn, net->relu, &one, l->y_desc,
                   l->pre, &zero, l->y_desc, l->act)) ? -1 : 0;
}

/* Uploads the batch (padding past `count` with zeros), runs the network
 * and copies the class probabilities back. */
static int
forward(struct net *net, const float *images, int count)
{
    size_t bytes = (size_t)count * IMAGE_PIXELS * sizeof(float);
    size_t all = (size_t)net->batch * IMAGE_PIXELS * sizeof(float);
    struct fc_layer *last = &net->fc[FC_LAYERS - 1];

    if (count < net->batch &&
        cuda_failed("cudaMemsetAsync",
                    cudaMemsetAsync((char *)net->input + bytes, 0,
                                    all - bytes, net->stream)))
        return -1;
    if (cuda_failed("cudaMemcpyAsync",
                    cudaMemcpyAsync(net->input, images, bytes,
                                    cudaMemcpyHostToDevice, net->stream)))
        return -1;
    for (int i = 0; i < CONV_LAYERS; i++) {
        if (conv_forward(net, &net->conv[i]) != 0)
            return -1;
    }
    for (int i = 0; i < FC_LAYERS; i++) {
        if (fc_forward(net, &net->fc[i]) != 0)
            return -1;
    }
    if (cudnn_failed("cudnnSoftmaxForward",
            cudnnSoftmaxForward(net->dnn, CUDNN_SOFTMAX_ACCURATE,
                CUDNN_SOFTMAX_MODE_INSTANCE, &one, last->y_desc, last->pre,
                &zero, last->y_desc, net->probs)) ||
        cuda_failed("cudaMemcpyAsync",
            cudaMemcpyAsync(net->host_probs, net->probs,
                (size_t)net->batch * CLASSES * sizeof(float),
                cudaMemcpyDeviceToHost, net->stream)) ||
        cuda_failed("cudaStreamSynchronize",
            cudaStreamSynchronize(net->stream)))
        return -1;
    return 0;
}

/* How many of the first `count` rows of host_probs pick their label; the
 * summed cross-entropy of those rows in *loss (when not NULL). */
static int
score(const struct net *net, int count, const unsigned char *labels,
      double *loss)
{
    int correct = 0;
    double sum = 0.0;

    for (int i = 0; i < count; i++) {
        const float *p = net->host_probs + (size_t)i * CLASSES;
        int best = 0;

        for (int c = 1; c < CLASSES; c++) {
            if (p[c] > p[best])
                best = c;
        }
        correct += best == labels[i];
        sum -= log(fmax((double)p[labels[i]], 1e-30));
    }
    if (loss != NULL)
        *loss = sum;
    return correct;
}

int
net_classify(struct net *net, const float *images, int count,
             const unsigned char *labels, int *correct)
{
    if (forward(net, images, count) != 0)
        return -1;
    *correct = score(net, count, labels, NULL);
    return 0;
}

/* ---- Backward ----------------------------------------------------------- */

static int
fc_backward(struct net *net, struct fc_layer *l)
{
    const float *w = net->params + l->w.offset;
    float *dw = net->grads + l->w.offset, *db = net->grads + l->b.offset;

    /* ReLU's gradient passes where its input was positive, which is where
     * its output is: with --fc-lt the fused product kept only the output. */
    if (l->relu &&
        cudnn_failed("cudnnActivationBackward",
            cudnnActivationBackward(net->dnn, net->relu, &one, l->y_desc,
                l->act, l->y_desc, l->d_act, l->y_desc,
                net->lt ? l->act : l->pre, &zero, l->y_desc, l->d_pre)))
        return -1;
    /* dW (in x out) = x (in x N) . d_pre^T; db = d_pre . ones;
     * d_x (in x N) = W (in x out) . d_pre (out x N) */
    return cublas_failed("cublasSgemm_v2",
               cublasSgemm(net->blas, CUBLAS_OP_N, CUBLAS_OP_T, l->in,
                   l->out, net->batch, &one, l->x, l->in, l->d_pre, l->out,
                   &zero, dw, l->in)) ||
           cublas_failed("cublasSgemv_v2",
               cublasSgemv(net->blas, CUBLAS_OP_N, l->out, net->batch, &one,
                   l->d_pre, l->out, net->ones, 1, &zero, db, 1)) ||
           cublas_failed("cublasSgemm_v2",
               cublasSgemm(net->blas, CUBLAS_OP_N, CUBLAS_OP_N, l->in,
                   net->batch, l->out, &one, w, l->in, l->d_pre, l->out,
                   &zero, l->d_x, l->in))
           ? -1 : 0;
}

static int
conv_backward(struct net *net, struct conv_layer *b)
{
    const float *w = net->params + b->w.offset;
    float *dw = net->grads + b->w.offset, *db = net->grads + b->b.offset;

    if ((b->pool &&
         cudnn_failed("cudnnPoolingBackward",
            cudnnPoolingBackward(net->dnn, net->pool, &one, b->out_desc,
                b->out, b->out_desc, b->d_out, b->pre_desc, b->act, &zero,
                b->pre_desc, b->d_act))) ||
        cudnn_failed("cudnnActivationBackward",
            cudnnActivationBackward(net->dnn, net->relu, &one, b->pre_desc,
                b->act, b->pre_desc, b->d_act, b->pre_desc, b->pre, &zero,
                b->pre_desc, b->d_pre)) ||
        cudnn_failed("cudnnConvolutionBackwardBias",
            cudnnConvolutionBackwardBias(net->dnn, &one, b->pre_desc,
                b->d_pre, &zero, b->bias_desc, db)) ||
        (net->conv_graph
             ? cudnn_failed("cudnnBackendExecute",
                   cudnnBackendExecute(net->dnn, b->plan[GRAPH_BWD_FILTER],
                       b->pack[GRAPH_BWD_FILTER]))
             : cudnn_failed("cudnnConvolutionBackwardFilter",
                   cudnnConvolutionBackwardFilter(net->dnn, &one, b->in_desc,
                       b->in, b->pre_desc, b->d_pre, b->conv,
                       b->bwd_filter_algo, net->workspace,
                       net->workspace_size, &zero, b->w_desc, dw))))
        return -1;
    if (b->d_in == NULL)
        return 0;
    if (net->conv_graph)
        return cudnn_failed("cudnnBackendExecute",
                   cudnnBackendExecute(net->dnn, b->plan[GRAPH_BWD_DATA],
                       b->pack[GRAPH_BWD_DATA])) ? -1 : 0;
    return cudnn_failed("cudnnConvolutionBackwardData",
               cudnnConvolutionBackwardData(net->dnn, &one, b->w_desc, w,
                   b->pre_desc, b->d_pre, b->conv, b->bwd_data_algo,
                   net->workspace, net->workspace_size, &zero, b->in_desc,
                   b->d_in)) ? -1 : 0;
}

/* d_logits = (probs - onehot) / N: the gradient of the mean
 * cross-entropy through the softmax. */
static int
loss_gradient(struct net *net, const unsigned char *labels)
{
    struct fc_layer *last = &net->fc[FC_LAYERS - 1];
    size_t n = (size_t)net->batch * CLASSES;
    float inv = 1.0f / (float)net->batch, minus_inv = -inv;

    memset(net->host_onehot, 0, n * sizeof(float));
    for (int i = 0; i < net->batch; i++)
        net->host_onehot[(size_t)i * CLASSES + labels[i]] = 1.0f;
    return cuda_failed("cudaMemcpyAsync",
               cudaMemcpyAsync(last->d_pre, net->host_onehot,
                   n * sizeof(float), cudaMemcpyHostToDevice,
                   net->stream)) ||
           cudnn_failed("cudnnAddTensor",
               cudnnAddTensor(net->dnn, &inv, last->y_desc, net->probs,
                   &minus_inv, last->y_desc, last->d_pre))
           ? -1 : 0;
}

/* velocity = momentum velocity + grads; params -= lr velocity. */
static int
sgd_step(struct net *net, float lr, float momentum)
{
    float minus_lr = -lr;

    return cudnn_failed("cudnnAddTensor",
               cudnnAddTensor(net->dnn, &one, net->flat_desc, net->grads,
                   &momentum, net->flat_desc, net->velocity)) ||
           cublas_failed("cublasSaxpy_v2",
               cublasSaxpy(net->blas, (int)net->param_count, &minus_lr,
                   net->velocity, 1, net->params, 1))
           ? -1 : 0;
}

int
net_gradients(struct net *net, const float *images,
              const unsigned char *labels, double *loss, int *correct)
{
    if (forward(net, images, net->batch) != 0)
        return -1;
    *correct = score(net, net->batch, labels, loss);
    *loss /= net->batch;
    if (loss_gradient(net, labels) != 0)
        return -1;
    for (int i = FC_LAYERS - 1; i >= 0; i--) {
        if (fc_backward(net, &net->fc[i]) != 0)
            return -1;
    }
    for (int i = CONV_LAYERS - 1; i >= 0; i--) {
        if (conv_backward(net, &net->conv[i]) != 0)
            return -1;
    }
    return 0;
}

int
net_combine_gradients(struct net *net,
                      int (*combine)(float *grads, size_t count, void *arg),
                      void *arg)
{
    size_t bytes = net->param_count * sizeof(float);
    float *host = malloc(bytes);
    int rc = -1;

    if (host == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of memory\n");
        return -1;
    }
    /* The stream's work first: the gradients are complete after it. */
    if (!cuda_failed("cudaMemcpyAsync",
                     cudaMemcpyAsync(host, net->grads, bytes,
                                     cudaMemcpyDeviceToHost, net->stream)) &&
        !cuda_failed("cudaStreamSynchronize",
                     cudaStreamSynchronize(net->stream)) &&
        combine(host, net->param_count, arg) == 0 &&
        !cuda_failed("cudaMemcpyAsync",
                     cudaMemcpyAsync(net->grads, host, bytes,
                                     cudaMemcpyHostToDevice, net->stream)) &&
        !cuda_failed("cudaStreamSynchronize",
                     cudaStreamSynchronize(net->stream)))
        rc = 0;
    free(host);
    return rc;
}

int
net_update(struct net *net, float lr, float momentum)
{
    return sgd_step(net, lr, momentum);
}

int
net_train_step(struct net *net, const float *images,
               const unsigned char *labels, float lr, float momentum,
               double *loss, int *correct)
{
    if (net_gradients(net, images, labels, loss, correct) != 0)
        return -1;
    return net_update(net, lr, momentum);
}
