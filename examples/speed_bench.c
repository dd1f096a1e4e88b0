/* speed_bench: wall-clock FP32 throughput of the device it runs on, for
 * scripts/bench_emu.sh: square SGEMMs (cublasSgemm_v2) and one cuDNN
 * forward convolution, each timed over --reps calls after one untimed
 * call, from the first call's start to a synchronisation after the last.
 * An ordinary FP32 CUDA program: on a GPU it times the GPU, on the
 * emulator the emulator.
 *
 * usage: speed_bench [--reps N] [--gemm N]... [--conv N,C,K,H,W,R]
 * Prints one line per measurement:
 *   gemm m=N n=N k=N flops=F seconds=S gflops=G
 *   conv n=N c=C k=K h=H w=W r=R flops=F seconds=S gflops=G */
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "speed_bench"
#include "example_util.h"

#include <time.h>

static double
now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A device buffer of `count` floats filled with small deterministic
 * values. */
static float *
device_data(size_t count)
{
    float *host = malloc(count * sizeof(float)), *dev = NULL;

    if (!host)
        return NULL;
    for (size_t i = 0; i < count; i++)
        host[i] = (float)((i * 7919u) % 61u) / 61.0f - 0.5f;
    if (cudaMalloc((void **)&dev, count * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(dev, host, count * sizeof(float),
                   cudaMemcpyHostToDevice) != cudaSuccess)
        dev = NULL;
    free(host);
    return dev;
}

static int
bench_gemm(cublasHandle_t h, int n, int reps)
{
    size_t nn = (size_t)n * (size_t)n;
    float *a = device_data(nn), *b = device_data(nn), *c = device_data(nn);
    const float one = 1.0f, zero = 0.0f;
    double t0 = 0.0, t1, flops = 2.0 * n * (double)n * n;

    if (!a || !b || !c)
        return 1;
    for (int i = 0; i <= reps; i++) {
        if (i == 1) {
            cudaDeviceSynchronize();
            t0 = now();
        }
        if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b,
                        n, &zero, c, n) != CUBLAS_STATUS_SUCCESS)
            return 1;
    }
    if (cuda_failed("cudaDeviceSynchronize", cudaDeviceSynchronize()))
        return 1;
    t1 = (now() - t0) / reps;
    printf("gemm m=%d n=%d k=%d flops=%.6g seconds=%.6f gflops=%.2f\n", n, n,
           n, flops, t1, flops / t1 / 1e9);
    cudaFree(a), cudaFree(b), cudaFree(c);
    return 0;
}

static int
bench_conv(cudnnHandle_t h, const int *s, int reps)
{
    int n = s[0], c = s[1], k = s[2], hh = s[3], ww = s[4], r = s[5];
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgoPerf_t perf;
    const float one = 1.0f, zero = 0.0f;
    int got = 0, on, oc, oh, ow;
    size_t ws_bytes = 0;
    void *ws = NULL;
    float *x, *w, *y;
    double t0 = 0.0, t1, flops;

    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c,
                               hh, ww);
    cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c,
                               r, r);
    cudnnSetConvolution2dDescriptor(cd, r / 2, r / 2, 1, 1, 1, 1,
                                    CUDNN_CROSS_CORRELATION,
                                    CUDNN_DATA_FLOAT);
    cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &oc, &oh, &ow);
    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on,
                               oc, oh, ow);
    if (cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, 1, &got,
                                               &perf) !=
            CUDNN_STATUS_SUCCESS ||
        got < 1 ||
        cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, perf.algo,
                                                &ws_bytes) !=
            CUDNN_STATUS_SUCCESS)
        return 1;
    x = device_data((size_t)n * c * hh * ww);
    w = device_data((size_t)k * c * r * r);
    y = device_data((size_t)on * oc * oh * ow);
    if (!x || !w || !y ||
        (ws_bytes && cudaMalloc(&ws, ws_bytes) != cudaSuccess))
        return 1;
    flops = 2.0 * on * (double)oc * oh * ow * c * r * r;
    for (int i = 0; i <= reps; i++) {
        if (i == 1) {
            cudaDeviceSynchronize();
            t0 = now();
        }
        if (cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, perf.algo, ws,
                                    ws_bytes, &zero, yd, y) !=
            CUDNN_STATUS_SUCCESS)
            return 1;
    }
    if (cuda_failed("cudaDeviceSynchronize", cudaDeviceSynchronize()))
        return 1;
    t1 = (now() - t0) / reps;
    printf("conv n=%d c=%d k=%d h=%d w=%d r=%d flops=%.6g seconds=%.6f "
           "gflops=%.2f\n", n, c, k, hh, ww, r, flops, t1, flops / t1 / 1e9);
    cudaFree(x), cudaFree(w), cudaFree(y), cudaFree(ws);
    return 0;
}

int
main(int argc, char **argv)
{
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    int reps = 3, failed = 0;

    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--reps") == 0)
            reps = atoi(argv[i + 1]);
    if (reps < 1 || argc % 2 == 0) {
        fprintf(stderr, "usage: speed_bench [--reps N] [--gemm N]... "
                "[--conv N,C,K,H,W,R]...\n");
        return EXIT_USAGE;
    }
    if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
        cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "speed_bench: no device\n");
        return EXIT_CUDA_ERROR;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        int s[6];

        if (strcmp(argv[i], "--gemm") == 0) {
            failed |= bench_gemm(blas, atoi(argv[i + 1]), reps);
        } else if (strcmp(argv[i], "--conv") == 0) {
            if (sscanf(argv[i + 1], "%d,%d,%d,%d,%d,%d", &s[0], &s[1], &s[2],
                       &s[3], &s[4], &s[5]) != 6) {
                fprintf(stderr, "speed_bench: --conv N,C,K,H,W,R\n");
                return EXIT_USAGE;
            }
            failed |= bench_conv(dnn, s, reps);
        }
    }
    cublasDestroy(blas);
    cudnnDestroy(dnn);
    return failed ? EXIT_CUDA_ERROR : EXIT_ALL_PASS;
}
