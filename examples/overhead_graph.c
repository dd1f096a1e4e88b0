/* overhead_bench's cuDNN graph-API convolution: the forward convolution of
 * its legacy cases (a 1x8x8x8 input, 8 3x3 filters, padding 1) as one
 * operation graph, the plan of the heuristics' first configuration that
 * finalizes, and one variant pack, made once and executed at every call, as
 * a framework's plan cache does. */
#include <cuda_runtime.h>
#include <cudnn.h>

#include "overhead_bench.h"

#include <stdint.h>
#include <stdio.h>

enum { OB_UID_X = 1, OB_UID_W = 2, OB_UID_Y = 3 };

static cudnnHandle_t ob_dnn;
static cudnnBackendDescriptor_t ob_plan, ob_pack;
static void *ob_graph_ws;
static int ob_graph_failed;

/* Notes the first failed call; the set-up goes on and fails at its end. */
static void
ob_dnn_check(const char *what, cudnnStatus_t s)
{
    if (s != CUDNN_STATUS_SUCCESS && !ob_graph_failed) {
        fprintf(stderr, "overhead_bench: %s failed: %s\n", what,
                cudnnGetErrorString(s));
        ob_graph_failed = 1;
    }
}

#define OB_DNN(call) ob_dnn_check(#call, call)

static cudnnBackendDescriptor_t
ob_tensor(int64_t uid, const int64_t dim[4])
{
    const int64_t stride[4] = { dim[1] * dim[2] * dim[3], dim[2] * dim[3],
                                dim[3], 1 };
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int64_t align = 16;
    cudnnBackendDescriptor_t t = NULL;

    OB_DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t));
    OB_DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE,
                                    CUDNN_TYPE_DATA_TYPE, 1, &type));
    OB_DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                    CUDNN_TYPE_INT64, 4, dim));
    OB_DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES,
                                    CUDNN_TYPE_INT64, 4, stride));
    OB_DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                    CUDNN_TYPE_INT64, 1, &uid));
    OB_DNN(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT,
                                    CUDNN_TYPE_INT64, 1, &align));
    OB_DNN(cudnnBackendFinalize(t));
    return t;
}

static cudnnBackendDescriptor_t
ob_conv(void)
{
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t nsp = 2, pad[2] = { 1, 1 }, unit[2] = { 1, 1 };
    cudnnBackendDescriptor_t c = NULL;

    OB_DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR,
                                        &c));
    OB_DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                    CUDNN_TYPE_DATA_TYPE, 1, &comp));
    OB_DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                    CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    OB_DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                                    CUDNN_TYPE_INT64, 1, &nsp));
    OB_DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                                    CUDNN_TYPE_INT64, 2, pad));
    OB_DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                                    CUDNN_TYPE_INT64, 2, pad));
    OB_DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                    CUDNN_TYPE_INT64, 2, unit));
    OB_DNN(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_DILATIONS,
                                    CUDNN_TYPE_INT64, 2, unit));
    OB_DNN(cudnnBackendFinalize(c));
    return c;
}

/* The forward convolution of tensors x, w, y as a graph. */
static cudnnBackendDescriptor_t
ob_graph(cudnnBackendDescriptor_t const t[3])
{
    float alpha = 1.0f, beta = 0.0f;
    cudnnBackendDescriptor_t conv = ob_conv(), op = NULL, graph = NULL;

    OB_DNN(cudnnBackendCreateDescriptor(
        CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op));
    OB_DNN(cudnnBackendSetAttribute(
        op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT,
        1, &alpha));
    OB_DNN(cudnnBackendSetAttribute(
        op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT,
        1, &beta));
    OB_DNN(cudnnBackendSetAttribute(
        op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv));
    OB_DNN(cudnnBackendSetAttribute(op,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[0]));
    OB_DNN(cudnnBackendSetAttribute(op,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[1]));
    OB_DNN(cudnnBackendSetAttribute(op,
                                    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t[2]));
    OB_DNN(cudnnBackendFinalize(op));
    OB_DNN(cudnnBackendCreateDescriptor(
        CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    OB_DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                    CUDNN_TYPE_HANDLE, 1, &ob_dnn));
    OB_DNN(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    OB_DNN(cudnnBackendFinalize(graph));
    cudnnBackendDestroyDescriptor(op);
    cudnnBackendDestroyDescriptor(conv);
    return graph;
}

/* The plan of the heuristics' first configuration that finalizes. */
static cudnnBackendDescriptor_t
ob_plan_of(cudnnBackendDescriptor_t graph)
{
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    cudnnBackendDescriptor_t heur = NULL, cfgs[8] = { NULL }, plan = NULL;
    int64_t n = 0;

    OB_DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                                        &heur));
    OB_DNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    OB_DNN(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE,
                                    CUDNN_TYPE_HEUR_MODE, 1, &mode));
    OB_DNN(cudnnBackendFinalize(heur));
    for (int i = 0; i < 8; i++)
        OB_DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                            &cfgs[i]));
    OB_DNN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 8, &n,
                                    cfgs));
    for (int64_t i = 0; i < n && i < 8 && !ob_graph_failed && !plan; i++) {
        OB_DNN(cudnnBackendCreateDescriptor(
            CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
        OB_DNN(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                        CUDNN_TYPE_HANDLE, 1, &ob_dnn));
        OB_DNN(cudnnBackendSetAttribute(
            plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]));
        if (cudnnBackendFinalize(plan) != CUDNN_STATUS_SUCCESS) {
            cudnnBackendDestroyDescriptor(plan);
            plan = NULL;
        }
    }
    if (!plan)
        ob_dnn_check("finalizing a plan of the heuristics' configurations",
                     CUDNN_STATUS_NOT_SUPPORTED);
    for (int i = 0; i < 8; i++)
        cudnnBackendDestroyDescriptor(cfgs[i]);
    cudnnBackendDestroyDescriptor(heur);
    return plan;
}

int
ob_graph_setup(void *x, void *w, void *y)
{
    static const int64_t dx[4] = { 1, 8, 8, 8 }, dw[4] = { 8, 8, 3, 3 };
    const int64_t uids[3] = { OB_UID_X, OB_UID_W, OB_UID_Y };
    void *ptrs[3] = { x, w, y };
    cudnnBackendDescriptor_t t[3], graph;
    int64_t ws = 0, got = 0;

    OB_DNN(cudnnCreate(&ob_dnn));
    t[0] = ob_tensor(OB_UID_X, dx);
    t[1] = ob_tensor(OB_UID_W, dw);
    t[2] = ob_tensor(OB_UID_Y, dx);
    graph = ob_graph(t);
    ob_plan = ob_plan_of(graph);
    OB_DNN(cudnnBackendGetAttribute(ob_plan,
                                    CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                    CUDNN_TYPE_INT64, 1, &got, &ws));
    if (!ob_graph_failed && cudaMalloc(&ob_graph_ws, ws > 0 ? (size_t)ws : 4))
        ob_dnn_check("cudaMalloc of the plan's workspace",
                     CUDNN_STATUS_ALLOC_FAILED);
    OB_DNN(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                                        &ob_pack));
    OB_DNN(cudnnBackendSetAttribute(ob_pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                    CUDNN_TYPE_INT64, 3, uids));
    OB_DNN(cudnnBackendSetAttribute(ob_pack,
                                    CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                    CUDNN_TYPE_VOID_PTR, 3, ptrs));
    OB_DNN(cudnnBackendSetAttribute(ob_pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                    CUDNN_TYPE_VOID_PTR, 1, &ob_graph_ws));
    OB_DNN(cudnnBackendFinalize(ob_pack));
    cudnnBackendDestroyDescriptor(graph);
    for (int i = 0; i < 3; i++)
        cudnnBackendDestroyDescriptor(t[i]);
    return ob_graph_failed ? -1 : 0;
}

int
ob_graph_execute(void)
{
    return cudnnBackendExecute(ob_dnn, ob_plan, ob_pack) !=
           CUDNN_STATUS_SUCCESS;
}

void
ob_graph_teardown(void)
{
    cudnnBackendDestroyDescriptor(ob_pack);
    cudnnBackendDestroyDescriptor(ob_plan);
    cudaFree(ob_graph_ws);
    cudnnDestroy(ob_dnn);
}
