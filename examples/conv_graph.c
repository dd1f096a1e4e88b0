/* conv_graph: an FP32 cuDNN program of today: its convolutions (forward,
 * backward data, backward filter) go through the backend (graph) API,
 * built with the raw descriptors as cudnn-frontend builds them: tensors,
 * a convolution, one operation, an operation graph, the heuristics'
 * engine configurations (mode A; the count first) with each one's
 * numerical and behaviour notes (a count query first), an execution plan
 * with its workspace and a variant pack. Layouts NCHW and NHWC, odd
 * channel counts, groups, strides, dilations, asymmetric padding, 2-d and
 * 3-d, alpha and beta.
 *
 * Each case's result is compared with an FP64 host reference: the
 * largest |got - want| / (|alpha| sum |products| + |beta old|) over its
 * elements must stay within the bound named by --tol (tf32, the default:
 * 2^-10, what cuDNN's default TF32 math allows; fp32: 1e-5; fp16, bf16 or
 * a number). After the FP32 convolutions, three kinds of call a converting
 * shim must leave alone, in each direction: FP16 data (class typed: only
 * the status is judged), a plan of the heuristics' fallback mode, on an
 * engine without Tensor Cores (class strict), and a variant pack without
 * the filter's pointer (class invalid: cuDNN's BAD_PARAM, the output
 * untouched). Prints one line per case:
 * case NAME_DIR m=OUTPUTS n=GROUPS k=REDUCTION op=DIR status=NAME(N)
 *   err/bound=R hash=H ok|FAIL api=cudnnBackendExecute class=C engine=E
 *   ws=BYTES
 * then "result: P of N cases passed", and exits 0 when every case passed,
 * 1 when one failed, 3 on an unexpected API error. --threads T runs every
 * case in T threads at once, each on its own handle, building its own
 * plans, and prints only the counts. --repeat N executes each case's plan
 * N times in a row on the same inputs (the output's old contents restored
 * before each), each execution checked and printed. --engine-by-index
 * builds each plan from an engine the program makes by the global index
 * of the heuristics' configuration (and a configuration of it, both
 * destroyed before the plan is finalized). --graph-replaced destroys
 * each plan's operation graph after the heuristics gave its
 * configurations, makes another graph at the same address (the same
 * tensors' convolution in the next direction), and only then finalizes
 * the plan, which still computes the first graph's convolution; it prints
 * "graphs replaced at their address: R of N" before the result. */
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum dir { FWD, BWD_DATA, BWD_FILTER };
static const char *const dir_op[] = { "FW", "BD", "BF" };

/* What a converting shim does with the case: converts it (conv), passes
 * it through (typed: FP16 data), keeps it FP32 (strict: the program's
 * engine has no Tensor Cores; invalid: cuDNN refuses the variant pack). */
enum cls { CONV, TYPED, STRICT, INVALID };
static const char *const cls_name[] = { "conv", "typed", "strict",
                                        "invalid" };

struct gcase {
    const char *name;
    int nsp;                            /* 2 or 3; 2-d: depth 1 */
    int n, c, k, groups;
    int in[3], filt[3], pre[3], post[3], stride[3], dil[3];
    int nhwc, flip;
    double alpha, beta;
    enum cls cls;
};

static const struct gcase cases[] = {
    { "c3_k5", 2, 2, 3, 5, 1, { 1, 7, 6 }, { 1, 3, 3 }, { 0, 1, 1 },
      { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, 1.0, 0.0,
      CONV },
    { "c13_nhwc_dil2", 2, 1, 13, 5, 1, { 1, 8, 8 }, { 1, 3, 3 },
      { 0, 2, 2 }, { 0, 2, 2 }, { 1, 1, 1 }, { 1, 2, 2 }, 1, 0, 1.0, 0.0,
      CONV },
    { "groups2_stride2_flip", 2, 2, 8, 12, 2, { 1, 9, 8 }, { 1, 3, 3 },
      { 0, 1, 1 }, { 0, 1, 1 }, { 1, 2, 2 }, { 1, 1, 1 }, 0, 1, 1.0, 0.0,
      CONV },
    { "groups4_nhwc_asym_pad", 2, 1, 12, 8, 4, { 1, 6, 7 }, { 1, 2, 3 },
      { 0, 1, 0 }, { 0, 0, 2 }, { 1, 1, 1 }, { 1, 1, 1 }, 1, 0, 1.0, 0.0,
      CONV },
    { "alpha_beta", 2, 2, 3, 8, 1, { 1, 6, 6 }, { 1, 3, 3 }, { 0, 1, 1 },
      { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, 0.5, 0.25,
      CONV },
    { "c64_k16", 2, 1, 64, 16, 1, { 1, 5, 5 }, { 1, 3, 3 }, { 0, 1, 1 },
      { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, 1, 0, 1.0, 0.0,
      CONV },
    { "3d_c3", 3, 2, 3, 4, 1, { 4, 5, 5 }, { 2, 3, 3 }, { 1, 1, 1 },
      { 0, 1, 1 }, { 1, 2, 1 }, { 1, 1, 2 }, 0, 0, 1.0, 0.0,
      CONV },
    { "groups3_c9_nhwc_dil2_beta", 2, 2, 9, 6, 3, { 1, 9, 7 }, { 1, 3, 2 },
      { 0, 2, 1 }, { 0, 2, 0 }, { 1, 1, 2 }, { 1, 2, 2 }, 1, 0, 1.5, -0.5,
      CONV },
    /* The calls to leave alone come last: a shim's converted calls are
     * then the first cudnnBackendExecute calls of the run. */
    { "fp16_data", 2, 2, 8, 8, 1, { 1, 6, 6 }, { 1, 3, 3 }, { 0, 1, 1 },
      { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, 1, 0, 1.0, 0.0, TYPED },
    { "fallback_engine", 2, 2, 5, 7, 1, { 1, 6, 5 }, { 1, 3, 3 },
      { 0, 1, 1 }, { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, 1.0, 0.0,
      STRICT },
    { "pack_without_w", 2, 1, 4, 4, 1, { 1, 5, 5 }, { 1, 3, 3 }, { 0, 1, 1 },
      { 0, 1, 1 }, { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, 1.0, 0.0, INVALID },
};
#define CASE_COUNT (sizeof(cases) / sizeof(cases[0]))

#define UID_X 1
#define UID_W 2
#define UID_Y 3

static _Atomic int api_errors;

/* --threads: each thread runs every case on its own handle, and only the
 * counts are printed. */
static _Thread_local int quiet;
/* --repeat: executions of each case's plan. */
static int repeat = 1;
/* --engine-by-index: plans built from engines by global index. */
static int by_index;
/* --graph-replaced: see replace_graph; the graphs made at the address of
 * the one they replaced. */
static int replaced;
static _Atomic int replaced_at_address;

/* Records a failed call; returns nonzero when it failed. */
static int
failed(const char *what, cudnnStatus_t st)
{
    if (st == CUDNN_STATUS_SUCCESS)
        return 0;
    if (!quiet)
        printf("api %s status=%s(%d)\n", what, cudnnGetErrorString(st),
               (int)st);
    api_errors++;
    return 1;
}

#define DNN(call) failed(#call, (call))

static _Thread_local uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* Uniform in [-1, 1), 24 significant bits. */
static float
rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / 8388608.0 - 1.0);
}

static int
out_size(const struct gcase *g, int d)
{
    int span = (g->filt[d] - 1) * g->dil[d] + 1;

    return 1 + (g->in[d] + g->pre[d] + g->post[d] - span) / g->stride[d];
}

/* Sizes (N, C, spatial) of x (0), w (1) and y (2); packed strides in the
 * case's layout (C innermost for NHWC). */
static int
shape(const struct gcase *g, int which, int64_t *dim, int64_t *stride)
{
    int nb = 2 + g->nsp, order[5], n = 0;
    int64_t s = 1;

    dim[0] = which == 1 ? g->k : g->n;
    dim[1] = which == 0 ? g->c : which == 1 ? g->c / g->groups : g->k;
    for (int i = 0; i < g->nsp; i++) {
        int d = 3 - g->nsp + i;

        dim[2 + i] = which == 0 ? g->in[d] : which == 1 ? g->filt[d]
                                                        : out_size(g, d);
    }
    if (g->nhwc)
        order[n++] = 1;
    for (int i = nb - 1; i >= 2; i--)
        order[n++] = i;
    if (!g->nhwc)
        order[n++] = 1;
    order[n++] = 0;
    for (int i = 0; i < nb; i++) {
        stride[order[i]] = s;
        s *= dim[order[i]];
    }
    return nb;
}

static size_t
count(int nb, const int64_t *dim)
{
    size_t n = 1;

    for (int i = 0; i < nb; i++)
        n *= (size_t)dim[i];
    return n;
}

/* Element offset of row-major index `lin`. */
static size_t
offset(int nb, const int64_t *dim, const int64_t *stride, size_t lin)
{
    size_t off = 0;

    for (int i = nb - 1; i >= 0; i--) {
        off += (lin % (size_t)dim[i]) * (size_t)stride[i];
        lin /= (size_t)dim[i];
    }
    return off;
}

/* ---- The backend descriptors ---------------------------------------------- */

static cudnnBackendDescriptor_t
make_tensor(int64_t uid, int nb, const int64_t *dim, const int64_t *stride,
            cudnnDataType_t type)
{
    cudnnBackendDescriptor_t t = NULL;
    int64_t align = 16;

    if (DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR,
                                         &t)))
        return NULL;
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE,
                                 CUDNN_TYPE_DATA_TYPE, 1, &type));
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                 CUDNN_TYPE_INT64, nb, dim));
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES,
                                 CUDNN_TYPE_INT64, nb, stride));
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                 CUDNN_TYPE_INT64, 1, &uid));
    DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                 CUDNN_TYPE_INT64, 1, &align));
    DNN(cudnnBackendFinalize(t));
    return t;
}

static cudnnBackendDescriptor_t
make_conv(const struct gcase *g)
{
    cudnnBackendDescriptor_t c = NULL;
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = g->flip ? CUDNN_CONVOLUTION
                                          : CUDNN_CROSS_CORRELATION;
    int64_t nsp = g->nsp, pre[3], post[3], stride[3], dil[3];

    for (int i = 0; i < g->nsp; i++) {
        int d = 3 - g->nsp + i;

        pre[i] = g->pre[d], post[i] = g->post[d];
        stride[i] = g->stride[d], dil[i] = g->dil[d];
    }
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
                                 CUDNN_TYPE_INT64, nsp, pre));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                                 CUDNN_TYPE_INT64, nsp, post));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                 CUDNN_TYPE_INT64, nsp, stride));
    DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                                 CUDNN_TYPE_INT64, nsp, dil));
    DNN(cudnnBackendFinalize(c));
    return c;
}

static const cudnnBackendDescriptorType_t op_type[] = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
};

/* alpha, beta, conv, x, w, y in the forward roles. */
static const cudnnBackendAttributeName_t op_attr[3][6] = {
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

/* Reads configuration `cfg`'s engine's numerical and behaviour notes as
 * cudnn-frontend does for every configuration the heuristics return,
 * before it builds a plan (to deselect the notes a user excludes): a
 * count query with the largest count and no array, then the notes. */
static void
read_notes(cudnnBackendDescriptor_t cfg)
{
    cudnnBackendDescriptor_t eng = NULL;
    cudnnBackendNumericalNote_t num[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    cudnnBackendBehaviorNote_t beh[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    int64_t n = 0;

    DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    DNN(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng));
    DNN(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                 CUDNN_TYPE_NUMERICAL_NOTE,
                                 CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, NULL));
    if (n < 0 || n > CUDNN_NUMERICAL_NOTE_TYPE_COUNT) {
        failed("numerical note count out of range", CUDNN_STATUS_BAD_PARAM);
        n = 0;
    }
    DNN(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                 CUDNN_TYPE_NUMERICAL_NOTE, n, &n, num));
    DNN(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                 CUDNN_TYPE_BEHAVIOR_NOTE,
                                 CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, NULL));
    if (n < 0 || n > CUDNN_BEHAVIOR_NOTE_TYPE_COUNT) {
        failed("behaviour note count out of range", CUDNN_STATUS_BAD_PARAM);
        n = 0;
    }
    DNN(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                 CUDNN_TYPE_BEHAVIOR_NOTE, n, &n, beh));
    cudnnBackendDestroyDescriptor(eng);
}

/* --engine-by-index: a configuration of its own for heuristics
 * configuration cfg: an engine of cfg's engine's global index on graph,
 * as a program that keeps engine indexes builds it (the engine destroyed
 * as soon as the configuration is finalized). */
static cudnnBackendDescriptor_t
cfg_by_index(cudnnBackendDescriptor_t graph, cudnnBackendDescriptor_t cfg)
{
    cudnnBackendDescriptor_t eng = NULL, own = NULL;
    int64_t index = -1, got = 0;

    DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    DNN(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                 &eng));
    DNN(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                 CUDNN_TYPE_INT64, 1, &got, &index));
    cudnnBackendDestroyDescriptor(eng);
    eng = NULL;
    DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    DNN(cudnnBackendSetAttribute(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    DNN(cudnnBackendSetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                 CUDNN_TYPE_INT64, 1, &index));
    DNN(cudnnBackendFinalize(eng));
    DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                     &own));
    DNN(cudnnBackendSetAttribute(own, CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &eng));
    DNN(cudnnBackendFinalize(own));
    cudnnBackendDestroyDescriptor(eng);
    return own;
}

/* The graph of one convolution in direction `dir` (alpha, beta as
 * floats), and the plan of the heuristics' first configuration (with
 * --engine-by-index, of an engine of its index). */
/* The convolution operation of case g in direction `dir` on tensors t (x,
 * w, y), alpha and beta as floats, and its convolution descriptor. */
static cudnnBackendDescriptor_t
make_op(const struct gcase *g, enum dir dir,
        cudnnBackendDescriptor_t const t[3], cudnnBackendDescriptor_t *conv)
{
    cudnnBackendDescriptor_t op = NULL;
    float alpha = (float)g->alpha, beta = (float)g->beta;

    *conv = make_conv(g);
    DNN(cudnnBackendCreateDescriptor(op_type[dir], &op));
    DNN(cudnnBackendSetAttribute(op, op_attr[dir][0], CUDNN_TYPE_FLOAT, 1,
                                 &alpha));
    DNN(cudnnBackendSetAttribute(op, op_attr[dir][1], CUDNN_TYPE_FLOAT, 1,
                                 &beta));
    DNN(cudnnBackendSetAttribute(op, op_attr[dir][2],
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, conv));
    for (int i = 0; i < 3; i++)
        DNN(cudnnBackendSetAttribute(op, op_attr[dir][3 + i],
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[i]));
    DNN(cudnnBackendFinalize(op));
    return op;
}

/* The operation graph of op on handle h. */
static cudnnBackendDescriptor_t
make_graph(cudnnHandle_t h, cudnnBackendDescriptor_t op)
{
    cudnnBackendDescriptor_t graph = NULL;

    DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                                     &graph));
    DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                 CUDNN_TYPE_HANDLE, 1, &h));
    DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    DNN(cudnnBackendFinalize(graph));
    return graph;
}

/* --graph-replaced: destroys `graph` and makes, at its address, the graph
 * of the same tensors' convolution in the next direction (another
 * operation on the same uids), whose descriptors are returned for the
 * caller to destroy. Whether the address was reused is counted (the C
 * library decides: the program tries, and prints how often it was). */
static cudnnBackendDescriptor_t
replace_graph(cudnnHandle_t h, const struct gcase *g, enum dir dir,
              cudnnBackendDescriptor_t const t[3],
              cudnnBackendDescriptor_t graph, cudnnBackendDescriptor_t *op,
              cudnnBackendDescriptor_t *conv)
{
    cudnnBackendDescriptor_t other, held[8], spare[8];
    int nheld = 0;

    /* Its operation first: the graph's own descriptor is then the next
     * one made after the old graph's is freed. Descriptors of the same
     * size freed just before it fill the C library's per-thread cache of
     * freed blocks, which the next calloc does not take from, so that the
     * graph's block is the one calloc finds first; one made elsewhere all
     * the same is held while the next is tried. */
    *op = make_op(g, (enum dir)((dir + 1) % 3), t, conv);
    for (int i = 0; i < 8; i++)
        DNN(cudnnBackendCreateDescriptor(
            CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &spare[i]));
    for (int i = 0; i < 8; i++)
        cudnnBackendDestroyDescriptor(spare[i]);
    cudnnBackendDestroyDescriptor(graph);
    other = make_graph(h, *op);
    while (other != graph && nheld < 8) {
        held[nheld++] = other;
        other = make_graph(h, *op);
    }
    while (nheld > 0)
        cudnnBackendDestroyDescriptor(held[--nheld]);
    replaced_at_address += other == graph;
    return other;
}

static cudnnBackendDescriptor_t
make_plan(cudnnHandle_t h, const struct gcase *g, enum dir dir,
          cudnnBackendDescriptor_t const t[3], int64_t *engine)
{
    cudnnBackendDescriptor_t conv, op = make_op(g, dir, t, &conv);
    cudnnBackendDescriptor_t graph = make_graph(h, op);
    cudnnBackendDescriptor_t heur = NULL, cfgs[16] = { NULL }, plan = NULL;
    cudnnBackendDescriptor_t eng = NULL, op2 = NULL, conv2 = NULL;
    cudnnBackendHeurMode_t mode = g->cls == STRICT ? CUDNN_HEUR_MODE_FALLBACK
                                                   : CUDNN_HEUR_MODE_A;
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
    if (n > 16)
        n = 16;
    for (int64_t i = 0; i < n; i++)
        DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                         &cfgs[i]));
    if (n > 0)
        DNN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got,
                                     cfgs));
    for (int64_t i = 0; i < n; i++)
        read_notes(cfgs[i]);
    if (replaced)
        graph = replace_graph(h, g, dir, t, graph, &op2, &conv2);
    /* The first configuration whose plan finalizes, as the frontend
     * does. */
    for (int64_t i = 0; i < n && plan == NULL; i++) {
        cudnnBackendDescriptor_t cfg = by_index ? cfg_by_index(graph, cfgs[i])
                                                : cfgs[i];

        DNN(cudnnBackendCreateDescriptor(
            CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
        DNN(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                     CUDNN_TYPE_HANDLE, 1, &h));
        DNN(cudnnBackendSetAttribute(plan,
                                     CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
        if (cfg != cfgs[i])
            cudnnBackendDestroyDescriptor(cfg);
        if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
            cudnnBackendDestroyDescriptor(plan);
            plan = NULL;
            continue;
        }
        DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR,
                                         &eng));
        DNN(cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                     &eng));
        DNN(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                     CUDNN_TYPE_INT64, 1, &got, engine));
        cudnnBackendDestroyDescriptor(eng);
    }
    if (plan == NULL)
        failed("no engine configuration finalizes",
               CUDNN_STATUS_NOT_SUPPORTED);
    for (int64_t i = 0; i < n; i++)
        cudnnBackendDestroyDescriptor(cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
    cudnnBackendDestroyDescriptor(graph);
    cudnnBackendDestroyDescriptor(op);
    cudnnBackendDestroyDescriptor(conv);
    if (op2 != NULL) {
        cudnnBackendDestroyDescriptor(op2);
        cudnnBackendDestroyDescriptor(conv2);
    }
    return plan;
}

/* ---- One case -------------------------------------------------------------- */

/* The exact result and sum of |products| of each output element. */
static void
reference(const struct gcase *g, enum dir dir, float *const val[3],
          double *res, double *mag, size_t nout)
{
    int cg = g->c / g->groups, kg = g->k / g->groups;
    int o[3] = { out_size(g, 0), out_size(g, 1), out_size(g, 2) };

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
        int c = (k / kg) * cg + cl;
        int id = od * g->stride[0] - g->pre[0] + t * g->dil[0];
        int ih = oh * g->stride[1] - g->pre[1] + r * g->dil[1];
        int iw = ow * g->stride[2] - g->pre[2] + s * g->dil[2];
        int ft = g->flip ? g->filt[0] - 1 - t : t;
        int fr = g->flip ? g->filt[1] - 1 - r : r;
        int fs = g->flip ? g->filt[2] - 1 - s : s;
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
        a = dir == BWD_DATA ? val[2][yi] : val[0][xi];
        b = dir == BWD_FILTER ? val[2][yi] : val[1][wi];
        at = dir == FWD ? yi : dir == BWD_DATA ? xi : wi;
        res[at] += a * b;
        mag[at] += fabs(a * b);
    }
}

/* FNV-1a of the output's bytes as the device holds them. */
static uint64_t
fnv1a64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static const char *
status_name(cudnnStatus_t st)
{
    switch (st) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED:
        return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_STATUS_OTHER";
    }
}

/* The reduction length of one output element. */
static int
reduction(const struct gcase *g, enum dir dir)
{
    int f = g->filt[0] * g->filt[1] * g->filt[2];

    if (dir == BWD_FILTER)
        return g->n * out_size(g, 0) * out_size(g, 1) * out_size(g, 2);
    return (dir == FWD ? g->c : g->k) / g->groups * f;
}

/* The variant pack of the case: every tensor's pointer, or all but the
 * filter's (class invalid). */
static cudnnBackendDescriptor_t
make_pack(const struct gcase *g, void *const dev[3], void *wsp)
{
    static const int64_t uid[3] = { UID_X, UID_Y, UID_W };
    void *ptr[3] = { dev[0], dev[2], dev[1] };
    int64_t n = g->cls == INVALID ? 2 : 3;
    cudnnBackendDescriptor_t pack = NULL;

    DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                                     &pack));
    DNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                 CUDNN_TYPE_INT64, n, uid));
    DNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                 CUDNN_TYPE_VOID_PTR, n, ptr));
    DNN(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                 CUDNN_TYPE_VOID_PTR, 1, &wsp));
    DNN(cudnnBackendFinalize(pack));
    return pack;
}

/* The largest error of the FP32 result relative to its bound. */
static double
worst_error(const struct gcase *g, enum dir dir, float *const val[3],
            const float *got, size_t nout)
{
    int out = dir == FWD ? 2 : dir == BWD_DATA ? 0 : 1;
    double *res = malloc(nout * sizeof(double));
    double *mag = malloc(nout * sizeof(double));
    double err = 0.0;

    reference(g, dir, val, res, mag, nout);
    for (size_t j = 0; j < nout; j++) {
        double old = g->beta * val[out][j];
        double want = g->alpha * res[j] + old;
        double e = fabs(got[j] - want) /
                   (fabs(g->alpha) * mag[j] + fabs(old) + 1e-30);

        if (!(e <= err))
            err = e;    /* NaN sticks */
    }
    free(res), free(mag);
    return err;
}

/* Runs one case in one direction (its plan executed `repeat` times);
 * returns the executions that failed. */
static int
run_case(cudnnHandle_t h, const struct gcase *g, enum dir dir, double bound)
{
    static const int64_t uid[3] = { UID_X, UID_W, UID_Y };
    int out = dir == FWD ? 2 : dir == BWD_DATA ? 0 : 1;
    int half = g->cls == TYPED;
    size_t esize = half ? 2 : 4;
    int64_t dim[3][5], stride[3][5], engine = -1, ws = 0, one = 0;
    cudnnBackendDescriptor_t t[3], plan, pack = NULL;
    cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
    float *val[3], *got;
    unsigned char *mem[3], *back;
    void *dev[3], *wsp = NULL;
    size_t cnt[3], nout;
    double err = 0.0;
    char ratio[32];
    int nb = 0, pass, fails = 0;

    for (int i = 0; i < 3; i++) {
        nb = shape(g, i, dim[i], stride[i]);
        cnt[i] = count(nb, dim[i]);
        val[i] = malloc(cnt[i] * sizeof(float));
        /* FP16 data stays zero: only its status is judged. */
        mem[i] = calloc(cnt[i], esize);
        for (size_t j = 0; j < cnt[i]; j++) {
            val[i][j] = rnd();
            if (!half)
                memcpy(mem[i] + offset(nb, dim[i], stride[i], j) * 4,
                       &val[i][j], 4);
        }
        dev[i] = NULL;
        if (cudaMalloc(&dev[i], cnt[i] * esize) != cudaSuccess ||
            cudaMemcpy(dev[i], mem[i], cnt[i] * esize,
                       cudaMemcpyHostToDevice) != cudaSuccess)
            failed("cudaMalloc/cudaMemcpy", CUDNN_STATUS_EXECUTION_FAILED);
        t[i] = make_tensor(uid[i], nb, dim[i], stride[i],
                           half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT);
    }
    nout = cnt[out];
    back = malloc(nout * esize);
    got = malloc(nout * sizeof(float));
    plan = make_plan(h, g, dir, t, &engine);
    if (plan != NULL) {
        DNN(cudnnBackendGetAttribute(plan,
                                     CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &one, &ws));
        if (ws > 0 && cudaMalloc(&wsp, (size_t)ws) != cudaSuccess)
            failed("cudaMalloc(workspace)", CUDNN_STATUS_EXECUTION_FAILED);
        pack = make_pack(g, dev, wsp);
    }
    /* --repeat: the plan executed again on the same inputs, the output's
     * old contents (beta) restored first. */
    for (int r = 0; r < repeat; r++) {
        if (r > 0 && cudaMemcpy(dev[out], mem[out], nout * esize,
                                cudaMemcpyHostToDevice) != cudaSuccess)
            failed("cudaMemcpy", CUDNN_STATUS_EXECUTION_FAILED);
        if (plan != NULL)
            st = cudnnBackendExecute(h, plan, pack);
        if (cudaDeviceSynchronize() != cudaSuccess)
            failed("cudaDeviceSynchronize", CUDNN_STATUS_EXECUTION_FAILED);
        cudaMemcpy(back, dev[out], nout * esize, cudaMemcpyDeviceToHost);
        if (st != CUDNN_STATUS_SUCCESS || half) {
            /* Refused: the output untouched; FP16 data: the status. */
            pass = st == CUDNN_STATUS_SUCCESS
                       ? plan != NULL
                       : g->cls == INVALID &&
                             memcmp(back, mem[out], nout * esize) == 0;
            snprintf(ratio, sizeof(ratio), "-");
        } else {
            for (size_t j = 0; j < nout; j++)
                memcpy(&got[j],
                       back + offset(nb, dim[out], stride[out], j) * 4, 4);
            err = worst_error(g, dir, val, got, nout);
            pass = plan != NULL && err <= bound && g->cls != INVALID;
            snprintf(ratio, sizeof(ratio), "%.3e", err / bound);
        }
        if (!quiet)
            printf("case %s_%s m=%zu n=%d k=%d op=%s status=%s(%d) "
                   "err/bound=%s hash=%016" PRIx64 " %s "
                   "api=cudnnBackendExecute class=%s engine=%lld ws=%lld\n",
                   g->name, dir_op[dir], nout, g->groups, reduction(g, dir),
                   dir_op[dir], status_name(st), (int)st, ratio,
                   fnv1a64(back, nout * esize), pass ? "ok" : "FAIL",
                   cls_name[g->cls], (long long)engine, (long long)ws);
        fails += !pass;
    }
    if (pack != NULL)
        cudnnBackendDestroyDescriptor(pack);
    if (plan != NULL)
        cudnnBackendDestroyDescriptor(plan);
    for (int i = 0; i < 3; i++) {
        cudnnBackendDestroyDescriptor(t[i]);
        cudaFree(dev[i]);
        free(val[i]), free(mem[i]);
    }
    cudaFree(wsp);
    free(back), free(got);
    return fails;
}

static int
parse_tol(const char *s, double *tol)
{
    char *end;

    if (strcmp(s, "tf32") == 0)
        *tol = 1.0 / 1024;
    else if (strcmp(s, "fp32") == 0)
        *tol = 1e-5;
    else if (strcmp(s, "fp16") == 0)
        *tol = 1.0 / 512;
    else if (strcmp(s, "bf16") == 0)
        *tol = 1.0 / 64;
    else {
        *tol = strtod(s, &end);
        return *end == '\0' && *tol > 0.0;
    }
    return 1;
}

/* Runs every case on a handle of its own; returns the failures. */
static int
run_all(double bound)
{
    cudnnHandle_t h = NULL;
    int fails = 0;

    if (DNN(cudnnCreate(&h)))
        return (int)CASE_COUNT * 3;
    for (size_t c = 0; c < CASE_COUNT; c++) {
        for (int d = FWD; d <= BWD_FILTER; d++)
            fails += run_case(h, &cases[c], (enum dir)d, bound);
    }
    cudnnDestroy(h);
    return fails;
}

struct worker {
    pthread_t thread;
    int index, fails;
    double bound;
};

static void *
worker_main(void *arg)
{
    struct worker *w = arg;

    quiet = 1;
    rng_state += (uint64_t)w->index;
    w->fails = run_all(w->bound);
    return NULL;
}

/* --threads n: every case in n threads at once; prints the counts. */
static int
run_threads(int n, double bound)
{
    struct worker w[16];
    int fails = 0;

    for (int i = 0; i < n; i++) {
        w[i].index = i;
        w[i].bound = bound;
        w[i].fails = 0;
        if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) {
            fprintf(stderr, "conv_graph: cannot start thread %d\n", i);
            return -1;
        }
    }
    for (int i = 0; i < n; i++) {
        pthread_join(w[i].thread, NULL);
        fails += w[i].fails;
    }
    return fails;
}

int
main(int argc, char **argv)
{
    double bound = 1.0 / 1024;
    int fails, threads = 0, total;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc &&
            parse_tol(argv[i + 1], &bound)) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc &&
            (threads = atoi(argv[i + 1])) >= 1 && threads <= 16) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc &&
            (repeat = atoi(argv[i + 1])) >= 1 && repeat <= 100) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--engine-by-index") == 0) {
            by_index = 1;
            continue;
        }
        if (strcmp(argv[i], "--graph-replaced") == 0) {
            replaced = 1;
            continue;
        }
        fprintf(stderr, "usage: conv_graph [--tol tf32|fp32|fp16|bf16|X] "
                "[--threads 1-16] [--repeat 1-100] [--engine-by-index] "
                "[--graph-replaced]\n");
        return 2;
    }
    if (replaced && by_index) {
        fprintf(stderr, "conv_graph: --graph-replaced and --engine-by-index "
                "do not go together (an engine by index is made of the "
                "graph, which --graph-replaced destroys first)\n");
        return 2;
    }
    total = (int)CASE_COUNT * 3 * repeat;
    if (threads > 0) {
        fails = run_threads(threads, bound);
        if (fails < 0)
            return 3;
        total *= threads;
        printf("threads %d\n", threads);
    } else {
        fails = run_all(bound);
    }
    if (replaced)
        printf("graphs replaced at their address: %d of %d\n",
               (int)replaced_at_address, total / repeat);
    printf("result: %d of %d cases passed\n", total - fails, total);
    if (api_errors > 0)
        printf("api errors: %d\n", (int)api_errors);
    if (api_errors > 0)
        return 3;
    return fails > 0 ? 1 : 0;
}
