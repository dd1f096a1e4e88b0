/* The host cost of a call: every FP32 GEMM entry point of cuBLAS (the
 * int and _64 forms, the legacy cublasSgemm), cublasLtMatmul with the
 * algorithm its heuristics gave (as frameworks call it), the three cuDNN
 * convolutions, a forward convolution through cuDNN's graph API
 * (cudnnBackendExecute of one plan and variant pack), an FP64 GEMM (cublasDgemm_v2, which a shim may count but
 * never converts) and dlsym of a cuBLAS function on cuBLAS's handle (a
 * lookup, not a GEMM), each issued in a tight loop on a tiny problem, batches of
 * OB_BATCH_CALLS calls timed with the wall clock and then synchronised
 * outside the timed part. It knows nothing of any shim:
 * scripts/bench_overhead.sh runs it without one, under one and under
 * callgrind, whose --toggle-collect=ob_timed sees only the timed issue. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include <dlfcn.h>

#define EXAMPLE_PROG "overhead_bench"
#include "example_util.h"
#include "overhead_bench.h"

#include <time.h>

#define OB_BATCH_CALLS 32
#define OB_LT_WORKSPACE ((size_t)1 << 20)

/* Everything the calls use, made once. */
struct ob_state {
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    float *a, *b, *c;                 /* OB_BATCH problems each, packed */
    const float **aa, **ba;           /* device arrays of pointers */
    float **ca;
    float one, zero;
    /* Grouped: one group of OB_BATCH problems. */
    cublasOperation_t op;
    int m, n, k, group;
    int64_t m64, n64, k64, group64;
    /* Convolution: 1x8x8x8 input, 8 3x3 filters, padding 1. */
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    float *x, *w, *y, *ws;
    size_t ws_bytes;
    /* cuBLASLt: 8 x 8 x 8 with a bias, the heuristics' algorithm. */
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t lt_op;
    cublasLtMatrixLayout_t lt_l;
    cublasLtMatmulAlgo_t lt_algo;
    void *lt_ws;
    double *da, *db, *dc, done, dzero;
    void *cublas_handle;               /* dlopen's, for dlsym */
};

static struct ob_state ob;

#define OB_CASES(X)                                                          \
    X(cublasSgemm_v2) X(cublasSgemm_v2_64) X(cublasSgemmEx)                  \
    X(cublasSgemmEx_64) X(cublasGemmEx) X(cublasGemmEx_64)                   \
    X(cublasSgemmBatched) X(cublasSgemmBatched_64)                           \
    X(cublasSgemmStridedBatched) X(cublasSgemmStridedBatched_64)             \
    X(cublasGemmBatchedEx) X(cublasGemmBatchedEx_64)                         \
    X(cublasGemmStridedBatchedEx) X(cublasGemmStridedBatchedEx_64)           \
    X(cublasSgemmGroupedBatched) X(cublasSgemmGroupedBatched_64)             \
    X(cublasGemmGroupedBatchedEx) X(cublasGemmGroupedBatchedEx_64)           \
    X(cublasSgemm) X(cublasLtMatmul) X(cudnnConvolutionForward)              \
    X(cudnnConvolutionBackwardData) X(cudnnConvolutionBackwardFilter)        \
    X(cudnnBackendExecute) X(cublasDgemm_v2) X(dlsym)

enum ob_case {
#define OB_ENUM(name) OB_##name,
    OB_CASES(OB_ENUM)
#undef OB_ENUM
    OB_NCASES
};

static const char *const ob_names[] = {
#define OB_NAME(name) #name,
    OB_CASES(OB_NAME)
#undef OB_NAME
};

#define OB_SZ (OB_M * OB_K) /* every operand is 8 x 8 */
#define OB_STRIDE ((long long)OB_SZ)

/* One call of case c; 0 on success. Not inlined: the hooked call's
 * site (its return address and the one above it, in ob_issue) is one
 * for the warm-up and the timed calls. */
static __attribute__((noinline)) int
ob_call(enum ob_case c)
{
    const cublasHandle_t h = ob.blas;
    const cublasOperation_t n = CUBLAS_OP_N;
    const float *one = &ob.one, *zero = &ob.zero;

    switch (c) {
    case OB_cublasSgemm_v2:
        return cublasSgemm_v2(h, n, n, OB_M, OB_N, OB_K, one, ob.a, OB_M,
                              ob.b, OB_K, zero, ob.c, OB_M);
    case OB_cublasSgemm_v2_64:
        return cublasSgemm_v2_64(h, n, n, OB_M, OB_N, OB_K, one, ob.a,
                                 OB_M, ob.b, OB_K, zero, ob.c, OB_M);
    case OB_cublasSgemmEx:
        return cublasSgemmEx(h, n, n, OB_M, OB_N, OB_K, one, ob.a, CUDA_R_32F,
                             OB_M, ob.b, CUDA_R_32F, OB_K, zero, ob.c,
                             CUDA_R_32F, OB_M);
    case OB_cublasSgemmEx_64:
        return cublasSgemmEx_64(h, n, n, OB_M, OB_N, OB_K, one, ob.a,
                                CUDA_R_32F, OB_M, ob.b, CUDA_R_32F, OB_K,
                                zero, ob.c, CUDA_R_32F, OB_M);
    case OB_cublasGemmEx:
        return cublasGemmEx(h, n, n, OB_M, OB_N, OB_K, one, ob.a, CUDA_R_32F,
                            OB_M, ob.b, CUDA_R_32F, OB_K, zero, ob.c,
                            CUDA_R_32F, OB_M, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT);
    case OB_cublasGemmEx_64:
        return cublasGemmEx_64(h, n, n, OB_M, OB_N, OB_K, one, ob.a,
                               CUDA_R_32F, OB_M, ob.b, CUDA_R_32F, OB_K, zero,
                               ob.c, CUDA_R_32F, OB_M, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT);
    case OB_cublasSgemmBatched:
        return cublasSgemmBatched(h, n, n, OB_M, OB_N, OB_K, one, ob.aa, OB_M,
                                  ob.ba, OB_K, zero, ob.ca, OB_M, OB_BATCH);
    case OB_cublasSgemmBatched_64:
        return cublasSgemmBatched_64(h, n, n, OB_M, OB_N, OB_K, one, ob.aa,
                                     OB_M, ob.ba, OB_K, zero, ob.ca, OB_M,
                                     OB_BATCH);
    case OB_cublasSgemmStridedBatched:
        return cublasSgemmStridedBatched(
            h, n, n, OB_M, OB_N, OB_K, one, ob.a, OB_M, OB_STRIDE, ob.b, OB_K,
            OB_STRIDE, zero, ob.c, OB_M, OB_STRIDE, OB_BATCH);
    case OB_cublasSgemmStridedBatched_64:
        return cublasSgemmStridedBatched_64(
            h, n, n, OB_M, OB_N, OB_K, one, ob.a, OB_M, OB_STRIDE, ob.b, OB_K,
            OB_STRIDE, zero, ob.c, OB_M, OB_STRIDE, OB_BATCH);
    case OB_cublasGemmBatchedEx:
        return cublasGemmBatchedEx(
            h, n, n, OB_M, OB_N, OB_K, one, (const void *const *)ob.aa,
            CUDA_R_32F, OB_M, (const void *const *)ob.ba, CUDA_R_32F, OB_K,
            zero, (void *const *)ob.ca, CUDA_R_32F, OB_M, OB_BATCH,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    case OB_cublasGemmBatchedEx_64:
        return cublasGemmBatchedEx_64(
            h, n, n, OB_M, OB_N, OB_K, one, (const void *const *)ob.aa,
            CUDA_R_32F, OB_M, (const void *const *)ob.ba, CUDA_R_32F, OB_K,
            zero, (void *const *)ob.ca, CUDA_R_32F, OB_M, OB_BATCH,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    case OB_cublasGemmStridedBatchedEx:
        return cublasGemmStridedBatchedEx(
            h, n, n, OB_M, OB_N, OB_K, one, ob.a, CUDA_R_32F, OB_M, OB_STRIDE,
            ob.b, CUDA_R_32F, OB_K, OB_STRIDE, zero, ob.c, CUDA_R_32F, OB_M,
            OB_STRIDE, OB_BATCH, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    case OB_cublasGemmStridedBatchedEx_64:
        return cublasGemmStridedBatchedEx_64(
            h, n, n, OB_M, OB_N, OB_K, one, ob.a, CUDA_R_32F, OB_M, OB_STRIDE,
            ob.b, CUDA_R_32F, OB_K, OB_STRIDE, zero, ob.c, CUDA_R_32F, OB_M,
            OB_STRIDE, OB_BATCH, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    case OB_cublasSgemmGroupedBatched:
        return cublasSgemmGroupedBatched(
            h, &ob.op, &ob.op, &ob.m, &ob.n, &ob.k, one, ob.aa, &ob.m, ob.ba,
            &ob.k, zero, ob.ca, &ob.m, 1, &ob.group);
    case OB_cublasSgemmGroupedBatched_64:
        return cublasSgemmGroupedBatched_64(
            h, &ob.op, &ob.op, &ob.m64, &ob.n64, &ob.k64, one, ob.aa, &ob.m64,
            ob.ba, &ob.k64, zero, ob.ca, &ob.m64, 1, &ob.group64);
    case OB_cublasGemmGroupedBatchedEx:
        return cublasGemmGroupedBatchedEx(
            h, &ob.op, &ob.op, &ob.m, &ob.n, &ob.k, one,
            (const void *const *)ob.aa, CUDA_R_32F, &ob.m,
            (const void *const *)ob.ba, CUDA_R_32F, &ob.k, zero,
            (void *const *)ob.ca, CUDA_R_32F, &ob.m, 1, &ob.group,
            CUBLAS_COMPUTE_32F);
    case OB_cublasGemmGroupedBatchedEx_64:
        return cublasGemmGroupedBatchedEx_64(
            h, &ob.op, &ob.op, &ob.m64, &ob.n64, &ob.k64, one,
            (const void *const *)ob.aa, CUDA_R_32F, &ob.m64,
            (const void *const *)ob.ba, CUDA_R_32F, &ob.k64, zero,
            (void *const *)ob.ca, CUDA_R_32F, &ob.m64, 1, &ob.group64,
            CUBLAS_COMPUTE_32F);
    case OB_cublasSgemm:
        return ob_legacy_issue(1) != 0;
    case OB_cudnnConvolutionForward:
        return cudnnConvolutionForward(
            ob.dnn, one, ob.xd, ob.x, ob.wd, ob.w, ob.cd,
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, ob.ws, ob.ws_bytes,
            zero, ob.yd, ob.y);
    case OB_cudnnConvolutionBackwardData:
        return cudnnConvolutionBackwardData(
            ob.dnn, one, ob.wd, ob.w, ob.yd, ob.y, ob.cd,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, ob.ws, ob.ws_bytes, zero,
            ob.xd, ob.x);
    case OB_cudnnConvolutionBackwardFilter:
        return cudnnConvolutionBackwardFilter(
            ob.dnn, one, ob.xd, ob.x, ob.yd, ob.y, ob.cd,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, ob.ws, ob.ws_bytes, zero,
            ob.wd, ob.w);
    case OB_cudnnBackendExecute:
        return ob_graph_execute();
    case OB_cublasLtMatmul:
        return cublasLtMatmul(ob.lt, ob.lt_op, one, ob.a, ob.lt_l, ob.b,
                              ob.lt_l, zero, ob.c, ob.lt_l, ob.c, ob.lt_l,
                              &ob.lt_algo, ob.lt_ws, OB_LT_WORKSPACE, NULL);
    case OB_cublasDgemm_v2:
        return cublasDgemm_v2(h, n, n, OB_M, OB_N, OB_K, &ob.done, ob.da,
                              OB_M, ob.db, OB_K, &ob.dzero, ob.dc, OB_M);
    case OB_dlsym:
        return dlsym(ob.cublas_handle, "cublasSgemm_v2") == NULL;
    case OB_NCASES:
        break;
    }
    return -1;
}

/* The calls of a case, warm-up and timed alike, so that both are one
 * call site (a site is the hooked call's return address and the one
 * above it): the timed calls find what the warm-up's made. */
static __attribute__((noinline)) long
ob_issue(enum ob_case c, long calls)
{
    long i, failed = 0;

    if (c == OB_cublasSgemm)
        return ob_legacy_issue(calls);
    for (i = 0; i < calls; i++)
        failed += ob_call(c) != 0;
    return failed;
}

/* The timed issue: callgrind collects inside this function only. The
 * barrier keeps the call out of tail position (the function is on the
 * stack while it runs), and its text tells it from ob_untimed's, which
 * the compiler would otherwise fold into this one. */
static __attribute__((noinline)) long
ob_timed(enum ob_case c, long calls)
{
    long failed = ob_issue(c, calls);

    __asm__ volatile("# ob_timed" ::: "memory");
    return failed;
}

/* The same calls, not timed: warm-up. */
static __attribute__((noinline)) long
ob_untimed(enum ob_case c, long calls)
{
    long failed = ob_issue(c, calls);

    __asm__ volatile("# ob_untimed" ::: "memory");
    return failed;
}

/* Called after each case: callgrind's --dump-after=ob_case_done writes one
 * profile per case. */
static __attribute__((noinline)) void
ob_case_done(const char *name)
{
    __asm__ volatile("" : : "r"(name) : "memory");
}

static double
ob_now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int
ob_sync(void)
{
    return cudaDeviceSynchronize() != cudaSuccess;
}

/* The conv descriptors and buffers; 0, or -1. */
static int
ob_conv_setup(void)
{
    int dx[4] = {1, 8, 8, 8}, sx[4] = {512, 64, 8, 1};
    int dw[4] = {8, 8, 3, 3}, pad[2] = {1, 1}, unit[2] = {1, 1};
    size_t f = 0, d = 0, w = 0;

    if (cudnnCreate(&ob.dnn) || cudnnCreateTensorDescriptor(&ob.xd) ||
        cudnnCreateTensorDescriptor(&ob.yd) ||
        cudnnCreateFilterDescriptor(&ob.wd) ||
        cudnnCreateConvolutionDescriptor(&ob.cd) ||
        cudnnSetTensorNdDescriptor(ob.xd, CUDNN_DATA_FLOAT, 4, dx, sx) ||
        cudnnSetTensorNdDescriptor(ob.yd, CUDNN_DATA_FLOAT, 4, dx, sx) ||
        cudnnSetFilterNdDescriptor(ob.wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                   4, dw) ||
        cudnnSetConvolutionNdDescriptor(ob.cd, 2, pad, unit, unit,
                                        CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT) ||
        cudnnGetConvolutionForwardWorkspaceSize(
            ob.dnn, ob.xd, ob.wd, ob.cd, ob.yd,
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &f) ||
        cudnnGetConvolutionBackwardDataWorkspaceSize(
            ob.dnn, ob.wd, ob.yd, ob.cd, ob.xd,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, &d) ||
        cudnnGetConvolutionBackwardFilterWorkspaceSize(
            ob.dnn, ob.xd, ob.yd, ob.cd, ob.wd,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, &w)) {
        fprintf(stderr, "overhead_bench: the cuDNN set-up failed\n");
        return -1;
    }
    ob.ws_bytes = f > d ? (f > w ? f : w) : (d > w ? d : w);
    return cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.x, 512 * 4)) ||
                   cuda_failed("cudaMalloc",
                               cudaMalloc((void **)&ob.y, 512 * 4)) ||
                   cuda_failed("cudaMalloc",
                               cudaMalloc((void **)&ob.w, 576 * 4)) ||
                   cuda_failed("cudaMalloc",
                               cudaMalloc((void **)&ob.ws, ob.ws_bytes + 4)) ||
                   cuda_failed("cudaMemset", cudaMemset(ob.x, 0, 512 * 4)) ||
                   cuda_failed("cudaMemset", cudaMemset(ob.y, 0, 512 * 4)) ||
                   cuda_failed("cudaMemset", cudaMemset(ob.w, 0, 576 * 4))
               ? -1
               : 0;
}

/* cuBLASLt's handle, descriptors, algorithm and workspace; the FP64
 * operands; cuBLAS's handle for dlsym. 0, or -1. */
static int
ob_more_setup(void)
{
    cublasLtEpilogue_t bias = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t heur;
    uint64_t ws = OB_LT_WORKSPACE;
    int count = 0;

    ob.done = 1.0;
    if (cublas_failed("cublasLtCreate", cublasLtCreate(&ob.lt)) ||
        cublas_failed("cublasLtMatmulDescCreate",
                      cublasLtMatmulDescCreate(&ob.lt_op, CUBLAS_COMPUTE_32F,
                                               CUDA_R_32F)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
                      cublasLtMatrixLayoutCreate(&ob.lt_l, CUDA_R_32F, OB_M,
                                                 OB_N, OB_M)) ||
        cublas_failed("cublasLtMatmulPreferenceCreate",
                      cublasLtMatmulPreferenceCreate(&pref)) ||
        cuda_failed("cudaMalloc", cudaMalloc(&ob.lt_ws, OB_LT_WORKSPACE)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.da, OB_SZ * 8)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.db, OB_SZ * 8)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.dc, OB_SZ * 8)) ||
        cuda_failed("cudaMemset", cudaMemset(ob.da, 0, OB_SZ * 8)) ||
        cuda_failed("cudaMemset", cudaMemset(ob.db, 0, OB_SZ * 8)))
        return -1;
    cublasLtMatmulDescSetAttribute(ob.lt_op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                   &bias, sizeof(bias));
    cublasLtMatmulDescSetAttribute(ob.lt_op,
                                   CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ob.c,
                                   sizeof(ob.c));
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    if (cublas_failed("cublasLtMatmulAlgoGetHeuristic",
                      cublasLtMatmulAlgoGetHeuristic(ob.lt, ob.lt_op,
                          ob.lt_l, ob.lt_l, ob.lt_l, ob.lt_l, pref, 1, &heur,
                          &count)) ||
        count < 1)
        return -1;
    cublasLtMatmulPreferenceDestroy(pref);
    ob.lt_algo = heur.algo;
    ob.cublas_handle = dlopen("libcublas.so.13", RTLD_LAZY | RTLD_NOLOAD);
    if (ob.cublas_handle == NULL) {
        fprintf(stderr, "overhead_bench: libcublas.so.13 is not loaded\n");
        return -1;
    }
    return 0;
}

/* The GEMM operands (zero: the values do not matter) and pointer arrays. */
static int
ob_gemm_setup(void)
{
    const float *hp[2 * OB_BATCH];
    float *hc[OB_BATCH];
    size_t bytes = OB_BATCH * OB_SZ * sizeof(float);
    int i;

    if (cublas_failed("cublasCreate", cublasCreate(&ob.blas)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.a, bytes)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.b, bytes)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.c, bytes)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.aa, sizeof hp)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&ob.ca, sizeof hc)) ||
        cuda_failed("cudaMemset", cudaMemset(ob.a, 0, bytes)) ||
        cuda_failed("cudaMemset", cudaMemset(ob.b, 0, bytes)))
        return -1;
    for (i = 0; i < OB_BATCH; i++) {
        hp[i] = ob.a + i * OB_SZ;
        hp[OB_BATCH + i] = ob.b + i * OB_SZ;
        hc[i] = ob.c + i * OB_SZ;
    }
    ob.ba = ob.aa + OB_BATCH;
    ob.one = 1.0f;
    ob.op = CUBLAS_OP_N;
    ob.m = ob.n = ob.k = OB_M;
    ob.m64 = ob.n64 = ob.k64 = OB_M;
    ob.group = OB_BATCH;
    ob.group64 = OB_BATCH;
    return cuda_failed("cudaMemcpy", cudaMemcpy(ob.aa, hp, sizeof hp,
                                                cudaMemcpyHostToDevice)) ||
                   cuda_failed("cudaMemcpy",
                               cudaMemcpy(ob.ca, hc, sizeof hc,
                                          cudaMemcpyHostToDevice))
               ? -1
               : 0;
}

/* Times case c: `rounds` rounds of `calls` calls, in batches whose
 * synchronisation is not timed; prints the best round's ns per call. */
static int
ob_run_case(enum ob_case c, long calls, int rounds, long warmup)
{
    double best = 0.0;
    long failed;
    int r;

    failed = ob_untimed(c, warmup);
    if (ob_sync() || failed) {
        fprintf(stderr, "overhead_bench: %s: %ld warm-up calls failed\n",
                ob_names[c], failed);
        return -1;
    }
    for (r = 0; r < rounds; r++) {
        double total = 0.0;
        long done;

        for (done = 0; done < calls; done += OB_BATCH_CALLS) {
            long n = calls - done < OB_BATCH_CALLS ? calls - done
                                                   : OB_BATCH_CALLS;
            double t0 = ob_now_ns();

            failed += ob_timed(c, n);
            total += ob_now_ns() - t0;
            if (ob_sync())
                failed++;
        }
        if (r == 0 || total / (double)calls < best)
            best = total / (double)calls;
    }
    ob_case_done(ob_names[c]);
    if (failed) {
        fprintf(stderr, "overhead_bench: %s: %ld calls failed\n",
                ob_names[c], failed);
        return -1;
    }
    printf("case api=%s calls=%ld rounds=%d ns_per_call=%.1f\n", ob_names[c],
           calls, rounds, best);
    return 0;
}

static void
ob_usage(void)
{
    fprintf(stderr,
            "usage: overhead_bench [--calls N] [--rounds N] [--warmup N] "
            "[--only API[,API...]]\n"
            "Issues each FP32 GEMM and convolution entry point on a tiny "
            "problem in a tight\nloop and prints the best round's wall-clock "
            "ns per call (synchronisation not\ntimed), one 'case' line per "
            "API.\n");
}

static int
ob_count(const char *s, long *out)
{
    char *end;

    errno = 0;
    *out = strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' && *out > 0 ? 0 : -1;
}

static int
ob_selected(const char *only, const char *name)
{
    size_t len = strlen(name);
    const char *p = only;

    if (!only)
        return 1;
    while ((p = strstr(p, name)) != NULL) {
        if ((p == only || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return 1;
        p += len;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    long calls = 20000, rounds = 5, warmup = 256;
    const char *only = NULL;
    int i, status = 0;

    /* Options come in pairs: NAME VALUE. */
    for (i = 1; i < argc; i += 2) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = !val;

        if (!bad && strcmp(argv[i], "--calls") == 0)
            bad = ob_count(val, &calls);
        else if (!bad && strcmp(argv[i], "--rounds") == 0)
            bad = ob_count(val, &rounds);
        else if (!bad && strcmp(argv[i], "--warmup") == 0)
            bad = ob_count(val, &warmup);
        else if (!bad && strcmp(argv[i], "--only") == 0)
            only = val;
        else
            bad = 1;
        if (bad) {
            ob_usage();
            return strcmp(argv[i], "--help") == 0 ? EXIT_ALL_PASS
                                                  : EXIT_USAGE;
        }
    }
    if (ob_gemm_setup() || ob_conv_setup() || ob_legacy_setup() ||
        ob_more_setup() || ob_graph_setup(ob.x, ob.w, ob.y))
        return EXIT_CUDA_ERROR;
    for (i = 0; i < OB_NCASES && status == 0; i++)
        if (ob_selected(only, ob_names[i]))
            status = ob_run_case((enum ob_case)i, calls, (int)rounds, warmup);
    ob_graph_teardown();
    ob_legacy_teardown();
    return status ? EXIT_CUDA_ERROR : EXIT_ALL_PASS;
}
