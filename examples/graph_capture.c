/* An FP32 program that captures an SGEMM and a convolution into a CUDA
 * graph, then launches the graph twice and checks C and y each time
 * against a double-precision reference.
 *
 * usage: graph_capture [--warm] [--capture-mode global|thread-local|relaxed]
 *                      [--beside stream|thread]
 *                      [--instantiate plain|flags|params] [--child]
 *                      [--update same|elsewhere] [--clone]
 *                      [--launch-per-thread] [--warm-here]
 *   --warm    one SGEMM and one convolution before the capture (the first
 *             calls of the process are then not the captured ones)
 *   --beside  while the capture runs, before the captured calls, the same
 *             two calls on other handles and another stream that is not
 *             captured, from this thread or from another one (the first
 *             calls of the process unless --warm); their results are
 *             checked too ("beside gemm err/bound=X conv err/bound=X")
 *   --instantiate  how the executable graph is made: cudaGraphInstantiate
 *             (plain, the default), cudaGraphInstantiateWithFlags with
 *             cudaGraphInstantiateFlagAutoFreeOnLaunch (flags, as
 *             PyTorch's CUDAGraph does) or cudaGraphInstantiateWithParams
 *             (params)
 *   --child   the captured graph is embedded as a child graph node of a
 *             new graph (cudaGraphAddChildGraphNode), which is the one
 *             instantiated
 *   --update  after the first launch, one SGEMM and one convolution
 *             outside any capture, then the same two calls captured into
 *             a second graph (with --child, embedded in a new graph as
 *             the first was), made from the same function as the first
 *             capture's (same) or from another one (elsewhere), with
 *             which the executable graph is updated (cudaGraphExecUpdate)
 *             before the second launch; the update fails where the two
 *             captures differ in their nodes
 *   --warm-here  before the capture, the captured calls four times from
 *             the capture's own call of them (the same call stack), not
 *             captured
 *   --clone   the captured graph is cloned (cudaGraphClone) and destroyed;
 *             the clone is instantiated
 *   --launch-per-thread  the launches call cudaGraphLaunch_ptsz, as a
 *             program built with --default-stream per-thread does
 * Prints "capture STATUS", then per launch "launch N gemm err/bound=X
 * conv err/bound=X ok|FAIL"; exit status 0 when the capture, both launches
 * and every check succeed, 1 when a check fails, 2 on a CUDA error. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cuda_runtime_api.h declares it only in a per-thread build (as
 * cudaGraphLaunch). */
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec,
                                 cudaStream_t stream);

/* The GEMM: C = A B, m x n x k, and the convolution: x N C H W, w K C R S,
 * padding 1, stride 1. */
enum { M = 96, N = 80, K = 64 };
enum { BATCH = 2, CIN = 16, HW = 10, COUT = 16, RS = 3 };
#define XN (BATCH * CIN * HW * HW)
#define WN (COUT * CIN * RS * RS)
#define YN (BATCH * COUT * HW * HW)

/* Bound factor per reduction term of the converting modes' inputs:
 * BF16's unit roundoff, the largest of FP16, BF16 and TF32. */
#define U_INPUT 0x1p-8
#define U_FP32 0x1p-24

static float a[M * K], b[K * N], c[M * N];
static float x[XN], w[WN], y[YN];

static int
cuda_ok(const char *what, cudaError_t e)
{
    if (e == cudaSuccess)
        return 1;
    printf("%s status=%s(%d)\n", what, cudaGetErrorName(e), (int)e);
    return 0;
}

static int
cublas_ok(const char *what, cublasStatus_t s)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return 1;
    printf("%s status=%d\n", what, (int)s);
    return 0;
}

static int
cudnn_ok(const char *what, cudnnStatus_t s)
{
    if (s == CUDNN_STATUS_SUCCESS)
        return 1;
    printf("%s status=%s(%d)\n", what, cudnnGetErrorString(s), (int)s);
    return 0;
}

static void
fill(float *v, int n, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
}

/* Largest |C - C_ref| over the element's bound (u (2 + k) sum |a||b|),
 * column-major C = A B. */
static double
gemm_error(const float *got, double u)
{
    double worst = 0.0;

    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            double ref = 0.0, mag = 0.0;

            for (int p = 0; p < K; p++) {
                ref += (double)a[p * M + i] * b[j * K + p];
                mag += fabs((double)a[p * M + i] * b[j * K + p]);
            }
            double r = fabs(got[j * M + i] - ref) /
                       ((2.0 * u + 2.0 * K * U_FP32) * mag + 1e-30);
            if (r > worst)
                worst = r;
        }
    return worst;
}

/* The same for the convolution (cross-correlation, NCHW, padding 1). */
static double
conv_error(const float *got, double u)
{
    double worst = 0.0;
    int red = CIN * RS * RS;

    for (int n = 0; n < BATCH; n++)
        for (int k = 0; k < COUT; k++)
            for (int p = 0; p < HW; p++)
                for (int q = 0; q < HW; q++) {
                    double ref = 0.0, mag = 0.0;

                    for (int ch = 0; ch < CIN; ch++)
                        for (int r = 0; r < RS; r++)
                            for (int s = 0; s < RS; s++) {
                                int h = p + r - 1, v = q + s - 1;
                                double t;

                                if (h < 0 || h >= HW || v < 0 || v >= HW)
                                    continue;
                                t = (double)x[((n * CIN + ch) * HW + h) * HW +
                                              v] *
                                    w[((k * CIN + ch) * RS + r) * RS + s];
                                ref += t;
                                mag += fabs(t);
                            }
                    double e = fabs(got[((n * COUT + k) * HW + p) * HW + q] -
                                    ref);
                    double r = e / ((3.0 * u + 2.0 * red * U_FP32) * mag +
                                    1e-30);
                    if (r > worst)
                        worst = r;
                }
    return worst;
}

struct gpu {
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudaStream_t stream;
    float *a, *b, *c, *x, *w, *y;
};

static int
gpu_make(struct gpu *g)
{
    return cublas_ok("cublasCreate_v2", cublasCreate_v2(&g->blas)) &&
           cudnn_ok("cudnnCreate", cudnnCreate(&g->dnn)) &&
           cuda_ok("cudaStreamCreate", cudaStreamCreate(&g->stream)) &&
           cublas_ok("cublasSetStream_v2",
                     cublasSetStream_v2(g->blas, g->stream)) &&
           cudnn_ok("cudnnSetStream", cudnnSetStream(g->dnn, g->stream)) &&
           cudnn_ok("cudnnCreateTensorDescriptor",
                    cudnnCreateTensorDescriptor(&g->xd)) &&
           cudnn_ok("cudnnCreateTensorDescriptor",
                    cudnnCreateTensorDescriptor(&g->yd)) &&
           cudnn_ok("cudnnCreateFilterDescriptor",
                    cudnnCreateFilterDescriptor(&g->wd)) &&
           cudnn_ok("cudnnCreateConvolutionDescriptor",
                    cudnnCreateConvolutionDescriptor(&g->cd)) &&
           cudnn_ok("cudnnSetTensor4dDescriptor",
                    cudnnSetTensor4dDescriptor(g->xd, CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, BATCH, CIN,
                                               HW, HW)) &&
           cudnn_ok("cudnnSetTensor4dDescriptor",
                    cudnnSetTensor4dDescriptor(g->yd, CUDNN_TENSOR_NCHW,
                                               CUDNN_DATA_FLOAT, BATCH, COUT,
                                               HW, HW)) &&
           cudnn_ok("cudnnSetFilter4dDescriptor",
                    cudnnSetFilter4dDescriptor(g->wd, CUDNN_DATA_FLOAT,
                                               CUDNN_TENSOR_NCHW, COUT, CIN,
                                               RS, RS)) &&
           cudnn_ok("cudnnSetConvolution2dDescriptor",
                    cudnnSetConvolution2dDescriptor(
                        g->cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                        CUDNN_DATA_FLOAT)) &&
           cuda_ok("cudaMalloc", cudaMalloc((void **)&g->a, sizeof a)) &&
           cuda_ok("cudaMalloc", cudaMalloc((void **)&g->b, sizeof b)) &&
           cuda_ok("cudaMalloc", cudaMalloc((void **)&g->c, sizeof c)) &&
           cuda_ok("cudaMalloc", cudaMalloc((void **)&g->x, sizeof x)) &&
           cuda_ok("cudaMalloc", cudaMalloc((void **)&g->w, sizeof w)) &&
           cuda_ok("cudaMalloc", cudaMalloc((void **)&g->y, sizeof y)) &&
           cuda_ok("cudaMemcpy", cudaMemcpy(g->a, a, sizeof a,
                                            cudaMemcpyHostToDevice)) &&
           cuda_ok("cudaMemcpy", cudaMemcpy(g->b, b, sizeof b,
                                            cudaMemcpyHostToDevice)) &&
           cuda_ok("cudaMemcpy", cudaMemcpy(g->x, x, sizeof x,
                                            cudaMemcpyHostToDevice)) &&
           cuda_ok("cudaMemcpy", cudaMemcpy(g->w, w, sizeof w,
                                            cudaMemcpyHostToDevice));
}

/* The two calls on g->stream: C = A B and y = conv(x, w). */
static int
gpu_issue(struct gpu *g)
{
    const float one = 1.0f, zero = 0.0f;

    return cublas_ok("cublasSgemm_v2",
                     cublasSgemm_v2(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N,
                                    K, &one, g->a, M, g->b, K, &zero, g->c,
                                    M)) &&
           cudnn_ok("cudnnConvolutionForward",
                    cudnnConvolutionForward(
                        g->dnn, &one, g->xd, g->x, g->wd, g->w, g->cd,
                        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0,
                        &zero, g->yd, g->y));
}

/* The same two calls from another function: other call sites for the
 * shim. */
static __attribute__((noinline)) int
gpu_issue_elsewhere(struct gpu *g)
{
    const float one = 1.0f, zero = 0.0f;
    int ok;

    ok = cublas_ok("cublasSgemm_v2",
                   cublasSgemm_v2(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K,
                                  &one, g->a, M, g->b, K, &zero, g->c, M));
    ok = ok && cudnn_ok("cudnnConvolutionForward",
                        cudnnConvolutionForward(
                            g->dnn, &one, g->xd, g->x, g->wd, g->w, g->cd,
                            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL,
                            0, &zero, g->yd, g->y));
    return ok;
}

/* The calls beside the capture, from another thread. */
static void *
beside_thread(void *arg)
{
    struct gpu *g = arg;

    if (!cuda_ok("cudaSetDevice", cudaSetDevice(0)) || !gpu_issue(g))
        return arg;
    return NULL;
}

/* Checks the calls made beside the capture; 1 when right. */
static int
beside_check(struct gpu *g)
{
    double ge, ce;

    if (!cuda_ok("cudaStreamSynchronize", cudaStreamSynchronize(g->stream)) ||
        !cuda_ok("cudaMemcpy", cudaMemcpy(c, g->c, sizeof c,
                                          cudaMemcpyDeviceToHost)) ||
        !cuda_ok("cudaMemcpy", cudaMemcpy(y, g->y, sizeof y,
                                          cudaMemcpyDeviceToHost)))
        return 0;
    ge = gemm_error(c, U_INPUT);
    ce = conv_error(y, U_INPUT);
    printf("beside gemm err/bound=%.3e conv err/bound=%.3e %s\n", ge, ce,
           ge <= 1.0 && ce <= 1.0 ? "ok" : "FAIL");
    return ge <= 1.0 && ce <= 1.0;
}

/* issue(g) from one call instruction, whoever calls this (not inlined,
 * not a tail call): calls made through it have one call stack. */
static __attribute__((noinline)) int
issue_here(int (*issue)(struct gpu *), struct gpu *g)
{
    int ok = issue(g);

    __asm__ volatile("" : "+r"(ok));
    return ok;
}

/* Captures the two calls on g->stream into *graph; 1 when the calls were
 * made (the capture's own status is printed as "capture STATUS" and put
 * in *status). First, `warm` times, the same calls from the same place
 * (issue_here: the same call stack), not captured. */
static __attribute__((noinline)) int
capture(struct gpu *g, enum cudaStreamCaptureMode mode,
        int (*issue)(struct gpu *), cudaGraph_t *graph, cudaError_t *status,
        int warm)
{
    for (int round = 0; round <= warm; round++) {
        int captured = round == warm;

        if (captured && !cuda_ok("cudaStreamBeginCapture",
                                 cudaStreamBeginCapture(g->stream, mode)))
            return 0;
        if (!issue_here(issue, g)) {
            if (captured)
                cudaStreamEndCapture(g->stream, graph);
            return 0;
        }
        if (!captured && !cuda_ok("cudaStreamSynchronize",
                                  cudaStreamSynchronize(g->stream)))
            return 0;
    }
    *status = cudaStreamEndCapture(g->stream, graph);
    printf("capture %s\n", cudaGetErrorName(*status));
    return 1;
}

/* The executable graph of `graph`, made as `how` says (plain, flags,
 * params), from a new graph that embeds it as a child node when `child`
 * (*parent: that graph, for the caller to destroy). */
static int
instantiate(cudaGraph_t graph, const char *how, int child,
            cudaGraph_t *parent, cudaGraphExec_t *exec)
{
    cudaGraphInstantiateParams params;
    cudaGraphNode_t node;

    *parent = NULL;
    if (child) {
        if (!cuda_ok("cudaGraphCreate", cudaGraphCreate(parent, 0)) ||
            !cuda_ok("cudaGraphAddChildGraphNode",
                     cudaGraphAddChildGraphNode(&node, *parent, NULL, 0,
                                                graph)))
            return 0;
        graph = *parent;
    }
    if (strcmp(how, "flags") == 0)
        return cuda_ok("cudaGraphInstantiateWithFlags",
                       cudaGraphInstantiateWithFlags(
                           exec, graph,
                           cudaGraphInstantiateFlagAutoFreeOnLaunch));
    if (strcmp(how, "params") == 0) {
        memset(&params, 0, sizeof params);
        return cuda_ok("cudaGraphInstantiateWithParams",
                       cudaGraphInstantiateWithParams(exec, graph, &params)) &&
               params.result_out == cudaGraphInstantiateSuccess;
    }
    return cuda_ok("cudaGraphInstantiate",
                   cudaGraphInstantiate(exec, graph, 0));
}

/* --update: one of each call outside a capture, then the same two
 * captured into a second graph (*second; with `child` embedded in a new
 * graph, *parent, as the first was), from the same function or, with
 * `elsewhere`, from another, the executable graph updated with it. */
static int
update(struct gpu *g, enum cudaStreamCaptureMode mode, int child,
       int elsewhere, cudaGraphExec_t exec, cudaGraph_t *second,
       cudaGraph_t *parent)
{
    cudaGraphExecUpdateResultInfo info;
    cudaGraphNode_t node;
    cudaError_t e = cudaSuccess;

    if (!gpu_issue(g) ||
        !cuda_ok("cudaStreamSynchronize", cudaStreamSynchronize(g->stream)) ||
        !capture(g, mode, elsewhere ? gpu_issue_elsewhere : gpu_issue,
                 second, &e, 0) ||
        e != cudaSuccess)
        return 0;
    if (child &&
        (!cuda_ok("cudaGraphCreate", cudaGraphCreate(parent, 0)) ||
         !cuda_ok("cudaGraphAddChildGraphNode",
                  cudaGraphAddChildGraphNode(&node, *parent, NULL, 0,
                                             *second))))
        return 0;
    return cuda_ok("cudaGraphExecUpdate",
                   cudaGraphExecUpdate(exec, child ? *parent : *second,
                                       &info));
}

int
main(int argc, char **argv)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
    cudaGraphExec_t exec;
    cudaGraph_t graph = NULL, parent = NULL, second = NULL,
                second_parent = NULL;
    struct gpu g, g2;
    const char *beside = NULL, *how = "plain";
    int warm = 0, failed = 0, child = 0, updated = 0, elsewhere = 0,
        clone = 0, per_thread = 0, warm_here = 0;
    pthread_t other;
    void *other_failed = NULL;
    cudaError_t e;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--warm") == 0)
            warm = 1;
        else if (strcmp(argv[i], "--beside") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "stream") == 0 ||
                  strcmp(argv[i + 1], "thread") == 0))
            beside = argv[++i];
        else if (strcmp(argv[i], "--instantiate") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "plain") == 0 ||
                  strcmp(argv[i + 1], "flags") == 0 ||
                  strcmp(argv[i + 1], "params") == 0))
            how = argv[++i];
        else if (strcmp(argv[i], "--child") == 0)
            child = 1;
        else if (strcmp(argv[i], "--clone") == 0)
            clone = 1;
        else if (strcmp(argv[i], "--launch-per-thread") == 0)
            per_thread = 1;
        else if (strcmp(argv[i], "--warm-here") == 0)
            warm_here = 1;
        else if (strcmp(argv[i], "--update") == 0 && i + 1 < argc &&
                 (strcmp(argv[i + 1], "same") == 0 ||
                  strcmp(argv[i + 1], "elsewhere") == 0)) {
            updated = 1;
            elsewhere = strcmp(argv[++i], "elsewhere") == 0;
        }
        else if (strcmp(argv[i], "--capture-mode") == 0 && i + 1 < argc) {
            const char *m = argv[++i];

            mode = strcmp(m, "thread-local") == 0
                       ? cudaStreamCaptureModeThreadLocal
                   : strcmp(m, "relaxed") == 0 ? cudaStreamCaptureModeRelaxed
                                               : cudaStreamCaptureModeGlobal;
        } else {
            fprintf(stderr, "usage: graph_capture [--warm] [--capture-mode "
                    "global|thread-local|relaxed] [--beside stream|thread]"
                    " [--instantiate plain|flags|params] [--child] "
                    "[--update same|elsewhere] [--clone] "
                    "[--launch-per-thread] [--warm-here]\n");
            return 2;
        }
    }
    fill(a, M * K, 1);
    fill(b, K * N, 2);
    fill(x, XN, 3);
    fill(w, WN, 4);
    memset(&g, 0, sizeof g);
    memset(&g2, 0, sizeof g2);
    if (!gpu_make(&g) || (beside && !gpu_make(&g2)))
        return 2;
    if (warm && (!gpu_issue(&g) ||
                 !cuda_ok("cudaStreamSynchronize",
                          cudaStreamSynchronize(g.stream))))
        return 2;
    if (beside) {
        /* The calls beside go in while the capture runs, before the
         * captured ones. */
        if (!cuda_ok("cudaStreamBeginCapture",
                     cudaStreamBeginCapture(g.stream, mode)))
            return 2;
        if (strcmp(beside, "stream") == 0 && !gpu_issue(&g2))
            other_failed = &g2;
        if (strcmp(beside, "thread") == 0 &&
            (pthread_create(&other, NULL, beside_thread, &g2) != 0 ||
             pthread_join(other, &other_failed) != 0))
            other_failed = &g2;
        if (!gpu_issue(&g)) {
            cudaStreamEndCapture(g.stream, &graph);
            return 2;
        }
        e = cudaStreamEndCapture(g.stream, &graph);
        printf("capture %s\n", cudaGetErrorName(e));
    } else if (!capture(&g, mode, gpu_issue, &graph, &e,
                        warm_here ? 4 : 0)) {
        return 2;
    }
    if (other_failed)
        return 2;
    if (beside)
        failed |= !beside_check(&g2);
    if (e == cudaSuccess && clone) {
        cudaGraph_t copy;

        if (!cuda_ok("cudaGraphClone", cudaGraphClone(&copy, graph)) ||
            !cuda_ok("cudaGraphDestroy", cudaGraphDestroy(graph)))
            return 2;
        graph = copy;
    }
    if (e != cudaSuccess || !instantiate(graph, how, child, &parent, &exec))
        return 2;
    for (int launch = 1; launch <= 2; launch++) {
        double ge, ce;

        if (launch == 2 && updated &&
            !update(&g, mode, child, elsewhere, exec, &second,
                    &second_parent))
            return 2;
        /* Each launch writes C and y afresh. */
        if (!cuda_ok("cudaMemset", cudaMemset(g.c, 0xff, sizeof c)) ||
            !cuda_ok("cudaMemset", cudaMemset(g.y, 0xff, sizeof y)) ||
            !cuda_ok("cudaGraphLaunch",
                     per_thread ? cudaGraphLaunch_ptsz(exec, g.stream)
                                : cudaGraphLaunch(exec, g.stream)) ||
            !cuda_ok("cudaStreamSynchronize",
                     cudaStreamSynchronize(g.stream)) ||
            !cuda_ok("cudaMemcpy", cudaMemcpy(c, g.c, sizeof c,
                                              cudaMemcpyDeviceToHost)) ||
            !cuda_ok("cudaMemcpy", cudaMemcpy(y, g.y, sizeof y,
                                              cudaMemcpyDeviceToHost)))
            return 2;
        ge = gemm_error(c, U_INPUT);
        ce = conv_error(y, U_INPUT);
        printf("launch %d gemm err/bound=%.3e conv err/bound=%.3e %s\n",
               launch, ge, ce, ge <= 1.0 && ce <= 1.0 ? "ok" : "FAIL");
        failed |= !(ge <= 1.0 && ce <= 1.0);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    if (parent)
        cudaGraphDestroy(parent);
    if (second)
        cudaGraphDestroy(second);
    if (second_parent)
        cudaGraphDestroy(second_parent);
    return failed ? 1 : 0;
}
