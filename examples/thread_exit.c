/* thread_exit: FP32 cuBLAS and cuDNN work done by short-lived threads, as a
 * data loader's or a request's thread does it: main makes the handles and
 * buffers, then starts WORKERS threads one after another; each makes
 * SGEMMs and a convolution (cudnnConvolutionForward) on main's handles,
 * reads them back, checks them element by element against a
 * double-precision reference within the tolerance named on the command
 * line (fp32, tf32, fp16, bf16 or a number), and exits. main joins each,
 * with a line on stderr just before and just after the join:
 *   thread_exit: joining worker I
 *   thread_exit: joined worker I
 * so that what the process logs while the worker exits lies between them.
 *
 * usage: thread_exit TOLERANCE
 *
 * Prints one line per checked call, then "result: ...":
 * case wI-NAME m=M n=N k=K op=OP status=NAME(N) err/bound=R hash=H ok|FAIL
 *      api=API
 * Exit status: 0 all within the bound, 1 a result outside it, 2 usage, 3
 * a CUDA, cuBLAS or cuDNN error. */
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "thread_exit"
#include "example_util.h"

#include <inttypes.h>
#include <pthread.h>

#define WORKERS 2
#define SGEMMS 2

/* The SGEMMs: C (M x N) = A (M x K) B (K x N), column-major. */
#define M 96
#define N 80
#define K 64

/* The convolution: NCHW, 3 x 3, padding 1, stride 1: the output is the
 * input's size. */
#define CN 2
#define CC 8
#define CK 16
#define CH 8
#define CW 8
#define CR 3

#define X_COUNT ((size_t)CN * CC * CH * CW)
#define W_COUNT ((size_t)CK * CC * CR * CR)
#define Y_COUNT ((size_t)CN * CK * CH * CW)

struct work {
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo;
    void *ws;
    size_t ws_bytes;
    struct tolerance tol;
    float *a, *b, *x, *w;         /* host operands */
    float *da, *db, *dc, *dx, *dw, *dy;
    int worker;                   /* the running worker's number */
    int failed, errors, checked;
};

static void
print_case(const struct work *wk, const char *name, const char *api,
           size_t m, int n, int k, const char *op, int status,
           const char *status_name, double worst, const float *got,
           size_t count)
{
    uint64_t hash = fnv1a64(got, count * 4, 0xcbf29ce484222325ull);

    printf("case w%d-%s m=%zu n=%d k=%d op=%s status=%s(%d) "
           "err/bound=%.3e hash=%016" PRIx64 " %s api=%s\n", wk->worker,
           name, m, n, k, op, status_name, status, worst, hash,
           worst <= 1.0 ? "ok" : "FAIL", api);
}

/* Checks C = A B and prints its case line. */
static void
check_sgemm(struct work *wk, int call, const float *c)
{
    struct operand_view va = {wk->a, M, 0}, vb = {wk->b, K, 0};
    double worst = gemm_worst_ratio(&va, &vb, M, N, K, c,
                                    tol_factor(&wk->tol, K));
    char name[32];

    snprintf(name, sizeof name, "sgemm%d", call);
    print_case(wk, name, "cublasSgemm_v2", M, N, K, "NN", 0,
               "CUBLAS_STATUS_SUCCESS", worst, c, (size_t)M * N);
    wk->failed += !(worst <= 1.0);
    wk->checked++;
}

/* Checks y = x (*) w (cross-correlation) and prints its case line. */
static void
check_conv(struct work *wk, const float *y)
{
    double worst = 0.0, factor = tol_factor(&wk->tol, CC * CR * CR);

    for (int n = 0; n < CN; n++)
        for (int k = 0; k < CK; k++)
            for (int p = 0; p < CH; p++)
                for (int q = 0; q < CW; q++) {
                    double sum = 0.0, mag = 0.0, r;

                    for (int c = 0; c < CC; c++)
                        for (int u = 0; u < CR; u++)
                            for (int v = 0; v < CR; v++) {
                                int h = p + u - 1, ww = q + v - 1;
                                double t;

                                if (h < 0 || h >= CH || ww < 0 || ww >= CW)
                                    continue;
                                t = (double)wk->x[((n * CC + c) * CH + h) *
                                                     CW + ww] *
                                    wk->w[((k * CC + c) * CR + u) * CR + v];
                                sum += t;
                                mag += fabs(t);
                            }
                    r = element_ratio(y[((n * CK + k) * CH + p) * CW + q],
                                      sum, mag * factor);
                    if (r > worst)
                        worst = r;
                }
    print_case(wk, "conv", "cudnnConvolutionForward", Y_COUNT, 1,
               CC * CR * CR, "FW", 0, "CUDNN_STATUS_SUCCESS", worst, y,
               Y_COUNT);
    wk->failed += !(worst <= 1.0);
    wk->checked++;
}

/* A worker: its calls on main's handles, read back and checked. */
static void *
worker_main(void *arg)
{
    struct work *wk = arg;
    const float one = 1.0f, zero = 0.0f;
    float *c = malloc((size_t)M * N * sizeof *c);
    float *y = malloc(Y_COUNT * sizeof *y);

    /* The device for this thread first, as a worker thread does: its
     * first call then finds the primary context current. */
    if (!c || !y || cuda_failed("cudaSetDevice", cudaSetDevice(0)))
        goto error;
    for (int i = 0; i < SGEMMS; i++) {
        if (cublas_failed("cublasSgemm",
                          cublasSgemm(wk->blas, CUBLAS_OP_N, CUBLAS_OP_N, M, N,
                                      K, &one, wk->da, M, wk->db, K, &zero,
                                      wk->dc, M)) ||
            cuda_failed("cudaMemcpy", cudaMemcpy(c, wk->dc, (size_t)M * N * 4,
                                                 cudaMemcpyDeviceToHost)))
            goto error;
        check_sgemm(wk, i, c);
    }
    if (cudnn_failed("cudnnConvolutionForward",
                     cudnnConvolutionForward(wk->dnn, &one, wk->xd, wk->dx,
                                             wk->wd, wk->dw, wk->cd, wk->algo,
                                             wk->ws, wk->ws_bytes, &zero,
                                             wk->yd, wk->dy)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(y, wk->dy, Y_COUNT * 4,
                                             cudaMemcpyDeviceToHost)))
        goto error;
    check_conv(wk, y);
    fflush(stdout);
    free(c);
    free(y);
    return NULL;
error:
    wk->errors++;
    free(c);
    free(y);
    return NULL;
}

/* main's part: handles, descriptors, the algorithm, buffers; 0 or -1. */
static int
set_up(struct work *wk)
{
    const int pads[2] = {1, 1}, ones[2] = {1, 1};
    uint64_t seed = 0x7e57ull;

    wk->a = host_data((size_t)M * K, &seed);
    wk->b = host_data((size_t)K * N, &seed);
    wk->x = host_data(X_COUNT, &seed);
    wk->w = host_data(W_COUNT, &seed);
    if (!wk->a || !wk->b || !wk->x || !wk->w)
        return -1;
    if (cublas_failed("cublasCreate", cublasCreate(&wk->blas)) ||
        cudnn_failed("cudnnCreate", cudnnCreate(&wk->dnn)))
        return -1;
    wk->da = device_copy(wk->a, (size_t)M * K * 4);
    wk->db = device_copy(wk->b, (size_t)K * N * 4);
    wk->dc = device_copy(NULL, (size_t)M * N * 4);
    wk->dx = device_copy(wk->x, X_COUNT * 4);
    wk->dw = device_copy(wk->w, W_COUNT * 4);
    wk->dy = device_copy(NULL, Y_COUNT * 4);
    if (!wk->da || !wk->db || !wk->dc || !wk->dx || !wk->dw || !wk->dy) {
        fprintf(stderr, EXAMPLE_PROG ": no device memory\n");
        return -1;
    }
    if (cudnn_failed("cudnnCreateTensorDescriptor",
                     cudnnCreateTensorDescriptor(&wk->xd)) ||
        cudnn_failed("cudnnCreateTensorDescriptor",
                     cudnnCreateTensorDescriptor(&wk->yd)) ||
        cudnn_failed("cudnnCreateFilterDescriptor",
                     cudnnCreateFilterDescriptor(&wk->wd)) ||
        cudnn_failed("cudnnCreateConvolutionDescriptor",
                     cudnnCreateConvolutionDescriptor(&wk->cd)) ||
        cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(wk->xd, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, CN, CC, CH,
                                                CW)) ||
        cudnn_failed("cudnnSetTensor4dDescriptor",
                     cudnnSetTensor4dDescriptor(wk->yd, CUDNN_TENSOR_NCHW,
                                                CUDNN_DATA_FLOAT, CN, CK, CH,
                                                CW)) ||
        cudnn_failed("cudnnSetFilter4dDescriptor",
                     cudnnSetFilter4dDescriptor(wk->wd, CUDNN_DATA_FLOAT,
                                                CUDNN_TENSOR_NCHW, CK, CC, CR,
                                                CR)) ||
        cudnn_failed("cudnnSetConvolutionNdDescriptor",
                     cudnnSetConvolutionNdDescriptor(
                         wk->cd, 2, pads, ones, ones, CUDNN_CROSS_CORRELATION,
                         CUDNN_DATA_FLOAT)))
        return -1;
    /* The implicit precomputed GEMM, as a program that benchmarked once
     * would name it (the heuristic's first, Winograd at this shape, is
     * less exact than the FP32 bound). */
    wk->algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (cudnn_failed("cudnnGetConvolutionForwardWorkspaceSize",
                     cudnnGetConvolutionForwardWorkspaceSize(
                         wk->dnn, wk->xd, wk->wd, wk->cd, wk->yd, wk->algo,
                         &wk->ws_bytes)))
        return -1;
    if (wk->ws_bytes && !(wk->ws = device_copy(NULL, wk->ws_bytes))) {
        fprintf(stderr, EXAMPLE_PROG ": no device memory\n");
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct work wk = {0};
    pthread_t worker;

    if (argc != 2 || tol_parse(argv[1], &wk.tol) != 0) {
        fprintf(stderr, "usage: thread_exit fp32|tf32|fp16|bf16|X\n");
        return EXIT_USAGE;
    }
    if (set_up(&wk) != 0)
        return EXIT_CUDA_ERROR;
    for (wk.worker = 0; wk.worker < WORKERS; wk.worker++) {
        if (pthread_create(&worker, NULL, worker_main, &wk) != 0) {
            fprintf(stderr, EXAMPLE_PROG ": cannot start a thread\n");
            return EXIT_CUDA_ERROR;
        }
        fprintf(stderr, EXAMPLE_PROG ": joining worker %d\n", wk.worker);
        pthread_join(worker, NULL);
        fprintf(stderr, EXAMPLE_PROG ": joined worker %d\n", wk.worker);
        if (wk.errors)
            return EXIT_CUDA_ERROR;
    }
    cudnnDestroyTensorDescriptor(wk.xd);
    cudnnDestroyTensorDescriptor(wk.yd);
    cudnnDestroyFilterDescriptor(wk.wd);
    cudnnDestroyConvolutionDescriptor(wk.cd);
    cudnnDestroy(wk.dnn);
    cublasDestroy(wk.blas);
    free(wk.a);
    free(wk.b);
    free(wk.x);
    free(wk.w);
    printf("result: %d of %d results within the bound\n",
           wk.checked - wk.failed, wk.checked);
    return wk.failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
